/*
 * Unit tests of daemon/slotfile.c under a disk that loses power: at every
 * point of a write, with any part of what was not synced on the disk, the
 * last whole write or the new one comes back, and the new one once the
 * write returned; and the syncs a write makes.  Through the slot file's
 * disk seam (slotfile_disk).
 */
#include "slotfiletest.h"

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

int main(void)
{
	Suite *s = suite_create("daemon-slotfile-power");
	TCase *tc = tcase_create("slotfile-power");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_power_loss_at_every_point);
	tcase_add_test(tc, test_syncs_a_write_makes);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
