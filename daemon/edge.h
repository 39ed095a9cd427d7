/*
 * edge: the per-edge protocol of PROTOCOL.md 4 (MODEL, RESYNC, ROUND) as
 * a state machine over the engine's edges, and the set of a daemon's
 * edges over its registered model's node.  Events come in as calls
 * (a session up or down, a frame, a step begun or done, a model attached
 * or detached); actions go out through edge_ops (frames to send, a
 * session to close, why an edge is down, "rounds moved").  It has no
 * event loop, no sockets and no clock, so tests drive it directly.
 *
 * The engine node is used only while the set is not busy (a step runs
 * off the loop): frames that arrive meanwhile are kept and replayed by
 * edges_after_busy.
 */
#ifndef GOSSIPD_EDGE_H
#define GOSSIPD_EDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "counters.h"
#include "edgestate.h"
#include "gossip.h"
#include "proto.h"

typedef enum edge_state {
	EDGE_DOWN = 0,           /* no session */
	EDGE_WAIT_MODEL,         /* session up, MODEL sent, waiting for theirs */
	EDGE_WAIT_RESYNC,        /* models match, waiting for RESYNC */
	EDGE_UP,                 /* ROUNDs flow */
	EDGE_IDLE,               /* no model at one end: heartbeats only */
} edge_state;

/* Rounds in a row a straggler must apply within MaxStaleness before
 * STEPs wait for it again: a neighbour that is only sometimes on time
 * does not make the others wait every other round. */
#define EDGE_PACE_ROUNDS 4

typedef struct edge edge;
typedef struct edge_set edge_set;

/* Why this end ends its live generation. */
typedef enum edge_end_why {
	END_NONE = 0,
	END_REMOVED,             /* a reload removed the peer */
	END_DETACH,              /* the model goes */
	END_RESTART,             /* a new generation must follow (a new session) */
} edge_end_why;

/* An AVERAGE's finite-time schedule on an edge (edge_sched.c). */
typedef enum edge_sched {
	SCHED_NONE = 0,
	SCHED_WAIT,              /* window open, held until the node's are */
	SCHED_RUN,               /* its rounds go on */
} edge_sched;

typedef struct edge_ops {
	/* One frame on e's session; a negative errno when it could not be
	 * queued (the session is then closed: edge_session_down follows). */
	int (*send)(void *ctx, edge *e, const uint8_t *pt, size_t len);
	/* Close e's session with GOODBYE reason/text. */
	void (*close)(void *ctx, edge *e, uint16_t reason, const char *text);
	/* Why e is down (STATUS last_error). */
	void (*error)(void *ctx, edge *e, const char *text);
	/* e's session works (its MODEL was accepted). */
	void (*accepted)(void *ctx, edge *e);
	/* The largest frame e's session must accept from now on. */
	void (*set_max_frame)(void *ctx, edge *e, uint32_t max_body);
	/* Rounds moved: a waiting request may go on. */
	void (*changed)(void *ctx);
	/* This node's degree (listed peers, at least 1). */
	uint16_t (*degree)(void *ctx);
	/* An ending this end asked for (edge_end_begin) is over: the
	 * generation ended at the same round at both ends, or could not. */
	void (*ended)(void *ctx, edge *e, edge_end_why why);
} edge_ops;

/* The registered model, as the edges see it. */
typedef struct edge_model {
	edge_owner owner;        /* its fingerprint and buffer identity */
	gsp_node *node;
	const gsp_layout *layout;
	uint8_t method;
	uint16_t rank;
	uint8_t fingerprint[GSP_FINGERPRINT_BYTES];
	const char *summary;
	uint64_t max_payload;    /* largest ROUND payload */
} edge_model;

/* A ROUND plaintext this end sent (or will send) and keeps until the
 * peer cannot need it any more (PROTOCOL.md 4.6). */
typedef struct edge_msg {
	uint8_t *buf;
	size_t len;
	size_t cap;              /* bytes of buf allocated (0: len) */
	uint64_t round;
	uint16_t degree;
} edge_msg;

/* Frames of a session that came while the engine was busy. */
#define EDGE_DEFERRED_MAX 8

/* What the peer's final count for one of our generations is. */
typedef enum edge_target {
	TARGET_NONE = 0,         /* not ending */
	TARGET_KNOWN,            /* the peer applied exactly `target` rounds */
	TARGET_UNKNOWN,          /* the peer lost its records (a restart) */
} edge_target;

struct edge {
	edge_set *set;
	size_t index;            /* engine edge index */
	const gsp_peer_config *cfg;   /* Weight, Index (owned by the peer) */
	const char *name;        /* for logs */
	bool lo;                 /* our key sorts first */
	edge_state state;        /* of the session */
	uint8_t seed[GSP_SEED_BYTES];   /* this session's */
	bool peer_attached;      /* the peer's MODEL named a model */
	/* The generation: outlives sessions and the model.  live: the
	 * engine edge holds it (model attached).  C and S: last round
	 * completed with the peer's message, last projected. */
	uint32_t generation;
	bool live;
	uint8_t gen_seed[GSP_SEED_BYTES];
	uint64_t completed, sent_round;
	edge_msg sent[2];        /* ours for rounds S-1 and S */
	/* A step kept a new ROUND (of that generation and round): it goes
	 * out only once the records keep it (edges_release), so that a
	 * restart never finds the peer a round ahead of its file. */
	bool unsent;
	uint32_t unsent_generation;
	uint64_t unsent_round;
	/* The generation's weight (0: Metropolis-Hastings by degrees),
	 * agreed from the two ends' Weights when it was agreed on.
	 * offered_weight: what this session's first RESYNC offered, and
	 * offered_no_start whether it said NO_START. */
	float weight;
	float offered_weight;
	bool offered_no_start;
	/* Ending the live generation at the peer's final count. */
	edge_target ending;
	uint64_t target;
	/* This end ends it (no more ROUNDs go out), at most at end_count
	 * rounds, once the peer has said where it stands. */
	edge_end_why ending_self;
	uint64_t end_count;
	bool leave_expired;      /* LeaveWait passed: end without the answer */
	/* A new generation agreed in this session, started once the old
	 * one has ended. */
	bool start_pending;
	uint32_t next_generation;
	float next_weight;
	/* The last generation that ended here with rounds applied, and our
	 * message of its last applied round (a behind peer completes it). */
	uint32_t ended_generation;
	uint64_t ended_applied;
	edge_msg ended_msg;
	bool no_history;         /* records lost (daemon start) */
	/* A generation of before a restart that continues once the model
	 * is attached (edge_restore): its engine state, Weight, counts and
	 * our kept messages. */
	uint8_t *resume;
	size_t resume_len;
	bool resume_live;        /* else an ended one's update to land */
	float resume_weight;
	edge_msg resume_sent[2];
	uint32_t resume_ended_generation;
	uint64_t resume_ended_applied;
	uint8_t *saved;          /* edge_record_of's engine state */
	bool answer_due;         /* the peer's ENDING waits for our end (a write) */
	bool peer_continues;     /* the peer's first RESYNC of this session
				  * continued our live generation, and no
				  * ENDING of its came since (decide) */
	uint32_t disagreed;      /* an ended generation found one-sided */
	uint8_t *early;          /* peer's next-round message, if it came early */
	size_t early_len;
	uint64_t early_round;
	uint32_t early_generation;
	uint16_t early_degree;
	uint8_t early_flags;
	bool drain_answered;     /* this DRAIN projected its one early round */
	uint8_t *deferred[EDGE_DEFERRED_MAX];   /* frames that came while busy */
	size_t deferred_len[EDGE_DEFERRED_MAX];
	uint64_t deferred_session[EDGE_DEFERRED_MAX];
	unsigned n_deferred;
	bool reading_kept;       /* edge_after_busy reads them now */
	uint64_t session_no;     /* sessions so far */
	gsp_edge_info cache;     /* engine edge as of the last loop-side look */
	uint64_t last_apply_step;
	bool peer_averaging;     /* the peer's last ROUND: one of an AVERAGE, */
	bool peer_reached;       /* which reached its target */
	/* Per round parity, the round whose ROUND said AVERAGING and
	 * REACHED, the peer's and ours (0: none).  Both ends' for the last
	 * completed round: this AVERAGE's rounds on the edge are over at
	 * both ends.  By round, not the latest: a peer's early ROUND of the
	 * next round must not change what this end decides of this one. */
	uint64_t peer_reached_at[2], sent_reached_at[2];
	bool avg_held;           /* held out of projection for that */
	/* The finite-time schedule: the peer's id (its session's first
	 * RESYNC), and this AVERAGE's window on the edge (the engine's
	 * edge info says whether one is open). */
	uint32_t peer_schedule;
	edge_sched sched;
	bool straggler;          /* a STEP stopped waiting for it; cleared
				  * once it applies within MaxStaleness
				  * EDGE_PACE_ROUNDS times in a row */
	unsigned on_time;        /* rounds in a row applied within it */
	bool lagging;            /* a STEP waits for it now */
	uint64_t waited_ms;      /* STEPs' wait for it since it kept pace */
	double diff_norm;        /* norm of the last completed difference */
	uint64_t rounds_completed;  /* with the current model */
	/* Only grow while the daemon runs (metrics). */
	uint64_t rounds_total, exact_bytes_done, message_bytes_done, resyncs;
	uint64_t retransmits, rollbacks, continued;
};

struct edge_set {
	const edge_ops *ops;
	void *ctx;
	counters *counters;
	edge *edge;              /* room for GSP_MAX_PEERS */
	size_t n;
	bool attached;           /* a model is registered */
	bool detaching;          /* edges_end_begin: the model goes, so no
				  * new generation starts (RESYNC NO_START) */
	edge_model model;
	bool busy;               /* the node is in use off the loop */
	uint64_t steps;          /* steps of the attached model */
	/* SimSeed/Index: seeds and roles as gossip-sim derives them. */
	bool sim_seed_set;
	uint64_t sim_seed;
	int sim_index;
	/* Checks of what a listed peer sends: the largest degree the graph
	 * allows (0: unknown) and MaxRoundChange (0: none). */
	unsigned max_degree;
	float max_round_change;
	bool dirty;              /* a count or generation changed (edgestate) */
	bool releasing;          /* edges_release runs */
	/* Writes into the trainer's buffer: how many the records count, and
	 * whether one is under way (model_write_begin: only then may a round
	 * be taken back by subtraction; one that waits for it sets
	 * takeback_waiting). */
	uint64_t writes;
	edge_owner owner;        /* the buffer the records describe */
	bool writing;
	bool takeback_waiting;
	bool averaging;          /* an AVERAGE runs here, */
	bool reached;            /* and reached its target: our ROUNDs say so */
	bool measured;           /* it has measured its estimate (a round) */
	/* The finite-time schedule AVERAGEs offer (AverageSchedule): per
	 * matching of the ring (edge_sched.c: both the same unless it is
	 * the ring's matching schedule), its steps and id (0: none). */
	float *sched_steps[2];
	size_t sched_n;
	uint32_t sched_id[2];
	unsigned ring_nodes;     /* matching schedule: the ring's Nodes, */
	unsigned ring_index;     /* and this node's Index on it */
};

int edge_set_init(edge_set *s, const edge_ops *ops, void *ctx, counters *c);
void edge_set_free(edge_set *s);
/* One more edge (a configured peer), index s->n. */
edge *edge_add(edge_set *s, const gsp_peer_config *cfg, const char *name, bool lo);

/* The model: its node gets one (disabled) engine edge per edge, and
 * the generations edge_restore kept continue on theirs. */
int edges_attach(edge_set *s, const edge_model *m);
/* The node goes (not while busy): each live generation ends here with
 * the rounds applied so far (a completed update not yet applied is
 * dropped); edge totals are kept. */
void edges_detach(edge_set *s);
/* This end ends e's live generation (not while busy): it sends no more
 * ROUNDs, and once the peer's RESYNC says where it stands both end at
 * the smaller count (the one ahead takes its last round back); then
 * ops->ended.  True when there was nothing to end.  edges_end_begin does
 * it for every edge (DETACH) and returns how many still wait; those that
 * still wait when the model goes end at what they applied. */
bool edge_end_begin(edge *e, edge_end_why why);

/* LeaveWait passed for a removed peer (e's ending, edge_end_begin
 * END_REMOVED): the generation ends without the peer's answer, at the
 * count this end offered (or, if the peer's count is known but its
 * message of that round never came, at what this end completed); a
 * round completed here past it is taken back (a subtraction waits for a
 * write, and a step off the loop for edges_finish; an answer that comes
 * meanwhile still decides the count).  If the peer
 * applied a round past it, that round stays at the peer until the two
 * ends meet again (the peer added back), whose RESYNCs reconcile it.
 * Then ops->ended.  True when the generation has ended. */
bool edge_end_alone(edge *e);
/* Where e's generation stands, for edgestate (key left to the caller;
 * the messages and the engine state point into e, valid until the next
 * call).  Not while busy. */
void edge_record_of(edge *e, edge_record *r);
/* A restarted daemon: the live generation of r continues, from its
 * engine state, once the model is attached (at once if it is, else at
 * edges_attach): a restart is a reconnect.  Without that state, or when
 * it does not fit the model, it ends here at the rounds it had applied,
 * with our message of that round kept for a peer that lacks it. */
int edge_restore(edge *e, const edge_record *r);
/* Whether e's engine state and kept ROUNDs fit the records'
 * EDGESTATE_STATE_MAX (the records then keep them, and a restart
 * continues its generation). */
bool edge_state_fits(const edge *e);
/* Whether the records would let every live generation continue after a
 * restart (each edge's state fits). */
bool edges_resumable(const edge_set *s);
size_t edges_end_begin(edge_set *s);
size_t edges_ending(const edge_set *s);

/* Session events.  seed: the session's shared per-edge seed. */
void edge_session_up(edge *e, const uint8_t seed[GSP_SEED_BYTES]);
void edge_session_down(edge *e);
/* A frame of e's session (not PING/PONG/GOODBYE): 0 or a negative errno
 * (the caller closes the session as malformed). */
int edge_frame(edge *e, const uint8_t *pt, size_t len);

/* Per edge, after a step: keep what was projected (edge_release sends
 * it once the records keep it) and use an early message; end a
 * generation that waited for an apply and start the next; after a step
 * off the loop, use the frames that came meanwhile. */
void edge_step_done(edge *e);
void edge_release(edge *e);
void edge_finish(edge *e);
void edge_after_busy(edge *e);

/* Steps.  edges_step_begin counts the edges a step applies and skips and
 * records the apply; after the step, edges_step_done sends what was
 * projected and uses early messages. */
void edges_step_begin(edge_set *s, unsigned max_staleness, uint32_t *ret_applied,
		      uint32_t *ret_skipped);
void edges_step_done(edge_set *s);
/* Once the records are saved (or need not be): sends the ROUNDs the
 * last steps kept.  The caller saves the records first: mesh_persist
 * calls it. */
void edges_release(edge_set *s);
/* After a step that ran off the loop (busy again false): the frames that
 * arrived meanwhile. */
void edges_after_busy(edge_set *s);
/* Starts generations that waited for an apply, and ends those that
 * waited for a write (takeback_waiting). */
void edges_finish(edge_set *s);
/* Whether an apply now would write the trainer's buffer: an update has
 * completed, or a round waits to be taken back. */
bool edges_will_write(const edge_set *s);
/* DRAIN: edges_drain_begin at its start, then edges_answer_early
 * projects the round a neighbour is already waiting for (its early
 * message came), at most one per edge in a DRAIN: a neighbour's next
 * round waits for the next request, so an averaging neighbour and a
 * DRAIN that waits for another edge do not exchange rounds for as long
 * as it waits.  Returns a negative errno or 0. */
void edges_drain_begin(edge_set *s);
int edges_answer_early(edge_set *s);

/* Edges whose round is out on the network. */
size_t edges_in_flight(const edge_set *s);
/* Of those, the ones worth waiting for: on a working session, not
 * ending (a neighbour that crashed holds its round until it is back). */
size_t edges_awaited(const edge_set *s);
/* Whether a DRAIN waits: for a round in flight, with sync on any edge,
 * else on one that is not a straggler. */
bool edges_drain_waits(const edge_set *s, bool sync);
/* DrainWait (waited_ms) is over: the edges a DRAIN waits for become
 * stragglers. */
void edges_drain_expired(edge_set *s, unsigned waited_ms);
size_t edges_up(const edge_set *s);
/* Live generations whose session is down (a neighbour that crashed or
 * lost its link), not ending here. */
size_t edges_live_down(const edge_set *s);
/* Whether a generation agreed with a peer waits to start until the ended
 * one's last update lands (an apply: a STEP's, or an AVERAGE's
 * average_land). */
bool edges_start_waits_landing(const edge_set *s);
/* Whether a STEP must wait: with sync for any round in flight, else for
 * an edge in flight that has not applied for max_staleness steps and is
 * not a straggler. */
bool edges_must_wait(const edge_set *s, bool sync, unsigned max_staleness);
/* A STEP starts waiting: the edges it waits for are marked lagging.
 * Returns how long it may wait: MaxWait less what STEPs already waited
 * for the most-waited-for of them.  When the wait ends (elapsed ms),
 * edges_end_wait adds it to theirs, and those whose total reached
 * max_wait become stragglers: STEPs wait at most MaxWait in all for an
 * edge that lags, until it keeps pace again. */
unsigned edges_begin_wait(edge_set *s, unsigned max_staleness, unsigned max_wait);
void edges_end_wait(edge_set *s, uint64_t elapsed, unsigned max_wait);
/* AVERAGE: holds out of projection every edge whose session works and
 * whose last completed round both ends' ROUNDs said AVERAGING and REACHED
 * (both ends see the same two flags, so both stop that edge after the
 * same round, and neither waits for a round of it again); returns how
 * many such edges still go on.  A peer not averaging yet (still in its
 * last STEPs) has not said so.  edges_avg_release lets them project
 * again. */
size_t edges_avg_settle(edge_set *s);
void edges_avg_release(edge_set *s);
/* The finite-time schedule (PROTOCOL.md 4.4, FINITE): the steps this
 * set's AVERAGEs offer (copied; n 0: none), and their id.  An edge whose
 * two ends' ROUNDs of a round both said FINITE opens the schedule's
 * window after it and is held (SCHED_WAIT); edges_sched_release lets
 * every held one go at once when no edge the AVERAGE runs may still
 * agree (or, with force, whatever the others do), and returns how many
 * went (0: none, or some still may).  edges_sched_waiting: some are held
 * so.  An AVERAGE offers FINITE once it has measured its estimate (its
 * first round) and only while it has not reached its target.
 * edges_sched_end: the AVERAGE is over (held ones go; a window open in
 * the engine runs on in the STEPs that follow).
 * ring_nodes 0: steps are gsp_graph_finite_schedule's, the same on every
 * edge; else they are gsp_ring_matching_schedule's pairwise weights for a
 * ring of ring_nodes on which this node is ring_index and each peer's
 * Index is its own (config.c checks them): an edge runs the rounds of its
 * matching and sits out the others, and its RESYNC names the schedule of
 * its matching. */
int edges_set_schedule(edge_set *s, const float *steps, size_t n, unsigned ring_nodes,
		       unsigned ring_index);
/* The id of the schedule e's AVERAGEs offer (0: none). */
uint32_t edge__sched_id(const edge *e);
size_t edges_sched_release(edge_set *s, bool force);
bool edges_sched_waiting(const edge_set *s);
void edges_sched_end(edge_set *s);
/* edges_estimate over the edges an AVERAGE still runs (live, not held,
 * not ending here): a held edge's last measurement, one round after both
 * ends said they reached, or that of a generation a neighbour ended,
 * must not keep this end from saying so on the others. */
double edges_estimate_going(const edge_set *s);
/* The consensus estimate: the largest last difference norm (NaN before
 * any round, and always NaN for a method whose messages are not the
 * projected model: Choco's are compressed differences from its public
 * copy, whose difference says nothing of the models'). */
double edges_estimate(const edge_set *s);
/* Whether the registered model's method measures that estimate. */
bool edges_measure_estimate(const edge_set *s);
uint64_t edge_staleness(const edge *e);
/* The generation's tag (PROTOCOL.md 4.6; RESYNC gen_tag): the same at both
 * ends of a generation, and kept by a continuation (same seeds); zeros
 * before the first generation. */
void edge_generation_tag(const edge *e, uint8_t out[GSP_GEN_TAG_BYTES]);
uint32_t edges_max_staleness(const edge_set *s);
/* Refreshes every edge's cache of its engine edge (STATUS). */
void edges_cache(edge_set *s);

#endif
