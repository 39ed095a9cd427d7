/* Unit tests of the edges' records on disk (daemon/edgestate.h, slotfile.h):
 * saving them, and file_read (daemon/file.h) on files past its first
 * 4096-byte buffer, which the records' file usually is.  The encoding
 * itself: test_edgestate.c. */
#include "edgestatetest.h"
#include "slotfile.h"

static void setup(void)
{
	edgestate_dir_make();
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

/* ---- save ------------------------------------------------------------- */

/* Saves n records to path and reads the file back: it must be
 * edgestate_encode's bytes.  The file's bytes, freed by the caller. */
/* edgestate_save into the slot file at path, as a daemon started there. */
static int save_at(const char *path, const edge_record *in, size_t n, uint64_t writes)
{
	slotfile f;
	int rc = slotfile_open(&f, path);
	if (!rc)
		rc = edgestate_save(&f, in, n, writes, NULL);
	slotfile_close(&f);
	return rc;
}

/* The newest contents there, as the next start reads them. */
static int read_at(const char *path, size_t max, uint8_t **buf, size_t *len)
{
	slotfile f;
	int rc = slotfile_open(&f, path);
	if (!rc)
		rc = slotfile_read(&f, max, buf, len);
	slotfile_close(&f);
	return rc;
}

static uint8_t *save_is_encoding(const char *path, const edge_record *in, size_t n,
				 uint64_t writes, size_t *ret_len)
{
	ck_assert_int_eq(save_at(path, in, n, writes), 0);
	uint8_t *want, *got;
	size_t want_len, got_len;
	ck_assert_int_eq(edgestate_encode(in, n, writes, NULL, &want, &want_len), 0);
	ck_assert_int_eq(read_at(path, EDGESTATE_FILE_MAX, &got, &got_len), 0);
	ck_assert_uint_eq(got_len, want_len);
	ck_assert(!memcmp(got, want, want_len));
	free(want);
	*ret_len = got_len;
	return got;
}

START_TEST(test_save_writes_the_encoding)
{
	edge_record in[4];
	size_t n = sample(in);
	char path[128], slot[2][140];
	path_of(path, sizeof(path), "edges");
	for (int k = 0; k < 2; k++)
		snprintf(slot[k], sizeof(slot[k]), "%s.%d", path, k);
	for (size_t k = n + 1; k-- > 0;) {          /* replaces the last contents */
		size_t got_len;
		uint8_t *got = save_is_encoding(path, in, k, 0, &got_len);
		ck_assert_int_eq(edgestate_parse(got, got_len, out, NULL, NULL), (int)k);
		for (size_t i = 0; i < k; i++)
			assert_same(&out[i], &in[i]);
		free(got);
	}
	/* The two slots and nothing else. */
	ck_assert_int_eq(access(slot[0], F_OK), 0);
	ck_assert_int_eq(access(slot[1], F_OK), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	/* Refused records leave the last contents as they were. */
	ck_assert_int_eq(save_at(path, in, EDGESTATE_MAX + 1, 0), -EINVAL);
	uint8_t *got;
	size_t got_len;
	ck_assert_int_eq(read_at(path, EDGESTATE_FILE_MAX, &got, &got_len), 0);
	ck_assert_int_eq(edgestate_parse(got, got_len, out, NULL, NULL), 0);
	free(got);
}
END_TEST

START_TEST(test_save_into_missing_directory)
{
	edge_record in[4];
	size_t n = sample(in);
	char path[128], slot[140];
	path_of(path, sizeof(path), "no-such-dir/edges");
	snprintf(slot, sizeof(slot), "%s.0", path);
	int rc = save_at(path, in, n, 0);
	ck_assert_int_lt(rc, 0);
	ck_assert_int_eq(rc, -ENOENT);
	ck_assert_int_eq(access(slot, F_OK), -1);
	uint8_t *got;
	size_t got_len;
	ck_assert_int_eq(read_at(path, EDGESTATE_FILE_MAX, &got, &got_len), -ENOENT);
}
END_TEST

/* ---- file_read past its first buffer ------------------------------------ */

static void write_file(const char *path, const uint8_t *b, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	size_t done = 0;
	while (done < len) {
		ssize_t r = write(fd, b + done, len - done);
		ck_assert_int_gt(r, 0);
		done += (size_t)r;
	}
	ck_assert_int_eq(close(fd), 0);
}

START_TEST(test_file_read_grows)
{
	size_t sizes[] = {0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 12289, 100003};
	size_t big = 100003;
	uint8_t *pattern = malloc(big);
	ck_assert_ptr_nonnull(pattern);
	for (size_t i = 0; i < big; i++)
		pattern[i] = (uint8_t)(i * 131 + (i >> 8) * 7 + 1);
	char path[128];
	path_of(path, sizeof(path), "f");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t size = sizes[s];
		write_file(path, pattern, size);
		/* Caps at, just over and well over the size; and the first
		 * buffer's size, and the doublings' edges, around it. */
		size_t ok_max[] = {size, size + 1, 2 * size + 1, 4095, 4096, 4097, 8192, 1u << 20};
		for (size_t m = 0; m < sizeof(ok_max) / sizeof(ok_max[0]); m++) {
			uint8_t *buf = NULL;
			size_t len = 0;
			int rc = file_read(path, ok_max[m], &buf, &len);
			if (size > ok_max[m]) {
				ck_assert_int_eq(rc, -EFBIG);
				continue;
			}
			ck_assert_int_eq(rc, 0);
			ck_assert_uint_eq(len, size);
			ck_assert_ptr_nonnull(buf);
			ck_assert(!memcmp(buf, pattern, size));
			free(buf);
		}
		/* One byte over the cap, and far over it. */
		if (size > 0) {
			uint8_t *buf = (uint8_t *)1;
			size_t len = 7;
			ck_assert_int_eq(file_read(path, size - 1, &buf, &len), -EFBIG);
			ck_assert_ptr_eq(buf, (uint8_t *)1);
			ck_assert_uint_eq(len, 7);
			ck_assert_int_eq(file_read(path, size / 3, &buf, &len), -EFBIG);
			ck_assert_int_eq(file_read(path, 0, &buf, &len), -EFBIG);
		}
	}
	free(pattern);
	uint8_t *buf;
	size_t len;
	path_of(path, sizeof(path), "absent");
	ck_assert_int_eq(file_read(path, 4096, &buf, &len), -ENOENT);
}
END_TEST

/* A records' file well past 4096 bytes read back whole. */
START_TEST(test_file_read_large_edgestate)
{
	static edge_record in[300];
	static uint8_t msg[1000];
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i ^ 0x5a);
	for (int i = 0; i < 300; i++) {
		memset(in[i].key, i, GSP_KEY_BYTES);
		in[i].generation = (uint32_t)i + 1;
		in[i].live = i & 1;
		in[i].ended_generation = (uint32_t)i;
		in[i].msg = msg;
		in[i].msg_len = (uint32_t)(i * 3 % sizeof(msg));
	}
	char path[128];
	path_of(path, sizeof(path), "edges");
	ck_assert_int_eq(save_at(path, in, 300, 0), 0);
	uint8_t *want, *got;
	size_t want_len, got_len;
	ck_assert_int_eq(edgestate_encode(in, 300, 0, NULL, &want, &want_len), 0);
	ck_assert_uint_gt(want_len, 100000);
	ck_assert_int_eq(read_at(path, EDGESTATE_FILE_MAX, &got, &got_len), 0);
	ck_assert_uint_eq(got_len, want_len);
	ck_assert(!memcmp(got, want, want_len));
	ck_assert_int_eq(edgestate_parse(got, got_len, out, NULL, NULL), 300);
	for (int i = 0; i < 300; i++)
		assert_same(&out[i], &in[i]);
	free(got);
	ck_assert_int_eq(read_at(path, want_len - 1, &got, &got_len), -EFBIG);
	free(want);
}
END_TEST

/* Pieces written with file_pwritev at an offset: more of them than one
 * pwritev takes (IOV_MAX), empty ones among them, come back in order. */
START_TEST(test_writev_many_pieces)
{
	enum { N = 3000 };
	static struct iovec iov[N];
	static uint8_t src[N * 7];
	uint8_t *want = malloc(sizeof(src));
	ck_assert_ptr_nonnull(want);
	size_t off = 0, len = 0;
	for (size_t i = 0; i < N; i++) {
		size_t n = i % 7;                          /* 0..6 bytes */
		for (size_t k = 0; k < n; k++)
			src[off + k] = (uint8_t)(i * 13 + k);
		iov[i] = (struct iovec){.iov_base = src + off, .iov_len = n};
		memcpy(want + len, src + off, n);
		off += n;
		len += n;
	}
	char path[128];
	path_of(path, sizeof(path), "pieces");
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(file_pwritev(fd, iov, N, 5), 0);    /* after 5 bytes */
	close(fd);
	uint8_t *got;
	size_t got_len;
	ck_assert_int_eq(file_read(path, 1u << 20, &got, &got_len), 0);
	ck_assert_uint_eq(got_len, len + 5);
	ck_assert(!memcmp(got + 5, want, len));
	free(got);
	/* No pieces: nothing written. */
	fd = open(path, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(file_pwritev(fd, iov, 0, 0), 0);
	close(fd);
	ck_assert_int_eq(file_read(path, 1u << 20, &got, &got_len), 0);
	ck_assert_uint_eq(got_len, len + 5);
	free(got);
	free(want);
}
END_TEST

/* Records with generations' state in more pieces than one writev takes:
 * the file is the encoding, and parses back to them. */
START_TEST(test_save_state_many_pieces)
{
	enum { N = 300 };
	static edge_record in[N];
	static uint8_t msg[1000], eng[500], kept[2][700];
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i ^ 0x5a);
	memset(eng, 0x11, sizeof(eng));
	memset(kept[0], 0x22, sizeof(kept[0]));
	memset(kept[1], 0x33, sizeof(kept[1]));
	for (int i = 0; i < N; i++) {
		in[i] = (edge_record){0};
		memset(in[i].key, i, GSP_KEY_BYTES);
		in[i].generation = (uint32_t)i + 1;
		in[i].live = 1;
		in[i].applied = (uint64_t)i * 5;
		in[i].msg = msg;
		in[i].msg_len = (uint32_t)(i * 3 % sizeof(msg));
		in[i].weight = 0.25f;
		in[i].engine = eng;
		in[i].engine_len = (uint32_t)(1 + i % sizeof(eng));
		in[i].kept[0] = kept[0];
		in[i].kept_len[0] = (uint32_t)(i * 7 % sizeof(kept[0]));
		in[i].kept[1] = kept[1];
		in[i].kept_len[1] = (uint32_t)(i * 11 % sizeof(kept[1]));
	}
	char path[128];
	path_of(path, sizeof(path), "edges");
	size_t got_len;
	uint8_t *got = save_is_encoding(path, in, N, 9, &got_len);
	uint64_t writes = 0;
	ck_assert_int_eq(edgestate_parse(got, got_len, out, &writes, NULL), N);
	ck_assert_uint_eq(writes, 9);
	for (int i = 0; i < N; i++) {
		assert_same(&out[i], &in[i]);
		ck_assert(out[i].weight == 0.25f);
		ck_assert_uint_eq(out[i].engine_len, in[i].engine_len);
		ck_assert(!memcmp(out[i].engine, eng, in[i].engine_len));
		for (int k = 0; k < 2; k++) {
			ck_assert_uint_eq(out[i].kept_len[k], in[i].kept_len[k]);
			if (in[i].kept_len[k])
				ck_assert(!memcmp(out[i].kept[k], kept[k], in[i].kept_len[k]));
		}
	}
	free(got);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("edgestate-file");
	TCase *tc = tcase_create("edgestate-file");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_save_writes_the_encoding);
	tcase_add_test(tc, test_save_into_missing_directory);
	tcase_add_test(tc, test_file_read_grows);
	tcase_add_test(tc, test_file_read_large_edgestate);
	tcase_add_test(tc, test_writev_many_pieces);
	tcase_add_test(tc, test_save_state_many_pieces);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
