/* gossipd's metrics listener (see metrics_http.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "httpreq.h"
#include "link.h"
#include "log.h"
#include "metrics_http.h"
#include "prom_text.h"
#include "status_doc.h"

typedef struct conn conn;

struct metrics_http {
	uv_tcp_t listener;
	counters *counters;
	metrics_http_doc_fn doc;
	void *ctx;
	conn *conns;             /* the open connections, a list */
	size_t n_conns;
	size_t handles;          /* open handles: freed at 0 after stop */
	bool stopping;
};

struct conn {
	uv_tcp_t tcp;
	uv_timer_t timer;        /* METRICS_HTTP_TIMEOUT_MS from accept */
	metrics_http *m;
	conn *next, **prev;
	unsigned open;           /* handles not closed yet (tcp, timer) */
	bool closing;
	size_t len;
	char req[HTTPREQ_HEAD_MAX];
	char head[192];
	gsp_textbuf body;
	uv_write_t write;
	uv_shutdown_t shutdown;
};

static void metrics_free_if_done(metrics_http *m)
{
	if (m->stopping && m->handles == 0)
		free(m);
}

static void on_handle_closed(uv_handle_t *h)
{
	metrics_http *m = h->data;
	m->handles--;
	metrics_free_if_done(m);
}

static void on_conn_closed(uv_handle_t *h)
{
	conn *c = h->data;
	metrics_http *m = c->m;
	if (--c->open > 0)
		return;
	gsp_textbuf_free(&c->body);
	free(c);
	m->handles--;
	metrics_free_if_done(m);
}

static void conn_close(conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	*c->prev = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->m->n_conns--;
	uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
	uv_close((uv_handle_t *)&c->timer, on_conn_closed);
}

static void on_timeout(uv_timer_t *t)
{
	conn *c = t->data;
	c->m->counters->metrics_timed_out++;
	conn_close(c);
}

/* After the response: bytes the client sent past its head are read and
 * dropped until its EOF (or the time limit), so that closing with them
 * unread does not reset the connection before the client read the
 * response. */
static void on_drain_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	conn *c = h->data;
	*buf = uv_buf_init(c->req, sizeof(c->req));
}

static void on_drain_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	if (nread < 0)
		conn_close(s->data);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	conn *c = req->data;
	if (status < 0 || c->closing ||
	    uv_read_start((uv_stream_t *)&c->tcp, on_drain_alloc, on_drain_read) < 0)
		conn_close(c);
}

static void on_written(uv_write_t *w, int status)
{
	conn *c = w->data;
	c->shutdown.data = c;
	if (status < 0 || c->closing ||
	    uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
		conn_close(c);
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 431: return "Request Header Fields Too Large";
	case 505: return "HTTP Version Not Supported";
	default: return "Internal Server Error";
	}
}

/* The exposition of the document the callback returns: 0, or -ENOMEM or
 * -EINVAL (the document did not parse: a bug, logged). */
static int exposition(metrics_http *m, gsp_textbuf *out)
{
	char *json = m->doc(m->ctx), err[128];
	gsp_sdoc st;
	int r;

	if (!json)
		return -ENOMEM;
	r = gsp_sdoc_parse(json, strlen(json), &st, err, sizeof(err));
	free(json);
	if (r < 0) {
		gsp_err("metrics: the status document does not parse: %s", err);
		return -EINVAL;
	}
	r = gsp_prom_write(&st, out);
	gsp_sdoc_clear(&st);
	return r;
}

static void respond(conn *c, int status)
{
	metrics_http *m = c->m;
	const char *type = "text/plain; charset=utf-8";
	uv_buf_t bufs[2];
	int n;

	if (status == 200) {
		m->counters->metrics_scrapes++;
		if (exposition(m, &c->body) == 0)
			type = "text/plain; version=0.0.4; charset=utf-8";
		else
			status = 500;
	} else {
		m->counters->metrics_bad_requests++;
	}
	if (status != 200) {
		gsp_textbuf_free(&c->body);
		gsp_textbuf_printf(&c->body, "%d %s\n", status, reason(status));
		if (c->body.failed) {
			conn_close(c);
			return;
		}
	}
	n = snprintf(c->head, sizeof(c->head),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n", status, reason(status), type,
		     c->body.len);
	bufs[0] = uv_buf_init(c->head, (unsigned)n);
	bufs[1] = uv_buf_init(c->body.p, (unsigned)c->body.len);
	c->write.data = c;
	if (uv_write(&c->write, (uv_stream_t *)&c->tcp, bufs, 2, on_written) < 0)
		conn_close(c);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	conn *c = h->data;
	*buf = uv_buf_init(c->req + c->len, (unsigned)(sizeof(c->req) - c->len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	conn *c = s->data;
	int status;

	if (nread < 0) {         /* EOF or an error before a verdict */
		conn_close(c);
		return;
	}
	c->len += (size_t)nread;
	status = httpreq_judge(c->req, c->len);
	if (status == 0)
		return;
	uv_read_stop(s);
	respond(c, status);
}

static void on_connection(uv_stream_t *server, int status)
{
	metrics_http *m = server->data;
	conn *c;

	if (status < 0 || m->stopping)
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		/* libuv then holds the connection and listens no more: the
		 * metrics stop, the daemon goes on. */
		gsp_err("metrics: out of memory: the listener stops");
		return;
	}
	c->m = m;
	uv_tcp_init(server->loop, &c->tcp);
	uv_timer_init(server->loop, &c->timer);
	c->tcp.data = c->timer.data = c;
	c->open = 2;
	m->handles++;
	c->next = m->conns;
	c->prev = &m->conns;
	if (m->conns)
		m->conns->prev = &c->next;
	m->conns = c;
	m->n_conns++;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
		conn_close(c);
		return;
	}
	if (m->n_conns > METRICS_HTTP_MAX_CONNS) {
		m->counters->metrics_rejected++;
		conn_close(c);
		return;
	}
	uv_timer_start(&c->timer, on_timeout, METRICS_HTTP_TIMEOUT_MS, 0);
	if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
		conn_close(c);
}

int metrics_http_start(uv_loop_t *loop, const char *listen, counters *c,
		       metrics_http_doc_fn doc, void *ctx, metrics_http **ret,
		       char *ret_addr, size_t addr_len)
{
	struct sockaddr_storage ss, bound;
	int blen = sizeof(bound), err;
	metrics_http *m;

	if (gsp_endpoint_numeric(listen, &ss) != 0) {
		gsp_err("metrics: bad MetricsListen '%s'", listen);
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->counters = c;
	m->doc = doc;
	m->ctx = ctx;
	uv_tcp_init(loop, &m->listener);
	m->listener.data = m;
	m->handles = 1;
	err = uv_tcp_bind(&m->listener, (struct sockaddr *)&ss, 0);
	if (!err)
		err = uv_listen((uv_stream_t *)&m->listener, 64, on_connection);
	if (!err)
		err = uv_tcp_getsockname(&m->listener, (struct sockaddr *)&bound, &blen);
	if (err) {
		gsp_err("metrics: cannot listen on %s: %s", listen, uv_strerror(err));
		m->stopping = true;
		uv_close((uv_handle_t *)&m->listener, on_handle_closed);
		return err;
	}
	link_addr_name((struct sockaddr *)&bound, ret_addr, addr_len);
	gsp_info("metrics: serving http://%s%s (at most %d connections, %d ms each)",
		 ret_addr, HTTPREQ_PATH, METRICS_HTTP_MAX_CONNS,
		 METRICS_HTTP_TIMEOUT_MS);
	*ret = m;
	return 0;
}

void metrics_http_stop(metrics_http *m)
{
	if (!m || m->stopping)
		return;
	m->stopping = true;
	while (m->conns)
		conn_close(m->conns);
	uv_close((uv_handle_t *)&m->listener, on_handle_closed);
}
