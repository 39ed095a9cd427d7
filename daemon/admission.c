/* admission: the authority, our certificate, the revocation list and the
 * verdict on a peer's certificate (admission.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "admission.h"
#include "file.h"
#include "log.h"

/* A one-line text file: its text without the trailing newline (and
 * carriage return), in a new buffer. */
static int read_line(const char *path, size_t max, char **ret, size_t *ret_len)
{
	uint8_t *buf;
	size_t n;
	int err = file_read(path, max, &buf, &n);
	if (err)
		return err;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	*ret = (char *)buf;
	*ret_len = n;
	return 0;
}

/* The revocation list at path, signed by a's authority, into *ret. */
static int load_revoked(const admission *a, const char *path, gsp_revoke *ret,
			char *err, size_t err_len)
{
	char *text;
	size_t n;
	int rc = read_line(path, GSP_REVOKE_TEXT_MAX + 2, &text, &n);
	if (rc) {
		snprintf(err, err_len, "RevocationList %s: %s", path, gsp_strerror(rc));
		return rc;
	}
	rc = gsp_revoke_from_text(text, n, ret);
	free(text);
	if (!rc && (rc = gsp_revoke_verify(ret, a->authority)) != 0)
		gsp_revoke_clear(ret);
	if (rc)
		snprintf(err, err_len, "RevocationList %s: %s", path,
			 rc == -EKEYREJECTED ? "not signed by the Authority"
					     : gsp_admit_strerror(rc));
	return rc;
}

/* Our certificate: decodes, names our key, verifies now. */
static int load_own(admission *a, const char *path, uint64_t now, char *err,
		    size_t err_len)
{
	char *text;
	size_t n;
	int rc = read_line(path, GSP_CERT_TEXT_MAX + 2, &text, &n);
	if (rc) {
		snprintf(err, err_len, "Certificate %s: %s", path, gsp_strerror(rc));
		return rc;
	}
	rc = gsp_cert_from_text(text, n, &a->own);
	free(text);
	if (rc) {
		snprintf(err, err_len, "Certificate %s: %s", path, gsp_admit_strerror(rc));
		return -EINVAL;
	}
	if (sodium_memcmp(a->own.node_key, a->own_key, GSP_KEY_BYTES) != 0) {
		snprintf(err, err_len, "Certificate %s names another key than this "
			 "node's (issued for another node?)", path);
		return -EINVAL;
	}
	rc = gsp_cert_verify(&a->own, a->authority, now,
			     a->revoked.count ? &a->revoked : NULL);
	if (rc) {
		snprintf(err, err_len, "Certificate %s does not verify against the "
			 "Authority: %s", path, gsp_admit_strerror(rc));
		return -EINVAL;
	}
	if (gsp_cert_encode(&a->own, a->cert, sizeof(a->cert), &a->cert_len) != 0)
		return -EINVAL;
	if (a->own.not_after - now < 86400)
		gsp_warn("Certificate %s expires in %llu s: issue a new one "
			 "(gossipctl cert-issue) and restart", path,
			 (unsigned long long)(a->own.not_after - now));
	return 0;
}

int admission_init(admission *a, const gsp_daemon_config *cfg,
		   const uint8_t own_key[GSP_KEY_BYTES], counters *c,
		   uint64_t now, char *err, size_t err_len)
{
	memset(a, 0, sizeof(*a));
	a->counters = c;
	memcpy(a->own_key, own_key, GSP_KEY_BYTES);
	if (!cfg->cluster.have_authority)
		return 0;
	a->enabled = true;
	memcpy(a->authority, cfg->cluster.authority, sizeof(a->authority));
	int rc = 0;
	if (cfg->cluster.revocation_list[0]) {
		snprintf(a->revoked_path, sizeof(a->revoked_path), "%s",
			 cfg->cluster.revocation_list);
		rc = load_revoked(a, a->revoked_path, &a->revoked, err, err_len);
	}
	if (!rc && cfg->cluster.certificate[0])
		rc = load_own(a, cfg->cluster.certificate, now, err, err_len);
	if (rc)
		admission_free(a);
	return rc;
}

void admission_free(admission *a)
{
	gsp_revoke_clear(&a->revoked);
}

void admission_reload(admission *a)
{
	char err[GSP_PATH_MAX + 128];
	gsp_revoke list = {0};
	if (!a->enabled || !a->revoked_path[0])
		return;
	if (load_revoked(a, a->revoked_path, &list, err, sizeof(err)) != 0) {
		gsp_err("reload: %s (the list read before stays)", err);
		return;
	}
	if (list.serial < a->revoked.serial) {
		gsp_err("reload: RevocationList %s: serial %llu is older than %llu "
			"(the newer stays)", a->revoked_path,
			(unsigned long long)list.serial,
			(unsigned long long)a->revoked.serial);
		gsp_revoke_clear(&list);
		return;
	}
	gsp_revoke_clear(&a->revoked);
	a->revoked = list;
	gsp_info("reload: RevocationList %s: serial %llu, %u keys", a->revoked_path,
		 (unsigned long long)list.serial, list.count);
}

bool admission_revoked(const admission *a, const uint8_t key[GSP_KEY_BYTES])
{
	return a->enabled && a->revoked.count && gsp_revoke_contains(&a->revoked, key);
}

/* The verdict on a decoded certificate's authority, time and list. */
static admit_verdict verify(const admission *a, const gsp_cert *cert, uint64_t now)
{
	switch (gsp_cert_verify(cert, a->authority, now,
				a->revoked.count ? &a->revoked : NULL)) {
	case 0:
		return ADMIT_OK;
	case -EKEYEXPIRED:
		return ADMIT_EXPIRED;
	case GSP_ADM_ENOTYET:
		return ADMIT_NOT_YET;
	case -EKEYREVOKED:
		return ADMIT_REVOKED;
	default:
		return ADMIT_FOREIGN;
	}
}

admit_verdict admission_learn(const admission *a, const uint8_t *cert,
			      size_t len, uint64_t now,
			      uint8_t ret_key[GSP_KEY_BYTES],
			      char name[GSP_CERT_NAME_MAX + 1])
{
	gsp_cert c;
	if (!a->enabled)
		return ADMIT_NO_AUTHORITY;
	if (!len)
		return ADMIT_MISSING;
	if (gsp_cert_decode(cert, len, &c) != 0)
		return ADMIT_MALFORMED;
	admit_verdict v = verify(a, &c, now);
	if (v == ADMIT_OK && !sodium_memcmp(c.node_key, a->own_key, GSP_KEY_BYTES))
		v = ADMIT_SELF;
	if (v != ADMIT_OK)
		return v;
	memcpy(ret_key, c.node_key, GSP_KEY_BYTES);
	memcpy(name, c.name, sizeof(c.name));
	return ADMIT_OK;
}

admit_verdict admission_check(const admission *a,
			      const uint8_t key[GSP_KEY_BYTES],
			      const uint8_t *cert, size_t len, uint64_t now,
			      char name[GSP_CERT_NAME_MAX + 1])
{
	uint8_t named[GSP_KEY_BYTES];
	admit_verdict v = admission_learn(a, cert, len, now, named, name);
	if (v == ADMIT_OK && sodium_memcmp(named, key, GSP_KEY_BYTES) != 0)
		return ADMIT_OTHER_KEY;
	return v;
}

const char *admission_refused(admission *a, admit_verdict v)
{
	counters *c = a->counters;
	switch (v) {
	case ADMIT_OK:
		return "admitted";
	case ADMIT_NO_AUTHORITY:
		c->hs_refused++;
		return "its key is not a configured peer";
	case ADMIT_MISSING:
		c->hs_cert_missing++;
		return "its key is not a configured peer and it has no certificate";
	case ADMIT_MALFORMED:
		c->hs_cert_malformed++;
		return "its certificate does not decode";
	case ADMIT_FOREIGN:
		c->hs_cert_foreign++;
		return "its certificate is not signed by our Authority";
	case ADMIT_EXPIRED:
		c->hs_cert_expired++;
		return "its certificate has expired";
	case ADMIT_NOT_YET:
		c->hs_cert_not_yet++;
		return "its certificate is not valid yet";
	case ADMIT_REVOKED:
		c->hs_cert_revoked++;
		return "its key is on the revocation list";
	case ADMIT_OTHER_KEY:
		c->hs_cert_other_key++;
		return "its certificate names another key";
	case ADMIT_SELF:
		c->hs_cert_self++;
		return "its certificate names this node's own key";
	}
	return "refused";
}
