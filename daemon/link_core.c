/* link: the bottom of the link module (link.h; its files, bottom to
 * top: link_core.c, link_handshake.c, link.c, link_open.c, each calling
 * only those before it).  Here: ending a link (GOODBYE, telling the
 * owner once, closing the handles), writing frames (clear handshake
 * messages, AEAD frames, the send queue's cap), a link's state changes
 * and accessors, PING, and the rate-limited warnings about links not
 * yet authenticated. */
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
	l->last_tx_ms = link__now_ms(l);
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

/* ---- state ------------------------------------------------------------ */

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
	l->last_rx_ms = l->opened_ms = link__now_ms(l);
	l->rekey_at_ms = l->opened_ms + link__limit(l->env->rekey_ms, LINK_REKEY_MS);
	link_set_max_frame(l, GSP_PROTO_CONTROL_MAX);
	l->env->ops->up(l);
}

void link__ping(plink *l)
{
	uint8_t buf[32];
	size_t n;
	gsp_msg_ping ping = {.nonce = ++l->ping_nonce, .time_ns = uv_hrtime()};
	if (gsp_msg_ping_encode(&ping, buf, sizeof(buf), &n) == 0)
		link_send(l, buf, n);
}

static void preauth_vwarn(plink *l, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

void link_preauth_warn(plink *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	preauth_vwarn(l, fmt, ap);
	va_end(ap);
}

static void preauth_vwarn(plink *l, const char *fmt, va_list ap)
{
	link_env *env = l->env;
	uint64_t now = uv_now(env->loop);
	if (now - env->log_window_ms >= 1000) {
		if (env->log_suppressed)
			gsp_warn("%u more warnings about unauthenticated connections "
				 "were not logged", env->log_suppressed);
		env->log_window_ms = now;
		env->log_lines = env->log_suppressed = 0;
	}
	if (env->log_lines >= LINK_PREAUTH_LOG_PER_S) {
		env->log_suppressed++;
		return;
	}
	env->log_lines++;
	char line[300];
	vsnprintf(line, sizeof(line), fmt, ap);
	gsp_warn("%s (from %s)", line, l->addr);
}
