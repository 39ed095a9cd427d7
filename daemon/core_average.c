/* core_average: AVERAGE (core.h): rounds with no training between them
 * until the consensus estimate reaches the target, every edge's rounds
 * ended at both ends, or a round or time limit passed; the schedule's
 * windows held and let go (edge_sched.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "log.h"
#include "core_impl.h"

static bool one_round(core *c);
static bool land(core *c);

static void finish(core *c)
{
	core__timer_stop(c, CORE_TIMER_AVERAGE);
	core__timer_stop(c, CORE_TIMER_WAIT);
	edges_avg_release(c->edges);
	core__write_if_needed(c);
	int r = gsp_node_apply(c->edges->model.node);
	edges_finish(c->edges);
	core_write_end(c);
	c->result.avg.rounds = c->avg_rounds;
	double est = edges_estimate(c->edges);
	/* Reached: at the target, or every edge's rounds ended with both ends
	 * saying so, and no live generation's session down (a neighbour that
	 * crashed: its last measurement stands, and says how far we are from
	 * it).  Settled, the estimate reported is the one our REACHED was
	 * said at (a held edge's last measurement may be a round past it:
	 * "reached" never comes with an estimate above the target). */
	bool settled = c->avg_settled && !edges_live_down(c->edges) &&
		       c->avg_decided <= c->avg_target;
	c->result.avg.reached = est <= c->avg_target || settled;
	c->result.avg.estimate = est <= c->avg_target || !settled ? est : c->avg_decided;
	core__reply(c, r < 0 ? r : 0, NULL);
}

void core__average_advance(core *c)
{
	/* The time limit passed while a round ran off the loop (the timer
	 * found it running): it ends now, not when that round's messages
	 * come back (they may not, if the neighbours' AVERAGEs are over). */
	if (c->state == STEP_AVERAGE && c->avg_deadline_ms &&
	    core__now(c) >= c->avg_deadline_ms) {
		finish(c);
		return;
	}
	/* A round that completes at once (an early message) goes on here,
	 * not through the edges' callback. */
	bool landed = false;          /* at most once a call: never a spin */
	/* Rounds go on while no edge's round is awaited: a neighbour that
	 * crashed (its session down) holds its edge's round until it is
	 * back, and the AVERAGE goes on with the others meanwhile (it used
	 * to wait for it until its time limit, running no round). */
	while (c->state == STEP_AVERAGE && !edges_awaited(c->edges)) {
		if (!landed && edges_start_waits_landing(c->edges)) {
			landed = true;
			if (!land(c))
				return;
		}
		double est = edges_estimate_going(c->edges);
		size_t up = edges_up(c->edges);
		uint64_t now = core__now(c);
		/* Reached here: our ROUNDs say so.  An edge's rounds end once
		 * both ends' ROUNDs of its last round said so; the others go on,
		 * so that no neighbour is left waiting for us, and the AVERAGE
		 * ends when all have (the end of a run is the network's). */
		bool reached = c->avg_rounds > 0 && est <= c->avg_target;
		if (reached && !(est <= c->avg_decided))
			c->avg_decided = est;
		edges_average_state(c->edges, true, reached, c->avg_rounds > 0);
		size_t going = edges_avg_settle(c->edges);
		/* A neighbour that settled with us and left at once (its DETACH's
		 * ENDING came with its last ROUND) settled all the same. */
		size_t ended = edges_avg_settled_ended(c->edges);
		c->avg_settled = (up > 0 || ended > 0) && going == 0;
		bool done = c->avg_settled ||
			    (c->avg_max_rounds && c->avg_rounds >= c->avg_max_rounds) ||
			    (c->avg_deadline_ms && now >= c->avg_deadline_ms) ||
			    (up == 0 && (c->avg_rounds > 0 || !c->avg_deadline_ms));
		if (done) {
			finish(c);
			return;
		}
		if (up == 0)
			return;
		/* The schedule's windows go once all of this node's are open. */
		edges_sched_release(c->edges, false);
		if (!one_round(c))
			return;
	}
	/* Waiting: a round that waits to be taken back goes now (it came
	 * while the round ran, or before the AVERAGE). */
	core__takeback_soon(c);
	/* Windows that wait for an edge that may still agree: at most
	 * DrainWait without a round here (a neighbour whose own rounds wait
	 * for ours cannot agree: on a ring such waits close a cycle). */
	if (c->state == STEP_AVERAGE && edges_sched_waiting(c->edges) &&
	    !c->ops->timer_active(c->ctx, CORE_TIMER_WAIT))
		core__timer_start(c, CORE_TIMER_WAIT, c->drain_wait_ms);
}

/* Back in the AVERAGE after an engine call that returned r; false (and
 * replied) if it failed. */
static bool goes_on(core *c, int r)
{
	c->state = STEP_AVERAGE;
	if (r < 0) {
		core__timer_stop(c, CORE_TIMER_AVERAGE);
		core__reply(c, r, core__error_text(r));
		return false;
	}
	return true;
}

/* A generation agreed with a neighbour waits for the ended one's last
 * update to land: the AVERAGE lands it, as a STEP would (the new
 * generation then starts, edges_finish), rather than wait for a session
 * up to its time limit while its own waiting holds the start back.
 * False if the AVERAGE failed (replied). */
static bool land(core *c)
{
	core__write_if_needed(c);
	int r = gsp_node_apply(c->edges->model.node);
	edges_finish(c->edges);
	core_write_end(c);
	return goes_on(c, r);
}

/* One AVERAGE round's engine step; false when the AVERAGE does not go on
 * here (the step runs off the loop, or failed). */
static bool one_round(core *c)
{
	c->avg_rounds++;
	int r = core__run_engine(c, STEP_AVERAGE_RUN);
	if (r == 1)
		return false;
	return goes_on(c, r);
}

/* DrainWait passed with schedule windows held: they go now, and their
 * rounds go out at once (other edges' rounds may be in flight). */
void core__average_stop_waiting(core *c)
{
	size_t n = edges_sched_release(c->edges, true);
	if (n)
		gsp_info("AVERAGE: %zu schedule window(s) go after DrainWait without a round "
			 "(an edge that could still agree did not)", n);
	if (n && !one_round(c))
		return;
	core__average_advance(c);
}

void core__average_timer(core *c)
{
	/* A round on the thread pool finishes first; its end checks the
	 * deadline again. */
	if (c->state == STEP_AVERAGE)
		finish(c);
}

int core_average(core *c, void *client, const gsp_api_average *req, step_cb cb)
{
	int err = core__start(c, client, cb, true);
	if (err)
		return err;
	c->state = STEP_AVERAGE;
	c->avg_target = req->target;
	c->avg_rounds = 0;
	c->avg_settled = false;
	c->avg_decided = NAN;
	edges_avg_begin(c->edges);
	c->avg_max_rounds = req->max_rounds;
	c->avg_deadline_ms = req->time_limit_ms ? core__now(c) + req->time_limit_ms : 0;
	if (req->time_limit_ms)
		core__timer_start(c, CORE_TIMER_AVERAGE, req->time_limit_ms);
	core__average_advance(c);
	return 0;
}

