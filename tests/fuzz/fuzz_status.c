/* libFuzzer harness: the reading of the daemon's status JSON
 * (libgossip/status_doc.c) and its Prometheus text (prom_text.c), as
 * gossipctl and gossipd's metrics listener use them.  Accept or reject
 * with a reason; an accepted document's text ends with a newline; never
 * crash or leak. */
#include <stdlib.h>
#include <string.h>

#include "prom_text.h"
#include "status_doc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gsp_sdoc st;
	char err[256] = "";
	if (gsp_sdoc_parse((const char *)data, size, &st, err, sizeof(err)) == 0) {
		gsp_textbuf text = GSP_TEXTBUF_INIT;
		if (gsp_prom_write(&st, &text) == 0 &&
		    (text.len == 0 || text.p[text.len - 1] != '\n'))
			abort();
		gsp_textbuf_free(&text);
		gsp_sdoc_clear(&st);
	} else if (!err[0]) {
		abort();
	}
	return 0;
}
