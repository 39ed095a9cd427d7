/*
 * slotfiletest.h: what the slot file's tests share (test_slotfile.c, writes
 * killed and malformed headers; test_slotfile_power.c, power losses and
 * syncs): a temporary directory per test, numbered contents, writes
 * killed after a given number of steps, and what a restart reads.
 */
#ifndef GSP_TEST_SLOTFILETEST_H
#define GSP_TEST_SLOTFILETEST_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tmpdir.h"
#include "file.h"
#include "slotfile.h"

static char dir[64];

static inline void setup(void)
{
	tmpdir_make(dir, sizeof(dir), "slotfile");
}

static inline void teardown(void)
{
	tmpdir_remove(dir);
}

static inline void path_of(char *out, size_t cap, const char *name)
{
	tmpdir_path(out, cap, dir, name);
}

/* Contents number v of length len: bytes no other v repeats. */
static inline uint8_t *contents(int v, size_t len)
{
	uint8_t *b = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(b);
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(v * 31 + i * 7 + (i >> 8));
	return b;
}

/* A disk that lets a write make `steps` steps and then kills it: each
 * byte of the contents is a step, and so are the cut and the header
 * write.  Syncs are the system's. */
typedef struct killing_disk {
	size_t steps;
	bool killed;
} killing_disk;

static inline int kill_pwritev(void *ctx, int fd, struct iovec *iov, size_t n, off_t off)
{
	killing_disk *d = ctx;
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += iov[i].iov_len;
	if (off == 0 && len == SLOTFILE_HEAD) {      /* the header: one step */
		if (d->killed || d->steps == 0)
			return d->killed = true, -ECANCELED;
		d->steps--;
		return file_pwritev(fd, iov, n, off);
	}
	size_t keep = d->killed ? 0 : d->steps < len ? d->steps : len, m = 0, left = keep;
	while (m < n && left) {
		size_t l = iov[m].iov_len < left ? iov[m].iov_len : left;
		iov[m].iov_len = l;
		left -= l;
		m++;
	}
	int rc = file_pwritev(fd, iov, m, off);
	d->steps -= keep;
	if (rc || keep < len)
		return d->killed = true, rc ? rc : -ECANCELED;
	return 0;
}

static inline int kill_truncate(void *ctx, int fd, off_t len)
{
	killing_disk *d = ctx;
	if (d->killed || d->steps == 0)
		return d->killed = true, -ECANCELED;
	d->steps--;
	return ftruncate(fd, len) == 0 ? 0 : -errno;
}

static inline int kill_sync(void *ctx, int fd)
{
	killing_disk *d = ctx;
	return d->killed ? -ECANCELED : 0;
}

static inline int kill_sync_dir(void *ctx, const char *path)
{
	return kill_sync(ctx, -1);
}

/* Writes contents v in three pieces (the middle one empty), whole or as
 * a process killed after `steps` steps (SIZE_MAX: whole). */
static inline int put(slotfile *f, int v, size_t len, size_t steps)
{
	uint8_t *b = contents(v, len);
	size_t a = len / 3;
	struct iovec iov[3] = {{b, a}, {b + a, 0}, {b + a, len - a}};
	slotfile_disk sys = f->disk;
	killing_disk d = {.steps = steps};
	if (steps != SIZE_MAX)
		f->disk = (slotfile_disk){.pwritev = kill_pwritev, .truncate = kill_truncate,
					  .sync = kill_sync, .sync_dir = kill_sync_dir, .ctx = &d};
	int rc = slotfile_writev(f, iov, 3);
	f->disk = sys;
	free(b);
	return rc;
}

/* The slot files at path, without syncs: a killed process does not need
 * them (test_power_loss_at_every_point is where they count), and
 * thousands of them on a shared disk take seconds. */
static inline void open_new(slotfile *f, const char *path)
{
	ck_assert_int_eq(slotfile_open(f, path), 0);
	f->sync = false;
}

/* What a daemon started at path reads: contents v of length len, or
 * nothing (v < 0). */
static inline void newest_is(const char *path, int v, size_t len)
{
	slotfile f;
	open_new(&f, path);
	uint8_t *got;
	size_t got_len;
	int rc = slotfile_read(&f, 1u << 24, &got, &got_len);
	slotfile_close(&f);
	if (v < 0) {
		ck_assert_int_eq(rc, -ENOENT);
		return;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(got_len, len);
	uint8_t *want = contents(v, len);
	ck_assert(!memcmp(got, want, len));
	free(want);
	free(got);
}

static inline off_t size_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_size : -1;
}


#endif
