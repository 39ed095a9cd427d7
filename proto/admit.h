/*
 * proto/admit: what the admission formats share (cert.h, revoke.h,
 * member.h): their error codes and texts, the Ed25519 sizes, the
 * domain-separated signatures and the one-line base64 text form.
 *
 * Every signature of these formats is Ed25519 (libsodium's
 * crypto_sign_detached) over a domain string followed by every byte of
 * the encoding that precedes the signature, so that a signature made for
 * one format never verifies as another.  The domain strings end with a
 * newline, so none is a prefix of another (docs/MEMBERSHIP.md lists them).
 *
 * The decoders of these formats report each way an input can be
 * malformed with its own code (GSP_ADM_E*, below -4200, outside the
 * errno range and libgossip's codes); gsp_admit_strerror() words them and
 * the errno values the verifiers return.  Call sodium_init() first.
 */
#ifndef GSP_PROTO_ADMIT_H
#define GSP_PROTO_ADMIT_H

#include <stddef.h>
#include <stdint.h>

#include "key.h"

#define GSP_SIGN_PUBLIC_BYTES 32    /* an Ed25519 public key */
#define GSP_SIGN_SECRET_BYTES 64    /* libsodium's Ed25519 secret key */
#define GSP_SIGN_SEED_BYTES 32      /* what a CA key file holds */
#define GSP_SIGNATURE_BYTES 64

/* Malformed input, one code per way (decoders), and the verdicts of the
 * verifiers that errno has no word for. */
enum {
	GSP_ADM_ETRUNCATED = -4201,   /* the input ends inside the layout */
	GSP_ADM_ETRAILING = -4202,    /* bytes after the layout's end */
	GSP_ADM_EVERSION = -4203,     /* a format version this code does not know */
	GSP_ADM_ENAMELEN = -4204,     /* a name of length 0 or above the cap */
	GSP_ADM_ENAMECHAR = -4205,    /* a name byte outside the name set */
	GSP_ADM_EVALIDITY = -4206,    /* expiry not after not-before */
	GSP_ADM_ETOOMANY = -4207,     /* a declared count above its cap */
	GSP_ADM_EUNSORTED = -4208,    /* revoked keys out of ascending order */
	GSP_ADM_EDUPLICATE = -4209,   /* a revoked key listed twice */
	GSP_ADM_ESTATUS = -4210,      /* an unknown member status */
	GSP_ADM_EFAMILY = -4211,      /* an endpoint family other than 4 or 6 */
	GSP_ADM_EPORT = -4212,        /* an endpoint with port 0 */
	GSP_ADM_ECERTLEN = -4213,     /* an embedded certificate length out of range */
	GSP_ADM_ECERTKEY = -4214,     /* embedded certificate of other keys */
	GSP_ADM_ETEXT = -4215,        /* text that is not the one base64 form */
	GSP_ADM_ENOTYET = -4216,      /* verify: before the not-before time */
	GSP_ADM_ENOCERT = -4217,      /* verify: an authority wants a certificate */
};

/* A sentence for a GSP_ADM_* code, for -EKEYREJECTED, -EKEYEXPIRED and
 * -EKEYREVOKED as the verifiers mean them, and strerror()'s for any
 * other errno.  Never NULL. */
const char *gsp_admit_strerror(int err);

/* The Ed25519 key pair of a 32-byte seed (a CA key file's content). */
void gsp_sign_keypair_from_seed(const uint8_t seed[static GSP_SIGN_SEED_BYTES],
				uint8_t ret_pk[static GSP_SIGN_PUBLIC_BYTES],
				uint8_t ret_sk[static GSP_SIGN_SECRET_BYTES]);

/* ---- for cert.c, revoke.c and member.c only ------------------------------ */

/* Signs domain || msg[0..len).  buf must hold strlen(domain) + len bytes
 * (the signed string is assembled there).  -EINVAL on bad arguments. */
int gsp__admit_sign(const char *domain, const uint8_t *msg, size_t len,
		    uint8_t *buf, const uint8_t sk[static GSP_SIGN_SECRET_BYTES],
		    uint8_t ret_sig[static GSP_SIGNATURE_BYTES]) GSP_MUST_CHECK;
/* 0 if sig is pk's signature of domain || msg, else -EKEYREJECTED. */
int gsp__admit_verify(const char *domain, const uint8_t *msg, size_t len,
		      uint8_t *buf, const uint8_t pk[static GSP_SIGN_PUBLIC_BYTES],
		      const uint8_t sig[static GSP_SIGNATURE_BYTES]) GSP_MUST_CHECK;

/* The base64 text (standard alphabet, padded, NUL-terminated) of
 * bin[0..len) into out[0..cap): -ENOBUFS if it does not fit. */
int gsp__admit_to_text(const uint8_t *bin, size_t len, char *out,
		       size_t cap) GSP_MUST_CHECK;
/* Decodes text[0..text_len) into out[0..cap), strictly (the one text of
 * those bytes: no spaces, no newline, zero spare bits, exact padding, no
 * byte above 0x7f): GSP_ADM_ETEXT otherwise, or GSP_ADM_ETRAILING if it
 * decodes to more than cap bytes. */
int gsp__admit_from_text(const char *text, size_t text_len, uint8_t *out,
			 size_t cap, size_t *ret_len) GSP_MUST_CHECK;

#endif
