/* link: a link's stream (link.h), above link_core.c and link_handshake.c
 * in the module's order (link_impl.h): a new link's handles, reading
 * frames (the handshake's to link_handshake.c, PING, PONG and GOODBYE
 * here, the rest up), and the timer (the handshake's deadline,
 * heartbeats, the dead-link timeout, the session's age and the rekey).
 * A malformed or unauthenticated frame closes only its own link and
 * bumps a counter. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "link_impl.h"
#include "log.h"
#include "proto.h"
#include "rxbuf.h"

/* Bytes read per callback at most, so one link cannot starve the loop. */
#define LINK_READ_CHUNK (256u * 1024)

/* ---- reading ---------------------------------------------------------- */

/* PING, PONG and GOODBYE are the link's own; the rest goes up. */
static int on_sealed(plink *l, const uint8_t *pt, size_t len)
{
	uint8_t type;
	int err = gsp_msg_type(pt, len, &type);
	if (err)
		return err;
	switch (type) {
	case GSP_MSG_PING: {
		gsp_msg_ping ping;
		uint8_t buf[32];
		size_t n;
		if ((err = gsp_msg_ping_decode(pt, len, &ping)) != 0)
			return err;
		if (gsp_msg_pong_encode(&ping, buf, sizeof(buf), &n) == 0)
			link_send(l, buf, n);
		return 0;
	}
	case GSP_MSG_PONG: {
		gsp_msg_ping pong;
		if ((err = gsp_msg_pong_decode(pt, len, &pong)) != 0)
			return err;
		if (pong.nonce == l->ping_nonce)
			l->stats->rtt_ns = uv_hrtime() - pong.time_ns;
		return 0;
	}
	case GSP_MSG_GOODBYE: {
		gsp_msg_goodbye bye;
		if ((err = gsp_msg_goodbye_decode(pt, len, &bye)) != 0)
			return err;
		l->env->ops->goodbye(l, bye.reason, bye.text, bye.text_len);
		link_close(l, GSP_BYE_UNSPECIFIED, "");
		return 0;
	}
	default:
		return l->env->ops->frame(l, pt, len);
	}
}

/* body is the frame's bytes in the receive buffer, which the frame's
 * plaintext overwrites: decrypted in place, a model-sized frame needs no
 * second buffer of its size (new memory: bigmem.h). */
static int on_frame(plink *l, uint8_t *body, size_t len, char *why,
		    size_t why_len)
{
	if (l->phase == LINK_HANDSHAKE && !l->confirming)
		return link__hs_frame(l, body, len, why, why_len);
	if (len <= GSP_AEAD_TAG_BYTES)
		return -EBADMSG;
	size_t pt_len = len - GSP_AEAD_TAG_BYTES;
	uint8_t *pt = body;
	int err = gsp_session_open(&l->sess, body, len, pt);
	if (!err && l->confirming) {
		/* The initiator's first transport frame opened: it holds the
		 * session keys, so the handshake was not a replay. */
		l->confirming = false;
		link__opened(l);     /* the owner may close it at once */
	}
	if (!err && l->phase == LINK_OPEN) {
		l->last_rx_ms = link__now_ms(l);
		l->stats->rx_frames++;
		err = on_sealed(l, pt, pt_len);
	}
	return err;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	plink *l = h->data;
	uint8_t *p;
	size_t room;
	if (rxbuf_space(&l->rx, LINK_READ_CHUNK, &p, &room) != 0) {
		*buf = uv_buf_init(NULL, 0);   /* libuv reports UV_ENOBUFS */
		return;
	}
	*buf = uv_buf_init((char *)p, (unsigned)room);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	plink *l = s->data;
	if (n == 0 || l->phase == LINK_CLOSING)
		return;
	if (n < 0) {
		if (l->phase == LINK_HANDSHAKE)
			link__fail(l, GSP_BYE_UNSPECIFIED, "", "the peer closed the connection "
			     "during the handshake (does it list this node's public "
			     "key? same protocol version?)");
		else {
			gsp_info("peer %s: link closed (%s)", l->name,
				 uv_strerror((int)n));
			link__fail(l, GSP_BYE_UNSPECIFIED, "", "link closed: %s",
			     uv_strerror((int)n));
		}
		return;
	}
	/* Every byte read, handshake and partial frames included (wire). */
	l->stats->rx_bytes += (uint64_t)n;
	if (rxbuf_commit(&l->rx, (size_t)n) != 0) {
		link__fail(l, GSP_BYE_INTERNAL, "receive buffer", "receive buffer overrun");
		return;
	}
	size_t off = 0;
	while (l->phase == LINK_HANDSHAKE || l->phase == LINK_OPEN) {
		uint8_t *body;
		uint32_t len;
		char why[256] = "";
		int err = rxbuf_frame(&l->rx, &off, l->max_frame, &body, &len);
		if (err == -EAGAIN)
			break;
		if (!err)
			err = on_frame(l, body, len, why, sizeof(why));
		if (err) {
			if (err != -EACCES)
				l->env->counters->rx_malformed++;
			if (l->owner)
				gsp_warn("%s: closing link: %s", l->name, gsp_strerror(err));
			else
				link_preauth_warn(l, "closing a connection: %s",
						   gsp_strerror(err));
			if (!why[0] && err != -EACCES)
				snprintf(why, sizeof(why), "closed the link: %s",
					 gsp_strerror(err));
			link__fail(l, err == -EACCES ? GSP_BYE_NOT_ALLOWED
						     : GSP_BYE_MALFORMED,
				   gsp_strerror(err), "%s", why);
			return;
		}
	}
	if (l->phase != LINK_CLOSING && off)
		(void)rxbuf_consume(&l->rx, off);
}

static void on_timer(uv_timer_t *t)
{
	plink *l = t->data;
	uint64_t now = link__now_ms(l);
	if (l->phase == LINK_CLOSING)
		return;
	if (l->phase != LINK_OPEN) {
		/* An absolute deadline from the start: trickled bytes do not
		 * extend it. */
		if (now - l->created_ms > link__limit(l->env->hs_timeout_ms, LINK_HS_TIMEOUT_MS))
			link__fail(l, GSP_BYE_UNSPECIFIED, "", "handshake timed out");
		return;
	}
	unsigned dead = link__limit(l->env->dead_ms, LINK_DEAD_MS);
	if (now - l->last_rx_ms > dead) {
		gsp_warn("peer %s: no frame for %u ms, closing", l->name, dead);
		link__fail(l, GSP_BYE_TIMEOUT, "no frame received in time",
		     "no frame for %u ms", dead);
		return;
	}
	uint64_t expire = (uint64_t)link__limit(l->env->rekey_ms, LINK_REKEY_MS) * 3 / 2;
	if (now - l->opened_ms >= expire) {
		gsp_warn("peer %s: session keys %llu ms old, closing", l->name,
			 (unsigned long long)expire);
		link__fail(l, GSP_BYE_TIMEOUT, "session keys expired",
		     "session keys expired (%llu ms old)", (unsigned long long)expire);
		return;
	}
	if (now - l->last_tx_ms >= link__limit(l->env->ping_ms, LINK_PING_MS))
		link__ping(l);
	if (l->phase == LINK_OPEN && l->initiator && now >= l->rekey_at_ms &&
	    l->env->ops->rekey) {
		l->rekey_at_ms = now + link__limit(l->env->hs_timeout_ms, LINK_HS_TIMEOUT_MS);
		l->env->ops->rekey(l);
	}
}

void link__start_reading(plink *l)
{
	uv_tcp_nodelay(&l->tcp, 1);
	uv_read_start((uv_stream_t *)&l->tcp, on_alloc, on_read);
}

/* ---- setting up ------------------------------------------------------- */

plink *link__new(link_env *env, bool initiator)
{
	plink *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->env = env;
	l->initiator = initiator;
	l->phase = initiator ? LINK_CONNECTING : LINK_HANDSHAKE;
	l->stats = &l->own_stats;
	snprintf(l->name, sizeof(l->name), "unauthenticated peer");
	l->max_frame = GSP_PROTO_PREAUTH_MAX;
	rxbuf_init(&l->rx, GSP_FRAME_HEADER + GSP_PROTO_PREAUTH_MAX);
	l->created_ms = l->last_rx_ms = l->last_tx_ms = uv_now(env->loop);
	uv_tcp_init(env->loop, &l->tcp);
	uv_timer_init(env->loop, &l->timer);
	l->tcp.data = l;
	l->timer.data = l;
	l->next = env->links;
	env->links = l;
	/* Often enough for the heartbeat, the deadlines and the rekey. */
	unsigned tick = link__limit(env->ping_ms, LINK_PING_MS) / 4;
	unsigned rekey_tick = link__limit(env->rekey_ms, LINK_REKEY_MS) / 8;
	tick = tick < rekey_tick ? tick : rekey_tick;
	tick = tick < 500 ? tick : 500;
	uv_timer_start(&l->timer, on_timer, tick ? tick : 1, tick ? tick : 1);
	return l;
}
