/*
 * gossipd's shared state: the daemon, its configured peers with their TCP
 * links, the registered model and the local API clients.  Modules:
 *   link.c   TCP links: connect/accept, handshake, AEAD framing, backoff
 *   edge.c   MODEL/RESYNC/ROUND on an established link, engine edges
 *   model.c  REGISTER/DETACH, STEP and AVERAGE on the shared buffer
 *   api.c    the Unix-socket API server (SCM_RIGHTS for REGISTER)
 *   status.c the STATUS JSON document
 *   main.c   options, keys, signals, readiness
 * Everything runs on one libuv loop; the engine runs on the loop too
 * (a STEP of a large model is the trainer's own wait).
 */
#ifndef GSP_DAEMON_H
#define GSP_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "config.h"
#include "gossip.h"
#include "handshake.h"
#include "proto.h"

#define GSP_VERSION "0.1.0"
#define GSP_HS_TIMEOUT_MS 5000
#define GSP_PING_MS 2000
#define GSP_DEAD_MS 10000
#define GSP_BACKOFF_MIN_MS 100
#define GSP_BACKOFF_MAX_MS 5000
/* A peer's last error (STATUS "last_error"): room for a mismatch text
 * with both summaries. */
#define GSP_PEER_ERROR_MAX (2 * GSP_MODEL_SUMMARY_MAX + 64)
/* Unsent bytes a link may queue before it is closed as too slow. */
#define GSP_LINK_MAX_QUEUED (256u << 20)

typedef struct gsp_daemon gsp_daemon;
typedef struct gsp_peer gsp_peer;
typedef struct gsp_api_client gsp_api_client;

typedef enum gsp_link_state {
	GSP_LINK_HANDSHAKE = 0,  /* TCP up, keys not yet agreed */
	GSP_LINK_MODEL,          /* session keys, waiting for MODEL */
	GSP_LINK_RESYNC,         /* models match, waiting for RESYNC */
	GSP_LINK_UP,             /* ROUNDs flow */
	GSP_LINK_IDLE,           /* no model at one end: heartbeats only */
	GSP_LINK_CLOSING,
} gsp_link_state;

typedef struct gsp_link {
	gsp_daemon *d;
	uv_tcp_t tcp;
	uv_timer_t timer;        /* handshake deadline, then heartbeats */
	gsp_peer *peer;          /* NULL until authenticated (inbound) */
	bool initiator;
	gsp_link_state state;
	gsp_hs hs;
	gsp_session sess;
	uint8_t *rbuf;           /* received bytes not yet framed */
	size_t rlen, rcap;
	uint32_t max_frame;
	size_t queued;           /* bytes handed to uv_write, not yet done */
	uint64_t last_rx_ms, last_tx_ms;
	uint64_t ping_nonce, ping_sent_ns;
	bool closing_handles;
	int pending_close;       /* handles still to close */
	struct gsp_link *next;   /* in d->links */
} gsp_link;

struct gsp_peer {
	gsp_daemon *d;
	size_t index;            /* config order; also the engine edge index */
	gsp_peer_config cfg;
	char name[12];           /* short key for logs */
	gsp_link *link;          /* the established session, if any */
	bool removed;            /* dropped from the config by a reload */
	bool dialing;            /* resolving or connecting */
	struct addrinfo *addrs, *addr_next;  /* Endpoint name's addresses */
	uv_timer_t retry;
	unsigned backoff_ms;     /* reset once MODEL is accepted, not before */
	char last_error[GSP_PEER_ERROR_MAX];  /* why the edge is down; "" */
	uint8_t last_ts[GSP_TAI64N_BYTES];  /* newest handshake timestamp */
	/* Edge state on top of the engine edge. */
	bool edge_up;            /* engine edge active for this session */
	bool start_pending;      /* generation starts after the next apply */
	uint32_t generation;
	uint16_t peer_degree;
	uint8_t *early;          /* peer's next-round message, if it came early */
	size_t early_len;
	uint64_t early_round;
	uint16_t early_degree;
	uint64_t tx_rounds;      /* engine messages already sent this generation */
	gsp_edge_info cache;     /* engine edge as of the last loop-side change */
	uint8_t *deferred[2];    /* ROUND plaintexts that came while busy */
	size_t deferred_len[2];
	unsigned n_deferred;
	bool down_deferred;      /* the session ended while busy */
	uint32_t down_generation; /* that session's generation */
	uint64_t last_apply_step;
	double diff_norm;        /* norm of the last completed difference */
	uint64_t rtt_ns;
	/* Counters (cumulative). */
	uint64_t tx_bytes, rx_bytes, tx_frames, rx_frames;
	uint64_t rounds_completed;  /* with the current model */
	/* Counters that only grow while the daemon runs (metrics): rounds,
	 * and the engine's byte counts of models already detached. */
	uint64_t rounds_total, exact_bytes_done, message_bytes_done;
	uint64_t resyncs;        /* RESYNCs that started a generation */
};

typedef struct gsp_model {
	bool registered;
	gsp_api_client *owner;
	char trainer[GSP_API_NAME_MAX + 1];  /* the owner's HELLO name */
	int fd;
	float *params;
	size_t map_bytes;
	gsp_layout *layout;
	gsp_node *node;
	uint8_t fingerprint[GSP_FINGERPRINT_BYTES];
	char summary[GSP_MODEL_SUMMARY_MAX + 1];
	uint64_t max_payload;
	uint64_t steps;
	uint64_t bytes_base_tx, bytes_base_rx;
	bool busy;               /* a step runs on the thread pool */
	bool detach_pending;
	/* A STEP or AVERAGE waiting for edges. */
	gsp_api_client *waiting;
	bool wait_step;          /* a STEP waits for edges */
	bool wait_sync;          /* ... all of them (SYNC) */
	bool wait_drain;
	bool averaging;
	double avg_target;
	uint64_t avg_deadline_ms;
	uint32_t avg_max_rounds, avg_rounds;
	uv_timer_t avg_timer;
} gsp_model;

typedef struct gsp_counters {
	uint64_t rx_malformed, hs_refused, hs_replayed, links_closed;
	uint64_t api_malformed, fingerprint_mismatch, version_mismatch;
} gsp_counters;

struct gsp_daemon {
	uv_loop_t *loop;
	gsp_daemon_config cfg;
	gsp_keypair key;
	char key_b64[45];
	uv_tcp_t listener;
	char listen_addr[GSP_ADDR_MAX];  /* as bound (real port) */
	uv_pipe_t api;
	gsp_peer *peers;
	size_t n_peers;
	gsp_link *links;
	gsp_api_client *clients;
	gsp_model model;
	gsp_counters counters;
	uv_signal_t sigterm, sigint, sighup;
	bool stopping;
	int exit_code;
};

/* link.c */
int gsp_links_start(gsp_daemon *d);
void gsp_link_send(gsp_link *l, const uint8_t *pt, size_t len);
void gsp_link_close(gsp_link *l, uint16_t reason, const char *text);
void gsp_peer_dial_later(gsp_peer *p);
/* Records why p's edge is down (STATUS "last_error"); cleared when a
 * session's MODEL is accepted. */
void gsp_peer_error(gsp_peer *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Closes every session so it redials with the new MODEL; nothing while
 * the daemon stops (gsp_links_stop says GOODBYE shutdown instead). */
void gsp_links_reconnect_all(gsp_daemon *d, uint16_t reason, const char *text);
void gsp_links_stop(gsp_daemon *d);
/* Applies a re-read configuration's [Peer] list (SIGHUP). */
void gsp_peers_update(gsp_daemon *d, const gsp_daemon_config *cfg);

/* edge.c */
void gsp_edge_session_up(gsp_link *l);
int gsp_edge_on_frame(gsp_link *l, const uint8_t *pt, size_t len);
void gsp_edge_session_down(gsp_peer *p);
void gsp_edge_send_rounds(gsp_daemon *d);
void gsp_edge_finish(gsp_daemon *d);
/* What happened while a step ran off the loop, now that it is done:
 * sessions that ended, then (with replay) the ROUNDs that arrived. */
void gsp_edge_after_busy(gsp_daemon *d, bool replay);
/* Refreshes every peer's copy of its engine edge (for STATUS). */
void gsp_edge_cache(gsp_daemon *d);
uint16_t gsp_edge_degree(const gsp_daemon *d);
int gsp_edge_message_model(const gsp_daemon *d, uint8_t *buf, size_t cap,
			   size_t *ret_len);

/* model.c */
int gsp_model_register(gsp_daemon *d, gsp_api_client *c, const uint8_t *body,
		       size_t len, int fd, char *err, size_t err_len);
void gsp_model_detach(gsp_daemon *d);
/* One more engine edge slot (disabled) for a peer added by a reload. */
int gsp_model_add_edge(gsp_daemon *d);
int gsp_model_step(gsp_daemon *d, gsp_api_client *c, uint32_t flags);
int gsp_model_average(gsp_daemon *d, gsp_api_client *c,
		      const gsp_api_average *req);
void gsp_model_edges_changed(gsp_daemon *d);
double gsp_model_estimate(const gsp_daemon *d);

/* api.c */
int gsp_api_start(gsp_daemon *d);
void gsp_api_reply(gsp_api_client *c, const uint8_t *body, size_t len);
void gsp_api_reply_error(gsp_api_client *c, int code, const char *text);
/* The client's HELLO name ("client" before HELLO). */
const char *gsp_api_client_name(const gsp_api_client *c);
void gsp_api_stop(gsp_daemon *d);

/* status.c */
char *gsp_status_json(const gsp_daemon *d);

uint64_t gsp_now_ms(const gsp_daemon *d);

#endif
