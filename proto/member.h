/*
 * proto/member: the signed member record a node disseminates about
 * itself (issue 36, "Discovery"): its keys, incarnation, status and
 * endpoints, and its certificate when the cluster has an authority.
 *
 * This module owns the record's binary layout, its signature, the node's
 * record signing key and the order of records ("newer wins").
 *
 * The signing key.  A record is signed by the node itself with Ed25519.
 * The node holds one secret, its static X25519 private key (key.h); its
 * Ed25519 key pair is derived from it, deterministically:
 *   seed = BLAKE2b-256(key = GSP_MEMBER_SIGN_KDF, message = private key)
 *   pair = crypto_sign_seed_keypair(seed)
 * so nothing more is stored, and nobody without the private key can
 * compute the signing key.  The signing public key cannot be computed
 * from the X25519 public key: the certificate binds the two (cert.h),
 * and without an authority the binding must come from the node itself
 * over an authenticated link.
 *
 * Layout (version 1; integers little-endian, written byte by byte):
 *   u8 version | node key (32) | signing key (32) | u64 incarnation |
 *   u8 status | u8 n_endpoints (0..4) |
 *   n_endpoints x (u8 family (4 or 6) | address (4 or 16, network order) |
 *                  u16 port (1..65535)) |
 *   u16 cert_len (0, or GSP_CERT_MIN..GSP_CERT_MAX) | certificate (cert_len) |
 *   signature (64)
 * 141..459 bytes.  The signature is Ed25519, by the signing key, over
 * GSP_MEMBER_DOMAIN followed by every byte before it.  An embedded
 * certificate must name the record's two keys.
 *
 * The decoder is strict and allocates nothing; what it accepts encodes
 * back to the same bytes.  The decoded record (gsp_member) is fixed-size
 * and holds no pointers, so a table of them is its own storage.  Outputs
 * (ret_*) are written only on success.  Call sodium_init() first.
 */
#ifndef GSP_PROTO_MEMBER_H
#define GSP_PROTO_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admit.h"
#include "cert.h"
#include "revoke.h"

#define GSP_MEMBER_VERSION 1
#define GSP_MEMBER_ENDPOINTS_MAX 4
#define GSP_MEMBER_DOMAIN "gossipd member record v1\n"
#define GSP_MEMBER_SIGN_KDF "gossipd member signing key v1"
#define GSP_MEMBER_FIXED (1 + GSP_KEY_BYTES + GSP_SIGN_PUBLIC_BYTES + 8 + 1 + \
			  1 + 2 + GSP_SIGNATURE_BYTES)             /* 141 */
#define GSP_MEMBER_MAX (GSP_MEMBER_FIXED + GSP_MEMBER_ENDPOINTS_MAX * (1 + 16 + 2) + \
			GSP_CERT_MAX)                               /* 459 */

/* Member states.  At one incarnation the later in this list wins; LEFT
 * is final for its incarnation. */
enum {
	GSP_MEMBER_ALIVE = 0,
	GSP_MEMBER_SUSPECT = 1,
	GSP_MEMBER_DEAD = 2,
	GSP_MEMBER_LEFT = 3,
};
/* "alive", "suspect", "dead", "left", or NULL. */
const char *gsp_member_status_name(unsigned status);

typedef struct gsp_member_endpoint {
	uint8_t family;        /* 4 or 6 */
	uint8_t addr[16];      /* network order; IPv4 in addr[0..4), the rest 0 */
	uint16_t port;         /* 1..65535 */
} gsp_member_endpoint;

typedef struct gsp_member {
	uint8_t version;                            /* GSP_MEMBER_VERSION */
	uint8_t node_key[GSP_KEY_BYTES];            /* X25519 */
	uint8_t sign_key[GSP_SIGN_PUBLIC_BYTES];    /* Ed25519 */
	uint64_t incarnation;
	uint8_t status;                             /* GSP_MEMBER_* */
	uint8_t n_endpoints;
	gsp_member_endpoint endpoints[GSP_MEMBER_ENDPOINTS_MAX];
	bool has_cert;
	gsp_cert cert;                              /* when has_cert */
	uint8_t sig[GSP_SIGNATURE_BYTES];
} gsp_member;

/* The node's record signing key pair, derived from its static X25519
 * private key (above). */
void gsp_member_signing_key(const uint8_t priv[static GSP_KEY_BYTES],
			    uint8_t ret_pk[static GSP_SIGN_PUBLIC_BYTES],
			    uint8_t ret_sk[static GSP_SIGN_SECRET_BYTES]);

/* 0 or the GSP_ADM_* code of the first layout rule the record breaks. */
int gsp_member_check(const gsp_member *rec) GSP_MUST_CHECK;

/* Sets rec->sign_key to the public key of sk and signs.  -EINVAL for a
 * record gsp_member_check() refuses. */
int gsp_member_sign(gsp_member *rec,
		    const uint8_t sk[static GSP_SIGN_SECRET_BYTES]) GSP_MUST_CHECK;

int gsp_member_encode(const gsp_member *rec, uint8_t *buf, size_t cap,
		      size_t *ret_len) GSP_MUST_CHECK;
/* Decodes exactly one record: 0, a GSP_ADM_* code (an embedded
 * certificate's own codes included) or -EINVAL.  No signature checked. */
int gsp_member_decode(const uint8_t *buf, size_t len,
		      gsp_member *ret) GSP_MUST_CHECK;

/* Whether rec is the node's own word: its signature verifies under
 * rec->sign_key (-EKEYREJECTED if not).  With an authority (not NULL) the
 * record must carry a certificate (GSP_ADM_ENOCERT) that
 * gsp_cert_verify() accepts at now against revoked (its codes); without
 * one (allowlist mode) any certificate is not looked at. */
int gsp_member_verify(const gsp_member *rec,
		      const uint8_t *authority, uint64_t now,
		      const gsp_revoke *revoked) GSP_MUST_CHECK;

/* Which of two records of one node wins: > 0 if a, < 0 if b, 0 if
 * neither (same incarnation and status).  The higher incarnation wins;
 * at one incarnation left > dead > suspect > alive (SWIM's precedence,
 * with leaving final).  A total order, so every member that sees the
 * same records keeps the same one. */
int gsp_member_newer(const gsp_member *a, const gsp_member *b);

#endif
