/* seeds_srv: SeedSRV's lookup (seeds.h), the part that runs off the loop:
 * the SRV query with glibc's libresolv (a fresh res_ninit each time, so a
 * changed resolv.conf is read), the answer parsed by a pure function
 * (seeds_srv_parse, fuzzed: tests/fuzz/fuzz_seeds_srv.c), and each
 * target's A/AAAA addresses with getaddrinfo. */
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "seeds.h"

/* An SRV record's fixed part: priority, weight, port (then the target). */
#define SRV_FIXED 6

int seeds_srv_parse(const uint8_t *msg, size_t len, seeds_srv_target *out,
		    size_t max, size_t *cut)
{
	ns_msg h;
	*cut = 0;
	if (len > NS_MAXMSG || ns_initparse(msg, (int)len, &h) < 0)
		return -EBADMSG;
	if (ns_msg_getflag(h, ns_f_rcode) != ns_r_noerror)
		return -ENODATA;
	int n = 0, answers = ns_msg_count(h, ns_s_an);
	for (int i = 0; i < answers; i++) {
		ns_rr rr;
		if (ns_parserr(&h, ns_s_an, i, &rr) < 0)
			return -EBADMSG;
		if (ns_rr_type(rr) != ns_t_srv || ns_rr_class(rr) != ns_c_in)
			continue;
		const uint8_t *rd = ns_rr_rdata(rr);
		size_t rdlen = ns_rr_rdlen(rr);
		seeds_srv_target t;
		if (rdlen < SRV_FIXED + 1)
			return -EBADMSG;
		int used = dn_expand(ns_msg_base(h), ns_msg_end(h), rd + SRV_FIXED,
				     t.name, (int)sizeof(t.name));
		if (used < 0 || (size_t)used != rdlen - SRV_FIXED)
			return -EBADMSG;
		/* "." (dn_expand gives "") says there is no such service. */
		if (!t.name[0] || strlen(t.name) > GSP_HOSTNAME_MAX)
			continue;
		t.priority = (uint16_t)(rd[0] << 8 | rd[1]);
		t.weight = (uint16_t)(rd[2] << 8 | rd[3]);
		t.port = (uint16_t)(rd[4] << 8 | rd[5]);
		if (t.port == 0)
			continue;
		if ((size_t)n == max) {
			(*cut)++;
			continue;
		}
		out[n++] = t;
	}
	return n ? n : -ENODATA;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A target's addresses, appended to out[*n..max) (the rest counted). */
static int target_addrs(const seeds_srv_target *t, uint16_t seed_index,
			seed_addr *out, size_t max, size_t *n, size_t *cut)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res;
	int rc = getaddrinfo(t->name, NULL, &hints, &res);
	if (rc)
		return rc;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		seed_addr a = {.family = (uint8_t)ai->ai_family, .port = t->port,
			       .seed = seed_index};
		if (ai->ai_family == AF_INET)
			memcpy(a.addr, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
		else if (ai->ai_family == AF_INET6)
			memcpy(a.addr, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, 16);
		else
			continue;
		if (*n < max)
			out[(*n)++] = a;
		else
			(*cut)++;
	}
	freeaddrinfo(res);
	return 0;
}

int seeds_srv_lookup(const char *name, uint16_t seed_index, seed_addr *out,
		     size_t max, size_t *cut, char *err, size_t err_len)
{
	seeds_srv_target *targets = calloc(SEEDS_SRV_MAX_TARGETS, sizeof(*targets));
	uint8_t *answer = malloc(NS_MAXMSG);
	struct __res_state res;
	size_t n = 0, srv_cut = 0;
	int rc = -ENOMEM;
	*cut = 0;
	memset(&res, 0, sizeof(res));
	if (!targets || !answer) {
		snprintf(err, err_len, "out of memory");
		goto out;
	}
	if (res_ninit(&res) != 0) {
		snprintf(err, err_len, "cannot read the resolver's configuration");
		rc = -EIO;
		goto out;
	}
	/* At most 2 tries of 2 s per server: the lookup holds a pool thread. */
	res.retrans = 2;
	res.retry = 2;
	int len = res_nquery(&res, name, ns_c_in, ns_t_srv, answer, NS_MAXMSG);
	if (len < 0) {
		rc = res.res_h_errno == HOST_NOT_FOUND || res.res_h_errno == NO_DATA
			     ? -ENODATA : -EAGAIN;
		snprintf(err, err_len, "SRV lookup: %s", hstrerror(res.res_h_errno));
		goto out_close;
	}
	int k = seeds_srv_parse(answer, (size_t)len, targets, SEEDS_SRV_MAX_TARGETS, &srv_cut);
	if (k < 0) {
		rc = k;
		snprintf(err, err_len, "SRV answer: %s", k == -ENODATA ? "no SRV records"
								    : "malformed");
		goto out_close;
	}
	int failed = 0, why = 0;
	uint64_t until = now_ms() + SEEDS_SRV_BUDGET_MS;
	for (int i = 0; i < k; i++) {
		if (now_ms() > until) {
			/* The targets left count as failed, not waited for. */
			failed += k - i;
			why = EAI_AGAIN;
			break;
		}
		int e = target_addrs(&targets[i], seed_index, out, max, &n, cut);
		if (e) {
			failed++;
			why = e;
		}
	}
	*cut += srv_cut;
	if (n) {
		rc = (int)n;
	} else {
		rc = -ENODATA;
		snprintf(err, err_len, "none of %d SRV targets resolved (%s)", k,
			 failed ? gai_strerror(why) : "no addresses");
	}
out_close:
	res_nclose(&res);
out:
	free(targets);
	free(answer);
	return rc;
}
