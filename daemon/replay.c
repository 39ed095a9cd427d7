/* replay: persisted handshake timestamps (replay.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int replay_save(const char *path, const replay_entry *e, size_t n)
{
	uint8_t *buf = malloc(n * REPLAY_RECORD + 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		memcpy(buf + i * REPLAY_RECORD, e[i].key, GSP_KEY_BYTES);
		memcpy(buf + i * REPLAY_RECORD + GSP_KEY_BYTES, e[i].ts, REPLAY_TS_BYTES);
	}
	int rc = file_write_atomic(path, buf, n * REPLAY_RECORD, true);
	free(buf);
	return rc;
}
