/* Orthonormalization of the per-edge factors: one pass of modified
 * Gram-Schmidt on a deterministic code path (plain loops, double
 * accumulation, no BLAS), with zero or dependent columns refilled from the
 * edge RNG so power iteration never gets stuck at zero. */
#include <math.h>

#include "internal.h"

/* A column whose norm fell below this fraction of its norm before
 * orthogonalization is numerically dependent on the previous columns. */
#define GSP_DEPENDENT_RATIO 1e-4
/* A column with a norm below this is zero (models equal on the edge). */
#define GSP_ZERO_NORM 1e-30

static double col_dot(const float *q, size_t rows, unsigned r, unsigned a,
		      unsigned b)
{
	double s = 0.0;
	for (size_t i = 0; i < rows; i++)
		s += (double)q[i * r + a] * (double)q[i * r + b];
	return s;
}

/* col_d -= <col_c, col_d> col_c for one orthonormal col_c. */
static void col_remove(float *q, size_t rows, unsigned r, unsigned c,
		       unsigned d)
{
	double dot = col_dot(q, rows, r, c, d);
	for (size_t i = 0; i < rows; i++)
		q[i * r + d] = (float)((double)q[i * r + d] -
				       dot * (double)q[i * r + c]);
}

static void col_scale(float *q, size_t rows, unsigned r, unsigned c,
		      double norm)
{
	for (size_t i = 0; i < rows; i++)
		q[i * r + c] = (float)((double)q[i * r + c] / norm);
}

unsigned gsp__orthonormalize(float *q, size_t rows, unsigned r,
			     const uint8_t seed[GSP_SEED_BYTES],
			     uint64_t tensor, uint64_t round)
{
	double before[GSP_MAX_RANK];
	unsigned refills = 0;
	for (unsigned c = 0; c < r; c++)
		before[c] = sqrt(col_dot(q, rows, r, c, c));
	for (unsigned c = 0; c < r; c++) {
		double norm = sqrt(col_dot(q, rows, r, c, c));
		/* The negated test also catches NaN. */
		for (unsigned attempt = 0;
		     !(norm > GSP_ZERO_NORM &&
		       norm > GSP_DEPENDENT_RATIO * before[c]) &&
		     attempt < 4;
		     attempt++) {
			gsp__rng_uniform(seed, GSP_RNG_REFILL, tensor, round,
					 (uint64_t)c << 8 | attempt, q + c,
					 rows, r);
			before[c] = sqrt(col_dot(q, rows, r, c, c));
			for (unsigned p = 0; p < c; p++)
				col_remove(q, rows, r, p, c);
			norm = sqrt(col_dot(q, rows, r, c, c));
			refills++;
		}
		col_scale(q, rows, r, c, norm);
		for (unsigned d = c + 1; d < r; d++)
			col_remove(q, rows, r, c, d);
	}
	return refills;
}
