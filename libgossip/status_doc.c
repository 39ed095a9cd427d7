/* The daemon's status document (see status_doc.h). */
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status_doc.h"

enum field_type { F_STR, F_UINT, F_REAL, F_BOOL };

typedef struct field {
	const char *key;
	enum field_type type;
	size_t off;
} field;

#define FIELD(type_, key_, struct_, member_) \
	{ key_, type_, offsetof(struct_, member_) }

static const field top_fields[] = {
	FIELD(F_STR, "version", gsp_sdoc, version),
	FIELD(F_STR, "public_key", gsp_sdoc, public_key),
	FIELD(F_STR, "listen", gsp_sdoc, listen),
	FIELD(F_STR, "socket", gsp_sdoc, socket),
	FIELD(F_STR, "method", gsp_sdoc, method),
	FIELD(F_UINT, "rank", gsp_sdoc, rank),
	FIELD(F_REAL, "gamma", gsp_sdoc, gamma),
	FIELD(F_UINT, "seed_addresses", gsp_sdoc, seed_addresses),
};

static const field seed_fields[] = {
	FIELD(F_STR, "seed", gsp_sdoc_seed, seed),
	FIELD(F_STR, "kind", gsp_sdoc_seed, kind),
	FIELD(F_STR, "state", gsp_sdoc_seed, state),
	FIELD(F_STR, "last_error", gsp_sdoc_seed, last_error),
	FIELD(F_UINT, "resolutions", gsp_sdoc_seed, resolutions),
	FIELD(F_UINT, "failures", gsp_sdoc_seed, failures),
	FIELD(F_UINT, "cut", gsp_sdoc_seed, cut),
};

static const field cluster_fields[] = {
	FIELD(F_UINT, "incarnation", gsp_sdoc, incarnation),
	FIELD(F_UINT, "members_total", gsp_sdoc, members_total),
};

static const field member_fields[] = {
	FIELD(F_STR, "key", gsp_sdoc_member, key),
	FIELD(F_STR, "name", gsp_sdoc_member, name),
	FIELD(F_STR, "status", gsp_sdoc_member, status),
	FIELD(F_STR, "endpoint", gsp_sdoc_member, endpoint),
	FIELD(F_STR, "probe", gsp_sdoc_member, probe),
	FIELD(F_UINT, "incarnation", gsp_sdoc_member, incarnation),
};

static const field model_fields[] = {
	FIELD(F_BOOL, "registered", gsp_sdoc_model, registered),
	FIELD(F_UINT, "tensors", gsp_sdoc_model, tensors),
	FIELD(F_UINT, "floats", gsp_sdoc_model, floats),
	FIELD(F_UINT, "steps", gsp_sdoc_model, steps),
	FIELD(F_STR, "fingerprint", gsp_sdoc_model, fingerprint),
	FIELD(F_STR, "summary", gsp_sdoc_model, summary),
	FIELD(F_STR, "trainer", gsp_sdoc_model, trainer),
	FIELD(F_REAL, "consensus_estimate", gsp_sdoc_model, consensus_estimate),
};

static const field edge_fields[] = {
	FIELD(F_STR, "peer", gsp_sdoc_edge, peer),
	FIELD(F_STR, "name", gsp_sdoc_edge, name),
	FIELD(F_STR, "endpoint", gsp_sdoc_edge, endpoint),
	FIELD(F_STR, "state", gsp_sdoc_edge, state),
	FIELD(F_UINT, "generation", gsp_sdoc_edge, generation),
	FIELD(F_UINT, "round", gsp_sdoc_edge, round),
	FIELD(F_UINT, "staleness", gsp_sdoc_edge, staleness),
	FIELD(F_UINT, "payload_tx_bytes", gsp_sdoc_edge, payload_tx_bytes),
	FIELD(F_UINT, "wire_tx_bytes", gsp_sdoc_edge, wire_tx_bytes),
	FIELD(F_UINT, "wire_rx_bytes", gsp_sdoc_edge, wire_rx_bytes),
	FIELD(F_UINT, "tx_bytes", gsp_sdoc_edge, tx_bytes),
	FIELD(F_UINT, "rx_bytes", gsp_sdoc_edge, rx_bytes),
	FIELD(F_UINT, "tx_frames", gsp_sdoc_edge, tx_frames),
	FIELD(F_UINT, "rx_frames", gsp_sdoc_edge, rx_frames),
	FIELD(F_UINT, "exact_bytes", gsp_sdoc_edge, exact_bytes),
	FIELD(F_UINT, "message_bytes", gsp_sdoc_edge, message_bytes),
	FIELD(F_UINT, "rounds", gsp_sdoc_edge, rounds),
	FIELD(F_UINT, "resyncs", gsp_sdoc_edge, resyncs),
	FIELD(F_REAL, "rtt_ms", gsp_sdoc_edge, rtt_ms),
	FIELD(F_REAL, "diff_norm", gsp_sdoc_edge, diff_norm),
	FIELD(F_REAL, "rounds_per_s", gsp_sdoc_edge, rounds_per_s),
	FIELD(F_STR, "last_error", gsp_sdoc_edge, last_error),
	FIELD(F_BOOL, "straggler", gsp_sdoc_edge, straggler),
};

/* A pair of names for one count: either fills the other. */
static void alias(gsp_opt_uint *a, gsp_opt_uint *b)
{
	if (!a->set)
		*a = *b;
	else if (!b->set)
		*b = *a;
}

static void fill_aliases(gsp_sdoc_edge *e)
{
	alias(&e->wire_tx_bytes, &e->tx_bytes);
	alias(&e->wire_rx_bytes, &e->rx_bytes);
	alias(&e->payload_tx_bytes, &e->message_bytes);
}

const char *gsp_sdoc_edge_state(const gsp_sdoc_edge *e)
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
				*(gsp_opt_uint *)(void *)p = (gsp_opt_uint){
					true, (uint64_t)json_integer_value(v) };
			break;
		case F_REAL:
			ok = json_is_number(v);
			if (ok)
				*(gsp_opt_real *)(void *)p = (gsp_opt_real){
					true, json_number_value(v) };
			break;
		case F_BOOL:
			ok = json_is_boolean(v);
			if (ok)
				*(gsp_opt_bool *)(void *)p = (gsp_opt_bool){
					true, json_is_true(v) };
			break;
		}
		if (!ok)
			return bad(err, err_len, "%s%s%s is not %s", where,
				   *where ? "." : "", f->key, type_name(f->type));
	}
	return 0;
}

static int read_counters(json_t *obj, gsp_sdoc *st, char *err, size_t err_len)
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

static int read_edges(json_t *arr, gsp_sdoc *st, char *err, size_t err_len)
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

/* seeds[i].addresses: an array of strings (or absent, or null). */
static int seed_addresses(json_t *obj, size_t i, char *err, size_t err_len,
			  size_t *count)
{
	json_t *a = json_object_get(obj, "addresses"), *v;
	size_t k;

	*count = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return bad(err, err_len, "seeds[%zu].addresses is not an array", i);
	json_array_foreach(a, k, v)
		if (!json_is_string(v))
			return bad(err, err_len, "seeds[%zu].addresses[%zu] is not a string",
				   i, k);
	*count = json_array_size(a);
	return 0;
}

static int read_seeds(json_t *arr, gsp_sdoc *st, char *err, size_t err_len)
{
	size_t i, total = 0, used = 0, k;
	json_t *v, *a, *addr;

	if (!json_is_array(arr))
		return bad(err, err_len, "seeds is not an array");
	json_array_foreach(arr, i, v) {
		size_t n;
		if (!json_is_object(v))
			return bad(err, err_len, "seeds[%zu] is not an object", i);
		if (seed_addresses(v, i, err, err_len, &n) < 0)
			return -1;
		total += n;
	}
	if (json_array_size(arr) == 0)
		return 0;
	st->seeds = calloc(json_array_size(arr), sizeof(*st->seeds));
	st->seed_addrs = calloc(total ? total : 1, sizeof(*st->seed_addrs));
	if (!st->seeds || !st->seed_addrs)
		return bad(err, err_len, "out of memory");
	st->n_seeds = json_array_size(arr);
	json_array_foreach(arr, i, v) {
		char where[32];
		gsp_sdoc_seed *sd = &st->seeds[i];

		snprintf(where, sizeof(where), "seeds[%zu]", i);
		if (read_fields(v, seed_fields, N(seed_fields), sd, where, err, err_len) < 0)
			return -1;
		sd->addresses = st->seed_addrs + used;
		a = json_object_get(v, "addresses");
		json_array_foreach(a, k, addr)
			sd->addresses[sd->n_addresses++] = json_string_value(addr);
		used += sd->n_addresses;
	}
	return 0;
}

/* "cluster": the members, and which of them are neighbours. */
static int read_cluster(json_t *obj, gsp_sdoc *st, char *err, size_t err_len)
{
	json_t *arr, *nb, *v;
	size_t i;

	if (!json_is_object(obj))
		return bad(err, err_len, "cluster is not an object");
	st->have_cluster = true;
	if (read_fields(obj, cluster_fields, N(cluster_fields), st, "cluster", err,
			err_len) < 0)
		return -1;
	nb = json_object_get(obj, "neighbours");
	if (nb && !json_is_null(nb)) {
		if (!json_is_array(nb))
			return bad(err, err_len, "cluster.neighbours is not an array");
		json_array_foreach(nb, i, v)
			if (!json_is_string(v))
				return bad(err, err_len, "cluster.neighbours[%zu] is not a string", i);
		st->n_neighbours = json_array_size(nb);
	}
	arr = json_object_get(obj, "members");
	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return bad(err, err_len, "cluster.members is not an array");
	if (json_array_size(arr) == 0)
		return 0;
	st->members = calloc(json_array_size(arr), sizeof(*st->members));
	if (!st->members)
		return bad(err, err_len, "out of memory");
	st->n_members = json_array_size(arr);
	json_array_foreach(arr, i, v) {
		char where[40];
		gsp_sdoc_member *m = &st->members[i];
		json_t *k;
		size_t j;

		snprintf(where, sizeof(where), "cluster.members[%zu]", i);
		if (!json_is_object(v))
			return bad(err, err_len, "%s is not an object", where);
		if (read_fields(v, member_fields, N(member_fields), m, where, err, err_len) < 0)
			return -1;
		if (nb && m->key)
			json_array_foreach(nb, j, k)
				if (!strcmp(json_string_value(k), m->key))
					m->neighbour = true;
	}
	return 0;
}

int gsp_sdoc_parse(const char *json, size_t len, gsp_sdoc *ret,
		      char *err, size_t err_len)
{
	gsp_sdoc st;
	json_error_t jerr;
	json_t *root, *v;

	memset(&st, 0, sizeof(st));
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return bad(err, err_len, "line %d, column %d: %s", jerr.line,
			   jerr.column, jerr.text);
	st.doc = root;
	if (!json_is_object(root)) {
		gsp_sdoc_clear(&st);
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
	v = json_object_get(root, "seeds");
	if (v && !json_is_null(v) && read_seeds(v, &st, err, err_len) < 0)
		goto fail;
	v = json_object_get(root, "cluster");
	if (v && !json_is_null(v) && read_cluster(v, &st, err, err_len) < 0)
		goto fail;
	*ret = st;
	return 0;
fail:
	gsp_sdoc_clear(&st);
	return -1;
}

void gsp_sdoc_clear(gsp_sdoc *st)
{
	if (!st)
		return;
	free(st->counters);
	free(st->edges);
	free(st->seeds);
	free(st->seed_addrs);
	free(st->members);
	json_decref(st->doc);
	memset(st, 0, sizeof(*st));
}

bool gsp_sdoc_edge_ratio(const gsp_sdoc_edge *e, double *ret)
{
	if (!e->tx_bytes.set || !e->exact_bytes.set || e->tx_bytes.v == 0 ||
	    e->exact_bytes.v == 0)
		return false;
	*ret = (double)e->exact_bytes.v / (double)e->tx_bytes.v;
	return true;
}
