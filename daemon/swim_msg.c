/*
 * swim_msg: the byte codec of swim's messages (layout in swim.h).  Strict:
 * a short or long input, an unknown version, type or status, more updates
 * than SWIM_PIGGYBACK_MAX, a PING_REQ timeout out of 1..60000 or a
 * timeout on another type, or a member or sender of SWIM_ID_NONE is
 * refused; what is accepted encodes back to the same bytes.
 */
#include <errno.h>
#include <string.h>

#include "swim.h"

_Static_assert(SWIM_MSG_MAX == 151, "the layout of swim.h");

static void put32(uint8_t *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (unsigned i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static bool valid(const swim_msg *m)
{
	if (m->type < SWIM_PING || m->type > SWIM_NACK ||
	    m->n_updates > SWIM_PIGGYBACK_MAX)
		return false;
	if (m->type == SWIM_PING_REQ ?
	    m->timeout_ms < 1 || m->timeout_ms > SWIM_REQ_TIMEOUT_MAX :
	    m->timeout_ms != 0)
		return false;
	for (unsigned i = 0; i < m->n_updates; i++) {
		const swim_update *u = &m->updates[i];
		if (u->status > GSP_MEMBER_LEFT || u->member == SWIM_ID_NONE ||
		    u->from == SWIM_ID_NONE)
			return false;
	}
	return true;
}

int swim_msg_encode(const swim_msg *msg, uint8_t *buf, size_t cap,
		    size_t *ret_len)
{
	if (!valid(msg))
		return -EINVAL;
	size_t len = SWIM_MSG_HEAD + (size_t)msg->n_updates * SWIM_UPDATE_BYTES;
	if (cap < len)
		return -ENOBUFS;
	buf[0] = SWIM_MSG_VERSION;
	buf[1] = msg->type;
	put32(buf + 2, msg->seq);
	put32(buf + 6, msg->target);
	put32(buf + 10, msg->timeout_ms);
	buf[14] = msg->n_updates;
	uint8_t *p = buf + SWIM_MSG_HEAD;
	for (unsigned i = 0; i < msg->n_updates; i++, p += SWIM_UPDATE_BYTES) {
		const swim_update *u = &msg->updates[i];
		put32(p, u->member);
		put32(p + 4, u->from);
		put64(p + 8, u->incarnation);
		p[16] = u->status;
	}
	*ret_len = len;
	return 0;
}

int swim_msg_decode(const uint8_t *buf, size_t len, swim_msg *ret)
{
	swim_msg m;
	if (len < SWIM_MSG_HEAD || buf[0] != SWIM_MSG_VERSION)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.type = buf[1];
	m.seq = get32(buf + 2);
	m.target = get32(buf + 6);
	m.timeout_ms = get32(buf + 10);
	m.n_updates = buf[14];
	if (m.n_updates > SWIM_PIGGYBACK_MAX ||
	    len != SWIM_MSG_HEAD + (size_t)m.n_updates * SWIM_UPDATE_BYTES)
		return -EINVAL;
	const uint8_t *p = buf + SWIM_MSG_HEAD;
	for (unsigned i = 0; i < m.n_updates; i++, p += SWIM_UPDATE_BYTES) {
		swim_update *u = &m.updates[i];
		u->member = get32(p);
		u->from = get32(p + 4);
		u->incarnation = get64(p + 8);
		u->status = p[16];
	}
	if (!valid(&m))
		return -EINVAL;
	*ret = m;
	return 0;
}
