/*
 * Unit tests of daemon/slotfile.c: contents written in place come back
 * whole; a write killed at every one of its steps leaves the last whole
 * write as the newest; malformed headers are no slot.  Power losses and
 * syncs: test_slotfile_power.c.  Kills go through the slot file's disk
 * seam (slotfile_disk).
 */
#include "slotfiletest.h"

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
