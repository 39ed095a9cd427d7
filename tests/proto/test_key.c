/*
 * Unit tests for proto/key: the strict base64 codec of keys (known
 * answers, then every way a text can fail to be the one form of a key:
 * length, padding, spare bits, alphabet, trailing bytes) and the key pairs
 * (RFC 7748's vector, generation).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "key.h"

/* Bytes 0..31 and their text. */
#define COUNT_B64 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
/* RFC 7748, section 6.1: Alice's private and public keys. */
#define ALICE_PRIV "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo="
#define ALICE_PUB "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo="

static const uint8_t alice_priv[GSP_KEY_BYTES] = {
	0x77, 0x07, 0x6d, 0x0a, 0x73, 0x18, 0xa5, 0x7d, 0x3c, 0x16, 0xc1, 0x72,
	0x51, 0xb2, 0x66, 0x45, 0xdf, 0x4c, 0x2f, 0x87, 0xeb, 0xc0, 0x99, 0x2a,
	0xb1, 0x77, 0xfb, 0xa5, 0x1d, 0xb9, 0x2c, 0x2a,
};
static const uint8_t alice_pub[GSP_KEY_BYTES] = {
	0x85, 0x20, 0xf0, 0x09, 0x89, 0x30, 0xa7, 0x54, 0x74, 0x8b, 0x7d, 0xdc,
	0xb4, 0x3e, 0xf7, 0x5a, 0x0d, 0xbf, 0x3a, 0x0d, 0x26, 0x38, 0x1a, 0xf4,
	0xeb, 0xa4, 0xa9, 0x8e, 0xaa, 0x9b, 0x4e, 0x6a,
};

/* Decodes text that must be refused: -EINVAL, the output untouched. */
static void refused(const char *text)
{
	uint8_t key[GSP_KEY_BYTES];

	memset(key, 0xA5, sizeof(key));
	ck_assert_msg(gsp_key_from_base64(text, key) == -EINVAL,
		      "accepted '%s'", text ? text : "(null)");
	for (size_t i = 0; i < sizeof(key); i++)
		ck_assert_uint_eq(key[i], 0xA5);
}

START_TEST(test_known_answers)
{
	uint8_t key[GSP_KEY_BYTES], count[GSP_KEY_BYTES];
	char text[GSP_KEY_BASE64_LEN + 1];

	for (int i = 0; i < GSP_KEY_BYTES; i++)
		count[i] = (uint8_t)i;
	gsp_key_to_base64(count, text);
	ck_assert_str_eq(text, COUNT_B64);
	ck_assert_int_eq(gsp_key_from_base64(COUNT_B64, key), 0);
	ck_assert_mem_eq(key, count, GSP_KEY_BYTES);

	ck_assert_int_eq(gsp_key_from_base64(ALICE_PRIV, key), 0);
	ck_assert_mem_eq(key, alice_priv, GSP_KEY_BYTES);
	gsp_key_to_base64(alice_pub, text);
	ck_assert_str_eq(text, ALICE_PUB);
}
END_TEST

START_TEST(test_round_trip)
{
	uint8_t key[GSP_KEY_BYTES], back[GSP_KEY_BYTES];
	char text[GSP_KEY_BASE64_LEN + 1];

	for (int n = 0; n < 256; n++) {
		if (n < 2)
			memset(key, n ? 0xff : 0, sizeof(key));
		else
			randombytes_buf(key, sizeof(key));
		gsp_key_to_base64(key, text);
		ck_assert_uint_eq(strlen(text), GSP_KEY_BASE64_LEN);
		ck_assert_int_eq(gsp_key_from_base64(text, back), 0);
		ck_assert_mem_eq(key, back, GSP_KEY_BYTES);
	}
}
END_TEST

START_TEST(test_wrong_length)
{
	refused(NULL);
	refused("");
	refused("AAAA");
	/* One character short, without and with its padding. */
	refused("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo");
	refused("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LC=");
	/* One character too many, padded or not. */
	refused("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCoAA");
	refused("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCoA=");
	/* 48 bytes: a longer key is not cut to 32. */
	refused("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCodwdtCnMYpX08FsFyUbJmRd9M");
}
END_TEST

START_TEST(test_bad_padding)
{
	/* All 44 characters long: no '=', a character where '=' belongs,
	 * '=' in the middle, two '=' at the end, nothing but '='. */
	refused("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCoA");
	refused("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo.");
	refused("dwdtCnMYpX08FsFyUbJm=d9ML4frwJkqsXf7pR25LCo=");
	refused("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LC==");
	refused("============================================");
	/* The last character carries two spare bits that must be zero:
	 * 'o' is canonical, 'p', 'q' and 'r' decode to the same bytes. */
	refused("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCp=");
	refused("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCq=");
	refused("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCr=");
}
END_TEST

START_TEST(test_alphabet)
{
	static const char *const bad[] = {
		/* the URL-safe alphabet's '-' and '_' */
		"dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LC-=",
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8_",
		"_wdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=",
		/* punctuation, space, a line break, a tab, a byte above 0x7f */
		"!AECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
		"dwdtCnMYpX08FsFyUbJm.d9ML4frwJkqsXf7pR25LCo=",
		"dwdtCnMYpX08FsFy bJmRd9ML4frwJkqsXf7pR25LCo=",
		"dwdtCnMYpX08FsFy\nbJmRd9ML4frwJkqsXf7pR25LCo=",
		"dwdtCnMYpX08FsFy\tbJmRd9ML4frwJkqsXf7pR25LCo=",
		"dwdtCnMYpX08FsFy\xc3\xa9JmRd9ML4frwJkqsXf7pR25LCo=",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused(bad[i]);
}
END_TEST

START_TEST(test_trailing_and_leading)
{
	refused(ALICE_PRIV " ");
	refused(ALICE_PRIV "\n");
	refused(ALICE_PRIV "\r\n");
	refused(ALICE_PRIV "AAAA");
	refused(ALICE_PRIV "=");
	refused(" " ALICE_PRIV);
	refused("\n" ALICE_PRIV);
}
END_TEST

START_TEST(test_embedded_nul)
{
	char text[GSP_KEY_BASE64_LEN + 1];

	memcpy(text, ALICE_PRIV, sizeof(text));
	text[20] = '\0';
	refused(text);
}
END_TEST

START_TEST(test_keypair_from_private)
{
	gsp_keypair kp, again;

	ck_assert_int_eq(gsp_keypair_from_private(alice_priv, &kp), 0);
	ck_assert_mem_eq(kp.priv, alice_priv, GSP_KEY_BYTES);
	ck_assert_mem_eq(kp.pub, alice_pub, GSP_KEY_BYTES);

	gsp_keypair_generate(&kp);
	ck_assert_int_eq(gsp_keypair_from_private(kp.priv, &again), 0);
	ck_assert_mem_eq(again.pub, kp.pub, GSP_KEY_BYTES);
	gsp_keypair_generate(&again);
	ck_assert(memcmp(again.priv, kp.priv, GSP_KEY_BYTES) != 0);
}
END_TEST

static Suite *key_suite(void)
{
	Suite *s = suite_create("proto-key");
	TCase *tc = tcase_create("base64");

	tcase_add_test(tc, test_known_answers);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_wrong_length);
	tcase_add_test(tc, test_bad_padding);
	tcase_add_test(tc, test_alphabet);
	tcase_add_test(tc, test_trailing_and_leading);
	tcase_add_test(tc, test_embedded_nul);
	suite_add_tcase(s, tc);

	tc = tcase_create("keypair");
	tcase_add_test(tc, test_keypair_from_private);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (sodium_init() < 0)
		return EXIT_FAILURE;
	sr = srunner_create(key_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
