/* libFuzzer harness: gossipctl's reading of the daemon's status JSON.
 * Accept or reject with a reason; never crash or leak. */
#include <stdlib.h>
#include <string.h>

#include "status_doc.h"
#include "subcommands.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* status_doc.c shares ipc.c with the command line, whose usage errors the
 * parser never reaches. */
int gctl_usage_error(const char *sub, const char *what, const char *arg)
{
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gctl_status st;
	char err[256] = "";
	if (gctl_status_parse((const char *)data, size, &st, err, sizeof(err)) == 0)
		gctl_status_clear(&st);
	else if (!err[0])
		abort();
	return 0;
}
