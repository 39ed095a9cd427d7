/*
 * file: reading a whole small file with read(2): no stdio buffer keeps a
 * copy (the config may hold an inline private key), and a size cap; and
 * replacing a whole file atomically; and writing pieces at an offset.
 */
#ifndef GOSSIPD_FILE_H
#define GOSSIPD_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The file's bytes in a new buffer (*ret_buf, freed by the caller, who
 * wipes it if it held a secret): 0, -EFBIG if it holds more than max
 * bytes, or a negative errno (-ENOENT when it does not exist). */
int file_read(const char *path, size_t max, uint8_t **ret_buf, size_t *ret_len);

/* Writes len bytes to path.tmp (fsync'd when sync), then renames it to
 * path: a reader sees the old file or the new one.  0 or -errno. */
int file_write_atomic(const char *path, const uint8_t *buf, size_t len, bool sync);
/* Writes the bytes of n pieces in order at off, in IOV_MAX pieces per
 * call (no copy into one buffer).  iov is used up: its entries are
 * advanced past what was written.  0 or -errno. */
int file_pwritev(int fd, struct iovec *iov, size_t n, off_t off);

#endif
