/*
 * libFuzzer harness for SeedSRV's answer parser (daemon/seeds_srv.c,
 * seeds_srv_parse): any bytes are a list of SRV targets, "no data" or
 * "malformed", never a crash or a read outside them; targets are
 * non-empty names of at most GSP_HOSTNAME_MAX bytes with a port, and a
 * smaller limit gives the same first targets with the rest counted.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "seeds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	seeds_srv_target all[8], two[2];
	size_t cut_all, cut_two;
	/* An exact copy, so reading past the input is caught. */
	uint8_t *msg = malloc(size ? size : 1);
	if (!msg)
		return 0;
	memcpy(msg, data, size);
	int n = seeds_srv_parse(msg, size, all, 8, &cut_all);
	int k = seeds_srv_parse(msg, size, two, 2, &cut_two);
	free(msg);
	if (n <= 0) {
		if ((n != -ENODATA && n != -EBADMSG) || k != n)
			abort();
		return 0;
	}
	if (n > 8 || k != (n < 2 ? n : 2) || cut_two != cut_all + (size_t)(n - k))
		abort();
	for (int i = 0; i < n; i++) {
		size_t len = strnlen(all[i].name, sizeof(all[i].name));
		if (len == 0 || len > GSP_HOSTNAME_MAX || all[i].port == 0)
			abort();
		if (i < k && (strcmp(all[i].name, two[i].name) || all[i].port != two[i].port))
			abort();
	}
	return 0;
}
