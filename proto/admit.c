/* What the admission formats share (see admit.h). */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "admit.h"

_Static_assert(crypto_sign_PUBLICKEYBYTES == GSP_SIGN_PUBLIC_BYTES &&
	       crypto_sign_SECRETKEYBYTES == GSP_SIGN_SECRET_BYTES &&
	       crypto_sign_SEEDBYTES == GSP_SIGN_SEED_BYTES &&
	       crypto_sign_BYTES == GSP_SIGNATURE_BYTES,
	       "the admission formats sign with Ed25519");

const char *gsp_admit_strerror(int err)
{
	switch (err) {
	case GSP_ADM_ETRUNCATED: return "the input ends before the format does";
	case GSP_ADM_ETRAILING: return "bytes after the end of the format";
	case GSP_ADM_EVERSION: return "an unknown format version";
	case GSP_ADM_ENAMELEN: return "a name that is empty or too long";
	case GSP_ADM_ENAMECHAR: return "a name character outside A-Z a-z 0-9 . _ -";
	case GSP_ADM_EVALIDITY: return "the expiry is not after the not-before time";
	case GSP_ADM_ETOOMANY: return "a count above its limit";
	case GSP_ADM_EUNSORTED: return "revoked keys out of ascending order";
	case GSP_ADM_EDUPLICATE: return "a revoked key listed twice";
	case GSP_ADM_ESTATUS: return "an unknown member status";
	case GSP_ADM_EFAMILY: return "an endpoint that is neither IPv4 nor IPv6";
	case GSP_ADM_EPORT: return "an endpoint with port 0";
	case GSP_ADM_ECERTLEN: return "an embedded certificate length out of range";
	case GSP_ADM_ECERTKEY: return "the embedded certificate is for other keys";
	case GSP_ADM_ETEXT: return "not the base64 text of one record";
	case GSP_ADM_ENOTYET: return "not valid yet (before its not-before time)";
	case GSP_ADM_ENOCERT: return "no certificate, and an authority requires one";
	case -EKEYREJECTED: return "not signed by the authority (or a bad signature)";
	case -EKEYEXPIRED: return "expired";
	case -EKEYREVOKED: return "revoked by the authority";
	default: return strerror(err < 0 ? -err : err);
	}
}

void gsp_sign_keypair_from_seed(const uint8_t seed[static GSP_SIGN_SEED_BYTES],
				uint8_t ret_pk[static GSP_SIGN_PUBLIC_BYTES],
				uint8_t ret_sk[static GSP_SIGN_SECRET_BYTES])
{
	crypto_sign_seed_keypair(ret_pk, ret_sk, seed);
}

/* domain || msg into buf: the string that is signed. */
static size_t assemble(const char *domain, const uint8_t *msg, size_t len,
		       uint8_t *buf)
{
	size_t d = strlen(domain);

	/* msg may already sit at buf (the callers encode in place). */
	if (len)
		memmove(buf + d, msg, len);
	memcpy(buf, domain, d);
	return d + len;
}

int gsp__admit_sign(const char *domain, const uint8_t *msg, size_t len,
		    uint8_t *buf, const uint8_t sk[static GSP_SIGN_SECRET_BYTES],
		    uint8_t ret_sig[static GSP_SIGNATURE_BYTES])
{
	size_t n;

	if (!domain || !buf || (len && !msg))
		return -EINVAL;
	n = assemble(domain, msg, len, buf);
	return crypto_sign_detached(ret_sig, NULL, buf, n, sk) == 0 ? 0 : -EINVAL;
}

int gsp__admit_verify(const char *domain, const uint8_t *msg, size_t len,
		      uint8_t *buf, const uint8_t pk[static GSP_SIGN_PUBLIC_BYTES],
		      const uint8_t sig[static GSP_SIGNATURE_BYTES])
{
	size_t n;

	if (!domain || !buf || (len && !msg))
		return -EINVAL;
	n = assemble(domain, msg, len, buf);
	return crypto_sign_verify_detached(sig, buf, n, pk) == 0 ? 0 : -EKEYREJECTED;
}

int gsp__admit_to_text(const uint8_t *bin, size_t len, char *out, size_t cap)
{
	if (!out || (len && !bin))
		return -EINVAL;
	if (cap < sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL))
		return -ENOBUFS;
	sodium_bin2base64(out, cap, bin, len, sodium_base64_VARIANT_ORIGINAL);
	return 0;
}

int gsp__admit_from_text(const char *text, size_t text_len, uint8_t *out,
			 size_t cap, size_t *ret_len)
{
	const char *end = NULL;
	uint8_t high = 0;
	size_t len = 0;

	if (!text || !out || !ret_len)
		return -EINVAL;
	/* Not secret: the length first, so the decoder never runs long. */
	if (text_len == 0 || text_len % 4)
		return GSP_ADM_ETEXT;
	if (text_len / 4 * 3 > cap + 2)
		return GSP_ADM_ETRAILING;
	/* libsodium 1.0.18 takes bytes above 0x7f for base64 characters
	 * (see key.c): refuse them, and NULs, first. */
	for (size_t i = 0; i < text_len; i++) {
		high |= (uint8_t)text[i];
		if (text[i] == '\0')
			return GSP_ADM_ETEXT;
	}
	if (high & 0x80)
		return GSP_ADM_ETEXT;
	if (sodium_base642bin(out, cap, text, text_len, NULL, &len, &end,
			      sodium_base64_VARIANT_ORIGINAL) != 0) {
		/* ERANGE: more bytes than cap (a text up to 2 bytes over
		 * passed the length check above). */
		return errno == ERANGE ? GSP_ADM_ETRAILING : GSP_ADM_ETEXT;
	}
	if (end != text + text_len)
		return GSP_ADM_ETEXT;
	*ret_len = len;
	return 0;
}
