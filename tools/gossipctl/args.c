/* gossipctl: options with a value, for every subcommand (see
 * subcommands.h). */
#include <stdio.h>
#include <string.h>

#include "subcommands.h"

int gctl_option(int argc, const char *argv[], int *i, const char *sub,
		const char *name, const char **ret_value)
{
	const char *arg = argv[*i], *value;
	size_t n = strlen(name);
	int next = *i + 1;
	char what[64];

	if (!strcmp(arg, name)) {
		if (next >= argc) {
			snprintf(what, sizeof(what), "%s needs a value", name);
			gctl_usage_error(sub, what, NULL);
			return -1;
		}
		value = argv[next++];
	} else if (!strncmp(arg, name, n) && arg[n] == '=') {
		value = arg + n + 1;
	} else {
		return 0;
	}
	if (!*value) {
		snprintf(what, sizeof(what), "%s needs a non-empty value", name);
		gctl_usage_error(sub, what, NULL);
		return -1;
	}
	*ret_value = value;
	*i = next;
	return 1;
}
