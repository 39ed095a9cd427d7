/*
 * probe: the failure detector on the loop (issue 36, 3).  It runs the
 * pure SWIM/Lifeguard detector (swim.h) over UDP: its own socket, bound
 * to the address and port of the peers' TCP listener, a timer at the
 * detector's deadlines, and one datagram per detector message,
 * authenticated and encrypted for its receiver.
 *
 * It owns: the socket and timer, each probed member's id, key, address
 * and session keys, and the datagram format:
 *
 *   u8 0x30 | u8 version 1 | sender's node key (32) | nonce (24) |
 *   XChaCha20-Poly1305 of the detector's message (swim_msg), with the
 *   first 34 bytes as associated data
 *
 * under the pair's crypto_kx session keys (libsodium: X25519 of the two
 * node keys, one key per direction, so a datagram cannot be reflected to
 * its sender).  A member's id is the first four bytes (little-endian) of
 * BLAKE2b-256 of its key, the members' order hash (members.h), the same
 * at every member; two members whose ids collide are not both probed
 * (the second is counted and left out); an index by id finds a member in
 * constant time.  Each source address and port gets a token bucket
 * (PROBE_RATE_PER_S, PROBE_BURST): a datagram over it is dropped and
 * counted before any lookup or decryption.  Replayed datagrams are not
 * refused: the detector takes a stale ACK for nothing and a stale status
 * loses to the incarnation order.
 *
 * Its caller (cluster.c) names the members to probe (a sync pass after
 * every membership run) with their record's incarnation, which is also
 * their incarnation in the detector: a member that restarts has a higher
 * one and is probed afresh.  Upward, one callback, verdict(key, dead),
 * from inside the detector's calls; it must not call into this module.
 */
#ifndef GOSSIPD_PROBE_H
#define GOSSIPD_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include <sodium.h>
#include <uv.h>

#include "key.h"
#include "member.h"
#include "ratelimit.h"
#include "swim.h"

#define PROBE_DGRAM_TYPE 0x30
#define PROBE_DGRAM_VERSION 1
#define PROBE_DGRAM_HEAD (2 + GSP_KEY_BYTES)
#define PROBE_DGRAM_NONCE crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define PROBE_DGRAM_MAX (PROBE_DGRAM_HEAD + PROBE_DGRAM_NONCE + SWIM_MSG_MAX + \
			 crypto_aead_xchacha20poly1305_ietf_ABYTES)
/* Datagrams taken from one source address and port: a member sends a
 * node a few a second (its probes, acks and indirect probes); a flood
 * past the bucket is dropped before any lookup or decryption. */
#define PROBE_RATE_PER_S 100
#define PROBE_BURST 200
/* Buckets of the members' index by id (a power of two). */
#define PROBE_BUCKETS (2 * SWIM_MEMBERS_MAX)
#define PROBE_NONE UINT16_MAX

typedef struct probe_ops {
	/* The detector holds key's member dead (true), or alive or suspect
	 * again (false). */
	void (*verdict)(void *ctx, const uint8_t key[GSP_KEY_BYTES], bool dead);
} probe_ops;

typedef struct probe_member {
	uint32_t id;                 /* SWIM_ID_NONE: a free slot */
	uint8_t key[GSP_KEY_BYTES];
	uint8_t rx[crypto_kx_SESSIONKEYBYTES], tx[crypto_kx_SESSIONKEYBYTES];
	struct sockaddr_storage addr;
	uint64_t incarnation;        /* the record's, as added */
	uint32_t mark;               /* the sync pass that named it */
	uint16_t next;               /* the next slot in its id's bucket */
} probe_member;

typedef struct probe_counters {
	uint64_t tx, tx_dropped;     /* datagrams sent, and not (socket full) */
	uint64_t rx, rx_refused;     /* received; malformed or not authentic */
	uint64_t rx_limited;         /* dropped unopened: over the source's rate */
	uint64_t rx_unknown;         /* from a key that is not probed */
	uint64_t collisions;         /* members left out: their id was taken */
} probe_counters;

typedef struct probe {
	bool on;
	uv_loop_t *loop;
	uv_udp_t udp;
	uv_timer_t timer;
	bool handles_ready;
	const gsp_keypair *key;
	swim *sw;
	probe_member *member;        /* SWIM_MEMBERS_MAX slots */
	uint16_t *bucket;            /* PROBE_BUCKETS heads of slot chains */
	ratelimit *limit;            /* per source address and port */
	uint32_t pass;
	const probe_ops *ops;
	void *ctx;
	uint8_t rxbuf[PROBE_DGRAM_MAX + 1];
	probe_counters counters;
} probe;

/* The id of key in the detector. */
uint32_t probe_id(const uint8_t key[GSP_KEY_BYTES]);

/* Binds bind_addr (numeric ip:port; that of the TCP listener) and starts
 * the detector for key at incarnation (our record's).  -errno with the
 * reason in err. */
int probe_start(probe *p, uv_loop_t *loop, const gsp_keypair *key, const char *bind_addr,
		uint64_t incarnation, const probe_ops *ops, void *ctx, char *err,
		size_t err_len) GSP_MUST_CHECK;
/* A sync pass: begin, then probe_member() for every member to probe,
 * then end, which stops probing the members not named. */
void probe_sync_begin(probe *p);
void probe_member_set(probe *p, const uint8_t key[GSP_KEY_BYTES],
		      const gsp_member_endpoint *ep, uint64_t incarnation);
void probe_sync_end(probe *p);
/* One received datagram (the format above): 0 with the sender's id and
 * its message; -EBADMSG if malformed or not authentic (a wrong length,
 * type or version, a tag that does not verify, a message that does not
 * decode), -ENOENT if its sender is not probed. */
int probe_dgram_open(const probe *p, const uint8_t *d, size_t len, uint32_t *ret_id,
		     swim_msg *ret) GSP_MUST_CHECK;
/* The rate limit's key of a datagram's source: its address
 * (ratelimit_key) and port.  0 or -EAFNOSUPPORT. */
int probe_source_key(const struct sockaddr *sa, uint8_t ret_key[RATELIMIT_KEY]);
/* Where the socket is bound (its real port), into ret: 0 or -errno. */
int probe_local(const probe *p, struct sockaddr_storage *ret);
/* key's member, held dead, is heard from directly (a session with it
 * came up): probed again as a suspect, so that it refutes its death or
 * dies again (swim_member_revive); true if it was dead. */
bool probe_revive(probe *p, const uint8_t key[GSP_KEY_BYTES]);
/* The detector's view of key's member: GSP_MEMBER_*, or -1 if not probed. */
int probe_status(const probe *p, const uint8_t key[GSP_KEY_BYTES]);
/* Closes the socket and timer (the loop finishes them). */
void probe_close(probe *p);
void probe_free(probe *p);

#endif
