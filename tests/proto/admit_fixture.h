/* Fixed keys and a sample certificate for the admission format tests
 * (test_cert.c, test_revoke.c, test_member.c).  Test keys only: derived
 * from constant seeds, they protect nothing.  Header-only. */
#ifndef GSP_TEST_ADMIT_FIXTURE_H
#define GSP_TEST_ADMIT_FIXTURE_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cert.h"
#include "member.h"

#define T_NOT_BEFORE 1800000000u
#define T_NOT_AFTER (T_NOT_BEFORE + 86400u)

typedef struct ca {
	uint8_t pk[GSP_SIGN_PUBLIC_BYTES];
	uint8_t sk[GSP_SIGN_SECRET_BYTES];
} ca;

typedef struct node {
	gsp_keypair kp;
	uint8_t sign_pk[GSP_SIGN_PUBLIC_BYTES];
	uint8_t sign_sk[GSP_SIGN_SECRET_BYTES];
} node;

/* The authority of seed byte v (all 32 seed bytes v). */
static inline ca ca_of(uint8_t v)
{
	uint8_t seed[GSP_SIGN_SEED_BYTES];
	ca c;

	memset(seed, v, sizeof(seed));
	gsp_sign_keypair_from_seed(seed, c.pk, c.sk);
	return c;
}

/* The node of private key byte v. */
static inline node node_of(uint8_t v)
{
	uint8_t priv[GSP_KEY_BYTES];
	node n;

	memset(priv, v, sizeof(priv));
	ck_assert_int_eq(gsp_keypair_from_private(priv, &n.kp), 0);
	gsp_member_signing_key(n.kp.priv, n.sign_pk, n.sign_sk);
	return n;
}

/* n's certificate named name, valid [T_NOT_BEFORE, T_NOT_AFTER), signed
 * by c. */
static inline gsp_cert cert_of(const node *n, const char *name, const ca *c)
{
	gsp_cert cert;

	memset(&cert, 0, sizeof(cert));
	cert.version = GSP_CERT_VERSION;
	memcpy(cert.node_key, n->kp.pub, GSP_KEY_BYTES);
	memcpy(cert.sign_key, n->sign_pk, GSP_SIGN_PUBLIC_BYTES);
	cert.name_len = (uint8_t)strlen(name);
	memcpy(cert.name, name, cert.name_len);
	cert.not_before = T_NOT_BEFORE;
	cert.not_after = T_NOT_AFTER;
	ck_assert_int_eq(gsp_cert_sign(&cert, c->sk), 0);
	return cert;
}

/* The stride of the bit-flip tests: every bit, or under valgrind
 * (GSP_TEST_SMALL, tests/meson.build) one bit of every byte, its
 * position turning (9 is prime to 8). */
static inline size_t flip_stride(void)
{
	return getenv("GSP_TEST_SMALL") ? 9 : 1;
}

/* Every GSP_ADM_* code: for the tests that each has its own text. */
static const int adm_codes[] = {
	GSP_ADM_ETRUNCATED, GSP_ADM_ETRAILING, GSP_ADM_EVERSION,
	GSP_ADM_ENAMELEN, GSP_ADM_ENAMECHAR, GSP_ADM_EVALIDITY,
	GSP_ADM_ETOOMANY, GSP_ADM_EUNSORTED, GSP_ADM_EDUPLICATE,
	GSP_ADM_ESTATUS, GSP_ADM_EFAMILY, GSP_ADM_EPORT, GSP_ADM_ECERTLEN,
	GSP_ADM_ECERTKEY, GSP_ADM_ETEXT, GSP_ADM_ENOTYET, GSP_ADM_ENOCERT,
};

/* Whether r is one of the decoders' documented codes. */
static inline int adm_code_known(int r)
{
	for (size_t i = 0; i < sizeof(adm_codes) / sizeof(adm_codes[0]); i++)
		if (r == adm_codes[i])
			return 1;
	return 0;
}

#endif
