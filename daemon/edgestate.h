/*
 * edgestate: where each edge's generation stood, kept in a file of the
 * state directory, so that a gossipd killed and restarted while its
 * trainer lives ends those generations at the rounds it had applied (its
 * neighbours then take back or complete the round between, PROTOCOL.md
 * 4.6) instead of leaving a round at one end.  Written after every STEP
 * that changed a count, before the frames they promise go out: whole, as
 * the new contents of a slot file (slotfile.h: rewritten in place, on the
 * disk when the write returns, so that a power loss cannot undo what a
 * peer was told; SyncRecords = off: a killed process only).  The messages go to the file from where the edges
 * keep them (pwritev), not through a copy: an exact round's are
 * megabytes, on the path to the next send.
 *
 * With the records goes the count of the daemon's writes into the
 * trainer's buffer that they include (undo.h: a write the records do not
 * count is undone).
 *
 * File: "gossipd edges v2\n" (17 bytes), u64 writes, u32 count, then per
 * edge:
 * 32-byte public key, u32 generation, u8 live, u64 applied, u32
 * ended_generation, u64 ended_applied, 32-byte generation seed, u32
 * message length, the message (our ROUND plaintext of the last counted
 * round; at most EDGESTATE_MSG_MAX bytes).  Little-endian.  A v1 file
 * (no write count) still parses, with writes 0.
 *
 * "gossipd edges v3\n" (written when some record carries a generation's
 * state) adds to each record: u32 Weight (float bits), then three
 * blobs, each a u32 length (at most EDGESTATE_MSG_MAX) and its bytes:
 * the engine edge's state (gsp_node_edge_save: a live generation, or an
 * ended one's update still to land; empty: none), our ROUNDs of rounds
 * S-1 and S.  With it a restarted daemon continues the generation.
 *
 * "gossipd edges v4\n" (written once a model has registered) is v3 with
 * the owner after the write count: the registered model's fingerprint
 * (32 bytes) and its buffer's identity (u64 st_dev, u64 st_ino of the
 * trainer's memfd).  Only that buffer continues the records' generations
 * and settles a write they count; another buffer (another trainer, or the
 * same one with a new model) ends them at their counts and starts afresh.
 */
#ifndef GOSSIPD_EDGESTATE_H
#define GOSSIPD_EDGESTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "key.h"
#include "proto.h"
#include "slotfile.h"

#define EDGESTATE_MAX 4096
#define EDGESTATE_MSG_MAX (64u << 20)
#define EDGESTATE_FILE_MAX ((size_t)256 << 20)
/* The most bytes of one edge's generation state (its engine state and
 * its two kept ROUNDs) the records carry.  A larger one is not saved, and
 * a restart then ends that generation at its counts: the records are
 * written at every STEP, and exact gossip of a 1.86 M-float model kept
 * about 37 MB per edge there, which made its steps 1.7x slower
 * (docs/BENCHMARKS.md).  PowerGossip's state is its factors: a few
 * hundred KB for that model. */
#define EDGESTATE_STATE_MAX ((size_t)4 << 20)

typedef struct edge_record {
	uint8_t key[GSP_KEY_BYTES];
	uint32_t generation;
	bool live;               /* generation was live: it ends at applied */
	uint64_t applied;
	uint32_t ended_generation;
	uint64_t ended_applied;
	uint8_t seed[32];
	const uint8_t *msg;      /* into the parsed buffer, or the edge's */
	uint32_t msg_len;
	/* A live generation's whole state, so that it continues (v3): the
	 * engine edge (gsp_node_edge_save), the generation's Weight (0:
	 * auto) and our ROUNDs of rounds S-1 and S.  engine_len 0: none. */
	float weight;
	const uint8_t *engine;
	uint32_t engine_len;
	const uint8_t *kept[2];
	uint32_t kept_len[2];
} edge_record;

/* The buffer the records describe (v4): set once a model registered. */
typedef struct edge_owner {
	bool set;
	uint8_t fingerprint[GSP_FINGERPRINT_BYTES];
	uint64_t dev, ino;       /* the trainer's memfd */
} edge_owner;

/* Whether a buffer of that model and identity is the records' owner (or
 * the records have none: those of before v4, or of no model). */
bool edgestate_owned_by(const edge_owner *records, const edge_owner *buffer);

/* Whether r records nothing: no generation, none ended, nothing kept. */
bool edgestate_record_empty(const edge_record *r);

/* Parses a file's bytes: the number of records (into out, room for
 * EDGESTATE_MAX; messages point into buf), the write count (if
 * ret_writes) and the owner (if ret_owner; unset before v4), or
 * -EBADMSG. */
int edgestate_parse(const uint8_t *buf, size_t len, edge_record *out,
		    uint64_t *ret_writes, edge_owner *ret_owner);
/* The bytes of n records, the write count and the owner (NULL or unset:
 * none), in a new buffer. */
int edgestate_encode(const edge_record *r, size_t n, uint64_t writes,
		     const edge_owner *owner, uint8_t **ret_buf, size_t *ret_len);
/* Writes them as the file's new contents: edgestate_encode's bytes,
 * without building them in one buffer.  0 or -errno. */
int edgestate_save(slotfile *file, const edge_record *r, size_t n,
		   uint64_t writes, const edge_owner *owner);

#endif
