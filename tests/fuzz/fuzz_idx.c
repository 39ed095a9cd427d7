/*
 * libFuzzer harness for the IDX decoder (tools/idx.c): any byte string must
 * either decode to a consistent gsp_idx or be rejected, without reading
 * outside the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "idx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gsp_idx idx;
	uint64_t count = 1;

	if (gsp_idx_decode(data, size, &idx) < 0)
		return 0;
	if (idx.ndim < 1 || idx.ndim > GSP_IDX_MAX_DIMS)
		abort();
	for (unsigned i = 0; i < idx.ndim; i++)
		count *= idx.dims[i];
	if (count != idx.count || size != 4 + 4 * (size_t)idx.ndim + count)
		abort();
	/* Touch the first and last data bytes so ASan checks the copy. */
	if (idx.data[0] != data[size - count] ||
	    idx.data[count - 1] != data[size - 1])
		abort();
	gsp_idx_free(&idx);
	return 0;
}
