/*
 * libFuzzer harness for the replay-timestamp file parser
 * (daemon/replay.c): any bytes either parse into whole records that
 * re-encode to the same bytes, or are refused with -EBADMSG.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static replay_entry out[REPLAY_MAX];
	int n = replay_parse(data, size, out);
	if (n < 0) {
		if (n != -EBADMSG || (size % REPLAY_RECORD == 0 &&
				      size / REPLAY_RECORD <= REPLAY_MAX))
			abort();
		return 0;
	}
	if ((size_t)n * REPLAY_RECORD != size)
		abort();
	for (int i = 0; i < n; i++)
		if (memcmp(out[i].key, data + (size_t)i * REPLAY_RECORD, GSP_KEY_BYTES) ||
		    memcmp(out[i].ts, data + (size_t)i * REPLAY_RECORD + GSP_KEY_BYTES,
			   REPLAY_TS_BYTES))
			abort();
	return 0;
}
