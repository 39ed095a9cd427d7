/* Helpers shared by the daemon's unit tests that speak the handshake by
 * hand: the clear bytes of HS_INIT and HS_RESP at our protocol version,
 * an INIT's mac1, and a whole HS_INIT frame as an initiator sends it.
 * Header-only. */
#ifndef GSP_TEST_HSFRAME_H
#define GSP_TEST_HSFRAME_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "handshake.h"
#include "proto.h"
#include "../common/hsmac1.h"

/* Type, then the version little-endian (PROTOCOL.md 4.2). */
static const uint8_t HS_INIT_CLEAR[GSP_HS_CLEAR] = {
	GSP_HS_INIT, GSP_PROTO_VERSION & 0xff, GSP_PROTO_VERSION >> 8,
};
static const uint8_t HS_RESP_CLEAR[GSP_HS_CLEAR] = {
	GSP_HS_RESP, GSP_PROTO_VERSION & 0xff, GSP_PROTO_VERSION >> 8,
};

/* Writes the mac1 of INIT's payload for the responder with public key
 * pub into its last GSP_HS_MAC1 bytes (PROTOCOL.md 4.2, hsmac1.h): for
 * tests that change an INIT (or its clear bytes) and need it to pass the
 * mac1 check. */
static inline void hs_test_mac1(const uint8_t pub[GSP_KEY_BYTES],
				const uint8_t clear[GSP_HS_CLEAR],
				uint8_t init[GSP_HS_INIT_BYTES])
{
	hs_spec_mac1(pub, clear, init, init + GSP_HS_INIT_BYTES - GSP_HS_MAC1);
}

/* An HS_INIT frame (header and message) from s to the responder whose
 * static key is remote, with timestamp ts; hs is left ready to read the
 * response.  Returns the frame's length. */
static inline size_t hs_init_frame(gsp_hs *hs, const gsp_keypair *s,
				   const uint8_t remote[GSP_KEY_BYTES],
				   const uint8_t ts[GSP_HS_TIMESTAMP],
				   uint8_t frame[4 + GSP_HS_INIT_MSG_BYTES])
{
	gsp_hs_init msg = {.version = GSP_PROTO_VERSION,
			   .payload_len = GSP_HS_INIT_PAYLOAD};
	size_t n;
	ck_assert_int_eq(gsp_hs_initiate(hs, s, remote, HS_INIT_CLEAR, ts,
					 msg.payload), 0);
	ck_assert_int_eq(gsp_hs_init_encode(&msg, frame + 4,
					    GSP_HS_INIT_MSG_BYTES, &n), 0);
	ck_assert_int_eq(gsp_frame_header_write(frame, 4, (uint32_t)n), 0);
	return 4 + n;
}

#endif
