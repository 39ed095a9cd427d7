/*
 * replay: the newest handshake timestamp accepted from each peer key,
 * kept in a file of the state directory, so that a restarted gossipd
 * does not accept a replayed HS_INIT it saw before the restart.  The file
 * is a sequence of fixed records: 32-byte public key, 12-byte TAI64N
 * timestamp.  Written whole to a temporary file, then renamed.
 */
#ifndef GOSSIPD_REPLAY_H
#define GOSSIPD_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "key.h"

#define REPLAY_TS_BYTES 12
#define REPLAY_RECORD (GSP_KEY_BYTES + REPLAY_TS_BYTES)
/* At most this many records (GSP_MAX_PEERS, with room for removed ones). */
#define REPLAY_MAX 4096

typedef struct replay_entry {
	uint8_t key[GSP_KEY_BYTES];
	uint8_t ts[REPLAY_TS_BYTES];
} replay_entry;

/* Parses a file's bytes into out (room for REPLAY_MAX): the number of
 * entries, or -EBADMSG when the length is not a whole number of records
 * or over REPLAY_MAX records. */
int replay_parse(const uint8_t *buf, size_t len, replay_entry *out);
/* Reads path: the number of entries (0 if the file does not exist) or a
 * negative errno. */
int replay_load(const char *path, replay_entry *out);
/* Writes n entries to path (path.tmp, fsync, rename).  0 or -errno. */
int replay_save(const char *path, const replay_entry *e, size_t n);

#endif
