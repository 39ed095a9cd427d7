/*
 * Unit tests for libgossip's client (client.h) against a scripted fake
 * daemon: a listening AF_UNIX socket in a temporary directory and a thread
 * that answers one connection with proto/'s encoders.  The server thread
 * only records what it saw; the test's own thread asserts afterwards.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "proto.h"

static unsigned long mapping_inode(const void *addr);

/* ---- fake daemon ---------------------------------------------------------- */

typedef struct server server;
typedef void (*script_fn)(server *s, int fd);

struct server {
	char dir[64];
	char path[96];
	int listen_fd;
	pthread_t thread;
	pthread_t client_thread;     /* the test's thread (for signals) */
	script_fn script;
	int variant;                 /* for looped tests */
	/* What the script saw. */
	bool ok;                     /* the script ran to its end */
	char hello_name[GSP_API_NAME_MAX + 1];
	uint16_t hello_version;
	int n_fds;                   /* fds received with REGISTER */
	uint64_t buffer_bytes;
	uint32_t n_tensors;
	char names[4][GSP_WIRE_NAME_MAX + 1];
	uint64_t dims[4][GSP_WIRE_MAX_DIMS];
	uint8_t ndims[4];
	int64_t file_size;
	int seals;
	float seen_param0;
	uint32_t step_flags;
	gsp_api_average average;
	int requests;                /* frames read after HELLO */
	/* Reconnect tests: one server serves up to max_conns connections. */
	int max_conns;
	int conns;                   /* accepted so far */
	int registers;               /* REGISTER frames read */
	ino_t ino[2];                /* the REGISTER fd's inode, per conn */
	uint64_t steps;              /* STEP_OKs sent */
	gsp_api_register_opts opts[2];   /* REGISTER options, per REGISTER */
};

/* Reads exactly len bytes; counts and collects SCM_RIGHTS fds into
 * fds[0..*n_fds) (closing any beyond room).  0, or -1 on EOF / error. */
static int srv_read(int fd, uint8_t *p, size_t len, int *fds, int *n_fds,
		    int room)
{
	size_t done = 0;

	while (done < len) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int) * 8)];
		} ctl;
		struct iovec iov = {.iov_base = p + done, .iov_len = len - done};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf)};
		ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
		     cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS)
				continue;
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k; i++) {
				int got;
				memcpy(&got, CMSG_DATA(cm) + i * sizeof(int),
				       sizeof(int));
				if (fds && *n_fds < room)
					fds[*n_fds] = got;
				else
					close(got);
				if (n_fds)
					(*n_fds)++;
			}
		}
		done += (size_t)n;
	}
	return 0;
}

/* One request frame into buf (body only); its length, or -1. */
static ssize_t srv_recv(int fd, uint8_t *buf, size_t cap, int *fds,
			int *n_fds, int room)
{
	uint8_t h[GSP_FRAME_HEADER];
	uint32_t len;

	if (srv_read(fd, h, sizeof(h), fds, n_fds, room) < 0)
		return -1;
	len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
	      (uint32_t)h[3] << 24;
	if (len == 0 || len > cap)
		return -1;
	if (srv_read(fd, buf, len, fds, n_fds, room) < 0)
		return -1;
	return (ssize_t)len;
}

static int srv_write(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Sends body[0..len) as one frame; byte_by_byte splits every write. */
static int srv_send(int fd, const uint8_t *body, size_t len, bool byte_by_byte)
{
	uint8_t h[GSP_FRAME_HEADER];

	if (gsp_frame_header_write(h, sizeof(h), (uint32_t)len) < 0)
		return -1;
	if (!byte_by_byte)
		return srv_write(fd, h, sizeof(h)) || srv_write(fd, body, len)
			       ? -1 : 0;
	for (size_t i = 0; i < sizeof(h) + len; i++)
		if (srv_write(fd, i < sizeof(h) ? h + i : body + i - sizeof(h), 1))
			return -1;
	return 0;
}

static int srv_send_ok(int fd)
{
	uint8_t b[8];
	size_t n;
	return gsp_api_ok_encode(b, sizeof(b), &n) || srv_send(fd, b, n, false);
}

static int srv_send_error(int fd, int32_t code, const char *text)
{
	gsp_api_error e = {.code = code, .text = text, .text_len = strlen(text)};
	uint8_t b[GSP_API_ERROR_TEXT_MAX + 16];
	size_t n;
	return gsp_api_error_encode(&e, b, sizeof(b), &n) ||
	       srv_send(fd, b, n, false);
}

/* HELLO in, HELLO_OK out; records the client's name and version. */
static int srv_hello(server *s, int fd)
{
	uint8_t b[512];
	gsp_api_hello h;
	ssize_t n = srv_recv(fd, b, sizeof(b), NULL, NULL, 0);
	size_t len;

	if (n < 0 || gsp_api_hello_decode(b, (size_t)n, &h) < 0)
		return -1;
	memcpy(s->hello_name, h.name, h.name_len);
	s->hello_name[h.name_len] = '\0';
	s->hello_version = h.version;
	h.version = GSP_PROTO_VERSION;
	h.name = "gossipd-fake 0.0";
	h.name_len = strlen(h.name);
	if (gsp_api_hello_ok_encode(&h, b, sizeof(b), &len) < 0)
		return -1;
	return srv_send(fd, b, len, false);
}

/* Reads one request frame, counting it; its type, or -1. */
static int srv_next(server *s, int fd, uint8_t *b, size_t cap, ssize_t *len)
{
	*len = srv_recv(fd, b, cap, NULL, NULL, 0);
	if (*len < 0)
		return -1;
	s->requests++;
	return b[0];
}

/* Waits until the client closes its end. */
static void srv_wait_eof(int fd)
{
	uint8_t b[64];
	while (recv(fd, b, sizeof(b), 0) > 0)
		;
}

static void *server_main(void *arg)
{
	server *s = arg;
	int fd;

	for (int i = 0; i < s->max_conns; i++) {
		do
			fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		while (fd < 0 && errno == EINTR);
		if (fd < 0)
			return NULL;      /* server_kill() shut the socket */
		s->conns++;
		s->script(s, fd);
		close(fd);
	}
	return NULL;
}

/* A fake daemon on dir/api.sock: a new temporary dir when dir is NULL,
 * else the dir (and so the socket path) of a daemon that server_kill()
 * stopped, as a restarted daemon. */
static void server_start_in(server *s, script_fn script, int variant,
			    const char *dir, int max_conns)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	memset(s, 0, sizeof(*s));
	s->script = script;
	s->variant = variant;
	s->max_conns = max_conns;
	s->client_thread = pthread_self();
	if (dir) {
		snprintf(s->dir, sizeof(s->dir), "%s", dir);
	} else {
		snprintf(s->dir, sizeof(s->dir), "/tmp/gsp-client-XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(s->dir));
	}
	snprintf(s->path, sizeof(s->path), "%s/api.sock", s->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->path);
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s->listen_fd, 0);
	ck_assert_int_eq(bind(s->listen_fd, (struct sockaddr *)&sa,
			      sizeof(sa)), 0);
	ck_assert_int_eq(listen(s->listen_fd, 4), 0);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, server_main, s), 0);
}

static void server_start(server *s, script_fn script, int variant)
{
	server_start_in(s, script, variant, NULL, 1);
}

/* The daemon dies: its socket stops accepting and its file goes (the
 * directory stays for a restart).  Waits for the script to end. */
static void server_kill(server *s)
{
	shutdown(s->listen_fd, SHUT_RDWR);   /* wakes accept() */
	ck_assert_int_eq(pthread_join(s->thread, NULL), 0);
	close(s->listen_fd);
	unlink(s->path);
}

/* Joins the server thread (the client must have closed first). */
static void server_stop(server *s)
{
	ck_assert_int_eq(pthread_join(s->thread, NULL), 0);
	close(s->listen_fd);
	unlink(s->path);
	rmdir(s->dir);
}

/* ---- HELLO and STATUS ----------------------------------------------------- */

static const char status_json[] = "{\"node\":\"fake\",\"edges\":[]}";

static void script_status(server *s, int fd)
{
	uint8_t b[512];
	ssize_t n;
	size_t len;
	gsp_api_status_ok st = {.json = status_json,
				.json_len = strlen(status_json)};

	if (srv_hello(s, fd) < 0)
		return;
	if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_STATUS ||
	    gsp_api_status_decode(b, (size_t)n) < 0)
		return;
	/* Byte by byte: the client must reassemble the frame. */
	if (gsp_api_status_ok_encode(&st, b, sizeof(b), &len) < 0 ||
	    srv_send(fd, b, len, true) < 0)
		return;
	s->ok = true;
	srv_wait_eof(fd);
}

START_TEST(test_hello_status)
{
	server s;
	gsp_client *c;
	char *json = NULL;

	server_start(&s, script_status, 0);
	ck_assert_int_eq(gsp_client_connect(s.path, "unit-test", &c), 0);
	ck_assert_str_eq(gsp_client_last_error(c), "");
	uint16_t version = 0;
	ck_assert_str_eq(gsp_client_daemon(c, &version), "gossipd-fake 0.0");
	ck_assert_uint_eq(version, GSP_PROTO_VERSION);
	ck_assert_int_eq(gsp_client_state_of(c), GSP_CLIENT_CONNECTED);
	ck_assert_int_eq(gsp_client_buffer_fd(c), -ENOENT);
	ck_assert_int_eq(gsp_client_state_of(NULL), GSP_CLIENT_UNUSABLE);
	ck_assert_str_eq(gsp_client_daemon(NULL, NULL), "");
	ck_assert_int_eq(gsp_client_status(c, &json), 0);
	ck_assert_str_eq(json, status_json);
	free(json);
	gsp_client_close(c);
	server_stop(&s);
	ck_assert(s.ok);
	ck_assert_str_eq(s.hello_name, "unit-test");
	ck_assert_uint_eq(s.hello_version, GSP_PROTO_VERSION);
}
END_TEST

/* A status document near the frame cap grows the receive buffer. */
static void script_big_status(server *s, int fd)
{
	size_t json_len = GSP_API_MAX_FRAME - 5;
	char *json = malloc(json_len);
	uint8_t *b = malloc(GSP_API_MAX_FRAME);
	uint8_t req[64];
	ssize_t n;
	size_t len;

	if (!json || !b || srv_hello(s, fd) < 0 ||
	    srv_next(s, fd, req, sizeof(req), &n) != GSP_API_STATUS)
		goto out;
	memset(json, 'x', json_len);
	json[0] = '{';
	json[json_len - 1] = '}';
	gsp_api_status_ok st = {.json = json, .json_len = json_len};
	if (gsp_api_status_ok_encode(&st, b, GSP_API_MAX_FRAME, &len) < 0 ||
	    srv_send(fd, b, len, false) < 0)
		goto out;
	s->ok = true;
	srv_wait_eof(fd);
out:
	free(json);
	free(b);
}

START_TEST(test_big_status)
{
	server s;
	gsp_client *c;
	char *json = NULL;

	server_start(&s, script_big_status, 0);
	ck_assert_int_eq(gsp_client_connect(s.path, NULL, &c), 0);
	ck_assert_int_eq(gsp_client_status(c, &json), 0);
	ck_assert_uint_eq(strlen(json), GSP_API_MAX_FRAME - 5);
	ck_assert_int_eq(json[0], '{');
	ck_assert_int_eq(json[GSP_API_MAX_FRAME - 6], '}');
	free(json);
	gsp_client_close(c);
	server_stop(&s);
	ck_assert(s.ok);
	ck_assert_str_eq(s.hello_name, "");
}
END_TEST

/* ---- REGISTER, shared memory, STEP, AVERAGE, DETACH ------------------------ */

static void script_register(server *s, int fd)
{
	uint8_t b[4096];
	int fds[4];
	ssize_t n;
	size_t len;
	gsp_api_register reg;
	gsp_api_tensor_iter it;
	gsp_wire_tensor t;
	gsp_api_step step;
	struct stat stt;
	float *map = MAP_FAILED;
	gsp_api_step_ok ok = {.step = 1, .edges_applied = 2,
			      .edges_projected = 3, .edges_skipped = 4,
			      .max_staleness = 5, .bytes_sent = 6000000000ull,
			      .bytes_received = 7, .consensus_estimate = 0.25};
	gsp_api_average_ok aok = {.rounds = 17, .estimate = 1e-5,
				  .reached = true};

	if (srv_hello(s, fd) < 0)
		return;
	n = srv_recv(fd, b, sizeof(b), fds, &s->n_fds, 4);
	if (n < 0 || s->n_fds != 1 ||
	    gsp_api_register_decode(b, (size_t)n, &reg) < 0)
		return;
	s->buffer_bytes = reg.buffer_bytes;
	s->n_tensors = reg.n_tensors;
	gsp_api_tensor_iter_init(&it, &reg);
	for (unsigned i = 0; i < 4 && gsp_api_tensor_next(&it, &t); i++) {
		memcpy(s->names[i], t.name, t.name_len);
		s->names[i][t.name_len] = '\0';
		s->ndims[i] = t.ndim;
		memcpy(s->dims[i], t.dims, sizeof(t.dims));
	}
	if (fstat(fds[0], &stt) == 0)
		s->file_size = stt.st_size;
	s->seals = fcntl(fds[0], F_GET_SEALS);
	map = mmap(NULL, reg.buffer_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fds[0], 0);
	close(fds[0]);
	if (map == MAP_FAILED || srv_send_ok(fd) < 0)
		goto out;

	/* STEP: the daemon reads what the client wrote and writes back. */
	if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_STEP ||
	    gsp_api_step_decode(b, (size_t)n, &step) < 0)
		goto out;
	s->step_flags = step.flags;
	s->seen_param0 = map[0];
	map[1] = 7.0f;
	if (gsp_api_step_ok_encode(&ok, b, sizeof(b), &len) < 0 ||
	    srv_send(fd, b, len, false) < 0)
		goto out;

	if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_AVERAGE ||
	    gsp_api_average_decode(b, (size_t)n, &s->average) < 0 ||
	    gsp_api_average_ok_encode(&aok, b, sizeof(b), &len) < 0 ||
	    srv_send(fd, b, len, false) < 0)
		goto out;

	/* DETACH writes too (a round taken back): the client's copy must
	 * hold it. */
	if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_DETACH ||
	    gsp_api_detach_decode(b, (size_t)n) < 0)
		goto out;
	map[2] = -3.5f;
	if (srv_send_ok(fd) < 0)
		goto out;
	s->ok = true;
	srv_wait_eof(fd);
out:
	if (map != MAP_FAILED)
		munmap(map, reg.buffer_bytes);
}

START_TEST(test_register_shared_memory)
{
	gsp_tensor t[2] = {
		{.name = "weight", .ndim = 2, .shape = {100, 100}},
		{.name = "bias", .ndim = 1, .shape = {100}},
	};
	gsp_client_step_result st;
	gsp_client_average_result avg;
	server s;
	gsp_client *c;
	float *p = NULL, *p2;

	server_start(&s, script_register, 0);
	ck_assert_int_eq(gsp_client_connect(s.path, "reg", &c), 0);
	ck_assert_int_eq(gsp_client_register(c, t, 2, &p), 0);
	ck_assert_ptr_nonnull(p);
	/* The memfd, for a caller's own mapping of the same buffer. */
	struct stat mst;
	ck_assert_int_eq(fstat(gsp_client_buffer_fd(c), &mst), 0);
	ck_assert_int_eq(mst.st_size, gsp_undo_bytes(100 * 100 + 100));
	ck_assert_uint_eq(mst.st_ino, mapping_inode(p));
	ck_assert_float_eq(p[0], 0.0f);                /* zero-filled */
	ck_assert_float_eq(p[100 * 100 + 99], 0.0f);   /* last float */
	/* One registration per client. */
	p2 = p;
	ck_assert_int_eq(gsp_client_register(c, t, 2, &p2), -EBUSY);
	ck_assert_ptr_eq(p2, p);

	p[0] = 42.0f;
	ck_assert_int_eq(gsp_client_step(c, GSP_STEP_SYNC, &st), 0);
	ck_assert_float_eq(p[1], 7.0f);         /* the daemon's write */
	ck_assert_uint_eq(st.step, 1);
	ck_assert_uint_eq(st.edges_applied, 2);
	ck_assert_uint_eq(st.edges_projected, 3);
	ck_assert_uint_eq(st.edges_skipped, 4);
	ck_assert_uint_eq(st.max_staleness, 5);
	ck_assert_uint_eq(st.bytes_sent, 6000000000ull);
	ck_assert_uint_eq(st.bytes_received, 7);
	ck_assert_double_eq(st.consensus_estimate, 0.25);

	ck_assert_int_eq(gsp_client_average(c, 1e-4, 3000, 50, &avg), 0);
	ck_assert_uint_eq(avg.rounds, 17);
	ck_assert_double_eq(avg.estimate, 1e-5);
	ck_assert(avg.reached);

	float *kept = calloc(100 * 100 + 100, sizeof(float));
	ck_assert_ptr_nonnull(kept);
	ck_assert_int_eq(gsp_client_detach_copy(c, kept), 0);
	ck_assert_float_eq(kept[0], 42.0f);
	ck_assert_float_eq(kept[1], 7.0f);
	ck_assert_float_eq(kept[2], -3.5f);      /* DETACH's own write */
	free(kept);
	gsp_client_close(c);
	server_stop(&s);

	ck_assert(s.ok);
	ck_assert_int_eq(s.n_fds, 1);
	/* The parameters, then the undo section (PROTOCOL.md 5.4). */
	ck_assert_uint_eq(s.buffer_bytes, gsp_undo_bytes(100 * 100 + 100));
	ck_assert_int_eq(s.file_size, gsp_undo_bytes(100 * 100 + 100));
	ck_assert_int_ne(s.seals, -1);
	ck_assert(s.seals & F_SEAL_SHRINK);
	ck_assert(s.seals & F_SEAL_GROW);
	ck_assert_uint_eq(s.n_tensors, 2);
	ck_assert_str_eq(s.names[0], "weight");
	ck_assert_uint_eq(s.ndims[0], 2);
	ck_assert_uint_eq(s.dims[0][0], 100);
	ck_assert_uint_eq(s.dims[0][1], 100);
	ck_assert_str_eq(s.names[1], "bias");
	ck_assert_uint_eq(s.ndims[1], 1);
	ck_assert_uint_eq(s.dims[1][0], 100);
	ck_assert_float_eq(s.seen_param0, 42.0f);
	ck_assert_uint_eq(s.step_flags, GSP_STEP_SYNC);
	ck_assert_double_eq(s.average.target, 1e-4);
	ck_assert_uint_eq(s.average.time_limit_ms, 3000);
	ck_assert_uint_eq(s.average.max_rounds, 50);
}
END_TEST

/* Local argument checks fail before anything is sent. */
static void script_count(server *s, int fd)
{
	uint8_t b[512];
	ssize_t n;

	if (srv_hello(s, fd) < 0)
		return;
	while (srv_next(s, fd, b, sizeof(b), &n) >= 0)
		;
	s->ok = true;
}

START_TEST(test_local_checks)
{
	gsp_tensor t[1] = {{.name = "w", .ndim = 2, .shape = {3, 4}}};
	gsp_tensor bad = {.ndim = GSP_MAX_DIMS + 1};
	gsp_tensor zero = {.name = "z", .ndim = 1, .shape = {0}};
	gsp_tensor longname = {.ndim = 1, .shape = {1}};
	gsp_client_average_result avg;
	char name[GSP_API_NAME_MAX + 2];
	server s;
	gsp_client *c;
	float *p = NULL;
	char *json = NULL;

	server_start(&s, script_count, 0);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	ck_assert_int_eq(gsp_client_connect(s.path, name, &c), -EINVAL);
	ck_assert_int_eq(gsp_client_connect(s.path, "chk", NULL), -EINVAL);
	ck_assert_int_eq(gsp_client_connect(NULL, "chk", &c), -EINVAL);
	ck_assert_int_eq(gsp_client_connect("", "chk", &c), -EINVAL);
	ck_assert_int_eq(gsp_client_connect(s.path, "chk", &c), 0);

	memset(longname.name, 'a', GSP_NAME_MAX);   /* no NUL in 64 bytes */
	ck_assert_int_eq(gsp_client_register(c, t, 0, &p), -EINVAL);
	ck_assert_int_eq(gsp_client_register(c, NULL, 1, &p), -EINVAL);
	ck_assert_int_eq(gsp_client_register(c, t, 1, NULL), -EINVAL);
	ck_assert_int_eq(gsp_client_register(c, &bad, 1, &p), -EINVAL);
	ck_assert_int_eq(gsp_client_register(c, &zero, 1, &p), -EINVAL);
	ck_assert_int_eq(gsp_client_register(c, &longname, 1, &p), -EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(gsp_client_step(c, 0x4, NULL), -EINVAL);
	ck_assert_int_eq(gsp_client_step(NULL, 0, NULL), -EINVAL);
	ck_assert_int_eq(gsp_client_average(c, 1.0, 0, 0, &avg), -EINVAL);
	ck_assert_int_eq(gsp_client_average(c, -1.0, 10, 0, &avg), -EINVAL);
	ck_assert_int_eq(gsp_client_average(c, NAN, 10, 0, &avg), -EINVAL);
	ck_assert_int_eq(gsp_client_status(c, NULL), -EINVAL);
	ck_assert_int_eq(gsp_client_status(NULL, &json), -EINVAL);
	ck_assert_int_eq(gsp_client_detach(NULL), -EINVAL);
	ck_assert_str_eq(gsp_client_last_error(NULL), "");
	gsp_client_close(NULL);
	gsp_client_close(c);
	server_stop(&s);
	ck_assert(s.ok);
	ck_assert_int_eq(s.requests, 0);
}
END_TEST

/* ---- REGISTER's options ---------------------------------------------------- */

/* Two REGISTERs: the first refused as a daemon beyond its limits would,
 * the second accepted; the options of each are kept. */
static void script_register_opts(server *s, int fd)
{
	uint8_t b[4096];
	int fds[4];
	gsp_api_register reg;

	if (srv_hello(s, fd) < 0)
		return;
	for (int i = 0; i < 2; i++) {
		int n_fds = 0;
		ssize_t n = srv_recv(fd, b, sizeof(b), fds, &n_fds, 4);
		for (int k = 0; k < n_fds && k < 4; k++)
			close(fds[k]);
		if (n < 0 || gsp_api_register_decode(b, (size_t)n, &reg) < 0)
			return;
		s->opts[i] = reg.opts;
		s->buffer_bytes = reg.buffer_bytes;
		if (i == 0 ? srv_send_error(fd, -ERANGE, "rank 9 is above this daemon's "
					    "MaxRank 8")
			   : srv_send_ok(fd))
			return;
	}
	s->ok = true;
	srv_wait_eof(fd);
}

START_TEST(test_register_options)
{
	gsp_tensor t = {.name = "w", .ndim = 2, .shape = {3, 4}};
	server s;
	gsp_client *c;
	float *p = NULL;

	server_start(&s, script_register_opts, 0);
	ck_assert_int_eq(gsp_client_connect(s.path, "opts", &c), 0);
	/* Local checks: nothing is sent. */
	static const gsp_client_register_options bad[] = {
		{.method = "powergosip"}, {.gamma = NAN}, {.gamma = INFINITY},
		{.gamma = -1.0f}, {.rank = 65536}, {.power_iterations = 65536},
		{.precision = (gsp_client_precision)9}, {.dtype = (gsp_client_dtype)9},
		{.group = 2},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_int_eq(gsp_client_register_opts(c, &t, 1, &bad[i], &p), -EINVAL);
	/* Refused by the daemon: its code and reason, nothing registered. */
	gsp_client_register_options o = {.method = "powergossip", .rank = 9,
					 .gamma = 0.5f, .power_iterations = 1,
					 .precision = GSP_CLIENT_PRECISION_FLOAT32,
					 .group = 1};
	ck_assert_int_eq(gsp_client_register_opts(c, &t, 1, &o, &p), -ERANGE);
	ck_assert_str_eq(gsp_client_last_error(c), "rank 9 is above this daemon's MaxRank 8");
	ck_assert_ptr_null(p);
	/* Only the rank and a bfloat16 buffer: the rest is the daemon's. */
	o = (gsp_client_register_options){.rank = 2, .dtype = GSP_CLIENT_DTYPE_BFLOAT16};
	ck_assert_int_eq(gsp_client_register_opts(c, &t, 1, &o, &p), 0);
	ck_assert_ptr_nonnull(p);
	((uint16_t *)p)[11] = 0x3f80;           /* 1.0: the buffer's last value */
	gsp_client_close(c);
	server_stop(&s);
	ck_assert(s.ok);
	ck_assert_uint_eq(s.opts[0].set, GSP_REG_KNOWN & ~GSP_REG_DTYPE);
	ck_assert_uint_eq(s.opts[0].method, 0);
	ck_assert_uint_eq(s.opts[0].rank, 9);
	ck_assert_float_eq(s.opts[0].gamma, 0.5f);
	ck_assert_uint_eq(s.opts[0].power_iterations, 1);
	ck_assert_uint_eq(s.opts[0].precision, GSP_WIRE_PRECISION_FLOAT32);
	ck_assert_uint_eq(s.opts[1].set, GSP_REG_RANK | GSP_REG_DTYPE);
	ck_assert_uint_eq(s.opts[1].rank, 2);
	ck_assert_uint_eq(s.opts[1].dtype, GSP_WIRE_DTYPE_BFLOAT16);
	/* 12 values of 2 bytes, and no undo section (the client's default
	 * gives a float32 buffer one). */
	ck_assert_uint_eq(s.buffer_bytes, 24);
}
END_TEST

/* ---- daemon ERROR replies -------------------------------------------------- */

static void script_errors(server *s, int fd)
{
	uint8_t b[4096];
	int fds[4];
	ssize_t n;

	if (srv_hello(s, fd) < 0)
		return;
	/* REGISTER refused: the fd must still have come with it. */
	n = srv_recv(fd, b, sizeof(b), fds, &s->n_fds, 4);
	if (n < 0 || b[0] != GSP_API_REGISTER)
		return;
	for (int i = 0; i < s->n_fds && i < 4; i++)
		close(fds[i]);
	if (srv_send_error(fd, -EBUSY, "model held by trainer 'other' (pid 7)"))
		return;
	if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_STEP ||
	    srv_send_error(fd, -ENOENT, "nothing registered"))
		return;
	if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_STEP ||
	    srv_send_error(fd, -4099, ""))               /* GSP_ESHAPE */
		return;
	if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_DETACH ||
	    srv_send_error(fd, -ENOENT, "not registered"))
		return;
	if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_STATUS)
		return;
	gsp_api_status_ok st = {.json = "{}", .json_len = 2};
	size_t len;
	if (gsp_api_status_ok_encode(&st, b, sizeof(b), &len) < 0 ||
	    srv_send(fd, b, len, false) < 0)
		return;
	s->ok = true;
	srv_wait_eof(fd);
}

START_TEST(test_error_replies)
{
	gsp_tensor t = {.name = "w", .ndim = 2, .shape = {8, 8}};
	gsp_client_step_result st = {.step = 99};
	server s;
	gsp_client *c;
	float *p = NULL;
	char *json = NULL;

	server_start(&s, script_errors, 0);
	ck_assert_int_eq(gsp_client_connect(s.path, "err", &c), 0);
	ck_assert_int_eq(gsp_client_register(c, &t, 1, &p), -EBUSY);
	ck_assert_ptr_null(p);
	ck_assert_str_eq(gsp_client_last_error(c),
			 "model held by trainer 'other' (pid 7)");
	ck_assert_int_eq(gsp_client_step(c, 0, &st), -ENOENT);
	ck_assert_str_eq(gsp_client_last_error(c), "nothing registered");
	ck_assert_uint_eq(st.step, 99);                 /* untouched */
	ck_assert_int_eq(gsp_client_step(c, 0, &st), -4099);
	ck_assert_str_eq(gsp_client_last_error(c), "");
	ck_assert_int_eq(gsp_client_detach(c), -ENOENT);
	ck_assert_str_eq(gsp_client_last_error(c), "not registered");
	/* A success clears the text; the connection is still usable. */
	ck_assert_int_eq(gsp_client_status(c, &json), 0);
	ck_assert_str_eq(json, "{}");
	ck_assert_str_eq(gsp_client_last_error(c), "");
	free(json);
	gsp_client_close(c);
	server_stop(&s);
	ck_assert(s.ok);
	ck_assert_int_eq(s.n_fds, 1);
}
END_TEST

/* ---- versions -------------------------------------------------------------- */

static void script_version(server *s, int fd)
{
	uint8_t b[512];
	ssize_t n = srv_recv(fd, b, sizeof(b), NULL, NULL, 0);
	size_t len;

	if (n < 0)
		return;
	if (s->variant == 0) {
		/* HELLO_OK of major 2: the fixed first three bytes, then
		 * anything. */
		static const uint8_t v2[] = {GSP_API_HELLO_OK, 0x00, 0x02, 0, 0};
		if (srv_send(fd, v2, sizeof(v2), false) < 0)
			return;
	} else {
		gsp_api_error e = {.code = -EPROTONOSUPPORT,
				   .text = "gossipd speaks protocol 2.x",
				   .text_len = 27};
		if (gsp_api_error_encode(&e, b, sizeof(b), &len) < 0 ||
		    srv_send(fd, b, len, false) < 0)
			return;
	}
	s->ok = true;
	srv_wait_eof(fd);
}

START_TEST(test_version_mismatch)
{
	server s;
	gsp_client *c = NULL;

	server_start(&s, script_version, _i);
	ck_assert_int_eq(gsp_client_connect(s.path, "v", &c), -EPROTONOSUPPORT);
	ck_assert_ptr_null(c);
	server_stop(&s);
	ck_assert(s.ok);
}
END_TEST

/* ---- malformed replies and lost connections ------------------------------- */

enum {
	BAD_LEN_ZERO,
	BAD_LEN_OVER_CAP,
	BAD_WRONG_TYPE,          /* OK in reply to STEP */
	BAD_TRUNCATED,           /* STEP_OK one byte short */
	BAD_TRAILING,            /* STEP_OK one byte long */
	BAD_UNKNOWN_TYPE,
	BAD_ERROR_CODE,          /* ERROR with a positive code */
	BAD_COUNT
};

static void script_malformed(server *s, int fd)
{
	uint8_t b[512];
	ssize_t n;
	size_t len;
	gsp_api_step_ok ok = {.step = 1, .consensus_estimate = NAN};

	if (srv_hello(s, fd) < 0 ||
	    srv_next(s, fd, b, sizeof(b), &n) != GSP_API_STEP)
		return;
	switch (s->variant) {
	case BAD_LEN_ZERO: {
		static const uint8_t z[4] = {0, 0, 0, 0};
		if (srv_write(fd, z, 4))
			return;
		break;
	}
	case BAD_LEN_OVER_CAP: {
		uint8_t h[4];
		if (gsp_frame_header_write(h, 4, GSP_API_MAX_FRAME + 1) < 0 ||
		    srv_write(fd, h, 4))
			return;
		break;
	}
	case BAD_WRONG_TYPE:
		if (srv_send_ok(fd))
			return;
		break;
	case BAD_TRUNCATED:
	case BAD_TRAILING:
		if (gsp_api_step_ok_encode(&ok, b, sizeof(b), &len) < 0)
			return;
		if (s->variant == BAD_TRAILING)
			b[len++] = 0;
		else
			len--;
		if (srv_send(fd, b, len, false))
			return;
		break;
	case BAD_UNKNOWN_TYPE: {
		static const uint8_t u[] = {0x99, 1, 2, 3};
		if (srv_send(fd, u, sizeof(u), false))
			return;
		break;
	}
	case BAD_ERROR_CODE: {
		static const uint8_t e[] = {GSP_API_ERROR, 5, 0, 0, 0, 0, 0};
		if (srv_send(fd, e, sizeof(e), false))
			return;
		break;
	}
	}
	s->ok = true;
	srv_wait_eof(fd);
}

START_TEST(test_malformed_reply)
{
	gsp_client_step_result st = {.step = 99};
	server s;
	gsp_client *c;
	char *json = NULL;

	server_start(&s, script_malformed, _i);
	ck_assert_int_eq(gsp_client_connect(s.path, "bad", &c), 0);
	ck_assert_int_eq(gsp_client_step(c, 0, &st), -EBADMSG);
	ck_assert_uint_eq(st.step, 99);
	ck_assert_str_eq(gsp_client_last_error(c), "");
	/* Unusable afterwards, without touching the socket. */
	ck_assert_int_eq(gsp_client_step(c, 0, &st), -ENOTCONN);
	ck_assert_int_eq(gsp_client_status(c, &json), -ENOTCONN);
	ck_assert_int_eq(gsp_client_detach(c), -ENOTCONN);
	gsp_client_close(c);
	server_stop(&s);
	ck_assert(s.ok);
	ck_assert_int_eq(s.requests, 1);
}
END_TEST

/* The daemon goes away: after HELLO (variant 0) or in the middle of a
 * reply (variant 1). */
static void script_hangup(server *s, int fd)
{
	uint8_t b[512];
	ssize_t n;

	if (srv_hello(s, fd) < 0)
		return;
	if (s->variant == 1) {
		static const uint8_t part[] = {49, 0, 0, 0, GSP_API_STEP_OK, 1};
		if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_STEP ||
		    srv_write(fd, part, sizeof(part)))
			return;
	}
	s->ok = true;
}

START_TEST(test_hangup)
{
	gsp_tensor t = {.name = "w", .ndim = 1, .shape = {10}};
	server s;
	gsp_client *c;
	float *p = NULL;
	int r;

	/* Without reconnecting, a lost connection is final. */
	gsp_client_options o = {.client_name = "hup",
				.flags = GSP_CLIENT_NO_RECONNECT};

	server_start(&s, script_hangup, _i);
	ck_assert_int_eq(gsp_client_connect_opts(s.path, &o, &c, NULL), 0);
	if (_i == 0) {
		server_stop(&s);     /* the server closed its end */
		/* The write may succeed or fail with EPIPE; either way the
		 * reply never comes. */
		r = gsp_client_register(c, &t, 1, &p);
		ck_assert_msg(r == -ECONNRESET || r == -EPIPE, "r = %d", r);
		ck_assert_ptr_null(p);
	} else {
		r = gsp_client_step(c, 0, NULL);
		ck_assert_int_eq(r, -ECONNRESET);
		server_stop(&s);
	}
	ck_assert(s.ok);
	ck_assert_int_eq(gsp_client_step(c, 0, NULL), -ENOTCONN);
	gsp_client_close(c);
}
END_TEST

/* ---- failure records and timeouts ---------------------------------------- */

/* What gsp_client_last_failure() says of each malformed reply. */
START_TEST(test_malformed_failure)
{
	static const struct {
		gsp_client_stage stage;
		uint32_t frame_len;
		uint8_t reply_type;
		bool unexpected;
	} want[BAD_COUNT] = {
		[BAD_LEN_ZERO] = {GSP_CLIENT_FRAME, 0, 0, false},
		[BAD_LEN_OVER_CAP] = {GSP_CLIENT_FRAME, GSP_API_MAX_FRAME + 1, 0, false},
		[BAD_WRONG_TYPE] = {GSP_CLIENT_REPLY, 0, GSP_API_OK, true},
		[BAD_TRUNCATED] = {GSP_CLIENT_REPLY, 0, GSP_API_STEP_OK, false},
		[BAD_TRAILING] = {GSP_CLIENT_REPLY, 0, GSP_API_STEP_OK, false},
		[BAD_UNKNOWN_TYPE] = {GSP_CLIENT_REPLY, 0, 0x99, true},
		[BAD_ERROR_CODE] = {GSP_CLIENT_REPLY, 0, GSP_API_ERROR, false},
	};
	const gsp_client_failure *f;
	server s;
	gsp_client *c;

	server_start(&s, script_malformed, _i);
	ck_assert_int_eq(gsp_client_connect(s.path, "bad", &c), 0);
	f = gsp_client_last_failure(c);
	ck_assert_int_eq(f->stage, GSP_CLIENT_OK);
	ck_assert_int_eq(gsp_client_step(c, 0, NULL), -EBADMSG);
	f = gsp_client_last_failure(c);
	ck_assert_int_eq(f->stage, want[_i].stage);
	ck_assert_int_eq(f->code, -EBADMSG);
	ck_assert_uint_eq(f->frame_len, want[_i].frame_len);
	ck_assert_uint_eq(f->reply_type, want[_i].reply_type);
	ck_assert_int_eq(f->unexpected_type, want[_i].unexpected);
	ck_assert_str_eq(f->text, "");
	ck_assert_int_eq(gsp_client_step(c, 0, NULL), -ENOTCONN);
	ck_assert_int_eq(gsp_client_last_failure(c)->stage, GSP_CLIENT_LOCAL);
	gsp_client_close(c);
	server_stop(&s);
	ck_assert(s.ok);
}
END_TEST

/* A refused connection says why through gsp_client_connect_opts(). */
START_TEST(test_connect_failure)
{
	gsp_client_options o = {.client_name = "v", .timeout_ms = 5000};
	gsp_client_failure f;
	server s;
	gsp_client *c = NULL;

	server_start(&s, script_version, _i);
	ck_assert_int_eq(gsp_client_connect_opts(s.path, &o, &c, &f),
			 -EPROTONOSUPPORT);
	ck_assert_ptr_null(c);
	server_stop(&s);
	ck_assert(s.ok);
	ck_assert_int_eq(f.code, -EPROTONOSUPPORT);
	if (_i == 0) {
		ck_assert_int_eq(f.stage, GSP_CLIENT_VERSION);
		ck_assert_uint_eq(f.version, 0x0200);
	} else {
		ck_assert_int_eq(f.stage, GSP_CLIENT_DAEMON);
		ck_assert_str_eq(f.text, "gossipd speaks protocol 2.x");
	}

	ck_assert_int_eq(gsp_client_connect_opts("/nonexistent/gossipd.sock",
						 NULL, &c, &f), -ENOENT);
	ck_assert_ptr_null(c);
	ck_assert_int_eq(f.stage, GSP_CLIENT_CONNECT);
	ck_assert_int_eq(f.code, -ENOENT);
	ck_assert_int_eq(gsp_client_connect_opts("/nonexistent/gossipd.sock",
						 &o, &c, NULL), -ENOENT);
	ck_assert_int_eq(gsp_client_connect_opts(s.path, &o, NULL, &f), -EINVAL);
	ck_assert_int_eq(f.stage, GSP_CLIENT_LOCAL);
}
END_TEST

/* A daemon that reads the request and never answers: HELLO (variant 0)
 * or STEP (variant 1). */
static void script_silent(server *s, int fd)
{
	uint8_t b[512];
	ssize_t n;

	if (s->variant == 0) {
		if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_HELLO)
			return;
	} else if (srv_hello(s, fd) < 0 ||
		   srv_next(s, fd, b, sizeof(b), &n) != GSP_API_STEP) {
		return;
	}
	s->ok = true;
	srv_wait_eof(fd);
}

/* timeout_ms bounds each wait: without it, these calls never return. */
START_TEST(test_timeout)
{
	gsp_client_options o = {.client_name = "slow", .timeout_ms = 200};
	gsp_client_failure f;
	struct timespec t0, t1;
	server s;
	gsp_client *c = NULL;
	double waited;

	server_start(&s, script_silent, _i);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (_i == 0) {
		ck_assert_int_eq(gsp_client_connect_opts(s.path, &o, &c, &f),
				 -ETIMEDOUT);
		ck_assert_ptr_null(c);
		ck_assert_int_eq(f.stage, GSP_CLIENT_IO);
	} else {
		if (_i == 2)            /* set later, from a longer one */
			o.timeout_ms = 60000;
		ck_assert_int_eq(gsp_client_connect_opts(s.path, &o, &c, &f), 0);
		if (_i == 2)
			ck_assert_int_eq(gsp_client_set_timeout(c, 200), 0);
		ck_assert_int_eq(gsp_client_step(c, 0, NULL), -ETIMEDOUT);
		ck_assert_int_eq(gsp_client_last_failure(c)->stage, GSP_CLIENT_IO);
		/* The reply may still come: the stream is given up. */
		ck_assert_int_eq(gsp_client_state_of(c), GSP_CLIENT_UNUSABLE);
		ck_assert_int_eq(gsp_client_step(c, 0, NULL), -ENOTCONN);
		gsp_client_close(c);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	server_stop(&s);
	ck_assert(s.ok);
	waited = (double)(t1.tv_sec - t0.tv_sec) +
		 (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	ck_assert_msg(waited >= 0.19 && waited < 5.0, "waited %.3f s", waited);
}
END_TEST

/* ---- interrupt -------------------------------------------------------------- */

/* Interrupts the client once the silent daemon has read its STEP. */
struct interrupter {
	server *s;
	gsp_client *c;
};

static void *interrupt_main(void *arg)
{
	struct interrupter *it = arg;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct pollfd none;
		(void)poll(&none, 0, 1);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (__atomic_load_n(&it->s->requests, __ATOMIC_SEQ_CST) < 1 &&
		 t.tv_sec - t0.tv_sec < 5);
	gsp_client_interrupt(it->c);
	return NULL;
}

/* Another thread wakes a call that would wait for ever: -ECANCELED, and
 * the client is unusable. */
START_TEST(test_interrupt)
{
	gsp_client_options o = {.client_name = "stuck",
				.timeout_ms = GSP_CLIENT_NO_TIMEOUT};
	struct interrupter it;
	pthread_t th;
	server s;
	gsp_client *c;

	server_start(&s, script_silent, 1);
	ck_assert_int_eq(gsp_client_connect_opts(s.path, &o, &c, NULL), 0);
	it.s = &s;
	it.c = c;
	ck_assert_int_eq(pthread_create(&th, NULL, interrupt_main, &it), 0);
	ck_assert_int_eq(gsp_client_step(c, 0, NULL), -ECANCELED);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(gsp_client_last_failure(c)->stage, GSP_CLIENT_IO);
	ck_assert_int_eq(gsp_client_state_of(c), GSP_CLIENT_UNUSABLE);
	ck_assert_int_eq(gsp_client_step(c, 0, NULL), -ENOTCONN);
	gsp_client_close(c);
	server_stop(&s);
	ck_assert(s.ok);
}
END_TEST

/* ---- EINTR ------------------------------------------------------------------ */

static volatile sig_atomic_t signals_seen;

static void on_signal(int sig)
{
	(void)sig;
	signals_seen++;
}

/* Interrupts the client with a signal while it waits for each reply. */
static void script_interrupt(server *s, int fd)
{
	uint8_t b[512];
	ssize_t n;
	size_t len;
	gsp_api_step_ok ok = {.step = 1};

	if (srv_hello(s, fd) < 0)
		return;
	for (int i = 0; i < 20; i++) {
		if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_STEP)
			return;
		pthread_kill(s->client_thread, SIGUSR1);
		ok.step = (uint64_t)i + 1;
		if (gsp_api_step_ok_encode(&ok, b, sizeof(b), &len) < 0 ||
		    srv_send(fd, b, len, true) < 0)
			return;
	}
	s->ok = true;
	srv_wait_eof(fd);
}

START_TEST(test_eintr)
{
	struct sigaction sa = {.sa_handler = on_signal};   /* no SA_RESTART */
	gsp_client_step_result st;
	server s;
	gsp_client *c;

	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	server_start(&s, script_interrupt, 0);
	ck_assert_int_eq(gsp_client_connect(s.path, "intr", &c), 0);
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(gsp_client_step(c, 0, &st), 0);
		ck_assert_uint_eq(st.step, (uint64_t)i + 1);
	}
	gsp_client_close(c);
	server_stop(&s);
	ck_assert(s.ok);
	ck_assert_int_eq(signals_seen, 20);
	signal(SIGUSR1, SIG_DFL);
}
END_TEST

/* ---- no daemon ------------------------------------------------------------ */

START_TEST(test_no_daemon)
{
	char dir[] = "/tmp/gsp-client-XXXXXX";
	char path[96], longpath[200];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	gsp_client *c = NULL;
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/missing.sock", dir);
	ck_assert_int_eq(gsp_client_connect(path, "x", &c), -ENOENT);
	ck_assert_ptr_null(c);

	/* A socket file nobody listens on (a daemon that died). */
	snprintf(path, sizeof(path), "%s/stale.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	ck_assert_int_eq(gsp_client_connect(path, "x", &c), -ECONNREFUSED);
	ck_assert_ptr_null(c);
	unlink(path);
	rmdir(dir);

	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	ck_assert_int_eq(gsp_client_connect(longpath, "x", &c), -ENAMETOOLONG);
	ck_assert_ptr_null(c);
}
END_TEST

/* ---- restarts: offline steps, reconnecting, permanent errors ------------- */

static double since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	       (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The inode of the file mapped at addr in this process (/proc/self/maps),
 * or 0. */
static unsigned long mapping_inode(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long start, end, ino = 0, found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &start, &end,
			   &ino) == 3 && start == (uintptr_t)addr)
			found = ino;
	fclose(f);
	return found;
}

/* HELLO, then REGISTER: records the fd's inode, writes mark at float 1 of
 * the buffer (the daemon works on it), replies OK.  0, or -1. */
static int srv_register(server *s, int fd, float mark)
{
	uint8_t b[4096];
	int fds[4], n_fds = 0;
	gsp_api_register reg;
	struct stat st;
	float *map;
	ssize_t n;

	if (srv_hello(s, fd) < 0)
		return -1;
	n = srv_recv(fd, b, sizeof(b), fds, &n_fds, 4);
	for (int i = 1; i < n_fds && i < 4; i++)
		close(fds[i]);
	if (n < 0 || n_fds < 1)
		return -1;
	s->registers++;
	if (n_fds != 1 || gsp_api_register_decode(b, (size_t)n, &reg) < 0 ||
	    fstat(fds[0], &st) < 0) {
		close(fds[0]);
		return -1;
	}
	s->ino[s->registers > 1] = st.st_ino;
	map = mmap(NULL, reg.buffer_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fds[0], 0);
	close(fds[0]);
	if (map == MAP_FAILED)
		return -1;
	map[1] = mark;
	munmap(map, reg.buffer_bytes);
	return srv_send_ok(fd);
}

/* Answers max STEPs (0: until the client closes) with STEP_OK 1, 2... */
static int srv_steps(server *s, int fd, uint64_t max)
{
	uint8_t b[512];
	ssize_t n;
	size_t len;

	for (uint64_t i = 0; max == 0 || i < max; i++) {
		gsp_api_step_ok ok = {.step = s->steps + 1, .edges_applied = 1,
				      .consensus_estimate = 0.5};
		if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_STEP ||
		    gsp_api_step_ok_encode(&ok, b, sizeof(b), &len) < 0 ||
		    srv_send(fd, b, len, false) < 0)
			return -1;
		s->steps++;
	}
	return 0;
}

/* A daemon that serves one STEP, then dies (closes the connection).
 * Later connections (the rate-limit test) are closed unanswered. */
static void script_dies(server *s, int fd)
{
	if (s->conns > 1)
		return;
	if (srv_register(s, fd, 7.0f) == 0 && srv_steps(s, fd, 1) == 0)
		s->ok = true;
}

/* The restarted daemon: REGISTER again, then STEPs until EOF. */
static void script_restarted(server *s, int fd)
{
	if (srv_register(s, fd, 8.0f) < 0)
		return;
	srv_steps(s, fd, 0);
	s->ok = s->steps > 0;
}

/* A restarted daemon the client must not retry: REGISTER refused with
 * -EBUSY (variant 0, another trainer got there first) or another major
 * version in HELLO_OK (variant 1). */
static void script_refuses(server *s, int fd)
{
	static const uint8_t v2[] = {GSP_API_HELLO_OK, 0x00, 0x02, 0, 0};
	uint8_t b[4096];
	int fds[4], n_fds = 0;
	ssize_t n;

	if (s->variant == 1) {
		if (srv_next(s, fd, b, sizeof(b), &n) != GSP_API_HELLO ||
		    srv_send(fd, v2, sizeof(v2), false) < 0)
			return;
	} else {
		if (srv_hello(s, fd) < 0)
			return;
		n = srv_recv(fd, b, sizeof(b), fds, &n_fds, 4);
		for (int i = 0; i < n_fds && i < 4; i++)
			close(fds[i]);
		if (n < 0 || b[0] != GSP_API_REGISTER)
			return;
		s->registers++;
		if (srv_send_error(fd, -EBUSY, "a model is already registered, "
				   "held by trainer 'other'"))
			return;
	}
	s->ok = true;
	srv_wait_eof(fd);
}

static const gsp_tensor restart_model[2] = {
	{.name = "w", .ndim = 2, .shape = {4, 5}},
	{.name = "b", .ndim = 1, .shape = {5}},
};

/* Connects to a fresh script_dies daemon, registers and steps once;
 * then the daemon is killed.  Returns the client. */
static gsp_client *run_until_killed(server *a, int max_conns, float **p)
{
	gsp_client_step_result st;
	gsp_client *c;

	server_start_in(a, script_dies, 0, NULL, max_conns);
	ck_assert_int_eq(gsp_client_connect(a->path, "restart", &c), 0);
	ck_assert_int_eq(gsp_client_register(c, restart_model, 2, p), 0);
	ck_assert_float_eq((*p)[1], 7.0f);      /* the daemon's write */
	(*p)[0] = 3.0f;                          /* the trainer's */
	ck_assert_int_eq(gsp_client_step(c, 0, &st), 0);
	ck_assert(!st.offline);
	ck_assert_uint_eq(st.step, 1);
	ck_assert_uint_eq(st.edges_applied, 1);
	if (max_conns == 1) {
		server_kill(a);
		ck_assert(a->ok);
	}
	return c;
}

/* The daemon dies: steps go on at once, offline; it comes back on the same
 * path: the client registers the same memfd again and gossips. */
START_TEST(test_restart_reconnects)
{
	gsp_client_step_result st;
	const gsp_client_failure *f;
	struct timespec t0;
	server a, b;
	gsp_client *c;
	float *p;
	char *json;
	uint64_t i;

	c = run_until_killed(&a, 1, &p);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 1000; i++) {
		ck_assert_int_eq(gsp_client_step(c, 0, &st), 0);
		ck_assert(st.offline);
	}
	ck_assert_msg(since(&t0) < 0.5, "1000 offline steps took %.3f s",
		      since(&t0));
	ck_assert_uint_eq(st.offline_steps, 1000);
	ck_assert_uint_eq(st.reconnects, 0);
	ck_assert_uint_eq(st.step, 1);           /* the last gossiped step */
	ck_assert_uint_eq(st.edges_applied, 0);
	ck_assert_int_eq(gsp_client_state_of(c), GSP_CLIENT_OFFLINE);
	f = gsp_client_last_failure(c);          /* why: no socket */
	ck_assert_int_eq(f->stage, GSP_CLIENT_CONNECT);
	ck_assert_int_eq(f->code, -ENOENT);
	/* Other requests fail with the reason; the client stays offline. */
	ck_assert_int_eq(gsp_client_status(c, &json), -ENOENT);
	ck_assert_int_eq(gsp_client_step(c, GSP_CLIENT_STEP_DRAIN, &st),
			 -ENOENT);
	ck_assert_int_eq(gsp_client_average(c, 0, 10, 0, NULL), -ENOENT);
	ck_assert_float_eq(p[0], 3.0f);

	server_start_in(&b, script_restarted, 0, a.dir, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 100000000 && since(&t0) < 5.0; i++) {
		ck_assert_int_eq(gsp_client_step(c, 0, &st), 0);
		if (!st.offline)
			break;
	}
	ck_assert_msg(!st.offline, "not back after %.3f s", since(&t0));
	ck_assert_msg(since(&t0) < 1.5, "back after %.3f s", since(&t0));
	ck_assert_uint_eq(st.reconnects, 1);
	ck_assert_int_eq(gsp_client_state_of(c), GSP_CLIENT_CONNECTED);
	ck_assert_uint_eq(st.step, 1);           /* the new daemon's first */
	ck_assert_float_eq(p[1], 8.0f);          /* it works on our buffer */
	ck_assert_float_eq(p[0], 3.0f);          /* which kept its values */
	ck_assert_int_eq(gsp_client_step(c, 0, &st), 0);
	ck_assert(!st.offline);
	ck_assert_uint_eq(st.step, 2);
	ck_assert_uint_eq(mapping_inode(p), a.ino[0]);
	gsp_client_close(c);
	server_stop(&b);
	ck_assert(b.ok);
	ck_assert_int_eq(b.registers, 1);
	ck_assert_uint_eq(b.ino[0], a.ino[0]);   /* the same memfd */
}
END_TEST

/* A daemon that accepts and hangs up at once: the client tries again at
 * most once per backoff period (100 ms, doubling to 500 ms), and an
 * offline step returns at once (no step waits for the daemon; thousands
 * fit in a second, also under valgrind on a loaded machine). */
START_TEST(test_reconnect_rate_limited)
{
	gsp_client_step_result st;
	const gsp_client_failure *f;
	struct timespec t0;
	uint64_t steps = 0;
	server a;
	gsp_client *c;
	float *p;
	int attempts;

	double slowest = 0;
	c = run_until_killed(&a, 1000, &p);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (steps < 100000000 && since(&t0) < 1.0) {
		struct timespec s0;
		clock_gettime(CLOCK_MONOTONIC, &s0);
		ck_assert_int_eq(gsp_client_step(c, 0, &st), 0);
		if (since(&s0) > slowest)
			slowest = since(&s0);
		ck_assert(st.offline);
		steps++;
	}
	f = gsp_client_last_failure(c);
	ck_assert_int_eq(f->stage, GSP_CLIENT_IO);
	ck_assert_msg(f->code == -ECONNRESET || f->code == -EPIPE, "%d",
		      f->code);
	gsp_client_close(c);
	server_kill(&a);
	rmdir(a.dir);
	attempts = a.conns - 1;
	/* Attempts at about 0, 0.1, 0.3, 0.7 s (the first step lost the
	 * connection). */
	ck_assert_msg(attempts >= 3 && attempts <= 6, "%d attempts", attempts);
	ck_assert_msg(steps >= 1000, "%llu offline steps in 1 s",
		      (unsigned long long)steps);
	ck_assert_msg(slowest < 0.25, "an offline step took %.3f s", slowest);
	ck_assert_uint_eq(st.offline_steps, steps);
}
END_TEST

/* What waiting cannot cure is returned, not retried: the restarted
 * daemon refuses the REGISTER (variant 0) or speaks another major
 * version (variant 1). */
START_TEST(test_permanent_not_retried)
{
	gsp_client_step_result st = {.offline = true};
	struct timespec t0;
	server a, b;
	gsp_client *c;
	float *p;
	int r = 0;

	c = run_until_killed(&a, 1, &p);
	server_start_in(&b, script_refuses, _i, a.dir, 100);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 100000000 && since(&t0) < 5.0; i++) {
		r = gsp_client_step(c, 0, &st);
		if (r < 0)
			break;
		ck_assert(st.offline);
	}
	if (_i == 0) {
		ck_assert_int_eq(r, -EBUSY);
		ck_assert_str_eq(gsp_client_last_error(c),
				 "a model is already registered, held by "
				 "trainer 'other'");
		ck_assert_int_eq(gsp_client_last_failure(c)->stage,
				 GSP_CLIENT_DAEMON);
	} else {
		ck_assert_int_eq(r, -EPROTONOSUPPORT);
		ck_assert_int_eq(gsp_client_last_failure(c)->stage,
				 GSP_CLIENT_VERSION);
	}
	ck_assert_int_eq(gsp_client_step(c, 0, &st), -ENOTCONN);
	ck_assert_int_eq(gsp_client_step(c, 0, &st), -ENOTCONN);
	ck_assert_float_eq(p[0], 3.0f);          /* the model is still there */
	gsp_client_close(c);
	server_kill(&b);
	rmdir(a.dir);
	ck_assert(b.ok);
	ck_assert_int_eq(b.conns, 1);            /* one attempt reached it */
	ck_assert_int_eq(b.registers, _i == 0 ? 1 : 0);
}
END_TEST

/* DETACH after the daemon died: the daemon holds no model of ours, so the
 * buffer is released locally and the call succeeds. */
START_TEST(test_detach_when_away)
{
	gsp_client_step_result st;
	server a;
	gsp_client *c;
	float *p, *q = NULL;

	c = run_until_killed(&a, 1, &p);
	ck_assert_int_eq(gsp_client_detach(c), 0);   /* lost during it */
	ck_assert_int_eq(gsp_client_last_failure(c)->stage, GSP_CLIENT_OK);
	ck_assert_int_eq(gsp_client_step(c, 0, &st), 0);
	ck_assert(st.offline);
	/* No model now: REGISTER needs the daemon, which is still away. */
	ck_assert_int_eq(gsp_client_register(c, restart_model, 2, &q), -ENOENT);
	ck_assert_ptr_null(q);
	gsp_client_close(c);
	rmdir(a.dir);
}
END_TEST

/* A daemon whose STEP outlasts the client's timeout: it reads the
 * client's EOF, then goes on 600 ms (its step, then the implicit DETACH)
 * before it closes its end, as gossipd keeps the connection until it let
 * go of the buffer. */
static void script_lets_go_late(server *s, int fd)
{
	uint8_t b[512];
	ssize_t n;

	if (srv_register(s, fd, 7.0f) < 0 ||
	    srv_next(s, fd, b, sizeof(b), &n) != GSP_API_STEP)
		return;
	srv_wait_eof(fd);
	usleep(600 * 1000);
	s->ok = true;
}

/* A timeout with a model registered returns only once the daemon has
 * closed its end: from then on the trainer alone writes the buffer
 * (PROTOCOL.md 5.3).  Before, it returned at the timeout (0.2 s). */
START_TEST(test_timeout_waits_for_release)
{
	gsp_tensor t = {.name = "w", .ndim = 1, .shape = {64}};
	gsp_client_options o = {.client_name = "late", .timeout_ms = 200,
				.flags = GSP_CLIENT_NO_UNDO};
	gsp_client_failure f;
	struct timespec t0;
	server s;
	gsp_client *c;
	float *p;

	server_start(&s, script_lets_go_late, 0);
	ck_assert_int_eq(gsp_client_connect_opts(s.path, &o, &c, &f), 0);
	ck_assert_int_eq(gsp_client_register(c, &t, 1, &p), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(gsp_client_step(c, 0, NULL), -ETIMEDOUT);
	double waited = since(&t0);
	ck_assert_msg(waited >= 0.75 && waited < 5.0, "waited %.3f s", waited);
	gsp_client_close(c);
	server_stop(&s);
	ck_assert(s.ok);
}
END_TEST

/* ---- default and AVERAGE timeouts ---------------------------------------- */

/* A daemon that reads AVERAGE and never answers. */
static void script_silent_average(server *s, int fd)
{
	uint8_t b[512];
	ssize_t n;

	if (srv_hello(s, fd) < 0 ||
	    srv_next(s, fd, b, sizeof(b), &n) != GSP_API_AVERAGE)
		return;
	s->ok = true;
	srv_wait_eof(fd);
}

/* AVERAGE waits its time limit longer than the timeout, not less. */
START_TEST(test_average_timeout)
{
	gsp_client_options o = {.client_name = "avg", .timeout_ms = 200};
	struct timespec t0;
	server s;
	gsp_client *c;
	double waited;

	server_start(&s, script_silent_average, 0);
	ck_assert_int_eq(gsp_client_connect_opts(s.path, &o, &c, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(gsp_client_average(c, 0, 300, 0, NULL), -ETIMEDOUT);
	waited = since(&t0);
	ck_assert_int_eq(gsp_client_status(c, NULL), -EINVAL);
	ck_assert_int_eq(gsp_client_step(c, 0, NULL), -ENOTCONN);
	gsp_client_close(c);
	server_stop(&s);
	ck_assert(s.ok);
	ck_assert_msg(waited >= 0.49 && waited < 3.0, "waited %.3f s", waited);
}
END_TEST

/* With the default options a STEP the daemon never answers fails after
 * GSP_CLIENT_TIMEOUT_MS (60 s); its own test (argument default-timeout). */
START_TEST(test_default_timeout)
{
	struct timespec t0;
	server s;
	gsp_client *c;
	double waited;

	server_start(&s, script_silent, 1);
	ck_assert_int_eq(gsp_client_connect(s.path, "default", &c), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(gsp_client_step(c, 0, NULL), -ETIMEDOUT);
	waited = since(&t0);
	ck_assert_int_eq(gsp_client_last_failure(c)->stage, GSP_CLIENT_IO);
	ck_assert_int_eq(gsp_client_step(c, 0, NULL), -ENOTCONN);
	gsp_client_close(c);
	server_stop(&s);
	ck_assert(s.ok);
	ck_assert_msg(waited >= GSP_CLIENT_TIMEOUT_MS / 1000.0 - 0.01 &&
		      waited < GSP_CLIENT_TIMEOUT_MS / 1000.0 + 5.0,
		      "waited %.3f s", waited);
}
END_TEST

/* ---- suite ---------------------------------------------------------------- */

/* The "api" case, or with slow the "default-timeout" case alone (60 s: meson
 * runs it as its own test, beside the others). */
static Suite *client_suite(bool slow)
{
	Suite *s = suite_create("client");
	TCase *tc;

	if (slow) {
		tc = tcase_create("default-timeout");
		tcase_set_timeout(tc, 90);
		tcase_add_test(tc, test_default_timeout);
		suite_add_tcase(s, tc);
		return s;
	}
	tc = tcase_create("api");

	tcase_add_test(tc, test_hello_status);
	tcase_add_test(tc, test_big_status);
	tcase_add_test(tc, test_register_shared_memory);
	tcase_add_test(tc, test_local_checks);
	tcase_add_test(tc, test_register_options);
	tcase_add_test(tc, test_error_replies);
	tcase_add_loop_test(tc, test_version_mismatch, 0, 2);
	tcase_add_loop_test(tc, test_malformed_reply, 0, BAD_COUNT);
	tcase_add_loop_test(tc, test_hangup, 0, 2);
	tcase_add_loop_test(tc, test_malformed_failure, 0, BAD_COUNT);
	tcase_add_loop_test(tc, test_connect_failure, 0, 2);
	tcase_add_loop_test(tc, test_timeout, 0, 3);
	tcase_add_test(tc, test_eintr);
	tcase_add_test(tc, test_interrupt);
	tcase_add_test(tc, test_no_daemon);
	tcase_add_test(tc, test_restart_reconnects);
	tcase_add_test(tc, test_reconnect_rate_limited);
	tcase_add_loop_test(tc, test_permanent_not_retried, 0, 2);
	tcase_add_test(tc, test_detach_when_away);
	tcase_add_test(tc, test_average_timeout);
	tcase_add_test(tc, test_timeout_waits_for_release);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	bool slow = argc > 1 && strcmp(argv[1], "default-timeout") == 0;
	SRunner *sr = srunner_create(client_suite(slow));
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
