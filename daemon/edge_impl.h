/*
 * edge internals shared by the edge module's files (edge_core.c,
 * edge_estimate.c, edge_sched.c, edge_resync.c, edge_end.c, edge_gen.c,
 * edge.c, edge_records.c: one edge; edges_pace.c, edges.c, edges_api.c:
 * the set): struct edge and the types only it needs, and the functions
 * they call of each other, grouped by the file that defines them.  Not
 * used outside the edge module, tests included.
 */
#ifndef GOSSIPD_EDGE_IMPL_H
#define GOSSIPD_EDGE_IMPL_H

#include "edge.h"

/* Rounds in a row a straggler must apply within MaxStaleness before
 * STEPs wait for it again: a neighbour that is only sometimes on time
 * does not make the others wait every other round. */
#define EDGE_PACE_ROUNDS 4

/* An AVERAGE's finite-time schedule on an edge (edge_sched.c). */
typedef enum edge_sched {
	SCHED_NONE = 0,
	SCHED_WAIT,              /* window open, held until the node's are */
	SCHED_RUN,               /* its rounds go on */
} edge_sched;

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

/* Where the frame an edge is using comes from. */
typedef enum edge_input {
	INPUT_LIVE = 0,          /* from the session, as it comes */
	INPUT_KEPT,              /* kept while busy, of the current session
				  * (edge_after_busy reads them now) */
	INPUT_KEPT_ENDED,        /* kept, of a session that has ended: used,
				  * never answered (edge__quiet) */
} edge_input;

struct edge {
	edge_set *set;
	size_t index;            /* engine edge index */
	const gsp_peer_config *cfg;   /* Weight, Index (owned by the peer) */
	const char *name;        /* for logs */
	bool lo;                 /* our key sorts first */
	edge_state state;        /* of the session */
	uint8_t seed[GSP_SEED_BYTES];   /* this session's */
	bool peer_attached;      /* the peer's MODEL named a model */
	/* The generation: outlives sessions and the model; gen its state
	 * (edge.h).  C and S: last round completed with the peer's
	 * message, last projected. */
	uint32_t generation;
	edge_gen_state gen;
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
	/* A new generation agreed in this session (0: none), started once
	 * the old one has ended. */
	uint32_t next_generation;
	float next_weight;
	/* The last generation that ended here with rounds applied, and our
	 * message of its last applied round (a behind peer completes it). */
	uint32_t ended_generation;
	uint64_t ended_applied;
	edge_msg ended_msg;
	bool no_history;         /* records lost (daemon start) */
	/* A generation of before a restart that continues once the model
	 * is attached (edge_restore, GEN_RESUMING; else an ended one's
	 * update to land): its engine state, Weight, counts and our kept
	 * messages. */
	uint8_t *resume;
	size_t resume_len;
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
	edge_input input;        /* of the frame being used */
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


/* The files call one way, each only those before it (edge_core.c):
 *   edge_core <- edge_estimate <- edge_sched <- edge_resync <- edge_end
 *   <- edge_gen <- edge <- edge_records <- edges_pace <- edges
 *   <- edges_api */

/* PROTOCOL.md 4.9's rows: EDGE_ROW(G3) where the code takes row G3
 * counts it (edge_rows_hit).  The table and the code's marks are
 * checked against each other (tests/daemon/test_edge_rows.py). */
#define EDGE_ROW_IDS(X) X(S1) X(S2) X(S3) X(S4) X(S5) X(S6) \
	X(G1) X(G2) X(G3) X(G4) X(G5) X(G6) X(G7) X(G8) X(G9) X(G10)
#define EDGE_ROW_ENUM(id) EDGE_ROW_##id,
typedef enum edge_row { EDGE_ROW_IDS(EDGE_ROW_ENUM) EDGE_ROW_COUNT } edge_row;
#define EDGE_ROW(id) edge__row(EDGE_ROW_##id)

/* The generation runs here (the engine edge holds it). */
static inline bool edge__live(const edge *e)
{
	return e->gen == GEN_LIVE || e->gen == GEN_ENDING;
}

/* ---- edge_core.c ---- */
void edge__row(edge_row row);
/* Frames go out unless the edge is "quiet": it is using frames of a
 * session that has ended (kept while the engine was busy, INPUT_KEPT_ENDED),
 * whose answers would land on the wrong session. */
int edge__send(edge *e, const uint8_t *pt, size_t len);
/* A ROUND we keep (m), only while both ends have the model: a link caps
 * frames below a ROUND until its end has a model, and an end without
 * one could not apply it.  Not sent, it stays kept, and the next session
 * with the model at both ends resends it (resend, edge_gen.c).  1 sent,
 * 0 not, or edge__send's error. */
int edge__send_round(edge *e, const edge_msg *m);
bool edge__quiet(const edge *e);
void edge__changed(edge *e);
void edge__msg_free(edge_msg *m);
/* Which of e->sent holds our message of `round`, or -1. */
int edge__kept(const edge *e, uint64_t round);
/* Rounds applied on a live edge: those completed, less one waiting for
 * the next apply. */
uint64_t edge__applied(const edge *e);

/* ---- edge_estimate.c ---- */
/* Measures the peer's message of `round` against ours (e->diff_norm);
 * -EACCES, reported, when it is over MaxRoundChange. */
int edge__measure_round(edge *e, uint64_t round, const uint8_t *payload, size_t len);

/* ---- edge_resync.c ---- */
/* A generation's tag: BLAKE2b-128(key = seed, "gossipd generation tag"
 * || LE32(gen)). */
void edge__gen_tag(const uint8_t seed[GSP_SEED_BYTES], uint32_t gen,
		   uint8_t out[GSP_GEN_TAG_BYTES]);
/* Where this end stands, as its RESYNC says it (ENDING only when
 * `ending`); RESYNC of e's session (0, or the session is closed). */
void edge__fill_resync(const edge *e, gsp_msg_resync *m, bool ending);
int edge__send_resync(edge *e, bool ending);
/* This session's RESYNCs have been exchanged. */
bool edge__decided(const edge *e);

/* ---- edge_gen.c ---- */
int edge__on_resync(edge *e, const uint8_t *pt, size_t len);
/* Ends the live generation if it is ending and can, then starts an
 * agreed new one if it can (not while busy). */
void edge__settle(edge *e);

/* ---- edge_end.c ---- */
/* The live generation ends here with `applied` rounds completed, each
 * applied or to be at the next apply (the engine edge is disabled; our
 * message of that round is kept). */
void edge__record_end(edge *e, uint64_t applied);
/* Takes back the rounds completed after the peer's final count
 * (e->target): dropped if not yet applied, else subtracted. */
void edge__take_back(edge *e);
/* The model goes before the last round of the ended generation landed
 * here: the record says one round less, and it is reported. */
void edge__drop_landing(edge *e);
/* Ends the live generation at the peer's final count (e->target), taking
 * back what must be (edge_end.c); false while it waits (for the peer's
 * message of the target round, or for a write to subtract in). */
bool edge__end_live(edge *e);
/* LeaveWait passed: the count to end at without the peer's answer. */
void edge__leave_target(edge *e);
/* No later than the end the peer's ENDING told, if it told one. */
uint64_t edge__below_told_end(const edge *e, uint64_t count);

/* ---- edge_records.c ---- */
/* The generation edge_restore kept continues on the attached model's
 * engine edge (or, if its state does not fit, stays ended). */
void edge__resume(edge *e, bool ours);

/* An AVERAGE may run rounds on e: its generation is live here, its
 * session works, and this end is not ending it. */
static inline bool edge__avg_runs(const edge *e)
{
	return edge__live(e) && e->state == EDGE_UP && !e->ending_self;
}

/* ---- edge_sched.c ---- */
/* The finite-time schedule: FINITE or 0 for our next ROUND; after round
 * `round` completed with the peer's flags, the window opens if both said
 * FINITE (a negative errno, logged, when it cannot: the caller ends the
 * generation); a new or ended generation has none. */
uint8_t edge__finite_flag(const edge *e);
int edge__finite_check(edge *e, uint64_t round, uint8_t peer_flags);
void edge__sched_reset(edge *e);

#endif
