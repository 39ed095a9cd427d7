/*
 * Unit tests for proto/: the frame reader and writer, the limits, the type
 * classifiers, and the model description helpers (validation,
 * fingerprint, summary).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "proto.h"

#define SENTINEL 0xA5

/* ---- frames ------------------------------------------------------------- */

/* Parses with sentinel outputs; checks they are untouched on failure. */
static int parse(const uint8_t *buf, size_t avail, uint32_t max,
		 const uint8_t **body, uint32_t *len, size_t *used)
{
	const uint8_t *const sb = (const uint8_t *)(uintptr_t)0x5a5a;
	int r;

	*body = sb;
	*len = 0xA5A5A5A5u;
	*used = 0xA5A5A5A5u;
	r = gsp_frame_parse(buf, avail, max, body, len, used);
	if (r < 0) {
		ck_assert_ptr_eq(*body, sb);
		ck_assert_uint_eq(*len, 0xA5A5A5A5u);
		ck_assert_uint_eq(*used, 0xA5A5A5A5u);
	}
	return r;
}

START_TEST(test_frame_complete)
{
	uint8_t buf[64];
	const uint8_t *body;
	uint32_t len;
	size_t used;

	memset(buf, 0xee, sizeof(buf));
	ck_assert_int_eq(gsp_frame_header_write(buf, sizeof(buf), 5), 0);
	ck_assert_uint_eq(buf[0], 5);
	ck_assert_uint_eq(buf[1], 0);
	ck_assert_uint_eq(buf[2], 0);
	ck_assert_uint_eq(buf[3], 0);
	ck_assert_uint_eq(buf[4], 0xee);
	memcpy(buf + 4, "hello", 5);
	ck_assert_int_eq(parse(buf, 9, 5, &body, &len, &used), 0);
	ck_assert_ptr_eq(body, buf + 4);
	ck_assert_uint_eq(len, 5);
	ck_assert_uint_eq(used, 9);
	/* Extra bytes after the frame are left for the next call. */
	ck_assert_int_eq(parse(buf, sizeof(buf), UINT32_MAX, &body, &len, &used), 0);
	ck_assert_uint_eq(used, 9);
}
END_TEST

START_TEST(test_frame_incremental)
{
	/* Two frames back to back, offered one byte more at a time. */
	uint8_t buf[4 + 3 + 4 + 1];
	const uint8_t *body;
	uint32_t len;
	size_t used, off = 0;
	int frames = 0;

	ck_assert_int_eq(gsp_frame_header_write(buf, 4, 3), 0);
	memcpy(buf + 4, "abc", 3);
	ck_assert_int_eq(gsp_frame_header_write(buf + 7, 4, 1), 0);
	buf[11] = 'z';
	for (size_t avail = 0; avail <= sizeof(buf); avail++) {
		int r = parse(buf + off, avail - off, 16, &body, &len, &used);

		if (r == -EAGAIN)
			continue;
		ck_assert_int_eq(r, 0);
		ck_assert_uint_eq(used, avail - off); /* complete exactly now */
		frames++;
		ck_assert_uint_eq(len, frames == 1 ? 3 : 1);
		ck_assert_uint_eq(body[0], frames == 1 ? 'a' : 'z');
		off += used;
	}
	ck_assert_int_eq(frames, 2);
	ck_assert_int_eq(parse(NULL, 0, 16, &body, &len, &used), -EAGAIN);
}
END_TEST

START_TEST(test_frame_bad_lengths)
{
	uint8_t buf[8] = { 0 };
	const uint8_t *body;
	uint32_t len;
	size_t used;

	/* Length 0 is malformed, whatever the cap. */
	ck_assert_int_eq(parse(buf, 4, 0, &body, &len, &used), -EBADMSG);
	ck_assert_int_eq(parse(buf, 8, UINT32_MAX, &body, &len, &used), -EBADMSG);
	/* Over the cap: rejected as soon as the 4 length bytes are there. */
	ck_assert_int_eq(gsp_frame_header_write(buf, 4, GSP_PROTO_PREAUTH_MAX + 1), 0);
	for (size_t avail = 0; avail < 4; avail++)
		ck_assert_int_eq(parse(buf, avail, GSP_PROTO_PREAUTH_MAX, &body,
				       &len, &used), -EAGAIN);
	ck_assert_int_eq(parse(buf, 4, GSP_PROTO_PREAUTH_MAX, &body, &len, &used),
			 -EMSGSIZE);
	ck_assert_int_eq(parse(buf, 4, GSP_PROTO_PREAUTH_MAX + 1, &body, &len,
			       &used), -EAGAIN);
	/* The largest length and the largest cap. */
	memset(buf, 0xff, 4);
	ck_assert_int_eq(parse(buf, 8, UINT32_MAX - 1, &body, &len, &used), -EMSGSIZE);
	ck_assert_int_eq(parse(buf, 8, UINT32_MAX, &body, &len, &used), -EAGAIN);
	/* Each length byte counts (little-endian). */
	static const uint8_t hdrs[][4] = {
		{ 0x01, 0x01, 0x00, 0x00 }, /* 257 */
		{ 0x00, 0x00, 0x01, 0x00 }, /* 65536 */
		{ 0x00, 0x00, 0x00, 0x80 }, /* 2^31 */
	};
	for (size_t i = 0; i < sizeof(hdrs) / sizeof(*hdrs); i++)
		ck_assert_int_eq(parse(hdrs[i], 4, 256, &body, &len, &used),
				 -EMSGSIZE);
	/* Arguments. */
	ck_assert_int_eq(gsp_frame_parse(buf, 8, 16, NULL, &len, &used), -EINVAL);
	ck_assert_int_eq(gsp_frame_parse(NULL, 8, 16, &body, &len, &used), -EINVAL);
}
END_TEST

START_TEST(test_frame_header_write)
{
	uint8_t buf[8];

	memset(buf, SENTINEL, sizeof(buf));
	ck_assert_int_eq(gsp_frame_header_write(buf, sizeof(buf), 0), -EINVAL);
	ck_assert_int_eq(gsp_frame_header_write(buf, 3, 1), -ENOBUFS);
	ck_assert_int_eq(gsp_frame_header_write(NULL, 4, 1), -ENOBUFS);
	for (size_t i = 0; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], SENTINEL);
	ck_assert_int_eq(gsp_frame_header_write(buf, 4, 0x01020304), 0);
	ck_assert_uint_eq(buf[0], 4);
	ck_assert_uint_eq(buf[3], 1);
	ck_assert_uint_eq(buf[4], SENTINEL);
}
END_TEST

/* The declared length, as written, whatever gsp_frame_parse() says of it. */
START_TEST(test_frame_header_read)
{
	static const uint8_t huge[4] = { 0x01, 0x00, 0x10, 0x00 };
	static const uint8_t zero[4] = { 0 };
	uint8_t buf[4];

	ck_assert_int_eq(gsp_frame_header_write(buf, 4, 0x01020304), 0);
	ck_assert_uint_eq(gsp_frame_header_read(buf), 0x01020304);
	ck_assert_int_eq(gsp_frame_header_write(buf, 4, UINT32_MAX), 0);
	ck_assert_uint_eq(gsp_frame_header_read(buf), UINT32_MAX);
	ck_assert_uint_eq(gsp_frame_header_read(huge), GSP_API_MAX_FRAME + 1);
	ck_assert_uint_eq(gsp_frame_header_read(zero), 0);
}
END_TEST

START_TEST(test_peer_max_frame)
{
	uint32_t max = 0;

	ck_assert_int_eq(gsp_proto_peer_max_frame(0, &max), 0);
	ck_assert_uint_eq(max, GSP_PROTO_CONTROL_MAX);
	ck_assert_int_eq(gsp_proto_peer_max_frame(100, &max), 0);
	ck_assert_uint_eq(max, GSP_PROTO_CONTROL_MAX);
	ck_assert_int_eq(gsp_proto_peer_max_frame(40064 * 4, &max), 0);
	ck_assert_uint_eq(max, 40064 * 4 + GSP_MSG_ROUND_HEAD + GSP_AEAD_TAG_BYTES);
	ck_assert_int_eq(gsp_proto_peer_max_frame(UINT32_MAX - 32, &max), 0);
	ck_assert_uint_eq(max, UINT32_MAX);
	max = 7;
	ck_assert_int_eq(gsp_proto_peer_max_frame(UINT32_MAX - 31, &max), -EMSGSIZE);
	ck_assert_int_eq(gsp_proto_peer_max_frame(UINT64_MAX, &max), -EMSGSIZE);
	ck_assert_uint_eq(max, 7);
	ck_assert_int_eq(gsp_proto_peer_max_frame(1, NULL), -EINVAL);
}
END_TEST

START_TEST(test_classifiers)
{
	uint8_t b, t;
	int peer = 0, hs = 0, api = 0;

	for (unsigned v = 0; v < 256; v++) {
		b = (uint8_t)v;
		t = 0x5a;
		int rp = gsp_msg_type(&b, 1, &t);
		int rh = gsp_hs_type(&b, 1, &t);
		int ra = gsp_api_type(&b, 1, &t);

		ck_assert(rp == 0 || rp == -ENOMSG);
		ck_assert(rh == 0 || rh == -ENOMSG);
		ck_assert(ra == 0 || ra == -ENOMSG);
		ck_assert_int_le((rp == 0) + (rh == 0) + (ra == 0), 1);
		if (rp == 0 || rh == 0 || ra == 0)
			ck_assert_uint_eq(t, v);
		else
			ck_assert_uint_eq(t, 0x5a);
		peer += rp == 0;
		hs += rh == 0;
		api += ra == 0;
	}
	ck_assert_int_eq(peer, 8);        /* MODEL..GOODBYE, MEMBERS, FETCH */
	ck_assert_int_eq(hs, 4);          /* HS_INIT, HS_RESP, HS_WHO, HS_CERT */
	ck_assert_int_eq(api, 15);
	ck_assert_int_eq(gsp_msg_type(NULL, 0, &t), -EBADMSG);
	ck_assert_int_eq(gsp_api_type(&b, 0, &t), -EBADMSG);
	ck_assert_int_eq(gsp_hs_type(&b, 1, NULL), -EINVAL);
	/* Handshake types are not peer messages: after authentication a
	 * plaintext starting with 0x10 is an unknown type. */
	b = GSP_HS_INIT;
	ck_assert_int_eq(gsp_msg_type(&b, 1, &t), -ENOMSG);
}
END_TEST

START_TEST(test_version_of)
{
	const uint8_t model[] = { GSP_MSG_MODEL, 0x02, 0x07 };
	const uint8_t round[] = { GSP_MSG_ROUND, 0x00, 0x01 };
	uint16_t v = 0;

	ck_assert_int_eq(gsp_proto_version_of(model, 3, &v), 0);
	ck_assert_uint_eq(v, 0x0702);
	ck_assert_uint_eq(GSP_PROTO_MAJOR(v), 7);
	ck_assert_uint_eq(GSP_PROTO_MINOR(v), 2);
	ck_assert_int_eq(gsp_proto_version_of(model, 2, &v), -EBADMSG);
	ck_assert_int_eq(gsp_proto_version_of(round, 3, &v), -ENOMSG);
	ck_assert_int_eq(gsp_proto_version_of(NULL, 0, &v), -EBADMSG);
	ck_assert_uint_eq(v, 0x0702);
	/* proto.h states the version once: the u16 is made of its two parts. */
	ck_assert_uint_eq(GSP_PROTO_MAJOR(GSP_PROTO_VERSION), GSP_PROTO_VERSION_MAJOR);
	ck_assert_uint_eq(GSP_PROTO_MINOR(GSP_PROTO_VERSION), GSP_PROTO_VERSION_MINOR);
}
END_TEST

/* ---- model descriptions --------------------------------------------------- */

static gsp_wire_tensor tensors[3];

static gsp_model_desc desc_of(uint8_t method)
{
	gsp_model_desc d = {
		.method = method,
		.rank = 4,
		.warm_start = true,
		.gamma = 1.0f,
		.choco_fraction = 0.01f,
		.tensors = tensors,
		.n_tensors = 3,
	};

	memset(tensors, 0, sizeof(tensors));
	tensors[0] = (gsp_wire_tensor){ .name = "t0", .name_len = 2, .ndim = 2,
					.dims = { 100, 100 } };
	tensors[1] = (gsp_wire_tensor){ .name = "t1", .name_len = 2, .ndim = 2,
					.dims = { 64, 300 } };
	tensors[2] = (gsp_wire_tensor){ .name = "t2", .name_len = 2, .ndim = 1,
					.dims = { 64 } };
	return d;
}

static void fp(const gsp_model_desc *d, uint8_t out[GSP_FINGERPRINT_BYTES])
{
	ck_assert_int_eq(gsp_model_fingerprint(d, out), 0);
}

START_TEST(test_tensors_floats)
{
	gsp_model_desc d = desc_of(0);
	uint64_t n = 77;

	ck_assert_int_eq(gsp_wire_tensors_floats(tensors, 3, &n), 0);
	ck_assert_uint_eq(n, 10000 + 19200 + 64);
	ck_assert_int_eq(gsp_wire_tensors_floats(NULL, 0, &n), 0);
	ck_assert_uint_eq(n, 0);
	n = 77;
	tensors[1].dims[1] = 0;
	ck_assert_int_eq(gsp_wire_tensors_floats(tensors, 3, &n), -EINVAL);
	tensors[1].dims[1] = UINT64_MAX / 64 + 1;
	ck_assert_int_eq(gsp_wire_tensors_floats(tensors, 3, &n), -EOVERFLOW);
	tensors[1].dims[1] = UINT64_MAX / 64;
	ck_assert_int_eq(gsp_wire_tensors_floats(tensors, 3, &n), -EOVERFLOW);
	tensors[1].dims[1] = 300;
	tensors[2].ndim = GSP_WIRE_MAX_DIMS + 1;
	ck_assert_int_eq(gsp_wire_tensors_floats(tensors, 3, &n), -EINVAL);
	tensors[2].ndim = 0; /* a scalar */
	ck_assert_int_eq(gsp_wire_tensors_floats(tensors, 3, &n), 0);
	ck_assert_uint_eq(n, 10000 + 19200 + 1);
	tensors[2].name = "t\0";
	ck_assert_int_eq(gsp_wire_tensors_floats(tensors, 3, &n), -EINVAL);
	tensors[2].name = NULL;
	ck_assert_int_eq(gsp_wire_tensors_floats(tensors, 3, &n), -EINVAL);
	tensors[2].name_len = 0;
	ck_assert_int_eq(gsp_wire_tensors_floats(tensors, 3, &n), 0);
	tensors[2].name = "0123456789012345678901234567890123456789012345678901234567890123";
	tensors[2].name_len = 64;
	ck_assert_int_eq(gsp_wire_tensors_floats(tensors, 3, &n), -EINVAL);
	ck_assert_int_eq(gsp_wire_tensors_floats(tensors, 3, NULL), -EINVAL);
	(void)d;
}
END_TEST

/* BLAKE2b-256 of the known-answer message msg (tag and head: 32 bytes)
 * with `extra` inserted after the head, as a 16-bit setting hashes. */
static void hash_with(const uint8_t *msg, size_t len, const uint8_t *extra,
		      size_t n_extra, uint8_t out[32])
{
	uint8_t buf[256];
	ck_assert_uint_le(len + n_extra, sizeof(buf));
	memcpy(buf, msg, 32);
	memcpy(buf + 32, extra, n_extra);
	memcpy(buf + 32 + n_extra, msg + 32, len - 32);
	crypto_generichash(out, 32, buf, len + n_extra, NULL, 0);
}

START_TEST(test_fingerprint_sensitive)
{
	uint8_t ref[32], out[32], again[32];
	gsp_model_desc d = desc_of(GSP_WIRE_METHOD_POWERGOSSIP);

	fp(&d, ref);
	fp(&d, again);
	ck_assert_mem_eq(ref, again, 32);

	/* A known answer pins the canonical encoding across releases. */
	uint8_t msg[16 + 16 + 3 * (1 + 2 + 1) + 2 * 16 + 8];
	size_t n = 0;
	memcpy(msg, "gossipd model v2", 16);
	n = 16;
	const uint8_t head[16] = { 0, 4, 0, 1, 0x00, 0x00, 0x80, 0x3f,
				   0, 0, 0, 0, 3, 0, 0, 0 };
	memcpy(msg + n, head, 16);
	n += 16;
	for (int i = 0; i < 3; i++) {
		msg[n++] = 2;
		msg[n++] = 't';
		msg[n++] = (uint8_t)('0' + i);
		msg[n++] = tensors[i].ndim;
		for (unsigned k = 0; k < tensors[i].ndim; k++, n += 8)
			for (int j = 0; j < 8; j++)
				msg[n + j] = (uint8_t)(tensors[i].dims[k] >> (8 * j));
	}
	ck_assert_uint_eq(n, sizeof(msg));
	crypto_generichash(out, 32, msg, n, NULL, 0);
	ck_assert_mem_eq(ref, out, 32);

	/* Every field that applies changes it. */
#define DIFFERS(stmt)                                          \
	do {                                                   \
		gsp_model_desc e = desc_of(d.method);          \
		(void)e;                                       \
		stmt;                                          \
		fp(&e, out);                                   \
		ck_assert_msg(memcmp(ref, out, 32) != 0, #stmt); \
	} while (0)
	DIFFERS(e.rank = 2);
	DIFFERS(e.warm_start = false);
	DIFFERS(e.gamma = 1.3084f);
	DIFFERS(e.method = GSP_WIRE_METHOD_EXACT);
	DIFFERS(e.n_tensors = 2);
	DIFFERS(tensors[1].dims[1] = 301);
	DIFFERS(tensors[2].ndim = 2; tensors[2].dims[1] = 1);
	DIFFERS(tensors[0].name = "t9");
	DIFFERS(tensors[0].name_len = 1);
	/* A 16-bit dtype: one byte more after the head (a float32 model's
	 * fingerprint is the known answer above, as before dtypes). */
	DIFFERS(e.dtype = GSP_WIRE_DTYPE_FLOAT16);
	DIFFERS(e.dtype = GSP_WIRE_DTYPE_BFLOAT16);
	{
		static const uint8_t typed[] = {GSP_WIRE_DTYPE_BFLOAT16};
		uint8_t bf[32];
		hash_with(msg, sizeof(msg), typed, sizeof(typed), out);
		gsp_model_desc e = desc_of(d.method);
		e.dtype = GSP_WIRE_DTYPE_BFLOAT16;
		fp(&e, bf);
		ck_assert_mem_eq(bf, out, 32);
	}
	/* A 16-bit wire precision: a tag byte and the precision after the
	 * dtype, never hashing as a dtype. */
	DIFFERS(e.precision = GSP_WIRE_PRECISION_FLOAT16);
	DIFFERS(e.precision = GSP_WIRE_PRECISION_BFLOAT16);
	{
		static const uint8_t wired[] = {0xff, GSP_WIRE_PRECISION_FLOAT16};
		uint8_t half[32], as_dtype[32];
		hash_with(msg, sizeof(msg), wired, sizeof(wired), out);
		gsp_model_desc e = desc_of(d.method);
		e.precision = GSP_WIRE_PRECISION_FLOAT16;
		fp(&e, half);
		ck_assert_mem_eq(half, out, 32);
		e = desc_of(d.method);
		e.dtype = GSP_WIRE_DTYPE_FLOAT16;
		fp(&e, as_dtype);
		ck_assert(memcmp(half, as_dtype, 32) != 0);
	}
	/* Swapping two tensors of the same shape is a different model. */
	DIFFERS(tensors[0].name = "t1"; tensors[1].dims[0] = 100;
		tensors[1].dims[1] = 100; tensors[1].name = "t0";
		tensors[0].dims[0] = 64; tensors[0].dims[1] = 300);
	/* Unused dims entries do not matter. */
	desc_of(0);
	tensors[2].dims[5] = 99;
	fp(&d, out);
	ck_assert_mem_eq(ref, out, 32);
}
END_TEST

START_TEST(test_fingerprint_canonical)
{
	uint8_t a[32], b[32];
	gsp_model_desc d, e;

	/* Fields that do not apply to the method are ignored. */
	d = desc_of(GSP_WIRE_METHOD_EXACT);
	fp(&d, a);
	e = desc_of(GSP_WIRE_METHOD_EXACT);
	e.rank = 0;
	e.warm_start = false;
	e.choco_fraction = 0.5f;
	fp(&e, b);
	ck_assert_mem_eq(a, b, 32);

	d = desc_of(GSP_WIRE_METHOD_CHOCO_TOPK);
	fp(&d, a);
	e = d;
	e.rank = 9;
	fp(&e, b);
	ck_assert_mem_eq(a, b, 32);
	e.choco_fraction = 0.02f;
	fp(&e, b);
	ck_assert(memcmp(a, b, 32) != 0);

	d = desc_of(GSP_WIRE_METHOD_CHOCO_SIGN);
	fp(&d, a);
	e = d;
	e.choco_fraction = 0.7f;
	fp(&e, b);
	ck_assert_mem_eq(a, b, 32);

	/* gamma -0 and +0 are the same setting. */
	d.gamma = 0.0f;
	fp(&d, a);
	d.gamma = -0.0f;
	fp(&d, b);
	ck_assert_mem_eq(a, b, 32);
}
END_TEST

START_TEST(test_fingerprint_invalid)
{
	uint8_t out[32], ref[32];
	gsp_model_desc d;

	memset(ref, SENTINEL, sizeof(ref));
#define INVALID(stmt, want)                                            \
	do {                                                           \
		d = desc_of(GSP_WIRE_METHOD_POWERGOSSIP);              \
		stmt;                                                  \
		memset(out, SENTINEL, sizeof(out));                    \
		ck_assert_int_eq(gsp_model_fingerprint(&d, out), want); \
		ck_assert_mem_eq(out, ref, 32);                        \
	} while (0)
	INVALID(d.method = 5, -EINVAL);
	INVALID(d.rank = 0, -EINVAL);
	INVALID(d.dtype = 3, -EINVAL);
	INVALID(d.precision = 3, -EINVAL);
	INVALID(d.gamma = NAN, -EINVAL);
	INVALID(d.gamma = -1.0f, -EINVAL);
	INVALID(d.gamma = INFINITY, -EINVAL);
	INVALID(d.n_tensors = 0, -EINVAL);
	INVALID(d.n_tensors = GSP_API_MAX_TENSORS + 1, -EINVAL);
	INVALID(d.tensors = NULL, -EINVAL);
	INVALID(tensors[0].dims[1] = 0, -EINVAL);
	INVALID(tensors[0].dims[0] = UINT64_MAX, -EOVERFLOW);
	INVALID(d.method = GSP_WIRE_METHOD_CHOCO_RANDK; d.choco_fraction = 0,
		-EINVAL);
	INVALID(d.method = GSP_WIRE_METHOD_CHOCO_TOPK; d.choco_fraction = 1.5f,
		-EINVAL);
	INVALID(d.method = GSP_WIRE_METHOD_CHOCO_TOPK;
		d.choco_fraction = NAN, -EINVAL);
	d = desc_of(0);
	ck_assert_int_eq(gsp_model_fingerprint(NULL, out), -EINVAL);
	ck_assert_int_eq(gsp_model_fingerprint(&d, NULL), -EINVAL);
}
END_TEST

/* The part of a summary after "layout " (8 hex digits) and after
 * "settings ". */
static void digests(const gsp_model_desc *d, char layout[9], char settings[9])
{
	char buf[GSP_MODEL_SUMMARY_MAX + 1];
	ck_assert_int_gt(gsp_model_summary(d, buf, sizeof(buf)), 0);
	const char *l = strstr(buf, ", layout "), *s = strstr(buf, ", settings ");
	ck_assert_ptr_nonnull(l);
	ck_assert_ptr_nonnull(s);
	snprintf(layout, 9, "%s", l + 9);
	snprintf(settings, 9, "%s", s + 11);
}

/* Models that differ only in tensor names (Sequential(Linear) against
 * Linear: "0.weight" against "weight") or only in a setting have equal
 * counts; the digests tell which part differs. */
START_TEST(test_summary_digests)
{
	char l0[9], s0[9], l1[9], s1[9];
	gsp_model_desc d = desc_of(GSP_WIRE_METHOD_POWERGOSSIP);

	digests(&d, l0, s0);
	tensors[0].name = "0.t0";
	tensors[0].name_len = 4;
	digests(&d, l1, s1);
	ck_assert_str_ne(l0, l1);
	ck_assert_str_eq(s0, s1);

	d = desc_of(GSP_WIRE_METHOD_POWERGOSSIP);
	d.rank = 2;
	digests(&d, l1, s1);
	ck_assert_str_eq(l0, l1);
	ck_assert_str_ne(s0, s1);
	d.rank = 4;
	d.gamma = 0.5f;
	digests(&d, l1, s1);
	ck_assert_str_eq(l0, l1);
	ck_assert_str_ne(s0, s1);
	/* The dtype is a setting. */
	d.gamma = 1.0f;
	d.dtype = GSP_WIRE_DTYPE_FLOAT16;
	digests(&d, l1, s1);
	ck_assert_str_eq(l0, l1);
	ck_assert_str_ne(s0, s1);
	/* So is the wire precision, and it is not the dtype. */
	char s2[9], s3[9];
	d.dtype = GSP_WIRE_DTYPE_FLOAT32;
	d.precision = GSP_WIRE_PRECISION_FLOAT16;
	digests(&d, l1, s2);
	ck_assert_str_eq(l0, l1);
	ck_assert_str_ne(s0, s2);
	ck_assert_str_ne(s1, s2);
	d.precision = GSP_WIRE_PRECISION_BFLOAT16;
	digests(&d, l1, s3);
	ck_assert_str_ne(s2, s3);
	ck_assert_str_ne(s0, s3);
	/* Settings that do not apply to the method do not count. */
	d = desc_of(GSP_WIRE_METHOD_EXACT);
	digests(&d, l0, s0);
	d.rank = 9;
	d.choco_fraction = 0.5f;
	digests(&d, l1, s1);
	ck_assert_str_eq(s0, s1);
	/* Shapes count, and so does the order. */
	d = desc_of(GSP_WIRE_METHOD_EXACT);
	tensors[2].dims[0] = 65;
	digests(&d, l1, s1);
	ck_assert_str_ne(l0, l1);
	d = desc_of(GSP_WIRE_METHOD_EXACT);
	gsp_wire_tensor t = tensors[0];
	tensors[0] = tensors[1];
	tensors[1] = t;
	digests(&d, l1, s1);
	ck_assert_str_ne(l0, l1);
}
END_TEST

START_TEST(test_summary)
{
	char buf[GSP_MODEL_SUMMARY_MAX + 1];
	gsp_model_desc d = desc_of(GSP_WIRE_METHOD_POWERGOSSIP);
	const char *want = "powergossip r4, 3 tensors, 29264 floats, "
			   "layout 07f9cc92, settings a94925d8";

	ck_assert_int_eq(gsp_model_summary(&d, buf, sizeof(buf)), (int)strlen(want));
	ck_assert_str_eq(buf, want);
	ck_assert_int_eq(gsp_model_summary(&d, buf, strlen(want) + 1), (int)strlen(want));
	memset(buf, SENTINEL, sizeof(buf));
	ck_assert_int_eq(gsp_model_summary(&d, buf, strlen(want)), -ENOBUFS);
	ck_assert_uint_eq((uint8_t)buf[0], SENTINEL);

	/* A 16-bit model says its dtype after the rank. */
	d.dtype = GSP_WIRE_DTYPE_BFLOAT16;
	ck_assert_int_gt(gsp_model_summary(&d, buf, sizeof(buf)), 0);
	ck_assert_msg(strncmp(buf, "powergossip r4 bfloat16, 3 tensors, 29264 floats, "
			      "layout 07f9cc92, settings ", 68) == 0, "%s", buf);
	ck_assert_str_ne(buf + 68, "a94925d8");
	d.dtype = GSP_WIRE_DTYPE_FLOAT16;
	ck_assert_int_gt(gsp_model_summary(&d, buf, sizeof(buf)), 0);
	ck_assert_msg(strncmp(buf, "powergossip r4 float16, ", 24) == 0, "%s", buf);
	/* Then a 16-bit wire precision. */
	d.precision = GSP_WIRE_PRECISION_BFLOAT16;
	ck_assert_int_gt(gsp_model_summary(&d, buf, sizeof(buf)), 0);
	ck_assert_msg(strncmp(buf, "powergossip r4 float16 wire bfloat16, ", 38) == 0,
		      "%s", buf);
	d.dtype = GSP_WIRE_DTYPE_FLOAT32;
	d.precision = GSP_WIRE_PRECISION_FLOAT16;
	ck_assert_int_gt(gsp_model_summary(&d, buf, sizeof(buf)), 0);
	ck_assert_msg(strncmp(buf, "powergossip r4 wire float16, 3 tensors", 38) == 0,
		      "%s", buf);

	d = desc_of(GSP_WIRE_METHOD_CHOCO_SIGN);
	d.n_tensors = 1;
	tensors[0].ndim = 0;
	ck_assert_int_gt(gsp_model_summary(&d, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "choco-sign, 1 tensor, 1 float, layout d83c423d, "
			 "settings b2adc4a3");
	d.method = 9;
	ck_assert_int_eq(gsp_model_summary(&d, buf, sizeof(buf)), -EINVAL);

	/* The longest possible summary fits the MODEL cap. */
	d = desc_of(GSP_WIRE_METHOD_CHOCO_RANDK);
	d.n_tensors = GSP_API_MAX_TENSORS;
	gsp_wire_tensor *many = calloc(GSP_API_MAX_TENSORS, sizeof(*many));
	ck_assert_ptr_nonnull(many);
	for (uint32_t i = 0; i < GSP_API_MAX_TENSORS; i++) {
		many[i].ndim = 1;
		many[i].dims[0] = UINT64_MAX / GSP_API_MAX_TENSORS;
	}
	d.tensors = many;
	d.dtype = GSP_WIRE_DTYPE_BFLOAT16;
	d.precision = GSP_WIRE_PRECISION_BFLOAT16;
	int n = gsp_model_summary(&d, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_int_le(n, GSP_MODEL_SUMMARY_MAX);
	free(many);

	for (unsigned m = 0; m < 5; m++)
		ck_assert_ptr_nonnull(gsp_wire_method_name(m));
	ck_assert_ptr_null(gsp_wire_method_name(5));
	ck_assert_str_eq(gsp_wire_method_name(GSP_WIRE_METHOD_CHOCO_TOPK),
			 "choco-topk");
}
END_TEST

static Suite *proto_frame_suite(void)
{
	Suite *s = suite_create("proto frames and models");
	TCase *tc = tcase_create("frames");

	tcase_add_test(tc, test_frame_complete);
	tcase_add_test(tc, test_frame_incremental);
	tcase_add_test(tc, test_frame_bad_lengths);
	tcase_add_test(tc, test_frame_header_write);
	tcase_add_test(tc, test_frame_header_read);
	tcase_add_test(tc, test_peer_max_frame);
	tcase_add_test(tc, test_classifiers);
	tcase_add_test(tc, test_version_of);
	suite_add_tcase(s, tc);

	tc = tcase_create("models");
	tcase_add_test(tc, test_tensors_floats);
	tcase_add_test(tc, test_fingerprint_sensitive);
	tcase_add_test(tc, test_fingerprint_canonical);
	tcase_add_test(tc, test_fingerprint_invalid);
	tcase_add_test(tc, test_summary);
	tcase_add_test(tc, test_summary_digests);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (sodium_init() < 0)
		return EXIT_FAILURE;
	sr = srunner_create(proto_frame_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
