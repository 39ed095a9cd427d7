/* Unit tests of the edges' records (daemon/edgestate.h): the encoding and
 * its parser's refusal of every malformed file.  Saving them and reading
 * files: test_edgestate_file.c. */
#include "edgestatetest.h"

/* The format of edgestate.h, written here by hand so that the tests do
 * not take the encoder's word for it. */
#define MAGIC "gossipd edges v2\n"
#define MAGIC_LEN 17
#define FIXED (MAGIC_LEN + 8 + 4)   /* magic, writes, count */
#define WRITES 0x1122334455667788ull
#define HEAD (GSP_KEY_BYTES + 4 + 1 + 8 + 4 + 8 + 32 + 4) /* 93 */

static uint8_t *copy;             /* parse_exact()'s */

static void setup(void)
{
	edgestate_dir_make();
}

static void teardown(void)
{
	tmpdir_remove(dir);
	free(copy);
	copy = NULL;
}

/* A file being written by hand: grows as records are appended. */
typedef struct raw {
	uint8_t *b;
	size_t len, cap;
} raw;

static void raw_put(raw *w, const void *p, size_t n)
{
	if (w->len + n > w->cap) {
		w->cap = 2 * (w->len + n);
		w->b = realloc(w->b, w->cap);
		ck_assert_ptr_nonnull(w->b);
	}
	if (n)
		memcpy(w->b + w->len, p, n);
	w->len += n;
}

static void raw_int(raw *w, uint64_t v, int n)
{
	uint8_t t[8];
	le(t, v, n);
	raw_put(w, t, (size_t)n);
}

static raw raw_file(uint32_t count)
{
	raw w = {0};
	raw_put(&w, MAGIC, MAGIC_LEN);
	raw_int(&w, WRITES, 8);
	raw_int(&w, count, 4);
	return w;
}

/* One record's header (its message, if any, appended after with raw_put). */
static void raw_head(raw *w, uint8_t keyb, uint32_t gen, uint8_t live, uint64_t applied,
		     uint32_t egen, uint64_t eapplied, uint8_t seedb, uint32_t msg_len)
{
	uint8_t key[GSP_KEY_BYTES], seed[32];
	memset(key, keyb, sizeof(key));
	memset(seed, seedb, sizeof(seed));
	raw_put(w, key, sizeof(key));
	raw_int(w, gen, 4);
	raw_put(w, &live, 1);
	raw_int(w, applied, 8);
	raw_int(w, egen, 4);
	raw_int(w, eapplied, 8);
	raw_put(w, seed, sizeof(seed));
	raw_int(w, msg_len, 4);
}

static void raw_rec(raw *w, uint8_t keyb, uint32_t gen, uint8_t live, uint64_t applied,
		    uint32_t egen, uint64_t eapplied, uint8_t seedb, const char *msg)
{
	uint32_t n = msg ? (uint32_t)strlen(msg) : 0;
	raw_head(w, keyb, gen, live, applied, egen, eapplied, seedb, n);
	raw_put(w, msg, n);
}


/* Parses a copy of exactly len bytes, so that valgrind or ASan sees a
 * read past the end (a raw's buffer has spare room, and a prefix's end is
 * not the buffer's).  The messages point into the copy, valid until the
 * next parse (the teardown frees the last). */
static int parse_exact(const uint8_t *b, size_t len)
{
	free(copy);
	copy = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(copy);
	if (len)
		memcpy(copy, b, len);
	return edgestate_parse(copy, len, out, NULL, NULL);
}

static int parse(const raw *w)
{
	return parse_exact(w->b, w->len);
}

/* ---- encode and parse ------------------------------------------------- */

START_TEST(test_round_trip)
{
	edge_record in[4];
	size_t n = sample(in);
	for (size_t k = 0; k <= n; k++) {               /* 0..4 records */
		uint8_t *buf;
		size_t len;
		ck_assert_int_eq(edgestate_encode(in, k, 0, NULL, &buf, &len), 0);
		memset(out, 0xa5, 5 * sizeof(out[0]));
		ck_assert_int_eq(edgestate_parse(buf, len, out, NULL, NULL), (int)k);
		size_t pos = FIXED;
		for (size_t i = 0; i < k; i++) {
			assert_same(&out[i], &in[i]);
			pos += HEAD;
			/* The message is the file's bytes, not a copy. */
			if (in[i].msg_len) {
				ck_assert_ptr_eq(out[i].msg, buf + pos);
				ck_assert_ptr_ne(out[i].msg, in[i].msg);
			} else {
				ck_assert_ptr_null(out[i].msg);
			}
			pos += in[i].msg_len;
		}
		ck_assert_uint_eq(pos, len);
		/* Encoding what was parsed gives the same bytes back. */
		uint8_t *again;
		size_t again_len;
		ck_assert_int_eq(edgestate_encode(out, k, 0, NULL, &again, &again_len), 0);
		ck_assert_uint_eq(again_len, len);
		ck_assert(!memcmp(again, buf, len));
		free(again);
		free(buf);
	}
}
END_TEST

/* v3: records that carry a generation's state (engine bytes, Weight,
 * two kept ROUNDs) beside ones that do not; parsed back, the same bytes;
 * cut anywhere, or with a Weight outside [0, 1], refused. */
START_TEST(test_state_round_trip)
{
	static const uint8_t engine[] = "GSE1 engine state \x00\xff bytes";
	static const uint8_t k0[] = "kept round S-1", k1[] = "kept round S";
	edge_record in[4];
	size_t n = sample(in);
	in[0].weight = 0.25f;
	in[0].engine = engine;
	in[0].engine_len = sizeof(engine);
	in[0].kept[0] = k0;
	in[0].kept_len[0] = sizeof(k0);
	in[0].kept[1] = k1;
	in[0].kept_len[1] = sizeof(k1);
	in[3].engine = engine;             /* no kept messages */
	in[3].engine_len = 3;
	uint8_t *buf;
	size_t len;
	ck_assert_int_eq(edgestate_encode(in, n, WRITES, NULL, &buf, &len), 0);
	ck_assert(!memcmp(buf, "gossipd edges v3\n", MAGIC_LEN));
	uint64_t writes = 0;
	ck_assert_int_eq(edgestate_parse(buf, len, out, &writes, NULL), (int)n);
	ck_assert_uint_eq(writes, WRITES);
	for (size_t i = 0; i < n; i++) {
		assert_same(&out[i], &in[i]);
		ck_assert(out[i].weight == in[i].weight);
		ck_assert_uint_eq(out[i].engine_len, in[i].engine_len);
		if (in[i].engine_len)
			ck_assert(!memcmp(out[i].engine, in[i].engine, in[i].engine_len));
		else
			ck_assert_ptr_null(out[i].engine);
		for (int k = 0; k < 2; k++) {
			ck_assert_uint_eq(out[i].kept_len[k], in[i].kept_len[k]);
			if (in[i].kept_len[k])
				ck_assert(!memcmp(out[i].kept[k], in[i].kept[k],
						  in[i].kept_len[k]));
		}
	}
	uint8_t *again;
	size_t again_len;
	ck_assert_int_eq(edgestate_encode(out, n, WRITES, NULL, &again, &again_len), 0);
	ck_assert_uint_eq(again_len, len);
	ck_assert(!memcmp(again, buf, len));
	free(again);
	for (size_t l = 0; l < len; l++)
		ck_assert_int_eq(parse_exact(buf, l), -EBADMSG);
	/* The first record's Weight: the 4 bytes after its message. */
	size_t at = FIXED + HEAD + in[0].msg_len;
	le(buf + at, 0x7fc00000u, 4);      /* NaN */
	ck_assert_int_eq(parse_exact(buf, len), -EBADMSG);
	le(buf + at, 0x3f800001u, 4);      /* just over 1 */
	ck_assert_int_eq(parse_exact(buf, len), -EBADMSG);
	le(buf + at, 0x3f800000u, 4);      /* 1 */
	ck_assert_int_eq(parse_exact(buf, len), (int)n);
	free(buf);
	/* With no state anywhere: v2, which older daemons read. */
	in[0].engine_len = in[3].engine_len = 0;
	ck_assert_int_eq(edgestate_encode(in, n, WRITES, NULL, &buf, &len), 0);
	ck_assert(!memcmp(buf, "gossipd edges v2\n", MAGIC_LEN));
	free(buf);
}
END_TEST

/* The encoder writes the layout of edgestate.h, byte for byte. */
START_TEST(test_encode_layout)
{
	edge_record in[4];
	sample(in);
	raw w = raw_file(3);
	raw_put(&w, in[0].key, GSP_KEY_BYTES);
	raw_int(&w, 7, 4);
	raw_int(&w, 1, 1);
	raw_int(&w, 0x0102030405060708ull, 8);
	raw_int(&w, 6, 4);
	raw_int(&w, 0xfffffffffffffffeull, 8);
	raw_put(&w, in[0].seed, 32);
	raw_int(&w, sizeof(msg_a), 4);
	raw_put(&w, msg_a, sizeof(msg_a));
	raw_put(&w, in[1].key, GSP_KEY_BYTES);
	raw_int(&w, 0xffffffffu, 4);
	raw_int(&w, 0, 1);
	raw_int(&w, 12, 8);
	raw_int(&w, 0xffffffffu, 4);
	raw_int(&w, 12, 8);
	raw_put(&w, in[1].seed, 32);
	raw_int(&w, 0, 4);
	raw_put(&w, in[2].key, GSP_KEY_BYTES);
	raw_int(&w, 0, 4);
	raw_int(&w, 0, 1);
	raw_int(&w, 0, 8);
	raw_int(&w, 0, 4);
	raw_int(&w, 0, 8);
	raw_put(&w, in[2].seed, 32);
	raw_int(&w, 1, 4);
	raw_int(&w, 0, 1);

	uint8_t *buf;
	size_t len;
	ck_assert_int_eq(edgestate_encode(in, 3, WRITES, NULL, &buf, &len), 0);
	ck_assert_uint_eq(len, w.len);
	ck_assert_uint_eq(len, FIXED + 3 * HEAD + sizeof(msg_a) + 1);
	ck_assert(!memcmp(buf, w.b, len));
	free(buf);
	free(w.b);
}
END_TEST

/* The bounds themselves are allowed: EDGESTATE_MAX records, ended
 * generation equal to the generation, a live generation 1. */
START_TEST(test_parse_accepts_bounds)
{
	raw w = raw_file(EDGESTATE_MAX);
	for (int i = 0; i < EDGESTATE_MAX; i++)
		raw_rec(&w, (uint8_t)i, 3, (uint8_t)(i & 1), 5, 3, 4, 9, i % 3 ? NULL : "m");
	ck_assert_int_eq(parse(&w), EDGESTATE_MAX);
	ck_assert_uint_eq(out[EDGESTATE_MAX - 1].key[0], (uint8_t)(EDGESTATE_MAX - 1));
	free(w.b);

	w = raw_file(2);
	raw_rec(&w, 1, 1, 1, 0, 1, 0, 1, NULL);
	raw_rec(&w, 2, 0, 0, 0, 0, 0, 2, "x");
	ck_assert_int_eq(parse(&w), 2);
	ck_assert(out[0].live);
	ck_assert(!out[1].live);
	ck_assert_uint_eq(out[1].msg_len, 1);
	ck_assert_ptr_eq(out[1].msg, copy + FIXED + 2 * HEAD);
	ck_assert_uint_eq(out[1].msg[0], 'x');
	free(w.b);
}
END_TEST

START_TEST(test_parse_refuses_bad_framing)
{
	/* Empty, and every prefix of the magic and count. */
	ck_assert_int_eq(edgestate_parse((const uint8_t *)"", 0, out, NULL, NULL), -EBADMSG);
	raw w = raw_file(0);
	ck_assert_int_eq(parse(&w), 0);
	for (size_t l = 0; l < w.len; l++)
		ck_assert_int_eq(parse_exact(w.b, l), -EBADMSG);
	/* Short magic: "gossipd edges v2" without its newline, then a count. */
	raw s = {0};
	raw_put(&s, MAGIC, MAGIC_LEN - 1);
	raw_int(&s, 0, 4);
	raw_int(&s, 0, 1);
	ck_assert_int_eq(parse(&s), -EBADMSG);
	free(s.b);
	/* Wrong magic: each byte changed in turn, and another version. */
	for (size_t i = 0; i < MAGIC_LEN; i++) {
		w.b[i] ^= 0x20;
		ck_assert_int_eq(parse(&w), -EBADMSG);
		w.b[i] ^= 0x20;
	}
	memcpy(w.b, "gossipd edges v4\n", MAGIC_LEN);
	ck_assert_int_eq(parse(&w), -EBADMSG);
	free(w.b);

	/* Trailing bytes after the last record, or after a count of 0. */
	w = raw_file(0);
	raw_int(&w, 0, 1);
	ck_assert_int_eq(parse(&w), -EBADMSG);
	free(w.b);
	w = raw_file(2);
	raw_rec(&w, 1, 4, 1, 2, 3, 9, 1, "hello");
	raw_rec(&w, 2, 4, 0, 2, 3, 9, 2, NULL);
	ck_assert_int_eq(parse(&w), 2);
	raw_int(&w, 0, 1);
	ck_assert_int_eq(parse(&w), -EBADMSG);
	free(w.b);

	/* A count of more records than there are (each ending in turn), or
	 * fewer (the rest is trailing). */
	w = raw_file(3);
	raw_rec(&w, 1, 4, 1, 2, 3, 9, 1, "hello");
	raw_rec(&w, 2, 4, 0, 2, 3, 9, 2, NULL);
	ck_assert_int_eq(parse(&w), -EBADMSG);
	le(w.b + MAGIC_LEN, 1, 4);
	ck_assert_int_eq(parse(&w), -EBADMSG);
	free(w.b);
}
END_TEST

START_TEST(test_parse_refuses_count_over_max)
{
	/* EDGESTATE_MAX + 1 whole records: the count alone refuses them
	 * (out has room for one more here, so a parser that took them would
	 * return it rather than write past the array). */
	raw w = raw_file(EDGESTATE_MAX + 1);
	for (int i = 0; i <= EDGESTATE_MAX; i++)
		raw_rec(&w, (uint8_t)i, 1, 0, 0, 0, 0, 0, NULL);
	ck_assert_int_eq(parse(&w), -EBADMSG);
	free(w.b);
	/* And the count's largest values with nothing after them. */
	uint32_t counts[] = {EDGESTATE_MAX + 1, 0x80000000u, 0xffffffffu};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		w = raw_file(counts[i]);
		ck_assert_int_eq(parse(&w), -EBADMSG);
		free(w.b);
	}
}
END_TEST

/* Cut anywhere inside a record's header or its message: refused. */
START_TEST(test_parse_refuses_truncation)
{
	raw w = raw_file(2);
	raw_rec(&w, 1, 4, 1, 2, 3, 9, 1, "a message of the first record");
	raw_rec(&w, 2, 4, 0, 2, 3, 9, 2, "second");
	ck_assert_int_eq(parse(&w), 2);
	for (size_t l = 0; l < w.len; l++)
		ck_assert_int_eq(parse_exact(w.b, l), -EBADMSG);
	free(w.b);

	/* A header cut short, the file ending there. */
	w = raw_file(1);
	raw_head(&w, 1, 4, 1, 2, 3, 9, 1, 0);
	w.len -= 1;
	ck_assert_int_eq(parse(&w), -EBADMSG);
	free(w.b);
	/* A message one byte shorter than its length says. */
	w = raw_file(1);
	raw_head(&w, 1, 4, 1, 2, 3, 9, 1, 6);
	raw_put(&w, "12345", 5);
	ck_assert_int_eq(parse(&w), -EBADMSG);
	raw_put(&w, "6", 1);
	ck_assert_int_eq(parse(&w), 1);
	free(w.b);
}
END_TEST

START_TEST(test_parse_refuses_bad_fields)
{
	/* live is 0 or 1. */
	uint8_t lives[] = {2, 3, 0x80, 0xff};
	for (size_t i = 0; i < sizeof(lives); i++) {
		raw w = raw_file(1);
		raw_rec(&w, 1, 4, lives[i], 2, 3, 9, 1, NULL);
		ck_assert_int_eq(parse(&w), -EBADMSG);
		free(w.b);
	}
	/* A live generation is at least 1 (0 is "none yet"). */
	raw w = raw_file(1);
	raw_rec(&w, 1, 0, 1, 0, 0, 0, 1, NULL);
	ck_assert_int_eq(parse(&w), -EBADMSG);
	free(w.b);
	/* The ended generation is not after the current one. */
	uint32_t pairs[][2] = {{4, 5}, {0, 1}, {0xfffffffeu, 0xffffffffu}, {0, 0xffffffffu}};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		for (uint8_t live = 0; live <= 1; live++) {
			w = raw_file(1);
			raw_rec(&w, 1, pairs[i][0], live, 0, pairs[i][1], 0, 1, NULL);
			ck_assert_int_eq(parse(&w), -EBADMSG);
			free(w.b);
		}
	/* A bad record after a good one. */
	w = raw_file(2);
	raw_rec(&w, 1, 4, 1, 2, 3, 9, 1, "ok");
	raw_rec(&w, 2, 4, 2, 2, 3, 9, 2, NULL);
	ck_assert_int_eq(parse(&w), -EBADMSG);
	free(w.b);
}
END_TEST

START_TEST(test_write_count)
{
	/* The count is the 8 bytes after the magic, both ways. */
	raw w = raw_file(0);
	uint64_t writes = 0;
	ck_assert_int_eq(edgestate_parse(w.b, w.len, out, &writes, NULL), 0);
	ck_assert_uint_eq(writes, WRITES);
	uint8_t *buf;
	size_t len;
	ck_assert_int_eq(edgestate_encode(out, 0, WRITES, NULL, &buf, &len), 0);
	ck_assert_uint_eq(len, w.len);
	ck_assert(!memcmp(buf, w.b, len));
	free(buf);
	free(w.b);
	/* A v1 file (no count) parses, with writes 0 and its records. */
	raw v1 = {0};
	raw_put(&v1, "gossipd edges v1\n", MAGIC_LEN);
	raw_int(&v1, 1, 4);
	raw_head(&v1, 1, 4, 1, 2, 3, 9, 1, 0);
	writes = 77;
	ck_assert_int_eq(edgestate_parse(v1.b, v1.len, out, &writes, NULL), 1);
	ck_assert_uint_eq(writes, 0);
	ck_assert_uint_eq(out[0].applied, 2);
	/* Cut anywhere, it is refused. */
	for (size_t l = 0; l < v1.len; l++)
		ck_assert_int_eq(parse_exact(v1.b, l), -EBADMSG);
	free(v1.b);
}
END_TEST

START_TEST(test_parse_refuses_message_over_max)
{
	/* Lengths past the bound with no bytes behind them. */
	uint32_t lens[] = {EDGESTATE_MSG_MAX + 1, 0x80000000u, 0xffffffffu};
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		raw w = raw_file(1);
		raw_head(&w, 1, 4, 1, 2, 3, 9, 1, lens[i]);
		ck_assert_int_eq(parse(&w), -EBADMSG);
		free(w.b);
	}
	/* EDGESTATE_MSG_MAX + 1 bytes that are all there: the bound alone
	 * refuses them; EDGESTATE_MSG_MAX is accepted. */
	size_t len = FIXED + HEAD + EDGESTATE_MSG_MAX + 1;
	uint8_t *b = calloc(1, len);
	ck_assert_ptr_nonnull(b);
	raw w = raw_file(1);
	raw_head(&w, 1, 4, 1, 2, 3, 9, 1, EDGESTATE_MSG_MAX + 1);
	memcpy(b, w.b, w.len);
	ck_assert_int_eq(edgestate_parse(b, len, out, NULL, NULL), -EBADMSG);
	le(b + w.len - 4, EDGESTATE_MSG_MAX, 4);
	ck_assert_int_eq(edgestate_parse(b, len - 1, out, NULL, NULL), 1);
	ck_assert_uint_eq(out[0].msg_len, EDGESTATE_MSG_MAX);
	ck_assert_ptr_eq(out[0].msg, b + w.len);
	free(w.b);
	free(b);
}
END_TEST

START_TEST(test_encode_refuses_oversized)
{
	static edge_record in[EDGESTATE_MAX + 1];
	uint8_t *buf = (uint8_t *)1;
	size_t len = 7;
	ck_assert_int_eq(edgestate_encode(in, EDGESTATE_MAX + 1, 0, NULL, &buf, &len), -EINVAL);
	ck_assert_ptr_eq(buf, (uint8_t *)1);                /* untouched */
	ck_assert_uint_eq(len, 7);
	ck_assert_int_eq(edgestate_encode(in, EDGESTATE_MAX, 0, NULL, &buf, &len), 0);
	ck_assert_uint_eq(len, FIXED + (size_t)EDGESTATE_MAX * HEAD);
	free(buf);

	/* A message over the bound (never read: it is refused first). */
	edge_record r[4];
	sample(r);
	r[1].msg = NULL;
	r[1].msg_len = EDGESTATE_MSG_MAX + 1;
	buf = (uint8_t *)1;
	ck_assert_int_eq(edgestate_encode(r, 2, 0, NULL, &buf, &len), -EINVAL);
	ck_assert_ptr_eq(buf, (uint8_t *)1);
	r[1].msg_len = 0xffffffffu;
	ck_assert_int_eq(edgestate_encode(r, 2, 0, NULL, &buf, &len), -EINVAL);
	ck_assert_int_eq(edgestate_encode(r, 1, 0, NULL, &buf, &len), 0);    /* the good one */
	free(buf);
}
END_TEST

/* v4: the owner (fingerprint and buffer identity) after the write count,
 * the records as v3's (with or without state); back byte for byte; every
 * prefix refused; only that buffer owns the records. */
START_TEST(test_owner_round_trip)
{
	edge_record in[8];
	size_t n = sample(in);
	edge_owner owner = {.set = true, .dev = 0x0102030405060708ull, .ino = 77};
	for (int i = 0; i < GSP_FINGERPRINT_BYTES; i++)
		owner.fingerprint[i] = (uint8_t)(3 * i + 1);
	uint8_t *buf;
	size_t len;
	ck_assert_int_eq(edgestate_encode(in, n, WRITES, &owner, &buf, &len), 0);
	ck_assert(!memcmp(buf, "gossipd edges v4\n", MAGIC_LEN));
	uint64_t writes = 0;
	edge_owner got = {0};
	ck_assert_int_eq(edgestate_parse(buf, len, out, &writes, &got), (int)n);
	ck_assert_uint_eq(writes, WRITES);
	ck_assert(got.set);
	ck_assert_uint_eq(got.dev, owner.dev);
	ck_assert_uint_eq(got.ino, owner.ino);
	ck_assert(!memcmp(got.fingerprint, owner.fingerprint, GSP_FINGERPRINT_BYTES));
	for (size_t i = 0; i < n; i++)
		assert_same(&out[i], &in[i]);
	uint8_t *again;
	size_t again_len;
	ck_assert_int_eq(edgestate_encode(out, n, WRITES, &got, &again, &again_len), 0);
	ck_assert_uint_eq(again_len, len);
	ck_assert(!memcmp(again, buf, len));
	free(again);
	for (size_t l = 0; l < len; l++)
		ck_assert_int_eq(parse_exact(buf, l), -EBADMSG);
	free(buf);
	/* Without an owner: v2 or v3 as before, which has none. */
	edge_owner none = {0};
	ck_assert_int_eq(edgestate_encode(in, n, WRITES, &none, &buf, &len), 0);
	ck_assert(!memcmp(buf, "gossipd edges v2\n", MAGIC_LEN));
	got.set = true;
	ck_assert_int_eq(edgestate_parse(buf, len, out, NULL, &got), (int)n);
	ck_assert(!got.set);
	free(buf);
	/* Who owns them: the same model in the same buffer only; records of
	 * no owner (before v4) are anyone's. */
	edge_owner other = owner;
	ck_assert(edgestate_owned_by(&owner, &other));
	other.ino++;
	ck_assert(!edgestate_owned_by(&owner, &other));
	other = owner;
	other.dev++;
	ck_assert(!edgestate_owned_by(&owner, &other));
	other = owner;
	other.fingerprint[GSP_FINGERPRINT_BYTES - 1] ^= 1;
	ck_assert(!edgestate_owned_by(&owner, &other));
	ck_assert(!edgestate_owned_by(&owner, &none));
	ck_assert(edgestate_owned_by(&none, &owner));
	ck_assert(edgestate_owned_by(&none, &none));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("daemon-edgestate");
	TCase *tc = tcase_create("edgestate");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_state_round_trip);
	tcase_add_test(tc, test_owner_round_trip);
	tcase_add_test(tc, test_encode_layout);
	tcase_add_test(tc, test_parse_accepts_bounds);
	tcase_add_test(tc, test_parse_refuses_bad_framing);
	tcase_add_test(tc, test_parse_refuses_count_over_max);
	tcase_add_test(tc, test_parse_refuses_truncation);
	tcase_add_test(tc, test_parse_refuses_bad_fields);
	tcase_add_test(tc, test_parse_refuses_message_over_max);
	tcase_add_test(tc, test_write_count);
	tcase_add_test(tc, test_encode_refuses_oversized);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
