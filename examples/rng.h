/*
 * rng: the small seeded random stream of the training tools.
 *
 * This module owns one deterministic pseudo-random generator (splitmix64)
 * and what the trainer draws from it: uniform floats, uniform integers
 * below a bound and in-place shuffles.  The same seed gives the same stream
 * on every machine, so nodes that share a seed build the same initial model
 * and the same data permutation.  Not for cryptography.
 */
#ifndef GSP_TOOLS_RNG_H
#define GSP_TOOLS_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct gsp_rng {
	uint64_t state;
} gsp_rng;

/* A stream from seed; stream lets one seed give independent streams (e.g.
 * one per node or per epoch). */
gsp_rng gsp_rng_new(uint64_t seed, uint64_t stream);
uint64_t gsp_rng_next(gsp_rng *r);
/* Uniform in [lo, hi), 24 random bits. */
float gsp_rng_uniform(gsp_rng *r, float lo, float hi);
/* Uniform in [0, bound), bound >= 1 (rejection sampling: no bias). */
uint64_t gsp_rng_below(gsp_rng *r, uint64_t bound);
/* Fisher-Yates shuffle of a[0..n). */
void gsp_rng_shuffle(gsp_rng *r, uint32_t *a, size_t n);

#endif
