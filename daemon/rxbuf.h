/*
 * rxbuf: a bounded receive buffer for length-prefixed frames (proto's
 * u32 header).  It owns the bytes read but not yet consumed; it grows
 * towards the frame being received (its announced length once the header
 * is in), never past its limit, and bytes leave it only through the
 * checked rxbuf_consume.  Used by the peer links and the API server.
 */
#ifndef GOSSIPD_RXBUF_H
#define GOSSIPD_RXBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct rxbuf {
	uint8_t *data;
	size_t len;     /* bytes held */
	size_t cap;     /* bytes allocated */
	size_t limit;   /* never more than this (a whole frame of the cap) */
} rxbuf;

/* An empty buffer that may hold up to limit bytes. */
void rxbuf_init(rxbuf *b, size_t limit);
void rxbuf_free(rxbuf *b);
/* Changes the limit for later growth (never below what is held). */
void rxbuf_set_limit(rxbuf *b, size_t limit);

/* Where the next read goes: *ret_ptr and up to *ret_room bytes (at most
 * chunk), growing the allocation towards the frame in progress.  0, or
 * -ENOMEM, or -ENOBUFS when the buffer is full at its limit (a frame
 * larger than the limit: the caller's frame parse rejects it first). */
int rxbuf_space(rxbuf *b, size_t chunk, uint8_t **ret_ptr, size_t *ret_room);
/* n bytes were written at the space rxbuf_space gave: -EINVAL if that
 * is more than it gave. */
int rxbuf_commit(rxbuf *b, size_t n);

/* The next whole frame at byte offset *off: 0 with its body (valid until
 * the buffer changes; the caller may overwrite it, as an in-place
 * decryption does) and *off moved past it; -EAGAIN when it is not all in
 * yet; another negative errno when the header is malformed (length 0,
 * or over max_body). */
int rxbuf_frame(rxbuf *b, size_t *off, uint32_t max_body,
		uint8_t **ret_body, uint32_t *ret_len);
/* Drops the first n bytes (frames handled).  -EINVAL if n > len. */
int rxbuf_consume(rxbuf *b, size_t n);

#endif
