/*
 * dtype: the element types a trainer's parameter buffer may hold
 * (float32, IEEE float16, bfloat16), their conversions to and from
 * float32 (round to nearest, ties to even), and a 16-bit buffer's float32
 * master copy: the trainer's changes read into it, the rounded values
 * written back (docs/ENGINE.md, "16-bit parameters").
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	return u;
}

static float float_of(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

/* The conversions, static so that the passes below inline them (the
 * exported names are interposable, so calls to them are not inlined). */
static inline float bf16_from(uint16_t h)
{
	return float_of((uint32_t)h << 16);
}

static inline uint16_t bf16_to(float f)
{
	uint32_t u = bits_of(f);
	/* Round to nearest even on the 16 bits dropped; a carry out of the
	 * mantissa steps the exponent, up to infinity.  NaN: quiet, same
	 * sign (a select, so the loops over it vectorize). */
	uint16_t rounded = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
	uint16_t nan = (uint16_t)((u >> 16) | 0x0040u);
	return (u & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
}

static inline float half_from(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
	if (exp == 0) {                               /* zero, subnormal */
		float v = (float)mant * 0x1p-24f;     /* exact: mant < 2^10 */
		return float_of(bits_of(v) | sign);
	}
	if (exp == 0x1f)                              /* infinity, NaN */
		return float_of(sign | 0x7f800000u | (mant << 13));
	return float_of(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

static inline uint16_t half_to(float f)
{
	uint32_t u = bits_of(f), ax = u & 0x7fffffffu;
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	if (ax > 0x7f800000u)                         /* NaN: quiet */
		return sign | 0x7e00u | (uint16_t)((ax >> 13) & 0x3ffu);
	if (ax >= 0x477ff000u)      /* 65520 and up (ties to even) round to inf */
		return sign | 0x7c00u;
	if (ax >= 0x38800000u) {                      /* normal: 2^-14 and up */
		uint32_t r = ax - 0x38000000u;        /* rebias 127 -> 15 */
		return sign | (uint16_t)((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
	}
	if (ax <= 0x33000000u)      /* up to 2^-25, the tie with 0: to 0 */
		return sign;
	/* Subnormal: the value in units of 2^-24, rounded to nearest even
	 * (a result of 0x400 is the smallest normal, correctly encoded). */
	uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
	unsigned shift = 126 - e;                     /* 14..24 */
	uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
	if (rem > half || (rem == half && (q & 1u)))
		q++;
	return sign | (uint16_t)q;
}

float gsp_bf16_to_float(uint16_t h)
{
	return bf16_from(h);
}

uint16_t gsp_float_to_bf16(float f)
{
	return bf16_to(f);
}

float gsp_half_to_float(uint16_t h)
{
	return half_from(h);
}

uint16_t gsp_float_to_half(float f)
{
	return half_to(f);
}

int gsp_dtype_parse(const char *name, gsp_dtype *ret_dtype)
{
	for (unsigned d = 0; d <= GSP_DTYPE_BFLOAT16; d++)
		if (name && strcmp(name, gsp_dtype_name((gsp_dtype)d)) == 0) {
			*ret_dtype = (gsp_dtype)d;
			return 0;
		}
	return -EINVAL;
}

const char *gsp_dtype_name(gsp_dtype dtype)
{
	switch (dtype) {
	case GSP_DTYPE_FLOAT32: return "float32";
	case GSP_DTYPE_FLOAT16: return "float16";
	case GSP_DTYPE_BFLOAT16: return "bfloat16";
	}
	return NULL;
}

size_t gsp_dtype_size(gsp_dtype dtype)
{
	switch (dtype) {
	case GSP_DTYPE_FLOAT32: return 4;
	case GSP_DTYPE_FLOAT16:
	case GSP_DTYPE_BFLOAT16: return 2;
	}
	return 0;
}

/* The two passes over a 16-bit buffer, one per type so that each inlines
 * its conversions.  master, buf and seen: n values each; seen holds the
 * buffer as the node last saw it (read in) or wrote it (write out).
 *
 * read_in: where the buffer no longer holds what the node saw there, the
 * trainer changed it: the master becomes the trainer's value plus the
 * part of the master that value had not (so the trainer's change, and
 * only that, enters the master, and what gossip added below the 16-bit
 * precision stays; nothing stays of a master whose seen value was an
 * infinity or a NaN).  Bits are compared, not values: an infinity or a
 * NaN left as it was is no change.
 * write_out: the buffer gets the rounded master. */
#define DTYPE_PASSES(NAME, TO16, FROM16)                                       \
	static void read_in_##NAME(float *restrict master, const uint16_t *restrict buf, \
				   uint16_t *restrict seen, size_t n)          \
	{                                                                      \
		for (size_t i = 0; i < n; i++) {                               \
			float m = master[i];                                   \
			uint16_t b = buf[i];                                   \
			float fs = FROM16(seen[i]);                            \
			float kept = isfinite(fs) ? m - fs : 0.0f;             \
			master[i] = b == seen[i] ? m : FROM16(b) + kept;       \
			seen[i] = b;                                           \
		}                                                              \
	}                                                                      \
	static void write_out_##NAME(const float *restrict master, uint16_t *restrict buf, \
				     uint16_t *restrict seen, size_t n)        \
	{                                                                      \
		for (size_t i = 0; i < n; i++)                                 \
			buf[i] = seen[i] = TO16(master[i]);                    \
	}
DTYPE_PASSES(half, half_to, half_from)
DTYPE_PASSES(bf16, bf16_to, bf16_from)

/* The vector passes (dtype_x86.c), unless GSP_KERNEL says "generic"
 * (tests of both) or the CPU lacks them. */
static bool vector_passes(void)
{
	return strcmp(gsp_kernel_name(), "generic") != 0 && gsp__dtype_x86_ok();
}

/* One pass split over the engine's workers (pool.c): worker w does the
 * values [w * each, (w + 1) * each); each value's result is the same
 * whoever computes it. */
#define PASS_MIN_VALUES (1u << 16)   /* per worker */
typedef struct pass_job {
	gsp_dtype dtype;
	bool vector, out;            /* out: write out, else read in */
	gsp__dtype_arrays a;
	size_t n, each;
} pass_job;

static void pass_part(const void *job, unsigned w)
{
	const pass_job *j = job;
	size_t from = (size_t)w * j->each;
	if (from >= j->n)
		return;
	size_t len = j->n - from < j->each ? j->n - from : j->each;
	gsp__dtype_arrays a = {j->a.master + from, j->a.buf + from, j->a.seen + from};
	size_t done = !j->vector ? 0
		      : j->out ? gsp__dtype_write_out_x86(j->dtype, &a, len)
			       : gsp__dtype_read_in_x86(j->dtype, &a, len);
	float *m = a.master + done;
	uint16_t *b = a.buf + done, *seen = a.seen + done;
	len -= done;
	if (j->dtype == GSP_DTYPE_FLOAT16 && j->out)
		write_out_half(m, b, seen, len);
	else if (j->dtype == GSP_DTYPE_FLOAT16)
		read_in_half(m, b, seen, len);
	else if (j->out)
		write_out_bf16(m, b, seen, len);
	else
		read_in_bf16(m, b, seen, len);
}

static void run_pass(gsp_dtype dtype, bool out, const gsp__dtype_arrays *a, size_t n)
{
	pass_job j = {.dtype = dtype, .out = out, .a = *a, .n = n,
		      .vector = vector_passes()};
	size_t nw = n / PASS_MIN_VALUES;
	if (nw > gsp__pool_size())
		nw = gsp__pool_size();
	if (nw > 1 && gsp__pool_acquire()) {
		j.each = ((n + nw - 1) / nw + 7) & ~(size_t)7;
		gsp__pool_run((unsigned)nw, pass_part, &j);
		gsp__pool_release();
		return;
	}
	j.each = n;
	pass_part(&j, 0);
}

void gsp__dtype_read_in(gsp_dtype dtype, const gsp__dtype_arrays *a, size_t n)
{
	if (dtype != GSP_DTYPE_FLOAT32)
		run_pass(dtype, false, a, n);
}

void gsp__dtype_write_out(gsp_dtype dtype, const gsp__dtype_arrays *a, size_t n)
{
	if (dtype != GSP_DTYPE_FLOAT32)
		run_pass(dtype, true, a, n);
}

void gsp__node_read_in(gsp_node *node)
{
	gsp__dtype_arrays a = {node->params, node->buffer, node->seen};
	gsp__dtype_read_in(node->dtype, &a, node->layout->floats);
}

void gsp__node_write_out(gsp_node *node)
{
	gsp__dtype_arrays a = {node->params, node->buffer, node->seen};
	gsp__dtype_write_out(node->dtype, &a, node->layout->floats);
}

/* The master of a new node of a 16-bit buffer: the buffer's values, as
 * seen. */
int gsp__node_master_init(gsp_node *node)
{
	size_t n = node->layout->floats;
	if (node->dtype == GSP_DTYPE_FLOAT32)
		return 0;
	node->params = malloc(n ? n * sizeof(float) : 1);
	node->seen = malloc(n ? n * sizeof(uint16_t) : 1);
	if (!node->params || !node->seen) {
		free(node->params);
		free(node->seen);
		node->params = node->buffer;
		node->seen = NULL;
		return -ENOMEM;
	}
	node->master_owned = true;
	const uint16_t *buf = node->buffer;
	for (size_t i = 0; i < n; i++) {
		node->seen[i] = buf[i];
		node->params[i] = node->dtype == GSP_DTYPE_FLOAT16 ? half_from(buf[i])
								  : bf16_from(buf[i]);
	}
	return 0;
}
