/*
 * libFuzzer harness for the slot file's header decoder
 * (daemon/slotfile.c): any bytes, read as a file's first bytes for files
 * of every nearby size, are either a valid header (the magic, the length
 * the file's size less the header, a zero word, a sequence number > 0)
 * or refused with 0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "slotfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t len = size >= 24 ? get64(data + 16) : 0;
	uint64_t sizes[] = {size, 0, SLOTFILE_HEAD, len + SLOTFILE_HEAD,
			    len + SLOTFILE_HEAD + 1, len + SLOTFILE_HEAD - 1, UINT64_MAX};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t seq = slotfile_head_seq(data, size, sizes[i]);
		if (!seq)
			continue;
		if (size < SLOTFILE_HEAD || memcmp(data, "gsp slot", 8) != 0 ||
		    get64(data + 8) != seq || sizes[i] < SLOTFILE_HEAD ||
		    len != sizes[i] - SLOTFILE_HEAD || get64(data + 24) != 0)
			abort();
	}
	return 0;
}
