/* HS_INIT's mac1 from PROTOCOL.md 4.2's text, with libsodium directly
 * (not daemon/handshake.c's code): BLAKE2b-128 keyed with
 * H("gossipd-mac1" || S_r), over the clear bytes and the payload before
 * the mac1.  Shared by the handshake tests and the handshake fuzz
 * harness, which check the daemon's mac1 against it.  Header-only; needs
 * handshake.h's sizes first. */
#ifndef GSP_TEST_HSMAC1_H
#define GSP_TEST_HSMAC1_H

#include <stdint.h>
#include <string.h>

#include <sodium.h>

/* Over payload[0..at): an INIT of at + GSP_HS_MAC1 bytes. */
static inline void hs_spec_mac1_at(const uint8_t pub[GSP_KEY_BYTES],
				   const uint8_t clear[GSP_HS_CLEAR],
				   const uint8_t *payload, size_t at,
				   uint8_t out[GSP_HS_MAC1])
{
	uint8_t label[12 + GSP_KEY_BYTES], key[32];
	uint8_t data[GSP_HS_CLEAR + GSP_HS_INIT_MAX_BYTES];
	memcpy(label, "gossipd-mac1", 12);
	memcpy(label + 12, pub, GSP_KEY_BYTES);
	crypto_generichash(key, sizeof(key), label, sizeof(label), NULL, 0);
	memcpy(data, clear, GSP_HS_CLEAR);
	memcpy(data + GSP_HS_CLEAR, payload, at);
	crypto_generichash(out, GSP_HS_MAC1, data, GSP_HS_CLEAR + at, key, sizeof(key));
}

/* An INIT without a certificate. */
static inline void hs_spec_mac1(const uint8_t pub[GSP_KEY_BYTES],
				const uint8_t clear[GSP_HS_CLEAR],
				const uint8_t payload[GSP_HS_INIT_BYTES - GSP_HS_MAC1],
				uint8_t out[GSP_HS_MAC1])
{
	hs_spec_mac1_at(pub, clear, payload, GSP_HS_INIT_BYTES - GSP_HS_MAC1, out);
}

#endif
