/* gossipctl ca-genkey: a new cluster authority key on stdout (see
 * subcommands.h). */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "admit.h"
#include "keyio.h"
#include "subcommands.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s ca-genkey\n\n"
		"Writes a new random cluster authority key (the 32-byte seed of an\n"
		"Ed25519 key pair), in base64, to stdout:\n\n"
		"  umask 077; %s ca-genkey > ca.key\n"
		"  %s pubkey --ca < ca.key > ca.pub\n\n"
		"The authority signs member certificates (cert-issue) and revocation\n"
		"lists (revoke).  Warns if stdout is a file that others than its owner\n"
		"can read.\n",
		PROG_NAME, PROG_NAME, PROG_NAME);
}

int ca_genkey_main(int argc, const char *argv[])
{
	uint8_t seed[GSP_SIGN_SEED_BYTES];
	int r;

	_Static_assert(GSP_SIGN_SEED_BYTES == GSP_KEY_BYTES,
		       "an authority key file reads as a key");
	if (argc == 2 && gctl_is_help(argv[1])) {
		usage(stdout);
		return GCTL_EXIT_OK;
	}
	if (argc != 1)
		return gctl_usage_error("ca-genkey", "unexpected argument", argv[1]);
	if (sodium_init() < 0) {
		fprintf(stderr, "%s: ca-genkey: cannot initialise libsodium\n", PROG_NAME);
		return GCTL_EXIT_FAILURE;
	}
	randombytes_buf(seed, sizeof(seed));
	r = gctl_write_secret_key(seed);
	sodium_memzero(seed, sizeof(seed));
	if (r < 0) {
		fprintf(stderr, "%s: ca-genkey: cannot write to stdout: %s\n",
			PROG_NAME, strerror(-r));
		return GCTL_EXIT_FAILURE;
	}
	return GCTL_EXIT_OK;
}
