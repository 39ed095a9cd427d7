/* slotfile: a file rewritten in place (slotfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "slotfile.h"

static const char magic[8] = {'g', 's', 'p', ' ', 's', 'l', 'o', 't'};

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t slotfile_head_seq(const uint8_t *head, size_t len, uint64_t file_size)
{
	if (len < SLOTFILE_HEAD || file_size < SLOTFILE_HEAD ||
	    memcmp(head, magic, sizeof(magic)) != 0 ||
	    get64(head + 16) != file_size - SLOTFILE_HEAD || get64(head + 24) != 0)
		return 0;
	return get64(head + 8);
}

/* PATH.k in f->path. */
static const char *slot_path(slotfile *f, int k)
{
	f->path[f->base] = '.';
	f->path[f->base + 1] = (char)('0' + k);
	f->path[f->base + 2] = 0;
	return f->path;
}

/* The slot's header and size, from a file opened for reading only. */
static int scan(slotfile *f, int k)
{
	f->seq[k] = f->size[k] = 0;
	int fd = open(slot_path(f, k), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	struct stat st;
	uint8_t head[SLOTFILE_HEAD];
	ssize_t r = -1;
	int rc = fstat(fd, &st) == 0 ? 0 : -errno;
	while (!rc && (r = pread(fd, head, sizeof(head), 0)) < 0 && errno == EINTR)
		;
	if (!rc && r < 0)
		rc = -errno;
	close(fd);
	if (rc)
		return rc;
	f->size[k] = (uint64_t)st.st_size;
	f->seq[k] = slotfile_head_seq(head, (size_t)r, f->size[k]);
	return 0;
}

/* ---- the system's disk calls ------------------------------------------ */

static int sys_pwritev(void *ctx, int fd, struct iovec *iov, size_t n, off_t off)
{
	return file_pwritev(fd, iov, n, off);
}

static int sys_truncate(void *ctx, int fd, off_t len)
{
	return ftruncate(fd, len) == 0 ? 0 : -errno;
}

static int sys_sync(void *ctx, int fd)
{
	int rc;
	while ((rc = fdatasync(fd)) != 0 && errno == EINTR)
		;
	return rc == 0 ? 0 : -errno;
}

static int sys_sync_dir(void *ctx, const char *path)
{
	char dir[GSP_PATH_MAX + 3];
	snprintf(dir, sizeof(dir), "%s", path);
	int fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) == 0 ? 0 : -errno;
	close(fd);
	return rc;
}

static const slotfile_disk sys_disk = {
	.pwritev = sys_pwritev, .truncate = sys_truncate, .sync = sys_sync,
	.sync_dir = sys_sync_dir,
};

void slotfile_init(slotfile *f)
{
	memset(f, 0, sizeof(*f));
	f->fd[0] = f->fd[1] = -1;
	f->sync = true;
	f->disk = sys_disk;
}

int slotfile_open(slotfile *f, const char *path)
{
	size_t base = strlen(path);
	slotfile_init(f);
	if (base + 3 > sizeof(f->path))
		return -ENAMETOOLONG;
	memcpy(f->path, path, base);
	f->base = base;
	int rc = scan(f, 0);
	return rc ? rc : scan(f, 1);
}

static int newest(const slotfile *f)
{
	if (!f->seq[0] && !f->seq[1])
		return -1;
	return f->seq[1] > f->seq[0];
}

int slotfile_read(slotfile *f, size_t max, uint8_t **ret_buf, size_t *ret_len)
{
	int k = newest(f);
	if (k < 0)
		return -ENOENT;
	uint8_t *buf;
	size_t len;
	int rc = file_read(slot_path(f, k), max + SLOTFILE_HEAD, &buf, &len);
	if (rc)
		return rc;
	/* Read again whole: a file changed since the scan is no slot. */
	if (slotfile_head_seq(buf, len, len) != f->seq[k]) {
		free(buf);
		return -EBADMSG;
	}
	memmove(buf, buf + SLOTFILE_HEAD, len - SLOTFILE_HEAD);
	*ret_buf = buf;
	*ret_len = len - SLOTFILE_HEAD;
	return 0;
}

static int sync_file(slotfile *f, int fd)
{
	return f->sync ? f->disk.sync(f->disk.ctx, fd) : 0;
}

/* Slot k's file, opened for writing; the first time, its name is made
 * durable (the directory synced). */
static int open_slot(slotfile *f, int k)
{
	if (f->fd[k] >= 0)
		return 0;
	f->fd[k] = open(slot_path(f, k), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (f->fd[k] < 0)
		return -errno;
	int rc = f->sync ? f->disk.sync_dir(f->disk.ctx, slot_path(f, k)) : 0;
	if (rc) {
		close(f->fd[k]);
		f->fd[k] = -1;
	}
	return rc;
}

int slotfile_writev(slotfile *f, struct iovec *iov, size_t n)
{
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += iov[i].iov_len;
	/* Never the slot with the newest contents. */
	int k = f->seq[0] > f->seq[1];
	uint64_t next = (f->seq[k ^ 1] > f->seq[k] ? f->seq[k ^ 1] : f->seq[k]) + 1;
	int rc = open_slot(f, k);
	if (rc)
		return rc;
	int fd = f->fd[k];
	uint8_t head[SLOTFILE_HEAD] = {0};
	struct iovec h = {.iov_base = head, .iov_len = sizeof(head)};
	/* A header whose write failed may be on the disk: none first. */
	if (f->head_unknown[k] && ((rc = f->disk.pwritev(f->disk.ctx, fd, &h, 1, 0)) ||
				   (rc = sync_file(f, fd))))
		return rc;
	f->head_unknown[k] = false;
	/* Its header stays as it was until its contents and length are on
	 * the disk: that of older contents than the other slot's, or none. */
	rc = f->disk.pwritev(f->disk.ctx, fd, iov, n, SLOTFILE_HEAD);
	if (rc)
		return rc;
	uint64_t size = SLOTFILE_HEAD + (uint64_t)len;
	if (f->size[k] < size)
		f->size[k] = size;
	if (f->size[k] > size && (rc = f->disk.truncate(f->disk.ctx, fd, (off_t)size)))
		return rc;
	f->size[k] = size;
	if ((rc = sync_file(f, fd)))
		return rc;
	memcpy(head, magic, sizeof(magic));
	put64(head + 8, next);
	put64(head + 16, len);
	h = (struct iovec){.iov_base = head, .iov_len = sizeof(head)};
	if ((rc = f->disk.pwritev(f->disk.ctx, fd, &h, 1, 0)) || (rc = sync_file(f, fd))) {
		f->head_unknown[k] = true;
		return rc;
	}
	f->seq[k] = next;
	return 0;
}

void slotfile_close(slotfile *f)
{
	for (int k = 0; k < 2; k++) {
		if (f->fd[k] >= 0)
			close(f->fd[k]);
		f->fd[k] = -1;
	}
}
