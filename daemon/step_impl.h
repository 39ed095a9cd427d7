/*
 * step_impl.h: what step.c (STEP, DRAIN, DETACH, the engine work off the
 * loop) and step_average.c (AVERAGE) share inside the step module.  Not
 * for other modules: they use step.h.
 */
#ifndef GOSSIPD_STEP_IMPL_H
#define GOSSIPD_STEP_IMPL_H

#include "step.h"

static inline edge_set *step__edges(stepper *s)
{
	return &s->mesh->edges;
}

/* The request's reply (err 0: its result), now or once the records are
 * written; the stepper is free again. */
void step__reply(stepper *s, int err, const char *text);
const char *step__error_text(int err);
/* A write into the buffer begins if an apply now would write it. */
void step__write_if_needed(stepper *s);
/* The engine step in `state` (STEP_RUN or STEP_AVERAGE_RUN): 0 done on
 * the loop, 1 running off it (its end goes on), or a negative errno. */
int step__run_engine(stepper *s, step_state state);
/* A request begins (average: an AVERAGE's): -EBUSY while one runs. */
int step__start(stepper *s, void *client, step_cb cb, bool average);
/* A round that waits to be taken back goes soon (a timer), not from
 * inside the edges' callback. */
void step__takeback_soon(stepper *s);
/* DrainWait passed (a DRAIN's, or an AVERAGE's held windows). */
void step__on_wait_timer(uv_timer_t *t);

/* step_average.c: the AVERAGE goes on as far as it can (rounds moved, an
 * engine call ended); DrainWait passed with schedule windows held. */
void step__average_advance(stepper *s);
void step__average_stop_waiting(stepper *s);

#endif
