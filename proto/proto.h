/*
 * proto: the wire formats of gossipd.
 *
 * This header owns the byte layout of everything gossipd sends: frames on
 * peer links and on the local API socket, the handshake messages, the peer
 * link messages, the local API requests and replies, the model fingerprint
 * and every size limit.  proto/PROTOCOL.md is the specification; this code
 * is its reference implementation.  Pure functions over byte buffers: no
 * I/O, no allocation, no logging, no global state, no cryptography except
 * the model fingerprint (BLAKE2b from libsodium; call sodium_init() first).
 * The daemon does the encryption and the state machines.
 *
 * Glossary
 *   frame       u32 little-endian length `len`, then `len` bytes of frame
 *               body.  len = 0 is invalid; every reader passes a cap.
 *   frame body  before authentication: one handshake message, in clear.
 *               After it: an AEAD ciphertext (plaintext + 16-byte tag) whose
 *               plaintext is one message.  On the local API socket: one
 *               message, in clear.
 *   message     u8 type, then the type's fields.  Each type has a fixed
 *               layout; a decoder rejects a message that is shorter or
 *               longer than its layout says, or whose fields are out of
 *               their documented range.  Encoding is canonical: decoding
 *               then encoding gives back the same bytes.
 *   version     u16 = major << 8 | minor.  Carried by the first message in
 *               each direction (HS_INIT, HS_RESP, MODEL, HELLO, HELLO_OK),
 *               right after the type byte.  Different majors do not talk.
 *   session     one authenticated peer link: a handshake, then transport
 *               keys and nonce counters for both directions.
 *   generation  the lifetime of one edge's engine state (seed, factors,
 *               round counter); outlives sessions, ends with a daemon
 *               restart or a failed RESYNC.  Numbered from 1.
 *   round       one gossip exchange on an edge within a generation, numbered
 *               from 1 as in libgossip.
 *   payload     the engine's message for one round (gsp_node_message()),
 *               carried by ROUND.
 *   fingerprint BLAKE2b-256 of the canonical model description (layout,
 *               method and the settings both ends must share).
 *
 * Conventions
 *   - All integers are little-endian and encoded byte by byte; floats are
 *     IEEE-754 binary32/binary64 little-endian.
 *   - Encoders write the message (type byte and fields; no frame header)
 *     into buf[0..cap) and set *ret_len.  They return -EINVAL for a struct
 *     that breaks the layout's rules and -ENOBUFS when cap is too small;
 *     in both cases nothing is written.
 *   - Decoders take the message bytes (a whole frame body or decrypted
 *     plaintext) and fill *ret.  Variable-length fields are returned as
 *     pointers into the input buffer, which must outlive their use.
 *     Nothing is allocated.
 *   - Return codes: 0 or a negative errno.  Outputs (ret_*) are written
 *     only on success.
 *       -EBADMSG          truncated, trailing bytes, or a field out of range
 *       -ENOMSG           the type byte is not the one (or any one) expected
 *       -EPROTONOSUPPORT  a versioned message of another major version
 *                         (checked before anything after the version field)
 *       -EMSGSIZE         a frame length above the reader's cap
 *       -EAGAIN           an incomplete frame (read more, then retry)
 *       -ENOBUFS          an encoder's output buffer is too small
 *       -EINVAL           invalid arguments or an invalid struct to encode
 */
#ifndef GSP_PROTO_H
#define GSP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cert.h"            /* GSP_CERT_MAX */
#include "key.h"             /* GSP_KEY_BYTES */

#ifdef __cplusplus
extern "C" {
#endif

#ifndef GSP_MUST_CHECK
#define GSP_MUST_CHECK __attribute__((warn_unused_result))
#endif

/* ---- versions and limits ---------------------------------------------- */

/* The protocol version (PROTOCOL.md section 3), written here and nowhere
 * else: the daemon and the C client use these macros, the Python client's
 * gossipd/_proto_version.py is generated from these two lines, and
 * tests/python/test_protocol.py (OneVersion) checks that PROTOCOL.md and
 * docs/journal/PROTOCOL-changelog.md's newest entry say the same.  A
 * bump: change them, add the changelog entry, state it in PROTOCOL.md. */
#define GSP_PROTO_VERSION_MAJOR 1
#define GSP_PROTO_VERSION_MINOR 8
#define GSP_PROTO_VERSION \
	((uint16_t)(GSP_PROTO_VERSION_MAJOR << 8 | GSP_PROTO_VERSION_MINOR))
#define GSP_PROTO_MAJOR(v) ((unsigned)((v) >> 8))
#define GSP_PROTO_MINOR(v) ((unsigned)((v) & 0xff))

#define GSP_FRAME_HEADER 4          /* the u32 length */
#define GSP_AEAD_TAG_BYTES 16       /* ChaCha20-Poly1305 tag */
/* Smallest encrypted frame body: a type byte and the tag. */
#define GSP_PEER_MIN_BODY (1 + GSP_AEAD_TAG_BYTES)

/* Frame body caps (the max_len of gsp_frame_parse). */
#define GSP_PROTO_PREAUTH_MAX 512   /* peer link, before the handshake ends
				     * (an HS_INIT with a certificate: 371) */
#define GSP_PROTO_CONTROL_MAX 4096  /* peer link, until models match */
#define GSP_API_MAX_FRAME (1u << 20) /* local API, either direction */

/* Text field caps, in bytes (no NUL allowed; UTF-8 is not validated). */
#define GSP_MODEL_SUMMARY_MAX 200
#define GSP_GOODBYE_TEXT_MAX 256
#define GSP_API_NAME_MAX 128        /* HELLO client name, HELLO_OK version */
#define GSP_API_ERROR_TEXT_MAX 1024

/* Model descriptions (REGISTER, fingerprint). */
#define GSP_WIRE_MAX_DIMS 8
#define GSP_WIRE_NAME_MAX 63        /* bytes, without a terminating NUL */
#define GSP_API_MAX_TENSORS 65536

#define GSP_FINGERPRINT_BYTES 32
#define GSP_TAI64N_BYTES 12         /* HS_INIT timestamp */
#define GSP_GEN_TAG_BYTES 16

/* ---- message types ---------------------------------------------------- */

enum {
	/* Peer link, encrypted (after the handshake). */
	GSP_MSG_MODEL = 0x01,
	GSP_MSG_ROUND = 0x02,
	GSP_MSG_RESYNC = 0x03,
	GSP_MSG_PING = 0x04,
	GSP_MSG_PONG = 0x05,
	GSP_MSG_GOODBYE = 0x06,
	GSP_MSG_MEMBERS = 0x07,    /* members_msg.h */
	GSP_MSG_FETCH = 0x08,      /* since 1.8: fetch_msg.h */
	/* Peer link, in clear (the handshake). */
	GSP_HS_INIT = 0x10,
	GSP_HS_RESP = 0x11,
	GSP_HS_WHO = 0x12,           /* since 1.7: a dialer without our key */
	GSP_HS_CERT = 0x13,          /* since 1.7: the answer, our certificate */
	/* Local API requests (client to daemon). */
	GSP_API_HELLO = 0x40,
	GSP_API_REGISTER = 0x41,
	GSP_API_STEP = 0x42,
	GSP_API_AVERAGE = 0x43,
	GSP_API_STATUS = 0x44,
	GSP_API_DETACH = 0x45,
	GSP_API_FETCH = 0x46,        /* since 1.8: fetch_msg.h */
	GSP_API_LEAVE = 0x47,        /* since 1.8 */
	/* Local API replies (daemon to client). */
	GSP_API_HELLO_OK = 0xC0,
	GSP_API_OK = 0xC1,
	GSP_API_STEP_OK = 0xC2,
	GSP_API_AVERAGE_OK = 0xC3,
	GSP_API_STATUS_OK = 0xC4,
	GSP_API_FETCH_OK = 0xC5,     /* since 1.8 */
	GSP_API_ERROR = 0xFF,
};

/* The type of an encrypted peer message (MODEL..GOODBYE), of a handshake
 * message (HS_INIT, HS_RESP, HS_WHO, HS_CERT), or of a local API message (any request or
 * reply).  -EBADMSG if len is 0, -ENOMSG for a type outside the set. */
int gsp_msg_type(const uint8_t *buf, size_t len, uint8_t *ret_type) GSP_MUST_CHECK;
int gsp_hs_type(const uint8_t *buf, size_t len, uint8_t *ret_type) GSP_MUST_CHECK;
int gsp_api_type(const uint8_t *buf, size_t len, uint8_t *ret_type) GSP_MUST_CHECK;

/* The version field of a versioned message (HS_INIT, HS_RESP, HS_WHO,
 * HS_CERT, MODEL, HELLO, HELLO_OK) of any version, for diagnostics: -ENOMSG for another
 * type, -EBADMSG if shorter than 3 bytes. */
int gsp_proto_version_of(const uint8_t *buf, size_t len,
			 uint16_t *ret_version) GSP_MUST_CHECK;

/* ---- frames ------------------------------------------------------------ */

/* Looks for one frame at the start of buf[0..avail).  On 0, *ret_body and
 * *ret_len give the frame body and *ret_consumed = 4 + len.  -EAGAIN: more
 * bytes are needed (nothing consumed).  -EBADMSG: len is 0.  -EMSGSIZE:
 * len > max_len.  A bad length is reported as soon as its 4 bytes are
 * present, before any body byte has arrived. */
int gsp_frame_parse(const uint8_t *buf, size_t avail, uint32_t max_len,
		    const uint8_t **ret_body, uint32_t *ret_len,
		    size_t *ret_consumed) GSP_MUST_CHECK;

/* Writes the 4-byte header of a frame whose body is body_len bytes.
 * -EINVAL if body_len is 0, -ENOBUFS if cap < 4. */
int gsp_frame_header_write(uint8_t *buf, size_t cap,
			   uint32_t body_len) GSP_MUST_CHECK;

/* The body length that a frame header declares, unchecked: for a reader
 * that sizes its buffer once gsp_frame_parse() of the header alone said
 * -EAGAIN, and for messages about a length gsp_frame_parse() refused. */
uint32_t gsp_frame_header_read(const uint8_t buf[static GSP_FRAME_HEADER]);

/* Frame body cap of an authenticated peer link once both ends registered
 * a model whose largest ROUND payload is max_round_payload bytes (0: no
 * model): max(GSP_PROTO_CONTROL_MAX, ROUND head + payload + tag).
 * -EMSGSIZE if that exceeds UINT32_MAX. */
int gsp_proto_peer_max_frame(uint64_t max_round_payload,
			     uint32_t *ret_max) GSP_MUST_CHECK;

/* ---- model description and fingerprint -------------------------------- */

/* Method codes on the wire: the values of libgossip's gsp_method. */
enum {
	GSP_WIRE_METHOD_POWERGOSSIP = 0,
	GSP_WIRE_METHOD_EXACT = 1,
	GSP_WIRE_METHOD_CHOCO_TOPK = 2,
	GSP_WIRE_METHOD_CHOCO_RANDK = 3,
	GSP_WIRE_METHOD_CHOCO_SIGN = 4,
};
/* "powergossip", "exact", "choco-topk", ... or NULL for an unknown code. */
const char *gsp_wire_method_name(unsigned method);

/* One tensor of a model description.  name points at name_len bytes (no
 * NUL needed, none allowed); dims[0..ndim) are each >= 1. */
typedef struct gsp_wire_tensor {
	const char *name;
	uint8_t name_len;                  /* 0..GSP_WIRE_NAME_MAX */
	uint8_t ndim;                      /* 0..GSP_WIRE_MAX_DIMS */
	uint64_t dims[GSP_WIRE_MAX_DIMS];  /* unused entries are ignored */
} gsp_wire_tensor;

/* Everything two ends of an edge must agree on.  Fields that do not apply
 * to the method are ignored (rank and warm_start: powergossip only;
 * choco_fraction: choco-topk and choco-randk only). */
typedef struct gsp_model_desc {
	uint8_t method;                    /* GSP_WIRE_METHOD_* */
	uint16_t rank;
	bool warm_start;
	float gamma;
	float choco_fraction;
	uint8_t dtype;                     /* GSP_WIRE_DTYPE_*, parameters */
	uint8_t precision;                 /* GSP_WIRE_PRECISION_*, factors
					    * on the wire (powergossip) */
	const gsp_wire_tensor *tensors;
	uint32_t n_tensors;                /* 1..GSP_API_MAX_TENSORS */
} gsp_model_desc;

/* Validates the tensors (name and ndim caps, no NUL, every dim >= 1, no
 * overflow) and sums their elements.  -EINVAL or -EOVERFLOW. */
int gsp_wire_tensors_floats(const gsp_wire_tensor *tensors, uint32_t n,
			    uint64_t *ret_floats) GSP_MUST_CHECK;
/* BLAKE2b-256 of the canonical encoding of desc (PROTOCOL.md, "Model
 * fingerprint"; a float32 model's as before dtypes existed).  -EINVAL for
 * an invalid description, method or dtype. */
int gsp_model_fingerprint(const gsp_model_desc *desc,
			  uint8_t ret_fp[GSP_FINGERPRINT_BYTES]) GSP_MUST_CHECK;
/* A one-line summary such as "powergossip r4, 3 tensors, 40064 floats,
 * layout 3f2a9c1b, settings 0a1b2c3d" (a 16-bit model's dtype after the
 * rank, then a 16-bit wire precision: "powergossip r4 bfloat16 wire
 * float16, ...") into buf (NUL-terminated, at most
 * GSP_MODEL_SUMMARY_MAX bytes without the NUL): the layout digest covers
 * the tensor names and shapes, the settings digest the method, its
 * settings, the dtype and the wire precision, so two summaries tell which part of a mismatch differs.
 * Returns the length, or -EINVAL / -ENOBUFS. */
int gsp_model_summary(const gsp_model_desc *desc, char *buf,
		      size_t cap) GSP_MUST_CHECK;

/* ---- handshake (peer link, in clear) ---------------------------------- */

/* Each handshake message is type, version and a payload that the daemon's
 * handshake code produces and consumes whole (PROTOCOL.md, "Handshake"):
 *   HS_INIT payload: e (32) | AEAD(s) (32 + 16)
 *                    | AEAD(timestamp (12) | u16 cert_len | cert) (+ 16)
 *                    | mac1 (16, since 1.3)
 *     cert_len is 0 (no certificate) or GSP_CERT_MIN..GSP_CERT_MAX (since
 *     1.7), so the payload is 126 bytes, or 126 + cert_len.
 *   HS_RESP payload: e (32) | AEAD(empty) (16)
 * Since 1.7 a dialer that does not know the responder's key sends HS_WHO
 * (type and version alone) first; the responder answers HS_CERT: type,
 * version, u16 cert_len, its certificate (cert.h), in the clear. */
#define GSP_HS_MAC1_BYTES 16
#define GSP_HS_CERT_LEN_BYTES 2
#define GSP_HS_INIT_PAYLOAD (GSP_KEY_BYTES + GSP_KEY_BYTES + \
			     GSP_AEAD_TAG_BYTES + GSP_TAI64N_BYTES + \
			     GSP_HS_CERT_LEN_BYTES + \
			     GSP_AEAD_TAG_BYTES + GSP_HS_MAC1_BYTES) /* 126 */
#define GSP_HS_INIT_PAYLOAD_MAX (GSP_HS_INIT_PAYLOAD + GSP_CERT_MAX) /* 368 */
#define GSP_HS_RESP_PAYLOAD (GSP_KEY_BYTES + GSP_AEAD_TAG_BYTES) /* 48 */
/* The clear bytes in front of the payload: type, then version.  The
 * handshake hash covers them (PROTOCOL.md 4.2), so the sender needs them
 * before it computes the payload. */
#define GSP_HS_HEADER_BYTES 3
#define GSP_HS_INIT_MSG_BYTES (GSP_HS_HEADER_BYTES + GSP_HS_INIT_PAYLOAD) /* 129 */
#define GSP_HS_INIT_MSG_MAX (GSP_HS_HEADER_BYTES + GSP_HS_INIT_PAYLOAD_MAX) /* 371 */
#define GSP_HS_RESP_MSG_BYTES (GSP_HS_HEADER_BYTES + GSP_HS_RESP_PAYLOAD) /* 51 */
#define GSP_HS_WHO_MSG_BYTES GSP_HS_HEADER_BYTES                    /* 3 */
#define GSP_HS_CERT_MSG_MAX (GSP_HS_HEADER_BYTES + GSP_HS_CERT_LEN_BYTES + \
			     GSP_CERT_MAX)                              /* 247 */

typedef struct gsp_hs_init {
	uint16_t version;
	uint16_t payload_len;   /* GSP_HS_INIT_PAYLOAD..GSP_HS_INIT_PAYLOAD_MAX */
	uint8_t payload[GSP_HS_INIT_PAYLOAD_MAX];
} gsp_hs_init;

typedef struct gsp_hs_resp {
	uint16_t version;
	uint8_t payload[GSP_HS_RESP_PAYLOAD];
} gsp_hs_resp;

/* HS_CERT: the responder's certificate, its bytes unchecked here (the
 * dialer decodes and verifies them: cert.h). */
typedef struct gsp_hs_cert {
	uint16_t version;
	uint16_t cert_len;      /* GSP_CERT_MIN..GSP_CERT_MAX */
	const uint8_t *cert;    /* into the decoded buffer */
} gsp_hs_cert;

/* Writes the header of a handshake message of type GSP_HS_INIT,
 * GSP_HS_RESP, GSP_HS_WHO or GSP_HS_CERT: exactly the first
 * GSP_HS_HEADER_BYTES its encoder writes.  -EINVAL for another type or a
 * version of another major, -ENOBUFS when cap is too small. */
int gsp_hs_header_write(uint8_t type, uint16_t version, uint8_t *buf,
			size_t cap) GSP_MUST_CHECK;
/* HS_INIT: -EBADMSG (decode) or -EINVAL (encode) for a payload length
 * out of range or one that disagrees with its own cert_len cannot be
 * told here (it is encrypted): the handshake checks it. */
int gsp_hs_init_encode(const gsp_hs_init *msg, uint8_t *buf, size_t cap,
		       size_t *ret_len) GSP_MUST_CHECK;
int gsp_hs_init_decode(const uint8_t *buf, size_t len,
		       gsp_hs_init *ret) GSP_MUST_CHECK;
int gsp_hs_resp_encode(const gsp_hs_resp *msg, uint8_t *buf, size_t cap,
		       size_t *ret_len) GSP_MUST_CHECK;
int gsp_hs_resp_decode(const uint8_t *buf, size_t len,
		       gsp_hs_resp *ret) GSP_MUST_CHECK;
/* HS_WHO: exactly its 3 bytes (the header: gsp_hs_header_write). */
int gsp_hs_who_decode(const uint8_t *buf, size_t len,
		      uint16_t *ret_version) GSP_MUST_CHECK;
int gsp_hs_cert_encode(const gsp_hs_cert *msg, uint8_t *buf, size_t cap,
		       size_t *ret_len) GSP_MUST_CHECK;
int gsp_hs_cert_decode(const uint8_t *buf, size_t len,
		       gsp_hs_cert *ret) GSP_MUST_CHECK;

/* ---- peer link messages (encrypted) ------------------------------------ */

/* MODEL: the sender's registered model, or "no model" (n_tensors 0,
 * n_floats 0, fingerprint all zero). */
typedef struct gsp_msg_model {
	uint16_t version;
	uint8_t method;
	uint16_t rank;
	uint32_t n_tensors;          /* 0..GSP_API_MAX_TENSORS */
	uint64_t n_floats;           /* >= n_tensors; 0 iff n_tensors is 0 */
	uint8_t fingerprint[GSP_FINGERPRINT_BYTES];
	const char *summary;         /* summary_len bytes, no NUL */
	size_t summary_len;          /* 0..GSP_MODEL_SUMMARY_MAX */
} gsp_msg_model;

/* ROUND: one edge's engine message.  The payload starts at offset
 * GSP_MSG_ROUND_HEAD of the message, a multiple of 4 (and of 16). */
#define GSP_MSG_ROUND_HEAD 16
/* Flags: the sender's round is one of an AVERAGE (AVERAGING), which has
 * reached its target (REACHED: it goes on serving rounds until its
 * averaging neighbours' have too).  FINITE (1.6): that AVERAGE offers
 * the finite-time schedule on this edge (PROTOCOL.md 4.4). */
#define GSP_ROUND_REACHED 0x01
#define GSP_ROUND_AVERAGING 0x02
#define GSP_ROUND_FINITE 0x04
typedef struct gsp_msg_round {
	uint8_t flags;               /* GSP_ROUND_*; others 0 */
	uint16_t degree;             /* sender's edge count, >= 1 */
	uint32_t generation;         /* >= 1 */
	uint64_t round;              /* >= 1 */
	const uint8_t *payload;
	size_t payload_len;          /* >= 1 */
} gsp_msg_round;

/* RESYNC: where the sender's end of the edge stands (PROTOCOL.md 4.6).
 * generation: the sender's current or last generation (0: none; then the
 * rounds and the tag are 0 and LIVE is clear); last_completed <= last_sent
 * <= last_completed + 1.  LIVE: the sender holds that generation's state
 * and can continue it.  ended_generation/ended_applied: the last
 * generation that ended at the sender with rounds applied, and how many
 * (0/0: none); ended_generation <= generation.  NO_HISTORY: the sender
 * lost its edge records (a restart) and cannot say what it applied in
 * generations it does not name.  ENDING (with LIVE): the sender is ending
 * its live generation at ending_applied rounds at most (<= last_completed;
 * 0 without ENDING); it can still take back one round.  weight: the
 * sender's configured Weight for this edge (0: none, Metropolis-Hastings
 * by degrees), which a generation agreed on in this session starts with
 * (PROTOCOL.md 4.6, "Weights"); finite, in [0, 1].  NO_START (1.5): the
 * sender starts no new generation in this session (its model goes, or
 * it is ending the live one), so neither end agrees on one.  schedule
 * (1.6): the id of the finite-time schedule the sender's AVERAGEs offer
 * (0: none); the two ends of an edge run it only with equal ids. */
#define GSP_RESYNC_LIVE 0x01
#define GSP_RESYNC_NO_HISTORY 0x02
#define GSP_RESYNC_ENDING 0x04
#define GSP_RESYNC_NO_START 0x08
typedef struct gsp_msg_resync {
	uint8_t flags;
	uint32_t generation;
	uint64_t last_completed;
	uint64_t last_sent;
	uint8_t gen_tag[GSP_GEN_TAG_BYTES];
	uint32_t ended_generation;
	uint64_t ended_applied;
	uint64_t ending_applied;
	float weight;
	uint32_t schedule;
} gsp_msg_resync;

/* PING and PONG (a PONG echoes the PING's fields). */
typedef struct gsp_msg_ping {
	uint64_t nonce;
	uint64_t time_ns;            /* the pinger's monotonic clock */
} gsp_msg_ping;

/* GOODBYE reasons; receivers treat unknown codes as UNSPECIFIED. */
enum {
	GSP_BYE_UNSPECIFIED = 0,
	GSP_BYE_SHUTDOWN = 1,        /* daemon stopping */
	GSP_BYE_RESTART = 2,         /* daemon restarting; reconnect later */
	GSP_BYE_VERSION = 3,         /* incompatible protocol version */
	GSP_BYE_FINGERPRINT = 4,     /* models differ */
	GSP_BYE_MALFORMED = 5,       /* the receiver got a malformed message */
	GSP_BYE_NOT_ALLOWED = 6,     /* authenticated but not a neighbour */
	GSP_BYE_REPLACED = 7,        /* a newer session with this peer won */
	GSP_BYE_TIMEOUT = 8,         /* heartbeats missed */
	GSP_BYE_MODEL_CHANGED = 9,   /* REGISTER or DETACH: reconnect */
	GSP_BYE_INTERNAL = 10,       /* local failure (memory, engine) */
};

typedef struct gsp_msg_goodbye {
	uint16_t reason;             /* GSP_BYE_* */
	const char *text;            /* text_len bytes, no NUL */
	size_t text_len;             /* 0..GSP_GOODBYE_TEXT_MAX */
} gsp_msg_goodbye;

int gsp_msg_model_encode(const gsp_msg_model *msg, uint8_t *buf, size_t cap,
			 size_t *ret_len) GSP_MUST_CHECK;
int gsp_msg_model_decode(const uint8_t *buf, size_t len,
			 gsp_msg_model *ret) GSP_MUST_CHECK;
int gsp_msg_round_encode(const gsp_msg_round *msg, uint8_t *buf, size_t cap,
			 size_t *ret_len) GSP_MUST_CHECK;
/* Writes only the GSP_MSG_ROUND_HEAD bytes before the payload, for a
 * sender that places the payload itself (msg->payload is not read, but
 * msg->payload_len must be >= 1). */
int gsp_msg_round_encode_head(const gsp_msg_round *msg, uint8_t *buf,
			      size_t cap) GSP_MUST_CHECK;
int gsp_msg_round_decode(const uint8_t *buf, size_t len,
			 gsp_msg_round *ret) GSP_MUST_CHECK;
int gsp_msg_resync_encode(const gsp_msg_resync *msg, uint8_t *buf, size_t cap,
			  size_t *ret_len) GSP_MUST_CHECK;
int gsp_msg_resync_decode(const uint8_t *buf, size_t len,
			  gsp_msg_resync *ret) GSP_MUST_CHECK;
int gsp_msg_ping_encode(const gsp_msg_ping *msg, uint8_t *buf, size_t cap,
			size_t *ret_len) GSP_MUST_CHECK;
int gsp_msg_ping_decode(const uint8_t *buf, size_t len,
			gsp_msg_ping *ret) GSP_MUST_CHECK;
int gsp_msg_pong_encode(const gsp_msg_ping *msg, uint8_t *buf, size_t cap,
			size_t *ret_len) GSP_MUST_CHECK;
int gsp_msg_pong_decode(const uint8_t *buf, size_t len,
			gsp_msg_ping *ret) GSP_MUST_CHECK;
int gsp_msg_goodbye_encode(const gsp_msg_goodbye *msg, uint8_t *buf,
			   size_t cap, size_t *ret_len) GSP_MUST_CHECK;
int gsp_msg_goodbye_decode(const uint8_t *buf, size_t len,
			   gsp_msg_goodbye *ret) GSP_MUST_CHECK;

/* ---- local API messages (Unix socket, in clear) ------------------------ */

/* HELLO (client) and HELLO_OK (daemon): the first message each way. */
typedef struct gsp_api_hello {
	uint16_t version;
	const char *name;            /* client name / daemon version string */
	size_t name_len;             /* 0..GSP_API_NAME_MAX, no NUL */
} gsp_api_hello;

/* REGISTER's options (PROTOCOL.md 5.2): the engine settings the trainer
 * asks for this model.  A field whose bit is not in `set` is the daemon's
 * (its config's default) and 0 on the wire; set 0 sends no options at all,
 * so the message is the one older daemons read. */
#define GSP_REG_METHOD 0x01u         /* method */
#define GSP_REG_RANK 0x02u           /* rank */
#define GSP_REG_GAMMA 0x04u          /* gamma */
#define GSP_REG_ITERATIONS 0x08u     /* power_iterations */
#define GSP_REG_PRECISION 0x10u      /* precision */
#define GSP_REG_DTYPE 0x20u          /* dtype: one more byte */
/* Join the machine's local group (PROTOCOL.md 5.3): a flag, no field. */
#define GSP_REG_GROUP 0x40u
#define GSP_REG_KNOWN 0x7fu
#define GSP_API_REGISTER_OPTS_BYTES 11
/* The options with GSP_REG_DTYPE set: the 11 bytes, then dtype. */
#define GSP_API_REGISTER_OPTS_DTYPE_BYTES 12
/* Wire precision of the factors a ROUND carries. */
enum {
	GSP_WIRE_PRECISION_FLOAT32 = 0,
	GSP_WIRE_PRECISION_FLOAT16 = 1,
	GSP_WIRE_PRECISION_BFLOAT16 = 2,
};
typedef struct gsp_api_register_opts {
	uint8_t set;                 /* GSP_REG_* bits, only GSP_REG_KNOWN */
	uint8_t method;              /* GSP_WIRE_METHOD_* */
	uint16_t rank;               /* >= 1 */
	float gamma;                 /* finite, > 0 */
	uint16_t power_iterations;   /* gossip rounds per STEP, >= 1 */
	uint8_t precision;           /* GSP_WIRE_PRECISION_* */
	/* The parameters' type in the buffer (GSP_WIRE_DTYPE_*; not set:
	 * float32).  Any value is well-formed: the daemon refuses one it does
	 * not know, saying so. */
	uint8_t dtype;
} gsp_api_register_opts;
/* Parameter types of a buffer: the values of libgossip's gsp_dtype. */
enum {
	GSP_WIRE_DTYPE_FLOAT32 = 0,
	GSP_WIRE_DTYPE_FLOAT16 = 1,
	GSP_WIRE_DTYPE_BFLOAT16 = 2,
};
/* Bytes per parameter of a wire dtype: 4, 2, 2; 2 for an unknown one
 * (the least any type takes, for the decoder's bound). */
unsigned gsp_wire_dtype_size(unsigned dtype);

/* REGISTER: the model in the shared buffer (the buffer's file descriptor
 * travels as SCM_RIGHTS ancillary data with this frame). */
typedef struct gsp_api_register {
	uint64_t buffer_bytes;       /* >= n_floats * the dtype's size */
	uint32_t n_tensors;          /* 1..GSP_API_MAX_TENSORS */
	gsp_api_register_opts opts;  /* set 0: none (the daemon's settings) */
	uint64_t n_floats;           /* decoder output: sum of the tensors */
	const uint8_t *tensor_bytes; /* decoder output: the validated list */
	size_t tensor_bytes_len;
} gsp_api_register;

/* The undo section a shared buffer may carry after its parameters
 * (PROTOCOL.md 5.4): a 64-byte header at gsp_undo_offset(), then a copy
 * of the parameters as they were before the daemon's write in progress,
 * so that a daemon killed inside a write can be undone by the client, or
 * redone by the next daemon.  Present when buffer_bytes >=
 * gsp_undo_bytes() and the header starts with GSP_UNDO_MAGIC (the
 * client's, at creation).  Host byte order: it never leaves the machine. */
#define GSP_UNDO_MAGIC "gsp-undo"    /* 8 bytes, no NUL */
#define GSP_UNDO_HEADER 64
enum {
	GSP_UNDO_IDLE = 0,       /* no write under way: the copy means nothing */
	GSP_UNDO_WRITING = 1,    /* the daemon writes write number `seq` */
	GSP_UNDO_UNDONE = 2,     /* the client undid it, the delta is in the copy */
};
typedef struct gsp_undo_header {
	char magic[8];
	uint64_t seq;            /* the daemon's write count of that write */
	uint32_t state;          /* GSP_UNDO_*, read and written atomically */
	uint32_t reserved;
	uint8_t pad[GSP_UNDO_HEADER - 24];
} gsp_undo_header;

/* Offset of the undo header for n floats of parameters (64-aligned), and
 * the buffer size with the section.  n <= 2^60. */
static inline uint64_t gsp_undo_offset(uint64_t n_floats)
{
	return (4 * n_floats + 63) & ~(uint64_t)63;
}

static inline uint64_t gsp_undo_bytes(uint64_t n_floats)
{
	return gsp_undo_offset(n_floats) + GSP_UNDO_HEADER + 4 * n_floats;
}

/* Walks a decoded REGISTER's tensors without allocating. */
typedef struct gsp_api_tensor_iter {
	const uint8_t *p;
	size_t left;
	uint32_t remaining;
} gsp_api_tensor_iter;

/* STEP flags. */
#define GSP_STEP_SYNC 0x1u           /* wait until every edge completed */
/* Settle before leaving: wait for every in-flight round, answer rounds a
 * neighbour already sent, apply, and start no new round. */
#define GSP_STEP_DRAIN 0x2u
#define GSP_STEP_FLAGS_KNOWN (GSP_STEP_SYNC | GSP_STEP_DRAIN)

typedef struct gsp_api_step {
	uint32_t flags;              /* only GSP_STEP_FLAGS_KNOWN bits */
} gsp_api_step;

typedef struct gsp_api_step_ok {
	uint64_t step;               /* STEPs served since REGISTER */
	uint32_t edges_applied;
	uint32_t edges_projected;
	uint32_t edges_skipped;      /* still in flight */
	uint32_t max_staleness;      /* in steps, over all edges */
	uint64_t bytes_sent;         /* since REGISTER, all edges */
	uint64_t bytes_received;
	double consensus_estimate;   /* relative; NaN when unknown */
} gsp_api_step_ok;

typedef struct gsp_api_average {
	double target;               /* finite, >= 0 */
	uint32_t time_limit_ms;      /* 0: none */
	uint32_t max_rounds;         /* 0: none; not both 0 */
} gsp_api_average;

typedef struct gsp_api_average_ok {
	uint32_t rounds;
	double estimate;             /* NaN when unknown */
	bool reached;                /* estimate <= target */
} gsp_api_average_ok;

typedef struct gsp_api_status_ok {
	const char *json;            /* json_len bytes, no NUL */
	size_t json_len;             /* <= GSP_API_MAX_FRAME - 5 */
} gsp_api_status_ok;

typedef struct gsp_api_error {
	int32_t code;                /* negative errno, < 0 */
	const char *text;            /* text_len bytes, no NUL */
	size_t text_len;             /* 0..GSP_API_ERROR_TEXT_MAX */
} gsp_api_error;

int gsp_api_hello_encode(const gsp_api_hello *msg, uint8_t *buf, size_t cap,
			 size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_hello_decode(const uint8_t *buf, size_t len,
			 gsp_api_hello *ret) GSP_MUST_CHECK;
int gsp_api_hello_ok_encode(const gsp_api_hello *msg, uint8_t *buf,
			    size_t cap, size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_hello_ok_decode(const uint8_t *buf, size_t len,
			    gsp_api_hello *ret) GSP_MUST_CHECK;

/* Size of the REGISTER message for these tensors without options (add
 * GSP_API_REGISTER_OPTS_BYTES when opts.set is not 0), or -EINVAL /
 * -EOVERFLOW / -EMSGSIZE (more than GSP_API_MAX_FRAME). */
int64_t gsp_api_register_size(const gsp_wire_tensor *tensors,
			      uint32_t n) GSP_MUST_CHECK;
/* msg->buffer_bytes and msg->opts are read (options that break the rules
 * of gsp_api_register_opts: -EINVAL); n_tensors, n_floats and
 * tensor_bytes are ignored (taken from tensors/n).  Besides -EINVAL and
 * -ENOBUFS: -EOVERFLOW or -EMSGSIZE as gsp_api_register_size(). */
int gsp_api_register_encode(const gsp_api_register *msg,
			    const gsp_wire_tensor *tensors, uint32_t n,
			    uint8_t *buf, size_t cap,
			    size_t *ret_len) GSP_MUST_CHECK;
/* Validates the whole message, every tensor and the options included,
 * before returning; ret->opts.set is 0 when it carries no options. */
int gsp_api_register_decode(const uint8_t *buf, size_t len,
			    gsp_api_register *ret) GSP_MUST_CHECK;
/* Iterates the tensors of a successfully decoded REGISTER. */
void gsp_api_tensor_iter_init(gsp_api_tensor_iter *it,
			      const gsp_api_register *reg);
/* 1 and *ret filled (name points into the message), or 0 at the end. */
int gsp_api_tensor_next(gsp_api_tensor_iter *it, gsp_wire_tensor *ret);

int gsp_api_ok_encode(uint8_t *buf, size_t cap, size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_ok_decode(const uint8_t *buf, size_t len) GSP_MUST_CHECK;
int gsp_api_step_encode(const gsp_api_step *msg, uint8_t *buf, size_t cap,
			size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_step_decode(const uint8_t *buf, size_t len,
			gsp_api_step *ret) GSP_MUST_CHECK;
int gsp_api_step_ok_encode(const gsp_api_step_ok *msg, uint8_t *buf,
			   size_t cap, size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_step_ok_decode(const uint8_t *buf, size_t len,
			   gsp_api_step_ok *ret) GSP_MUST_CHECK;
int gsp_api_average_encode(const gsp_api_average *msg, uint8_t *buf,
			   size_t cap, size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_average_decode(const uint8_t *buf, size_t len,
			   gsp_api_average *ret) GSP_MUST_CHECK;
int gsp_api_average_ok_encode(const gsp_api_average_ok *msg, uint8_t *buf,
			      size_t cap, size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_average_ok_decode(const uint8_t *buf, size_t len,
			      gsp_api_average_ok *ret) GSP_MUST_CHECK;
int gsp_api_status_encode(uint8_t *buf, size_t cap,
			  size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_status_decode(const uint8_t *buf, size_t len) GSP_MUST_CHECK;
int gsp_api_status_ok_encode(const gsp_api_status_ok *msg, uint8_t *buf,
			     size_t cap, size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_status_ok_decode(const uint8_t *buf, size_t len,
			     gsp_api_status_ok *ret) GSP_MUST_CHECK;
int gsp_api_detach_encode(uint8_t *buf, size_t cap,
			  size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_detach_decode(const uint8_t *buf, size_t len) GSP_MUST_CHECK;
int gsp_api_leave_encode(uint8_t *buf, size_t cap, size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_leave_decode(const uint8_t *buf, size_t len) GSP_MUST_CHECK;
int gsp_api_error_encode(const gsp_api_error *msg, uint8_t *buf, size_t cap,
			 size_t *ret_len) GSP_MUST_CHECK;
int gsp_api_error_decode(const uint8_t *buf, size_t len,
			 gsp_api_error *ret) GSP_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
