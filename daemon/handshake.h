/*
 * gossipd handshake and transport crypto, built only from libsodium
 * primitives: a Noise-IK-shaped key exchange (X25519 static + ephemeral,
 * BLAKE2b chaining, ChaCha20-Poly1305), then per-direction session keys
 * with 64-bit counter nonces.  Pure functions over byte arrays: no I/O.
 * The construction and what it protects against are in proto/PROTOCOL.md.
 *
 *   initiator                                   responder
 *   gsp_hs_initiate() -- INIT (e, {s}, {ts, cert}) --> gsp_hs_read_init()
 *                                     (caller: allowlist or certificate, replay)
 *   gsp_hs_read_response() <-- RESPONSE (e, {}) -- gsp_hs_respond()
 *   both: a gsp_session with the same edge seed
 *
 * Each message's clear bytes in front of its payload (its type and
 * version, `clear` below) are mixed into the handshake hash before the
 * payload, so its tags cover them: a version rewritten in flight fails
 * the handshake.
 */
#ifndef GSP_DAEMON_HANDSHAKE_H
#define GSP_DAEMON_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cert.h"             /* GSP_CERT_MAX */
#include "key.h"              /* GSP_KEY_BYTES, gsp_keypair */

#define GSP_HS_TAG 16
/* The clear bytes of a handshake message before its payload (proto.h's
 * GSP_HS_HEADER_BYTES: type and version). */
#define GSP_HS_CLEAR 3
#define GSP_HS_TIMESTAMP 12
/* HS_INIT's last bytes: a MAC keyed by the responder's public key
 * (WireGuard's mac1), checked before any Diffie-Hellman. */
#define GSP_HS_MAC1 16
/* e (32) | {s} (32 + 16) | {timestamp | u16 cert_len | cert} (14 +
 * cert_len + 16) | mac1 (16): without a certificate, and with the
 * longest. */
#define GSP_HS_CERT_LEN 2
#define GSP_HS_INIT_BYTES (GSP_KEY_BYTES + GSP_KEY_BYTES + GSP_HS_TAG + \
			   GSP_HS_TIMESTAMP + GSP_HS_CERT_LEN + GSP_HS_TAG + \
			   GSP_HS_MAC1)
#define GSP_HS_INIT_MAX_BYTES (GSP_HS_INIT_BYTES + GSP_CERT_MAX)
/* e (32) | {} (16) */
#define GSP_HS_RESP_BYTES (GSP_KEY_BYTES + GSP_HS_TAG)
#define GSP_SESSION_OVERHEAD GSP_HS_TAG
/* A session refuses to seal or open past this many frames. */
#define GSP_SESSION_MAX_FRAMES (UINT64_C(1) << 60)

typedef struct gsp_hs {
	uint8_t h[32], ck[32];
	const gsp_keypair *s;        /* our static key: the caller's, not copied */
	gsp_keypair e;
	uint8_t remote_s[GSP_KEY_BYTES], remote_e[GSP_KEY_BYTES];
	bool initiator;
	int step;
} gsp_hs;

typedef struct gsp_session {
	uint8_t tx_key[32], rx_key[32];
	uint64_t tx_n, rx_n;
	uint8_t edge_seed[32];       /* the same at both ends, never sent */
	uint8_t peer[GSP_KEY_BYTES];    /* the authenticated remote static key */
} gsp_session;

/* TAI64N-like timestamp of now (big-endian seconds + nanoseconds), so
 * lexicographic order is time order. */
void gsp_hs_timestamp(uint8_t out[GSP_HS_TIMESTAMP]);

/* Initiator: writes INIT's payload for the responder with static key
 * remote_pub, behind INIT's clear bytes, without a certificate. */
int gsp_hs_initiate(gsp_hs *hs, const gsp_keypair *s,
		    const uint8_t remote_pub[GSP_KEY_BYTES],
		    const uint8_t clear[GSP_HS_CLEAR],
		    const uint8_t timestamp[GSP_HS_TIMESTAMP],
		    uint8_t out[GSP_HS_INIT_BYTES]);
/* The same with our certificate cert[0..cert_len) sealed with the
 * timestamp (cert_len 0: none; else GSP_CERT_MIN..GSP_CERT_MAX, -EINVAL
 * otherwise): out[0..*ret_len), at most GSP_HS_INIT_MAX_BYTES. */
int gsp_hs_initiate_cert(gsp_hs *hs, const gsp_keypair *s,
			 const uint8_t remote_pub[GSP_KEY_BYTES],
			 const uint8_t clear[GSP_HS_CLEAR],
			 const uint8_t timestamp[GSP_HS_TIMESTAMP],
			 const uint8_t *cert, size_t cert_len,
			 uint8_t out[GSP_HS_INIT_MAX_BYTES], size_t *ret_len);
/* Responder: checks INIT's mac1 first (-EPERM, and no Diffie-Hellman
 * done, if the sender does not know our public key or INIT was changed),
 * then authenticates INIT (its clear bytes and payload as received) and
 * returns the initiator's static key and timestamp; the caller checks the
 * allowlist and that the timestamp is newer than the last one seen from
 * that key.  -EBADMSG if INIT does not decrypt (tampering under a valid
 * mac1, clear bytes other than the initiator's, a low-order key). */
int gsp_hs_read_init(gsp_hs *hs, const gsp_keypair *s,
		     const uint8_t clear[GSP_HS_CLEAR], const uint8_t *in,
		     size_t len, uint8_t ret_peer[GSP_KEY_BYTES],
		     uint8_t ret_timestamp[GSP_HS_TIMESTAMP]);
/* The same, and the certificate INIT carried, its bytes as sealed (not
 * decoded: the caller's): *ret_cert_len 0 for none.  -EBADMSG also for
 * a cert_len out of range or other than what the sealed bytes hold. */
int gsp_hs_read_init_cert(gsp_hs *hs, const gsp_keypair *s,
			  const uint8_t clear[GSP_HS_CLEAR], const uint8_t *in,
			  size_t len, uint8_t ret_peer[GSP_KEY_BYTES],
			  uint8_t ret_timestamp[GSP_HS_TIMESTAMP],
			  uint8_t ret_cert[GSP_CERT_MAX], size_t *ret_cert_len);
/* Responder: writes RESPONSE's payload, behind its clear bytes, and
 * derives the session. */
int gsp_hs_respond(gsp_hs *hs, const uint8_t clear[GSP_HS_CLEAR],
		   uint8_t out[GSP_HS_RESP_BYTES], gsp_session *ret_session);
/* Initiator: authenticates RESPONSE (clear bytes and payload as
 * received) and derives the session. */
int gsp_hs_read_response(gsp_hs *hs, const uint8_t clear[GSP_HS_CLEAR],
			 const uint8_t *in, size_t len,
			 gsp_session *ret_session);
/* The same two steps with the ephemeral key pair e given instead of a
 * fresh random one: for known-answer tests only (a reused ephemeral
 * gives up forward secrecy).  The two above call these. */
int gsp_hs_initiate_with(gsp_hs *hs, const gsp_keypair *s,
			 const uint8_t remote_pub[GSP_KEY_BYTES],
			 const uint8_t clear[GSP_HS_CLEAR],
			 const uint8_t timestamp[GSP_HS_TIMESTAMP],
			 const gsp_keypair *e, uint8_t out[GSP_HS_INIT_BYTES]);
int gsp_hs_respond_with(gsp_hs *hs, const uint8_t clear[GSP_HS_CLEAR],
			const gsp_keypair *e, uint8_t out[GSP_HS_RESP_BYTES],
			gsp_session *ret_session);
/* Wipes handshake secrets. */
void gsp_hs_clear(gsp_hs *hs);

/* Transport: out = ciphertext of len bytes + GSP_SESSION_OVERHEAD.  Open
 * fails with -EBADMSG on a wrong tag (or counter: TCP keeps order, so the
 * next frame must carry exactly the next counter) and changes nothing but
 * out.  Open may decrypt in place (out == ct). */
int gsp_session_seal(gsp_session *s, const uint8_t *pt, size_t len, uint8_t *out);
int gsp_session_open(gsp_session *s, const uint8_t *ct, size_t len, uint8_t *out);
void gsp_session_clear(gsp_session *s);

#endif
