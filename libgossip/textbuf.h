/*
 * A growable text buffer that its writer appends to with printf-style
 * calls (the Prometheus exposition of prom_text.h goes into one).  It
 * owns its bytes; the text is NUL-terminated after every append.  An
 * allocation that fails marks the buffer failed and later appends do
 * nothing, so a writer checks once, at the end.  Part of the
 * libgossip-status archive (see status_doc.h).
 */
#ifndef GSP_TEXTBUF_H
#define GSP_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gsp_textbuf {
	char *p;             /* NULL until the first append */
	size_t len, cap;     /* len excludes the NUL */
	bool failed;         /* an append ran out of memory */
} gsp_textbuf;

#define GSP_TEXTBUF_INIT { NULL, 0, 0, false }

void gsp_textbuf_printf(gsp_textbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Appends n bytes of s. */
void gsp_textbuf_put(gsp_textbuf *b, const char *s, size_t n);
/* Frees the bytes and empties b (NULL is fine). */
void gsp_textbuf_free(gsp_textbuf *b);

#endif
