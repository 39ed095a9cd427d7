/* Unit tests of the local group (daemon/group.h), pure: a fake clock,
 * timer and node.  The group steps once every member sent its STEP, or
 * LocalWait after the first (the timer armed for what is left of it);
 * the participants' buffers become the mean, then the node's model; a
 * member left out keeps the node's change as pending, untouched, and
 * takes it at its next step, so the mean over all members (pending
 * counted) moves by exactly the node's change; a member that leaves
 * takes its pending; DRAIN and AVERAGE only alone; a node that refuses
 * is answered on the timer, never from inside the call. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "group.h"

#define N 5
#define MEMBERS 4
#define WAIT_MS 100

static uint64_t now;
static int timer_armed;          /* 1: armed */
static uint64_t timer_ms;
static int node_starts, node_err, releases;
static group_request node_req;
static group g;
static float machine[N];
static float bufs[MEMBERS][N];
static int calls[MEMBERS];
static step_result last[MEMBERS];
static int in_call;              /* inside a group_* call */

static uint64_t f_now(void *ctx) { return now; }
static void f_timer_start(void *ctx, uint64_t ms) { timer_armed = 1; timer_ms = ms; }
static void f_timer_stop(void *ctx) { timer_armed = 0; }
static int f_node_start(void *ctx, const group_request *req)
{
	node_starts++;
	node_req = *req;
	return node_err;
}
static void f_release(void *ctx, void *handle) { releases++; }

static const group_ops ops = {
	.now_ms = f_now, .timer_start = f_timer_start, .timer_stop = f_timer_stop,
	.node_start = f_node_start, .release = f_release,
};

/* Member i's client is &calls[i]. */
static void on_done(void *client, const step_result *r)
{
	ck_assert_msg(!in_call, "a callback from inside a group call");
	int i = (int)((int *)client - calls);
	calls[i]++;
	last[i] = *r;
}

static void setup(void)
{
	now = 1000;
	timer_armed = 0;
	node_starts = node_err = releases = 0;
	memset(calls, 0, sizeof(calls));
	for (int i = 0; i < N; i++)
		machine[i] = 0.25f * (float)i;
	for (int m = 0; m < MEMBERS; m++)
		for (int i = 0; i < N; i++)
			bufs[m][i] = (float)(m + 1) * 0.7f + (float)i * 0.1f - 0.3f * (float)(m * i);
	group_init(&g, &ops, NULL, MEMBERS, WAIT_MS);
	ck_assert_int_eq(group_begin(&g, machine, N), 0);
	for (int m = 0; m < MEMBERS; m++)
		ck_assert_int_eq(group_join(&g, &calls[m], bufs[m], &bufs[m]), 0);
}

static void teardown(void)
{
	group_end(&g);
}

static int step(int m, uint32_t flags)
{
	in_call = 1;
	int r = group_step(&g, &calls[m], flags, on_done);
	in_call = 0;
	return r;
}

static void fire(void)
{
	ck_assert(timer_armed);
	timer_armed = 0;
	group_timer_fired(&g);
}

/* The node's request: its model moves by d[i] = (i + 1) / 8 - 0.3. */
static void node_moves(void)
{
	for (int i = 0; i < N; i++)
		machine[i] += (float)(i + 1) / 8.0f - 0.3f;
	step_result r = {.step = {.step = 7}};
	group_node_done(&g, &r);
}

/* The mean over all members of buffer + pending, in double. */
static void mean_all(double out[N])
{
	for (int i = 0; i < N; i++) {
		out[i] = 0;
		for (int m = 0; m < MEMBERS; m++)
			out[i] += (double)bufs[m][i] + (double)g.members[m].pending[i];
		out[i] /= MEMBERS;
	}
}

START_TEST(test_every_member_steps_mean_then_node_model)
{
	double before[N], after[N];
	mean_all(before);
	for (int m = 0; m < MEMBERS; m++) {
		ck_assert_int_eq(step(m, m == 2 ? GSP_STEP_SYNC : 0), 0);
		ck_assert_int_eq(node_starts, 0);
	}
	/* All four came: the step runs on the next turn, not from inside. */
	ck_assert(timer_armed);
	ck_assert_uint_eq(timer_ms, 0);
	fire();
	ck_assert_int_eq(node_starts, 1);
	ck_assert_uint_eq(node_req.flags, GSP_STEP_SYNC);   /* any SYNC: SYNC */
	for (int i = 0; i < N; i++)
		ck_assert_double_eq_tol(machine[i], before[i], 1e-6);
	node_moves();
	for (int m = 0; m < MEMBERS; m++) {
		ck_assert_int_eq(calls[m], 1);
		ck_assert_uint_eq(last[m].step.step, 7);
		/* Bitwise the node's model. */
		ck_assert_mem_eq(bufs[m], machine, sizeof(machine));
	}
	mean_all(after);
	for (int i = 0; i < N; i++)
		ck_assert_double_eq_tol(after[i] - before[i], (i + 1) / 8.0 - 0.3, 1e-6);
	ck_assert_int_eq(g.state, GROUP_IDLE);
}
END_TEST

/* LocalWait from the first STEP: a member paused is left out, its buffer
 * untouched; it takes the node's change at its next step, and the mean
 * over all members moves by exactly the node's changes. */
START_TEST(test_local_wait_leaves_a_paused_member_out_and_it_catches_up)
{
	double before[N], mid[N], after[N];
	float paused[N];
	memcpy(paused, bufs[3], sizeof(paused));
	mean_all(before);
	step(0, 0);
	ck_assert(timer_armed);
	ck_assert_uint_eq(timer_ms, WAIT_MS);
	now += 30;
	step(1, 0);
	ck_assert_uint_eq(timer_ms, WAIT_MS - 30);   /* from the first STEP */
	now += 10;
	step(2, 0);
	ck_assert_int_eq(node_starts, 0);
	now += WAIT_MS - 40;
	fire();
	ck_assert_int_eq(node_starts, 1);
	node_moves();
	for (int m = 0; m < 3; m++)
		ck_assert_mem_eq(bufs[m], machine, sizeof(machine));
	ck_assert_int_eq(calls[3], 0);
	ck_assert_mem_eq(bufs[3], paused, sizeof(paused));
	mean_all(mid);
	for (int i = 0; i < N; i++) {
		double d = (i + 1) / 8.0 - 0.3;
		ck_assert_double_eq_tol(g.members[3].pending[i], d, 1e-6);
		ck_assert_double_eq_tol(mid[i] - before[i], d, 1e-6);
	}
	/* A second step without it: its pending adds up. */
	for (int m = 0; m < 3; m++)
		step(m, 0);
	now += WAIT_MS;
	fire();
	node_moves();
	ck_assert_mem_eq(bufs[3], paused, sizeof(paused));
	/* Back: all four step; its pending goes into the mean. */
	for (int m = 0; m < MEMBERS; m++)
		step(m, 0);
	fire();
	for (int i = 0; i < N; i++)
		ck_assert_double_eq_tol(machine[i], mid[i] + (i + 1) / 8.0 - 0.3, 1e-5);
	node_moves();
	mean_all(after);
	for (int m = 0; m < MEMBERS; m++) {
		ck_assert_mem_eq(bufs[m], machine, sizeof(machine));
		for (int i = 0; i < N; i++)
			ck_assert_float_eq(g.members[m].pending[i], 0.0f);
	}
	for (int i = 0; i < N; i++)
		ck_assert_double_eq_tol(after[i] - before[i], 3 * ((i + 1) / 8.0 - 0.3), 1e-5);
}
END_TEST

/* A STEP that comes while the node's request runs waits for the next
 * step, whose LocalWait counts from it. */
START_TEST(test_step_during_a_run_waits_for_the_next)
{
	for (int m = 0; m < 3; m++)
		step(m, 0);
	now += WAIT_MS;
	fire();
	now += 20;
	ck_assert_int_eq(step(3, 0), 0);
	ck_assert_int_eq(step(3, 0), -EBUSY);
	ck_assert_int_eq(node_starts, 1);
	now += 5;
	node_moves();
	ck_assert_int_eq(calls[3], 0);
	ck_assert(timer_armed);
	ck_assert_uint_eq(timer_ms, WAIT_MS - 5);
	fire();
	ck_assert_int_eq(node_starts, 2);
	node_moves();
	ck_assert_int_eq(calls[3], 1);
	ck_assert_mem_eq(bufs[3], machine, sizeof(machine));
}
END_TEST

START_TEST(test_drain_and_average_only_alone)
{
	gsp_api_average avg = {.target = 0.1, .time_limit_ms = 10};
	ck_assert_int_eq(step(0, GSP_STEP_DRAIN), -EOPNOTSUPP);
	ck_assert_int_eq(group_average(&g, &calls[0], &avg, on_done), -EOPNOTSUPP);
	ck_assert_int_eq(node_starts, 0);
	for (int m = 1; m < MEMBERS; m++)
		ck_assert_uint_eq(group_leave(&g, &calls[m]), (unsigned)(MEMBERS - m));
	ck_assert_int_eq(group_average(&g, &calls[0], &avg, on_done), 0);
	fire();
	ck_assert(node_req.average);
	ck_assert_double_eq(node_req.avg.target, 0.1);
	node_moves();
	ck_assert_int_eq(calls[0], 1);
	ck_assert_int_eq(step(0, GSP_STEP_DRAIN), 0);
	fire();
	ck_assert_uint_eq(node_req.flags, GSP_STEP_DRAIN);
	ck_assert(!node_req.average);
}
END_TEST

/* A member that leaves takes its pending into its buffer; one whose
 * connection went while it takes part is left as it is. */
START_TEST(test_leave_takes_the_pending)
{
	for (int m = 0; m < 3; m++)
		step(m, 0);
	now += WAIT_MS;
	fire();
	node_moves();
	float want[N];
	for (int i = 0; i < N; i++)
		want[i] = bufs[3][i] + g.members[3].pending[i];
	ck_assert_uint_eq(group_leave(&g, &calls[3]), 3);
	ck_assert_mem_eq(bufs[3], want, sizeof(want));
	ck_assert_int_eq(releases, 1);
	/* Member 2 goes while the node's request runs. */
	for (int m = 0; m < 3; m++)
		step(m, 0);
	fire();
	float kept[N];
	memcpy(kept, bufs[2], sizeof(kept));
	group_forget(&g, &calls[2]);
	ck_assert_uint_eq(group_leave(&g, &calls[2]), 2);
	node_moves();
	ck_assert_mem_eq(bufs[2], kept, sizeof(kept));
	ck_assert_int_eq(calls[2], 1);               /* only the first step's */
	ck_assert_mem_eq(bufs[0], machine, sizeof(machine));
	ck_assert_int_eq(releases, 2);
}
END_TEST

/* The last member's DETACH: what the node moved since (its DETACH's
 * rounds) and its pending reach its buffer. */
START_TEST(test_end_gives_the_last_member_the_node_change)
{
	for (int m = 0; m < 3; m++)
		step(m, 0);
	now += WAIT_MS;
	fire();
	node_moves();
	for (int m = 0; m < 3; m++)
		group_leave(&g, &calls[m]);
	float want[N];
	for (int i = 0; i < N; i++) {
		machine[i] += 0.5f;              /* the DETACH's last round */
		want[i] = bufs[3][i] + (g.members[3].pending[i] + 0.5f);
	}
	group_end_begin(&g);
	ck_assert_int_eq(step(3, 0), -ENOENT);
	ck_assert_int_eq(group_join(&g, &calls[0], bufs[0], NULL), -EBUSY);
	group_end(&g);
	for (int i = 0; i < N; i++)
		ck_assert_float_eq_tol(bufs[3][i], want[i], 1e-6f);
	ck_assert_int_eq(releases, 4);
	ck_assert_int_eq(g.state, GROUP_OFF);
}
END_TEST

/* A node that refuses: the participants are answered on the timer with
 * the error, their buffers the mean (the node did not move). */
START_TEST(test_node_refusal_answered_on_the_timer)
{
	node_err = -ENOENT;
	for (int m = 0; m < MEMBERS; m++)
		step(m, 0);
	fire();
	ck_assert_int_eq(calls[0], 0);
	fire();
	for (int m = 0; m < MEMBERS; m++) {
		ck_assert_int_eq(calls[m], 1);
		ck_assert_int_eq(last[m].err, -ENOENT);
		ck_assert_mem_eq(bufs[m], machine, sizeof(machine));
	}
	ck_assert_int_eq(g.state, GROUP_IDLE);
}
END_TEST

START_TEST(test_join_limits)
{
	float other[N];
	ck_assert_int_eq(group_join(&g, &calls[0], other, NULL), -EEXIST);
	ck_assert_int_eq(group_join(&g, other, other, NULL), -EUSERS);
	ck_assert_uint_eq(g.n_members, MEMBERS);
	ck_assert(group_has(&g, &calls[1]));
	ck_assert(!group_has(&g, other));
	ck_assert_int_eq(group_step(&g, other, 0, on_done), -ENOENT);
}
END_TEST

static Suite *group_suite(void)
{
	Suite *s = suite_create("group");
	TCase *tc = tcase_create("group");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_every_member_steps_mean_then_node_model);
	tcase_add_test(tc, test_local_wait_leaves_a_paused_member_out_and_it_catches_up);
	tcase_add_test(tc, test_step_during_a_run_waits_for_the_next);
	tcase_add_test(tc, test_drain_and_average_only_alone);
	tcase_add_test(tc, test_leave_takes_the_pending);
	tcase_add_test(tc, test_end_gives_the_last_member_the_node_change);
	tcase_add_test(tc, test_node_refusal_answered_on_the_timer);
	tcase_add_test(tc, test_join_limits);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(group_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
