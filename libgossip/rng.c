/* The deterministic edge RNG: named streams derived from a 32-byte seed,
 * turned into floats by exact integer arithmetic so that both ends of an
 * edge hold bit-identical buffers on any machine. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "internal.h"

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Sub-seed = BLAKE2b-256 keyed by the seed over a domain tag and the
 * stream coordinates, all little-endian. */
static void derive(const uint8_t seed[GSP_SEED_BYTES], uint32_t purpose,
		   uint64_t a, uint64_t b, uint64_t c,
		   uint8_t out[randombytes_SEEDBYTES])
{
	static const char tag[8] = "gsp-rng1";
	uint8_t in[8 + 4 * 8];
	memcpy(in, tag, 8);
	put_le64(in + 8, purpose);
	put_le64(in + 16, a);
	put_le64(in + 24, b);
	put_le64(in + 32, c);
	crypto_generichash(out, randombytes_SEEDBYTES, in, sizeof(in), seed,
			   GSP_SEED_BYTES);
}

int gsp__rng_words(const uint8_t seed[GSP_SEED_BYTES], uint32_t purpose,
		   uint64_t a, uint64_t b, uint64_t c, uint32_t *out, size_t n)
{
	uint8_t sub[randombytes_SEEDBYTES];
	if (n > SIZE_MAX / 4)
		return -EOVERFLOW;
	derive(seed, purpose, a, b, c, sub);
	randombytes_buf_deterministic(out, n * 4, sub);
	sodium_memzero(sub, sizeof(sub));
	/* Read the stream as little-endian words whatever the host order. */
	uint8_t *bytes = (uint8_t *)out;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = bytes + 4 * i;
		out[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
			 (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	}
	return 0;
}

int gsp__rng_uniform(const uint8_t seed[GSP_SEED_BYTES], uint32_t purpose,
		     uint64_t a, uint64_t b, uint64_t c, float *out, size_t n,
		     size_t stride)
{
	uint32_t stack[256];
	uint32_t *w = n <= 256 ? stack : malloc(n * sizeof(*w));
	if (!w)
		return -ENOMEM;
	int err = gsp__rng_words(seed, purpose, a, b, c, w, n);
	/* The top 24 bits give an integer in [-2^23, 2^23), scaled exactly by
	 * a power of two into [-1, 1). */
	for (size_t i = 0; !err && i < n; i++)
		out[i * stride] = (float)((int32_t)(w[i] >> 8) - (1 << 23)) *
				  0x1p-23f;
	if (w != stack)
		free(w);
	return err;
}
