/* The head of an HTTP/1.x request (see httpreq.h). */
#include <stdbool.h>
#include <string.h>

#include "httpreq.h"

/* RFC 9110's tchar: the bytes of a method or a header name. */
static bool tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* Ran out of bytes: wait for more, unless the cap is reached. */
static int more(size_t len)
{
	return len >= HTTPREQ_HEAD_MAX ? 431 : 0;
}

/* A line end at *i (CRLF or LF): 1 and *i past it, 0 if the bytes stop
 * inside it, -1 for anything else. */
static int line_end(const unsigned char *p, size_t n, size_t *i)
{
	if (p[*i] == '\n') {
		*i += 1;
		return 1;
	}
	if (p[*i] != '\r')
		return -1;
	if (*i + 1 == n)
		return 0;
	if (p[*i + 1] != '\n')
		return -1;
	*i += 2;
	return 1;
}

/* "HTTP/" DIGIT "." DIGIT at *i: 1 with the digits, 0 if the bytes stop
 * first, -1 for anything else. */
static int version(const unsigned char *p, size_t n, size_t *i,
		   int *ret_major, int *ret_minor)
{
	static const char shape[] = "HTTP/9.9";

	for (size_t k = 0; k < sizeof(shape) - 1; k++, (*i)++) {
		if (*i == n)
			return 0;
		if (shape[k] == '9' ? !digit(p[*i]) : p[*i] != (unsigned char)shape[k])
			return -1;
	}
	*ret_major = p[*i - 3] - '0';
	*ret_minor = p[*i - 1] - '0';
	return 1;
}

/* The verdict on a complete, well-formed head. */
static int verdict(const unsigned char *method, size_t method_len,
		   const unsigned char *target, size_t target_len,
		   int major, int minor)
{
	size_t path_len = 0;

	if (major != 1 || minor > 1)
		return 505;
	if (method_len != 3 || memcmp(method, "GET", 3))
		return 405;
	while (path_len < target_len && target[path_len] != '?')
		path_len++;
	if (path_len != strlen(HTTPREQ_PATH) ||
	    memcmp(target, HTTPREQ_PATH, path_len))
		return 404;
	return 200;
}

int httpreq_judge(const char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)buf;
	size_t n = len < HTTPREQ_HEAD_MAX ? len : HTTPREQ_HEAD_MAX;
	size_t i = 0, method_len, target, target_len;
	int major = 0, minor = 0, r;

	/* method SP request-target SP HTTP-version line-end */
	while (i < n && tchar(p[i]))
		i++;
	if (i == n)
		return more(len);
	if (i == 0 || p[i] != ' ')
		return 400;
	method_len = i++;
	target = i;
	if (i < n && p[i] != '/')         /* origin-form only */
		return 400;
	while (i < n && p[i] > 0x20 && p[i] < 0x7f)
		i++;
	if (i == n)
		return more(len);
	if (i == target || p[i] != ' ')
		return 400;
	target_len = i++ - target;
	if ((r = version(p, n, &i, &major, &minor)) <= 0)
		return r < 0 ? 400 : more(len);
	if (i == n)
		return more(len);
	if ((r = line_end(p, n, &i)) <= 0)
		return r < 0 ? 400 : more(len);

	/* field-name ":" field-value line-end, until a blank line; values
	 * are visible bytes, spaces, tabs and obs-text. */
	for (;;) {
		size_t name = i;

		if (i == n)
			return more(len);
		if (p[i] == '\r' || p[i] == '\n') {
			if ((r = line_end(p, n, &i)) <= 0)
				return r < 0 ? 400 : more(len);
			break;
		}
		while (i < n && tchar(p[i]))
			i++;
		if (i == n)
			return more(len);
		if (i == name || p[i] != ':')
			return 400;
		for (i++; i < n && (p[i] == '\t' || (p[i] >= 0x20 && p[i] != 0x7f)); i++)
			;
		if (i == n)
			return more(len);
		if ((r = line_end(p, n, &i)) <= 0)
			return r < 0 ? 400 : more(len);
	}
	return verdict(p, method_len, p + target, target_len, major, minor);
}
