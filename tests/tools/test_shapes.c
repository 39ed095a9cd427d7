/*
 * Unit tests for tools/shapes: the grammar (valid and malformed lines, each
 * failure reported at the right line with outputs untouched), the limits,
 * file loading, and the shipped tools/data/resnet50.shapes.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shapes.h"

#define RESNET50_FILE "tools/data/resnet50.shapes"

static gsp_tensor *const SENTINEL_PTR = (gsp_tensor *)(uintptr_t)0xA5A5A5A5u;
#define SENTINEL_COUNT ((size_t)0xA5A5A5A5u)
#define SENTINEL_LINE 0xA5A5A5A5u

static gsp_tensor *parse_ok(const char *text, size_t *ret_count)
{
	gsp_tensor *t = NULL;
	size_t n = 0;
	unsigned line = SENTINEL_LINE;
	int r = gsp_shapes_parse(text, strlen(text), &t, &n, &line);

	ck_assert_msg(r == 0, "rejected (%d at line %u): \"%s\"", r, line, text);
	ck_assert_uint_eq(line, SENTINEL_LINE);
	ck_assert_ptr_nonnull(t);
	*ret_count = n;
	return t;
}

/* Parsing len bytes must fail with -EINVAL at `want_line`, touching nothing
 * but the error line. */
static void expect_bad_len(const char *text, size_t len, unsigned want_line)
{
	gsp_tensor *t = SENTINEL_PTR;
	size_t n = SENTINEL_COUNT;
	unsigned line = SENTINEL_LINE;
	int r = gsp_shapes_parse(text, len, &t, &n, &line);

	ck_assert_msg(r == -EINVAL, "\"%.*s\": got %d, want -EINVAL", (int)len,
		      text, r);
	ck_assert_msg(line == want_line, "\"%.*s\": line %u, want %u", (int)len,
		      text, line, want_line);
	ck_assert(t == SENTINEL_PTR);
	ck_assert_uint_eq(n, SENTINEL_COUNT);
	/* A NULL error line is allowed. */
	ck_assert_int_eq(gsp_shapes_parse(text, len, &t, &n, NULL), -EINVAL);
	ck_assert(t == SENTINEL_PTR);
	ck_assert_uint_eq(n, SENTINEL_COUNT);
}

static void expect_bad(const char *text, unsigned want_line)
{
	expect_bad_len(text, strlen(text), want_line);
}

START_TEST(test_valid_basic)
{
	const char *text =
		"# a comment\n"
		"\n"
		"conv1.weight 64x3x7x7\n"
		"   \t \n"
		"bn1.bias\t64\n"
		"#another 1x2 comment with odd bytes: \t\r\x01\xff\n"
		"layer_1.X9 \t \t1099511627776x1\n"
		"eight 1x2x3x4x5x6x7x8\n"
		"last 1000x2048";
	size_t n;
	gsp_tensor *t = parse_ok(text, &n);

	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(t[0].name, "conv1.weight");
	ck_assert_uint_eq(t[0].ndim, 4);
	ck_assert_uint_eq(t[0].shape[0], 64);
	ck_assert_uint_eq(t[0].shape[1], 3);
	ck_assert_uint_eq(t[0].shape[2], 7);
	ck_assert_uint_eq(t[0].shape[3], 7);
	ck_assert_uint_eq(t[0].shape[4], 0);
	ck_assert_uint_eq(t[0].offset, 0);
	ck_assert_uint_eq(t[0].numel, 0);
	ck_assert(!t[0].compressed);

	ck_assert_str_eq(t[1].name, "bn1.bias");
	ck_assert_uint_eq(t[1].ndim, 1);
	ck_assert_uint_eq(t[1].shape[0], 64);

	ck_assert_str_eq(t[2].name, "layer_1.X9");
	ck_assert_uint_eq(t[2].ndim, 2);
	ck_assert_uint_eq(t[2].shape[0], UINT64_C(1) << 40);
	ck_assert_uint_eq(t[2].shape[1], 1);

	ck_assert_str_eq(t[3].name, "eight");
	ck_assert_uint_eq(t[3].ndim, GSP_MAX_DIMS);
	for (unsigned i = 0; i < GSP_MAX_DIMS; i++)
		ck_assert_uint_eq(t[3].shape[i], i + 1);

	ck_assert_str_eq(t[4].name, "last");
	ck_assert_uint_eq(t[4].ndim, 2);
	ck_assert_uint_eq(t[4].shape[0], 1000);
	ck_assert_uint_eq(t[4].shape[1], 2048);
	free(t);
}
END_TEST

START_TEST(test_valid_edges)
{
	char name[GSP_NAME_MAX + 16];
	size_t n;
	gsp_tensor *t;

	/* Longest name: GSP_NAME_MAX - 1 characters. */
	memset(name, 'a', GSP_NAME_MAX - 1);
	strcpy(name + GSP_NAME_MAX - 1, " 7\n");
	t = parse_ok(name, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(strlen(t[0].name), GSP_NAME_MAX - 1);
	free(t);

	/* Names may be all digits or dots. */
	t = parse_ok("0 1\n...\t9\n", &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(t[0].name, "0");
	ck_assert_str_eq(t[1].name, "...");
	free(t);

	/* Text need not be NUL-terminated: parse a prefix of a longer buffer. */
	{
		const char buf[] = "a 12x3GARBAGE";
		gsp_tensor *u = NULL;
		size_t m = 0;

		ck_assert_int_eq(gsp_shapes_parse(buf, 6, &u, &m, NULL), 0);
		ck_assert_uint_eq(m, 1);
		ck_assert_uint_eq(u[0].shape[1], 3);
		free(u);
	}
}
END_TEST

START_TEST(test_malformed_lines)
{
	char longname[GSP_NAME_MAX + 16];

	/* Each case names the line its first error is on. */
	expect_bad("a\n", 1);                      /* no dims */
	expect_bad("a \n", 1);                     /* separator, no dims */
	expect_bad("a 64\nb\n", 2);
	expect_bad("a 64\n b 3\n", 2);             /* leading space */
	expect_bad("a 64\n\tb 3\n", 2);            /* leading tab */
	expect_bad("a 64\n #c\n", 2);              /* comment not in column 1 */
	expect_bad("# c\n\na 1\nb 2 3\n", 4);      /* two dim groups */
	expect_bad("a 0\n", 1);
	expect_bad("a 1x0\n", 1);
	expect_bad("a 01\n", 1);                   /* leading zero */
	expect_bad("a 1x007\n", 1);
	expect_bad("a +1\n", 1);
	expect_bad("a -1\n", 1);
	expect_bad("a 1x-1\n", 1);
	expect_bad("a 1x\n", 1);
	expect_bad("a x1\n", 1);
	expect_bad("a 1xx2\n", 1);
	expect_bad("a 1X2\n", 1);
	expect_bad("a 1*2\n", 1);
	expect_bad("a 1,2\n", 1);
	expect_bad("a 1 x 2\n", 1);
	expect_bad("a 1x 2\n", 1);
	expect_bad("a 1 \n", 1);                   /* trailing space */
	expect_bad("a 1\t\n", 1);                  /* trailing tab */
	expect_bad("a 1\r\n", 1);                  /* CRLF */
	expect_bad("a 1\rb 2\n", 1);
	expect_bad("a 1.5\n", 1);
	expect_bad("a 0x10\n", 1);                 /* no hex */
	expect_bad("a 1e3\n", 1);
	expect_bad("a 1099511627777\n", 1);        /* 2^40 + 1 */
	expect_bad("a 9999999999999\n", 1);
	expect_bad("a 18446744073709551617\n", 1); /* 2^64 + 1 */
	expect_bad("a 99999999999999999999999999999999999999\n", 1);
	expect_bad("a 1x2x3x4x5x6x7x8x9\n", 1);    /* ndim 9 */
	expect_bad("a-b 1\n", 1);
	expect_bad("a/b 1\n", 1);
	expect_bad("a:1\n", 1);
	expect_bad("\xc3\xa9 1\n", 1);             /* non-ASCII name */
	expect_bad("a\xc2\xa0" "1\n", 1);          /* non-breaking space */
	expect_bad("a\v1\n", 1);                   /* vertical tab */
	expect_bad("a\f1\n", 1);
	expect_bad("ok 3\nok 4\n\n\n  \nbad 1x\nworse\n", 6);

	/* NUL bytes: inside a name, and inside dims. */
	expect_bad_len("a 1\nb\0c 2\n", 10, 2);
	expect_bad_len("a 1\0\n", 5, 1);

	/* Name of exactly GSP_NAME_MAX characters. */
	memset(longname, 'n', GSP_NAME_MAX);
	strcpy(longname + GSP_NAME_MAX, " 5\n");
	expect_bad(longname, 1);
}
END_TEST

START_TEST(test_no_tensors)
{
	/* No tensor at all: the line after the last one. */
	expect_bad_len(NULL, 0, 1);
	expect_bad("", 1);
	expect_bad("\n", 2);
	expect_bad("# only a comment", 2);
	expect_bad("# c\n\n   \n", 4);
}
END_TEST

START_TEST(test_bad_arguments)
{
	gsp_tensor *t = SENTINEL_PTR;
	size_t n = SENTINEL_COUNT;
	unsigned line = SENTINEL_LINE;

	ck_assert_int_eq(gsp_shapes_parse(NULL, 3, &t, &n, &line), -EINVAL);
	ck_assert_uint_eq(line, 0);
	line = SENTINEL_LINE;
	ck_assert_int_eq(gsp_shapes_parse("a 1", 3, NULL, &n, &line), -EINVAL);
	ck_assert_uint_eq(line, 0);
	ck_assert_int_eq(gsp_shapes_parse("a 1", 3, &t, NULL, NULL), -EINVAL);
	ck_assert(t == SENTINEL_PTR);
	ck_assert_uint_eq(n, SENTINEL_COUNT);

	/* Over the byte cap: -EFBIG, error line untouched. */
	line = SENTINEL_LINE;
	ck_assert_int_eq(gsp_shapes_parse("a 1", GSP_SHAPES_MAX_BYTES + 1, &t,
					  &n, &line), -EFBIG);
	ck_assert_uint_eq(line, SENTINEL_LINE);
	ck_assert(t == SENTINEL_PTR);
}
END_TEST

/* "t<i> 1\n" for count tensors; returns the text and its length. */
static char *many_tensors(size_t count, size_t *ret_len)
{
	char *text = malloc(count * 16 + 1), *p = text;

	ck_assert_ptr_nonnull(text);
	for (size_t i = 0; i < count; i++)
		p += sprintf(p, "t%zu 1\n", i);
	*ret_len = (size_t)(p - text);
	return text;
}

START_TEST(test_tensor_cap)
{
	size_t len, n = 0;
	char *text = many_tensors(GSP_SHAPES_MAX_TENSORS + 1, &len);
	size_t last_line_len = strlen("t100000 1\n");
	gsp_tensor *t = NULL;

	/* Exactly the cap is accepted. */
	ck_assert_int_eq(gsp_shapes_parse(text, len - last_line_len, &t, &n,
					  NULL), 0);
	ck_assert_uint_eq(n, GSP_SHAPES_MAX_TENSORS);
	ck_assert_str_eq(t[n - 1].name, "t99999");
	free(t);

	/* One more is rejected at its line. */
	expect_bad_len(text, len, GSP_SHAPES_MAX_TENSORS + 1);
	free(text);
}
END_TEST

/* ---- files ------------------------------------------------------------ */

static char tmp_path[512];

static void make_tmp_file(const char *content, size_t len)
{
	const char *base = getenv("TMPDIR");
	int fd, n;

	if (!base || !*base)
		base = "/tmp";
	n = snprintf(tmp_path, sizeof(tmp_path), "%s/test_shapes.XXXXXX", base);
	ck_assert(n > 0 && (size_t)n < sizeof(tmp_path));
	fd = mkstemp(tmp_path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, content, len), (ssize_t)len);
	ck_assert_int_eq(close(fd), 0);
}

START_TEST(test_load)
{
	const char text[] = "# t\nw 3x4\nb 4\n";
	gsp_tensor *t = SENTINEL_PTR;
	size_t n = SENTINEL_COUNT;
	unsigned line = SENTINEL_LINE;

	make_tmp_file(text, sizeof(text) - 1);
	ck_assert_int_eq(gsp_shapes_load(tmp_path, &t, &n, &line), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(t[0].name, "w");
	ck_assert_uint_eq(t[0].shape[1], 4);
	ck_assert_str_eq(t[1].name, "b");
	free(t);
	ck_assert_int_eq(unlink(tmp_path), 0);

	/* A parse error in a file reports its line. */
	make_tmp_file("a 1\n\nb 2x\n", 10);
	t = SENTINEL_PTR;
	n = SENTINEL_COUNT;
	ck_assert_int_eq(gsp_shapes_load(tmp_path, &t, &n, &line), -EINVAL);
	ck_assert_uint_eq(line, 3);
	ck_assert(t == SENTINEL_PTR);
	ck_assert_uint_eq(n, SENTINEL_COUNT);
	ck_assert_int_eq(unlink(tmp_path), 0);

	/* Over 16 MiB (a sparse file): -EFBIG; exactly 16 MiB is read whole
	 * (and fails to parse at line 2, the first full of NUL bytes). */
	make_tmp_file("a 1\n", 4);
	ck_assert_int_eq(truncate(tmp_path, (off_t)GSP_SHAPES_MAX_BYTES + 1), 0);
	line = SENTINEL_LINE;
	ck_assert_int_eq(gsp_shapes_load(tmp_path, &t, &n, &line), -EFBIG);
	ck_assert_uint_eq(line, SENTINEL_LINE);
	ck_assert_int_eq(truncate(tmp_path, (off_t)GSP_SHAPES_MAX_BYTES), 0);
	ck_assert_int_eq(gsp_shapes_load(tmp_path, &t, &n, &line), -EINVAL);
	ck_assert_uint_eq(line, 2);
	ck_assert(t == SENTINEL_PTR);
	ck_assert_int_eq(unlink(tmp_path), 0);

	/* I/O errors: -errno, error line untouched. */
	line = SENTINEL_LINE;
	ck_assert_int_eq(gsp_shapes_load(tmp_path, &t, &n, &line), -ENOENT);
	ck_assert_int_eq(gsp_shapes_load("/", &t, &n, &line), -EISDIR);
	ck_assert_uint_eq(line, SENTINEL_LINE);
	ck_assert(t == SENTINEL_PTR);
	ck_assert_int_eq(gsp_shapes_load(NULL, &t, &n, &line), -EINVAL);
	ck_assert_uint_eq(line, 0);
}
END_TEST

START_TEST(test_resnet50)
{
	const char *root = getenv("GSP_SOURCE_ROOT");
	const char *candidates[] = { RESNET50_FILE, "../" RESNET50_FILE,
				     "../../" RESNET50_FILE,
				     "../../../" RESNET50_FILE };
	char path[4096];
	gsp_tensor *t = NULL;
	size_t n = 0;
	unsigned line = 0;
	uint64_t total = 0;
	int found = 0;

	if (root && *root) {
		snprintf(path, sizeof(path), "%s/%s", root, RESNET50_FILE);
		found = access(path, R_OK) == 0;
	}
	for (size_t i = 0; !found && i < sizeof(candidates) / sizeof(*candidates); i++) {
		snprintf(path, sizeof(path), "%s", candidates[i]);
		found = access(path, R_OK) == 0;
	}
	if (!found) {
		printf("SKIP test_resnet50: %s not found (set GSP_SOURCE_ROOT)\n",
		       RESNET50_FILE);
		return;
	}

	ck_assert_msg(gsp_shapes_load(path, &t, &n, &line) == 0,
		      "%s: error at line %u", path, line);
	ck_assert_uint_eq(n, 161);
	for (size_t i = 0; i < n; i++) {
		uint64_t numel = 1;

		for (unsigned d = 0; d < t[i].ndim; d++)
			numel *= t[i].shape[d];
		total += numel;
	}
	ck_assert_uint_eq(total, 25557032);
	ck_assert_str_eq(t[0].name, "conv1.weight");
	ck_assert_uint_eq(t[0].ndim, 4);
	ck_assert_uint_eq(t[0].shape[0], 64);
	ck_assert_uint_eq(t[0].shape[1], 3);
	ck_assert_uint_eq(t[0].shape[2], 7);
	ck_assert_str_eq(t[n - 2].name, "fc.weight");
	ck_assert_uint_eq(t[n - 2].shape[0], 1000);
	ck_assert_uint_eq(t[n - 2].shape[1], 2048);
	ck_assert_str_eq(t[n - 1].name, "fc.bias");
	free(t);
}
END_TEST

static Suite *shapes_suite(void)
{
	Suite *s = suite_create("shapes");
	TCase *tc = tcase_create("parse");
	TCase *tf = tcase_create("files");

	tcase_add_test(tc, test_valid_basic);
	tcase_add_test(tc, test_valid_edges);
	tcase_add_test(tc, test_malformed_lines);
	tcase_add_test(tc, test_no_tensors);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_tensor_cap);
	suite_add_tcase(s, tc);

	tcase_add_test(tf, test_load);
	tcase_add_test(tf, test_resnet50);
	suite_add_tcase(s, tf);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(shapes_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
