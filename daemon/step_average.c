/* step_average: AVERAGE (step.h): rounds with no training between them
 * until the consensus estimate reaches the target, every edge's rounds
 * ended at both ends, or a round or time limit passed; the schedule's
 * windows held and let go (edge_sched.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "log.h"
#include "step_impl.h"

static bool one_round(stepper *s);
static bool land(stepper *s);

static void finish(stepper *s)
{
	uv_timer_stop(&s->avg_timer);
	uv_timer_stop(&s->wait_timer);
	edges_avg_release(step__edges(s));
	/* The edges' callbacks meanwhile (a generation that ends or starts)
	 * must not run the AVERAGE on from inside its end. */
	s->state = STEP_RUN;
	step__write_if_needed(s);
	int r = gsp_node_apply(s->model->node);
	edges_finish(step__edges(s));
	model_write_end(s->model);
	s->result.avg.rounds = s->avg_rounds;
	double est = edges_estimate(step__edges(s));
	/* Reached: at the target, or every edge's rounds ended with both ends
	 * saying so, and no live generation's session down (a neighbour that
	 * crashed: its last measurement stands, and says how far we are from
	 * it).  Settled, the estimate reported is the one our REACHED was
	 * said at (a held edge's last measurement may be a round past it:
	 * "reached" never comes with an estimate above the target). */
	bool settled = s->avg_settled && !edges_live_down(step__edges(s)) &&
		       s->avg_decided <= s->avg_target;
	s->result.avg.reached = est <= s->avg_target || settled;
	s->result.avg.estimate = est <= s->avg_target || !settled ? est : s->avg_decided;
	step__reply(s, r < 0 ? r : 0, NULL);
}

void step__average_advance(stepper *s)
{
	/* The time limit passed while a round ran off the loop (the timer
	 * found it running): it ends now, not when that round's messages
	 * come back (they may not, if the neighbours' AVERAGEs are over). */
	if (s->state == STEP_AVERAGE && s->avg_deadline_ms &&
	    uv_now(s->loop) >= s->avg_deadline_ms) {
		finish(s);
		return;
	}
	/* A round that completes at once (an early message) goes on here,
	 * not through the edges' callback. */
	bool landed = false;          /* at most once a call: never a spin */
	/* Rounds go on while no edge's round is awaited: a neighbour that
	 * crashed (its session down) holds its edge's round until it is
	 * back, and the AVERAGE goes on with the others meanwhile (it used
	 * to wait for it until its time limit, running no round). */
	while (s->state == STEP_AVERAGE && !edges_awaited(step__edges(s))) {
		if (!landed && edges_start_waits_landing(step__edges(s))) {
			landed = true;
			if (!land(s))
				return;
		}
		double est = edges_estimate_going(step__edges(s));
		size_t up = edges_up(step__edges(s));
		uint64_t now = uv_now(s->loop);
		/* Reached here: our ROUNDs say so.  An edge's rounds end once
		 * both ends' ROUNDs of its last round said so; the others go on,
		 * so that no neighbour is left waiting for us, and the AVERAGE
		 * ends when all have (the end of a run is the network's). */
		bool reached = s->avg_rounds > 0 && est <= s->avg_target;
		if (reached && !(est <= s->avg_decided))
			s->avg_decided = est;
		edges_average_state(step__edges(s), true, reached, s->avg_rounds > 0);
		size_t going = edges_avg_settle(step__edges(s));
		s->avg_settled = up > 0 && going == 0;
		bool done = s->avg_settled ||
			    (s->avg_max_rounds && s->avg_rounds >= s->avg_max_rounds) ||
			    (s->avg_deadline_ms && now >= s->avg_deadline_ms) ||
			    (up == 0 && (s->avg_rounds > 0 || !s->avg_deadline_ms));
		if (done) {
			finish(s);
			return;
		}
		if (up == 0)
			return;
		/* The schedule's windows go once all of this node's are open. */
		edges_sched_release(step__edges(s), false);
		if (!one_round(s))
			return;
	}
	/* Waiting: a round that waits to be taken back goes now (it came
	 * while the round ran, or before the AVERAGE). */
	step__takeback_soon(s);
	/* Windows that wait for an edge that may still agree: at most
	 * DrainWait without a round here (a neighbour whose own rounds wait
	 * for ours cannot agree: on a ring such waits close a cycle). */
	if (s->state == STEP_AVERAGE && edges_sched_waiting(step__edges(s)) &&
	    !uv_is_active((uv_handle_t *)&s->wait_timer))
		uv_timer_start(&s->wait_timer, step__on_wait_timer, s->drain_wait_ms, 0);
}

/* Back in the AVERAGE after an engine call that returned r; false (and
 * replied) if it failed. */
static bool goes_on(stepper *s, int r)
{
	s->state = STEP_AVERAGE;
	if (r < 0) {
		uv_timer_stop(&s->avg_timer);
		step__reply(s, r, step__error_text(r));
		return false;
	}
	return true;
}

/* A generation agreed with a neighbour waits for the ended one's last
 * update to land: the AVERAGE lands it, as a STEP would (the new
 * generation then starts, edges_finish), rather than wait for a session
 * up to its time limit while its own waiting holds the start back.
 * False if the AVERAGE failed (replied). */
static bool land(stepper *s)
{
	s->state = STEP_RUN;          /* the edges' callbacks wait meanwhile */
	step__write_if_needed(s);
	int r = gsp_node_apply(s->model->node);
	edges_finish(step__edges(s));
	model_write_end(s->model);
	return goes_on(s, r);
}

/* One AVERAGE round's engine step; false when the AVERAGE does not go on
 * here (the step runs off the loop, or failed). */
static bool one_round(stepper *s)
{
	s->avg_rounds++;
	int r = step__run_engine(s, STEP_AVERAGE_RUN);
	if (r == 1)
		return false;
	return goes_on(s, r);
}

/* DrainWait passed with schedule windows held: they go now, and their
 * rounds go out at once (other edges' rounds may be in flight). */
void step__average_stop_waiting(stepper *s)
{
	size_t n = edges_sched_release(step__edges(s), true);
	if (n)
		gsp_info("AVERAGE: %zu schedule window(s) go after DrainWait without a round "
			 "(an edge that could still agree did not)", n);
	if (n && !one_round(s))
		return;
	step__average_advance(s);
}

static void on_average_timer(uv_timer_t *t)
{
	stepper *s = t->data;
	/* A round on the thread pool finishes first; its end checks the
	 * deadline again. */
	if (s->state == STEP_AVERAGE)
		finish(s);
}

int step_average(stepper *s, void *client, const gsp_api_average *req, step_cb cb)
{
	int err = step__start(s, client, cb, true);
	if (err)
		return err;
	s->state = STEP_AVERAGE;
	s->avg_target = req->target;
	s->avg_rounds = 0;
	s->avg_settled = false;
	s->avg_decided = NAN;
	s->avg_max_rounds = req->max_rounds;
	s->avg_deadline_ms = req->time_limit_ms ? uv_now(s->loop) + req->time_limit_ms : 0;
	if (req->time_limit_ms)
		uv_timer_start(&s->avg_timer, on_average_timer, req->time_limit_ms, 0);
	step__average_advance(s);
	return 0;
}

