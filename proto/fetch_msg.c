/* FETCH: a neighbour's model, and the API's request for it (fetch_msg.h). */
#include <errno.h>
#include <string.h>

#include "fetch_msg.h"
#include "wire.h"

static bool fetch_ok(const gsp_msg_fetch *m)
{
	switch (m->kind) {
	case GSP_FETCH_ASK:
		return m->len >= 1 && m->len <= GSP_FETCH_CHUNK_MAX &&
		       (m->snapshot || m->offset == 0);
	case GSP_FETCH_DATA:
		return m->snapshot && m->len >= 1 && m->len <= GSP_FETCH_CHUNK_MAX &&
		       m->bytes && m->offset <= m->total && m->len <= m->total - m->offset;
	case GSP_FETCH_REFUSE:
		return m->reason >= 1 && m->reason <= GSP_FETCH_NO_LAST &&
		       text_ok(m->text, m->text_len, GSP_FETCH_TEXT_MAX);
	default:
		return false;
	}
}

static size_t fetch_size(const gsp_msg_fetch *m)
{
	switch (m->kind) {
	case GSP_FETCH_ASK:
		return 2 + GSP_FETCH_ASK_BYTES;
	case GSP_FETCH_DATA:
		return 2 + GSP_FETCH_DATA_HEAD + m->len;
	default:
		return 2 + 2 + 4 + m->text_len;
	}
}

int gsp_msg_fetch_encode(const gsp_msg_fetch *m, uint8_t *buf, size_t cap,
			 size_t *ret_len)
{
	if (!m || !fetch_ok(m))
		return -EINVAL;
	size_t need = fetch_size(m);
	int r = room(buf, cap, need, ret_len);
	if (r < 0)
		return r;
	wr w = {.p = buf};
	wr_u8(&w, GSP_MSG_FETCH);
	wr_u8(&w, m->kind);
	wr_u16(&w, m->kind == GSP_FETCH_REFUSE ? m->reason : 0);
	wr_u32(&w, m->snapshot);
	switch (m->kind) {
	case GSP_FETCH_ASK:
		wr_u64(&w, m->offset);
		wr_u32(&w, m->len);
		wr_bytes(&w, m->fingerprint, GSP_FINGERPRINT_BYTES);
		break;
	case GSP_FETCH_DATA:
		wr_u64(&w, m->offset);
		wr_u64(&w, m->total);
		wr_bytes(&w, m->hash, GSP_FETCH_HASH_BYTES);
		wr_bytes(&w, m->bytes, m->len);
		break;
	default:
		wr_bytes(&w, m->text, m->text_len);
	}
	*ret_len = need;
	return 0;
}

int gsp_msg_fetch_decode(const uint8_t *buf, size_t len, gsp_msg_fetch *ret)
{
	if (!ret)
		return -EINVAL;
	int err = check_type(buf, len, GSP_MSG_FETCH);
	if (err < 0)
		return err;
	gsp_msg_fetch m = {0};
	rd r = rd_init(buf + 1, len - 1);
	m.kind = rd_u8(&r);
	uint16_t reason = rd_u16(&r);
	m.snapshot = rd_u32(&r);
	switch (m.kind) {
	case GSP_FETCH_ASK:
		m.offset = rd_u64(&r);
		m.len = rd_u32(&r);
		rd_copy(&r, m.fingerprint, GSP_FINGERPRINT_BYTES);
		break;
	case GSP_FETCH_DATA:
		m.offset = rd_u64(&r);
		m.total = rd_u64(&r);
		rd_copy(&r, m.hash, GSP_FETCH_HASH_BYTES);
		if (r.left > GSP_FETCH_CHUNK_MAX)
			return -EBADMSG;
		m.len = (uint32_t)r.left;
		m.bytes = rd_bytes(&r, r.left);
		break;
	case GSP_FETCH_REFUSE:
		m.reason = reason;
		m.text_len = r.left;
		m.text = (const char *)rd_bytes(&r, r.left);
		break;
	default:
		return -EBADMSG;
	}
	if (r.bad || !rd_done(&r) || (m.kind != GSP_FETCH_REFUSE && reason) || !fetch_ok(&m))
		return -EBADMSG;
	*ret = m;
	return 0;
}

/* ---- the local API's FETCH and FETCH_OK ----------------------------------- */

int gsp_api_fetch_encode(const gsp_api_fetch *msg, uint8_t *buf, size_t cap,
			 size_t *ret_len)
{
	if (!msg || msg->time_limit_ms == 0)
		return -EINVAL;
	int r = room(buf, cap, 5, ret_len);
	if (r < 0)
		return r;
	wr w = {.p = buf};
	wr_u8(&w, GSP_API_FETCH);
	wr_u32(&w, msg->time_limit_ms);
	*ret_len = 5;
	return 0;
}

int gsp_api_fetch_decode(const uint8_t *buf, size_t len, gsp_api_fetch *ret)
{
	if (!ret)
		return -EINVAL;
	int err = check_type(buf, len, GSP_API_FETCH);
	if (err < 0)
		return err;
	rd r = rd_init(buf + 1, len - 1);
	gsp_api_fetch m = {.time_limit_ms = rd_u32(&r)};
	if (!rd_done(&r) || m.time_limit_ms == 0)
		return -EBADMSG;
	*ret = m;
	return 0;
}

int gsp_api_fetch_ok_encode(const gsp_api_fetch_ok *msg, uint8_t *buf,
			    size_t cap, size_t *ret_len)
{
	if (!msg || !text_ok(msg->peer, msg->peer_len, GSP_FETCH_NAME_MAX))
		return -EINVAL;
	size_t need = 1 + 8 + 4 + 2 + msg->peer_len;
	int r = room(buf, cap, need, ret_len);
	if (r < 0)
		return r;
	wr w = {.p = buf};
	wr_u8(&w, GSP_API_FETCH_OK);
	wr_u64(&w, msg->bytes);
	wr_u32(&w, msg->took_ms);
	wr_text16(&w, msg->peer, msg->peer_len);
	*ret_len = need;
	return 0;
}

int gsp_api_fetch_ok_decode(const uint8_t *buf, size_t len, gsp_api_fetch_ok *ret)
{
	if (!ret)
		return -EINVAL;
	int err = check_type(buf, len, GSP_API_FETCH_OK);
	if (err < 0)
		return err;
	rd r = rd_init(buf + 1, len - 1);
	gsp_api_fetch_ok m = {0};
	m.bytes = rd_u64(&r);
	m.took_ms = rd_u32(&r);
	m.peer = rd_text16(&r, GSP_FETCH_NAME_MAX, &m.peer_len);
	if (r.bad || !rd_done(&r))
		return -EBADMSG;
	*ret = m;
	return 0;
}
