/* Gossip nodes and their edges: configuration checks, the per-edge round
 * state machine (IDLE -> IN_FLIGHT -> COMPLETED -> IDLE), retained
 * messages, byte accounting, and dispatch to the method implementations. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "internal.h"

void gsp_config_default(gsp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->method = GSP_METHOD_POWERGOSSIP;
	cfg->rank = 1;
	cfg->warm_start = true;
	cfg->gamma = 1.0f;
	cfg->choco_fraction = 0.01f;
}

static const struct {
	const char *name;
	gsp_method method;
} method_names[] = {
	{"powergossip", GSP_METHOD_POWERGOSSIP},
	{"exact", GSP_METHOD_EXACT},
	{"choco-topk", GSP_METHOD_CHOCO_TOPK},
	{"choco-randk", GSP_METHOD_CHOCO_RANDK},
	{"choco-sign", GSP_METHOD_CHOCO_SIGN},
};

int gsp_method_parse(const char *name, gsp_method *ret_method)
{
	for (size_t i = 0; name && i < sizeof(method_names) / sizeof(*method_names); i++)
		if (strcmp(name, method_names[i].name) == 0) {
			*ret_method = method_names[i].method;
			return 0;
		}
	return -EINVAL;
}

const char *gsp_method_name(gsp_method method)
{
	for (size_t i = 0; i < sizeof(method_names) / sizeof(*method_names); i++)
		if (method_names[i].method == method)
			return method_names[i].name;
	return NULL;
}

static const gsp__method_ops *method_ops(gsp_method method)
{
	switch (method) {
	case GSP_METHOD_POWERGOSSIP:
		return &gsp__powergossip_ops;
	case GSP_METHOD_EXACT:
		return &gsp__exact_ops;
	case GSP_METHOD_CHOCO_TOPK:
	case GSP_METHOD_CHOCO_RANDK:
	case GSP_METHOD_CHOCO_SIGN:
		return &gsp__choco_ops;
	}
	return NULL;
}

static int config_check(const gsp_config *cfg)
{
	if (!method_ops(cfg->method))
		return -EINVAL;
	if (!isfinite(cfg->gamma) || cfg->gamma < 0.0f)
		return -EINVAL;
	if (cfg->method == GSP_METHOD_POWERGOSSIP &&
	    (cfg->rank < 1 || cfg->rank > GSP_MAX_RANK))
		return -EINVAL;
	if (!gsp_dtype_size(cfg->wire) ||
	    (cfg->method != GSP_METHOD_POWERGOSSIP && cfg->wire != GSP_DTYPE_FLOAT32))
		return -EINVAL;
	if ((cfg->method == GSP_METHOD_CHOCO_TOPK ||
	     cfg->method == GSP_METHOD_CHOCO_RANDK) &&
	    !(cfg->choco_fraction > 0.0f && cfg->choco_fraction <= 1.0f))
		return -EINVAL;
	return 0;
}

int gsp_node_new(const gsp_layout *layout, float *params,
		 const gsp_config *cfg, gsp_node **ret_node)
{
	return gsp_node_new_typed(layout, params, GSP_DTYPE_FLOAT32, cfg, ret_node);
}

int gsp_node_new_typed(const gsp_layout *layout, void *buffer, gsp_dtype dtype,
		       const gsp_config *cfg, gsp_node **ret_node)
{
	if (!layout || !buffer || !cfg || !ret_node || !gsp_dtype_size(dtype))
		return -EINVAL;
	int err = config_check(cfg);
	if (err)
		return err;
	gsp_node *node = calloc(1, sizeof(*node));
	if (!node)
		return -ENOMEM;
	node->buffer = buffer;
	node->params = buffer;
	node->dtype = dtype;
	node->cfg = *cfg;
	node->ops = method_ops(cfg->method);
	err = gsp_layout_new(layout->t, layout->n, &node->layout);
	if (!err)
		err = gsp__node_master_init(node);
	if (!err && node->ops->node_init)
		err = node->ops->node_init(node);
	if (err) {
		gsp_node_free(node);
		return err;
	}
	*ret_node = node;
	return 0;
}

/* Closes e's window of exact rounds, if one is open. */
static void window_close(gsp__edge *e)
{
	free(e->steps);
	free(e->xdiff);
	e->steps = NULL;
	e->xdiff = NULL;
	e->n_steps = 0;
	e->win_from = 0;
}

static void edge_release(gsp_node *node, gsp__edge *e)
{
	if (node->ops->edge_free)
		node->ops->edge_free(e);
	window_close(e);
	free(e->msg);
	free(e->next_msg);
}

void gsp_node_free(gsp_node *node)
{
	if (!node)
		return;
	for (size_t i = 0; i < node->n_edges; i++)
		edge_release(node, &node->edges[i]);
	free(node->edges);
	if (node->ops && node->ops->node_free)
		node->ops->node_free(node);
	gsp_layout_free(node->layout);
	free(node->scratch);
	if (node->master_owned) {
		free(node->params);
		free(node->seen);
	}
	free(node);
}

const float *gsp_node_values(const gsp_node *node)
{
	return node ? node->params : NULL;
}

float *gsp__node_scratch(gsp_node *node, size_t n)
{
	if (n > node->scratch_len) {
		float *s = realloc(node->scratch, n * sizeof(*s));
		if (!s)
			return NULL;
		node->scratch = s;
		node->scratch_len = n;
	}
	return node->scratch;
}

float gsp__edge_coef(const gsp_node *node, const gsp__edge *edge)
{
	/* Applied: the edge's last completed round, edge->round. */
	float gamma = gsp__in_window(edge, edge->round)
			      ? edge->steps[edge->round - edge->win_from - 1]
			      : node->cfg.gamma;
	float c = gamma * edge->weight;
	return edge->role == GSP_ROLE_LO ? c : -c;
}

static bool weight_ok(float w)
{
	return w > 0.0f && w <= 1.0f;
}

bool gsp__edge_diff(const float *mine, const float *peer, gsp_role role,
		    float *out, size_t n)
{
	const float *lo = role == GSP_ROLE_LO ? mine : peer;
	const float *hi = role == GSP_ROLE_LO ? peer : mine;
	if (!out)
		return gsp__diff_finite(hi, lo, n);
	for (size_t i = 0; i < n; i++)
		out[i] = hi[i] - lo[i];
	return true;
}

/* The largest message of any round for edges of kind ops (odd and even
 * rounds may differ). */
static size_t msg_cap(const gsp_node *node, const gsp__method_ops *ops)
{
	size_t odd = ops->msg_size(node, 1), even = ops->msg_size(node, 2);
	return odd > even ? odd : even;
}

int gsp__edge_msg_room(gsp__edge *e, size_t cap)
{
	if (cap <= e->msg_cap)
		return 0;
	uint8_t *msg = gsp_bigmem_malloc(cap), *next = gsp_bigmem_malloc(cap);
	if (!msg || !next) {
		free(msg);
		free(next);
		return -ENOMEM;
	}
	memcpy(msg, e->msg, e->msg_len);
	free(e->msg);
	free(e->next_msg);
	e->msg = msg;
	e->next_msg = next;
	e->msg_cap = cap;
	return 0;
}

int gsp_node_add_edge(gsp_node *node, float weight, gsp_role role,
		      const uint8_t *seed, size_t seed_len)
{
	if (!node || !seed || seed_len != GSP_SEED_BYTES || !weight_ok(weight) ||
	    (role != GSP_ROLE_LO && role != GSP_ROLE_HI))
		return -EINVAL;
	if (node->n_edges >= INT32_MAX)
		return -E2BIG;
	size_t cap = msg_cap(node, node->ops);
	gsp__edge *edges = realloc(node->edges,
				   (node->n_edges + 1) * sizeof(*edges));
	if (!edges)
		return -ENOMEM;
	node->edges = edges;
	gsp__edge *e = &edges[node->n_edges];
	memset(e, 0, sizeof(*e));
	e->role = role;
	e->active = true;
	e->weight = weight;
	memcpy(e->seed, seed, GSP_SEED_BYTES);
	e->msg_cap = cap;
	e->msg = malloc(cap ? cap : 1);
	e->next_msg = malloc(cap ? cap : 1);
	int err = (!e->msg || !e->next_msg) ? -ENOMEM : 0;
	if (!err && node->ops->edge_init)
		err = node->ops->edge_init(node, e);
	if (err) {
		edge_release(node, e);
		return err;
	}
	return (int)node->n_edges++;
}

int gsp_node_edge_reset(gsp_node *node, size_t edge, float weight,
			gsp_role role, const uint8_t *seed, size_t seed_len)
{
	if (!node || edge >= node->n_edges || !seed ||
	    seed_len != GSP_SEED_BYTES || !weight_ok(weight) ||
	    (role != GSP_ROLE_LO && role != GSP_ROLE_HI))
		return -EINVAL;
	gsp__edge *e = &node->edges[edge];
	if (e->state == GSP_EDGE_COMPLETED)
		return -EBUSY;   /* apply the pending update first */
	gsp__edge fresh = *e;
	fresh.priv = NULL;
	fresh.role = role;
	fresh.weight = weight;
	memcpy(fresh.seed, seed, GSP_SEED_BYTES);
	int err = node->ops->edge_init ? node->ops->edge_init(node, &fresh) : 0;
	if (err) {
		if (node->ops->edge_free)
			node->ops->edge_free(&fresh);
		return err;
	}
	if (node->ops->edge_free)
		node->ops->edge_free(e);
	window_close(e);
	fresh.steps = NULL;
	fresh.xdiff = NULL;
	fresh.n_steps = 0;
	fresh.win_from = 0;
	fresh.state = GSP_EDGE_IDLE;
	fresh.round = 0;
	fresh.applied = 0;
	fresh.undoable = false;
	fresh.msg_len = 0;
	fresh.active = true;
	fresh.held = false;
	*e = fresh;
	return 0;
}

int gsp_node_edge_exact_rounds(gsp_node *node, size_t edge, uint64_t after_round,
			       const float *steps, size_t n_steps)
{
	if (!node || edge >= node->n_edges || (n_steps && !steps) ||
	    n_steps > GSP_MAX_STEPS || after_round > UINT64_MAX - n_steps)
		return -EINVAL;
	for (size_t t = 0; t < n_steps; t++)
		if (!isfinite(steps[t]) || steps[t] < 0.0f)
			return -EINVAL;
	if (node->ops->synchronous)
		return -ENOTSUP;
	gsp__edge *e = &node->edges[edge];
	if (e->n_steps)
		return -EBUSY;
	if (e->round > after_round)
		return -ERANGE;  /* a round of the window is projected already */
	if (!n_steps)
		return 0;
	bool other = node->ops != &gsp__exact_ops;
	float *copy = malloc(n_steps * sizeof(*copy));
	float *xdiff = other ? gsp_bigmem_malloc(node->layout->floats * sizeof(float) + 1) : NULL;
	/* Whole models on the wire: buffers of that size. */
	if (!copy || (other && !xdiff) ||
	    gsp__edge_msg_room(e, msg_cap(node, &gsp__exact_ops)) != 0) {
		free(copy);
		free(xdiff);
		return -ENOMEM;
	}
	memcpy(copy, steps, n_steps * sizeof(*copy));
	e->steps = copy;
	e->xdiff = xdiff;
	e->n_steps = n_steps;
	e->win_from = after_round;
	return 0;
}

int gsp_node_edge_hold(gsp_node *node, size_t edge, bool hold)
{
	if (!node || edge >= node->n_edges)
		return -EINVAL;
	if (node->ops->synchronous)
		return -ENOTSUP;
	node->edges[edge].held = hold;
	return 0;
}

int gsp_node_edge_disable(gsp_node *node, size_t edge)
{
	if (!node || edge >= node->n_edges)
		return -EINVAL;
	gsp__edge *e = &node->edges[edge];
	e->active = false;
	/* A completed round was completed at the other end too: its update
	 * still lands at the next apply.  A round in flight is dropped. */
	if (e->state != GSP_EDGE_COMPLETED)
		e->state = GSP_EDGE_IDLE;
	return 0;
}

int gsp_node_edge_rollback(gsp_node *node, size_t edge, uint64_t round)
{
	if (!node || edge >= node->n_edges)
		return -EINVAL;
	gsp__edge *e = &node->edges[edge];
	const gsp__method_ops *ops = gsp__round_ops(node, e, e->applied);
	if (!ops->rollback)
		return -ENOTSUP;
	int n = 0;
	if (e->applied > round) {
		/* Only the last applied round, while nothing has completed
		 * since (that overwrote its update). */
		if (e->applied != round + 1 || !e->undoable)
			return -ERANGE;
		/* The round projected since is of the other kind (a window
		 * opens or closes): to the kind of `applied` nothing was
		 * projected after it. */
		uint64_t projected = e->round;
		if (gsp__round_ops(node, e, e->applied + 1) != ops)
			e->round = e->applied;
		gsp__node_read_in(node);
		ops->rollback(node, e);
		gsp__node_write_out(node);
		e->round = projected;
		e->applied = round;
		e->undoable = false;
		n = 1;
	} else if (e->state == GSP_EDGE_COMPLETED && e->round > round) {
		e->state = GSP_EDGE_IDLE;   /* the neighbour never completed it */
	}
	(void)gsp_node_edge_disable(node, edge);
	return n;
}

int gsp_node_set_gamma(gsp_node *node, float gamma)
{
	if (!node || !isfinite(gamma) || gamma < 0.0f)
		return -EINVAL;
	node->cfg.gamma = gamma;
	return 0;
}

int gsp_node_edge_set_weight(gsp_node *node, size_t edge, float weight)
{
	if (!node || edge >= node->n_edges || !weight_ok(weight))
		return -EINVAL;
	node->edges[edge].weight = weight;
	return 0;
}

size_t gsp_node_edge_count(const gsp_node *node)
{
	return node ? node->n_edges : 0;
}

int gsp_node_edge_info(const gsp_node *node, size_t edge,
		       gsp_edge_info *ret_info)
{
	if (!node || edge >= node->n_edges || !ret_info)
		return -EINVAL;
	const gsp__edge *e = &node->edges[edge];
	/* Zero the padding too: callers may compare snapshots bytewise. */
	memset(ret_info, 0, sizeof(*ret_info));
	ret_info->role = e->role;
	ret_info->state = e->state;
	ret_info->active = e->active;
	ret_info->weight = e->weight;
	ret_info->round = e->round;
	ret_info->tx_bytes = e->tx_bytes;
	ret_info->rx_bytes = e->rx_bytes;
	ret_info->tx_msgs = e->tx_msgs;
	ret_info->rx_msgs = e->rx_msgs;
	ret_info->exact_bytes = e->exact_bytes;
	ret_info->refills = e->refills;
	ret_info->window_end = e->n_steps ? e->win_from + e->n_steps : 0;
	return 0;
}

static size_t count_state(const gsp_node *node, gsp_edge_state s)
{
	size_t n = 0;
	for (size_t i = 0; i < node->n_edges; i++)
		n += node->edges[i].active && node->edges[i].state == s;
	return n;
}

static size_t count_active(const gsp_node *node)
{
	size_t n = 0;
	for (size_t i = 0; i < node->n_edges; i++)
		n += node->edges[i].active;
	return n;
}

/* The operations of what node_run does with e: apply its completed round
 * (next false) or project the next (next true). */
static const gsp__method_ops *run_ops(const gsp_node *node, const gsp__edge *e, bool next)
{
	return gsp__round_ops(node, e, e->round + next);
}

/* Moves the edges whose round (next: the next round) is of kind to the
 * front of list[0..n); returns how many there are. */
static size_t partition(const gsp_node *node, const gsp__method_ops *kind,
			gsp__edge **list, size_t n, bool next)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (run_ops(node, list[i], next) == kind) {
			gsp__edge *t = list[k];
			list[k++] = list[i];
			list[i] = t;
		}
	return k;
}

/* Runs the applies and projections: in one fused pass when every round
 * in them is of one kind (as always, unless a window runs exact rounds on
 * another method's node); else each kind applies, then each kind
 * projects, so that every message is of the model after every apply. */
static int run_kinds(gsp_node *node, gsp__edge **apply, size_t na,
		     gsp__edge **proj, size_t np)
{
	if (!na && !np)
		return 0;
	const gsp__method_ops *first = na ? run_ops(node, apply[0], false)
					  : run_ops(node, proj[0], true);
	bool one = true;
	for (size_t i = 0; i < na; i++)
		one &= run_ops(node, apply[i], false) == first;
	for (size_t i = 0; i < np; i++)
		one &= run_ops(node, proj[i], true) == first;
	if (one)
		return first->run(node, apply, na, proj, np);
	/* The kinds: the node's method, exact and skipped rounds.  Each list
	 * is reordered in place, kind by kind. */
	const gsp__method_ops *kinds[3] = {node->ops, &gsp__exact_ops, &gsp__skip_ops};
	size_t a_n[3], p_n[3], a_rest = na, p_rest = np;
	for (int k = 0; k < 3; k++) {
		bool again = k == 1 && kinds[1] == kinds[0];
		a_n[k] = again ? 0 : partition(node, kinds[k], apply + (na - a_rest), a_rest, false);
		p_n[k] = again ? 0 : partition(node, kinds[k], proj + (np - p_rest), p_rest, true);
		a_rest -= a_n[k];
		p_rest -= p_n[k];
	}
	for (int k = 0, from = 0; k < 3; from += (int)a_n[k], k++)
		if (a_n[k])
			(void)kinds[k]->run(node, apply + from, a_n[k], NULL, 0);
	int err = 0;
	for (int k = 0, from = 0; k < 3 && !err; from += (int)p_n[k], k++)
		if (p_n[k])
			err = kinds[k]->run(node, NULL, 0, proj + from, p_n[k]);
	return err;
}

/* The one path behind apply, project and step; `only` < SIZE_MAX limits
 * the projection to that edge. */
static int node_run(gsp_node *node, bool do_apply, bool do_project, size_t only)
{
	if (!node)
		return -EINVAL;
	size_t n = node->n_edges, live = count_active(node);
	gsp__edge *stack[64];
	gsp__edge **list = n <= 32 ? stack : malloc(2 * n * sizeof(*list));
	if (!list)
		return -ENOMEM;
	gsp__edge **apply = list, **proj = list + n;
	size_t na = 0, np = 0;
	bool sync = node->ops->synchronous;
	bool applying = do_apply &&
		(!sync || count_state(node, GSP_EDGE_COMPLETED) == live);
	for (size_t i = 0; applying && i < n; i++)
		if (node->edges[i].state == GSP_EDGE_COMPLETED)
			apply[na++] = &node->edges[i];
	/* An edge can be projected if it is idle once the applies are done;
	 * a synchronous method needs every edge so. */
	size_t idle = count_state(node, GSP_EDGE_IDLE) + na;
	if (do_project && (!sync || idle == live))
		for (size_t i = 0; i < n; i++) {
			gsp__edge *e = &node->edges[i];
			if (!e->active || e->held || (only != SIZE_MAX && i != only))
				continue;
			if (e->state == GSP_EDGE_IDLE ||
			    (applying && e->state == GSP_EDGE_COMPLETED))
				proj[np++] = e;
		}
	if (na || np)
		gsp__node_read_in(node);
	int err = run_kinds(node, apply, na, proj, np);
	if (na)
		gsp__node_write_out(node);
	for (size_t i = 0; i < na; i++) {
		gsp__edge *e = apply[i];
		e->state = GSP_EDGE_IDLE;
		e->applied = e->round;
		e->applied_coef = gsp__edge_coef(node, e);
		e->undoable = true;
		/* Past its window, nothing can be taken back into it. */
		if (e->n_steps && e->applied > e->win_from + e->n_steps)
			window_close(e);
	}
	if (err)
		np = 0;
	for (size_t i = 0; i < np; i++) {
		gsp__edge *e = proj[i];
		const gsp__method_ops *ops = run_ops(node, e, true);
		ops->commit(node, e);
		uint8_t *t = e->msg;
		e->msg = e->next_msg;
		e->next_msg = t;
		e->round++;
		e->msg_len = ops->msg_size(node, e->round);
		e->state = GSP_EDGE_IN_FLIGHT;
		e->tx_bytes += e->msg_len;
		e->tx_msgs++;
		e->exact_bytes += node->layout->floats * 4;
	}
	if (list != stack)
		free(list);
	if (err)
		return err;
	return (int)(do_project ? np : na);
}

int gsp_node_apply(gsp_node *node)
{
	return node_run(node, true, false, SIZE_MAX);
}

int gsp_node_project(gsp_node *node)
{
	return node_run(node, false, true, SIZE_MAX);
}

int gsp_node_project_edge(gsp_node *node, size_t edge)
{
	if (!node || edge >= node->n_edges)
		return -EINVAL;
	return node_run(node, false, true, edge);
}

int gsp_node_step(gsp_node *node)
{
	return node_run(node, true, true, SIZE_MAX);
}

int gsp_node_message(const gsp_node *node, size_t edge, const void **ret_msg,
		     size_t *ret_len, uint64_t *ret_round)
{
	if (!node || edge >= node->n_edges || !ret_msg || !ret_len)
		return -EINVAL;
	const gsp__edge *e = &node->edges[edge];
	if (e->round == 0)
		return GSP_ESTATE;
	*ret_msg = e->msg;
	*ret_len = e->msg_len;
	if (ret_round)
		*ret_round = e->round;
	return 0;
}

int64_t gsp_node_message_size(const gsp_node *node, size_t edge,
			      uint64_t round)
{
	if (!node || edge >= node->n_edges || round == 0)
		return -EINVAL;
	return (int64_t)gsp__round_ops(node, &node->edges[edge], round)->msg_size(node, round);
}

int64_t gsp_node_method_message_size(const gsp_node *node, uint64_t round)
{
	if (!node || round == 0)
		return -EINVAL;
	return (int64_t)node->ops->msg_size(node, round);
}

int gsp_node_complete(gsp_node *node, size_t edge, uint64_t round,
		      const void *msg, size_t len)
{
	if (!node || edge >= node->n_edges || (!msg && len) ||
	    ((uintptr_t)msg & 3) != 0)
		return -EINVAL;
	gsp__edge *e = &node->edges[edge];
	if (!e->active || e->state != GSP_EDGE_IN_FLIGHT)
		return GSP_ESTATE;
	if (round != e->round)
		return GSP_EROUND;
	if (len != e->msg_len)
		return GSP_ESHAPE;
	int err = gsp__round_ops(node, e, e->round)->complete(node, e, msg);
	if (err)
		return err;
	e->state = GSP_EDGE_COMPLETED;
	e->undoable = false;
	e->rx_bytes += len;
	e->rx_msgs++;
	return 0;
}
