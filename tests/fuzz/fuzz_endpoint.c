/*
 * libFuzzer harness for the endpoint parser (daemon/endpoint.c): any text
 * either splits into a host and a port that format back to an endpoint
 * that splits the same way, or is refused; a numeric endpoint always
 * splits, and a name (-ENOENT) is never an IP literal.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[512], host[GSP_HOSTNAME_MAX + 1], again[GSP_HOSTNAME_MAX + 1];
	char formatted[GSP_HOSTNAME_MAX + 16];
	uint16_t port = 0, port2 = 0;
	struct sockaddr_storage ss;
	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';   /* the config hands over NUL-terminated values */

	int split = gsp_endpoint_split(text, host, sizeof(host), &port);
	int numeric = gsp_endpoint_numeric(text, &ss);
	if (split != 0 && split != -EINVAL && split != -ENAMETOOLONG)
		abort();
	if (numeric != 0 && numeric != -EINVAL && numeric != -ENOENT)
		abort();
	if ((numeric == 0 || numeric == -ENOENT) && split != 0)
		abort();
	if (split != 0)
		return 0;
	size_t n = strlen(host);
	if (n == 0 || n > GSP_HOSTNAME_MAX)
		abort();
	uint8_t addr[16];
	bool literal = inet_pton(AF_INET, host, addr) == 1 ||
		       inet_pton(AF_INET6, host, addr) == 1;
	if ((numeric == -ENOENT) == literal)
		abort();
	if (numeric == 0 && ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
		abort();
	snprintf(formatted, sizeof(formatted), strchr(host, ':') ? "[%s]:%u"
								 : "%s:%u",
		 host, port);
	if (gsp_endpoint_split(formatted, again, sizeof(again), &port2) != 0 ||
	    strcmp(again, host) != 0 || port2 != port)
		abort();
	return 0;
}
