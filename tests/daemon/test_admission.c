/* admission (daemon/admission.h): the verdict on every kind of
 * certificate a peer may present, each refusal counted under its own
 * reason, and what gossipd refuses to start with: a Certificate of
 * another key or authority, an expired one, a revocation list that the
 * Authority did not sign.  Certificates from libsodium keys made here
 * (certtest.h), read from files as gossipd reads them. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "certtest.h"
#include "testutil.h"

static char dir[] = "/tmp/gsp-admission-XXXXXX";
static char cert_path[64], revoked_path[64];
static ca authority, other;
static gsp_keypair us, them;
static counters c;
static gsp_daemon_config cfg;

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cert_path, sizeof(cert_path), "%s/node.cert", dir);
	snprintf(revoked_path, sizeof(revoked_path), "%s/revoked", dir);
	ca_make(&authority, 0x31);
	ca_make(&other, 0x32);
	gsp_keypair_generate(&us);
	gsp_keypair_generate(&them);
	memset(&c, 0, sizeof(c));
	gsp_daemon_config_default(&cfg);
}

static void teardown(void)
{
	unlink(cert_path);
	unlink(revoked_path);
	rmdir(dir);
	strcpy(dir, "/tmp/gsp-admission-XXXXXX");
}

/* Our own certificate, valid for a year, and the admission over it. */
static void admission_up(admission *a, const char *revoked)
{
	uint8_t cert[GSP_CERT_MAX];
	char err[512];
	uint64_t now = cert_now();
	size_t len = cert_make(&authority, us.pub, "us", now - 60, now + 365 * 86400, cert);
	cert_write(cert_path, cert, len);
	cluster_cfg(&cfg, &authority, cert_path, revoked);
	ck_assert_msg(admission_init(a, &cfg, us.pub, &c, now, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert(a->enabled);
	ck_assert_uint_eq(a->cert_len, len);
	ck_assert_mem_eq(a->cert, cert, len);
}

START_TEST(test_every_verdict)
{
	admission a;
	uint8_t key[1][GSP_KEY_BYTES], cert[GSP_CERT_MAX], named[GSP_KEY_BYTES];
	char name[GSP_CERT_NAME_MAX + 1];
	uint64_t now = cert_now();
	gsp_keypair revoked_key;
	gsp_keypair_generate(&revoked_key);
	memcpy(key[0], revoked_key.pub, GSP_KEY_BYTES);
	revoke_write(&authority, 1, key, 1, revoked_path);
	admission_up(&a, revoked_path);

	size_t n = cert_make(&authority, them.pub, "them", now - 60, now + 3600, cert);
	ck_assert_int_eq(admission_check(&a, them.pub, cert, n, now, name), ADMIT_OK);
	ck_assert_str_eq(name, "them");
	ck_assert_int_eq(admission_learn(&a, cert, n, now, named, name), ADMIT_OK);
	ck_assert_mem_eq(named, them.pub, GSP_KEY_BYTES);
	/* The same certificate presented by another key. */
	ck_assert_int_eq(admission_check(&a, revoked_key.pub, cert, n, now, name),
			 ADMIT_OTHER_KEY);
	/* Past its interval, before it, at its last second and its end. */
	ck_assert_int_eq(admission_check(&a, them.pub, cert, n, now + 3600, name),
			 ADMIT_EXPIRED);
	ck_assert_int_eq(admission_check(&a, them.pub, cert, n, now + 3599, name),
			 ADMIT_OK);
	ck_assert_int_eq(admission_check(&a, them.pub, cert, n, now - 61, name),
			 ADMIT_NOT_YET);
	/* Another authority's, and one byte changed. */
	n = cert_make(&other, them.pub, "them", now - 60, now + 3600, cert);
	ck_assert_int_eq(admission_check(&a, them.pub, cert, n, now, name), ADMIT_FOREIGN);
	n = cert_make(&authority, them.pub, "them", now - 60, now + 3600, cert);
	cert[n - 1] ^= 1;
	ck_assert_int_eq(admission_check(&a, them.pub, cert, n, now, name), ADMIT_FOREIGN);
	/* Revoked, missing, malformed, and one naming us. */
	n = cert_make(&authority, revoked_key.pub, "gone", now - 60, now + 3600, cert);
	ck_assert_int_eq(admission_check(&a, revoked_key.pub, cert, n, now, name),
			 ADMIT_REVOKED);
	ck_assert(admission_revoked(&a, revoked_key.pub));
	ck_assert(!admission_revoked(&a, them.pub));
	ck_assert_int_eq(admission_check(&a, them.pub, cert, 0, now, name), ADMIT_MISSING);
	ck_assert_int_eq(admission_check(&a, them.pub, cert, n - 1, now, name),
			 ADMIT_MALFORMED);
	n = cert_make(&authority, us.pub, "us", now - 60, now + 3600, cert);
	ck_assert_int_eq(admission_learn(&a, cert, n, now, named, name), ADMIT_SELF);

	/* Each refusal counts under its own reason, once. */
	const admit_verdict v[] = {ADMIT_MISSING, ADMIT_MALFORMED, ADMIT_FOREIGN,
				   ADMIT_EXPIRED, ADMIT_NOT_YET, ADMIT_REVOKED,
				   ADMIT_OTHER_KEY, ADMIT_SELF};
	uint64_t *field[] = {&c.hs_cert_missing, &c.hs_cert_malformed,
			     &c.hs_cert_foreign, &c.hs_cert_expired,
			     &c.hs_cert_not_yet, &c.hs_cert_revoked,
			     &c.hs_cert_other_key, &c.hs_cert_self};
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		ck_assert_ptr_nonnull(admission_refused(&a, v[i]));
		for (size_t j = 0; j < sizeof(v) / sizeof(*v); j++)
			ck_assert_uint_eq(*field[j], j <= i);
	}
	ck_assert_uint_eq(c.hs_refused, 0);
	admission_free(&a);
}
END_TEST

/* Without an Authority: the allowlist alone, and no certificate sent. */
START_TEST(test_no_authority)
{
	admission a;
	uint8_t cert[GSP_CERT_MAX], named[GSP_KEY_BYTES];
	char err[256], name[GSP_CERT_NAME_MAX + 1];
	ck_assert_int_eq(admission_init(&a, &cfg, us.pub, &c, cert_now(), err,
					sizeof(err)), 0);
	ck_assert(!a.enabled);
	ck_assert_uint_eq(a.cert_len, 0);
	size_t n = cert_make(&authority, them.pub, "them", 0, cert_now() + 60, cert);
	ck_assert_int_eq(admission_learn(&a, cert, n, cert_now(), named, name),
			 ADMIT_NO_AUTHORITY);
	admission_refused(&a, ADMIT_NO_AUTHORITY);
	ck_assert_uint_eq(c.hs_refused, 1);
	admission_free(&a);
}
END_TEST

/* What gossipd does not start with, each with a reason that says so. */
static void refused_at_start(const char *why)
{
	admission a;
	char err[512] = "";
	ck_assert_int_ne(admission_init(&a, &cfg, us.pub, &c, cert_now(), err,
					sizeof(err)), 0);
	ck_assert_msg(strstr(err, why), "'%s' lacks '%s'", err, why);
}

START_TEST(test_start_refusals)
{
	uint8_t cert[GSP_CERT_MAX], key[1][GSP_KEY_BYTES];
	uint64_t now = cert_now();
	cluster_cfg(&cfg, &authority, cert_path, NULL);
	refused_at_start("No such file");
	cert_write(cert_path, cert, cert_make(&authority, them.pub, "x", now - 1, now + 99, cert));
	refused_at_start("names another key");
	cert_write(cert_path, cert, cert_make(&other, us.pub, "x", now - 1, now + 99, cert));
	refused_at_start("does not verify");
	cert_write(cert_path, cert, cert_make(&authority, us.pub, "x", now - 99, now - 1, cert));
	refused_at_start("does not verify");
	FILE *f = fopen(cert_path, "w");
	fputs("not base64 at all\n", f);
	fclose(f);
	refused_at_start("Certificate");
	/* A list of another authority, and our own key revoked. */
	cert_write(cert_path, cert, cert_make(&authority, us.pub, "x", now - 1, now + 99, cert));
	memcpy(key[0], us.pub, GSP_KEY_BYTES);
	revoke_write(&other, 1, key, 1, revoked_path);
	cluster_cfg(&cfg, &authority, cert_path, revoked_path);
	refused_at_start("not signed by the Authority");
	revoke_write(&authority, 1, key, 1, revoked_path);
	refused_at_start("does not verify");
}
END_TEST

/* SIGHUP: a newer list replaces the old; a bad or older one does not. */
START_TEST(test_reload)
{
	admission a;
	uint8_t key[1][GSP_KEY_BYTES];
	revoke_write(&authority, 5, NULL, 0, revoked_path);
	admission_up(&a, revoked_path);
	ck_assert(!admission_revoked(&a, them.pub));
	memcpy(key[0], them.pub, GSP_KEY_BYTES);
	revoke_write(&authority, 4, key, 1, revoked_path);
	admission_reload(&a);
	ck_assert(!admission_revoked(&a, them.pub));     /* older serial */
	revoke_write(&other, 6, key, 1, revoked_path);
	admission_reload(&a);
	ck_assert(!admission_revoked(&a, them.pub));     /* not ours */
	revoke_write(&authority, 6, key, 1, revoked_path);
	admission_reload(&a);
	ck_assert(admission_revoked(&a, them.pub));
	admission_free(&a);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	Suite *s = suite_create("daemon-admission");
	TCase *tc = tcase_create("admission");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_every_verdict);
	tcase_add_test(tc, test_no_authority);
	tcase_add_test(tc, test_start_refusals);
	tcase_add_test(tc, test_reload);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
