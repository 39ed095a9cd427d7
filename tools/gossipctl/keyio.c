/* Key text I/O for genkey and pubkey (see keyio.h). */
#include <errno.h>
#include <sodium.h>
#include <unistd.h>

#include "keyio.h"

int gctl_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

long gctl_read_line(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	char extra;

	if (cap == 0)
		return -EINVAL;
	/* Room for cap - 1 characters and their newline, then look for more. */
	for (;;) {
		char *dst = len < cap ? buf + len : &extra;
		size_t room = len < cap ? cap - len : 1;
		ssize_t n = read(fd, dst, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		if (len >= cap) {
			sodium_memzero(&extra, sizeof(extra));
			return -EMSGSIZE;
		}
		len += (size_t)n;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len >= cap)
		return -EMSGSIZE;
	buf[len] = '\0';
	return (long)len;
}
