/* Handshake and peer link messages (PROTOCOL.md, "Handshake" and "Peer
 * messages"). */
#include <errno.h>

#include "proto.h"
#include "wire.h"

static bool all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;

	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

/* ---- handshake ---------------------------------------------------------- */

int gsp_hs_header_write(uint8_t type, uint16_t version, uint8_t *buf,
			size_t cap)
{
	wr w;

	if (type < GSP_HS_INIT || type > GSP_HS_CERT || !version_ok(version))
		return -EINVAL;
	if (!buf || cap < GSP_HS_HEADER_BYTES)
		return -ENOBUFS;
	w.p = buf;
	wr_u8(&w, type);
	wr_u16(&w, version);
	return 0;
}

/* HS_INIT and HS_RESP share one shape: type, version, opaque payload. */
static int hs_encode(uint8_t type, uint16_t version, const uint8_t *payload,
		     size_t plen, uint8_t *buf, size_t cap, size_t *ret_len)
{
	int r;

	if (!version_ok(version))
		return -EINVAL;
	r = room(buf, cap, GSP_HS_HEADER_BYTES + plen, ret_len);
	if (r < 0)
		return r;
	r = gsp_hs_header_write(type, version, buf, cap);
	if (r < 0)
		return r;
	memcpy(buf + GSP_HS_HEADER_BYTES, payload, plen);
	*ret_len = GSP_HS_HEADER_BYTES + plen;
	return 0;
}

/* The payload's length is plen, or any in [plen, plen_max]. */
static int hs_decode(const uint8_t *buf, size_t len, uint8_t type,
		     uint16_t *ret_version, uint8_t *ret_payload, size_t plen,
		     size_t plen_max, size_t *ret_plen)
{
	int err = check_versioned(buf, len, type);

	if (err < 0)
		return err;
	size_t n = len - GSP_HS_HEADER_BYTES;
	if (n < plen || n > plen_max)
		return -EBADMSG;
	*ret_version = get_u16(buf + 1);
	memcpy(ret_payload, buf + GSP_HS_HEADER_BYTES, n);
	*ret_plen = n;
	return 0;
}

int gsp_hs_init_encode(const gsp_hs_init *msg, uint8_t *buf, size_t cap,
		       size_t *ret_len)
{
	if (!msg || msg->payload_len < GSP_HS_INIT_PAYLOAD ||
	    msg->payload_len > GSP_HS_INIT_PAYLOAD_MAX)
		return -EINVAL;
	return hs_encode(GSP_HS_INIT, msg->version, msg->payload,
			 msg->payload_len, buf, cap, ret_len);
}

int gsp_hs_init_decode(const uint8_t *buf, size_t len, gsp_hs_init *ret)
{
	size_t n;
	if (!ret)
		return -EINVAL;
	int err = hs_decode(buf, len, GSP_HS_INIT, &ret->version, ret->payload,
			    GSP_HS_INIT_PAYLOAD, GSP_HS_INIT_PAYLOAD_MAX, &n);
	if (!err)
		ret->payload_len = (uint16_t)n;
	return err;
}

int gsp_hs_who_decode(const uint8_t *buf, size_t len, uint16_t *ret_version)
{
	if (!ret_version)
		return -EINVAL;
	int err = check_versioned(buf, len, GSP_HS_WHO);
	if (err < 0)
		return err;
	if (len != GSP_HS_WHO_MSG_BYTES)
		return -EBADMSG;
	*ret_version = get_u16(buf + 1);
	return 0;
}

int gsp_hs_cert_encode(const gsp_hs_cert *msg, uint8_t *buf, size_t cap,
		       size_t *ret_len)
{
	if (!msg || !msg->cert || msg->cert_len < GSP_CERT_MIN ||
	    msg->cert_len > GSP_CERT_MAX || !version_ok(msg->version))
		return -EINVAL;
	size_t n = GSP_HS_HEADER_BYTES + GSP_HS_CERT_LEN_BYTES + msg->cert_len;
	int r = room(buf, cap, n, ret_len);
	if (r < 0)
		return r;
	r = gsp_hs_header_write(GSP_HS_CERT, msg->version, buf, cap);
	if (r < 0)
		return r;
	put_u16(buf + GSP_HS_HEADER_BYTES, msg->cert_len);
	memcpy(buf + GSP_HS_HEADER_BYTES + GSP_HS_CERT_LEN_BYTES, msg->cert,
	       msg->cert_len);
	*ret_len = n;
	return 0;
}

int gsp_hs_cert_decode(const uint8_t *buf, size_t len, gsp_hs_cert *ret)
{
	if (!ret)
		return -EINVAL;
	int err = check_versioned(buf, len, GSP_HS_CERT);
	if (err < 0)
		return err;
	if (len < GSP_HS_HEADER_BYTES + GSP_HS_CERT_LEN_BYTES)
		return -EBADMSG;
	uint16_t n = get_u16(buf + GSP_HS_HEADER_BYTES);
	if (n < GSP_CERT_MIN || n > GSP_CERT_MAX ||
	    len != GSP_HS_HEADER_BYTES + GSP_HS_CERT_LEN_BYTES + (size_t)n)
		return -EBADMSG;
	ret->version = get_u16(buf + 1);
	ret->cert_len = n;
	ret->cert = buf + GSP_HS_HEADER_BYTES + GSP_HS_CERT_LEN_BYTES;
	return 0;
}

int gsp_hs_resp_encode(const gsp_hs_resp *msg, uint8_t *buf, size_t cap,
		       size_t *ret_len)
{
	if (!msg)
		return -EINVAL;
	return hs_encode(GSP_HS_RESP, msg->version, msg->payload,
			 sizeof(msg->payload), buf, cap, ret_len);
}

int gsp_hs_resp_decode(const uint8_t *buf, size_t len, gsp_hs_resp *ret)
{
	if (!ret)
		return -EINVAL;
	size_t n;
	return hs_decode(buf, len, GSP_HS_RESP, &ret->version, ret->payload,
			 sizeof(ret->payload), sizeof(ret->payload), &n);
}

/* ---- MODEL -------------------------------------------------------------- */

#define MODEL_FIXED (1 + 2 + 1 + 2 + 4 + 8 + GSP_FINGERPRINT_BYTES + 2)

static bool model_ok(const gsp_msg_model *m)
{
	if (!version_ok(m->version) || m->n_tensors > GSP_API_MAX_TENSORS ||
	    m->n_floats < m->n_tensors || (m->n_tensors == 0) != (m->n_floats == 0))
		return false;
	/* "No model" carries an all-zero fingerprint and nothing else. */
	if (m->n_tensors == 0 &&
	    (m->method || m->rank || !all_zero(m->fingerprint, GSP_FINGERPRINT_BYTES)))
		return false;
	return text_ok(m->summary, m->summary_len, GSP_MODEL_SUMMARY_MAX);
}

int gsp_msg_model_encode(const gsp_msg_model *msg, uint8_t *buf, size_t cap,
			 size_t *ret_len)
{
	size_t need;
	wr w;
	int r;

	if (!msg || !model_ok(msg))
		return -EINVAL;
	need = MODEL_FIXED + msg->summary_len;
	r = room(buf, cap, need, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, GSP_MSG_MODEL);
	wr_u16(&w, msg->version);
	wr_u8(&w, msg->method);
	wr_u16(&w, msg->rank);
	wr_u32(&w, msg->n_tensors);
	wr_u64(&w, msg->n_floats);
	wr_bytes(&w, msg->fingerprint, GSP_FINGERPRINT_BYTES);
	wr_text16(&w, msg->summary, msg->summary_len);
	*ret_len = need;
	return 0;
}

int gsp_msg_model_decode(const uint8_t *buf, size_t len, gsp_msg_model *ret)
{
	gsp_msg_model m;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_versioned(buf, len, GSP_MSG_MODEL);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	m.version = rd_u16(&r);
	m.method = rd_u8(&r);
	m.rank = rd_u16(&r);
	m.n_tensors = rd_u32(&r);
	m.n_floats = rd_u64(&r);
	rd_copy(&r, m.fingerprint, GSP_FINGERPRINT_BYTES);
	m.summary_len = 0;
	m.summary = rd_text16(&r, GSP_MODEL_SUMMARY_MAX, &m.summary_len);
	if (!rd_done(&r) || !model_ok(&m))
		return -EBADMSG;
	*ret = m;
	return 0;
}

/* ---- ROUND -------------------------------------------------------------- */

static bool round_ok(const gsp_msg_round *m)
{
	return m->degree >= 1 && m->generation >= 1 && m->round >= 1 &&
	       m->payload_len >= 1 &&
	       !(m->flags & ~(GSP_ROUND_REACHED | GSP_ROUND_AVERAGING | GSP_ROUND_FINITE));
}

static void round_head(const gsp_msg_round *msg, uint8_t *buf)
{
	wr w = { buf };

	wr_u8(&w, GSP_MSG_ROUND);
	wr_u8(&w, msg->flags);
	wr_u16(&w, msg->degree);
	wr_u32(&w, msg->generation);
	wr_u64(&w, msg->round);
}

int gsp_msg_round_encode_head(const gsp_msg_round *msg, uint8_t *buf,
			      size_t cap)
{
	if (!msg || !round_ok(msg))
		return -EINVAL;
	if (!buf || cap < GSP_MSG_ROUND_HEAD)
		return -ENOBUFS;
	round_head(msg, buf);
	return 0;
}

int gsp_msg_round_encode(const gsp_msg_round *msg, uint8_t *buf, size_t cap,
			 size_t *ret_len)
{
	size_t need;
	int r;

	if (!msg || !round_ok(msg) || !msg->payload ||
	    msg->payload_len > SIZE_MAX - GSP_MSG_ROUND_HEAD)
		return -EINVAL;
	need = GSP_MSG_ROUND_HEAD + msg->payload_len;
	r = room(buf, cap, need, ret_len);
	if (r < 0)
		return r;
	round_head(msg, buf);
	memmove(buf + GSP_MSG_ROUND_HEAD, msg->payload, msg->payload_len);
	*ret_len = need;
	return 0;
}

int gsp_msg_round_decode(const uint8_t *buf, size_t len, gsp_msg_round *ret)
{
	gsp_msg_round m;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_type(buf, len, GSP_MSG_ROUND);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	m.flags = rd_u8(&r);
	m.degree = rd_u16(&r);
	m.generation = rd_u32(&r);
	m.round = rd_u64(&r);
	if (r.bad)
		return -EBADMSG;
	m.payload_len = r.left;
	m.payload = rd_bytes(&r, r.left);
	if (!rd_done(&r) || !round_ok(&m))
		return -EBADMSG;
	*ret = m;
	return 0;
}

/* ---- RESYNC ------------------------------------------------------------- */

#define RESYNC_BYTES (1 + 1 + 4 + 8 + 8 + GSP_GEN_TAG_BYTES + 4 + 8 + 8 + 4 + 4)

static bool resync_ok(const gsp_msg_resync *m)
{
	if (m->flags & ~(GSP_RESYNC_LIVE | GSP_RESYNC_NO_HISTORY | GSP_RESYNC_ENDING |
			 GSP_RESYNC_NO_START))
		return false;
	if ((m->flags & GSP_RESYNC_ENDING)
		    ? !(m->flags & GSP_RESYNC_LIVE) || m->ending_applied > m->last_completed
		    : m->ending_applied != 0)
		return false;
	/* NaN fails both comparisons. */
	if (!(m->weight >= 0.0f && m->weight <= 1.0f))
		return false;
	if (m->ended_generation > m->generation ||
	    (m->ended_generation == 0 && m->ended_applied != 0))
		return false;
	if (m->generation == 0)
		return m->last_completed == 0 && m->last_sent == 0 &&
		       !(m->flags & GSP_RESYNC_LIVE) &&
		       all_zero(m->gen_tag, GSP_GEN_TAG_BYTES);
	return m->last_completed <= m->last_sent &&
	       m->last_sent - m->last_completed <= 1;
}

int gsp_msg_resync_encode(const gsp_msg_resync *msg, uint8_t *buf, size_t cap,
			  size_t *ret_len)
{
	wr w;
	int r;

	if (!msg || !resync_ok(msg))
		return -EINVAL;
	r = room(buf, cap, RESYNC_BYTES, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, GSP_MSG_RESYNC);
	wr_u8(&w, msg->flags);
	wr_u32(&w, msg->generation);
	wr_u64(&w, msg->last_completed);
	wr_u64(&w, msg->last_sent);
	wr_bytes(&w, msg->gen_tag, GSP_GEN_TAG_BYTES);
	wr_u32(&w, msg->ended_generation);
	wr_u64(&w, msg->ended_applied);
	wr_u64(&w, msg->ending_applied);
	wr_f32(&w, msg->weight);
	wr_u32(&w, msg->schedule);
	*ret_len = RESYNC_BYTES;
	return 0;
}

int gsp_msg_resync_decode(const uint8_t *buf, size_t len, gsp_msg_resync *ret)
{
	gsp_msg_resync m;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_type(buf, len, GSP_MSG_RESYNC);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	m.flags = rd_u8(&r);
	m.generation = rd_u32(&r);
	m.last_completed = rd_u64(&r);
	m.last_sent = rd_u64(&r);
	rd_copy(&r, m.gen_tag, GSP_GEN_TAG_BYTES);
	m.ended_generation = rd_u32(&r);
	m.ended_applied = rd_u64(&r);
	m.ending_applied = rd_u64(&r);
	m.weight = rd_f32(&r);
	m.schedule = rd_u32(&r);
	if (!rd_done(&r) || !resync_ok(&m))
		return -EBADMSG;
	*ret = m;
	return 0;
}

/* ---- PING / PONG -------------------------------------------------------- */

#define PING_BYTES (1 + 8 + 8)

static int ping_encode(uint8_t type, const gsp_msg_ping *msg, uint8_t *buf,
		       size_t cap, size_t *ret_len)
{
	wr w;
	int r;

	if (!msg)
		return -EINVAL;
	r = room(buf, cap, PING_BYTES, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, type);
	wr_u64(&w, msg->nonce);
	wr_u64(&w, msg->time_ns);
	*ret_len = PING_BYTES;
	return 0;
}

static int ping_decode(uint8_t type, const uint8_t *buf, size_t len,
		       gsp_msg_ping *ret)
{
	gsp_msg_ping m;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_type(buf, len, type);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	m.nonce = rd_u64(&r);
	m.time_ns = rd_u64(&r);
	if (!rd_done(&r))
		return -EBADMSG;
	*ret = m;
	return 0;
}

int gsp_msg_ping_encode(const gsp_msg_ping *msg, uint8_t *buf, size_t cap,
			size_t *ret_len)
{
	return ping_encode(GSP_MSG_PING, msg, buf, cap, ret_len);
}

int gsp_msg_ping_decode(const uint8_t *buf, size_t len, gsp_msg_ping *ret)
{
	return ping_decode(GSP_MSG_PING, buf, len, ret);
}

int gsp_msg_pong_encode(const gsp_msg_ping *msg, uint8_t *buf, size_t cap,
			size_t *ret_len)
{
	return ping_encode(GSP_MSG_PONG, msg, buf, cap, ret_len);
}

int gsp_msg_pong_decode(const uint8_t *buf, size_t len, gsp_msg_ping *ret)
{
	return ping_decode(GSP_MSG_PONG, buf, len, ret);
}

/* ---- GOODBYE ------------------------------------------------------------ */

int gsp_msg_goodbye_encode(const gsp_msg_goodbye *msg, uint8_t *buf,
			   size_t cap, size_t *ret_len)
{
	size_t need;
	wr w;
	int r;

	if (!msg || !text_ok(msg->text, msg->text_len, GSP_GOODBYE_TEXT_MAX))
		return -EINVAL;
	need = 1 + 2 + 2 + msg->text_len;
	r = room(buf, cap, need, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, GSP_MSG_GOODBYE);
	wr_u16(&w, msg->reason);
	wr_text16(&w, msg->text, msg->text_len);
	*ret_len = need;
	return 0;
}

int gsp_msg_goodbye_decode(const uint8_t *buf, size_t len,
			   gsp_msg_goodbye *ret)
{
	gsp_msg_goodbye m;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_type(buf, len, GSP_MSG_GOODBYE);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	m.reason = rd_u16(&r);
	m.text_len = 0;
	m.text = rd_text16(&r, GSP_GOODBYE_TEXT_MAX, &m.text_len);
	if (!rd_done(&r))
		return -EBADMSG;
	*ret = m;
	return 0;
}
