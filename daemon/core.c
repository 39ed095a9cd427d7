/* core: STEP, DRAIN and DETACH, and the events from below (the edges'
 * changes, timers, the engine's end) (core.h).  Above core_average.c
 * (AVERAGE) and core_engine.c (what the requests share). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "core_impl.h"
#include "log.h"

static void begin_detach(core *c);
static void finish_detach(core *c);
static void changes_now(core *c);

/* ---- engine work ------------------------------------------------------ */

void core_work_done(core *c, int r)
{
	edges_busy_end(c->edges);
	/* This step's messages, then the neighbours' frames that came
	 * meanwhile. */
	int err = core__engine_end(c, r);
	edges_after_busy(c->edges);
	edges_finish(c->edges);
	if (c->halted) {
		c->state = STEP_IDLE;
		return;
	}
	step_state was = c->state;
	bool detaching = c->detach_pending;
	if (c->detach_pending) {
		c->detach_pending = false;
		begin_detach(c);
	}
	c->ops->idle(c->ctx);
	if (was == STEP_RUN) {
		core__reply(c, err, err ? core__error_text(err) : NULL);
		return;
	}
	/* A DETACH that came during an AVERAGE's round ends the AVERAGE:
	 * going on, its end would apply a round the DETACH's ENDING did not
	 * offer, inside the DETACH's write (and end that write). */
	if (detaching) {
		core__timer_stop(c, CORE_TIMER_AVERAGE);
		edges_avg_release(c->edges);
	}
	c->state = STEP_AVERAGE;
	if (err || !core__registered(c) || detaching) {
		c->result.average = true;
		core__reply(c, err ? err : -ECANCELED, err ? core__error_text(err)
						     : "the model was detached");
		return;
	}
	core__average_advance(c);
}

/* A STEP stops waiting (its rounds came, MaxWait passed, or DETACH). */
static void end_wait(core *c)
{
	if (c->sync)
		return;
	edges_end_wait(c->edges, core__now(c) - c->wait_started_ms, c->max_wait_ms);
}

static void run_step(core *c)
{
	if (c->state == STEP_WAIT)
		end_wait(c);
	int r = core__run_engine(c, STEP_RUN);
	if (r <= 0)
		core__reply(c, r, r ? core__error_text(r) : NULL);
}

/* ---- STEP and DRAIN --------------------------------------------------- */

/* DRAIN: answer rounds neighbours already sent, wait for the rounds in
 * flight, apply; start nothing new.  Asynchronous, it waits for no
 * straggler's round and at most DrainWait for the others' (then their
 * edges are stragglers: a neighbour paused at a barrier holds no one);
 * with SYNC, for every round.  A round left in flight lands at a later
 * request, or DETACH ends its generation at the count both ends
 * applied. */
static void drain_advance(core *c)
{
	/* Applying only once everything is in keeps the order of the sums
	 * the same as a synchronous run's; a neighbour's early round is the
	 * exception, since answering it needs the edge applied first. */
	core__write_if_needed(c);
	int r = edges_answer_early(c->edges);
	if (r >= 0 && edges_drain_waits(c->edges, c->sync)) {
		core_write_end(c);
		c->state = STEP_DRAIN;
		if (!c->sync && !c->ops->timer_active(c->ctx, CORE_TIMER_WAIT))
			core__timer_start(c, CORE_TIMER_WAIT, c->drain_wait_ms);
		return;
	}
	core__timer_stop(c, CORE_TIMER_WAIT);
	if (r >= 0)
		r = gsp_node_apply(c->edges->model.node);
	edges_finish(c->edges);
	core_write_end(c);
	memset(&c->result.step, 0, sizeof(c->result.step));
	if (r >= 0)
		core__totals(c, &c->result.step);
	core__reply(c, r < 0 ? r : 0, NULL);
}

/* MaxWait is over: the lagging edges become stragglers, the STEP goes
 * on without them.  DrainWait is over: so do the edges the DRAIN waits
 * for. */
static void wait_over(core *c)
{
	if (c->state == STEP_AVERAGE) {
		core__average_stop_waiting(c);
		return;
	}
	if (c->state == STEP_DRAIN) {
		edges_drain_expired(c->edges, c->drain_wait_ms);
		drain_advance(c);
		return;
	}
	if (c->state != STEP_WAIT)
		return;
	run_step(c);
}

int core_step(core *c, void *client, uint32_t flags, step_cb cb)
{
	int err = core__start(c, client, cb, false);
	if (err)
		return err;
	c->sync = flags & GSP_STEP_SYNC;
	if (flags & GSP_STEP_DRAIN) {
		edges_drain_begin(c->edges);
		drain_advance(c);
		return 0;
	}
	if (!edges_must_wait(c->edges, c->sync, c->max_staleness)) {
		run_step(c);
		return 0;
	}
	c->state = STEP_WAIT;
	core__takeback_soon(c);
	if (!c->sync) {
		unsigned left = edges_begin_wait(c->edges, c->max_staleness, c->max_wait_ms);
		c->wait_started_ms = core__now(c);
		core__timer_start(c, CORE_TIMER_WAIT, left);
	}
	return 0;
}

/* ---- the edges, clients and DETACH ------------------------------------ */

static void takeback_now(core *c)
{
	if (!core__registered(c) || !c->edges->takeback_waiting || !core__waits(c))
		return;
	core_write_begin(c, false);
	core_write_end(c);
	changes_now(c);
}

void core_edges_changed(core *c)
{
	if (!c->ops->timer_active(c->ctx, CORE_TIMER_CHANGED))
		core__timer_start(c, CORE_TIMER_CHANGED, 0);
}

/* The edges changed since the last look: the records, then whatever
 * waited for the change. */
static void changes_now(core *c)
{
	core_persist(c);
	if (!core__registered(c) || c->halted)
		return;
	core__takeback_soon(c);
	/* Never from inside the edges' own calls: the model goes on the
	 * next turn of the loop. */
	if (c->detaching && !edges_ending(c->edges))
		core__timer_start(c, CORE_TIMER_DETACH, 0);
	switch (c->state) {
	case STEP_AVERAGE:
		core__average_advance(c);
		break;
	case STEP_DRAIN:
		drain_advance(c);
		break;
	case STEP_WAIT:
		if (!edges_must_wait(c->edges, c->sync, c->max_staleness))
			run_step(c);
		break;
	default:
		break;
	}
}

void core_halt(core *c)
{
	c->halted = true;
	c->client = NULL;
	c->cb = NULL;
	switch (c->state) {
	case STEP_WAIT:
		end_wait(c);
		/* fall through */
	case STEP_DRAIN:
	case STEP_AVERAGE:
		core__timer_stop(c, CORE_TIMER_AVERAGE);
		core__timer_stop(c, CORE_TIMER_WAIT);
		c->state = STEP_IDLE;
		break;
	default:
		break;
	}
}

void core_forget(core *c, void *client)
{
	if (c->client == client) {
		c->client = NULL;
		c->cb = NULL;
	}
	if (c->detach_client == client) {
		c->detach_client = NULL;
		c->detach_cb = NULL;
	}
}

/* ---- DETACH ----------------------------------------------------------- */

static void finish_detach(core *c)
{
	step_detach_cb cb = c->detach_cb;
	void *client = c->detach_client;
	c->detaching = false;
	c->detach_cb = NULL;
	c->detach_client = NULL;
	core__timer_stop(c, CORE_TIMER_DETACH);
	if (core__registered(c)) {
		edges_detach(c->edges);
		core_write_end(c);
		c->ops->release_model(c->ctx);
	}
	if (cb && client)
		cb(client);
}

static void detach_timer(core *c)
{
	if (c->detaching && edges_ending(c->edges))
		gsp_warn("DETACH: %zu neighbour(s) did not answer within DetachWait "
			 "(%u ms); their edges end at what this end applied",
			 edges_ending(c->edges), c->detach_wait_ms);
	finish_detach(c);
}

/* Each edge ends its generation with its peer (edges_end_begin); the
 * model goes once all have, or after DetachWait. */
static void begin_detach(core *c)
{
	/* Rounds taken back on the way are a write (finish_detach ends it). */
	if (core__registered(c))
		core_write_begin(c, false);
	if (!core__registered(c) || c->detach_wait_ms == 0 ||
	    edges_end_begin(c->edges) == 0) {
		finish_detach(c);
		return;
	}
	c->detaching = true;
	core__timer_start(c, CORE_TIMER_DETACH, c->detach_wait_ms);
}

void core_detach(core *c, void *client, step_detach_cb cb)
{
	if (c->detaching || c->detach_pending) {
		/* Already on its way: this one is answered when it is done. */
		if (cb && client) {
			c->detach_cb = cb;
			c->detach_client = client;
		}
		return;
	}
	c->detach_cb = cb;
	c->detach_client = client;
	if (!core__registered(c)) {
		core__timer_start(c, CORE_TIMER_DETACH, 0);
		return;
	}
	switch (c->state) {
	case STEP_RUN:
	case STEP_AVERAGE_RUN:
		c->detach_pending = true;
		return;
	case STEP_WAIT:
	case STEP_DRAIN:
	case STEP_AVERAGE:
		if (c->state == STEP_WAIT)
			end_wait(c);
		core__timer_stop(c, CORE_TIMER_AVERAGE);
		core__timer_stop(c, CORE_TIMER_WAIT);
		core__reply(c, -ECANCELED, "the model was detached");
		break;
	default:
		break;
	}
	begin_detach(c);
}

void core_timer_fired(core *c, core_timer t)
{
	switch (t) {
	case CORE_TIMER_CHANGED:
		changes_now(c);
		break;
	case CORE_TIMER_REPLY:
		core__reply_now(c);
		break;
	case CORE_TIMER_WAIT:
		wait_over(c);
		break;
	case CORE_TIMER_AVERAGE:
		core__average_timer(c);
		break;
	case CORE_TIMER_DETACH:
		detach_timer(c);
		break;
	case CORE_TIMER_TAKEBACK:
		takeback_now(c);
		break;
	case CORE_TIMERS:
		break;
	}
}
