/* file: whole small files (file.h). */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <sodium.h>

#include "file.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

int file_read(const char *path, size_t max, uint8_t **ret_buf, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Grown as the file turns out to be, never past max + 1. */
	size_t cap = max < 4096 ? max + 1 : 4096, n = 0;
	uint8_t *buf = malloc(cap);
	int rc = buf ? 0 : -ENOMEM;
	while (!rc && n <= max) {
		if (n == cap) {
			size_t grown = cap > (max + 1) / 2 ? max + 1 : 2 * cap;
			uint8_t *b = malloc(grown);
			if (!b) {
				rc = -ENOMEM;
				break;
			}
			memcpy(b, buf, n);
			sodium_memzero(buf, n);
			free(buf);
			buf = b;
			cap = grown;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			rc = -errno;
		else if (r == 0)
			break;
		else
			n += (size_t)r;
	}
	close(fd);
	if (!rc && n > max)
		rc = -EFBIG;
	if (rc) {
		if (buf)
			sodium_memzero(buf, n);
		free(buf);
		return rc;
	}
	*ret_buf = buf;
	*ret_len = n;
	return 0;
}

int file_pwritev(int fd, struct iovec *iov, size_t n, off_t off)
{
	for (;;) {
		while (n && iov->iov_len == 0) {
			iov++;
			n--;
		}
		if (!n)
			return 0;
		ssize_t r = pwritev(fd, iov, n > IOV_MAX ? IOV_MAX : (int)n, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		size_t done = (size_t)r;
		off += r;
		while (done && done >= iov->iov_len) {
			done -= iov->iov_len;
			iov++;
			n--;
		}
		if (done) {     /* inside the piece iov points at */
			iov->iov_base = (uint8_t *)iov->iov_base + done;
			iov->iov_len -= done;
		}
	}
}

int file_write_atomic(const char *path, const uint8_t *buf, size_t len, bool sync)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = file_pwritev(fd, &iov, 1, 0);
	if (rc == 0 && sync && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}
