/* The daemon's status document (see status_doc.h). */
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc.h"
#include "status_doc.h"
#include "subcommands.h"

enum field_type { F_STR, F_UINT, F_REAL, F_BOOL };

typedef struct field {
	const char *key;
	enum field_type type;
	size_t off;
} field;

#define FIELD(type_, key_, struct_, member_) \
	{ key_, type_, offsetof(struct_, member_) }

static const field top_fields[] = {
	FIELD(F_STR, "version", gctl_status, version),
	FIELD(F_STR, "public_key", gctl_status, public_key),
	FIELD(F_STR, "listen", gctl_status, listen),
	FIELD(F_STR, "socket", gctl_status, socket),
	FIELD(F_STR, "method", gctl_status, method),
	FIELD(F_UINT, "rank", gctl_status, rank),
	FIELD(F_REAL, "gamma", gctl_status, gamma),
};

static const field model_fields[] = {
	FIELD(F_BOOL, "registered", gctl_model, registered),
	FIELD(F_UINT, "tensors", gctl_model, tensors),
	FIELD(F_UINT, "floats", gctl_model, floats),
	FIELD(F_UINT, "steps", gctl_model, steps),
	FIELD(F_STR, "fingerprint", gctl_model, fingerprint),
	FIELD(F_STR, "summary", gctl_model, summary),
	FIELD(F_STR, "trainer", gctl_model, trainer),
	FIELD(F_REAL, "consensus_estimate", gctl_model, consensus_estimate),
};

static const field edge_fields[] = {
	FIELD(F_STR, "peer", gctl_edge, peer),
	FIELD(F_STR, "endpoint", gctl_edge, endpoint),
	FIELD(F_STR, "state", gctl_edge, state),
	FIELD(F_UINT, "generation", gctl_edge, generation),
	FIELD(F_UINT, "round", gctl_edge, round),
	FIELD(F_UINT, "staleness", gctl_edge, staleness),
	FIELD(F_UINT, "payload_tx_bytes", gctl_edge, payload_tx_bytes),
	FIELD(F_UINT, "wire_tx_bytes", gctl_edge, wire_tx_bytes),
	FIELD(F_UINT, "wire_rx_bytes", gctl_edge, wire_rx_bytes),
	FIELD(F_UINT, "tx_bytes", gctl_edge, tx_bytes),
	FIELD(F_UINT, "rx_bytes", gctl_edge, rx_bytes),
	FIELD(F_UINT, "tx_frames", gctl_edge, tx_frames),
	FIELD(F_UINT, "rx_frames", gctl_edge, rx_frames),
	FIELD(F_UINT, "exact_bytes", gctl_edge, exact_bytes),
	FIELD(F_UINT, "message_bytes", gctl_edge, message_bytes),
	FIELD(F_UINT, "rounds", gctl_edge, rounds),
	FIELD(F_UINT, "resyncs", gctl_edge, resyncs),
	FIELD(F_REAL, "rtt_ms", gctl_edge, rtt_ms),
	FIELD(F_REAL, "diff_norm", gctl_edge, diff_norm),
	FIELD(F_REAL, "rounds_per_s", gctl_edge, rounds_per_s),
	FIELD(F_STR, "last_error", gctl_edge, last_error),
	FIELD(F_BOOL, "straggler", gctl_edge, straggler),
};

/* A pair of names for one count: either fills the other. */
static void alias(gctl_uint *a, gctl_uint *b)
{
	if (!a->set)
		*a = *b;
	else if (!b->set)
		*b = *a;
}

static void fill_aliases(gctl_edge *e)
{
	alias(&e->wire_tx_bytes, &e->tx_bytes);
	alias(&e->wire_rx_bytes, &e->rx_bytes);
	alias(&e->payload_tx_bytes, &e->message_bytes);
}

const char *gctl_edge_state(const gctl_edge *e)
{
	if (e->state && !strcmp(e->state, "up") && e->straggler.set && e->straggler.v)
		return "straggler";
	return e->state;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int bad(char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *type_name(enum field_type t)
{
	switch (t) {
	case F_STR:
		return "a string";
	case F_UINT:
		return "an integer >= 0";
	case F_REAL:
		return "a number";
	case F_BOOL:
		return "true or false";
	}
	return "?";
}

/* Reads the listed fields of obj into out; where names obj in messages. */
static int read_fields(json_t *obj, const field *fields, size_t n, void *out,
		       const char *where, char *err, size_t err_len)
{
	for (size_t i = 0; i < n; i++) {
		const field *f = &fields[i];
		json_t *v = json_object_get(obj, f->key);
		char *p = (char *)out + f->off;
		bool ok = true;

		if (!v || json_is_null(v))
			continue;
		switch (f->type) {
		case F_STR:
			ok = json_is_string(v);
			if (ok)
				*(const char **)(void *)p = json_string_value(v);
			break;
		case F_UINT:
			ok = json_is_integer(v) && json_integer_value(v) >= 0;
			if (ok)
				*(gctl_uint *)(void *)p = (gctl_uint){
					true, (uint64_t)json_integer_value(v) };
			break;
		case F_REAL:
			ok = json_is_number(v);
			if (ok)
				*(gctl_real *)(void *)p = (gctl_real){
					true, json_number_value(v) };
			break;
		case F_BOOL:
			ok = json_is_boolean(v);
			if (ok)
				*(gctl_bool *)(void *)p = (gctl_bool){
					true, json_is_true(v) };
			break;
		}
		if (!ok)
			return bad(err, err_len, "%s%s%s is not %s", where,
				   *where ? "." : "", f->key, type_name(f->type));
	}
	return 0;
}

static int read_counters(json_t *obj, gctl_status *st, char *err, size_t err_len)
{
	const char *key;
	json_t *v;
	size_t n = 0;

	if (!json_is_object(obj))
		return bad(err, err_len, "counters is not an object");
	if (json_object_size(obj) == 0)
		return 0;
	st->counters = calloc(json_object_size(obj), sizeof(*st->counters));
	if (!st->counters)
		return bad(err, err_len, "out of memory");
	json_object_foreach(obj, key, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			continue;
		st->counters[n].name = key;
		st->counters[n].value = (uint64_t)json_integer_value(v);
		n++;
	}
	st->n_counters = n;
	return 0;
}

static int read_edges(json_t *arr, gctl_status *st, char *err, size_t err_len)
{
	size_t i;
	json_t *v;

	if (!json_is_array(arr))
		return bad(err, err_len, "edges is not an array");
	if (json_array_size(arr) == 0)
		return 0;
	st->edges = calloc(json_array_size(arr), sizeof(*st->edges));
	if (!st->edges)
		return bad(err, err_len, "out of memory");
	st->n_edges = json_array_size(arr);
	json_array_foreach(arr, i, v) {
		char where[32];

		snprintf(where, sizeof(where), "edges[%zu]", i);
		if (!json_is_object(v))
			return bad(err, err_len, "%s is not an object", where);
		if (read_fields(v, edge_fields, N(edge_fields), &st->edges[i],
				where, err, err_len) < 0)
			return -1;
		fill_aliases(&st->edges[i]);
	}
	return 0;
}

int gctl_status_parse(const char *json, size_t len, gctl_status *ret,
		      char *err, size_t err_len)
{
	gctl_status st;
	json_error_t jerr;
	json_t *root, *v;

	memset(&st, 0, sizeof(st));
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return bad(err, err_len, "line %d, column %d: %s", jerr.line,
			   jerr.column, jerr.text);
	st.doc = root;
	if (!json_is_object(root)) {
		gctl_status_clear(&st);
		return bad(err, err_len, "the document is not a JSON object");
	}
	if (read_fields(root, top_fields, N(top_fields), &st, "", err, err_len) < 0)
		goto fail;
	v = json_object_get(root, "model");
	if (v && !json_is_null(v)) {
		if (!json_is_object(v)) {
			bad(err, err_len, "model is not an object");
			goto fail;
		}
		st.have_model = true;
		if (read_fields(v, model_fields, N(model_fields), &st.model,
				"model", err, err_len) < 0)
			goto fail;
	}
	v = json_object_get(root, "counters");
	if (v && !json_is_null(v) && read_counters(v, &st, err, err_len) < 0)
		goto fail;
	v = json_object_get(root, "edges");
	if (v && !json_is_null(v) && read_edges(v, &st, err, err_len) < 0)
		goto fail;
	*ret = st;
	return 0;
fail:
	gctl_status_clear(&st);
	return -1;
}

void gctl_status_clear(gctl_status *st)
{
	if (!st)
		return;
	free(st->counters);
	free(st->edges);
	json_decref(st->doc);
	memset(st, 0, sizeof(*st));
}

int gctl_status_load(const char *socket_override, gctl_status *ret)
{
	const char *path = gctl_socket_path(socket_override);
	char err[256];
	size_t len;
	char *json;
	int r;

	if (gctl_fetch_status(path, &json, &len) < 0)
		return -1;
	r = gctl_status_parse(json, len, ret, err, sizeof(err));
	free(json);
	if (r < 0)
		fprintf(stderr, "%s: %s: malformed status document from gossipd: %s\n",
			PROG_NAME, path, err);
	return r;
}

bool gctl_edge_ratio(const gctl_edge *e, double *ret)
{
	if (!e->tx_bytes.set || !e->exact_bytes.set || e->tx_bytes.v == 0 ||
	    e->exact_bytes.v == 0)
		return false;
	*ret = (double)e->exact_bytes.v / (double)e->tx_bytes.v;
	return true;
}
