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
#include <sys/un.h>
#include <unistd.h>

#include "client.h"

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
	char error[GSP_API_ERROR_TEXT_MAX + 1];
};

/* ---- socket I/O ----------------------------------------------------------- */

/* Marks the stream unusable and returns err. */
static int broken(gsp_client *c, int err)
{
	c->broken = true;
	return err;
}

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
			return broken(c, -errno);
		done = (size_t)n;
		break;
	}
	while (done < len) {
		ssize_t n = send(c->fd, frame + done, len - done, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return broken(c, -errno);
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
			return broken(c, -errno);
		if (n == 0)
			return broken(c, -ECONNRESET);
		done += (size_t)n;
	}
	return 0;
}

/* Reads one reply frame into c->rx.  An ERROR reply returns its code with
 * the text kept in c->error; any other reply is returned in *ret_body for
 * the caller's decoder (0). */
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
	err = gsp_frame_parse(c->rx, GSP_FRAME_HEADER, GSP_API_MAX_FRAME,
			      &body, &body_len, &used);
	if (err != -EAGAIN)
		return broken(c, -EBADMSG);
	len = (uint32_t)c->rx[0] | (uint32_t)c->rx[1] << 8 |
	      (uint32_t)c->rx[2] << 16 | (uint32_t)c->rx[3] << 24;
	if ((size_t)len + GSP_FRAME_HEADER > c->rx_cap) {
		uint8_t *rx = realloc(c->rx, (size_t)len + GSP_FRAME_HEADER);
		if (!rx)
			return broken(c, -ENOMEM);   /* the body is unread */
		c->rx = rx;
		c->rx_cap = (size_t)len + GSP_FRAME_HEADER;
	}
	err = recv_exact(c, c->rx + GSP_FRAME_HEADER, len);
	if (err < 0)
		return err;
	err = gsp_frame_parse(c->rx, (size_t)len + GSP_FRAME_HEADER,
			      GSP_API_MAX_FRAME, &body, &body_len, &used);
	if (err < 0)
		return broken(c, -EBADMSG);

	if (body[0] == GSP_API_ERROR) {
		if (gsp_api_error_decode(body, body_len, &e) < 0)
			return broken(c, -EBADMSG);
		memcpy(c->error, e.text, e.text_len);
		c->error[e.text_len] = '\0';
		return e.code;
	}
	*ret_body = body;
	*ret_len = body_len;
	return 0;
}

/* Sends the request frame[4..4+body_len) (the header is written here) and
 * reads its reply as recv_reply(). */
static int call(gsp_client *c, uint8_t *frame, size_t body_len, int pass_fd,
		const uint8_t **ret_body, size_t *ret_len)
{
	int err;

	if (c->broken)
		return -ENOTCONN;
	err = gsp_frame_header_write(frame, GSP_FRAME_HEADER,
				     (uint32_t)body_len);
	if (err < 0)
		return err;
	err = send_frame(c, frame, GSP_FRAME_HEADER + body_len, pass_fd);
	if (err < 0)
		return err;
	return recv_reply(c, ret_body, ret_len);
}

/* A request whose only success reply is OK. */
static int call_ok(gsp_client *c, uint8_t *frame, size_t body_len,
		   int pass_fd)
{
	const uint8_t *body;
	size_t len;
	int err;

	err = call(c, frame, body_len, pass_fd, &body, &len);
	if (err < 0)
		return err;
	if (gsp_api_ok_decode(body, len) < 0)
		return broken(c, -EBADMSG);
	return 0;
}

/* ---- connect -------------------------------------------------------------- */

/* connect() on a blocking socket, resumed after EINTR: the attempt goes on
 * in the background, so wait for it and read its outcome. */
static int connect_unix(int fd, const struct sockaddr_un *sa)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	socklen_t optlen = sizeof(int);
	int soerr = 0;

	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
		return 0;
	if (errno != EINTR)
		return -errno;
	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &optlen) < 0)
		return -errno;
	return -soerr;
}

int gsp_client_connect(const char *socket_path, const char *client_name,
		       gsp_client **ret)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	gsp_api_hello hello = {.version = GSP_PROTO_VERSION};
	uint8_t frame[SMALL_FRAME];
	const uint8_t *body;
	size_t path_len, len;
	gsp_client *c;
	int err;

	if (!socket_path || !ret)
		return -EINVAL;
	path_len = strlen(socket_path);
	if (path_len == 0)
		return -EINVAL;
	if (path_len >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, socket_path, path_len + 1);
	hello.name = client_name ? client_name : "";
	hello.name_len = strlen(hello.name);
	if (hello.name_len > GSP_API_NAME_MAX)
		return -EINVAL;
	err = gsp_api_hello_encode(&hello, frame + GSP_FRAME_HEADER,
				   sizeof(frame) - GSP_FRAME_HEADER, &len);
	if (err < 0)
		return err;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->rx_cap = SMALL_FRAME;
	c->rx = malloc(c->rx_cap);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!c->rx) {
		err = -ENOMEM;
		goto fail;
	}
	if (c->fd < 0) {
		err = -errno;
		goto fail;
	}
	err = connect_unix(c->fd, &sa);
	if (err < 0)
		goto fail;

	err = call(c, frame, len, -1, &body, &len);
	if (err < 0)
		goto fail;
	err = gsp_api_hello_ok_decode(body, len, &hello);
	if (err < 0) {
		/* Another major is a clean refusal; anything else is garbage. */
		if (err != -EPROTONOSUPPORT)
			err = -EBADMSG;
		goto fail;
	}
	c->error[0] = '\0';
	*ret = c;
	return 0;

fail:
	gsp_client_close(c);
	return err;
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

	if (!c || !tensors || !ret_params || n == 0 || n > GSP_API_MAX_TENSORS)
		return -EINVAL;
	c->error[0] = '\0';
	if (c->broken)
		return -ENOTCONN;
	if (c->params)
		return -EBUSY;

	wire = calloc(n, sizeof(*wire));
	if (!wire)
		return -ENOMEM;
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
	err = call_ok(c, frame, len, fd);
	if (err < 0)
		goto out;
	c->params = map;
	c->params_bytes = bytes;
	map = NULL;
	*ret_params = c->params;

out:
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
	uint8_t frame[SMALL_FRAME];
	size_t len;
	int err;

	if (!c)
		return -EINVAL;
	c->error[0] = '\0';
	err = gsp_api_detach_encode(frame + GSP_FRAME_HEADER,
				    sizeof(frame) - GSP_FRAME_HEADER, &len);
	if (err < 0)
		return err;
	err = call_ok(c, frame, len, -1);
	if (err < 0)
		return err;
	if (c->params)
		munmap(c->params, c->params_bytes);
	c->params = NULL;
	c->params_bytes = 0;
	return 0;
}

/* ---- step, average, status ------------------------------------------------ */

int gsp_client_step(gsp_client *c, uint32_t flags, gsp_api_step_ok *ret_stats)
{
	gsp_api_step msg = {.flags = flags};
	gsp_api_step_ok ok;
	uint8_t frame[SMALL_FRAME];
	const uint8_t *body;
	size_t len;
	int err;

	if (!c)
		return -EINVAL;
	c->error[0] = '\0';
	err = gsp_api_step_encode(&msg, frame + GSP_FRAME_HEADER,
				  sizeof(frame) - GSP_FRAME_HEADER, &len);
	if (err < 0)
		return err;
	err = call(c, frame, len, -1, &body, &len);
	if (err < 0)
		return err;
	if (gsp_api_step_ok_decode(body, len, &ok) < 0)
		return broken(c, -EBADMSG);
	if (ret_stats)
		*ret_stats = ok;
	return 0;
}

int gsp_client_average(gsp_client *c, double target, uint32_t time_limit_ms,
		       uint32_t max_rounds, gsp_api_average_ok *ret)
{
	gsp_api_average msg = {.target = target,
			       .time_limit_ms = time_limit_ms,
			       .max_rounds = max_rounds};
	gsp_api_average_ok ok;
	uint8_t frame[SMALL_FRAME];
	const uint8_t *body;
	size_t len;
	int err;

	if (!c)
		return -EINVAL;
	c->error[0] = '\0';
	err = gsp_api_average_encode(&msg, frame + GSP_FRAME_HEADER,
				     sizeof(frame) - GSP_FRAME_HEADER, &len);
	if (err < 0)
		return err;
	err = call(c, frame, len, -1, &body, &len);
	if (err < 0)
		return err;
	if (gsp_api_average_ok_decode(body, len, &ok) < 0)
		return broken(c, -EBADMSG);
	if (ret)
		*ret = ok;
	return 0;
}

int gsp_client_status(gsp_client *c, char **ret_json)
{
	gsp_api_status_ok ok;
	uint8_t frame[SMALL_FRAME];
	const uint8_t *body;
	size_t len;
	char *json;
	int err;

	if (!c || !ret_json)
		return -EINVAL;
	c->error[0] = '\0';
	err = gsp_api_status_encode(frame + GSP_FRAME_HEADER,
				    sizeof(frame) - GSP_FRAME_HEADER, &len);
	if (err < 0)
		return err;
	err = call(c, frame, len, -1, &body, &len);
	if (err < 0)
		return err;
	if (gsp_api_status_ok_decode(body, len, &ok) < 0)
		return broken(c, -EBADMSG);
	json = malloc(ok.json_len + 1);
	if (!json)
		return -ENOMEM;
	memcpy(json, ok.json, ok.json_len);
	json[ok.json_len] = '\0';
	*ret_json = json;
	return 0;
}

/* ---- accessors and close -------------------------------------------------- */

const char *gsp_client_last_error(const gsp_client *c)
{
	return c ? c->error : "";
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
