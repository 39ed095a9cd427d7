/*
 * Key and record text for the key and certificate subcommands: base64
 * lines on stdin, stdout and in files, without stdio buffers, so that
 * every copy of a secret can be wiped.
 */
#ifndef GOSSIPCTL_KEYIO_H
#define GOSSIPCTL_KEYIO_H

#include <stddef.h>
#include <stdint.h>

#include "admit.h"
#include "key.h"

/* Writes len bytes to fd, retrying on EINTR.  0 or a negative errno. */
int gctl_write_all(int fd, const void *buf, size_t len);

/* Reads fd to its end into buf[0..cap), NUL-terminates and strips one
 * trailing newline.  Returns the length, -EMSGSIZE if the input does not
 * fit (cap - 1 bytes before the newline), or a negative errno.  The
 * caller wipes buf, whatever the result. */
long gctl_read_line(int fd, char *buf, size_t cap);

/* gctl_read_line() of the file at path, or of stdin for "-". */
long gctl_read_text_file(const char *path, char *buf, size_t cap);

/* The key in the file at path ("-": stdin): its 44 base64 characters and
 * at most one newline.  0, -EINVAL for anything else, or a negative
 * errno from opening or reading; every copy of the text is wiped. */
int gctl_read_key_file(const char *path, uint8_t ret_key[static GSP_KEY_BYTES]);

/* Writes the text of a secret key and a newline to stdout, after a
 * warning on stderr if stdout is a file that group or others can access.
 * 0 or a negative errno; the text is wiped. */
int gctl_write_secret_key(const uint8_t key[static GSP_KEY_BYTES]);

/* The authority's signing key from its key file at path (a ca-genkey
 * seed), into ret_sk.  0, or a negative errno after a message on stderr
 * that names sub and path. */
int gctl_read_ca_key(const char *sub, const char *path,
		     uint8_t ret_sk[static GSP_SIGN_SECRET_BYTES]);

#endif
