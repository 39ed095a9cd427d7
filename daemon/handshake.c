/* gossipd handshake (Noise-IK shape) and transport AEAD, from libsodium:
 * X25519 (crypto_scalarmult), BLAKE2b (crypto_generichash, keyed as the
 * PRF of the key chain) and ChaCha20-Poly1305-IETF. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "handshake.h"

static const char PROTOCOL_NAME[] = "gossipd-IK-25519-ChaChaPoly-BLAKE2b-v1";
static const char MAC1_LABEL[] = "gossipd-mac1";

/* INIT's sealed timestamp, certificate length and certificate. */
#define INIT_SEALED_AT (2 * GSP_KEY_BYTES + GSP_HS_TAG)
#define INIT_PT_MIN (GSP_HS_TIMESTAMP + GSP_HS_CERT_LEN)

static void hash2(uint8_t out[32], const uint8_t *a, size_t alen,
		  const uint8_t *b, size_t blen)
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, 32);
	crypto_generichash_update(&st, a, alen);
	crypto_generichash_update(&st, b, blen);
	crypto_generichash_final(&st, out, 32);
}

/* PRF(key, data || byte): keyed BLAKE2b-256. */
static void prf(uint8_t out[32], const uint8_t key[32], const uint8_t *data,
		size_t len, uint8_t byte)
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, key, 32, 32);
	crypto_generichash_update(&st, data, len);
	crypto_generichash_update(&st, &byte, 1);
	crypto_generichash_final(&st, out, 32);
}

/* HKDF with the PRF: (ck, k) from the chaining key and new input. */
static void kdf2(const uint8_t ck[32], const uint8_t *ikm, size_t len,
		 uint8_t out1[32], uint8_t out2[32])
{
	uint8_t prk[32], t1[32];
	prf(prk, ck, ikm, len, 0);
	prf(t1, prk, NULL, 0, 1);
	prf(out2, prk, t1, 32, 2);
	memcpy(out1, t1, 32);
	sodium_memzero(prk, sizeof(prk));
	sodium_memzero(t1, sizeof(t1));
}

/* mac1 = BLAKE2b-128 keyed with H(MAC1_LABEL || S_r), over INIT's clear
 * bytes and payload[0..at), everything before mac1: one hash of a public value and one MAC,
 * no Diffie-Hellman, so a responder refuses a sender that does not know
 * its key at the cost of two hashes (PROTOCOL.md 4.2). */
static void mac1_of(const uint8_t responder_pub[GSP_KEY_BYTES],
		    const uint8_t clear[GSP_HS_CLEAR], const uint8_t *payload,
		    size_t at, uint8_t out[GSP_HS_MAC1])
{
	uint8_t key[32];
	crypto_generichash_state st;
	hash2(key, (const uint8_t *)MAC1_LABEL, sizeof(MAC1_LABEL) - 1,
	      responder_pub, GSP_KEY_BYTES);
	crypto_generichash_init(&st, key, sizeof(key), GSP_HS_MAC1);
	crypto_generichash_update(&st, clear, GSP_HS_CLEAR);
	crypto_generichash_update(&st, payload, at);
	crypto_generichash_final(&st, out, GSP_HS_MAC1);
}

static void mix_hash(gsp_hs *hs, const uint8_t *data, size_t len)
{
	hash2(hs->h, hs->h, 32, data, len);
}

/* MixKey(DH(priv, pub)); fails on a low-order public key. */
static int mix_dh(gsp_hs *hs, const uint8_t priv[GSP_KEY_BYTES],
		  const uint8_t pub[GSP_KEY_BYTES],
		  uint8_t k[32])
{
	uint8_t dh[32];
	if (crypto_scalarmult(dh, priv, pub) != 0)
		return -EBADMSG;
	kdf2(hs->ck, dh, 32, hs->ck, k);
	sodium_memzero(dh, sizeof(dh));
	return 0;
}

static const uint8_t ZERO_NONCE[crypto_aead_chacha20poly1305_ietf_NPUBBYTES];

/* Every handshake key encrypts exactly once, so a zero nonce is safe. */
static void seal_hash(gsp_hs *hs, const uint8_t k[32], const uint8_t *pt,
		      size_t len, uint8_t *out)
{
	crypto_aead_chacha20poly1305_ietf_encrypt(out, NULL, pt, len, hs->h, 32,
						  NULL, ZERO_NONCE, k);
	mix_hash(hs, out, len + GSP_HS_TAG);
}

static int open_hash(gsp_hs *hs, const uint8_t k[32], const uint8_t *ct,
		     size_t len, uint8_t *out)
{
	if (crypto_aead_chacha20poly1305_ietf_decrypt(out, NULL, NULL, ct, len,
						      hs->h, 32, ZERO_NONCE, k) != 0)
		return -EBADMSG;
	mix_hash(hs, ct, len);
	return 0;
}

static void hs_start(gsp_hs *hs, const gsp_keypair *s, bool initiator,
		     const uint8_t responder_pub[GSP_KEY_BYTES])
{
	memset(hs, 0, sizeof(*hs));
	hash2(hs->h, (const uint8_t *)PROTOCOL_NAME, sizeof(PROTOCOL_NAME) - 1,
	      NULL, 0);
	memcpy(hs->ck, hs->h, 32);
	mix_hash(hs, responder_pub, GSP_KEY_BYTES);
	hs->s = s;
	hs->initiator = initiator;
}

void gsp_hs_timestamp(uint8_t out[GSP_HS_TIMESTAMP])
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t sec = UINT64_C(0x400000000000000a) + (uint64_t)ts.tv_sec;
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(sec >> (56 - 8 * i));
	uint32_t ns = (uint32_t)ts.tv_nsec;
	for (int i = 0; i < 4; i++)
		out[8 + i] = (uint8_t)(ns >> (24 - 8 * i));
}

/* INIT with certificate cert[0..cert_len) and ephemeral e. */
static int initiate(gsp_hs *hs, const gsp_keypair *s,
		    const uint8_t remote_pub[GSP_KEY_BYTES],
		    const uint8_t clear[GSP_HS_CLEAR],
		    const uint8_t timestamp[GSP_HS_TIMESTAMP],
		    const uint8_t *cert, size_t cert_len, const gsp_keypair *e,
		    uint8_t *out, size_t *ret_len)
{
	uint8_t k[32], pt[INIT_PT_MIN + GSP_CERT_MAX];
	if (cert_len && (!cert || cert_len < GSP_CERT_MIN || cert_len > GSP_CERT_MAX))
		return -EINVAL;
	size_t pt_len = INIT_PT_MIN + cert_len;
	size_t mac1_at = INIT_SEALED_AT + pt_len + GSP_HS_TAG;
	memcpy(pt, timestamp, GSP_HS_TIMESTAMP);
	pt[GSP_HS_TIMESTAMP] = (uint8_t)cert_len;
	pt[GSP_HS_TIMESTAMP + 1] = (uint8_t)(cert_len >> 8);
	if (cert_len)
		memcpy(pt + INIT_PT_MIN, cert, cert_len);
	hs_start(hs, s, true, remote_pub);
	memcpy(hs->remote_s, remote_pub, GSP_KEY_BYTES);
	mix_hash(hs, clear, GSP_HS_CLEAR);
	hs->e = *e;
	memcpy(out, hs->e.pub, GSP_KEY_BYTES);
	mix_hash(hs, hs->e.pub, GSP_KEY_BYTES);
	if (mix_dh(hs, hs->e.priv, hs->remote_s, k))
		goto fail;
	seal_hash(hs, k, s->pub, GSP_KEY_BYTES, out + GSP_KEY_BYTES);
	if (mix_dh(hs, s->priv, hs->remote_s, k))
		goto fail;
	seal_hash(hs, k, pt, pt_len, out + INIT_SEALED_AT);
	mac1_of(remote_pub, clear, out, mac1_at, out + mac1_at);
	sodium_memzero(k, sizeof(k));
	hs->step = 1;
	*ret_len = mac1_at + GSP_HS_MAC1;
	return 0;
fail:
	sodium_memzero(k, sizeof(k));
	gsp_hs_clear(hs);
	return -EINVAL;
}

/* initiate() with a fresh ephemeral key pair. */
static int initiate_fresh(gsp_hs *hs, const gsp_keypair *s,
			  const uint8_t remote_pub[GSP_KEY_BYTES],
			  const uint8_t clear[GSP_HS_CLEAR],
			  const uint8_t timestamp[GSP_HS_TIMESTAMP],
			  const uint8_t *cert, size_t cert_len, uint8_t *out,
			  size_t *ret_len)
{
	gsp_keypair e;
	gsp_keypair_generate(&e);
	int err = initiate(hs, s, remote_pub, clear, timestamp, cert, cert_len,
			   &e, out, ret_len);
	sodium_memzero(&e, sizeof(e));
	return err;
}

int gsp_hs_initiate_cert(gsp_hs *hs, const gsp_keypair *s,
			 const uint8_t remote_pub[GSP_KEY_BYTES],
			 const uint8_t clear[GSP_HS_CLEAR],
			 const uint8_t timestamp[GSP_HS_TIMESTAMP],
			 const uint8_t *cert, size_t cert_len,
			 uint8_t out[GSP_HS_INIT_MAX_BYTES], size_t *ret_len)
{
	return initiate_fresh(hs, s, remote_pub, clear, timestamp, cert, cert_len,
			      out, ret_len);
}

int gsp_hs_initiate(gsp_hs *hs, const gsp_keypair *s,
		    const uint8_t remote_pub[GSP_KEY_BYTES],
		    const uint8_t clear[GSP_HS_CLEAR],
		    const uint8_t timestamp[GSP_HS_TIMESTAMP],
		    uint8_t out[GSP_HS_INIT_BYTES])
{
	size_t n;
	return initiate_fresh(hs, s, remote_pub, clear, timestamp, NULL, 0, out, &n);
}

int gsp_hs_initiate_with(gsp_hs *hs, const gsp_keypair *s,
			 const uint8_t remote_pub[GSP_KEY_BYTES],
			 const uint8_t clear[GSP_HS_CLEAR],
			 const uint8_t timestamp[GSP_HS_TIMESTAMP],
			 const gsp_keypair *e, uint8_t out[GSP_HS_INIT_BYTES])
{
	size_t n;
	return initiate(hs, s, remote_pub, clear, timestamp, NULL, 0, e, out, &n);
}

int gsp_hs_read_init_cert(gsp_hs *hs, const gsp_keypair *s,
			  const uint8_t clear[GSP_HS_CLEAR], const uint8_t *in,
			  size_t len, uint8_t ret_peer[GSP_KEY_BYTES],
			  uint8_t ret_timestamp[GSP_HS_TIMESTAMP],
			  uint8_t ret_cert[GSP_CERT_MAX], size_t *ret_cert_len)
{
	uint8_t k[32], peer[GSP_KEY_BYTES], pt[INIT_PT_MIN + GSP_CERT_MAX];
	uint8_t mac1[GSP_HS_MAC1];
	int err = -EBADMSG;
	if (len < GSP_HS_INIT_BYTES || len > GSP_HS_INIT_MAX_BYTES)
		return -EBADMSG;
	size_t mac1_at = len - GSP_HS_MAC1;
	size_t pt_len = mac1_at - INIT_SEALED_AT - GSP_HS_TAG;
	mac1_of(s->pub, clear, in, mac1_at, mac1);
	if (crypto_verify_16(mac1, in + mac1_at) != 0)
		return -EPERM;
	hs_start(hs, s, false, s->pub);
	mix_hash(hs, clear, GSP_HS_CLEAR);
	memcpy(hs->remote_e, in, GSP_KEY_BYTES);
	mix_hash(hs, hs->remote_e, GSP_KEY_BYTES);
	if (mix_dh(hs, s->priv, hs->remote_e, k) ||
	    open_hash(hs, k, in + GSP_KEY_BYTES, GSP_KEY_BYTES + GSP_HS_TAG, peer) ||
	    mix_dh(hs, s->priv, peer, k) ||
	    open_hash(hs, k, in + INIT_SEALED_AT, pt_len + GSP_HS_TAG, pt))
		goto out;
	/* The sealed length must be the one it declares: no slack bytes. */
	size_t cert_len = pt[GSP_HS_TIMESTAMP] | (size_t)pt[GSP_HS_TIMESTAMP + 1] << 8;
	if (INIT_PT_MIN + cert_len != pt_len ||
	    (cert_len && cert_len < GSP_CERT_MIN))
		goto out;
	memcpy(hs->remote_s, peer, GSP_KEY_BYTES);
	memcpy(ret_peer, peer, GSP_KEY_BYTES);
	memcpy(ret_timestamp, pt, GSP_HS_TIMESTAMP);
	if (ret_cert && ret_cert_len) {
		memcpy(ret_cert, pt + INIT_PT_MIN, cert_len);
		*ret_cert_len = cert_len;
	}
	hs->step = 1;
	err = 0;
out:
	sodium_memzero(k, sizeof(k));
	if (err)
		gsp_hs_clear(hs);
	return err;
}

int gsp_hs_read_init(gsp_hs *hs, const gsp_keypair *s,
		     const uint8_t clear[GSP_HS_CLEAR], const uint8_t *in,
		     size_t len, uint8_t ret_peer[GSP_KEY_BYTES],
		     uint8_t ret_timestamp[GSP_HS_TIMESTAMP])
{
	return gsp_hs_read_init_cert(hs, s, clear, in, len, ret_peer,
				     ret_timestamp, NULL, NULL);
}

/* Both ends: session keys from the final chaining key. */
static void split(gsp_hs *hs, gsp_session *ret)
{
	gsp_session s;
	uint8_t k1[32], k2[32];
	static const char label[] = "gossipd edge seed";
	memset(&s, 0, sizeof(s));
	kdf2(hs->ck, NULL, 0, k1, k2);
	memcpy(s.tx_key, hs->initiator ? k1 : k2, 32);
	memcpy(s.rx_key, hs->initiator ? k2 : k1, 32);
	crypto_generichash(s.edge_seed, 32, (const uint8_t *)label,
			   sizeof(label) - 1, hs->ck, 32);
	memcpy(s.peer, hs->remote_s, GSP_KEY_BYTES);
	*ret = s;
	sodium_memzero(&s, sizeof(s));
	sodium_memzero(k1, sizeof(k1));
	sodium_memzero(k2, sizeof(k2));
	gsp_hs_clear(hs);
}

int gsp_hs_respond(gsp_hs *hs, const uint8_t clear[GSP_HS_CLEAR],
		   uint8_t out[GSP_HS_RESP_BYTES], gsp_session *ret_session)
{
	gsp_keypair e;
	gsp_keypair_generate(&e);
	int err = gsp_hs_respond_with(hs, clear, &e, out, ret_session);
	sodium_memzero(&e, sizeof(e));
	return err;
}

int gsp_hs_respond_with(gsp_hs *hs, const uint8_t clear[GSP_HS_CLEAR],
			const gsp_keypair *e, uint8_t out[GSP_HS_RESP_BYTES],
			gsp_session *ret_session)
{
	uint8_t k[32];
	if (hs->initiator || hs->step != 1)
		return -EINVAL;
	mix_hash(hs, clear, GSP_HS_CLEAR);
	hs->e = *e;
	memcpy(out, hs->e.pub, GSP_KEY_BYTES);
	mix_hash(hs, hs->e.pub, GSP_KEY_BYTES);
	if (mix_dh(hs, hs->e.priv, hs->remote_e, k) ||
	    mix_dh(hs, hs->e.priv, hs->remote_s, k)) {
		sodium_memzero(k, sizeof(k));
		gsp_hs_clear(hs);
		return -EBADMSG;
	}
	seal_hash(hs, k, NULL, 0, out + GSP_KEY_BYTES);
	sodium_memzero(k, sizeof(k));
	split(hs, ret_session);
	return 0;
}

int gsp_hs_read_response(gsp_hs *hs, const uint8_t clear[GSP_HS_CLEAR],
			 const uint8_t *in, size_t len,
			 gsp_session *ret_session)
{
	uint8_t k[32];
	if (!hs->initiator || hs->step != 1)
		return -EINVAL;
	if (len != GSP_HS_RESP_BYTES)
		return -EBADMSG;
	gsp_hs saved = *hs;
	mix_hash(hs, clear, GSP_HS_CLEAR);
	memcpy(hs->remote_e, in, GSP_KEY_BYTES);
	mix_hash(hs, hs->remote_e, GSP_KEY_BYTES);
	if (mix_dh(hs, hs->e.priv, hs->remote_e, k) ||
	    mix_dh(hs, hs->s->priv, hs->remote_e, k) ||
	    open_hash(hs, k, in + GSP_KEY_BYTES, GSP_HS_TAG, NULL)) {
		/* A forged response must not spoil the real one. */
		*hs = saved;
		sodium_memzero(&saved, sizeof(saved));
		sodium_memzero(k, sizeof(k));
		return -EBADMSG;
	}
	sodium_memzero(&saved, sizeof(saved));
	sodium_memzero(k, sizeof(k));
	split(hs, ret_session);
	return 0;
}

void gsp_hs_clear(gsp_hs *hs)
{
	if (hs)
		sodium_memzero(hs, sizeof(*hs));
}

static void nonce_of(uint64_t n, uint8_t nonce[12])
{
	memset(nonce, 0, 4);
	for (int i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(n >> (8 * i));
}

int gsp_session_seal(gsp_session *s, const uint8_t *pt, size_t len, uint8_t *out)
{
	uint8_t nonce[12];
	if (s->tx_n >= GSP_SESSION_MAX_FRAMES)
		return -EOVERFLOW;
	nonce_of(s->tx_n, nonce);
	crypto_aead_chacha20poly1305_ietf_encrypt(out, NULL, pt, len, NULL, 0,
						  NULL, nonce, s->tx_key);
	s->tx_n++;
	return 0;
}

int gsp_session_open(gsp_session *s, const uint8_t *ct, size_t len, uint8_t *out)
{
	uint8_t nonce[12];
	if (len < GSP_HS_TAG)
		return -EBADMSG;
	if (s->rx_n >= GSP_SESSION_MAX_FRAMES)
		return -EOVERFLOW;
	nonce_of(s->rx_n, nonce);
	if (crypto_aead_chacha20poly1305_ietf_decrypt(out, NULL, NULL, ct, len,
						      NULL, 0, nonce, s->rx_key) != 0)
		return -EBADMSG;
	s->rx_n++;
	return 0;
}

void gsp_session_clear(gsp_session *s)
{
	if (s)
		sodium_memzero(s, sizeof(*s));
}
