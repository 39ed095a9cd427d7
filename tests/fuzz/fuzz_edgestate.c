/*
 * libFuzzer harness for the edges' records file parser
 * (daemon/edgestate.c): any bytes either parse into records that
 * re-encode to exactly the same bytes (the encoding is canonical, so a
 * saved file reads back as it was written; a v1 file, or a v3 one with
 * no generation's state, comes back as v2), with every message and
 * state pointing at its own bytes of the input, or are refused with
 * -EBADMSG.
 */
#include <errno.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "edgestate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A parsed blob points into the input, or is NULL when empty. */
static bool inside(const uint8_t *p, uint32_t n, const uint8_t *data, size_t size)
{
	return n ? p && p >= data && n <= size && p <= data + size - n : p == NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static edge_record out[EDGESTATE_MAX];
	uint64_t writes = 0;
	edge_owner owner;
	int n = edgestate_parse(data, size, out, &writes, &owner);
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
		if (!inside(r->msg, r->msg_len, data, size) ||
		    !inside(r->engine, r->engine_len, data, size) ||
		    !inside(r->kept[0], r->kept_len[0], data, size) ||
		    !inside(r->kept[1], r->kept_len[1], data, size) ||
		    !(r->weight >= 0.0f && r->weight <= 1.0f))
			abort();
	}
	uint8_t *buf;
	size_t len;
	bool v4 = size >= 16 && !memcmp(data, "gossipd edges v4", 16);
	if (owner.set != v4)
		abort();
	if (edgestate_encode(out, (size_t)n, writes, &owner, &buf, &len) != 0)
		abort();
	/* A v2 file comes back byte for byte, and so does a v3 one with a
	 * generation's state, and a v4 one (its owner with it); a v1 one, or
	 * a v3 one with none, comes back as v2 with the same records. */
	bool v1 = size >= 16 && !memcmp(data, "gossipd edges v1", 16);
	bool v3 = size >= 16 && !memcmp(data, "gossipd edges v3", 16);
	bool stateless = true;
	for (int i = 0; i < n; i++)
		stateless = stateless && !out[i].engine_len;
	if (!v1 && !(v3 && stateless) && (len != size || memcmp(buf, data, size) != 0))
		abort();
	if ((v1 || (v3 && stateless)) && edgestate_parse(buf, len, out, NULL, NULL) != n)
		abort();
	free(buf);
	return 0;
}
