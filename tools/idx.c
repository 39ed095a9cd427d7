/*
 * idx: decoding IDX (MNIST-style) byte tensors, and loading Fashion-MNIST.
 * See idx.h for the format and the promises; this file keeps one rule:
 * every size read from a file is validated against the bytes in hand before
 * it is used to allocate, copy or index.
 */
#include "idx.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#define IDX_MAGIC_LEN 4
/* First allocation and largest single gzread() while loading a file. */
#define IDX_LOAD_FIRST_CHUNK ((size_t)64 << 10)
#define IDX_LOAD_MAX_READ ((size_t)1 << 30)
#define IDX_GZ_BUFFER (128u << 10)

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Validates the whole image without allocating.  On success fills the
 * shape fields of *ret (not data) and the header length. */
static int idx_parse(const uint8_t *buf, size_t len, gsp_idx *ret,
		     size_t *ret_header_len)
{
	gsp_idx hdr = { 0 };
	size_t header_len;
	uint64_t count = 1;

	if (!buf || len < IDX_MAGIC_LEN)
		return -EINVAL;
	if (buf[0] != 0 || buf[1] != 0 || buf[2] != GSP_IDX_TYPE_U8)
		return -EINVAL;
	hdr.ndim = buf[3];
	if (hdr.ndim == 0 || hdr.ndim > GSP_IDX_MAX_DIMS)
		return -EINVAL;
	header_len = IDX_MAGIC_LEN + 4 * (size_t)hdr.ndim;
	if (len < header_len)
		return -EINVAL;

	for (unsigned i = 0; i < hdr.ndim; i++) {
		hdr.dims[i] = be32(buf + IDX_MAGIC_LEN + 4 * (size_t)i);
		if (hdr.dims[i] == 0)
			return -EINVAL;
	}
	for (unsigned i = 0; i < hdr.ndim; i++) {
		/* count <= 2^31 and dims[i] < 2^32: the product fits in 64 bits. */
		count *= hdr.dims[i];
		if (count > GSP_IDX_MAX_COUNT)
			return -EOVERFLOW;
	}
	if (len - header_len != count)
		return -EINVAL;

	hdr.count = count;
	*ret = hdr;
	*ret_header_len = header_len;
	return 0;
}

int gsp_idx_decode(const uint8_t *buf, size_t len, gsp_idx *ret)
{
	gsp_idx idx;
	size_t header_len;
	int r;

	if (!ret)
		return -EINVAL;
	r = idx_parse(buf, len, &idx, &header_len);
	if (r < 0)
		return r;
	idx.data = malloc((size_t)idx.count);
	if (!idx.data)
		return -ENOMEM;
	memcpy(idx.data, buf + header_len, (size_t)idx.count);
	*ret = idx;
	return 0;
}

/* Maps the state of a gzFile after a failed or short read to -errno. */
static int gz_failure(gzFile f, int saved_errno)
{
	int zerr = Z_OK;

	(void)gzerror(f, &zerr);
	switch (zerr) {
	case Z_OK:
		return 0;
	case Z_ERRNO:
		return saved_errno > 0 ? -saved_errno : -EIO;
	case Z_MEM_ERROR:
		return -ENOMEM;
	case Z_BUF_ERROR:   /* the stream ended in the middle of a member */
	case Z_DATA_ERROR:
	case Z_STREAM_ERROR:
	default:
		return -EBADMSG;
	}
}

/* Reads the whole (decompressed) file, at most max_bytes. */
static int read_all(gzFile f, size_t max_bytes, uint8_t **ret_buf,
		    size_t *ret_len)
{
	size_t cap = max_bytes < IDX_LOAD_FIRST_CHUNK ? max_bytes
						      : IDX_LOAD_FIRST_CHUNK;
	size_t len = 0;
	uint8_t *buf = malloc(cap > 0 ? cap : 1);
	int r;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		size_t want;
		int n;

		if (len == cap) {
			if (cap == max_bytes) {
				uint8_t probe;

				errno = 0;
				n = gzread(f, &probe, 1);
				if (n > 0) {
					r = -EFBIG;
					goto fail;
				}
				if (n < 0) {
					r = gz_failure(f, errno);
					goto fail;
				}
				break;
			}
			size_t ncap = cap > max_bytes / 2 ? max_bytes : cap * 2;
			uint8_t *nbuf = realloc(buf, ncap);
			if (!nbuf) {
				r = -ENOMEM;
				goto fail;
			}
			buf = nbuf;
			cap = ncap;
		}
		want = cap - len;
		if (want > IDX_LOAD_MAX_READ)
			want = IDX_LOAD_MAX_READ;
		errno = 0;
		n = gzread(f, buf + len, (unsigned)want);
		if (n < 0) {
			r = gz_failure(f, errno);
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	/* A truncated gzip stream reads short and flags Z_BUF_ERROR. */
	r = gz_failure(f, errno);
	if (r < 0)
		goto fail;
	*ret_buf = buf;
	*ret_len = len;
	return 0;
fail:
	free(buf);
	return r < 0 ? r : -EIO;
}

int gsp_idx_load(const char *path, size_t max_bytes, gsp_idx *ret)
{
	gzFile f;
	uint8_t *buf = NULL, *shrunk;
	size_t len = 0, header_len;
	gsp_idx idx;
	int r;

	if (!path || !ret)
		return -EINVAL;
	errno = 0;
	f = gzopen(path, "rbe");
	if (!f)
		return errno > 0 ? -errno : -ENOMEM;
	if (gzbuffer(f, IDX_GZ_BUFFER) != 0) {
		(void)gzclose(f);
		return -EIO;
	}
	r = read_all(f, max_bytes, &buf, &len);
	(void)gzclose(f);
	if (r < 0)
		return r;

	r = idx_parse(buf, len, &idx, &header_len);
	if (r < 0) {
		free(buf);
		return r;
	}
	/* Keep the file buffer as the data: slide the payload to the front. */
	memmove(buf, buf + header_len, (size_t)idx.count);
	shrunk = realloc(buf, (size_t)idx.count);
	if (shrunk)
		buf = shrunk;
	idx.data = buf;
	*ret = idx;
	return 0;
}

void gsp_idx_free(gsp_idx *idx)
{
	if (!idx)
		return;
	free(idx->data);
	memset(idx, 0, sizeof(*idx));
}

static int fmnist_path(char *out, size_t size, const char *dir,
		       const char *set, const char *what)
{
	int n = snprintf(out, size, "%s/%s-%s-ubyte.gz", dir, set, what);

	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

int gsp_fmnist_images(const char *dir, const char *set, gsp_idx *ret_images,
		      gsp_idx *ret_labels)
{
	char path[PATH_MAX];
	gsp_idx images = { 0 }, labels = { 0 };
	int r;

	if (!set || !ret_images || !ret_labels)
		return -EINVAL;
	if (strcmp(set, "train") != 0 && strcmp(set, "t10k") != 0)
		return -EINVAL;
	if (!dir)
		dir = GSP_FMNIST_DIR;

	r = fmnist_path(path, sizeof(path), dir, set, "images-idx3");
	if (r < 0)
		return r;
	r = gsp_idx_load(path, GSP_FMNIST_MAX_BYTES, &images);
	if (r < 0)
		return r;
	r = fmnist_path(path, sizeof(path), dir, set, "labels-idx1");
	if (r < 0)
		goto fail;
	r = gsp_idx_load(path, GSP_FMNIST_MAX_BYTES, &labels);
	if (r < 0)
		goto fail;

	r = -EINVAL;
	if (images.ndim != 3 || images.dims[1] != GSP_FMNIST_ROWS ||
	    images.dims[2] != GSP_FMNIST_COLS)
		goto fail;
	if (labels.ndim != 1 || labels.dims[0] != images.dims[0])
		goto fail;
	for (uint64_t i = 0; i < labels.count; i++)
		if (labels.data[i] >= GSP_FMNIST_CLASSES)
			goto fail;

	*ret_images = images;
	*ret_labels = labels;
	return 0;
fail:
	gsp_idx_free(&images);
	gsp_idx_free(&labels);
	return r;
}
