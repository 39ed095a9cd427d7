/* bigmem: model-sized buffers are advised onto huge pages, whole 2 MiB
 * pages inside the buffer only, and small buffers not at all.  Checked
 * in the kernel's own view of the mappings (/proc/self/smaps: VmFlags
 * "hg" is MADV_HUGEPAGE). */
#include <check.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bigmem.h"

#define MIB ((uintptr_t)1 << 20)

/* Whether the mapping that holds addr carries MADV_HUGEPAGE; its bounds
 * into lo, hi.  Fails the test if no mapping holds addr. */
static bool advised(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	ck_assert_ptr_nonnull(f);
	char line[512];
	bool in = false, found = false, hg = false;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t a, b;
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &a, &b) == 2 &&
		    strchr(line, ' ') > strchr(line, '-')) {
			if (found)
				break;
			in = a <= addr && addr < b;
			if (in) {
				*lo = a;
				*hi = b;
			}
		} else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			found = true;
			hg = strstr(line, " hg") != NULL;
		}
	}
	fclose(f);
	ck_assert_msg(found, "no mapping holds %#" PRIxPTR, addr);
	return hg;
}

static uint8_t *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	return p;
}

START_TEST(test_advises_whole_huge_pages_inside)
{
	size_t len = 16 * MIB;
	uint8_t *m = map(len);
	/* A buffer from 1 byte past a 2 MiB boundary to 1 byte short of
	 * another, 10 MiB on: only the three whole pages between them. */
	uintptr_t base = ((uintptr_t)m + 2 * MIB - 1) & ~(2 * MIB - 1);
	uint8_t *buf = (uint8_t *)base + 1;
	size_t blen = 10 * MIB - 2;
	gsp_bigmem_advise(buf, blen);
	uintptr_t lo, hi;
	ck_assert(advised(base + 2 * MIB, &lo, &hi));
	ck_assert_uint_eq(lo, base + 2 * MIB);
	ck_assert_uint_eq(hi, base + 8 * MIB);
	ck_assert(!advised(base, &lo, &hi));               /* the head */
	ck_assert(!advised(base + 8 * MIB, &lo, &hi));     /* the tail */
	munmap(m, len);
}
END_TEST

START_TEST(test_small_buffers_not_advised)
{
	size_t len = 16 * MIB;
	uint8_t *m = map(len);
	uintptr_t base = ((uintptr_t)m + 2 * MIB - 1) & ~(2 * MIB - 1);
	/* Just under the threshold, though it holds a whole huge page. */
	gsp_bigmem_advise((void *)base, GSP_BIGMEM_MIN - 1);
	gsp_bigmem_advise(NULL, 8 * MIB);
	uintptr_t lo, hi;
	ck_assert(!advised(base, &lo, &hi));
	ck_assert(!advised(base + 2 * MIB, &lo, &hi));
	/* At the threshold it is. */
	gsp_bigmem_advise((void *)base, GSP_BIGMEM_MIN);
	ck_assert(advised(base, &lo, &hi));
	ck_assert_uint_eq(hi - lo, GSP_BIGMEM_MIN);
	munmap(m, len);
}
END_TEST

START_TEST(test_malloc_advises)
{
	size_t len = 8 * MIB + 123;
	uint8_t *p = gsp_bigmem_malloc(len);
	ck_assert_ptr_nonnull(p);
	memset(p, 1, len);                                 /* all of it is ours */
	uintptr_t first = ((uintptr_t)p + 2 * MIB - 1) & ~(2 * MIB - 1), lo, hi;
	ck_assert(advised(first, &lo, &hi));
	ck_assert_uint_le(lo, first);
	ck_assert_uint_ge(hi, ((uintptr_t)p + len) & ~(2 * MIB - 1));
	free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bigmem");
	TCase *tc = tcase_create("bigmem");
	tcase_add_test(tc, test_advises_whole_huge_pages_inside);
	tcase_add_test(tc, test_small_buffers_not_advised);
	tcase_add_test(tc, test_malloc_advises);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
