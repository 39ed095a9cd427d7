/*
 * text: untrusted text made safe for one log line (a peer's GOODBYE
 * text, a trainer's HELLO name): printable ASCII stays, a backslash and
 * every other byte become \xNN, so no client can forge or split lines.
 */
#ifndef GOSSIPD_TEXT_H
#define GOSSIPD_TEXT_H

#include <stddef.h>

/* Writes the escaped form of in[0..len) into out (cap > 0; always
 * NUL-terminated, cut at a whole escape when it does not fit).  Returns
 * out. */
char *text_escape(const char *in, size_t len, char *out, size_t cap);

#endif
