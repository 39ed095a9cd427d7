/*
 * libFuzzer harness for member records (proto/member.c, with the
 * certificate decoder it embeds): the decoder either refuses with a
 * documented code, leaving its output untouched, or accepts a record that
 * encodes back to exactly the input, that gsp_member_check() accepts,
 * whose verification with and without an authority gives a documented
 * verdict, and that the "newer wins" order ranks equal to itself and
 * below its next incarnation.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "member.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int known(int r)
{
	return r <= GSP_ADM_ETRUNCATED && r >= GSP_ADM_ENOCERT;
}

static int verdict(int r)
{
	return r == 0 || r == -EKEYREJECTED || r == -EKEYEXPIRED ||
	       r == GSP_ADM_ENOTYET || r == GSP_ADM_ENOCERT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t ca_pk[GSP_SIGN_PUBLIC_BYTES], sk[GSP_SIGN_SECRET_BYTES];
	uint8_t seed[GSP_SIGN_SEED_BYTES], again[GSP_MEMBER_MAX], *copy;
	gsp_member m, untouched, next;
	size_t n;
	int r;

	if (sodium_init() < 0)
		abort();
	copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);

	memset(&m, 0xA5, sizeof(m));
	memset(&untouched, 0xA5, sizeof(untouched));
	r = gsp_member_decode(copy, size, &m);
	if (r != 0) {
		if (!known(r) || memcmp(&m, &untouched, sizeof(m)) != 0)
			abort();
		free(copy);
		return 0;
	}
	if (size > GSP_MEMBER_MAX || gsp_member_check(&m) != 0 ||
	    gsp_member_encode(&m, again, sizeof(again), &n) != 0 ||
	    n != size || memcmp(again, copy, size) != 0)
		abort();
	memset(seed, 0xC1, sizeof(seed));
	gsp_sign_keypair_from_seed(seed, ca_pk, sk);
	if (!verdict(gsp_member_verify(&m, NULL, 0, NULL)) ||
	    !verdict(gsp_member_verify(&m, ca_pk, m.cert.not_before, NULL)))
		abort();
	next = m;
	next.incarnation++;
	if (gsp_member_newer(&m, &m) != 0 ||
	    (m.incarnation != UINT64_MAX && gsp_member_newer(&next, &m) <= 0))
		abort();
	free(copy);
	return 0;
}
