/* api_client: one API client's connection (api_impl.h): its replies
 * queued and written (a client is not read while one is unsent), and
 * its close.  Below the requests (api_request.c) and the server's reads
 * (api.c), which call it; it calls neither (the poll callback it
 * restarts is the server's, registered in api_server.on_poll). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api_impl.h"
#include "log.h"

static void on_client_closed(uv_handle_t *h)
{
	api_client *c = h->data;
	rxbuf_free(&c->rx);
	free(c->wbuf);
	free(c);
}

/* The order matters: the client's pending reply is dropped first, then
 * its model is detached (after a step that runs off the loop, if one
 * does), then the client goes. */
void api__client_close(api_client *c)
{
	gossipd *d = c->d;
	api_server *srv = d->api;
	if (c->closing)
		return;
	c->closing = true;
	core_forget(&d->step.core, c);
	fetch_forget(&d->fetch, c);
	group_forget(&d->model.group, c);
	bool last = true;
	if (d->model.mode == MODEL_GROUP && model_owned_by(&d->model, c) &&
	    d->model.group.n_members > 1) {
		gsp_info("trainer '%s' went away: it leaves the local group", c->log_name);
		group_leave(&d->model.group, c);
		last = false;
	}
	if (last && model_owned_by(&d->model, c)) {
		group_end_begin(&d->model.group);
		gsp_info("trainer '%s' went away: detaching its model", c->log_name);
		core_detach(&d->step.core, NULL, NULL);
		/* A detach that waits for a running step or the neighbours: no
		 * owner meanwhile, and the connection stays open (a copy) until
		 * the buffer goes, so that the client, which waits for its EOF,
		 * knows when it alone writes the buffer again. */
		if (d->model.registered) {
			d->model.owner = NULL;
			int hold = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
			if (hold >= 0)
				model_hold_connection(&d->model, hold);
		}
	}
	for (api_client **pp = &srv->clients; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	srv->n_clients--;
	if (c->passed_fd >= 0)
		close(c->passed_fd);
	uv_poll_stop(&c->poll);
	close(c->fd);
	uv_close((uv_handle_t *)&c->poll, on_client_closed);
}

/* Reads only while no reply is unsent (PROTOCOL.md 5.1). */
static void update_events(api_client *c)
{
	int ev = c->wlen > c->woff ? UV_WRITABLE : UV_READABLE;
	uv_poll_start(&c->poll, ev, c->d->api->on_poll);
}

void api__flush(api_client *c)
{
	while (c->woff < c->wlen) {
		ssize_t n = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0) {
			api__client_close(c);
			return;
		}
		c->woff += (size_t)n;
	}
	if (c->woff == c->wlen)
		c->wlen = c->woff = 0;
	update_events(c);
}

void api__reply(api_client *c, const uint8_t *body, size_t len)
{
	if (c->closing)
		return;
	size_t need = c->wlen + GSP_FRAME_HEADER + len;
	uint8_t *nb = need <= API_MAX_UNSENT ? realloc(c->wbuf, need) : NULL;
	if (!nb) {
		gsp_warn("API client '%s': cannot queue a reply: closing it",
			 c->log_name);
		api__client_close(c);
		return;
	}
	c->wbuf = nb;
	if (gsp_frame_header_write(c->wbuf + c->wlen, GSP_FRAME_HEADER,
				   (uint32_t)len) != 0) {
		api__client_close(c);
		return;
	}
	memcpy(c->wbuf + c->wlen + GSP_FRAME_HEADER, body, len);
	c->wlen += GSP_FRAME_HEADER + len;
	api__flush(c);
}

void api__reply_error(api_client *c, int code, const char *text)
{
	uint8_t buf[16 + GSP_API_ERROR_TEXT_MAX];
	gsp_api_error e = {.code = code < 0 ? code : -EINVAL, .text = text,
			   .text_len = strlen(text)};
	size_t n;
	if (e.text_len > GSP_API_ERROR_TEXT_MAX)
		e.text_len = GSP_API_ERROR_TEXT_MAX;
	if (gsp_api_error_encode(&e, buf, sizeof(buf), &n) == 0)
		api__reply(c, buf, n);
}

void api__reply_ok(api_client *c)
{
	uint8_t buf[8];
	size_t n;
	if (gsp_api_ok_encode(buf, sizeof(buf), &n) == 0)
		api__reply(c, buf, n);
}
