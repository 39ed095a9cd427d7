/*
 * edgetest.h: what the edge state machine's unit tests share (test_edge.c
 * and the test_edge_*.c files beside it, one executable, test-daemon-edge):
 * pairs of edge sets through edgepair.h, brought up, stepped, checked for
 * conservation; and each file's test case.
 */
#ifndef GSP_TEST_EDGETEST_H
#define GSP_TEST_EDGETEST_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "edgepair.h"

static inline gsp_config config(gsp_method method, unsigned rank)
{
	gsp_config c;
	gsp_config_default(&c);
	c.method = method;
	c.rank = rank;
	return c;
}

static inline void up(edgepair *p)
{
	ep_session_up(p, 5);
	ep_pump(p);
	ck_assert_int_eq(ep_view(p->a.e).state, EDGE_UP);
	ck_assert_int_eq(ep_view(p->b.e).state, EDGE_UP);
	ck_assert(ep_view(p->a.e).live && ep_view(p->b.e).live);
}

/* Both ends step, then every frame is delivered. */
static inline void round_trip(edgepair *p)
{
	ck_assert_int_ge(ep_step(&p->a), 0);
	ck_assert_int_ge(ep_step(&p->b), 0);
	ep_pump(p);
}

static inline void apply_both(edgepair *p)
{
	ck_assert_int_ge(gsp_node_apply(p->a.node), 0);
	ck_assert_int_ge(gsp_node_apply(p->b.node), 0);
}

/* A pair of one method over spec, with its session up; *ret_sum: the
 * pair's sum before any round. */
static inline void pair_up(edgepair *p, gsp_method method, unsigned rank, const char *spec,
		    double *ret_sum)
{
	gsp_config c = config(method, rank);
	ep_init(p, spec, &c);
	up(p);
	if (ret_sum)
		*ret_sum = ep_sum(p);
}

/* Everything completed applied at both ends: the sum is where it was. */
static inline void assert_conserved(edgepair *p, double sum0)
{
	apply_both(p);
	ck_assert_double_eq_tol(ep_sum(p), sum0, 1e-6 * fabs(sum0) + 1e-3);
}


/* Each file's tests: sessions and rounds (test_edge.c), restarts and
 * records (test_edge_restart.c), ending generations (test_edge_end.c),
 * refusals, bounds and weights (test_edge_refuse.c). */
TCase *edge_restart_tcase(void);
TCase *edge_end_tcase(void);
TCase *edge_refuse_tcase(void);

#endif
