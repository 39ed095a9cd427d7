/* The fixture of the link layer's unit tests (daemon/link.h): two sides
 * in one loop, A listening on loopback and B dialing it, with fake ops
 * tables that record what each link reports up, raw sockets for bytes
 * the test chooses, and run_until to wait on a state.  Header-only, for
 * one test file each (its globals are the file's). */
#ifndef GSP_TEST_LINKPAIR_H
#define GSP_TEST_LINKPAIR_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link.h"
#include "proto.h"

typedef struct side {
	link_env env;
	counters counters;
	gsp_keypair key;
	const uint8_t *expect_key;   /* responder: the key it accepts */
	link_stats stats;
	plink *link;
	int ups, downs, frames, goodbyes;
	uint16_t bye_reason;
	char why[256];
	size_t frame_bytes;          /* sum of frame lengths received */
	uint32_t last_seq;           /* frames carry an increasing u32 */
	bool in_order;
	bool check_content;          /* bytes after the u32: pattern_byte() */
	int bad_content;             /* frames whose bytes were not */
	uint8_t cert[GSP_CERT_MAX];  /* the certificate the last HS_INIT
				      * (responder) or HS_CERT (initiator)
				      * carried */
	size_t cert_len;
	int learns;                  /* HS_CERTs seen (keyless dials) */
	const uint8_t *learn_key;    /* initiator: the key learn gives;
				      * NULL: it refuses */
} side;

/* Byte i of a frame with sequence number seq, after its first 5 bytes. */
static inline uint8_t pattern_byte(uint32_t seq, size_t i)
{
	return (uint8_t)(seq * 101u + i * 31u + (i >> 12));
}

static uv_loop_t *loop;
static side A, B;               /* A listens, B dials */
static uv_tcp_t listener;
static struct sockaddr_in listen_addr;

static inline side *side_of(plink *l)
{
	return link_env_ctx(l);
}

static inline int fake_authorize(plink *l, const uint8_t key[GSP_KEY_BYTES],
			  const uint8_t ts[GSP_HS_TIMESTAMP], const uint8_t *cert,
			  size_t cert_len)
{
	side *s = side_of(l);
	memcpy(s->cert, cert, cert_len);
	s->cert_len = cert_len;
	if (!s->expect_key || memcmp(key, s->expect_key, GSP_KEY_BYTES) != 0)
		return -EACCES;
	link_bind(l, s, &s->stats, "test");
	return 0;
}

static inline int fake_learn(plink *l, const uint8_t *cert, size_t len,
			     uint8_t ret_key[GSP_KEY_BYTES])
{
	side *s = side_of(l);
	s->learns++;
	memcpy(s->cert, cert, len);
	s->cert_len = len;
	if (!s->learn_key)
		return -EACCES;
	memcpy(ret_key, s->learn_key, GSP_KEY_BYTES);
	return 0;
}

static inline void fake_up(plink *l)
{
	side *s = side_of(l);
	s->ups++;
	s->link = l;
}

static inline int fake_frame(plink *l, const uint8_t *pt, size_t len)
{
	side *s = side_of(l);
	uint32_t seq;
	s->frames++;
	s->frame_bytes += len;
	if (len >= 5) {
		memcpy(&seq, pt + 1, 4);
		if (seq != s->last_seq + 1)
			s->in_order = false;
		s->last_seq = seq;
		for (size_t i = 5; s->check_content && i < len; i++)
			if (pt[i] != pattern_byte(seq, i)) {
				s->bad_content++;
				break;
			}
	}
	return 0;
}

static inline void fake_goodbye(plink *l, uint16_t reason, const char *text, size_t len)
{
	side *s = side_of(l);
	s->goodbyes++;
	s->bye_reason = reason;
}

static inline void fake_down(plink *l, const char *why)
{
	side *s = side_of(l);
	s->downs++;
	snprintf(s->why, sizeof(s->why), "%s", why);
	if (s->link == l)
		s->link = NULL;
}

static const link_ops fake_ops = {
	.authorize = fake_authorize, .learn = fake_learn, .up = fake_up,
	.frame = fake_frame,
	.goodbye = fake_goodbye, .down = fake_down,
};

static inline void side_init(side *s)
{
	memset(s, 0, sizeof(*s));
	gsp_keypair_generate(&s->key);
	s->in_order = true;
	s->env = (link_env){.loop = loop, .key = &s->key, .counters = &s->counters,
			    .ops = &fake_ops, .ctx = s};
}

static inline void on_incoming(uv_stream_t *server, int status)
{
	plink *l;
	ck_assert_int_eq(status, 0);
	int err = link_accept(&A.env, server, &l);
	/* -ECONNREFUSED: over A's rate of connections (if it has one). */
	ck_assert(err == 0 || (err == -ECONNREFUSED && A.env.hs_limit));
}

static inline void setup(void)
{
	loop = calloc(1, sizeof(*loop));
	ck_assert_int_eq(uv_loop_init(loop), 0);
	side_init(&A);
	side_init(&B);
	A.expect_key = B.key.pub;
	uv_tcp_init(loop, &listener);
	uv_ip4_addr("127.0.0.1", 0, &listen_addr);
	ck_assert_int_eq(uv_tcp_bind(&listener, (struct sockaddr *)&listen_addr, 0), 0);
	ck_assert_int_eq(uv_listen((uv_stream_t *)&listener, 16, on_incoming), 0);
	int len = sizeof(listen_addr);
	uv_tcp_getsockname(&listener, (struct sockaddr *)&listen_addr, &len);
}

static inline void close_walk(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static inline void teardown(void)
{
	link_close_all(&A.env, GSP_BYE_UNSPECIFIED, "");
	link_close_all(&B.env, GSP_BYE_UNSPECIFIED, "");
	if (!uv_is_closing((uv_handle_t *)&listener))
		uv_close((uv_handle_t *)&listener, NULL);
	uv_run(loop, UV_RUN_DEFAULT);   /* the links finish closing */
	uv_walk(loop, close_walk, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(loop), 0);
	free(loop);
}

static inline void on_deadline(uv_timer_t *t)
{
	*(bool *)t->data = true;
}

/* Runs the loop until cond() holds or ms pass; returns cond(). */
static inline bool run_until(bool (*cond)(void), unsigned ms)
{
	bool expired = false;
	uv_timer_t t;
	uv_timer_init(loop, &t);
	t.data = &expired;
	uv_timer_start(&t, on_deadline, ms, 0);
	while (!cond() && !expired)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	return cond();
}

static inline bool both_up(void)
{
	return A.ups == 1 && B.ups == 1;
}

static inline void dial(void)
{
	ck_assert_int_eq(link_connect(&B.env, (struct sockaddr *)&listen_addr,
				      A.key.pub, &B, &B.stats, &B.link), 0);
}

static inline void connect_both(void)
{
	dial();
	ck_assert(run_until(both_up, 5000));
	ck_assert_int_eq(link_get_phase(A.link), LINK_OPEN);
	ck_assert_int_eq(link_get_phase(B.link), LINK_OPEN);
	ck_assert(!memcmp(link_edge_seed(A.link), link_edge_seed(B.link), 32));
}

static inline bool a_down(void)
{
	return A.downs == 1;
}

static inline bool b_down(void)
{
	return B.downs == 1;
}

/* A raw TCP client of A's listener (bytes as we choose). */
static inline int raw_connect(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&listen_addr,
				 sizeof(listen_addr)), 0);
	return fd;
}

static inline bool a_up(void)
{
	return A.ups == 1;
}

static inline bool never(void)
{
	return false;
}

static int raw_fd = -1;

/* A raw listening socket on loopback for B to dial (a responder whose
 * bytes the test writes); its address into sa. */
static inline int raw_listen(struct sockaddr_in *sa)
{
	socklen_t sl = sizeof(*sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	uv_ip4_addr("127.0.0.1", 0, sa);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)sa, sizeof(*sa)), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)sa, &sl), 0);
	return lfd;
}

/* Whether raw_fd has bytes to read (or is closed). */
static inline bool raw_readable(void)
{
	struct pollfd pfd = {.fd = raw_fd, .events = POLLIN};
	return poll(&pfd, 1, 0) == 1;
}

/* Reads up to want bytes from fd (made non-blocking), running the loop
 * while it waits, until they are in, fd is closed, or 2 s pass without a
 * byte.  Returns how many arrived. */
static inline size_t raw_read(int fd, uint8_t *buf, size_t want)
{
	size_t got = 0;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	raw_fd = fd;
	while (got < want && run_until(raw_readable, 2000)) {
		ssize_t r = read(fd, buf + got, want - got);
		if (r == 0)
			break;
		if (r > 0)
			got += (size_t)r;
	}
	return got;
}

#endif
