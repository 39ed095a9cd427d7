/*
 * libFuzzer harness for the revocation list (proto/revoke.c): the input
 * read as a binary list and as its text.  The decoder either refuses with
 * a documented code or accepts a list that encodes back to exactly the
 * input, holds every key it lists and no key between two of them, and
 * whose signature check gives a documented verdict.  Whatever the count
 * field says, the decoder allocates no more than the input holds (with
 * AddressSanitizer's allocation limit, -rss_limit_mb, as the backstop).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "revoke.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int known(int r)
{
	return r <= GSP_ADM_ETRUNCATED && r >= GSP_ADM_ENOCERT;
}

static void check(gsp_revoke *l, const uint8_t *bytes, size_t size)
{
	uint8_t ca_pk[GSP_SIGN_PUBLIC_BYTES], sk[GSP_SIGN_SECRET_BYTES];
	uint8_t seed[GSP_SIGN_SEED_BYTES], probe[GSP_KEY_BYTES];
	uint8_t *again;
	size_t n;
	int r;

	if (bytes) {
		if (size != GSP_REVOKE_BYTES(l->count))
			abort();
		again = malloc(size);
		if (!again || gsp_revoke_encode(l, again, size, &n) != 0 ||
		    n != size || memcmp(again, bytes, size) != 0)
			abort();
		free(again);
	}
	for (uint32_t i = 0; i < l->count; i++) {
		if (!gsp_revoke_contains(l, l->keys[i]))
			abort();
		/* The key one above keys[i] (if no carry): listed only if
		 * it is keys[i + 1]. */
		memcpy(probe, l->keys[i], GSP_KEY_BYTES);
		if (probe[GSP_KEY_BYTES - 1] != 0xff) {
			probe[GSP_KEY_BYTES - 1]++;
			bool next = i + 1 < l->count &&
				    !memcmp(probe, l->keys[i + 1], GSP_KEY_BYTES);
			if (gsp_revoke_contains(l, probe) != next)
				abort();
		}
	}
	memset(seed, 0xC1, sizeof(seed));
	gsp_sign_keypair_from_seed(seed, ca_pk, sk);
	r = gsp_revoke_verify(l, ca_pk);
	if (r != 0 && r != -EKEYREJECTED)
		abort();
	gsp_revoke_clear(l);
	if (l->keys || l->count)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gsp_revoke l;
	uint8_t *copy;
	int r;

	if (sodium_init() < 0)
		abort();
	copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);

	r = gsp_revoke_decode(copy, size, &l);
	if (r == 0)
		check(&l, copy, size);
	else if (!known(r))
		abort();
	r = gsp_revoke_from_text((const char *)copy, size, &l);
	if (r == 0)
		check(&l, NULL, 0);
	else if (!known(r))
		abort();
	free(copy);
	return 0;
}
