/*
 * step: the node core (core.h) on the daemon's libuv loop.  It owns the
 * core's timers (uv timers), its clock (the loop's), the engine step on
 * libuv's thread pool for a large model (the loop keeps serving links
 * meanwhile), and binds the core to the model's buffer (the undo
 * section, the model's going) and to the mesh (saving the records, a
 * reload that waited for the engine).  The requests themselves are the
 * core's: core_step, core_average, core_detach on stepper.core.  It also
 * binds a local group (group.h, in the model) to the loop and the core:
 * its timer (LocalWait), its node requests (the core's client is then
 * the group), its members' buffers letting go.
 */
#ifndef GOSSIPD_STEP_H
#define GOSSIPD_STEP_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "core.h"
#include "model.h"

typedef struct stepper {
	core core;
	uv_loop_t *loop;
	model *model;
	uv_timer_t timer[CORE_TIMERS];
	uv_timer_t group_timer;  /* the local group's (LocalWait) */
	size_t offload_floats;   /* models this large step off the loop */
	unsigned test_delay_ms;  /* GSP_TEST_STEP_DELAY_MS (test hooks) */
} stepper;

/* The core over m's edges on loop; it hears the edges' changes
 * (mesh_set_changed). */
void step_init(stepper *s, uv_loop_t *loop, model *m, unsigned max_staleness,
	       unsigned max_wait_ms);
/* Closes the timers (daemon stop). */
void step_close(stepper *s);

#endif
