/* Unit tests of the persisted handshake timestamps (daemon/replay.h) and
 * of the peer table that uses them (daemon/peers.h): a restarted table
 * refuses an HS_INIT it accepted before the restart. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "hsframe.h"
#include "peertable.h"
#include "tmpdir.h"
#include "replay.h"

static char dir[64];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir), "replay");
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

static void path_of(char *out, size_t cap, const char *name)
{
	tmpdir_path(out, cap, dir, name);
}

START_TEST(test_parse_refuses_partial_and_oversized)
{
	static replay_entry out[REPLAY_MAX];
	uint8_t buf[3 * REPLAY_RECORD] = {1};
	ck_assert_int_eq(replay_parse(buf, 0, out), 0);
	ck_assert_int_eq(replay_parse(buf, sizeof(buf), out), 3);
	ck_assert_int_eq(replay_parse(buf, sizeof(buf) - 1, out), -EBADMSG);
	ck_assert_int_eq(replay_parse(buf, 1, out), -EBADMSG);
	size_t big = (size_t)(REPLAY_MAX + 1) * REPLAY_RECORD;
	uint8_t *b = calloc(1, big);
	ck_assert_int_eq(replay_parse(b, big, out), -EBADMSG);
	ck_assert_int_eq(replay_parse(b, big - REPLAY_RECORD, out), REPLAY_MAX);
	free(b);
}
END_TEST

START_TEST(test_save_load_round_trip)
{
	static replay_entry in[5], out[REPLAY_MAX];
	char path[128];
	path_of(path, sizeof(path), "ts");
	ck_assert_int_eq(replay_load(path, out), 0);      /* no file yet */
	randombytes_buf(in, sizeof(in));
	ck_assert_int_eq(replay_save(path, in, 5), 0);
	ck_assert_int_eq(replay_load(path, out), 5);
	ck_assert(!memcmp(in, out, sizeof(in)));
	char tmp[140];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	ck_assert_int_eq(access(tmp, F_OK), -1);           /* renamed away */
	/* A damaged file is an error, not an empty table. */
	int fd = open(path, O_WRONLY | O_APPEND);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	close(fd);
	ck_assert_int_eq(replay_load(path, out), -EBADMSG);
}
END_TEST

/* ---- the peer table --------------------------------------------------- */

static uv_loop_t *loop;

static const uint8_t *want_ts;     /* the HS_INIT's timestamp */

static bool judged_replay(const void *arg)
{
	return ((const table *)arg)->c.hs_replayed != 0;
}

static bool judged_taken(const void *arg)
{
	const table *t = arg;
	return memcmp(t->ps.peer[0].last_ts, want_ts, GSP_HS_TIMESTAMP) == 0;
}

/* Sends one HS_INIT frame to the table and runs the loop until the table
 * has judged it as expected: refused as a replay (counted), or taken
 * (its timestamp recorded); at most 5 s. */
static void send_init(table *t, const uint8_t *frame, size_t len, const uint8_t *ts,
		      bool replay)
{
	struct sockaddr_in sa;
	uv_ip4_addr("127.0.0.1", table_port(t), &sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(write(fd, frame, len), (ssize_t)len);
	want_ts = ts;
	ck_assert(table_run(loop, replay ? judged_replay : judged_taken, t, 5000));
	close(fd);
}

START_TEST(test_restart_refuses_an_old_handshake)
{
	gsp_keypair us, them;
	gsp_keypair_generate(&us);
	gsp_keypair_generate(&them);
	char replay[128];
	path_of(replay, sizeof(replay), "replay-timestamps");
	/* An HS_INIT from a listed peer, captured. */
	gsp_hs hs;
	uint8_t ts[GSP_HS_TIMESTAMP], frame[4 + GSP_HS_INIT_MSG_BYTES];
	gsp_hs_timestamp(ts);
	size_t n = hs_init_frame(&hs, &them, us.pub, ts, frame);
	gsp_hs_clear(&hs);

	table t;
	table_start(&t, loop, &us, &them, NULL, replay);
	send_init(&t, frame, n, ts, false);
	ck_assert_uint_eq(t.c.hs_replayed, 0);
	ck_assert(!memcmp(t.ps.peer[0].last_ts, ts, sizeof(ts)));
	table_stop(&t, loop);

	/* The daemon restarts: the same bytes again are a replay. */
	table_start(&t, loop, &us, &them, NULL, replay);
	send_init(&t, frame, n, ts, true);
	ck_assert_uint_eq(t.c.hs_replayed, 1);
	table_stop(&t, loop);

	/* Without the file (memory only) the window reopens: what the file
	 * is for. */
	table_start(&t, loop, &us, &them, NULL, NULL);
	send_init(&t, frame, n, ts, false);
	ck_assert_uint_eq(t.c.hs_replayed, 0);
	table_stop(&t, loop);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	loop = uv_default_loop();
	Suite *s = suite_create("daemon-replay");
	TCase *tc = tcase_create("replay");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_parse_refuses_partial_and_oversized);
	tcase_add_test(tc, test_save_load_round_trip);
	tcase_add_test(tc, test_restart_refuses_an_old_handshake);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
