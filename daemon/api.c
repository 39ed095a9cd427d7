/* gossipd's local API server: a Unix stream socket (mode 0660) polled
 * with libuv, raw recvmsg() so REGISTER can carry the buffer's fd with
 * SCM_RIGHTS, bounded per-client buffers, and one reply per request.  A
 * malformed frame closes only that client (PROTOCOL.md section 5). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

struct gsp_api_client {
	gsp_daemon *d;
	int fd;
	uv_poll_t poll;
	uint8_t *rbuf;
	size_t rlen;
	uint8_t *wbuf;           /* unsent reply bytes */
	size_t wlen, woff;
	int passed_fd;           /* fd received with the current frame */
	bool hello;
	bool closing;
	char name[GSP_API_NAME_MAX + 1];
	gsp_api_client *next;
};

static int listen_fd = -1;
static uv_poll_t listen_poll;
static dev_t bound_dev;      /* the socket file we created, to remove */
static ino_t bound_ino;      /* only that one at exit */

static void client_poll(uv_poll_t *h, int status, int events);

static void on_client_closed(uv_handle_t *h)
{
	gsp_api_client *c = h->data;
	free(c->rbuf);
	free(c->wbuf);
	free(c);
}

static void client_close(gsp_api_client *c)
{
	gsp_daemon *d = c->d;
	if (c->closing)
		return;
	c->closing = true;
	if (d->model.owner == c) {
		gsp_info("trainer '%s' went away: detaching its model", c->name);
		gsp_model_detach(d);
		/* A detach that waits for a running step: no owner meanwhile. */
		if (d->model.owner == c)
			d->model.owner = NULL;
	}
	if (d->model.waiting == c)
		d->model.waiting = NULL;
	for (gsp_api_client **pp = &d->clients; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	if (c->passed_fd >= 0)
		close(c->passed_fd);
	uv_poll_stop(&c->poll);
	close(c->fd);
	uv_close((uv_handle_t *)&c->poll, on_client_closed);
}

static void update_events(gsp_api_client *c)
{
	uv_poll_start(&c->poll, UV_READABLE | (c->wlen > c->woff ? UV_WRITABLE : 0),
		      client_poll);
}

static void flush(gsp_api_client *c)
{
	while (c->woff < c->wlen) {
		ssize_t n = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0) {
			client_close(c);
			return;
		}
		c->woff += (size_t)n;
	}
	if (c->woff == c->wlen)
		c->wlen = c->woff = 0;
	update_events(c);
}

void gsp_api_reply(gsp_api_client *c, const uint8_t *body, size_t len)
{
	if (c->closing)
		return;
	uint8_t *nb = realloc(c->wbuf, c->wlen + GSP_FRAME_HEADER + len);
	if (!nb) {
		client_close(c);
		return;
	}
	c->wbuf = nb;
	if (gsp_frame_header_write(c->wbuf + c->wlen, GSP_FRAME_HEADER,
				   (uint32_t)len) != 0) {
		client_close(c);
		return;
	}
	memcpy(c->wbuf + c->wlen + GSP_FRAME_HEADER, body, len);
	c->wlen += GSP_FRAME_HEADER + len;
	flush(c);
}

void gsp_api_reply_error(gsp_api_client *c, int code, const char *text)
{
	uint8_t buf[16 + GSP_API_ERROR_TEXT_MAX];
	gsp_api_error e = {.code = code < 0 ? code : -EINVAL, .text = text,
			   .text_len = strlen(text)};
	size_t n;
	if (e.text_len > GSP_API_ERROR_TEXT_MAX)
		e.text_len = GSP_API_ERROR_TEXT_MAX;
	if (gsp_api_error_encode(&e, buf, sizeof(buf), &n) == 0)
		gsp_api_reply(c, buf, n);
}

const char *gsp_api_client_name(const gsp_api_client *c)
{
	return c->name;
}

static void reply_ok(gsp_api_client *c)
{
	uint8_t buf[8];
	size_t n;
	if (gsp_api_ok_encode(buf, sizeof(buf), &n) == 0)
		gsp_api_reply(c, buf, n);
}

/* Requests that need the model and must come from its owner. */
static int owner_check(gsp_api_client *c)
{
	if (!c->d->model.registered) {
		gsp_api_reply_error(c, -ENOENT, "no model registered");
		return -1;
	}
	if (c->d->model.owner != c) {
		gsp_api_reply_error(c, -EPERM, "the model belongs to another connection");
		return -1;
	}
	return 0;
}

static int on_request(gsp_api_client *c, const uint8_t *body, size_t len)
{
	gsp_daemon *d = c->d;
	uint8_t type;
	int err = gsp_api_type(body, len, &type);
	if (err)
		return err;
	if (!c->hello && type != GSP_API_HELLO)
		return -EPROTO;
	if (type != GSP_API_REGISTER && c->passed_fd >= 0)
		return -EBADMSG;
	switch (type) {
	case GSP_API_HELLO: {
		gsp_api_hello h;
		if ((err = gsp_api_hello_decode(body, len, &h)) != 0)
			return err;
		snprintf(c->name, sizeof(c->name), "%.*s", (int)h.name_len, h.name);
		c->hello = true;
		uint8_t buf[256];
		size_t n;
		gsp_api_hello ok = {.version = GSP_PROTO_VERSION, .name = GSP_VERSION,
				    .name_len = strlen(GSP_VERSION)};
		if (gsp_api_hello_ok_encode(&ok, buf, sizeof(buf), &n) == 0)
			gsp_api_reply(c, buf, n);
		return 0;
	}
	case GSP_API_REGISTER: {
		char text[256];
		int fd = c->passed_fd;
		c->passed_fd = -1;
		err = gsp_model_register(d, c, body, len, fd, text, sizeof(text));
		if (err) {
			if (d->model.fd != fd && fd >= 0 && err != -EBADMSG)
				close(fd);
			gsp_warn("REGISTER from '%s' refused: %s", c->name, text);
			gsp_api_reply_error(c, err, text);
			return err == -EBADMSG ? err : 0;
		}
		reply_ok(c);
		return 0;
	}
	case GSP_API_STEP: {
		gsp_api_step s;
		if ((err = gsp_api_step_decode(body, len, &s)) != 0)
			return err;
		if (owner_check(c))
			return 0;
		if ((err = gsp_model_step(d, c, s.flags)) != 0)
			gsp_api_reply_error(c, err, "a request is already in progress");
		return 0;
	}
	case GSP_API_AVERAGE: {
		gsp_api_average a;
		if ((err = gsp_api_average_decode(body, len, &a)) != 0)
			return err;
		if (owner_check(c))
			return 0;
		if ((err = gsp_model_average(d, c, &a)) != 0)
			gsp_api_reply_error(c, err, "a request is already in progress");
		return 0;
	}
	case GSP_API_STATUS: {
		if ((err = gsp_api_status_decode(body, len)) != 0)
			return err;
		if (!d->model.busy)
			gsp_edge_cache(d);
		char *json = gsp_status_json(d);
		if (!json) {
			gsp_api_reply_error(c, -ENOMEM, "out of memory");
			return 0;
		}
		gsp_api_status_ok st = {.json = json, .json_len = strlen(json)};
		size_t cap = st.json_len + 16, n;
		uint8_t *buf = malloc(cap);
		if (buf && gsp_api_status_ok_encode(&st, buf, cap, &n) == 0)
			gsp_api_reply(c, buf, n);
		free(buf);
		free(json);
		return 0;
	}
	case GSP_API_DETACH:
		if ((err = gsp_api_detach_decode(body, len)) != 0)
			return err;
		if (owner_check(c))
			return 0;
		gsp_model_detach(d);
		reply_ok(c);
		return 0;
	default:
		return -EBADMSG;
	}
}

/* Reads what is there, keeping at most one frame; an fd that comes with
 * the bytes is held for the frame they belong to. */
static void client_read(gsp_api_client *c)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} ctl;
	size_t cap = GSP_FRAME_HEADER + GSP_API_MAX_FRAME;
	if (!c->rbuf && !(c->rbuf = malloc(cap))) {
		client_close(c);
		return;
	}
	struct iovec iov = {.iov_base = c->rbuf + c->rlen, .iov_len = cap - c->rlen};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
	ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	int fds = 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
			size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
				if (fds++ == 0 && c->passed_fd < 0)
					c->passed_fd = fd;
				else
					close(fd);
			}
		}
	if (n <= 0 || fds > 1 || (mh.msg_flags & MSG_CTRUNC)) {
		if (n > 0)
			c->d->counters.api_malformed++;
		client_close(c);
		return;
	}
	c->rlen += (size_t)n;
	size_t off = 0;
	while (!c->closing) {
		const uint8_t *body;
		uint32_t len;
		size_t used;
		int err = gsp_frame_parse(c->rbuf + off, c->rlen - off,
					  GSP_API_MAX_FRAME, &body, &len, &used);
		if (err == -EAGAIN)
			break;
		if (!err)
			err = on_request(c, body, len);
		if (err) {
			c->d->counters.api_malformed++;
			gsp_warn("API client '%s': %s: closing it", c->name,
				 gsp_strerror(err));
			gsp_api_reply_error(c, err, "malformed request");
			client_close(c);
			return;
		}
		off += used;
	}
	if (!c->closing && off) {
		memmove(c->rbuf, c->rbuf + off, c->rlen - off);
		c->rlen -= off;
	}
}

static void client_poll(uv_poll_t *h, int status, int events)
{
	gsp_api_client *c = h->data;
	if (status < 0) {
		client_close(c);
		return;
	}
	if (events & UV_WRITABLE)
		flush(c);
	if (!c->closing && (events & UV_READABLE))
		client_read(c);
}

static void on_accept(uv_poll_t *h, int status, int events)
{
	gsp_daemon *d = h->data;
	int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	gsp_api_client *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->d = d;
	c->fd = fd;
	c->passed_fd = -1;
	snprintf(c->name, sizeof(c->name), "client");
	if (uv_poll_init(d->loop, &c->poll, fd) != 0) {
		close(fd);
		free(c);
		return;
	}
	c->poll.data = c;
	c->next = d->clients;
	d->clients = c;
	update_events(c);
}

/* Makes sure nothing lives at path before we bind it.  A socket that
 * nobody accepts on (ECONNREFUSED: its daemon died) is removed; a socket
 * that accepts belongs to a live process and is left alone, as is
 * anything that is not a socket. */
static int socket_free(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		gsp_err("%s exists and is not a socket; remove it or choose "
			"another Socket", path);
		return -EEXIST;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	int e = rc == 0 ? 0 : errno;
	close(fd);
	if (e == ENOENT)        /* gone meanwhile */
		return 0;
	if (e == ECONNREFUSED) {
		gsp_info("removing the stale socket %s (no process serves it)", path);
		if (unlink(path) != 0 && errno != ENOENT) {
			gsp_err("cannot remove the stale socket %s: %s", path,
				strerror(errno));
			return -errno;
		}
		return 0;
	}
	if (e == 0 || e == EAGAIN || e == EINPROGRESS) {
		/* EAGAIN: a live listener whose backlog is full. */
		gsp_err("another process is serving %s; stop it or choose another "
			"Socket", path);
		return -EADDRINUSE;
	}
	gsp_err("cannot tell whether another process serves %s (%s); "
		"leaving it alone", path, strerror(e));
	return -e;
}

int gsp_api_start(gsp_daemon *d)
{
	const char *path = d->cfg.socket_path;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		gsp_err("Socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int err = socket_free(path, &sa);
	if (err)
		return err;
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		return -errno;
	mode_t old = umask(0117);
	int rc = bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc != 0 || chmod(path, 0660) != 0 || listen(listen_fd, 16) != 0) {
		err = -errno;
		gsp_err("cannot listen on %s: %s", path, strerror(-err));
		if (rc == 0)
			unlink(path);   /* the file our bind() just made */
		close(listen_fd);
		listen_fd = -1;
		return err;
	}
	if (lstat(path, &st) == 0) {
		bound_dev = st.st_dev;
		bound_ino = st.st_ino;
	}
	uv_poll_init(d->loop, &listen_poll, listen_fd);
	listen_poll.data = d;
	uv_poll_start(&listen_poll, UV_READABLE, on_accept);
	return 0;
}

void gsp_api_stop(gsp_daemon *d)
{
	while (d->clients)
		client_close(d->clients);
	if (listen_fd >= 0) {
		uv_poll_stop(&listen_poll);
		uv_close((uv_handle_t *)&listen_poll, NULL);
		close(listen_fd);
		/* Only our own socket: never one another process put there. */
		struct stat st;
		if (lstat(d->cfg.socket_path, &st) == 0 && st.st_dev == bound_dev &&
		    st.st_ino == bound_ino)
			unlink(d->cfg.socket_path);
		listen_fd = -1;
	}
}
