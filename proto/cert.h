/*
 * proto/cert: member certificates, the cluster authority's statement that
 * a node key belongs to the cluster (issue 36, "Admission").
 *
 * This module owns the certificate's binary layout, its one-line text
 * form and its verification.  A certificate binds a node's static X25519
 * public key (the handshake's, key.h) and the Ed25519 key the node signs
 * its member records with (member.h derives it from the static private
 * key) to a name and a validity interval [not_before, not_after), in unix
 * seconds, under the signature of the authority's Ed25519 key.
 *
 * Layout (version 1; integers little-endian, written byte by byte):
 *   u8 version | node key (32) | signing key (32) | u8 name_len |
 *   name (name_len) | u64 not_before | u64 not_after | authority (32) |
 *   signature (64)
 * 179..242 bytes.  The signature is Ed25519 over GSP_CERT_DOMAIN followed
 * by every byte before the signature.  A name is 1..GSP_CERT_NAME_MAX
 * bytes of A-Z a-z 0-9 '.' '_' '-'.  not_after > not_before.
 *
 * The decoder is strict and allocates nothing: a short input, trailing
 * bytes, an unknown version, a bad name or interval each have their own
 * code (admit.h), and what it accepts encodes back to the same bytes, so
 * verifying a decoded certificate checks the bytes that were received.
 * Outputs (ret_*) are written only on success.  Call sodium_init() first.
 */
#ifndef GSP_PROTO_CERT_H
#define GSP_PROTO_CERT_H

#include <stddef.h>
#include <stdint.h>

#include "admit.h"
#include "revoke.h"

#define GSP_CERT_VERSION 1
#define GSP_CERT_NAME_MAX 64
#define GSP_CERT_DOMAIN "gossipd member certificate v1\n"
#define GSP_CERT_FIXED (1 + GSP_KEY_BYTES + GSP_SIGN_PUBLIC_BYTES + 1 + 8 + 8 + \
			GSP_SIGN_PUBLIC_BYTES + GSP_SIGNATURE_BYTES)   /* 178 */
#define GSP_CERT_MIN (GSP_CERT_FIXED + 1)                      /* 179 */
#define GSP_CERT_MAX (GSP_CERT_FIXED + GSP_CERT_NAME_MAX)      /* 242 */
/* The text of the longest certificate, without its NUL. */
#define GSP_CERT_TEXT_MAX ((GSP_CERT_MAX + 2) / 3 * 4)         /* 324 */

typedef struct gsp_cert {
	uint8_t version;                            /* GSP_CERT_VERSION */
	uint8_t node_key[GSP_KEY_BYTES];            /* X25519 */
	uint8_t sign_key[GSP_SIGN_PUBLIC_BYTES];    /* Ed25519 */
	uint8_t name_len;
	char name[GSP_CERT_NAME_MAX + 1];           /* NUL-terminated */
	uint64_t not_before;                        /* unix seconds */
	uint64_t not_after;                         /* first second not valid */
	uint8_t authority[GSP_SIGN_PUBLIC_BYTES];   /* the signer's public key */
	uint8_t sig[GSP_SIGNATURE_BYTES];
} gsp_cert;

/* Checks the fields before the authority (version, name, interval):
 * 0 or the GSP_ADM_* code the decoder would give. */
int gsp_cert_check(const gsp_cert *cert) GSP_MUST_CHECK;

/* Sets cert->authority to the public key of ca_sk and signs.  -EINVAL for
 * a certificate gsp_cert_check() refuses. */
int gsp_cert_sign(gsp_cert *cert,
		  const uint8_t ca_sk[static GSP_SIGN_SECRET_BYTES]) GSP_MUST_CHECK;

/* The encoding into buf[0..cap) (proto.h's encoder rules): -EINVAL for a
 * certificate gsp_cert_check() refuses, -ENOBUFS without room. */
int gsp_cert_encode(const gsp_cert *cert, uint8_t *buf, size_t cap,
		    size_t *ret_len) GSP_MUST_CHECK;

/* Decodes exactly one certificate from buf[0..len): 0, a GSP_ADM_* code
 * or -EINVAL for a NULL ret.  Does not verify the signature. */
int gsp_cert_decode(const uint8_t *buf, size_t len, gsp_cert *ret) GSP_MUST_CHECK;

/* The text form: the encoding in padded standard base64, NUL-terminated
 * in out[0..cap) (GSP_CERT_TEXT_MAX + 1 always suffices). */
int gsp_cert_to_text(const gsp_cert *cert, char *out, size_t cap) GSP_MUST_CHECK;
/* Decodes text[0..len) (no newline: the caller strips it) strictly:
 * GSP_ADM_ETEXT for anything but the one base64 text of some bytes, then
 * gsp_cert_decode()'s codes. */
int gsp_cert_from_text(const char *text, size_t len,
		       gsp_cert *ret) GSP_MUST_CHECK;

/* Whether cert admits its node at unix time now under authority:
 *   0              valid
 *   -EKEYREJECTED  signed by another authority, or the signature does
 *                  not verify (any byte changed)
 *   GSP_ADM_ENOTYET  now < not_before
 *   -EKEYEXPIRED   now >= not_after
 *   -EKEYREVOKED   the node key is in revoked (NULL: no list)
 *   -EINVAL        NULL arguments, or a list of another authority
 * The authority keys are compared in constant time.  The list's own
 * signature is the caller's to check, once, with gsp_revoke_verify(). */
int gsp_cert_verify(const gsp_cert *cert,
		    const uint8_t authority[static GSP_SIGN_PUBLIC_BYTES],
		    uint64_t now, const gsp_revoke *revoked) GSP_MUST_CHECK;

#endif
