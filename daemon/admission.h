/*
 * admission: who may join by certificate (issue 36, "Admission";
 * PROTOCOL.md 4.2).  It owns the cluster authority's public key, this
 * node's own certificate (checked at start: it must name our key and
 * verify), the revocation list (its signature checked at every load;
 * re-read at SIGHUP), the verdict on a certificate a peer presents, and
 * the counters of refusals by reason.  It does no I/O on the network and
 * knows nothing of peers or links: they ask it.
 */
#ifndef GOSSIPD_ADMISSION_H
#define GOSSIPD_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cert.h"
#include "config.h"
#include "counters.h"
#include "revoke.h"

/* A certificate's verdict: ADMIT_OK, or why it is refused. */
typedef enum admit_verdict {
	ADMIT_OK = 0,
	ADMIT_NO_AUTHORITY,     /* no Authority configured: the allowlist only */
	ADMIT_MISSING,          /* none carried */
	ADMIT_MALFORMED,        /* does not decode */
	ADMIT_FOREIGN,          /* another authority, or a bad signature */
	ADMIT_EXPIRED,
	ADMIT_NOT_YET,
	ADMIT_REVOKED,
	ADMIT_OTHER_KEY,        /* it names a key other than the peer's */
	ADMIT_SELF,             /* it names our own key */
} admit_verdict;

typedef struct admission {
	bool enabled;                         /* Authority is set */
	uint8_t authority[GSP_SIGN_PUBLIC_BYTES];
	uint8_t own_key[GSP_KEY_BYTES];
	uint8_t cert[GSP_CERT_MAX];           /* ours, as sent; cert_len 0: none */
	size_t cert_len;
	gsp_cert own;                         /* decoded */
	gsp_revoke revoked;                   /* count 0 without a list */
	char revoked_path[GSP_PATH_MAX];      /* "": none */
	counters *counters;
} admission;

/* From cfg's [Cluster] keys: Authority, our Certificate (it must name
 * own_key and verify at now; a warning when it expires within a day)
 * and the RevocationList.  0, or a negative errno with the reason in
 * err.  Without Authority, an empty admission (enabled false). */
int admission_init(admission *a, const gsp_daemon_config *cfg,
		   const uint8_t own_key[GSP_KEY_BYTES], counters *c,
		   uint64_t now, char *err, size_t err_len);
void admission_free(admission *a);
/* SIGHUP: reads the revocation list again; on failure the one loaded
 * before stays (logged). */
void admission_reload(admission *a);

/* The verdict on cert[0..len) presented by key at unix time now (len 0:
 * none); on ADMIT_OK, its name into name[0..GSP_CERT_NAME_MAX + 1). */
admit_verdict admission_check(const admission *a,
			      const uint8_t key[GSP_KEY_BYTES],
			      const uint8_t *cert, size_t len, uint64_t now,
			      char name[GSP_CERT_NAME_MAX + 1]);
/* The same for a certificate learned before its key (HS_CERT): on
 * ADMIT_OK, the key it names into ret_key. */
admit_verdict admission_learn(const admission *a, const uint8_t *cert,
			      size_t len, uint64_t now,
			      uint8_t ret_key[GSP_KEY_BYTES],
			      char name[GSP_CERT_NAME_MAX + 1]);
/* Counts a refusal by its reason; returns a sentence for the log. */
const char *admission_refused(admission *a, admit_verdict v);
/* Whether key is on the revocation list. */
bool admission_revoked(const admission *a, const uint8_t key[GSP_KEY_BYTES]);

#endif
