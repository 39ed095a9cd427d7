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

static inline void hs_spec_mac1(const uint8_t pub[GSP_KEY_BYTES],
				const uint8_t clear[GSP_HS_CLEAR],
				const uint8_t payload[GSP_HS_INIT_BYTES - GSP_HS_MAC1],
				uint8_t out[GSP_HS_MAC1])
{
	enum { AT = GSP_HS_INIT_BYTES - GSP_HS_MAC1 };
	uint8_t label[12 + GSP_KEY_BYTES], key[32], data[GSP_HS_CLEAR + AT];
	memcpy(label, "gossipd-mac1", 12);
	memcpy(label + 12, pub, GSP_KEY_BYTES);
	crypto_generichash(key, sizeof(key), label, sizeof(label), NULL, 0);
	memcpy(data, clear, GSP_HS_CLEAR);
	memcpy(data + GSP_HS_CLEAR, payload, AT);
	crypto_generichash(out, GSP_HS_MAC1, data, sizeof(data), key, sizeof(key));
}

#endif
