/* text: escaping for log lines (text.h). */
#include <stdio.h>

#include "text.h"

char *text_escape(const char *in, size_t len, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			if (o + 1 >= cap)
				break;
			out[o++] = (char)c;
		} else {
			if (o + 4 >= cap)
				break;
			snprintf(out + o, 5, "\\x%02x", c);
			o += 4;
		}
	}
	out[o] = '\0';
	return out;
}
