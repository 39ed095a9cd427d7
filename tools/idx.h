/*
 * idx: the IDX container of MNIST and Fashion-MNIST, unsigned-byte flavour.
 *
 * This module owns decoding IDX files (raw or gzip-compressed) into a flat
 * byte array with its dimensions, and loading the Fashion-MNIST training and
 * test sets.  It promises that every declared size is checked against the
 * bytes actually present before anything is allocated or copied, so any
 * input, however malformed, yields either a fully valid gsp_idx or a
 * negative errno with the output untouched.  It does not log.
 *
 * Format: bytes 0 and 1 are zero, byte 2 is the element type (only 0x08,
 * unsigned byte, is accepted), byte 3 is ndim; then ndim big-endian u32
 * dimensions; then exactly the product of the dimensions in data bytes,
 * row-major, with nothing after them.
 */
#ifndef GSP_TOOLS_IDX_H
#define GSP_TOOLS_IDX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GSP_IDX_TYPE_U8 0x08
#define GSP_IDX_MAX_DIMS 4
/* Largest element count accepted (2 GiB of data). */
#define GSP_IDX_MAX_COUNT (UINT64_C(1) << 31)

/* Where the Debian package dataset-fashion-mnist installs the data set. */
#ifndef GSP_FMNIST_DIR
#define GSP_FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#endif
#define GSP_FMNIST_ROWS 28
#define GSP_FMNIST_COLS 28
#define GSP_FMNIST_CLASSES 10
/* Decompressed size cap per file: the training images are 47,040,016 bytes. */
#define GSP_FMNIST_MAX_BYTES ((size_t)64 << 20)

typedef struct gsp_idx {
	unsigned ndim;                     /* 1..GSP_IDX_MAX_DIMS */
	uint32_t dims[GSP_IDX_MAX_DIMS];   /* each >= 1; unused ones are 0 */
	uint64_t count;                    /* product of dims, <= GSP_IDX_MAX_COUNT */
	uint8_t *data;                     /* count bytes, owned; gsp_idx_free() */
} gsp_idx;

/* Decodes one complete IDX image of len bytes, copying the data.  Fails
 * with -EINVAL for a short header, bad magic, a type other than 0x08, ndim
 * 0 or > GSP_IDX_MAX_DIMS, a zero dimension, or a length other than header
 * plus count (missing or trailing bytes); -EOVERFLOW when the element count
 * exceeds GSP_IDX_MAX_COUNT; -ENOMEM.  ret is written only on success. */
int gsp_idx_decode(const uint8_t *buf, size_t len, gsp_idx *ret)
	__attribute__((warn_unused_result));

/* Reads the file at path, gzip-compressed or plain, and decodes it.  At
 * most max_bytes of (decompressed) content are accepted: a larger file
 * fails with -EFBIG.  I/O errors return -errno; a corrupt or truncated gzip
 * stream returns -EBADMSG.  ret is written only on success. */
int gsp_idx_load(const char *path, size_t max_bytes, gsp_idx *ret)
	__attribute__((warn_unused_result));

/* Frees idx->data and zeroes *idx.  Accepts NULL and zeroed structs, and
 * may be called twice on the same struct. */
void gsp_idx_free(gsp_idx *idx);

/* Loads <dir>/<set>-images-idx3-ubyte.gz and <dir>/<set>-labels-idx1-ubyte.gz
 * (dir NULL means GSP_FMNIST_DIR; set is "train" or "t10k") and checks that
 * the images are [N, 28, 28], the labels [N] with the same N, and every
 * label < 10.  Inconsistent files fail with -EINVAL.  Both outputs are
 * written only on success; free each with gsp_idx_free(). */
int gsp_fmnist_images(const char *dir, const char *set, gsp_idx *ret_images,
		      gsp_idx *ret_labels) __attribute__((warn_unused_result));

#ifdef __cplusplus
}
#endif
#endif
