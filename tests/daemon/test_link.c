/* Unit tests of the link layer (daemon/link.h): two real links over
 * loopback TCP in one loop, with fake ops tables recording what the link
 * reports up; raw sockets for malformed input.  Framing, oversize and
 * truncated frames, the heartbeat timeout, a full send queue, and close
 * while frames are queued. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "hsframe.h"
#include "linkpair.h"

/* A frame of len bytes: type ROUND (the link passes it up without
 * decoding it), then sequence number seq. */
static void send_seq(plink *l, uint32_t seq, size_t len)
{
	uint8_t *buf = calloc(1, len);
	buf[0] = GSP_MSG_ROUND;
	memcpy(buf + 1, &seq, 4);
	for (size_t i = 5; i < len; i++)
		buf[i] = pattern_byte(seq, i);
	ck_assert_int_eq(link_send(l, buf, len), 0);
	free(buf);
}

static int want_frames;
static bool b_has_frames(void)
{
	return B.frames >= want_frames;
}

/* Wire counts: what one end wrote is what the other read, handshake
 * included, once nothing is in flight. */
static bool wire_counts_agree(void)
{
	return A.stats.tx_bytes == B.stats.rx_bytes && B.stats.tx_bytes == A.stats.rx_bytes;
}

START_TEST(test_frames_pass_in_order)
{
	connect_both();
	B.check_content = true;
	link_set_max_frame(B.link, 1 << 20);
	want_frames = 50;
	size_t sent = 0;
	for (uint32_t i = 1; i <= 50; i++) {
		size_t len = 5 + (i * 997) % 60000;
		send_seq(A.link, i, len);
		sent += len;
	}
	ck_assert(run_until(b_has_frames, 5000));
	ck_assert(B.in_order);
	ck_assert_int_eq(B.bad_content, 0);
	ck_assert_int_eq(B.frames, 50);
	ck_assert_uint_eq(B.frame_bytes, sent);
	/* Each sealed frame: header, body and tag on the wire. */
	ck_assert_uint_ge(B.stats.rx_bytes, sent + 50 * (4 + GSP_AEAD_TAG_BYTES));
	ck_assert(run_until(wire_counts_agree, 5000));
	ck_assert_uint_gt(A.stats.rx_bytes, 0);   /* HS_RESP at least */
	ck_assert_int_eq(A.downs + B.downs, 0);
}
END_TEST

/* Model-sized frames (an exact round's): the sender seals each into the
 * memory of one already written when it can (link_core.c frame_done), the
 * receiver decrypts each in its receive buffer.  Queued back to back
 * (none written yet) and one at a time (each after the last arrived),
 * of changing sizes, every frame arrives whole, in order, byte for byte. */
START_TEST(test_model_sized_frames_pass_whole)
{
	connect_both();
	B.check_content = true;
	link_set_max_frame(B.link, 8 << 20);
	const size_t lens[] = {5u << 20, (9u << 19) + 3, 6u << 20, 5u << 20, 4u << 20, 7u << 20};
	size_t sent = 0;
	uint32_t seq = 0;
	for (int burst = 0; burst < 2; burst++)
		for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
			send_seq(A.link, ++seq, lens[k]);
			sent += lens[k];
			if (burst == 1) {
				want_frames = (int)seq;
				ck_assert(run_until(b_has_frames, 10000));
			}
			if (burst == 0 && k == 2) {
				want_frames = (int)seq;
				ck_assert(run_until(b_has_frames, 10000));
			}
		}
	want_frames = (int)seq;
	ck_assert(run_until(b_has_frames, 10000));
	ck_assert(B.in_order);
	ck_assert_int_eq(B.bad_content, 0);
	ck_assert_int_eq(B.frames, (int)seq);
	ck_assert_uint_eq(B.frame_bytes, sent);
	ck_assert_int_eq(A.downs + B.downs, 0);
}
END_TEST

START_TEST(test_oversize_frame_closes_as_malformed)
{
	connect_both();
	/* A accepts GSP_PROTO_CONTROL_MAX until told more. */
	send_seq(B.link, 1, GSP_PROTO_CONTROL_MAX + 1);
	ck_assert(run_until(a_down, 5000));
	ck_assert_uint_eq(A.counters.rx_malformed, 1);
	ck_assert_int_eq(A.frames, 0);
	ck_assert_ptr_nonnull(strstr(A.why, "closed the link"));
	/* B hears why: GOODBYE malformed, then its link ends. */
	ck_assert(run_until(b_down, 5000));
	ck_assert_int_eq(B.bye_reason, GSP_BYE_MALFORMED);
}
END_TEST

static bool a_closed_one(void)
{
	return A.counters.links_closed >= 1;
}

START_TEST(test_preauth_frame_over_cap_refused)
{
	int fd = raw_connect();
	uint8_t hdr[4] = {1, 2, 0, 0};   /* 513 bytes: over the pre-auth cap */
	_Static_assert(GSP_PROTO_PREAUTH_MAX == 512, "the cap this test pins");
	ck_assert_int_eq(write(fd, hdr, 4), 4);
	ck_assert(run_until(a_closed_one, 5000));
	ck_assert_uint_eq(A.counters.rx_malformed, 1);
	char c;
	ck_assert_int_le(read(fd, &c, 1), 0);   /* closed, no reply */
	close(fd);
}
END_TEST

START_TEST(test_truncated_handshake_ends_the_link)
{
	int fd = raw_connect();
	uint8_t part[4 + 50] = {100};  /* announces 100, sends 50 */
	ck_assert_int_eq(write(fd, part, sizeof(part)), (ssize_t)sizeof(part));
	close(fd);
	ck_assert(run_until(a_closed_one, 5000));
	ck_assert_uint_eq(A.counters.rx_malformed, 0);
	ck_assert_ptr_nonnull(strstr(A.why, "closed the connection during the handshake"));
}
END_TEST

START_TEST(test_trickled_handshake_times_out_from_accept)
{
	A.env.hs_timeout_ms = 300;
	A.env.ping_ms = 100;            /* the timer ticks every 25 ms */
	int fd = raw_connect();
	uint8_t hdr[4] = {200};
	uint64_t t0 = uv_now(loop);
	/* One byte every 100 ms: each arrives well inside the timeout, but
	 * the deadline counts from the accept. */
	for (int i = 0; i < 4 && A.counters.links_closed == 0; i++) {
		ck_assert_int_eq(write(fd, hdr + i, 1), 1);
		run_until(a_closed_one, 100);
	}
	ck_assert(run_until(a_closed_one, 2000));
	uv_update_time(loop);
	ck_assert_uint_lt(uv_now(loop) - t0, 1000);
	close(fd);
}
END_TEST

/* B in a child process that is then stopped (SIGSTOP): it answers
 * nothing, as a paused or hung daemon would. */
START_TEST(test_silent_peer_declared_dead)
{
	A.env.dead_ms = 300;
	A.env.ping_ms = 100;
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		uv_loop_fork(loop);
		uv_close((uv_handle_t *)&listener, NULL);
		dial();
		uv_run(loop, UV_RUN_DEFAULT);
		_exit(0);
	}
	ck_assert(run_until(a_up, 5000));
	kill(pid, SIGSTOP);
	uint64_t t0 = uv_now(loop);
	ck_assert(run_until(a_down, 3000));
	ck_assert_uint_ge(uv_now(loop) - t0, 250);
	ck_assert_ptr_nonnull(strstr(A.why, "no frame for 300 ms"));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}
END_TEST

START_TEST(test_pings_keep_a_quiet_link_alive)
{
	A.env.dead_ms = B.env.dead_ms = 400;
	A.env.ping_ms = B.env.ping_ms = 100;
	connect_both();
	run_until(a_down, 1500);
	ck_assert_int_eq(A.downs + B.downs, 0);
	/* One end pings, and its peer's answers keep that peer from ever
	 * being idle: which one depends on whose timer fired first (B, once,
	 * in a CI run under AddressSanitizer).  The pinging end measured the
	 * round trip. */
	ck_assert_msg(A.stats.rtt_ns > 0 || B.stats.rtt_ns > 0, "no PONG came back");
}
END_TEST

START_TEST(test_full_queue_closes_and_fails)
{
	B.env.max_queued = 1;
	connect_both();
	/* Without running the loop no write completes: the second frame
	 * finds the queue over its cap. */
	uint8_t *big = calloc(1, 1 << 20);
	big[0] = GSP_MSG_ROUND;
	int err = 0, sent = 0;
	while (err == 0 && sent < 1000) {
		err = link_send(B.link, big, 1 << 20);
		sent++;
		if (!B.link)
			break;
	}
	free(big);
	ck_assert_int_eq(err, -ENOBUFS);
	ck_assert_int_eq(B.downs, 1);   /* the link closed; nothing vanished */
	ck_assert_ptr_nonnull(strstr(B.why, "send queue full"));
}
END_TEST

static bool b_saw_goodbye_and_down(void)
{
	return B.downs == 1;
}

START_TEST(test_close_sends_queued_frames_first)
{
	connect_both();
	link_set_max_frame(B.link, 1 << 20);
	for (uint32_t i = 1; i <= 20; i++)
		send_seq(A.link, i, 500000);
	link_close(A.link, GSP_BYE_SHUTDOWN, "bye");
	ck_assert_int_eq(A.downs, 1);   /* down comes from inside link_close */
	ck_assert_ptr_null(A.link);
	ck_assert(run_until(b_saw_goodbye_and_down, 5000));
	ck_assert_int_eq(B.frames, 20);
	ck_assert(B.in_order);
	ck_assert_int_eq(B.goodbyes, 1);
	ck_assert_int_eq(B.bye_reason, GSP_BYE_SHUTDOWN);
	ck_assert_str_eq(B.why, "");    /* a GOODBYE is not a failure */
}
END_TEST

START_TEST(test_replayed_handshake_displaces_nothing)
{
	/* An HS_INIT that authenticates (here made with B's key, as a replay
	 * of a captured one would) but is never followed by a transport
	 * frame: A answers it, but the session is never up, so the real one
	 * stays, and the deadline closes the impostor. */
	A.env.hs_timeout_ms = 300;
	A.env.ping_ms = 100;
	connect_both();
	plink *real = A.link;
	gsp_hs hs;
	uint8_t ts[GSP_HS_TIMESTAMP], frame[4 + GSP_HS_INIT_MSG_BYTES];
	gsp_hs_timestamp(ts);
	size_t n = hs_init_frame(&hs, &B.key, A.key.pub, ts, frame);
	int fd = raw_connect();
	ck_assert_int_eq(write(fd, frame, n), (ssize_t)n);
	uint64_t closed = A.counters.links_closed;
	run_until(never, 800);
	ck_assert_int_eq(A.ups, 1);
	ck_assert_ptr_eq(A.link, real);
	ck_assert_int_eq(link_get_phase(real), LINK_OPEN);
	ck_assert_int_eq(B.downs, 0);
	ck_assert_int_eq(A.downs, 1);                          /* the impostor */
	ck_assert_str_eq(A.why, "handshake timed out");
	ck_assert_uint_gt(A.counters.links_closed, closed);
	gsp_hs_clear(&hs);
	close(fd);
}
END_TEST

/* A raw initiator with B's key: the handshake and one sealed PING by
 * hand, so the test controls every byte after them. */
static int raw_session(gsp_session *sess)
{
	gsp_hs hs;
	uint8_t ts[GSP_HS_TIMESTAMP], buf[256];
	size_t n;
	gsp_hs_timestamp(ts);
	n = hs_init_frame(&hs, &B.key, A.key.pub, ts, buf);
	int fd = raw_connect();
	ck_assert_int_eq(write(fd, buf, n), (ssize_t)n);
	/* A answers once the loop runs: run it until the answer is in. */
	size_t want = 4 + GSP_HS_RESP_MSG_BYTES, got = raw_read(fd, buf, want);
	ck_assert_uint_eq(got, want);
	gsp_hs_resp resp;
	ck_assert_int_eq(gsp_hs_resp_decode(buf + 4, got - 4, &resp), 0);
	ck_assert_int_eq(gsp_hs_read_response(&hs, buf + 4, resp.payload,
					      sizeof(resp.payload), sess), 0);
	gsp_hs_clear(&hs);
	gsp_msg_ping ping = {.nonce = 1};
	uint8_t pt[32];
	ck_assert_int_eq(gsp_msg_ping_encode(&ping, pt, sizeof(pt), &n), 0);
	ck_assert_int_eq(gsp_frame_header_write(buf, 4, (uint32_t)(n + GSP_AEAD_TAG_BYTES)), 0);
	ck_assert_int_eq(gsp_session_seal(sess, pt, n, buf + 4), 0);
	ck_assert_int_eq(write(fd, buf, 4 + n + GSP_AEAD_TAG_BYTES),
			 (ssize_t)(4 + n + GSP_AEAD_TAG_BYTES));
	return fd;
}

START_TEST(test_trickled_frame_does_not_keep_a_link_alive)
{
	/* Liveness counts authenticated frames, not bytes: a listed peer
	 * trickling a frame that never completes is declared dead. */
	A.env.dead_ms = 300;
	A.env.ping_ms = 100;
	gsp_session sess;
	int fd = raw_session(&sess);
	ck_assert(run_until(a_up, 2000));
	uint8_t hdr[4] = {0xe8, 0x03};   /* 1000 bytes announced */
	ck_assert_int_eq(write(fd, hdr, 4), 4);
	for (int i = 0; i < 20 && A.downs == 0; i++) {
		ck_assert_int_eq(write(fd, "x", 1), 1);
		run_until(a_down, 50);
	}
	ck_assert_int_eq(A.downs, 1);
	ck_assert_str_eq(A.why, "no frame for 300 ms");
	gsp_session_clear(&sess);
	close(fd);
}
END_TEST

/* n raw connections that never speak; returns how many A closed. */
static int preauth_flood(int n, int *fds)
{
	for (int i = 0; i < n; i++) {
		fds[i] = raw_connect();
		fcntl(fds[i], F_SETFL, O_NONBLOCK);
		run_until(never, 20);      /* A accepts it */
	}
	run_until(never, 100);
	int closed = 0;
	for (int i = 0; i < n; i++) {
		char c;
		if (read(fds[i], &c, 1) == 0)
			closed++;
	}
	return closed;
}

START_TEST(test_preauth_caps_close_the_oldest)
{
	int fds[20];
	A.env.preauth_per_addr = 8;
	ck_assert_int_eq(preauth_flood(20, fds), 12);
	/* The oldest went: the newest 8 are still open. */
	char c;
	ck_assert_int_eq(read(fds[0], &c, 1), 0);
	ck_assert_int_eq(read(fds[19], &c, 1), -1);
	ck_assert_int_eq(errno, EAGAIN);
	/* A real peer still gets through. */
	connect_both();
	for (int i = 0; i < 20; i++)
		close(fds[i]);
}
END_TEST

START_TEST(test_preauth_global_cap)
{
	int fds[12];
	A.env.preauth_max = 5;
	A.env.preauth_per_addr = 100;
	ck_assert_int_eq(preauth_flood(12, fds), 7);
	for (int i = 0; i < 12; i++)
		close(fds[i]);
}
END_TEST

START_TEST(test_unlisted_initiator_refused)
{
	A.expect_key = NULL;
	dial();
	ck_assert(run_until(b_down, 5000));
	ck_assert_int_eq(A.ups + B.ups, 0);
	ck_assert_ptr_nonnull(strstr(B.why, "during the handshake"));
}
END_TEST

START_TEST(test_connect_refused_names_the_address)
{
	uv_close((uv_handle_t *)&listener, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	dial();
	ck_assert(run_until(b_down, 5000));
	char want[64];
	snprintf(want, sizeof(want), "connect to 127.0.0.1:%u: connection refused",
		 ntohs(listen_addr.sin_port));
	ck_assert_str_eq(B.why, want);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	signal(SIGPIPE, SIG_IGN);
	Suite *s = suite_create("daemon-link");
	TCase *tc = tcase_create("link");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_frames_pass_in_order);
	tcase_add_test(tc, test_model_sized_frames_pass_whole);
	tcase_add_test(tc, test_oversize_frame_closes_as_malformed);
	tcase_add_test(tc, test_preauth_frame_over_cap_refused);
	tcase_add_test(tc, test_truncated_handshake_ends_the_link);
	tcase_add_test(tc, test_trickled_handshake_times_out_from_accept);
	tcase_add_test(tc, test_silent_peer_declared_dead);
	tcase_add_test(tc, test_pings_keep_a_quiet_link_alive);
	tcase_add_test(tc, test_full_queue_closes_and_fails);
	tcase_add_test(tc, test_close_sends_queued_frames_first);
	tcase_add_test(tc, test_replayed_handshake_displaces_nothing);
	tcase_add_test(tc, test_trickled_frame_does_not_keep_a_link_alive);
	tcase_add_test(tc, test_preauth_caps_close_the_oldest);
	tcase_add_test(tc, test_preauth_global_cap);
	tcase_add_test(tc, test_unlisted_initiator_refused);
	tcase_add_test(tc, test_connect_refused_names_the_address);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
