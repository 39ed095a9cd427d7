/* link: one authenticated TCP stream (link.h); the handshake messages
 * are link_handshake.c.  A malformed or
 * unauthenticated frame closes only its own link and bumps a counter. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "link_impl.h"
#include "log.h"
#include "proto.h"
#include "rxbuf.h"

/* Bytes read per callback at most, so one link cannot starve the loop. */
#define LINK_READ_CHUNK (256u * 1024)

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_timer(uv_timer_t *t);

static unsigned limit(unsigned set, unsigned dflt)
{
	return set ? set : dflt;
}

static uint64_t now_ms(const plink *l)
{
	return uv_now(l->env->loop);
}

/* ---- ending ----------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h)
{
	plink *l = h->data;
	if (--l->pending_close > 0)
		return;
	gsp_hs_clear(&l->hs);
	gsp_session_clear(&l->sess);
	rxbuf_free(&l->rx);
	free(l->spare);
	free(l);
}

/* Tells the owner, once. */
static void call_down(plink *l, const char *why)
{
	l->phase = LINK_CLOSING;
	if (l->down_called)
		return;
	l->down_called = true;
	l->env->ops->down(l, why ? why : "");
}

void link__destroy(plink *l)
{
	if (l->closing_handles)
		return;
	call_down(l, NULL);
	l->closing_handles = true;
	for (plink **pp = &l->env->links; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	l->env->counters->links_closed++;
	l->pending_close = 2;
	uv_close((uv_handle_t *)&l->timer, on_handle_closed);
	uv_close((uv_handle_t *)&l->tcp, on_handle_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	plink *l = req->data;
	free(req);
	link__destroy(l);
}

/* Sends GOODBYE when asked and possible, tells the owner why, and shuts
 * the stream down (queued frames go out first). */
static void end(plink *l, uint16_t reason, const char *text, const char *why);

void link_close(plink *l, uint16_t reason, const char *text)
{
	end(l, reason, text, NULL);
}

void link_close_all(link_env *env, uint16_t reason, const char *text)
{
	for (plink *l = env->links, *next; l; l = next) {
		next = l->next;
		link_close(l, reason, text);
	}
}

/* Ends l because of a failure the owner should record. */
void link__fail(plink *l, uint16_t reason, const char *text, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	end(l, reason, text, why);
}

/* ---- writing ---------------------------------------------------------- */

typedef struct write_req {
	uv_write_t req;
	plink *link;
	size_t len;
	size_t cap;              /* bytes of data[] allocated */
	uint8_t data[];
} write_req;

/* A written frame's memory: a model-sized one is kept for the next (an
 * exact round's frames are all that size, and new memory is a page
 * fault per page on the path to the send: bigmem.h). */
static void frame_done(plink *l, write_req *w)
{
	if (!l->spare && w->cap >= GSP_BIGMEM_MIN) {
		l->spare = w;
		return;
	}
	free(w);
}

/* Wire bytes count once the kernel took them: a write that failed (the
 * connection was reset) or was cancelled (the link closed) sent nothing. */
static void on_written(uv_write_t *req, int status)
{
	write_req *w = (write_req *)req;
	plink *l = w->link;
	l->queued -= w->len;
	if (status == 0) {
		l->stats->tx_bytes += w->len;
		l->stats->tx_frames++;
	}
	frame_done(l, w);
}

static int write_frame(plink *l, write_req *w)
{
	uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)w->len);
	w->link = l;
	int err = uv_write(&w->req, (uv_stream_t *)&l->tcp, &b, 1, on_written);
	if (err) {
		frame_done(l, w);
		return err;
	}
	l->queued += w->len;
	l->last_tx_ms = now_ms(l);
	return 0;
}

/* A frame of body_len bytes: the request with its header written (in
 * the spare frame's memory if it is large enough). */
static write_req *frame_new(plink *l, size_t body_len)
{
	size_t len = GSP_FRAME_HEADER + body_len;
	write_req *w = l->spare;
	if (w && w->cap >= len) {
		l->spare = NULL;
	} else {
		if (!(w = gsp_bigmem_malloc(sizeof(*w) + len)))
			return NULL;
		w->cap = len;
	}
	w->len = len;
	if (gsp_frame_header_write(w->data, GSP_FRAME_HEADER, (uint32_t)body_len) != 0) {
		frame_done(l, w);
		return NULL;
	}
	return w;
}

/* A handshake message, in the clear. */
int link__send_clear(plink *l, const uint8_t *msg, size_t len)
{
	write_req *w = frame_new(l, len);
	if (!w)
		return -ENOMEM;
	memcpy(w->data + GSP_FRAME_HEADER, msg, len);
	return write_frame(l, w);
}

/* Seals and writes; errors are the caller's to handle (no close). */
static int seal_and_write(plink *l, const uint8_t *pt, size_t len)
{
	if (l->queued > (l->env->max_queued ? l->env->max_queued : LINK_MAX_QUEUED))
		return -ENOBUFS;
	write_req *w = frame_new(l, len + GSP_AEAD_TAG_BYTES);
	if (!w)
		return -ENOMEM;
	if (gsp_session_seal(&l->sess, pt, len, w->data + GSP_FRAME_HEADER) != 0) {
		frame_done(l, w);
		return -EPROTO;
	}
	return write_frame(l, w);
}

int link_send(plink *l, const uint8_t *pt, size_t len)
{
	if (l->phase != LINK_OPEN)
		return -ENOTCONN;
	int err = seal_and_write(l, pt, len);
	if (err == -ENOBUFS) {
		gsp_warn("peer %s: %zu bytes unsent, closing the link", l->name,
			 l->queued);
		link__fail(l, GSP_BYE_TIMEOUT, "send queue full", "send queue full "
		     "(%zu bytes unsent)", l->queued);
	} else if (err) {
		gsp_warn("peer %s: cannot send a frame (%s), closing the link",
			 l->name, gsp_strerror(err));
		link__fail(l, GSP_BYE_INTERNAL, "cannot send a frame",
		     "cannot send a frame: %s", gsp_strerror(err));
	}
	return err;
}

static void end(plink *l, uint16_t reason, const char *text, const char *why)
{
	if (l->phase == LINK_CLOSING)
		return;
	if (l->phase == LINK_OPEN && reason != GSP_BYE_UNSPECIFIED) {
		uint8_t buf[1 + 2 + 2 + GSP_GOODBYE_TEXT_MAX];
		size_t n;
		gsp_msg_goodbye bye = {.reason = reason, .text = text,
				       .text_len = strlen(text)};
		if (bye.text_len > GSP_GOODBYE_TEXT_MAX)
			bye.text_len = GSP_GOODBYE_TEXT_MAX;
		/* Best effort: the link closes whether it goes out or not. */
		if (gsp_msg_goodbye_encode(&bye, buf, sizeof(buf), &n) == 0)
			(void)seal_and_write(l, buf, n);
	}
	bool connected = l->phase != LINK_CONNECTING;
	call_down(l, why);
	if (!connected) {
		/* uv_close cancels the connect request: its callback runs
		 * with UV_ECANCELED and frees it. */
		link__destroy(l);
		return;
	}
	uv_read_stop((uv_stream_t *)&l->tcp);
	uv_shutdown_t *req = malloc(sizeof(*req));
	if (req) {
		req->data = l;
		if (uv_shutdown(req, (uv_stream_t *)&l->tcp, on_shutdown) == 0)
			return;
		free(req);
	}
	link__destroy(l);
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
	unsigned tick = limit(env->ping_ms, LINK_PING_MS) / 4;
	unsigned rekey_tick = limit(env->rekey_ms, LINK_REKEY_MS) / 8;
	tick = tick < rekey_tick ? tick : rekey_tick;
	tick = tick < 500 ? tick : 500;
	uv_timer_start(&l->timer, on_timer, tick ? tick : 1, tick ? tick : 1);
	return l;
}

void link_bind(plink *l, void *owner, link_stats *stats, const char *name)
{
	l->owner = owner;
	if (stats && stats != l->stats) {
		stats->tx_bytes += l->stats->tx_bytes;
		stats->rx_bytes += l->stats->rx_bytes;
		stats->tx_frames += l->stats->tx_frames;
		stats->rx_frames += l->stats->rx_frames;
		l->stats = stats;
	}
	snprintf(l->name, sizeof(l->name), "%s", name);
}

void *link_owner(const plink *l)
{
	return l->owner;
}

void *link_env_ctx(const plink *l)
{
	return l->env->ctx;
}

void link_set_max_frame(plink *l, uint32_t max_body)
{
	l->max_frame = max_body;
	rxbuf_set_limit(&l->rx, GSP_FRAME_HEADER + (size_t)max_body);
}

bool link_is_initiator(const plink *l)
{
	return l->initiator;
}

link_phase link_get_phase(const plink *l)
{
	return l->phase;
}

const uint8_t *link_edge_seed(const plink *l)
{
	return l->sess.edge_seed;
}

/* Session keys agreed. */
void link__opened(plink *l)
{
	l->phase = LINK_OPEN;
	l->confirming = false;
	l->last_rx_ms = l->opened_ms = now_ms(l);
	l->rekey_at_ms = l->opened_ms + limit(l->env->rekey_ms, LINK_REKEY_MS);
	link_set_max_frame(l, GSP_PROTO_CONTROL_MAX);
	l->env->ops->up(l);
}

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
		l->last_rx_ms = now_ms(l);
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
				link__preauth_warn(l, "closing a connection: %s",
						   gsp_strerror(err));
			if (!why[0] && err != -EACCES)
				snprintf(why, sizeof(why), "closed the link: %s",
					 gsp_strerror(err));
			end(l, err == -EACCES ? GSP_BYE_NOT_ALLOWED : GSP_BYE_MALFORMED,
			    gsp_strerror(err), why[0] ? why : NULL);
			return;
		}
	}
	if (l->phase != LINK_CLOSING && off)
		(void)rxbuf_consume(&l->rx, off);
}

static void on_timer(uv_timer_t *t)
{
	plink *l = t->data;
	uint64_t now = now_ms(l);
	if (l->phase == LINK_CLOSING)
		return;
	if (l->phase != LINK_OPEN) {
		/* An absolute deadline from the start: trickled bytes do not
		 * extend it. */
		if (now - l->created_ms > limit(l->env->hs_timeout_ms, LINK_HS_TIMEOUT_MS))
			link__fail(l, GSP_BYE_UNSPECIFIED, "", "handshake timed out");
		return;
	}
	unsigned dead = limit(l->env->dead_ms, LINK_DEAD_MS);
	if (now - l->last_rx_ms > dead) {
		gsp_warn("peer %s: no frame for %u ms, closing", l->name, dead);
		link__fail(l, GSP_BYE_TIMEOUT, "no frame received in time",
		     "no frame for %u ms", dead);
		return;
	}
	uint64_t expire = (uint64_t)limit(l->env->rekey_ms, LINK_REKEY_MS) * 3 / 2;
	if (now - l->opened_ms >= expire) {
		gsp_warn("peer %s: session keys %llu ms old, closing", l->name,
			 (unsigned long long)expire);
		link__fail(l, GSP_BYE_TIMEOUT, "session keys expired",
		     "session keys expired (%llu ms old)", (unsigned long long)expire);
		return;
	}
	if (now - l->last_tx_ms >= limit(l->env->ping_ms, LINK_PING_MS))
		link__ping(l);
	if (l->phase == LINK_OPEN && l->initiator && now >= l->rekey_at_ms &&
	    l->env->ops->rekey) {
		l->rekey_at_ms = now + limit(l->env->hs_timeout_ms, LINK_HS_TIMEOUT_MS);
		l->env->ops->rekey(l);
	}
}

void link__start_reading(plink *l)
{
	uv_tcp_nodelay(&l->tcp, 1);
	uv_read_start((uv_stream_t *)&l->tcp, on_alloc, on_read);
}

void link__ping(plink *l)
{
	uint8_t buf[32];
	size_t n;
	gsp_msg_ping ping = {.nonce = ++l->ping_nonce, .time_ns = uv_hrtime()};
	if (gsp_msg_ping_encode(&ping, buf, sizeof(buf), &n) == 0)
		link_send(l, buf, n);
}
