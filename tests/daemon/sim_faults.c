/* sim_faults.c: the daemons' faults (kills, restarts, SIGTERM, reloads, removals) and their odds. */
#include "edgesim.h"

/* --faults swarm: the odds a fault draws (edgesim.h). */
static const unsigned swarm_odds[4] = {0, 64, 8, 1};


/* Whether a schedule's window is open at either end. */
static bool window_open_here(sim *s)
{
	for (int i = 0; i < 2; i++) {
		gsp_edge_info info;
		ep_end *x = end_of(s, i);
		if (x->node && gsp_node_edge_info(x->node, 0, &info) == 0 && info.window_end)
			return true;
	}
	return false;
}


/* Whether `fault`, which the scheduler picked and which could happen
 * now, does.  Without swarm: whenever it is listed (and no random
 * number is drawn, so schedules without swarm are what they were). */
bool sim_fires(sim *s, unsigned fault)
{
	if (!(s->faults & fault))
		return false;
	if (s->faults & FAULT_SWARM) {
		unsigned odds = s->odds[__builtin_ctz(fault)];
		if (!odds || pick(s, odds) != 0)
			return false;
	}
	s->st.window_faults += s->faults & FAULT_FINITE && window_open_here(s);
	return true;
}


/* --faults swarm: this schedule's odds for each listed fault. */
void sim_swarm_plan(sim *s)
{
	for (unsigned k = 0; k < SIM_FAULT_KINDS; k++)
		s->odds[k] = s->faults & (1u << k) & ~FAULT_SWARM ? swarm_odds[pick(s, 4)] : 0;
	if (s->trace) {
		printf("swarm odds (bit: one in N, 0 never):");
		for (unsigned k = 0; k < SIM_FAULT_KINDS; k++)
			if (s->faults & (1u << k))
				printf(" %u:%u", 1u << k, s->odds[k]);
		printf("\n");
	}
}


/* A SIGHUP at i (--faults weight): its Weight for the peer
 * (gsp_peer_config.weight, 0: none) and/or its degree (the peers it
 * lists) change.  The live generation keeps its agreed weight; the next
 * session's first RESYNC offers the new one; ROUNDs carry the new
 * degree from the next projection on. */
void sim_sighup(sim *s, int i)
{
	static const float weights[] = {0.0f, 0.1f, 0.25f, 0.3f, 0.45f};
	ep_end *x = end_of(s, i);
	unsigned what = pick(s, 3);
	char text[96];
	if (what != 1)
		x->cfg.weight = weights[pick(s, 5)];
	if (what != 0)
		x->degree = (uint16_t)(1 + pick(s, SIM_MAX_DEGREE));
	snprintf(text, sizeof(text), "SIGHUP: Weight %g, degree %u at", (double)x->cfg.weight,
		 (unsigned)x->degree);
	sim_say(s, text, i);
	s->st.sighups++;
}


/* A reload removes the peer at i: the edge ends its generation with the
 * peer; then the peer goes (its session closes, after_action). */
void sim_removal(sim *s, int i)
{
	sim_say(s, "peer removed (reload) at", i);
	if (edge_end_begin(end_of(s, i)->e, END_REMOVED))
		end_of(s, i)->ended++;
}


/* --faults leavewait: the removed peer has not answered within LeaveWait
 * (mesh's on_leave_expired): the edge ends at i alone, at once, or after
 * a step off the loop or a write it waits for.  The peer comes back at
 * the next session, as a peer added back by a later reload does, and
 * the two ends' RESYNCs must reconcile what each applied. */
void sim_leave_expires(sim *s, int i)
{
	edge *e = end_of(s, i)->e;
	sim_say(s, "LeaveWait passes at", i);
	s->st.leave_expired++;
	s->leave_pending[i] = ep_view(e).generation;
	(void)edge_end_alone(e);
}


/* What a daemon's configuration gives its edge set, at start and at every
 * restart: SIGHUPs may list more peers (FAULT_WEIGHT), so the graph
 * allows that degree in the peer's ROUNDs; with FAULT_FINITE its
 * AVERAGEs offer the pair's finite-time schedule (one step of 1: a round
 * at w = 1/2 leaves both ends at their average); with FAULT_SKIP as well,
 * that round between two the edge sits out (steps of 0: a one-float
 * message, as a ring's matching schedule has). */
void sim_set_up(sim *s, ep_end *x)
{
	static const float pair_schedule[1] = {1.0f};
	static const float skip_schedule[3] = {0.0f, 1.0f, 0.0f};
	if (s->faults & FAULT_WEIGHT)
		edges_configure(&x->set, SIM_MAX_DEGREE, x->set.max_round_change);
	if (s->faults & FAULT_FINITE && s->faults & FAULT_SKIP)
		ck_assert_int_eq(edges_set_schedule(&x->set, skip_schedule, 3, 0, 0), 0);
	else if (s->faults & FAULT_FINITE)
		ck_assert_int_eq(edges_set_schedule(&x->set, pair_schedule, 1, 0, 0), 0);
}


/* The daemon at i is killed and restarts (its edge records gone; the
 * trainer's parameters stay, with what it had applied). */
void sim_crash(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	sim_say(s, "daemon killed and restarted at", i);
	sim_trainer_killed(s, i);
	s->crashes++;
	/* The peer notices later; what the dead end wrote may reach it. */
	if ((s->faults & FAULT_HALFCLOSE) && x->session && x->other->session)
		sim_half_close(s, i, pick(s, x->n_out + 1));
	ep_restart(x, &s->cfg, false, true);
	sim_set_up(s, x);
	/* Its records are gone. */
	for (int k = 0; k < EP_FILES; k++) {
		free(x->files[k].buf);
		x->files[k] = (ep_file){0};
	}
}


/* Whether the daemon at x can have been killed with records version v
 * on disk: v is kept, and the buffer then held what v counts or one
 * write more, which the undo copy undoes (*ret_undo). */
static bool may_die_at(const ep_end *x, unsigned v, bool *ret_undo)
{
	if (v == 0 || x->persists - v >= EP_FILES)
		return false;
	uint64_t w = x->files[v % EP_FILES].writes;
	*ret_undo = x->set.writing || w < x->set.writes;
	return x->set.writing ? w == x->set.writes : w + 1 >= x->set.writes;
}


/* The daemon at i is killed and restarts with its edges' records; its
 * trainer registers again at once or later.  The kill
 * comes at any point since the last action began: the file is then any
 * version written since (no older than what a delivered frame followed),
 * the frames sent before it may reach the peer (they were in the
 * kernel), and a write the file does not count is undone by the client
 * (PROTOCOL.md 5.4). */
void sim_restart(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	unsigned lo = s->floor[i] > x->delivered ? s->floor[i] : x->delivered;
	unsigned options[EP_FILES], n = 0;
	bool undo = false;
	for (unsigned v = lo; v <= x->persists; v++)
		if (may_die_at(x, v, &undo))
			options[n++] = v;
	ck_assert_uint_gt(n, 0);
	unsigned v = options[pick(s, n)];
	(void)may_die_at(x, v, &undo);
	unsigned sendable = 0;
	while (sendable < x->n_out && x->out[sendable].persists <= v)
		sendable++;
	unsigned k = pick(s, sendable + 1);
	if (s->trace)
		printf("       (records version %u of %u%s; %u of %u frames reach the peer)\n",
		       v, x->persists, undo ? ", a write undone" : "", k, x->n_out);
	sim_say(s, "daemon killed and restarted with its records at", i);
	sim_trainer_killed(s, i);
	if ((s->faults & FAULT_HALFCLOSE) && x->session && x->other->session) {
		/* The peer notices later: the k frames wait in the network
		 * meanwhile. */
		sim_half_close(s, i, k);
	} else if (!x->session && x->other->session) {
		/* Closed first already: of the frames it wrote then, those
		 * the kill leaves written. */
		for (unsigned j = k; j < x->n_out; j++)
			free(x->out[j].data);
		x->n_out = k;
	}
	while (k-- && x->session && x->n_out)
		(void)sim_deliver_one(s, x);
	/* Its trainer registers at once, or later (an action of its own). */
	ep_restart_from(x, &s->cfg, &x->files[v % EP_FILES], undo, pick(s, 2));
	sim_set_up(s, x);
	/* The versions after v were never written. */
	x->persists = x->delivered = s->began[i] = v;
}


/* The trainer of a restarted daemon registers again: its sessions start
 * over, as at any REGISTER (GOODBYE "model changed"). */
void sim_registers(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	/* --faults newbuffer: it brings another buffer (a new trainer, or
	 * the same one with a new memfd): the records' generation must end
	 * at their counts, exactly, and not continue into it. */
	if (sim_fires(s, FAULT_NEWBUFFER)) {
		x->later.owner.ino += 2;
		s->new_buffers++;
		sim_say(s, "another buffer registers at", i);
	} else {
		sim_say(s, "the trainer registers again at", i);
	}
	ep_attach(x);
	/* GOODBYE MODEL_CHANGED. */
	if (sim_closes_first(s, i))
		sim_half_close(s, i, pick(s, end_of(s, i)->n_out + 1));
	else if (end_of(s, i)->session)
		ep_end_session(end_of(s, i));
}


/* --faults sigterm: the daemon at i stops on SIGTERM (systemctl restart,
 * an upgrade) and starts again.  As main.c's park: the request under way
 * ends without a reply (the trainer's client sees the connection close
 * and registers again at the next start), no engine work and no write
 * is under way (it waits for them), the records are saved a last time,
 * and the peer gets GOODBYE, which ends no generation; the new daemon
 * reads those records and continues them. */
void sim_sigterm(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	sim_say(s, "SIGTERM: the daemon saves its records, stops and starts again at", i);
	edge_view was = ep_view(x->e);
	sim_trainer_killed(s, i);
	core_halt(&x->core);
	edges_records_changed(&x->set);
	core_persist(&x->core);
	s->st.sigterms++;
	if (sim_closes_first(s, i))
		sim_half_close(s, i, pick(s, x->n_out + 1));
	else if (x->session)
		ep_end_session(x);
	/* Its trainer registers at once, or later. */
	ep_restart(x, &s->cfg, true, pick(s, 2));
	sim_set_up(s, x);
	s->began[i] = x->persists;
	/* The warm start survives: a live generation continues. */
	ck_assert_msg(!was.live || was.ending || ep_view(x->e).generation == was.generation,
		      "seed %llu: SIGTERM ended generation %u at %c", (unsigned long long)s->seed,
		      was.generation, i ? 'b' : 'a');
}
