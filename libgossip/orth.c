/* Orthonormalization of the per-edge factors: one pass of modified
 * Gram-Schmidt on a deterministic code path (plain loops, double
 * accumulation, no BLAS), with zero or dependent columns refilled from the
 * edge RNG so power iteration never gets stuck at zero. */
#include <math.h>
#include <string.h>

#include "internal.h"

/* A column whose norm fell below this fraction of its norm before
 * orthogonalization is numerically dependent on the previous columns. */
#define GSP_DEPENDENT_RATIO 1e-4
/* A column with a norm below this is zero (models equal on the edge). */
#define GSP_ZERO_NORM 1e-30

/* Lanes of col_dot: rows 8g + l of the full groups of 8 are summed into
 * lane l, the rows after the last full group in order into a ninth
 * partial, and the partials are added in a fixed tree.  The order is
 * fixed (both ends of an edge must get the same bits) and gives eight
 * independent chains held in registers, where one chain of double adds
 * made this the slowest loop of a step.  The lanes are four pairs of the
 * baseline's 16-byte vectors (wider generic vectors stay in memory there);
 * each lane's arithmetic is the same on any instruction set. */
typedef double dot_pair __attribute__((vector_size(2 * sizeof(double))));

static double col_dot(const float *q, size_t rows, unsigned r, unsigned a,
		      unsigned b)
{
	dot_pair s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
	double tail = 0.0;
	size_t i = 0;
	if (r == 1) {
		for (; i + 8 <= rows; i += 8) {
			const float *p = q + i;
			dot_pair x0 = {p[0], p[1]}, x1 = {p[2], p[3]};
			dot_pair x2 = {p[4], p[5]}, x3 = {p[6], p[7]};
			s0 += x0 * x0;
			s1 += x1 * x1;
			s2 += x2 * x2;
			s3 += x3 * x3;
		}
	} else {
		for (; i + 8 <= rows; i += 8) {
			const float *p = q + i * r;
			dot_pair x0 = {p[a], p[r + a]};
			dot_pair x1 = {p[2 * r + a], p[3 * r + a]};
			dot_pair x2 = {p[4 * r + a], p[5 * r + a]};
			dot_pair x3 = {p[6 * r + a], p[7 * r + a]};
			dot_pair y0 = {p[b], p[r + b]};
			dot_pair y1 = {p[2 * r + b], p[3 * r + b]};
			dot_pair y2 = {p[4 * r + b], p[5 * r + b]};
			dot_pair y3 = {p[6 * r + b], p[7 * r + b]};
			s0 += x0 * y0;
			s1 += x1 * y1;
			s2 += x2 * y2;
			s3 += x3 * y3;
		}
	}
	for (; i < rows; i++)
		tail += (double)q[i * r + a] * (double)q[i * r + b];
	return (((s0[0] + s0[1]) + (s1[0] + s1[1])) +
		((s2[0] + s2[1]) + (s3[0] + s3[1]))) + tail;
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

/* col_c *= 1 / norm: a multiply, not a division per element (several
 * times slower); the same formula on every path, so both ends and
 * gsp__orthonormalize_copy() agree bit for bit. */
static void col_scale(float *q, const float *src, size_t rows, unsigned r,
		      unsigned c, double norm)
{
	double inv = 1.0 / norm;
	if (r == 1) {
		/* In pairs of the baseline's vectors, as in col_dot. */
		size_t i = 0;
		for (; i + 4 <= rows; i += 4) {
			const float *p = src + i;
			dot_pair x0 = {p[0], p[1]}, x1 = {p[2], p[3]};
			x0 *= inv;
			x1 *= inv;
			q[i] = (float)x0[0];
			q[i + 1] = (float)x0[1];
			q[i + 2] = (float)x1[0];
			q[i + 3] = (float)x1[1];
		}
		for (; i < rows; i++)
			q[i] = (float)((double)src[i] * inv);
		return;
	}
	for (size_t i = 0; i < rows; i++)
		q[i * r + c] = (float)((double)src[i * r + c] * inv);
}

/* A column of this norm is kept; anything else (zero, NaN, or a residue
 * of rounding after orthogonalization) is refilled. */
static bool keep(double norm, double before)
{
	/* A NaN norm compares false: not kept. */
	return norm > GSP_ZERO_NORM && norm > GSP_DEPENDENT_RATIO * before;
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
		/* Column 0 has not changed since its norm was taken. */
		double norm = c == 0 ? before[0] : sqrt(col_dot(q, rows, r, c, c));
		for (unsigned attempt = 0; !keep(norm, before[c]) && attempt < 4;
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
		col_scale(q, q, rows, r, c, norm);
		for (unsigned d = c + 1; d < r; d++)
			col_remove(q, rows, r, c, d);
	}
	return refills;
}

unsigned gsp__orthonormalize_copy(float *q, const float *src, size_t rows,
				  unsigned r, const uint8_t seed[GSP_SEED_BYTES],
				  uint64_t tensor, uint64_t round)
{
	if (r == 1) {
		/* One column: its norm, then one scaled copy, as the
		 * in-place path would compute it. */
		double norm = sqrt(col_dot(src, rows, 1, 0, 0));
		if (keep(norm, norm)) {
			col_scale(q, src, rows, 1, 0, norm);
			return 0;
		}
	}
	memcpy(q, src, rows * r * sizeof(float));
	return gsp__orthonormalize(q, rows, r, seed, tensor, round);
}
