/* Wire precision of a method's messages (gsp_config.wire): float32 values
 * written as they are, or rounded to float16 / bfloat16 (dtype.c's
 * conversions, round to nearest even) and read back exactly.  Owns the
 * encoding of a run of values and the reading of a whole message
 * (gsp_node_message_diff_norms); which values a message holds is the
 * method's. */
#include <errno.h>
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

/* One value of a message at wire precision. */
static float value_at(gsp_dtype wire, const uint8_t *msg, size_t i)
{
	float v;
	gsp__wire_decode(wire, msg + i * gsp_dtype_size(wire), &v, 1);
	return v;
}

int gsp_node_message_diff_norms(const gsp_node *node, size_t edge,
				const void *peer, size_t len, double *ret_num,
				double *ret_den, size_t *ret_values)
{
	if (!node || edge >= node->n_edges || (!peer && len) || !ret_num ||
	    !ret_den || !ret_values)
		return -EINVAL;
	const gsp__edge *e = &node->edges[edge];
	if (e->round == 0)
		return GSP_ESTATE;
	if (len != e->msg_len)
		return GSP_ESHAPE;
	/* Only the node's own method's rounds take its wire precision (an
	 * exact round of a window sends float32). */
	gsp_dtype wire = gsp__round_ops(node, e, e->round) == node->ops
				 ? node->cfg.wire : GSP_DTYPE_FLOAT32;
	size_t n = len / gsp_dtype_size(wire);
	double num = 0.0, den = 0.0;
	for (size_t i = 0; i < n; i++) {
		double a = value_at(wire, e->msg, i);
		double d = (double)value_at(wire, peer, i) - a;
		num += d * d;
		den += a * a;
	}
	*ret_num = num;
	*ret_den = den;
	*ret_values = n;
	return 0;
}
