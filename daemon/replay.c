/* replay: persisted handshake timestamps (replay.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "handshake.h"
#include "replay.h"

_Static_assert(REPLAY_TS_BYTES == GSP_HS_TIMESTAMP, "timestamp sizes differ");

int replay_parse(const uint8_t *buf, size_t len, replay_entry *out)
{
	if (len % REPLAY_RECORD != 0 || len / REPLAY_RECORD > REPLAY_MAX)
		return -EBADMSG;
	size_t n = len / REPLAY_RECORD;
	for (size_t i = 0; i < n; i++) {
		memcpy(out[i].key, buf + i * REPLAY_RECORD, GSP_KEY_BYTES);
		memcpy(out[i].ts, buf + i * REPLAY_RECORD + GSP_KEY_BYTES, REPLAY_TS_BYTES);
	}
	return (int)n;
}

int replay_load(const char *path, replay_entry *out)
{
	uint8_t *buf;
	size_t len;
	int rc = file_read(path, (size_t)REPLAY_MAX * REPLAY_RECORD, &buf, &len);
	if (rc == -ENOENT)
		return 0;
	if (rc == -EFBIG)
		return -EBADMSG;
	if (rc)
		return rc;
	rc = replay_parse(buf, len, out);
	free(buf);
	return rc;
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

int replay_save(const char *path, const replay_entry *e, size_t n)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		uint8_t rec[REPLAY_RECORD];
		memcpy(rec, e[i].key, GSP_KEY_BYTES);
		memcpy(rec + GSP_KEY_BYTES, e[i].ts, REPLAY_TS_BYTES);
		rc = write_all(fd, rec, sizeof(rec));
	}
	if (rc == 0 && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}
