/* The trainer-side client of gossipd's local API: one blocking AF_UNIX
 * stream socket, requests encoded and replies decoded with proto/, the
 * parameter buffer in a sealed memfd passed with SCM_RIGHTS at REGISTER. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"
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

struct gsp_client {
	int fd;
	bool broken;            /* malformed reply or connection lost */
	float *params;          /* the registered buffer, or NULL */
	size_t params_bytes;
	uint8_t *rx;            /* one reply frame, header included */
	size_t rx_cap;
	gsp_client_failure failure;   /* of the last call */
};

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

/* Marks the stream unusable and records err at stage. */
static int broken(gsp_client *c, gsp_client_stage stage, int err)
{
	c->broken = true;
	return failed(c, stage, err);
}

/* A socket call's errno as a client error: a timeout (SO_RCVTIMEO,
 * SO_SNDTIMEO) reads as EAGAIN. */
static int sys_error(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
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
 * daemon accepts the fd with any part of the frame. */
static int send_frame(gsp_client *c, const uint8_t *frame, size_t len,
		      int pass_fd)
{
	size_t done = 0;

	while (pass_fd >= 0) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int))];
		} ctl;
		struct iovec iov = {.iov_base = (void *)(uintptr_t)frame,
				    .iov_len = len};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf)};
		struct cmsghdr *cm;
		ssize_t n;

		memset(&ctl, 0, sizeof(ctl));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;          /* nothing was sent, fd included */
		if (n < 0)
			return broken(c, GSP_CLIENT_IO, sys_error());
		done = (size_t)n;
		break;
	}
	while (done < len) {
		ssize_t n = send(c->fd, frame + done, len - done, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return broken(c, GSP_CLIENT_IO, sys_error());
		done += (size_t)n;
	}
	return 0;
}

/* Reads exactly len bytes; end of stream is -ECONNRESET. */
static int recv_exact(gsp_client *c, uint8_t *p, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = recv(c->fd, p + done, len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return broken(c, GSP_CLIENT_IO, sys_error());
		if (n == 0)
			return broken(c, GSP_CLIENT_IO, -ECONNRESET);
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

static int decode_status_ok(const uint8_t *body, size_t len, void *ret)
{
	return gsp_api_status_ok_decode(body, len, ret);
}

/* The one path of every request: sends the request body
 * frame[4..4+body_len) (the header is written here; pass_fd, if >= 0,
 * travels with it), reads the reply and decodes it into *ret.  Any reply
 * that does not decode leaves the client unusable. */
static int request(gsp_client *c, uint8_t *frame, size_t body_len,
		   int pass_fd, reply_decoder decode, void *ret)
{
	const uint8_t *body = NULL;
	size_t len = 0;
	int err;

	if (c->broken)
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

/* A request that fits in SMALL_FRAME and passes no fd: encodes msg, then
 * request().  An encoder's refusal (-EINVAL: bad flags or limits) is a
 * local failure, and the connection stays usable. */
static int small_request(gsp_client *c, request_encoder encode,
			 const void *msg, reply_decoder decode, void *ret)
{
	uint8_t frame[SMALL_FRAME];
	size_t len;
	int err;

	begin(c);
	err = encode(msg, frame + GSP_FRAME_HEADER,
		     sizeof(frame) - GSP_FRAME_HEADER, &len);
	if (err < 0)
		return local(c, err);
	return request(c, frame, len, -1, decode, ret);
}

/* ---- connect -------------------------------------------------------------- */

/* connect() on a blocking socket, resumed after EINTR: the attempt goes on
 * in the background, so wait for it (at most timeout_ms, 0: no limit) and
 * read its outcome. */
static int connect_unix(int fd, const struct sockaddr_un *sa,
			uint32_t timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int wait = timeout_ms && timeout_ms <= INT32_MAX ? (int)timeout_ms : -1;
	socklen_t optlen = sizeof(int);
	int soerr = 0, n;

	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
		return 0;
	if (errno != EINTR)
		return sys_error();
	while ((n = poll(&p, 1, wait)) < 0)
		if (errno != EINTR)
			return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &optlen) < 0)
		return -errno;
	return -soerr;
}

/* Sets the send and receive timeouts of fd (timeout_ms 0: none). */
static int set_timeouts(int fd, uint32_t timeout_ms)
{
	struct timeval tv = {.tv_sec = timeout_ms / 1000,
			     .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000};

	if (timeout_ms == 0)
		return 0;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	return 0;
}

/* Opens the socket and says HELLO; on failure c is left for the caller
 * to read its failure record and free. */
static int open_client(gsp_client *c, const char *socket_path,
		       const gsp_client_options *opts)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	gsp_api_hello hello = {.version = GSP_PROTO_VERSION};
	size_t path_len;
	int err;

	if (!socket_path)
		return local(c, -EINVAL);
	path_len = strlen(socket_path);
	if (path_len == 0)
		return local(c, -EINVAL);
	if (path_len >= sizeof(sa.sun_path))
		return failed(c, GSP_CLIENT_CONNECT, -ENAMETOOLONG);
	memcpy(sa.sun_path, socket_path, path_len + 1);
	hello.name = opts->client_name ? opts->client_name : "";
	hello.name_len = strlen(hello.name);
	if (hello.name_len > GSP_API_NAME_MAX)
		return local(c, -EINVAL);

	c->rx_cap = SMALL_FRAME;
	c->rx = malloc(c->rx_cap);
	if (!c->rx)
		return local(c, -ENOMEM);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return failed(c, GSP_CLIENT_CONNECT, -errno);
	err = set_timeouts(c->fd, opts->timeout_ms);
	if (err == 0)
		err = connect_unix(c->fd, &sa, opts->timeout_ms);
	if (err < 0)
		return failed(c, GSP_CLIENT_CONNECT, err);
	err = small_request(c, encode_hello, &hello, decode_hello_ok, &hello);
	if (err < 0)
		return err;
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

int gsp_client_register(gsp_client *c, const gsp_tensor *tensors, size_t n,
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
	bytes = (size_t)floats * 4;
	size = gsp_api_register_size(wire, (uint32_t)n);
	if (size < 0) {
		err = (int)size;
		goto out;
	}
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
	err = request(c, frame, len, fd, decode_ok, NULL);
	if (err < 0)
		goto out;
	c->params = map;
	c->params_bytes = bytes;
	map = NULL;
	*ret_params = c->params;

out:
	if (err < 0 && c->failure.stage == GSP_CLIENT_OK)
		local(c, err);          /* refused before the request went out */
	if (map)
		munmap(map, bytes);
	if (fd >= 0)
		close(fd);              /* the mapping keeps the memory */
	free(frame);
	free(wire);
	return err;
}

int gsp_client_detach(gsp_client *c)
{
	int err;

	if (!c)
		return -EINVAL;
	err = small_request(c, encode_detach, NULL, decode_ok, NULL);
	if (err < 0)
		return err;
	if (c->params)
		munmap(c->params, c->params_bytes);
	c->params = NULL;
	c->params_bytes = 0;
	return 0;
}

/* ---- step, average, status ------------------------------------------------ */

int gsp_client_step(gsp_client *c, uint32_t flags,
		    gsp_client_step_result *ret_stats)
{
	gsp_api_step msg = {.flags = flags};
	gsp_api_step_ok ok;
	int err;

	if (!c)
		return -EINVAL;
	err = small_request(c, encode_step, &msg, decode_step_ok, &ok);
	if (err < 0)
		return err;
	if (ret_stats)
		*ret_stats = (gsp_client_step_result){
			.step = ok.step,
			.edges_applied = ok.edges_applied,
			.edges_projected = ok.edges_projected,
			.edges_skipped = ok.edges_skipped,
			.max_staleness = ok.max_staleness,
			.bytes_sent = ok.bytes_sent,
			.bytes_received = ok.bytes_received,
			.consensus_estimate = ok.consensus_estimate,
		};
	return 0;
}

int gsp_client_average(gsp_client *c, double target, uint32_t time_limit_ms,
		       uint32_t max_rounds, gsp_client_average_result *ret)
{
	gsp_api_average msg = {.target = target,
			       .time_limit_ms = time_limit_ms,
			       .max_rounds = max_rounds};
	gsp_api_average_ok ok;
	int err;

	if (!c)
		return -EINVAL;
	err = small_request(c, encode_average, &msg, decode_average_ok, &ok);
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

int gsp_client_status(gsp_client *c, char **ret_json)
{
	gsp_api_status_ok ok;
	char *json;
	int err;

	if (!c)
		return -EINVAL;
	if (!ret_json) {
		begin(c);
		return local(c, -EINVAL);
	}
	err = small_request(c, encode_status, NULL, decode_status_ok, &ok);
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
	if (c->fd >= 0)
		close(c->fd);
	if (c->params)
		munmap(c->params, c->params_bytes);
	free(c->rx);
	free(c);
}
