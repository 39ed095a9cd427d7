/* Key and record text I/O (see keyio.h). */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keyio.h"
#include "subcommands.h"

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

long gctl_read_text_file(const char *path, char *buf, size_t cap)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	long n;

	if (fd < 0)
		return -errno;
	n = gctl_read_line(fd, buf, cap);
	if (fd != STDIN_FILENO)
		close(fd);
	return n;
}

int gctl_read_key_file(const char *path, uint8_t ret_key[static GSP_KEY_BYTES])
{
	char text[GSP_KEY_BASE64_LEN + 1];
	long n = gctl_read_text_file(path, text, sizeof(text));
	int r;

	if (n == -EMSGSIZE || (n >= 0 && n != GSP_KEY_BASE64_LEN))
		r = -EINVAL;
	else if (n < 0)
		r = (int)n;
	else
		r = gsp_key_from_base64(text, ret_key);
	sodium_memzero(text, sizeof(text));
	return r;
}

int gctl_write_secret_key(const uint8_t key[static GSP_KEY_BYTES])
{
	char b64[GSP_KEY_BASE64_LEN + 2];
	struct stat sb;
	int r;

	if (fstat(STDOUT_FILENO, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    (sb.st_mode & 077))
		fprintf(stderr, "%s: warning: writing a private key to a file that "
			"group or others can access (use umask 077)\n", PROG_NAME);
	gsp_key_to_base64(key, b64);
	b64[GSP_KEY_BASE64_LEN] = '\n';
	r = gctl_write_all(STDOUT_FILENO, b64, GSP_KEY_BASE64_LEN + 1);
	sodium_memzero(b64, sizeof(b64));
	return r;
}

int gctl_read_ca_key(const char *sub, const char *path,
		     uint8_t ret_sk[static GSP_SIGN_SECRET_BYTES])
{
	uint8_t seed[GSP_SIGN_SEED_BYTES], pk[GSP_SIGN_PUBLIC_BYTES];
	int r = gctl_read_key_file(path, seed);

	if (r == -EINVAL)
		fprintf(stderr, "%s: %s: %s does not hold an authority key (%d "
			"base64 characters and at most one newline)\n", PROG_NAME,
			sub, path, GSP_KEY_BASE64_LEN);
	else if (r < 0)
		fprintf(stderr, "%s: %s: cannot read the authority key %s: %s\n",
			PROG_NAME, sub, path, strerror(-r));
	else
		gsp_sign_keypair_from_seed(seed, pk, ret_sk);
	sodium_memzero(seed, sizeof(seed));
	return r;
}
