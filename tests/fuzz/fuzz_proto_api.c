/*
 * libFuzzer harness for the local API side of proto/: the frame reader
 * with the API cap and every request and reply decoder, REGISTER's tensor
 * iterator and options, and the model fingerprint of what they yield.  Input: bytes read
 * as one message and as a stream of frames.  Accepted messages must encode
 * back to the same bytes; bodies are decoded from exact-size heap copies.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fetch_msg.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out[GSP_API_MAX_FRAME + 64];

static void check_code(int r)
{
	if (r != 0 && r != -EBADMSG && r != -ENOMSG && r != -EPROTONOSUPPORT)
		abort();
}

static void same(int r, size_t n, const uint8_t *buf, size_t len)
{
	if (r != 0 || n != len || memcmp(out, buf, len) != 0)
		abort();
}

static void check_register(const gsp_api_register *reg, const uint8_t *buf,
			   size_t len)
{
	gsp_wire_tensor *t = calloc(reg->n_tensors, sizeof(*t));
	gsp_api_tensor_iter it;
	uint8_t fp[GSP_FINGERPRINT_BYTES];
	char summary[GSP_MODEL_SUMMARY_MAX + 1];
	uint64_t floats;
	uint32_t n = 0;
	size_t enc = 0;

	if (!t)
		abort();
	gsp_api_tensor_iter_init(&it, reg);
	while (gsp_api_tensor_next(&it, &t[n % reg->n_tensors]))
		n++;
	if (n != reg->n_tensors ||
	    gsp_wire_tensors_floats(t, n, &floats) != 0 ||
	    floats != reg->n_floats)
		abort();
	same(gsp_api_register_encode(reg, t, n, out, sizeof(out), &enc), enc,
	     buf, len);
	/* The settings as a daemon would take them: the options' if set. */
	const gsp_api_register_opts *o = &reg->opts;
	gsp_model_desc d = {
		.method = o->set & GSP_REG_METHOD ? o->method : GSP_WIRE_METHOD_POWERGOSSIP,
		.rank = o->set & GSP_REG_RANK ? o->rank : 2,
		.gamma = o->set & GSP_REG_GAMMA ? o->gamma : 1.0f,
		.choco_fraction = 0.01f,
		.tensors = t,
		.n_tensors = n,
	};
	if (gsp_model_fingerprint(&d, fp) != 0 ||
	    gsp_model_summary(&d, summary, sizeof(summary)) <= 0)
		abort();
	free(t);
}

static void decode_all(const uint8_t *buf, size_t len)
{
	gsp_api_hello h;
	gsp_api_register reg;
	gsp_api_step s;
	gsp_api_step_ok so;
	gsp_api_average a;
	gsp_api_average_ok ao;
	gsp_api_status_ok st;
	gsp_api_error e;
	gsp_api_fetch f;
	gsp_api_fetch_ok fo;
	uint8_t type;
	size_t n = 0;
	int r, accepted = 0;

#define TRY(call, reencode)                         \
	do {                                        \
		r = call;                           \
		check_code(r);                      \
		if (r == 0) {                       \
			accepted++;                 \
			same(reencode, n, buf, len); \
		}                                   \
	} while (0)
	TRY(gsp_api_hello_decode(buf, len, &h),
	    gsp_api_hello_encode(&h, out, sizeof(out), &n));
	TRY(gsp_api_hello_ok_decode(buf, len, &h),
	    gsp_api_hello_ok_encode(&h, out, sizeof(out), &n));
	TRY(gsp_api_ok_decode(buf, len), gsp_api_ok_encode(out, sizeof(out), &n));
	TRY(gsp_api_step_decode(buf, len, &s),
	    gsp_api_step_encode(&s, out, sizeof(out), &n));
	TRY(gsp_api_step_ok_decode(buf, len, &so),
	    gsp_api_step_ok_encode(&so, out, sizeof(out), &n));
	TRY(gsp_api_average_decode(buf, len, &a),
	    gsp_api_average_encode(&a, out, sizeof(out), &n));
	TRY(gsp_api_average_ok_decode(buf, len, &ao),
	    gsp_api_average_ok_encode(&ao, out, sizeof(out), &n));
	TRY(gsp_api_status_decode(buf, len),
	    gsp_api_status_encode(out, sizeof(out), &n));
	TRY(gsp_api_status_ok_decode(buf, len, &st),
	    gsp_api_status_ok_encode(&st, out, sizeof(out), &n));
	TRY(gsp_api_detach_decode(buf, len),
	    gsp_api_detach_encode(out, sizeof(out), &n));
	TRY(gsp_api_leave_decode(buf, len),
	    gsp_api_leave_encode(out, sizeof(out), &n));
	TRY(gsp_api_fetch_decode(buf, len, &f),
	    gsp_api_fetch_encode(&f, out, sizeof(out), &n));
	TRY(gsp_api_fetch_ok_decode(buf, len, &fo),
	    gsp_api_fetch_ok_encode(&fo, out, sizeof(out), &n));
	TRY(gsp_api_error_decode(buf, len, &e),
	    gsp_api_error_encode(&e, out, sizeof(out), &n));
	r = gsp_api_register_decode(buf, len, &reg);
	check_code(r);
	if (r == 0) {
		accepted++;
		check_register(&reg, buf, len);
	}
	if (accepted > 1 ||
	    (accepted == 1 && gsp_api_type(buf, len, &type) != 0))
		abort();
}

static void decode_copy(const uint8_t *buf, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		abort();
	if (len)
		memcpy(copy, buf, len);
	decode_all(len ? copy : NULL, len);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *body;
	size_t left = size, used;
	uint32_t len;
	int r;

	decode_copy(data, size);
	for (;;) {
		r = gsp_frame_parse(p, left, GSP_API_MAX_FRAME, &body, &len, &used);
		if (r == -EAGAIN || r == -EBADMSG || r == -EMSGSIZE)
			break;
		if (r != 0 || used != 4 + (size_t)len || used > left ||
		    body != p + 4)
			abort();
		decode_copy(body, len);
		p += used;
		left -= used;
	}
	return 0;
}
