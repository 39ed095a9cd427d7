/*
 * The daemon's counters of refused and malformed input (STATUS
 * "counters", gossipctl metrics).  One struct that main owns; each module
 * bumps only its own fields through the pointer it is given at setup.
 */
#ifndef GOSSIPD_COUNTERS_H
#define GOSSIPD_COUNTERS_H

#include <stdint.h>

typedef struct counters {
	uint64_t rx_malformed;          /* link, edge: a frame that did not decode */
	uint64_t hs_refused;            /* link, peers: handshake not accepted */
	uint64_t hs_replayed;           /* peers: old or replayed timestamp */
	uint64_t hs_rate_limited;       /* link: over its address's rate */
	uint64_t hs_mac1_bad;           /* link: HS_INIT's mac1 wrong, no DH done */
	/* admission: an unlisted key refused by its certificate, by reason */
	uint64_t hs_cert_missing, hs_cert_malformed, hs_cert_foreign;
	uint64_t hs_cert_expired, hs_cert_not_yet, hs_cert_revoked;
	uint64_t hs_cert_other_key, hs_cert_self;
	uint64_t hs_who_refused;        /* link: HS_WHO, and we have no certificate */
	uint64_t links_closed;          /* link */
	uint64_t sessions_rekeyed;      /* peers: replaced by our new handshake */
	uint64_t api_malformed;         /* api */
	uint64_t fingerprint_mismatch;  /* edge */
	uint64_t version_mismatch;      /* link */
	uint64_t rounds_refused;        /* edge: a ROUND over MaxRoundChange */
	uint64_t rounds_rolled_back;    /* edge: taken back, the peer ended before */
	uint64_t rounds_unreconciled;   /* edge, model: may have landed at one end only */
	uint64_t writes_redone;         /* model: a killed daemon's write, redone */
	uint64_t writes_undone;         /* model: a killed daemon's write, undone */
	uint64_t records_saved;         /* mesh: the edges' records written */
	uint64_t metrics_scrapes;       /* metrics_http: GET /metrics served */
	uint64_t metrics_rejected;      /* metrics_http: over the connection cap */
	uint64_t metrics_bad_requests;  /* metrics_http: answered 4xx/505 */
	uint64_t metrics_timed_out;     /* metrics_http: cut off at the time limit */
	uint64_t seed_resolutions;      /* seeds: lookups of a seed that answered */
	uint64_t seed_failures;         /* seeds: lookups of a seed that failed */
	uint64_t seed_addresses_cut;    /* seeds: addresses beyond the bounds */
	uint64_t fetches_done;          /* fetch: our FETCHes copied and written */
	uint64_t fetches_failed;        /* fetch: ours that ended without a copy */
	uint64_t fetches_served;        /* fetch: snapshots sent whole to a peer */
} counters;

#endif
