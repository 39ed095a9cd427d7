/* gossipctl's local API client (see ipc.h). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "gossip.h"
#include "ipc.h"
#include "proto.h"
#include "subcommands.h"

const char *gctl_socket_path(const char *override)
{
	const char *env;

	if (override)
		return override;
	env = getenv(GCTL_SOCKET_ENV);
	return env && *env ? env : GCTL_DEFAULT_SOCKET;
}

int gctl_socket_option(int argc, const char *argv[], int *i, const char *sub,
		       const char **ret_path)
{
	const char *arg = argv[*i];
	const char *path;
	int next = *i + 1;

	if (!strcmp(arg, "--socket")) {
		if (next >= argc) {
			gctl_usage_error(sub, "--socket needs a path", NULL);
			return -1;
		}
		path = argv[next++];
	} else if (!strncmp(arg, "--socket=", 9)) {
		path = arg + 9;
	} else {
		return 0;
	}
	if (!*path) {
		gctl_usage_error(sub, "--socket needs a non-empty path", NULL);
		return -1;
	}
	*ret_path = path;
	*i = next;
	return 1;
}

/* ---- the connection ---------------------------------------------------- */

typedef struct conn {
	int fd;
	const char *path;
} conn;

static int fail(const conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(const conn *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s: ", PROG_NAME, c->path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

static int fail_io(const conn *c, const char *what, int err)
{
	if (err == EAGAIN || err == EWOULDBLOCK)
		return fail(c, "timed out %s gossipd after %d s", what,
			    GCTL_TIMEOUT_SECONDS);
	return fail(c, "%s gossipd: %s", what, strerror(err));
}

static int conn_open(conn *c, const char *path)
{
	struct sockaddr_un sa;
	struct timeval tv = { .tv_sec = GCTL_TIMEOUT_SECONDS };
	size_t len = strlen(path);
	int fd, err;

	c->fd = -1;
	c->path = path;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (len >= sizeof(sa.sun_path)) {
		fprintf(stderr, "%s: cannot connect to %s: the path is longer than "
			"%zu bytes\n", PROG_NAME, path, sizeof(sa.sun_path) - 1);
		return -1;
	}
	memcpy(sa.sun_path, path, len);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot create a socket: %s\n", PROG_NAME,
			strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
		err = errno;
		close(fd);
		fprintf(stderr, "%s: cannot set socket timeouts: %s\n", PROG_NAME,
			strerror(err));
		return -1;
	}
	if (connect(fd, (const struct sockaddr *)&sa,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1)) < 0) {
		err = errno;
		close(fd);
		fprintf(stderr, "%s: cannot connect to %s: %s%s\n", PROG_NAME, path,
			strerror(err),
			err == ENOENT || err == ECONNREFUSED ? " (is gossipd running?)" : "");
		return -1;
	}
	c->fd = fd;
	return 0;
}

static void conn_close(conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int send_all(const conn *c, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail_io(c, "sending to", errno);
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Sends one message (without its header) as a frame. */
static int send_frame(const conn *c, uint8_t *frame, size_t msg_len)
{
	if (gsp_frame_header_write(frame, GSP_FRAME_HEADER, (uint32_t)msg_len) < 0)
		return fail(c, "cannot frame a request");
	return send_all(c, frame, GSP_FRAME_HEADER + msg_len);
}

static int recv_all(const conn *c, uint8_t *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = recv(c->fd, buf, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail_io(c, "waiting for", errno);
		}
		if (n == 0)
			return fail(c, "gossipd closed the connection");
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Receives one frame.  On 0, *ret_frame is the malloc'd frame (free it)
 * and *ret_body / *ret_len its body. */
static int recv_frame(const conn *c, uint8_t **ret_frame,
		      const uint8_t **ret_body, uint32_t *ret_len)
{
	uint8_t head[GSP_FRAME_HEADER];
	const uint8_t *body;
	uint32_t len;
	size_t consumed;
	uint8_t *frame;
	int r;

	if (recv_all(c, head, sizeof(head)) < 0)
		return -1;
	/* With only the header present, a valid length reads as -EAGAIN. */
	r = gsp_frame_parse(head, sizeof(head), GSP_API_MAX_FRAME, &body, &len,
			    &consumed);
	len = (uint32_t)head[0] | (uint32_t)head[1] << 8 |
	      (uint32_t)head[2] << 16 | (uint32_t)head[3] << 24;
	if (r == -EBADMSG)
		return fail(c, "malformed reply from gossipd: empty frame");
	if (r == -EMSGSIZE)
		return fail(c, "malformed reply from gossipd: a %lu-byte frame "
			    "(the limit is %lu)", (unsigned long)len,
			    (unsigned long)GSP_API_MAX_FRAME);
	if (r != -EAGAIN)
		return fail(c, "malformed reply from gossipd: %s", gsp_strerror(r));
	frame = malloc(sizeof(head) + (size_t)len);
	if (!frame)
		return fail(c, "out of memory for a %u-byte reply", (unsigned)len);
	memcpy(frame, head, sizeof(head));
	if (recv_all(c, frame + sizeof(head), len) < 0) {
		free(frame);
		return -1;
	}
	r = gsp_frame_parse(frame, sizeof(head) + (size_t)len, GSP_API_MAX_FRAME,
			    &body, &len, &consumed);
	if (r < 0) {
		free(frame);
		return fail(c, "malformed reply from gossipd: %s", gsp_strerror(r));
	}
	*ret_frame = frame;
	*ret_body = body;
	*ret_len = len;
	return 0;
}

/* Reports a reply that is not the one expected: an ERROR (with the
 * daemon's text) or a malformed or unexpected message. */
static int fail_reply(const conn *c, const char *request, const uint8_t *body,
		      uint32_t len, int decode_err)
{
	gsp_api_error e;

	if (gsp_api_error_decode(body, len, &e) == 0)
		return fail(c, "gossipd refused %s: %.*s%s(%s)", request,
			    (int)e.text_len, e.text ? e.text : "",
			    e.text_len ? " " : "", gsp_strerror(e.code));
	if (decode_err == -ENOMSG)
		return fail(c, "unexpected reply 0x%02x from gossipd to %s",
			    (unsigned)body[0], request);
	return fail(c, "malformed reply from gossipd to %s: %s", request,
		    gsp_strerror(decode_err));
}

static int say_hello(const conn *c)
{
	static const char name[] = "gossipctl";
	uint8_t frame[GSP_FRAME_HEADER + 8 + sizeof(name)];
	gsp_api_hello hello = {
		.version = GSP_PROTO_VERSION,
		.name = name,
		.name_len = sizeof(name) - 1,
	};
	const uint8_t *body;
	uint8_t *reply;
	uint32_t len;
	uint16_t v;
	size_t n;
	int r;

	r = gsp_api_hello_encode(&hello, frame + GSP_FRAME_HEADER,
				 sizeof(frame) - GSP_FRAME_HEADER, &n);
	if (r < 0)
		return fail(c, "cannot encode HELLO: %s", gsp_strerror(r));
	if (send_frame(c, frame, n) < 0 || recv_frame(c, &reply, &body, &len) < 0)
		return -1;
	r = gsp_api_hello_ok_decode(body, len, &hello);
	if (r == -EPROTONOSUPPORT && gsp_proto_version_of(body, len, &v) == 0)
		r = fail(c, "gossipd speaks local API version %u.%u, gossipctl %u.%u",
			 GSP_PROTO_MAJOR(v), GSP_PROTO_MINOR(v),
			 GSP_PROTO_VERSION_MAJOR, GSP_PROTO_VERSION_MINOR);
	else if (r < 0)
		r = fail_reply(c, "HELLO", body, len, r);
	free(reply);
	return r < 0 ? -1 : 0;
}

static int ask_status(const conn *c, char **ret_json, size_t *ret_len)
{
	uint8_t frame[GSP_FRAME_HEADER + 1];
	gsp_api_status_ok ok;
	const uint8_t *body;
	uint8_t *reply;
	uint32_t len;
	size_t n;
	char *json;
	int r;

	r = gsp_api_status_encode(frame + GSP_FRAME_HEADER, 1, &n);
	if (r < 0)
		return fail(c, "cannot encode STATUS: %s", gsp_strerror(r));
	if (send_frame(c, frame, n) < 0 || recv_frame(c, &reply, &body, &len) < 0)
		return -1;
	r = gsp_api_status_ok_decode(body, len, &ok);
	if (r < 0) {
		fail_reply(c, "STATUS", body, len, r);
		free(reply);
		return -1;
	}
	json = malloc(ok.json_len + 1);
	if (!json) {
		free(reply);
		return fail(c, "out of memory for the status document");
	}
	if (ok.json_len)
		memcpy(json, ok.json, ok.json_len);
	json[ok.json_len] = '\0';
	*ret_len = ok.json_len;
	*ret_json = json;
	free(reply);
	return 0;
}

int gctl_fetch_status(const char *path, char **ret_json, size_t *ret_len)
{
	conn c;
	int r;

	if (conn_open(&c, path) < 0)
		return -1;
	r = say_hello(&c);
	if (r == 0)
		r = ask_status(&c, ret_json, ret_len);
	conn_close(&c);
	return r;
}
