/* The handshake and transport crypto: both ends agree, every tampering is
 * refused, replays and reordering of frames are refused, and each session
 * gets fresh keys. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "handshake.h"
#include "hsframe.h"

typedef struct pair {
	gsp_keypair a, b;   /* initiator, responder */
	gsp_session sa, sb;
} pair;

static void handshake(pair *p)
{
	gsp_hs hi, hr;
	uint8_t init[GSP_HS_INIT_BYTES], resp[GSP_HS_RESP_BYTES];
	uint8_t ts[GSP_HS_TIMESTAMP], peer[32], peer_ts[GSP_HS_TIMESTAMP];
	gsp_hs_timestamp(ts);
	ck_assert_int_eq(gsp_hs_initiate(&hi, &p->a, p->b.pub, HS_INIT_CLEAR, ts, init), 0);
	ck_assert_int_eq(gsp_hs_read_init(&hr, &p->b, HS_INIT_CLEAR, init, sizeof(init), peer,
					  peer_ts), 0);
	ck_assert(memcmp(peer, p->a.pub, 32) == 0);
	ck_assert(memcmp(peer_ts, ts, sizeof(ts)) == 0);
	ck_assert_int_eq(gsp_hs_respond(&hr, HS_RESP_CLEAR, resp, &p->sb), 0);
	ck_assert_int_eq(gsp_hs_read_response(&hi, HS_RESP_CLEAR, resp, sizeof(resp), &p->sa), 0);
}

START_TEST(test_agree)
{
	pair p;
	gsp_keypair_generate(&p.a);
	gsp_keypair_generate(&p.b);
	handshake(&p);
	ck_assert(memcmp(p.sa.tx_key, p.sb.rx_key, 32) == 0);
	ck_assert(memcmp(p.sa.rx_key, p.sb.tx_key, 32) == 0);
	ck_assert(memcmp(p.sa.tx_key, p.sa.rx_key, 32) != 0);
	ck_assert(memcmp(p.sa.edge_seed, p.sb.edge_seed, 32) == 0);
	ck_assert(memcmp(p.sa.peer, p.b.pub, 32) == 0);
	ck_assert(memcmp(p.sb.peer, p.a.pub, 32) == 0);
	/* A second session between the same keys shares nothing. */
	pair q = p;
	handshake(&q);
	ck_assert(memcmp(q.sa.tx_key, p.sa.tx_key, 32) != 0);
	ck_assert(memcmp(q.sa.edge_seed, p.sa.edge_seed, 32) != 0);
	/* The public key of a private key. */
	gsp_keypair k;
	ck_assert_int_eq(gsp_keypair_from_private(p.a.priv, &k), 0);
	ck_assert(memcmp(k.pub, p.a.pub, 32) == 0);
}
END_TEST

/* HS_INIT with a certificate sealed beside the timestamp (PROTOCOL.md
 * 4.2, since 1.7): the responder gets its bytes back, at every length a
 * certificate may have, and none when there is none; lengths that are
 * no certificate's are refused at both ends; changing any byte of one
 * (its mac1 made right again) does not authenticate. */
START_TEST(test_init_with_certificate)
{
	gsp_keypair a, b;
	gsp_hs hi, hr;
	uint8_t cert[GSP_CERT_MAX], got[GSP_CERT_MAX];
	uint8_t init[GSP_HS_INIT_MAX_BYTES], ts[GSP_HS_TIMESTAMP], peer[32], pts[12];
	size_t n, got_len;
	gsp_keypair_generate(&a);
	gsp_keypair_generate(&b);
	gsp_hs_timestamp(ts);
	for (size_t i = 0; i < sizeof(cert); i++)
		cert[i] = (uint8_t)(i ^ 0x5a);
	const size_t lens[] = {0, GSP_CERT_MIN, 200, GSP_CERT_MAX};
	for (size_t k = 0; k < 4; k++) {
		ck_assert_int_eq(gsp_hs_initiate_cert(&hi, &a, b.pub, HS_INIT_CLEAR, ts,
						      cert, lens[k], init, &n), 0);
		ck_assert_uint_eq(n, GSP_HS_INIT_BYTES + lens[k]);
		got_len = 999;
		ck_assert_int_eq(gsp_hs_read_init_cert(&hr, &b, HS_INIT_CLEAR, init, n,
						       peer, pts, got, &got_len), 0);
		ck_assert_uint_eq(got_len, lens[k]);
		ck_assert_mem_eq(got, cert, lens[k]);
		ck_assert_mem_eq(peer, a.pub, 32);
		ck_assert_mem_eq(pts, ts, sizeof(ts));
		gsp_hs_clear(&hi);
		gsp_hs_clear(&hr);
	}
	const size_t bad[] = {1, GSP_CERT_MIN - 1, GSP_CERT_MAX + 1};
	for (size_t k = 0; k < 3; k++)
		ck_assert_int_eq(gsp_hs_initiate_cert(&hi, &a, b.pub, HS_INIT_CLEAR, ts,
						      cert, bad[k], init, &n), -EINVAL);
	/* Lengths outside [no certificate, the longest]: refused unread. */
	ck_assert_int_eq(gsp_hs_read_init_cert(&hr, &b, HS_INIT_CLEAR, init,
					       GSP_HS_INIT_BYTES - 1, peer, pts, got,
					       &got_len), -EBADMSG);
	ck_assert_int_eq(gsp_hs_read_init_cert(&hr, &b, HS_INIT_CLEAR, init,
					       GSP_HS_INIT_MAX_BYTES + 1, peer, pts,
					       got, &got_len), -EBADMSG);
	/* One byte of the sealed certificate changed, or the INIT cut
	 * short (a certificate one byte shorter than sealed), each with a
	 * right mac1 for what it holds: the AEAD refuses. */
	ck_assert_int_eq(gsp_hs_initiate_cert(&hi, &a, b.pub, HS_INIT_CLEAR, ts,
					      cert, 200, init, &n), 0);
	uint8_t bent[GSP_HS_INIT_MAX_BYTES];
	for (size_t at = 0; at < n - GSP_HS_MAC1; at += 7) {
		memcpy(bent, init, n);
		bent[at] ^= 0x80;
		hs_spec_mac1_at(b.pub, HS_INIT_CLEAR, bent, n - GSP_HS_MAC1,
				bent + n - GSP_HS_MAC1);
		ck_assert_int_eq(gsp_hs_read_init_cert(&hr, &b, HS_INIT_CLEAR, bent, n,
						       peer, pts, got, &got_len), -EBADMSG);
	}
	memcpy(bent, init, n - GSP_HS_MAC1 - 1);
	hs_spec_mac1_at(b.pub, HS_INIT_CLEAR, bent, n - GSP_HS_MAC1 - 1,
			bent + n - GSP_HS_MAC1 - 1);
	ck_assert_int_eq(gsp_hs_read_init_cert(&hr, &b, HS_INIT_CLEAR, bent, n - 1,
					       peer, pts, got, &got_len), -EBADMSG);
	/* The mac1 covers the certificate too: without the fix, -EPERM. */
	memcpy(bent, init, n);
	bent[2 * GSP_KEY_BYTES + GSP_HS_TAG + 20] ^= 1;
	ck_assert_int_eq(gsp_hs_read_init_cert(&hr, &b, HS_INIT_CLEAR, bent, n,
					       peer, pts, got, &got_len), -EPERM);
	gsp_hs_clear(&hi);
}
END_TEST

START_TEST(test_tampering_refused)
{
	pair p;
	gsp_keypair_generate(&p.a);
	gsp_keypair_generate(&p.b);
	gsp_keypair wrong;
	gsp_keypair_generate(&wrong);
	gsp_hs hi, hr;
	uint8_t init[GSP_HS_INIT_BYTES], resp[GSP_HS_RESP_BYTES], ts[12], peer[32], pts[12];
	gsp_hs_timestamp(ts);
	ck_assert_int_eq(gsp_hs_initiate(&hi, &p.a, p.b.pub, HS_INIT_CLEAR, ts, init), 0);
	/* Sent to the wrong responder: refused at mac1 (test_mac1), and with
	 * a mac1 for that responder it cannot even read who is calling. */
	uint8_t other[GSP_HS_INIT_BYTES];
	memcpy(other, init, sizeof(other));
	hs_test_mac1(wrong.pub, HS_INIT_CLEAR, other);
	ck_assert_int_eq(gsp_hs_read_init(&hr, &wrong, HS_INIT_CLEAR, init, sizeof(init), peer, pts),
			 -EPERM);
	ck_assert_int_eq(gsp_hs_read_init(&hr, &wrong, HS_INIT_CLEAR, other, sizeof(other), peer,
					  pts), -EBADMSG);
	/* Any byte changed, under a mac1 made again for it: the AEAD refuses. */
	for (size_t i = 0; i < sizeof(init) - GSP_HS_MAC1; i++) {
		init[i] ^= 0x20;
		hs_test_mac1(p.b.pub, HS_INIT_CLEAR, init);
		ck_assert_msg(gsp_hs_read_init(&hr, &p.b, HS_INIT_CLEAR, init, sizeof(init), peer,
					       pts) == -EBADMSG, "byte %zu", i);
		init[i] ^= 0x20;
		hs_test_mac1(p.b.pub, HS_INIT_CLEAR, init);
	}
	ck_assert_int_eq(gsp_hs_read_init(&hr, &p.b, HS_INIT_CLEAR, init, sizeof(init) - 1, peer, pts),
			 -EBADMSG);
	ck_assert_int_eq(gsp_hs_read_init(&hr, &p.b, HS_INIT_CLEAR, init, sizeof(init), peer, pts), 0);
	ck_assert_int_eq(gsp_hs_respond(&hr, HS_RESP_CLEAR, resp, &p.sb), 0);
	for (size_t i = 0; i < sizeof(resp); i++) {
		resp[i] ^= 0x01;
		ck_assert_msg(gsp_hs_read_response(&hi, HS_RESP_CLEAR, resp, sizeof(resp), &p.sa) ==
			      -EBADMSG, "byte %zu", i);
		resp[i] ^= 0x01;
	}
	/* A low-order ephemeral key is refused too. */
	uint8_t zero[GSP_HS_RESP_BYTES] = {0};
	ck_assert_int_eq(gsp_hs_read_response(&hi, HS_RESP_CLEAR, zero, sizeof(zero), &p.sa), -EBADMSG);
	/* The genuine response still completes after the forgeries. */
	ck_assert_int_eq(gsp_hs_read_response(&hi, HS_RESP_CLEAR, resp, sizeof(resp), &p.sa), 0);
	ck_assert(memcmp(p.sa.edge_seed, p.sb.edge_seed, 32) == 0);
}
END_TEST

/* The clear bytes (type and version) are in the handshake hash: any of
 * them other at the reading end than at the writing end fails the
 * handshake, at the responder for INIT's and at the initiator for
 * RESPONSE's (whose state a failure leaves as it was). */
START_TEST(test_clear_bytes_covered)
{
	gsp_keypair a, b;
	gsp_hs hi, hr;
	gsp_session sa, sb;
	uint8_t init[GSP_HS_INIT_BYTES], resp[GSP_HS_RESP_BYTES], ts[12], peer[32];
	uint8_t pts[12], clear[GSP_HS_CLEAR];
	gsp_keypair_generate(&a);
	gsp_keypair_generate(&b);
	gsp_hs_timestamp(ts);
	ck_assert_int_eq(gsp_hs_initiate(&hi, &a, b.pub, HS_INIT_CLEAR, ts, init), 0);
	for (size_t i = 0; i < GSP_HS_CLEAR; i++) {
		uint8_t other[GSP_HS_INIT_BYTES];
		memcpy(clear, HS_INIT_CLEAR, sizeof(clear));
		clear[i] ^= 1;
		/* A mac1 over the changed bytes, so that the hash is what refuses. */
		memcpy(other, init, sizeof(other));
		hs_test_mac1(b.pub, clear, other);
		ck_assert_msg(gsp_hs_read_init(&hr, &b, clear, other, sizeof(other), peer,
					       pts) == -EBADMSG, "byte %zu", i);
	}
	ck_assert_int_eq(gsp_hs_read_init(&hr, &b, HS_INIT_CLEAR, init, sizeof(init),
					  peer, pts), 0);
	ck_assert_int_eq(gsp_hs_respond(&hr, HS_RESP_CLEAR, resp, &sb), 0);
	for (size_t i = 0; i < GSP_HS_CLEAR; i++) {
		memcpy(clear, HS_RESP_CLEAR, sizeof(clear));
		clear[i] ^= 0x80;
		ck_assert_msg(gsp_hs_read_response(&hi, clear, resp, sizeof(resp),
						   &sa) == -EBADMSG, "byte %zu", i);
	}
	ck_assert_int_eq(gsp_hs_read_response(&hi, HS_RESP_CLEAR, resp, sizeof(resp),
					      &sa), 0);
	ck_assert(memcmp(sa.tx_key, sb.rx_key, 32) == 0);
}
END_TEST

START_TEST(test_transport)
{
	pair p;
	gsp_keypair_generate(&p.a);
	gsp_keypair_generate(&p.b);
	handshake(&p);
	uint8_t msg[100], ct[3][100 + GSP_SESSION_OVERHEAD], out[100];
	for (int i = 0; i < 100; i++)
		msg[i] = (uint8_t)i;
	for (int f = 0; f < 3; f++) {
		msg[0] = (uint8_t)f;
		ck_assert_int_eq(gsp_session_seal(&p.sa, msg, sizeof(msg), ct[f]), 0);
	}
	/* Out of order, tampered and truncated frames fail and change nothing. */
	ck_assert_int_eq(gsp_session_open(&p.sb, ct[1], sizeof(ct[1]), out), -EBADMSG);
	ct[0][50] ^= 1;
	ck_assert_int_eq(gsp_session_open(&p.sb, ct[0], sizeof(ct[0]), out), -EBADMSG);
	ct[0][50] ^= 1;
	ck_assert_int_eq(gsp_session_open(&p.sb, ct[0], 15, out), -EBADMSG);
	for (int f = 0; f < 3; f++) {
		ck_assert_int_eq(gsp_session_open(&p.sb, ct[f], sizeof(ct[f]), out), 0);
		ck_assert_uint_eq(out[0], f);
		ck_assert(memcmp(out + 1, msg + 1, 99) == 0);
	}
	/* A replayed frame is refused. */
	ck_assert_int_eq(gsp_session_open(&p.sb, ct[2], sizeof(ct[2]), out), -EBADMSG);
	/* The other direction uses the other key. */
	ck_assert_int_eq(gsp_session_seal(&p.sb, msg, sizeof(msg), ct[0]), 0);
	ck_assert_int_eq(gsp_session_open(&p.sa, ct[0], sizeof(ct[0]), out), 0);
	gsp_session_clear(&p.sa);
	gsp_session_clear(NULL);
}
END_TEST

/* A frame opens in place (the link decrypts in its receive buffer): a
 * model-sized one, every byte as sealed; a tampered one fails, and the
 * counter does not move, so the next frame still opens. */
START_TEST(test_transport_in_place)
{
	pair p;
	gsp_keypair_generate(&p.a);
	gsp_keypair_generate(&p.b);
	handshake(&p);
	size_t n = (size_t)1 << 20;
	uint8_t *msg = malloc(n), *frame[2];
	ck_assert_ptr_nonnull(msg);
	randombytes_buf(msg, n);
	for (int f = 0; f < 2; f++) {
		frame[f] = malloc(n + GSP_SESSION_OVERHEAD);
		ck_assert_ptr_nonnull(frame[f]);
		ck_assert_int_eq(gsp_session_seal(&p.sa, msg, n, frame[f]), 0);
	}
	frame[0][n / 2] ^= 1;
	ck_assert_int_eq(gsp_session_open(&p.sb, frame[0], n + GSP_SESSION_OVERHEAD,
					  frame[0]), -EBADMSG);
	/* The failed frame's bytes are gone (libsodium clears them); the
	 * counter stayed: frame 0 sealed again opens. */
	free(frame[0]);
	frame[0] = malloc(n + GSP_SESSION_OVERHEAD);
	ck_assert_ptr_nonnull(frame[0]);
	pair q = p;              /* the sealer again from the same counter */
	q.sa.tx_n = 0;
	ck_assert_int_eq(gsp_session_seal(&q.sa, msg, n, frame[0]), 0);
	ck_assert_int_eq(gsp_session_open(&p.sb, frame[0], n + GSP_SESSION_OVERHEAD,
					  frame[0]), 0);
	ck_assert(memcmp(frame[0], msg, n) == 0);
	ck_assert_int_eq(gsp_session_open(&p.sb, frame[1], n + GSP_SESSION_OVERHEAD,
					  frame[1]), 0);
	ck_assert(memcmp(frame[1], msg, n) == 0);
	free(frame[0]);
	free(frame[1]);
	free(msg);
}
END_TEST

START_TEST(test_timestamps_increase)
{
	uint8_t a[GSP_HS_TIMESTAMP], b[GSP_HS_TIMESTAMP];
	gsp_hs_timestamp(a);
	do
		gsp_hs_timestamp(b);
	while (memcmp(a, b, sizeof(a)) == 0);
	ck_assert(memcmp(a, b, sizeof(a)) < 0);
}
END_TEST

/* mac1 (PROTOCOL.md 4.2): an INIT for another responder's key, or with
 * any one of its bytes changed (clear bytes included), is refused with
 * -EPERM before any Diffie-Hellman, and the responder's state is left as
 * it was; a valid mac1 over bytes that do not decrypt reaches the
 * authentication (-EBADMSG), so mac1 is only the gate in front of it. */
START_TEST(test_mac1)
{
	gsp_keypair a, b, c;
	gsp_hs hi, hr, before;
	uint8_t init[GSP_HS_INIT_BYTES], bad[GSP_HS_INIT_BYTES], clear[GSP_HS_CLEAR];
	uint8_t ts[GSP_HS_TIMESTAMP], peer[32], pts[12];
	gsp_keypair_generate(&a);
	gsp_keypair_generate(&b);
	gsp_keypair_generate(&c);
	gsp_hs_timestamp(ts);
	ck_assert_int_eq(gsp_hs_initiate(&hi, &a, b.pub, HS_INIT_CLEAR, ts, init), 0);
	memset(&hr, 0x5a, sizeof(hr));
	before = hr;
	ck_assert_int_eq(gsp_hs_read_init(&hr, &c, HS_INIT_CLEAR, init, sizeof(init), peer, pts),
			 -EPERM);
	ck_assert(memcmp(&before, &hr, sizeof(hr)) == 0);
	for (size_t i = 0; i < GSP_HS_CLEAR + sizeof(init); i++) {
		memcpy(clear, HS_INIT_CLEAR, sizeof(clear));
		memcpy(bad, init, sizeof(bad));
		if (i < GSP_HS_CLEAR)
			clear[i] ^= 0x01;
		else
			bad[i - GSP_HS_CLEAR] ^= 0x80;
		ck_assert_int_eq(gsp_hs_read_init(&hr, &b, clear, bad, sizeof(bad), peer, pts),
				 -EPERM);
		ck_assert(memcmp(&before, &hr, sizeof(hr)) == 0);
	}
	/* Random bytes under a valid mac1: past the gate, not authenticated. */
	randombytes_buf(bad, sizeof(bad));
	hs_test_mac1(b.pub, HS_INIT_CLEAR, bad);
	ck_assert_int_eq(gsp_hs_read_init(&hr, &b, HS_INIT_CLEAR, bad, sizeof(bad), peer, pts),
			 -EBADMSG);
	/* The genuine INIT, and the initiator's mac1 is the one the text gives. */
	memcpy(bad, init, sizeof(bad));
	hs_test_mac1(b.pub, HS_INIT_CLEAR, bad);
	ck_assert(memcmp(bad, init, sizeof(init)) == 0);
	ck_assert_int_eq(gsp_hs_read_init(&hr, &b, HS_INIT_CLEAR, init, sizeof(init), peer, pts), 0);
	ck_assert(memcmp(peer, a.pub, sizeof(peer)) == 0);
	gsp_hs_clear(&hi);
	gsp_hs_clear(&hr);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	Suite *s = suite_create("daemon-handshake");
	TCase *tc = tcase_create("handshake");
	tcase_add_test(tc, test_agree);
	tcase_add_test(tc, test_init_with_certificate);
	tcase_add_test(tc, test_mac1);
	tcase_add_test(tc, test_tampering_refused);
	tcase_add_test(tc, test_clear_bytes_covered);
	tcase_add_test(tc, test_transport);
	tcase_add_test(tc, test_transport_in_place);
	tcase_add_test(tc, test_timestamps_increase);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
