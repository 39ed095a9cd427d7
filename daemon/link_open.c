/* link: opening links (link.h): dialing out, accepting in with the caps
 * on connections still in the handshake, and remote addresses.  The top
 * of the module's order (link_impl.h): it calls the files below it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link_impl.h"
#include "log.h"
#include "proto.h"

static void on_connect(uv_connect_t *req, int status)
{
	plink *l = req->data;
	free(req);
	if (status == UV_ECANCELED || l->phase == LINK_CLOSING)
		return;
	if (status < 0) {
		link__fail(l, GSP_BYE_UNSPECIFIED, "", "connect to %s: %s", l->addr,
		     uv_strerror(status));
		return;
	}
	l->phase = LINK_HANDSHAKE;
	int err = link__hs_initiate(l);
	if (err) {
		link__fail(l, GSP_BYE_UNSPECIFIED, "", "cannot start the handshake: %s",
		     gsp_strerror(err));
		return;
	}
	link__start_reading(l);
}

/* The ip part of sa. */
static void host_name(const struct sockaddr *sa, char *out, size_t cap)
{
	snprintf(out, cap, "?");
	if (sa->sa_family == AF_INET6)
		uv_ip6_name((const struct sockaddr_in6 *)sa, out, cap);
	else if (sa->sa_family == AF_INET)
		uv_ip4_name((const struct sockaddr_in *)sa, out, cap);
}

void link_addr_name(const struct sockaddr *sa, char *out, size_t cap)
{
	char host[48];
	host_name(sa, host, sizeof(host));
	if (sa->sa_family == AF_INET6)
		snprintf(out, cap, "[%s]:%u", host,
			 ntohs(((const struct sockaddr_in6 *)sa)->sin6_port));
	else
		snprintf(out, cap, "%s:%u", host,
			 ntohs(((const struct sockaddr_in *)sa)->sin_port));
}

/* Room for one more connection in the handshake from l's address: the
 * oldest beyond a cap goes (the newest are the likeliest real peers
 * once an attacker has filled the caps). */
static void preauth_make_room(plink *l)
{
	link_env *env = l->env;
	unsigned max = env->preauth_max ? env->preauth_max : LINK_PREAUTH_MAX;
	unsigned per = env->preauth_per_addr ? env->preauth_per_addr
					     : LINK_PREAUTH_PER_ADDR;
	unsigned all = 0, same = 0;
	plink *oldest = NULL, *oldest_same = NULL;
	for (plink *x = env->links; x; x = x->next) {
		if (x == l || x->initiator || x->phase != LINK_HANDSHAKE)
			continue;
		all++;
		oldest = x;
		if (!strcmp(x->host, l->host)) {
			same++;
			oldest_same = x;
		}
	}
	plink *victim = same >= per ? oldest_same : all >= max ? oldest : NULL;
	if (victim) {
		link_preauth_warn(victim, "too many connections in the handshake: "
				   "closing the oldest");
		link_close(victim, GSP_BYE_UNSPECIFIED, "");
	}
}

/* Whether l's address is within its rate; a refusal is counted and,
 * at most once a second per address, logged with the count. */
static bool rate_allows(plink *l, const struct sockaddr *sa)
{
	link_env *env = l->env;
	uint8_t key[RATELIMIT_KEY];
	unsigned refused;
	if (!env->hs_limit || ratelimit_key(sa, key) != 0 ||
	    ratelimit_take(env->hs_limit, key, uv_now(env->loop), &refused))
		return true;
	env->counters->hs_rate_limited++;
	if (refused)
		link_preauth_warn(l, "%u connection%s refused: over the handshake rate "
				   "of %u a second from one address", refused,
				   refused == 1 ? "" : "s", env->hs_limit->per_s);
	return false;
}

int link_connect(link_env *env, const struct sockaddr *sa,
		 const uint8_t remote_key[GSP_KEY_BYTES], void *owner,
		 link_stats *stats, plink **ret)
{
	plink *l = link__new(env, true);
	uv_connect_t *req = malloc(sizeof(*req));
	if (!l || !req) {
		free(req);
		if (l) {
			l->down_called = true;   /* never reported: the caller knows */
			link__destroy(l);
		}
		return -ENOMEM;
	}
	if (remote_key)
		memcpy(l->remote_key, remote_key, GSP_KEY_BYTES);
	l->hs_wait = remote_key ? LINK_WAIT_RESP : LINK_WAIT_CERT;
	link_addr_name(sa, l->addr, sizeof(l->addr));
	l->owner = owner;
	l->stats = stats;
	req->data = l;
	int err = uv_tcp_connect(req, &l->tcp, sa, on_connect);
	if (err) {
		free(req);
		l->down_called = true;
		link__destroy(l);
		return err;
	}
	*ret = l;
	return 0;
}

int link_accept(link_env *env, uv_stream_t *server, plink **ret)
{
	plink *l = link__new(env, false);
	if (!l)
		return -ENOMEM;
	int err = uv_accept(server, (uv_stream_t *)&l->tcp);
	if (err) {
		l->down_called = true;
		link__destroy(l);
		return err;
	}
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	if (uv_tcp_getpeername(&l->tcp, (struct sockaddr *)&ss, &len) == 0) {
		link_addr_name((struct sockaddr *)&ss, l->addr, sizeof(l->addr));
		host_name((struct sockaddr *)&ss, l->host, sizeof(l->host));
		if (!rate_allows(l, (struct sockaddr *)&ss)) {
			link_close(l, GSP_BYE_UNSPECIFIED, "");
			return -ECONNREFUSED;
		}
	}
	preauth_make_room(l);
	link__start_reading(l);
	*ret = l;
	return 0;
}

