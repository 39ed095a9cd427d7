/* step: STEP, DRAIN and DETACH on the shared buffer (step.h; AVERAGE:
 * step_average.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "step_impl.h"

/* Models of at least this many floats step on the thread pool. */
#define OFFLOAD_FLOATS ((size_t)1 << 20)

#ifdef GSP_TEST_HOOKS
/* Test hooks (meson -Dtest_hooks=true only): GSP_OFFLOAD_FLOATS moves the
 * threshold above (0: every step off the loop), GSP_TEST_STEP_DELAY_MS
 * holds each step that long on the thread pool. */
static size_t env_size(const char *name, size_t dflt)
{
	const char *v = getenv(name);
	return v ? (size_t)strtoull(v, NULL, 10) : dflt;
}
#else
static size_t env_size(const char *name, size_t dflt)
{
	return dflt;
}
#endif

static void on_reply_timer(uv_timer_t *t);
static void on_detach_timer(uv_timer_t *t);
static void on_takeback_timer(uv_timer_t *t);
static void begin_detach(stepper *s);

void step_init(stepper *s, uv_loop_t *loop, model *m, unsigned max_staleness,
	       unsigned max_wait_ms)
{
	*s = (stepper){.loop = loop, .model = m, .mesh = m->mesh,
		       .max_staleness = max_staleness, .max_wait_ms = max_wait_ms};
	s->offload_floats = env_size("GSP_OFFLOAD_FLOATS", OFFLOAD_FLOATS);
	/* Test hook: every offloaded step takes at least this long, so tests
	 * can land peer messages inside the window. */
	s->test_delay_ms = (unsigned)env_size("GSP_TEST_STEP_DELAY_MS", 0);
	uv_timer_init(loop, &s->reply_timer);
	uv_timer_init(loop, &s->avg_timer);
	uv_timer_init(loop, &s->wait_timer);
	uv_timer_init(loop, &s->detach_timer);
	uv_timer_init(loop, &s->takeback_timer);
	s->takeback_timer.data = s;
	s->reply_timer.data = s->avg_timer.data = s->wait_timer.data = s;
	s->detach_timer.data = s;
}

void step_close(stepper *s)
{
	uv_close((uv_handle_t *)&s->reply_timer, NULL);
	uv_close((uv_handle_t *)&s->avg_timer, NULL);
	uv_close((uv_handle_t *)&s->wait_timer, NULL);
	uv_close((uv_handle_t *)&s->detach_timer, NULL);
	uv_close((uv_handle_t *)&s->takeback_timer, NULL);
}

bool step_busy(const stepper *s)
{
	return s->state == STEP_RUN || s->state == STEP_AVERAGE_RUN;
}

/* ---- replies ---------------------------------------------------------- */

/* Ends the request: its callback runs from the loop, never from here. */
void step__reply(stepper *s, int err, const char *text)
{
	/* An AVERAGE's rounds are over, whatever ended it. */
	edges_average_state(step__edges(s), false, false, false);
	s->result.err = err;
	s->result.text = err ? (text ? text : gsp_strerror(err)) : NULL;
	s->state = STEP_REPLY;
	uv_timer_start(&s->reply_timer, on_reply_timer, 0, 0);
}

static void on_reply_timer(uv_timer_t *t)
{
	stepper *s = t->data;
	step_cb cb = s->cb;
	void *client = s->client;
	step_result r = s->result;
	s->cb = NULL;
	s->client = NULL;
	s->state = STEP_IDLE;
	if (cb && client)
		cb(client, &r);
}

/* What a reply says of the model rather than of the step: staleness,
 * bytes since REGISTER and the consensus estimate. */
static void totals(stepper *s, gsp_api_step_ok *ret)
{
	ret->step = step__edges(s)->steps;
	ret->max_staleness = edges_max_staleness(step__edges(s));
	model_bytes(s->model, &ret->bytes_sent, &ret->bytes_received);
	ret->consensus_estimate = edges_estimate(step__edges(s));
}

/* The engine step returned r: on success count it and send its
 * messages.  Fills the STEP reply. */
static int step_end(stepper *s, int r)
{
	if (r < 0) {
		model_write_end(s->model);
		return r;
	}
	edges_step_done(step__edges(s));
	model_write_end(s->model);
	mesh_persist(s->mesh);
	gsp_api_step_ok *ok = &s->result.step;
	memset(ok, 0, sizeof(*ok));
	ok->edges_applied = s->applied;
	ok->edges_projected = (uint32_t)r;
	ok->edges_skipped = s->skipped;
	totals(s, ok);
	return 0;
}

const char *step__error_text(int err)
{
	return err == GSP_ENONFINITE ? "the parameters hold a NaN or infinity: "
				       "nothing was sent"
				     : gsp_strerror(err);
}

/* ---- engine work off the loop ----------------------------------------- */

typedef struct step_work {
	uv_work_t req;
	stepper *s;
	gsp_node *node;
	undo *undo;              /* the undo copy is taken here: write_seq */
	uint64_t write_seq;
	unsigned delay_ms;
	int result;
} step_work;

static void work_run(uv_work_t *req)
{
	step_work *w = req->data;
	if (w->undo)
		undo_begin(w->undo, w->write_seq);
	w->result = gsp_node_step(w->node);
	if (w->delay_ms)
		usleep(w->delay_ms * 1000u);
}

static void work_done(uv_work_t *req, int status)
{
	step_work *w = req->data;
	stepper *s = w->s;
	int r = status < 0 ? status : w->result;
	free(w);
	edges_busy_end(step__edges(s));
	/* This step's messages, then the neighbours' frames that came
	 * meanwhile. */
	int err = step_end(s, r);
	edges_after_busy(step__edges(s));
	edges_finish(step__edges(s));
	if (s->halted) {
		s->state = STEP_IDLE;
		return;
	}
	step_state was = s->state;
	bool detaching = s->detach_pending;
	if (s->detach_pending) {
		s->detach_pending = false;
		begin_detach(s);
	}
	mesh_idle(s->mesh);
	if (was == STEP_RUN) {
		step__reply(s, err, err ? step__error_text(err) : NULL);
		return;
	}
	/* A DETACH that came during an AVERAGE's round ends the AVERAGE:
	 * going on, its end would apply a round the DETACH's ENDING did not
	 * offer, inside the DETACH's write (and end that write). */
	if (detaching) {
		uv_timer_stop(&s->avg_timer);
		edges_avg_release(step__edges(s));
	}
	s->state = STEP_AVERAGE;
	if (err || !s->model->registered || detaching) {
		s->result.average = true;
		step__reply(s, err ? err : -ECANCELED, err ? step__error_text(err)
						     : "the model was detached");
		return;
	}
	step__average_advance(s);
}

static bool offloads(const stepper *s)
{
	return gsp_layout_floats(s->model->layout) >= s->offload_floats;
}

/* Starts the engine step on the thread pool (taking the undo copy there
 * if copy); false if it is to run on the loop instead (a small model, or
 * no memory). */
static bool offload(stepper *s, bool copy)
{
	if (!offloads(s))
		return false;
	step_work *w = calloc(1, sizeof(*w));
	if (!w)
		return false;
	w->req.data = w;
	w->s = s;
	w->node = s->model->node;
	w->undo = copy ? &s->model->undo : NULL;
	w->write_seq = s->model->write_seq;
	w->delay_ms = s->test_delay_ms;
	edges_busy_begin(step__edges(s));
	if (uv_queue_work(s->loop, &w->req, work_run, work_done) == 0)
		return true;
	edges_busy_end(step__edges(s));
	free(w);
	return false;
}

/* A write into the buffer begins (its undo copy taken here) if an apply
 * now would write it; model_write_end ends it. */
void step__write_if_needed(stepper *s)
{
	if (edges_will_write(step__edges(s)))
		model_write_begin(s->model, false);
}

/* One engine step (apply completed edges, project idle ones, send), on
 * the thread pool or here.  state: RUN or AVERAGE_RUN while it runs.
 * Returns 1 if it went off the loop, else the step's result. */
int step__run_engine(stepper *s, step_state state)
{
	s->state = state;
	uv_timer_stop(&s->wait_timer);
	/* Rounds waiting to be taken back go first, inside the write. */
	bool copy_later = edges_will_write(step__edges(s)) &&
			  model_write_begin(s->model, offloads(s));
	edges_step_begin(step__edges(s), s->max_staleness, &s->applied, &s->skipped);
	if (offload(s, copy_later))
		return 1;
	if (copy_later)
		undo_begin(&s->model->undo, s->model->write_seq);
	return step_end(s, gsp_node_step(s->model->node));
}

/* A STEP stops waiting (its rounds came, MaxWait passed, or DETACH). */
static void end_wait(stepper *s)
{
	if (s->sync)
		return;
	uv_update_time(s->loop);
	edges_end_wait(step__edges(s), uv_now(s->loop) - s->wait_started_ms, s->max_wait_ms);
}

static void run_step(stepper *s)
{
	if (s->state == STEP_WAIT)
		end_wait(s);
	int r = step__run_engine(s, STEP_RUN);
	if (r <= 0)
		step__reply(s, r, r ? step__error_text(r) : NULL);
}

/* ---- STEP and DRAIN --------------------------------------------------- */

/* DRAIN: answer rounds neighbours already sent, wait for the rounds in
 * flight, apply; start nothing new.  Asynchronous, it waits for no
 * straggler's round and at most DrainWait for the others' (then their
 * edges are stragglers: a neighbour paused at a barrier holds no one);
 * with SYNC, for every round.  A round left in flight lands at a later
 * request, or DETACH ends its generation at the count both ends
 * applied. */
static void drain_advance(stepper *s)
{
	/* Applying only once everything is in keeps the order of the sums
	 * the same as a synchronous run's; a neighbour's early round is the
	 * exception, since answering it needs the edge applied first.
	 * Callbacks of the edges meanwhile must not re-enter. */
	s->state = STEP_RUN;
	step__write_if_needed(s);
	int r = edges_answer_early(step__edges(s));
	if (r >= 0 && edges_drain_waits(step__edges(s), s->sync)) {
		model_write_end(s->model);
		s->state = STEP_DRAIN;
		if (!s->sync && !uv_is_active((uv_handle_t *)&s->wait_timer))
			uv_timer_start(&s->wait_timer, step__on_wait_timer, s->drain_wait_ms, 0);
		return;
	}
	uv_timer_stop(&s->wait_timer);
	if (r >= 0)
		r = gsp_node_apply(s->model->node);
	edges_finish(step__edges(s));
	model_write_end(s->model);
	memset(&s->result.step, 0, sizeof(s->result.step));
	if (r >= 0)
		totals(s, &s->result.step);
	step__reply(s, r < 0 ? r : 0, NULL);
}

/* MaxWait is over: the lagging edges become stragglers, the STEP goes
 * on without them.  DrainWait is over: so do the edges the DRAIN waits
 * for. */
void step__on_wait_timer(uv_timer_t *t)
{
	stepper *s = t->data;
	if (s->state == STEP_AVERAGE) {
		step__average_stop_waiting(s);
		return;
	}
	if (s->state == STEP_DRAIN) {
		edges_drain_expired(step__edges(s), s->drain_wait_ms);
		drain_advance(s);
		return;
	}
	if (s->state != STEP_WAIT)
		return;
	run_step(s);
}

int step__start(stepper *s, void *client, step_cb cb, bool average)
{
	if (!s->model->registered)
		return -ENOENT;
	if (s->state != STEP_IDLE)
		return -EBUSY;
	s->client = client;
	s->cb = cb;
	memset(&s->result, 0, sizeof(s->result));
	s->result.average = average;
	/* Edges an AVERAGE held (one that ended on an error too) project
	 * again. */
	edges_avg_release(step__edges(s));
	return 0;
}

int step_start(stepper *s, void *client, uint32_t flags, step_cb cb)
{
	int err = step__start(s, client, cb, false);
	if (err)
		return err;
	s->sync = flags & GSP_STEP_SYNC;
	if (flags & GSP_STEP_DRAIN) {
		edges_drain_begin(step__edges(s));
		drain_advance(s);
		return 0;
	}
	if (!edges_must_wait(step__edges(s), s->sync, s->max_staleness)) {
		run_step(s);
		return 0;
	}
	s->state = STEP_WAIT;
	step__takeback_soon(s);
	if (!s->sync) {
		unsigned left = edges_begin_wait(step__edges(s), s->max_staleness, s->max_wait_ms);
		s->wait_started_ms = uv_now(s->loop);
		uv_timer_start(&s->wait_timer, step__on_wait_timer, left, 0);
	}
	return 0;
}

/* ---- the edges, clients and DETACH ------------------------------------ */

/* A request that waits (for rounds, or for its AVERAGE's round) holds
 * the trainer: a round waiting to be taken back by subtraction is taken
 * back now, in a write of its own, rather than at the request's next
 * engine step (which may wait for that very edge). */
static bool waits(const stepper *s)
{
	return s->state == STEP_WAIT || s->state == STEP_DRAIN || s->state == STEP_AVERAGE;
}

static void on_takeback_timer(uv_timer_t *t);

/* A request that waits while a round waits to be taken back: the loop's
 * next turn takes it back (never from inside the edges' own calls).
 * Called as a request comes to wait and when the edges change while it
 * waits; a change while a step ran (not waiting) is seen when the
 * request waits after it. */
void step__takeback_soon(stepper *s)
{
	if (step__edges(s)->takeback_waiting && waits(s))
		uv_timer_start(&s->takeback_timer, on_takeback_timer, 0, 0);
}

static void on_takeback_timer(uv_timer_t *t)
{
	stepper *s = t->data;
	if (!s->model->registered || !step__edges(s)->takeback_waiting || !waits(s))
		return;
	step_state was = s->state;
	s->state = STEP_RUN;          /* the edges' callbacks wait meanwhile */
	model_write_begin(s->model, false);
	model_write_end(s->model);
	s->state = was;
	step_edges_changed(s);
}

void step_edges_changed(void *ctx)
{
	stepper *s = ctx;
	if (!s->model->registered || s->halted)
		return;
	step__takeback_soon(s);
	/* Never from inside the edges' own calls: the model goes on the
	 * next turn of the loop. */
	if (s->detaching && !edges_ending(step__edges(s)))
		uv_timer_start(&s->detach_timer, on_detach_timer, 0, 0);
	switch (s->state) {
	case STEP_AVERAGE:
		step__average_advance(s);
		break;
	case STEP_DRAIN:
		drain_advance(s);
		break;
	case STEP_WAIT:
		if (!edges_must_wait(step__edges(s), s->sync, s->max_staleness))
			run_step(s);
		break;
	default:
		break;
	}
}

void step_halt(stepper *s)
{
	s->halted = true;
	s->client = NULL;
	s->cb = NULL;
	switch (s->state) {
	case STEP_WAIT:
		end_wait(s);
		/* fall through */
	case STEP_DRAIN:
	case STEP_AVERAGE:
		uv_timer_stop(&s->avg_timer);
		uv_timer_stop(&s->wait_timer);
		s->state = STEP_IDLE;
		break;
	default:
		break;
	}
}

void step_forget(stepper *s, void *client)
{
	if (s->client == client) {
		s->client = NULL;
		s->cb = NULL;
	}
	if (s->detach_client == client) {
		s->detach_client = NULL;
		s->detach_cb = NULL;
	}
}

/* ---- DETACH ----------------------------------------------------------- */

static void finish_detach(stepper *s)
{
	step_detach_cb cb = s->detach_cb;
	void *client = s->detach_client;
	s->detaching = false;
	s->detach_cb = NULL;
	s->detach_client = NULL;
	uv_timer_stop(&s->detach_timer);
	if (s->model->registered)
		model_detach(s->model);
	if (cb && client)
		cb(client);
}

static void on_detach_timer(uv_timer_t *t)
{
	stepper *s = t->data;
	if (s->detaching && edges_ending(step__edges(s)))
		gsp_warn("DETACH: %zu neighbour(s) did not answer within DetachWait "
			 "(%u ms); their edges end at what this end applied",
			 edges_ending(step__edges(s)), s->detach_wait_ms);
	finish_detach(s);
}

/* Each edge ends its generation with its peer (edges_end_begin); the
 * model goes once all have, or after DetachWait. */
static void begin_detach(stepper *s)
{
	/* Rounds taken back on the way are a write (model_detach ends it). */
	if (s->model->registered)
		model_write_begin(s->model, false);
	if (!s->model->registered || s->detach_wait_ms == 0 ||
	    edges_end_begin(step__edges(s)) == 0) {
		finish_detach(s);
		return;
	}
	s->detaching = true;
	uv_timer_start(&s->detach_timer, on_detach_timer, s->detach_wait_ms, 0);
}

void step_detach(stepper *s, void *client, step_detach_cb cb)
{
	if (s->detaching || s->detach_pending) {
		/* Already on its way: this one is answered when it is done. */
		if (cb && client) {
			s->detach_cb = cb;
			s->detach_client = client;
		}
		return;
	}
	s->detach_cb = cb;
	s->detach_client = client;
	if (!s->model->registered) {
		uv_timer_start(&s->detach_timer, on_detach_timer, 0, 0);
		return;
	}
	switch (s->state) {
	case STEP_RUN:
	case STEP_AVERAGE_RUN:
		s->detach_pending = true;
		return;
	case STEP_WAIT:
	case STEP_DRAIN:
	case STEP_AVERAGE:
		if (s->state == STEP_WAIT)
			end_wait(s);
		uv_timer_stop(&s->avg_timer);
		uv_timer_stop(&s->wait_timer);
		step__reply(s, -ECANCELED, "the model was detached");
		break;
	default:
		break;
	}
	begin_detach(s);
}
