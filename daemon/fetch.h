/*
 * fetch: copying a neighbour's model into the trainer's buffer (the
 * trainer's FETCH request; PROTOCOL.md 4.4 and 5.3), and serving ours
 * to a peer that asks.  It owns the one snapshot this node serves at a
 * time (a copy of the buffer taken when no write of the engine is under
 * way, its BLAKE2b hash, freed once sent or after FETCH_SNAPSHOT_IDLE_MS
 * unasked) and the one copy it fetches (chunks asked a window at a time
 * from a peer whose edge is up, so whose model has our fingerprint,
 * gathered aside, checked against the peer's hash, and only then written
 * into the buffer, at once, on the loop, while no step runs).  A peer
 * that refuses, or whose session ends, gives way to the next one until
 * the request's time limit.  A peer whose model has not stepped (nor
 * been copied) refuses (NO_START): when every peer up does, the request
 * ends with nothing copied, the trainer's own model kept (a job that
 * starts).
 *
 * The copy is the peer's model, so the network's average moves by the
 * difference, as a trainer's own write moves it; rounds never do
 * (PROTOCOL.md 4.6.8).  Below it: the mesh (peers, edges), the model and the
 * core (whether a step runs); the mesh hands it the FETCH frames.
 */
#ifndef GOSSIPD_FETCH_H
#define GOSSIPD_FETCH_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "counters.h"
#include "fetch_msg.h"
#include "mesh.h"
#include "model.h"
#include "step.h"

#define FETCH_WINDOW 4               /* chunks asked and not yet received */
#define FETCH_CHUNK_DEFAULT (256u << 10)
#define FETCH_SNAPSHOT_IDLE_MS 10000
#define FETCH_RETRY_MS 50            /* after a peer said NO_ROOM */

typedef struct fetch_result {
	int err;                     /* 0, or a negative errno with text */
	char text[200];
	uint64_t bytes;
	uint32_t took_ms;
	char peer[GSP_FETCH_NAME_MAX + 1];
} fetch_result;

typedef void (*fetch_cb)(void *client, const fetch_result *r);

typedef enum fetch_state {
	FETCH_IDLE = 0,
	FETCH_ASKING,                /* chunks on their way from `from` */
	FETCH_WAITING,               /* for a retry, or for the step to end */
	FETCH_WRITTEN,               /* the copy is in the buffer: replying */
} fetch_state;

/* What a peer did for the request under way (fetcher.tried). */
enum {
	UNTRIED = 0,
	TRIED,                       /* refused, lost, or a bad copy */
	TRIED_UNSTARTED,             /* NO_START: its model has not stepped */
};

typedef struct fetcher {
	uv_loop_t *loop;
	mesh *mesh;
	model *model;
	stepper *step;
	counters *counters;
	/* Serving: the snapshot and whom it is for. */
	struct {
		uint32_t id;             /* 0: none */
		size_t peer;             /* the asker's slot */
		uint8_t *buf;
		uint64_t total, sent;
		uint8_t hash[GSP_FETCH_HASH_BYTES];
		uv_timer_t idle;
	} serve;
	uint32_t next_id;
	/* Asking. */
	fetch_state state;
	void *client;
	fetch_cb cb;
	uint64_t started_ms, deadline_ms;
	size_t from;                 /* the peer's slot */
	uint8_t tried[GSP_MAX_PEERS];    /* UNTRIED, TRIED, TRIED_UNSTARTED */
	uint32_t snapshot, chunk;
	uint64_t total, asked, received;
	uint8_t hash[GSP_FETCH_HASH_BYTES];
	uint8_t *staging;
	void *params;                /* the buffer asked for (a model that
				      * changes meanwhile ends the request) */
	uv_timer_t timer;            /* the time limit */
	uv_timer_t retry;            /* a peer's NO_ROOM, the step's end */
	const void *copied;          /* the buffer a FETCH last wrote (we
				      * serve it before a step then) */
} fetcher;

void fetch_init(fetcher *f, uv_loop_t *loop, mesh *ms, model *m, stepper *st,
		counters *c);
/* Closes the timers and frees the buffers (daemon stop). */
void fetch_close(fetcher *f);

/* The trainer's FETCH: done(client, result) once the copy is in the
 * buffer, or failed (no peer with our model, the time limit), never
 * from inside this call.  -EBUSY while one runs, -ENOENT without a
 * model, -EOPNOTSUPP for a local group. */
int fetch_start(fetcher *f, void *client, uint32_t time_limit_ms, fetch_cb done);
/* The client's connection closed: its request ends without a reply. */
void fetch_forget(fetcher *f, void *client);

/* The mesh's: a FETCH frame from p (a negative errno closes the link as
 * malformed), and p's session going down. */
int fetch_frame(fetcher *f, peer *p, const uint8_t *pt, size_t len);
void fetch_session_down(fetcher *f, peer *p);

#endif
