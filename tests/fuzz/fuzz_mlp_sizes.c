/*
 * libFuzzer harness for gossip-train's --layers parser
 * (gsp_mlp_parse_sizes in examples/mlp.c): any text is refused with -EINVAL
 * and nothing else, or gives 2..GSP_MLP_MAX_LAYERS + 1 sizes of 1..65536
 * whose decimal forms, joined with '-', are the text again (modulo
 * leading zeros, which the comparison strips).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[256], joined[256] = "", canon[256];
	unsigned sizes[GSP_MLP_MAX_LAYERS + 1];
	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	int n = gsp_mlp_parse_sizes(text, sizes);
	if (n < 0) {
		if (n != -EINVAL)
			abort();
		return 0;
	}
	if (n < 2 || n > GSP_MLP_MAX_LAYERS + 1)
		abort();
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 1 || sizes[i] > 65536)
			abort();
		len += (size_t)snprintf(joined + len, sizeof(joined) - len,
					"%s%u", i ? "-" : "", sizes[i]);
	}
	/* The text without leading zeros in its fields. */
	size_t c = 0;
	for (size_t i = 0; text[i]; i++) {
		bool field_start = i == 0 || text[i - 1] == '-';
		if (field_start)
			while (text[i] == '0' && text[i + 1] >= '0' && text[i + 1] <= '9')
				i++;
		canon[c++] = text[i];
	}
	canon[c] = '\0';
	if (strcmp(canon, joined) != 0)
		abort();
	return 0;
}
