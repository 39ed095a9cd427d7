/*
 * Unit tests for proto/member: the signing key's derivation, round trips
 * (the longest record with its certificate within 1 KiB), every
 * truncation and each malformation with its own code, every bit flip of
 * a signed record refused by verify, verification with and without an
 * authority, the "newer wins" order, and 10,000 decoded records in
 * 16 MiB.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "admit_fixture.h"

static uint8_t buf[GSP_MEMBER_MAX + 8];

/* Node 1's record: incarnation 5, alive, 127.0.0.1:7000, [::1]:7001,
 * 10.1.2.3:65535, [2001:db8::1]:1, with its certificate when cert. */
static gsp_member record(bool cert, const char *name)
{
	static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	static const uint8_t loop6[16] = { [15] = 1 };
	ca c = ca_of(0xC1);
	node n = node_of(1);
	gsp_member m;

	memset(&m, 0, sizeof(m));
	m.version = GSP_MEMBER_VERSION;
	memcpy(m.node_key, n.kp.pub, GSP_KEY_BYTES);
	m.incarnation = 5;
	m.status = GSP_MEMBER_ALIVE;
	m.n_endpoints = 4;
	m.endpoints[0] = (gsp_member_endpoint){ 4, { 127, 0, 0, 1 }, 7000 };
	m.endpoints[1].family = 6;
	memcpy(m.endpoints[1].addr, loop6, 16);
	m.endpoints[1].port = 7001;
	m.endpoints[2] = (gsp_member_endpoint){ 4, { 10, 1, 2, 3 }, 65535 };
	m.endpoints[3].family = 6;
	memcpy(m.endpoints[3].addr, v6, 16);
	m.endpoints[3].port = 1;
	if (cert) {
		m.has_cert = true;
		m.cert = cert_of(&n, name, &c);
	}
	ck_assert_int_eq(gsp_member_sign(&m, n.sign_sk), 0);
	return m;
}

static size_t encoded(const gsp_member *m)
{
	size_t len;

	ck_assert_int_eq(gsp_member_encode(m, buf, sizeof(buf), &len), 0);
	return len;
}

static void refused(size_t len, int code)
{
	gsp_member out, untouched;

	memset(&out, 0xA5, sizeof(out));
	ck_assert_int_eq(gsp_member_decode(buf, len, &out), code);
	memset(&untouched, 0xA5, sizeof(untouched));
	ck_assert(memcmp(&out, &untouched, sizeof(out)) == 0);
}

START_TEST(test_signing_key_derivation)
{
	node a = node_of(1), again = node_of(1), b = node_of(2);
	uint8_t seed[GSP_SIGN_SEED_BYTES], pk[GSP_SIGN_PUBLIC_BYTES];
	uint8_t sk[GSP_SIGN_SECRET_BYTES];

	ck_assert_mem_eq(a.sign_pk, again.sign_pk, GSP_SIGN_PUBLIC_BYTES);
	ck_assert_mem_eq(a.sign_sk, again.sign_sk, GSP_SIGN_SECRET_BYTES);
	ck_assert(memcmp(a.sign_pk, b.sign_pk, GSP_SIGN_PUBLIC_BYTES) != 0);
	/* The documented derivation, step by step. */
	crypto_generichash(seed, sizeof(seed), a.kp.priv, GSP_KEY_BYTES,
			   (const uint8_t *)"gossipd member signing key v1", 29);
	crypto_sign_seed_keypair(pk, sk, seed);
	ck_assert_mem_eq(pk, a.sign_pk, GSP_SIGN_PUBLIC_BYTES);
	/* Not the private key used as a seed directly. */
	crypto_sign_seed_keypair(pk, sk, a.kp.priv);
	ck_assert(memcmp(pk, a.sign_pk, GSP_SIGN_PUBLIC_BYTES) != 0);
}
END_TEST

START_TEST(test_round_trip_within_1k)
{
	char name[GSP_CERT_NAME_MAX + 1];

	memset(name, 'x', GSP_CERT_NAME_MAX);
	name[GSP_CERT_NAME_MAX] = '\0';
	for (int cert = 0; cert < 2; cert++) {
		gsp_member m = record(cert, name), back;
		uint8_t again[GSP_MEMBER_MAX];
		size_t len = encoded(&m), len2;

		/* The longest record: four IPv6-sized endpoints would be
		 * longer still; GSP_MEMBER_MAX covers them. */
		ck_assert_uint_le(len, GSP_MEMBER_MAX);
		ck_assert_uint_le(GSP_MEMBER_MAX, 1024);
		ck_assert_int_eq(gsp_member_decode(buf, len, &back), 0);
		ck_assert_mem_eq(&back, &m, sizeof(m));
		ck_assert_int_eq(gsp_member_encode(&back, again, sizeof(again), &len2), 0);
		ck_assert_uint_eq(len2, len);
		ck_assert_mem_eq(again, buf, len);
		ck_assert_int_eq(gsp_member_verify(&back, NULL, 0, NULL), 0);
		ck_assert_int_eq(gsp_member_encode(&m, again, len - 1, &len2), -ENOBUFS);
	}
}
END_TEST

START_TEST(test_every_truncation_refused)
{
	gsp_member m = record(true, "n1");
	size_t len = encoded(&m);

	for (size_t n = 0; n < len; n++) {
		gsp_member out;
		int r = gsp_member_decode(buf, n, &out);
		/* Cut inside the certificate, its length field disagrees. */
		ck_assert_msg(r == GSP_ADM_ETRUNCATED, "cut at %zu: %d", n, r);
	}
	buf[len] = 0;
	refused(len + 1, GSP_ADM_ETRAILING);
}
END_TEST

/* Offsets in the sample record (4 endpoints: 7 + 19 + 7 + 19 bytes). */
#define STATUS_AT (1 + GSP_KEY_BYTES + GSP_SIGN_PUBLIC_BYTES + 8)
#define NEP_AT (STATUS_AT + 1)
#define EP0_AT (NEP_AT + 1)
#define CERTLEN_AT (EP0_AT + 7 + 19 + 7 + 19)

START_TEST(test_each_malformation_has_its_code)
{
	gsp_member m = record(true, "n1"), other_keys;
	size_t len = encoded(&m);
	node n2 = node_of(2), n3 = node_of(3);
	ca c = ca_of(0xC1);

	buf[0] = 0;
	refused(len, GSP_ADM_EVERSION);
	len = encoded(&m);
	buf[STATUS_AT] = GSP_MEMBER_LEFT + 1;
	refused(len, GSP_ADM_ESTATUS);
	len = encoded(&m);
	buf[NEP_AT] = GSP_MEMBER_ENDPOINTS_MAX + 1;
	refused(len, GSP_ADM_ETOOMANY);
	len = encoded(&m);
	buf[EP0_AT] = 5;
	refused(len, GSP_ADM_EFAMILY);
	len = encoded(&m);
	buf[EP0_AT + 5] = buf[EP0_AT + 6] = 0;
	refused(len, GSP_ADM_EPORT);
	len = encoded(&m);
	buf[CERTLEN_AT] = 10;
	buf[CERTLEN_AT + 1] = 0;
	refused(len, GSP_ADM_ECERTLEN);
	len = encoded(&m);
	buf[CERTLEN_AT] = (uint8_t)(buf[CERTLEN_AT] + 1);   /* one byte too many */
	refused(len, GSP_ADM_ECERTLEN);
	/* The certificate's own malformations come through. */
	len = encoded(&m);
	buf[CERTLEN_AT + 2] = 9;
	refused(len, GSP_ADM_EVERSION);
	/* A certificate of another node. */
	other_keys = m;
	other_keys.cert = cert_of(&n2, "n2", &c);
	ck_assert_int_eq(gsp_member_check(&other_keys), GSP_ADM_ECERTKEY);
	ck_assert_int_eq(gsp_member_sign(&other_keys, n2.sign_sk), -EINVAL);
	ck_assert_int_eq(gsp_member_encode(&other_keys, buf, sizeof(buf), &len), -EINVAL);
	/* Signed by a key other than the certificate's. */
	ck_assert_int_eq(gsp_member_sign(&m, n3.sign_sk), -EINVAL);
	/* An IPv4 endpoint with bytes beyond its four. */
	m = record(false, NULL);
	m.endpoints[0].addr[4] = 1;
	ck_assert_int_eq(gsp_member_check(&m), GSP_ADM_EFAMILY);
	m.endpoints[0].addr[4] = 0;
	m.n_endpoints = 0;
	ck_assert_int_eq(gsp_member_check(&m), 0);
	ck_assert_uint_eq(encoded(&m), GSP_MEMBER_FIXED);
}
END_TEST

START_TEST(test_every_bit_flip_refused)
{
	ca c = ca_of(0xC1);
	gsp_member m = record(true, "n1"), back;
	size_t len = encoded(&m), decoded = 0;

	for (size_t bit = 0; bit < len * 8; bit += flip_stride()) {
		buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
		int r = gsp_member_decode(buf, len, &back);
		if (r == 0) {
			decoded++;
			/* The node's signature, or the authority's. */
			ck_assert_msg(gsp_member_verify(&back, c.pk, T_NOT_BEFORE, NULL) < 0,
				      "bit %zu accepted", bit);
		} else {
			ck_assert_msg(adm_code_known(r), "bit %zu: %d", bit, r);
		}
		buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
	}
	ck_assert_uint_gt(decoded, len * 8 / flip_stride() / 2);
	ck_assert_int_eq(gsp_member_decode(buf, len, &back), 0);
	ck_assert_int_eq(gsp_member_verify(&back, c.pk, T_NOT_BEFORE, NULL), 0);
}
END_TEST

START_TEST(test_verify_with_an_authority)
{
	ca c = ca_of(0xC1), other = ca_of(0xC2);
	gsp_member with = record(true, "n1"), without = record(false, NULL);
	uint8_t keys[1][GSP_KEY_BYTES];
	gsp_revoke list = { .version = GSP_REVOKE_VERSION, .serial = 1,
			    .count = 1, .keys = keys };

	/* Allowlist mode: the node's signature is enough. */
	ck_assert_int_eq(gsp_member_verify(&without, NULL, 0, NULL), 0);
	ck_assert_int_eq(gsp_member_verify(&without, c.pk, T_NOT_BEFORE, NULL),
			 GSP_ADM_ENOCERT);
	ck_assert_int_eq(gsp_member_verify(&with, c.pk, T_NOT_BEFORE, NULL), 0);
	ck_assert_int_eq(gsp_member_verify(&with, other.pk, T_NOT_BEFORE, NULL),
			 -EKEYREJECTED);
	ck_assert_int_eq(gsp_member_verify(&with, c.pk, T_NOT_AFTER, NULL),
			 -EKEYEXPIRED);
	ck_assert_int_eq(gsp_member_verify(&with, c.pk, T_NOT_BEFORE - 1, NULL),
			 GSP_ADM_ENOTYET);
	memcpy(keys[0], with.node_key, GSP_KEY_BYTES);
	ck_assert_int_eq(gsp_revoke_sign(&list, c.sk), 0);
	ck_assert_int_eq(gsp_member_verify(&with, c.pk, T_NOT_BEFORE, &list),
			 -EKEYREVOKED);
	/* A record changed after signing. */
	with.incarnation++;
	ck_assert_int_eq(gsp_member_verify(&with, NULL, 0, NULL), -EKEYREJECTED);
}
END_TEST

START_TEST(test_newer_wins_order)
{
	/* Rows in ascending order: each row beats every row above it. */
	static const struct { uint64_t inc; uint8_t status; } order[] = {
		{ 0, GSP_MEMBER_ALIVE }, { 0, GSP_MEMBER_SUSPECT },
		{ 0, GSP_MEMBER_DEAD }, { 0, GSP_MEMBER_LEFT },
		{ 1, GSP_MEMBER_ALIVE }, { 1, GSP_MEMBER_SUSPECT },
		{ 1, GSP_MEMBER_DEAD }, { 1, GSP_MEMBER_LEFT },
		{ 7, GSP_MEMBER_SUSPECT }, { 7, GSP_MEMBER_LEFT },
		{ UINT64_MAX, GSP_MEMBER_ALIVE }, { UINT64_MAX, GSP_MEMBER_LEFT },
	};
	const size_t n = sizeof(order) / sizeof(order[0]);
	gsp_member a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			a.incarnation = order[i].inc;
			a.status = order[i].status;
			b.incarnation = order[j].inc;
			b.status = order[j].status;
			int want = i > j ? 1 : i < j ? -1 : 0;
			ck_assert_msg(gsp_member_newer(&a, &b) == want,
				      "rows %zu vs %zu", i, j);
		}
	ck_assert_str_eq(gsp_member_status_name(GSP_MEMBER_SUSPECT), "suspect");
	ck_assert_ptr_null(gsp_member_status_name(4));
}
END_TEST

START_TEST(test_10000_members_fit_16_mib)
{
	const size_t n = 10000;
	char name[GSP_CERT_NAME_MAX + 1];
	gsp_member m, *table;
	size_t len;

	/* The decoded form is fixed-size and holds no pointers: a table of
	 * n records is n * sizeof, with the longest record in every slot. */
	memset(name, 'x', GSP_CERT_NAME_MAX);
	name[GSP_CERT_NAME_MAX] = '\0';
	m = record(true, name);
	len = encoded(&m);
	ck_assert_uint_le(n * sizeof(gsp_member), 16u << 20);
	table = malloc(n * sizeof(gsp_member));
	ck_assert_ptr_nonnull(table);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(gsp_member_decode(buf, len, &table[i]), 0);
	ck_assert_mem_eq(&table[n - 1], &m, sizeof(m));
	free(table);
}
END_TEST

static Suite *member_suite(void)
{
	Suite *s = suite_create("proto-member");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, test_signing_key_derivation);
	tcase_add_test(tc, test_round_trip_within_1k);
	tcase_add_test(tc, test_every_truncation_refused);
	tcase_add_test(tc, test_each_malformation_has_its_code);
	tcase_add_test(tc, test_10000_members_fit_16_mib);
	suite_add_tcase(s, tc);

	tc = tcase_create("verify");
	tcase_add_test(tc, test_every_bit_flip_refused);
	tcase_add_test(tc, test_verify_with_an_authority);
	tcase_add_test(tc, test_newer_wins_order);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (sodium_init() < 0)
		return EXIT_FAILURE;
	sr = srunner_create(member_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
