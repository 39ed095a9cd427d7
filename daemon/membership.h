/*
 * membership: this node's view of the cluster (issue 36).  It owns our
 * own member record (our keys, endpoints, certificate and incarnation,
 * signed with our signing key), the member table (members.h) that the
 * MEMBERS messages of every session feed, the full sync a new session
 * gets, the dissemination of every record that changed to the other
 * sessions, and the neighbour set computed from the table (graph.h),
 * handed up whenever it changes.
 *
 * A record is stored only if it decodes and gsp_member_verify() accepts
 * it against the cluster's authority (its certificate signed by the
 * authority, unexpired, not revoked, naming the record's keys; the
 * record signed by the node itself); others are dropped and counted,
 * and the link stays.  Membership needs an authority: without one a
 * record's signing key is as good as the link it came on.
 *
 * Pure and without re-entry: no libuv, no clock (times are parameters).
 * Calls (session_up, session_down, frame) only record what is to be
 * done; membership_run() does it: it sends through ops->send and calls
 * ops->neighbours, so neither runs inside a caller's callback.  A
 * session that goes down inside ops->send is left alone from then on.
 */
#ifndef GOSSIPD_MEMBERSHIP_H
#define GOSSIPD_MEMBERSHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "key.h"
#include "members.h"
#include "members_msg.h"
#include "revoke.h"

#define MEMBERSHIP_SESSIONS_MAX 1024    /* as GSP_MAX_PEERS */
#define MEMBERSHIP_PUSH_MAX 256         /* changed records waiting to go out */
/* Records a session may bring, verified, per second after its first full
 * sync (which the budget's size, max_members + MEMBERSHIP_PUSH_MAX,
 * holds): a peer that floods records costs this node at most that many
 * signature checks a second; what goes over is dropped unverified and
 * asked again as a full sync once the budget is whole. */
#define MEMBERSHIP_RECORDS_PER_S 256

typedef struct membership_ops {
	/* One MEMBERS message to session's peer: 0, or a negative errno
	 * (the session is then going down; session_down follows, maybe
	 * inside this call). */
	int (*send)(void *ctx, void *session, const uint8_t *msg, size_t len);
	/* The computed neighbour set changed: set[0..n), ascending by
	 * position; each one's record is membership_record(). */
	void (*neighbours)(void *ctx, const graph_neighbour *set, size_t n);
} membership_ops;

typedef struct membership_config {
	gsp_topology topology;
	size_t max_members;                     /* 1..MEMBERS_MAX */
	const uint8_t *authority;               /* Ed25519 public key, required */
	const gsp_revoke *revoked;              /* NULL: none; may change (set_revoked) */
	const gsp_cert *cert;                   /* ours, naming our keys */
	const gsp_member_endpoint *endpoints;    /* where others reach us */
	size_t n_endpoints;                     /* 1..GSP_MEMBER_ENDPOINTS_MAX */
	uint64_t incarnation;                   /* our first: above any earlier
						 * run's (e.g. the start time in ms) */
} membership_config;

typedef struct membership_counters {
	uint64_t messages_in, messages_out;
	uint64_t records_in;                    /* records received */
	uint64_t records_refused;               /* signature, certificate, revoked */
	uint64_t syncs_asked, syncs_sent;       /* full syncs asked for, answered */
	uint64_t syncs_received;                /* full syncs whose last part came */
	uint64_t refutations;                   /* our incarnation raised */
	uint64_t push_dropped;                  /* changes beyond MEMBERSHIP_PUSH_MAX
						 * (the next full sync carries them) */
	uint64_t records_limited;               /* over a session's budget: dropped
						 * unverified, a full sync asked again */
	uint64_t graph_changes;
} membership_counters;

typedef struct membership_session {
	void *handle;                           /* the caller's; NULL: a free slot */
	bool ask;                               /* to send: our ASK and record */
	bool sync;                              /* to send: a full sync */
	bool budget_set;                        /* budget filled at its first frame */
	uint64_t budget;                        /* records it may bring, x 1000 */
	uint64_t budget_ms;                     /* when the budget was last filled */
	bool resync;                            /* records dropped: ask again */
} membership_session;

/* A record that changed and goes to every session but the one it came
 * from. */
typedef struct membership_push {
	uint8_t key[GSP_KEY_BYTES];
	void *from;                             /* NULL: ours */
} membership_push;

typedef struct membership {
	members table;
	gsp_member self;
	uint8_t sign_sk[GSP_SIGN_SECRET_BYTES];
	uint8_t authority[GSP_SIGN_PUBLIC_BYTES];
	const gsp_revoke *revoked;
	gsp_topology topology;
	membership_session session[MEMBERSHIP_SESSIONS_MAX];
	size_t n_session;                       /* slots used so far */
	membership_push push[MEMBERSHIP_PUSH_MAX];
	size_t n_push;
	graph_neighbour *nb;                    /* the neighbour set handed up */
	size_t n_nb;
	bool nb_known;                          /* handed up at least once */
	bool graph_dirty;                       /* the table's graph members changed */
	bool running;                           /* inside membership_run() */
	const membership_ops *ops;
	void *ctx;
	membership_counters counters;
} membership;

/* Our record from key and cfg, alone in a new table.  -EINVAL with the
 * reason in err (no authority, a certificate that does not name our
 * keys or does not verify at unix_now), -ENOMEM. */
int membership_init(membership *ms, const gsp_keypair *key,
		    const membership_config *cfg, const membership_ops *ops,
		    void *ctx, uint64_t now_ms, uint64_t unix_now, char *err,
		    size_t err_len) GSP_MUST_CHECK;
void membership_free(membership *ms);
/* A new revocation list (SIGHUP): records are checked against it from
 * now on, and members it names are dropped from the graph. */
void membership_set_revoked(membership *ms, const gsp_revoke *revoked);

/* A session is up: it gets our ASK and record, then answers, full syncs
 * and pushes.  -ENOSPC if MEMBERSHIP_SESSIONS_MAX are up. */
int membership_session_up(membership *ms, void *session) GSP_MUST_CHECK;
void membership_session_down(membership *ms, void *session);
/* A MEMBERS message from session: 0, or a negative errno for one that
 * does not decode (the link treats it as malformed).  Records that do
 * not verify are dropped and counted. */
int membership_frame(membership *ms, void *session, const uint8_t *msg,
		     size_t len, uint64_t now_ms, uint64_t unix_now) GSP_MUST_CHECK;
/* The failure detector's verdict on key's member (members_set_detected):
 * the graph is computed again at the next run if it changed. */
void membership_detected(membership *ms, const uint8_t key[GSP_KEY_BYTES], bool dead);
/* The sessions up. */
size_t membership_sessions(const membership *ms);
/* We leave: our record says LEFT (at our incarnation) and goes out. */
int membership_leave(membership *ms, uint64_t now_ms) GSP_MUST_CHECK;
/* Whether anything waits for membership_run(). */
bool membership_pending(const membership *ms);
/* Sends what waits and hands up a changed neighbour set. */
void membership_run(membership *ms, uint64_t now_ms);

/* The record held of key, or NULL. */
const gsp_member *membership_record(const membership *ms,
				    const uint8_t key[static GSP_KEY_BYTES]);

#endif
