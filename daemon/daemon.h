/*
 * gossipd's layers, each module calling only the ones below it; an
 * upward call is a callback registered at setup.  Bottom to top:
 *
 *   rxbuf   a bounded receive buffer with checked consume (links, API)
 *   seeds   [Cluster]'s seeds resolved (A/AAAA, SRV), again every
 *           ResolveIntervalSeconds; seeds_ops reports the addresses
 *   link    one authenticated TCP stream: handshake, AEAD frames,
 *           PING/PONG heartbeats, GOODBYE; reports up via link_ops
 *   peers   the peer table: listener, dialing with backoff, DNS,
 *           reload, replay timestamps, which session is kept; peers_ops
 *   edge    the per-edge protocol (MODEL, RESYNC, ROUND) as a state
 *           machine over the engine's edges: no loop, sockets or clock;
 *           edge_ops
 *   group   a local group: several trainers' buffers as one node (their
 *           mean, the node's change, pending changes, LocalWait); group_ops
 *   mesh    binds each peer's session to its edge; holds a reload that
 *           comes while the engine is busy
 *   probe   the failure detector (swim) over UDP on the listener's port
 *   cluster membership on the loop: records over the sessions, the
 *           computed neighbours applied to the mesh, the members probed
 *   model   REGISTER/DETACH: its options (model_options), the trainer's
 *           mapped buffer, layout, node; a local group's machine buffer
 *           and members' REGISTERs (model_group)
 *   step    STEP, DRAIN, AVERAGE in one state; engine work off the loop
 *   fetch   FETCH: a neighbour's model copied into the buffer, and ours
 *           served to a peer that asks
 *   status  the STATUS document
 *   api     the Unix-socket server: the only module that knows a client
 *   metrics_http  the opt-in HTTP listener of GET /metrics (MetricsListen)
 *   lifecycle  signals, reload, the stop in its order, readiness and
 *           the watchdog
 *   main    options, keys, and the wiring below
 *
 * Beside them: config (the INI file), endpoint (address text),
 * handshake (the key exchange and AEAD), log, text (log-safe text),
 * counters, httpreq (an HTTP request head, judged), and, pure and driven
 * by cluster and probe, members (the member table), graph (the
 * neighbours computed from it), membership and swim (a failure detector).
 * This header is the daemon as a whole, for api, status and main:
 * everything runs on one libuv loop, and only a large model's engine step
 * runs on libuv's thread pool (step.h).
 */
#ifndef GOSSIPD_DAEMON_H
#define GOSSIPD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "admission.h"
#include "config.h"
#include "counters.h"
#include "handshake.h"
#include "mesh.h"
#include "model.h"
#include "seeds.h"
#include "cluster.h"
#include "step.h"
#include "fetch.h"

#define GSP_VERSION "0.1.0"

typedef struct api_server api_server;
typedef struct metrics_http metrics_http;

typedef struct gossipd {
	uv_loop_t *loop;
	gsp_daemon_config cfg;
	gsp_keypair *key;        /* sodium_malloc, read-only: the one copy */
	char key_b64[45];
	counters counters;
	admission admission;     /* [Cluster]: before the mesh, which uses it */
	mesh mesh;
	model model;
	stepper step;
	fetcher fetch;           /* FETCH: a neighbour's model, and serving ours */
	api_server *api;
	metrics_http *metrics;   /* MetricsListen's listener, or NULL */
	seeds seeds;             /* [Cluster]'s seeds, when it has any */
	cluster cluster;         /* membership, when this node is a member */
	char metrics_addr[GSP_ADDR_MAX];  /* its bound address, or "" */
	uv_signal_t sigterm, sigint, sighup;
	bool stopping;
	uv_timer_t park_timer;   /* a stop that keeps the generations waits
				  * for the engine's write to end */
	/* Rounds per second of each edge (status_rates_start). */
	struct {
		uv_timer_t timer;
		uint64_t at_ms;
		uint64_t rounds[GSP_MAX_PEERS];
		float per_s[GSP_MAX_PEERS];
	} rates;
} gossipd;

#endif
