/*
 * shapes: strict parser for tensor shape files.  See shapes.h for the
 * grammar.  Character classes are explicit ASCII range checks, never
 * <ctype.h>, so the result cannot depend on the locale.
 */
#include "shapes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHAPES_FIRST_CAP 64
/* 2^40 has 13 decimal digits. */
#define SHAPES_MAX_DIGITS 13

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.';
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Parses one tensor line [p, end) into *t; returns 0 or -EINVAL. */
static int parse_tensor_line(const char *p, const char *end, gsp_tensor *t)
{
	const char *name = p;
	size_t name_len;

	memset(t, 0, sizeof(*t));
	while (p < end && is_name_char(*p))
		p++;
	name_len = (size_t)(p - name);
	if (name_len == 0 || name_len >= GSP_NAME_MAX)
		return -EINVAL;
	memcpy(t->name, name, name_len);
	t->name[name_len] = '\0';

	if (p == end || !is_blank(*p))
		return -EINVAL;
	while (p < end && is_blank(*p))
		p++;

	for (;;) {
		uint64_t v = 0;
		unsigned digits = 0;

		if (t->ndim == GSP_MAX_DIMS)
			return -EINVAL;
		if (p == end || *p < '1' || *p > '9')
			return -EINVAL;   /* no digit, a sign, or a leading zero */
		while (p < end && is_digit(*p)) {
			if (++digits > SHAPES_MAX_DIGITS)
				return -EINVAL;
			v = v * 10 + (uint64_t)(*p - '0');
			p++;
		}
		if (v > GSP_SHAPES_MAX_DIM)
			return -EINVAL;
		t->shape[t->ndim++] = v;
		if (p == end)
			return 0;
		if (*p != 'x')
			return -EINVAL;
		p++;
	}
}

int gsp_shapes_parse(const char *text, size_t len, gsp_tensor **ret_tensors,
		     size_t *ret_count, unsigned *ret_error_line)
{
	gsp_tensor *tensors = NULL;
	size_t count = 0, cap = 0;
	const char *p, *end;
	unsigned line = 0;
	int r;

	if ((!text && len > 0) || !ret_tensors || !ret_count) {
		r = -EINVAL;
		goto fail;
	}
	if (len > GSP_SHAPES_MAX_BYTES)
		return -EFBIG;   /* also keeps line numbers far from UINT_MAX */

	p = text;
	end = text ? text + len : NULL;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *q;

		if (!eol)
			eol = end;
		line++;

		for (q = p; q < eol && is_blank(*q); q++)
			;
		if (q == eol || *p == '#') {
			p = eol < end ? eol + 1 : end;
			continue;
		}

		if (count == GSP_SHAPES_MAX_TENSORS) {
			r = -EINVAL;
			goto fail;
		}
		if (count == cap) {
			size_t ncap = cap ? cap * 2 : SHAPES_FIRST_CAP;
			gsp_tensor *n;

			if (ncap > GSP_SHAPES_MAX_TENSORS)
				ncap = GSP_SHAPES_MAX_TENSORS;
			n = realloc(tensors, ncap * sizeof(*n));
			if (!n) {
				free(tensors);
				return -ENOMEM;
			}
			tensors = n;
			cap = ncap;
		}
		r = parse_tensor_line(p, eol, &tensors[count]);
		if (r < 0)
			goto fail;
		count++;
		p = eol < end ? eol + 1 : end;
	}

	if (count == 0) {
		line++;
		r = -EINVAL;
		goto fail;
	}
	*ret_tensors = tensors;
	*ret_count = count;
	return 0;

fail:
	free(tensors);
	if (ret_error_line && r == -EINVAL)
		*ret_error_line = line;
	return r;
}

/* Reads at most GSP_SHAPES_MAX_BYTES from fd. */
static int read_capped(int fd, char **ret_buf, size_t *ret_len)
{
	struct stat st;
	size_t cap = 4096, len = 0;
	char *buf;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		if ((uint64_t)st.st_size > GSP_SHAPES_MAX_BYTES)
			return -EFBIG;
		/* One byte more than the size, to see EOF without regrowing. */
		cap = (size_t)st.st_size + 1;
	}
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = cap * 2;
			char *nbuf;

			if (ncap > GSP_SHAPES_MAX_BYTES + 1)
				ncap = GSP_SHAPES_MAX_BYTES + 1;
			if (ncap == cap) {
				free(buf);
				return -EFBIG;
			}
			nbuf = realloc(buf, ncap);
			if (!nbuf) {
				free(buf);
				return -ENOMEM;
			}
			buf = nbuf;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(buf);
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > GSP_SHAPES_MAX_BYTES) {
		free(buf);
		return -EFBIG;
	}
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

int gsp_shapes_load(const char *path, gsp_tensor **ret_tensors,
		    size_t *ret_count, unsigned *ret_error_line)
{
	char *buf = NULL;
	size_t len = 0;
	int fd, r;

	if (!path || !ret_tensors || !ret_count) {
		if (ret_error_line)
			*ret_error_line = 0;
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	r = read_capped(fd, &buf, &len);
	(void)close(fd);
	if (r < 0)
		return r;
	r = gsp_shapes_parse(buf, len, ret_tensors, ret_count, ret_error_line);
	free(buf);
	return r;
}
