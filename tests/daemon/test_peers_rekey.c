/* Unit tests of rekeying on time (daemon/peers.c, daemon/link.c): two
 * peer tables on loopback, one dialing the other, with a short rekey
 * time.  The dialing end replaces its session with a new handshake each
 * time it is that old, the edge is never left without a session for
 * longer than the swap, and both ends keep the same, new session; a
 * session that is not rekeyed is closed at 1.5 times that age. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "peertable.h"
#include "testutil.h"

#define REKEY_MS 300

static uv_loop_t *loop;
static gsp_keypair ka, kb;
static table A, B;              /* A dials B */

static void setup(void)
{
	loop = uv_default_loop();
	gsp_keypair_generate(&ka);
	gsp_keypair_generate(&kb);
	table_start(&B, loop, &kb, &ka, NULL, NULL);
	char endpoint[64];
	snprintf(endpoint, sizeof(endpoint), "127.0.0.1:%d", table_port(&B));
	table_start(&A, loop, &ka, &kb, endpoint, NULL);
	A.ps.env.rekey_ms = B.ps.env.rekey_ms = REKEY_MS;
}

static void teardown(void)
{
	table_stop_both(&A, &B, loop);
}

static bool both_up(const void *arg)
{
	return A.ps.peer[0].session && B.ps.peer[0].session &&
	       link_get_phase(A.ps.peer[0].session) == LINK_OPEN &&
	       link_get_phase(B.ps.peer[0].session) == LINK_OPEN;
}

static bool rekeyed_twice(const void *arg)
{
	return A.c.sessions_rekeyed >= 2 && both_up(arg);
}

START_TEST(test_initiator_rekeys_on_time)
{
	ck_assert(table_run(loop, both_up, NULL, 5000));
	ck_assert_uint_eq(A.c.sessions_rekeyed, 0);
	uint8_t first[32];
	memcpy(first, link_edge_seed(A.ps.peer[0].session), 32);
	uint64_t t0 = uv_now(loop);
	ck_assert(table_run(loop, rekeyed_twice, NULL, 5000));
	/* Not before its time: two rekeys take two rekey times. */
	ck_assert_uint_ge(uv_now(loop) - t0, 2 * REKEY_MS - 50);
	/* Each old session went as its successor came: one down per up
	 * after the first, at both ends, and nothing was refused. */
	ck_assert_int_eq(A.ups, (int)A.c.sessions_rekeyed + 1);
	ck_assert_int_eq(A.downs, A.ups - 1);
	ck_assert_int_eq(B.ups - B.downs, 1);
	ck_assert_int_ge(B.ups, 3);
	ck_assert_str_eq(A.ps.peer[0].last_error, "");
	ck_assert_uint_eq(A.c.hs_refused + B.c.hs_refused + A.c.hs_replayed +
			  B.c.hs_replayed, 0);
	/* Both ends on the same session, with new keys. */
	const uint8_t *seed = link_edge_seed(A.ps.peer[0].session);
	ck_assert_mem_eq(seed, link_edge_seed(B.ps.peer[0].session), 32);
	ck_assert(memcmp(seed, first, 32) != 0);
	/* The responder only answers: it never counts a rekey. */
	ck_assert_uint_eq(B.c.sessions_rekeyed, 0);
}
END_TEST

static bool b_lost_it(const void *arg)
{
	return B.downs >= 1;
}

START_TEST(test_session_expires_unrekeyed)
{
	/* A initiator that never rekeys (an older gossipd): its session
	 * ends at 1.5 times the rekey time at the responder all the same. */
	A.ps.env.rekey_ms = 3600 * 1000;
	ck_assert(table_run(loop, both_up, NULL, 5000));
	uint64_t t0 = uv_now(loop);
	ck_assert(table_run(loop, b_lost_it, NULL, 5000));
	ck_assert_uint_ge(uv_now(loop) - t0, REKEY_MS * 3 / 2 - 50);
	ck_assert_uint_eq(A.c.sessions_rekeyed, 0);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	Suite *s = suite_create("daemon-peers-rekey");
	TCase *tc = tcase_create("rekey");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_initiator_rekeys_on_time);
	tcase_add_test(tc, test_session_expires_unrekeyed);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
