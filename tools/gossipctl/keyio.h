/*
 * Key text for genkey and pubkey: base64 keys on stdin and stdout,
 * without stdio buffers, so that every copy of a secret can be wiped.
 */
#ifndef GOSSIPCTL_KEYIO_H
#define GOSSIPCTL_KEYIO_H

#include <stddef.h>

/* Writes len bytes to fd, retrying on EINTR.  0 or a negative errno. */
int gctl_write_all(int fd, const void *buf, size_t len);

/* Reads fd to its end into buf[0..cap), NUL-terminates and strips one
 * trailing newline.  Returns the length, -EMSGSIZE if the input does not
 * fit (cap - 1 bytes before the newline), or a negative errno.  The
 * caller wipes buf, whatever the result. */
long gctl_read_line(int fd, char *buf, size_t cap);

#endif
