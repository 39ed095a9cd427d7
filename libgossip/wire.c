/* Wire precision of a method's messages (gsp_config.wire): float32 values
 * written as they are, or rounded to float16 / bfloat16 (dtype.c's
 * conversions, round to nearest even) and read back exactly.  Owns only
 * the encoding of a run of values; which values a message holds is the
 * method's. */
#include <string.h>

#include "internal.h"

bool gsp__wire_encode(gsp_dtype wire, const float *src, uint8_t *dst, size_t n)
{
	if (wire == GSP_DTYPE_FLOAT32) {
		memcpy(dst, src, n * sizeof(float));
		return gsp__all_finite(src, n);
	}
	/* float16's exponent is bits 10..14, bfloat16's bits 7..14: all ones
	 * is an infinity (a float16 overflow: above 65504) or a NaN. */
	uint16_t exp = wire == GSP_DTYPE_FLOAT16 ? 0x7c00u : 0x7f80u, bad = 0;
	for (size_t i = 0; i < n; i++) {
		uint16_t h = wire == GSP_DTYPE_FLOAT16 ? gsp_float_to_half(src[i])
						       : gsp_float_to_bf16(src[i]);
		bad |= (uint16_t)((h & exp) == exp);
		memcpy(dst + 2 * i, &h, sizeof(h));
	}
	return !bad;
}

void gsp__wire_decode(gsp_dtype wire, const uint8_t *src, float *dst, size_t n)
{
	if (wire == GSP_DTYPE_FLOAT32) {
		memcpy(dst, src, n * sizeof(float));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint16_t h;
		memcpy(&h, src + 2 * i, sizeof(h));
		dst[i] = wire == GSP_DTYPE_FLOAT16 ? gsp_half_to_float(h)
						   : gsp_bf16_to_float(h);
	}
}
