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
 *
 * struct edge is the module's own (edge_impl.h): the layers above see an
 * edge through edge_view_of and reach the set's edges by edges_at.  They
 * may read edge_set's fields, but write none: what happens above (a step
 * off the loop, a write into the buffer, the AVERAGE's flags, the
 * records saved or read) is told through the functions of edges_api.c
 * (tests/daemon/test_layers.py checks it).
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

/* The generation's state (PROTOCOL.md 4.9, rows G*): what it waits for
 * is data beside it (edge_impl.h): an agreed successor (next_generation),
 * why this end ends it and where (ending_self, end_count), what is known
 * of the peer's final count (ending, target). */
typedef enum edge_gen_state {
	GEN_NONE = 0,            /* none live here: none yet, or it ended */
	GEN_RESUMING,            /* one of before a restart, live in the
				  * records: continues once the model is
				  * attached (edge_restore) */
	GEN_LIVE,                /* the engine edge holds it */
	GEN_ENDING,              /* live, and ending: this end ends it, or the
				  * peer's final count is known, or both */
} edge_gen_state;

typedef struct edge edge;
typedef struct edge_set edge_set;

/* Why this end ends its live generation. */
typedef enum edge_end_why {
	END_NONE = 0,
	END_REMOVED,             /* a reload removed the peer */
	END_DETACH,              /* the model goes */
	END_RESTART,             /* a new generation must follow (a new session) */
} edge_end_why;

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

/* What the peer's final count for one of our generations is. */
typedef enum edge_target {
	TARGET_NONE = 0,         /* not ending */
	TARGET_KNOWN,            /* the peer applied exactly `target` rounds */
	TARGET_UNKNOWN,          /* the peer lost its records (a restart) */
} edge_target;

/* What the layers above (and tests) see of one edge: a copy of the
 * observable facts, taken by edge_view_of.  struct edge itself is the
 * edge module's (edge_impl.h). */
typedef struct edge_view {
	size_t index;            /* engine edge index (the peer's slot) */
	const char *name;        /* for logs (the peer's) */
	bool lo;                 /* our key sorts first */
	edge_state state;        /* of the session */
	bool peer_attached;      /* the peer's MODEL named a model */
	uint64_t session_no;     /* sessions so far */
	/* The generation: its number, whether the engine edge holds it
	 * (live), the last round completed with the peer's message and the
	 * last projected, and its weight (0: Metropolis-Hastings). */
	uint32_t generation;
	edge_gen_state gen;
	bool live;               /* GEN_LIVE or GEN_ENDING */
	uint64_t completed, sent_round;
	float weight;
	/* Ending the live generation: what the peer's final count is and
	 * that count; why this end ends it (END_NONE: it does not) and the
	 * most rounds it ends at. */
	edge_target ending;
	uint64_t target;
	edge_end_why ending_self;
	uint64_t end_count;
	/* A new generation agreed (next_generation), started once the old
	 * one has ended. */
	bool start_pending;
	uint32_t next_generation;
	/* The last generation that ended here with rounds applied, and how
	 * many it applied. */
	uint32_t ended_generation;
	uint64_t ended_applied;
	/* The peer's next-round message came early (kept), of that round. */
	bool early;
	uint64_t early_round;
	unsigned n_deferred;     /* frames kept while the engine was busy */
	bool avg_held;           /* an AVERAGE holds it out of projection */
	bool straggler;          /* a STEP stopped waiting for it */
	bool lagging;            /* a STEP waits for it now */
	double diff_norm;        /* norm of the last completed difference */
	uint64_t rounds_completed;  /* with the current model */
	/* Only grow while the daemon runs (metrics). */
	uint64_t rounds_total, exact_bytes_done, message_bytes_done, resyncs;
	uint64_t retransmits, rollbacks, continued;
	gsp_edge_info cache;     /* engine edge as of edges_cache */
} edge_view;

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
/* Whether e's slot may take another peer: its generation has ended (none
 * live, ending or agreed to start, none to resume), its session is down,
 * no frame of it is kept, and its engine edge holds no update still to
 * land.  edge_reuse: e becomes a new peer's edge, as edge_add's (the
 * last one's generations and records are forgotten; its engine edge,
 * disabled, starts afresh with the next generation). */
bool edge_reusable(const edge *e);
void edge_reuse(edge *e, const gsp_peer_config *cfg, const char *name, bool lo);
/* The edge of index i (< s->n), and an edge's index: the set's array is
 * the module's, never indexed outside it. */
edge *edges_at(edge_set *s, size_t i);
const edge *edges_at_const(const edge_set *s, size_t i);
size_t edge_index(const edge *e);
/* What is observable of e now (edge_view). */
void edge_view_of(const edge *e, edge_view *ret);
/* The rows of PROTOCOL.md 4.9's transition tables (their ids, "S1",
 * "G3", ...) and how often each was taken in this process (the unit
 * tests' coverage: tests/daemon/test_edge_rows.py). */
size_t edge_rows(void);
const char *edge_row_id(size_t row);
uint64_t edge_rows_hit(size_t row);

/* What the layers above tell the set (edges_api.c): only these write
 * its fields from outside the module.
 * edges_configure: the checks of what a listed peer sends (max_degree,
 * max_round_change above); edges_sim_seed: SimSeed and Index; and
 * edges_model_max_payload: the attached model's largest ROUND payload,
 * known once its node is. */
void edges_configure(edge_set *s, unsigned max_degree, float max_round_change);
void edges_sim_seed(edge_set *s, bool set, uint64_t seed, int index);
void edges_model_max_payload(edge_set *s, uint64_t max_payload);
/* A step takes the node off the loop (edges_busy_begin) and gives it
 * back (edges_busy_end; edges_after_busy then reads what came). */
void edges_busy_begin(edge_set *s);
void edges_busy_end(edge_set *s);
/* A write into the trainer's buffer begins (none is under way): returns
 * its number, the count the records keep once edges_write_end(s, that
 * number) ends it (the records then must be saved again).  In between,
 * once the caller has kept what undoes the write, edges_write_takeback
 * takes back the rounds that waited for a write (takeback_waiting). */
uint64_t edges_write_begin(edge_set *s);
void edges_write_takeback(edge_set *s);
void edges_write_end(edge_set *s, uint64_t seq);
/* What our ROUNDs say of this node's AVERAGE: one runs (averaging), it
 * reached its target (reached), it has measured its estimate
 * (measured); all false once it is over. */
void edges_average_state(edge_set *s, bool averaging, bool reached, bool measured);
/* The records: they must be saved again (edges_records_changed), were
 * saved (edges_records_saved), or were read at a start: the writes they
 * count and the buffer they describe (edges_records_found). */
void edges_records_changed(edge_set *s);
void edges_records_saved(edge_set *s);
void edges_records_found(edge_set *s, uint64_t writes, const edge_owner *owner);

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
/* A generation edge_restore kept for the model ends at its count instead
 * (its peer went first). */
void edge_resume_cancel(edge *e);
/* What edge_restore took back, dropped unused (its slot went before the
 * peer met it; the record goes to the key's next slot): e holds nothing
 * of its peer, as a new edge. */
void edge_unrestore(edge *e);
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
/* An AVERAGE begins: no round before it counts as said REACHED. */
void edges_avg_begin(edge_set *s);
/* Edges whose generation ended (the neighbour left) after both ends'
 * ROUNDs of its last round said REACHED in this AVERAGE: settled, as
 * edges_avg_settle would have held them had the core looked before the
 * ENDING came (both come in one turn of the loop). */
size_t edges_avg_settled_ended(const edge_set *s);
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
