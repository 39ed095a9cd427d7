/* Command-line value parsing shared by the tools (see cli.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

int gsp_cli_uint(const char *s, unsigned long long max, unsigned long long *ret)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

int gsp_cli_float(const char *s, float *ret)
{
	char *end;
	if (!s || !((*s >= '0' && *s <= '9') || *s == '.'))
		return -EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v > 3.0e38)
		return -EINVAL;
	*ret = (float)v;
	return 0;
}

int gsp_cli_die(const char *prog, const char *what, const char *arg)
{
	if (arg)
		fprintf(stderr, "%s: %s: '%s' (see --help)\n", prog, what, arg);
	else
		fprintf(stderr, "%s: %s (see --help)\n", prog, what);
	return 2;
}
