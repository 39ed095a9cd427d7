/* Finiteness checks of parameters, messages and message differences: a
 * NaN or infinity must never reach a model or an edge's buffers. */
#include "internal.h"

/* Floats per round of the lanes below. */
#define LANES 16

/* True if every a[i] (b NULL) or a[i] - b[i] is finite.  The largest
 * magnitude's bits stay below those of infinity unless some value is NaN
 * or infinite.  Kept per lane (an integer maximum may be taken in any
 * order), so the loop becomes vector code; a float sum such as x * 0
 * would be one long dependency chain. */
static inline __attribute__((always_inline)) bool
finite_lanes(const float *a, const float *b, size_t n)
{
	uint32_t max[LANES] = {0}, all = 0;
	size_t i = 0;
	for (; i + LANES <= n; i += LANES)
		for (unsigned l = 0; l < LANES; l++) {
			float v = b ? a[i + l] - b[i + l] : a[i + l];
			uint32_t bits = gsp__abs_bits(v);
			max[l] = bits > max[l] ? bits : max[l];
		}
	/* The rest into one scalar: indexing the lanes with a variable
	 * would keep them in memory instead of registers. */
	for (; i < n; i++) {
		float v = b ? a[i] - b[i] : a[i];
		uint32_t bits = gsp__abs_bits(v);
		all = bits > all ? bits : all;
	}
	for (unsigned l = 0; l < LANES; l++)
		all = max[l] > all ? max[l] : all;
	return all < GSP_INF_BITS;
}

bool gsp__all_finite(const float *x, size_t n)
{
	return finite_lanes(x, NULL, n);
}

bool gsp__diff_finite(const float *hi, const float *lo, size_t n)
{
	return finite_lanes(hi, lo, n);
}
