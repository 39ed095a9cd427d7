/* gossipctl genkey: a new private key on stdout (see subcommands.h). */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "key.h"
#include "keyio.h"
#include "subcommands.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s genkey\n\n"
		"Writes a new random X25519 private key, in base64, to stdout:\n\n"
		"  umask 077; %s genkey > private.key\n"
		"  %s pubkey < private.key > public.key\n\n"
		"Warns if stdout is a file that others than its owner can read.\n",
		PROG_NAME, PROG_NAME, PROG_NAME);
}

int genkey_main(int argc, const char *argv[])
{
	gsp_keypair kp;
	int r;

	if (argc == 2 && gctl_is_help(argv[1])) {
		usage(stdout);
		return GCTL_EXIT_OK;
	}
	if (argc != 1)
		return gctl_usage_error("genkey", "unexpected argument", argv[1]);
	if (sodium_init() < 0) {
		fprintf(stderr, "%s: genkey: cannot initialise libsodium\n", PROG_NAME);
		return GCTL_EXIT_FAILURE;
	}
	gsp_keypair_generate(&kp);
	r = gctl_write_secret_key(kp.priv);
	sodium_memzero(&kp, sizeof(kp));
	if (r < 0) {
		fprintf(stderr, "%s: genkey: cannot write to stdout: %s\n", PROG_NAME,
			strerror(-r));
		return GCTL_EXIT_FAILURE;
	}
	return GCTL_EXIT_OK;
}
