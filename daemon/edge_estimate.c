/* edge_estimate: the consensus-distance estimate (edge.h): a completed
 * round's difference from ours, measured when the method's messages are
 * the models themselves, and refused when it is over MaxRoundChange; the
 * set's estimate from its edges' last measurements.  Calls no other file
 * of the edge module (the module's order: edge_core.c). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "edge_impl.h"
#include "log.h"

/* ||peer - mine||^2 and ||mine||^2, for float messages. */
static void diff_norms(const void *mine, const uint8_t *peer, size_t len,
		       double *ret_num, double *ret_den)
{
	const float *a = mine;
	double num = 0.0, den = 0.0;
	for (size_t i = 0; i + 4 <= len; i += 4) {
		float b;
		memcpy(&b, peer + i, 4);
		double dv = (double)b - a[i / 4];
		num += dv * dv;
		den += (double)a[i / 4] * a[i / 4];
	}
	*ret_num = num;
	*ret_den = den;
}

/* Whether a peer's float message stays within MaxRoundChange of ours
 * (in units of our norm, or of sqrt(length) when that is larger, so a
 * model of zeros still takes an honest neighbour's round). */
static bool within_bound(const edge_set *s, double num, double den, size_t len)
{
	if (!(s->max_round_change > 0))
		return true;
	double unit = sqrt(den) > sqrt((double)len / 4) ? sqrt(den) : sqrt((double)len / 4);
	return sqrt(num) <= (double)s->max_round_change * unit;
}

int edge__measure_round(edge *e, uint64_t round, const uint8_t *payload, size_t len)
{
	edge_set *s = e->set;
	const void *mine;
	size_t mlen;
	if (!edges_measure_estimate(s)) {
		e->diff_norm = NAN;
	} else if (gsp_node_message(s->model.node, e->index, &mine, &mlen, NULL) == 0 &&
		   mlen == len) {
		double num, den;
		diff_norms(mine, payload, len, &num, &den);
		if (!within_bound(s, num, den, len)) {
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
