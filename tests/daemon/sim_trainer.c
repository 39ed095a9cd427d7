/* sim_trainer.c: each end's trainer and the daemon around its node core (the core's ops). */
#include "edgesim.h"


/* --sabotage, the checker's own test.  The bug is planned from the seed
 * by a stream of its own (splitmix64), so a schedule's actions are the
 * same with and without it, and a replay of the seed plants it again. */
void sim_sabotage_plan(sim *s, uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	s->sab_armed = z % 8 == 0;
	s->sab_end = (int)((z >> 8) & 1);
	s->sab_from = 1 + (unsigned)((z >> 16) % (s->steps / 4 + 1));
}


/* The engine's part of a STEP at end i: apply the completed round, project
 * the next.  Sabotaged (once per planned schedule), the end then puts its
 * parameters back as they were before the apply, as a daemon bug that
 * loses an update would: the edge counts the round as applied, the peer
 * applied its half, and nothing is reported. */
static int engine_step(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	gsp_edge_info info;
	if (!s->sab_armed || s->sab_action || i != s->sab_end || s->actions < s->sab_from ||
	    gsp_node_edge_count(x->node) == 0 ||
	    gsp_node_edge_info(x->node, edge_index(x->e), &info) != 0 ||
	    info.state != GSP_EDGE_COMPLETED)
		return gsp_node_step(x->node);
	size_t bytes = x->n_floats * sizeof(float);
	float *before = malloc(bytes);
	ck_assert_ptr_nonnull(before);
	memcpy(before, x->params, bytes);
	int r = gsp_node_step(x->node);
	double lost = 0;
	for (size_t k = 0; k < x->n_floats; k++)
		lost += (double)x->params[k] - before[k];
	memcpy(x->params, before, bytes);
	free(before);
	s->sab_action = s->actions;
	if (s->trace)
		printf("       (sabotage: action %u, the step at %c, loses the update of round %"
		       PRIu64 ", sum %.3g)\n", s->actions, i ? 'b' : 'a', info.round, lost);
	return r;
}


/* ---- the core's ops: the daemon, as the scheduler runs it -------------- */

static sim *sim_of(void *ctx, int *ret_i)
{
	ep_end *x = ctx;
	sim *s = x->hook_ctx;
	*ret_i = x == &s->p.b;
	return s;
}


static int sim_engine_step(void *ctx)
{
	int i;
	sim *s = sim_of(ctx, &i);
	return engine_step(s, i);
}


/* A STEP runs off the loop as the trainer's request was drawn; an
 * AVERAGE's rounds, each as drawn then. */
static bool sim_offloads(void *ctx)
{
	int i;
	sim *s = sim_of(ctx, &i);
	bool off = s->tr[i].averages ? pick(s, 2) : s->tr[i].off_next;
	if (off && s->tr[i].averages && s->trace)
		printf("       (AVERAGE at %c: a round off the loop)\n", i ? 'b' : 'a');
	return off;
}


/* The engine work runs now (its undo copy first if it is to take it); the
 * step ends at a later action (work_ends), the end busy meanwhile. */
static bool sim_offload(void *ctx, bool copy, uint64_t write_seq)
{
	ep_end *x = ctx;
	int i;
	sim *s = sim_of(ctx, &i);
	if (copy)
		ep_undo_begin(x, write_seq);
	s->tr[i].work = true;
	s->tr[i].work_result = engine_step(s, i);
	s->st.avg_off += x->core.state == STEP_AVERAGE_RUN;
	return true;
}


const core_ops sim_core_ops = {
	.now_ms = ep_now_ms, .timer_start = ep_timer_start, .timer_stop = ep_timer_stop,
	.timer_active = ep_timer_active, .engine_step = sim_engine_step,
	.offloads = sim_offloads, .offload = sim_offload, .undo_begin = ep_undo_begin,
	.undo_end = ep_nothing, .save_records = ep_save_op,
	.release_model = ep_nothing, .idle = ep_nothing, .bytes = ep_bytes,
};


/* ---- the trainer's requests -------------------------------------------- */

/* The DETACH at i began (the core's begin_detach): from this session on,
 * its RESYNCs say NO_START (check_started). */
void sim_note_detach(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	if (x->core.detaching && !s->detach_noted[i]) {
		s->detach_noted[i] = true;
		s->detach_session[i] = ep_view(x->e).session_no;
	}
}


/* The trainer heard from the daemon at i: the records it had written
 * then are on the disk (a reply follows their save), so a kill from now
 * on leaves no older version. */
static void trainer_heard(sim *s, int i)
{
	s->began[i] = end_of(s, i)->persists;
}


/* A STEP, DRAIN or AVERAGE replied. */
static void on_reply(void *client, const step_result *r)
{
	int i;
	sim *s = sim_of(client, &i);
	sim_trainer *t = &s->tr[i];
	trainer_heard(s, i);
	static const char *whys[] = {"reached", "its round limit", "its time limit",
				     "its time limit, after a round off the loop", "no session",
				     "-ECANCELED: the trainer detaches"};
	t->waits = false;
	if (t->drain_detach) {
		t->drain_detach = false;
		t->detach_due = true;
	}
	if (!r->average)
		return;
	t->averages = false;
	int why = r->err == -ECANCELED ? AVEND_CANCELLED
		: r->avg.reached ? AVEND_SETTLED
		: t->expired_off ? AVEND_TIME_OFF
		: t->expired ? AVEND_TIME
		: t->max_rounds && r->avg.rounds >= t->max_rounds ? AVEND_ROUNDS
		: AVEND_NOSESSION;
	/* "reached" never comes with an estimate above the target (PROTOCOL.md
	 * 5.3, AVERAGE). */
	ck_assert_msg(!r->avg.reached || r->avg.estimate <= t->target,
		      "seed %llu: AVERAGE at %c reached with estimate %g above its "
		      "target %g", (unsigned long long)s->seed, i ? 'b' : 'a',
		      r->avg.estimate, t->target);
	s->st.avg_end[why]++;
	s->st.avg_rounds += r->avg.rounds;
	if (why != AVEND_CANCELLED)
		t->next = NEXT_DETACH_DRAIN + (int)pick(s, 4);
	if (s->trace)
		printf("       (AVERAGE at %c ends after %u rounds: %s)\n", i ? 'b' : 'a',
		       r->avg.rounds, whys[why]);
}


/* The DETACH is answered: the model went; the trainer registers the same
 * parameters again (register_again, after the action). */
static void on_detached(void *client)
{
	int i;
	sim *s = sim_of(client, &i);
	s->tr[i].detach_sent = false;
	s->tr[i].register_due = true;
	trainer_heard(s, i);
	s->detach_noted[i] = false;
}


/* A STEP at i, on the loop or off it. */
void sim_request_step(sim *s, int i, bool off)
{
	ep_end *x = end_of(s, i);
	sim_say(s, off ? "step off the loop begins" : "step", i);
	s->tr[i].off_next = off;
	s->tr[i].waits = true;
	ck_assert_int_eq(core_step(&x->core, x, 0, on_reply), 0);
	sim_note_detach(s, i);
}


/* The trainer at i DRAINs as the checker settles the run, if it can make
 * a request: the loop turns (DrainWait passing) until the reply. */
void sim_drain_to_end(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	if (!sim_trainer_free(s, i))
		return;
	s->tr[i].off_next = false;
	s->tr[i].waits = true;
	ck_assert_int_eq(core_step(&x->core, x, GSP_STEP_DRAIN, on_reply), 0);
	for (int n = 0; s->tr[i].waits; n++) {
		ck_assert_msg(n < 100, "seed %llu: a DRAIN never replied",
			      (unsigned long long)s->seed);
		if (!sim_next_turn(s, i) && x->armed[CORE_TIMER_WAIT])
			ep_fire(x, CORE_TIMER_WAIT);
	}
}

/* The engine step off the loop at i ends (libuv's work_done). */
void sim_work_ends(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	sim_say(s, x->core.state == STEP_AVERAGE_RUN ? "AVERAGE round off the loop ends"
						  : "step off the loop ends", i);
	s->tr[i].work = false;
	core_work_done(&x->core, s->tr[i].work_result);
	sim_note_detach(s, i);
}


/* The trainer at i asks to DETACH: its edge ends its generation with the
 * peer (frames the scheduler delivers), then the model goes. */
static void detach_request(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	s->tr[i].detach_sent = true;
	s->unwritten[i] = false;
	core_detach(&x->core, x, on_detached);
	sim_note_detach(s, i);
}


static void detach_begin_how(sim *s, int i, bool drain)
{
	ep_end *x = end_of(s, i);
	/* The documented end is a DRAIN first, and the DETACH at its reply;
	 * a DETACH without it lands, inside its write, what an ended
	 * generation counts (edges_detach). */
	if (!drain) {
		sim_say(s, "trainer asks to detach (no DRAIN) at", i);
		detach_request(s, i);
		return;
	}
	sim_say(s, "trainer drains and asks to detach at", i);
	s->tr[i].drain_detach = true;
	s->tr[i].waits = true;
	s->tr[i].off_next = false;
	ck_assert_int_eq(core_step(&x->core, x, GSP_STEP_DRAIN, on_reply), 0);
}


void sim_detach_begin(sim *s, int i)
{
	detach_begin_how(s, i, pick(s, 2));
}


/* The DETACH's timer fires at i: the edge ended (on the loop's next turn,
 * or with modelgoes some actions later), or DetachWait passed (timeout:
 * the edge ends at what this end applied). */
void sim_detach_timer_fires(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	bool timeout = edges_ending(&x->set) > 0;
	sim_say(s, timeout ? "DetachWait passes at" : "the model goes at", i);
	s->alone[i] += timeout;
	ep_fire(x, CORE_TIMER_DETACH);
}


/* The trainer whose model went registers again (GOODBYE MODEL_CHANGED:
 * the session ends, at this end first with halfclose). */
static void register_again(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	sim_say(s, "trainer detached and registers again at", i);
	s->tr[i].register_due = false;
	/* An AVERAGE that went on during the DETACH (its round was off the
	 * loop when it came) ended with the model: a core left averaging
	 * would refuse the next model's requests (-EBUSY). */
	ck_assert_msg(x->core.state == STEP_IDLE || x->core.state == STEP_REPLY,
		      "seed %llu: an AVERAGE outlived its model", (unsigned long long)s->seed);
	if (sim_closes_first(s, i))
		sim_half_close(s, i, pick(s, x->n_out + 1));
	ep_register_again(x, &s->cfg);
}


/* The loop's next turn at i: a timer of 0 ms fires (the core looks at
 * the edges' changes, a take-back in a write of its own, a reply, the
 * model that goes), or the trainer makes
 * the call a reply asked for.  False if nothing did. */
bool sim_next_turn(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	sim_trainer *t = &s->tr[i];
	if (x->armed[CORE_TIMER_CHANGED]) {
		ep_fire(x, CORE_TIMER_CHANGED);
	} else if (x->armed[CORE_TIMER_TAKEBACK]) {
		if (s->trace)
			printf("       (a round taken back at %c in a write of its own: its "
			       "request waits)\n", i ? 'b' : 'a');
		s->st.avg_takebacks += x->core.state == STEP_AVERAGE;
		ep_fire(x, CORE_TIMER_TAKEBACK);
	} else if (x->armed[CORE_TIMER_REPLY]) {
		ep_fire(x, CORE_TIMER_REPLY);
	} else if (x->armed[CORE_TIMER_DETACH] && !edges_ending(&x->set) &&
		   !(s->faults & FAULT_MODELGOES)) {
		sim_detach_timer_fires(s, i);
	} else if (t->detach_due) {
		t->detach_due = false;
		sim_say(s, "the DRAIN replied; trainer asks to detach at", i);
		detach_request(s, i);
	} else if (t->register_due) {
		register_again(s, i);
	} else {
		return false;
	}
	sim_note_detach(s, i);
	return true;
}


/* The end at i can take a fault: no step off the loop, no DETACH under
 * way, its model attached. */
bool sim_free_at(const sim *s, int i)
{
	const sim_trainer *t = &s->tr[i];
	return !t->work && !t->detach_sent && !t->detach_due && !t->register_due &&
	       end_of((sim *)s, i)->set.attached;
}


/* The trainer at i can make a request: free, none under way. */
bool sim_trainer_free(const sim *s, int i)
{
	const ep_end *x = end_of((sim *)s, i);
	return sim_free_at(s, i) && !s->tr[i].waits && x->core.state == STEP_IDLE &&
	       !x->armed[CORE_TIMER_REPLY];
}


/* The daemon at i is killed: the trainer's request fails with it (it
 * registers again). */
void sim_trainer_killed(sim *s, int i)
{
	if (s->tr[i].averages && s->trace)
		printf("       (its AVERAGE ends with the daemon)\n");
	s->tr[i] = (sim_trainer){0};
	s->detach_noted[i] = false;
}


/* ---- AVERAGE (--faults average) ----------------------------------------
 * The trainer at an end calls AVERAGE (gossip-only rounds) with a time
 * limit, and in a third of them a round limit too; the core runs it.
 * Its time limit passes at a random action: the AVERAGE then ends at
 * once, or, while its round runs off the loop, when that round ends.
 * Or (avgdetach) the trainer gives up first and DETACHes: the AVERAGE
 * ends with -ECANCELED, but a DETACH that comes while its round runs off
 * the loop waits for the round.  After its reply the trainer's next
 * request is a DETACH (with or without a DRAIN first), a STEP or another
 * AVERAGE; the peer may be averaging too, stepping or idle. */

void sim_avg_start(sim *s, int i)
{
	static const double targets[] = {0.0, 1e-4, 1e9};
	ep_end *x = end_of(s, i);
	sim_trainer *t = &s->tr[i];
	char text[128];
	gsp_api_average req = {.target = targets[pick(s, 3)], .time_limit_ms = 1000};
	req.max_rounds = pick(s, 3) ? 0 : 1 + pick(s, 6);
	snprintf(text, sizeof(text), "trainer asks to AVERAGE (target %g, round limit %u) at",
		 req.target, (unsigned)req.max_rounds);
	sim_say(s, text, i);
	s->st.averages++;
	s->st.avg_both += s->tr[!i].averages;
	t->waits = t->averages = true;
	t->expired = t->expired_off = false;
	t->max_rounds = req.max_rounds;
	t->target = req.target;
	ck_assert_int_eq(core_average(&x->core, x, &req, on_reply), 0);
	sim_note_detach(s, i);
}


/* Its time limit passes (the core's timer; a round off the loop sees it
 * as it ends). */
void sim_avg_time_passes(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	bool off = x->core.state == STEP_AVERAGE_RUN;
	sim_say(s, off ? "AVERAGE's time limit passes during its round off the loop at"
		   : "AVERAGE's time limit passes at", i);
	s->tr[i].expired = true;
	s->tr[i].expired_off = off;
	ep_fire(x, CORE_TIMER_AVERAGE);
}


/* The trainer gives up on its AVERAGE and DETACHes. */
void sim_avg_detach(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	bool off = core_busy(&x->core);
	sim_say(s, off ? "trainer asks to detach during its AVERAGE's round off the loop at"
		   : "trainer asks to detach during its AVERAGE at", i);
	s->st.avg_detach_off += off;
	detach_request(s, i);
}


/* The trainer's request after its AVERAGE, as its next one. */
bool sim_avg_next(sim *s, int i)
{
	sim_trainer *t = &s->tr[i];
	if (!t->next || !sim_trainer_free(s, i))
		return false;
	int n = t->next;
	t->next = NEXT_NONE;
	s->st.avg_next[n]++;
	switch (n) {
	case NEXT_DETACH_DRAIN:
	case NEXT_DETACH:
		detach_begin_how(s, i, n == NEXT_DETACH_DRAIN);
		break;
	case NEXT_STEP:
		sim_request_step(s, i, pick(s, 2));
		break;
	default:
		sim_avg_start(s, i);
		break;
	}
	return true;
}


/* A restarted daemon's trainer may register: nothing of the last model
 * is under way. */
bool sim_free_at_unattached(const sim *s, int i)
{
	const sim_trainer *t = &s->tr[i];
	return !t->work && !t->detach_sent && !t->detach_due && !t->register_due;
}


bool sim_quiet(const sim *s)
{
	return !s->tr[0].work && !s->tr[1].work;
}
