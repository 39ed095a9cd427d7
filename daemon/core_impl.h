/*
 * core_impl.h: what the core's files share: core_engine.c (the writes,
 * the records, the engine step, a request's start and reply) below
 * core_average.c (AVERAGE) below core.c (STEP, DRAIN, DETACH and the
 * events).  Not for other modules: they use core.h.
 */
#ifndef GOSSIPD_CORE_IMPL_H
#define GOSSIPD_CORE_IMPL_H

#include "core.h"

static inline bool core__registered(const core *c)
{
	return c->edges->attached;
}

static inline uint64_t core__now(core *c)
{
	return c->ops->now_ms(c->ctx);
}

static inline void core__timer_start(core *c, core_timer t, uint64_t ms)
{
	c->ops->timer_start(c->ctx, t, ms);
}

static inline void core__timer_stop(core *c, core_timer t)
{
	c->ops->timer_stop(c->ctx, t);
}

/* The request's reply (err 0: its result) on the loop's next turn; the
 * core is free again then (core__reply_now, from the REPLY timer). */
void core__reply(core *c, int err, const char *text);
void core__reply_now(core *c);
/* What a reply says of the model: steps, staleness, bytes, estimate. */
void core__totals(core *c, gsp_api_step_ok *ret);
/* The engine step returned r: counted and its messages sent (the write
 * ends); fills the STEP reply.  0 or r's error. */
int core__engine_end(core *c, int r);
/* Whether a request waits (for rounds, or its AVERAGE's round). */
bool core__waits(const core *c);
const char *core__error_text(int err);
/* A write into the buffer begins if an apply now would write it. */
void core__write_if_needed(core *c);
/* The engine step in `state` (STEP_RUN or STEP_AVERAGE_RUN): 0 done on
 * the loop, 1 running off it (its end goes on), or a negative errno. */
int core__run_engine(core *c, step_state state);
/* A request begins (average: an AVERAGE's): -EBUSY while one runs. */
int core__start(core *c, void *client, step_cb cb, bool average);
/* A round that waits to be taken back goes soon (a timer), not from
 * inside the edges' callback. */
void core__takeback_soon(core *c);

/* core_average.c: the AVERAGE goes on as far as it can (rounds moved, an
 * engine call ended); DrainWait passed with schedule windows held; its
 * time limit passed. */
void core__average_advance(core *c);
void core__average_stop_waiting(core *c);
void core__average_timer(core *c);

#endif
