/*
 * Internal helpers of proto/: little-endian byte-wise stores and a bounded
 * reader.  Not installed; nothing outside proto/ includes this.
 *
 * The reader never moves past its end: a read that does not fit sets the
 * sticky `bad` flag and yields zeros (or NULL), so a decoder reads every
 * field and checks `bad` and the position once at the end.
 */
#ifndef GSP_PROTO_WIRE_H
#define GSP_PROTO_WIRE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto.h"

static inline void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_f64(uint8_t *p, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	put_u64(p, bits);
}

static inline uint16_t get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static inline uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Every encoder validates its struct, then checks here that `need` bytes
 * fit in buf[0..cap), then writes exactly `need`: -EINVAL without
 * ret_len, -ENOBUFS without room. */
static inline int room(const uint8_t *buf, size_t cap, size_t need,
		       const size_t *ret_len)
{
	if (!ret_len)
		return -EINVAL;
	if (!buf || cap < need)
		return -ENOBUFS;
	return 0;
}

/* Sequential writer over a buffer whose size the encoder checked first. */
typedef struct wr {
	uint8_t *p;
} wr;

static inline void wr_u8(wr *w, uint8_t v)
{
	*w->p++ = v;
}

static inline void wr_u16(wr *w, uint16_t v)
{
	put_u16(w->p, v);
	w->p += 2;
}

static inline void wr_u32(wr *w, uint32_t v)
{
	put_u32(w->p, v);
	w->p += 4;
}

static inline void wr_u64(wr *w, uint64_t v)
{
	put_u64(w->p, v);
	w->p += 8;
}

static inline void wr_f64(wr *w, double v)
{
	put_f64(w->p, v);
	w->p += 8;
}

static inline void wr_f32(wr *w, float v)
{
	uint32_t bits;

	memcpy(&bits, &v, sizeof(bits));
	wr_u32(w, bits);
}

static inline void wr_bytes(wr *w, const void *src, size_t n)
{
	if (n)
		memcpy(w->p, src, n);
	w->p += n;
}

/* Bounded reader. */
typedef struct rd {
	const uint8_t *p;
	size_t left;
	bool bad;
} rd;

static inline rd rd_init(const uint8_t *buf, size_t len)
{
	rd r = { buf, buf ? len : 0, buf == NULL && len != 0 };
	return r;
}

static inline const uint8_t *rd_bytes(rd *r, size_t n)
{
	const uint8_t *p;

	if (r->bad || n > r->left) {
		r->bad = true;
		return NULL;
	}
	p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

static inline uint8_t rd_u8(rd *r)
{
	const uint8_t *p = rd_bytes(r, 1);
	return p ? p[0] : 0;
}

static inline uint16_t rd_u16(rd *r)
{
	const uint8_t *p = rd_bytes(r, 2);
	return p ? get_u16(p) : 0;
}

static inline uint32_t rd_u32(rd *r)
{
	const uint8_t *p = rd_bytes(r, 4);
	return p ? get_u32(p) : 0;
}

static inline uint64_t rd_u64(rd *r)
{
	const uint8_t *p = rd_bytes(r, 8);
	return p ? get_u64(p) : 0;
}

static inline double rd_f64(rd *r)
{
	uint64_t bits = rd_u64(r);
	double v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

static inline float rd_f32(rd *r)
{
	uint32_t bits = rd_u32(r);
	float v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

static inline void rd_copy(rd *r, void *dst, size_t n)
{
	const uint8_t *p = rd_bytes(r, n);

	if (p)
		memcpy(dst, p, n);
	else
		memset(dst, 0, n);
}

/* True when the whole input was read and every read fitted. */
static inline bool rd_done(const rd *r)
{
	return !r->bad && r->left == 0;
}

/* Text fields: u16 length, then that many bytes, none of them NUL. */
static inline bool text_ok(const char *s, size_t len, size_t max)
{
	if (len > max || (len && !s))
		return false;
	return len == 0 || memchr(s, 0, len) == NULL;
}

static inline const char *rd_text16(rd *r, size_t max, size_t *ret_len)
{
	uint16_t n = rd_u16(r);
	const uint8_t *p;

	if (n > max) {
		r->bad = true;
		return NULL;
	}
	p = rd_bytes(r, n);
	if (p && n && memchr(p, 0, n)) {
		r->bad = true;
		return NULL;
	}
	*ret_len = n;
	return (const char *)p;
}

static inline void wr_text16(wr *w, const char *s, size_t len)
{
	wr_u16(w, (uint16_t)len);
	wr_bytes(w, s, len);
}

/* Common checks of every decoder: non-empty, the expected type byte. */
static inline int check_type(const uint8_t *buf, size_t len, uint8_t type)
{
	if (!buf || len == 0)
		return -EBADMSG;
	return buf[0] == type ? 0 : -ENOMSG;
}

/* Type byte and version of a versioned message; 0, -EBADMSG, -ENOMSG or
 * -EPROTONOSUPPORT. */
static inline int check_versioned(const uint8_t *buf, size_t len,
				  uint8_t type)
{
	int r = check_type(buf, len, type);

	if (r < 0)
		return r;
	if (len < 3)
		return -EBADMSG;
	if (GSP_PROTO_MAJOR(get_u16(buf + 1)) != GSP_PROTO_VERSION_MAJOR)
		return -EPROTONOSUPPORT;
	return 0;
}

static inline bool version_ok(uint16_t v)
{
	return GSP_PROTO_MAJOR(v) == GSP_PROTO_VERSION_MAJOR;
}

#endif
