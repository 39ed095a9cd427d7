/*
 * Unit tests for proto/cert (and admit.c's text and error texts): round
 * trips, every truncation and each malformation with its own code, every
 * bit flip of a signed certificate refused by verify, the wrong
 * authority, the validity interval and the revocation list.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "admit_fixture.h"

static uint8_t buf[GSP_CERT_MAX + 8];

/* The sample: node 1, "node-1.example", signed by CA 0xC1. */
static gsp_cert sample(size_t *ret_len)
{
	ca c = ca_of(0xC1);
	node n = node_of(1);
	gsp_cert cert = cert_of(&n, "node-1.example", &c);

	ck_assert_int_eq(gsp_cert_encode(&cert, buf, sizeof(buf), ret_len), 0);
	return cert;
}

/* Decodes buf[0..len), which must be refused with code; ret untouched. */
static void refused(size_t len, int code)
{
	gsp_cert out, untouched;

	memset(&out, 0xA5, sizeof(out));
	ck_assert_int_eq(gsp_cert_decode(buf, len, &out), code);
	memset(&untouched, 0xA5, sizeof(untouched));
	ck_assert(memcmp(&out, &untouched, sizeof(out)) == 0);
}

START_TEST(test_round_trip)
{
	uint8_t again[GSP_CERT_MAX];
	char text[GSP_CERT_TEXT_MAX + 1];
	size_t len, len2;
	gsp_cert cert = sample(&len), back;

	ck_assert_uint_eq(len, GSP_CERT_FIXED + strlen("node-1.example"));
	ck_assert_int_eq(gsp_cert_decode(buf, len, &back), 0);
	ck_assert_mem_eq(&back, &cert, sizeof(cert));
	ck_assert_str_eq(back.name, "node-1.example");
	ck_assert_int_eq(gsp_cert_encode(&back, again, sizeof(again), &len2), 0);
	ck_assert_uint_eq(len2, len);
	ck_assert_mem_eq(again, buf, len);

	ck_assert_int_eq(gsp_cert_to_text(&cert, text, sizeof(text)), 0);
	ck_assert_uint_eq(strlen(text), (len + 2) / 3 * 4);
	memset(&back, 0, sizeof(back));
	ck_assert_int_eq(gsp_cert_from_text(text, strlen(text), &back), 0);
	ck_assert_mem_eq(&back, &cert, sizeof(cert));
	ck_assert_int_eq(gsp_cert_to_text(&cert, text, (len + 2) / 3 * 4), -ENOBUFS);
	ck_assert_int_eq(gsp_cert_encode(&cert, again, len - 1, &len2), -ENOBUFS);
}
END_TEST

START_TEST(test_longest_name_fits_256)
{
	char name[GSP_CERT_NAME_MAX + 2];
	ca c = ca_of(0xC1);
	node n = node_of(1);
	gsp_cert cert, back;
	size_t len;

	memset(name, 'a', GSP_CERT_NAME_MAX);
	name[GSP_CERT_NAME_MAX] = '\0';
	cert = cert_of(&n, name, &c);
	ck_assert_int_eq(gsp_cert_encode(&cert, buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, GSP_CERT_MAX);
	ck_assert_uint_le(len, 256);
	ck_assert_int_eq(gsp_cert_decode(buf, len, &back), 0);
	ck_assert_int_eq(gsp_cert_verify(&back, c.pk, T_NOT_BEFORE, NULL), 0);
	/* One more is refused by the encoder and the signer. */
	cert.name_len = GSP_CERT_NAME_MAX + 1;
	ck_assert_int_eq(gsp_cert_encode(&cert, buf, sizeof(buf), &len), -EINVAL);
	ck_assert_int_eq(gsp_cert_sign(&cert, c.sk), -EINVAL);
}
END_TEST

START_TEST(test_every_truncation_refused)
{
	size_t len;

	sample(&len);
	for (size_t n = 0; n < len; n++)
		refused(n, GSP_ADM_ETRUNCATED);
	ck_assert_int_eq(gsp_cert_decode(NULL, 0, &(gsp_cert){0}), GSP_ADM_ETRUNCATED);
}
END_TEST

START_TEST(test_trailing_byte_refused)
{
	size_t len;

	sample(&len);
	buf[len] = 0;
	refused(len + 1, GSP_ADM_ETRAILING);
}
END_TEST

/* Each malformation of the sample's bytes, with its own code. */
START_TEST(test_each_malformation_has_its_code)
{
	const size_t name_at = 1 + GSP_KEY_BYTES + GSP_SIGN_PUBLIC_BYTES;
	size_t len;

	sample(&len);
	buf[0] = 2;
	refused(len, GSP_ADM_EVERSION);
	sample(&len);
	buf[name_at] = 0;
	refused(len, GSP_ADM_ENAMELEN);
	buf[name_at] = GSP_CERT_NAME_MAX + 1;
	refused(len, GSP_ADM_ENAMELEN);
	for (const char *bad = " /:@\x7f\x80\n"; *bad; bad++) {
		sample(&len);
		buf[name_at + 3] = (uint8_t)*bad;
		refused(len, GSP_ADM_ENAMECHAR);
	}
	/* not_after = not_before: the u64s after the 14-byte name. */
	sample(&len);
	memcpy(buf + name_at + 1 + 14 + 8, buf + name_at + 1 + 14, 8);
	refused(len, GSP_ADM_EVALIDITY);
	/* Every code has its own sentence. */
	for (size_t i = 0; i < sizeof(adm_codes) / sizeof(adm_codes[0]); i++)
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(gsp_admit_strerror(adm_codes[i]),
					 gsp_admit_strerror(adm_codes[j]));
	ck_assert_str_eq(gsp_admit_strerror(-ENOMEM), strerror(ENOMEM));
}
END_TEST

START_TEST(test_every_bit_flip_refused)
{
	ca c = ca_of(0xC1);
	size_t len, decoded = 0;
	gsp_cert back;

	sample(&len);
	for (size_t bit = 0; bit < len * 8; bit += flip_stride()) {
		buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
		int r = gsp_cert_decode(buf, len, &back);
		if (r == 0) {
			decoded++;
			ck_assert_msg(gsp_cert_verify(&back, c.pk, T_NOT_BEFORE, NULL) ==
				      -EKEYREJECTED, "bit %zu accepted", bit);
		} else {
			ck_assert_msg(adm_code_known(r), "bit %zu: %d", bit, r);
		}
		buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
	}
	/* Most flips decode (keys, times, signature): verify saw them. */
	ck_assert_uint_gt(decoded, len * 8 / flip_stride() * 3 / 4);
	ck_assert_int_eq(gsp_cert_decode(buf, len, &back), 0);
	ck_assert_int_eq(gsp_cert_verify(&back, c.pk, T_NOT_BEFORE, NULL), 0);
}
END_TEST

START_TEST(test_wrong_authority_refused)
{
	ca c = ca_of(0xC1), other = ca_of(0xC2);
	node n = node_of(1);
	gsp_cert cert = cert_of(&n, "n1", &c), forged;

	ck_assert_int_eq(gsp_cert_verify(&cert, c.pk, T_NOT_BEFORE, NULL), 0);
	ck_assert_int_eq(gsp_cert_verify(&cert, other.pk, T_NOT_BEFORE, NULL),
			 -EKEYREJECTED);
	/* Signed by another authority that names ours. */
	forged = cert_of(&n, "n1", &other);
	memcpy(forged.authority, c.pk, GSP_SIGN_PUBLIC_BYTES);
	ck_assert_int_eq(gsp_cert_verify(&forged, c.pk, T_NOT_BEFORE, NULL),
			 -EKEYREJECTED);
}
END_TEST

START_TEST(test_validity_interval)
{
	ca c = ca_of(0xC1);
	node n = node_of(1);
	gsp_cert cert = cert_of(&n, "n1", &c);

	ck_assert_int_eq(gsp_cert_verify(&cert, c.pk, 0, NULL), GSP_ADM_ENOTYET);
	ck_assert_int_eq(gsp_cert_verify(&cert, c.pk, T_NOT_BEFORE - 1, NULL),
			 GSP_ADM_ENOTYET);
	ck_assert_int_eq(gsp_cert_verify(&cert, c.pk, T_NOT_BEFORE, NULL), 0);
	ck_assert_int_eq(gsp_cert_verify(&cert, c.pk, T_NOT_AFTER - 1, NULL), 0);
	ck_assert_int_eq(gsp_cert_verify(&cert, c.pk, T_NOT_AFTER, NULL),
			 -EKEYEXPIRED);
	ck_assert_int_eq(gsp_cert_verify(&cert, c.pk, UINT64_MAX, NULL),
			 -EKEYEXPIRED);
	/* An empty interval is not signed. */
	cert.not_after = cert.not_before;
	ck_assert_int_eq(gsp_cert_sign(&cert, c.sk), -EINVAL);
}
END_TEST

START_TEST(test_revoked)
{
	ca c = ca_of(0xC1), other = ca_of(0xC2);
	node n1 = node_of(1), n2 = node_of(2);
	gsp_cert cert = cert_of(&n1, "n1", &c);
	uint8_t keys[2][GSP_KEY_BYTES];
	gsp_revoke list = { .version = GSP_REVOKE_VERSION, .serial = 1,
			    .count = 1, .keys = keys };

	memcpy(keys[0], n2.kp.pub, GSP_KEY_BYTES);
	ck_assert_int_eq(gsp_revoke_sign(&list, c.sk), 0);
	ck_assert_int_eq(gsp_cert_verify(&cert, c.pk, T_NOT_BEFORE, &list), 0);
	/* Both keys, in ascending order. */
	memcpy(keys[1], n1.kp.pub, GSP_KEY_BYTES);
	if (memcmp(keys[0], keys[1], GSP_KEY_BYTES) > 0) {
		memcpy(keys[1], keys[0], GSP_KEY_BYTES);
		memcpy(keys[0], n1.kp.pub, GSP_KEY_BYTES);
	}
	list.count = 2;
	ck_assert_int_eq(gsp_revoke_sign(&list, c.sk), 0);
	ck_assert_int_eq(gsp_cert_verify(&cert, c.pk, T_NOT_BEFORE, &list),
			 -EKEYREVOKED);
	/* A list of another authority is not this authority's word. */
	ck_assert_int_eq(gsp_revoke_sign(&list, other.sk), 0);
	ck_assert_int_eq(gsp_cert_verify(&cert, c.pk, T_NOT_BEFORE, &list), -EINVAL);
}
END_TEST

START_TEST(test_text_is_strict)
{
	char text[GSP_CERT_TEXT_MAX + 8], bad[GSP_CERT_TEXT_MAX + 8];
	size_t len, tl;
	gsp_cert cert = sample(&len), back;

	ck_assert_int_eq(gsp_cert_to_text(&cert, text, sizeof(text)), 0);
	tl = strlen(text);
	ck_assert_int_eq(gsp_cert_from_text(text, tl - 1, &back), GSP_ADM_ETEXT);
	ck_assert_int_eq(gsp_cert_from_text(text, 0, &back), GSP_ADM_ETEXT);
	memcpy(bad, text, tl);
	memcpy(bad + tl, "\n", 1);
	ck_assert_int_eq(gsp_cert_from_text(bad, tl + 1, &back), GSP_ADM_ETEXT);
	memcpy(bad + tl, "AAAA", 4);
	ck_assert_int_eq(gsp_cert_from_text(bad, tl + 4, &back), GSP_ADM_ETRAILING);
	for (const char *c = " -_.\xc3\n"; *c; c++) {
		memcpy(bad, text, tl);
		bad[7] = *c;
		ck_assert_int_eq(gsp_cert_from_text(bad, tl, &back), GSP_ADM_ETEXT);
	}
	memcpy(bad, text, tl);
	bad[7] = '\0';
	ck_assert_int_eq(gsp_cert_from_text(bad, tl, &back), GSP_ADM_ETEXT);
	/* A text far longer than any certificate, refused by its length. */
	memset(bad, 'A', sizeof(bad));
	ck_assert_int_eq(gsp_cert_from_text(bad, sizeof(bad) / 4 * 4, &back),
			 GSP_ADM_ETRAILING);
}
END_TEST

static Suite *cert_suite(void)
{
	Suite *s = suite_create("proto-cert");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_longest_name_fits_256);
	tcase_add_test(tc, test_every_truncation_refused);
	tcase_add_test(tc, test_trailing_byte_refused);
	tcase_add_test(tc, test_each_malformation_has_its_code);
	tcase_add_test(tc, test_text_is_strict);
	suite_add_tcase(s, tc);

	tc = tcase_create("verify");
	tcase_add_test(tc, test_every_bit_flip_refused);
	tcase_add_test(tc, test_wrong_authority_refused);
	tcase_add_test(tc, test_validity_interval);
	tcase_add_test(tc, test_revoked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (sodium_init() < 0)
		return EXIT_FAILURE;
	sr = srunner_create(cert_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
