/*
 * libFuzzer harness for member certificates (proto/cert.c, admit.c): the
 * input read as a binary certificate and as its text.  A decoder either
 * refuses with one of the documented codes, leaving its output untouched,
 * or accepts bytes that encode back to exactly the input; verifying what
 * it accepted against a fixed authority gives one of the documented
 * verdicts, and never 0 (the fuzzer cannot forge the test authority's
 * signature).  Bytes are copied to exact-size heap buffers so that
 * AddressSanitizer catches any over-read.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "cert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int known(int r)
{
	return r <= GSP_ADM_ETRUNCATED && r >= GSP_ADM_ENOCERT;
}

static void check(const gsp_cert *c)
{
	static uint8_t ca_pk[GSP_SIGN_PUBLIC_BYTES];
	static int ready;
	uint8_t again[GSP_CERT_MAX];
	size_t n;
	int r;

	if (!ready) {
		uint8_t seed[GSP_SIGN_SEED_BYTES], sk[GSP_SIGN_SECRET_BYTES];
		memset(seed, 0xC1, sizeof(seed));
		gsp_sign_keypair_from_seed(seed, ca_pk, sk);
		ready = 1;
	}
	if (gsp_cert_encode(c, again, sizeof(again), &n) != 0)
		abort();
	r = gsp_cert_verify(c, ca_pk, c->not_before, NULL);
	if (r != -EKEYREJECTED && r != 0)
		abort();
	/* A seed signed by the test authority verifies only unchanged. */
	if (r == 0 && gsp_cert_verify(c, ca_pk, c->not_after, NULL) != -EKEYEXPIRED)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gsp_cert c, untouched;
	uint8_t *copy, again[GSP_CERT_MAX];
	size_t n;
	int r;

	if (sodium_init() < 0)
		abort();
	copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);

	memset(&c, 0xA5, sizeof(c));
	memset(&untouched, 0xA5, sizeof(untouched));
	r = gsp_cert_decode(copy, size, &c);
	if (r == 0) {
		if (gsp_cert_encode(&c, again, sizeof(again), &n) != 0 ||
		    n != size || memcmp(again, copy, size) != 0)
			abort();
		check(&c);
	} else if (!known(r) || memcmp(&c, &untouched, sizeof(c)) != 0) {
		abort();
	}

	/* The same bytes as text. */
	r = gsp_cert_from_text((const char *)copy, size, &c);
	if (r == 0) {
		char text[GSP_CERT_TEXT_MAX + 1];
		if (gsp_cert_to_text(&c, text, sizeof(text)) != 0 ||
		    strlen(text) != size || memcmp(text, copy, size) != 0)
			abort();
		check(&c);
	} else if (!known(r)) {
		abort();
	}
	free(copy);
	return 0;
}
