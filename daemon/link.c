/* gossipd peer links: the TCP listener, outbound connections with
 * exponential backoff and jitter, the handshake, AEAD framing of every
 * frame after it, heartbeats, and closing with GOODBYE.  A malformed or
 * unauthenticated frame closes only its own link and bumps a counter. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "daemon.h"
#include "endpoint.h"
#include "log.h"

static void link_on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void dial_next_or_later(gsp_peer *p);
static void peer_forget_addrs(gsp_peer *p);

uint64_t gsp_now_ms(const gsp_daemon *d)
{
	return uv_now(d->loop);
}

static void peer_verror(gsp_peer *p, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void peer_verror(gsp_peer *p, const char *fmt, va_list ap)
{
	vsnprintf(p->last_error, sizeof(p->last_error), fmt, ap);
}

void gsp_peer_error(gsp_peer *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	peer_verror(p, fmt, ap);
	va_end(ap);
}

/* An error of link l for its peer's last_error, unless another session
 * of that peer is the established one. */
static void link_error(gsp_link *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void link_error(gsp_link *l, const char *fmt, ...)
{
	gsp_peer *p = l->peer;
	if (!p || (p->link && p->link != l))
		return;
	va_list ap;
	va_start(ap, fmt);
	peer_verror(p, fmt, ap);
	va_end(ap);
}

/* ---- writing ---------------------------------------------------------- */

typedef struct write_req {
	uv_write_t req;
	gsp_link *link;
	size_t len;
	uint8_t data[];
} write_req;

static void on_written(uv_write_t *req, int status)
{
	write_req *w = (write_req *)req;
	w->link->queued -= w->len;
	free(w);
}

static void link_write(gsp_link *l, write_req *w)
{
	uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)w->len);
	w->link = l;
	l->queued += w->len;
	l->last_tx_ms = gsp_now_ms(l->d);
	if (l->peer) {
		l->peer->tx_bytes += w->len;
		l->peer->tx_frames++;
	}
	if (uv_write(&w->req, (uv_stream_t *)&l->tcp, &b, 1, on_written) != 0) {
		l->queued -= w->len;
		free(w);
	}
}

static void send_clear(gsp_link *l, const uint8_t *msg, size_t len)
{
	write_req *w = malloc(sizeof(*w) + GSP_FRAME_HEADER + len);
	if (!w)
		return;
	if (gsp_frame_header_write(w->data, GSP_FRAME_HEADER, (uint32_t)len) != 0) {
		free(w);
		return;
	}
	memcpy(w->data + GSP_FRAME_HEADER, msg, len);
	w->len = GSP_FRAME_HEADER + len;
	link_write(l, w);
}

void gsp_link_send(gsp_link *l, const uint8_t *pt, size_t len)
{
	if (l->state == GSP_LINK_CLOSING || l->state == GSP_LINK_HANDSHAKE)
		return;
	if (l->queued > GSP_LINK_MAX_QUEUED) {
		gsp_warn("peer %s: %zu bytes unsent, closing the link",
			 l->peer ? l->peer->name : "?", l->queued);
		gsp_link_close(l, GSP_BYE_TIMEOUT, "send queue full");
		return;
	}
	size_t body = len + GSP_AEAD_TAG_BYTES;
	write_req *w = malloc(sizeof(*w) + GSP_FRAME_HEADER + body);
	if (!w)
		return;
	if (gsp_frame_header_write(w->data, GSP_FRAME_HEADER, (uint32_t)body) != 0 ||
	    gsp_session_seal(&l->sess, pt, len, w->data + GSP_FRAME_HEADER) != 0) {
		free(w);
		gsp_link_close(l, GSP_BYE_INTERNAL, "cannot seal a frame");
		return;
	}
	w->len = GSP_FRAME_HEADER + body;
	link_write(l, w);
}

/* ---- closing ---------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h)
{
	gsp_link *l = h->data;
	if (--l->pending_close > 0)
		return;
	gsp_hs_clear(&l->hs);
	gsp_session_clear(&l->sess);
	free(l->rbuf);
	free(l);
}

static void link_unlink(gsp_link *l)
{
	gsp_daemon *d = l->d;
	for (gsp_link **pp = &d->links; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
}

static void link_destroy(gsp_link *l)
{
	if (l->closing_handles)
		return;
	l->closing_handles = true;
	l->state = GSP_LINK_CLOSING;
	link_unlink(l);
	l->d->counters.links_closed++;
	gsp_peer *p = l->peer;
	if (p && p->link == l) {
		p->link = NULL;
		gsp_edge_session_down(p);
		gsp_peer_dial_later(p);
	}
	l->pending_close = 2;
	uv_close((uv_handle_t *)&l->timer, on_handle_closed);
	uv_close((uv_handle_t *)&l->tcp, on_handle_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	gsp_link *l = req->data;
	free(req);
	link_destroy(l);
}

void gsp_link_close(gsp_link *l, uint16_t reason, const char *text)
{
	if (l->state == GSP_LINK_CLOSING)
		return;
	if (l->state != GSP_LINK_HANDSHAKE && reason != GSP_BYE_UNSPECIFIED) {
		uint8_t buf[1 + 2 + 2 + GSP_GOODBYE_TEXT_MAX];
		size_t n;
		gsp_msg_goodbye bye = {.reason = reason, .text = text,
				       .text_len = strlen(text)};
		if (bye.text_len > GSP_GOODBYE_TEXT_MAX)
			bye.text_len = GSP_GOODBYE_TEXT_MAX;
		if (gsp_msg_goodbye_encode(&bye, buf, sizeof(buf), &n) == 0)
			gsp_link_send(l, buf, n);
	}
	/* Mark the peer's slot free now, so a redial can start at once. */
	gsp_peer *p = l->peer;
	if (p && p->link == l) {
		p->link = NULL;
		gsp_edge_session_down(p);
		gsp_peer_dial_later(p);
	}
	l->state = GSP_LINK_CLOSING;
	uv_read_stop((uv_stream_t *)&l->tcp);
	uv_shutdown_t *req = malloc(sizeof(*req));
	if (req) {
		req->data = l;
		if (uv_shutdown(req, (uv_stream_t *)&l->tcp, on_shutdown) == 0)
			return;
		free(req);
	}
	link_destroy(l);
}

/* ---- peers and dialing ------------------------------------------------ */

static gsp_peer *peer_by_key(gsp_daemon *d, const uint8_t key[32])
{
	for (size_t i = 0; i < d->n_peers; i++)
		if (!d->peers[i].removed &&
		    sodium_memcmp(d->peers[i].cfg.public_key, key, 32) == 0)
			return &d->peers[i];
	return NULL;
}

static void link_heartbeat(uv_timer_t *t);

static gsp_link *link_new(gsp_daemon *d, bool initiator)
{
	gsp_link *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->d = d;
	l->initiator = initiator;
	l->max_frame = GSP_PROTO_PREAUTH_MAX;
	l->last_rx_ms = l->last_tx_ms = gsp_now_ms(d);
	uv_tcp_init(d->loop, &l->tcp);
	uv_timer_init(d->loop, &l->timer);
	l->tcp.data = l;
	l->timer.data = l;
	l->next = d->links;
	d->links = l;
	uv_timer_start(&l->timer, link_heartbeat, 500, 500);
	return l;
}

static void on_connect(uv_connect_t *req, int status)
{
	gsp_link *l = req->data;
	gsp_peer *p = l->peer;
	free(req);
	if (p)
		p->dialing = false;
	if (status < 0 || l->state == GSP_LINK_CLOSING) {
		if (p && status < 0) {
			gsp_debug("peer %s: connect to %s: %s", p->name,
				  p->cfg.endpoint, uv_strerror(status));
			link_error(l, "connect to %s: %s", p->cfg.endpoint,
				   uv_strerror(status));
		}
		l->peer = NULL;   /* not its session: keep the peer free */
		link_destroy(l);
		if (p)
			dial_next_or_later(p);
		return;
	}
	peer_forget_addrs(p);
	uint8_t ts[GSP_TAI64N_BYTES], init[GSP_HS_INIT_MSG_BYTES];
	gsp_hs_init msg = {.version = GSP_PROTO_VERSION};
	gsp_hs_timestamp(ts);
	size_t n;
	if (gsp_hs_initiate(&l->hs, &l->d->key, p->cfg.public_key, ts,
			    msg.payload) != 0 ||
	    gsp_hs_init_encode(&msg, init, sizeof(init), &n) != 0) {
		l->peer = NULL;
		link_destroy(l);
		gsp_peer_dial_later(p);
		return;
	}
	send_clear(l, init, n);
	uv_tcp_nodelay(&l->tcp, 1);
	uv_read_start((uv_stream_t *)&l->tcp, on_alloc, link_on_read);
}

/* Drops the addresses a name resolved to. */
static void peer_forget_addrs(gsp_peer *p)
{
	if (p->addrs)
		uv_freeaddrinfo(p->addrs);
	p->addrs = p->addr_next = NULL;
}

/* Starts a TCP connection to ss for peer p; on failure, retries later. */
static void connect_to(gsp_peer *p, const struct sockaddr *sa)
{
	gsp_link *l = link_new(p->d, true);
	uv_connect_t *req = malloc(sizeof(*req));
	if (!l || !req) {
		free(req);
		if (l)
			link_destroy(l);
		peer_forget_addrs(p);
		gsp_peer_dial_later(p);
		return;
	}
	/* The link is this peer's only while the handshake runs. */
	l->peer = p;
	req->data = l;
	p->dialing = true;
	int err = uv_tcp_connect(req, &l->tcp, sa, on_connect);
	if (err) {
		free(req);
		p->dialing = false;
		l->peer = NULL;
		link_destroy(l);
		dial_next_or_later(p);
	}
}

/* Dials the next address a name resolved to, or retries later when none
 * is left. */
static void dial_next_or_later(gsp_peer *p)
{
	while (p->addr_next && !p->d->stopping && !p->removed) {
		const struct addrinfo *ai = p->addr_next;
		p->addr_next = ai->ai_next;
		if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6) {
			connect_to(p, ai->ai_addr);
			return;
		}
	}
	peer_forget_addrs(p);
	gsp_peer_dial_later(p);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	gsp_peer *p = req->data;
	free(req);
	p->dialing = false;
	if (status < 0) {
		/* Loud on the first failure of a series, quiet on retries. */
		gsp_log(p->backoff_ms == GSP_BACKOFF_MIN_MS ? GSP_LOG_WARNING
							   : GSP_LOG_DEBUG,
			"peer %s: cannot resolve Endpoint '%s': %s", p->name,
			p->cfg.endpoint, uv_strerror(status));
		if (!p->link)
			gsp_peer_error(p, "cannot resolve Endpoint '%s': %s",
				       p->cfg.endpoint, uv_strerror(status));
		gsp_peer_dial_later(p);
		return;
	}
	peer_forget_addrs(p);
	p->addrs = p->addr_next = res;
	if (p->d->stopping || p->removed || p->link) {
		peer_forget_addrs(p);
		return;
	}
	dial_next_or_later(p);
}

/* Dials a peer's Endpoint: directly if numeric, else after resolving the
 * name (again before every attempt, so a moved name is followed). */
static void dial(uv_timer_t *t)
{
	gsp_peer *p = t->data;
	gsp_daemon *d = p->d;
	struct sockaddr_storage ss;
	if (d->stopping || p->removed || p->link || p->dialing || !p->cfg.endpoint[0])
		return;
	int err = gsp_endpoint_numeric(p->cfg.endpoint, &ss);
	if (err == 0) {
		connect_to(p, (struct sockaddr *)&ss);
		return;
	}
	char host[GSP_HOSTNAME_MAX + 1], port[8];
	uint16_t port_no;
	uv_getaddrinfo_t *req = malloc(sizeof(*req));
	if (err != -ENOENT || !req ||
	    gsp_endpoint_split(p->cfg.endpoint, host, sizeof(host), &port_no)) {
		free(req);
		if (err != -ENOENT)
			gsp_err("peer %s: bad Endpoint '%s'", p->name, p->cfg.endpoint);
		else
			gsp_peer_dial_later(p);
		return;
	}
	snprintf(port, sizeof(port), "%u", port_no);
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV,
	};
	req->data = p;
	p->dialing = true;
	err = uv_getaddrinfo(d->loop, req, on_resolved, host, port, &hints);
	if (err) {
		free(req);
		p->dialing = false;
		gsp_warn("peer %s: cannot resolve Endpoint '%s': %s", p->name,
			 p->cfg.endpoint, uv_strerror(err));
		gsp_peer_dial_later(p);
	}
}

/* A peer's retry timer, and a first dial if it has an endpoint. */
static void peer_start(gsp_peer *p)
{
	uv_timer_init(p->d->loop, &p->retry);
	p->retry.data = p;
	p->backoff_ms = GSP_BACKOFF_MIN_MS;
	if (p->cfg.endpoint[0])
		uv_timer_start(&p->retry, dial, 0, 0);
}

void gsp_peer_dial_later(gsp_peer *p)
{
	if (p->d->stopping || p->removed || !p->cfg.endpoint[0])
		return;
	/* Exponential backoff with +-25% jitter. */
	unsigned delay = p->backoff_ms;
	delay = delay * 3 / 4 + randombytes_uniform(delay / 2 + 1);
	p->backoff_ms = p->backoff_ms * 2 > GSP_BACKOFF_MAX_MS
				? GSP_BACKOFF_MAX_MS
				: p->backoff_ms * 2;
	uv_timer_start(&p->retry, dial, delay, 0);
}

/* ---- the handshake ---------------------------------------------------- */

/* Two sessions with one peer (section 4.8 of PROTOCOL.md): keep the one
 * whose initiator has the smaller key; between two of one initiator, the
 * newer.  Returns true if l is kept. */
static bool wins_over(const gsp_link *l, const gsp_link *old)
{
	if (l->initiator == old->initiator)
		return true;
	bool ours_smaller = memcmp(l->d->key.pub, l->peer->cfg.public_key, 32) < 0;
	return l->initiator == ours_smaller;
}

/* Session keys agreed: the peer is known, the edge can start. */
static void session_ready(gsp_link *l)
{
	gsp_peer *p = l->peer;
	if (p->link && p->link != l) {
		if (!wins_over(l, p->link)) {
			l->peer = NULL;
			l->state = GSP_LINK_MODEL;
			gsp_link_close(l, GSP_BYE_REPLACED, "a session with this peer exists");
			return;
		}
		gsp_link_close(p->link, GSP_BYE_REPLACED, "replaced by a newer session");
	}
	p->link = l;
	uv_timer_stop(&p->retry);
	gsp_info("peer %s: session up (%s)", p->name,
		 l->initiator ? "we connected" : "it connected");
	l->state = GSP_LINK_MODEL;
	l->max_frame = GSP_PROTO_CONTROL_MAX;
	/* The backoff resets only once MODEL is accepted (edge.c): a session
	 * that a model mismatch closes at once must not redial at 100 ms. */
	gsp_edge_session_up(l);
}

/* A handshake message that did not decode: another major version is a
 * policy reject (PROTOCOL.md 3: logged, counted as version_mismatch, closed
 * without a reply), anything else malformed.  Returns the error to close
 * the link with. */
static int version_refused(gsp_link *l, const uint8_t *body, size_t len,
			   int err)
{
	uint16_t v;
	if (err != -EPROTONOSUPPORT || gsp_proto_version_of(body, len, &v) != 0)
		return err;
	l->d->counters.version_mismatch++;
	gsp_warn("%s: handshake refused: it speaks protocol %u.%u, we %u.%u",
		 l->peer ? l->peer->name : "unauthenticated peer", v >> 8,
		 v & 0xff, GSP_PROTO_VERSION >> 8, GSP_PROTO_VERSION & 0xff);
	link_error(l, "handshake refused: it speaks protocol %u.%u, we %u.%u",
		   v >> 8, v & 0xff, GSP_PROTO_VERSION >> 8, GSP_PROTO_VERSION & 0xff);
	return -EACCES;
}

static int on_hs_init(gsp_link *l, const uint8_t *body, size_t len)
{
	gsp_daemon *d = l->d;
	gsp_hs_init msg;
	uint8_t peer_key[32], ts[GSP_TAI64N_BYTES];
	int err = gsp_hs_init_decode(body, len, &msg);
	if (err)
		return version_refused(l, body, len, err);
	if (gsp_hs_read_init(&l->hs, &d->key, msg.payload, sizeof(msg.payload),
			     peer_key, ts) != 0) {
		d->counters.hs_refused++;
		gsp_warn("handshake refused: it does not decrypt with our key");
		return -EACCES;
	}
	gsp_peer *p = peer_by_key(d, peer_key);
	if (!p) {
		char b64[45];
		gsp_key_to_base64(peer_key, b64);
		d->counters.hs_refused++;
		gsp_warn("handshake refused: public key %s is not a configured peer", b64);
		return -EACCES;
	}
	if (memcmp(ts, p->last_ts, sizeof(ts)) <= 0) {
		d->counters.hs_replayed++;
		gsp_warn("peer %s: handshake refused: replayed or old timestamp", p->name);
		if (!p->link)
			gsp_peer_error(p, "handshake refused: replayed or old timestamp");
		return -EACCES;
	}
	memcpy(p->last_ts, ts, sizeof(ts));
	gsp_hs_resp resp = {.version = GSP_PROTO_VERSION};
	uint8_t out[GSP_HS_RESP_MSG_BYTES];
	size_t n;
	if (gsp_hs_respond(&l->hs, resp.payload, &l->sess) != 0 ||
	    gsp_hs_resp_encode(&resp, out, sizeof(out), &n) != 0)
		return -EPROTO;
	send_clear(l, out, n);
	l->peer = p;
	session_ready(l);
	return 0;
}

static int on_hs_resp(gsp_link *l, const uint8_t *body, size_t len)
{
	gsp_hs_resp msg;
	int err = gsp_hs_resp_decode(body, len, &msg);
	if (err)
		return version_refused(l, body, len, err);
	if (gsp_hs_read_response(&l->hs, msg.payload, sizeof(msg.payload),
				 &l->sess) != 0) {
		l->d->counters.hs_refused++;
		gsp_warn("peer %s: handshake response does not authenticate",
			 l->peer->name);
		link_error(l, "handshake response does not authenticate (is its "
			   "PublicKey right?)");
		return -EACCES;
	}
	session_ready(l);
	return 0;
}

/* ---- reading ---------------------------------------------------------- */

static int on_frame(gsp_link *l, const uint8_t *body, size_t len)
{
	if (l->state == GSP_LINK_HANDSHAKE)
		return l->initiator ? on_hs_resp(l, body, len)
				    : on_hs_init(l, body, len);
	uint8_t stack[4096];
	uint8_t *pt = len - GSP_AEAD_TAG_BYTES <= sizeof(stack)
			      ? stack
			      : malloc(len - GSP_AEAD_TAG_BYTES);
	if (!pt)
		return -ENOMEM;
	int err = gsp_session_open(&l->sess, body, len, pt);
	if (!err) {
		l->peer->rx_bytes += len + GSP_FRAME_HEADER;
		l->peer->rx_frames++;
		err = gsp_edge_on_frame(l, pt, len - GSP_AEAD_TAG_BYTES);
	}
	if (pt != stack)
		free(pt);
	return err;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	gsp_link *l = h->data;
	/* Room for one whole frame of the current cap, never more. */
	size_t want = (size_t)l->max_frame + GSP_FRAME_HEADER;
	if (l->rcap < want) {
		uint8_t *nb = realloc(l->rbuf, want);
		if (nb) {
			l->rbuf = nb;
			l->rcap = want;
		}
	}
	size_t room = l->rcap - l->rlen;
	if (room > 256 * 1024)
		room = 256 * 1024;
	*buf = uv_buf_init((char *)l->rbuf + l->rlen, (unsigned)room);
}

static void link_on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	gsp_link *l = s->data;
	if (n == 0)
		return;
	if (n < 0) {
		if (l->peer && l->peer->link == l)
			gsp_info("peer %s: link closed (%s)", l->peer->name,
				 uv_strerror((int)n));
		if (l->state == GSP_LINK_HANDSHAKE)
			link_error(l, "the peer closed the connection during the "
				   "handshake (does it list this node's public "
				   "key? same protocol version?)");
		else
			link_error(l, "link closed: %s", uv_strerror((int)n));
		gsp_link_close(l, GSP_BYE_UNSPECIFIED, "");
		return;
	}
	l->rlen += (size_t)n;
	l->last_rx_ms = gsp_now_ms(l->d);
	size_t off = 0;
	while (l->state != GSP_LINK_CLOSING) {
		const uint8_t *body;
		uint32_t len;
		size_t used;
		int err = gsp_frame_parse(l->rbuf + off, l->rlen - off,
					  l->max_frame, &body, &len, &used);
		if (err == -EAGAIN)
			break;
		if (!err)
			err = on_frame(l, body, len);
		if (err) {
			if (err != -EACCES)
				l->d->counters.rx_malformed++;
			const char *who = l->peer ? l->peer->name : "unauthenticated peer";
			gsp_warn("%s: closing link: %s", who, gsp_strerror(err));
			if (err != -EACCES)
				link_error(l, "closed the link: %s", gsp_strerror(err));
			gsp_link_close(l, err == -EACCES ? GSP_BYE_NOT_ALLOWED
							 : GSP_BYE_MALFORMED,
				       gsp_strerror(err));
			return;
		}
		off += used;
	}
	if (off) {
		memmove(l->rbuf, l->rbuf + off, l->rlen - off);
		l->rlen -= off;
	}
}

static void link_heartbeat(uv_timer_t *t)
{
	gsp_link *l = t->data;
	uint64_t now = gsp_now_ms(l->d);
	if (l->state == GSP_LINK_CLOSING)
		return;
	if (l->state == GSP_LINK_HANDSHAKE) {
		if (now - l->last_rx_ms > GSP_HS_TIMEOUT_MS) {
			link_error(l, "handshake timed out");
			gsp_link_close(l, GSP_BYE_UNSPECIFIED, "");
		}
		return;
	}
	if (now - l->last_rx_ms > GSP_DEAD_MS) {
		gsp_warn("peer %s: no frame for %u ms, closing", l->peer->name,
			 GSP_DEAD_MS);
		link_error(l, "no frame for %u ms", GSP_DEAD_MS);
		gsp_link_close(l, GSP_BYE_TIMEOUT, "no frame received in time");
		return;
	}
	if (now - l->last_tx_ms >= GSP_PING_MS) {
		uint8_t buf[32];
		size_t n;
		gsp_msg_ping ping = {.nonce = ++l->ping_nonce, .time_ns = uv_hrtime()};
		if (gsp_msg_ping_encode(&ping, buf, sizeof(buf), &n) == 0)
			gsp_link_send(l, buf, n);
	}
}

static void on_incoming(uv_stream_t *server, int status)
{
	gsp_daemon *d = server->data;
	if (status < 0 || d->stopping)
		return;
	gsp_link *l = link_new(d, false);
	if (!l)
		return;
	if (uv_accept(server, (uv_stream_t *)&l->tcp) != 0) {
		link_destroy(l);
		return;
	}
	uv_tcp_nodelay(&l->tcp, 1);
	uv_read_start((uv_stream_t *)&l->tcp, on_alloc, link_on_read);
}

int gsp_links_start(gsp_daemon *d)
{
	struct sockaddr_storage ss;
	int err = gsp_endpoint_numeric(d->cfg.listen, &ss);
	if (err) {
		gsp_err("bad ListenAddress '%s' (want a numeric ipv4:port or "
			"[ipv6]:port)", d->cfg.listen);
		return -EINVAL;
	}
	uv_tcp_init(d->loop, &d->listener);
	d->listener.data = d;
	err = uv_tcp_bind(&d->listener, (struct sockaddr *)&ss, 0);
	if (!err)
		err = uv_listen((uv_stream_t *)&d->listener, 64, on_incoming);
	if (err) {
		gsp_err("cannot listen on %s: %s", d->cfg.listen, uv_strerror(err));
		return err;
	}
	struct sockaddr_storage bound;
	int blen = sizeof(bound);
	char host[64];
	uv_tcp_getsockname(&d->listener, (struct sockaddr *)&bound, &blen);
	if (bound.ss_family == AF_INET6) {
		uv_ip6_name((struct sockaddr_in6 *)&bound, host, sizeof(host));
		snprintf(d->listen_addr, sizeof(d->listen_addr), "[%s]:%u", host,
			 ntohs(((struct sockaddr_in6 *)&bound)->sin6_port));
	} else {
		uv_ip4_name((struct sockaddr_in *)&bound, host, sizeof(host));
		snprintf(d->listen_addr, sizeof(d->listen_addr), "%s:%u", host,
			 ntohs(((struct sockaddr_in *)&bound)->sin_port));
	}
	for (size_t i = 0; i < d->n_peers; i++)
		peer_start(&d->peers[i]);
	return 0;
}

void gsp_peers_update(gsp_daemon *d, const gsp_daemon_config *cfg)
{
	/* The engine's edge list must not change under a running step. */
	if (d->model.busy) {
		gsp_warn("reload: a step is running; send SIGHUP again");
		return;
	}
	for (size_t j = 0; j < d->n_peers; j++) {
		gsp_peer *p = &d->peers[j];
		bool listed = false;
		for (size_t i = 0; i < cfg->n_peers && !listed; i++)
			listed = !memcmp(p->cfg.public_key, cfg->peers[i].public_key, 32);
		if (listed || p->removed)
			continue;
		gsp_info("reload: peer %s removed", p->name);
		p->removed = true;
		uv_timer_stop(&p->retry);
		if (p->link)
			gsp_link_close(p->link, GSP_BYE_NOT_ALLOWED,
				       "removed from the configuration");
	}
	for (size_t i = 0; i < cfg->n_peers; i++) {
		const gsp_peer_config *pc = &cfg->peers[i];
		gsp_peer *p = NULL;
		for (size_t j = 0; j < d->n_peers && !p; j++)
			if (!memcmp(d->peers[j].cfg.public_key, pc->public_key, 32))
				p = &d->peers[j];
		if (!memcmp(pc->public_key, d->key.pub, 32))
			continue;
		if (!p) {
			if (d->n_peers == GSP_MAX_PEERS || (d->model.registered &&
			    gsp_model_add_edge(d) != 0)) {
				gsp_err("reload: cannot add another peer");
				continue;
			}
			p = &d->peers[d->n_peers];
			memset(p, 0, sizeof(*p));
			p->d = d;
			p->index = d->n_peers++;
			p->cfg = *pc;
			char b64[45];
			gsp_key_to_base64(p->cfg.public_key, b64);
			snprintf(p->name, sizeof(p->name), "%.8s", b64);
			gsp_info("reload: peer %s added", p->name);
			peer_start(p);
			continue;
		}
		bool moved = strcmp(p->cfg.endpoint, pc->endpoint) != 0 || p->removed;
		if (p->removed)
			gsp_info("reload: peer %s added again", p->name);
		p->removed = false;
		memcpy(p->cfg.endpoint, pc->endpoint, sizeof(p->cfg.endpoint));
		p->cfg.weight = pc->weight;
		if (moved && !p->link) {
			p->backoff_ms = GSP_BACKOFF_MIN_MS;
			uv_timer_start(&p->retry, dial, 0, 0);
		}
	}
}

void gsp_links_reconnect_all(gsp_daemon *d, uint16_t reason, const char *text)
{
	if (d->stopping)
		return;
	for (gsp_link *l = d->links, *next; l; l = next) {
		next = l->next;
		if (l->state != GSP_LINK_HANDSHAKE)
			gsp_link_close(l, reason, text);
	}
}

void gsp_links_stop(gsp_daemon *d)
{
	for (gsp_link *l = d->links, *next; l; l = next) {
		next = l->next;
		gsp_link_close(l, GSP_BYE_SHUTDOWN, "gossipd is stopping");
	}
	for (size_t i = 0; i < d->n_peers; i++)
		uv_close((uv_handle_t *)&d->peers[i].retry, NULL);
	uv_close((uv_handle_t *)&d->listener, NULL);
}
