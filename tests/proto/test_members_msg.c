/*
 * Unit tests for proto/members_msg (the MEMBERS peer message): round
 * trips from none to GSP_MEMBERS_PER_MSG of the longest records within
 * GSP_PROTO_CONTROL_MAX, every truncation refused, each layout rule
 * (flags, count, a record's length, trailing bytes, another type) with
 * its code, a record that does not decode refused with its own code, the
 * encoder's refusals, and an output untouched by every refusal.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "admit_fixture.h"
#include "members_msg.h"

static uint8_t buf[GSP_MEMBERS_MSG_MAX + 8];

/* Node v's longest record: four IPv6 endpoints and a certificate with a
 * 64-byte name, incarnation v. */
static gsp_member longest(uint8_t v)
{
	ca c = ca_of(0xC1);
	node n = node_of(v);
	char name[65];
	gsp_member m;

	memset(name, 'n', 64);
	name[64] = 0;
	memset(&m, 0, sizeof(m));
	m.version = GSP_MEMBER_VERSION;
	memcpy(m.node_key, n.kp.pub, GSP_KEY_BYTES);
	m.incarnation = v;
	m.status = v % 4;
	m.n_endpoints = GSP_MEMBER_ENDPOINTS_MAX;
	for (int i = 0; i < GSP_MEMBER_ENDPOINTS_MAX; i++) {
		m.endpoints[i].family = 6;
		m.endpoints[i].addr[15] = (uint8_t)(i + 1);
		m.endpoints[i].port = (uint16_t)(7000 + i);
	}
	m.has_cert = true;
	m.cert = cert_of(&n, name, &c);
	ck_assert_int_eq(gsp_member_sign(&m, n.sign_sk), 0);
	return m;
}

static gsp_member recs[GSP_MEMBERS_PER_MSG];
static const gsp_member *ptrs[GSP_MEMBERS_PER_MSG + 1];

static void setup(void)
{
	for (int i = 0; i < GSP_MEMBERS_PER_MSG; i++) {
		recs[i] = longest((uint8_t)(i + 1));
		ptrs[i] = &recs[i];
	}
	ptrs[GSP_MEMBERS_PER_MSG] = &recs[0];
}

static size_t encode(uint8_t flags, size_t n)
{
	size_t len = 0;

	ck_assert_int_eq(gsp_msg_members_encode(flags, ptrs, n, buf, sizeof(buf), &len), 0);
	return len;
}

/* The decoder refuses with code and leaves its output as it was. */
static void refused(size_t len, int code)
{
	static gsp_msg_members out, untouched;

	memset(&out, 0x5A, sizeof(out));
	memset(&untouched, 0x5A, sizeof(untouched));
	ck_assert_int_eq(gsp_msg_members_decode(buf, len, &out), code);
	ck_assert(memcmp(&out, &untouched, sizeof(out)) == 0);
}

START_TEST(round_trips)
{
	static gsp_msg_members out;
	const uint8_t flag_sets[] = { 0, GSP_MEMBERS_ASK, GSP_MEMBERS_SYNC,
				      GSP_MEMBERS_SYNC | GSP_MEMBERS_LAST,
				      GSP_MEMBERS_SYNC | GSP_MEMBERS_LAST | GSP_MEMBERS_ASK };

	for (size_t f = 0; f < sizeof(flag_sets); f++)
		for (size_t n = 0; n <= GSP_MEMBERS_PER_MSG; n++) {
			size_t len = encode(flag_sets[f], n);

			ck_assert_uint_le(len, GSP_MEMBERS_MSG_MAX);
			ck_assert_uint_le(len, GSP_PROTO_CONTROL_MAX);
			ck_assert_int_eq(gsp_msg_members_decode(buf, len, &out), 0);
			ck_assert_uint_eq(out.flags, flag_sets[f]);
			ck_assert_uint_eq(out.count, n);
			for (size_t i = 0; i < n; i++) {
				ck_assert(memcmp(out.rec[i].node_key, recs[i].node_key, GSP_KEY_BYTES) == 0);
				ck_assert_uint_eq(out.rec[i].incarnation, recs[i].incarnation);
				ck_assert_uint_eq(out.rec[i].status, recs[i].status);
				ck_assert_int_eq(gsp_member_verify(&out.rec[i], ca_of(0xC1).pk,
								   T_NOT_BEFORE, NULL), 0);
			}
		}
	/* The most a message holds is the bound, exactly. */
	ck_assert_uint_eq(encode(0, GSP_MEMBERS_PER_MSG), GSP_MEMBERS_MSG_MAX);
}
END_TEST

START_TEST(every_truncation_refused)
{
	size_t len = encode(GSP_MEMBERS_SYNC, 3);

	for (size_t cut = 0; cut < len; cut++) {
		int r = gsp_msg_members_decode(buf, cut, &(gsp_msg_members){ 0 });
		/* A cut inside a record's announced bytes is the message's
		 * layout; the record decoder sees only whole lengths. */
		ck_assert_msg(r == -EBADMSG, "cut at %zu: %d", cut, r);
	}
}
END_TEST

START_TEST(layout_rules)
{
	size_t len = encode(GSP_MEMBERS_SYNC, 2);

	/* Another type. */
	buf[0] = 0x06;
	refused(len, -ENOMSG);
	buf[0] = GSP_MSG_MEMBERS;
	/* Unknown flags, and LAST without SYNC. */
	for (unsigned bit = 3; bit < 8; bit++) {
		buf[1] = (uint8_t)(GSP_MEMBERS_SYNC | 1u << bit);
		refused(len, -EBADMSG);
	}
	buf[1] = GSP_MEMBERS_LAST;
	refused(len, -EBADMSG);
	buf[1] = GSP_MEMBERS_SYNC;
	/* A count above the cap, above what follows, below it (trailing). */
	buf[2] = GSP_MEMBERS_PER_MSG + 1;
	refused(len, -EBADMSG);
	buf[2] = 3;
	refused(len, -EBADMSG);
	buf[2] = 1;
	refused(len, -EBADMSG);
	buf[2] = 2;
	ck_assert_int_eq(gsp_msg_members_decode(buf, len, &(gsp_msg_members){ 0 }), 0);
	/* Trailing bytes. */
	buf[len] = 0;
	refused(len + 1, -EBADMSG);
	/* A record's length below the smallest record and above the largest. */
	uint16_t first = (uint16_t)(buf[3] | buf[4] << 8);
	buf[3] = (uint8_t)(GSP_MEMBER_FIXED - 1);
	buf[4] = 0;
	refused(len, -EBADMSG);
	buf[3] = (uint8_t)((GSP_MEMBER_MAX + 1) & 0xff);
	buf[4] = (uint8_t)((GSP_MEMBER_MAX + 1) >> 8);
	refused(len, -EBADMSG);
	/* A length inside the bounds that is not the record's: the record
	 * decoder refuses it (a shorter one is cut; a longer one shifts the
	 * next record onto a wrong version byte). */
	buf[3] = (uint8_t)((first - 1) & 0xff);
	buf[4] = (uint8_t)((first - 1) >> 8);
	ck_assert_int_lt(gsp_msg_members_decode(buf, len, &(gsp_msg_members){ 0 }), 0);
	buf[3] = (uint8_t)(first & 0xff);
	buf[4] = (uint8_t)(first >> 8);
	/* A record's own rule: its version byte. */
	buf[5] = GSP_MEMBER_VERSION + 1;
	refused(len, GSP_ADM_EVERSION);
	buf[5] = GSP_MEMBER_VERSION;
	/* GSP_MEMBERS_PER_MSG + 1 short records, within the byte bound:
	 * refused by the count alone. */
	{
		node n = node_of(1);
		gsp_member s;
		size_t at = GSP_MEMBERS_HEAD, rlen;

		memset(&s, 0, sizeof(s));
		s.version = GSP_MEMBER_VERSION;
		memcpy(s.node_key, n.kp.pub, GSP_KEY_BYTES);
		ck_assert_int_eq(gsp_member_sign(&s, n.sign_sk), 0);
		for (int i = 0; i <= GSP_MEMBERS_PER_MSG; i++) {
			ck_assert_int_eq(gsp_member_encode(&s, buf + at + 2, sizeof(buf) - at - 2,
							   &rlen), 0);
			buf[at] = (uint8_t)rlen;
			buf[at + 1] = 0;
			at += 2 + rlen;
		}
		buf[1] = 0;
		buf[2] = GSP_MEMBERS_PER_MSG + 1;
		ck_assert_uint_le(at, GSP_MEMBERS_MSG_MAX);
		refused(at, -EBADMSG);
		buf[2] = GSP_MEMBERS_PER_MSG;
		refused(at, -EBADMSG);  /* one record left over */
	}
	/* Longer than any message. */
	refused(GSP_MEMBERS_MSG_MAX + 1, -EBADMSG);
}
END_TEST

START_TEST(encoder_refusals)
{
	gsp_member bad = recs[0];
	const gsp_member *one[1] = { &bad };
	size_t len;

	ck_assert_int_eq(gsp_msg_members_encode(0, ptrs, GSP_MEMBERS_PER_MSG + 1,
						buf, sizeof(buf), &len), -EINVAL);
	ck_assert_int_eq(gsp_msg_members_encode(0x08, ptrs, 1, buf, sizeof(buf), &len), -EINVAL);
	ck_assert_int_eq(gsp_msg_members_encode(GSP_MEMBERS_LAST, ptrs, 1, buf, sizeof(buf), &len),
			 -EINVAL);
	ck_assert_int_eq(gsp_msg_members_encode(0, ptrs, 1, buf, sizeof(buf), NULL), -EINVAL);
	ck_assert_int_eq(gsp_msg_members_encode(0, NULL, 1, buf, sizeof(buf), &len), -EINVAL);
	bad.status = 9;
	ck_assert_int_eq(gsp_msg_members_encode(0, one, 1, buf, sizeof(buf), &len), -EINVAL);
	len = 12345;
	ck_assert_int_eq(gsp_msg_members_encode(0, ptrs, 2, buf, 100, &len), -ENOBUFS);
	ck_assert_uint_eq(len, 12345);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proto_members_msg");
	TCase *tc = tcase_create("members_msg");
	SRunner *sr;
	int failed;

	if (sodium_init() < 0)
		return EXIT_FAILURE;
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, round_trips);
	tcase_add_test(tc, every_truncation_refused);
	tcase_add_test(tc, layout_rules);
	tcase_add_test(tc, encoder_refusals);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
