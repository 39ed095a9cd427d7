/* A growable text buffer (see textbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textbuf.h"

/* Room for n more bytes and the NUL. */
static bool reserve(gsp_textbuf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->failed)
		return false;
	if (b->p && b->cap - b->len > n)
		return true;
	if (n > ((size_t)-1) / 4 - b->cap) {
		b->failed = true;
		return false;
	}
	cap = (b->cap + n + 1) * 2;
	if (cap < 256)
		cap = 256;
	p = realloc(b->p, cap);
	if (!p) {
		b->failed = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void gsp_textbuf_put(gsp_textbuf *b, const char *s, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void gsp_textbuf_printf(gsp_textbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = true;
		return;
	}
	if (!reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void gsp_textbuf_free(gsp_textbuf *b)
{
	if (!b)
		return;
	free(b->p);
	*b = (gsp_textbuf)GSP_TEXTBUF_INIT;
}
