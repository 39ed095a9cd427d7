/* file: whole small files (file.h). */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "file.h"

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

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t r = write(fd, p, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int file_write_atomic(const char *path, const uint8_t *buf, size_t len, bool sync)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = write_all(fd, buf, len);
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
