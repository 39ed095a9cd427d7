/* Endpoints: "host:port" syntax and numeric conversion (endpoint.h). */
#include "endpoint.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

static bool is_name(const char *host)
{
	size_t label = 0, n = strlen(host);
	if (n == 0 || n > GSP_HOSTNAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = host[i];
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' ||
			  (c == '-' && label > 0);
		if (!ok || ++label > 63)
			return false;
	}
	return true;
}

/* Digits and dots only: meant as an IPv4 literal (no top-level domain is
 * numeric), so it must be a valid one. */
static bool is_ipv4_shaped(const char *host)
{
	return strspn(host, "0123456789.") == strlen(host);
}

int gsp_endpoint_split(const char *text, char *host, size_t cap,
		       uint16_t *ret_port)
{
	const char *colon = strrchr(text, ':');
	if (!colon || colon == text || colon[1] == '\0')
		return -EINVAL;
	unsigned long port = 0;
	for (const char *c = colon + 1; *c; c++) {
		if (*c < '0' || *c > '9' || (port = port * 10 + (unsigned)(*c - '0')) > 65535)
			return -EINVAL;
	}
	const char *h = text;
	size_t hlen = (size_t)(colon - text);
	bool bracketed = h[0] == '[';
	if (bracketed) {
		if (hlen < 3 || h[hlen - 1] != ']')
			return -EINVAL;
		h++;
		hlen -= 2;
	} else if (memchr(h, ':', hlen) || memchr(h, ']', hlen)) {
		return -EINVAL;   /* IPv6 literals need brackets */
	}
	if (hlen >= cap)
		return -ENAMETOOLONG;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (bracketed) {
		struct in6_addr a;
		if (inet_pton(AF_INET6, host, &a) != 1)
			return -EINVAL;
	} else if (is_ipv4_shaped(host)) {
		struct in_addr a;
		if (inet_pton(AF_INET, host, &a) != 1)
			return -EINVAL;
	} else if (!is_name(host)) {
		return -EINVAL;
	}
	*ret_port = (uint16_t)port;
	return 0;
}

int gsp_endpoint_numeric(const char *text, struct sockaddr_storage *ss)
{
	char host[GSP_HOSTNAME_MAX + 1];
	uint16_t port;
	int err = gsp_endpoint_split(text, host, sizeof(host), &port);
	if (err)
		return err == -ENAMETOOLONG ? -EINVAL : err;
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		return 0;
	}
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		return 0;
	}
	return -ENOENT;
}
