/* Certificates for the admission tests (daemon/admission.h): a cluster
 * authority from a seed byte, certificates it (or another) signs for a
 * key over a chosen interval, written as gossipctl writes them (one
 * base64 line), and an admission built from them as gossipd builds its
 * own (admission_init over [Cluster] keys).  Header-only. */
#ifndef GSP_TEST_CERTTEST_H
#define GSP_TEST_CERTTEST_H

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "admission.h"
#include "cert.h"
#include "revoke.h"

typedef struct ca {
	uint8_t pk[GSP_SIGN_PUBLIC_BYTES], sk[GSP_SIGN_SECRET_BYTES];
} ca;

static inline void ca_make(ca *c, uint8_t fill)
{
	uint8_t seed[GSP_SIGN_SEED_BYTES];
	memset(seed, fill, sizeof(seed));
	gsp_sign_keypair_from_seed(seed, c->pk, c->sk);
}

static inline uint64_t cert_now(void)
{
	return (uint64_t)time(NULL);
}

/* A certificate of c for key named name, valid [from, until), encoded
 * into buf; returns its length. */
static inline size_t cert_make(const ca *c, const uint8_t key[GSP_KEY_BYTES],
			       const char *name, uint64_t from, uint64_t until,
			       uint8_t buf[GSP_CERT_MAX])
{
	gsp_cert cert = {.version = GSP_CERT_VERSION, .not_before = from,
			 .not_after = until};
	size_t len;
	memcpy(cert.node_key, key, GSP_KEY_BYTES);
	memset(cert.sign_key, 0x5c, sizeof(cert.sign_key));
	cert.name_len = (uint8_t)strlen(name);
	memcpy(cert.name, name, cert.name_len);
	ck_assert_int_eq(gsp_cert_sign(&cert, c->sk), 0);
	ck_assert_int_eq(gsp_cert_encode(&cert, buf, GSP_CERT_MAX, &len), 0);
	return len;
}

/* The text of cert[0..len) into path, newline-terminated. */
static inline void cert_write(const char *path, const uint8_t *cert, size_t len)
{
	gsp_cert c;
	char text[GSP_CERT_TEXT_MAX + 1];
	ck_assert_int_eq(gsp_cert_decode(cert, len, &c), 0);
	ck_assert_int_eq(gsp_cert_to_text(&c, text, sizeof(text)), 0);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", text);
	fclose(f);
}

/* A revocation list of c holding keys[0..n) (ascending) into path. */
static inline void revoke_write(const ca *c, uint64_t serial,
				uint8_t (*keys)[GSP_KEY_BYTES], uint32_t n,
				const char *path)
{
	static char text[GSP_REVOKE_TEXT_MAX + 1];
	gsp_revoke list = {.version = GSP_REVOKE_VERSION, .serial = serial,
			   .count = n, .keys = keys};
	ck_assert_int_eq(gsp_revoke_sign(&list, c->sk), 0);
	ck_assert_int_eq(gsp_revoke_to_text(&list, text, sizeof(text)), 0);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", text);
	fclose(f);
}

/* [Cluster] Authority = c, Certificate = cert_path ("" or NULL: none),
 * RevocationList = revoked ("" or NULL: none) into cfg. */
static inline void cluster_cfg(gsp_daemon_config *cfg, const ca *c,
			       const char *cert_path, const char *revoked)
{
	cfg->cluster.have_authority = true;
	memcpy(cfg->cluster.authority, c->pk, GSP_SIGN_PUBLIC_BYTES);
	snprintf(cfg->cluster.certificate, sizeof(cfg->cluster.certificate), "%s",
		 cert_path ? cert_path : "");
	snprintf(cfg->cluster.revocation_list, sizeof(cfg->cluster.revocation_list),
		 "%s", revoked ? revoked : "");
}

#endif
