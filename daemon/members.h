/*
 * members: the member table (issue 36, membership).  It owns every member
 * record this node holds (proto/member.h's gsp_member, decoded and verified
 * by the caller), its own among them, and decides which record of a member
 * wins: the newer by gsp_member_newer(), the one held on a tie.
 *
 * membership.h feeds it from the MEMBERS messages of the sessions
 * (docs/MEMBERSHIP.md, "The daemon as a member").
 *
 * - Bounded: at most max_members records (MaxMembers; up to MEMBERS_MAX),
 *   our own included, all allocated by members_init() (members_bytes()
 *   counts them); a record of a new member beyond that is MERGE_FULL.
 * - Our own record is set by members_set_self() only.  A record about us
 *   that is newer than ours (suspect or dead at our incarnation, anything
 *   at a higher one; anything before our record is set) is
 *   MERGE_SELF_REFUTE: the caller refutes it with a record of a higher
 *   incarnation than the one received.
 * - Dead and left members stay as tombstones for tombstone_ms after their
 *   record arrived, so that a late, older record (alive at the same
 *   incarnation) is STALE instead of bringing them back;
 *   members_expire() drops them after that.
 * - The order: every member sorts the same records alike, by
 *   BLAKE2b-256(node key) ascending (members_hash(); keys differ, so
 *   hashes do).  Lookup is a binary search in that order.
 * - Anti-entropy: members_digest() lists (key, incarnation, status) in
 *   the order; members_missing() answers a peer's digest with our records
 *   it lacks or holds older.
 *
 * Pure: time is a parameter, no I/O, no allocation after members_init().
 */
#ifndef GOSSIPD_MEMBERS_H
#define GOSSIPD_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "member.h"

#define MEMBERS_MAX 10000                   /* the largest max_members */
#define MEMBERS_TOMBSTONE_MS 300000         /* the default: 5 minutes */
#define MEMBERS_HASH_BYTES 32

enum members_merge_result {
	MERGE_NEW,          /* a member not in the table: stored */
	MERGE_NEWER,        /* newer than the record held: replaced it */
	MERGE_SAME,         /* the same incarnation and status: kept ours */
	MERGE_STALE,        /* older than the record held: dropped */
	MERGE_FULL,         /* a member not in the table, no room: dropped */
	MERGE_SELF_REFUTE,  /* about us, newer than our own: refute it */
	MERGE_INVALID,      /* a version or status out of range: dropped */
	MERGE_RESULTS
};

typedef struct members_counters {
	uint64_t merged[MERGE_RESULTS];   /* each merge, by its result */
	/* What stored records (NEW and NEWER) changed: a member became
	 * alive (new, or after dead or left), left, dead, suspect; a
	 * refutation is a suspect member alive again, or a MERGE_SELF_REFUTE
	 * (ours to answer). */
	uint64_t joins, leaves, deaths, suspicions, refutations;
	uint64_t expired;                 /* tombstones members_expire() dropped */
} members_counters;

typedef struct members_entry {
	gsp_member rec;
	uint8_t hash[MEMBERS_HASH_BYTES];  /* members_hash(rec.node_key) */
	uint64_t since_ms;                 /* when rec arrived */
	uint32_t mark;                     /* members_missing()'s pass */
	/* The failure detector's verdict (probe.h): dead here, whatever the
	 * record says, until a newer record of the member arrives. */
	bool detected_dead;
} members_entry;

typedef struct members {
	uint8_t self_key[GSP_KEY_BYTES];
	uint8_t self_hash[MEMBERS_HASH_BYTES];
	bool has_self;                     /* members_set_self() was called */
	size_t max;                        /* max_members */
	size_t count;                      /* records held, ours included */
	uint64_t tombstone_ms;
	members_entry *slot;               /* max entries */
	uint32_t *order;                   /* count slot numbers, by hash */
	uint32_t *free_slots;              /* max - count free slot numbers */
	uint32_t mark;
	uint64_t changes;                  /* records added, replaced or dropped */
	members_counters counters;
} members;

/* One entry of a digest: which record of a node a member holds. */
typedef struct members_digest_entry {
	uint8_t node_key[GSP_KEY_BYTES];
	uint64_t incarnation;
	uint8_t status;
} members_digest_entry;

/* The order's hash of a node key: BLAKE2b-256 (libsodium). */
void members_hash(const uint8_t key[static GSP_KEY_BYTES],
		  uint8_t ret[static MEMBERS_HASH_BYTES]);

/* An empty table for the node self_key, of max_members records (1 ..
 * MEMBERS_MAX, ours included; -EINVAL otherwise), tombstones kept
 * MEMBERS_TOMBSTONE_MS.  -ENOMEM, with nothing held.  Call sodium_init()
 * first. */
int members_init(members *m, const uint8_t self_key[static GSP_KEY_BYTES],
		 size_t max_members) GSP_MUST_CHECK;
void members_free(members *m);
void members_set_tombstone_ms(members *m, uint64_t tombstone_ms);
/* Sets our own record: rec must be about self_key (-EINVAL) and newer than
 * the one we had, if any (-ESTALE).  It takes the slot kept for it. */
int members_set_self(members *m, const gsp_member *rec,
		     uint64_t now_ms) GSP_MUST_CHECK;

/* Merges a decoded, verified record received at now_ms (above). */
enum members_merge_result members_merge(members *m, const gsp_member *rec,
					uint64_t now_ms);
/* "new", "newer", ... for logs and metrics; NULL for no result. */
const char *members_merge_name(enum members_merge_result r);

/* The record held of key, or NULL. */
const members_entry *members_find(const members *m,
				  const uint8_t key[static GSP_KEY_BYTES]);
size_t members_count(const members *m);
/* The record at pos (< members_count()) in the order, or NULL. */
const members_entry *members_at(const members *m, size_t pos);

/* The failure detector's verdict on key's member (not ours): 1 if it
 * changed, 0 if not, -ENOENT if key is not held.  A newer record of the
 * member clears it. */
int members_set_detected(members *m, const uint8_t key[static GSP_KEY_BYTES],
			 bool dead);

/* Drops the tombstones older than tombstone_ms at now_ms (never ours);
 * how many. */
size_t members_expire(members *m, uint64_t now_ms);

/* The bytes the table holds (the struct and what members_init()
 * allocated). */
size_t members_bytes(const members *m);

/* The digest of the records at positions from.. in the order: up to cap
 * entries in out; how many. */
size_t members_digest(const members *m, size_t from,
		      members_digest_entry *out, size_t cap);
/* A peer's digest of its whole table (n entries, any order) against
 * ours: the records we hold that it lacks or holds older, in the order,
 * the first cap of them in out; how many (the rest go at a later
 * exchange).  Time O((n + count) log count). */
size_t members_missing(members *m, const members_digest_entry *digest,
		       size_t n, const gsp_member **out, size_t cap);

#endif
