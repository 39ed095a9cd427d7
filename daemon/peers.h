/*
 * peers: the peer table.  It owns each configured peer's record (its
 * config, short name, last error, newest handshake timestamp and
 * traffic), the TCP listener, dialing with exponential backoff and
 * jitter (a name is resolved again before every attempt), which of two
 * sessions with one peer is kept, and applying a re-read [Peer] list
 * (SIGHUP).  It admits a handshake from a listed key, or from a key whose
 * certificate admission.h admits (a slot of its own, accept-only), with
 * a newer timestamp; it dials a [Peer] known by its address alone after
 * learning its key from its certificate; and it gives a removed peer
 * LeaveWait to leave.  It reports up only through peers_ops: sessions
 * coming and going, and their frames.
 *
 * A peer is found by its public key; its slot (peer.index, also its
 * edge's and engine edge's index) is reused by a peer added later once
 * the removed one is gone: its edge's generation ended, none of its
 * links is left, and ops->reusable agrees (docs/ARCHITECTURE.md, "The
 * peer table").
 */
#ifndef GOSSIPD_PEERS_H
#define GOSSIPD_PEERS_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "admission.h"
#include "config.h"
#include "link.h"
#include "proto.h"

#define PEERS_BACKOFF_MIN_MS 100
#define PEERS_BACKOFF_MAX_MS 5000
/* A peer's last error (STATUS "last_error"): room for a mismatch text
 * with both model summaries. */
#define PEER_ERROR_MAX (2 * GSP_MODEL_SUMMARY_MAX + 64)

typedef struct peers peers;

/* Where a peer stands in the configuration. */
typedef enum peer_listing {
	PEER_LISTED = 0,         /* in the configuration */
	PEER_LEAVING,            /* dropped by a reload; its edge's generation
				  * still ends with it (at most LeaveWait) */
	PEER_LEAVE_EXPIRED,      /* LeaveWait passed: the edge ends here alone */
	PEER_GONE,               /* dropped, its edge ended with it (or had
				  * nothing to end): the slot may be reused */
	PEER_GONE_ALONE,         /* dropped, its edge ended here without its
				  * answer: the slot is reused last, so that
				  * the peer added back reconciles the count */
} peer_listing;

/* How a peer came into the table. */
typedef enum peer_origin {
	PEER_CONFIGURED = 0,     /* a [Peer] with its PublicKey */
	PEER_KEYLESS,            /* a [Peer] with an Endpoint alone: its key is
				  * the one its certificate names (all zero
				  * until learned) */
	PEER_ADMITTED,           /* in no [Peer]: admitted by its certificate
				  * (accept-only, as a [Peer] without Endpoint) */
} peer_origin;

/* A key whose slot another peer took, with its newest handshake
 * timestamp: added back, it starts from that, not from zero. */
typedef struct peer_retired {
	uint8_t key[GSP_KEY_BYTES];
	uint8_t ts[GSP_HS_TIMESTAMP];
} peer_retired;

typedef struct peer {
	peers *set;
	size_t index;            /* its slot: also its edge's and engine edge's */
	gsp_peer_config cfg;
	char name[12];           /* short key for logs */
	plink *session;           /* the established session, if any */
	plink *dialed;            /* our connection while it is made */
	plink *held;              /* its session, up while our dial that
				   * would win over it is still under way */
	peer_listing listing;
	peer_origin origin;
	char cert_name[GSP_CERT_NAME_MAX + 1];  /* its certificate's, or "" */
	char alias[GSP_ADDR_MAX];  /* a keyless [Peer]'s Endpoint that turned
				    * out to be this peer's, or "" */
	unsigned links;          /* links bound to it not yet down */
	bool timers_ready;       /* retry and leave are initialised */
	bool resolving;
	bool rekeying;           /* dialing to replace a session (RekeyAfter) */
	struct addrinfo *addrs, *addr_next;  /* Endpoint name's addresses */
	uv_timer_t retry;
	uv_timer_t leave;         /* LeaveWait, while leaving */
	unsigned backoff_ms;     /* reset by peers_session_ok, not before */
	char last_error[PEER_ERROR_MAX];  /* why the edge is down; "" */
	uint8_t last_ts[GSP_HS_TIMESTAMP];  /* newest handshake timestamp */
	link_stats stats;        /* every session's traffic, added up */
} peer;

typedef struct peers_ops {
	/* p->session is established: frames may be sent. */
	void (*session_up)(void *ctx, peer *p);
	/* A frame of p's session; a negative errno closes it. */
	int (*frame)(void *ctx, peer *p, const uint8_t *pt, size_t len);
	/* p's session ended (p->session is NULL again). */
	void (*session_down)(void *ctx, peer *p);
	/* A reload added p, in a new slot (p->index is the next one) or in
	 * the slot of a gone peer that reusable allowed: 0, or a negative
	 * errno to leave it out. */
	int (*added)(void *ctx, peer *p);
	/* A reload removes p: true if it may go now, false if it must
	 * leave first (its session stays until peers_leave_done). */
	bool (*removed)(void *ctx, peer *p);
	/* LeaveWait passed and p is still leaving: its edge ends without
	 * it (peers_leave_done follows, now or once that could happen). */
	void (*leave_expired)(void *ctx, peer *p);
	/* Whether gone p's slot may take another peer now (its edge holds
	 * nothing of it any more); NULL: always. */
	bool (*reusable)(void *ctx, const peer *p);
} peers_ops;

struct peers {
	link_env env;
	admission *adm;          /* NULL: the allowlist only */
	uv_loop_t *loop;
	const gsp_keypair *key;
	counters *counters;
	uv_tcp_t listener;
	char listen_addr[GSP_ADDR_MAX];  /* as bound (the real port) */
	peer *peer;              /* room for GSP_MAX_PEERS: pointers stay valid */
	size_t n;                /* slots used so far (gone ones included) */
	peer_retired *retired;   /* room for GSP_MAX_PEERS, a ring */
	link_stats retired_stats;  /* traffic of peers whose slot went */
	size_t n_retired, retired_next;
	const peers_ops *ops;
	void *ctx;
	bool stopping;
	bool stop_begun;         /* no reconnect for a model change */
	char replay_path[GSP_PATH_MAX];  /* "" : timestamps in memory only */
	bool replay_failed;      /* a save failed (logged once) */
	bool admit_members_only; /* a peer admitted by its certificate is
				  * members_only until listed (cluster.h) */
};

/* The table of cfg's peers.  -EINVAL with the reason in err when one is
 * this node's own key. */
int peers_init(peers *ps, uv_loop_t *loop, const gsp_keypair *key,
	       counters *c, const gsp_daemon_config *cfg, const peers_ops *ops,
	       void *ctx, char *err, size_t err_len);
void peers_free(peers *ps);
/* Admission by certificate (before peers_start): unlisted keys whose
 * certificate adm admits get a slot, keyless [Peer]s learn their key,
 * and our certificate goes into every handshake. */
void peers_set_admission(peers *ps, admission *adm);
/* The cluster's (cluster.h): peers admitted from now on are linked for
 * the member records only until a reload lists them. */
void peers_admit_members_only(peers *ps);
/* Listens on a numeric ipv4:port or [ipv6]:port and dials every peer
 * with an Endpoint. */
int peers_start(peers *ps, const char *listen);
/* GOODBYE shutdown on every link; no more dialing. */
void peers_stop(peers *ps);

/* One frame on p's session: -ENOTCONN without one; on a send error the
 * session is closed (session_down follows) and the error returned. */
int peers_send(peer *p, const uint8_t *pt, size_t len);
/* Closes p's session, with GOODBYE reason/text. */
void peers_close(peer *p, uint16_t reason, const char *text);
/* Closes every session so each redials (a model change). */
void peers_reconnect_all(peers *ps, uint16_t reason, const char *text);
/* The daemon begins to stop: sessions stay as they are (the model's
 * edges still end with their peers) until peers_stop. */
void peers_stop_begin(peers *ps);
/* A leaving peer's edge has ended: it goes now. */
void peers_leave_done(peer *p);
/* The session works (its MODEL was accepted): the dial backoff starts
 * over and the last error is forgotten. */
void peers_session_ok(peer *p);
/* Records why p's edge is down (STATUS "last_error"). */
void peers_error(peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Keeps the newest handshake timestamp of every peer in path (replay.h),
 * starting from what it holds: 0, or a negative errno (a file that does
 * not parse), and the table keeps its timestamps in memory only. */
int peers_set_replay_file(peers *ps, const char *path);

/* Applies a re-read configuration's [Peer] list (and its LeaveWait for
 * the peers it removes). */
void peers_update(peers *ps, const gsp_daemon_config *cfg);
/* Whether p is listed (not leaving, not gone), and whether it is
 * leaving (its edge still ends its generation with it). */
bool peers_listed(const peer *p);
bool peers_leaving(const peer *p);
/* Bytes sent and received on every link so far, peers gone included. */
void peers_traffic(const peers *ps, uint64_t *ret_tx, uint64_t *ret_rx);
/* Listed peers (this node's degree), at least 1. */
uint16_t peers_degree(const peers *ps);
/* "down", "connecting" or "handshake" while p has no session, else
 * NULL. */
const char *peers_link_state(const peer *p);
/* Whether p's key is known (a keyless [Peer]'s is learned at its
 * first handshake). */
bool peers_key_known(const peer *p);
/* Whether our static key sorts before p's (the edge's lo end). */
bool peers_we_are_lo(const peer *p);

#endif
