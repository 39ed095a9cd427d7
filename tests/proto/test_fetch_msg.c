/*
 * Unit tests for proto/fetch_msg: the FETCH peer message (ASK, DATA,
 * REFUSE) and the local API's FETCH and FETCH_OK.  Round trips of each,
 * every truncation refused, each layout rule with its code (an unknown
 * kind, reserved bytes, an ASK's length and new-snapshot offset, a DATA
 * past its snapshot or empty or without one, a REFUSE's reason and text,
 * trailing bytes, another type), the encoders' refusals, and an output
 * untouched by every refusal.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fetch_msg.h"

static uint8_t buf[2 + GSP_FETCH_DATA_HEAD + 64];
static const uint8_t chunk[40] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

static gsp_msg_fetch ask_of(uint32_t snapshot, uint64_t offset, uint32_t len)
{
	gsp_msg_fetch m = {.kind = GSP_FETCH_ASK, .snapshot = snapshot,
			   .offset = offset, .len = len};
	memset(m.fingerprint, 0xF1, sizeof(m.fingerprint));
	return m;
}

static gsp_msg_fetch data_of(uint64_t offset, uint32_t len, uint64_t total)
{
	gsp_msg_fetch m = {.kind = GSP_FETCH_DATA, .snapshot = 9, .offset = offset,
			   .len = len, .total = total, .bytes = chunk};
	memset(m.hash, 0x4A, sizeof(m.hash));
	return m;
}

static size_t enc(const gsp_msg_fetch *m)
{
	size_t n = 0;
	ck_assert_int_eq(gsp_msg_fetch_encode(m, buf, sizeof(buf), &n), 0);
	return n;
}

/* Decodes buf[0..n) expecting code; on a refusal, *out is untouched. */
static gsp_msg_fetch dec(size_t n, int code)
{
	gsp_msg_fetch m, untouched;
	memset(&m, 0x5A, sizeof(m));
	memcpy(&untouched, &m, sizeof(m));
	ck_assert_int_eq(gsp_msg_fetch_decode(buf, n, &m), code);
	if (code)
		ck_assert_mem_eq(&m, &untouched, sizeof(m));
	return m;
}

static void every_truncation_refused(size_t n)
{
	for (size_t k = 1; k < n; k++)
		ck_assert_int_eq(gsp_msg_fetch_decode(buf, k, &(gsp_msg_fetch){0}), -EBADMSG);
	ck_assert_int_eq(gsp_msg_fetch_decode(buf, 0, &(gsp_msg_fetch){0}), -EBADMSG);
}

START_TEST(test_ask_round_trip)
{
	gsp_msg_fetch a = ask_of(7, 1 << 20, 4096);
	size_t n = enc(&a);
	ck_assert_uint_eq(n, 2 + GSP_FETCH_ASK_BYTES);
	ck_assert_uint_eq(buf[0], GSP_MSG_FETCH);
	gsp_msg_fetch m = dec(n, 0);
	ck_assert_int_eq(m.kind, GSP_FETCH_ASK);
	ck_assert_uint_eq(m.snapshot, 7);
	ck_assert_uint_eq(m.offset, 1 << 20);
	ck_assert_uint_eq(m.len, 4096);
	ck_assert_mem_eq(m.fingerprint, a.fingerprint, sizeof(a.fingerprint));
	every_truncation_refused(n);
	/* A new snapshot is asked from its start. */
	a = ask_of(0, 0, GSP_FETCH_CHUNK_MAX);
	dec(enc(&a), 0);
}
END_TEST

START_TEST(test_data_round_trip)
{
	gsp_msg_fetch d = data_of(100, sizeof(chunk), 140);   /* the last chunk */
	size_t n = enc(&d);
	ck_assert_uint_eq(n, 2 + GSP_FETCH_DATA_HEAD + sizeof(chunk));
	gsp_msg_fetch m = dec(n, 0);
	ck_assert_int_eq(m.kind, GSP_FETCH_DATA);
	ck_assert_uint_eq(m.offset, 100);
	ck_assert_uint_eq(m.total, 140);
	ck_assert_uint_eq(m.len, sizeof(chunk));
	ck_assert_ptr_eq(m.bytes, buf + 2 + GSP_FETCH_DATA_HEAD);
	ck_assert_mem_eq(m.bytes, chunk, sizeof(chunk));
	ck_assert_mem_eq(m.hash, d.hash, sizeof(d.hash));
	/* A cut inside the head, or right after it (no bytes), is refused;
	 * a cut inside the bytes is a shorter chunk, another message. */
	for (size_t k = 0; k <= 2 + GSP_FETCH_DATA_HEAD; k++)
		ck_assert_int_eq(gsp_msg_fetch_decode(buf, k, &(gsp_msg_fetch){0}), -EBADMSG);
}
END_TEST

START_TEST(test_refuse_round_trip)
{
	gsp_msg_fetch r = {.kind = GSP_FETCH_REFUSE, .snapshot = 3,
			   .reason = GSP_FETCH_NO_ROOM, .text = "busy", .text_len = 4};
	size_t n = enc(&r);
	gsp_msg_fetch m = dec(n, 0);
	ck_assert_uint_eq(m.reason, GSP_FETCH_NO_ROOM);
	ck_assert_uint_eq(m.snapshot, 3);
	ck_assert_uint_eq(m.text_len, 4);
	ck_assert_mem_eq(m.text, "busy", 4);
	for (size_t k = 0; k < 2 + 2 + 4; k++)
		ck_assert_int_eq(gsp_msg_fetch_decode(buf, k, &(gsp_msg_fetch){0}), -EBADMSG);
	r.text_len = 0;   /* no text */
	dec(enc(&r), 0);
}
END_TEST

START_TEST(test_layout_rules)
{
	gsp_msg_fetch a = ask_of(7, 0, 16);
	size_t n = enc(&a);
	buf[0] = GSP_MSG_MEMBERS;                      /* another type */
	dec(n, -ENOMSG);
	buf[0] = GSP_MSG_FETCH;
	buf[1] = 4;                                    /* an unknown kind */
	dec(n, -EBADMSG);
	buf[1] = 0;
	dec(n, -EBADMSG);
	buf[1] = GSP_FETCH_ASK;
	buf[2] = 1;                                    /* reserved, not 0 */
	dec(n, -EBADMSG);
	buf[2] = 0;
	dec(n + 1, -EBADMSG);                          /* a trailing byte */
	/* ASK: len 0 or past the chunk cap; a new snapshot not from 0. */
	a = ask_of(7, 0, 1);
	n = enc(&a);
	buf[2 + 2 + 4 + 8] = 0;
	dec(n, -EBADMSG);
	a = ask_of(7, 0, GSP_FETCH_CHUNK_MAX);
	n = enc(&a);
	buf[2 + 2 + 4 + 8] = 1;                        /* len 1 MiB + 1 */
	dec(n, -EBADMSG);
	a = ask_of(1, 64, 16);
	n = enc(&a);
	memset(buf + 4, 0, 4);                         /* snapshot 0, offset 64 */
	dec(n, -EBADMSG);
	/* DATA: past its total, without a snapshot, empty. */
	gsp_msg_fetch d = data_of(100, 40, 140);
	n = enc(&d);
	buf[2 + 2 + 4 + 8] = 139;                      /* total 139 < 140 */
	dec(n, -EBADMSG);
	n = enc(&d);
	memset(buf + 4, 0, 4);
	dec(n, -EBADMSG);
	n = enc(&d);
	dec(2 + GSP_FETCH_DATA_HEAD, -EBADMSG);        /* no bytes */
	/* REFUSE: a reason 0 or unknown; a NUL in the text; too long. */
	gsp_msg_fetch r = {.kind = GSP_FETCH_REFUSE, .snapshot = 0, .reason = 1,
			   .text = "ab", .text_len = 2};
	n = enc(&r);
	buf[2] = 0;
	dec(n, -EBADMSG);
	buf[2] = GSP_FETCH_NO_LAST + 1;
	dec(n, -EBADMSG);
	buf[2] = 1;
	buf[n - 1] = 0;
	dec(n, -EBADMSG);
	static uint8_t longer[2 + 2 + 4 + GSP_FETCH_TEXT_MAX + 1];
	memcpy(longer, buf, 8);
	memset(longer + 8, 'x', GSP_FETCH_TEXT_MAX + 1);
	gsp_msg_fetch out;
	ck_assert_int_eq(gsp_msg_fetch_decode(longer, sizeof(longer), &out), -EBADMSG);
	ck_assert_int_eq(gsp_msg_fetch_decode(longer, sizeof(longer) - 1, &out), 0);
}
END_TEST

START_TEST(test_encoder_refusals)
{
	size_t n = 0;
	gsp_msg_fetch bad[] = {
		ask_of(7, 0, 0), ask_of(7, 0, GSP_FETCH_CHUNK_MAX + 1), ask_of(0, 8, 16),
		data_of(0, 0, 10), data_of(100, 40, 139), {.kind = 9},
		{.kind = GSP_FETCH_REFUSE, .reason = 0},
		{.kind = GSP_FETCH_REFUSE, .reason = 1, .text = "a\0b", .text_len = 3},
		{.kind = GSP_FETCH_REFUSE, .reason = 1, .text = NULL, .text_len = 3},
	};
	gsp_msg_fetch no_snapshot = data_of(0, 4, 10);
	no_snapshot.snapshot = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(gsp_msg_fetch_encode(&bad[i], buf, sizeof(buf), &n), -EINVAL);
	ck_assert_int_eq(gsp_msg_fetch_encode(&no_snapshot, buf, sizeof(buf), &n), -EINVAL);
	gsp_msg_fetch a = ask_of(7, 0, 16);
	ck_assert_int_eq(gsp_msg_fetch_encode(&a, buf, GSP_FETCH_ASK_BYTES + 1, &n), -ENOBUFS);
	ck_assert_int_eq(gsp_msg_fetch_encode(NULL, buf, sizeof(buf), &n), -EINVAL);
	ck_assert_int_eq(gsp_msg_fetch_decode(buf, 4, NULL), -EINVAL);
}
END_TEST

START_TEST(test_api_fetch)
{
	size_t n = 0;
	gsp_api_fetch f = {.time_limit_ms = 30000}, g;
	ck_assert_int_eq(gsp_api_fetch_encode(&f, buf, sizeof(buf), &n), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_int_eq(gsp_api_fetch_decode(buf, n, &g), 0);
	ck_assert_uint_eq(g.time_limit_ms, 30000);
	uint8_t type;
	ck_assert_int_eq(gsp_api_type(buf, n, &type), 0);
	ck_assert_uint_eq(type, GSP_API_FETCH);
	for (size_t k = 0; k < n; k++)
		ck_assert_int_eq(gsp_api_fetch_decode(buf, k, &g), -EBADMSG);
	ck_assert_int_eq(gsp_api_fetch_decode(buf, n + 1, &g), -EBADMSG);
	memset(buf + 1, 0, 4);                       /* no time limit */
	ck_assert_int_eq(gsp_api_fetch_decode(buf, n, &g), -EBADMSG);
	f.time_limit_ms = 0;
	ck_assert_int_eq(gsp_api_fetch_encode(&f, buf, sizeof(buf), &n), -EINVAL);

	gsp_api_fetch_ok ok = {.bytes = 4920, .took_ms = 12, .peer = "QGe8Ib1d",
			       .peer_len = 8}, back;
	ck_assert_int_eq(gsp_api_fetch_ok_encode(&ok, buf, sizeof(buf), &n), 0);
	ck_assert_uint_eq(n, 1 + 8 + 4 + 2 + 8);
	ck_assert_int_eq(gsp_api_fetch_ok_decode(buf, n, &back), 0);
	ck_assert_uint_eq(back.bytes, 4920);
	ck_assert_uint_eq(back.took_ms, 12);
	ck_assert_uint_eq(back.peer_len, 8);
	ck_assert_mem_eq(back.peer, "QGe8Ib1d", 8);
	ck_assert_int_eq(gsp_api_type(buf, n, &type), 0);
	ck_assert_uint_eq(type, GSP_API_FETCH_OK);
	for (size_t k = 0; k < n; k++)
		ck_assert_int_eq(gsp_api_fetch_ok_decode(buf, k, &back), -EBADMSG);
	ck_assert_int_eq(gsp_api_fetch_ok_decode(buf, n + 1, &back), -EBADMSG);
	ck_assert_int_eq(gsp_api_fetch_decode(buf, n, &g), -ENOMSG);
	static char name[GSP_FETCH_NAME_MAX + 1];
	memset(name, 'k', sizeof(name));
	ok.peer = name;
	ok.peer_len = sizeof(name);                  /* a name too long */
	ck_assert_int_eq(gsp_api_fetch_ok_encode(&ok, buf, sizeof(buf), &n), -EINVAL);
	ok.peer_len = GSP_FETCH_NAME_MAX;
	ck_assert_int_eq(gsp_api_fetch_ok_encode(&ok, buf, sizeof(buf), &n), 0);
	buf[1 + 8 + 4] = GSP_FETCH_NAME_MAX + 1;     /* its length says more */
	ck_assert_int_eq(gsp_api_fetch_ok_decode(buf, n, &back), -EBADMSG);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proto_fetch_msg");
	TCase *tc = tcase_create("fetch");
	tcase_add_test(tc, test_ask_round_trip);
	tcase_add_test(tc, test_data_round_trip);
	tcase_add_test(tc, test_refuse_round_trip);
	tcase_add_test(tc, test_layout_rules);
	tcase_add_test(tc, test_encoder_refusals);
	tcase_add_test(tc, test_api_fetch);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
