/*
 * proto/fetch_msg: copying a neighbour's model (PROTOCOL.md 4.4 and 5.3): the
 * FETCH peer message, which streams a snapshot of the parameters of a
 * model both ends registered, in chunks the asker requests one by one,
 * and the local API's FETCH request and FETCH_OK reply, by which a
 * trainer asks its daemon for that copy.
 *
 * This module owns the layouts and their bounds; it knows nothing of
 * links, models or buffers.
 *
 * FETCH (peer, encrypted; integers little-endian):
 *   u8 type (GSP_MSG_FETCH) | u8 kind | ...
 *   ASK:    | u16 0 | u32 snapshot | u64 offset | u32 len | fingerprint (32)
 *           snapshot 0 asks for a new one (then offset is 0); len is
 *           1..GSP_FETCH_CHUNK_MAX.
 *   DATA:   | u16 0 | u32 snapshot | u64 offset | u64 total | hash (32) |
 *           bytes (the rest, 1..GSP_FETCH_CHUNK_MAX)
 *           snapshot is not 0; offset + bytes <= total; hash is the
 *           BLAKE2b-256 of the whole snapshot (total bytes).
 *   REFUSE: | u16 reason (GSP_FETCH_NO_*) | u32 snapshot | text (the rest,
 *           0..GSP_FETCH_TEXT_MAX, no NUL)
 *
 * FETCH (local API): u8 GSP_API_FETCH | u32 time_limit_ms (1..)
 * FETCH_OK:          u8 GSP_API_FETCH_OK | u64 bytes | u32 took_ms |
 *                    u16 len | peer name (len, 0..GSP_FETCH_NAME_MAX)
 */
#ifndef GSP_PROTO_FETCH_MSG_H
#define GSP_PROTO_FETCH_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define GSP_FETCH_HASH_BYTES 32
#define GSP_FETCH_CHUNK_MAX (1u << 20)
#define GSP_FETCH_TEXT_MAX 200
#define GSP_FETCH_NAME_MAX 64
/* After the type and kind bytes: */
#define GSP_FETCH_ASK_BYTES (2 + 4 + 8 + 4 + GSP_FINGERPRINT_BYTES)
#define GSP_FETCH_DATA_HEAD (2 + 4 + 8 + 8 + GSP_FETCH_HASH_BYTES)

enum {
	GSP_FETCH_ASK = 1,
	GSP_FETCH_DATA = 2,
	GSP_FETCH_REFUSE = 3,
};

/* Why a FETCH was refused. */
enum {
	GSP_FETCH_NO_MODEL = 1,      /* no model here, or another one */
	GSP_FETCH_NO_SNAPSHOT = 2,   /* that snapshot is gone: ask a new one */
	GSP_FETCH_NO_ROOM = 3,       /* serving another asker; try later */
	GSP_FETCH_NO_CHUNK = 4,      /* offset or len outside the snapshot */
	GSP_FETCH_NO_START = 5,      /* our model has not stepped yet: it is
				      * a trainer's initialisation, not the
				      * network's model */
};
#define GSP_FETCH_NO_LAST GSP_FETCH_NO_START

typedef struct gsp_msg_fetch {
	uint8_t kind;                /* GSP_FETCH_* */
	uint32_t snapshot;
	uint64_t offset;             /* ASK, DATA */
	uint32_t len;                /* ASK: asked; DATA: bytes carried */
	uint64_t total;              /* DATA */
	uint8_t fingerprint[GSP_FINGERPRINT_BYTES];   /* ASK */
	uint8_t hash[GSP_FETCH_HASH_BYTES];           /* DATA */
	const uint8_t *bytes;        /* DATA: len bytes (into the message) */
	uint16_t reason;             /* REFUSE */
	const char *text;            /* REFUSE: text_len bytes, no NUL */
	size_t text_len;
} gsp_msg_fetch;

/* Encodes m (the fields of its kind; DATA's bytes are m->len bytes at
 * m->bytes): -EINVAL for a kind unknown or a field outside its bounds,
 * -ENOBUFS without room. */
int gsp_msg_fetch_encode(const gsp_msg_fetch *m, uint8_t *buf, size_t cap,
			 size_t *ret_len) GSP_MUST_CHECK;
/* Decodes one FETCH message: 0, -ENOMSG (another type) or -EBADMSG (a
 * layout rule broken: the link treats it as malformed).  Pointers go
 * into buf; ret is written only on success. */
int gsp_msg_fetch_decode(const uint8_t *buf, size_t len,
			 gsp_msg_fetch *ret) GSP_MUST_CHECK;

typedef struct gsp_api_fetch {
	uint32_t time_limit_ms;      /* >= 1 */
} gsp_api_fetch;

typedef struct gsp_api_fetch_ok {
	uint64_t bytes;              /* copied into the buffer */
	uint32_t took_ms;
	const char *peer;            /* peer_len bytes, no NUL: whose model */
	size_t peer_len;             /* 0..GSP_FETCH_NAME_MAX */
} gsp_api_fetch_ok;

int gsp_api_fetch_encode(const gsp_api_fetch *msg, uint8_t *buf, size_t cap,
			 size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_fetch_decode(const uint8_t *buf, size_t len,
			 gsp_api_fetch *ret) GSP_MUST_CHECK;
int gsp_api_fetch_ok_encode(const gsp_api_fetch_ok *msg, uint8_t *buf,
			    size_t cap, size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_fetch_ok_decode(const uint8_t *buf, size_t len,
			    gsp_api_fetch_ok *ret) GSP_MUST_CHECK;

#endif
