/* api: the local API server (api.h): the socket, accepting clients and
 * reading their frames; the requests are api_request.c, a connection's
 * replies and close api_client.c. */
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

#include "api_impl.h"
#include "api_socket.h"
#include "log.h"
#include "peercred.h"

static void client_process(api_client *c);

/* Handles the whole frames received, one at a time while no reply is
 * unsent. */
static void client_process(api_client *c)
{
	size_t off = 0;
	while (!c->closing && c->wlen == c->woff) {
		uint8_t *body;
		uint32_t len;
		int err = rxbuf_frame(&c->rx, &off, GSP_API_MAX_FRAME, &body, &len);
		if (err == -EAGAIN)
			break;
		if (!err)
			err = api__on_request(c, body, len);
		if (err) {
			c->d->counters.api_malformed++;
			gsp_warn("API client '%s': %s: closing it", c->log_name,
				 gsp_strerror(err));
			api__reply_error(c, err, "malformed request");
			api__client_close(c);
			return;
		}
	}
	if (!c->closing && off)
		(void)rxbuf_consume(&c->rx, off);
}

/* Reads what is there; an fd that comes with the bytes is held for the
 * frame they belong to. */
static void client_read(api_client *c)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} ctl;
	uint8_t *p;
	size_t room;
	if (rxbuf_space(&c->rx, GSP_FRAME_HEADER + GSP_API_MAX_FRAME, &p, &room) != 0) {
		api__client_close(c);
		return;
	}
	struct iovec iov = {.iov_base = p, .iov_len = room};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
	ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	int fds = 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); n >= 0 && h; h = CMSG_NXTHDR(&mh, h))
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
		api__client_close(c);
		return;
	}
	(void)rxbuf_commit(&c->rx, (size_t)n);
	client_process(c);
}

static void client_poll(uv_poll_t *h, int status, int events)
{
	api_client *c = h->data;
	if (status < 0) {
		api__client_close(c);
		return;
	}
	if (events & UV_WRITABLE) {
		api__flush(c);
		/* Requests that waited for the reply to go out. */
		if (!c->closing && c->wlen == 0)
			client_process(c);
	}
	if (!c->closing && (events & UV_READABLE))
		client_read(c);
}

static void on_accept(uv_poll_t *h, int status, int events)
{
	gossipd *d = h->data;
	api_server *srv = d->api;
	int fd = accept4(srv->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (srv->n_clients >= API_MAX_CLIENTS) {
		gsp_debug("API: %d clients already: refusing another", API_MAX_CLIENTS);
		close(fd);
		return;
	}
	char why[160];
	if (peercred_check(fd, srv->gid, why, sizeof(why)) != 0) {
		srv->refused++;
		if (srv->refused <= 10 || (srv->refused & (srv->refused - 1)) == 0)
			gsp_warn("API: refused a connection: %s (%llu refused)", why,
				 (unsigned long long)srv->refused);
		close(fd);
		return;
	}
	api_client *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->d = d;
	c->fd = fd;
	c->passed_fd = -1;
	rxbuf_init(&c->rx, GSP_FRAME_HEADER + GSP_API_MAX_FRAME);
	snprintf(c->name, sizeof(c->name), "client");
	snprintf(c->log_name, sizeof(c->log_name), "client");
	if (uv_poll_init(d->loop, &c->poll, fd) != 0) {
		close(fd);
		free(c);
		return;
	}
	c->poll.data = c;
	c->next = srv->clients;
	srv->clients = c;
	srv->n_clients++;
	uv_poll_start(&c->poll, UV_READABLE, client_poll);   /* nothing unsent */
}

int api_start(gossipd *d)
{
	const char *path = d->cfg.socket_path;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	if (strlen(path) > api_socket_path_max()) {
		gsp_err("Socket path too long (at most %zu bytes): %s",
			api_socket_path_max(), path);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int err = api_socket_free(path, &sa);
	if (err)
		return err;
	api_server *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	err = srv->fd < 0 ? -errno : api_socket_publish(srv->fd, path, 0660);
	if (err) {
		if (err == -EEXIST)
			gsp_err("cannot listen on %s: another process created it "
				"meanwhile; stop it or choose another Socket", path);
		else
			gsp_err("cannot listen on %s: %s", path, strerror(-err));
		if (srv->fd >= 0)
			close(srv->fd);
		free(srv);
		return err;
	}
	if (lstat(path, &st) == 0) {
		srv->dev = st.st_dev;
		srv->ino = st.st_ino;
		srv->gid = st.st_gid;
	}
	srv->on_poll = client_poll;
	d->api = srv;
	uv_poll_init(d->loop, &srv->poll, srv->fd);
	srv->poll.data = d;
	uv_poll_start(&srv->poll, UV_READABLE, on_accept);
	return 0;
}

void api_stop_keeping_model(gossipd *d)
{
	api_server *srv = d->api;
	/* The trainer's connection stays open (a copy, until the process
	 * exits), so that its client, which waits for EOF, does not write
	 * the buffer while the step under way still does. */
	for (api_client *c = srv ? srv->clients : NULL; c; c = c->next)
		if (d->model.registered && d->model.owner == c) {
			int hold = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
			if (hold >= 0)
				model_hold_connection(&d->model, hold);
		}
	d->model.owner = NULL;   /* closing it detaches nothing */
	/* Nor a local group's members: the group writes no buffer again
	 * (they stay mapped until the process exits). */
	group_end_begin(&d->model.group);
	api_stop(d);
}

void api_stop(gossipd *d)
{
	api_server *srv = d->api;
	if (!srv)
		return;
	while (srv->clients)
		api__client_close(srv->clients);
	uv_poll_stop(&srv->poll);
	uv_close((uv_handle_t *)&srv->poll, NULL);
	close(srv->fd);
	/* Only our own socket: never one another process put there. */
	struct stat st;
	if (lstat(d->cfg.socket_path, &st) == 0 && st.st_dev == srv->dev &&
	    st.st_ino == srv->ino)
		unlink(d->cfg.socket_path);
	srv->fd = -1;
}
