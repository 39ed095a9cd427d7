/* Command-line value parsing shared by the tools: strict decimal numbers
 * (no sign, no whitespace, range-checked) and die-with-usage messages. */
#ifndef GSP_TOOLS_CLI_H
#define GSP_TOOLS_CLI_H

#include <stddef.h>

/* Unsigned decimal in [0, max]; -EINVAL otherwise, *ret untouched. */
int gsp_cli_uint(const char *s, unsigned long long max, unsigned long long *ret);
/* Finite non-negative decimal float; -EINVAL otherwise. */
int gsp_cli_float(const char *s, float *ret);
/* Prints "<prog>: <what>: '<arg>' (see --help)" to stderr, or
 * "<prog>: <what> (see --help)" when arg is NULL; returns 2. */
int gsp_cli_die(const char *prog, const char *what, const char *arg);

#endif
