/*
 * libFuzzer harness for the FETCH peer message (proto/fetch_msg.c): the
 * decoder either refuses with -ENOMSG or -EBADMSG, leaving its output
 * untouched, or accepts a message whose fields are within their bounds
 * (a DATA's bytes inside its snapshot, a chunk within
 * GSP_FETCH_CHUNK_MAX, a REFUSE's reason known) and that encodes back to
 * exactly the input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fetch_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static gsp_msg_fetch m, untouched;
	uint8_t *copy = malloc(size ? size : 1), *again;
	size_t n;

	if (!copy)
		abort();
	memcpy(copy, data, size);
	memset(&m, 0xA5, sizeof(m));
	memset(&untouched, 0xA5, sizeof(untouched));
	int r = gsp_msg_fetch_decode(copy, size, &m);
	if (r != 0) {
		if ((r != -ENOMSG && r != -EBADMSG) || memcmp(&m, &untouched, sizeof(m)) != 0)
			abort();
		free(copy);
		return 0;
	}
	switch (m.kind) {
	case GSP_FETCH_ASK:
		if (m.len < 1 || m.len > GSP_FETCH_CHUNK_MAX || (!m.snapshot && m.offset))
			abort();
		break;
	case GSP_FETCH_DATA:
		if (!m.snapshot || m.len < 1 || m.len > GSP_FETCH_CHUNK_MAX ||
		    m.offset > m.total || m.len > m.total - m.offset ||
		    m.bytes < copy || m.bytes + m.len != copy + size)
			abort();
		break;
	case GSP_FETCH_REFUSE:
		if (m.reason < 1 || m.reason > GSP_FETCH_NO_LAST ||
		    m.text_len > GSP_FETCH_TEXT_MAX || (m.text_len && memchr(m.text, 0, m.text_len)))
			abort();
		break;
	default:
		abort();
	}
	again = malloc(size);
	if (!again || gsp_msg_fetch_encode(&m, again, size, &n) != 0 || n != size ||
	    memcmp(again, copy, size) != 0)
		abort();
	free(again);
	free(copy);
	return 0;
}
