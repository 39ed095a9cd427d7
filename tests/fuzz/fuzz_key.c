/*
 * libFuzzer harness for the key codec (proto/key.c): any text either is
 * the one canonical form of a key, so that encoding the decoded key gives
 * the same text back, or is refused with -EINVAL and the output left
 * untouched.  A key that decodes also yields a key pair whose private key
 * is the one decoded.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "key.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t untouched[GSP_KEY_BYTES] = {
		0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5,
		0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5,
		0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5,
		0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5,
	};
	char text[128], again[GSP_KEY_BASE64_LEN + 1];
	uint8_t key[GSP_KEY_BYTES];
	gsp_keypair kp;
	int r;

	if (size >= sizeof(text))
		return 0;
	if (sodium_init() < 0)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';   /* the callers hand over NUL-terminated text */

	memcpy(key, untouched, sizeof(key));
	r = gsp_key_from_base64(text, key);
	if (r == -EINVAL) {
		if (memcmp(key, untouched, sizeof(key)) != 0)
			abort();
		return 0;
	}
	if (r != 0 || strlen(text) != GSP_KEY_BASE64_LEN)
		abort();
	gsp_key_to_base64(key, again);
	if (strcmp(again, text) != 0)
		abort();
	if (gsp_keypair_from_private(key, &kp) == 0 &&
	    memcmp(kp.priv, key, GSP_KEY_BYTES) != 0)
		abort();
	return 0;
}
