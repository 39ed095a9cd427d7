/* group: the machine's local group (group.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "group.h"

void group_init(group *g, const group_ops *ops, void *ctx, unsigned max_members,
		unsigned local_wait_ms)
{
	*g = (group){.ops = ops, .ctx = ctx, .max_members = max_members,
		     .local_wait_ms = local_wait_ms};
}

int group_begin(group *g, float *machine, uint64_t n)
{
	g->members = calloc(g->max_members, sizeof(*g->members));
	g->last = malloc(n * sizeof(float));
	if (!g->members || !g->last) {
		free(g->members);
		free(g->last);
		g->members = NULL;
		g->last = NULL;
		return -ENOMEM;
	}
	memcpy(g->last, machine, n * sizeof(float));
	g->machine = machine;
	g->n = n;
	g->n_members = 0;
	g->state = GROUP_IDLE;
	return 0;
}

static group_trainer *find(const group *g, const void *client)
{
	for (unsigned i = 0; g->members && i < g->max_members; i++)
		if (g->members[i].state != MEMBER_FREE && g->members[i].client == client)
			return &g->members[i];
	return NULL;
}

bool group_has(const group *g, const void *client)
{
	return client && find(g, client) != NULL;
}

int group_join(group *g, void *client, float *params, void *handle)
{
	if (g->state == GROUP_OFF || g->state == GROUP_ENDING)
		return -EBUSY;
	if (find(g, client))
		return -EEXIST;
	group_trainer *m = NULL;
	for (unsigned i = 0; i < g->max_members && !m; i++)
		if (g->members[i].state == MEMBER_FREE)
			m = &g->members[i];
	if (!m)
		return -EUSERS;
	float *pending = calloc(g->n ? g->n : 1, sizeof(float));
	if (!pending)
		return -ENOMEM;
	*m = (group_trainer){.state = MEMBER_IDLE, .client = client, .params = params,
			    .pending = pending, .handle = handle};
	g->n_members++;
	return 0;
}

static void drop(group *g, group_trainer *m)
{
	g->ops->release(g->ctx, m->handle);
	free(m->pending);
	*m = (group_trainer){0};
	g->n_members--;
}

/* ---- the arithmetic ---------------------------------------------------- */

/* The machine's model becomes the mean of the participants' buffers,
 * each with its pending Delta (float32 accumulate: one read pass a
 * buffer); `last` remembers it. */
static void mean_into_machine(group *g, unsigned k)
{
	float *x = g->machine;
	bool first = true;
	for (unsigned j = 0; j < g->max_members; j++) {
		group_trainer *m = &g->members[j];
		if (m->state != MEMBER_STEPPING)
			continue;
		if (first)
			for (uint64_t i = 0; i < g->n; i++)
				x[i] = m->params[i] + m->pending[i];
		else
			for (uint64_t i = 0; i < g->n; i++)
				x[i] += m->params[i] + m->pending[i];
		first = false;
	}
	for (uint64_t i = 0; i < g->n; i++)
		x[i] /= (float)k;
	memcpy(g->last, x, g->n * sizeof(float));
}

/* The node's request is over: Delta (the machine's model less what the
 * group left in it) becomes pending for the members that did not take
 * part; the participants' buffers take the machine's model, their
 * pending consumed (one write pass a buffer). */
static void spread_delta(group *g)
{
	const float *x = g->machine;
	for (unsigned j = 0; j < g->max_members; j++) {
		group_trainer *m = &g->members[j];
		if (m->state == MEMBER_IDLE || m->state == MEMBER_WAITING)
			for (uint64_t i = 0; i < g->n; i++)
				m->pending[i] += x[i] - g->last[i];
	}
	for (unsigned j = 0; j < g->max_members; j++) {
		group_trainer *m = &g->members[j];
		if (m->state != MEMBER_STEPPING)
			continue;
		memcpy(m->params, x, g->n * sizeof(float));
		memset(m->pending, 0, g->n * sizeof(float));
	}
	memcpy(g->last, x, g->n * sizeof(float));
}

/* ---- when the group steps ---------------------------------------------- */

/* The members whose STEP waits; the earliest came at *ret_since. */
static unsigned waiting(const group *g, uint64_t *ret_since)
{
	unsigned k = 0;
	uint64_t since = UINT64_MAX;
	for (unsigned j = 0; j < g->max_members; j++)
		if (g->members[j].state == MEMBER_WAITING) {
			k++;
			if (g->members[j].since_ms < since)
				since = g->members[j].since_ms;
		}
	*ret_since = since;
	return k;
}

static void run(group *g)
{
	unsigned k = 0;
	uint32_t flags = 0;
	g->ops->timer_stop(g->ctx);
	for (unsigned j = 0; j < g->max_members; j++) {
		group_trainer *m = &g->members[j];
		if (m->state != MEMBER_WAITING)
			continue;
		m->state = MEMBER_STEPPING;
		flags |= m->flags;
		k++;
	}
	mean_into_machine(g, k);
	if (!g->req.average)
		g->req.flags = flags;
	g->state = GROUP_RUN;
	int err = g->ops->node_start(g->ctx, &g->req);
	if (err < 0) {
		/* Refused at once: the participants' buffers take the mean
		 * (Delta 0), and the error comes on the loop's next turn. */
		spread_delta(g);
		g->result = (step_result){.err = err, .average = g->req.average,
					  .text = "the model's node refused the step"};
		g->state = GROUP_REPLY;
		g->ops->timer_start(g->ctx, 0);
	}
}

/* Steps now if every member waits, else arms LocalWait from the first
 * STEP that waits (on the timer: never from inside a member's call). */
static void gather(group *g)
{
	uint64_t since;
	unsigned k = waiting(g, &since);
	if (k == 0) {
		g->state = GROUP_IDLE;
		g->ops->timer_stop(g->ctx);
		return;
	}
	g->state = GROUP_GATHER;
	uint64_t now = g->ops->now_ms(g->ctx);
	uint64_t due = since + g->local_wait_ms;
	g->ops->timer_start(g->ctx, k == g->n_members || due <= now ? 0 : due - now);
}

static int request(group *g, void *client, step_cb cb, const group_request *req)
{
	group_trainer *m = find(g, client);
	if (!m || g->state == GROUP_ENDING)
		return -ENOENT;
	if (m->state != MEMBER_IDLE)
		return -EBUSY;
	bool lone = req->average || (req->flags & GSP_STEP_DRAIN);
	if (lone && g->n_members > 1)
		return -EOPNOTSUPP;
	/* A lone request runs alone: nothing else waits (one member). */
	if (lone && g->state != GROUP_IDLE)
		return -EBUSY;
	m->state = MEMBER_WAITING;
	m->client = client;
	m->cb = cb;
	m->flags = req->flags;
	m->since_ms = g->ops->now_ms(g->ctx);
	if (g->state == GROUP_IDLE) {
		g->req = *req;
		gather(g);
	} else if (g->state == GROUP_GATHER) {
		gather(g);
	}
	/* RUN or REPLY: it waits for the next step, gathered at the end. */
	return 0;
}

int group_step(group *g, void *client, uint32_t flags, step_cb cb)
{
	group_request req = {.flags = flags};
	return request(g, client, cb, &req);
}

int group_average(group *g, void *client, const gsp_api_average *avg, step_cb cb)
{
	group_request req = {.average = true, .avg = *avg};
	return request(g, client, cb, &req);
}

/* The participants get r; the STEPs that came meanwhile gather. */
static void reply_all(group *g, const step_result *r)
{
	for (unsigned j = 0; j < g->max_members; j++) {
		group_trainer *m = &g->members[j];
		if (m->state != MEMBER_STEPPING)
			continue;
		step_cb cb = m->cb;
		m->state = MEMBER_IDLE;
		m->cb = NULL;
		if (cb)
			cb(m->client, r);
	}
	g->req = (group_request){0};
	gather(g);
}

void group_node_done(group *g, const step_result *r)
{
	if (g->state != GROUP_RUN)
		return;              /* the model went meanwhile (group_end) */
	spread_delta(g);
	reply_all(g, r);
}

void group_timer_fired(group *g)
{
	switch (g->state) {
	case GROUP_GATHER:
		run(g);
		break;
	case GROUP_REPLY: {
		step_result r = g->result;
		reply_all(g, &r);
		break;
	}
	default:
		break;
	}
}

/* ---- leaving ------------------------------------------------------------ */

void group_forget(group *g, void *client)
{
	group_trainer *m = find(g, client);
	if (m)
		m->cb = NULL;
}

unsigned group_leave(group *g, void *client)
{
	group_trainer *m = find(g, client);
	if (!m)
		return g->n_members;
	if (m->state != MEMBER_STEPPING)
		for (uint64_t i = 0; i < g->n; i++)
			m->params[i] += m->pending[i];
	drop(g, m);
	/* The others may all wait now. */
	if (g->state == GROUP_GATHER)
		gather(g);
	return g->n_members;
}

void group_end_begin(group *g)
{
	if (g->state != GROUP_OFF)
		g->state = GROUP_ENDING;
}

void group_end(group *g)
{
	if (g->state == GROUP_OFF)
		return;
	g->ops->timer_stop(g->ctx);
	for (unsigned j = 0; j < g->max_members; j++) {
		group_trainer *m = &g->members[j];
		if (m->state == MEMBER_FREE)
			continue;
		/* A participant's pending is in the machine's model already. */
		if (m->state == MEMBER_STEPPING)
			memcpy(m->params, g->machine, g->n * sizeof(float));
		else
			for (uint64_t i = 0; i < g->n; i++)
				m->params[i] += m->pending[i] + (g->machine[i] - g->last[i]);
		drop(g, m);
	}
	free(g->members);
	free(g->last);
	g->members = NULL;
	g->last = NULL;
	g->machine = NULL;
	g->state = GROUP_OFF;
}
