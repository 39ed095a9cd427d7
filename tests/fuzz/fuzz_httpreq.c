/* libFuzzer harness: the metrics listener's request head
 * (daemon/httpreq.c).  Every verdict is one of the documented statuses,
 * "more bytes" only below the cap, and a verdict is final: the same for
 * every longer input that starts with the same bytes. */
#include <stdint.h>
#include <stdlib.h>

#include "httpreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	int v = httpreq_judge(s, size);

	switch (v) {
	case 0:
		if (size >= HTTPREQ_HEAD_MAX)
			abort();
		break;
	case 200: case 400: case 404: case 405: case 431: case 505:
		break;
	default:
		abort();
	}
	for (size_t k = 0; k < size; k += 1 + k / 4) {
		int w = httpreq_judge(s, k);
		if (w != 0 && w != v)
			abort();
	}
	return 0;
}
