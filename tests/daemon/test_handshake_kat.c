/* Known-answer vectors of the peer link's crypto (daemon/handshake.c,
 * PROTOCOL.md 4.2 and 4.3): a handshake between fixed static keys, with
 * fixed ephemeral keys and a fixed timestamp, and one transport frame.
 * The bytes on the wire are pinned, so any change to the wire format or
 * the key schedule fails here.  They are not only the code's own output
 * read back: the test derives the same messages and keys again from the
 * text of PROTOCOL.md 4.2 with libsodium directly, checks the lengths
 * and the ephemeral keys in the clear, and opens the frame with the keys
 * the responder derived. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "handshake.h"
#include "hsframe.h"
#include "testutil.h"

/* ---- the vector ------------------------------------------------------- */

static const uint8_t TIMESTAMP[GSP_HS_TIMESTAMP] = {
	0x40, 0, 0, 0, 0x69, 0x2d, 0x0c, 0x8a, 0x07, 0x5b, 0xcd, 0x15,
};

/* The transport frame's message. */
static const gsp_msg_ping PING = {
	.nonce = UINT64_C(0x0807060504030201),
	.time_ns = UINT64_C(0x1122334455667788),
};

/* Whole messages, clear bytes first (at our protocol version). */
static const char INIT_HEX[] =
	"1008017b0d47d93427f8311160781c7c733fd89f88970aef490d8aa0ee19a4cb"
	"8a1b14793ea81dad9ab39a7fc32049e4a9fd6d637491e6a715d1e80d3fcc17c8"
	"c566bc4ea2aa3a5aadb652f81fd23d9cd6c7875cb58d91cb59db71c02e6d335d"
	"78fb465e27e29d14f3f8b6239aa0a56dfb32e8a3d5c883b43dedd4fefddaf6d9"
	"68";
static const char RESP_HEX[] =
	"110801ff2ee45601ec1b67310c7790404585ae697331eee1c1f8cf2419731c1f"
	"ff3e6b9e7d068d0ee279987c4f2fa7ea8e52dd";
/* The initiator's second transport frame: its length header, then the
 * sealed PING. */
static const char FRAME_HEX[] =
	"21000000a7e430b5ce7a46dbe75bc258930f6869de27e58bf9460cc39db5094b"
	"2a0c4e84b2";

/* The session edge seed (never sent, but the engine's seed). */
static const char SEED_HEX[] =
	"179a26c21f32d137db1fb81a348237e1bbce3e0331257071d78e511c6981bb21";

/* ---- helpers ---------------------------------------------------------- */

static void keypair_of(uint8_t fill, gsp_keypair *ret)
{
	uint8_t priv[GSP_KEY_BYTES];
	memset(priv, fill, sizeof(priv));
	ck_assert_int_eq(gsp_keypair_from_private(priv, ret), 0);
}

/* Checks that bytes equal the hex text; on a mismatch the actual bytes are
 * printed, to renew a vector after a deliberate change. */
static void ck_hex(const char *what, const uint8_t *bytes, size_t len,
		   const char *hex)
{
	char *got = malloc(2 * len + 1);
	sodium_bin2hex(got, 2 * len + 1, bytes, len);
	if (strcmp(got, hex) != 0)
		fprintf(stderr, "%s is now\n%s\n", what, got);
	ck_assert_msg(strcmp(got, hex) == 0, "%s differs from its vector", what);
	free(got);
}

/* ---- PROTOCOL.md 4.2 again, from libsodium ---------------------------- */

typedef struct spec {
	uint8_t h[32], ck[32], k[32];
} spec;

/* MixHash(d): h = BLAKE2b-256(h || d). */
static void spec_hash(spec *s, const uint8_t *d, size_t len)
{
	uint8_t buf[32 + 64];
	ck_assert_uint_le(len, 64);
	memcpy(buf, s->h, 32);
	memcpy(buf + 32, d, len);
	crypto_generichash(s->h, 32, buf, 32 + len, NULL, 0);
}

/* PRF(k, d, b): BLAKE2b-256 keyed with k over d || b. */
static void spec_prf(uint8_t out[32], const uint8_t k[32], const uint8_t *d,
		     size_t len, uint8_t b)
{
	uint8_t buf[33];
	if (len)
		memcpy(buf, d, len);
	buf[len] = b;
	crypto_generichash(out, 32, buf, len + 1, k, 32);
}

/* (t1, t2) = KDF2(ck, ikm). */
static void spec_kdf2(const uint8_t ck[32], const uint8_t *ikm, size_t len,
		      uint8_t t1[32], uint8_t t2[32])
{
	uint8_t prk[32], a[32];
	spec_prf(prk, ck, ikm, len, 0);
	spec_prf(a, prk, NULL, 0, 1);
	spec_prf(t2, prk, a, 32, 2);
	memcpy(t1, a, 32);
}

/* MixDH(a, B): (ck, k) = KDF2(ck, X25519(a, B)). */
static void spec_dh(spec *s, const uint8_t *a, const uint8_t *b)
{
	uint8_t dh[32];
	ck_assert_int_eq(crypto_scalarmult(dh, a, b), 0);
	spec_kdf2(s->ck, dh, 32, s->ck, s->k);
}

/* Seal(k, pt) with associated data h, then MixHash(ciphertext). */
static void spec_seal(spec *s, const uint8_t *pt, size_t len, uint8_t *out)
{
	static const uint8_t zero[12];
	crypto_aead_chacha20poly1305_ietf_encrypt(out, NULL, pt, len, s->h, 32,
						  NULL, zero, s->k);
	spec_hash(s, out, len + 16);
}

typedef struct keys {
	gsp_keypair si, sr, ei, er;
} keys;

/* Both payloads, the transport keys and the edge seed as 4.2 says. */
static void spec_handshake(const keys *k, uint8_t init[GSP_HS_INIT_BYTES],
			   uint8_t resp[GSP_HS_RESP_BYTES], uint8_t k1[32],
			   uint8_t k2[32], uint8_t seed[32])
{
	static const char name[] = "gossipd-IK-25519-ChaChaPoly-BLAKE2b-v1";
	static const char label[] = "gossipd edge seed";
	spec s;
	crypto_generichash(s.h, 32, (const uint8_t *)name, sizeof(name) - 1, NULL, 0);
	memcpy(s.ck, s.h, 32);
	spec_hash(&s, k->sr.pub, 32);
	spec_hash(&s, HS_INIT_CLEAR, GSP_HS_CLEAR);
	memcpy(init, k->ei.pub, 32);
	spec_hash(&s, k->ei.pub, 32);
	spec_dh(&s, k->ei.priv, k->sr.pub);
	spec_seal(&s, k->si.pub, 32, init + 32);
	spec_dh(&s, k->si.priv, k->sr.pub);
	/* Sealed: the timestamp, then u16 cert_len = 0 (no certificate). */
	uint8_t ts_cert[GSP_HS_TIMESTAMP + 2] = {0};
	memcpy(ts_cert, TIMESTAMP, sizeof(TIMESTAMP));
	spec_seal(&s, ts_cert, sizeof(ts_cert), init + 80);
	/* mac1: BLAKE2b-128 keyed with H("gossipd-mac1" || S_r), over the
	 * clear bytes and payload[0..110) (hsmac1.h). */
	hs_spec_mac1(k->sr.pub, HS_INIT_CLEAR, init, init + 110);
	spec_hash(&s, HS_RESP_CLEAR, GSP_HS_CLEAR);
	memcpy(resp, k->er.pub, 32);
	spec_hash(&s, k->er.pub, 32);
	spec_dh(&s, k->er.priv, k->ei.pub);
	spec_dh(&s, k->er.priv, k->si.pub);
	spec_seal(&s, NULL, 0, resp + 32);
	spec_kdf2(s.ck, NULL, 0, k1, k2);
	crypto_generichash(seed, 32, (const uint8_t *)label, sizeof(label) - 1, s.ck, 32);
}

/* ---- the test --------------------------------------------------------- */

START_TEST(test_known_answer)
{
	keys k;
	keypair_of(0x11, &k.si);
	keypair_of(0x22, &k.sr);
	keypair_of(0x33, &k.ei);
	keypair_of(0x44, &k.er);

	/* The code's handshake, as the link frames it. */
	gsp_hs hi, hr;
	gsp_session sa, sb;
	gsp_hs_init mi = {.version = GSP_PROTO_VERSION,
			  .payload_len = GSP_HS_INIT_PAYLOAD};
	gsp_hs_resp mr = {.version = GSP_PROTO_VERSION};
	uint8_t init[GSP_HS_INIT_MSG_BYTES], resp[GSP_HS_RESP_MSG_BYTES];
	uint8_t peer[32], ts[GSP_HS_TIMESTAMP];
	size_t n;
	ck_assert_int_eq(gsp_hs_initiate_with(&hi, &k.si, k.sr.pub, HS_INIT_CLEAR,
					      TIMESTAMP, &k.ei, mi.payload), 0);
	ck_assert_int_eq(gsp_hs_init_encode(&mi, init, sizeof(init), &n), 0);
	ck_assert_uint_eq(n, 129);
	ck_assert_int_eq(gsp_hs_read_init(&hr, &k.sr, init, mi.payload,
					  mi.payload_len, peer, ts), 0);
	ck_assert_int_eq(gsp_hs_respond_with(&hr, HS_RESP_CLEAR, &k.er, mr.payload,
					     &sb), 0);
	ck_assert_int_eq(gsp_hs_resp_encode(&mr, resp, sizeof(resp), &n), 0);
	ck_assert_uint_eq(n, 51);
	ck_assert_int_eq(gsp_hs_read_response(&hi, resp, mr.payload,
					      sizeof(mr.payload), &sa), 0);

	/* A transport frame, initiator to responder: header, then the
	 * sealed PING.  The second one (counter 1), so that the vector
	 * covers the nonce's layout too; the first is opened below. */
	uint8_t pt[32], first[32 + 16], frame[4 + 32 + GSP_SESSION_OVERHEAD], out[32];
	ck_assert_int_eq(gsp_msg_ping_encode(&PING, pt, sizeof(pt), &n), 0);
	ck_assert_uint_eq(n, 17);
	size_t flen = 4 + n + GSP_SESSION_OVERHEAD;
	ck_assert_int_eq(gsp_session_seal(&sa, pt, n, first), 0);
	ck_assert_int_eq(gsp_frame_header_write(frame, 4, (uint32_t)(n + 16)), 0);
	ck_assert_int_eq(gsp_session_seal(&sa, pt, n, frame + 4), 0);

	/* Pinned. */
	ck_hex("HS_INIT", init, sizeof(init), INIT_HEX);
	ck_hex("HS_RESP", resp, sizeof(resp), RESP_HEX);
	ck_hex("the PING frame", frame, flen, FRAME_HEX);
	ck_hex("the edge seed", sa.edge_seed, 32, SEED_HEX);

	/* The clear parts: type and version, and the ephemeral keys that
	 * the fixed private keys give. */
	ck_assert_mem_eq(init, HS_INIT_CLEAR, GSP_HS_CLEAR);
	ck_assert_mem_eq(resp, HS_RESP_CLEAR, GSP_HS_CLEAR);
	uint8_t e[32];
	crypto_scalarmult_base(e, k.ei.priv);
	ck_assert_mem_eq(init + GSP_HS_CLEAR, e, 32);
	crypto_scalarmult_base(e, k.er.priv);
	ck_assert_mem_eq(resp + GSP_HS_CLEAR, e, 32);

	/* The same bytes and keys from the specification's text. */
	uint8_t sinit[GSP_HS_INIT_BYTES], sresp[GSP_HS_RESP_BYTES];
	uint8_t k1[32], k2[32], seed[32];
	spec_handshake(&k, sinit, sresp, k1, k2, seed);
	ck_assert_mem_eq(init + GSP_HS_CLEAR, sinit, sizeof(sinit));
	ck_assert_mem_eq(resp + GSP_HS_CLEAR, sresp, sizeof(sresp));
	ck_assert_mem_eq(sa.tx_key, k1, 32);
	ck_assert_mem_eq(sb.rx_key, k1, 32);
	ck_assert_mem_eq(sb.tx_key, k2, 32);
	ck_assert_mem_eq(sa.edge_seed, seed, 32);
	ck_assert_mem_eq(sb.edge_seed, seed, 32);
	ck_assert_mem_eq(peer, k.si.pub, 32);
	ck_assert_mem_eq(ts, TIMESTAMP, sizeof(ts));

	/* The frame: ChaCha20-Poly1305 under k1, nonce 4 zero bytes and
	 * LE64(1), no associated data (4.3); the responder opens both. */
	static const uint8_t nonce1[12] = {[4] = 1};
	uint8_t ct[32 + 16];
	crypto_aead_chacha20poly1305_ietf_encrypt(ct, NULL, pt, n, NULL, 0, NULL,
						  nonce1, k1);
	ck_assert_mem_eq(frame + 4, ct, n + 16);
	ck_assert_uint_eq(frame[0], n + 16);
	ck_assert_int_eq(gsp_session_open(&sb, first, n + 16, out), 0);
	ck_assert_int_eq(gsp_session_open(&sb, frame + 4, n + 16, out), 0);
	ck_assert_mem_eq(out, pt, n);
	gsp_msg_ping back;
	ck_assert_int_eq(gsp_msg_ping_decode(out, n, &back), 0);
	ck_assert(back.nonce == PING.nonce && back.time_ns == PING.time_ns);
	/* The other direction's key does not open it. */
	ck_assert_int_eq(gsp_session_open(&sa, frame + 4, n + 16, out), -EBADMSG);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	Suite *s = suite_create("daemon-handshake-kat");
	TCase *tc = tcase_create("kat");
	tcase_add_test(tc, test_known_answer);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
