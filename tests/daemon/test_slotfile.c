/*
 * Unit tests of daemon/slotfile.c: contents written in place come back
 * whole; a write killed at every one of its steps leaves the last whole
 * write as the newest; a power loss at every point of a write, with any
 * part of what was not synced on the disk, leaves the last whole write or
 * the new one, and the new one once the write returned; malformed headers
 * are no slot.  Kills and power losses go through the slot file's disk
 * seam (slotfile_disk).
 */
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

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir), "slotfile");
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

static void path_of(char *out, size_t cap, const char *name)
{
	tmpdir_path(out, cap, dir, name);
}

/* Contents number v of length len: bytes no other v repeats. */
static uint8_t *contents(int v, size_t len)
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

static int kill_pwritev(void *ctx, int fd, struct iovec *iov, size_t n, off_t off)
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

static int kill_truncate(void *ctx, int fd, off_t len)
{
	killing_disk *d = ctx;
	if (d->killed || d->steps == 0)
		return d->killed = true, -ECANCELED;
	d->steps--;
	return ftruncate(fd, len) == 0 ? 0 : -errno;
}

static int kill_sync(void *ctx, int fd)
{
	killing_disk *d = ctx;
	return d->killed ? -ECANCELED : 0;
}

static int kill_sync_dir(void *ctx, const char *path)
{
	return kill_sync(ctx, -1);
}

/* Writes contents v in three pieces (the middle one empty), whole or as
 * a process killed after `steps` steps (SIZE_MAX: whole). */
static int put(slotfile *f, int v, size_t len, size_t steps)
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
static void open_new(slotfile *f, const char *path)
{
	ck_assert_int_eq(slotfile_open(f, path), 0);
	f->sync = false;
}

/* What a daemon started at path reads: contents v of length len, or
 * nothing (v < 0). */
static void newest_is(const char *path, int v, size_t len)
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

static off_t size_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_size : -1;
}

START_TEST(test_round_trip_and_alternation)
{
	char path[200], slot0[210], slot1[210];
	path_of(path, sizeof(path), "edges");
	snprintf(slot0, sizeof(slot0), "%s.0", path);
	snprintf(slot1, sizeof(slot1), "%s.1", path);
	slotfile f;
	ck_assert_int_eq(slotfile_open(&f, path), 0);     /* the system's syncs */
	newest_is(path, -1, 0);
	/* Longer and shorter contents in turn, and empty ones. */
	static const size_t lens[] = {5000, 100, 70000, 0, 3, 9000, 9000};
	for (int v = 0; v < (int)(sizeof(lens) / sizeof(lens[0])); v++) {
		ck_assert_int_eq(put(&f, v, lens[v], SIZE_MAX), 0);
		newest_is(path, v, lens[v]);
		/* Each write goes to the other slot, cut to its contents. */
		ck_assert_int_eq(size_of(v % 2 ? slot1 : slot0),
				 (off_t)(SLOTFILE_HEAD + lens[v]));
		if (v)
			ck_assert_int_eq(size_of(v % 2 ? slot0 : slot1),
					 (off_t)(SLOTFILE_HEAD + lens[v - 1]));
	}
	slotfile_close(&f);
	/* A daemon started again writes after what it found. */
	open_new(&f, path);
	ck_assert_int_eq(put(&f, 40, 123, SIZE_MAX), 0);
	newest_is(path, 40, 123);
	ck_assert_int_eq(put(&f, 41, 7, SIZE_MAX), 0);
	newest_is(path, 41, 7);
	slotfile_close(&f);
	ck_assert_int_eq(access(path, F_OK), -1);     /* only the slots */
}
END_TEST

/* Killed at every step of a write, for new contents longer, shorter and
 * as long as those they overwrite, and for the very first write: the
 * next start reads the last whole write (or nothing), and goes on.  The
 * first number of steps that is not killed leaves the new contents. */
START_TEST(test_killed_at_every_step)
{
	static const size_t cases[][3] = {
		/* the two earlier writes' lengths, the killed one's */
		{40, 50, 90}, {90, 50, 40}, {64, 64, 64}, {0, 30, 0}, {30, 0, 30},
	};
	char path[200];
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		size_t len = cases[c][2], steps;
		for (steps = 0;; steps++) {
			ck_assert_uint_le(steps, len + 2);
			char name[64];
			snprintf(name, sizeof(name), "edges-%zu-%zu", c, steps);
			path_of(path, sizeof(path), name);
			slotfile f;
			open_new(&f, path);
			ck_assert_int_eq(put(&f, 1, cases[c][0], SIZE_MAX), 0);
			ck_assert_int_eq(put(&f, 2, cases[c][1], SIZE_MAX), 0);
			int rc = put(&f, 3, len, steps);
			slotfile_close(&f);
			if (rc == 0) {
				newest_is(path, 3, len);
				break;
			}
			ck_assert_int_eq(rc, -ECANCELED);
			newest_is(path, 2, cases[c][1]);
			/* The restarted daemon's next writes. */
			open_new(&f, path);
			ck_assert_int_eq(put(&f, 4, len, SIZE_MAX), 0);
			newest_is(path, 4, len);
			ck_assert_int_eq(put(&f, 5, cases[c][0], SIZE_MAX), 0);
			newest_is(path, 5, cases[c][0]);
			slotfile_close(&f);
		}
		/* Every byte, the header, and the cut when the file shrinks. */
		ck_assert_uint_eq(steps, len + 1 + (len < cases[c][0]));
	}
	/* The first write killed: nothing; the next start's first write. */
	for (size_t steps = 0; steps <= 20; steps++) {
		char name[64];
		snprintf(name, sizeof(name), "first-%zu", steps);
		path_of(path, sizeof(path), name);
		slotfile f;
		open_new(&f, path);
		ck_assert_int_eq(put(&f, 1, 20, steps), -ECANCELED);
		slotfile_close(&f);
		newest_is(path, -1, 0);
		open_new(&f, path);
		ck_assert_int_eq(put(&f, 2, 20, SIZE_MAX), 0);
		slotfile_close(&f);
		newest_is(path, 2, 20);
	}
}
END_TEST

/* ---- a disk that loses power ------------------------------------------
 * It keeps, per slot file, what is on the disk (what the last sync saw,
 * and whether the file's name is: the directory was synced) and the
 * writes since then, split into PL_PAGE-byte pieces, each of which may or
 * may not have reached the disk when the power goes; a cut is one more
 * such piece, and a name never synced may be lost with its file.  At every
 * call of a write, and after it returned, every such disk is made (as the
 * slot files at crash_path) and read as a daemon started there reads it. */
#define PL_PAGE 64
#define PL_OPS 64

typedef struct pl_op {
	bool cut;                /* ftruncate to off, else write */
	off_t off;
	size_t len;
	uint8_t bytes[PL_PAGE];
} pl_op;

typedef struct pl_file {
	uint8_t disk[1024];      /* on the disk */
	size_t disk_len;
	bool named;              /* its name is on the disk */
	pl_op op[PL_OPS];        /* since the last sync */
	size_t n_ops;
} pl_file;

typedef struct pl_disk {
	slotfile *f;
	pl_file file[2];
	char crash_path[200];
	int allowed[2];          /* the contents a crash may leave (-1: none) */
	size_t allowed_len[2];
	size_t images;           /* disks made and read */
	size_t syncs;
} pl_disk;

static pl_file *pl_of(pl_disk *d, int fd)
{
	int k = d->f->fd[0] == fd ? 0 : 1;
	ck_assert_int_eq(d->f->fd[k], fd);
	return &d->file[k];
}

static void pl_apply(uint8_t *img, size_t *len, const pl_op *o)
{
	if (o->cut) {
		if ((size_t)o->off < *len)
			*len = (size_t)o->off;
		return;
	}
	ck_assert_uint_le(o->off + o->len, 1024);
	if ((size_t)o->off > *len)
		memset(img + *len, 0, (size_t)o->off - *len);
	memcpy(img + o->off, o->bytes, o->len);
	if (o->off + o->len > *len)
		*len = o->off + o->len;
}

/* The disk of choice bits `pick` (one per pending piece, then one per
 * slot whose name may be lost), read back: it must be an allowed one. */
static void pl_read_image(pl_disk *d, uint64_t pick)
{
	int bit = 0;
	for (int k = 0; k < 2; k++) {
		pl_file *p = &d->file[k];
		uint8_t img[1024];
		size_t len = p->disk_len;
		memcpy(img, p->disk, len);
		for (size_t i = 0; i < p->n_ops; i++, bit++)
			if (pick >> bit & 1)
				pl_apply(img, &len, &p->op[i]);
		bool present = p->named || (p->n_ops && (pick >> bit++ & 1));
		char slot[220];
		snprintf(slot, sizeof(slot), "%s.%d", d->crash_path, k);
		unlink(slot);
		if (!present)
			continue;
		int fd = open(slot, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, img, len), (ssize_t)len);
		close(fd);
	}
	slotfile r;
	ck_assert_int_eq(slotfile_open(&r, d->crash_path), 0);
	uint8_t *got = NULL;
	size_t got_len = 0;
	int rc = slotfile_read(&r, 1u << 20, &got, &got_len);
	slotfile_close(&r);
	bool ok = false;
	for (int a = 0; a < 2 && !ok; a++) {
		if (d->allowed[a] < 0) {
			ok = rc == -ENOENT;
			continue;
		}
		uint8_t *want = contents(d->allowed[a], d->allowed_len[a]);
		ok = rc == 0 && got_len == d->allowed_len[a] &&
		     !memcmp(got, want, got_len);
		free(want);
	}
	free(got);
	ck_assert_msg(ok, "a power loss left contents that are neither the last "
		      "whole write (%d) nor the new one (%d): read %d, %zu bytes",
		      d->allowed[0], d->allowed[1], rc, got_len);
	d->images++;
}

/* Every disk a power loss now could leave. */
static void pl_crash_here(pl_disk *d)
{
	int bits = 0;
	for (int k = 0; k < 2; k++)
		bits += (int)d->file[k].n_ops + (!d->file[k].named && d->file[k].n_ops);
	ck_assert_int_le(bits, 16);
	for (uint64_t pick = 0; pick < (uint64_t)1 << bits; pick++)
		pl_read_image(d, pick);
}

static void pl_push(pl_file *p, const pl_op *o)
{
	ck_assert_uint_lt(p->n_ops, PL_OPS);
	p->op[p->n_ops++] = *o;
}

static int pl_pwritev(void *ctx, int fd, struct iovec *iov, size_t n, off_t off)
{
	pl_disk *d = ctx;
	pl_crash_here(d);
	pl_file *p = pl_of(d, fd);
	off_t at = off;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *b = iov[i].iov_base;
		size_t left = iov[i].iov_len;
		while (left) {
			pl_op o = {.off = at};
			o.len = PL_PAGE - (size_t)(at % PL_PAGE);
			if (o.len > left)
				o.len = left;
			memcpy(o.bytes, b, o.len);
			pl_push(p, &o);
			b += o.len;
			at += (off_t)o.len;
			left -= o.len;
		}
	}
	return file_pwritev(fd, iov, n, off);
}

static int pl_truncate(void *ctx, int fd, off_t len)
{
	pl_disk *d = ctx;
	pl_crash_here(d);
	pl_push(pl_of(d, fd), &(pl_op){.cut = true, .off = len});
	return ftruncate(fd, len) == 0 ? 0 : -errno;
}

static int pl_sync(void *ctx, int fd)
{
	pl_disk *d = ctx;
	pl_crash_here(d);
	pl_file *p = pl_of(d, fd);
	for (size_t i = 0; i < p->n_ops; i++)
		pl_apply(p->disk, &p->disk_len, &p->op[i]);
	p->n_ops = 0;
	d->syncs++;
	return 0;
}

static int pl_sync_dir(void *ctx, const char *path)
{
	pl_disk *d = ctx;
	pl_crash_here(d);
	size_t n = strlen(path);
	d->file[path[n - 1] == '1'].named = true;
	return 0;
}

/* A power loss at every call of every write, with every part of what was
 * not synced on the disk: the newest contents read are the last whole
 * write's or the new write's, and the new write's once it returned.  New
 * contents longer, shorter and as long as those they overwrite (as long:
 * the length check cannot tell a slot whose contents did not reach the
 * disk). */
START_TEST(test_power_loss_at_every_point)
{
	static const size_t lens[] = {150, 40, 150, 150, 0, 100, 100, 7};
	char path[200];
	path_of(path, sizeof(path), "edges");
	pl_disk d = {0};
	path_of(d.crash_path, sizeof(d.crash_path), "crash");
	slotfile f;
	ck_assert_int_eq(slotfile_open(&f, path), 0);
	f.disk = (slotfile_disk){.pwritev = pl_pwritev, .truncate = pl_truncate,
				 .sync = pl_sync, .sync_dir = pl_sync_dir, .ctx = &d};
	d.f = &f;
	d.allowed[1] = -1;
	for (int v = 0; v < (int)(sizeof(lens) / sizeof(lens[0])); v++) {
		d.allowed[0] = d.allowed[1];
		d.allowed_len[0] = d.allowed_len[1];
		d.allowed[1] = v;
		d.allowed_len[1] = lens[v];
		size_t syncs = d.syncs;
		ck_assert_int_eq(put(&f, v, lens[v], SIZE_MAX), 0);
		/* Returned: only the new contents. */
		d.allowed[0] = v;
		d.allowed_len[0] = lens[v];
		pl_crash_here(&d);
		/* Two syncs a write: what it costs. */
		ck_assert_uint_eq(d.syncs - syncs, 2);
	}
	ck_assert_uint_gt(d.images, 100);
	slotfile_close(&f);
	newest_is(path, (int)(sizeof(lens) / sizeof(lens[0])) - 1, 7);
}
END_TEST

static int plain_pwritev(void *ctx, int fd, struct iovec *iov, size_t n, off_t off)
{
	return file_pwritev(fd, iov, n, off);
}

static int plain_truncate(void *ctx, int fd, off_t len)
{
	return ftruncate(fd, len) == 0 ? 0 : -errno;
}

static int counted_sync(void *ctx, int fd)
{
	++*(size_t *)ctx;
	return 0;
}

static int counted_sync_dir(void *ctx, const char *path)
{
	return counted_sync(ctx, -1);
}

/* Without syncs (SyncRecords = false) a write calls none, and a kill
 * still leaves the last whole write (test_killed_at_every_step); with
 * them, two a write and one for each slot file's name. */
START_TEST(test_syncs_a_write_makes)
{
	for (int sync = 0; sync < 2; sync++) {
		char path[200];
		path_of(path, sizeof(path), sync ? "synced" : "unsynced");
		size_t syncs = 0;
		slotfile f;
		ck_assert_int_eq(slotfile_open(&f, path), 0);
		f.sync = sync;
		f.disk = (slotfile_disk){.pwritev = plain_pwritev, .truncate = plain_truncate,
					 .sync = counted_sync, .sync_dir = counted_sync_dir,
					 .ctx = &syncs};
		for (int v = 1; v <= 3; v++)
			ck_assert_int_eq(put(&f, v, 100 - v, SIZE_MAX), 0);
		ck_assert_uint_eq(syncs, sync ? 3 * 2 + 2 : 0);
		slotfile_close(&f);
		newest_is(path, 3, 97);
	}
}
END_TEST

/* A write that fails (no room in the directory) leaves the last whole
 * write the newest, in the same process too. */
START_TEST(test_failed_write_keeps_the_last)
{
	char path[200], slot1[210], nowhere[200];
	path_of(path, sizeof(path), "edges");
	path_of(nowhere, sizeof(nowhere), "no-such-dir/slot");
	snprintf(slot1, sizeof(slot1), "%s.1", path);
	slotfile f;
	open_new(&f, path);
	ck_assert_int_eq(put(&f, 1, 100, SIZE_MAX), 0);
	/* Slot 1 cannot be made: a link into a directory that is not. */
	ck_assert_int_eq(symlink(nowhere, slot1), 0);
	ck_assert_int_lt(put(&f, 2, 100, SIZE_MAX), 0);
	newest_is(path, 1, 100);
	ck_assert_int_lt(put(&f, 3, 100, SIZE_MAX), 0);     /* never slot 0 */
	newest_is(path, 1, 100);
	ck_assert_int_eq(unlink(slot1), 0);
	ck_assert_int_eq(put(&f, 4, 100, SIZE_MAX), 0);
	newest_is(path, 4, 100);
	slotfile_close(&f);
}
END_TEST

static void head(uint8_t *h, const char *magic, uint64_t seq, uint64_t len,
		 uint64_t zero)
{
	memcpy(h, magic, 8);
	for (int i = 0; i < 8; i++) {
		h[8 + i] = (uint8_t)(seq >> (8 * i));
		h[16 + i] = (uint8_t)(len >> (8 * i));
		h[24 + i] = (uint8_t)(zero >> (8 * i));
	}
}

START_TEST(test_header_refuses_malformed)
{
	uint8_t h[SLOTFILE_HEAD];
	head(h, "gsp slot", 7, 10, 0);
	ck_assert_uint_eq(slotfile_head_seq(h, sizeof(h), SLOTFILE_HEAD + 10), 7);
	/* Short, a size that is not the length's, under the header. */
	ck_assert_uint_eq(slotfile_head_seq(h, SLOTFILE_HEAD - 1, SLOTFILE_HEAD + 10), 0);
	ck_assert_uint_eq(slotfile_head_seq(h, sizeof(h), SLOTFILE_HEAD + 11), 0);
	ck_assert_uint_eq(slotfile_head_seq(h, sizeof(h), SLOTFILE_HEAD + 9), 0);
	ck_assert_uint_eq(slotfile_head_seq(h, sizeof(h), 3), 0);
	/* Magic, reserved word, sequence number 0. */
	head(h, "gsp slop", 7, 10, 0);
	ck_assert_uint_eq(slotfile_head_seq(h, sizeof(h), SLOTFILE_HEAD + 10), 0);
	head(h, "gsp slot", 7, 10, 1);
	ck_assert_uint_eq(slotfile_head_seq(h, sizeof(h), SLOTFILE_HEAD + 10), 0);
	head(h, "gsp slot", 0, 10, 0);
	ck_assert_uint_eq(slotfile_head_seq(h, sizeof(h), SLOTFILE_HEAD + 10), 0);
	/* A length that wraps. */
	head(h, "gsp slot", 7, UINT64_MAX, 0);
	ck_assert_uint_eq(slotfile_head_seq(h, sizeof(h), SLOTFILE_HEAD - 1), 0);
}
END_TEST

/* Slot files written by hand: a bad one is skipped, a valid one older
 * than the other is not read, a file that changed under the reader is
 * refused. */
START_TEST(test_reader_takes_the_newest_valid)
{
	char path[200], slot[2][210];
	path_of(path, sizeof(path), "edges");
	for (int k = 0; k < 2; k++)
		snprintf(slot[k], sizeof(slot[k]), "%s.%d", path, k);
	uint8_t file[SLOTFILE_HEAD + 4];
	head(file, "gsp slot", 9, 4, 0);
	memcpy(file + SLOTFILE_HEAD, "nine", 4);
	FILE *w = fopen(slot[0], "wb");
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_eq(fwrite(file, 1, sizeof(file), w), sizeof(file));
	fclose(w);
	head(file, "gsp slot", 12, 5, 0);     /* newer, but cut short */
	memcpy(file + SLOTFILE_HEAD, "twel", 4);
	w = fopen(slot[1], "wb");
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_eq(fwrite(file, 1, sizeof(file), w), sizeof(file));
	fclose(w);
	slotfile f;
	open_new(&f, path);
	uint8_t *got;
	size_t len;
	ck_assert_int_eq(slotfile_read(&f, 100, &got, &len), 0);
	ck_assert_uint_eq(len, 4);
	ck_assert(!memcmp(got, "nine", 4));
	free(got);
	ck_assert_int_eq(slotfile_read(&f, 3, &got, &len), -EFBIG);
	/* Changed since the scan: refused, not another slot's contents. */
	ck_assert_int_eq(truncate(slot[0], SLOTFILE_HEAD + 2), 0);
	ck_assert_int_eq(slotfile_read(&f, 100, &got, &len), -EBADMSG);
	/* The next write goes to the bad slot, not over the valid one. */
	slotfile_close(&f);
	ck_assert_int_eq(truncate(slot[0], SLOTFILE_HEAD + 4), 0);
	open_new(&f, path);
	ck_assert_int_eq(put(&f, 7, 30, SIZE_MAX), 0);
	slotfile_close(&f);
	ck_assert_int_eq(size_of(slot[0]), SLOTFILE_HEAD + 4);
	newest_is(path, 7, 30);
}
END_TEST

START_TEST(test_path_too_long)
{
	char path[GSP_PATH_MAX + 8];
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = 0;
	slotfile f;
	ck_assert_int_eq(slotfile_open(&f, path), -ENAMETOOLONG);
	slotfile_close(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("daemon-slotfile");
	TCase *tc = tcase_create("slotfile");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_round_trip_and_alternation);
	tcase_add_test(tc, test_killed_at_every_step);
	tcase_add_test(tc, test_power_loss_at_every_point);
	tcase_add_test(tc, test_syncs_a_write_makes);
	tcase_add_test(tc, test_failed_write_keeps_the_last);
	tcase_add_test(tc, test_header_refuses_malformed);
	tcase_add_test(tc, test_reader_takes_the_newest_valid);
	tcase_add_test(tc, test_path_too_long);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
