/*
 * ratelimit: a token bucket per source address, for the connections that
 * come to start a handshake (PROTOCOL.md 6).  Each bucket holds up to
 * `burst` tokens and gains `per_s` a second; an attempt takes one.  The
 * table is small and fixed: an address not in it takes the slot of the
 * address seen least recently (which starts over with a full bucket when
 * it comes back).  IPv4 addresses count one by one, IPv6 ones per /64
 * (what one host can easily hold).  It also says when to log refusals:
 * at most one line a second per address, with the count since the last.
 * Pure: the caller passes the time; no I/O, no allocation.
 */
#ifndef GOSSIPD_RATELIMIT_H
#define GOSSIPD_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include <sys/socket.h>

#define RATELIMIT_SLOTS 256
#define RATELIMIT_KEY 16

typedef struct ratelimit_slot {
	uint8_t key[RATELIMIT_KEY];
	bool used;
	uint64_t seen_ms;        /* the last attempt, for eviction */
	bool logged;             /* a refusal was logged, at logged_ms */
	uint64_t logged_ms;
	uint64_t milli;          /* tokens, in thousandths */
	uint32_t refused;        /* refusals not logged yet */
} ratelimit_slot;

typedef struct ratelimit {
	ratelimit_slot slot[RATELIMIT_SLOTS];
	unsigned per_s, burst;
} ratelimit;

/* An empty table whose buckets gain per_s tokens a second, up to burst
 * (both at least 1). */
void ratelimit_init(ratelimit *rl, unsigned per_s, unsigned burst);
/* The key of sa's address: IPv4 as an IPv4-mapped IPv6 address, IPv6
 * with its low 64 bits zeroed.  -EAFNOSUPPORT for another family. */
int ratelimit_key(const struct sockaddr *sa, uint8_t ret_key[RATELIMIT_KEY]);
/* An attempt from key at now_ms: true, and a token taken, if its bucket
 * had one.  On false, *ret_log is the number of refusals to log now (this
 * one included), or 0 if a line for this address went out less than a
 * second ago. */
bool ratelimit_take(ratelimit *rl, const uint8_t key[RATELIMIT_KEY],
		    uint64_t now_ms, unsigned *ret_log);

#endif
