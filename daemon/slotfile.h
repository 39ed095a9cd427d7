/*
 * slotfile: a file rewritten in place, which a killed process never
 * leaves half-written.  The edges' records are saved after every STEP;
 * writing a new file and renaming it over the old one cost more than the
 * write itself (a new inode, the old one's eviction, and ext4 starting
 * the new file's writeback on every replace-by-rename).  A slot file is
 * two files, PATH.0 and PATH.1, each a header and the contents, kept open:
 *
 *   write:  into the slot that does not hold the newest contents: the
 *           contents written over its old ones, the file cut to their
 *           length, then its header written with the next sequence
 *           number;
 *   read:   the slot whose header is valid (its length is the file's),
 *           with the higher number.
 *
 * A write killed at any point leaves the other slot, the last whole
 * write, as the newest: the slot being written keeps the header of older
 * contents (or none) until its last step.  Like a rename without fsync this holds against
 * a killed process, not a lost machine: the kernel's page cache keeps the
 * writes in their order, and the header is one write inside one page.
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
#include <sys/uio.h>

#include "config.h"

#define SLOTFILE_HEAD 32

typedef struct slotfile {
	char path[GSP_PATH_MAX + 3];   /* PATH.k, k rewritten per slot */
	size_t base;                   /* strlen(PATH) */
	int fd[2];                     /* opened by the first write, -1 */
	uint64_t seq[2];               /* a valid slot's number, else 0 */
	uint64_t size[2];              /* the slot files' sizes */
} slotfile;

/* No files yet (slotfile_close does nothing). */
void slotfile_init(slotfile *f);
/* Takes path (PATH above) and reads the two slots' headers; a missing
 * slot file is an empty slot.  f is closed (slotfile_init or
 * slotfile_close).  0, -ENAMETOOLONG, or -errno. */
int slotfile_open(slotfile *f, const char *path);
/* The newest valid contents in a new buffer (freed by the caller): 0,
 * -ENOENT if no slot holds any, -EFBIG past max bytes, -errno. */
int slotfile_read(slotfile *f, size_t max, uint8_t **ret_buf, size_t *ret_len);
/* Writes the bytes of n pieces in order as the new contents (iov is used
 * up).  0 or -errno; on failure the last whole write is still the newest. */
int slotfile_writev(slotfile *f, struct iovec *iov, size_t n);
void slotfile_close(slotfile *f);

/* The header's decoder: the sequence number of a valid header for a file
 * of file_size bytes (len bytes of it at head), 0 if it is not one. */
uint64_t slotfile_head_seq(const uint8_t *head, size_t len, uint64_t file_size);

/* For tests: slotfile_writev as a process killed after its first `steps`
 * steps leaves the files (one step: each byte of the contents, the cut,
 * the header written).  -ECANCELED when it stopped before the end. */
int slotfile_writev_killed(slotfile *f, struct iovec *iov, size_t n, size_t steps);

#endif
