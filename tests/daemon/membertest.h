/* What test_members.c and test_graph.c share: member records of numbered
 * test nodes (unsigned: the table takes records the caller verified) and
 * a table built from them.  Header-only, static functions. */
#ifndef GSP_MEMBERTEST_H
#define GSP_MEMBERTEST_H

#include <check.h>
#include <string.h>

#include "members.h"

/* Node i's key: i in its first four bytes, then a constant. */
static inline void test_key(unsigned i, uint8_t key[GSP_KEY_BYTES])
{
	memset(key, 0xa5, GSP_KEY_BYTES);
	memcpy(key, &i, sizeof(i));
}

static inline gsp_member test_record(unsigned i, uint64_t incarnation,
				     unsigned status)
{
	gsp_member rec;

	memset(&rec, 0, sizeof(rec));
	rec.version = GSP_MEMBER_VERSION;
	test_key(i, rec.node_key);
	rec.incarnation = incarnation;
	rec.status = (uint8_t)status;
	rec.n_endpoints = 1;
	rec.endpoints[0].family = 4;
	rec.endpoints[0].addr[0] = 10;
	rec.endpoints[0].addr[3] = (uint8_t)i;
	rec.endpoints[0].port = 7946;
	return rec;
}

/* Node self's table (room for max), its own record alive at incarnation
 * 1. */
static inline void test_table(members *m, unsigned self, size_t max)
{
	uint8_t key[GSP_KEY_BYTES];
	gsp_member rec = test_record(self, 1, GSP_MEMBER_ALIVE);

	test_key(self, key);
	ck_assert_int_eq(members_init(m, key, max), 0);
	ck_assert_int_eq(members_set_self(m, &rec, 0), 0);
}

/* Merges node i's record, which must give want. */
static inline void test_merge(members *m, unsigned i, uint64_t incarnation,
			      unsigned status, uint64_t now_ms,
			      enum members_merge_result want)
{
	gsp_member rec = test_record(i, incarnation, status);

	ck_assert_str_eq(members_merge_name(members_merge(m, &rec, now_ms)),
			 members_merge_name(want));
}

#endif
