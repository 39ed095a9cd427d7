/*
 * Unit tests for tools/idx: the IDX decoder, file and gzip loading with its
 * size cap, and the Fashion-MNIST loader (on synthetic files always, on the
 * real data set when the Debian package is installed).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "idx.h"

#define SENTINEL 0xA5

static void fill_sentinel(gsp_idx *idx)
{
	memset(idx, SENTINEL, sizeof(*idx));
}

static int is_sentinel(const gsp_idx *idx)
{
	gsp_idx ref;

	fill_sentinel(&ref);
	return memcmp(idx, &ref, sizeof(ref)) == 0;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Writes an IDX header for ndim dims into buf; returns its length. */
static size_t put_header(uint8_t *buf, unsigned ndim, const uint32_t *dims)
{
	buf[0] = 0;
	buf[1] = 0;
	buf[2] = GSP_IDX_TYPE_U8;
	buf[3] = (uint8_t)ndim;
	for (unsigned i = 0; i < ndim; i++)
		put_be32(buf + 4 + 4 * i, dims[i]);
	return 4 + 4 * (size_t)ndim;
}

/* A valid IDX image with the given dims and data byte i = (i * 7 + seed). */
static uint8_t *make_idx(unsigned ndim, const uint32_t *dims, unsigned seed,
			 size_t *ret_len)
{
	size_t count = 1, hdr;
	uint8_t *buf;

	for (unsigned i = 0; i < ndim; i++)
		count *= dims[i];
	buf = malloc(4 + 4 * (size_t)ndim + count);
	ck_assert_ptr_nonnull(buf);
	hdr = put_header(buf, ndim, dims);
	for (size_t i = 0; i < count; i++)
		buf[hdr + i] = (uint8_t)(i * 7 + seed);
	*ret_len = hdr + count;
	return buf;
}

/* Decoding must fail with a negative code and leave ret as it was. */
static void expect_reject(const uint8_t *buf, size_t len, const char *what)
{
	gsp_idx idx;
	int r;

	fill_sentinel(&idx);
	r = gsp_idx_decode(buf, len, &idx);
	ck_assert_msg(r < 0, "%s: accepted (len %zu)", what, len);
	ck_assert_msg(is_sentinel(&idx), "%s: ret written on failure", what);
}

START_TEST(test_decode_1d)
{
	const uint8_t buf[] = { 0, 0, 8, 1, 0, 0, 0, 5, 10, 20, 30, 40, 250 };
	gsp_idx idx;

	ck_assert_int_eq(gsp_idx_decode(buf, sizeof(buf), &idx), 0);
	ck_assert_uint_eq(idx.ndim, 1);
	ck_assert_uint_eq(idx.dims[0], 5);
	ck_assert_uint_eq(idx.dims[1], 0);
	ck_assert_uint_eq(idx.count, 5);
	ck_assert_ptr_nonnull(idx.data);
	ck_assert_mem_eq(idx.data, buf + 8, 5);
	gsp_idx_free(&idx);
	ck_assert_ptr_null(idx.data);
	ck_assert_uint_eq(idx.count, 0);
}
END_TEST

START_TEST(test_decode_3d_4d)
{
	const uint32_t dims3[] = { 2, 3, 4 };
	const uint32_t dims4[] = { 2, 1, 3, 300 };
	size_t len;
	uint8_t *buf;
	gsp_idx idx;

	buf = make_idx(3, dims3, 1, &len);
	ck_assert_uint_eq(len, 16 + 24);
	ck_assert_int_eq(gsp_idx_decode(buf, len, &idx), 0);
	ck_assert_uint_eq(idx.ndim, 3);
	ck_assert_uint_eq(idx.dims[0], 2);
	ck_assert_uint_eq(idx.dims[1], 3);
	ck_assert_uint_eq(idx.dims[2], 4);
	ck_assert_uint_eq(idx.dims[3], 0);
	ck_assert_uint_eq(idx.count, 24);
	ck_assert_mem_eq(idx.data, buf + 16, 24);
	gsp_idx_free(&idx);
	free(buf);

	buf = make_idx(4, dims4, 3, &len);
	ck_assert_int_eq(gsp_idx_decode(buf, len, &idx), 0);
	ck_assert_uint_eq(idx.ndim, 4);
	ck_assert_uint_eq(idx.dims[3], 300);
	ck_assert_uint_eq(idx.count, 1800);
	ck_assert_mem_eq(idx.data, buf + 20, 1800);
	gsp_idx_free(&idx);
	free(buf);
}
END_TEST

START_TEST(test_decode_big_dims_bytewise)
{
	/* Each dim byte matters: 0x00000102 = 258, big-endian. */
	const uint8_t hdr[] = { 0, 0, 8, 2, 0, 0, 1, 2, 0, 0, 0, 1 };
	uint8_t buf[sizeof(hdr) + 258];
	gsp_idx idx;

	memcpy(buf, hdr, sizeof(hdr));
	memset(buf + sizeof(hdr), 0x5c, 258);
	ck_assert_int_eq(gsp_idx_decode(buf, sizeof(buf), &idx), 0);
	ck_assert_uint_eq(idx.dims[0], 258);
	ck_assert_uint_eq(idx.dims[1], 1);
	ck_assert_uint_eq(idx.count, 258);
	gsp_idx_free(&idx);
}
END_TEST

START_TEST(test_decode_malformed)
{
	const uint32_t dims[] = { 2, 3, 4 };
	uint8_t good[64], bad[64];
	size_t len;
	gsp_idx idx;

	len = put_header(good, 3, dims);
	memset(good + len, 0x11, 24);
	len += 24;
	ck_assert_int_eq(gsp_idx_decode(good, len, &idx), 0);
	gsp_idx_free(&idx);

	/* Arguments. */
	expect_reject(NULL, 0, "NULL buffer");
	expect_reject(NULL, len, "NULL buffer with length");
	ck_assert_int_eq(gsp_idx_decode(good, len, NULL), -EINVAL);

	/* Short header: fewer than 4 magic bytes, or fewer dim bytes. */
	expect_reject(good, 3, "3-byte header");
	expect_reject(good, 4, "no dims");
	expect_reject(good, 15, "partial dims");

	/* Bad magic. */
	memcpy(bad, good, len);
	bad[0] = 1;
	expect_reject(bad, len, "magic byte 0");
	memcpy(bad, good, len);
	bad[1] = 0x80;
	expect_reject(bad, len, "magic byte 1");

	/* Types other than unsigned byte. */
	static const uint8_t types[] = { 0x00, 0x07, 0x09, 0x0B, 0x0C, 0x0D,
					 0x0E, 0x88, 0xFF };
	for (size_t i = 0; i < sizeof(types); i++) {
		memcpy(bad, good, len);
		bad[2] = types[i];
		expect_reject(bad, len, "type");
	}

	/* ndim 0 and > 4. */
	memcpy(bad, good, len);
	bad[3] = 0;
	expect_reject(bad, len, "ndim 0");
	expect_reject(bad, 4, "ndim 0, header only");
	for (unsigned nd = 5; nd <= 255; nd += 50) {
		uint8_t big[4 + 4 * 255 + 1];

		memset(big, 0, sizeof(big));
		big[2] = GSP_IDX_TYPE_U8;
		big[3] = (uint8_t)nd;
		for (unsigned i = 0; i < nd; i++)
			put_be32(big + 4 + 4 * i, 1);
		expect_reject(big, 4 + 4 * (size_t)nd + 1, "ndim > 4");
	}

	/* A zero dimension in each position. */
	for (unsigned d = 0; d < 3; d++) {
		uint32_t zd[3] = { 2, 3, 4 };
		size_t h;

		zd[d] = 0;
		h = put_header(bad, 3, zd);
		memset(bad + h, 0, 24);
		expect_reject(bad, h, "zero dim, no data");
		expect_reject(bad, h + 24, "zero dim, data");
	}

	/* Element count overflow and above 2^31. */
	{
		const uint32_t huge[4] = { 0xFFFFFFFFu, 0xFFFFFFFFu,
					   0xFFFFFFFFu, 0xFFFFFFFFu };
		const uint32_t over31[2] = { 0x10000u, 0x8001u };
		const uint32_t one_over[1] = { 0x80000001u };
		int r;

		len = put_header(bad, 4, huge);
		fill_sentinel(&idx);
		r = gsp_idx_decode(bad, len, &idx);
		ck_assert_int_eq(r, -EOVERFLOW);
		ck_assert(is_sentinel(&idx));

		len = put_header(bad, 2, over31);
		fill_sentinel(&idx);
		r = gsp_idx_decode(bad, len + 7, &idx);
		ck_assert_int_eq(r, -EOVERFLOW);
		ck_assert(is_sentinel(&idx));

		len = put_header(bad, 1, one_over);
		fill_sentinel(&idx);
		r = gsp_idx_decode(bad, len, &idx);
		ck_assert_int_eq(r, -EOVERFLOW);
		ck_assert(is_sentinel(&idx));
	}

	/* Exactly 2^31 elements declared: accepted by the count check, then
	 * rejected by length, never allocated. */
	{
		const uint32_t exact[2] = { 0x10000u, 0x8000u };

		len = put_header(bad, 2, exact);
		memset(bad + len, 0, 8);
		fill_sentinel(&idx);
		ck_assert_int_eq(gsp_idx_decode(bad, len + 8, &idx), -EINVAL);
		ck_assert(is_sentinel(&idx));
	}

	/* Trailing and missing bytes. */
	len = put_header(good, 3, dims) + 24;
	memcpy(bad, good, len);
	bad[len] = 0;
	expect_reject(bad, len + 1, "one trailing byte");
	expect_reject(bad, len - 1, "one missing byte");
	expect_reject(bad, len - 24, "header only");
}
END_TEST

START_TEST(test_decode_every_truncation)
{
	const uint32_t dims3[] = { 3, 2, 5 };
	const uint32_t dims1[] = { 9 };
	size_t len;
	uint8_t *buf;

	buf = make_idx(3, dims3, 9, &len);
	for (size_t n = 0; n < len; n++) {
		/* A fresh heap copy of exactly n bytes, so ASan sees overreads. */
		uint8_t *cut = malloc(n ? n : 1);

		ck_assert_ptr_nonnull(cut);
		memcpy(cut, buf, n);
		expect_reject(cut, n, "3-D truncated");
		free(cut);
	}
	free(buf);

	buf = make_idx(1, dims1, 0, &len);
	for (size_t n = 0; n < len; n++) {
		uint8_t *cut = malloc(n ? n : 1);

		ck_assert_ptr_nonnull(cut);
		memcpy(cut, buf, n);
		expect_reject(cut, n, "1-D truncated");
		free(cut);
	}
	free(buf);
}
END_TEST

START_TEST(test_free_tolerant)
{
	gsp_idx idx;

	gsp_idx_free(NULL);
	memset(&idx, 0, sizeof(idx));
	gsp_idx_free(&idx);
	gsp_idx_free(&idx);
}
END_TEST

/* ---- files ------------------------------------------------------------ */

static char tmpdir[512];

static void make_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	int n;

	if (!base || !*base)
		base = "/tmp";
	n = snprintf(tmpdir, sizeof(tmpdir), "%s/test_idx.XXXXXX", base);
	ck_assert(n > 0 && (size_t)n < sizeof(tmpdir));
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void path_in_tmp(char *out, size_t size, const char *name)
{
	int n = snprintf(out, size, "%s/%s", tmpdir, name);

	ck_assert(n > 0 && (size_t)n < size);
}

static void write_raw(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

static void write_gz(const char *path, const uint8_t *buf, size_t len)
{
	gzFile f = gzopen(path, "wb9");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(gzwrite(f, buf, (unsigned)len), (int)len);
	ck_assert_int_eq(gzclose(f), Z_OK);
}

static void remove_tmp(const char *name)
{
	char path[512];

	path_in_tmp(path, sizeof(path), name);
	(void)unlink(path);
}

START_TEST(test_load_raw_and_gzip)
{
	const uint32_t dims[] = { 4, 28, 28 };
	char raw_path[512], gz_path[512];
	size_t len;
	uint8_t *buf = make_idx(3, dims, 5, &len);
	gsp_idx from_raw, from_gz, direct;

	make_tmpdir();
	path_in_tmp(raw_path, sizeof(raw_path), "a.idx");
	path_in_tmp(gz_path, sizeof(gz_path), "a.idx.gz");
	write_raw(raw_path, buf, len);
	write_gz(gz_path, buf, len);

	ck_assert_int_eq(gsp_idx_decode(buf, len, &direct), 0);
	ck_assert_int_eq(gsp_idx_load(raw_path, len, &from_raw), 0);
	ck_assert_int_eq(gsp_idx_load(gz_path, len, &from_gz), 0);
	ck_assert_mem_eq(&from_raw.dims, &direct.dims, sizeof(direct.dims));
	ck_assert_mem_eq(&from_gz.dims, &direct.dims, sizeof(direct.dims));
	ck_assert_uint_eq(from_raw.ndim, 3);
	ck_assert_uint_eq(from_gz.ndim, 3);
	ck_assert_uint_eq(from_raw.count, direct.count);
	ck_assert_uint_eq(from_gz.count, direct.count);
	ck_assert_mem_eq(from_raw.data, direct.data, direct.count);
	ck_assert_mem_eq(from_gz.data, direct.data, direct.count);
	gsp_idx_free(&from_raw);
	gsp_idx_free(&from_gz);
	gsp_idx_free(&direct);

	/* max_bytes counts decompressed bytes: len fits, len - 1 does not. */
	for (int gz = 0; gz < 2; gz++) {
		const char *p = gz ? gz_path : raw_path;
		gsp_idx idx;

		fill_sentinel(&idx);
		ck_assert_int_eq(gsp_idx_load(p, len - 1, &idx), -EFBIG);
		ck_assert(is_sentinel(&idx));
		ck_assert_int_eq(gsp_idx_load(p, 0, &idx), -EFBIG);
		ck_assert(is_sentinel(&idx));
		ck_assert_int_eq(gsp_idx_load(p, 16, &idx), -EFBIG);
		ck_assert(is_sentinel(&idx));
		ck_assert_int_eq(gsp_idx_load(p, len, &idx), 0);
		gsp_idx_free(&idx);
		ck_assert_int_eq(gsp_idx_load(p, len * 100, &idx), 0);
		gsp_idx_free(&idx);
	}

	remove_tmp("a.idx");
	remove_tmp("a.idx.gz");
	ck_assert_int_eq(rmdir(tmpdir), 0);
	free(buf);
}
END_TEST

START_TEST(test_load_errors)
{
	const uint32_t dims[] = { 1000 };
	char path[512];
	size_t len;
	uint8_t *buf = make_idx(1, dims, 2, &len);
	gsp_idx idx;
	int r;

	make_tmpdir();

	fill_sentinel(&idx);
	path_in_tmp(path, sizeof(path), "missing.gz");
	ck_assert_int_eq(gsp_idx_load(path, 1 << 20, &idx), -ENOENT);
	ck_assert(is_sentinel(&idx));
	ck_assert_int_eq(gsp_idx_load(NULL, 1 << 20, &idx), -EINVAL);
	ck_assert_int_eq(gsp_idx_load(path, 1 << 20, NULL), -EINVAL);
	ck_assert(is_sentinel(&idx));

	/* Reading a directory fails with an errno. */
	r = gsp_idx_load(tmpdir, 1 << 20, &idx);
	ck_assert_int_lt(r, 0);
	ck_assert(is_sentinel(&idx));

	/* An empty file and a raw file with a trailing byte decode-fail. */
	path_in_tmp(path, sizeof(path), "empty");
	write_raw(path, buf, 0);
	ck_assert_int_eq(gsp_idx_load(path, 1 << 20, &idx), -EINVAL);
	ck_assert(is_sentinel(&idx));
	remove_tmp("empty");

	/* A gzip file cut short: every cut is rejected, none accepted. */
	{
		char gz_path[512], cut_path[512];
		FILE *f;
		long gz_len;
		uint8_t *gz;

		path_in_tmp(gz_path, sizeof(gz_path), "full.gz");
		path_in_tmp(cut_path, sizeof(cut_path), "cut.gz");
		write_gz(gz_path, buf, len);
		f = fopen(gz_path, "rb");
		ck_assert_ptr_nonnull(f);
		ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
		gz_len = ftell(f);
		ck_assert_int_gt(gz_len, 20);
		rewind(f);
		gz = malloc((size_t)gz_len);
		ck_assert_ptr_nonnull(gz);
		ck_assert_uint_eq(fread(gz, 1, (size_t)gz_len, f), (size_t)gz_len);
		fclose(f);
		for (long n = 1; n < gz_len; n++) {
			write_raw(cut_path, gz, (size_t)n);
			fill_sentinel(&idx);
			r = gsp_idx_load(cut_path, 1 << 20, &idx);
			ck_assert_msg(r < 0, "gzip cut at %ld accepted", n);
			ck_assert(is_sentinel(&idx));
		}
		/* A corrupted deflate body (or CRC) is rejected too. */
		gz[gz_len / 2] ^= 0xFF;
		write_raw(cut_path, gz, (size_t)gz_len);
		fill_sentinel(&idx);
		r = gsp_idx_load(cut_path, 1 << 20, &idx);
		ck_assert_int_lt(r, 0);
		ck_assert(is_sentinel(&idx));
		free(gz);
		remove_tmp("full.gz");
		remove_tmp("cut.gz");
	}

	ck_assert_int_eq(rmdir(tmpdir), 0);
	free(buf);
}
END_TEST

/* ---- Fashion-MNIST ---------------------------------------------------- */

static void write_fmnist(const char *set, uint32_t n, uint32_t rows,
			 uint32_t label_n, uint8_t bad_label)
{
	const uint32_t idims[] = { n, rows, 28 };
	const uint32_t ldims[] = { label_n };
	char name[128], path[512];
	size_t len;
	uint8_t *buf;

	buf = make_idx(3, idims, 1, &len);
	snprintf(name, sizeof(name), "%s-images-idx3-ubyte.gz", set);
	path_in_tmp(path, sizeof(path), name);
	write_gz(path, buf, len);
	free(buf);

	buf = make_idx(1, ldims, 0, &len);
	for (uint32_t i = 0; i < label_n; i++)
		buf[8 + i] = (uint8_t)(i % 10);
	if (bad_label)
		buf[len - 1] = bad_label;
	snprintf(name, sizeof(name), "%s-labels-idx1-ubyte.gz", set);
	path_in_tmp(path, sizeof(path), name);
	write_gz(path, buf, len);
	free(buf);
}

static void remove_fmnist(const char *set)
{
	char name[128];

	snprintf(name, sizeof(name), "%s-images-idx3-ubyte.gz", set);
	remove_tmp(name);
	snprintf(name, sizeof(name), "%s-labels-idx1-ubyte.gz", set);
	remove_tmp(name);
}

static void expect_fmnist_reject(const char *dir, const char *set,
				 int expected)
{
	gsp_idx images, labels;
	int r;

	fill_sentinel(&images);
	fill_sentinel(&labels);
	r = gsp_fmnist_images(dir, set, &images, &labels);
	if (expected)
		ck_assert_int_eq(r, expected);
	else
		ck_assert_int_lt(r, 0);
	ck_assert(is_sentinel(&images));
	ck_assert(is_sentinel(&labels));
}

START_TEST(test_fmnist_synthetic)
{
	gsp_idx images, labels;

	make_tmpdir();

	write_fmnist("train", 12, 28, 12, 0);
	ck_assert_int_eq(gsp_fmnist_images(tmpdir, "train", &images, &labels), 0);
	ck_assert_uint_eq(images.ndim, 3);
	ck_assert_uint_eq(images.dims[0], 12);
	ck_assert_uint_eq(images.count, 12 * 28 * 28);
	ck_assert_uint_eq(labels.ndim, 1);
	ck_assert_uint_eq(labels.count, 12);
	ck_assert_uint_eq(labels.data[11], 1);
	gsp_idx_free(&images);
	gsp_idx_free(&labels);

	/* Bad set names, NULL outputs, missing files. */
	expect_fmnist_reject(tmpdir, "test", -EINVAL);
	expect_fmnist_reject(tmpdir, "../train", -EINVAL);
	expect_fmnist_reject(tmpdir, NULL, -EINVAL);
	expect_fmnist_reject(tmpdir, "t10k", -ENOENT);
	ck_assert_int_eq(gsp_fmnist_images(tmpdir, "train", NULL, &labels), -EINVAL);
	ck_assert_int_eq(gsp_fmnist_images(tmpdir, "train", &images, NULL), -EINVAL);

	/* Label count differs from image count. */
	write_fmnist("t10k", 5, 28, 4, 0);
	expect_fmnist_reject(tmpdir, "t10k", -EINVAL);
	/* Images not 28 x 28. */
	write_fmnist("t10k", 5, 27, 5, 0);
	expect_fmnist_reject(tmpdir, "t10k", -EINVAL);
	/* A label of 10 and of 255. */
	write_fmnist("t10k", 5, 28, 5, 10);
	expect_fmnist_reject(tmpdir, "t10k", -EINVAL);
	write_fmnist("t10k", 5, 28, 5, 255);
	expect_fmnist_reject(tmpdir, "t10k", -EINVAL);
	/* And a valid t10k for completeness. */
	write_fmnist("t10k", 5, 28, 5, 9);
	ck_assert_int_eq(gsp_fmnist_images(tmpdir, "t10k", &images, &labels), 0);
	ck_assert_uint_eq(labels.data[4], 9);
	gsp_idx_free(&images);
	gsp_idx_free(&labels);

	remove_fmnist("train");
	remove_fmnist("t10k");
	ck_assert_int_eq(rmdir(tmpdir), 0);
}
END_TEST

static void check_real_set(const char *set, uint32_t n)
{
	gsp_idx images, labels;
	uint64_t per_class[GSP_FMNIST_CLASSES] = { 0 };

	ck_assert_int_eq(gsp_fmnist_images(NULL, set, &images, &labels), 0);
	ck_assert_uint_eq(images.ndim, 3);
	ck_assert_uint_eq(images.dims[0], n);
	ck_assert_uint_eq(images.dims[1], 28);
	ck_assert_uint_eq(images.dims[2], 28);
	ck_assert_uint_eq(images.count, (uint64_t)n * 28 * 28);
	ck_assert_uint_eq(labels.ndim, 1);
	ck_assert_uint_eq(labels.dims[0], n);
	for (uint64_t i = 0; i < labels.count; i++) {
		ck_assert_uint_lt(labels.data[i], GSP_FMNIST_CLASSES);
		per_class[labels.data[i]]++;
	}
	/* Fashion-MNIST is balanced: n / 10 of each class. */
	for (unsigned c = 0; c < GSP_FMNIST_CLASSES; c++)
		ck_assert_uint_eq(per_class[c], n / 10);
	gsp_idx_free(&images);
	gsp_idx_free(&labels);
}

START_TEST(test_fmnist_real)
{
	if (access(GSP_FMNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
		printf("SKIP test_fmnist_real: %s not installed "
		       "(apt-get install dataset-fashion-mnist)\n",
		       GSP_FMNIST_DIR);
		return;
	}
	check_real_set("train", 60000);
	check_real_set("t10k", 10000);
}
END_TEST

static Suite *idx_suite(void)
{
	Suite *s = suite_create("idx");
	TCase *tc = tcase_create("decode");
	TCase *tf = tcase_create("files");
	TCase *tr = tcase_create("fashion-mnist");

	tcase_add_test(tc, test_decode_1d);
	tcase_add_test(tc, test_decode_3d_4d);
	tcase_add_test(tc, test_decode_big_dims_bytewise);
	tcase_add_test(tc, test_decode_malformed);
	tcase_add_test(tc, test_decode_every_truncation);
	tcase_add_test(tc, test_free_tolerant);
	suite_add_tcase(s, tc);

	tcase_add_test(tf, test_load_raw_and_gzip);
	tcase_add_test(tf, test_load_errors);
	tcase_add_test(tf, test_fmnist_synthetic);
	suite_add_tcase(s, tf);

	/* Decompressing 26 MB under sanitizers takes a few seconds. */
	tcase_set_timeout(tr, 120);
	tcase_add_test(tr, test_fmnist_real);
	suite_add_tcase(s, tr);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(idx_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
