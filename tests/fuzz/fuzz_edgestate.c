/*
 * libFuzzer harness for the edges' records file parser
 * (daemon/edgestate.c): any bytes either parse into records that
 * re-encode to exactly the same bytes (the encoding is canonical, so a
 * saved file reads back as it was written), with every message pointing
 * at its own bytes of the input, or are refused with -EBADMSG.
 */
#include <errno.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "edgestate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static edge_record out[EDGESTATE_MAX];
	uint64_t writes = 0;
	int n = edgestate_parse(data, size, out, &writes);
	if (n < 0) {
		if (n != -EBADMSG)
			abort();
		return 0;
	}
	if (n > EDGESTATE_MAX)
		abort();
	for (int i = 0; i < n; i++) {
		const edge_record *r = &out[i];
		if (r->msg_len > EDGESTATE_MSG_MAX || r->ended_generation > r->generation ||
		    (r->live && r->generation == 0))
			abort();
		if (r->msg_len ? !r->msg || r->msg < data || r->msg_len > size ||
				 r->msg > data + size - r->msg_len
			       : r->msg != NULL)
			abort();
	}
	uint8_t *buf;
	size_t len;
	if (edgestate_encode(out, (size_t)n, writes, &buf, &len) != 0)
		abort();
	/* A v2 file comes back byte for byte (a v1 one comes back as v2). */
	bool v1 = size >= 16 && !memcmp(data, "gossipd edges v1", 16);
	if (!v1 && (len != size || memcmp(buf, data, size) != 0))
		abort();
	free(buf);
	return 0;
}
