/* edge_estimate: the consensus-distance estimate (edge.h): a completed
 * round's difference from ours, measured when the method's messages are
 * the models themselves, and refused when it is over MaxRoundChange; the
 * set's estimate from its edges' last measurements.  Calls no other file
 * of the edge module (the module's order: edge_core.c). */
#include <errno.h>
#include <math.h>

#include "edge_impl.h"
#include "log.h"

/* Whether a peer's message of n values stays within MaxRoundChange of
 * ours (in units of our norm, or of sqrt(n) when that is larger, so a
 * model of zeros still takes an honest neighbour's round). */
static bool within_bound(const edge_set *s, double num, double den, size_t n)
{
	if (!(s->max_round_change > 0))
		return true;
	double unit = sqrt(den) > sqrt((double)n) ? sqrt(den) : sqrt((double)n);
	return sqrt(num) <= (double)s->max_round_change * unit;
}

int edge__measure_round(edge *e, uint64_t round, const uint8_t *payload, size_t len)
{
	edge_set *s = e->set;
	double num, den;
	size_t n;
	if (!edges_measure_estimate(s)) {
		e->diff_norm = NAN;
	} else if (gsp_node_message_diff_norms(s->model.node, e->index, payload, len,
					       &num, &den, &n) == 0) {
		/* Read at the round's wire precision (a 16-bit PowerGossip
		 * round's values are 2 bytes). */
		if (!within_bound(s, num, den, n)) {
			s->counters->rounds_refused++;
			gsp_err("peer %s: round %llu refused: it differs from ours by "
				"%.3g times our norm (MaxRoundChange %g)", e->name,
				(unsigned long long)round, sqrt(num / (den > 0 ? den : 1)),
				(double)s->max_round_change);
			s->ops->error(s->ctx, e, "a ROUND over MaxRoundChange was refused");
			return -EACCES;
		}
		e->diff_norm = den > 0 ? sqrt(num / den) : sqrt(num);
	}
	return 0;
}

static double estimate_of(const edge_set *s, bool going_only)
{
	double est = NAN;
	for (size_t i = 0; i < s->n; i++) {
		const edge *e = &s->edge[i];
		/* An AVERAGE runs no more rounds on an edge it holds, nor on one
		 * whose generation ended (the neighbour left) or ends here: a
		 * last measurement there must not keep this end from saying it
		 * reached on the edges that go on (their rounds would then never
		 * end).  A live edge whose session is down still counts: its
		 * rounds resume. */
		if (going_only && (e->avg_held || !edge__live(e) || e->ending_self))
			continue;
		/* The last measurement stands after a neighbour leaves. */
		if (e->rounds_completed && !(e->diff_norm <= est))
			est = e->diff_norm;
	}
	return est;
}

bool edges_measure_estimate(const edge_set *s)
{
	return s->model.method <= GSP_METHOD_EXACT;
}

double edges_estimate(const edge_set *s)
{
	return estimate_of(s, false);
}

double edges_estimate_going(const edge_set *s)
{
	return estimate_of(s, true);
}
