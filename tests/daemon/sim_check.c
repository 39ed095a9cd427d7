/* sim_check.c: the checker: one schedule run, settled, and its invariant and liveness. */
#include "edgesim.h"



/* A new generation (not one that continues after a restart) is never
 * agreed with a peer whose first RESYNC of the session came after its
 * DETACH: that RESYNC says NO_START.  Checked when the edges change (a
 * start does), so a generation that started and ended within one action
 * and comes back with a restart's records is not taken for a new one. */
void sim_check_started(sim *s, int i)
{
	edge *e = end_of(s, i)->e;
	if (!ep_view(e).live || ep_view(e).generation <= s->gen_max[i])
		return;
	int j = 1 - i;
	ck_assert_msg(!s->detach_noted[j] ||
		      ep_view(end_of(s, j)->e).session_no <= s->detach_session[j],
		      "seed %llu: generation %u started at %c with a peer "
		      "whose model goes", (unsigned long long)s->seed,
		      ep_view(e).generation, i ? 'b' : 'a');
	s->gen_max[i] = ep_view(e).generation;
}


/* ep_end.on_changed: after the core heard the change. */
static void sim_edges_changed(ep_end *x)
{
	sim *s = x->hook_ctx;
	int i = x == &s->p.b;
	sim_note_detach(s, i);
	sim_check_started(s, i);
}


/* Faults over: steps end, a clean session comes up, every frame is
 * delivered and each trainer DRAINs (every completed update applied,
 * nothing more projected), until nothing changes. */
void sim_settle(sim *s)
{
	s->settling = true;
	sim_settle_half_close(s);
	for (int k = 0; k < 8; k++) {
		/* Requests end: an AVERAGE's time limit passes, steps off the
		 * loop end, MaxWait and DrainWait pass; the model of a DETACH
		 * whose edge ended goes (modelgoes); a restarted daemon's
		 * trainer registers. */
		for (int i = 0; i < 2; i++) {
			ep_end *x = end_of(s, i);
			if (x->armed[CORE_TIMER_AVERAGE])
				sim_avg_time_passes(s, i);
			if (s->tr[i].work)
				sim_work_ends(s, i);
			if (x->armed[CORE_TIMER_WAIT])
				ep_fire(x, CORE_TIMER_WAIT);
			if (x->armed[CORE_TIMER_DETACH] && !edges_ending(&x->set))
				sim_detach_timer_fires(s, i);
			sim_after_action(s);
			if (!x->set.attached && sim_free_at_unattached(s, i))
				sim_registers(s, i);
		}
		sim_settle_half_close(s);
		if (!s->p.a.session)
			ep_session_up(&s->p, (uint8_t)(77 + k));
		while (s->p.a.n_out || s->p.b.n_out) {
			if (s->p.a.n_out)
				sim_deliver_one(s, &s->p.a);
			if (s->p.b.n_out)
				sim_deliver_one(s, &s->p.b);
		}
		/* Each trainer DRAINs (through its core: what the edges
		 * completed lands; a round left in flight waits DrainWait). */
		for (int i = 0; i < 2; i++)
			sim_drain_to_end(s, i);
		sim_after_action(s);
	}
	/* A last look at each other: ends that disagree report it. */
	sim_settle_half_close(s);
	if (!s->p.a.session)
		ep_session_up(&s->p, 99);
	while (s->p.a.n_out || s->p.b.n_out) {
		if (s->p.a.n_out)
			sim_deliver_one(s, &s->p.a);
		if (s->p.b.n_out)
			sim_deliver_one(s, &s->p.b);
	}
}


/* Runs schedule `seed`; returns 0 if it holds, 1 if the average moved,
 * 2 if rounds did not resume, 3 if the average moved in a schedule where
 * the protocol says it may (PROTOCOL.md 4.6): a daemon lost its edge
 * records (crash), or an end ended a generation without hearing its
 * peer (a DETACH whose DetachWait passed) while the peer ended it too.
 * A restart with records costs nothing: it must hold. */
const char *sim_layout = "24x16,5";

int sim_run(uint64_t seed, const gsp_config *cfg, unsigned steps, unsigned faults,
	       bool sabotage, bool trace, double *ret_drift, bool *ret_sabotaged,
	       sim_stats *stats)
{
	sim s = {.rng = seed * 0x9e3779b97f4a7c15ull + 1, .faults = faults,
		 .trace = trace, .steps = steps, .cfg = *cfg};
	if (sabotage)
		sim_sabotage_plan(&s, seed);
	s.seed = seed;
	if (faults & FAULT_SWARM)
		sim_swarm_plan(&s);
	ep_init(&s.p, sim_layout, cfg);
	/* The checks hear of the edges' changes after the core; the core runs
	 * over the simulation's ops. */
	for (int i = 0; i < 2; i++) {
		end_of(&s, i)->on_changed = sim_edges_changed;
		end_of(&s, i)->hook_ctx = &s;
		ep_use_ops(end_of(&s, i), &sim_core_ops);
	}
	for (int i = 0; i < 2; i++)
		sim_set_up(&s, end_of(&s, i));
	double sum0 = ep_sum(&s.p);
	double scale = 0;
	for (size_t k = 0; k < s.p.a.n_floats; k++)
		scale += fabs(s.p.a.params[k]) + fabs(s.p.b.params[k]);
	sim_session_up(&s);
	for (unsigned k = 0; k < steps; k++) {
		if (!sim_act(&s)) {
			s.stalled = s.actions + 1;
			if (trace)
				printf("  %4u nothing can happen (a: detaching %d, ending %zu, "
				       "AVERAGE %d; b: detaching %d, ending %zu, AVERAGE %d)\n",
				       s.stalled, s.tr[0].detach_sent, edges_ending(&s.p.a.set),
				       s.p.a.core.state, s.tr[1].detach_sent, edges_ending(&s.p.b.set),
				       s.p.b.core.state);
			for (int i = 0; trace && i < 2; i++) {
				edge_view e = ep_view(end_of(&s, i)->e);
				printf("        %c: completed %llu sent %llu target %llu ending %d "
				       "live %d writing %d takeback_waiting %d in_flight %zu\n",
				       i ? 'b' : 'a', (unsigned long long)e.completed,
				       (unsigned long long)e.sent_round,
				       (unsigned long long)e.target, e.ending, e.live,
				       end_of(&s, i)->set.writing,
				       end_of(&s, i)->set.takeback_waiting,
				       edges_in_flight(&end_of(&s, i)->set));
			}
			break;
		}
		sim_after_action(&s);
	}
	sim_settle(&s);
	double drift = fabs(ep_sum(&s.p) - sum0) / scale;
	*ret_drift = drift;
	*ret_sabotaged = s.sab_action != 0;
	/* The protocol's documented cost: an end that lost its records, or
	 * both ends ending a generation without hearing each other. */
	/* Two ends that both stopped waiting must have found it when they
	 * met again (settle's session): rounds_unreconciled. */
	bool counted = s.p.a.counters.rounds_unreconciled + s.p.b.counters.rounds_unreconciled > 0;
	bool left = (s.left_alone[0] | s.left_alone[1]) != 0 && counted;
	/* Another buffer: the one that went took its own rounds, and a round
	 * in flight then (applied by the buffer that went and not by the
	 * peer's, or the other way) stays one-sided.  Here both buffers are
	 * the same memory, so that shows as drift, which the ends must
	 * have counted. */
	bool departed = s.new_buffers && counted;
	int rc = drift > 1e-6 ? (s.crashes || s.alone[0] || s.alone[1] || left || departed ? 3 : 1) : 0;
	/* A schedule where nothing could happen did not go on by itself. */
	if (s.stalled && rc != 1)
		rc = 2;
	stats->stalled += s.stalled != 0;
	stats->unwritten += s.st.unwritten;
	stats->leave_expired += s.st.leave_expired;
	stats->sigterms += s.st.sigterms;
	/* Liveness: with faults over, a clean session carries rounds. */
	if (!rc) {
		ep_pump(&s.p);
		uint64_t a0 = ep_view(s.p.a.e).rounds_completed;
		uint64_t b0 = ep_view(s.p.b.e).rounds_completed;
		s.tr[0].off_next = s.tr[1].off_next = false;   /* ep_step: on the loop */
		for (int r = 0; r < 5; r++) {
			ck_assert_int_ge(ep_step(&s.p.a), 0);
			ck_assert_int_ge(ep_step(&s.p.b), 0);
			ep_pump(&s.p);
		}
		if (ep_view(s.p.a.e).rounds_completed < a0 + 4 ||
		    ep_view(s.p.b.e).rounds_completed < b0 + 4)
			rc = 2;
		for (int i = 0; rc == 2 && trace && i < 2; i++) {
			edge_view e = ep_view(end_of(&s, i)->e);
			printf("  end %c: session %d state %d live %d gen %u next %u pending %d "
			       "ending %d/%d peer_attached %d attached %d\n", i ? 'b' : 'a',
			       end_of(&s, i)->session, e.state, e.live, e.generation,
			       e.next_generation, e.start_pending, e.ending, e.ending_self,
			       e.peer_attached, end_of(&s, i)->set.attached);
		}
	}
	ep_free(&s.p);
	stats->sighups += s.st.sighups;
	stats->other_weight += s.st.other_weight;
	stats->half_closed += s.st.half_closed;
	stats->late += s.st.late;
	stats->up_busy += s.st.up_busy;
	stats->averages += s.st.averages;
	stats->avg_both += s.st.avg_both;
	stats->avg_rounds += s.st.avg_rounds;
	stats->avg_off += s.st.avg_off;
	stats->avg_holds += s.st.avg_holds;
	stats->windows += s.st.windows;
	stats->released += s.st.released;
	stats->window_faults += s.st.window_faults;
	for (int k = 0; k < 6; k++)
		stats->avg_end[k] += s.st.avg_end[k];
	stats->avg_detach_off += s.st.avg_detach_off;
	stats->avg_takebacks += s.st.avg_takebacks;
	for (int k = 0; k < 5; k++)
		stats->avg_next[k] += s.st.avg_next[k];
	return rc;
}
