/*
 * gossipd configuration: an INI file in WireGuard's style, parsed with
 * libinih.  One [Node] section (this daemon) and one [Peer] section per
 * neighbour.  Every error names the file and the line.
 *
 *   [Node]
 *   ListenAddress = 127.0.0.1:7000     host:port or [v6]:port; port 0 = any
 *   PrivateKeyFile = /var/lib/gossipd/private.key
 *   Socket = /run/gossipd/gossipd.sock
 *   Method = powergossip               powergossip|exact|choco-*
 *   Rank = 4                           the default of a trainer that
 *                                      asks none (REGISTER's options)
 *   MaxRank = 64                       the most a trainer may ask
 *   WirePrecision = float16            powergossip's factors on the wire
 *   Gamma = 1.0                        or "auto" with Topology and Nodes
 *   AverageSchedule = finite           AVERAGE runs the finite-time
 *                                      schedule (Topology and Nodes); off
 *   WarmStart = on
 *   MaxStaleness = 4                   steps an edge may lag before STEP waits
 *   MaxLocalTrainers = 16              trainers in the machine's local group
 *   LocalWait = 50                     ms a local group's step waits for its
 *                                      other trainers' STEPs (group.h)
 *   LogLevel = info                    error|warning|info|debug
 *   MetricsListen = 127.0.0.1:9464     optional: serve GET /metrics
 *                                      (metrics_http.h); port 0 = any
 *   SimSeed = 42, Index = 3            optional: gossip-sim's edge seeds
 *                                      and roles (each [Peer] gets Index)
 *
 *   [Peer]
 *   PublicKey = <base64>
 *   Endpoint = 127.0.0.1:7001          optional: without it, accept only;
 *                                      [v6]:port or a DNS name:port too
 *   Name = node-2                      optional: the metrics' name label
 *   (without PublicKey, when [Cluster] has an Authority: the key is
 *   learned from the certificate the Endpoint presents, PROTOCOL.md 4.2)
 *
 *   [Cluster]                          optional: discovery (seeds.h) and
 *                                      admission by certificate
 *   Seed = seeds.gossip.svc:7000       repeatable: host:port, [v6]:port or
 *                                      name:port (every A/AAAA address)
 *   SeedSRV = _gossip._tcp.example     repeatable: an SRV name; each target's
 *                                      A/AAAA addresses with its port
 *   ResolveIntervalSeconds = 30        names resolved again this often
 *                                      (1..86400)
 *   At most GSP_MAX_SEEDS Seed and SeedSRV lines in all.
 *   Authority = <base64>               the cluster authority's Ed25519
 *                                      public key (gossipctl pubkey --ca)
 *   Certificate = /path/node.cert      this node's (gossipctl cert-issue)
 *   RevocationList = /path/revoked     optional (gossipctl revoke); re-read
 *                                      at SIGHUP
 *   Advertise = 10.0.0.5:7000          repeatable (4): where members reach this
 *                                      node; default the bound ListenAddress
 *   MaxMembers = 1024                  members kept at most (2..10000)
 *   LeaveOnStop = off                  on: SIGTERM and SIGINT tell the
 *                                      members it leaves
 *   With an Authority and a Seed or SeedSRV, the node is a member: its
 *   neighbours are computed from the member list (cluster.h), beside its
 *   [Peer] sections.
 */
#ifndef GSP_DAEMON_CONFIG_H
#define GSP_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gossip.h"
#include "key.h"              /* GSP_KEY_BYTES, the key codec */

#define GSP_PATH_MAX 1024
#define GSP_ADDR_MAX 128
#define GSP_MAX_PEERS 1024
/* A [Peer]'s Name: printable ASCII, at most this many bytes with the NUL. */
#define GSP_PEER_NAME_MAX 64

typedef enum gsp_log_level {
	GSP_LOG_ERROR = 0,
	GSP_LOG_WARNING,
	GSP_LOG_INFO,
	GSP_LOG_DEBUG,
} gsp_log_level;

typedef struct gsp_peer_config {
	uint8_t public_key[GSP_KEY_BYTES];
	char endpoint[GSP_ADDR_MAX];    /* "" when the peer only dials us */
	char name[GSP_PEER_NAME_MAX];   /* Name =, or "" */
	float weight;                   /* 0 = Metropolis-Hastings default */
	int index;                      /* Index = (SimSeed mode), else -1 */
	unsigned line;                  /* where its section starts */
	/* Set by the cluster, never by a file: a seed or a member that is
	 * not a neighbour, linked for the member records only; its edge
	 * starts no generation (NO_START) and counts in no degree. */
	bool members_only;
} gsp_peer_config;

/* [Cluster]'s seeds: Seed (host:port, resolved to all its addresses) or
 * SeedSRV (an SRV name, _service._proto.name). */
#define GSP_MAX_SEEDS 16
#define GSP_DEFAULT_RESOLVE_INTERVAL_S 30
#define GSP_MAX_RESOLVE_INTERVAL_S 86400

typedef enum gsp_seed_kind {
	GSP_SEED_HOST,          /* Seed = host:port */
	GSP_SEED_SRV,           /* SeedSRV = _service._proto.name */
} gsp_seed_kind;

typedef struct gsp_seed_config {
	gsp_seed_kind kind;
	char text[GSP_ADDR_MAX];        /* the value as written */
	unsigned line;
} gsp_seed_config;

/* [Cluster]: admission by certificate (admission.h) and membership. */
#define GSP_MAX_ADVERTISE 4
#define GSP_DEFAULT_MAX_MEMBERS 1024
#define GSP_MAX_MEMBERS 10000
typedef struct gsp_cluster_config {
	bool have_authority;
	uint8_t authority[GSP_KEY_BYTES];     /* an Ed25519 public key */
	char certificate[GSP_PATH_MAX];       /* "": none */
	char revocation_list[GSP_PATH_MAX];   /* "": none */
	/* Membership (cluster.h): where others reach this node, and the
	 * most members it keeps. */
	char advertise[GSP_MAX_ADVERTISE][GSP_ADDR_MAX];  /* numeric ip:port */
	size_t n_advertise;
	unsigned max_members;                 /* MaxMembers */
	bool leave_on_stop;                   /* LeaveOnStop */
} gsp_cluster_config;

typedef struct gsp_daemon_config {
	char path[GSP_PATH_MAX];        /* the file read, for messages */
	char listen[GSP_ADDR_MAX];
	char metrics_listen[GSP_ADDR_MAX];  /* MetricsListen =, or "": none */
	char private_key_file[GSP_PATH_MAX];
	uint8_t private_key[GSP_KEY_BYTES];
	bool have_private_key;          /* inline PrivateKey = ... */
	char socket_path[GSP_PATH_MAX];
	gsp_config engine;              /* a model's settings, unless its
					   REGISTER asks others */
	unsigned max_rank;              /* MaxRank: the most one may ask */
	bool gamma_auto;
	gsp_topology topology;          /* for Gamma = auto, AverageSchedule */
	unsigned nodes;
	bool avg_finite;                /* AverageSchedule = finite or matching */
	bool avg_matching;              /* AverageSchedule = matching (a ring's) */
	/* Its steps, for Topology and Nodes (gossipd computes them at start;
	 * gsp_daemon_config_clear frees them). */
	float *avg_steps;
	size_t avg_n_steps;
	unsigned max_staleness;
	unsigned max_wait_ms;           /* STEP waits at most this for a lagging edge */
	unsigned detach_wait_ms;        /* DETACH waits at most this for the peers */
	unsigned leave_wait_ms;         /* a removed peer's edge ends alone after this */
	unsigned drain_wait_ms;         /* DRAIN waits at most this for rounds */
	unsigned max_local_trainers;    /* MaxLocalTrainers: a local group's bound */
	unsigned local_wait_ms;         /* LocalWait: a group step waits at most
					   this for its trainers' STEPs */
	float max_round_change;         /* a received round's bound; 0: none */
	bool sync_records;              /* the edges' records fdatasync'ed (slotfile.h) */
	unsigned rekey_after_s;         /* a session is replaced this old */
	gsp_log_level log_level;
	/* SimSeed/Index: edge seeds and roles as gossip-sim derives them, so
	 * a cluster replays a simulation (tests, reproducible runs). */
	bool sim_seed_set;
	uint64_t sim_seed;
	int index;
	gsp_cluster_config cluster;
	gsp_peer_config *peers;
	size_t n_peers;
	gsp_seed_config seeds[GSP_MAX_SEEDS];   /* [Cluster] Seed, SeedSRV */
	size_t n_seeds;
	unsigned resolve_interval_s;    /* ResolveIntervalSeconds */
	/* Set by the cluster in the peer lists it computes, never by a file:
	 * a peer admitted by its certificate stays only while listed. */
	bool peers_computed;
} gsp_daemon_config;

/* The daemon's default Rank: the quick start's measured choice
 * (docs/BENCHMARKS.md); the engine's own default stays 1. */
#define GSP_DAEMON_DEFAULT_RANK 4
/* How long asynchronous STEPs wait, at most and in all, for an edge that
 * lags MaxStaleness steps; then the edge is a straggler, not waited for
 * again until it keeps pace. */
#define GSP_DAEMON_DEFAULT_MAX_WAIT_MS 50
#define GSP_DAEMON_DEFAULT_DETACH_WAIT_MS 2000
/* How long a peer a reload removed may take to end its edge's generation
 * with this end (its link may be down for a restart); then the edge ends
 * here alone and the peer goes.  The most it can be told to wait is a day. */
#define GSP_DAEMON_DEFAULT_LEAVE_WAIT_MS 60000
#define GSP_DAEMON_MAX_LEAVE_WAIT_MS 86400000u
/* How long an asynchronous DRAIN waits, at most, for rounds in flight
 * (a straggler's it does not wait for); then their edges are stragglers
 * and it returns.  DRAIN with SYNC waits for every round. */
#define GSP_DAEMON_DEFAULT_DRAIN_WAIT_MS 2000
/* Trainers on one machine that may join its local group (REGISTER's
 * group option, group.h), and the most that may be configured (the API's
 * client limit). */
#define GSP_DAEMON_DEFAULT_MAX_LOCAL_TRAINERS 16
#define GSP_DAEMON_MAX_LOCAL_TRAINERS 256
/* How long a local group's step waits, after the first of its trainers'
 * STEPs, for the others; then it steps without them (never for ever). */
#define GSP_DAEMON_DEFAULT_LOCAL_WAIT_MS 50
/* The most a neighbour's ROUND message may differ from ours, in units of
 * our own message's norm (or of sqrt(its length), if that is larger): a
 * listed peer cannot push arbitrary values into the model. */
#define GSP_DAEMON_DEFAULT_MAX_ROUND_CHANGE 1000.0f
/* A session's initiator replaces it with a new handshake this often
 * (WireGuard's REKEY_AFTER_TIME); RekeyAfterSeconds. */
#define GSP_DAEMON_DEFAULT_REKEY_AFTER_S 120
#define GSP_DAEMON_MAX_REKEY_AFTER_S 86400

/* Fills cfg with defaults (no peers, listen 127.0.0.1:0, socket
 * gossipd.sock, powergossip rank GSP_DAEMON_DEFAULT_RANK, gamma 1). */
void gsp_daemon_config_default(gsp_daemon_config *cfg);

/* Parses INI text; `path` names it in messages.  On error returns a
 * negative code and writes "<path>:<line>: <reason>" into err. */
int gsp_daemon_config_parse(const char *text, size_t len, const char *path,
			    gsp_daemon_config *cfg, char *err, size_t err_len);
/* Reads and parses a file (at most 1 MiB). */
int gsp_daemon_config_load(const char *path, gsp_daemon_config *cfg,
			   char *err, size_t err_len);
void gsp_daemon_config_clear(gsp_daemon_config *cfg);

#endif
