/* gossipctl revoke: a revocation list signed by the authority (see
 * subcommands.h and proto/revoke.h). */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "keyio.h"
#include "revoke.h"
#include "subcommands.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s revoke --ca KEYFILE --serial N [KEY...]\n\n"
		"Signs a revocation list with the authority key in KEYFILE and writes\n"
		"its text, one base64 line, to stdout.  It lists the node public keys\n"
		"KEY (in any order; a key given twice is listed once; at most %d):\n"
		"their certificates no longer admit them.  N (0 to 2^64-1) orders the\n"
		"lists of one authority: a list replaces those of lower serials, so\n"
		"each new list holds every key still revoked.\n\n"
		"  %s revoke --ca ca.key --serial 2 \"$(%s pubkey < node.key)\" > revoked\n",
		PROG_NAME, GSP_REVOKE_MAX, PROG_NAME, PROG_NAME);
}

static int key_order(const void *a, const void *b)
{
	return memcmp(a, b, GSP_KEY_BYTES);
}

/* Signs and prints the list: an exit code. */
static int emit(gsp_revoke *list, const char *ca)
{
	uint8_t sk[GSP_SIGN_SECRET_BYTES];
	size_t cap = GSP_REVOKE_TEXT_MAX + 2, len;
	char *text;
	int r;

	if (gctl_read_ca_key("revoke", ca, sk) < 0)
		return GCTL_EXIT_FAILURE;
	r = gsp_revoke_sign(list, sk);
	sodium_memzero(sk, sizeof(sk));
	text = malloc(cap);
	if (!text)
		r = -ENOMEM;
	if (r == 0)
		r = gsp_revoke_to_text(list, text, cap);
	if (r < 0) {
		fprintf(stderr, "%s: revoke: cannot sign: %s\n", PROG_NAME,
			gsp_admit_strerror(r));
		free(text);
		return GCTL_EXIT_FAILURE;
	}
	len = strlen(text);
	text[len++] = '\n';
	r = gctl_write_all(STDOUT_FILENO, text, len);
	free(text);
	if (r < 0) {
		fprintf(stderr, "%s: revoke: cannot write to stdout: %s\n",
			PROG_NAME, strerror(-r));
		return GCTL_EXIT_FAILURE;
	}
	return GCTL_EXIT_OK;
}

int revoke_main(int argc, const char *argv[])
{
	const char *ca = NULL, *serial = NULL;
	unsigned long long n_serial;
	gsp_revoke list = { .version = GSP_REVOKE_VERSION };
	uint32_t n = 0;
	int r, rc;

	/* At most one key per argument. */
	list.keys = calloc(argc > 1 ? (size_t)argc : 1, GSP_KEY_BYTES);
	if (!list.keys) {
		fprintf(stderr, "%s: revoke: out of memory\n", PROG_NAME);
		return GCTL_EXIT_FAILURE;
	}
	for (int i = 1; i < argc;) {
		if (gctl_is_help(argv[i])) {
			usage(stdout);
			rc = GCTL_EXIT_OK;
			goto out;
		}
		r = gctl_option(argc, argv, &i, "revoke", "--ca", &ca);
		if (r == 0)
			r = gctl_option(argc, argv, &i, "revoke", "--serial", &serial);
		rc = GCTL_EXIT_USAGE;
		if (r < 0)
			goto out;
		if (r == 1)
			continue;
		if (gsp_key_from_base64(argv[i], list.keys[n]) < 0) {
			gctl_usage_error("revoke", argv[i][0] == '-' ?
					 "unknown argument" : "not a public key", argv[i]);
			goto out;
		}
		n++;
		i++;
	}
	rc = GCTL_EXIT_USAGE;
	if (!ca || !serial) {
		gctl_usage_error("revoke", "--ca and --serial are required", NULL);
		goto out;
	}
	if (gsp_cli_uint(serial, UINT64_MAX, &n_serial) < 0) {
		gctl_usage_error("revoke", "--serial needs a number from 0 to 2^64-1", serial);
		goto out;
	}
	/* Ascending, each key once. */
	qsort(list.keys, n, GSP_KEY_BYTES, key_order);
	for (uint32_t k = 0; k < n; k++)
		if (list.count == 0 || key_order(list.keys[list.count - 1], list.keys[k]))
			memmove(list.keys[list.count++], list.keys[k], GSP_KEY_BYTES);
	if (list.count > GSP_REVOKE_MAX) {
		fprintf(stderr, "%s: revoke: %u keys, more than a list holds (%d)\n",
			PROG_NAME, list.count, GSP_REVOKE_MAX);
		goto out;
	}
	list.serial = n_serial;
	rc = GCTL_EXIT_FAILURE;
	if (sodium_init() < 0) {
		fprintf(stderr, "%s: revoke: cannot initialise libsodium\n", PROG_NAME);
		goto out;
	}
	rc = emit(&list, ca);
out:
	free(list.keys);
	return rc;
}
