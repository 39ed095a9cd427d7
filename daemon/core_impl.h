/*
 * core_impl.h: what core.c (STEP, DRAIN, DETACH, the writes and the
 * records) and core_average.c (AVERAGE) share inside the core.  Not for
 * other modules: they use core.h.
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
 * core is free again then. */
void core__reply(core *c, int err, const char *text);
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
