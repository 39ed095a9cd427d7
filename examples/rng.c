/* rng: seeded splitmix64 stream for the training tools (see rng.h). */
#include "rng.h"

gsp_rng gsp_rng_new(uint64_t seed, uint64_t stream)
{
	gsp_rng r = {seed ^ (stream * UINT64_C(0xD1B54A32D192ED03))};
	/* Decorrelate nearby seeds before the first draw. */
	gsp_rng_next(&r);
	return r;
}

uint64_t gsp_rng_next(gsp_rng *r)
{
	uint64_t z = (r->state += UINT64_C(0x9E3779B97F4A7C15));
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

float gsp_rng_uniform(gsp_rng *r, float lo, float hi)
{
	float u = (float)(gsp_rng_next(r) >> 40) * (1.0f / 16777216.0f);
	return lo + (hi - lo) * u;
}

uint64_t gsp_rng_below(gsp_rng *r, uint64_t bound)
{
	/* The largest multiple of bound that fits; draws above it are redrawn. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
	uint64_t x;
	do
		x = gsp_rng_next(r);
	while (x >= limit);
	return x % bound;
}

void gsp_rng_shuffle(gsp_rng *r, uint32_t *a, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)gsp_rng_below(r, i);
		uint32_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}
