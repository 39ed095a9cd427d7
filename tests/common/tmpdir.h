/* A temporary directory per test (Check fixtures): made in setup,
 * removed with everything in it in teardown.  Header-only. */
#ifndef GSP_TEST_TMPDIR_H
#define GSP_TEST_TMPDIR_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* dir: room for at least 64 bytes; tag names the test in the path. */
static inline void tmpdir_make(char *dir, size_t cap, const char *tag)
{
	snprintf(dir, cap, "/tmp/gsp-%s-XXXXXX", tag);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static inline void tmpdir_remove(const char *dir)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static inline void tmpdir_path(char *out, size_t cap, const char *dir, const char *name)
{
	snprintf(out, cap, "%s/%s", dir, name);
}

#endif
