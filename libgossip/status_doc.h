/*
 * The daemon's status document: the JSON that STATUS_OK carries (and that
 * `gossipctl status --json` prints), read with jansson into plain structs.
 *
 * Shared by gossipctl (status, edges, metrics) and gossipd's metrics
 * listener (daemon/metrics_http.c), which read the same document, so it
 * lives below both (libgossip/, layers proto <- libgossip <- daemon,
 * tools) in a static archive of its own (libgossip-status, with
 * prom_text.c and textbuf.c): neither libgossip.so nor the engine links
 * jansson.  Reads only the bytes given; no I/O, no logging.
 *
 * Schema (every field optional; unknown fields are ignored; null means
 * "unknown", like an absent field; a known field of the wrong type makes
 * the whole document malformed):
 *
 *   version, public_key, listen, socket, method      strings
 *   rank                                             integer >= 0
 *   gamma                                            number
 *   model { registered: bool, tensors, floats, steps: integers >= 0,
 *           fingerprint, summary, trainer: strings,
 *           consensus_estimate: number }
 *   counters { <name>: integer >= 0, ... }           members of other types
 *                                                    are ignored
 *   edges [ { peer, name, endpoint, state: strings,
 *             generation, round, staleness, payload_tx_bytes,
 *             wire_tx_bytes, wire_rx_bytes, tx_bytes, rx_bytes, tx_frames,
 *             rx_frames, exact_bytes, message_bytes, rounds,
 *             resyncs: integers >= 0,
 *             rtt_ms, diff_norm: numbers, last_error: string }, ... ]
 *   seeds [ { seed, kind, state, last_error: strings,
 *             resolutions, failures, cut: integers >= 0,
 *             addresses: [ strings ] }, ... ]   [Cluster]'s seeds
 *   seed_addresses                                   integer >= 0
 *
 * tx_bytes / rx_bytes are the old names of wire_tx_bytes / wire_rx_bytes
 * and message_bytes that of payload_tx_bytes: a document with only one
 * of a pair (an older or newer daemon) fills both.
 */
#ifndef GSP_STATUS_DOC_H
#define GSP_STATUS_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Optional values: set is false when the field is absent or null. */
typedef struct gsp_opt_uint {
	bool set;
	uint64_t v;
} gsp_opt_uint;

typedef struct gsp_opt_real {
	bool set;
	double v;
} gsp_opt_real;

typedef struct gsp_opt_bool {
	bool set;
	bool v;
} gsp_opt_bool;

/* Strings are NULL when absent and point into the parsed document. */
typedef struct gsp_sdoc_edge {
	const char *peer;             /* base64 public key */
	const char *name;             /* the [Peer]'s Name, or NULL */
	const char *endpoint;
	const char *state;            /* down, connecting, handshake, up, or
	                                 another the daemon adds */
	gsp_opt_uint generation, round, staleness;
	/* Every byte of the peer's links (handshake, frame headers, tags). */
	gsp_opt_uint wire_tx_bytes, wire_rx_bytes;
	gsp_opt_uint tx_bytes, rx_bytes;  /* the same, old names */
	gsp_opt_uint tx_frames, rx_frames;
	gsp_opt_uint exact_bytes;        /* what exact gossip would have sent */
	gsp_opt_uint payload_tx_bytes;   /* the engine's ROUND payloads sent */
	gsp_opt_uint message_bytes;      /* the same, old name */
	gsp_opt_uint rounds;             /* rounds completed */
	gsp_opt_uint resyncs;            /* RESYNCs (new generations) */
	gsp_opt_real rtt_ms, diff_norm;
	gsp_opt_real rounds_per_s;       /* over the daemon's last second */
	const char *last_error;       /* why the edge is down, or NULL */
	gsp_opt_bool straggler;          /* STEPs do not wait for it (MaxWait) */
} gsp_sdoc_edge;

/* The state to show: "straggler" for an edge that is up but that STEPs
 * go on without, else the daemon's state. */
const char *gsp_sdoc_edge_state(const gsp_sdoc_edge *e);

typedef struct gsp_sdoc_counter {
	const char *name;
	uint64_t value;
} gsp_sdoc_counter;

/* One of [Cluster]'s seeds and its current addresses ("10.0.0.1:7000",
 * "[fd00::1]:7000"). */
typedef struct gsp_sdoc_seed {
	const char *seed;             /* as configured */
	const char *kind;             /* host or srv */
	const char *state;            /* pending, resolved, stale, failed */
	const char *last_error;
	gsp_opt_uint resolutions, failures, cut;
	const char **addresses;       /* n_addresses, in st->seed_addrs */
	size_t n_addresses;
} gsp_sdoc_seed;

/* A member of the cluster (a membership node's "cluster" object). */
typedef struct gsp_sdoc_member {
	const char *key, *name, *status, *endpoint;
	const char *probe;            /* the failure detector's view, or NULL */
	gsp_opt_uint incarnation;
	bool neighbour;               /* its key is in "neighbours" */
} gsp_sdoc_member;

typedef struct gsp_sdoc_model {
	gsp_opt_bool registered;
	gsp_opt_uint tensors, floats, steps;
	const char *fingerprint, *summary;
	const char *trainer;          /* the registered trainer's name */
	gsp_opt_real consensus_estimate;
} gsp_sdoc_model;

typedef struct gsp_sdoc {
	const char *version, *public_key, *listen, *socket, *method;
	gsp_opt_uint rank;
	gsp_opt_real gamma;
	bool have_model;              /* a "model" object was present */
	gsp_sdoc_model model;
	gsp_sdoc_counter *counters;       /* in document order */
	size_t n_counters;
	gsp_sdoc_edge *edges;
	size_t n_edges;
	gsp_sdoc_seed *seeds;
	size_t n_seeds;
	const char **seed_addrs;      /* every seed's addresses */
	gsp_opt_uint seed_addresses;  /* the merged, deduplicated count */
	bool have_cluster;            /* a "cluster" object was present */
	gsp_opt_uint incarnation, members_total;
	gsp_sdoc_member *members;     /* as listed (the first 1024) */
	size_t n_members;
	size_t n_neighbours;          /* keys in "neighbours" */
	void *doc;                    /* the json_t owning every string */
} gsp_sdoc;

/* Parses len bytes of JSON into *ret (cleared with gsp_sdoc_clear()).
 * On failure returns -1 and writes the reason into err. */
int gsp_sdoc_parse(const char *json, size_t len, gsp_sdoc *ret,
		      char *err, size_t err_len);
void gsp_sdoc_clear(gsp_sdoc *st);

/* The compression ratio against exact gossip, exact_bytes / tx_bytes;
 * false when either is unknown or 0 (no round yet: the bytes sent are
 * handshake and control traffic only). */
bool gsp_sdoc_edge_ratio(const gsp_sdoc_edge *e, double *ret);

#endif
