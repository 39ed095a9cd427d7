/*
 * slotfile: a file rewritten in place, which neither a killed process nor
 * a lost machine (a power loss, a kernel crash) leaves half-written, and
 * whose every completed write is on the disk.  The edges' records are
 * saved after every STEP, before the frames they promise go out; writing
 * a new file and renaming it over the old one cost more than the write
 * itself (a new inode, the old one's eviction, and ext4 starting the new
 * file's writeback on every replace-by-rename).  A slot file is two
 * files, PATH.0 and PATH.1, each a header and the contents, kept open:
 *
 *   write:  into the slot that does not hold the newest contents: the
 *           contents written over its old ones, the file cut to their
 *           length, fdatasync; then its header with the next sequence
 *           number, fdatasync (and, the first time this process opens a
 *           slot file, an fsync of the directory that holds it, so that
 *           a new file's name is on the disk too);
 *   read:   the slot whose header is valid (its length is the file's),
 *           with the higher number.
 *
 * Crash model.  A process killed at any point, or a machine that loses
 * power at any point, leaves the other slot, the last whole write, as the
 * newest: the slot being written keeps the header of older contents (or
 * none) until its contents and length are on the disk, and its new
 * header reaches the disk only after them (the header is one 32-byte
 * write at offset 0, inside one sector).  Once slotfile_writev has
 * returned 0 the new contents survive a power loss.  What is written
 * between two syncs may reach the disk in any part and order; the tests
 * drive every such part (tests/daemon/test_slotfile.c, through the disk
 * seam below).  A disk that acknowledges a flush it did not do is out of
 * this model.  SyncRecords = false in the config leaves the syncs out:
 * then only a killed process is covered.
 *
 * Header (SLOTFILE_HEAD bytes, little-endian): "gsp slot", u64 sequence
 * number (> 0), u64 length of the contents (the file's size less the
 * header), u64 zero.
 */
#ifndef GOSSIPD_SLOTFILE_H
#define GOSSIPD_SLOTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "config.h"

#define SLOTFILE_HEAD 32

/* The calls a write makes on the disk: the system's by default
 * (slotfile_init); a test sets its own to model a kill or a power loss.
 * Each returns 0 or a negative errno. */
typedef struct slotfile_disk {
	/* Writes the pieces at off (iov is used up, as file_pwritev). */
	int (*pwritev)(void *ctx, int fd, struct iovec *iov, size_t n, off_t off);
	int (*truncate)(void *ctx, int fd, off_t len);
	/* The file's data and size on the disk (fdatasync). */
	int (*sync)(void *ctx, int fd);
	/* The names in the directory of path on the disk (fsync of it). */
	int (*sync_dir)(void *ctx, const char *path);
	void *ctx;
} slotfile_disk;

typedef struct slotfile {
	char path[GSP_PATH_MAX + 3];   /* PATH.k, k rewritten per slot */
	size_t base;                   /* strlen(PATH) */
	int fd[2];                     /* opened by the first write, -1 */
	uint64_t seq[2];               /* a valid slot's number, else 0 */
	uint64_t size[2];              /* the slot files' sizes */
	bool head_unknown[2];          /* a header write failed: any header */
	bool sync;                     /* the syncs above (default true) */
	slotfile_disk disk;
} slotfile;

/* No files yet (slotfile_close does nothing), the system's disk calls,
 * syncs on. */
void slotfile_init(slotfile *f);
/* Takes path (PATH above) and reads the two slots' headers; a missing
 * slot file is an empty slot.  f is closed or was never opened; it gets
 * the system's disk calls and syncs on (set others after).  0,
 * -ENAMETOOLONG, or -errno. */
int slotfile_open(slotfile *f, const char *path);
/* The newest valid contents in a new buffer (freed by the caller): 0,
 * -ENOENT if no slot holds any, -EFBIG past max bytes, -errno. */
int slotfile_read(slotfile *f, size_t max, uint8_t **ret_buf, size_t *ret_len);
/* Writes the bytes of n pieces in order as the new contents (iov is used
 * up), on the disk when it returns (with sync).  0 or -errno; on failure
 * the last whole write is still the newest. */
int slotfile_writev(slotfile *f, struct iovec *iov, size_t n);
void slotfile_close(slotfile *f);

/* The header's decoder: the sequence number of a valid header for a file
 * of file_size bytes (len bytes of it at head), 0 if it is not one. */
uint64_t slotfile_head_seq(const uint8_t *head, size_t len, uint64_t file_size);

#endif
