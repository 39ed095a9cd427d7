/* gossipd's status document: the JSON that STATUS returns and
 * `gossipctl status --json` prints (schema in docs/DAEMON.md). */
#include <arpa/inet.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "status.h"

/* The generation tag's first bytes in the status: enough to tell two
 * generations (or seeds) apart, and no key material (a keyed hash). */
#define STATUS_TAG_BYTES 8

typedef struct sbuf {
	char *p;
	size_t len, cap;
	bool failed;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(sbuf *b, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->p ? b->p + b->len : NULL,
				  b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = true;
			return;
		}
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *np = realloc(b->p, cap);
		if (!np) {
			b->failed = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
}

/* A JSON string of trusted-but-escaped text. */
/* Length of the valid UTF-8 sequence at s (1..4), or 0 if there is none
 * (a stray continuation byte, an overlong form, a surrogate, a value above
 * U+10FFFF or a truncated sequence). */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t v;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, v = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)   /* also stops at the NUL */
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
	    (n == 4 && (v < 0x10000 || v > 0x10ffff)))
		return 0;
	return n;
}

/* s as a JSON string.  Bytes that are not UTF-8 (a path from the config,
 * say) become U+FFFD, so the document always parses. */
static void put_str(sbuf *b, const char *s)
{
	put(b, "\"");
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		size_t n = utf8_len(p);
		if (n == 0) {
			put(b, "\\ufffd");
			p++;
		} else if (*p == '"' || *p == '\\') {
			put(b, "\\%c", *p++);
		} else if (*p < 0x20) {
			put(b, "\\u%04x", *p++);
		} else {
			put(b, "%.*s", (int)n, (const char *)p);
			p += n;
		}
	}
	put(b, "\"");
}

/* s as a JSON string, or null when it is empty. */
static void put_str_or_null(sbuf *b, const char *s)
{
	if (s[0])
		put_str(b, s);
	else
		put(b, "null");
}

static void put_num(sbuf *b, double v)
{
	if (isfinite(v))
		put(b, "%.6g", v);
	else
		put(b, "null");
}

/* "up" or "idle" once the models are compared, "connecting" before. */
static const char *edge_state_name(const peer *p, edge_state state)
{
	const char *link = peers_link_state(p);
	if (peers_leaving(p))
		return "leaving";
	if (link)
		return link;
	if (p->cfg.members_only && (state == EDGE_UP || state == EDGE_IDLE))
		return "members";    /* linked for the member records only */
	switch (state) {
	case EDGE_UP:
		return "up";
	case EDGE_IDLE:
		return "idle";
	default:
		return "connecting";
	}
}

static void on_rates(uv_timer_t *t)
{
	gossipd *d = t->data;
	uint64_t now = uv_now(d->loop), dt = now - d->rates.at_ms;
	const edge_set *s = &d->mesh.edges;
	for (size_t i = 0; i < s->n && i < GSP_MAX_PEERS; i++) {
		edge_view v;
		edge_view_of(edges_at_const(s, i), &v);
		uint64_t r = v.rounds_total, *was = &d->rates.rounds[i];
		/* A slot that a reload gave to another edge starts over. */
		d->rates.per_s[i] = r >= *was && dt ? (float)((r - *was) * 1000.0 / dt) : 0;
		*was = r;
	}
	d->rates.at_ms = now;
}

void status_rates_start(gossipd *d)
{
	uv_timer_init(d->loop, &d->rates.timer);
	d->rates.timer.data = d;
	d->rates.at_ms = uv_now(d->loop);
	uv_timer_start(&d->rates.timer, on_rates, STATUS_RATE_MS, STATUS_RATE_MS);
	uv_unref((uv_handle_t *)&d->rates.timer);
}

static void put_edge(sbuf *b, const gossipd *d, const peer *p, const edge *e)
{
	char key[45];
	edge_view v;
	edge_view_of(e, &v);
	/* The loop's copy as of the last step's end: the engine itself may
	 * be busy on a worker. */
	gsp_edge_info info = d->model.registered ? v.cache : (gsp_edge_info){0};
	/* payload: the engine's messages (ROUND payloads, each round once);
	 * wire: every byte of the peer's links (docs/DAEMON.md). */
	unsigned long long payload = v.message_bytes_done + info.tx_bytes;
	unsigned long long wire_tx = p->stats.tx_bytes, wire_rx = p->stats.rx_bytes;
	gsp_key_to_base64(p->cfg.public_key, key);
	put(b, "{\"peer\":");
	put_str(b, key);
	if (p->cfg.name[0]) {
		put(b, ",\"name\":");
		put_str(b, p->cfg.name);
	}
	put(b, ",\"endpoint\":");
	put_str(b, p->cfg.endpoint);
	static const char *const origins[] = {
		[PEER_CONFIGURED] = "configured", [PEER_KEYLESS] = "keyless",
		[PEER_ADMITTED] = "certificate",
	};
	put(b, ",\"admitted_by\":\"%s\"", origins[p->origin]);
	if (p->cert_name[0]) {
		put(b, ",\"certificate\":");
		put_str(b, p->cert_name);
	}
	put(b, ",\"state\":\"%s\",\"generation\":%u,\"round\":%llu,"
	    "\"staleness\":%llu,\"payload_tx_bytes\":%llu,"
	    "\"wire_tx_bytes\":%llu,\"wire_rx_bytes\":%llu,"
	    "\"tx_bytes\":%llu,\"rx_bytes\":%llu,"
	    "\"tx_frames\":%llu,\"rx_frames\":%llu,\"exact_bytes\":%llu,"
	    "\"message_bytes\":%llu,\"rounds\":%llu,\"resyncs\":%llu,"
	    "\"continued\":%llu,\"resent\":%llu,\"rolled_back\":%llu,\"rtt_ms\":",
	    edge_state_name(p, v.state), v.generation, (unsigned long long)info.round,
	    (unsigned long long)edge_staleness(e), payload, wire_tx, wire_rx,
	    wire_tx, wire_rx,
	    (unsigned long long)p->stats.tx_frames, (unsigned long long)p->stats.rx_frames,
	    (unsigned long long)(v.exact_bytes_done + info.exact_bytes), payload,
	    (unsigned long long)v.rounds_total,
	    (unsigned long long)v.resyncs, (unsigned long long)v.continued,
	    (unsigned long long)v.retransmits, (unsigned long long)v.rollbacks);
	put_num(b, p->stats.rtt_ns ? p->stats.rtt_ns / 1e6 : NAN);
	uint8_t tag[GSP_GEN_TAG_BYTES];
	char tag_hex[2 * STATUS_TAG_BYTES + 1];
	edge_generation_tag(e, tag);
	sodium_bin2hex(tag_hex, sizeof(tag_hex), tag, STATUS_TAG_BYTES);
	put(b, ",\"generation_tag\":\"%s\",\"weight\":", tag_hex);
	put_num(b, d->model.registered && v.live ? info.weight : NAN);
	size_t i = v.index;
	put(b, ",\"rounds_per_s\":");
	put_num(b, i < GSP_MAX_PEERS ? d->rates.per_s[i] : NAN);
	put(b, ",\"straggler\":%s,\"diff_norm\":", v.straggler ? "true" : "false");
	put_num(b, v.rounds_completed ? v.diff_norm : NAN);
	put(b, ",\"last_error\":");
	put_str_or_null(b, p->last_error);
	put(b, "}");
}

/* [Cluster]'s seeds: each one's state and last good addresses. */
static void put_seeds(sbuf *b, const seeds *s)
{
	put(b, ",\"seeds\":[");
	for (size_t i = 0; i < s->n_seeds; i++) {
		const seed *sd = &s->seed[i];
		put(b, "%s{\"seed\":", i ? "," : "");
		put_str(b, sd->cfg.text);
		put(b, ",\"kind\":\"%s\",\"state\":\"%s\",\"resolutions\":%llu,"
		    "\"failures\":%llu,\"cut\":%zu,\"addresses\":[",
		    sd->cfg.kind == GSP_SEED_SRV ? "srv" : "host", seeds_state_name(sd->state),
		    (unsigned long long)sd->resolutions, (unsigned long long)sd->failures,
		    sd->cut);
		for (size_t k = 0; k < sd->n; k++) {
			char text[SEEDS_ADDR_TEXT_MAX];
			seeds_addr_text(&sd->addrs[k], text, sizeof(text));
			put(b, "%s\"%s\"", k ? "," : "", text);
		}
		put(b, "],\"last_error\":");
		put_str_or_null(b, sd->last_error);
		put(b, "}");
	}
	put(b, "],\"seed_addresses\":%zu", s->n_list);
}

/* Membership: our incarnation, the members (the first STATUS_MEMBERS_MAX
 * in the order), the computed neighbours and the counters. */
#define STATUS_MEMBERS_MAX 1024
static void put_cluster(sbuf *b, const cluster *c)
{
	const membership *ms = &c->ms;
	const membership_counters *k = &ms->counters;
	const members_counters *t = &ms->table.counters;
	char key[GSP_KEY_BASE64_LEN + 1];
	size_t n = members_count(&ms->table);
	put(b, ",\"cluster\":{\"incarnation\":%llu,\"members_total\":%zu,\"members\":[",
	    (unsigned long long)ms->self.incarnation, n);
	for (size_t i = 0; i < n && i < STATUS_MEMBERS_MAX; i++) {
		const gsp_member *r = &members_at(&ms->table, i)->rec;
		char name[GSP_CERT_NAME_MAX + 1] = "";
		char host[INET6_ADDRSTRLEN] = "";
		if (r->has_cert)
			snprintf(name, sizeof(name), "%.*s", (int)r->cert.name_len,
				 (const char *)r->cert.name);
		gsp_key_to_base64(r->node_key, key);
		put(b, "%s{\"key\":", i ? "," : "");
		put_str(b, key);
		put(b, ",\"name\":");
		put_str(b, name);
		int seen = probe_status(&c->probe, r->node_key);
		put(b, ",\"status\":\"%s\",\"incarnation\":%llu,\"probe\":",
		    gsp_member_status_name(r->status), (unsigned long long)r->incarnation);
		if (seen >= 0)
			put(b, "\"%s\"", gsp_member_status_name((unsigned)seen));
		else
			put(b, "null");
		put(b, ",\"endpoint\":");
		if (r->n_endpoints) {
			char ep[GSP_ADDR_MAX + 8];
			bool v4 = r->endpoints[0].family == 4;
			inet_ntop(v4 ? AF_INET : AF_INET6, r->endpoints[0].addr, host, sizeof(host));
			snprintf(ep, sizeof(ep), v4 ? "%s:%u" : "[%s]:%u", host, r->endpoints[0].port);
			put_str(b, ep);
		} else {
			put(b, "null");
		}
		put(b, "}");
	}
	put(b, "],\"neighbours\":[");
	for (size_t i = 0; i < ms->n_nb; i++) {
		gsp_key_to_base64(ms->nb[i].key, key);
		put(b, "%s", i ? "," : "");
		put_str(b, key);
	}
	put(b, "],\"syncs_received\":%llu,\"syncs_sent\":%llu,\"records_in\":%llu,"
	    "\"records_refused\":%llu,\"refutations\":%llu,\"graph_changes\":%llu,"
	    "\"joins\":%llu,\"leaves\":%llu,\"members_full\":%llu}",
	    (unsigned long long)k->syncs_received, (unsigned long long)k->syncs_sent,
	    (unsigned long long)k->records_in, (unsigned long long)k->records_refused,
	    (unsigned long long)k->refutations, (unsigned long long)k->graph_changes,
	    (unsigned long long)t->joins, (unsigned long long)t->leaves,
	    (unsigned long long)t->merged[MERGE_FULL]);
}

/* Membership's counters among the others (metrics): zero on a node that
 * is not a member. */
static void put_member_counters(sbuf *b, const cluster *c)
{
	const membership_counters *k = &c->ms.counters;
	const members_counters *t = &c->ms.table.counters;
	const swim_stats *s = c->probe.sw ? &c->probe.sw->stats : NULL;
	bool on = c->on;
	put(b, ",\"member_joins\":%llu,\"member_leaves\":%llu,\"member_deaths\":%llu,"
	    "\"member_suspicions\":%llu,\"member_refutations\":%llu,"
	    "\"member_records_refused\":%llu,\"member_records_limited\":%llu,"
	    "\"member_graph_changes\":%llu,"
	    "\"members_full\":%llu,\"probe_probes\":%llu,\"probe_suspicions\":%llu,"
	    "\"probe_deaths\":%llu,\"probe_refutations\":%llu,\"probe_refused\":%llu,"
	    "\"probe_rate_limited\":%llu",
	    on ? (unsigned long long)t->joins : 0ULL, on ? (unsigned long long)t->leaves : 0ULL,
	    on ? (unsigned long long)t->deaths : 0ULL,
	    on ? (unsigned long long)t->suspicions : 0ULL,
	    on ? (unsigned long long)(t->refutations + k->refutations) : 0ULL,
	    on ? (unsigned long long)k->records_refused : 0ULL,
	    on ? (unsigned long long)k->records_limited : 0ULL,
	    on ? (unsigned long long)k->graph_changes : 0ULL,
	    on ? (unsigned long long)t->merged[MERGE_FULL] : 0ULL,
	    on && s ? (unsigned long long)s->probes : 0ULL,
	    on && s ? (unsigned long long)s->suspicions : 0ULL,
	    on && s ? (unsigned long long)s->deaths : 0ULL,
	    on && s ? (unsigned long long)s->refutations : 0ULL,
	    on ? (unsigned long long)(c->probe.counters.rx_refused +
				      c->probe.counters.rx_unknown) : 0ULL,
	    on ? (unsigned long long)c->probe.counters.rx_limited : 0ULL);
}

char *status_json(const gossipd *d)
{
	sbuf b = {0};
	const model *m = &d->model;
	put(&b, "{\"version\":\"%s\",\"public_key\":", GSP_VERSION);
	put_str(&b, d->key_b64);
	put(&b, ",\"listen\":");
	put_str(&b, d->mesh.peers.listen_addr);
	put(&b, ",\"peer_slots\":%zu", d->mesh.peers.n);
	put(&b, ",\"socket\":");
	put_str(&b, d->cfg.socket_path);
	if (d->metrics_addr[0]) {
		put(&b, ",\"metrics_listen\":");
		put_str(&b, d->metrics_addr);
	}
	put(&b, ",\"method\":\"%s\",\"rank\":%u,\"gamma\":",
	    gsp_method_name(d->cfg.engine.method), d->cfg.engine.rank);
	put_num(&b, d->cfg.engine.gamma);
	if (d->seeds.n_seeds)
		put_seeds(&b, &d->seeds);
	if (d->cluster.on)
		put_cluster(&b, &d->cluster);
	put(&b, ",\"model\":{\"registered\":%s", m->registered ? "true" : "false");
	if (m->registered) {
		char fp[2 * GSP_FINGERPRINT_BYTES + 1];
		for (int i = 0; i < GSP_FINGERPRINT_BYTES; i++)
			snprintf(fp + 2 * i, 3, "%02x", m->fingerprint[i]);
		put(&b, ",\"tensors\":%zu,\"floats\":%llu,\"fingerprint\":\"%s\","
		    "\"steps\":%llu,\"summary\":",
		    gsp_layout_count(m->layout),
		    (unsigned long long)gsp_layout_floats(m->layout), fp,
		    (unsigned long long)d->mesh.edges.steps);
		put_str(&b, m->summary);
		put(&b, ",\"method\":\"%s\",\"rank\":%u,\"gamma\":",
		    gsp_method_name(m->settings.method), m->settings.rank);
		put_num(&b, m->settings.gamma);
		put(&b, ",\"dtype\":\"%s\",\"trainer\":", gsp_dtype_name(m->dtype));
		put_str(&b, m->trainer);
		/* 0: a model alone; else its local group's trainers. */
		put(&b, ",\"local_trainers\":%u", m->mode == MODEL_GROUP ? m->group.n_members : 0);
		put(&b, ",\"consensus_estimate\":");
		put_num(&b, edges_estimate(&d->mesh.edges));
		static const char *const requests[] = {
			[STEP_IDLE] = "idle", [STEP_WAIT] = "step-wait",
			[STEP_RUN] = "step", [STEP_DRAIN] = "drain",
			[STEP_AVERAGE] = "average-wait",
			[STEP_AVERAGE_RUN] = "average", [STEP_REPLY] = "reply",
		};
		put(&b, ",\"request\":\"%s\",\"average_rounds\":%u",
		    requests[d->step.core.state], d->step.core.avg_rounds);
	}
	const counters *c = &d->counters;
	put(&b, "},\"counters\":{\"rx_malformed\":%llu,\"hs_refused\":%llu,"
	    "\"hs_replayed\":%llu,\"hs_rate_limited\":%llu,\"hs_mac1_bad\":%llu,\"hs_cert_missing\":%llu,\"hs_cert_malformed\":%llu,"
	    "\"hs_cert_foreign\":%llu,\"hs_cert_expired\":%llu,\"hs_cert_not_yet\":%llu,"
	    "\"hs_cert_revoked\":%llu,\"hs_cert_other_key\":%llu,\"hs_cert_self\":%llu,"
	    "\"hs_who_refused\":%llu,\"links_closed\":%llu,\"api_malformed\":%llu,"
	    "\"fingerprint_mismatch\":%llu,\"version_mismatch\":%llu,"
	    "\"rounds_refused\":%llu,\"rounds_rolled_back\":%llu,"
	    "\"rounds_unreconciled\":%llu,\"writes_redone\":%llu,"
	    "\"writes_undone\":%llu,\"sessions_rekeyed\":%llu,"
	    "\"records_saved\":%llu,\"metrics_scrapes\":%llu,"
	    "\"metrics_rejected\":%llu,\"metrics_bad_requests\":%llu,"
	    "\"metrics_timed_out\":%llu,\"seed_resolutions\":%llu,"
	    "\"seed_failures\":%llu,\"seed_addresses_cut\":%llu,"
	    "\"fetches_done\":%llu,\"fetches_failed\":%llu,\"fetches_served\":%llu",
	    (unsigned long long)c->rx_malformed, (unsigned long long)c->hs_refused,
	    (unsigned long long)c->hs_replayed,
	    (unsigned long long)c->hs_rate_limited,
	    (unsigned long long)c->hs_mac1_bad,
	    (unsigned long long)c->hs_cert_missing,
	    (unsigned long long)c->hs_cert_malformed,
	    (unsigned long long)c->hs_cert_foreign,
	    (unsigned long long)c->hs_cert_expired,
	    (unsigned long long)c->hs_cert_not_yet,
	    (unsigned long long)c->hs_cert_revoked,
	    (unsigned long long)c->hs_cert_other_key,
	    (unsigned long long)c->hs_cert_self,
	    (unsigned long long)c->hs_who_refused,
	    (unsigned long long)c->links_closed,
	    (unsigned long long)c->api_malformed,
	    (unsigned long long)c->fingerprint_mismatch,
	    (unsigned long long)c->version_mismatch,
	    (unsigned long long)c->rounds_refused,
	    (unsigned long long)c->rounds_rolled_back,
	    (unsigned long long)c->rounds_unreconciled,
	    (unsigned long long)c->writes_redone,
	    (unsigned long long)c->writes_undone,
	    (unsigned long long)c->sessions_rekeyed,
	    (unsigned long long)c->records_saved,
	    (unsigned long long)c->metrics_scrapes,
	    (unsigned long long)c->metrics_rejected,
	    (unsigned long long)c->metrics_bad_requests,
	    (unsigned long long)c->metrics_timed_out,
	    (unsigned long long)c->seed_resolutions,
	    (unsigned long long)c->seed_failures,
	    (unsigned long long)c->seed_addresses_cut,
	    (unsigned long long)c->fetches_done, (unsigned long long)c->fetches_failed,
	    (unsigned long long)c->fetches_served);
	put_member_counters(&b, &d->cluster);
	put(&b, "},\"edges\":[");
	bool first = true;
	const peers *ps = &d->mesh.peers;
	for (size_t i = 0; i < ps->n; i++) {
		if (!peers_listed(&ps->peer[i]) && !peers_leaving(&ps->peer[i]))
			continue;
		if (!first)
			put(&b, ",");
		first = false;
		put_edge(&b, d, &ps->peer[i], edges_at_const(&d->mesh.edges, i));
	}
	put(&b, "]}");
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
