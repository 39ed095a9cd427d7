/* The trainer-side client of gossipd's local API: one AF_UNIX stream
 * socket, requests encoded and replies decoded with proto/, the parameter
 * buffer in a sealed memfd passed with SCM_RIGHTS at REGISTER and kept, with
 * the REGISTER frame, to register again after the daemon restarted.  Every
 * wait polls against the call's deadline and an eventfd that
 * gsp_client_interrupt() signals from another thread. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "client_undo.h"
#include "fetch_msg.h"
#include "proto.h"

/* client.h states the protocol's limits and flags without proto.h. */
_Static_assert(GSP_CLIENT_NAME_MAX == GSP_API_NAME_MAX, "name cap");
_Static_assert(GSP_CLIENT_TENSOR_NAME_MAX == GSP_WIRE_NAME_MAX,
	       "tensor name cap");
_Static_assert(GSP_CLIENT_MAX_TENSORS == GSP_API_MAX_TENSORS, "tensor cap");
_Static_assert(GSP_CLIENT_MAX_FRAME == GSP_API_MAX_FRAME, "frame cap");
_Static_assert(GSP_CLIENT_ERROR_TEXT_MAX == GSP_API_ERROR_TEXT_MAX, "text cap");
_Static_assert(GSP_CLIENT_STEP_SYNC == GSP_STEP_SYNC &&
	       GSP_CLIENT_STEP_DRAIN == GSP_STEP_DRAIN, "STEP flags");

/* Room for every request except REGISTER (HELLO is the largest: 5 +
 * GSP_API_NAME_MAX) and for every reply except a large STATUS_OK or
 * ERROR, which grow the receive buffer up to the frame cap. */
#define SMALL_FRAME 512

/* Reconnecting: one attempt waits at most RECONNECT_WAIT_MS (or the
 * client's timeout if shorter); after a failed attempt the next one comes
 * BACKOFF_FIRST_MS later, doubling up to BACKOFF_MAX_MS. */
#define RECONNECT_WAIT_MS 1000
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 500

#define NO_DEADLINE INT64_MAX

struct gsp_client {
	int fd;                 /* -1 while offline (the daemon is away) */
	int wake_fd;            /* gsp_client_interrupt()'s eventfd, or -1 */
	bool broken;            /* unusable: every call is -ENOTCONN */
	bool reconnect;         /* reconnect when the daemon is away */
	bool attempt;           /* inside a reconnect attempt */
	int64_t timeout_ms;     /* a request's longest wait; NO_DEADLINE */
	int64_t deadline;       /* of the current call, monotonic ms */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char name[GSP_API_NAME_MAX + 1];
	char daemon_name[GSP_API_NAME_MAX + 1];  /* HELLO_OK's, last connect */
	uint16_t daemon_version;
	float *params;          /* the registered buffer, or NULL */
	size_t params_bytes;    /* with the undo section, if any */
	uint64_t n_floats;      /* values in the buffer */
	size_t value_bytes;     /* each: 4 (float32) or 2 (16-bit) */
	bool undo;              /* buffers get an undo section (float32 ones) */
	bool reg_undo;          /* the registered buffer has one */
	int daemon_pidfd;       /* the daemon we last connected to, or -1 */
	int mem_fd;             /* its memfd, for registering again */
	uint8_t *reg_frame;     /* the REGISTER frame, header included */
	size_t reg_body_len;
	int64_t next_attempt;   /* while offline: monotonic ms */
	uint32_t backoff_ms;
	uint64_t offline_steps;
	uint32_t reconnects;
	gsp_client_step_result last;  /* of the last STEP_OK */
	uint8_t *rx;            /* one reply frame, header included */
	size_t rx_cap;
	gsp_client_failure failure;   /* of the last call */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The deadline wait_ms from now (NO_DEADLINE stays). */
static int64_t deadline_in(int64_t wait_ms)
{
	return wait_ms == NO_DEADLINE ? NO_DEADLINE : now_ms() + wait_ms;
}

/* ---- failures ------------------------------------------------------------- */

/* A new call: nothing failed yet. */
static void begin(gsp_client *c)
{
	c->failure.stage = GSP_CLIENT_OK;
	c->failure.code = 0;
	c->failure.version = 0;
	c->failure.frame_len = 0;
	c->failure.reply_type = 0;
	c->failure.unexpected_type = false;
	c->failure.text[0] = '\0';
}

/* Records a failure at stage and returns err. */
static int failed(gsp_client *c, gsp_client_stage stage, int err)
{
	c->failure.stage = stage;
	c->failure.code = err;
	return err;
}

static int local(gsp_client *c, int err)
{
	return failed(c, GSP_CLIENT_LOCAL, err);
}

/* The connection is lost: a write the daemon was killed inside is
 * undone (client_undo.h).  A daemon still writing is given a while. */
#define UNDO_WAIT_MS 5000

static void undo_lost_write(gsp_client *c)
{
	if (c->params && c->reg_undo)
		(void)gsp_undo_recover(c->params, c->n_floats, c->daemon_pidfd,
				       UNDO_WAIT_MS);
}

/* How long a client that closes a live connection with a model
 * registered (a timeout, or gsp_client_close() without DETACH) waits for
 * the daemon's EOF: the daemon keeps the connection open until its
 * implicit DETACH has let go of the buffer (a step that still runs, the
 * neighbours' answers within DetachWait), so after the EOF only the
 * trainer writes it (PROTOCOL.md 5.3). */
#define RELEASE_WAIT_MS 10000

static void await_release(gsp_client *c)
{
	char scratch[512];
	if (c->fd < 0 || !c->params)
		return;
	(void)shutdown(c->fd, SHUT_WR);
	int64_t end = now_ms() + RELEASE_WAIT_MS;
	for (;;) {
		int64_t left = end - now_ms();
		struct pollfd p = {.fd = c->fd, .events = POLLIN};
		if (left <= 0)
			return;
		int r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		ssize_t n = recv(c->fd, scratch, sizeof(scratch), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return;       /* EOF (or the connection is gone): let go */
	}
}

static void close_socket(gsp_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* Marks the client unusable, closes its socket (the daemon then detaches)
 * and records err at stage. */
static int broken(gsp_client *c, gsp_client_stage stage, int err)
{
	if (stage == GSP_CLIENT_IO && (err == -ETIMEDOUT || err == -ECANCELED))
		await_release(c);
	if (stage == GSP_CLIENT_IO)
		undo_lost_write(c);
	c->broken = true;
	close_socket(c);
	return failed(c, stage, err);
}

/* Whether err, met at stage, means the daemon is away (stopped, killed,
 * restarting), so that a later attempt may find it back. */
static bool daemon_away(gsp_client_stage stage, int err)
{
	if (stage == GSP_CLIENT_CONNECT)
		return err == -ENOENT || err == -ECONNREFUSED ||
		       err == -EAGAIN || err == -ETIMEDOUT;
	return stage == GSP_CLIENT_IO &&
	       (err == -ECONNRESET || err == -EPIPE || err == -ETIMEDOUT);
}

/* A failed send or receive: the daemon went away (the client goes offline
 * and reconnects later), or the stream is lost for good.  A timeout is
 * final, except in a reconnect attempt (a daemon still starting). */
static int io_failed(gsp_client *c, int err)
{
	if (c->reconnect && (err == -ECONNRESET || err == -EPIPE ||
			     (c->attempt && err == -ETIMEDOUT))) {
		undo_lost_write(c);
		close_socket(c);
		if (!c->attempt) {     /* the first attempt at once */
			c->next_attempt = now_ms();
			c->backoff_ms = BACKOFF_FIRST_MS;
		}
		return failed(c, GSP_CLIENT_IO, err);
	}
	return broken(c, GSP_CLIENT_IO, err);
}

/* Waits until the socket is ready for events, the call's deadline
 * passed (-ETIMEDOUT) or gsp_client_interrupt() was called (-ECANCELED).
 * Bounded by the deadline; EINTR restarts. */
static int wait_socket(gsp_client *c, short events)
{
	struct pollfd p[2] = {{.fd = c->fd, .events = events},
			      {.fd = c->wake_fd, .events = POLLIN}};

	for (;;) {
		int wait = -1, n;

		if (c->deadline != NO_DEADLINE) {
			int64_t left = c->deadline - now_ms();
			if (left <= 0)
				return -ETIMEDOUT;
			wait = left > INT_MAX ? INT_MAX : (int)left;
		}
		n = poll(p, 2, wait);
		if (n > 0 && p[1].revents)
			return -ECANCELED;
		if (n > 0)
			return 0;     /* errors and hangups: the next I/O says */
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* A reply that decode refused with err: of the wrong type (-ENOMSG) or
 * malformed.  The stream is no longer trusted. */
static int bad_reply(gsp_client *c, const uint8_t *body, int err)
{
	c->failure.reply_type = body[0];
	c->failure.unexpected_type = err == -ENOMSG;
	return broken(c, GSP_CLIENT_REPLY, -EBADMSG);
}

/* ---- socket I/O ----------------------------------------------------------- */

/* Sends frame[0..len), the first byte carrying pass_fd as SCM_RIGHTS when
 * pass_fd >= 0.  A partial sendmsg() sends the rest without the fd: the
 * daemon accepts the fd with any part of the frame.  Never blocks beyond
 * the call's deadline. */
static int send_frame(gsp_client *c, const uint8_t *frame, size_t len,
		      int pass_fd)
{
	size_t done = 0;
	int err;

	while (done < len) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int))];
		} ctl;
		struct iovec iov = {.iov_base = (void *)(uintptr_t)(frame + done),
				    .iov_len = len - done};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		ssize_t n;

		if (pass_fd >= 0) {
			struct cmsghdr *cm;

			memset(&ctl, 0, sizeof(ctl));
			mh.msg_control = ctl.buf;
			mh.msg_controllen = sizeof(ctl.buf);
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
		}
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;          /* nothing was sent, fd included */
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			err = wait_socket(c, POLLOUT);
			if (err < 0)
				return io_failed(c, err);
			continue;
		}
		if (n < 0)
			return io_failed(c, -errno);
		done += (size_t)n;
		pass_fd = -1;              /* it went with the first bytes */
	}
	return 0;
}

/* Reads exactly len bytes; end of stream is -ECONNRESET. */
static int recv_exact(gsp_client *c, uint8_t *p, size_t len)
{
	size_t done = 0;
	int err;

	while (done < len) {
		ssize_t n = recv(c->fd, p + done, len - done, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			err = wait_socket(c, POLLIN);
			if (err < 0)
				return io_failed(c, err);
			continue;
		}
		if (n < 0)
			return io_failed(c, -errno);
		if (n == 0)
			return io_failed(c, -ECONNRESET);
		done += (size_t)n;
	}
	return 0;
}

/* Reads one reply frame into c->rx.  An ERROR reply returns its code with
 * its text kept in the failure record; any other reply is returned in
 * *ret_body for the caller's decoder (0). */
static int recv_reply(gsp_client *c, const uint8_t **ret_body,
		      size_t *ret_len)
{
	const uint8_t *body;
	uint32_t body_len, len;
	size_t used;
	gsp_api_error e;
	int err;

	err = recv_exact(c, c->rx, GSP_FRAME_HEADER);
	if (err < 0)
		return err;
	/* With the header alone, a valid length gives -EAGAIN; 0 and lengths
	 * over the cap are refused before anything is buffered. */
	len = gsp_frame_header_read(c->rx);
	err = gsp_frame_parse(c->rx, GSP_FRAME_HEADER, GSP_API_MAX_FRAME,
			      &body, &body_len, &used);
	if (err != -EAGAIN) {
		c->failure.frame_len = len;
		return broken(c, GSP_CLIENT_FRAME, -EBADMSG);
	}
	if ((size_t)len + GSP_FRAME_HEADER > c->rx_cap) {
		uint8_t *rx = realloc(c->rx, (size_t)len + GSP_FRAME_HEADER);
		if (!rx)   /* the body is unread: the stream is lost */
			return broken(c, GSP_CLIENT_LOCAL, -ENOMEM);
		c->rx = rx;
		c->rx_cap = (size_t)len + GSP_FRAME_HEADER;
	}
	err = recv_exact(c, c->rx + GSP_FRAME_HEADER, len);
	if (err < 0)
		return err;
	err = gsp_frame_parse(c->rx, (size_t)len + GSP_FRAME_HEADER,
			      GSP_API_MAX_FRAME, &body, &body_len, &used);
	if (err < 0) {
		c->failure.frame_len = len;
		return broken(c, GSP_CLIENT_FRAME, -EBADMSG);
	}

	if (body[0] == GSP_API_ERROR) {
		err = gsp_api_error_decode(body, body_len, &e);
		if (err < 0)
			return bad_reply(c, body, err);
		memcpy(c->failure.text, e.text, e.text_len);
		c->failure.text[e.text_len] = '\0';
		return failed(c, GSP_CLIENT_DAEMON, e.code);
	}
	*ret_body = body;
	*ret_len = body_len;
	return 0;
}

/* ---- requests ------------------------------------------------------------- */

/* Decodes a reply body into *ret; each wraps one proto/ decoder. */
typedef int (*reply_decoder)(const uint8_t *body, size_t len, void *ret);

static int decode_ok(const uint8_t *body, size_t len, void *ret)
{
	(void)ret;
	return gsp_api_ok_decode(body, len);
}

static int decode_hello_ok(const uint8_t *body, size_t len, void *ret)
{
	return gsp_api_hello_ok_decode(body, len, ret);
}

static int decode_step_ok(const uint8_t *body, size_t len, void *ret)
{
	return gsp_api_step_ok_decode(body, len, ret);
}

static int decode_average_ok(const uint8_t *body, size_t len, void *ret)
{
	return gsp_api_average_ok_decode(body, len, ret);
}

static int decode_fetch_ok(const uint8_t *body, size_t len, void *ret)
{
	return gsp_api_fetch_ok_decode(body, len, ret);
}

static int decode_status_ok(const uint8_t *body, size_t len, void *ret)
{
	return gsp_api_status_ok_decode(body, len, ret);
}

/* The one path of every request: sends the request body
 * frame[4..4+body_len) (the header is written here; pass_fd, if >= 0,
 * travels with it), reads the reply and decodes it into *ret, all before
 * c->deadline.  Any reply that does not decode leaves the client
 * unusable. */
static int request(gsp_client *c, uint8_t *frame, size_t body_len,
		   int pass_fd, reply_decoder decode, void *ret)
{
	const uint8_t *body = NULL;
	size_t len = 0;
	int err;

	if (c->broken || c->fd < 0)
		return local(c, -ENOTCONN);
	err = gsp_frame_header_write(frame, GSP_FRAME_HEADER,
				     (uint32_t)body_len);
	if (err < 0)
		return local(c, err);
	err = send_frame(c, frame, GSP_FRAME_HEADER + body_len, pass_fd);
	if (err < 0)
		return err;
	err = recv_reply(c, &body, &len);
	if (err < 0)
		return err;
	err = decode(body, len, ret);
	/* Only HELLO_OK, of the replies, carries a version. */
	if (err == -EPROTONOSUPPORT &&
	    gsp_proto_version_of(body, len, &c->failure.version) == 0)
		return broken(c, GSP_CLIENT_VERSION, -EPROTONOSUPPORT);
	if (err < 0)
		return bad_reply(c, body, err);
	return 0;
}

/* Encodes a small request into buf[0..cap); each wraps one proto/
 * encoder. */
typedef int (*request_encoder)(const void *msg, uint8_t *buf, size_t cap,
			       size_t *ret_len);

static int encode_step(const void *msg, uint8_t *buf, size_t cap,
		       size_t *ret_len)
{
	return gsp_api_step_encode(msg, buf, cap, ret_len);
}

static int encode_average(const void *msg, uint8_t *buf, size_t cap,
			  size_t *ret_len)
{
	return gsp_api_average_encode(msg, buf, cap, ret_len);
}

static int encode_fetch(const void *msg, uint8_t *buf, size_t cap,
			size_t *ret_len)
{
	return gsp_api_fetch_encode(msg, buf, cap, ret_len);
}

static int encode_leave(const void *msg, uint8_t *buf, size_t cap,
			size_t *ret_len)
{
	(void)msg;
	return gsp_api_leave_encode(buf, cap, ret_len);
}

static int encode_status(const void *msg, uint8_t *buf, size_t cap,
			 size_t *ret_len)
{
	(void)msg;
	return gsp_api_status_encode(buf, cap, ret_len);
}

static int encode_detach(const void *msg, uint8_t *buf, size_t cap,
			 size_t *ret_len)
{
	(void)msg;
	return gsp_api_detach_encode(buf, cap, ret_len);
}

static int encode_hello(const void *msg, uint8_t *buf, size_t cap,
			size_t *ret_len)
{
	return gsp_api_hello_encode(msg, buf, cap, ret_len);
}

static int reconnect(gsp_client *c);

/* A request that fits in SMALL_FRAME and passes no fd: encodes msg, then
 * (reconnecting first if the daemon was away) request() within wait_ms.
 * An encoder's refusal (-EINVAL: bad flags or limits) is a local failure,
 * and the connection stays usable. */
static int small_request(gsp_client *c, request_encoder encode,
			 const void *msg, reply_decoder decode, void *ret,
			 int64_t wait_ms)
{
	uint8_t frame[SMALL_FRAME];
	size_t len;
	int err;

	err = encode(msg, frame + GSP_FRAME_HEADER,
		     sizeof(frame) - GSP_FRAME_HEADER, &len);
	if (err < 0)
		return local(c, err);
	if (!c->broken && c->fd < 0) {
		err = reconnect(c);
		if (err < 0)
			return err;
	}
	c->deadline = deadline_in(wait_ms);
	return request(c, frame, len, -1, decode, ret);
}

/* ---- connect -------------------------------------------------------------- */

/* connect() on a blocking socket whose SO_SNDTIMEO bounds the wait, resumed
 * after EINTR: the attempt goes on in the background, so wait for it (at
 * most wait_ms) and read its outcome. */
static int connect_unix(int fd, const struct sockaddr_un *sa, int64_t wait_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int wait = wait_ms == NO_DEADLINE ? -1 :
		   wait_ms > INT_MAX ? INT_MAX : (int)wait_ms;
	socklen_t optlen = sizeof(int);
	int soerr = 0, n;

	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
		return 0;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return -ETIMEDOUT;         /* SO_SNDTIMEO ran out */
	if (errno != EINTR)
		return -errno;
	while ((n = poll(&p, 1, wait)) < 0)
		if (errno != EINTR)
			return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &optlen) < 0)
		return -errno;
	return -soerr;
}

/* Opens the socket to c->path and says HELLO, waiting at most wait_ms for
 * each.  On failure the socket is closed (or the client broken). */
static int open_socket(gsp_client *c, int64_t wait_ms)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	gsp_api_hello hello = {.version = GSP_PROTO_VERSION, .name = c->name,
			       .name_len = strlen(c->name)};
	struct timeval tv = {.tv_sec = wait_ms / 1000,
			     .tv_usec = (suseconds_t)(wait_ms % 1000) * 1000};
	int err = 0;

	memcpy(sa.sun_path, c->path, sizeof(sa.sun_path));
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return failed(c, GSP_CLIENT_CONNECT, -errno);
	if (wait_ms != NO_DEADLINE &&
	    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		err = -errno;
	if (err == 0)
		err = connect_unix(c->fd, &sa, wait_ms);
	if (err < 0) {
		close_socket(c);
		return failed(c, GSP_CLIENT_CONNECT, err);
	}
	err = small_request(c, encode_hello, &hello, decode_hello_ok, &hello,
			    wait_ms);
	if (err < 0) {
		close_socket(c);
		return err;
	}
	if (c->daemon_pidfd >= 0)
		close(c->daemon_pidfd);
	c->daemon_pidfd = gsp_undo_pidfd(c->fd);
	memcpy(c->daemon_name, hello.name, hello.name_len);
	c->daemon_name[hello.name_len] = '\0';
	c->daemon_version = hello.version;
	return 0;
}

/* The daemon is away: a STEP's result without gossip (0), and why in the
 * failure record. */
static int offline_step(gsp_client *c, gsp_client_step_result *ret_stats)
{
	c->offline_steps++;
	if (ret_stats) {
		*ret_stats = c->last;
		ret_stats->edges_applied = 0;
		ret_stats->edges_projected = 0;
		ret_stats->edges_skipped = 0;
		ret_stats->offline = true;
		ret_stats->offline_steps = c->offline_steps;
		ret_stats->reconnects = c->reconnects;
	}
	return 0;
}

/* One attempt to reach the daemon again: connect, HELLO and, with a model
 * registered, REGISTER of the same buffer (memfd) and tensors.  A daemon
 * still away leaves the client offline, the next attempt scheduled with
 * backoff; any other failure (another protocol version, the daemon's
 * ERROR, a malformed reply) makes the client unusable. */
static int reconnect(gsp_client *c)
{
	int64_t wait = c->timeout_ms < RECONNECT_WAIT_MS ? c->timeout_ms :
							    RECONNECT_WAIT_MS;
	int err;

	c->attempt = true;
	err = open_socket(c, wait);
	if (err == 0 && c->params) {
		c->deadline = deadline_in(wait);
		err = request(c, c->reg_frame, c->reg_body_len, c->mem_fd,
			      decode_ok, NULL);
	}
	c->attempt = false;
	if (err == 0) {
		c->reconnects++;
		c->backoff_ms = BACKOFF_FIRST_MS;
		begin(c);
		return 0;
	}
	if (c->broken)
		return err;
	if (!daemon_away(c->failure.stage, err))
		return broken(c, c->failure.stage, err);
	close_socket(c);
	c->next_attempt = now_ms() + c->backoff_ms;
	c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
							     c->backoff_ms * 2;
	return err;
}

/* Checks and keeps the arguments, then opens the socket; on failure c is
 * left for the caller to read its failure record and free. */
static int open_client(gsp_client *c, const char *socket_path,
		       const gsp_client_options *opts)
{
	const char *name = opts->client_name ? opts->client_name : "";
	size_t path_len;

	if (!socket_path)
		return local(c, -EINVAL);
	path_len = strlen(socket_path);
	if (path_len == 0)
		return local(c, -EINVAL);
	if (path_len >= sizeof(c->path))
		return failed(c, GSP_CLIENT_CONNECT, -ENAMETOOLONG);
	memcpy(c->path, socket_path, path_len + 1);
	if (strlen(name) > GSP_API_NAME_MAX)
		return local(c, -EINVAL);
	memcpy(c->name, name, strlen(name) + 1);
	(void)gsp_client_set_timeout(c, opts->timeout_ms);
	c->reconnect = !(opts->flags & GSP_CLIENT_NO_RECONNECT);
	c->backoff_ms = BACKOFF_FIRST_MS;
	c->last.consensus_estimate = NAN;

	c->rx_cap = SMALL_FRAME;
	c->rx = malloc(c->rx_cap);
	if (!c->rx)
		return local(c, -ENOMEM);
	c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->wake_fd < 0)
		return local(c, -errno);
	if (open_socket(c, c->timeout_ms) < 0)
		return c->failure.code;
	begin(c);
	return 0;
}

int gsp_client_connect_opts(const char *socket_path,
			    const gsp_client_options *opts, gsp_client **ret,
			    gsp_client_failure *failure)
{
	static const gsp_client_options defaults;
	gsp_client *c;
	int err;

	if (!ret) {
		if (failure) {
			memset(failure, 0, sizeof(*failure));
			failure->stage = GSP_CLIENT_LOCAL;
			failure->code = -EINVAL;
		}
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		if (failure) {
			memset(failure, 0, sizeof(*failure));
			failure->stage = GSP_CLIENT_LOCAL;
			failure->code = -ENOMEM;
		}
		return -ENOMEM;
	}
	c->fd = -1;
	c->wake_fd = -1;
	c->mem_fd = -1;
	c->daemon_pidfd = -1;
	c->undo = !(opts && (opts->flags & GSP_CLIENT_NO_UNDO));
	err = open_client(c, socket_path, opts ? opts : &defaults);
	if (err < 0) {
		if (failure)
			*failure = c->failure;
		gsp_client_close(c);
		return err;
	}
	*ret = c;
	return 0;
}

int gsp_client_connect(const char *socket_path, const char *client_name,
		       gsp_client **ret)
{
	gsp_client_options opts = {.client_name = client_name};

	return gsp_client_connect_opts(socket_path, &opts, ret, NULL);
}

/* ---- register and detach -------------------------------------------------- */

/* The wire description of tensors[0..n) into wire (names point into
 * tensors), and the total float count. */
static int wire_tensors(const gsp_tensor *tensors, size_t n,
			gsp_wire_tensor *wire, uint64_t *ret_floats)
{
	for (size_t i = 0; i < n; i++) {
		size_t name_len = strnlen(tensors[i].name, GSP_NAME_MAX);
		if (name_len > GSP_WIRE_NAME_MAX ||
		    tensors[i].ndim > GSP_WIRE_MAX_DIMS ||
		    tensors[i].ndim > GSP_MAX_DIMS)
			return -EINVAL;
		wire[i].name = tensors[i].name;
		wire[i].name_len = (uint8_t)name_len;
		wire[i].ndim = (uint8_t)tensors[i].ndim;
		for (unsigned d = 0; d < tensors[i].ndim; d++)
			wire[i].dims[d] = tensors[i].shape[d];
	}
	return gsp_wire_tensors_floats(wire, (uint32_t)n, ret_floats);
}

/* A sealed memfd of `bytes` zero bytes, mapped shared into *ret_map. */
static int shared_buffer(size_t bytes, int *ret_fd, void **ret_map)
{
	void *map;
	int fd, err;

	fd = memfd_create("gossip-params", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	while (ftruncate(fd, (off_t)bytes) < 0)
		if (errno != EINTR) {
			err = -errno;
			goto fail;
		}
	/* Fixed size for good: the daemon's mapping can never hit SIGBUS. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		err = -errno;
		goto fail;
	}
	map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	*ret_fd = fd;
	*ret_map = map;
	return 0;

fail:
	close(fd);
	return err;
}

/* The wire code of a method's name, or -EINVAL. */
static int wire_method(const char *name)
{
	const char *known;

	for (unsigned m = 0; (known = gsp_wire_method_name(m)) != NULL; m++)
		if (!strcmp(name, known))
			return (int)m;
	return -EINVAL;
}

/* The wire form of a client's register options; -EINVAL if they break
 * gsp_client_register_options' rules. */
static int wire_options(const gsp_client_register_options *o,
			gsp_api_register_opts *ret)
{
	gsp_api_register_opts w = {0};
	int method;

	if (!o) {
		*ret = w;
		return 0;
	}
	if (o->method) {
		if ((method = wire_method(o->method)) < 0)
			return -EINVAL;
		w.set |= GSP_REG_METHOD;
		w.method = (uint8_t)method;
	}
	if (o->rank > UINT16_MAX || o->power_iterations > UINT16_MAX ||
	    !isfinite(o->gamma) || o->gamma < 0 ||
	    (unsigned)o->precision > GSP_CLIENT_PRECISION_BFLOAT16 ||
	    (unsigned)o->dtype > GSP_CLIENT_DTYPE_BFLOAT16 || o->group > 1)
		return -EINVAL;
	if (o->group)
		w.set |= GSP_REG_GROUP;
	if (o->dtype != GSP_CLIENT_DTYPE_DEFAULT) {
		w.set |= GSP_REG_DTYPE;
		w.dtype = (uint8_t)(o->dtype - GSP_CLIENT_DTYPE_FLOAT32 +
				    GSP_WIRE_DTYPE_FLOAT32);
	}
	if (o->rank) {
		w.set |= GSP_REG_RANK;
		w.rank = (uint16_t)o->rank;
	}
	if (o->gamma > 0) {
		w.set |= GSP_REG_GAMMA;
		w.gamma = o->gamma;
	}
	if (o->power_iterations) {
		w.set |= GSP_REG_ITERATIONS;
		w.power_iterations = (uint16_t)o->power_iterations;
	}
	if (o->precision != GSP_CLIENT_PRECISION_DEFAULT) {
		w.set |= GSP_REG_PRECISION;
		w.precision = (uint8_t)(o->precision - GSP_CLIENT_PRECISION_FLOAT32 +
					GSP_WIRE_PRECISION_FLOAT32);
	}
	*ret = w;
	return 0;
}

int gsp_client_register(gsp_client *c, const gsp_tensor *tensors, size_t n,
			float **ret_params)
{
	return gsp_client_register_opts(c, tensors, n, NULL, ret_params);
}

int gsp_client_register_opts(gsp_client *c, const gsp_tensor *tensors, size_t n,
			     const gsp_client_register_options *opts,
			     float **ret_params)
{
	gsp_api_register msg = {0};
	gsp_wire_tensor *wire = NULL;
	uint8_t *frame = NULL;
	void *map = NULL;
	uint64_t floats;
	int64_t size;
	size_t bytes = 0, len;
	int fd = -1, err;

	if (!c)
		return -EINVAL;
	begin(c);
	if (!tensors || !ret_params || n == 0 || n > GSP_API_MAX_TENSORS)
		return local(c, -EINVAL);
	if (c->broken)
		return local(c, -ENOTCONN);
	if (c->params)
		return local(c, -EBUSY);

	if (wire_options(opts, &msg.opts) != 0)
		return local(c, -EINVAL);
	wire = calloc(n, sizeof(*wire));
	if (!wire)
		return local(c, -ENOMEM);
	err = wire_tensors(tensors, n, wire, &floats);
	if (err < 0)
		goto out;
	if (floats > (uint64_t)INT64_MAX / 4 || floats > SIZE_MAX / 4) {
		err = -EOVERFLOW;
		goto out;
	}
	/* A 16-bit buffer has no undo section (PROTOCOL.md 5.3). */
	size_t value = gsp_wire_dtype_size(msg.opts.dtype);
	bool undo = c->undo && value == 4;
	if (undo && gsp_undo_bytes(floats) > SIZE_MAX) {
		err = -EOVERFLOW;
		goto out;
	}
	bytes = undo ? (size_t)gsp_undo_bytes(floats) : (size_t)floats * value;
	size = gsp_api_register_size(wire, (uint32_t)n);
	if (size < 0) {
		err = (int)size;
		goto out;
	}
	if (msg.opts.set)
		size += msg.opts.set & GSP_REG_DTYPE ? GSP_API_REGISTER_OPTS_DTYPE_BYTES
						     : GSP_API_REGISTER_OPTS_BYTES;
	frame = malloc(GSP_FRAME_HEADER + (size_t)size);
	if (!frame) {
		err = -ENOMEM;
		goto out;
	}
	msg.buffer_bytes = bytes;
	err = gsp_api_register_encode(&msg, wire, (uint32_t)n,
				      frame + GSP_FRAME_HEADER, (size_t)size,
				      &len);
	if (err < 0)
		goto out;
	err = shared_buffer(bytes, &fd, &map);
	if (err < 0)
		goto out;
	if (undo)
		gsp_undo_init(map, floats);
	if (c->fd < 0) {                /* the daemon was away */
		err = reconnect(c);
		if (err < 0)
			goto out;
	}
	c->deadline = deadline_in(c->timeout_ms);
	err = request(c, frame, len, fd, decode_ok, NULL);
	if (err < 0)
		goto out;
	/* Kept, with the frame, to register again after a restart. */
	c->params = map;
	c->params_bytes = bytes;
	c->n_floats = floats;
	c->value_bytes = value;
	c->reg_undo = undo;
	c->mem_fd = fd;
	c->reg_frame = frame;
	c->reg_body_len = len;
	c->last = (gsp_client_step_result){.consensus_estimate = NAN};
	map = NULL;
	fd = -1;
	frame = NULL;
	*ret_params = c->params;

out:
	if (err < 0 && c->failure.stage == GSP_CLIENT_OK)
		local(c, err);          /* refused before the request went out */
	if (map)
		munmap(map, bytes);
	if (fd >= 0)
		close(fd);
	free(frame);
	free(wire);
	return err;
}

/* Forgets the registration: unmaps the buffer, closes its memfd. */
static void release(gsp_client *c)
{
	if (c->params)
		munmap(c->params, c->params_bytes);
	if (c->mem_fd >= 0)
		close(c->mem_fd);
	free(c->reg_frame);
	c->params = NULL;
	c->params_bytes = 0;
	c->mem_fd = -1;
	c->reg_frame = NULL;
	c->reg_body_len = 0;
}

/* The parameters as the buffer holds them now, into out (if any). */
static void copy_out(const gsp_client *c, float *out)
{
	if (out && c->params)
		memcpy(out, c->params, c->n_floats * c->value_bytes);
}

int gsp_client_detach_copy(gsp_client *c, float *out)
{
	int err;

	if (!c)
		return -EINVAL;
	begin(c);
	if (!c->broken && c->fd < 0 && c->params) {
		copy_out(c, out);
		release(c);     /* the daemon is away: it holds no model of ours */
		return 0;
	}
	err = small_request(c, encode_detach, NULL, decode_ok, NULL,
			    c->timeout_ms);
	if (err < 0 && !(c->params && !c->broken && c->fd < 0))
		return err;
	copy_out(c, out);  /* after DETACH's own writes (its take-backs) */
	release(c);     /* a daemon that lost the connection detached */
	begin(c);
	return 0;
}

int gsp_client_detach(gsp_client *c)
{
	return gsp_client_detach_copy(c, NULL);
}

/* ---- step, average, status ------------------------------------------------ */

int gsp_client_step(gsp_client *c, uint32_t flags,
		    gsp_client_step_result *ret_stats)
{
	gsp_api_step msg = {.flags = flags};
	gsp_api_step_ok ok;
	bool drain = flags & GSP_CLIENT_STEP_DRAIN;
	int err;

	if (!c)
		return -EINVAL;
	if (flags & ~(GSP_CLIENT_STEP_SYNC | GSP_CLIENT_STEP_DRAIN)) {
		begin(c);
		return local(c, -EINVAL);
	}
	/* Offline: train on, reconnecting at most once per backoff period.
	 * The failure record keeps why the daemon is away. */
	if (!c->broken && c->fd < 0 && !drain) {
		if (now_ms() < c->next_attempt)
			return offline_step(c, ret_stats);
		begin(c);
		err = reconnect(c);
		if (err < 0)
			return c->broken ? err : offline_step(c, ret_stats);
	}
	begin(c);
	err = small_request(c, encode_step, &msg, decode_step_ok, &ok,
			    c->timeout_ms);
	if (err < 0 && !drain && !c->broken && c->fd < 0)
		return offline_step(c, ret_stats);   /* it went away now */
	if (err < 0)
		return err;
	c->last = (gsp_client_step_result){
		.step = ok.step,
		.edges_applied = ok.edges_applied,
		.edges_projected = ok.edges_projected,
		.edges_skipped = ok.edges_skipped,
		.max_staleness = ok.max_staleness,
		.bytes_sent = ok.bytes_sent,
		.bytes_received = ok.bytes_received,
		.consensus_estimate = ok.consensus_estimate,
		.offline = false,
		.offline_steps = c->offline_steps,
		.reconnects = c->reconnects,
	};
	if (ret_stats)
		*ret_stats = c->last;
	return 0;
}

/* How long a request the daemon may work on for time_limit_ms waits for
 * its reply: the client's timeout beyond that limit. */
static int64_t limited_wait(const gsp_client *c, uint32_t time_limit_ms)
{
	return c && c->timeout_ms != NO_DEADLINE ? c->timeout_ms + time_limit_ms
						   : NO_DEADLINE;
}

int gsp_client_average(gsp_client *c, double target, uint32_t time_limit_ms,
		       uint32_t max_rounds, gsp_client_average_result *ret)
{
	gsp_api_average msg = {.target = target,
			       .time_limit_ms = time_limit_ms,
			       .max_rounds = max_rounds};
	gsp_api_average_ok ok;
	int64_t wait = limited_wait(c, time_limit_ms);
	int err;

	if (!c)
		return -EINVAL;
	begin(c);
	err = small_request(c, encode_average, &msg, decode_average_ok, &ok,
			    wait);
	if (err < 0)
		return err;
	if (ret)
		*ret = (gsp_client_average_result){
			.rounds = ok.rounds,
			.estimate = ok.estimate,
			.reached = ok.reached,
		};
	return 0;
}

int gsp_client_fetch(gsp_client *c, uint32_t time_limit_ms,
		     gsp_client_fetch_result *ret)
{
	gsp_api_fetch msg = {.time_limit_ms = time_limit_ms};
	gsp_api_fetch_ok ok;
	int64_t wait = limited_wait(c, time_limit_ms);
	int err;

	if (!c)
		return -EINVAL;
	begin(c);
	if (time_limit_ms == 0)
		return local(c, -EINVAL);
	err = small_request(c, encode_fetch, &msg, decode_fetch_ok, &ok, wait);
	if (err < 0)
		return err;
	if (ret) {
		*ret = (gsp_client_fetch_result){.bytes = ok.bytes, .took_ms = ok.took_ms};
		snprintf(ret->peer, sizeof(ret->peer), "%.*s", (int)ok.peer_len,
			 ok.peer ? ok.peer : "");
	}
	return 0;
}

int gsp_client_leave(gsp_client *c)
{
	if (!c)
		return -EINVAL;
	begin(c);
	return small_request(c, encode_leave, NULL, decode_ok, NULL, c->timeout_ms);
}

int gsp_client_status(gsp_client *c, char **ret_json)
{
	gsp_api_status_ok ok;
	char *json;
	int err;

	if (!c)
		return -EINVAL;
	begin(c);
	if (!ret_json)
		return local(c, -EINVAL);
	err = small_request(c, encode_status, NULL, decode_status_ok, &ok,
			    c->timeout_ms);
	if (err < 0)
		return err;
	json = malloc(ok.json_len + 1);
	if (!json)
		return local(c, -ENOMEM);
	if (ok.json_len)
		memcpy(json, ok.json, ok.json_len);
	json[ok.json_len] = '\0';
	*ret_json = json;
	return 0;
}

/* ---- accessors and close -------------------------------------------------- */

const char *gsp_client_last_error(const gsp_client *c)
{
	return c && c->failure.stage == GSP_CLIENT_DAEMON ? c->failure.text : "";
}

const gsp_client_failure *gsp_client_last_failure(const gsp_client *c)
{
	static const gsp_client_failure no_client = {
		.stage = GSP_CLIENT_LOCAL, .code = -EINVAL,
	};

	return c ? &c->failure : &no_client;
}

void gsp_client_close(gsp_client *c)
{
	if (!c)
		return;
	if (!c->broken)
		await_release(c);
	close_socket(c);
	release(c);
	if (c->daemon_pidfd >= 0)
		close(c->daemon_pidfd);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	free(c->rx);
	free(c);
}

int gsp_client_set_timeout(gsp_client *c, uint32_t timeout_ms)
{
	if (!c)
		return -EINVAL;
	c->timeout_ms = timeout_ms == 0 ? GSP_CLIENT_TIMEOUT_MS :
			timeout_ms == GSP_CLIENT_NO_TIMEOUT ? NO_DEADLINE :
			timeout_ms;
	return 0;
}

void gsp_client_interrupt(gsp_client *c)
{
	uint64_t one = 1;

	if (c && c->wake_fd >= 0)
		(void)!write(c->wake_fd, &one, sizeof(one));
}

gsp_client_state gsp_client_state_of(const gsp_client *c)
{
	if (!c || c->broken)
		return GSP_CLIENT_UNUSABLE;
	return c->fd < 0 ? GSP_CLIENT_OFFLINE : GSP_CLIENT_CONNECTED;
}

const char *gsp_client_daemon(const gsp_client *c, uint16_t *ret_version)
{
	if (!c)
		return "";
	if (ret_version)
		*ret_version = c->daemon_version;
	return c->daemon_name;
}

int gsp_client_buffer_fd(const gsp_client *c)
{
	if (!c)
		return -EINVAL;
	return c->params ? c->mem_fd : -ENOENT;
}
