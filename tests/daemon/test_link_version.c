/* Unit tests of the handshake's clear bytes on real links
 * (daemon/link_handshake.c): a version byte of HS_INIT or HS_RESP
 * rewritten in flight, by a man in the middle who leaves everything else
 * as the honest end computed it, fails the handshake at the other end;
 * the same bytes unmodified succeed. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "hsframe.h"
#include "linkpair.h"
#include "testutil.h"

/* Offset of the minor version byte in a frame: header, type, then the
 * version little-endian. */
#define MINOR_AT (4 + 1)

static uint64_t closed_before;

static bool a_closed_another(void)
{
	return A.counters.links_closed > closed_before;
}

/* B's HS_INIT to A, its minor version rewritten when rewrite is set:
 * whether A answered with an HS_RESP. */
static bool init_answered(bool rewrite)
{
	gsp_hs hs;
	uint8_t ts[GSP_HS_TIMESTAMP], frame[4 + GSP_HS_INIT_MSG_BYTES];
	uint8_t resp[4 + GSP_HS_RESP_MSG_BYTES];
	gsp_hs_timestamp(ts);
	size_t n = hs_init_frame(&hs, &B.key, A.key.pub, ts, frame);
	if (rewrite)
		frame[MINOR_AT] ^= 1;
	int fd = raw_connect();
	ck_assert_int_eq(write(fd, frame, n), (ssize_t)n);
	size_t got = raw_read(fd, resp, sizeof(resp));
	gsp_hs_clear(&hs);
	close(fd);
	return got == sizeof(resp);
}

START_TEST(test_init_version_rewritten_refused)
{
	ck_assert(init_answered(false));
	ck_assert_uint_eq(A.counters.version_mismatch, 0);
	ck_assert_uint_eq(A.counters.hs_refused, 0);
	closed_before = A.counters.links_closed;
	ck_assert(!init_answered(true));
	ck_assert(run_until(a_closed_another, 2000));
	ck_assert_int_eq(A.ups, 0);
	/* Another minor that does not authenticate: counted as a version
	 * problem, not as an unknown key. */
	ck_assert_uint_eq(A.counters.version_mismatch, 1);
	ck_assert_uint_eq(A.counters.hs_refused, 0);
}
END_TEST

/* A raw responder with A's key that B dials: it reads B's HS_INIT and
 * answers honestly, the answer's minor version rewritten when rewrite is
 * set.  Runs the loop until B's link is up or down. */
static bool b_decided(void)
{
	return B.ups + B.downs > 0;
}

static void answer_b(bool rewrite)
{
	struct sockaddr_in sa;
	int lfd = raw_listen(&sa);
	ck_assert_int_eq(link_connect(&B.env, (struct sockaddr *)&sa, A.key.pub, &B,
				      &B.stats, &B.link), 0);
	raw_fd = lfd;
	ck_assert(run_until(raw_readable, 2000));
	int fd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(fd, 0);
	close(lfd);

	uint8_t init[4 + GSP_HS_INIT_MSG_BYTES], out[4 + GSP_HS_RESP_MSG_BYTES];
	ck_assert_uint_eq(raw_read(fd, init, sizeof(init)), sizeof(init));
	gsp_hs_init msg;
	gsp_hs hs;
	gsp_session sess;
	uint8_t peer[GSP_KEY_BYTES], ts[GSP_HS_TIMESTAMP];
	ck_assert_int_eq(gsp_hs_init_decode(init + 4, sizeof(init) - 4, &msg), 0);
	ck_assert_int_eq(gsp_hs_read_init(&hs, &A.key, init + 4, msg.payload,
					  msg.payload_len, peer, ts), 0);
	gsp_hs_resp resp = {.version = GSP_PROTO_VERSION};
	size_t n;
	ck_assert_int_eq(gsp_hs_respond(&hs, HS_RESP_CLEAR, resp.payload, &sess), 0);
	ck_assert_int_eq(gsp_hs_resp_encode(&resp, out + 4, sizeof(out) - 4, &n), 0);
	ck_assert_int_eq(gsp_frame_header_write(out, 4, (uint32_t)n), 0);
	if (rewrite)
		out[MINOR_AT] ^= 1;
	ck_assert_int_eq(write(fd, out, sizeof(out)), (ssize_t)sizeof(out));
	ck_assert(run_until(b_decided, 2000));
	gsp_session_clear(&sess);
	close(fd);
}

START_TEST(test_resp_version_unmodified_accepted)
{
	answer_b(false);
	ck_assert_int_eq(B.ups, 1);
	ck_assert_int_eq(B.downs, 0);
}
END_TEST

START_TEST(test_resp_version_rewritten_refused)
{
	answer_b(true);
	ck_assert_int_eq(B.ups, 0);
	ck_assert_int_eq(B.downs, 1);
	ck_assert_ptr_nonnull(strstr(B.why, "handshake response does not authenticate"));
	ck_assert_ptr_nonnull(strstr(B.why, "the handshake covers the version"));
	ck_assert_uint_eq(B.counters.version_mismatch, 1);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	signal(SIGPIPE, SIG_IGN);
	Suite *s = suite_create("daemon-link-version");
	TCase *tc = tcase_create("link-version");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_init_version_rewritten_refused);
	tcase_add_test(tc, test_resp_version_unmodified_accepted);
	tcase_add_test(tc, test_resp_version_rewritten_refused);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
