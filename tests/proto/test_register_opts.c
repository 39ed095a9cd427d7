/*
 * Unit tests for REGISTER's options (PROTOCOL.md 5.2): the optional
 * extension after the tensors that carries the method, rank, gamma, power
 * iterations per STEP and wire precision a trainer asks for.  Round trips,
 * the byte layout, a REGISTER without options unchanged, and every
 * malformed extension refused by the decoder (and by the encoder):
 * truncated, trailing bytes, unknown bits and method ids, rank 0,
 * non-finite or non-positive gamma, a field that is not set but not 0.
 * Decoders get exact-size heap copies so AddressSanitizer sees any read
 * past the end.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

static const gsp_wire_tensor one_tensor = {
	.name = "w", .name_len = 1, .ndim = 2, .dims = {3, 2},
};

static const gsp_api_register_opts all_opts = {
	.set = GSP_REG_KNOWN & ~GSP_REG_DTYPE, .method = GSP_WIRE_METHOD_POWERGOSSIP, .rank = 2,
	.gamma = 0.5f, .power_iterations = 1,
	.precision = GSP_WIRE_PRECISION_FLOAT32,
};

/* REGISTER of one_tensor with these options into buf; its length. */
static size_t encode(const gsp_api_register_opts *o, uint8_t *buf, size_t cap)
{
	gsp_api_register m = {.buffer_bytes = 24};
	size_t len = 0;

	if (o)
		m.opts = *o;
	ck_assert_int_eq(gsp_api_register_encode(&m, &one_tensor, 1, buf, cap, &len), 0);
	return len;
}

/* Decodes an exact-size heap copy. */
static int decode(const uint8_t *buf, size_t len, gsp_api_register *ret)
{
	uint8_t *copy = malloc(len ? len : 1);
	int r;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, buf, len);
	r = gsp_api_register_decode(copy, len, ret);
	free(copy);
	return r;
}

/* The options as raw bytes after a REGISTER without them, decoded. */
static int decode_raw_opts(const uint8_t *opts, size_t opts_len)
{
	uint8_t buf[128];
	gsp_api_register d;
	size_t len = encode(NULL, buf, sizeof(buf));

	memcpy(buf + len, opts, opts_len);
	return decode(buf, len + opts_len, &d);
}

/* The options' 11 bytes for o, written field by field. */
static void raw(const gsp_api_register_opts *o, uint8_t out[GSP_API_REGISTER_OPTS_BYTES])
{
	uint32_t g;

	memcpy(&g, &o->gamma, 4);
	out[0] = o->set;
	out[1] = o->method;
	out[2] = (uint8_t)o->rank;
	out[3] = (uint8_t)(o->rank >> 8);
	for (int i = 0; i < 4; i++)
		out[4 + i] = (uint8_t)(g >> (8 * i));
	out[8] = (uint8_t)o->power_iterations;
	out[9] = (uint8_t)(o->power_iterations >> 8);
	out[10] = o->precision;
}

/* o must be refused by the encoder (-EINVAL) and, as bytes, the decoder. */
static void refused(const gsp_api_register_opts *o)
{
	uint8_t buf[128], bytes[GSP_API_REGISTER_OPTS_BYTES];
	gsp_api_register m = {.buffer_bytes = 24, .opts = *o};
	size_t len;

	ck_assert_int_eq(gsp_api_register_encode(&m, &one_tensor, 1, buf, sizeof(buf), &len),
			 -EINVAL);
	raw(o, bytes);
	ck_assert_int_eq(decode_raw_opts(bytes, sizeof(bytes)), -EBADMSG);
}

START_TEST(test_without_options_the_message_is_unchanged)
{
	uint8_t buf[128];
	gsp_api_register d;
	size_t len = encode(NULL, buf, sizeof(buf));

	ck_assert_int_eq((int64_t)len, gsp_api_register_size(&one_tensor, 1));
	ck_assert_int_eq(decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.opts.set, 0);
	ck_assert_uint_eq(d.n_floats, 6);
	ck_assert_uint_eq(d.tensor_bytes_len, len - 13);
}
END_TEST

START_TEST(test_options_round_trip_in_their_layout)
{
	uint8_t buf[128], bytes[GSP_API_REGISTER_OPTS_BYTES], again[128];
	gsp_api_register d;
	gsp_wire_tensor t;
	gsp_api_tensor_iter it;
	size_t len = encode(&all_opts, buf, sizeof(buf)), len2;

	ck_assert_int_eq((int64_t)len, gsp_api_register_size(&one_tensor, 1) +
			 GSP_API_REGISTER_OPTS_BYTES);
	raw(&all_opts, bytes);
	ck_assert_mem_eq(buf + len - sizeof(bytes), bytes, sizeof(bytes));
	ck_assert_int_eq(decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.opts.set, GSP_REG_KNOWN & ~GSP_REG_DTYPE);
	ck_assert_uint_eq(d.opts.method, GSP_WIRE_METHOD_POWERGOSSIP);
	ck_assert_uint_eq(d.opts.rank, 2);
	ck_assert_float_eq(d.opts.gamma, 0.5f);
	ck_assert_uint_eq(d.opts.power_iterations, 1);
	ck_assert_uint_eq(d.opts.precision, GSP_WIRE_PRECISION_FLOAT32);
	/* The tensors end where the options begin (d points into buf). */
	ck_assert_int_eq(gsp_api_register_decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.tensor_bytes_len, len - 13 - GSP_API_REGISTER_OPTS_BYTES);
	gsp_api_tensor_iter_init(&it, &d);
	ck_assert_int_eq(gsp_api_tensor_next(&it, &t), 1);
	ck_assert_uint_eq(t.dims[1], 2);
	ck_assert_int_eq(gsp_api_tensor_next(&it, &t), 0);
	/* Canonical: the decoded message encodes to the same bytes. */
	ck_assert_int_eq(gsp_api_register_encode(&d, &one_tensor, 1, again, sizeof(again),
						 &len2), 0);
	ck_assert_uint_eq(len2, len);
	ck_assert_mem_eq(again, buf, len);

	/* One field alone: the others go as 0. */
	gsp_api_register_opts rank_only = {.set = GSP_REG_RANK, .rank = 1024};
	len = encode(&rank_only, buf, sizeof(buf));
	ck_assert_int_eq(decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.opts.set, GSP_REG_RANK);
	ck_assert_uint_eq(d.opts.rank, 1024);
	ck_assert_uint_eq(d.opts.method, 0);
	ck_assert_float_eq(d.opts.gamma, 0.0f);
	/* 16-bit precisions are well-formed (the daemon says whether it has them). */
	gsp_api_register_opts half = {.set = GSP_REG_PRECISION,
				      .precision = GSP_WIRE_PRECISION_BFLOAT16};
	len = encode(&half, buf, sizeof(buf));
	ck_assert_int_eq(decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.opts.precision, GSP_WIRE_PRECISION_BFLOAT16);
}
END_TEST

/* The dtype: a 12th byte, only with its bit; any value is well-formed
 * (the daemon names the ones it knows); the buffer's bound is the
 * dtype's size. */
START_TEST(test_dtype_option)
{
	uint8_t buf[128], again[128];
	gsp_api_register d;
	size_t len, len2;
	gsp_api_register_opts o = {.set = GSP_REG_DTYPE | GSP_REG_RANK, .rank = 3,
				   .dtype = GSP_WIRE_DTYPE_FLOAT16};
	gsp_api_register m = {.buffer_bytes = 12, .opts = o};

	ck_assert_int_eq(gsp_api_register_encode(&m, &one_tensor, 1, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq((int64_t)len, gsp_api_register_size(&one_tensor, 1) +
			 GSP_API_REGISTER_OPTS_DTYPE_BYTES);
	ck_assert_uint_eq(buf[len - 1], GSP_WIRE_DTYPE_FLOAT16);
	ck_assert_uint_eq(buf[len - 12], GSP_REG_DTYPE | GSP_REG_RANK);
	ck_assert_int_eq(decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.opts.dtype, GSP_WIRE_DTYPE_FLOAT16);
	ck_assert_uint_eq(d.opts.rank, 3);
	ck_assert_uint_eq(d.n_floats, 6);
	ck_assert_int_eq(gsp_api_register_encode(&d, &one_tensor, 1, again, sizeof(again),
						 &len2), 0);
	ck_assert_uint_eq(len2, len);
	ck_assert_mem_eq(again, buf, len);
	/* 11 bytes with the dtype bit, or 13: malformed. */
	ck_assert_int_eq(decode(buf, len - 1, &d), -EBADMSG);
	buf[len] = 0;
	ck_assert_int_eq(decode(buf, len + 1, &d), -EBADMSG);
	/* An unknown dtype decodes (bounded by 2 bytes a value). */
	buf[len - 1] = 7;
	ck_assert_int_eq(decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.opts.dtype, 7);
	/* 11 bytes hold 6 float16s, not 6 float32s. */
	m.buffer_bytes = 11;
	ck_assert_int_eq(gsp_api_register_encode(&m, &one_tensor, 1, buf, sizeof(buf), &len),
			 -EINVAL);
	m.buffer_bytes = 23;
	m.opts.dtype = GSP_WIRE_DTYPE_FLOAT32;
	ck_assert_int_eq(gsp_api_register_encode(&m, &one_tensor, 1, buf, sizeof(buf), &len),
			 -EINVAL);
	m.buffer_bytes = 12;
	m.opts.dtype = GSP_WIRE_DTYPE_BFLOAT16;
	ck_assert_int_eq(gsp_api_register_encode(&m, &one_tensor, 1, buf, sizeof(buf), &len), 0);
	buf[1] = 11;                    /* buffer_bytes' low byte: 11 < 2 * 6 */
	ck_assert_int_eq(decode(buf, len, &d), -EBADMSG);
}
END_TEST

START_TEST(test_truncated_or_trailing_options_are_malformed)
{
	uint8_t bytes[GSP_API_REGISTER_OPTS_BYTES + 1];

	raw(&all_opts, bytes);
	for (size_t cut = 1; cut < GSP_API_REGISTER_OPTS_BYTES; cut++)
		ck_assert_int_eq(decode_raw_opts(bytes, cut), -EBADMSG);
	ck_assert_int_eq(decode_raw_opts(bytes, GSP_API_REGISTER_OPTS_BYTES), 0);
	bytes[GSP_API_REGISTER_OPTS_BYTES] = 0;
	ck_assert_int_eq(decode_raw_opts(bytes, sizeof(bytes)), -EBADMSG);
	/* Options with nothing set are never sent. */
	memset(bytes, 0, sizeof(bytes));
	ck_assert_int_eq(decode_raw_opts(bytes, GSP_API_REGISTER_OPTS_BYTES), -EBADMSG);
}
END_TEST

START_TEST(test_out_of_range_options_are_malformed)
{
	gsp_api_register_opts o;

	o = all_opts;
	o.set |= 0x80;                        /* an unknown bit */
	refused(&o);
	o = all_opts;
	o.set = 0x80;
	refused(&o);
	o = all_opts;
	o.method = 5;                         /* unknown method ids */
	refused(&o);
	o.method = 0xff;
	refused(&o);
	o = all_opts;
	o.rank = 0;
	refused(&o);
	o = all_opts;
	o.power_iterations = 0;
	refused(&o);
	o = all_opts;
	o.precision = GSP_WIRE_PRECISION_BFLOAT16 + 1;
	refused(&o);
	static const float bad_gamma[] = {NAN, -NAN, INFINITY, -INFINITY, -1.0f,
					  0.0f, -0.0f};
	for (size_t i = 0; i < sizeof(bad_gamma) / sizeof(*bad_gamma); i++) {
		o = all_opts;
		o.gamma = bad_gamma[i];
		refused(&o);
	}
}
END_TEST

START_TEST(test_a_field_not_set_must_be_zero)
{
	gsp_api_register_opts o = {.set = GSP_REG_RANK, .rank = 2};

	o.method = GSP_WIRE_METHOD_EXACT;
	refused(&o);
	o.method = 0;
	o.gamma = 1.0f;
	refused(&o);
	o.gamma = -0.0f;
	refused(&o);
	o.gamma = 0.0f;
	o.power_iterations = 1;
	refused(&o);
	o.power_iterations = 0;
	o.precision = 1;
	refused(&o);
	o.precision = 0;
	o.dtype = GSP_WIRE_DTYPE_BFLOAT16;   /* only with its bit (no byte to decode) */
	gsp_api_register m = {.buffer_bytes = 24, .opts = o};
	uint8_t buf[128];
	size_t len;
	ck_assert_int_eq(gsp_api_register_encode(&m, &one_tensor, 1, buf, sizeof(buf), &len),
			 -EINVAL);
	o = (gsp_api_register_opts){.set = GSP_REG_METHOD,
				    .method = GSP_WIRE_METHOD_EXACT, .rank = 3};
	refused(&o);
}
END_TEST

static Suite *register_opts_suite(void)
{
	Suite *s = suite_create("REGISTER options");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, test_without_options_the_message_is_unchanged);
	tcase_add_test(tc, test_options_round_trip_in_their_layout);
	tcase_add_test(tc, test_dtype_option);
	tcase_add_test(tc, test_truncated_or_trailing_options_are_malformed);
	tcase_add_test(tc, test_out_of_range_options_are_malformed);
	tcase_add_test(tc, test_a_field_not_set_must_be_zero);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(register_opts_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
