/* Model descriptions: validation, the fingerprint both ends of an edge
 * compare, and the one-line summary with short digests of the layout and
 * of the settings (PROTOCOL.md, "Model fingerprint"). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include <sodium.h>

#include "proto.h"
#include "wire.h"

static const char *const method_names[] = {
	[GSP_WIRE_METHOD_POWERGOSSIP] = "powergossip",
	[GSP_WIRE_METHOD_EXACT] = "exact",
	[GSP_WIRE_METHOD_CHOCO_TOPK] = "choco-topk",
	[GSP_WIRE_METHOD_CHOCO_RANDK] = "choco-randk",
	[GSP_WIRE_METHOD_CHOCO_SIGN] = "choco-sign",
};

const char *gsp_wire_method_name(unsigned method)
{
	if (method >= sizeof(method_names) / sizeof(*method_names))
		return NULL;
	return method_names[method];
}

int gsp_wire_tensors_floats(const gsp_wire_tensor *tensors, uint32_t n,
			    uint64_t *ret_floats)
{
	uint64_t total = 0;

	if (!ret_floats || (n && !tensors))
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		const gsp_wire_tensor *t = &tensors[i];
		uint64_t numel = 1;

		if (t->name_len > GSP_WIRE_NAME_MAX || t->ndim > GSP_WIRE_MAX_DIMS ||
		    !text_ok(t->name, t->name_len, GSP_WIRE_NAME_MAX))
			return -EINVAL;
		for (unsigned d = 0; d < t->ndim; d++) {
			if (t->dims[d] == 0)
				return -EINVAL;
			if (numel > UINT64_MAX / t->dims[d])
				return -EOVERFLOW;
			numel *= t->dims[d];
		}
		if (total > UINT64_MAX - numel)
			return -EOVERFLOW;
		total += numel;
	}
	*ret_floats = total;
	return 0;
}

/* The description with every field that does not apply to its method set
 * to zero; -EINVAL if a field that applies is out of range. */
static int canonical(const gsp_model_desc *d, uint16_t *rank, uint8_t *warm,
		     uint32_t *gamma_bits, uint32_t *fraction_bits)
{
	float gamma = d->gamma, fraction = 0.0f;

	if (!gsp_wire_method_name(d->method) || d->dtype > GSP_WIRE_DTYPE_BFLOAT16 ||
	    d->precision > GSP_WIRE_PRECISION_BFLOAT16 ||
	    d->n_tensors == 0 ||
	    d->n_tensors > GSP_API_MAX_TENSORS || !isfinite(gamma) || gamma < 0)
		return -EINVAL;
	*rank = 0;
	*warm = 0;
	if (d->method == GSP_WIRE_METHOD_POWERGOSSIP) {
		if (d->rank == 0)
			return -EINVAL;
		*rank = d->rank;
		*warm = d->warm_start ? 1 : 0;
	}
	if (d->method == GSP_WIRE_METHOD_CHOCO_TOPK ||
	    d->method == GSP_WIRE_METHOD_CHOCO_RANDK) {
		fraction = d->choco_fraction;
		if (!(fraction > 0.0f && fraction <= 1.0f))
			return -EINVAL;
	}
	if (gamma == 0.0f)
		gamma = 0.0f; /* -0 and +0 hash alike */
	memcpy(gamma_bits, &gamma, sizeof(*gamma_bits));
	memcpy(fraction_bits, &fraction, sizeof(*fraction_bits));
	return 0;
}

/* The tensors' part of the fingerprint: per tensor its name and shape. */
static void hash_tensors(crypto_generichash_state *st, const gsp_model_desc *desc)
{
	for (uint32_t i = 0; i < desc->n_tensors; i++) {
		const gsp_wire_tensor *t = &desc->tensors[i];
		uint8_t b[1 + 1 + 8 * GSP_WIRE_MAX_DIMS];
		size_t n = 0;

		b[n++] = t->name_len;
		crypto_generichash_update(st, b, n);
		if (t->name_len)
			crypto_generichash_update(st, (const uint8_t *)t->name,
						  t->name_len);
		n = 0;
		b[n++] = t->ndim;
		for (unsigned d = 0; d < t->ndim; d++, n += 8)
			put_u64(b + n, t->dims[d]);
		crypto_generichash_update(st, b, n);
	}
}

int gsp_model_fingerprint(const gsp_model_desc *desc,
			  uint8_t ret_fp[GSP_FINGERPRINT_BYTES])
{
	static const char tag[] = "gossipd model v2";
	crypto_generichash_state st;
	uint8_t head[1 + 2 + 1 + 4 + 4 + 4], fp[GSP_FINGERPRINT_BYTES];
	uint32_t gamma_bits, fraction_bits;
	uint64_t floats;
	uint16_t rank;
	uint8_t warm;
	int r;

	if (!desc || !ret_fp)
		return -EINVAL;
	r = canonical(desc, &rank, &warm, &gamma_bits, &fraction_bits);
	if (r < 0)
		return r;
	r = gsp_wire_tensors_floats(desc->tensors, desc->n_tensors, &floats);
	if (r < 0)
		return r;

	head[0] = desc->method;
	put_u16(head + 1, rank);
	head[3] = warm;
	put_u32(head + 4, gamma_bits);
	put_u32(head + 8, fraction_bits);
	put_u32(head + 12, desc->n_tensors);
	crypto_generichash_init(&st, NULL, 0, sizeof(fp));
	crypto_generichash_update(&st, (const uint8_t *)tag, sizeof(tag) - 1);
	crypto_generichash_update(&st, head, sizeof(head));
	/* A 16-bit model's dtype; a float32 one's fingerprint is as it was
	 * before dtypes existed. */
	if (desc->dtype != GSP_WIRE_DTYPE_FLOAT32)
		crypto_generichash_update(&st, &desc->dtype, 1);
	/* Likewise a 16-bit wire precision, after a tag byte that no dtype
	 * has, so it never hashes as a dtype. */
	if (desc->precision != GSP_WIRE_PRECISION_FLOAT32) {
		uint8_t wire[2] = {0xff, desc->precision};
		crypto_generichash_update(&st, wire, sizeof(wire));
	}
	hash_tensors(&st, desc);
	crypto_generichash_final(&st, fp, sizeof(fp));
	memcpy(ret_fp, fp, sizeof(fp));
	return 0;
}

/* The first 4 bytes of BLAKE2b-128(tag || part) as 8 hex digits: the
 * layout (n_tensors, then names and shapes as in the fingerprint) or the
 * settings (method, rank, warm start, gamma, fraction as canonical()
 * gives them, then the dtype and the wire precision unless float32).  Two models whose fingerprints differ differ in one digest
 * or both (up to a 2^-32 chance). */
static void short_digest(const gsp_model_desc *desc, bool layout,
			 const uint8_t *settings, size_t settings_len,
			 char out[9])
{
	static const char ltag[] = "gossipd layout v1", stag[] = "gossipd settings v2";
	crypto_generichash_state st;
	uint8_t h[16], n[4];

	crypto_generichash_init(&st, NULL, 0, sizeof(h));
	if (layout) {
		crypto_generichash_update(&st, (const uint8_t *)ltag, sizeof(ltag) - 1);
		put_u32(n, desc->n_tensors);
		crypto_generichash_update(&st, n, sizeof(n));
		hash_tensors(&st, desc);
	} else {
		crypto_generichash_update(&st, (const uint8_t *)stag, sizeof(stag) - 1);
		crypto_generichash_update(&st, settings, settings_len);
	}
	crypto_generichash_final(&st, h, sizeof(h));
	for (int i = 0; i < 4; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

int gsp_model_summary(const gsp_model_desc *desc, char *buf, size_t cap)
{
	static const char *const dtype_names[] = {"", " float16", " bfloat16"};
	static const char *const wire_names[] = {"", " wire float16", " wire bfloat16"};
	char tmp[GSP_MODEL_SUMMARY_MAX + 1], rank[16] = "", ld[9], sd[9];
	uint8_t settings[1 + 2 + 1 + 4 + 4 + 1 + 2];
	size_t settings_len = 12;
	uint32_t gamma_bits, fraction_bits;
	uint64_t floats;
	uint16_t r16;
	uint8_t warm;
	int r, n;

	if (!desc || !buf)
		return -EINVAL;
	r = canonical(desc, &r16, &warm, &gamma_bits, &fraction_bits);
	if (r < 0)
		return r;
	r = gsp_wire_tensors_floats(desc->tensors, desc->n_tensors, &floats);
	if (r < 0)
		return r;
	if (desc->method == GSP_WIRE_METHOD_POWERGOSSIP)
		snprintf(rank, sizeof(rank), " r%u", (unsigned)r16);
	settings[0] = desc->method;
	put_u16(settings + 1, r16);
	settings[3] = warm;
	put_u32(settings + 4, gamma_bits);
	put_u32(settings + 8, fraction_bits);
	/* The dtype and the wire precision count among the settings (float32
	 * as before either existed); the precision after a tag no dtype has. */
	if (desc->dtype)
		settings[settings_len++] = desc->dtype;
	if (desc->precision) {
		settings[settings_len++] = 0xff;
		settings[settings_len++] = desc->precision;
	}
	short_digest(desc, true, NULL, 0, ld);
	short_digest(desc, false, settings, settings_len, sd);
	n = snprintf(tmp, sizeof(tmp), "%s%s%s%s, %" PRIu32 " tensor%s, %" PRIu64
		     " float%s, layout %s, settings %s",
		     gsp_wire_method_name(desc->method), rank,
		     dtype_names[desc->dtype], wire_names[desc->precision],
		     desc->n_tensors,
		     desc->n_tensors == 1 ? "" : "s", floats,
		     floats == 1 ? "" : "s", ld, sd);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -EINVAL; /* cannot happen: at most ~110 bytes */
	if ((size_t)n >= cap)
		return -ENOBUFS;
	memcpy(buf, tmp, (size_t)n + 1);
	return n;
}
