/*
 * Unit tests for proto/revoke: round trips up to the cap, lookup, every
 * truncation, a declared count above the cap or beyond the input refused
 * before any allocation (malloc is wrapped and counted: this executable
 * links with -Wl,--wrap=malloc), keys out of order or twice refused, and
 * every bit flip of a signed list refused by verify.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "admit_fixture.h"

void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);

static size_t mallocs, malloc_bytes, decode_bytes;

void *__wrap_malloc(size_t size)
{
	mallocs++;
	malloc_bytes += size;
	return __real_malloc(size);
}

/* gsp_revoke_decode(), and the allocations it made in *ret_mallocs and
 * their bytes in decode_bytes (Check's assertions allocate too: count
 * around the call only). */
static int decode(const uint8_t *buf, size_t len, gsp_revoke *ret,
		  size_t *ret_mallocs)
{
	int r;

	mallocs = malloc_bytes = 0;
	r = gsp_revoke_decode(buf, len, ret);
	*ret_mallocs = mallocs;
	decode_bytes = malloc_bytes;
	return r;
}

/* count ascending keys: key i is i as a big-endian u32, then 0x5A. */
static uint8_t (*ascending(uint32_t count))[GSP_KEY_BYTES]
{
	uint8_t (*keys)[GSP_KEY_BYTES] = calloc(count ? count : 1, GSP_KEY_BYTES);

	ck_assert_ptr_nonnull(keys);
	for (uint32_t i = 0; i < count; i++) {
		memset(keys[i], 0x5A, GSP_KEY_BYTES);
		keys[i][0] = (uint8_t)(i >> 24);
		keys[i][1] = (uint8_t)(i >> 16);
		keys[i][2] = (uint8_t)(i >> 8);
		keys[i][3] = (uint8_t)i;
	}
	return keys;
}

/* A signed list of count keys, encoded into a new buffer. */
static uint8_t *signed_list(uint32_t count, const ca *c, gsp_revoke *ret,
			    size_t *ret_len)
{
	gsp_revoke l = { .version = GSP_REVOKE_VERSION, .serial = 7,
			 .count = count, .keys = ascending(count) };
	uint8_t *buf = malloc(GSP_REVOKE_BYTES(count) + 1);

	ck_assert_int_eq(gsp_revoke_sign(&l, c->sk), 0);
	ck_assert_int_eq(gsp_revoke_encode(&l, buf, GSP_REVOKE_BYTES(count), ret_len), 0);
	ck_assert_uint_eq(*ret_len, GSP_REVOKE_BYTES(count));
	*ret = l;
	return buf;
}

START_TEST(test_round_trip_up_to_the_cap)
{
	static const uint32_t counts[] = { 0, 1, 3, GSP_REVOKE_MAX };
	ca c = ca_of(0xC1);

	for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		gsp_revoke l, back;
		size_t len, len2;
		uint8_t *buf = signed_list(counts[k], &c, &l, &len), *again;
		char *text;

		ck_assert_int_eq(gsp_revoke_decode(buf, len, &back), 0);
		ck_assert_uint_eq(back.count, counts[k]);
		ck_assert_uint_eq(back.serial, 7);
		ck_assert_int_eq(gsp_revoke_verify(&back, c.pk), 0);
		again = malloc(len);
		ck_assert_int_eq(gsp_revoke_encode(&back, again, len, &len2), 0);
		ck_assert_mem_eq(again, buf, len);
		for (uint32_t i = 0; i < counts[k]; i++)
			ck_assert(gsp_revoke_contains(&back, l.keys[i]));
		/* Keys between and around the listed ones are not in it. */
		uint8_t probe[GSP_KEY_BYTES];
		memset(probe, 0x5B, sizeof(probe));
		ck_assert(!gsp_revoke_contains(&back, probe));
		memset(probe, 0x00, sizeof(probe));
		ck_assert(!gsp_revoke_contains(&back, probe));
		text = malloc(GSP_REVOKE_TEXT_MAX + 1);
		ck_assert_int_eq(gsp_revoke_to_text(&back, text, GSP_REVOKE_TEXT_MAX + 1), 0);
		gsp_revoke_clear(&back);
		ck_assert_int_eq(gsp_revoke_from_text(text, strlen(text), &back), 0);
		ck_assert_int_eq(gsp_revoke_verify(&back, c.pk), 0);
		gsp_revoke_clear(&back);
		gsp_revoke_clear(&back);   /* a cleared list clears again */
		free(text);
		free(again);
		free(buf);
		free(l.keys);
	}
	gsp_revoke_clear(NULL);
}
END_TEST

START_TEST(test_every_truncation_refused)
{
	ca c = ca_of(0xC1);
	gsp_revoke l, back;
	size_t len;
	uint8_t *buf = signed_list(3, &c, &l, &len);

	for (size_t n = 0; n < len; n++) {
		size_t allocs;
		ck_assert_int_eq(decode(buf, n, &back, &allocs), GSP_ADM_ETRUNCATED);
		ck_assert_uint_eq(allocs, 0);
	}
	buf[len] = 0;
	ck_assert_int_eq(gsp_revoke_decode(buf, len + 1, &back), GSP_ADM_ETRAILING);
	buf[0] = 2;
	ck_assert_int_eq(gsp_revoke_decode(buf, len, &back), GSP_ADM_EVERSION);
	free(buf);
	free(l.keys);
}
END_TEST

/* The count field sits after version, authority and serial. */
#define COUNT_AT (1 + GSP_SIGN_PUBLIC_BYTES + 8)

START_TEST(test_declared_count_checked_before_allocating)
{
	ca c = ca_of(0xC1);
	gsp_revoke l, back;
	size_t len, allocs;
	uint8_t *buf = signed_list(0, &c, &l, &len);
	uint8_t *big = calloc(1, GSP_REVOKE_BYTES(GSP_REVOKE_MAX + 1));

	/* Above the cap, with all the bytes that count would need. */
	memcpy(big, buf, COUNT_AT);
	big[COUNT_AT] = (GSP_REVOKE_MAX + 1) & 0xff;
	big[COUNT_AT + 1] = (GSP_REVOKE_MAX + 1) >> 8;
	ck_assert_int_eq(decode(big, GSP_REVOKE_BYTES(GSP_REVOKE_MAX + 1), &back,
				&allocs), GSP_ADM_ETOOMANY);
	ck_assert_uint_eq(allocs, 0);
	/* 0xffffffff, in a short input. */
	memset(buf + COUNT_AT, 0xff, 4);
	ck_assert_int_eq(decode(buf, len, &back, &allocs), GSP_ADM_ETOOMANY);
	ck_assert_uint_eq(allocs, 0);
	/* The cap, in an input one key short. */
	big[COUNT_AT] = GSP_REVOKE_MAX & 0xff;
	big[COUNT_AT + 1] = GSP_REVOKE_MAX >> 8;
	ck_assert_int_eq(decode(big, GSP_REVOKE_BYTES(GSP_REVOKE_MAX) - 1, &back,
				&allocs), GSP_ADM_ETRUNCATED);
	ck_assert_uint_eq(allocs, 0);
	/* With its bytes (and keys in order) it is allocated, exactly. */
	free(l.keys);
	free(buf);
	buf = signed_list(GSP_REVOKE_MAX, &c, &l, &len);
	ck_assert_int_eq(decode(buf, len, &back, &allocs), 0);
	ck_assert_uint_eq(allocs, 1);
	ck_assert_uint_eq(decode_bytes, (size_t)GSP_REVOKE_MAX * GSP_KEY_BYTES);
	gsp_revoke_clear(&back);
	free(big);
	free(buf);
	free(l.keys);
}
END_TEST

START_TEST(test_unsorted_and_duplicates_refused)
{
	ca c = ca_of(0xC1);
	gsp_revoke l, back;
	size_t len, len2, allocs;
	uint8_t *buf = signed_list(3, &c, &l, &len);
	uint8_t *k0 = buf + COUNT_AT + 4, *k1 = k0 + GSP_KEY_BYTES;
	uint8_t tmp[GSP_KEY_BYTES];

	memcpy(tmp, k0, GSP_KEY_BYTES);
	memcpy(k0, k1, GSP_KEY_BYTES);
	memcpy(k1, tmp, GSP_KEY_BYTES);
	ck_assert_int_eq(decode(buf, len, &back, &allocs), GSP_ADM_EUNSORTED);
	ck_assert_uint_eq(allocs, 0);
	memcpy(k0, k1, GSP_KEY_BYTES);
	ck_assert_int_eq(decode(buf, len, &back, &allocs), GSP_ADM_EDUPLICATE);
	ck_assert_uint_eq(allocs, 0);
	/* The encoder and the signer refuse them too. */
	memcpy(l.keys[2], l.keys[1], GSP_KEY_BYTES);
	ck_assert_int_eq(gsp_revoke_check(&l), GSP_ADM_EDUPLICATE);
	ck_assert_int_eq(gsp_revoke_encode(&l, buf, len, &len2), -EINVAL);
	ck_assert_int_eq(gsp_revoke_sign(&l, c.sk), -EINVAL);
	l.count = GSP_REVOKE_MAX + 1;
	ck_assert_int_eq(gsp_revoke_check(&l), GSP_ADM_ETOOMANY);
	free(buf);
	free(l.keys);
}
END_TEST

START_TEST(test_every_bit_flip_refused)
{
	ca c = ca_of(0xC1), other = ca_of(0xC2);
	gsp_revoke l, back;
	size_t len, decoded = 0;
	uint8_t *buf = signed_list(2, &c, &l, &len);

	for (size_t bit = 0; bit < len * 8; bit += flip_stride()) {
		buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
		int r = gsp_revoke_decode(buf, len, &back);
		if (r == 0) {
			decoded++;
			ck_assert_msg(gsp_revoke_verify(&back, c.pk) == -EKEYREJECTED,
				      "bit %zu accepted", bit);
			gsp_revoke_clear(&back);
		} else {
			ck_assert_msg(adm_code_known(r), "bit %zu: %d", bit, r);
		}
		buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
	}
	ck_assert_uint_gt(decoded, len * 8 / flip_stride() * 3 / 4);
	ck_assert_int_eq(gsp_revoke_decode(buf, len, &back), 0);
	ck_assert_int_eq(gsp_revoke_verify(&back, c.pk), 0);
	ck_assert_int_eq(gsp_revoke_verify(&back, other.pk), -EKEYREJECTED);
	gsp_revoke_clear(&back);
	free(buf);
	free(l.keys);
}
END_TEST

static Suite *revoke_suite(void)
{
	Suite *s = suite_create("proto-revoke");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, test_round_trip_up_to_the_cap);
	tcase_add_test(tc, test_every_truncation_refused);
	tcase_add_test(tc, test_declared_count_checked_before_allocating);
	tcase_add_test(tc, test_unsorted_and_duplicates_refused);
	tcase_add_test(tc, test_every_bit_flip_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (sodium_init() < 0)
		return EXIT_FAILURE;
	sr = srunner_create(revoke_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
