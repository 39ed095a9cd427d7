/* The MEMBERS peer message (members_msg.h, PROTOCOL.md 4.4). */
#include <errno.h>
#include <string.h>

#include "members_msg.h"
#include "wire.h"

_Static_assert(GSP_MEMBERS_MSG_MAX <= GSP_PROTO_CONTROL_MAX,
	       "MEMBERS fits a link's frames before models match");

static bool flags_ok(uint8_t flags)
{
	if (flags & ~GSP_MEMBERS_FLAGS_KNOWN)
		return false;
	return !(flags & GSP_MEMBERS_LAST) || (flags & GSP_MEMBERS_SYNC);
}

int gsp_msg_members_encode(uint8_t flags, const gsp_member *const *recs,
			   size_t n, uint8_t *buf, size_t cap, size_t *ret_len)
{
	uint8_t tmp[GSP_MEMBERS_MSG_MAX];
	size_t at = GSP_MEMBERS_HEAD, len;
	int r;

	if (!ret_len || n > GSP_MEMBERS_PER_MSG || !flags_ok(flags) || (n && !recs))
		return -EINVAL;
	tmp[0] = GSP_MSG_MEMBERS;
	tmp[1] = flags;
	tmp[2] = (uint8_t)n;
	for (size_t i = 0; i < n; i++) {
		if (!recs[i])
			return -EINVAL;
		r = gsp_member_encode(recs[i], tmp + at + 2, sizeof(tmp) - at - 2, &len);
		if (r < 0)
			return r == -ENOBUFS ? -EINVAL : r;
		put_u16(tmp + at, (uint16_t)len);
		at += 2 + len;
	}
	r = room(buf, cap, at, ret_len);
	if (r < 0)
		return r;
	memcpy(buf, tmp, at);
	*ret_len = at;
	return 0;
}

int gsp_msg_members_decode(const uint8_t *buf, size_t len, gsp_msg_members *ret)
{
	gsp_msg_members m;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	if (len > GSP_MEMBERS_MSG_MAX)
		return -EBADMSG;
	r = rd_init(buf, len);
	if (rd_u8(&r) != GSP_MSG_MEMBERS)
		return r.bad ? -EBADMSG : -ENOMSG;
	m.flags = rd_u8(&r);
	m.count = rd_u8(&r);
	if (r.bad || !flags_ok(m.flags) || m.count > GSP_MEMBERS_PER_MSG)
		return -EBADMSG;
	for (unsigned i = 0; i < m.count; i++) {
		uint16_t n = rd_u16(&r);
		const uint8_t *p;

		if (n < GSP_MEMBER_FIXED || n > GSP_MEMBER_MAX)
			return -EBADMSG;
		p = rd_bytes(&r, n);
		if (!p)
			return -EBADMSG;
		err = gsp_member_decode(p, n, &m.rec[i]);
		if (err)
			return err;
	}
	if (r.bad || r.left)
		return -EBADMSG;
	*ret = m;
	return 0;
}
