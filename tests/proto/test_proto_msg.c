/*
 * Unit tests for proto/: every handshake, peer link and local API message.
 *
 * A table describes each message (sample, encoder, decoder, equality); the
 * generic tests run over the whole table: round trip and canonical
 * re-encoding, every truncation, trailing bytes, every other type byte,
 * other major versions, every too-small output buffer, and framing with a
 * zero, exact and one-too-small length cap.  Decoders get exact-size heap
 * copies so AddressSanitizer sees any read past the end, and their outputs
 * are checked untouched on failure.  Field-range rules follow per message.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "proto.h"

#define SENTINEL 0xA5
#define BUF_MAX 4096

typedef int (*enc_fn)(const void *msg, uint8_t *buf, size_t cap,
		      size_t *ret_len);
typedef int (*dec_fn)(const uint8_t *buf, size_t len, void *ret);
typedef bool (*eq_fn)(const void *a, const void *b);

typedef struct msg_case {
	const char *name;
	uint8_t type;
	bool versioned;      /* u16 version right after the type byte */
	bool open_tail;      /* the last field runs to the end (ROUND) */
	size_t ret_size;     /* decoded struct size; 0 for empty messages */
	const void *sample;
	enc_fn encode;
	dec_fn decode;
	eq_fn equal;
} msg_case;

/* ---- adapters ----------------------------------------------------------- */

#define ADAPT(fn, T)                                                         \
	static int enc_##fn(const void *m, uint8_t *b, size_t c, size_t *l)  \
	{                                                                    \
		return gsp_##fn##_encode((const T *)m, b, c, l);             \
	}                                                                    \
	static int dec_##fn(const uint8_t *b, size_t l, void *r)             \
	{                                                                    \
		return gsp_##fn##_decode(b, l, (T *)r);                      \
	}

#define ADAPT_EMPTY(fn)                                                      \
	static int enc_##fn(const void *m, uint8_t *b, size_t c, size_t *l)  \
	{                                                                    \
		(void)m;                                                     \
		return gsp_##fn##_encode(b, c, l);                           \
	}                                                                    \
	static int dec_##fn(const uint8_t *b, size_t l, void *r)             \
	{                                                                    \
		(void)r;                                                     \
		return gsp_##fn##_decode(b, l);                              \
	}

ADAPT(hs_init, gsp_hs_init)
ADAPT(hs_resp, gsp_hs_resp)
ADAPT(msg_model, gsp_msg_model)
ADAPT(msg_round, gsp_msg_round)
ADAPT(msg_resync, gsp_msg_resync)
ADAPT(msg_ping, gsp_msg_ping)
ADAPT(msg_pong, gsp_msg_ping)
ADAPT(msg_goodbye, gsp_msg_goodbye)
ADAPT(api_hello, gsp_api_hello)
ADAPT(api_hello_ok, gsp_api_hello)
ADAPT(api_step, gsp_api_step)
ADAPT(api_step_ok, gsp_api_step_ok)
ADAPT(api_average, gsp_api_average)
ADAPT(api_average_ok, gsp_api_average_ok)
ADAPT(api_status_ok, gsp_api_status_ok)
ADAPT(api_error, gsp_api_error)
ADAPT_EMPTY(api_ok)
ADAPT_EMPTY(api_status)
ADAPT_EMPTY(api_detach)

static bool text_eq(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static bool eq_hs_init(const void *a, const void *b)
{
	const gsp_hs_init *x = a, *y = b;
	return x->version == y->version && x->payload_len == y->payload_len &&
	       memcmp(x->payload, y->payload, x->payload_len) == 0;
}

static bool eq_hs_resp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(gsp_hs_resp)) == 0;
}

static bool eq_model(const void *pa, const void *pb)
{
	const gsp_msg_model *a = pa, *b = pb;

	return a->version == b->version && a->method == b->method &&
	       a->rank == b->rank && a->n_tensors == b->n_tensors &&
	       a->n_floats == b->n_floats &&
	       memcmp(a->fingerprint, b->fingerprint, sizeof(a->fingerprint)) == 0 &&
	       text_eq(a->summary, a->summary_len, b->summary, b->summary_len);
}

static bool eq_round(const void *pa, const void *pb)
{
	const gsp_msg_round *a = pa, *b = pb;

	return a->flags == b->flags && a->degree == b->degree &&
	       a->generation == b->generation &&
	       a->round == b->round && a->payload_len == b->payload_len &&
	       memcmp(a->payload, b->payload, a->payload_len) == 0;
}

static bool eq_resync(const void *pa, const void *pb)
{
	const gsp_msg_resync *a = pa, *b = pb;

	return a->flags == b->flags && a->generation == b->generation &&
	       a->ended_generation == b->ended_generation &&
	       a->ended_applied == b->ended_applied &&
	       a->ending_applied == b->ending_applied &&
	       a->last_completed == b->last_completed &&
	       a->last_sent == b->last_sent &&
	       memcmp(a->gen_tag, b->gen_tag, sizeof(a->gen_tag)) == 0 &&
	       memcmp(&a->weight, &b->weight, sizeof(a->weight)) == 0 &&
	       a->schedule == b->schedule;
}

static bool eq_ping(const void *pa, const void *pb)
{
	const gsp_msg_ping *a = pa, *b = pb;

	return a->nonce == b->nonce && a->time_ns == b->time_ns;
}

static bool eq_goodbye(const void *pa, const void *pb)
{
	const gsp_msg_goodbye *a = pa, *b = pb;

	return a->reason == b->reason &&
	       text_eq(a->text, a->text_len, b->text, b->text_len);
}

static bool eq_hello(const void *pa, const void *pb)
{
	const gsp_api_hello *a = pa, *b = pb;

	return a->version == b->version &&
	       text_eq(a->name, a->name_len, b->name, b->name_len);
}

static bool eq_step(const void *pa, const void *pb)
{
	return ((const gsp_api_step *)pa)->flags ==
	       ((const gsp_api_step *)pb)->flags;
}

static bool same_f64(double a, double b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

static bool eq_step_ok(const void *pa, const void *pb)
{
	const gsp_api_step_ok *a = pa, *b = pb;

	return a->step == b->step && a->edges_applied == b->edges_applied &&
	       a->edges_projected == b->edges_projected &&
	       a->edges_skipped == b->edges_skipped &&
	       a->max_staleness == b->max_staleness &&
	       a->bytes_sent == b->bytes_sent &&
	       a->bytes_received == b->bytes_received &&
	       same_f64(a->consensus_estimate, b->consensus_estimate);
}

static bool eq_average(const void *pa, const void *pb)
{
	const gsp_api_average *a = pa, *b = pb;

	return same_f64(a->target, b->target) &&
	       a->time_limit_ms == b->time_limit_ms &&
	       a->max_rounds == b->max_rounds;
}

static bool eq_average_ok(const void *pa, const void *pb)
{
	const gsp_api_average_ok *a = pa, *b = pb;

	return a->rounds == b->rounds && same_f64(a->estimate, b->estimate) &&
	       a->reached == b->reached;
}

static bool eq_status_ok(const void *pa, const void *pb)
{
	const gsp_api_status_ok *a = pa, *b = pb;

	return text_eq(a->json, a->json_len, b->json, b->json_len);
}

static bool eq_error(const void *pa, const void *pb)
{
	const gsp_api_error *a = pa, *b = pb;

	return a->code == b->code &&
	       text_eq(a->text, a->text_len, b->text, b->text_len);
}

static bool eq_none(const void *a, const void *b)
{
	(void)a;
	(void)b;
	return true;
}

/* REGISTER has its own encoder shape and is compared through the iterator
 * against the sample tensors. */
static const uint64_t reg_dims0[] = { 64, 3, 7, 7 };
static gsp_wire_tensor reg_tensors[3];

static void init_reg_tensors(void)
{
	memset(reg_tensors, 0, sizeof(reg_tensors));
	reg_tensors[0].name = "conv1.weight";
	reg_tensors[0].name_len = 12;
	reg_tensors[0].ndim = 4;
	memcpy(reg_tensors[0].dims, reg_dims0, sizeof(reg_dims0));
	reg_tensors[1].name = "bn1.bias";
	reg_tensors[1].name_len = 8;
	reg_tensors[1].ndim = 1;
	reg_tensors[1].dims[0] = 64;
	reg_tensors[2].name = "";
	reg_tensors[2].name_len = 0;
	reg_tensors[2].ndim = 0; /* a scalar */
}

static const gsp_api_register reg_sample = { .buffer_bytes = 4 * 9473 + 12 };

static int enc_api_register(const void *m, uint8_t *b, size_t c, size_t *l)
{
	return gsp_api_register_encode(m, reg_tensors, 3, b, c, l);
}

static int dec_api_register(const uint8_t *b, size_t l, void *r)
{
	return gsp_api_register_decode(b, l, r);
}

static bool tensor_eq(const gsp_wire_tensor *a, const gsp_wire_tensor *b)
{
	if (!text_eq(a->name, a->name_len, b->name, b->name_len) ||
	    a->ndim != b->ndim)
		return false;
	for (unsigned d = 0; d < a->ndim; d++)
		if (a->dims[d] != b->dims[d])
			return false;
	return true;
}

static bool eq_register(const void *pa, const void *pb)
{
	const gsp_api_register *a = pa, *b = pb;
	const gsp_api_register *dec = b->tensor_bytes ? b : a;
	gsp_api_tensor_iter it;
	gsp_wire_tensor t;
	uint32_t i = 0;

	if (a->buffer_bytes != b->buffer_bytes)
		return false;
	if (dec->n_tensors != 3 || dec->n_floats != 64 * 3 * 7 * 7 + 64 + 1)
		return false;
	gsp_api_tensor_iter_init(&it, dec);
	while (gsp_api_tensor_next(&it, &t)) {
		if (i >= 3 || !tensor_eq(&t, &reg_tensors[i]))
			return false;
		i++;
	}
	return i == 3;
}

/* ---- samples ------------------------------------------------------------ */

static gsp_hs_init hs_init_sample;
static gsp_hs_resp hs_resp_sample;
static uint8_t payload_sample[37];

static const gsp_msg_model model_sample = {
	.version = GSP_PROTO_VERSION,
	.method = GSP_WIRE_METHOD_POWERGOSSIP,
	.rank = 4,
	.n_tensors = 3,
	.n_floats = 40064,
	.fingerprint = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
			 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
			 31, 0xff },
	.summary = "powergossip r4, 3 tensors, 40064 floats",
	.summary_len = 39,
};

static const gsp_msg_round round_sample = {
	.degree = 2,
	.generation = 7,
	.round = UINT64_C(0x0102030405060708),
	.payload = payload_sample,
	.payload_len = sizeof(payload_sample),
};

static const gsp_msg_resync resync_sample = {
	.flags = GSP_RESYNC_LIVE,
	.generation = 0x01020304,
	.ended_generation = 0x01020302,
	.ended_applied = 77,
	.last_completed = 41,
	.last_sent = 42,
	.gen_tag = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
		     12 },
	.weight = 0.25f,
	.schedule = 0x0a0b0c0d,
};

static const gsp_msg_ping ping_sample = {
	.nonce = UINT64_C(0xfedcba9876543210),
	.time_ns = UINT64_C(123456789012345),
};

static const gsp_msg_goodbye goodbye_sample = {
	.reason = GSP_BYE_FINGERPRINT,
	.text = "model mismatch: theirs exact, 1 tensor, 10 floats",
	.text_len = 49,
};

static const gsp_api_hello hello_sample = {
	.version = GSP_PROTO_VERSION,
	.name = "pytorch trainer pid 4242",
	.name_len = 24,
};

static const gsp_api_hello hello_ok_sample = {
	.version = GSP_PROTO_VERSION | 0x07,
	.name = "gossipd 0.1.0",
	.name_len = 13,
};

static const gsp_api_step step_sample = { .flags = GSP_STEP_SYNC };

static const gsp_api_step_ok step_ok_sample = {
	.step = 1000001,
	.edges_applied = 2,
	.edges_projected = 3,
	.edges_skipped = 1,
	.max_staleness = 4,
	.bytes_sent = UINT64_C(1) << 40,
	.bytes_received = (UINT64_C(1) << 40) + 17,
	.consensus_estimate = 1.25e-3,
};

static const gsp_api_average average_sample = {
	.target = 1e-4,
	.time_limit_ms = 30000,
	.max_rounds = 0,
};

static const gsp_api_average_ok average_ok_sample = {
	.rounds = 77,
	.estimate = 9.5e-5,
	.reached = true,
};

static const gsp_api_status_ok status_ok_sample = {
	.json = "{\"edges\":[{\"peer\":\"abc\",\"round\":7}]}",
	.json_len = 36,
};

static const gsp_api_error error_sample = {
	.code = -EBUSY,
	.text = "a model is already registered by another client",
	.text_len = 47,
};

static msg_case cases[] = {
	{ "HS_INIT", GSP_HS_INIT, true, false, sizeof(gsp_hs_init),
	  &hs_init_sample, enc_hs_init, dec_hs_init, eq_hs_init },
	{ "HS_RESP", GSP_HS_RESP, true, false, sizeof(gsp_hs_resp),
	  &hs_resp_sample, enc_hs_resp, dec_hs_resp, eq_hs_resp },
	{ "MODEL", GSP_MSG_MODEL, true, false, sizeof(gsp_msg_model),
	  &model_sample, enc_msg_model, dec_msg_model, eq_model },
	{ "ROUND", GSP_MSG_ROUND, false, true, sizeof(gsp_msg_round),
	  &round_sample, enc_msg_round, dec_msg_round, eq_round },
	{ "RESYNC", GSP_MSG_RESYNC, false, false, sizeof(gsp_msg_resync),
	  &resync_sample, enc_msg_resync, dec_msg_resync, eq_resync },
	{ "PING", GSP_MSG_PING, false, false, sizeof(gsp_msg_ping),
	  &ping_sample, enc_msg_ping, dec_msg_ping, eq_ping },
	{ "PONG", GSP_MSG_PONG, false, false, sizeof(gsp_msg_ping),
	  &ping_sample, enc_msg_pong, dec_msg_pong, eq_ping },
	{ "GOODBYE", GSP_MSG_GOODBYE, false, false, sizeof(gsp_msg_goodbye),
	  &goodbye_sample, enc_msg_goodbye, dec_msg_goodbye, eq_goodbye },
	{ "HELLO", GSP_API_HELLO, true, false, sizeof(gsp_api_hello),
	  &hello_sample, enc_api_hello, dec_api_hello, eq_hello },
	{ "HELLO_OK", GSP_API_HELLO_OK, true, false, sizeof(gsp_api_hello),
	  &hello_ok_sample, enc_api_hello_ok, dec_api_hello_ok, eq_hello },
	{ "REGISTER", GSP_API_REGISTER, false, false, sizeof(gsp_api_register),
	  &reg_sample, enc_api_register, dec_api_register, eq_register },
	{ "OK", GSP_API_OK, false, false, 0, NULL, enc_api_ok, dec_api_ok,
	  eq_none },
	{ "STEP", GSP_API_STEP, false, false, sizeof(gsp_api_step),
	  &step_sample, enc_api_step, dec_api_step, eq_step },
	{ "STEP_OK", GSP_API_STEP_OK, false, false, sizeof(gsp_api_step_ok),
	  &step_ok_sample, enc_api_step_ok, dec_api_step_ok, eq_step_ok },
	{ "AVERAGE", GSP_API_AVERAGE, false, false, sizeof(gsp_api_average),
	  &average_sample, enc_api_average, dec_api_average, eq_average },
	{ "AVERAGE_OK", GSP_API_AVERAGE_OK, false, false,
	  sizeof(gsp_api_average_ok), &average_ok_sample, enc_api_average_ok,
	  dec_api_average_ok, eq_average_ok },
	{ "STATUS", GSP_API_STATUS, false, false, 0, NULL, enc_api_status,
	  dec_api_status, eq_none },
	{ "STATUS_OK", GSP_API_STATUS_OK, false, false,
	  sizeof(gsp_api_status_ok), &status_ok_sample, enc_api_status_ok,
	  dec_api_status_ok, eq_status_ok },
	{ "DETACH", GSP_API_DETACH, false, false, 0, NULL, enc_api_detach,
	  dec_api_detach, eq_none },
	{ "ERROR", GSP_API_ERROR, false, false, sizeof(gsp_api_error),
	  &error_sample, enc_api_error, dec_api_error, eq_error },
};
#define N_CASES ((int)(sizeof(cases) / sizeof(*cases)))

static void setup(void)
{
	hs_init_sample.version = GSP_PROTO_VERSION;
	hs_init_sample.payload_len = GSP_HS_INIT_PAYLOAD;
	for (unsigned i = 0; i < GSP_HS_INIT_PAYLOAD; i++)
		hs_init_sample.payload[i] = (uint8_t)(i + 1);
	hs_resp_sample.version = GSP_PROTO_VERSION | 0x03;
	for (unsigned i = 0; i < GSP_HS_RESP_PAYLOAD; i++)
		hs_resp_sample.payload[i] = (uint8_t)(0xff - i);
	for (unsigned i = 0; i < sizeof(payload_sample); i++)
		payload_sample[i] = (uint8_t)(i * 13 + 1);
	init_reg_tensors();
}

/* ---- generic helpers ---------------------------------------------------- */

/* Encodes a case's sample into buf; returns the length. */
static size_t encode_case(const msg_case *c, uint8_t *buf)
{
	size_t len = 0;

	ck_assert_int_eq(c->encode(c->sample, buf, BUF_MAX, &len), 0);
	ck_assert_uint_gt(len, 0);
	ck_assert_uint_eq(buf[0], c->type);
	return len;
}

/* Decodes an exact-size heap copy of buf[0..len); the output is checked
 * untouched when the decoder fails.  Returns the decoder's code. */
static int decode_copy(const msg_case *c, const uint8_t *buf, size_t len,
		       void *ret)
{
	uint8_t *copy = malloc(len ? len : 1);
	uint8_t before[512];
	int r;

	ck_assert_ptr_nonnull(copy);
	ck_assert_uint_le(c->ret_size, sizeof(before));
	if (len)
		memcpy(copy, buf, len);
	memset(ret, SENTINEL, c->ret_size);
	memset(before, SENTINEL, c->ret_size);
	r = c->decode(len ? copy : NULL, len, ret);
	if (r < 0)
		ck_assert_msg(memcmp(ret, before, c->ret_size) == 0,
			      "%s: output written on failure (%d)", c->name, r);
	free(copy);
	return r;
}

/* ---- generic tests over every message ------------------------------------ */

START_TEST(test_roundtrip)
{
	const msg_case *c = &cases[_i];
	uint8_t buf[BUF_MAX], again[BUF_MAX], *copy;
	uint8_t ret[512];
	size_t len, len2 = 0;

	len = encode_case(c, buf);
	copy = malloc(len);
	ck_assert_ptr_nonnull(copy);
	memcpy(copy, buf, len);
	memset(ret, SENTINEL, sizeof(ret));
	ck_assert_int_eq(c->decode(copy, len, ret), 0);
	if (c->ret_size)
		ck_assert_msg(c->equal(c->sample, ret), "%s: round trip differs",
			      c->name);
	/* Canonical: the decoded message encodes to the same bytes. */
	ck_assert_int_eq(c->encode(c->ret_size ? ret : NULL, again,
				   sizeof(again), &len2), 0);
	ck_assert_uint_eq(len2, len);
	ck_assert_mem_eq(again, buf, len);
	/* And the type classifiers agree. */
	uint8_t t = 0;
	int known = (gsp_msg_type(buf, len, &t) == 0) +
		    (gsp_hs_type(buf, len, &t) == 0) +
		    (gsp_api_type(buf, len, &t) == 0);
	ck_assert_int_eq(known, 1);
	ck_assert_uint_eq(t, c->type);
	free(copy);
}
END_TEST

START_TEST(test_truncated)
{
	const msg_case *c = &cases[_i];
	uint8_t buf[BUF_MAX], ret[512];
	size_t len = encode_case(c, buf);

	for (size_t l = 0; l < len; l++) {
		int r = decode_copy(c, buf, l, ret);

		/* A shorter ROUND payload is still a ROUND, down to 1 byte. */
		if (c->open_tail && l > GSP_MSG_ROUND_HEAD)
			ck_assert_msg(r == 0, "%s truncated to %zu: %d", c->name,
				      l, r);
		else
			ck_assert_msg(r == -EBADMSG, "%s truncated to %zu: %d",
				      c->name, l, r);
	}
	/* NULL input with a length is rejected too. */
	ck_assert_int_eq(c->decode(NULL, len, ret), -EBADMSG);
}
END_TEST

START_TEST(test_trailing)
{
	const msg_case *c = &cases[_i];
	uint8_t buf[BUF_MAX + 8], ret[512];
	size_t len = encode_case(c, buf);

	for (size_t extra = 1; extra <= 8; extra++) {
		memset(buf + len, 0, extra);
		int r = decode_copy(c, buf, len + extra, ret);

		/* HS_INIT: a longer payload carries a certificate (up to
		 * GSP_HS_INIT_PAYLOAD_MAX: test_hs_rules). */
		if (c->open_tail || c->type == GSP_HS_INIT)
			ck_assert_int_eq(r, 0); /* more payload */
		else
			ck_assert_msg(r == -EBADMSG, "%s + %zu bytes: %d",
				      c->name, extra, r);
	}
}
END_TEST

START_TEST(test_other_types)
{
	const msg_case *c = &cases[_i];
	uint8_t buf[BUF_MAX], ret[512];
	size_t len = encode_case(c, buf);

	for (unsigned t = 0; t < 256; t++) {
		if (t == c->type)
			continue;
		buf[0] = (uint8_t)t;
		int r = decode_copy(c, buf, len, ret);

		ck_assert_msg(r == -ENOMSG, "%s with type 0x%02x: %d", c->name,
			      t, r);
		/* A lone type byte is also the wrong type, not truncated. */
		ck_assert_int_eq(decode_copy(c, buf, 1, ret), -ENOMSG);
	}
}
END_TEST

START_TEST(test_versions)
{
	const msg_case *c = &cases[_i];
	uint8_t buf[BUF_MAX], ret[512];
	size_t len = encode_case(c, buf);
	uint16_t v = 0;

	if (!c->versioned) {
		ck_assert_int_eq(gsp_proto_version_of(buf, len, &v), -ENOMSG);
		return;
	}
	ck_assert_int_eq(gsp_proto_version_of(buf, len, &v), 0);
	ck_assert_uint_eq(GSP_PROTO_MAJOR(v), GSP_PROTO_VERSION_MAJOR);
	/* Another major is refused from the first three bytes alone, so even
	 * a message of another length or layout gets the version error. */
	static const uint8_t majors[] = { 0, 2, 3, 0x7f, 0xff };
	for (size_t i = 0; i < sizeof(majors); i++) {
		buf[1] = 0x05;
		buf[2] = majors[i];
		ck_assert_int_eq(decode_copy(c, buf, len, ret), -EPROTONOSUPPORT);
		ck_assert_int_eq(decode_copy(c, buf, 3, ret), -EPROTONOSUPPORT);
		ck_assert_int_eq(gsp_proto_version_of(buf, 3, &v), 0);
		ck_assert_uint_eq(v, (uint16_t)(majors[i] << 8 | 0x05));
	}
	/* Any minor of our major decodes, and keeps its value. */
	buf[1] = 0xee;
	buf[2] = GSP_PROTO_VERSION_MAJOR;
	ck_assert_int_eq(decode_copy(c, buf, len, ret), 0);
	memcpy(&v, ret, sizeof(v)); /* version is each struct's first field */
	ck_assert_uint_eq(v, (uint16_t)(GSP_PROTO_VERSION_MAJOR << 8 | 0xee));
	ck_assert_int_eq(gsp_proto_version_of(buf, 2, &v), -EBADMSG);
}
END_TEST

START_TEST(test_small_buffer)
{
	const msg_case *c = &cases[_i];
	uint8_t buf[BUF_MAX], out[BUF_MAX + 16], ref[BUF_MAX + 16];
	size_t len = encode_case(c, buf), got = 12345;

	for (size_t cap = 0; cap < len; cap++) {
		memset(out, SENTINEL, len + 16);
		memset(ref, SENTINEL, len + 16);
		ck_assert_int_eq(c->encode(c->sample, out, cap, &got), -ENOBUFS);
		ck_assert_msg(memcmp(out, ref, len + 16) == 0,
			      "%s: cap %zu written", c->name, cap);
		ck_assert_uint_eq(got, 12345);
	}
	ck_assert_int_eq(c->encode(c->sample, NULL, len, &got), -ENOBUFS);
	ck_assert_int_eq(c->encode(c->sample, out, len, NULL), -EINVAL);
	ck_assert_int_eq(c->encode(c->sample, out, len, &got), 0);
	ck_assert_uint_eq(got, len);
}
END_TEST

/* Framing each message: exact cap, one byte too small, and length 0. */
START_TEST(test_framed)
{
	const msg_case *c = &cases[_i];
	uint8_t buf[BUF_MAX + GSP_FRAME_HEADER];
	_Alignas(max_align_t) uint8_t ret[512];    /* decode_copy's bound */
	const uint8_t *body;
	uint32_t blen;
	size_t len, used;

	len = encode_case(c, buf + GSP_FRAME_HEADER);
	ck_assert_int_eq(gsp_frame_header_write(buf, sizeof(buf), (uint32_t)len), 0);
	ck_assert_int_eq(gsp_frame_parse(buf, len + 4, (uint32_t)len, &body,
					 &blen, &used), 0);
	ck_assert_uint_eq(blen, len);
	ck_assert_uint_eq(used, len + 4);
	ck_assert_int_eq(decode_copy(c, body, blen, ret), 0);
	ck_assert_int_eq(gsp_frame_parse(buf, len + 4, (uint32_t)len - 1, &body,
					 &blen, &used), -EMSGSIZE);
	ck_assert_int_eq(gsp_frame_parse(buf, 4, (uint32_t)len - 1, &body,
					 &blen, &used), -EMSGSIZE);
	memset(buf, 0, 4);
	ck_assert_int_eq(gsp_frame_parse(buf, len + 4, UINT32_MAX, &body,
					 &blen, &used), -EBADMSG);
	/* Every handshake message fits the pre-authentication cap, and every
	 * peer message but ROUND the control cap (with its AEAD tag). */
	if (c->type == GSP_HS_INIT || c->type == GSP_HS_RESP)
		ck_assert_uint_le(len, GSP_PROTO_PREAUTH_MAX);
}
END_TEST

/* ---- per-message rules ---------------------------------------------------- */

/* Patches one byte of a valid encoding and expects the decoder to say r. */
static void expect_patched(const msg_case *c, size_t off, uint8_t v, int want)
{
	uint8_t buf[BUF_MAX], ret[512];
	size_t len = encode_case(c, buf);

	ck_assert_uint_lt(off, len);
	buf[off] = v;
	int r = decode_copy(c, buf, len, ret);
	ck_assert_msg(r == want, "%s byte %zu = 0x%02x: %d, want %d", c->name,
		      off, v, r, want);
}

static const msg_case *find(uint8_t type)
{
	for (int i = 0; i < N_CASES; i++)
		if (cases[i].type == type)
			return &cases[i];
	ck_abort_msg("no case for type 0x%02x", type);
	return NULL;
}

START_TEST(test_sizes)
{
	uint8_t buf[BUF_MAX];

	ck_assert_uint_eq(encode_case(find(GSP_HS_INIT), buf), 129);
	ck_assert_uint_eq(encode_case(find(GSP_HS_RESP), buf), 51);
	ck_assert_uint_eq(encode_case(find(GSP_MSG_RESYNC), buf), 66);
	ck_assert_uint_eq(encode_case(find(GSP_MSG_PING), buf), 17);
	ck_assert_uint_eq(encode_case(find(GSP_MSG_ROUND), buf),
			  GSP_MSG_ROUND_HEAD + sizeof(payload_sample));
	ck_assert_uint_eq(encode_case(find(GSP_MSG_MODEL), buf), 52 + 39);
	ck_assert_uint_eq(encode_case(find(GSP_API_STEP_OK), buf), 49);
	ck_assert_uint_eq(encode_case(find(GSP_API_AVERAGE), buf), 17);
	ck_assert_uint_eq(encode_case(find(GSP_API_AVERAGE_OK), buf), 14);
	ck_assert_uint_eq(encode_case(find(GSP_API_OK), buf), 1);
	ck_assert_uint_eq(encode_case(find(GSP_API_STEP), buf), 5);
}
END_TEST

START_TEST(test_byte_layout)
{
	/* Little-endian, byte by byte, at the documented offsets. */
	uint8_t buf[BUF_MAX];
	size_t len;

	len = encode_case(find(GSP_MSG_ROUND), buf);
	static const uint8_t round_head[16] = {
		0x02, 0x00, 0x02, 0x00, 0x07, 0x00, 0x00, 0x00,
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
	};
	ck_assert_mem_eq(buf, round_head, 16);
	ck_assert_mem_eq(buf + 16, payload_sample, len - 16);

	encode_case(find(GSP_MSG_RESYNC), buf);
	static const uint8_t resync_head[22] = {
		0x03, 0x01, 0x04, 0x03, 0x02, 0x01, 41, 0, 0, 0, 0, 0, 0, 0,
		42, 0, 0, 0, 0, 0, 0, 0,
	};
	ck_assert_mem_eq(buf, resync_head, 22);
	static const uint8_t resync_tail[12] = {
		0x02, 0x03, 0x02, 0x01, 77, 0, 0, 0, 0, 0, 0, 0,
	};
	ck_assert_mem_eq(buf + 38, resync_tail, 12);
	static const uint8_t resync_ending[8] = {0};
	ck_assert_mem_eq(buf + 50, resync_ending, 8);
	static const uint8_t resync_weight[4] = {0x00, 0x00, 0x80, 0x3e}; /* 0.25f */
	ck_assert_mem_eq(buf + 58, resync_weight, 4);
	static const uint8_t resync_schedule[4] = {0x0d, 0x0c, 0x0b, 0x0a};
	ck_assert_mem_eq(buf + 62, resync_schedule, 4);

	encode_case(find(GSP_MSG_MODEL), buf);
	static const uint8_t model_head[18] = {
		0x01, GSP_PROTO_VERSION_MINOR, GSP_PROTO_VERSION_MAJOR, 0x00, 0x04, 0x00, 0x03, 0x00, 0x00, 0x00,
		0x80, 0x9c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	ck_assert_mem_eq(buf, model_head, 18);
	ck_assert_uint_eq(buf[49], 0xff);  /* fingerprint[31] */
	ck_assert_uint_eq(buf[50], 39);    /* summary length */
	ck_assert_uint_eq(buf[51], 0);
	ck_assert_uint_eq(buf[52], 'p');

	encode_case(find(GSP_API_ERROR), buf);
	static const uint8_t error_head[7] = { 0xff, 0xf0, 0xff, 0xff, 0xff,
					       47, 0 };
	ck_assert_int_eq(-EBUSY, -16);
	ck_assert_mem_eq(buf, error_head, 7);

	encode_case(find(GSP_HS_INIT), buf);
	ck_assert_uint_eq(buf[0], 0x10);
	ck_assert_uint_eq(buf[1], GSP_PROTO_VERSION_MINOR);
	ck_assert_uint_eq(buf[2], GSP_PROTO_VERSION_MAJOR);
	ck_assert_uint_eq(buf[3], 1);      /* payload[0] */
	ck_assert_uint_eq(buf[110], 108);  /* payload[107] */
}
END_TEST

START_TEST(test_model_rules)
{
	const msg_case *c = find(GSP_MSG_MODEL);
	gsp_msg_model m = model_sample, d;
	uint8_t buf[BUF_MAX];
	size_t len;

	/* "No model". */
	memset(&m, 0, sizeof(m));
	m.version = GSP_PROTO_VERSION;
	m.summary = "no model";
	m.summary_len = 8;
	ck_assert_int_eq(gsp_msg_model_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_msg_model_decode(buf, len, &d), 0);
	ck_assert(eq_model(&m, &d));
	m.fingerprint[31] = 1;
	ck_assert_int_eq(gsp_msg_model_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.fingerprint[31] = 0;
	m.rank = 1;
	ck_assert_int_eq(gsp_msg_model_encode(&m, buf, sizeof(buf), &len), -EINVAL);

	/* Invalid structs. */
	m = model_sample;
	m.version = 0x0200;
	ck_assert_int_eq(gsp_msg_model_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m = model_sample;
	m.n_floats = 2; /* fewer floats than tensors */
	ck_assert_int_eq(gsp_msg_model_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m = model_sample;
	m.n_tensors = 0;
	ck_assert_int_eq(gsp_msg_model_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m = model_sample;
	m.n_tensors = GSP_API_MAX_TENSORS + 1;
	m.n_floats = UINT64_MAX;
	ck_assert_int_eq(gsp_msg_model_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m = model_sample;
	m.summary = "nul\0inside";
	m.summary_len = 10;
	ck_assert_int_eq(gsp_msg_model_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	char long_text[GSP_MODEL_SUMMARY_MAX + 1];
	memset(long_text, 'x', sizeof(long_text));
	m.summary = long_text;
	m.summary_len = GSP_MODEL_SUMMARY_MAX;
	ck_assert_int_eq(gsp_msg_model_encode(&m, buf, sizeof(buf), &len), 0);
	m.summary_len = GSP_MODEL_SUMMARY_MAX + 1;
	ck_assert_int_eq(gsp_msg_model_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.summary = NULL;
	m.summary_len = 1;
	ck_assert_int_eq(gsp_msg_model_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ck_assert_int_eq(gsp_msg_model_encode(NULL, buf, sizeof(buf), &len), -EINVAL);

	/* Patched fields. */
	expect_patched(c, 6, 0, -EBADMSG);     /* n_tensors 0, floats != 0 */
	expect_patched(c, 9, 0x01, -EBADMSG);  /* n_tensors > cap */
	expect_patched(c, 50, 201, -EBADMSG);  /* summary length */
	expect_patched(c, 53, 0, -EBADMSG);    /* NUL in the summary */
	expect_patched(c, 51, 1, -EBADMSG);    /* summary length 256+39 */
	expect_patched(c, 3, 0x7f, 0);         /* methods are opaque here */
	ck_assert_int_eq(gsp_msg_model_decode(buf, 10, NULL), -EINVAL);
}
END_TEST

START_TEST(test_round_rules)
{
	const msg_case *c = find(GSP_MSG_ROUND);
	gsp_msg_round m = round_sample, d;
	uint8_t buf[BUF_MAX], head[GSP_MSG_ROUND_HEAD];
	size_t len;

	expect_patched(c, 1, 8, -EBADMSG);    /* unknown flag */
	expect_patched(c, 1, 0x80, -EBADMSG);
	expect_patched(c, 1, GSP_ROUND_REACHED | GSP_ROUND_AVERAGING, 0);
	expect_patched(c, 1, GSP_ROUND_AVERAGING | GSP_ROUND_FINITE, 0);   /* 1.6 */
	expect_patched(c, 2, 0, -EBADMSG);    /* degree 0 */
	expect_patched(c, 4, 0, -EBADMSG);    /* generation 0 */
	expect_patched(c, 15, 0, 0);          /* round still >= 1 */

	/* Empty payload, generation 0, round 0, degree 0: all invalid. */
	encode_case(c, buf);
	ck_assert_int_eq(gsp_msg_round_decode(buf, GSP_MSG_ROUND_HEAD, &d), -EBADMSG);
	memset(buf + 8, 0, 8);
	ck_assert_int_eq(gsp_msg_round_decode(buf, GSP_MSG_ROUND_HEAD + 1, &d), -EBADMSG);
	m.payload_len = 0;
	ck_assert_int_eq(gsp_msg_round_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ck_assert_int_eq(gsp_msg_round_encode_head(&m, head, sizeof(head)), -EINVAL);
	m = round_sample;
	m.generation = 0;
	ck_assert_int_eq(gsp_msg_round_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m = round_sample;
	m.round = 0;
	ck_assert_int_eq(gsp_msg_round_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m = round_sample;
	m.degree = 0;
	ck_assert_int_eq(gsp_msg_round_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m = round_sample;
	m.payload = NULL;
	ck_assert_int_eq(gsp_msg_round_encode(&m, buf, sizeof(buf), &len), -EINVAL);

	/* The head alone matches the full encoding; the payload is placed by
	 * the caller, also in place (payload already inside buf). */
	m = round_sample;
	ck_assert_int_eq(gsp_msg_round_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_msg_round_encode_head(&m, head, sizeof(head)), 0);
	ck_assert_mem_eq(head, buf, sizeof(head));
	ck_assert_int_eq(gsp_msg_round_encode_head(&m, head, sizeof(head) - 1),
			 -ENOBUFS);
	uint8_t inplace[GSP_MSG_ROUND_HEAD + sizeof(payload_sample)];
	memcpy(inplace + GSP_MSG_ROUND_HEAD, payload_sample, sizeof(payload_sample));
	m.payload = inplace + GSP_MSG_ROUND_HEAD;
	ck_assert_int_eq(gsp_msg_round_encode(&m, inplace, sizeof(inplace), &len), 0);
	ck_assert_mem_eq(inplace, buf, len);

	/* The payload is returned in place, at a 16-byte offset. */
	ck_assert_int_eq(gsp_msg_round_decode(buf, len, &d), 0);
	ck_assert_ptr_eq(d.payload, buf + GSP_MSG_ROUND_HEAD);
	ck_assert_uint_eq(d.payload_len, sizeof(payload_sample));
	ck_assert_int_eq(gsp_msg_round_decode(buf, GSP_MSG_ROUND_HEAD + 1, &d), 0);
	ck_assert_uint_eq(d.payload_len, 1);
}
END_TEST

START_TEST(test_resync_rules)
{
	const msg_case *c = find(GSP_MSG_RESYNC);
	gsp_msg_resync m, d;
	uint8_t buf[BUF_MAX];
	size_t len;

	/* last_sent - last_completed must be 0 or 1. */
	expect_patched(c, 14, 43, -EBADMSG);  /* sent 43, completed 41 */
	expect_patched(c, 14, 40, -EBADMSG);  /* sent < completed */
	expect_patched(c, 14, 41, 0);         /* idle or completed */
	/* Unknown flags; an ended generation after the current one; an
	 * applied count without a generation. */
	expect_patched(c, 1, 0x10, -EBADMSG);
	expect_patched(c, 1, 0x80, -EBADMSG);
	/* NO_START (1.5) goes with any other flag, or none. */
	expect_patched(c, 1, GSP_RESYNC_NO_START, 0);
	expect_patched(c, 1, GSP_RESYNC_LIVE | GSP_RESYNC_NO_START, 0);
	/* ENDING is of the live generation, at most at its last completed
	 * round; without it, ending_applied is 0. */
	expect_patched(c, 1, GSP_RESYNC_ENDING, -EBADMSG);              /* not LIVE */
	expect_patched(c, 50, 1, -EBADMSG);                             /* no ENDING */
	m = resync_sample;
	m.flags = GSP_RESYNC_LIVE | GSP_RESYNC_ENDING;
	m.ending_applied = m.last_completed;
	ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_msg_resync_decode(buf, len, &d), 0);
	ck_assert(eq_resync(&m, &d));
	m.ending_applied = m.last_completed + 1;
	ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	expect_patched(c, 1, GSP_RESYNC_LIVE | GSP_RESYNC_NO_HISTORY, 0);
	expect_patched(c, 38, 0x05, -EBADMSG);
	m = resync_sample;
	m.ended_generation = 0;
	ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.ended_applied = 0;
	ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), 0);
	/* Generation 0 is never LIVE. */
	memset(&m, 0, sizeof(m));
	m.flags = GSP_RESYNC_LIVE;
	ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	/* Generation 0 carries nothing else. */
	memset(&m, 0, sizeof(m));
	ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_msg_resync_decode(buf, len, &d), 0);
	ck_assert(eq_resync(&m, &d));
	buf[20] = 1;
	ck_assert_int_eq(gsp_msg_resync_decode(buf, len, &d), -EBADMSG);
	m.last_sent = 1;
	ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.last_completed = 1;
	ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	/* A fresh generation: nothing sent yet. */
	m = resync_sample;
	m.last_completed = m.last_sent = 0;
	ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), 0);
	m.last_completed = UINT64_MAX - 1;
	m.last_sent = UINT64_MAX;
	ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_msg_resync_decode(buf, len, &d), 0);
	ck_assert(eq_resync(&m, &d));
	m.last_completed = 0;
	ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	/* The weight: 0 (none) or a mixing weight in (0, 1]; never negative,
	 * above 1, or not finite. */
	static const float bad_weight[] = {-0.25f, 1.0000001f, 2.0f, INFINITY,
					   -INFINITY, NAN};
	static const float good_weight[] = {0.0f, -0.0f, 1e-30f, 0.5f, 1.0f};
	for (size_t k = 0; k < sizeof(good_weight) / sizeof(good_weight[0]); k++) {
		m = resync_sample;
		m.weight = good_weight[k];
		ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), 0);
		ck_assert_int_eq(gsp_msg_resync_decode(buf, len, &d), 0);
		ck_assert(eq_resync(&m, &d));
	}
	for (size_t k = 0; k < sizeof(bad_weight) / sizeof(bad_weight[0]); k++) {
		m = resync_sample;
		m.weight = bad_weight[k];
		ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len),
				 -EINVAL);
		m.weight = 0.5f;
		ck_assert_int_eq(gsp_msg_resync_encode(&m, buf, sizeof(buf), &len), 0);
		uint32_t bits;
		memcpy(&bits, &bad_weight[k], 4);
		for (int b = 0; b < 4; b++)
			buf[58 + b] = (uint8_t)(bits >> (8 * b));
		ck_assert_int_eq(gsp_msg_resync_decode(buf, len, &d), -EBADMSG);
	}
}
END_TEST

START_TEST(test_ping_pong_distinct)
{
	uint8_t buf[64];
	size_t len;
	gsp_msg_ping p;

	ck_assert_int_eq(gsp_msg_ping_encode(&ping_sample, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_msg_pong_decode(buf, len, &p), -ENOMSG);
	ck_assert_int_eq(gsp_msg_pong_encode(&ping_sample, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_msg_ping_decode(buf, len, &p), -ENOMSG);
	ck_assert_int_eq(gsp_msg_pong_decode(buf, len, &p), 0);
	ck_assert(eq_ping(&p, &ping_sample));
}
END_TEST

START_TEST(test_goodbye_rules)
{
	const msg_case *c = find(GSP_MSG_GOODBYE);
	gsp_msg_goodbye m = goodbye_sample, d;
	char text[GSP_GOODBYE_TEXT_MAX + 1];
	uint8_t buf[BUF_MAX];
	size_t len;

	memset(text, 'g', sizeof(text));
	m.text = text;
	m.text_len = GSP_GOODBYE_TEXT_MAX;
	ck_assert_int_eq(gsp_msg_goodbye_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_msg_goodbye_decode(buf, len, &d), 0);
	ck_assert(eq_goodbye(&m, &d));
	m.text_len++;
	ck_assert_int_eq(gsp_msg_goodbye_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.text_len = 0;
	m.text = NULL;
	m.reason = 0xbeef; /* unknown reasons are the receiver's business */
	ck_assert_int_eq(gsp_msg_goodbye_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(gsp_msg_goodbye_decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.reason, 0xbeef);
	ck_assert_uint_eq(d.text_len, 0);
	expect_patched(c, 6, 0, -EBADMSG);    /* NUL in the text */
	expect_patched(c, 4, 1, -EBADMSG);    /* text length 256 + 49 */
	/* 257 declared, 257 present: over the cap. */
	uint8_t big[5 + 257];
	memset(big, 'x', sizeof(big));
	big[0] = GSP_MSG_GOODBYE;
	big[3] = 1;
	big[4] = 1;
	ck_assert_int_eq(gsp_msg_goodbye_decode(big, sizeof(big), &d), -EBADMSG);
	big[3] = 0;
	ck_assert_int_eq(gsp_msg_goodbye_decode(big, 5 + 256, &d), 0);
}
END_TEST

START_TEST(test_hs_rules)
{
	gsp_hs_init i = hs_init_sample;
	gsp_hs_resp r = hs_resp_sample;
	uint8_t buf[BUF_MAX];
	size_t len;

	i.version = 0x0001;
	ck_assert_int_eq(gsp_hs_init_encode(&i, buf, sizeof(buf), &len), -EINVAL);
	r.version = 0xff00;
	ck_assert_int_eq(gsp_hs_resp_encode(&r, buf, sizeof(buf), &len), -EINVAL);
	/* An HS_RESP is not an HS_INIT, whatever its length. */
	r = hs_resp_sample;
	ck_assert_int_eq(gsp_hs_resp_encode(&r, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_hs_init_decode(buf, len, &i), -ENOMSG);
	ck_assert_uint_le(GSP_HS_INIT_MSG_MAX, GSP_PROTO_PREAUTH_MAX);
	ck_assert_uint_le(GSP_HS_CERT_MSG_MAX, GSP_PROTO_PREAUTH_MAX);
	/* The header is exactly the encoding's first bytes (the handshake
	 * hashes it before the payload exists). */
	uint8_t hdr[GSP_HS_HEADER_BYTES + 1] = {0};
	ck_assert_int_eq(gsp_hs_header_write(GSP_HS_RESP, r.version, hdr,
					     GSP_HS_HEADER_BYTES), 0);
	ck_assert_mem_eq(hdr, buf, GSP_HS_HEADER_BYTES);
	ck_assert_uint_eq(hdr[GSP_HS_HEADER_BYTES], 0);
	i = hs_init_sample;
	ck_assert_int_eq(gsp_hs_init_encode(&i, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_hs_header_write(GSP_HS_INIT, i.version, hdr,
					     sizeof(hdr)), 0);
	ck_assert_mem_eq(hdr, buf, GSP_HS_HEADER_BYTES);
	ck_assert_int_eq(gsp_hs_header_write(GSP_HS_INIT, i.version, hdr,
					     GSP_HS_HEADER_BYTES - 1), -ENOBUFS);
	ck_assert_int_eq(gsp_hs_header_write(GSP_MSG_MODEL, i.version, hdr,
					     sizeof(hdr)), -EINVAL);
	ck_assert_int_eq(gsp_hs_header_write(GSP_HS_INIT, 0x0201, hdr,
					     sizeof(hdr)), -EINVAL);
	/* HS_INIT's payload: 126 bytes without a certificate, up to 126 +
	 * GSP_CERT_MAX with one; outside, refused both ways. */
	i = hs_init_sample;
	i.payload_len = GSP_HS_INIT_PAYLOAD_MAX;
	ck_assert_int_eq(gsp_hs_init_encode(&i, buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, 371);
	ck_assert_int_eq(gsp_hs_init_decode(buf, len, &i), 0);
	ck_assert_uint_eq(i.payload_len, GSP_HS_INIT_PAYLOAD_MAX);
	ck_assert_int_eq(gsp_hs_init_decode(buf, len + 1, &i), -EBADMSG);
	ck_assert_int_eq(gsp_hs_init_decode(buf, GSP_HS_INIT_MSG_BYTES - 1, &i),
			 -EBADMSG);
	i.payload_len = GSP_HS_INIT_PAYLOAD_MAX + 1;
	ck_assert_int_eq(gsp_hs_init_encode(&i, buf, sizeof(buf), &len), -EINVAL);
	i.payload_len = GSP_HS_INIT_PAYLOAD - 1;
	ck_assert_int_eq(gsp_hs_init_encode(&i, buf, sizeof(buf), &len), -EINVAL);
}
END_TEST

START_TEST(test_hello_rules)
{
	gsp_api_hello m = hello_sample;
	char name[GSP_API_NAME_MAX + 1];
	uint8_t buf[BUF_MAX];
	size_t len;

	memset(name, 'n', sizeof(name));
	m.name = name;
	m.name_len = GSP_API_NAME_MAX;
	ck_assert_int_eq(gsp_api_hello_encode(&m, buf, sizeof(buf), &len), 0);
	m.name_len++;
	ck_assert_int_eq(gsp_api_hello_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ck_assert_int_eq(gsp_api_hello_ok_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m = hello_sample;
	m.version = 0x0200;
	ck_assert_int_eq(gsp_api_hello_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	expect_patched(find(GSP_API_HELLO), 6, 0, -EBADMSG);
	expect_patched(find(GSP_API_HELLO_OK), 4, 0x80, -EBADMSG);
}
END_TEST

/* Builds a REGISTER by hand: header, then tensors as raw bytes. */
static size_t put_register(uint8_t *buf, uint64_t buffer_bytes, uint32_t n,
			   const uint8_t *tensors, size_t tensors_len)
{
	buf[0] = GSP_API_REGISTER;
	for (int i = 0; i < 8; i++)
		buf[1 + i] = (uint8_t)(buffer_bytes >> (8 * i));
	for (int i = 0; i < 4; i++)
		buf[9 + i] = (uint8_t)(n >> (8 * i));
	memcpy(buf + 13, tensors, tensors_len);
	return 13 + tensors_len;
}

static int decode_register_copy(const uint8_t *buf, size_t len)
{
	gsp_api_register ret;
	return decode_copy(find(GSP_API_REGISTER), buf, len, &ret);
}

START_TEST(test_register_rules)
{
	static uint8_t buf[GSP_API_MAX_FRAME + 64];
	gsp_api_register reg = reg_sample, d;
	gsp_wire_tensor t[2];
	size_t len;

	/* A two-tensor REGISTER: "w" 3x2 and a scalar. */
	static const uint8_t two[] = {
		1, 'w', 2, 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
		0, 0,
	};
	len = put_register(buf, 28, 2, two, sizeof(two));
	ck_assert_int_eq(decode_register_copy(buf, len), 0);
	ck_assert_int_eq(gsp_api_register_decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.n_floats, 7);
	ck_assert_uint_eq(d.n_tensors, 2);
	/* buffer_bytes below 4 * floats. */
	len = put_register(buf, 27, 2, two, sizeof(two));
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	/* Counts: 0, more than present, more than the cap. */
	len = put_register(buf, 28, 0, two, sizeof(two));
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	len = put_register(buf, 28, 0, two, 0);
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	len = put_register(buf, 28, 3, two, sizeof(two));
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	len = put_register(buf, 28, 1, two, sizeof(two));
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	len = put_register(buf, 28, UINT32_MAX, two, sizeof(two));
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	/* 65537 scalars with empty names: present, but over the cap. */
	static uint8_t many[2 * (GSP_API_MAX_TENSORS + 1)];
	memset(many, 0, sizeof(many));
	len = put_register(buf, UINT64_MAX, GSP_API_MAX_TENSORS + 1, many,
			   sizeof(many));
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	len = put_register(buf, UINT64_MAX, GSP_API_MAX_TENSORS, many,
			   sizeof(many) - 2);
	ck_assert_int_eq(decode_register_copy(buf, len), 0);

	/* Per tensor: name_len > 63, NUL in the name, ndim > 8, dim 0,
	 * a product that overflows, a sum that overflows. */
	uint8_t bad[200];
	memset(bad, 0, sizeof(bad));
	bad[0] = 64;
	memset(bad + 1, 'a', 64);
	bad[65] = 0;
	len = put_register(buf, 0, 1, bad, 66);
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	bad[0] = 63;
	bad[10] = 0; /* a NUL inside the name */
	bad[64] = 0; /* ndim 0 */
	len = put_register(buf, 4, 1, bad, 65);
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	bad[10] = 'a';
	len = put_register(buf, 4, 1, bad, 65);
	ck_assert_int_eq(decode_register_copy(buf, len), 0);

	static const uint8_t nine_dims[] = { 0, 9 };
	uint8_t t9[2 + 9 * 8];
	memcpy(t9, nine_dims, 2);
	memset(t9 + 2, 0, 9 * 8);
	for (int i = 0; i < 9; i++)
		t9[2 + 8 * i] = 1;
	len = put_register(buf, 4, 1, t9, sizeof(t9));
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	t9[1] = 8;
	len = put_register(buf, 4, 1, t9, sizeof(t9) - 8);
	ck_assert_int_eq(decode_register_copy(buf, len), 0);
	t9[2 + 8 * 3] = 0; /* a zero dimension */
	len = put_register(buf, 4, 1, t9, sizeof(t9) - 8);
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);

	uint8_t ovf[2 + 2 * 8];
	ovf[0] = 0;
	ovf[1] = 2;
	memset(ovf + 2, 0, 16);
	ovf[2 + 4] = 1;  /* 2^32 */
	ovf[10 + 4] = 1; /* 2^32: product 2^64 */
	len = put_register(buf, UINT64_MAX, 1, ovf, sizeof(ovf));
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	ovf[10 + 4] = 0;
	ovf[10 + 3] = 0x80; /* 2^31: product 2^63 */
	len = put_register(buf, UINT64_MAX, 1, ovf, sizeof(ovf));
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG); /* 4x */
	uint8_t sum[2 * sizeof(ovf)];
	memcpy(sum, ovf, sizeof(ovf)); /* 2^63 floats each: the sum wraps */
	memcpy(sum + sizeof(ovf), ovf, sizeof(ovf));
	len = put_register(buf, UINT64_MAX, 2, sum, sizeof(sum));
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	ovf[10 + 3] = 0x40; /* 2^62 floats: 2^64 bytes */
	len = put_register(buf, UINT64_MAX, 1, ovf, sizeof(ovf));
	ck_assert_int_eq(decode_register_copy(buf, len), -EBADMSG);
	ovf[10 + 3] = 0x20;
	len = put_register(buf, UINT64_MAX, 1, ovf, sizeof(ovf));
	ck_assert_int_eq(decode_register_copy(buf, len), 0);

	/* Encoder: invalid tensors, too small a buffer, too many bytes. */
	memset(t, 0, sizeof(t));
	t[0].name = "x";
	t[0].name_len = 1;
	t[0].ndim = 1;
	t[0].dims[0] = 10;
	t[1] = t[0];
	reg.buffer_bytes = 80;
	ck_assert_int_eq(gsp_api_register_encode(&reg, t, 2, buf, 100, &len), 0);
	ck_assert_int_eq(gsp_api_register_size(t, 2), (int64_t)len);
	reg.buffer_bytes = 79;
	ck_assert_int_eq(gsp_api_register_encode(&reg, t, 2, buf, 100, &len), -EINVAL);
	reg.buffer_bytes = 80;
	ck_assert_int_eq(gsp_api_register_encode(&reg, t, 0, buf, 100, &len), -EINVAL);
	ck_assert_int_eq(gsp_api_register_encode(&reg, NULL, 2, buf, 100, &len), -EINVAL);
	t[1].dims[0] = 0;
	ck_assert_int_eq(gsp_api_register_encode(&reg, t, 2, buf, 100, &len), -EINVAL);
	t[1].dims[0] = 10;
	t[1].ndim = 9;
	ck_assert_int_eq(gsp_api_register_encode(&reg, t, 2, buf, 100, &len), -EINVAL);
	t[1].ndim = 2;
	t[1].dims[1] = UINT64_MAX;
	ck_assert_int_eq(gsp_api_register_encode(&reg, t, 2, buf, 100, &len), -EOVERFLOW);
	t[1].ndim = 1;
	t[1].name_len = 64;
	t[1].name = "0123456789012345678901234567890123456789012345678901234567890123";
	ck_assert_int_eq(gsp_api_register_encode(&reg, t, 2, buf, 100, &len), -EINVAL);
	t[1].name_len = 2;
	t[1].name = "a\0";
	ck_assert_int_eq(gsp_api_register_encode(&reg, t, 2, buf, 100, &len), -EINVAL);

	/* 65536 tensors of 63-byte names and 8 dims exceed the frame cap. */
	gsp_wire_tensor *big = calloc(GSP_API_MAX_TENSORS, sizeof(*big));
	ck_assert_ptr_nonnull(big);
	for (uint32_t i = 0; i < GSP_API_MAX_TENSORS; i++) {
		big[i].name = "012345678901234567890123456789012345678901234567890123456789012";
		big[i].name_len = 63;
		big[i].ndim = 8;
		for (int k = 0; k < 8; k++)
			big[i].dims[k] = 1;
	}
	ck_assert_int_eq(gsp_api_register_size(big, GSP_API_MAX_TENSORS), -EMSGSIZE);
	reg.buffer_bytes = UINT64_MAX;
	ck_assert_int_eq(gsp_api_register_encode(&reg, big, GSP_API_MAX_TENSORS,
						 buf, sizeof(buf), &len), -EMSGSIZE);
	ck_assert_int_eq(gsp_api_register_size(big, GSP_API_MAX_TENSORS + 1), -EINVAL);
	/* The largest REGISTER that fits, decoded and iterated. */
	uint32_t n = (GSP_API_MAX_FRAME - 13) / (1 + 63 + 1 + 64);
	ck_assert_int_eq(gsp_api_register_size(big, n), 13 + (int64_t)n * 129);
	ck_assert_int_eq(gsp_api_register_encode(&reg, big, n, buf, sizeof(buf), &len), 0);
	ck_assert_uint_le(len, GSP_API_MAX_FRAME);
	ck_assert_int_eq(gsp_api_register_decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.n_floats, n);
	gsp_api_tensor_iter it;
	gsp_wire_tensor w;
	uint32_t seen = 0;
	gsp_api_tensor_iter_init(&it, &d);
	while (gsp_api_tensor_next(&it, &w)) {
		ck_assert(tensor_eq(&w, &big[seen]));
		ck_assert_ptr_eq(w.name, buf + 13 + (size_t)seen * 129 + 1);
		seen++;
	}
	ck_assert_uint_eq(seen, n);
	ck_assert_int_eq(gsp_api_tensor_next(&it, &w), 0);
	free(big);
}
END_TEST

START_TEST(test_step_rules)
{
	gsp_api_step m = { .flags = 0 };
	uint8_t buf[64];
	size_t len;

	ck_assert_int_eq(gsp_api_step_encode(&m, buf, sizeof(buf), &len), 0);
	m.flags = 4;
	ck_assert_int_eq(gsp_api_step_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.flags = GSP_STEP_SYNC | GSP_STEP_DRAIN;
	ck_assert_int_eq(gsp_api_step_encode(&m, buf, sizeof(buf), &len), 0);
	for (int bit = 2; bit < 32; bit++)
		expect_patched(find(GSP_API_STEP), 1 + (size_t)bit / 8,
			       (uint8_t)((bit / 8 == 0 ? 1 : 0) | 1u << (bit % 8)),
			       -EBADMSG);
	/* NaN and infinities pass through STEP_OK and AVERAGE_OK bit for bit. */
	gsp_api_step_ok s = step_ok_sample, sd;
	s.consensus_estimate = NAN;
	ck_assert_int_eq(gsp_api_step_ok_encode(&s, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_api_step_ok_decode(buf, len, &sd), 0);
	ck_assert(eq_step_ok(&s, &sd));
	ck_assert(isnan(sd.consensus_estimate));
}
END_TEST

START_TEST(test_average_rules)
{
	gsp_api_average m = average_sample;
	gsp_api_average_ok o = average_ok_sample;
	uint8_t buf[64];
	size_t len;

	m.target = -1e-3;
	ck_assert_int_eq(gsp_api_average_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.target = NAN;
	ck_assert_int_eq(gsp_api_average_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.target = INFINITY;
	ck_assert_int_eq(gsp_api_average_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.target = 0;
	m.time_limit_ms = 0;
	m.max_rounds = 0;
	ck_assert_int_eq(gsp_api_average_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.max_rounds = 10;
	ck_assert_int_eq(gsp_api_average_encode(&m, buf, sizeof(buf), &len), 0);
	/* Patched: target sign bit, NaN exponent, no limits. */
	const msg_case *c = find(GSP_API_AVERAGE);
	expect_patched(c, 8, 0x80 | 0x3f, -EBADMSG);
	expect_patched(c, 8, 0x7f, 0);
	uint8_t nan_target[17];
	memcpy(nan_target, buf, len);
	memset(nan_target + 1, 0xff, 8);
	nan_target[8] = 0x7f;
	ck_assert_int_eq(gsp_api_average_decode(nan_target, 17, &m), -EBADMSG);
	memset(buf + 9, 0, 8);
	ck_assert_int_eq(gsp_api_average_decode(buf, 17, &m), -EBADMSG);

	ck_assert_int_eq(gsp_api_average_ok_encode(&o, buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(buf[13], 1);
	expect_patched(find(GSP_API_AVERAGE_OK), 13, 2, -EBADMSG);
	expect_patched(find(GSP_API_AVERAGE_OK), 13, 0, 0);
}
END_TEST

START_TEST(test_status_ok_rules)
{
	static char json[GSP_API_MAX_FRAME];
	static uint8_t buf[GSP_API_MAX_FRAME + 16];
	gsp_api_status_ok m, d;
	size_t len;

	memset(json, ' ', sizeof(json));
	m.json = json;
	m.json_len = GSP_API_MAX_FRAME - 5;
	ck_assert_int_eq(gsp_api_status_ok_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, GSP_API_MAX_FRAME);
	ck_assert_int_eq(gsp_api_status_ok_decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.json_len, m.json_len);
	m.json_len++;
	ck_assert_int_eq(gsp_api_status_ok_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	/* A declared length over the cap, with the bytes present. */
	buf[0] = GSP_API_STATUS_OK;
	buf[1] = 0xfc;
	buf[2] = 0xff;
	buf[3] = 0x0f;
	buf[4] = 0;
	memset(buf + 5, ' ', GSP_API_MAX_FRAME - 4);
	ck_assert_int_eq(gsp_api_status_ok_decode(buf, 5 + GSP_API_MAX_FRAME - 4, &d), -EBADMSG);
	buf[1] = 0xff;
	buf[2] = 0xff;
	buf[3] = 0xff;
	buf[4] = 0xff;
	ck_assert_int_eq(gsp_api_status_ok_decode(buf, 64, &d), -EBADMSG);
	expect_patched(find(GSP_API_STATUS_OK), 10, 0, -EBADMSG);
	/* Empty JSON is valid at this layer. */
	m.json = NULL;
	m.json_len = 0;
	ck_assert_int_eq(gsp_api_status_ok_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(gsp_api_status_ok_decode(buf, len, &d), 0);
}
END_TEST

START_TEST(test_error_rules)
{
	gsp_api_error m = error_sample, d;
	uint8_t buf[BUF_MAX];
	size_t len;

	m.code = 0;
	ck_assert_int_eq(gsp_api_error_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.code = 5;
	ck_assert_int_eq(gsp_api_error_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.code = INT32_MIN;
	ck_assert_int_eq(gsp_api_error_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_api_error_decode(buf, len, &d), 0);
	ck_assert_int_eq(d.code, INT32_MIN);
	m.code = -4097;
	ck_assert_int_eq(gsp_api_error_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(gsp_api_error_decode(buf, len, &d), 0);
	ck_assert_int_eq(d.code, -4097);
	expect_patched(find(GSP_API_ERROR), 4, 0x7f, -EBADMSG); /* code > 0 */
	/* Code 0 is not an error. */
	uint8_t zero[7] = { GSP_API_ERROR, 0, 0, 0, 0, 0, 0 };
	ck_assert_int_eq(gsp_api_error_decode(zero, sizeof(zero), &d), -EBADMSG);
	char text[GSP_API_ERROR_TEXT_MAX + 1];
	memset(text, 'e', sizeof(text));
	m.text = text;
	m.text_len = sizeof(text);
	ck_assert_int_eq(gsp_api_error_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m.text_len--;
	ck_assert_int_eq(gsp_api_error_encode(&m, buf, sizeof(buf), &len), 0);
}
END_TEST

START_TEST(test_empty_messages)
{
	uint8_t buf[4] = { 0 };
	size_t len;

	ck_assert_int_eq(gsp_api_ok_encode(buf, 1, &len), 0);
	ck_assert_uint_eq(buf[0], GSP_API_OK);
	ck_assert_int_eq(gsp_api_ok_decode(buf, 1), 0);
	ck_assert_int_eq(gsp_api_status_decode(buf, 1), -ENOMSG);
	ck_assert_int_eq(gsp_api_detach_decode(buf, 1), -ENOMSG);
	ck_assert_int_eq(gsp_api_ok_decode(buf, 2), -EBADMSG);
	ck_assert_int_eq(gsp_api_ok_decode(buf, 0), -EBADMSG);
	ck_assert_int_eq(gsp_api_ok_decode(NULL, 0), -EBADMSG);
}
END_TEST

static Suite *proto_msg_suite(void)
{
	Suite *s = suite_create("proto messages");
	TCase *tc = tcase_create("every message");

	tcase_add_unchecked_fixture(tc, setup, NULL);
	tcase_add_loop_test(tc, test_roundtrip, 0, N_CASES);
	tcase_add_loop_test(tc, test_truncated, 0, N_CASES);
	tcase_add_loop_test(tc, test_trailing, 0, N_CASES);
	tcase_add_loop_test(tc, test_other_types, 0, N_CASES);
	tcase_add_loop_test(tc, test_versions, 0, N_CASES);
	tcase_add_loop_test(tc, test_small_buffer, 0, N_CASES);
	tcase_add_loop_test(tc, test_framed, 0, N_CASES);
	suite_add_tcase(s, tc);

	tc = tcase_create("rules");
	tcase_add_unchecked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_byte_layout);
	tcase_add_test(tc, test_model_rules);
	tcase_add_test(tc, test_round_rules);
	tcase_add_test(tc, test_resync_rules);
	tcase_add_test(tc, test_ping_pong_distinct);
	tcase_add_test(tc, test_goodbye_rules);
	tcase_add_test(tc, test_hs_rules);
	tcase_add_test(tc, test_hello_rules);
	tcase_add_test(tc, test_register_rules);
	tcase_add_test(tc, test_step_rules);
	tcase_add_test(tc, test_average_rules);
	tcase_add_test(tc, test_status_ok_rules);
	tcase_add_test(tc, test_error_rules);
	tcase_add_test(tc, test_empty_messages);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (sodium_init() < 0)
		return EXIT_FAILURE;
	sr = srunner_create(proto_msg_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
