/*
 * libFuzzer harness for the shapes parser (tools/shapes.c): any byte string
 * must either parse into well-formed tensor descriptions or be rejected
 * with an error line inside the input, without reading past its end.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shapes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gsp_tensor *tensors = NULL;
	size_t count = 0;
	unsigned line = 0;
	int r;

	r = gsp_shapes_parse((const char *)data, size, &tensors, &count, &line);
	if (r < 0) {
		if (tensors || count)
			abort();   /* outputs written on failure */
		if (r == -EINVAL && (line == 0 || line > size + 1))
			abort();
		return 0;
	}
	if (count == 0 || count > GSP_SHAPES_MAX_TENSORS)
		abort();
	for (size_t i = 0; i < count; i++) {
		const gsp_tensor *t = &tensors[i];
		size_t n = strnlen(t->name, GSP_NAME_MAX);

		if (n == 0 || n == GSP_NAME_MAX)
			abort();
		if (t->ndim < 1 || t->ndim > GSP_MAX_DIMS)
			abort();
		for (unsigned d = 0; d < t->ndim; d++)
			if (t->shape[d] < 1 || t->shape[d] > GSP_SHAPES_MAX_DIM)
				abort();
	}
	free(tensors);
	return 0;
}
