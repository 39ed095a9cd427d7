/*
 * libFuzzer harness for the failure detector's messages
 * (daemon/swim_msg.c): the decoder either refuses with -EINVAL, leaving
 * its output untouched, or accepts a message of at most SWIM_MSG_MAX
 * bytes that encodes back to exactly the input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "swim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t again[SWIM_MSG_MAX], *copy;
	swim_msg m, untouched;
	size_t n;

	copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	memset(&m, 0xA5, sizeof(m));
	memset(&untouched, 0xA5, sizeof(untouched));
	int r = swim_msg_decode(copy, size, &m);
	if (r != 0) {
		if (r != -EINVAL || memcmp(&m, &untouched, sizeof(m)) != 0)
			abort();
		free(copy);
		return 0;
	}
	if (size > SWIM_MSG_MAX ||
	    swim_msg_encode(&m, again, sizeof(again), &n) != 0 ||
	    n != size || memcmp(again, copy, size) != 0)
		abort();
	free(copy);
	return 0;
}
