/*
 * group: the machine's local group (PROTOCOL.md 5.3, "Local group").
 * Several trainers on one machine attach to one model, as one node of
 * the graph: at each local step the buffers of the members that take
 * part are replaced by their mean (float32 accumulate: one read pass and
 * one write pass a buffer), that mean is the machine's model, which the
 * node's request (a STEP through the core) gossips with the neighbours,
 * and the node's change Delta (its model after, less the mean) reaches
 * every member: the participants' buffers take the node's model, and a
 * member that did not take part keeps Delta as pending (float32, its
 * own) and takes it at its next request before the mean.  So the mean
 * over all members, pending counted, moves by exactly the node's change:
 * the network average over machines is what gossip keeps.
 *
 * It owns the members (their buffers, pending Deltas, requests) and when
 * the group steps: once every member sent its STEP, or LocalWait after
 * the first (never for ever).  It writes a member's buffer only inside
 * that member's request (its STEP, or its DETACH).  Pure: no libuv, no
 * I/O; time, the timer, the node's request and letting a buffer go are
 * group_ops (daemon/step.c binds them to the loop and the core).
 *
 * Rules: a member's callback is never called from inside group_step or
 * group_average (a refusal there is their return value); the node's
 * request ends through group_node_done, the timer through
 * group_timer_fired, never from inside the op that started them.
 */
#ifndef GOSSIPD_GROUP_H
#define GOSSIPD_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "core.h"
#include "proto.h"

typedef enum group_member_state {
	MEMBER_FREE = 0,         /* no member in this slot */
	MEMBER_IDLE,             /* attached; no request of it pending */
	MEMBER_WAITING,          /* its STEP waits for the group's step */
	MEMBER_STEPPING,         /* it takes part in the node's request */
} group_member_state;

typedef enum group_state {
	GROUP_OFF = 0,           /* no model (group_begin not called) */
	GROUP_IDLE,              /* no STEP waits, no request runs */
	GROUP_GATHER,            /* STEPs wait for the others (LocalWait) */
	GROUP_RUN,               /* the node's request runs */
	GROUP_REPLY,             /* the node refused: replies on the timer */
	GROUP_ENDING,            /* the last member's DETACH runs */
} group_state;

/* The node's request for a group step. */
typedef struct group_request {
	bool average;            /* an AVERAGE (a group of one only) */
	uint32_t flags;          /* a STEP's GSP_STEP_* */
	gsp_api_average avg;
} group_request;

typedef struct group_ops {
	uint64_t (*now_ms)(void *ctx);
	/* Arms the group's one timer (0: the loop's next turn; armed again
	 * if armed); group_timer_fired follows, never from inside. */
	void (*timer_start)(void *ctx, uint64_t ms);
	void (*timer_stop)(void *ctx);
	/* Starts the node's request on the machine's model; its end comes
	 * through group_node_done, never from inside.  A negative errno: it
	 * did not start. */
	int (*node_start)(void *ctx, const group_request *req);
	/* A member's buffer goes (handle: what group_join was given). */
	void (*release)(void *ctx, void *handle);
} group_ops;

typedef struct group_trainer {
	group_member_state state;
	void *client;            /* its connection: who asks */
	step_cb cb;              /* its request's reply, or NULL */
	float *params;           /* its buffer, n floats */
	float *pending;          /* Delta it has not taken, n floats */
	void *handle;
	uint32_t flags;          /* its STEP's */
	uint64_t since_ms;       /* when its STEP came */
} group_trainer;

typedef struct group {
	const group_ops *ops;
	void *ctx;
	group_state state;
	unsigned max_members;    /* MaxLocalTrainers */
	unsigned local_wait_ms;  /* LocalWait */
	float *machine;          /* the node's parameters */
	float *last;             /* what the group last left in them */
	uint64_t n;
	group_trainer *members;   /* max_members slots */
	unsigned n_members;
	group_request req;       /* the one running */
	step_result result;      /* GROUP_REPLY's */
} group;

void group_init(group *g, const group_ops *ops, void *ctx, unsigned max_members,
		unsigned local_wait_ms);
/* The model begins: machine holds the node's n parameters (the first
 * member's, copied by the caller).  -ENOMEM. */
int group_begin(group *g, float *machine, uint64_t n) GSP_MUST_CHECK;
/* A member joins with its buffer params (n floats; handle for release).
 * -EUSERS at MaxLocalTrainers, -EBUSY while the group ends, -EEXIST if
 * client is a member, -ENOMEM; nothing changed then. */
int group_join(group *g, void *client, float *params, void *handle) GSP_MUST_CHECK;
bool group_has(const group *g, const void *client);

/* A member's STEP (flags GSP_STEP_*): it waits for the group's step;
 * cb(client, result) once that is over.  -EOPNOTSUPP for a DRAIN in a
 * group of more than one member, -EBUSY if one of its requests is
 * pending, -ENOENT if client is no member. */
int group_step(group *g, void *client, uint32_t flags, step_cb cb);
/* An AVERAGE: a group of one member only (-EOPNOTSUPP otherwise). */
int group_average(group *g, void *client, const gsp_api_average *req, step_cb cb);
/* The member's connection went: its callback is dropped (it leaves by
 * group_leave, or, the last, by the model's DETACH). */
void group_forget(group *g, void *client);
/* A member that is not the last leaves (its DETACH): its pending Delta
 * is written into its buffer, unless it takes part in the request under
 * way (its connection went: it is left as it is); the buffer goes.
 * Returns the members left. */
unsigned group_leave(group *g, void *client);
/* The last member's DETACH begins: no member joins from now on. */
void group_end_begin(group *g);
/* The model goes (its request and DETACH are over): what the node's
 * model moved since the group last wrote it reaches the members left,
 * with their pending Deltas, and their buffers go.  Then GROUP_OFF. */
void group_end(group *g);

/* From below: the node's request ended with r; the timer fired. */
void group_node_done(group *g, const step_result *r);
void group_timer_fired(group *g);

#endif
