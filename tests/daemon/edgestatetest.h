/*
 * edgestatetest.h: what the records' tests share (test_edgestate.c, the
 * encoding and its parser; test_edgestate_file.c, saving and reading the
 * files): a temporary directory per test, four sample records in every
 * byte, and the comparison of two records.
 */
#ifndef GSP_TEST_EDGESTATETEST_H
#define GSP_TEST_EDGESTATETEST_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tmpdir.h"
#include "edgestate.h"
#include "file.h"

static char dir[64];
static edge_record out[EDGESTATE_MAX + 1];   /* what a test parsed */

static inline void edgestate_dir_make(void)
{
	tmpdir_make(dir, sizeof(dir), "edgestate");
}

static inline void path_of(char *out_path, size_t cap, const char *name)
{
	tmpdir_path(out_path, cap, dir, name);
}

static inline uint8_t *le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + n;
}

/* Four records: live with a message, ended without one, never started
 * (generation 0), live without a message; values in every byte. */
static const uint8_t msg_a[] = "ROUND plaintext \x00\x01\xff of the last round";
static const uint8_t msg_c[] = {0};

static inline size_t sample(edge_record r[4])
{
	r[0] = (edge_record){.generation = 7, .live = true, .applied = 0x0102030405060708ull,
			     .ended_generation = 6, .ended_applied = 0xfffffffffffffffeull,
			     .msg = msg_a, .msg_len = sizeof(msg_a)};
	r[1] = (edge_record){.generation = 0xffffffffu, .live = false, .applied = 12,
			     .ended_generation = 0xffffffffu, .ended_applied = 12};
	r[2] = (edge_record){.generation = 0, .live = false, .msg = msg_c, .msg_len = 1};
	r[3] = (edge_record){.generation = 1, .live = true, .applied = 0};
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < GSP_KEY_BYTES; j++) {
			r[i].key[j] = (uint8_t)(i * 37 + j);
			r[i].seed[j] = (uint8_t)(255 - i * 11 - j);
		}
	return 4;
}

static inline void assert_same(const edge_record *a, const edge_record *b)
{
	ck_assert(!memcmp(a->key, b->key, GSP_KEY_BYTES));
	ck_assert_uint_eq(a->generation, b->generation);
	ck_assert_int_eq(a->live, b->live);
	ck_assert_uint_eq(a->applied, b->applied);
	ck_assert_uint_eq(a->ended_generation, b->ended_generation);
	ck_assert_uint_eq(a->ended_applied, b->ended_applied);
	ck_assert(!memcmp(a->seed, b->seed, 32));
	ck_assert_uint_eq(a->msg_len, b->msg_len);
	if (a->msg_len)
		ck_assert(!memcmp(a->msg, b->msg, a->msg_len));
}


#endif
