/* Reproducible test data: N(0,1) parameters from a seed and a stream
 * number, shared by the simulator and the test trainer so that a trainer
 * given a node index holds exactly the data of that simulated node. */
#include <math.h>

#include "internal.h"
#include "sim.h"

void gsp_fill_gaussian(float *x, uint64_t n, uint64_t seed, unsigned stream)
{
	uint8_t key[GSP_SEED_BYTES] = {0};
	for (int b = 0; b < 8; b++)
		key[b] = (uint8_t)(seed >> (8 * b));
	/* Box-Muller on pairs of uniforms in (0, 1]; pair j comes from its
	 * own stream (seed, GSP_RNG_DATA, stream, j). */
	for (uint64_t j = 0; j < n; j += 2) {
		uint32_t w[2];
		(void)gsp__rng_words(key, GSP_RNG_DATA, stream, j, 0, w, 2);
		double u1 = ((double)w[0] + 1.0) / 4294967296.0;
		double u2 = (double)w[1] / 4294967296.0;
		double rad = sqrt(-2.0 * log(u1));
		x[j] = (float)(rad * cos(2.0 * M_PI * u2));
		if (j + 1 < n)
			x[j + 1] = (float)(rad * sin(2.0 * M_PI * u2));
	}
}
