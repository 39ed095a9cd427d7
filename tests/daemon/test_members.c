/* Unit tests of the member table (daemon/members.h): the merge of every
 * status and incarnation against every other, the refutation of what is
 * said about us, the bound, tombstones and their expiry, the order
 * whatever the order of arrival, the digest and what a peer misses, the
 * counters, and 10,000 members in 16 MiB (the test wraps malloc and
 * calloc to count what the table allocates). */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "membertest.h"
#include "testutil.h"

void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

static bool counting;
static size_t allocs, alloc_bytes;

void *__wrap_malloc(size_t size)
{
	if (counting) {
		allocs++;
		alloc_bytes += size;
	}
	return __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	if (counting) {
		allocs++;
		alloc_bytes += n * size;
	}
	return __real_calloc(n, size);
}

static const members_entry *entry_of(const members *m, unsigned i)
{
	uint8_t key[GSP_KEY_BYTES];

	test_key(i, key);
	return members_find(m, key);
}

/* Every pair (held, received) of status x incarnation 1..3: the newer by
 * incarnation, then by status (left > dead > suspect > alive), is kept;
 * the result says which, and the status counters count the change. */
START_TEST(test_merge_every_pair)
{
	/* What replacing status `was` by `now` counts (j joins, s suspicions,
	 * d deaths, l leaves, r refutations; - nothing). */
	static const char change[4][4] = {
		/* now:  alive suspect dead left */
		/* alive */   { '-', 's', 'd', 'l' },
		/* suspect */ { 'r', '-', 'd', 'l' },
		/* dead */    { 'j', 's', '-', 'l' },
		/* left */    { 'j', 's', 'd', '-' },
	};

	for (unsigned s1 = 0; s1 < 4; s1++)
	for (uint64_t i1 = 1; i1 <= 3; i1++)
	for (unsigned s2 = 0; s2 < 4; s2++)
	for (uint64_t i2 = 1; i2 <= 3; i2++) {
		members m;
		bool newer = i2 > i1 || (i2 == i1 && s2 > s1);
		bool same = i2 == i1 && s2 == s1;

		test_table(&m, 0, 8);
		test_merge(&m, 1, i1, s1, 0, MERGE_NEW);
		members_counters before = m.counters;
		uint64_t changes = m.changes;
		test_merge(&m, 1, i2, s2, 1, newer ? MERGE_NEWER :
			   same ? MERGE_SAME : MERGE_STALE);
		/* The change count (the detector's sync) moves on a newer one only. */
		ck_assert_uint_eq(m.changes - changes, newer);
		const members_entry *e = entry_of(&m, 1);
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->rec.incarnation, newer ? i2 : i1);
		ck_assert_uint_eq(e->rec.status, newer ? s2 : s1);
		ck_assert_uint_eq(e->since_ms, newer ? 1 : 0);
		ck_assert_uint_eq(members_count(&m), 2);

		char c = newer ? change[s1][s2] : '-';
		const members_counters *a = &m.counters;
		ck_assert_uint_eq(a->joins - before.joins, c == 'j');
		ck_assert_uint_eq(a->suspicions - before.suspicions, c == 's');
		ck_assert_uint_eq(a->deaths - before.deaths, c == 'd');
		ck_assert_uint_eq(a->leaves - before.leaves, c == 'l');
		ck_assert_uint_eq(a->refutations - before.refutations, c == 'r');
		members_free(&m);
	}
}
END_TEST

/* A record about us newer than ours (suspect or dead at our incarnation,
 * anything above it) is to refute, and never replaces ours. */
START_TEST(test_self_refute)
{
	members m;
	uint8_t key[GSP_KEY_BYTES];
	gsp_member ours = test_record(0, 5, GSP_MEMBER_ALIVE);

	test_key(0, key);
	ck_assert_int_eq(members_init(&m, key, 8), 0);
	/* Nothing of ours yet: anything said of us is to outdo. */
	test_merge(&m, 0, 0, GSP_MEMBER_ALIVE, 0, MERGE_SELF_REFUTE);
	ck_assert_uint_eq(members_count(&m), 0);
	ck_assert_int_eq(members_set_self(&m, &ours, 0), 0);

	uint64_t refutes = 1;
	for (unsigned s = 0; s < 4; s++) {
		for (uint64_t inc = 4; inc <= 6; inc++) {
			bool newer = inc > 5 || (inc == 5 && s > GSP_MEMBER_ALIVE);
			bool same = inc == 5 && s == GSP_MEMBER_ALIVE;

			test_merge(&m, 0, inc, s, 1, newer ? MERGE_SELF_REFUTE :
				   same ? MERGE_SAME : MERGE_STALE);
			refutes += newer;
			const members_entry *e = entry_of(&m, 0);
			ck_assert_uint_eq(e->rec.incarnation, 5);
			ck_assert_uint_eq(e->rec.status, GSP_MEMBER_ALIVE);
		}
	}
	ck_assert_uint_eq(m.counters.merged[MERGE_SELF_REFUTE], refutes);
	ck_assert_uint_eq(m.counters.refutations, refutes);
	ck_assert_uint_eq(members_count(&m), 1);

	/* The caller refutes with a higher incarnation: then the same
	 * accusation is stale. */
	ours.incarnation = 7;
	ck_assert_int_eq(members_set_self(&m, &ours, 2), 0);
	test_merge(&m, 0, 6, GSP_MEMBER_DEAD, 3, MERGE_STALE);
	/* Our record never goes back, and is about us only. */
	ck_assert_int_eq(members_set_self(&m, &ours, 3), -ESTALE);
	ours.incarnation = 6;
	ck_assert_int_eq(members_set_self(&m, &ours, 3), -ESTALE);
	gsp_member other = test_record(1, 9, GSP_MEMBER_ALIVE);
	ck_assert_int_eq(members_set_self(&m, &other, 3), -EINVAL);
	ck_assert_uint_eq(entry_of(&m, 0)->rec.incarnation, 7);
	members_free(&m);
}
END_TEST

/* At most max records, ours included; one slot stays for ours. */
START_TEST(test_full)
{
	members m;
	uint8_t key[GSP_KEY_BYTES];

	test_table(&m, 0, 4);
	for (unsigned i = 1; i <= 3; i++)
		test_merge(&m, i, 1, GSP_MEMBER_ALIVE, 0, MERGE_NEW);
	test_merge(&m, 4, 1, GSP_MEMBER_ALIVE, 0, MERGE_FULL);
	test_merge(&m, 5, 1, GSP_MEMBER_DEAD, 0, MERGE_FULL);
	ck_assert_ptr_null(entry_of(&m, 4));
	/* A member held is still updated. */
	test_merge(&m, 2, 2, GSP_MEMBER_ALIVE, 0, MERGE_NEWER);
	ck_assert_uint_eq(m.counters.merged[MERGE_FULL], 2);
	ck_assert_uint_eq(members_count(&m), 4);
	members_free(&m);

	/* Before our record is set, others take max - 1 slots. */
	test_key(0, key);
	ck_assert_int_eq(members_init(&m, key, 3), 0);
	test_merge(&m, 1, 1, GSP_MEMBER_ALIVE, 0, MERGE_NEW);
	test_merge(&m, 2, 1, GSP_MEMBER_ALIVE, 0, MERGE_NEW);
	test_merge(&m, 3, 1, GSP_MEMBER_ALIVE, 0, MERGE_FULL);
	gsp_member ours = test_record(0, 1, GSP_MEMBER_ALIVE);
	ck_assert_int_eq(members_set_self(&m, &ours, 0), 0);
	ck_assert_uint_eq(members_count(&m), 3);
	members_free(&m);

	ck_assert_int_eq(members_init(&m, key, 0), -EINVAL);
	ck_assert_int_eq(members_init(&m, key, MEMBERS_MAX + 1), -EINVAL);
}
END_TEST

START_TEST(test_invalid)
{
	members m;
	gsp_member rec = test_record(1, 1, GSP_MEMBER_ALIVE);

	test_table(&m, 0, 4);
	rec.status = GSP_MEMBER_LEFT + 1;
	ck_assert_int_eq(members_merge(&m, &rec, 0), MERGE_INVALID);
	rec.status = GSP_MEMBER_ALIVE;
	rec.version = GSP_MEMBER_VERSION + 1;
	ck_assert_int_eq(members_merge(&m, &rec, 0), MERGE_INVALID);
	ck_assert_uint_eq(m.counters.merged[MERGE_INVALID], 2);
	ck_assert_uint_eq(members_count(&m), 1);
	ck_assert_ptr_null(members_merge_name(MERGE_RESULTS));
	members_free(&m);
}
END_TEST

/* A dead or left member stays tombstone_ms after its record came: a
 * late alive record of its incarnation is stale meanwhile, and new once
 * the tombstone is gone.  Alive and suspect members and our own record
 * never expire. */
START_TEST(test_tombstones)
{
	members m;

	test_table(&m, 0, 16);
	members_set_tombstone_ms(&m, 1000);
	for (unsigned i = 1; i <= 4; i++)
		test_merge(&m, i, 3, GSP_MEMBER_ALIVE, 0, MERGE_NEW);
	test_merge(&m, 1, 3, GSP_MEMBER_DEAD, 10, MERGE_NEWER);
	test_merge(&m, 2, 3, GSP_MEMBER_LEFT, 20, MERGE_NEWER);
	test_merge(&m, 3, 3, GSP_MEMBER_SUSPECT, 0, MERGE_NEWER);
	test_merge(&m, 1, 3, GSP_MEMBER_ALIVE, 500, MERGE_STALE);
	test_merge(&m, 2, 3, GSP_MEMBER_ALIVE, 500, MERGE_STALE);
	/* Time that goes back expires nothing. */
	ck_assert_uint_eq(members_expire(&m, 5), 0);
	ck_assert_uint_eq(members_expire(&m, 1009), 0);
	ck_assert_uint_eq(members_expire(&m, 1010), 1);
	ck_assert_ptr_null(entry_of(&m, 1));
	ck_assert_ptr_nonnull(entry_of(&m, 2));
	ck_assert_uint_eq(members_expire(&m, 1020), 1);
	ck_assert_uint_eq(m.counters.expired, 2);
	ck_assert_uint_eq(members_count(&m), 3);
	ck_assert_ptr_nonnull(entry_of(&m, 3));
	ck_assert_ptr_nonnull(entry_of(&m, 4));
	test_merge(&m, 1, 3, GSP_MEMBER_ALIVE, 1030, MERGE_NEW);

	/* Our own record, even left, stays. */
	gsp_member ours = test_record(0, 2, GSP_MEMBER_LEFT);
	ck_assert_int_eq(members_set_self(&m, &ours, 0), 0);
	ck_assert_uint_eq(members_expire(&m, UINT64_MAX), 0);
	ck_assert_ptr_nonnull(entry_of(&m, 0));
	members_free(&m);
}
END_TEST

/* Expiry in the middle of a full table keeps the order and frees the
 * slots for new members. */
START_TEST(test_expire_reuses_slots)
{
	members m;

	test_table(&m, 0, 64);
	members_set_tombstone_ms(&m, 0);
	for (unsigned i = 1; i < 64; i++)
		test_merge(&m, i, 1, i % 3 ? GSP_MEMBER_ALIVE : GSP_MEMBER_DEAD,
			   0, MERGE_NEW);
	test_merge(&m, 100, 1, GSP_MEMBER_ALIVE, 0, MERGE_FULL);
	ck_assert_uint_eq(members_expire(&m, 0), 21);
	for (unsigned i = 100; i < 121; i++)
		test_merge(&m, i, 1, GSP_MEMBER_ALIVE, 0, MERGE_NEW);
	test_merge(&m, 121, 1, GSP_MEMBER_ALIVE, 0, MERGE_FULL);
	for (size_t pos = 0; pos < members_count(&m); pos++) {
		const members_entry *e = members_at(&m, pos);

		ck_assert_ptr_eq(members_find(&m, e->rec.node_key), e);
		ck_assert_uint_eq(e->rec.status, GSP_MEMBER_ALIVE);
		if (pos > 0)
			ck_assert_int_lt(memcmp(members_at(&m, pos - 1)->hash,
						e->hash, MEMBERS_HASH_BYTES), 0);
	}
	members_free(&m);
}
END_TEST

/* The order is BLAKE2b-256(key) ascending, whatever order the records
 * came in. */
START_TEST(test_order_independent_of_arrival)
{
	enum { N = 200 };
	static unsigned first[N];
	members m;

	for (unsigned round = 0; round < 5; round++) {
		unsigned ids[N];
		uint8_t seed[randombytes_SEEDBYTES] = { (uint8_t)round };
		uint32_t r[N];

		randombytes_buf_deterministic(r, sizeof(r), seed);
		for (unsigned i = 0; i < N; i++)
			ids[i] = i + 1;
		for (unsigned i = N - 1; i > 0; i--) {   /* Fisher-Yates */
			unsigned j = r[i] % (i + 1), t = ids[i];

			ids[i] = ids[j];
			ids[j] = t;
		}
		test_table(&m, 0, N + 1);
		for (unsigned i = 0; i < N; i++)
			test_merge(&m, ids[i], 1, GSP_MEMBER_ALIVE, 0, MERGE_NEW);
		ck_assert_uint_eq(members_count(&m), N + 1);
		uint8_t prev[MEMBERS_HASH_BYTES];
		for (size_t pos = 0; pos < N + 1; pos++) {
			const members_entry *e = members_at(&m, pos);
			uint8_t h[MEMBERS_HASH_BYTES];
			unsigned id;

			crypto_generichash(h, sizeof(h), e->rec.node_key,
					   GSP_KEY_BYTES, NULL, 0);
			ck_assert_mem_eq(h, e->hash, sizeof(h));
			if (pos > 0)
				ck_assert_int_lt(memcmp(prev, h, sizeof(h)), 0);
			memcpy(prev, h, sizeof(h));
			memcpy(&id, e->rec.node_key, sizeof(id));
			if (round == 0 && pos < N)
				first[pos] = id;
			else if (pos < N)
				ck_assert_uint_eq(id, first[pos]);
			ck_assert_ptr_eq(entry_of(&m, id), e);
		}
		ck_assert_ptr_null(members_at(&m, N + 1));
		ck_assert_ptr_null(entry_of(&m, N + 1));
		members_free(&m);
	}
}
END_TEST

/* Each side sends what the other's digest lacks or holds older; after
 * one exchange each way both hold the same records. */
START_TEST(test_digest_round_trip)
{
	static members_digest_entry dig[256];
	static const gsp_member *out[256];
	members a, b;

	test_table(&a, 0, 256);
	test_table(&b, 1, 256);
	for (unsigned i = 2; i < 100; i++)
		test_merge(&a, i, 1 + i % 4, i % 5 == 0 ? GSP_MEMBER_DEAD :
			   GSP_MEMBER_ALIVE, 0, MERGE_NEW);
	for (unsigned i = 50; i < 150; i++)
		test_merge(&b, i, 1 + i % 3, i % 7 == 0 ? GSP_MEMBER_SUSPECT :
			   GSP_MEMBER_ALIVE, 0, MERGE_NEW);

	/* b's digest, in pages of 32, against a: what a sends. */
	size_t n = 0, k;
	while ((k = members_digest(&b, n, dig + n, 32)) > 0)
		n += k;
	ck_assert_uint_eq(n, members_count(&b));
	size_t sent = members_missing(&a, dig, n, out, 256);
	size_t want = 0;
	for (size_t pos = 0; pos < members_count(&a); pos++) {
		const gsp_member *rec = &members_at(&a, pos)->rec;
		const members_entry *theirs = members_find(&b, rec->node_key);

		if (!theirs || gsp_member_newer(rec, &theirs->rec) > 0)
			ck_assert_ptr_eq(out[want++], rec);
	}
	ck_assert_uint_eq(sent, want);
	ck_assert_uint_ge(want, 49);   /* 0 and 2..49 at least */
	ck_assert_uint_lt(want, members_count(&a));
	/* A smaller cap gives the first ones, in the order. */
	static const gsp_member *few[5];
	ck_assert_uint_eq(members_missing(&a, dig, n, few, 5), 5);
	ck_assert_mem_eq(few, out, sizeof(few));
	for (size_t i = 0; i < sent; i++)
		members_merge(&b, out[i], 1);

	n = members_digest(&a, 0, dig, 256);
	sent = members_missing(&b, dig, n, out, 256);
	for (size_t i = 0; i < sent; i++)
		members_merge(&a, out[i], 1);
	/* Ourselves: each refutes what it receives of itself only if newer;
	 * here every record of a node is its own, so all agree. */
	ck_assert_uint_eq(members_count(&a), members_count(&b));
	ck_assert_uint_eq(members_count(&a), 150);
	for (size_t pos = 0; pos < members_count(&a); pos++) {
		const members_entry *x = members_at(&a, pos), *y = members_at(&b, pos);

		ck_assert_mem_eq(x->rec.node_key, y->rec.node_key, GSP_KEY_BYTES);
		ck_assert_int_eq(gsp_member_newer(&x->rec, &y->rec), 0);
	}
	n = members_digest(&b, 0, dig, 256);
	ck_assert_uint_eq(members_missing(&a, dig, n, out, 256), 0);
	members_free(&a);
	members_free(&b);
}
END_TEST

/* 10,000 members (and their indexes) in 16 MiB: counted by the table,
 * and by what malloc and calloc were asked for. */
START_TEST(test_ten_thousand_in_16_mib)
{
	members m;
	uint8_t key[GSP_KEY_BYTES];
	gsp_member ours = test_record(0, 1, GSP_MEMBER_ALIVE);
	size_t init_bytes, merge_allocs;

	test_key(0, key);
	counting = true;
	allocs = alloc_bytes = 0;
	int r = members_init(&m, key, MEMBERS_MAX);
	init_bytes = alloc_bytes;
	counting = false;
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(members_set_self(&m, &ours, 0), 0);

	counting = true;
	allocs = 0;
	unsigned fulls = 0;
	for (unsigned i = 1; i <= MEMBERS_MAX; i++) {
		gsp_member rec = test_record(i, 1, GSP_MEMBER_ALIVE);

		rec.n_endpoints = GSP_MEMBER_ENDPOINTS_MAX;
		rec.has_cert = true;
		fulls += members_merge(&m, &rec, 0) == MERGE_FULL;
	}
	merge_allocs = allocs;
	counting = false;
	ck_assert_uint_eq(fulls, 1);
	ck_assert_uint_eq(members_count(&m), MEMBERS_MAX);
	ck_assert_uint_eq(merge_allocs, 0);
	ck_assert_uint_eq(members_bytes(&m), sizeof(m) + init_bytes);
	ck_assert_uint_le(members_bytes(&m), 16u << 20);
	members_free(&m);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	Suite *s = suite_create("daemon-members");
	TCase *tc = tcase_create("members");
	tcase_add_test(tc, test_merge_every_pair);
	tcase_add_test(tc, test_self_refute);
	tcase_add_test(tc, test_full);
	tcase_add_test(tc, test_invalid);
	tcase_add_test(tc, test_tombstones);
	tcase_add_test(tc, test_expire_reuses_slots);
	tcase_add_test(tc, test_order_independent_of_arrival);
	tcase_add_test(tc, test_digest_round_trip);
	tcase_add_test(tc, test_ten_thousand_in_16_mib);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
