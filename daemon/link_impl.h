/*
 * link's insides, shared by the link module's files.  Nothing outside the
 * module includes this.  Its files, bottom to top, each calling only
 * those before it (tests/daemon/test_layers.py, LINK_ORDER):
 *   link_core.c       ending, writing frames, state changes, PING, the
 *                     pre-auth warnings
 *   link_handshake.c  the handshake messages
 *   link.c            a new link, reading frames, the timer
 *   link_open.c       connect and accept (the pre-auth caps and rate)
 * The link tells its owner only through link_ops, registered in its env.
 */
#ifndef GOSSIPD_LINK_IMPL_H
#define GOSSIPD_LINK_IMPL_H

#include "link.h"
#include "rxbuf.h"

/* Which handshake message a link in LINK_HANDSHAKE waits for. */
typedef enum link_hs_wait {
	LINK_WAIT_WHO_OR_INIT = 0,   /* responder, at first */
	LINK_WAIT_INIT,              /* responder, HS_CERT sent */
	LINK_WAIT_CERT,              /* initiator, keyless: HS_WHO sent */
	LINK_WAIT_RESP,              /* initiator, HS_INIT sent */
} link_hs_wait;

struct plink {
	link_env *env;
	uv_tcp_t tcp;
	uv_timer_t timer;        /* handshake deadline, then heartbeats */
	link_phase phase;
	link_hs_wait hs_wait;
	bool initiator;
	bool confirming;         /* responder: keys agreed, not yet confirmed */
	bool down_called;
	bool closing_handles;
	int pending_close;       /* handles still to close */
	void *owner;
	link_stats *stats;
	link_stats own_stats;    /* until bound */
	char name[24];
	char addr[64];           /* the remote address, ip:port */
	char host[48];           /* its ip part (pre-auth caps) */
	uint8_t remote_key[GSP_KEY_BYTES];   /* initiator: the responder's
					      * (keyless: once learned) */
	gsp_hs hs;
	gsp_session sess;
	rxbuf rx;
	uint32_t max_frame;
	size_t queued;           /* bytes handed to uv_write, not yet done */
	struct write_req *spare; /* a written model-sized frame, for the next */
	uint64_t created_ms;
	uint64_t opened_ms;      /* session keys agreed (and confirmed) */
	uint64_t rekey_at_ms;    /* initiator: when to ask for a new session */
	uint64_t last_rx_ms;     /* the last authenticated frame */
	uint64_t last_tx_ms;
	uint64_t ping_nonce;
	plink *next;              /* in env->links */
};

/* set, or dflt when set is 0 (the env's limits). */
static inline unsigned link__limit(unsigned set, unsigned dflt)
{
	return set ? set : dflt;
}

static inline uint64_t link__now_ms(const plink *l)
{
	return uv_now(l->env->loop);
}

/* link_core.c */

/* Closes the handles; memory goes in their close callback. */
void link__destroy(plink *l);
/* Ends l for a failure its owner should record (why, from fmt). */
void link__fail(plink *l, uint16_t reason, const char *text, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A handshake message, in the clear. */
int link__send_clear(plink *l, const uint8_t *msg, size_t len);
/* Session keys agreed (and, at the responder, confirmed by the
 * initiator's first transport frame): frames flow, ops->up is told. */
void link__opened(plink *l);
/* Sends a PING (heartbeat, RTT, and the initiator's confirmation). */
void link__ping(plink *l);

/* link_handshake.c */

/* Initiator, once connected: sends HS_INIT, or HS_WHO for a keyless
 * dial (hs_wait LINK_WAIT_CERT set by link_connect). */
int link__hs_initiate(plink *l);
/* A frame before the handshake ended.  why: the reason to record, for
 * a refusal the owner should see. */
int link__hs_frame(plink *l, const uint8_t *body, size_t len, char *why,
		   size_t why_len);

/* link.c */

/* A new link in env's list (its handles open, its timer running). */
plink *link__new(link_env *env, bool initiator);
/* Starts reading the stream (TCP_NODELAY on). */
void link__start_reading(plink *l);

#endif
