/* gossipd logging to stderr (see log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

static gsp_log_level max_level = GSP_LOG_INFO;
static int journal;

void gsp_log_init(gsp_log_level level)
{
	max_level = level;
	journal = getenv("JOURNAL_STREAM") != NULL;
}

void gsp_log_set_level(gsp_log_level level)
{
	max_level = level;
}

void gsp_log(gsp_log_level level, const char *fmt, ...)
{
	static const char *words[] = {"error", "warning", "info", "debug"};
	static const int priorities[] = {3, 4, 6, 7};
	if (level > max_level)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (journal)
		fprintf(stderr, "<%d>%s\n", priorities[level], line);
	else
		fprintf(stderr, "gossipd: %s: %s\n", words[level], line);
}
