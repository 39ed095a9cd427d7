/*
 * seeds: discovery's first step, [Cluster]'s seeds resolved to addresses
 * on the loop.  This module owns each seed's last good answer, the timer
 * that resolves every seed again each ResolveIntervalSeconds, the lookups
 * in flight, and the merged list of addresses it reports upward.
 *
 *   Seed = host:port     A/AAAA with uv_getaddrinfo (every address)
 *   SeedSRV = _s._p.name SRV with libresolv (seeds_srv.c), each target's
 *                        A/AAAA with the record's port; all of it off the
 *                        loop (uv_queue_work), a fresh res_ninit each time
 *                        so a changed resolv.conf is read
 *
 * A lookup that fails keeps the seed's last good answer (state STALE).
 * Each answer is cut at SEEDS_MAX_PER_SEED addresses, the merged list at
 * SEEDS_MAX_TOTAL; what is cut is counted (counters.h).  The merged list
 * is deduplicated (an address and port once, from the first seed that
 * gave it) and sorted; seeds_ops.changed gets it whenever it changes,
 * never otherwise.  Dialing the addresses is the caller's business.
 */
#ifndef GOSSIPD_SEEDS_H
#define GOSSIPD_SEEDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "config.h"
#include "counters.h"
#include "endpoint.h"

#define SEEDS_MAX_PER_SEED 64
#define SEEDS_MAX_TOTAL 256
/* "[" + an IPv6 literal + "]:" + a port. */
#define SEEDS_ADDR_TEXT_MAX 56

/* No padding: lists compare and sort field by field all the same. */
typedef struct seed_addr {
	uint8_t addr[16];       /* network order; 4 bytes for AF_INET */
	uint16_t port;
	uint16_t seed;          /* which seed gave it: cfg->seeds[seed] */
	uint8_t family;         /* AF_INET or AF_INET6 */
	uint8_t zero;
} seed_addr;
_Static_assert(sizeof(seed_addr) == 22, "seed_addr has padding");

struct seeds_lookup;

typedef enum seed_state {
	SEED_PENDING,           /* no lookup has answered yet */
	SEED_RESOLVED,          /* the last lookup answered */
	SEED_STALE,             /* the last failed; the last good answer kept */
	SEED_FAILED,            /* every lookup so far failed */
} seed_state;

typedef struct seed {
	gsp_seed_config cfg;
	seed_state state;
	struct seeds_lookup *in_flight;  /* one lookup at a time, or NULL */
	seed_addr addrs[SEEDS_MAX_PER_SEED];  /* the last good answer, sorted */
	size_t n;
	size_t cut;              /* addresses beyond SEEDS_MAX_PER_SEED in it */
	char last_error[128];    /* why the last lookup failed, or "" */
	uint64_t resolutions, failures;
} seed;

typedef struct seeds_ops {
	/* The merged list changed: n addresses (list valid during the call). */
	void (*changed)(void *ctx, const seed_addr *list, size_t n);
} seeds_ops;

typedef enum seeds_run {
	SEEDS_OFF,               /* not started, or stopped */
	SEEDS_RUNNING,
} seeds_run;

typedef struct seeds {
	uv_loop_t *loop;
	seeds_run run;
	counters *counters;
	const seeds_ops *ops;
	void *ctx;
	unsigned interval_s;
	uv_timer_t timer;
	seed seed[GSP_MAX_SEEDS];
	size_t n_seeds;
	seed_addr list[SEEDS_MAX_TOTAL];  /* the merged list */
	size_t n_list;
	size_t cut;              /* addresses beyond SEEDS_MAX_TOTAL now */
	seed_addr scratch[GSP_MAX_SEEDS * SEEDS_MAX_PER_SEED];
} seeds;

/* Starts resolving cfg's seeds at once, then every ResolveIntervalSeconds
 * (a timer that keeps no loop alive).  0, or a negative errno. */
int seeds_start(seeds *s, uv_loop_t *loop, const gsp_daemon_config *cfg,
		counters *c, const seeds_ops *ops, void *ctx) GSP_MUST_CHECK;
/* Stops the timer and cancels the lookups that have not begun (those
 * under way end quietly); nothing is reported after. */
void seeds_stop(seeds *s);

/* Whether cfg names the seeds and interval s runs with (s started, or
 * zeroed and never started: no seeds). */
bool seeds_same_config(const seeds *s, const gsp_daemon_config *cfg);
/* "a.b.c.d:port" or "[v6]:port" into buf (SEEDS_ADDR_TEXT_MAX bytes). */
void seeds_addr_text(const seed_addr *a, char *buf, size_t len);
/* Sorts n addresses (family, address, port, seed) and drops repeats of
 * an address and port, the first seed's kept; the new count. */
size_t seeds_sort_unique(seed_addr *a, size_t n);
const char *seeds_state_name(seed_state st);

/* seeds_srv.c, blocking (run off the loop): the SRV records of name, each
 * target's A/AAAA addresses with the record's port, at most max into out
 * (*cut counts the rest).  The count (> 0), or a negative errno with
 * the reason in err.  It holds one of libuv's pool threads: the SRV query
 * for at most 2 tries of 2 s per server, and no target's lookup starts
 * after SEEDS_SRV_BUDGET_MS (those left count as failed). */
#define SEEDS_SRV_BUDGET_MS 10000
int seeds_srv_lookup(const char *name, uint16_t seed_index, seed_addr *out,
		     size_t max, size_t *cut, char *err, size_t err_len);

/* seeds_srv.c, pure: a DNS response's SRV records.  Targets are names of
 * at most GSP_HOSTNAME_MAX bytes ("." ones, "no service", are skipped). */
typedef struct seeds_srv_target {
	char name[GSP_HOSTNAME_MAX + 2];
	uint16_t priority, weight, port;
} seeds_srv_target;
#define SEEDS_SRV_MAX_TARGETS 64
/* Parses len bytes of a response: at most max targets into out (*cut
 * counts the SRV records beyond).  The count (> 0); -ENODATA if there is
 * no usable SRV record (an error rcode, no answers, only other types);
 * -EBADMSG if the message is malformed (truncated, a name that loops or
 * runs out, an SRV record of the wrong length). */
int seeds_srv_parse(const uint8_t *msg, size_t len, seeds_srv_target *out,
		    size_t max, size_t *cut);

#endif
