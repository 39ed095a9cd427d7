/*
 * core: the node core.  It owns one model's requests over the edge set
 * (STEP, asynchronous or SYNC; DRAIN; AVERAGE; DETACH) in one explicit
 * state, and the order that exactly-once rests on: a write into the
 * buffer begins with its undo copy and the rounds it takes back, the
 * records that count it are saved only once it is over, and the frames
 * the records promise leave only after they are saved.  It also owns
 * when DETACH may happen: never while the engine runs, and only once the
 * edges have ended their generations with their peers.
 *
 * The core does nothing outside itself.  Time, timers, the engine step
 * off the loop, the buffer's undo section, saving the records and
 * letting the model go are core_ops, which the daemon implements over
 * libuv (daemon/step.c, mesh.c, model.c) and the simulation over its
 * scheduler (tests/daemon/edgesim.h): both run this code.
 *
 * Rules (libuv's): a request's callback is never called when its start
 * returned an error, and never from inside the start; it is called
 * exactly once otherwise, unless core_forget drops it first.  A timer's
 * or the engine's end comes back through core_timer_fired and
 * core_work_done, never from inside the op that started it.
 */
#ifndef GOSSIPD_CORE_H
#define GOSSIPD_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "edge.h"
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

/* The core's timers.  CHANGED and REPLY fire on the loop's next turn: a
 * reply is never given from inside a call into the core, and the edges'
 * changes are looked at once their own call is over (nng's rule: a
 * lower layer never calls back into the one above it). */
typedef enum core_timer {
	CORE_TIMER_CHANGED = 0,  /* the edges changed: the core looks */
	CORE_TIMER_REPLY,
	CORE_TIMER_WAIT,         /* MaxWait, DrainWait */
	CORE_TIMER_AVERAGE,      /* an AVERAGE's time limit */
	CORE_TIMER_DETACH,       /* DetachWait, or the model goes next turn */
	CORE_TIMER_TAKEBACK,     /* a round taken back in a write of its own */
	CORE_TIMERS
} core_timer;

typedef struct step_result {
	int err;                 /* 0, or the request failed */
	const char *text;        /* with err: what to tell the trainer */
	bool average;            /* which of the two replies */
	gsp_api_step_ok step;
	gsp_api_average_ok avg;
} step_result;

typedef void (*step_cb)(void *client, const step_result *r);
typedef void (*step_detach_cb)(void *client);

typedef struct core_ops {
	/* A monotonic clock in milliseconds. */
	uint64_t (*now_ms)(void *ctx);
	/* Arms t to fire after ms (0: the loop's next turn; an armed timer is
	 * armed again); core_timer_fired follows, never from inside. */
	void (*timer_start)(void *ctx, core_timer t, uint64_t ms);
	void (*timer_stop)(void *ctx, core_timer t);
	bool (*timer_active)(void *ctx, core_timer t);
	/* The engine step (gsp_node_step on the attached node) here, on the
	 * loop: its result. */
	int (*engine_step)(void *ctx);
	/* Whether the engine step of this model runs off the loop. */
	bool (*offloads)(void *ctx);
	/* Starts the engine step (gsp_node_step on the attached node) off the
	 * loop, with copy first the undo copy of write write_seq there;
	 * core_work_done follows on the loop.  false: nothing started, the
	 * core runs the step itself. */
	bool (*offload)(void *ctx, bool copy, uint64_t write_seq);
	/* The buffer's undo section: the copy before write write_seq is
	 * taken; the write is over. */
	void (*undo_begin)(void *ctx, uint64_t write_seq);
	void (*undo_end)(void *ctx);
	/* Saves the edge set's records durably (edges_records_saved), or
	 * nothing where none are kept. */
	void (*save_records)(void *ctx);
	/* The model goes (its edges are detached already). */
	void (*release_model)(void *ctx);
	/* No engine work is under way: what waited for that (a reload) may
	 * run. */
	void (*idle)(void *ctx);
	/* Peer traffic since REGISTER. */
	void (*bytes)(void *ctx, uint64_t *ret_sent, uint64_t *ret_received);
} core_ops;

typedef struct core {
	edge_set *edges;
	const core_ops *ops;
	void *ctx;
	unsigned max_staleness;
	unsigned max_wait_ms;    /* MaxWait: 0 never waits (but SYNC does) */
	unsigned detach_wait_ms; /* DetachWait: at most this long */
	unsigned drain_wait_ms;  /* DrainWait: an asynchronous DRAIN's bound */
	uint64_t wait_started_ms;
	uint64_t write_seq;      /* the write under way (edges->writing) */
	step_state state;
	bool sync;
	bool detach_pending;     /* DETACH once the engine work ends */
	bool halted;             /* core_halt: no more engine work */
	bool detaching;          /* edges end their generations first */
	void *detach_client;
	step_detach_cb detach_cb;
	void *client;
	step_cb cb;
	step_result result;
	uint32_t applied, skipped;   /* of the step in progress */
	double avg_target;
	uint64_t avg_deadline_ms;
	uint32_t avg_max_rounds, avg_rounds;
	bool avg_settled;         /* every edge's AVERAGE rounds ended */
	double avg_decided;       /* the largest estimate our REACHED was said at */
} core;

void core_init(core *c, edge_set *edges, const core_ops *ops, void *ctx,
	       unsigned max_staleness, unsigned max_wait_ms);

/* STEP with flags GSP_STEP_SYNC / GSP_STEP_DRAIN.  -EBUSY while another
 * request is in progress, -ENOENT without a model. */
int core_step(core *c, void *client, uint32_t flags, step_cb cb);
int core_average(core *c, void *client, const gsp_api_average *req, step_cb cb);
/* The client went away: its callback is dropped (the request itself
 * ends as it would; nothing waits for the network on its behalf). */
void core_forget(core *c, void *client);
/* The daemon stops and keeps the generations: the request under way
 * ends without a reply (its client is gone), and no engine work starts
 * after the one running (core_busy says when it is over). */
void core_halt(core *c);
/* DETACH: once the engine work in progress ends, each edge ends its
 * generation with its peer, at the same round at both ends (at most
 * DetachWait); then the model goes and cb(client) follows (never from
 * inside the call; client NULL: nobody to tell).  A request that waits
 * for the network ends with an error first. */
void core_detach(core *c, void *client, step_detach_cb cb);
/* Whether the engine is in use off the loop. */
bool core_busy(const core *c);

/* From below: the edges changed (rounds moved, a generation started or
 * ended).  Only noted: on the loop's next turn (CORE_TIMER_CHANGED) the
 * records are saved first, then the request goes on, so no edge call is
 * ever re-entered.  A timer fired.  The engine step off the loop ended
 * with result r. */
void core_edges_changed(core *c);
void core_timer_fired(core *c, core_timer t);
void core_work_done(core *c, int r);

/* A write into the buffer begins: the undo copy is taken (ops
 * undo_begin) and rounds waiting to be taken back by subtraction are.
 * With copy_later the copy is the caller's (taken off the loop) and true
 * comes back, unless it had to be taken here.  Only with a model; a
 * write already under way goes on. */
bool core_write_begin(core *c, bool copy_later);
/* The write is over: the records, which count it now, are saved, and
 * the undo section says there is nothing to undo.  Also without a write:
 * the ROUNDs a DRAIN kept go out after the records keep them. */
void core_write_end(core *c);
/* The records, when something changed (not while the engine is busy,
 * nor inside a write into the buffer), then the ROUNDs they keep go out
 * (edges_release). */
void core_persist(core *c);

#endif
