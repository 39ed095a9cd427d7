/* gossipctl pubkey: the public key of a private key (see subcommands.h). */
#include <errno.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "key.h"
#include "keyio.h"
#include "subcommands.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s pubkey < private.key\n\n"
		"Reads a base64 private key from stdin and writes its public key, in\n"
		"base64, to stdout.  The input is the key's 44 characters and at most\n"
		"one newline; anything else is refused.\n",
		PROG_NAME);
}

int pubkey_main(int argc, const char *argv[])
{
	char in[GSP_KEY_BASE64_LEN + 1];
	char out[GSP_KEY_BASE64_LEN + 2];
	uint8_t priv[GSP_KEY_BYTES];
	gsp_keypair kp;
	long n;
	int r, rc = GCTL_EXIT_FAILURE;

	if (argc == 2 && gctl_is_help(argv[1])) {
		usage(stdout);
		return GCTL_EXIT_OK;
	}
	if (argc != 1)
		return gctl_usage_error("pubkey", "unexpected argument", argv[1]);
	if (sodium_init() < 0) {
		fprintf(stderr, "%s: pubkey: cannot initialise libsodium\n", PROG_NAME);
		return GCTL_EXIT_FAILURE;
	}

	n = gctl_read_line(STDIN_FILENO, in, sizeof(in));
	if (n < 0 && n != -EMSGSIZE) {
		fprintf(stderr, "%s: pubkey: cannot read stdin: %s\n", PROG_NAME,
			strerror((int)-n));
		goto out;
	}
	if (n != GSP_KEY_BASE64_LEN || gsp_key_from_base64(in, priv) < 0) {
		fprintf(stderr, "%s: pubkey: stdin does not hold a private key (%d "
			"base64 characters and at most one newline)\n", PROG_NAME,
			GSP_KEY_BASE64_LEN);
		goto out;
	}
	if (gsp_keypair_from_private(priv, &kp) < 0) {
		fprintf(stderr, "%s: pubkey: cannot derive the public key\n", PROG_NAME);
		goto out;
	}
	gsp_key_to_base64(kp.pub, out);
	out[GSP_KEY_BASE64_LEN] = '\n';
	r = gctl_write_all(STDOUT_FILENO, out, GSP_KEY_BASE64_LEN + 1);
	if (r < 0) {
		fprintf(stderr, "%s: pubkey: cannot write to stdout: %s\n", PROG_NAME,
			strerror(-r));
		goto out;
	}
	rc = GCTL_EXIT_OK;
out:
	sodium_memzero(in, sizeof(in));
	sodium_memzero(priv, sizeof(priv));
	sodium_memzero(&kp, sizeof(kp));
	return rc;
}
