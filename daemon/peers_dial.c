/* peers: dialing (peers.h): a numeric Endpoint directly, a name after
 * resolving it again before every attempt, each address in turn, and
 * exponential backoff with jitter between attempts.  Above peers_core.c
 * in the module's order (peers_impl.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "endpoint.h"
#include "log.h"
#include "peers_impl.h"

static void dial(uv_timer_t *t);

/* Drops the addresses a name resolved to. */
void peers__forget_addrs(peer *p)
{
	if (p->addrs)
		uv_freeaddrinfo(p->addrs);
	p->addrs = p->addr_next = NULL;
}

static bool may_dial(const peer *p)
{
	return !p->set->stopping && peers__present(p) && p->cfg.endpoint[0];
}

/* No session, or one to replace with a new handshake (a rekey). */
static bool wants_session(const peer *p)
{
	return !p->session || p->rekeying;
}

/* Dials again after the backoff delay (doubling, +-25% jitter). */
void peers__dial_later(peer *p)
{
	if (!may_dial(p))
		return;
	unsigned delay = p->backoff_ms;
	delay = delay * 3 / 4 + randombytes_uniform(delay / 2 + 1);
	p->backoff_ms = p->backoff_ms * 2 > PEERS_BACKOFF_MAX_MS
				? PEERS_BACKOFF_MAX_MS
				: p->backoff_ms * 2;
	uv_timer_start(&p->retry, dial, delay, 0);
}

static void connect_to(peer *p, const struct sockaddr *sa)
{
	plink *l;
	/* A keyless [Peer] asks for the certificate at every dial, so it is
	 * checked again each time (expiry, the revocation list). */
	int err = link_connect(&p->set->env, sa,
			       p->origin == PEER_KEYLESS ? NULL : p->cfg.public_key,
			       p, &p->stats, &l);
	if (err) {
		gsp_debug("peer %s: cannot connect: %s", p->name, gsp_strerror(err));
		peers__dial_next_or_later(p);
		return;
	}
	link_bind(l, p, &p->stats, p->name);
	p->links++;
	p->dialed = l;
}

/* Dials the next address a name resolved to, or retries later when none
 * is left. */
void peers__dial_next_or_later(peer *p)
{
	while (p->addr_next && may_dial(p)) {
		const struct addrinfo *ai = p->addr_next;
		p->addr_next = ai->ai_next;
		if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6) {
			connect_to(p, ai->ai_addr);
			return;
		}
	}
	peers__forget_addrs(p);
	peers__dial_later(p);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	peer *p = req->data;
	free(req);
	p->resolving = false;
	if (status < 0) {
		/* Loud on the first failure of a series, quiet on retries. */
		gsp_log(p->backoff_ms == PEERS_BACKOFF_MIN_MS ? GSP_LOG_WARNING
							     : GSP_LOG_DEBUG,
			"peer %s: cannot resolve Endpoint '%s': %s", p->name,
			p->cfg.endpoint, uv_strerror(status));
		if (!p->session)
			peers_error(p, "cannot resolve Endpoint '%s': %s",
				    p->cfg.endpoint, uv_strerror(status));
		peers__dial_later(p);
		return;
	}
	peers__forget_addrs(p);
	p->addrs = p->addr_next = res;
	if (!may_dial(p) || !wants_session(p) || p->dialed) {
		peers__forget_addrs(p);
		return;
	}
	peers__dial_next_or_later(p);
}

/* Dials a peer's Endpoint: directly if numeric, else after resolving the
 * name (again before every attempt, so a moved name is followed). */
static void dial(uv_timer_t *t)
{
	peer *p = t->data;
	struct sockaddr_storage ss;
	if (!may_dial(p) || !wants_session(p) || p->dialed || p->resolving)
		return;
	int err = gsp_endpoint_numeric(p->cfg.endpoint, &ss);
	if (err == 0) {
		connect_to(p, (struct sockaddr *)&ss);
		return;
	}
	char host[GSP_HOSTNAME_MAX + 1], port[8];
	uint16_t port_no;
	uv_getaddrinfo_t *req = malloc(sizeof(*req));
	if (err != -ENOENT || !req ||
	    gsp_endpoint_split(p->cfg.endpoint, host, sizeof(host), &port_no)) {
		free(req);
		if (err != -ENOENT)
			gsp_err("peer %s: bad Endpoint '%s'", p->name, p->cfg.endpoint);
		else
			peers__dial_later(p);
		return;
	}
	snprintf(port, sizeof(port), "%u", port_no);
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV,
	};
	req->data = p;
	p->resolving = true;
	err = uv_getaddrinfo(p->set->loop, req, on_resolved, host, port, &hints);
	if (err) {
		free(req);
		p->resolving = false;
		gsp_warn("peer %s: cannot resolve Endpoint '%s': %s", p->name,
			 p->cfg.endpoint, uv_strerror(err));
		peers__dial_later(p);
	}
}

/* A peer's retry and LeaveWait timers (once per slot), and a first
 * dial if it has an endpoint. */
void peers__start_peer(peer *p)
{
	if (!p->timers_ready) {
		uv_timer_init(p->set->loop, &p->retry);
		uv_timer_init(p->set->loop, &p->leave);
		p->timers_ready = true;
	}
	p->retry.data = p;
	p->leave.data = p;
	p->backoff_ms = PEERS_BACKOFF_MIN_MS;
	if (p->cfg.endpoint[0])
		uv_timer_start(&p->retry, dial, 0, 0);
}

void peers__rekey(peer *p)
{
	if (!may_dial(p) || !p->session || p->dialed || p->resolving)
		return;
	gsp_debug("peer %s: new handshake to replace the session", p->name);
	p->rekeying = true;
	uv_timer_start(&p->retry, dial, 0, 0);
}

void peers__dial_now(peer *p)
{
	p->backoff_ms = PEERS_BACKOFF_MIN_MS;
	uv_timer_start(&p->retry, dial, 0, 0);
}
