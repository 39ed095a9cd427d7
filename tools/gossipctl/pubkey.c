/* gossipctl pubkey: the public key of a private key (see subcommands.h). */
#include <errno.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "admit.h"
#include "key.h"
#include "keyio.h"
#include "member.h"
#include "subcommands.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s pubkey [--signing | --ca] < private.key\n\n"
		"Reads a base64 private key from stdin and writes its public key, in\n"
		"base64, to stdout.  The input is the key's 44 characters and at most\n"
		"one newline; anything else is refused.\n\n"
		"  --signing  the node's member signing key (Ed25519, derived from its\n"
		"             X25519 private key), for cert-issue --signing-key\n"
		"  --ca       the public key of an authority key from ca-genkey, for\n"
		"             cert-show --ca\n",
		PROG_NAME);
}

enum { PUB_NODE, PUB_SIGNING, PUB_CA };

int pubkey_main(int argc, const char *argv[])
{
	uint8_t priv[GSP_KEY_BYTES], pub[GSP_KEY_BYTES];
	uint8_t sk[GSP_SIGN_SECRET_BYTES];
	char out[GSP_KEY_BASE64_LEN + 2];
	gsp_keypair kp;
	int r, which = PUB_NODE, rc = GCTL_EXIT_FAILURE;

	if (argc == 2 && gctl_is_help(argv[1])) {
		usage(stdout);
		return GCTL_EXIT_OK;
	}
	if (argc == 2 && !strcmp(argv[1], "--signing"))
		which = PUB_SIGNING;
	else if (argc == 2 && !strcmp(argv[1], "--ca"))
		which = PUB_CA;
	else if (argc != 1)
		return gctl_usage_error("pubkey", "unexpected argument", argv[1]);
	if (sodium_init() < 0) {
		fprintf(stderr, "%s: pubkey: cannot initialise libsodium\n", PROG_NAME);
		return GCTL_EXIT_FAILURE;
	}

	r = gctl_read_key_file("-", priv);
	if (r == -EINVAL) {
		fprintf(stderr, "%s: pubkey: stdin does not hold a private key (%d "
			"base64 characters and at most one newline)\n", PROG_NAME,
			GSP_KEY_BASE64_LEN);
		goto out;
	}
	if (r < 0) {
		fprintf(stderr, "%s: pubkey: cannot read stdin: %s\n", PROG_NAME,
			strerror(-r));
		goto out;
	}
	if (which == PUB_CA) {
		gsp_sign_keypair_from_seed(priv, pub, sk);
	} else if (gsp_keypair_from_private(priv, &kp) < 0) {
		fprintf(stderr, "%s: pubkey: cannot derive the public key\n", PROG_NAME);
		goto out;
	} else if (which == PUB_SIGNING) {
		gsp_member_signing_key(kp.priv, pub, sk);
	} else {
		memcpy(pub, kp.pub, GSP_KEY_BYTES);
	}
	gsp_key_to_base64(pub, out);
	out[GSP_KEY_BASE64_LEN] = '\n';
	r = gctl_write_all(STDOUT_FILENO, out, GSP_KEY_BASE64_LEN + 1);
	if (r < 0) {
		fprintf(stderr, "%s: pubkey: cannot write to stdout: %s\n", PROG_NAME,
			strerror(-r));
		goto out;
	}
	rc = GCTL_EXIT_OK;
out:
	sodium_memzero(priv, sizeof(priv));
	sodium_memzero(sk, sizeof(sk));
	sodium_memzero(&kp, sizeof(kp));
	return rc;
}
