/* Local API messages (PROTOCOL.md, "Local API"). */
#include <errno.h>
#include <math.h>

#include "proto.h"
#include "wire.h"

/* ---- HELLO / HELLO_OK --------------------------------------------------- */

static int hello_encode(uint8_t type, const gsp_api_hello *msg, uint8_t *buf,
			size_t cap, size_t *ret_len)
{
	size_t need;
	wr w;
	int r;

	if (!msg || !version_ok(msg->version) ||
	    !text_ok(msg->name, msg->name_len, GSP_API_NAME_MAX))
		return -EINVAL;
	need = 1 + 2 + 2 + msg->name_len;
	r = room(buf, cap, need, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, type);
	wr_u16(&w, msg->version);
	wr_text16(&w, msg->name, msg->name_len);
	*ret_len = need;
	return 0;
}

static int hello_decode(uint8_t type, const uint8_t *buf, size_t len,
			gsp_api_hello *ret)
{
	gsp_api_hello m;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_versioned(buf, len, type);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	m.version = rd_u16(&r);
	m.name_len = 0;
	m.name = rd_text16(&r, GSP_API_NAME_MAX, &m.name_len);
	if (!rd_done(&r))
		return -EBADMSG;
	*ret = m;
	return 0;
}

int gsp_api_hello_encode(const gsp_api_hello *msg, uint8_t *buf, size_t cap,
			 size_t *ret_len)
{
	return hello_encode(GSP_API_HELLO, msg, buf, cap, ret_len);
}

int gsp_api_hello_decode(const uint8_t *buf, size_t len, gsp_api_hello *ret)
{
	return hello_decode(GSP_API_HELLO, buf, len, ret);
}

int gsp_api_hello_ok_encode(const gsp_api_hello *msg, uint8_t *buf,
			    size_t cap, size_t *ret_len)
{
	return hello_encode(GSP_API_HELLO_OK, msg, buf, cap, ret_len);
}

int gsp_api_hello_ok_decode(const uint8_t *buf, size_t len,
			    gsp_api_hello *ret)
{
	return hello_decode(GSP_API_HELLO_OK, buf, len, ret);
}

/* ---- REGISTER ----------------------------------------------------------- */

#define REGISTER_FIXED (1 + 8 + 4)

int64_t gsp_api_register_size(const gsp_wire_tensor *tensors, uint32_t n)
{
	uint64_t floats, size = REGISTER_FIXED;
	int r;

	if (n == 0 || n > GSP_API_MAX_TENSORS)
		return -EINVAL;
	r = gsp_wire_tensors_floats(tensors, n, &floats);
	if (r < 0)
		return r;
	if (floats > UINT64_MAX / 4)
		return -EOVERFLOW;
	/* n <= 2^16 tensors of at most 130 bytes: no overflow here. */
	for (uint32_t i = 0; i < n; i++)
		size += 1 + (uint64_t)tensors[i].name_len + 1 +
			8 * (uint64_t)tensors[i].ndim;
	if (size > GSP_API_MAX_FRAME)
		return -EMSGSIZE;
	return (int64_t)size;
}

/* Whether options keep their rules: known bits; a field not set is 0; a
 * set one in its range (the daemon checks its own limits). */
static bool register_opts_ok(const gsp_api_register_opts *o)
{
	uint8_t s = o->set;

	if (s & ~GSP_REG_KNOWN)
		return false;
	if (s & GSP_REG_METHOD ? !gsp_wire_method_name(o->method) : o->method != 0)
		return false;
	if (s & GSP_REG_RANK ? o->rank == 0 : o->rank != 0)
		return false;
	if (s & GSP_REG_GAMMA ? !(isfinite(o->gamma) && o->gamma > 0)
			      : (o->gamma != 0 || signbit(o->gamma)))
		return false;
	if (s & GSP_REG_ITERATIONS ? o->power_iterations == 0
				   : o->power_iterations != 0)
		return false;
	if (s & GSP_REG_PRECISION ? o->precision > GSP_WIRE_PRECISION_BFLOAT16
				  : o->precision != 0)
		return false;
	if (!(s & GSP_REG_DTYPE) && o->dtype != 0)
		return false;
	return true;
}

unsigned gsp_wire_dtype_size(unsigned dtype)
{
	return dtype == GSP_WIRE_DTYPE_FLOAT32 ? 4 : 2;
}

/* The options' bytes on the wire (0: none). */
static size_t register_opts_bytes(const gsp_api_register_opts *o)
{
	if (!o->set)
		return 0;
	return o->set & GSP_REG_DTYPE ? GSP_API_REGISTER_OPTS_DTYPE_BYTES
				      : GSP_API_REGISTER_OPTS_BYTES;
}

static void wr_register_opts(wr *w, const gsp_api_register_opts *o)
{
	wr_u8(w, o->set);
	wr_u8(w, o->method);
	wr_u16(w, o->rank);
	wr_f32(w, o->gamma);
	wr_u16(w, o->power_iterations);
	wr_u8(w, o->precision);
	if (o->set & GSP_REG_DTYPE)
		wr_u8(w, o->dtype);
}

static gsp_api_register_opts rd_register_opts(rd *r)
{
	gsp_api_register_opts o;

	o.set = rd_u8(r);
	o.method = rd_u8(r);
	o.rank = rd_u16(r);
	o.gamma = rd_f32(r);
	o.power_iterations = rd_u16(r);
	o.precision = rd_u8(r);
	o.dtype = o.set & GSP_REG_DTYPE ? rd_u8(r) : 0;
	return o;
}

int gsp_api_register_encode(const gsp_api_register *msg,
			    const gsp_wire_tensor *tensors, uint32_t n,
			    uint8_t *buf, size_t cap, size_t *ret_len)
{
	uint64_t floats;
	int64_t need;
	wr w;
	int r;

	if (!msg || !register_opts_ok(&msg->opts))
		return -EINVAL;
	need = gsp_api_register_size(tensors, n);
	if (need < 0)
		return (int)need;
	need += (int64_t)register_opts_bytes(&msg->opts);
	if (need > GSP_API_MAX_FRAME)
		return -EMSGSIZE;
	r = gsp_wire_tensors_floats(tensors, n, &floats);
	if (r < 0)
		return r;
	if (msg->buffer_bytes / gsp_wire_dtype_size(msg->opts.dtype) < floats)
		return -EINVAL;
	r = room(buf, cap, (size_t)need, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, GSP_API_REGISTER);
	wr_u64(&w, msg->buffer_bytes);
	wr_u32(&w, n);
	for (uint32_t i = 0; i < n; i++) {
		wr_u8(&w, tensors[i].name_len);
		wr_bytes(&w, tensors[i].name, tensors[i].name_len);
		wr_u8(&w, tensors[i].ndim);
		for (unsigned d = 0; d < tensors[i].ndim; d++)
			wr_u64(&w, tensors[i].dims[d]);
	}
	if (msg->opts.set)
		wr_register_opts(&w, &msg->opts);
	*ret_len = (size_t)need;
	return 0;
}

/* Reads one tensor; false on any violation (the reader is then bad). */
static bool rd_tensor(rd *r, gsp_wire_tensor *t, uint64_t *numel)
{
	const uint8_t *name;
	uint64_t n = 1;

	t->name_len = rd_u8(r);
	name = rd_bytes(r, t->name_len);
	t->ndim = rd_u8(r);
	if (r->bad || t->name_len > GSP_WIRE_NAME_MAX ||
	    t->ndim > GSP_WIRE_MAX_DIMS ||
	    (t->name_len && memchr(name, 0, t->name_len)))
		goto bad;
	t->name = (const char *)name;
	for (unsigned d = 0; d < GSP_WIRE_MAX_DIMS; d++)
		t->dims[d] = 0;
	for (unsigned d = 0; d < t->ndim; d++) {
		uint64_t v = rd_u64(r);

		if (r->bad || v == 0 || n > UINT64_MAX / v)
			goto bad;
		t->dims[d] = v;
		n *= v;
	}
	*numel = n;
	return true;
bad:
	r->bad = true;
	return false;
}

int gsp_api_register_decode(const uint8_t *buf, size_t len,
			    gsp_api_register *ret)
{
	gsp_api_register m;
	uint64_t floats = 0;
	bool has_opts;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_type(buf, len, GSP_API_REGISTER);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	m.buffer_bytes = rd_u64(&r);
	m.n_tensors = rd_u32(&r);
	/* The count is checked against its cap and against the bytes that are
	 * actually there (>= 2 per tensor) before the walk. */
	if (r.bad || m.n_tensors == 0 || m.n_tensors > GSP_API_MAX_TENSORS ||
	    m.n_tensors > r.left / 2)
		return -EBADMSG;
	m.tensor_bytes = r.p;
	for (uint32_t i = 0; i < m.n_tensors; i++) {
		gsp_wire_tensor t;
		uint64_t numel;

		if (!rd_tensor(&r, &t, &numel) || floats > UINT64_MAX - numel)
			return -EBADMSG;
		floats += numel;
	}
	m.tensor_bytes_len = (size_t)(r.p - m.tensor_bytes);
	/* Then nothing, or the options whole (set 0 is never sent). */
	has_opts = r.left != 0;
	m.opts = (gsp_api_register_opts){0};
	if (has_opts)
		m.opts = rd_register_opts(&r);
	if (!rd_done(&r) || m.buffer_bytes / gsp_wire_dtype_size(m.opts.dtype) < floats ||
	    (has_opts && m.opts.set == 0) || !register_opts_ok(&m.opts))
		return -EBADMSG;
	m.n_floats = floats;
	*ret = m;
	return 0;
}

void gsp_api_tensor_iter_init(gsp_api_tensor_iter *it,
			      const gsp_api_register *reg)
{
	it->p = reg->tensor_bytes;
	it->left = reg->tensor_bytes_len;
	it->remaining = reg->n_tensors;
}

int gsp_api_tensor_next(gsp_api_tensor_iter *it, gsp_wire_tensor *ret)
{
	gsp_wire_tensor t;
	uint64_t numel;
	rd r;

	if (!it || !ret || it->remaining == 0)
		return 0;
	r = rd_init(it->p, it->left);
	if (!rd_tensor(&r, &t, &numel)) {
		it->remaining = 0; /* not from a successful decode */
		return 0;
	}
	it->p = r.p;
	it->left = r.left;
	it->remaining--;
	*ret = t;
	return 1;
}

/* ---- empty messages: OK, STATUS, DETACH ---------------------------------- */

static int empty_encode(uint8_t type, uint8_t *buf, size_t cap,
			size_t *ret_len)
{
	int r = room(buf, cap, 1, ret_len);

	if (r < 0)
		return r;
	buf[0] = type;
	*ret_len = 1;
	return 0;
}

static int empty_decode(uint8_t type, const uint8_t *buf, size_t len)
{
	int err = check_type(buf, len, type);

	if (err < 0)
		return err;
	return len == 1 ? 0 : -EBADMSG;
}

int gsp_api_ok_encode(uint8_t *buf, size_t cap, size_t *ret_len)
{
	return empty_encode(GSP_API_OK, buf, cap, ret_len);
}

int gsp_api_ok_decode(const uint8_t *buf, size_t len)
{
	return empty_decode(GSP_API_OK, buf, len);
}

int gsp_api_status_encode(uint8_t *buf, size_t cap, size_t *ret_len)
{
	return empty_encode(GSP_API_STATUS, buf, cap, ret_len);
}

int gsp_api_status_decode(const uint8_t *buf, size_t len)
{
	return empty_decode(GSP_API_STATUS, buf, len);
}

int gsp_api_detach_encode(uint8_t *buf, size_t cap, size_t *ret_len)
{
	return empty_encode(GSP_API_DETACH, buf, cap, ret_len);
}

int gsp_api_detach_decode(const uint8_t *buf, size_t len)
{
	return empty_decode(GSP_API_DETACH, buf, len);
}

int gsp_api_leave_encode(uint8_t *buf, size_t cap, size_t *ret_len)
{
	return empty_encode(GSP_API_LEAVE, buf, cap, ret_len);
}

int gsp_api_leave_decode(const uint8_t *buf, size_t len)
{
	return empty_decode(GSP_API_LEAVE, buf, len);
}

/* ---- STEP / STEP_OK ----------------------------------------------------- */

int gsp_api_step_encode(const gsp_api_step *msg, uint8_t *buf, size_t cap,
			size_t *ret_len)
{
	wr w;
	int r;

	if (!msg || (msg->flags & ~GSP_STEP_FLAGS_KNOWN))
		return -EINVAL;
	r = room(buf, cap, 5, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, GSP_API_STEP);
	wr_u32(&w, msg->flags);
	*ret_len = 5;
	return 0;
}

int gsp_api_step_decode(const uint8_t *buf, size_t len, gsp_api_step *ret)
{
	gsp_api_step m;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_type(buf, len, GSP_API_STEP);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	m.flags = rd_u32(&r);
	if (!rd_done(&r) || (m.flags & ~GSP_STEP_FLAGS_KNOWN))
		return -EBADMSG;
	*ret = m;
	return 0;
}

#define STEP_OK_BYTES (1 + 8 + 4 * 4 + 8 + 8 + 8)

int gsp_api_step_ok_encode(const gsp_api_step_ok *msg, uint8_t *buf,
			   size_t cap, size_t *ret_len)
{
	wr w;
	int r;

	if (!msg)
		return -EINVAL;
	r = room(buf, cap, STEP_OK_BYTES, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, GSP_API_STEP_OK);
	wr_u64(&w, msg->step);
	wr_u32(&w, msg->edges_applied);
	wr_u32(&w, msg->edges_projected);
	wr_u32(&w, msg->edges_skipped);
	wr_u32(&w, msg->max_staleness);
	wr_u64(&w, msg->bytes_sent);
	wr_u64(&w, msg->bytes_received);
	wr_f64(&w, msg->consensus_estimate);
	*ret_len = STEP_OK_BYTES;
	return 0;
}

int gsp_api_step_ok_decode(const uint8_t *buf, size_t len,
			   gsp_api_step_ok *ret)
{
	gsp_api_step_ok m;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_type(buf, len, GSP_API_STEP_OK);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	m.step = rd_u64(&r);
	m.edges_applied = rd_u32(&r);
	m.edges_projected = rd_u32(&r);
	m.edges_skipped = rd_u32(&r);
	m.max_staleness = rd_u32(&r);
	m.bytes_sent = rd_u64(&r);
	m.bytes_received = rd_u64(&r);
	m.consensus_estimate = rd_f64(&r);
	if (!rd_done(&r))
		return -EBADMSG;
	*ret = m;
	return 0;
}

/* ---- AVERAGE / AVERAGE_OK ----------------------------------------------- */

static bool average_ok(const gsp_api_average *m)
{
	return isfinite(m->target) && m->target >= 0 &&
	       (m->time_limit_ms || m->max_rounds);
}

int gsp_api_average_encode(const gsp_api_average *msg, uint8_t *buf,
			   size_t cap, size_t *ret_len)
{
	wr w;
	int r;

	if (!msg || !average_ok(msg))
		return -EINVAL;
	r = room(buf, cap, 17, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, GSP_API_AVERAGE);
	wr_f64(&w, msg->target);
	wr_u32(&w, msg->time_limit_ms);
	wr_u32(&w, msg->max_rounds);
	*ret_len = 17;
	return 0;
}

int gsp_api_average_decode(const uint8_t *buf, size_t len,
			   gsp_api_average *ret)
{
	gsp_api_average m;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_type(buf, len, GSP_API_AVERAGE);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	m.target = rd_f64(&r);
	m.time_limit_ms = rd_u32(&r);
	m.max_rounds = rd_u32(&r);
	if (!rd_done(&r) || !average_ok(&m))
		return -EBADMSG;
	*ret = m;
	return 0;
}

int gsp_api_average_ok_encode(const gsp_api_average_ok *msg, uint8_t *buf,
			      size_t cap, size_t *ret_len)
{
	wr w;
	int r;

	if (!msg)
		return -EINVAL;
	r = room(buf, cap, 14, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, GSP_API_AVERAGE_OK);
	wr_u32(&w, msg->rounds);
	wr_f64(&w, msg->estimate);
	wr_u8(&w, msg->reached ? 1 : 0);
	*ret_len = 14;
	return 0;
}

int gsp_api_average_ok_decode(const uint8_t *buf, size_t len,
			      gsp_api_average_ok *ret)
{
	gsp_api_average_ok m;
	uint8_t reached;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_type(buf, len, GSP_API_AVERAGE_OK);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	m.rounds = rd_u32(&r);
	m.estimate = rd_f64(&r);
	reached = rd_u8(&r);
	if (!rd_done(&r) || reached > 1)
		return -EBADMSG;
	m.reached = reached;
	*ret = m;
	return 0;
}

/* ---- STATUS_OK ---------------------------------------------------------- */

#define STATUS_JSON_MAX (GSP_API_MAX_FRAME - 5)

int gsp_api_status_ok_encode(const gsp_api_status_ok *msg, uint8_t *buf,
			     size_t cap, size_t *ret_len)
{
	size_t need;
	wr w;
	int r;

	if (!msg || !text_ok(msg->json, msg->json_len, STATUS_JSON_MAX))
		return -EINVAL;
	need = 1 + 4 + msg->json_len;
	r = room(buf, cap, need, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, GSP_API_STATUS_OK);
	wr_u32(&w, (uint32_t)msg->json_len);
	wr_bytes(&w, msg->json, msg->json_len);
	*ret_len = need;
	return 0;
}

int gsp_api_status_ok_decode(const uint8_t *buf, size_t len,
			     gsp_api_status_ok *ret)
{
	gsp_api_status_ok m;
	const uint8_t *p;
	uint32_t n;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_type(buf, len, GSP_API_STATUS_OK);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	n = rd_u32(&r);
	if (n > STATUS_JSON_MAX)
		return -EBADMSG;
	p = rd_bytes(&r, n);
	if (!rd_done(&r) || (n && memchr(p, 0, n)))
		return -EBADMSG;
	m.json = (const char *)p;
	m.json_len = n;
	*ret = m;
	return 0;
}

/* ---- ERROR -------------------------------------------------------------- */

int gsp_api_error_encode(const gsp_api_error *msg, uint8_t *buf, size_t cap,
			 size_t *ret_len)
{
	size_t need;
	wr w;
	int r;

	if (!msg || msg->code >= 0 ||
	    !text_ok(msg->text, msg->text_len, GSP_API_ERROR_TEXT_MAX))
		return -EINVAL;
	need = 1 + 4 + 2 + msg->text_len;
	r = room(buf, cap, need, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, GSP_API_ERROR);
	wr_u32(&w, (uint32_t)msg->code);
	wr_text16(&w, msg->text, msg->text_len);
	*ret_len = need;
	return 0;
}

int gsp_api_error_decode(const uint8_t *buf, size_t len, gsp_api_error *ret)
{
	gsp_api_error m;
	uint32_t code;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	err = check_type(buf, len, GSP_API_ERROR);
	if (err < 0)
		return err;
	r = rd_init(buf + 1, len - 1);
	code = rd_u32(&r);
	m.text_len = 0;
	m.text = rd_text16(&r, GSP_API_ERROR_TEXT_MAX, &m.text_len);
	if (!rd_done(&r) || !(code & UINT32_C(0x80000000)))
		return -EBADMSG;
	/* Two's complement back to a negative int32 without overflow. */
	m.code = -(int32_t)(~code) - 1;
	*ret = m;
	return 0;
}
