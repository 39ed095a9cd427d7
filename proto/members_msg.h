/*
 * proto/members_msg: the MEMBERS peer message (PROTOCOL.md 4.4), which
 * carries member records (member.h) between daemons over an
 * authenticated link: a full sync in parts, an ask for one, and the
 * records a node disseminates.
 *
 * This module owns the message's layout and its bounds; it checks that
 * every record decodes (gsp_member_decode) but not their signatures: the
 * receiver verifies each record (gsp_member_verify) and drops, and
 * counts, those that fail, without closing the link.
 *
 * Layout (integers little-endian):
 *   u8 type (GSP_MSG_MEMBERS) | u8 flags | u8 count (0..GSP_MEMBERS_PER_MSG) |
 *   count x (u16 len (GSP_MEMBER_FIXED..GSP_MEMBER_MAX) | record (len))
 * A message is at most GSP_MEMBERS_MSG_MAX bytes, under the cap of a
 * link's frames before models match (GSP_PROTO_CONTROL_MAX), so it may be
 * sent at any time after the handshake.
 */
#ifndef GSP_PROTO_MEMBERS_MSG_H
#define GSP_PROTO_MEMBERS_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "member.h"
#include "proto.h"

#define GSP_MEMBERS_PER_MSG 8
#define GSP_MEMBERS_HEAD 3
#define GSP_MEMBERS_MSG_MAX (GSP_MEMBERS_HEAD + GSP_MEMBERS_PER_MSG * (2 + GSP_MEMBER_MAX))

/* Flags. */
enum {
	GSP_MEMBERS_SYNC = 0x01,  /* a part of a full sync (an answer to ASK) */
	GSP_MEMBERS_LAST = 0x02,  /* with SYNC: its last part */
	GSP_MEMBERS_ASK = 0x04,   /* the sender asks for a full sync */
};
#define GSP_MEMBERS_FLAGS_KNOWN (GSP_MEMBERS_SYNC | GSP_MEMBERS_LAST | GSP_MEMBERS_ASK)

typedef struct gsp_msg_members {
	uint8_t flags;
	uint8_t count;
	gsp_member rec[GSP_MEMBERS_PER_MSG];
} gsp_msg_members;

/* Encodes flags and recs[0..n): -EINVAL for n above GSP_MEMBERS_PER_MSG,
 * unknown flags, LAST without SYNC, or a record gsp_member_encode
 * refuses; -ENOBUFS without room. */
int gsp_msg_members_encode(uint8_t flags, const gsp_member *const *recs,
			   size_t n, uint8_t *buf, size_t cap,
			   size_t *ret_len) GSP_MUST_CHECK;
/* Decodes one MEMBERS message: 0, -ENOMSG (another type), -EBADMSG (a
 * layout rule broken: the link treats it as malformed), or a record's
 * own GSP_ADM_* code (also malformed).  ret is written only on success. */
int gsp_msg_members_decode(const uint8_t *buf, size_t len,
			   gsp_msg_members *ret) GSP_MUST_CHECK;

#endif
