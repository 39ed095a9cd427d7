/*
 * proto/key: gossipd's static keys (X25519), as bytes and as text.
 *
 * This module owns the one size of a key (GSP_KEY_BYTES), its text form
 * (padded standard base64, GSP_KEY_BASE64_LEN characters) and the making
 * of key pairs.  gossipd reads keys from its configuration and key file
 * with it, gossipctl genkey and pubkey write and read them with it.
 *
 * Decoding is strict: exactly GSP_KEY_BASE64_LEN characters of the
 * standard alphabet, the single '=' of padding, zero bits where base64
 * leaves spare ones, and nothing before or after; so every key has one
 * text form only.  Characters are decoded in constant time (libsodium's
 * codec).  Outputs (ret_*) are written only on success and every
 * temporary copy of a key is wiped.  Call sodium_init() first.
 */
#ifndef GSP_PROTO_KEY_H
#define GSP_PROTO_KEY_H

#include <stdint.h>

#ifndef GSP_MUST_CHECK
#define GSP_MUST_CHECK __attribute__((warn_unused_result))
#endif

#define GSP_KEY_BYTES 32            /* an X25519 public or private key */
#define GSP_KEY_BASE64_LEN 44       /* its base64 text, without a NUL */

typedef struct gsp_keypair {
	uint8_t pub[GSP_KEY_BYTES];
	uint8_t priv[GSP_KEY_BYTES];
} gsp_keypair;

/* Decodes the NUL-terminated text of one key into ret_key.  -EINVAL for
 * anything but a canonical key (see above); ret_key is then untouched. */
int gsp_key_from_base64(const char *text,
			uint8_t ret_key[static GSP_KEY_BYTES]) GSP_MUST_CHECK;

/* Writes the text of key, NUL-terminated, into out. */
void gsp_key_to_base64(const uint8_t key[static GSP_KEY_BYTES],
		       char out[static GSP_KEY_BASE64_LEN + 1]);

/* A new random key pair. */
void gsp_keypair_generate(gsp_keypair *ret);

/* The key pair of a private key (the private key as given, its public
 * key derived).  -EINVAL if X25519 refuses the key. */
int gsp_keypair_from_private(const uint8_t priv[static GSP_KEY_BYTES],
			     gsp_keypair *ret) GSP_MUST_CHECK;

#endif
