/* core_engine: what the node core's requests share (core.h): the writes
 * into the buffer and the records before frames, the engine step on the
 * loop or off it, the start of a request and its reply, and the
 * take-back a waiting request runs in a write of its own.  Below
 * core_average.c and core.c: it calls neither. */
#include <errno.h>
#include <string.h>

#include "core_impl.h"
#include "log.h"

void core_init(core *c, edge_set *edges, const core_ops *ops, void *ctx,
	       unsigned max_staleness, unsigned max_wait_ms)
{
	*c = (core){.edges = edges, .ops = ops, .ctx = ctx,
		    .max_staleness = max_staleness, .max_wait_ms = max_wait_ms};
}

bool core_busy(const core *c)
{
	return c->state == STEP_RUN || c->state == STEP_AVERAGE_RUN;
}

/* ---- writes and records ----------------------------------------------- */

bool core_write_begin(core *c, bool copy_later)
{
	edge_set *s = c->edges;
	if (!core__registered(c) || s->writing)
		return false;
	c->write_seq = edges_write_begin(s);
	copy_later = copy_later && !s->takeback_waiting;
	if (!copy_later)
		c->ops->undo_begin(c->ctx, c->write_seq);
	edges_write_takeback(s);
	return copy_later;
}

void core_write_end(core *c)
{
	edge_set *s = c->edges;
	bool was = s->writing;
	if (was)
		edges_write_end(s, c->write_seq);
	core_persist(c);
	if (was)
		c->ops->undo_end(c->ctx);
}

void core_persist(core *c)
{
	edge_set *s = c->edges;
	/* Not while a step runs off the loop, nor inside a write into the
	 * buffer: records saved there would count the write's rounds while
	 * the buffer's undo section says the write is not over (a kill then
	 * undoes it).  The write's end saves (core_write_end). */
	if (s->busy || s->writing)
		return;
	if (s->dirty)
		c->ops->save_records(c->ctx);
	/* What the records keep may go out now. */
	edges_release(s);
}

/* ---- replies ---------------------------------------------------------- */

/* Ends the request: its callback runs from the loop, never from here. */
void core__reply(core *c, int err, const char *text)
{
	/* An AVERAGE's rounds are over, whatever ended it. */
	edges_average_state(c->edges, false, false, false);
	c->result.err = err;
	c->result.text = err ? (text ? text : gsp_strerror(err)) : NULL;
	c->state = STEP_REPLY;
	core__timer_start(c, CORE_TIMER_REPLY, 0);
}

void core__reply_now(core *c)
{
	step_cb cb = c->cb;
	void *client = c->client;
	step_result r = c->result;
	c->cb = NULL;
	c->client = NULL;
	c->state = STEP_IDLE;
	if (cb && client)
		cb(client, &r);
}

/* What a reply says of the model rather than of the step: staleness,
 * bytes since REGISTER and the consensus estimate. */
void core__totals(core *c, gsp_api_step_ok *ret)
{
	ret->step = c->edges->steps;
	ret->max_staleness = edges_max_staleness(c->edges);
	c->ops->bytes(c->ctx, &ret->bytes_sent, &ret->bytes_received);
	ret->consensus_estimate = edges_estimate(c->edges);
}

/* The engine step returned r: on success count it and send its
 * messages.  Fills the STEP reply. */
int core__engine_end(core *c, int r)
{
	if (r < 0) {
		core_write_end(c);
		return r;
	}
	edges_step_done(c->edges);
	core_write_end(c);
	gsp_api_step_ok *ok = &c->result.step;
	memset(ok, 0, sizeof(*ok));
	ok->edges_applied = c->applied;
	ok->edges_projected = (uint32_t)r;
	ok->edges_skipped = c->skipped;
	core__totals(c, ok);
	return 0;
}

const char *core__error_text(int err)
{
	return err == GSP_ENONFINITE ? "the parameters hold a NaN or infinity: "
				       "nothing was sent"
				     : gsp_strerror(err);
}

/* A write into the buffer begins (its undo copy taken here) if an apply
 * now would write it; core_write_end ends it. */
void core__write_if_needed(core *c)
{
	if (edges_will_write(c->edges))
		core_write_begin(c, false);
}

/* One engine step (apply completed edges, project idle ones, send), off
 * the loop or here.  state: RUN or AVERAGE_RUN while it runs.  Returns 1
 * if it went off the loop, else the step's result. */
int core__run_engine(core *c, step_state state)
{
	c->state = state;
	core__timer_stop(c, CORE_TIMER_WAIT);
	bool offloads = c->ops->offloads(c->ctx);
	/* Rounds waiting to be taken back go first, inside the write. */
	bool copy_later = edges_will_write(c->edges) && core_write_begin(c, offloads);
	edges_step_begin(c->edges, c->max_staleness, &c->applied, &c->skipped);
	if (offloads) {
		edges_busy_begin(c->edges);
		if (c->ops->offload(c->ctx, copy_later, c->write_seq))
			return 1;
		edges_busy_end(c->edges);
	}
	if (copy_later)
		c->ops->undo_begin(c->ctx, c->write_seq);
	return core__engine_end(c, c->ops->engine_step(c->ctx));
}

int core__start(core *c, void *client, step_cb cb, bool average)
{
	if (!core__registered(c))
		return -ENOENT;
	if (c->state != STEP_IDLE)
		return -EBUSY;
	c->client = client;
	c->cb = cb;
	memset(&c->result, 0, sizeof(c->result));
	c->result.average = average;
	/* Edges an AVERAGE held (one that ended on an error too) project
	 * again. */
	edges_avg_release(c->edges);
	return 0;
}

/* A request that waits (for rounds, or for its AVERAGE's round) holds
 * the trainer: a round waiting to be taken back by subtraction is taken
 * back now, in a write of its own, rather than at the request's next
 * engine step (which may wait for that very edge). */
bool core__waits(const core *c)
{
	return c->state == STEP_WAIT || c->state == STEP_DRAIN || c->state == STEP_AVERAGE;
}

/* A request that waits while a round waits to be taken back: the loop's
 * next turn takes it back (never from inside the edges' own calls).
 * Called as a request comes to wait and when the edges change while it
 * waits; a change while a step ran (not waiting) is seen when the
 * request waits after it. */
void core__takeback_soon(core *c)
{
	if (c->edges->takeback_waiting && core__waits(c))
		core__timer_start(c, CORE_TIMER_TAKEBACK, 0);
}

