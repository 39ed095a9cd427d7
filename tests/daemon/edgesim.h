/*
 * A deterministic simulation of the edge protocol (daemon/edge.h), in
 * the manner of FoundationDB's simulation tests and TigerBeetle's VOPR:
 * two daemons' node cores (daemon/core.h: the code gossipd runs, with its
 * edge sets over real engine nodes), a simulated transport
 * (tests/daemon/edgepair.h: frames wait in queues), a simulated disk and
 * loop (the core's ops: records versions, timers the scheduler fires) and
 * a seeded scheduler that picks, at every point, what happens next: a
 * trainer's STEP at either end, a STEP whose engine work runs "off the
 * loop" (the end is busy until the scheduler ends it), one frame
 * delivered, and with --faults, a session reset (frames in flight lost)
 * followed later by a new session, a trainer that detaches and registers
 * again (its end's generation gone), a reload that removes the peer
 * (the generation ends at that end) until the next session, a DETACH
 * whose DetachWait passes, a DETACH whose model goes some actions after
 * its edge ended (modelgoes: a session may come up meanwhile, and no
 * generation may be agreed with it), a daemon killed and restarted with or
 * without its edges' records (with newbuffer, its trainer may register
 * another buffer then, which the records do not describe; a power loss
 * is such a kill: the records are synced before the frames they promise
 * leave, daemon/slotfile.c, so the disk then holds a version the restart
 * may pick), a daemon stopped by SIGTERM and started again (sigterm: its
 * generations continue), a SIGHUP that changes one end's Weight for
 * the peer or its degree (weight), and a session that ends at one end
 * first (halfclose: its GOODBYE, a reload, a dead timeout, a kill): a
 * random prefix of the frames it had written still reaches the peer,
 * the peer's frames to it are lost, and the peer's session ends later,
 * possibly after other actions there.  No frame is ever delivered to an
 * end whose session is down.  With upbusy, a new session may come up
 * while a step runs off the loop (the daemon does not wait for the step:
 * the old session's frames that came during it are then used quietly,
 * edge_after_busy); without it, sessions come up between steps only.
 * Time passes at random actions too: a STEP's MaxWait, a DRAIN's
 * DrainWait.  With average, a trainer calls AVERAGE with a time limit (and in some
 * schedules a round limit): the core runs its rounds
 * (the AVERAGE section below), and the limit passes at a random action,
 * also while a round runs off the loop; after it the trainer DETACHes
 * (with or without a DRAIN), STEPs or AVERAGEs again.  With avgdetach as
 * well, the trainer may give up first and DETACH during the AVERAGE.
 * A schedule that comes to a point where nothing can happen (every end
 * waits, as for a DETACH's answer that cannot come) counts as one whose
 * rounds did not resume.
 *
 * The files, by job (TigerBeetle splits its simulator the same way):
 * sim_main.c the command line and the sweep, sim_sched.c the scheduler
 * (one random action, the loop's turns after it), sim_net.c the network
 * and its faults, sim_faults.c the daemons' faults, sim_trainer.c the
 * trainers and the ops their daemons' cores run over, sim_check.c one
 * schedule run, settled and checked.
 *
 * After each schedule the invariant is checked: once every frame is
 * delivered and both ends have applied what they completed, the pair's
 * sum equals the initial sum to float rounding (gossip never moves the
 * average).  Then liveness: with faults over, rounds resume at both ends.
 * A failing seed prints the command that replays it with its trace.
 *
 * --sabotage is the checker's own test (tests/daemon/test_sim_replay.py):
 * it plants a bug in the simulated daemon, not in the checker.  In one
 * schedule in 8, chosen from the seed, one end loses the update of one
 * round its STEP applied, and nothing reports it; the checker must find
 * the drift and the replay must repeat it.
 *
 * usage: test-daemon-sim [--seeds N] [--seed S] [--steps N]
 *                        [--faults none|all|reset,detach,remove,timeout,restart,crash,
 *                                  newbuffer,weight,halfclose,upbusy,average,avgdetach,
 *                                  modelgoes,leavewait,finite,skip,sigterm,swarm]
 *                        [--method exact|powergossip] [--min-windows W F]
 *                        [--expect-violations] [--sabotage] [--trace]
 * With --min-windows the sweep also fails unless its schedules opened at
 * least W windows and had at least F faults come while one was open:
 * the faults' coverage of the windows, which a change of odds could lose
 * quietly.
 * Exit 0 when every schedule holds but where a crash or an expired
 * DetachWait may cost a round (or, with --expect-violations and --faults
 * crash, when such schedules do move the average: the checker's own
 * test), else 1.
 */
#ifndef GSP_TEST_EDGESIM_H
#define GSP_TEST_EDGESIM_H

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Check's assertions record the location of every one that holds
 * (_mark_point: a message written to its pipe, one system call each):
 * over the sweeps' millions of checks that was their main cost, most of
 * it kernel time, more than half of a sweep's time under ASan.  Here a
 * check that holds costs nothing; one that fails still fails the test
 * with its message (a crash then names the test, not the last check
 * passed: the failing seed's replay traces it). */
#undef _mark_point
#define _mark_point(file, line) ((void)0)

#include "edgepair.h"
#include "log.h"

/* Faults a schedule may inject (--faults). */
enum { FAULT_RESET = 1, FAULT_DETACH = 2, FAULT_REMOVE = 4, FAULT_CRASH = 8,
       FAULT_TIMEOUT = 16, FAULT_RESTART = 32, FAULT_WEIGHT = 64,
       FAULT_HALFCLOSE = 128, FAULT_UPBUSY = 256, FAULT_AVERAGE = 512,
       FAULT_AVGDETACH = 1024, FAULT_MODELGOES = 2048, FAULT_LEAVEWAIT = 4096,
       FAULT_FINITE = 8192, FAULT_SKIP = 16384, FAULT_SWARM = 32768,
       FAULT_NEWBUFFER = 65536, FAULT_SIGTERM = 131072 };

/* --faults swarm (swarm testing: TigerBeetle's VOPR draws its fault
 * probabilities per seed): each schedule draws, for each fault it lists,
 * how often that fault happens when the scheduler picks it: never, one
 * time in 64, one in 8, or always.  At the flat rates a finite
 * schedule's window almost never opens among faults (both AVERAGEs must
 * agree over several actions with none of them); a schedule whose resets
 * are rare but whose restarts are frequent opens windows and has faults
 * land inside them. */
#define SIM_FAULT_KINDS 18      /* bit 15, swarm itself, draws none */


/* The degrees a SIGHUP may list (FAULT_WEIGHT): the set's max_degree
 * allows them at both ends. */
#define SIM_MAX_DEGREE 4

/* What a sweep's schedules did of the faults that need a look to be
 * sure they were exercised (printed with the summary). */
typedef struct sim_stats {
	unsigned long long sighups;      /* Weight or degree reloaded */
	unsigned long long other_weight; /* generations started at an end with
					  * an agreed Weight other than its own */
	unsigned long long half_closed;  /* sessions down at one end first */
	unsigned long long late;         /* frames delivered after their
					  * sender's session went down */
	unsigned long long up_busy;      /* sessions up during a step off the loop */
	/* --faults average */
	unsigned long long averages;     /* AVERAGEs called */
	unsigned long long avg_both;     /* of them while the peer's ran */
	unsigned long long avg_rounds;   /* their rounds */
	unsigned long long avg_off;      /* of them off the loop */
	unsigned long long avg_holds;    /* edges held: both ends' ROUNDs said
					  * REACHED (edges_avg_settle) */
	unsigned long long windows;      /* --faults finite: windows opened at
					  * an end, and let go (released) */
	unsigned long long released;
	unsigned long long window_faults; /* faults that came while a window was
					   * open at an end */
	unsigned long long avg_end[6];   /* how they ended (AVEND_*) */
	unsigned long long avg_detach_off; /* DETACHes that waited for a round
					    * off the loop (the AVERAGE went on) */
	unsigned long long avg_takebacks;  /* rounds taken back in a write of
					    * their own while an AVERAGE waited */
	unsigned long long avg_next[5];  /* the trainer's request after (NEXT_*) */
	unsigned long long stalled;      /* schedules where nothing could happen */
	unsigned long long leave_expired; /* LeaveWaits that passed (leavewait) */
	unsigned long long sigterms;     /* daemons stopped by SIGTERM (sigterm) */
	unsigned long long unwritten;    /* DETACHes whose write (begin_detach's)
					  * ended before the model went */
} sim_stats;


/* ---- the trainer, and its daemon's node core ---------------------------
 * Each end's daemon runs the node core (daemon/core.h) over its edge set,
 * the code gossipd runs: the trainer's requests are core calls (STEP, on
 * the loop or off it; DRAIN; AVERAGE; DETACH), and the core's loop is
 * this scheduler.  A timer of 0 ms (a reply, a take-back in a write of
 * its own, the model that goes once its edges ended) fires after the
 * action that armed it, as on the loop's next turn; with modelgoes, the
 * model goes at a later action instead.  Time passes only where a fault
 * says so: MaxWait or DrainWait at a random action, an AVERAGE's time
 * limit (--faults average), a DetachWait (--faults timeout); a timer that
 * fires moves its end's clock to its time.  An engine step off the loop
 * (offloads) runs its engine work as it begins and ends at a later action
 * (core_work_done); frames that come meanwhile wait, as in the daemon. */

/* How an AVERAGE ended (its reply). */
enum { AVEND_SETTLED, AVEND_ROUNDS, AVEND_TIME, AVEND_TIME_OFF, AVEND_NOSESSION,
       AVEND_CANCELLED };

/* The trainer's request after an AVERAGE. */
enum { NEXT_NONE, NEXT_DETACH_DRAIN, NEXT_DETACH, NEXT_STEP, NEXT_AVERAGE };


typedef struct sim_trainer {
	bool waits;              /* a STEP, DRAIN or AVERAGE has no reply yet */
	bool averages;           /* it is an AVERAGE */
	unsigned max_rounds;     /* its round limit (0: none) */
	double target;           /* its target */
	bool expired;            /* its time limit passed */
	bool expired_off;        /* ... during a round off the loop */
	bool drain_detach;       /* a DRAIN whose reply a DETACH follows */
	bool detach_due;         /* that DETACH, after the action */
	bool detach_sent;        /* a DETACH whose answer has not come */
	bool register_due;       /* the model went: it registers again */
	int next;                /* the request after an AVERAGE (NEXT_*) */
	bool off_next;           /* the core's next engine step runs off the loop */
	bool work;               /* an engine step runs off the loop */
	int work_result;
	bool held;               /* the edge was held (avg_held) last we looked */
} sim_trainer;


typedef struct sim {
	uint64_t rng;
	unsigned faults;
	bool trace;
	gsp_config cfg;
	unsigned steps;
	edgepair p;
	uint64_t win_seen[2];    /* the last window counted at each end */
	unsigned odds[SIM_FAULT_KINDS]; /* --faults swarm: fault bit k happens
					 * one time in odds[k] (0: never) */
	/* A DETACH began at the end (the core's begin_detach), in that
	 * session (note_detach). */
	bool detach_noted[2];
	uint64_t detach_session[2];
	int ended_seen[2];
	unsigned actions;
	unsigned crashes;
	unsigned new_buffers;    /* another buffer registered (newbuffer) */
	unsigned alone[2];       /* generations ended here without the peer:
				  * an expired DetachWait */
	/* The generations (bit g, below 64) that ended at an end after its
	 * LeaveWait passed while the peer was ending them too (both removed
	 * each other) or had ended them: the peer may end at a count this
	 * end never hears (crossing ENDINGs: the smaller offer), so a round
	 * may land at one end only.  With the peer live in it and not
	 * ending, their next session must reconcile the counts exactly.
	 * leave_pending: the generation whose LeaveWait passed, until it
	 * ends there (after a step off the loop or a write, maybe). */
	uint64_t left_alone[2];
	uint32_t leave_pending[2];
	/* Each end's records version as the last action and this one began:
	 * a kill may come inside the last action, after any of its writes
	 * of the records. */
	unsigned floor[2], began[2];
	/* --sabotage: the planted bug (sabotage_plan). */
	bool sab_armed;          /* this schedule has it */
	int sab_end;             /* at this end */
	unsigned sab_from;       /* the first STEP from this action on that
				  * applies a round loses its update */
	unsigned sab_action;     /* the action it did so in (0: not yet) */
	/* --faults weight: the last live generation seen at each end. */
	uint32_t gen_seen[2];
	uint32_t gen_max[2];     /* the highest live generation seen at each end */
	/* Each end's trainer. */
	sim_trainer tr[2];
	uint64_t seed;
	unsigned stalled;        /* the action where nothing could happen */
	bool settling;
	bool unwritten[2];       /* this DETACH's write ended early (counted) */
	sim_stats st;
} sim;


static inline uint64_t next(sim *s)
{
	/* xorshift64*: the whole schedule follows from the seed. */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 2685821657736338717ull;
}


static inline unsigned pick(sim *s, unsigned n)
{
	return (unsigned)(next(s) % n);
}


static inline ep_end *end_of(sim *s, int i)
{
	return i ? &s->p.b : &s->p.a;
}

/* sim_net.c */
int sim_deliver_one(sim *s, ep_end *x);
void sim_deliver(sim *s, int i);
void sim_reset(sim *s);
void sim_half_close(sim *s, int i, unsigned keep);
void sim_peer_notices(sim *s, int i);
bool sim_closes_first(sim *s, int i);
void sim_settle_half_close(sim *s);
void sim_session_up(sim *s);

/* sim_faults.c */
bool sim_fires(sim *s, unsigned fault);
void sim_swarm_plan(sim *s);
void sim_sighup(sim *s, int i);
void sim_removal(sim *s, int i);
void sim_leave_expires(sim *s, int i);
void sim_set_up(sim *s, ep_end *x);
void sim_crash(sim *s, int i);
void sim_restart(sim *s, int i);
void sim_registers(sim *s, int i);
void sim_sigterm(sim *s, int i);

/* sim_trainer.c */
void sim_sabotage_plan(sim *s, uint64_t seed);
void sim_note_detach(sim *s, int i);
void sim_drain_to_end(sim *s, int i);
void sim_request_step(sim *s, int i, bool off);
void sim_work_ends(sim *s, int i);
void sim_detach_begin(sim *s, int i);
void sim_detach_timer_fires(sim *s, int i);
bool sim_next_turn(sim *s, int i);
bool sim_free_at(const sim *s, int i);
bool sim_trainer_free(const sim *s, int i);
void sim_trainer_killed(sim *s, int i);
void sim_avg_start(sim *s, int i);
void sim_avg_time_passes(sim *s, int i);
void sim_avg_detach(sim *s, int i);
bool sim_avg_next(sim *s, int i);
bool sim_free_at_unattached(const sim *s, int i);
bool sim_quiet(const sim *s);

/* sim_check.c */
/* The model both ends register (a layout spec; --layout): by default
 * 389 floats, whose ROUNDs fit a link's frames before the models match
 * (GSP_PROTO_CONTROL_MAX); a larger one's exact-gossip ROUNDs do not, so
 * a ROUND sent to an end without the model breaks the cap (edgepair.h
 * asserts it). */
extern const char *sim_layout;
void sim_check_started(sim *s, int i);
void sim_settle(sim *s);
int sim_run(uint64_t seed, const gsp_config *cfg, unsigned steps, unsigned faults,
	       bool sabotage, bool trace, double *ret_drift, bool *ret_sabotaged,
	       sim_stats *stats);

/* sim_sched.c */
void sim_say(sim *s, const char *what, int i);
void sim_after_action(sim *s);
bool sim_act(sim *s);
extern const core_ops sim_core_ops;

#endif
