/* gossipctl genkey: a new private key on stdout (see subcommands.h). */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	char b64[GSP_KEY_BASE64_LEN + 2];
	gsp_keypair kp;
	struct stat sb;
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
	if (fstat(STDOUT_FILENO, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    (sb.st_mode & 077))
		fprintf(stderr, "%s: warning: writing a private key to a file that "
			"group or others can access (use umask 077)\n", PROG_NAME);

	gsp_keypair_generate(&kp);
	gsp_key_to_base64(kp.priv, b64);
	sodium_memzero(&kp, sizeof(kp));
	b64[GSP_KEY_BASE64_LEN] = '\n';
	r = gctl_write_all(STDOUT_FILENO, b64, GSP_KEY_BASE64_LEN + 1);
	sodium_memzero(b64, sizeof(b64));
	if (r < 0) {
		fprintf(stderr, "%s: genkey: cannot write to stdout: %s\n", PROG_NAME,
			strerror(-r));
		return GCTL_EXIT_FAILURE;
	}
	return GCTL_EXIT_OK;
}
