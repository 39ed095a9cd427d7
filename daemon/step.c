/* step: STEP, DRAIN and AVERAGE on the shared buffer (step.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "step.h"

static void average_advance(stepper *s);
static void takeback_soon(stepper *s);
static void average_stop_waiting(stepper *s);
static bool average_round(stepper *s);
static bool average_land(stepper *s);

static edge_set *edges(stepper *s)
{
	return &s->mesh->edges;
}

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
static void on_average_timer(uv_timer_t *t);
static void on_wait_timer(uv_timer_t *t);
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
static void reply(stepper *s, int err, const char *text)
{
	/* An AVERAGE's rounds are over, whatever ended it. */
	edges(s)->reached = edges(s)->averaging = edges(s)->measured = false;
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
	ret->step = edges(s)->steps;
	ret->max_staleness = edges_max_staleness(edges(s));
	model_bytes(s->model, &ret->bytes_sent, &ret->bytes_received);
	ret->consensus_estimate = edges_estimate(edges(s));
}

/* The engine step returned r: on success count it and send its
 * messages.  Fills the STEP reply. */
static int step_end(stepper *s, int r)
{
	if (r < 0) {
		model_write_end(s->model);
		return r;
	}
	edges_step_done(edges(s));
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

static const char *step_error_text(int err)
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
	edges(s)->busy = false;
	/* This step's messages, then the neighbours' frames that came
	 * meanwhile. */
	int err = step_end(s, r);
	edges_after_busy(edges(s));
	edges_finish(edges(s));
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
		reply(s, err, err ? step_error_text(err) : NULL);
		return;
	}
	/* A DETACH that came during an AVERAGE's round ends the AVERAGE:
	 * going on, its end would apply a round the DETACH's ENDING did not
	 * offer, inside the DETACH's write (and end that write). */
	if (detaching) {
		uv_timer_stop(&s->avg_timer);
		edges_avg_release(edges(s));
	}
	s->state = STEP_AVERAGE;
	if (err || !s->model->registered || detaching) {
		s->result.average = true;
		reply(s, err ? err : -ECANCELED, err ? step_error_text(err)
						     : "the model was detached");
		return;
	}
	average_advance(s);
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
	edges(s)->busy = true;
	if (uv_queue_work(s->loop, &w->req, work_run, work_done) == 0)
		return true;
	edges(s)->busy = false;
	free(w);
	return false;
}

/* A write into the buffer begins (its undo copy taken here) if an apply
 * now would write it; model_write_end ends it. */
static void write_if_needed(stepper *s)
{
	if (edges_will_write(edges(s)))
		model_write_begin(s->model, false);
}

/* One engine step (apply completed edges, project idle ones, send), on
 * the thread pool or here.  state: RUN or AVERAGE_RUN while it runs.
 * Returns 1 if it went off the loop, else the step's result. */
static int run_engine(stepper *s, step_state state)
{
	s->state = state;
	uv_timer_stop(&s->wait_timer);
	/* Rounds waiting to be taken back go first, inside the write. */
	bool copy_later = edges_will_write(edges(s)) &&
			  model_write_begin(s->model, offloads(s));
	edges_step_begin(edges(s), s->max_staleness, &s->applied, &s->skipped);
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
	edges_end_wait(edges(s), uv_now(s->loop) - s->wait_started_ms, s->max_wait_ms);
}

static void run_step(stepper *s)
{
	if (s->state == STEP_WAIT)
		end_wait(s);
	int r = run_engine(s, STEP_RUN);
	if (r <= 0)
		reply(s, r, r ? step_error_text(r) : NULL);
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
	write_if_needed(s);
	int r = edges_answer_early(edges(s));
	if (r >= 0 && edges_drain_waits(edges(s), s->sync)) {
		model_write_end(s->model);
		s->state = STEP_DRAIN;
		if (!s->sync && !uv_is_active((uv_handle_t *)&s->wait_timer))
			uv_timer_start(&s->wait_timer, on_wait_timer, s->drain_wait_ms, 0);
		return;
	}
	uv_timer_stop(&s->wait_timer);
	if (r >= 0)
		r = gsp_node_apply(s->model->node);
	edges_finish(edges(s));
	model_write_end(s->model);
	memset(&s->result.step, 0, sizeof(s->result.step));
	if (r >= 0)
		totals(s, &s->result.step);
	reply(s, r < 0 ? r : 0, NULL);
}

/* MaxWait is over: the lagging edges become stragglers, the STEP goes
 * on without them.  DrainWait is over: so do the edges the DRAIN waits
 * for. */
static void on_wait_timer(uv_timer_t *t)
{
	stepper *s = t->data;
	if (s->state == STEP_AVERAGE) {
		average_stop_waiting(s);
		return;
	}
	if (s->state == STEP_DRAIN) {
		edges_drain_expired(edges(s), s->drain_wait_ms);
		drain_advance(s);
		return;
	}
	if (s->state != STEP_WAIT)
		return;
	run_step(s);
}

static int start(stepper *s, void *client, step_cb cb, bool average)
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
	edges_avg_release(edges(s));
	return 0;
}

int step_start(stepper *s, void *client, uint32_t flags, step_cb cb)
{
	int err = start(s, client, cb, false);
	if (err)
		return err;
	s->sync = flags & GSP_STEP_SYNC;
	if (flags & GSP_STEP_DRAIN) {
		edges_drain_begin(edges(s));
		drain_advance(s);
		return 0;
	}
	if (!edges_must_wait(edges(s), s->sync, s->max_staleness)) {
		run_step(s);
		return 0;
	}
	s->state = STEP_WAIT;
	takeback_soon(s);
	if (!s->sync) {
		unsigned left = edges_begin_wait(edges(s), s->max_staleness, s->max_wait_ms);
		s->wait_started_ms = uv_now(s->loop);
		uv_timer_start(&s->wait_timer, on_wait_timer, left, 0);
	}
	return 0;
}

/* ---- AVERAGE ---------------------------------------------------------- */

static void average_finish(stepper *s)
{
	uv_timer_stop(&s->avg_timer);
	uv_timer_stop(&s->wait_timer);
	edges_avg_release(edges(s));
	/* The edges' callbacks meanwhile (a generation that ends or starts)
	 * must not run the AVERAGE on from inside its end. */
	s->state = STEP_RUN;
	write_if_needed(s);
	int r = gsp_node_apply(s->model->node);
	edges_finish(edges(s));
	model_write_end(s->model);
	s->result.avg.rounds = s->avg_rounds;
	s->result.avg.estimate = edges_estimate(edges(s));
	/* Reached: at the target, or every edge's rounds ended with both ends
	 * saying so (a held edge's last measurement may be a round past). */
	s->result.avg.reached = s->result.avg.estimate <= s->avg_target || s->avg_settled;
	reply(s, r < 0 ? r : 0, NULL);
}

static void average_advance(stepper *s)
{
	/* The time limit passed while a round ran off the loop (the timer
	 * found it running): it ends now, not when that round's messages
	 * come back (they may not, if the neighbours' AVERAGEs are over). */
	if (s->state == STEP_AVERAGE && s->avg_deadline_ms &&
	    uv_now(s->loop) >= s->avg_deadline_ms) {
		average_finish(s);
		return;
	}
	/* A round that completes at once (an early message) goes on here,
	 * not through the edges' callback. */
	bool landed = false;          /* at most once a call: never a spin */
	while (s->state == STEP_AVERAGE && !edges_in_flight(edges(s))) {
		if (!landed && edges_start_waits_landing(edges(s))) {
			landed = true;
			if (!average_land(s))
				return;
		}
		double est = edges_estimate_going(edges(s));
		size_t up = edges_up(edges(s));
		uint64_t now = uv_now(s->loop);
		/* Reached here: our ROUNDs say so.  An edge's rounds end once
		 * both ends' ROUNDs of its last round said so; the others go on,
		 * so that no neighbour is left waiting for us, and the AVERAGE
		 * ends when all have (the end of a run is the network's). */
		bool reached = s->avg_rounds > 0 && est <= s->avg_target;
		edges(s)->averaging = true;
		edges(s)->reached = reached;
		edges(s)->measured = s->avg_rounds > 0;
		size_t going = edges_avg_settle(edges(s));
		s->avg_settled = up > 0 && going == 0;
		bool done = s->avg_settled ||
			    (s->avg_max_rounds && s->avg_rounds >= s->avg_max_rounds) ||
			    (s->avg_deadline_ms && now >= s->avg_deadline_ms) ||
			    (up == 0 && (s->avg_rounds > 0 || !s->avg_deadline_ms));
		if (done) {
			average_finish(s);
			return;
		}
		if (up == 0)
			return;
		/* The schedule's windows go once all of this node's are open. */
		edges_sched_release(edges(s), false);
		if (!average_round(s))
			return;
	}
	/* Waiting: a round that waits to be taken back goes now (it came
	 * while the round ran, or before the AVERAGE). */
	takeback_soon(s);
	/* Windows that wait for an edge that may still agree: at most
	 * DrainWait without a round here (a neighbour whose own rounds wait
	 * for ours cannot agree: on a ring such waits close a cycle). */
	if (s->state == STEP_AVERAGE && edges_sched_waiting(edges(s)) &&
	    !uv_is_active((uv_handle_t *)&s->wait_timer))
		uv_timer_start(&s->wait_timer, on_wait_timer, s->drain_wait_ms, 0);
}

/* Back in the AVERAGE after an engine call that returned r; false (and
 * replied) if it failed. */
static bool average_goes_on(stepper *s, int r)
{
	s->state = STEP_AVERAGE;
	if (r < 0) {
		uv_timer_stop(&s->avg_timer);
		reply(s, r, step_error_text(r));
		return false;
	}
	return true;
}

/* A generation agreed with a neighbour waits for the ended one's last
 * update to land: the AVERAGE lands it, as a STEP would (the new
 * generation then starts, edges_finish), rather than wait for a session
 * up to its time limit while its own waiting holds the start back.
 * False if the AVERAGE failed (replied). */
static bool average_land(stepper *s)
{
	s->state = STEP_RUN;          /* the edges' callbacks wait meanwhile */
	write_if_needed(s);
	int r = gsp_node_apply(s->model->node);
	edges_finish(edges(s));
	model_write_end(s->model);
	return average_goes_on(s, r);
}

/* One AVERAGE round's engine step; false when the AVERAGE does not go on
 * here (the step runs off the loop, or failed). */
static bool average_round(stepper *s)
{
	s->avg_rounds++;
	int r = run_engine(s, STEP_AVERAGE_RUN);
	if (r == 1)
		return false;
	return average_goes_on(s, r);
}

/* DrainWait passed with schedule windows held: they go now, and their
 * rounds go out at once (other edges' rounds may be in flight). */
static void average_stop_waiting(stepper *s)
{
	size_t n = edges_sched_release(edges(s), true);
	if (n)
		gsp_info("AVERAGE: %zu schedule window(s) go after DrainWait without a round "
			 "(an edge that could still agree did not)", n);
	if (n && !average_round(s))
		return;
	average_advance(s);
}

static void on_average_timer(uv_timer_t *t)
{
	stepper *s = t->data;
	/* A round on the thread pool finishes first; its end checks the
	 * deadline again. */
	if (s->state == STEP_AVERAGE)
		average_finish(s);
}

int step_average(stepper *s, void *client, const gsp_api_average *req, step_cb cb)
{
	int err = start(s, client, cb, true);
	if (err)
		return err;
	s->state = STEP_AVERAGE;
	s->avg_target = req->target;
	s->avg_rounds = 0;
	s->avg_settled = false;
	s->avg_max_rounds = req->max_rounds;
	s->avg_deadline_ms = req->time_limit_ms ? uv_now(s->loop) + req->time_limit_ms : 0;
	if (req->time_limit_ms)
		uv_timer_start(&s->avg_timer, on_average_timer, req->time_limit_ms, 0);
	average_advance(s);
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
static void takeback_soon(stepper *s)
{
	if (edges(s)->takeback_waiting && waits(s))
		uv_timer_start(&s->takeback_timer, on_takeback_timer, 0, 0);
}

static void on_takeback_timer(uv_timer_t *t)
{
	stepper *s = t->data;
	if (!s->model->registered || !edges(s)->takeback_waiting || !waits(s))
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
	takeback_soon(s);
	/* Never from inside the edges' own calls: the model goes on the
	 * next turn of the loop. */
	if (s->detaching && !edges_ending(edges(s)))
		uv_timer_start(&s->detach_timer, on_detach_timer, 0, 0);
	switch (s->state) {
	case STEP_AVERAGE:
		average_advance(s);
		break;
	case STEP_DRAIN:
		drain_advance(s);
		break;
	case STEP_WAIT:
		if (!edges_must_wait(edges(s), s->sync, s->max_staleness))
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
	if (s->detaching && edges_ending(edges(s)))
		gsp_warn("DETACH: %zu neighbour(s) did not answer within DetachWait "
			 "(%u ms); their edges end at what this end applied",
			 edges_ending(edges(s)), s->detach_wait_ms);
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
	    edges_end_begin(edges(s)) == 0) {
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
		reply(s, -ECANCELED, "the model was detached");
		break;
	default:
		break;
	}
	begin_detach(s);
}
