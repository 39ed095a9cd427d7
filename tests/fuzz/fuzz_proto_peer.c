/*
 * libFuzzer harness for the peer link side of proto/: the frame reader and
 * every handshake and peer message decoder.  Input: one byte choosing the
 * frame cap, then bytes read two ways: as one message (every decoder is
 * tried) and as a stream of frames whose bodies are decoded in turn.  A
 * decoder must reject with a documented code or accept; what it accepts
 * must encode back to exactly the same bytes.  Bodies are copied to
 * exact-size heap buffers so AddressSanitizer catches any over-read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out[GSP_PROTO_CONTROL_MAX + (1u << 16)];

static void check_code(int r)
{
	if (r != 0 && r != -EBADMSG && r != -ENOMSG && r != -EPROTONOSUPPORT)
		abort();
}

/* The encoder's output must be the decoder's input, byte for byte. */
static void same(int r, size_t n, const uint8_t *buf, size_t len)
{
	if (r != 0 || n != len || memcmp(out, buf, len) != 0)
		abort();
}

static void decode_all(const uint8_t *buf, size_t len)
{
	gsp_hs_init hi;
	gsp_hs_resp hr;
	gsp_hs_cert hc;
	gsp_msg_model mm;
	gsp_msg_round mr;
	gsp_msg_resync ms;
	gsp_msg_ping mp;
	gsp_msg_goodbye mg;
	uint8_t type;
	uint16_t version;
	size_t n = 0;
	int r, accepted = 0;

	r = gsp_hs_init_decode(buf, len, &hi);
	check_code(r);
	if (r == 0) {
		accepted++;
		same(gsp_hs_init_encode(&hi, out, sizeof(out), &n), n, buf, len);
	}
	r = gsp_hs_resp_decode(buf, len, &hr);
	check_code(r);
	if (r == 0) {
		accepted++;
		same(gsp_hs_resp_encode(&hr, out, sizeof(out), &n), n, buf, len);
	}
	r = gsp_hs_who_decode(buf, len, &version);
	check_code(r);
	if (r == 0) {
		accepted++;
		if (gsp_hs_header_write(GSP_HS_WHO, version, out, sizeof(out)) != 0 ||
		    len != GSP_HS_WHO_MSG_BYTES)
			abort();
		same(0, len, buf, len);
	}
	r = gsp_hs_cert_decode(buf, len, &hc);
	check_code(r);
	if (r == 0) {
		accepted++;
		if (hc.cert != buf + GSP_HS_HEADER_BYTES + 2 ||
		    hc.cert_len < GSP_CERT_MIN || hc.cert_len > GSP_CERT_MAX)
			abort();
		same(gsp_hs_cert_encode(&hc, out, sizeof(out), &n), n, buf, len);
	}
	r = gsp_msg_model_decode(buf, len, &mm);
	check_code(r);
	if (r == 0) {
		accepted++;
		same(gsp_msg_model_encode(&mm, out, sizeof(out), &n), n, buf, len);
	}
	r = gsp_msg_round_decode(buf, len, &mr);
	check_code(r);
	if (r == 0) {
		accepted++;
		if (mr.payload != buf + GSP_MSG_ROUND_HEAD ||
		    mr.payload_len != len - GSP_MSG_ROUND_HEAD)
			abort();
		if (len <= sizeof(out))
			same(gsp_msg_round_encode(&mr, out, sizeof(out), &n), n,
			     buf, len);
	}
	r = gsp_msg_resync_decode(buf, len, &ms);
	check_code(r);
	if (r == 0) {
		accepted++;
		same(gsp_msg_resync_encode(&ms, out, sizeof(out), &n), n, buf, len);
	}
	r = gsp_msg_ping_decode(buf, len, &mp);
	check_code(r);
	if (r == 0) {
		accepted++;
		same(gsp_msg_ping_encode(&mp, out, sizeof(out), &n), n, buf, len);
	}
	r = gsp_msg_pong_decode(buf, len, &mp);
	check_code(r);
	if (r == 0) {
		accepted++;
		same(gsp_msg_pong_encode(&mp, out, sizeof(out), &n), n, buf, len);
	}
	r = gsp_msg_goodbye_decode(buf, len, &mg);
	check_code(r);
	if (r == 0) {
		accepted++;
		same(gsp_msg_goodbye_encode(&mg, out, sizeof(out), &n), n, buf, len);
	}
	/* At most one decoder accepts, and the classifiers agree with it. */
	if (accepted > 1)
		abort();
	if (accepted == 1 && gsp_msg_type(buf, len, &type) != 0 &&
	    gsp_hs_type(buf, len, &type) != 0)
		abort();
	r = gsp_proto_version_of(buf, len, &version);
	if (r != 0 && r != -EBADMSG && r != -ENOMSG)
		abort();
}

/* Decodes an exact-size heap copy. */
static void decode_copy(const uint8_t *buf, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		abort();
	if (len)
		memcpy(copy, buf, len);
	decode_all(len ? copy : NULL, len);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t caps[] = {
		GSP_PROTO_PREAUTH_MAX, GSP_PROTO_CONTROL_MAX, 1u << 16, UINT32_MAX,
	};
	const uint8_t *p, *body;
	size_t left, used;
	uint32_t cap, len;
	int r;

	if (size < 1)
		return 0;
	cap = caps[data[0] & 3];
	decode_copy(data + 1, size - 1);

	p = data + 1;
	left = size - 1;
	for (;;) {
		r = gsp_frame_parse(p, left, cap, &body, &len, &used);
		if (r == -EAGAIN || r == -EBADMSG || r == -EMSGSIZE)
			break;
		if (r != 0 || len == 0 || len > cap || used != 4 + (size_t)len ||
		    used > left || body != p + 4)
			abort();
		decode_copy(body, len);
		p += used;
		left -= used;
	}
	return 0;
}
