/*
 * link: one authenticated TCP stream to another gossipd.  It owns the
 * socket, the handshake (handshake.h), AEAD framing of every frame after
 * it, heartbeats (PING/PONG, RTT, the dead-link timeout), GOODBYE on
 * close, and its receive buffer.  It knows nothing of peers' tables,
 * edges or models: it reports up only through the link_ops table of its
 * link_env.
 *
 * Rules:
 * - ops->down is called exactly once per link, as its last callback,
 *   also from inside link_close (so callers need no bookkeeping of their
 *   own); the link's memory lives on until libuv has closed its handles.
 * - link_send takes a copy of the frame.  When it cannot queue the frame
 *   it closes the link and returns the error: a frame never vanishes
 *   while the link stays up.
 * - Before the handshake ends only handshake-sized frames are read.
 */
#ifndef GOSSIPD_LINK_H
#define GOSSIPD_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "counters.h"
#include "handshake.h"
#include "ratelimit.h"

#define LINK_HS_TIMEOUT_MS 5000
#define LINK_PING_MS 2000
#define LINK_DEAD_MS 10000
/* An initiator asks its owner for a new session (ops->rekey) once its
 * session is this old, and again every handshake timeout while it stays
 * up; either end closes a session 1.5 times this old (its keys expire,
 * as WireGuard's REJECT_AFTER_TIME). */
#define LINK_REKEY_MS 120000
/* Unsent bytes a link may queue before it is closed as too slow. */
#define LINK_MAX_QUEUED (256u << 20)
/* Accepted connections still in the handshake: at most this many, and
 * this many from one address; a new one beyond a cap closes the oldest. */
#define LINK_PREAUTH_MAX 128
#define LINK_PREAUTH_PER_ADDR 8
/* Connections that come to start a handshake, per source address
 * (ratelimit.h): this many a second, in bursts of up to this many; one
 * beyond is closed at once, before anything is read. */
#define LINK_HS_RATE_PER_S 50
#define LINK_HS_BURST 100
/* Warnings about unauthenticated connections: at most this many a
 * second, then one line that counts the rest. */
#define LINK_PREAUTH_LOG_PER_S 10

typedef struct plink plink;

typedef enum link_phase {
	LINK_CONNECTING = 0,    /* outbound TCP connect in progress */
	LINK_HANDSHAKE,         /* TCP up, keys not yet agreed */
	LINK_OPEN,              /* session keys: AEAD frames flow */
	LINK_CLOSING,           /* closed or closing; down was called */
} link_phase;

/* Traffic of a link, added into the owner's struct (link_bind).  Bytes
 * are the wire's: what the socket took (a write counts once it is done)
 * and what was read from it, every frame with its length header and
 * AEAD tag, handshake messages included; TCP/IP headers are the
 * kernel's and not in them.  tx_frames counts frames written, rx_frames
 * authenticated frames read. */
typedef struct link_stats {
	uint64_t tx_bytes, rx_bytes, tx_frames, rx_frames;
	uint64_t rtt_ns;        /* last PING round trip, 0 before one */
} link_stats;

typedef struct link_ops {
	/* Responder: the initiator proved static key `key` with handshake
	 * timestamp ts, and sent certificate cert[0..cert_len) (its bytes
	 * as sealed, not checked; cert_len 0: none).  0 accepts (the owner
	 * binds the link with link_bind), a negative errno refuses and
	 * closes it. */
	int (*authorize)(plink *l, const uint8_t key[GSP_KEY_BYTES],
			 const uint8_t ts[GSP_HS_TIMESTAMP], const uint8_t *cert,
			 size_t cert_len);
	/* Initiator of a keyless dial (link_connect without a key): the
	 * responder's HS_CERT carried cert[0..len) (not checked).  0 with
	 * the key to continue with in ret_key (the owner may rebind the
	 * link first), or a negative errno closes it.  NULL: keyless dials
	 * fail. */
	int (*learn)(plink *l, const uint8_t *cert, size_t len,
		     uint8_t ret_key[GSP_KEY_BYTES]);
	/* Session keys agreed: frames may be sent. */
	void (*up)(plink *l);
	/* Optional.  l, a session this end initiated, is older than the
	 * rekey time: the owner should open a new one to replace it. */
	void (*rekey)(plink *l);
	/* A decrypted frame other than PING, PONG and GOODBYE.  A negative
	 * return closes the link: -EACCES as not allowed, else malformed. */
	int (*frame)(plink *l, const uint8_t *pt, size_t len);
	/* The remote end said GOODBYE; down follows. */
	void (*goodbye)(plink *l, uint16_t reason, const char *text, size_t len);
	/* The link is closed.  why: what went wrong, for the owner's record
	 * ("" when the owner itself closed it with link_close). */
	void (*down)(plink *l, const char *why);
} link_ops;

/* What every link of a daemon shares; links keeps them all (for
 * link_close_all). */
typedef struct link_env {
	uv_loop_t *loop;
	const gsp_keypair *key;       /* our static key pair */
	const uint8_t *cert;          /* our certificate: in every HS_INIT,
				       * the answer to HS_WHO; NULL: none */
	size_t cert_len;
	counters *counters;
	const link_ops *ops;
	void *ctx;                    /* the env's owner, for callbacks */
	/* Limits; 0 takes the LINK_* default (tests set small ones). */
	unsigned hs_timeout_ms, ping_ms, dead_ms, rekey_ms;
	size_t max_queued;
	unsigned preauth_max, preauth_per_addr;
	ratelimit *hs_limit;     /* per-address rate of accepted connections;
				  * NULL: none */
	plink *links;            /* newest first */
	uint64_t log_window_ms;  /* rate limit of pre-auth warnings */
	unsigned log_lines, log_suppressed;
} link_env;

/* Dials sa and, once connected, starts the handshake with the responder
 * whose static key is remote_key; NULL: a keyless dial, which asks the
 * responder's certificate first (HS_WHO) and continues with the key
 * ops->learn takes from it.  The link is bound to owner at once. */
int link_connect(link_env *env, const struct sockaddr *sa,
		 const uint8_t remote_key[GSP_KEY_BYTES], void *owner,
		 link_stats *stats, plink **ret);
/* Accepts a connection from server; the link waits for the initiator's
 * handshake, unbound until ops->authorize binds it.  -ECONNREFUSED when
 * the address is over its rate (counted, logged at most once a second
 * per address): the connection is closed, no link is made. */
int link_accept(link_env *env, uv_stream_t *server, plink **ret);

/* Gives the link its owner (ops callbacks read it with link_owner), the
 * stats it adds into and a short name for log lines. */
void link_bind(plink *l, void *owner, link_stats *stats, const char *name);
void *link_owner(const plink *l);
/* The ctx of the link's env. */
void *link_env_ctx(const plink *l);

/* Seals and queues one frame (see the rules above). */
int link_send(plink *l, const uint8_t *pt, size_t len);
/* Closes the link: GOODBYE reason/text first once the handshake is done
 * and reason is not GSP_BYE_UNSPECIFIED.  Idempotent. */
void link_close(plink *l, uint16_t reason, const char *text);
/* Closes every link of env (daemon shutdown). */
void link_close_all(link_env *env, uint16_t reason, const char *text);

/* A warning about l, not yet authenticated: rate-limited with the
 * link's own (LINK_PREAUTH_LOG_PER_S), with its address. */
void link_preauth_warn(plink *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The largest frame body it accepts from now on. */
void link_set_max_frame(plink *l, uint32_t max_body);
bool link_is_initiator(const plink *l);
link_phase link_get_phase(const plink *l);
/* sa as ip:port or [ip6]:port. */
void link_addr_name(const struct sockaddr *sa, char *out, size_t cap);
/* The per-edge seed both ends derived (valid once up). */
const uint8_t *link_edge_seed(const plink *l);

#endif
