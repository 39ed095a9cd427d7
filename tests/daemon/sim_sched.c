/* sim_sched.c: the scheduler: one random action that is possible now, and the loop turns after it. */
#include "edgesim.h"


void sim_say(sim *s, const char *what, int i)
{
	s->actions++;
	if (s->trace)
		printf("  %4u %s%s\n", s->actions, what, i < 0 ? "" : i ? " b" : " a");
}


/* After each action: the loops' next turns (timers of 0 ms, the
 * trainers' calls), and what the daemon does once an ending it asked for
 * is over: a leaving peer's session closes. */
void sim_after_action(sim *s)
{
	for (int n = 0; n < 1000; n++) {
		bool a = sim_next_turn(s, 0);
		bool b = sim_next_turn(s, 1);
		if (!a && !b)
			break;
		ck_assert_msg(n < 999, "seed %llu: the loop turns for ever",
			      (unsigned long long)s->seed);
	}
	for (int i = 0; i < 2; i++) {
		ep_end *x = end_of(s, i);
		gsp_edge_info info;
		if (x->node && gsp_node_edge_info(x->node, 0, &info) == 0 &&
		    info.window_end && info.window_end != s->win_seen[i]) {
			s->win_seen[i] = info.window_end;
			s->st.windows++;
			if (s->trace)
				printf("       (a schedule window opens at %c: rounds up to %llu)\n",
				       i ? 'b' : 'a', (unsigned long long)info.window_end);
		}
		bool held = ep_view(x->e).avg_held;
		s->st.avg_holds += held && !s->tr[i].held;
		s->tr[i].held = held;
		/* A DETACH holds its write until the model goes (a take-back
		 * by subtraction needs it): one that lost it waits for its
		 * DetachWait if the peer's answer needs one.  Counted (settle
		 * ends every write). */
		if (x->core.detaching && !x->set.writing && !s->unwritten[i] && !s->settling) {
			s->unwritten[i] = true;
			s->st.unwritten++;
			if (s->trace)
				printf("       (the DETACH at %c no longer holds its write)\n",
				       i ? 'b' : 'a');
		}
		if (x->ended != s->ended_seen[i]) {
			s->ended_seen[i] = x->ended;
			if (x->session && !s->tr[i].detach_sent) {
				sim_say(s, "the leaving peer's session closes at", i);
				if (sim_closes_first(s, i))
					sim_half_close(s, i, pick(s, x->n_out + 1));
				else
					ep_end_session(x);
			}
		}
	}
	for (int i = 0; i < 2; i++) {
		edge *e = end_of(s, i)->e, *peer = end_of(s, 1 - i)->e;
		uint32_t g = s->leave_pending[i];
		if (!g || (ep_view(e).live && ep_view(e).generation == g))
			continue;
		s->leave_pending[i] = 0;
		edge_view pv = ep_view(peer);
		if (g < 64 && !(pv.live && pv.generation == g && !pv.ending_self))
			s->left_alone[i] |= 1ull << g;
	}
	for (int i = 0; i < 2; i++) {
		ep_end *x = end_of(s, i);
		/* What the peer of a half-closed session sends is lost. */
		if (!x->session && x->other->session)
			ep_drop_queue(x->other);
		sim_check_started(s, i);
		/* A generation started: with its agreed Weight, which may
		 * not be this end's own. */
		if (ep_view(x->e).live && ep_view(x->e).generation != s->gen_seen[i]) {
			s->gen_seen[i] = ep_view(x->e).generation;
			s->st.other_weight += ep_view(x->e).weight != x->cfg.weight;
		}
	}
}


/* One random action that is possible now; false if none is (every end
 * waits for something that never comes: a DETACH whose answer cannot
 * come, say, for which only its DetachWait is left). */
bool sim_act(sim *s)
{
	for (int k = 0; k < 2; k++) {
		s->floor[k] = s->began[k];
		s->began[k] = end_of(s, k)->persists;
	}
	/* Without the faults that came later, the choices (and so every
	 * schedule of the seed) are what they were before them. */
	unsigned kinds = !s->faults ? 8 : s->faults & FAULT_AVERAGE ? 16 :
			 s->faults & (FAULT_WEIGHT | FAULT_HALFCLOSE) ? 15 : 13;
	for (unsigned tries = 0;; tries++) {
		if (tries == 100000)
			return false;
		int i = (int)pick(s, 2);
		ep_end *x = end_of(s, i);
		switch (pick(s, kinds)) {
		case 0: case 1:
			if (sim_avg_next(s, i))
				return true;
			if (sim_trainer_free(s, i)) {
				sim_request_step(s, i, false);
				return true;
			}
			break;
		case 2:
			if (sim_avg_next(s, i))
				return true;
			if (sim_trainer_free(s, i)) {
				sim_request_step(s, i, true);
				return true;
			}
			break;
		case 3:
			/* The engine step off the loop ends; or time passes:
			 * MaxWait for a STEP, DrainWait for a DRAIN or an
			 * AVERAGE's held windows. */
			if (s->tr[i].work && (!x->armed[CORE_TIMER_WAIT] || pick(s, 2))) {
				sim_work_ends(s, i);
				return true;
			}
			if (x->armed[CORE_TIMER_WAIT]) {
				sim_say(s, "MaxWait or DrainWait passes at", i);
				ep_fire(x, CORE_TIMER_WAIT);
				return true;
			}
			break;
		case 4: case 5: case 6: case 7:
			if (x->n_out) {
				sim_deliver(s, i);
				return true;
			}
			/* A new session needs both ends' old one down.  In the
			 * daemon one may come up while a step runs off the
			 * loop (--faults upbusy): the frames of the old one it
			 * kept are then used quietly (edge_after_busy, by
			 * session_no).  Without it, it waits for the step. */
			if (!x->session && !x->other->session &&
			    (sim_quiet(s) || (s->faults & FAULT_UPBUSY))) {
				sim_session_up(s);
				return true;
			}
			break;
		case 8:
			if (x->session && sim_fires(s, FAULT_RESET)) {
				sim_reset(s);
				return true;
			}
			break;
		case 9:
			/* --faults modelgoes: the model goes some actions after
			 * its edge ended. */
			if ((s->faults & FAULT_MODELGOES) && x->armed[CORE_TIMER_DETACH] &&
			    !edges_ending(&x->set)) {
				sim_detach_timer_fires(s, i);
				return true;
			}
			if (sim_avg_next(s, i))
				return true;
			if (sim_trainer_free(s, i) && sim_fires(s, FAULT_DETACH)) {
				sim_detach_begin(s, i);
				return true;
			}
			if (s->tr[i].detach_sent && x->armed[CORE_TIMER_DETACH] &&
			    edges_ending(&x->set) && (s->faults & FAULT_TIMEOUT) &&
			    pick(s, 4) == 0 && sim_fires(s, FAULT_TIMEOUT)) {
				sim_detach_timer_fires(s, i);
				return true;
			}
			break;
		case 10:
			if (sim_free_at(s, i) && ep_view(x->e).live &&
			    !ep_view(x->e).ending_self && sim_fires(s, FAULT_REMOVE)) {
				sim_removal(s, i);
				return true;
			}
			/* The timer fires on the loop, also while a step runs
			 * off it. */
			if (ep_view(x->e).live && ep_view(x->e).ending_self == END_REMOVED &&
			    (s->faults & FAULT_LEAVEWAIT) && pick(s, 2) == 0 &&
			    sim_fires(s, FAULT_LEAVEWAIT)) {
				sim_leave_expires(s, i);
				return true;
			}
			break;
		case 11:
			if (sim_free_at(s, i) && sim_fires(s, FAULT_CRASH)) {
				sim_crash(s, i);
				return true;
			}
			break;
		case 12:
			/* A SIGTERM or a kill: each in half the cases where
			 * both are listed. */
			if ((s->faults & FAULT_SIGTERM) && pick(s, 2) && sim_free_at(s, i) &&
			    !x->set.writing && sim_fires(s, FAULT_SIGTERM)) {
				sim_sigterm(s, i);
				return true;
			}
			if (sim_free_at(s, i) && sim_fires(s, FAULT_RESTART)) {
				sim_restart(s, i);
				return true;
			}
			/* A restarted daemon's trainer registers again. */
			if (!x->set.attached && sim_free_at_unattached(s, i)) {
				sim_registers(s, i);
				return true;
			}
			break;
		case 13:
			/* A reload comes after a step that runs (mesh_reload). */
			if (!s->tr[i].work && sim_fires(s, FAULT_WEIGHT)) {
				sim_sighup(s, i);
				return true;
			}
			break;
		case 14:
			if (!(s->faults & FAULT_HALFCLOSE))
				break;
			if (x->session && x->other->session && sim_fires(s, FAULT_HALFCLOSE)) {
				unsigned keep = pick(s, x->n_out + 1);
				sim_say(s, "session closes first at", i);
				sim_half_close(s, i, keep);
				return true;
			}
			if (x->session && !x->other->session && !x->other->n_out) {
				sim_peer_notices(s, i);
				return true;
			}
			break;
		case 15:
			if (!(s->faults & FAULT_AVERAGE))
				break;
			if (sim_avg_next(s, i))
				return true;
			/* An AVERAGE runs: its time limit passes, or (avgdetach)
			 * its trainer gives up first (a second DETACH does
			 * nothing); else its rounds go on. */
			if (s->tr[i].averages) {
				unsigned what = pick(s, 8);
				if (what < 2 && x->armed[CORE_TIMER_AVERAGE] &&
				    sim_fires(s, FAULT_AVERAGE)) {
					sim_avg_time_passes(s, i);
					return true;
				}
				if (what == 2 && !s->tr[i].detach_sent && !s->tr[i].detach_due &&
				    sim_fires(s, FAULT_AVGDETACH)) {
					sim_avg_detach(s, i);
					return true;
				}
				break;
			}
			if (sim_trainer_free(s, i)) {
				sim_avg_start(s, i);
				return true;
			}
			break;
		}
	}
}
