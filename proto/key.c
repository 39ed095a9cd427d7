/* Static keys and their base64 text (see key.h). */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "key.h"

_Static_assert(crypto_box_PUBLICKEYBYTES == GSP_KEY_BYTES &&
	       crypto_box_SECRETKEYBYTES == GSP_KEY_BYTES &&
	       crypto_scalarmult_BYTES == GSP_KEY_BYTES &&
	       crypto_scalarmult_SCALARBYTES == GSP_KEY_BYTES,
	       "a gossipd key is an X25519 key");
_Static_assert(sodium_base64_ENCODED_LEN(GSP_KEY_BYTES,
					 sodium_base64_VARIANT_ORIGINAL) ==
	       GSP_KEY_BASE64_LEN + 1, "base64 of a key, with its NUL");

int gsp_key_from_base64(const char *text, uint8_t ret_key[static GSP_KEY_BYTES])
{
	uint8_t key[GSP_KEY_BYTES], high = 0;
	const char *end = NULL;
	size_t len = 0;
	int r;

	/* The length is not secret: check it before decoding, and never read
	 * past the NUL of a shorter string. */
	if (!text || strnlen(text, GSP_KEY_BASE64_LEN + 1) != GSP_KEY_BASE64_LEN)
		return -EINVAL;
	/* libsodium 1.0.18 (Debian 12) accepts bytes above 0x7f as base64
	 * characters: refuse them first, without a branch per byte. */
	for (size_t i = 0; i < GSP_KEY_BASE64_LEN; i++)
		high |= (uint8_t)text[i];
	if (high & 0x80)
		return -EINVAL;
	/* The padded variant wants exactly the padding 32 bytes need and
	 * zero spare bits; no characters are ignored. */
	r = sodium_base642bin(key, sizeof(key), text, GSP_KEY_BASE64_LEN, NULL,
			      &len, &end, sodium_base64_VARIANT_ORIGINAL);
	if (r != 0 || len != GSP_KEY_BYTES || end != text + GSP_KEY_BASE64_LEN) {
		sodium_memzero(key, sizeof(key));
		return -EINVAL;
	}
	memcpy(ret_key, key, GSP_KEY_BYTES);
	sodium_memzero(key, sizeof(key));
	return 0;
}

void gsp_key_to_base64(const uint8_t key[static GSP_KEY_BYTES],
		       char out[static GSP_KEY_BASE64_LEN + 1])
{
	sodium_bin2base64(out, GSP_KEY_BASE64_LEN + 1, key, GSP_KEY_BYTES,
			  sodium_base64_VARIANT_ORIGINAL);
}

void gsp_keypair_generate(gsp_keypair *ret)
{
	crypto_box_keypair(ret->pub, ret->priv);
}

int gsp_keypair_from_private(const uint8_t priv[static GSP_KEY_BYTES],
			     gsp_keypair *ret)
{
	gsp_keypair k;

	memcpy(k.priv, priv, GSP_KEY_BYTES);
	if (crypto_scalarmult_base(k.pub, k.priv) != 0) {
		sodium_memzero(&k, sizeof(k));
		return -EINVAL;
	}
	*ret = k;
	sodium_memzero(&k, sizeof(k));
	return 0;
}
