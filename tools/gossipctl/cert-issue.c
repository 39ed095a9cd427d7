/* gossipctl cert-issue: a member certificate signed by the authority (see
 * subcommands.h and proto/cert.h). */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cert.h"
#include "cli.h"
#include "keyio.h"
#include "subcommands.h"

#define DAYS_DEFAULT 365
#define DAYS_MAX 36500

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s cert-issue --ca KEYFILE --name NAME --pubkey KEY\n"
		"                  --signing-key KEY [--days N | --seconds N]\n\n"
		"Signs a member certificate with the authority key in KEYFILE (from\n"
		"ca-genkey) and writes its text, one base64 line, to stdout.  It binds\n"
		"the node's public key (KEY, from pubkey) and its member signing key\n"
		"(from pubkey --signing) to NAME, from now for N days (default %d,\n"
		"at most %d), or N seconds (--seconds, 1 to the same bound: short-lived\n"
		"certificates).  NAME is 1 to %d characters of A-Z a-z 0-9 . _ -\n\n"
		"  %s cert-issue --ca ca.key --name node-1 \\\n"
		"      --pubkey \"$(%s pubkey < node.key)\" \\\n"
		"      --signing-key \"$(%s pubkey --signing < node.key)\" > node.cert\n",
		PROG_NAME, DAYS_DEFAULT, DAYS_MAX, GSP_CERT_NAME_MAX, PROG_NAME,
		PROG_NAME, PROG_NAME);
}

/* Decodes the text of a public key option into key. */
static int key_arg(const char *what, const char *text, uint8_t *key)
{
	if (gsp_key_from_base64(text, key) < 0)
		return gctl_usage_error("cert-issue", what, text);
	return 0;
}

int cert_issue_main(int argc, const char *argv[])
{
	const char *ca = NULL, *name = NULL, *pub = NULL, *signing = NULL, *days = NULL;
	const char *seconds = NULL;
	uint8_t sk[GSP_SIGN_SECRET_BYTES];
	char text[GSP_CERT_TEXT_MAX + 2];
	unsigned long long n_days = DAYS_DEFAULT, n_seconds = 0;
	gsp_cert cert;
	size_t len;
	int r;

	for (int i = 1; i < argc;) {
		if (gctl_is_help(argv[i])) {
			usage(stdout);
			return GCTL_EXIT_OK;
		}
		r = gctl_option(argc, argv, &i, "cert-issue", "--ca", &ca);
		if (r == 0)
			r = gctl_option(argc, argv, &i, "cert-issue", "--name", &name);
		if (r == 0)
			r = gctl_option(argc, argv, &i, "cert-issue", "--pubkey", &pub);
		if (r == 0)
			r = gctl_option(argc, argv, &i, "cert-issue", "--signing-key", &signing);
		if (r == 0)
			r = gctl_option(argc, argv, &i, "cert-issue", "--days", &days);
		if (r == 0)
			r = gctl_option(argc, argv, &i, "cert-issue", "--seconds", &seconds);
		if (r < 0)
			return GCTL_EXIT_USAGE;
		if (r == 0)
			return gctl_usage_error("cert-issue", "unknown argument", argv[i]);
	}
	if (!ca || !name || !pub || !signing)
		return gctl_usage_error("cert-issue", "--ca, --name, --pubkey and "
					"--signing-key are required", NULL);
	if (sodium_init() < 0) {
		fprintf(stderr, "%s: cert-issue: cannot initialise libsodium\n", PROG_NAME);
		return GCTL_EXIT_FAILURE;
	}
	memset(&cert, 0, sizeof(cert));
	cert.version = GSP_CERT_VERSION;
	if (days && (gsp_cli_uint(days, DAYS_MAX, &n_days) < 0 || n_days == 0))
		return gctl_usage_error("cert-issue", "--days needs a number of days "
					"from 1 to 36500", days);
	if (days && seconds)
		return gctl_usage_error("cert-issue", "--days and --seconds exclude "
					"each other", NULL);
	if (seconds && (gsp_cli_uint(seconds, DAYS_MAX * 86400ull, &n_seconds) < 0 ||
			n_seconds == 0))
		return gctl_usage_error("cert-issue", "--seconds needs a number of "
					"seconds from 1 to 3153600000", seconds);
	len = strlen(name);
	if (len > GSP_CERT_NAME_MAX)
		return gctl_usage_error("cert-issue", "--name is too long", name);
	cert.name_len = (uint8_t)len;
	memcpy(cert.name, name, len);
	r = gsp_cert_check(&cert);
	if (r == GSP_ADM_ENAMECHAR)
		return gctl_usage_error("cert-issue", "--name has a character outside "
					"A-Z a-z 0-9 . _ -", name);
	if (key_arg("--pubkey is not a key", pub, cert.node_key) ||
	    key_arg("--signing-key is not a key", signing, cert.sign_key))
		return GCTL_EXIT_USAGE;
	cert.not_before = (uint64_t)time(NULL);
	cert.not_after = cert.not_before + (seconds ? n_seconds : n_days * 86400);

	if (gctl_read_ca_key("cert-issue", ca, sk) < 0)
		return GCTL_EXIT_FAILURE;
	r = gsp_cert_sign(&cert, sk);
	sodium_memzero(sk, sizeof(sk));
	if (r == 0)
		r = gsp_cert_to_text(&cert, text, sizeof(text));
	if (r < 0) {
		fprintf(stderr, "%s: cert-issue: cannot sign: %s\n", PROG_NAME,
			gsp_admit_strerror(r));
		return GCTL_EXIT_FAILURE;
	}
	len = strlen(text);
	text[len++] = '\n';
	r = gctl_write_all(STDOUT_FILENO, text, len);
	if (r < 0) {
		fprintf(stderr, "%s: cert-issue: cannot write to stdout: %s\n",
			PROG_NAME, strerror(-r));
		return GCTL_EXIT_FAILURE;
	}
	return GCTL_EXIT_OK;
}
