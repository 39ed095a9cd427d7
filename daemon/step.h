/*
 * step: the requests that run the engine on the shared buffer: STEP
 * (asynchronous or SYNC), DRAIN and AVERAGE, in one explicit state.  A
 * large model's engine work runs on libuv's thread pool while the loop
 * keeps serving links; the edges are marked busy meanwhile.  It also
 * owns when DETACH may happen: never while the engine runs, and only
 * once the edges have ended their generations with their peers.
 *
 * Rules (libuv's): a request's callback is never called when its start
 * returned an error, and never from inside the start; it is called
 * exactly once otherwise, unless step_forget drops it first.
 */
#ifndef GOSSIPD_STEP_H
#define GOSSIPD_STEP_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "model.h"
#include "proto.h"

typedef enum step_state {
	STEP_IDLE = 0,
	STEP_WAIT,               /* a STEP waits for rounds in flight (at
				  * most MaxWait unless SYNC) */
	STEP_RUN,                /* a STEP's engine work runs off the loop */
	STEP_DRAIN,              /* a DRAIN waits for rounds in flight (at
				  * most DrainWait unless SYNC) */
	STEP_AVERAGE,            /* an AVERAGE waits for its round */
	STEP_AVERAGE_RUN,        /* an AVERAGE round runs off the loop */
	STEP_REPLY,              /* done: the reply is on its way */
} step_state;

typedef struct step_result {
	int err;                 /* 0, or the request failed */
	const char *text;        /* with err: what to tell the trainer */
	bool average;            /* which of the two replies */
	gsp_api_step_ok step;
	gsp_api_average_ok avg;
} step_result;

typedef void (*step_cb)(void *client, const step_result *r);
typedef void (*step_detach_cb)(void *client);

typedef struct stepper {
	uv_loop_t *loop;
	model *model;
	mesh *mesh;
	unsigned max_staleness;
	unsigned max_wait_ms;    /* MaxWait: 0 never waits (but SYNC does) */
	uv_timer_t wait_timer;
	uint64_t wait_started_ms;
	size_t offload_floats;   /* models this large step off the loop */
	unsigned test_delay_ms;  /* GSP_TEST_STEP_DELAY_MS (tests) */
	step_state state;
	bool sync;
	bool detach_pending;     /* DETACH once the engine work ends */
	bool halted;             /* step_halt: no more engine work */
	bool detaching;          /* edges end their generations first */
	unsigned detach_wait_ms; /* DetachWait: at most this long */
	unsigned drain_wait_ms;  /* DrainWait: an asynchronous DRAIN's bound */
	uv_timer_t detach_timer;
	uv_timer_t takeback_timer;   /* a take-back while a request waits */
	void *detach_client;
	step_detach_cb detach_cb;
	void *client;
	step_cb cb;
	step_result result;
	uv_timer_t reply_timer;
	uint32_t applied, skipped;   /* of the step in progress */
	double avg_target;
	uint64_t avg_deadline_ms;
	uint32_t avg_max_rounds, avg_rounds;
	bool avg_settled;         /* every edge's AVERAGE rounds ended */
	double avg_decided;       /* the largest estimate our REACHED was said at */
	uv_timer_t avg_timer;
} stepper;

void step_init(stepper *s, uv_loop_t *loop, model *m, unsigned max_staleness,
	       unsigned max_wait_ms);
/* Closes the timers (daemon stop). */
void step_close(stepper *s);

/* STEP with flags GSP_STEP_SYNC / GSP_STEP_DRAIN.  -EBUSY while another
 * request is in progress, -ENOENT without a model. */
int step_start(stepper *s, void *client, uint32_t flags, step_cb cb);
int step_average(stepper *s, void *client, const gsp_api_average *req, step_cb cb);
/* The client went away: its callback is dropped (the request itself
 * ends as it would; nothing waits for the network on its behalf). */
/* The daemon stops and keeps the generations: the request under way
 * ends without a reply (its client is gone), and no engine work starts
 * after the one running (step_busy says when it is over). */
void step_halt(stepper *s);
void step_forget(stepper *s, void *client);
/* DETACH: once the engine work in progress ends, each edge ends its
 * generation with its peer, at the same round at both ends (at most
 * DetachWait); then the model goes and cb(client) follows (never from
 * inside the call; client NULL: nobody to tell).  A request that waits
 * for the network ends with an error first. */
void step_detach(stepper *s, void *client, step_detach_cb cb);
/* Whether the engine is in use off the loop. */
bool step_busy(const stepper *s);
/* The edges' "rounds moved" callback (mesh_set_changed). */
void step_edges_changed(void *ctx);

#endif
