/* Frames, message-type classification, versions and limits (PROTOCOL.md,
 * "Framing" and "Limits"). */
#include <errno.h>

#include "proto.h"
#include "wire.h"

int gsp_frame_parse(const uint8_t *buf, size_t avail, uint32_t max_len,
		    const uint8_t **ret_body, uint32_t *ret_len,
		    size_t *ret_consumed)
{
	uint32_t len;

	if (!ret_body || !ret_len || !ret_consumed || (!buf && avail))
		return -EINVAL;
	if (avail < GSP_FRAME_HEADER)
		return -EAGAIN;
	len = get_u32(buf);
	if (len == 0)
		return -EBADMSG;
	if (len > max_len)
		return -EMSGSIZE;
	if (avail - GSP_FRAME_HEADER < len)
		return -EAGAIN;
	*ret_body = buf + GSP_FRAME_HEADER;
	*ret_len = len;
	*ret_consumed = (size_t)GSP_FRAME_HEADER + len;
	return 0;
}

int gsp_frame_header_write(uint8_t *buf, size_t cap, uint32_t body_len)
{
	if (body_len == 0)
		return -EINVAL;
	if (!buf || cap < GSP_FRAME_HEADER)
		return -ENOBUFS;
	put_u32(buf, body_len);
	return 0;
}

uint32_t gsp_frame_header_read(const uint8_t buf[static GSP_FRAME_HEADER])
{
	return get_u32(buf);
}

int gsp_proto_peer_max_frame(uint64_t max_round_payload, uint32_t *ret_max)
{
	const uint64_t over = GSP_MSG_ROUND_HEAD + GSP_AEAD_TAG_BYTES;
	uint64_t body;

	if (!ret_max)
		return -EINVAL;
	if (max_round_payload > UINT32_MAX - over)
		return -EMSGSIZE;
	body = max_round_payload ? max_round_payload + over : 0;
	*ret_max = body > GSP_PROTO_CONTROL_MAX ? (uint32_t)body
						: GSP_PROTO_CONTROL_MAX;
	return 0;
}

static int classify(const uint8_t *buf, size_t len, bool (*known)(uint8_t),
		    uint8_t *ret_type)
{
	if (!ret_type)
		return -EINVAL;
	if (!buf || len == 0)
		return -EBADMSG;
	if (!known(buf[0]))
		return -ENOMSG;
	*ret_type = buf[0];
	return 0;
}

static bool is_peer_type(uint8_t t)
{
	return t >= GSP_MSG_MODEL && t <= GSP_MSG_FETCH;
}

static bool is_hs_type(uint8_t t)
{
	return t >= GSP_HS_INIT && t <= GSP_HS_CERT;
}

static bool is_api_type(uint8_t t)
{
	return (t >= GSP_API_HELLO && t <= GSP_API_LEAVE) ||
	       (t >= GSP_API_HELLO_OK && t <= GSP_API_FETCH_OK) ||
	       t == GSP_API_ERROR;
}

int gsp_msg_type(const uint8_t *buf, size_t len, uint8_t *ret_type)
{
	return classify(buf, len, is_peer_type, ret_type);
}

int gsp_hs_type(const uint8_t *buf, size_t len, uint8_t *ret_type)
{
	return classify(buf, len, is_hs_type, ret_type);
}

int gsp_api_type(const uint8_t *buf, size_t len, uint8_t *ret_type)
{
	return classify(buf, len, is_api_type, ret_type);
}

int gsp_proto_version_of(const uint8_t *buf, size_t len, uint16_t *ret_version)
{
	if (!ret_version)
		return -EINVAL;
	if (!buf || len == 0)
		return -EBADMSG;
	switch (buf[0]) {
	case GSP_HS_INIT:
	case GSP_HS_RESP:
	case GSP_HS_WHO:
	case GSP_HS_CERT:
	case GSP_MSG_MODEL:
	case GSP_API_HELLO:
	case GSP_API_HELLO_OK:
		break;
	default:
		return -ENOMSG;
	}
	if (len < 3)
		return -EBADMSG;
	*ret_version = get_u16(buf + 1);
	return 0;
}
