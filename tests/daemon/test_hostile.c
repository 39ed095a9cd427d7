/* Hostile input at the edges of the handshake and the transport that
 * test_handshake.c leaves out: transport bodies below the smallest valid
 * one (GSP_PEER_MIN_BODY), the frame limit of a session, low-order
 * ephemeral keys in INIT, and calls out of order.  Each refusal must leave
 * the state as it was (or, for a refused INIT, wiped). */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "handshake.h"
#include "hsframe.h"
#include "proto.h"
#include "testutil.h"

/* Two mirrored sessions with fixed keys: tx seals, rx opens. */
static void sessions(gsp_session *tx, gsp_session *rx)
{
	memset(tx, 0, sizeof(*tx));
	memset(tx->tx_key, 0x33, sizeof(tx->tx_key));
	memset(tx->rx_key, 0x44, sizeof(tx->rx_key));
	*rx = *tx;
	memcpy(rx->tx_key, tx->rx_key, sizeof(rx->tx_key));
	memcpy(rx->rx_key, tx->tx_key, sizeof(rx->rx_key));
}

/* Every peer decoder and the classifier refuse a plaintext of len bytes. */
static void no_peer_message(const uint8_t *pt, size_t len)
{
	gsp_msg_model mm;
	gsp_msg_round mr;
	gsp_msg_resync ms;
	gsp_msg_ping mp;
	gsp_msg_goodbye mg;
	uint8_t type;
	ck_assert_int_eq(gsp_msg_type(pt, len, &type), -EBADMSG);
	ck_assert_int_eq(gsp_msg_model_decode(pt, len, &mm), -EBADMSG);
	ck_assert_int_eq(gsp_msg_round_decode(pt, len, &mr), -EBADMSG);
	ck_assert_int_eq(gsp_msg_resync_decode(pt, len, &ms), -EBADMSG);
	ck_assert_int_eq(gsp_msg_ping_decode(pt, len, &mp), -EBADMSG);
	ck_assert_int_eq(gsp_msg_pong_decode(pt, len, &mp), -EBADMSG);
	ck_assert_int_eq(gsp_msg_goodbye_decode(pt, len, &mg), -EBADMSG);
}

/* Nothing below GSP_PEER_MIN_BODY bytes becomes a peer message: shorter
 * than a tag is refused before any crypto, and a genuine frame of an
 * empty plaintext (exactly a tag) opens to nothing that decodes. */
START_TEST(test_short_bodies)
{
	gsp_session tx, rx, before;
	uint8_t body[GSP_PEER_MIN_BODY], out[GSP_PEER_MIN_BODY];
	ck_assert_uint_eq(GSP_PEER_MIN_BODY, GSP_SESSION_OVERHEAD + 1);
	sessions(&tx, &rx);
	for (size_t len = 0; len <= GSP_SESSION_OVERHEAD; len++) {
		memset(body, (int)len, sizeof(body));
		before = rx;
		ck_assert_int_eq(gsp_session_open(&rx, body, len, out), -EBADMSG);
		ck_assert(memcmp(&before, &rx, sizeof(rx)) == 0);
	}
	ck_assert_int_eq(gsp_session_seal(&tx, NULL, 0, body), 0);
	ck_assert_int_eq(gsp_session_open(&rx, body, GSP_SESSION_OVERHEAD, out), 0);
	ck_assert_uint_eq(rx.rx_n, 1);
	no_peer_message(out, 0);
	/* The smallest body that can carry a message: PING's type byte
	 * alone opens, and is still too short for PING. */
	uint8_t ping = 0x04;
	ck_assert_int_eq(gsp_session_seal(&tx, &ping, 1, body), 0);
	ck_assert_int_eq(gsp_session_open(&rx, body, GSP_PEER_MIN_BODY, out), 0);
	uint8_t type;
	ck_assert_int_eq(gsp_msg_type(out, 1, &type), 0);
	ck_assert_uint_eq(type, 0x04);
	gsp_msg_ping mp;
	ck_assert_int_eq(gsp_msg_ping_decode(out, 1, &mp), -EBADMSG);
}
END_TEST

/* A session seals and opens up to GSP_SESSION_MAX_FRAMES frames per
 * direction, then refuses with -EOVERFLOW and changes nothing. */
START_TEST(test_frame_limit)
{
	gsp_session tx, rx, before;
	uint8_t msg[20] = {0x04}, ct[sizeof(msg) + GSP_SESSION_OVERHEAD];
	uint8_t out[sizeof(msg)], last[sizeof(ct)];
	sessions(&tx, &rx);
	tx.tx_n = rx.rx_n = GSP_SESSION_MAX_FRAMES - 1;
	ck_assert_int_eq(gsp_session_seal(&tx, msg, sizeof(msg), ct), 0);
	memcpy(last, ct, sizeof(last));
	ck_assert_int_eq(gsp_session_open(&rx, ct, sizeof(ct), out), 0);
	ck_assert(memcmp(out, msg, sizeof(msg)) == 0);
	ck_assert_uint_eq(tx.tx_n, GSP_SESSION_MAX_FRAMES);
	ck_assert_uint_eq(rx.rx_n, GSP_SESSION_MAX_FRAMES);
	before = tx;
	memset(ct, 0xee, sizeof(ct));
	ck_assert_int_eq(gsp_session_seal(&tx, msg, sizeof(msg), ct), -EOVERFLOW);
	ck_assert(memcmp(&before, &tx, sizeof(tx)) == 0);
	for (size_t i = 0; i < sizeof(ct); i++)
		ck_assert_uint_eq(ct[i], 0xee);
	/* Any frame past the limit, garbage or a replay of the last one. */
	before = rx;
	ck_assert_int_eq(gsp_session_open(&rx, ct, sizeof(ct), out), -EOVERFLOW);
	ck_assert_int_eq(gsp_session_open(&rx, last, sizeof(last), out), -EOVERFLOW);
	ck_assert(memcmp(&before, &rx, sizeof(rx)) == 0);
}
END_TEST

/* INIT whose ephemeral key is a low-order point (zero, or u = 1): the
 * Diffie-Hellman result is refused, the INIT with it, and the
 * responder's state is wiped. */
START_TEST(test_init_low_order)
{
	gsp_keypair a, b;
	gsp_hs hi, hr;
	uint8_t init[GSP_HS_INIT_BYTES], ts[GSP_HS_TIMESTAMP], peer[32], pts[12];
	gsp_keypair_generate(&a);
	gsp_keypair_generate(&b);
	gsp_hs_timestamp(ts);
	ck_assert_int_eq(gsp_hs_initiate(&hi, &a, b.pub, HS_INIT_CLEAR, ts, init), 0);
	for (int u = 0; u <= 1; u++) {
		uint8_t bad[GSP_HS_INIT_BYTES];
		memcpy(bad, init, sizeof(bad));
		memset(bad, 0, GSP_KEY_BYTES);
		bad[0] = (uint8_t)u;
		hs_test_mac1(b.pub, HS_INIT_CLEAR, bad);        /* past the mac1 gate */
		memset(&hr, 0x5a, sizeof(hr));
		memset(peer, 0xa5, sizeof(peer));
		ck_assert_int_eq(gsp_hs_read_init(&hr, &b, HS_INIT_CLEAR, bad, sizeof(bad), peer, pts),
				 -EBADMSG);
		ck_assert(sodium_is_zero((const unsigned char *)&hr, sizeof(hr)));
		for (size_t i = 0; i < sizeof(peer); i++)
			ck_assert_uint_eq(peer[i], 0xa5);
	}
	ck_assert_int_eq(gsp_hs_read_init(&hr, &b, HS_INIT_CLEAR, init, sizeof(init), peer, pts), 0);
	ck_assert(memcmp(peer, a.pub, sizeof(peer)) == 0);
	gsp_hs_clear(&hi);
	gsp_hs_clear(&hr);
}
END_TEST

/* Each call in its place only: a responder does not read a RESPONSE, an
 * initiator does not respond, nobody responds before INIT, and a finished
 * handshake takes nothing more. */
START_TEST(test_out_of_order)
{
	gsp_keypair a, b;
	gsp_hs hi, hr, before;
	gsp_session sa, sb;
	uint8_t init[GSP_HS_INIT_BYTES], resp[GSP_HS_RESP_BYTES];
	uint8_t ts[GSP_HS_TIMESTAMP], peer[32], pts[12];
	gsp_keypair_generate(&a);
	gsp_keypair_generate(&b);
	gsp_hs_timestamp(ts);
	memset(&hr, 0, sizeof(hr));
	ck_assert_int_eq(gsp_hs_respond(&hr, HS_RESP_CLEAR, resp, &sb), -EINVAL);
	ck_assert_int_eq(gsp_hs_initiate(&hi, &a, b.pub, HS_INIT_CLEAR, ts, init), 0);
	before = hi;
	ck_assert_int_eq(gsp_hs_respond(&hi, HS_RESP_CLEAR, resp, &sb), -EINVAL);
	ck_assert(memcmp(&before, &hi, sizeof(hi)) == 0);
	ck_assert_int_eq(gsp_hs_read_init(&hr, &b, HS_INIT_CLEAR, init, sizeof(init), peer, pts), 0);
	memset(resp, 0, sizeof(resp));
	before = hr;
	ck_assert_int_eq(gsp_hs_read_response(&hr, HS_RESP_CLEAR, resp, sizeof(resp), &sb), -EINVAL);
	ck_assert(memcmp(&before, &hr, sizeof(hr)) == 0);
	ck_assert_int_eq(gsp_hs_respond(&hr, HS_RESP_CLEAR, resp, &sb), 0);
	ck_assert_int_eq(gsp_hs_respond(&hr, HS_RESP_CLEAR, resp, &sb), -EINVAL);
	ck_assert_int_eq(gsp_hs_read_response(&hi, HS_RESP_CLEAR, resp, sizeof(resp), &sa), 0);
	ck_assert_int_eq(gsp_hs_read_response(&hi, HS_RESP_CLEAR, resp, sizeof(resp), &sa), -EINVAL);
	ck_assert(memcmp(sa.tx_key, sb.rx_key, sizeof(sa.tx_key)) == 0);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	Suite *s = suite_create("daemon-hostile");
	TCase *tc = tcase_create("hostile");
	tcase_add_test(tc, test_short_bodies);
	tcase_add_test(tc, test_frame_limit);
	tcase_add_test(tc, test_init_low_order);
	tcase_add_test(tc, test_out_of_order);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
