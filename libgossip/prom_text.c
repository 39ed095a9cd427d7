/* The status document in the Prometheus text format (see prom_text.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom_text.h"

/* ---- the exposition format --------------------------------------------- */

/* A metric family: its header is printed before its first sample. */
typedef struct family {
	const char *name;
	const char *type;             /* "gauge" or "counter" */
	const char *help;
	bool started;
} family;

/* Label values escape backslash, double quote and newline; HELP text
 * escapes backslash and newline. */
static void put_escaped(gsp_textbuf *out, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			gsp_textbuf_put(out, "\\\\", 2);
		else if (*s == '\n')
			gsp_textbuf_put(out, "\\n", 2);
		else if (*s == '"' && quote)
			gsp_textbuf_put(out, "\\\"", 2);
		else
			gsp_textbuf_put(out, s, 1);
	}
}

/* Starts a sample: the family header if needed, the name and the labels
 * (name/value pairs; pairs whose value is NULL are left out). */
static void sample_start(gsp_textbuf *out, family *fam, const char *const *labels,
			 size_t n_pairs)
{
	bool first = true;

	if (!fam->started) {
		gsp_textbuf_printf(out, "# HELP %s ", fam->name);
		put_escaped(out, fam->help, false);
		gsp_textbuf_printf(out, "\n# TYPE %s %s\n", fam->name, fam->type);
		fam->started = true;
	}
	gsp_textbuf_put(out, fam->name, strlen(fam->name));
	for (size_t i = 0; i < n_pairs; i++) {
		if (!labels[2 * i + 1])
			continue;
		gsp_textbuf_printf(out, "%s%s=\"", first ? "{" : ",", labels[2 * i]);
		put_escaped(out, labels[2 * i + 1], true);
		gsp_textbuf_put(out, "\"", 1);
		first = false;
	}
	if (!first)
		gsp_textbuf_put(out, "}", 1);
}

static void sample_u64(gsp_textbuf *out, family *fam, const char *const *labels, size_t n_pairs,
		       uint64_t v)
{
	sample_start(out, fam, labels, n_pairs);
	gsp_textbuf_printf(out, " %" PRIu64 "\n", v);
}

/* Values in the format's float syntax, to 15 significant digits (so that
 * 0.21 ms reads 0.00021 s rather than 0.00020999999999999998). */
static void sample_double(gsp_textbuf *out, family *fam, const char *const *labels,
			  size_t n_pairs, double v)
{
	char buf[40];

	if (isnan(v)) {
		snprintf(buf, sizeof(buf), "NaN");
	} else if (isinf(v)) {
		snprintf(buf, sizeof(buf), "%cInf", v > 0 ? '+' : '-');
	} else {
		snprintf(buf, sizeof(buf), "%.15g", v);
	}
	sample_start(out, fam, labels, n_pairs);
	gsp_textbuf_printf(out, " %s\n", buf);
}

/* ---- the node, its model and its counters ------------------------------ */

static void print_node(gsp_textbuf *out, const gsp_sdoc *st)
{
	family info = { "gossipd_info", "gauge",
		"Always 1; labels: the daemon's version, public key, listen "
		"address and method.", false };
	family rank = { "gossipd_rank", "gauge",
		"PowerGossip rank of the configured method.", false };
	family gamma = { "gossipd_gamma", "gauge",
		"Gossip step size (gamma).", false };
	const char *const labels[] = {
		"version", st->version, "public_key", st->public_key,
		"listen", st->listen, "method", st->method,
	};

	sample_u64(out, &info, labels, 4, 1);
	if (st->rank.set)
		sample_u64(out, &rank, NULL, 0, st->rank.v);
	if (st->gamma.set)
		sample_double(out, &gamma, NULL, 0, st->gamma.v);
}

static void print_model(gsp_textbuf *out, const gsp_sdoc *st)
{
	const gsp_sdoc_model *m = &st->model;
	family registered = { "gossipd_model_registered", "gauge",
		"1 while a trainer has a model registered, else 0.", false };
	family tensors = { "gossipd_model_tensors", "gauge",
		"Tensors in the registered model.", false };
	family floats = { "gossipd_model_floats", "gauge",
		"Parameters (float32) in the registered model.", false };
	family steps = { "gossipd_model_steps_total", "counter",
		"STEP requests served since the model was registered.", false };
	family info = { "gossipd_model_info", "gauge",
		"Always 1; labels: the model's fingerprint and summary.", false };
	family estimate = { "gossipd_model_consensus_estimate", "gauge",
		"The daemon's estimate of the consensus distance (relative).", false };
	const char *const labels[] = {
		"fingerprint", m->fingerprint, "summary", m->summary,
	};

	if (!st->have_model)
		return;
	if (m->registered.set)
		sample_u64(out, &registered, NULL, 0, m->registered.v);
	if (m->tensors.set)
		sample_u64(out, &tensors, NULL, 0, m->tensors.v);
	if (m->floats.set)
		sample_u64(out, &floats, NULL, 0, m->floats.v);
	if (m->steps.set)
		sample_u64(out, &steps, NULL, 0, m->steps.v);
	if (m->fingerprint || m->summary)
		sample_u64(out, &info, labels, 2, 1);
	if (m->consensus_estimate.set)
		sample_double(out, &estimate, NULL, 0, m->consensus_estimate.v);
}

static const struct {
	const char *name, *help;
} counter_help[] = {
	{ "rx_malformed", "Peer links closed for malformed input." },
	{ "hs_refused", "Handshakes refused: static key not on the allowlist." },
	{ "hs_replayed", "Handshakes refused: stale or replayed timestamp." },
	{ "hs_rate_limited", "Connections refused: over the handshake rate of their address." },
	{ "hs_mac1_bad", "Handshakes refused before any Diffie-Hellman: HS_INIT's mac1 does not match our key." },
	{ "hs_cert_missing", "Handshakes refused: a key not on the allowlist without a certificate." },
	{ "hs_cert_malformed", "Handshakes refused: a certificate that does not decode." },
	{ "hs_cert_foreign", "Handshakes refused: a certificate not signed by our Authority." },
	{ "hs_cert_expired", "Handshakes refused: an expired certificate." },
	{ "hs_cert_not_yet", "Handshakes refused: a certificate not valid yet." },
	{ "hs_cert_revoked", "Handshakes refused: a certificate of a key on the revocation list." },
	{ "hs_cert_other_key", "Handshakes refused: a certificate of another key than the peer's." },
	{ "hs_cert_self", "Handshakes refused: a certificate of this node's own key (a node dialing itself)." },
	{ "hs_who_refused", "HS_WHO refused: this node has no certificate to show." },
	{ "version_mismatch", "Peers refused for another protocol version (another major, or a handshake of another minor)." },
	{ "model_mismatch", "Peer links closed for a different model fingerprint." },
	{ "fingerprint_mismatch", "Peer links closed for a different model fingerprint." },
	{ "pong_unmatched", "PONGs dropped for an unknown nonce." },
	{ "links_closed", "Peer links closed, for any reason." },
	{ "rounds_refused", "ROUNDs refused for differing from ours by more than MaxRoundChange." },
	{ "rounds_rolled_back", "Rounds taken back because the neighbour ended the generation before them." },
	{ "rounds_unreconciled", "Rounds that may have landed at one end only (a neighbour lost its edge state)." },
	{ "api_malformed", "Local API connections closed for malformed requests." },
	{ "writes_redone", "Writes into the parameters a killed gossipd left, undone by the trainer's client and redone at REGISTER (its records counted them)." },
	{ "writes_undone", "Writes into the parameters a killed gossipd left, undone by the trainer's client (its records did not count them)." },
	{ "sessions_rekeyed", "Sessions this node initiated and replaced with a new handshake (RekeyAfterSeconds)." },
	{ "records_saved", "Times the edges' records (the state file a restart continues from) were written." },
	{ "metrics_scrapes", "GET /metrics requests answered by the daemon's metrics listener (MetricsListen)." },
	{ "metrics_rejected", "Metrics connections closed at once: over the listener's concurrent-connection cap." },
	{ "metrics_bad_requests", "Metrics requests answered with an error status (400, 404, 405, 431, 505) and closed." },
	{ "metrics_timed_out", "Metrics connections cut off for not sending their request or not reading the response in time." },
	{ "seed_resolutions", "Lookups of a [Cluster] seed (Seed, SeedSRV) that answered." },
	{ "seed_failures", "Lookups of a [Cluster] seed that failed (the seed keeps its last good addresses)." },
	{ "fetches_done", "Copies of a neighbour's model (a trainer's FETCH) received whole, verified and written into the buffer." },
	{ "fetches_failed", "A trainer's FETCHes that ended without a copy: no neighbour with the model, or the time limit." },
	{ "fetches_served", "Snapshots of this node's model sent whole to a peer that asked for them." },
	{ "seed_addresses_cut", "Seed addresses dropped beyond the bounds (64 per seed's answer, 256 in all)." },
	{ "member_joins", "Members that became alive in this node's table: new, or back after dead or left." },
	{ "member_leaves", "Members whose record said they left." },
	{ "member_deaths", "Members whose record said they are dead." },
	{ "member_suspicions", "Members whose record said they are suspect." },
	{ "member_refutations", "Suspect members alive again, and records about this node refuted with a higher incarnation." },
	{ "member_records_refused", "Member records dropped: bad signature or certificate, expired, or revoked." },
	{ "member_records_limited", "Member records dropped unverified: over a session's budget (a peer flooding records); a full sync is asked again." },
	{ "member_graph_changes", "Times this node's computed neighbour set changed." },
	{ "members_full", "Records of new members dropped over MaxMembers." },
	{ "probe_probes", "Members the failure detector probed (one per protocol period)." },
	{ "probe_suspicions", "Members the failure detector suspected (its own probes, or told by others)." },
	{ "probe_deaths", "Members the failure detector declared dead." },
	{ "probe_refutations", "Suspicions the failure detector saw refuted, this node's own included." },
	{ "probe_refused", "Probe datagrams dropped: malformed, not authentic, or from a key that is not a member." },
	{ "probe_rate_limited", "Probe datagrams dropped unopened: over their source address and port's rate (100/s, burst 200)." },
};

/* "gossipd_" + name with every character outside [a-zA-Z0-9_] replaced by
 * '_' + "_total" (unless name already ends so); NULL for an empty name or
 * no memory. */
static char *counter_metric_name(const char *name)
{
	size_t len = strlen(name);
	bool has_total = len >= 6 && !strcmp(name + len - 6, "_total");
	size_t cap = strlen("gossipd_") + len + strlen("_total") + 1;
	char *out, *p;

	if (len == 0 || !(out = malloc(cap)))
		return NULL;
	p = out + snprintf(out, cap, "gossipd_%s", name);
	for (char *q = out + strlen("gossipd_"); q < p; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
		      (*q >= '0' && *q <= '9') || *q == '_'))
			*q = '_';
	if (!has_total)
		snprintf(p, cap - (size_t)(p - out), "_total");
	return out;
}

static bool is_edge_family(const char *name);

static int print_counters(gsp_textbuf *out, const gsp_sdoc *st)
{
	char **names = calloc(st->n_counters ? st->n_counters : 1, sizeof(*names));
	int r = 0;

	if (!names)
		return -1;
	for (size_t i = 0; i < st->n_counters && r == 0; i++) {
		const char *help = "gossipd counter (see the daemon's documentation).";
		bool seen = false;
		family fam;

		names[i] = counter_metric_name(st->counters[i].name);
		if (!names[i]) {
			r = *st->counters[i].name ? -1 : 0;
			continue;
		}
		/* Two names that sanitise alike: keep the first family only;
		 * never shadow a family printed elsewhere. */
		for (size_t j = 0; j < i; j++)
			if (names[j] && !strcmp(names[j], names[i]))
				seen = true;
		if (is_edge_family(names[i]) ||
		    !strcmp(names[i], "gossipd_model_steps_total"))
			seen = true;
		if (seen)
			continue;
		for (size_t k = 0; k < sizeof(counter_help) / sizeof(counter_help[0]); k++)
			if (!strcmp(counter_help[k].name, st->counters[i].name))
				help = counter_help[k].help;
		fam = (family){ names[i], "counter", help, false };
		sample_u64(out, &fam, NULL, 0, st->counters[i].value);
	}
	for (size_t i = 0; i < st->n_counters; i++)
		free(names[i]);
	free(names);
	return r;
}

/* ---- edges ------------------------------------------------------------- */

/* The states the daemon reports (daemon/status.c), in lifecycle order:
 * each is always exported, with 0 when no edge is in it. */
static const char *const known_states[] = {
	"down", "connecting", "handshake", "idle", "up",
};

#define N_KNOWN_STATES (sizeof(known_states) / sizeof(known_states[0]))

/* The known states, then the state of each edge: the candidates for
 * gossipd_edges{state=...}.  NULL for an edge without a state. */
static const char *state_candidate(const gsp_sdoc *st, size_t k)
{
	return k < N_KNOWN_STATES ? known_states[k]
				  : st->edges[k - N_KNOWN_STATES].state;
}

static void print_edge_states(gsp_textbuf *out, const gsp_sdoc *st)
{
	family edges = { "gossipd_edges", "gauge", "Edges by state.", false };
	family state = { "gossipd_edge_state", "gauge",
		"1 for the edge's current state, 0 for the others.", false };

	/* Every known state (0 included), then each other state once. */
	for (size_t k = 0; k < N_KNOWN_STATES + st->n_edges; k++) {
		const char *name = state_candidate(st, k);
		const char *const labels[] = { "state", name };
		bool repeated = false;
		uint64_t n = 0;

		if (!name)
			continue;
		for (size_t j = 0; j < k; j++) {
			const char *earlier = state_candidate(st, j);
			if (earlier && !strcmp(earlier, name))
				repeated = true;
		}
		if (repeated)
			continue;
		for (size_t i = 0; i < st->n_edges; i++)
			if (st->edges[i].state && !strcmp(st->edges[i].state, name))
				n++;
		sample_u64(out, &edges, labels, 1, n);
	}
	for (size_t i = 0; i < st->n_edges; i++) {
		const gsp_sdoc_edge *e = &st->edges[i];
		bool known = false;

		if (!e->peer)
			continue;
		for (size_t k = 0; k < N_KNOWN_STATES; k++) {
			const char *const labels[] = {
				"peer", e->peer, "name", e->name,
				"state", known_states[k],
			};
			bool is = e->state && !strcmp(e->state, known_states[k]);
			known = known || is;
			sample_u64(out, &state, labels, 3, is);
		}
		if (e->state && !known) {
			const char *const labels[] = {
				"peer", e->peer, "name", e->name, "state", e->state,
			};
			sample_u64(out, &state, labels, 3, 1);
		}
	}
}

enum value_kind { V_UINT, V_REAL, V_MS_AS_SECONDS, V_RATIO, V_BOOL };

static const struct edge_metric {
	const char *name, *type, *help;
	enum value_kind kind;
	size_t off;
} edge_metrics[] = {
	{ "gossipd_edge_generation", "gauge",
	  "Generation of the edge's engine state (restarts from 1 with the daemon).",
	  V_UINT, offsetof(gsp_sdoc_edge, generation) },
	{ "gossipd_edge_round", "gauge",
	  "Last gossip round of the edge within its generation.",
	  V_UINT, offsetof(gsp_sdoc_edge, round) },
	{ "gossipd_edge_staleness", "gauge",
	  "STEPs since the edge last applied an update.",
	  V_UINT, offsetof(gsp_sdoc_edge, staleness) },
	{ "gossipd_edge_payload_tx_bytes_total", "counter",
	  "Bytes of the engine's messages (ROUND payloads, each round once) sent on the edge.",
	  V_UINT, offsetof(gsp_sdoc_edge, payload_tx_bytes) },
	{ "gossipd_edge_wire_tx_bytes_total", "counter",
	  "Bytes written to the edge's links: every frame with its header and tag, handshakes included.",
	  V_UINT, offsetof(gsp_sdoc_edge, wire_tx_bytes) },
	{ "gossipd_edge_wire_rx_bytes_total", "counter",
	  "Bytes read from the edge's links: every frame with its header and tag, handshakes included.",
	  V_UINT, offsetof(gsp_sdoc_edge, wire_rx_bytes) },
	{ "gossipd_edge_tx_bytes_total", "counter",
	  "The same as gossipd_edge_wire_tx_bytes_total (old name).",
	  V_UINT, offsetof(gsp_sdoc_edge, tx_bytes) },
	{ "gossipd_edge_rx_bytes_total", "counter",
	  "The same as gossipd_edge_wire_rx_bytes_total (old name).",
	  V_UINT, offsetof(gsp_sdoc_edge, rx_bytes) },
	{ "gossipd_edge_tx_frames_total", "counter",
	  "Frames sent on the edge's links.",
	  V_UINT, offsetof(gsp_sdoc_edge, tx_frames) },
	{ "gossipd_edge_rx_frames_total", "counter",
	  "Frames received on the edge's links.",
	  V_UINT, offsetof(gsp_sdoc_edge, rx_frames) },
	{ "gossipd_edge_exact_bytes_total", "counter",
	  "Bytes exact gossip would have sent for the same rounds.",
	  V_UINT, offsetof(gsp_sdoc_edge, exact_bytes) },
	{ "gossipd_edge_message_bytes_total", "counter",
	  "The same as gossipd_edge_payload_tx_bytes_total (old name).",
	  V_UINT, offsetof(gsp_sdoc_edge, message_bytes) },
	{ "gossipd_edge_rounds_total", "counter",
	  "Gossip rounds the edge completed.",
	  V_UINT, offsetof(gsp_sdoc_edge, rounds) },
	{ "gossipd_edge_resyncs_total", "counter",
	  "Sessions whose RESYNCs were exchanged on the edge (each continues the generation or ends it and starts the next).",
	  V_UINT, offsetof(gsp_sdoc_edge, resyncs) },
	{ "gossipd_edge_compression_ratio", "gauge",
	  "Exact-gossip bytes over bytes sent.",
	  V_RATIO, 0 },
	{ "gossipd_edge_rounds_per_second", "gauge",
	  "Gossip rounds the edge completed per second, over the daemon's last second.",
	  V_REAL, offsetof(gsp_sdoc_edge, rounds_per_s) },
	{ "gossipd_edge_rtt_seconds", "gauge",
	  "Round-trip time of the last PING.",
	  V_MS_AS_SECONDS, offsetof(gsp_sdoc_edge, rtt_ms) },
	{ "gossipd_edge_straggler", "gauge",
	  "1 while STEPs go on without waiting for this lagging edge (MaxWait).",
	  V_BOOL, offsetof(gsp_sdoc_edge, straggler) },
	{ "gossipd_edge_diff_norm", "gauge",
	  "Relative norm of the edge's last projected difference, ||msg_peer - msg_own|| / ||msg_own||.",
	  V_REAL, offsetof(gsp_sdoc_edge, diff_norm) },
};

static bool is_edge_family(const char *name)
{
	for (size_t k = 0; k < sizeof(edge_metrics) / sizeof(edge_metrics[0]); k++)
		if (!strcmp(edge_metrics[k].name, name))
			return true;
	return false;
}

static void print_edge_metric(gsp_textbuf *out, const gsp_sdoc *st,
			      const struct edge_metric *m)
{
	family fam = { m->name, m->type, m->help, false };

	for (size_t i = 0; i < st->n_edges; i++) {
		const gsp_sdoc_edge *e = &st->edges[i];
		const char *p = (const char *)e + m->off;
		const char *const labels[] = { "peer", e->peer, "name", e->name };
		const gsp_opt_uint *u = (const gsp_opt_uint *)(const void *)p;
		const gsp_opt_real *d = (const gsp_opt_real *)(const void *)p;
		const gsp_opt_bool *b = (const gsp_opt_bool *)(const void *)p;
		double ratio;

		if (!e->peer)
			continue;
		switch (m->kind) {
		case V_UINT:
			if (u->set)
				sample_u64(out, &fam, labels, 2, u->v);
			break;
		case V_REAL:
			if (d->set)
				sample_double(out, &fam, labels, 2, d->v);
			break;
		case V_MS_AS_SECONDS:
			if (d->set)
				sample_double(out, &fam, labels, 2, d->v / 1000.0);
			break;
		case V_RATIO:
			if (gsp_sdoc_edge_ratio(e, &ratio))
				sample_double(out, &fam, labels, 2, ratio);
			break;
		case V_BOOL:
			if (b->set)
				sample_u64(out, &fam, labels, 2, b->v ? 1 : 0);
			break;
		}
	}
}

static void print_edges(gsp_textbuf *out, const gsp_sdoc *st)
{
	family info = { "gossipd_edge_info", "gauge",
		"Always 1; labels: the peer's public key and endpoint.", false };

	for (size_t i = 0; i < st->n_edges; i++) {
		const char *const labels[] = {
			"peer", st->edges[i].peer, "name", st->edges[i].name,
			"endpoint", st->edges[i].endpoint,
		};
		if (st->edges[i].peer)
			sample_u64(out, &info, labels, 3, 1);
	}
	print_edge_states(out, st);
	for (size_t k = 0; k < sizeof(edge_metrics) / sizeof(edge_metrics[0]); k++)
		print_edge_metric(out, st, &edge_metrics[k]);
}

int gsp_prom_write(const gsp_sdoc *st, gsp_textbuf *out)
{
	int r;

	print_node(out, st);
	print_model(out, st);
	r = print_counters(out, st);
	print_edges(out, st);
	return r < 0 || out->failed ? -ENOMEM : 0;
}
