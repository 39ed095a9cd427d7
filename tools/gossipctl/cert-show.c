/* gossipctl cert-show: a member certificate's fields, and its verdict
 * under an authority (see subcommands.h and proto/cert.h). */
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cert.h"
#include "cli.h"
#include "keyio.h"
#include "revoke.h"
#include "subcommands.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s cert-show [--ca PUBKEY [--revoked FILE] [--now SECONDS]]\n"
		"                 CERTFILE | -\n\n"
		"Prints the fields of the member certificate in CERTFILE (or on\n"
		"stdin for -), as cert-issue wrote it.  With --ca, the authority's\n"
		"public key (from pubkey --ca), also verifies it: the authority's\n"
		"signature, the validity interval at the current time (or at the unix\n"
		"time SECONDS) and, with --revoked, the revocation list in FILE (from\n"
		"revoke, signed by the same authority).  Exits 1 with the reason when\n"
		"the file does not hold a certificate or the certificate is not valid.\n",
		PROG_NAME);
}

static void show_time(const char *label, uint64_t t)
{
	char buf[64];
	struct tm tm;
	time_t tt = (time_t)t;

	if ((uint64_t)tt == t && gmtime_r(&tt, &tm) &&
	    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm))
		printf("%-12s %s (%" PRIu64 ")\n", label, buf, t);
	else
		printf("%-12s %" PRIu64 "\n", label, t);
}

static void show_key(const char *label, const uint8_t key[static GSP_KEY_BYTES])
{
	char b64[GSP_KEY_BASE64_LEN + 1];

	gsp_key_to_base64(key, b64);
	printf("%-12s %s\n", label, b64);
}

/* Reads and checks the revocation list at path: 0, or an exit code after
 * a message. */
static int load_revoked(const char *path, const uint8_t ca[static GSP_SIGN_PUBLIC_BYTES],
			gsp_revoke *ret)
{
	size_t cap = GSP_REVOKE_TEXT_MAX + 2;
	char *text = malloc(cap);
	long n;
	int r;

	if (!text) {
		fprintf(stderr, "%s: cert-show: out of memory\n", PROG_NAME);
		return GCTL_EXIT_FAILURE;
	}
	n = gctl_read_text_file(path, text, cap);
	if (n == -EMSGSIZE)
		r = GSP_ADM_ETRAILING;
	else if (n < 0)
		r = (int)n;
	else
		r = gsp_revoke_from_text(text, (size_t)n, ret);
	free(text);
	if (r < 0) {
		fprintf(stderr, "%s: cert-show: %s: not a revocation list: %s\n",
			PROG_NAME, path, gsp_admit_strerror(r));
		return GCTL_EXIT_FAILURE;
	}
	if (gsp_revoke_verify(ret, ca) < 0) {
		fprintf(stderr, "%s: cert-show: %s: the revocation list is not "
			"signed by the authority\n", PROG_NAME, path);
		gsp_revoke_clear(ret);
		return GCTL_EXIT_FAILURE;
	}
	return 0;
}

int cert_show_main(int argc, const char *argv[])
{
	const char *file = NULL, *ca_text = NULL, *revoked = NULL, *now_text = NULL;
	char text[GSP_CERT_TEXT_MAX + 1];
	uint8_t ca[GSP_SIGN_PUBLIC_BYTES];
	unsigned long long now = (unsigned long long)time(NULL);
	gsp_revoke list = { 0 };
	gsp_cert cert;
	long n;
	int r;

	for (int i = 1; i < argc;) {
		if (gctl_is_help(argv[i])) {
			usage(stdout);
			return GCTL_EXIT_OK;
		}
		r = gctl_option(argc, argv, &i, "cert-show", "--ca", &ca_text);
		if (r == 0)
			r = gctl_option(argc, argv, &i, "cert-show", "--revoked", &revoked);
		if (r == 0)
			r = gctl_option(argc, argv, &i, "cert-show", "--now", &now_text);
		if (r < 0)
			return GCTL_EXIT_USAGE;
		if (r == 1)
			continue;
		if (file || (argv[i][0] == '-' && argv[i][1]))
			return gctl_usage_error("cert-show", "unexpected argument", argv[i]);
		file = argv[i++];
	}
	if (!file)
		return gctl_usage_error("cert-show", "a certificate file (or -) is required", NULL);
	if ((revoked || now_text) && !ca_text)
		return gctl_usage_error("cert-show", "--revoked and --now need --ca", NULL);
	if (ca_text && gsp_key_from_base64(ca_text, ca) < 0)
		return gctl_usage_error("cert-show", "--ca is not a public key", ca_text);
	if (now_text && gsp_cli_uint(now_text, UINT64_MAX, &now) < 0)
		return gctl_usage_error("cert-show", "--now needs unix seconds", now_text);
	if (sodium_init() < 0) {
		fprintf(stderr, "%s: cert-show: cannot initialise libsodium\n", PROG_NAME);
		return GCTL_EXIT_FAILURE;
	}

	n = gctl_read_text_file(file, text, sizeof(text));
	if (n < 0 && n != -EMSGSIZE) {
		fprintf(stderr, "%s: cert-show: cannot read %s: %s\n", PROG_NAME,
			file, strerror((int)-n));
		return GCTL_EXIT_FAILURE;
	}
	r = n < 0 ? GSP_ADM_ETRAILING : gsp_cert_from_text(text, (size_t)n, &cert);
	if (r < 0) {
		fprintf(stderr, "%s: cert-show: %s: not a certificate: %s\n",
			PROG_NAME, file, gsp_admit_strerror(r));
		return GCTL_EXIT_FAILURE;
	}
	printf("%-12s %u\n", "version:", cert.version);
	printf("%-12s %s\n", "name:", cert.name);
	show_key("node key:", cert.node_key);
	show_key("signing key:", cert.sign_key);
	show_time("not before:", cert.not_before);
	show_time("expires:", cert.not_after);
	show_key("authority:", cert.authority);
	if (!ca_text)
		return GCTL_EXIT_OK;

	if (revoked) {
		r = load_revoked(revoked, ca, &list);
		if (r)
			return r;
		printf("%-12s serial %" PRIu64 ", %" PRIu32 " keys\n", "revoked:",
		       list.serial, list.count);
	}
	r = gsp_cert_verify(&cert, ca, now, revoked ? &list : NULL);
	gsp_revoke_clear(&list);
	if (r < 0) {
		fprintf(stderr, "%s: cert-show: %s: not valid: %s\n", PROG_NAME,
			file, gsp_admit_strerror(r));
		return GCTL_EXIT_FAILURE;
	}
	printf("%-12s yes\n", "valid:");
	return GCTL_EXIT_OK;
}
