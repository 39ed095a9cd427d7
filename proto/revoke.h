/*
 * proto/revoke: the authority's revocation list, the node keys whose
 * certificates no longer admit them (issue 36, "Admission").
 *
 * This module owns the list's binary layout, its text form, its
 * signature and the lookup.  A list carries a serial: of two lists of one
 * authority, the higher serial is the newer and replaces the other.
 *
 * Layout (version 1; integers little-endian, written byte by byte):
 *   u8 version | authority (32) | u64 serial | u32 count |
 *   count node keys (32 each, strictly ascending as bytes) | signature (64)
 * count <= GSP_REVOKE_MAX; 109 + 32 * count bytes.  The signature is
 * Ed25519 over GSP_REVOKE_DOMAIN followed by every byte before it.
 *
 * The decoder checks the declared count against its cap and against the
 * input's length before it allocates, then allocates exactly count keys;
 * keys out of order or listed twice are refused.  Lookup is a binary
 * search (the keys are public: no constant time needed).  Outputs
 * (ret_*) are written only on success.  Call sodium_init() first.
 */
#ifndef GSP_PROTO_REVOKE_H
#define GSP_PROTO_REVOKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admit.h"

#define GSP_REVOKE_VERSION 1
#define GSP_REVOKE_MAX 4096
#define GSP_REVOKE_DOMAIN "gossipd revocation list v1\n"
#define GSP_REVOKE_FIXED (1 + GSP_SIGN_PUBLIC_BYTES + 8 + 4 + \
			  GSP_SIGNATURE_BYTES)                    /* 109 */
#define GSP_REVOKE_BYTES(count) (GSP_REVOKE_FIXED + (size_t)(count) * GSP_KEY_BYTES)
#define GSP_REVOKE_TEXT_MAX ((GSP_REVOKE_BYTES(GSP_REVOKE_MAX) + 2) / 3 * 4)

typedef struct gsp_revoke {
	uint8_t version;                            /* GSP_REVOKE_VERSION */
	uint8_t authority[GSP_SIGN_PUBLIC_BYTES];
	uint64_t serial;
	uint32_t count;                             /* 0..GSP_REVOKE_MAX */
	uint8_t (*keys)[GSP_KEY_BYTES];             /* ascending, no duplicates */
	uint8_t sig[GSP_SIGNATURE_BYTES];
} gsp_revoke;

/* 0 or the GSP_ADM_* code of the first rule the list breaks (version,
 * count, order, duplicates). */
int gsp_revoke_check(const gsp_revoke *list) GSP_MUST_CHECK;

/* Sets list->authority to the public key of ca_sk and signs.  -EINVAL for
 * a list gsp_revoke_check() refuses, -ENOMEM. */
int gsp_revoke_sign(gsp_revoke *list,
		    const uint8_t ca_sk[static GSP_SIGN_SECRET_BYTES]) GSP_MUST_CHECK;

/* The encoding into buf[0..cap) (proto.h's encoder rules). */
int gsp_revoke_encode(const gsp_revoke *list, uint8_t *buf, size_t cap,
		      size_t *ret_len) GSP_MUST_CHECK;

/* Decodes exactly one list from buf[0..len) into *ret, whose keys it
 * allocates (free them with gsp_revoke_clear()): 0, a GSP_ADM_* code,
 * -EINVAL or -ENOMEM.  Does not verify the signature. */
int gsp_revoke_decode(const uint8_t *buf, size_t len,
		      gsp_revoke *ret) GSP_MUST_CHECK;

/* The text form (padded standard base64, one line) into out[0..cap),
 * NUL-terminated, and back (gsp_cert_from_text()'s rules). */
int gsp_revoke_to_text(const gsp_revoke *list, char *out,
		       size_t cap) GSP_MUST_CHECK;
int gsp_revoke_from_text(const char *text, size_t len,
			 gsp_revoke *ret) GSP_MUST_CHECK;

/* Frees what gsp_revoke_decode() allocated and zeroes *list; NULL is
 * fine. */
void gsp_revoke_clear(gsp_revoke *list);

/* 0 if the list is signed by authority (compared in constant time),
 * -EKEYREJECTED if not, -EINVAL or -ENOMEM. */
int gsp_revoke_verify(const gsp_revoke *list,
		      const uint8_t authority[static GSP_SIGN_PUBLIC_BYTES]) GSP_MUST_CHECK;

/* Whether key is in the list. */
bool gsp_revoke_contains(const gsp_revoke *list,
			 const uint8_t key[static GSP_KEY_BYTES]);

#endif
