/* file: whole small files (file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <sodium.h>

#include "file.h"

int file_read(const char *path, size_t max, uint8_t **ret_buf, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	uint8_t *buf = malloc(max + 1);
	size_t n = 0;
	int rc = buf ? 0 : -ENOMEM;
	while (!rc && n <= max) {
		ssize_t r = read(fd, buf + n, max + 1 - n);
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
