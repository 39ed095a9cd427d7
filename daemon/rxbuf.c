/* rxbuf: bounded receive buffer (rxbuf.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "proto.h"
#include "rxbuf.h"

/* Growth beyond the frame in progress: reads of about this size. */
#define RXBUF_STEP (64u * 1024)

void rxbuf_init(rxbuf *b, size_t limit)
{
	*b = (rxbuf){.limit = limit};
}

void rxbuf_free(rxbuf *b)
{
	free(b->data);
	*b = (rxbuf){.limit = b->limit};
}

void rxbuf_set_limit(rxbuf *b, size_t limit)
{
	b->limit = limit > b->len ? limit : b->len;
}

/* Bytes the buffer should hold to take in the frame that starts at its
 * first byte: its whole length once the header is in. */
static size_t wanted(const rxbuf *b)
{
	size_t want = b->len + RXBUF_STEP;
	if (b->len >= GSP_FRAME_HEADER) {
		/* The header is a little-endian u32 (PROTOCOL.md 2). */
		uint32_t n = (uint32_t)b->data[0] | (uint32_t)b->data[1] << 8 |
			     (uint32_t)b->data[2] << 16 | (uint32_t)b->data[3] << 24;
		size_t frame = GSP_FRAME_HEADER + (size_t)n;
		if (frame > want)
			want = frame;
	}
	return want < b->limit ? want : b->limit;
}

int rxbuf_space(rxbuf *b, size_t chunk, uint8_t **ret_ptr, size_t *ret_room)
{
	size_t want = wanted(b);
	if (b->cap < want) {
		uint8_t *nb = realloc(b->data, want);
		if (!nb)
			return -ENOMEM;
		gsp_bigmem_advise(nb, want);
		b->data = nb;
		b->cap = want;
	}
	size_t room = b->cap - b->len;
	if (room == 0)
		return -ENOBUFS;
	*ret_ptr = b->data + b->len;
	*ret_room = room < chunk ? room : chunk;
	return 0;
}

int rxbuf_commit(rxbuf *b, size_t n)
{
	if (n > b->cap - b->len)
		return -EINVAL;
	b->len += n;
	return 0;
}

int rxbuf_frame(rxbuf *b, size_t *off, uint32_t max_body,
		uint8_t **ret_body, uint32_t *ret_len)
{
	if (*off > b->len)
		return -EINVAL;
	const uint8_t *body;
	size_t used;
	int err = gsp_frame_parse(b->data + *off, b->len - *off, max_body,
				  &body, ret_len, &used);
	if (err)
		return err;
	/* The body lies inside our own buffer. */
	*ret_body = b->data + (body - b->data);
	*off += used;
	return 0;
}

int rxbuf_consume(rxbuf *b, size_t n)
{
	if (n > b->len)
		return -EINVAL;
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	return 0;
}
