/*
 * The daemon's status document: the JSON that STATUS_OK carries (and that
 * `gossipctl status --json` prints), read with jansson into plain structs.
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
 *   edges [ { peer, endpoint, state: strings,
 *             generation, round, staleness, payload_tx_bytes,
 *             wire_tx_bytes, wire_rx_bytes, tx_bytes, rx_bytes, tx_frames,
 *             rx_frames, exact_bytes, message_bytes, rounds,
 *             resyncs: integers >= 0,
 *             rtt_ms, diff_norm: numbers, last_error: string }, ... ]
 *
 * tx_bytes / rx_bytes are the old names of wire_tx_bytes / wire_rx_bytes
 * and message_bytes that of payload_tx_bytes: a document with only one
 * of a pair (an older or newer daemon) fills both.
 */
#ifndef GOSSIPCTL_STATUS_DOC_H
#define GOSSIPCTL_STATUS_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Optional values: set is false when the field is absent or null. */
typedef struct gctl_uint {
	bool set;
	uint64_t v;
} gctl_uint;

typedef struct gctl_real {
	bool set;
	double v;
} gctl_real;

typedef struct gctl_bool {
	bool set;
	bool v;
} gctl_bool;

/* Strings are NULL when absent and point into the parsed document. */
typedef struct gctl_edge {
	const char *peer;             /* base64 public key */
	const char *endpoint;
	const char *state;            /* down, connecting, handshake, up, or
	                                 another the daemon adds */
	gctl_uint generation, round, staleness;
	/* Every byte of the peer's links (handshake, frame headers, tags). */
	gctl_uint wire_tx_bytes, wire_rx_bytes;
	gctl_uint tx_bytes, rx_bytes;  /* the same, old names */
	gctl_uint tx_frames, rx_frames;
	gctl_uint exact_bytes;        /* what exact gossip would have sent */
	gctl_uint payload_tx_bytes;   /* the engine's ROUND payloads sent */
	gctl_uint message_bytes;      /* the same, old name */
	gctl_uint rounds;             /* rounds completed */
	gctl_uint resyncs;            /* RESYNCs (new generations) */
	gctl_real rtt_ms, diff_norm;
	gctl_real rounds_per_s;       /* over the daemon's last second */
	const char *last_error;       /* why the edge is down, or NULL */
	gctl_bool straggler;          /* STEPs do not wait for it (MaxWait) */
} gctl_edge;

/* The state to show: "straggler" for an edge that is up but that STEPs
 * go on without, else the daemon's state. */
const char *gctl_edge_state(const gctl_edge *e);

typedef struct gctl_counter {
	const char *name;
	uint64_t value;
} gctl_counter;

typedef struct gctl_model {
	gctl_bool registered;
	gctl_uint tensors, floats, steps;
	const char *fingerprint, *summary;
	const char *trainer;          /* the registered trainer's name */
	gctl_real consensus_estimate;
} gctl_model;

typedef struct gctl_status {
	const char *version, *public_key, *listen, *socket, *method;
	gctl_uint rank;
	gctl_real gamma;
	bool have_model;              /* a "model" object was present */
	gctl_model model;
	gctl_counter *counters;       /* in document order */
	size_t n_counters;
	gctl_edge *edges;
	size_t n_edges;
	void *doc;                    /* the json_t owning every string */
} gctl_status;

/* Parses len bytes of JSON into *ret (cleared with gctl_status_clear()).
 * On failure returns -1 and writes the reason into err. */
int gctl_status_parse(const char *json, size_t len, gctl_status *ret,
		      char *err, size_t err_len);
void gctl_status_clear(gctl_status *st);

/* Fetches the document from the daemon at the given socket (NULL: the
 * default, see ipc.h) and parses it.  Reports failures on stderr and
 * returns -1. */
int gctl_status_load(const char *socket_override, gctl_status *ret);

/* The compression ratio against exact gossip, exact_bytes / tx_bytes;
 * false when either is unknown or 0 (no round yet: the bytes sent are
 * handshake and control traffic only). */
bool gctl_edge_ratio(const gctl_edge *e, double *ret);

#endif
