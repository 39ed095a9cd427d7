/* seeds: the SRV answer parser against well-formed and malformed DNS
 * messages (truncated, a compressed name that loops, the wrong type, no
 * answers), the merged list's order and deduplication, and seeds on a
 * real loop: numeric seeds resolved, the merged list reported, not
 * again when a later resolution gives the same addresses. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seeds.h"

typedef struct msg {
	uint8_t b[1024];
	size_t n;
} msg;

static void put8(msg *m, unsigned v)
{
	m->b[m->n++] = (uint8_t)v;
}

static void put16(msg *m, unsigned v)
{
	put8(m, v >> 8);
	put8(m, v & 0xff);
}

/* A name as labels ("n1.x"), then the root or, with ptr, a pointer. */
static void put_name(msg *m, const char *name, int ptr)
{
	while (*name) {
		size_t k = strcspn(name, ".");
		put8(m, (unsigned)k);
		memcpy(m->b + m->n, name, k);
		m->n += k;
		name += k + (name[k] == '.');
	}
	if (ptr >= 0)
		put16(m, 0xc000 | (unsigned)ptr);
	else
		put8(m, 0);
}

/* Offset of the "x" label in the question "_g._tcp.x". */
#define QNAME_X 20

static void header(msg *m, unsigned rcode, unsigned answers)
{
	m->n = 0;
	put16(m, 0x1234);
	put16(m, 0x8180 | rcode);
	put16(m, 1);
	put16(m, answers);
	put16(m, 0);
	put16(m, 0);
	put_name(m, "_g._tcp.x", -1);
	put16(m, 33);
	put16(m, 1);
}

/* An answer of type `type` whose rdata is SRV's fixed part and a target
 * (labels, then a pointer if ptr >= 0); its rdlength is the real one
 * plus `rdlen_delta`. */
static void srv(msg *m, unsigned type, unsigned port, const char *labels, int ptr,
		int rdlen_delta)
{
	put16(m, 0xc00c);
	put16(m, type);
	put16(m, 1);
	put16(m, 0);
	put16(m, 30);
	size_t at = m->n;
	put16(m, 0);
	put16(m, 10);
	put16(m, 5);
	put16(m, port);
	put_name(m, labels, ptr);
	unsigned len = (unsigned)((int)(m->n - at - 2) + rdlen_delta);
	m->b[at] = (uint8_t)(len >> 8);
	m->b[at + 1] = (uint8_t)len;
}

START_TEST(test_srv_parse)
{
	seeds_srv_target t[4];
	size_t cut;
	msg m;
	header(&m, 0, 4);
	srv(&m, 33, 7000, "n1.x", -1, 0);
	srv(&m, 5, 7000, "cname.x", -1, 0);        /* a CNAME: skipped */
	srv(&m, 33, 7001, "n2", QNAME_X, 0);       /* compressed: n2.x */
	srv(&m, 33, 7002, "", -1, 0);              /* ".": no service */
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 4, &cut), 2);
	ck_assert_uint_eq(cut, 0);
	ck_assert_str_eq(t[0].name, "n1.x");
	ck_assert_uint_eq(t[0].port, 7000);
	ck_assert_uint_eq(t[0].priority, 10);
	ck_assert_uint_eq(t[0].weight, 5);
	ck_assert_str_eq(t[1].name, "n2.x");
	ck_assert_uint_eq(t[1].port, 7001);
	/* Beyond max: cut and counted. */
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 1, &cut), 1);
	ck_assert_uint_eq(cut, 1);

	/* Every truncation of it is malformed, never a shorter answer. */
	for (size_t len = 0; len < m.n; len++)
		ck_assert_msg(seeds_srv_parse(m.b, len, t, 4, &cut) == -EBADMSG,
			      "truncated to %zu of %zu", len, m.n);
}
END_TEST

START_TEST(test_srv_malformed)
{
	seeds_srv_target t[4];
	size_t cut;
	msg m;
	/* A target that points at itself. */
	header(&m, 0, 1);
	size_t self = m.n + 12 + 6;   /* the answer's fixed part, SRV's */
	srv(&m, 33, 7000, "", (int)self, 0);
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 4, &cut), -EBADMSG);
	/* A loop of two: n1 -> the next label -> back. */
	header(&m, 0, 1);
	size_t at = m.n + 12 + 6;
	srv(&m, 33, 7000, "n1", (int)at, 0);
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 4, &cut), -EBADMSG);
	/* A pointer past the end. */
	header(&m, 0, 1);
	srv(&m, 33, 7000, "n1", 1000, 0);
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 4, &cut), -EBADMSG);
	/* rdlength shorter than SRV's fixed part, or not the target's end. */
	header(&m, 0, 1);
	put16(&m, 0xc00c);
	put16(&m, 33);
	put16(&m, 1);
	put16(&m, 0);
	put16(&m, 30);
	put16(&m, 5);
	put16(&m, 0);
	put16(&m, 0);
	put8(&m, 0);
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 4, &cut), -EBADMSG);
	header(&m, 0, 1);
	srv(&m, 33, 7000, "n1.x", -1, -1);
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 4, &cut), -EBADMSG);
	header(&m, 0, 1);                          /* a byte after the target */
	srv(&m, 33, 7000, "n1.x", -1, 1);
	put8(&m, 0);
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 4, &cut), -EBADMSG);
	/* A count of answers larger than the message. */
	header(&m, 0, 2);
	srv(&m, 33, 7000, "n1.x", -1, 0);
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 4, &cut), -EBADMSG);
}
END_TEST

START_TEST(test_srv_no_data)
{
	seeds_srv_target t[4];
	size_t cut;
	msg m;
	header(&m, 0, 0);                          /* zero answers */
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 4, &cut), -ENODATA);
	header(&m, 0, 2);                          /* only other types */
	srv(&m, 1, 7000, "n1.x", -1, 0);
	srv(&m, 28, 7000, "n1.x", -1, 0);
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 4, &cut), -ENODATA);
	header(&m, 3, 1);                          /* NXDOMAIN */
	srv(&m, 33, 7000, "n1.x", -1, 0);
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 4, &cut), -ENODATA);
	header(&m, 0, 2);                          /* port 0, "." */
	srv(&m, 33, 0, "n1.x", -1, 0);
	srv(&m, 33, 7000, "", -1, 0);
	ck_assert_int_eq(seeds_srv_parse(m.b, m.n, t, 4, &cut), -ENODATA);
}
END_TEST

static seed_addr v4(const char *ip, uint16_t port, uint16_t from)
{
	seed_addr a = {.family = AF_INET, .port = port, .seed = from};
	ck_assert_int_eq(inet_pton(AF_INET, ip, a.addr), 1);
	return a;
}

START_TEST(test_sort_unique)
{
	seed_addr a[] = {
		v4("10.0.0.2", 7000, 1), v4("10.0.0.1", 7001, 0), v4("10.0.0.2", 7000, 0),
		v4("10.0.0.1", 7000, 2), v4("10.0.0.2", 7000, 3),
	};
	char text[SEEDS_ADDR_TEXT_MAX];
	ck_assert_uint_eq(seeds_sort_unique(a, 5), 3);
	seeds_addr_text(&a[0], text, sizeof(text));
	ck_assert_str_eq(text, "10.0.0.1:7000");
	seeds_addr_text(&a[1], text, sizeof(text));
	ck_assert_str_eq(text, "10.0.0.1:7001");
	seeds_addr_text(&a[2], text, sizeof(text));
	ck_assert_str_eq(text, "10.0.0.2:7000");
	ck_assert_uint_eq(a[2].seed, 0);       /* the first seed's kept */
	seed_addr b = {.family = AF_INET6, .port = 9};
	inet_pton(AF_INET6, "fd00::1", b.addr);
	seeds_addr_text(&b, text, sizeof(text));
	ck_assert_str_eq(text, "[fd00::1]:9");
}
END_TEST

typedef struct watch {
	int calls;
	size_t n;
	seed_addr list[8];
} watch;

static void on_changed(void *ctx, const seed_addr *list, size_t n)
{
	watch *w = ctx;
	w->calls++;
	w->n = n;
	memcpy(w->list, list, (n < 8 ? n : 8) * sizeof(*list));
}

static void on_stop(uv_timer_t *t)
{
	uv_stop(t->loop);
}

/* Runs the loop for ms (the seeds' timer keeps none alive). */
static void run_for(uv_loop_t *loop, unsigned ms)
{
	uv_timer_t t;
	uv_timer_init(loop, &t);
	uv_timer_start(&t, on_stop, ms, 0);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

START_TEST(test_loop)
{
	static const seeds_ops ops = {.changed = on_changed};
	static seeds s;
	gsp_daemon_config cfg;
	char err[256] = "";
	static const char text[] = "[Cluster]\nSeed = 127.0.0.1:7000\nSeed = [::1]:7001\n"
				   "Seed = 127.0.0.1:7000\nResolveIntervalSeconds = 1\n";
	gsp_daemon_config_default(&cfg);
	ck_assert_msg(gsp_daemon_config_parse(text, strlen(text), "t", &cfg, err,
					      sizeof(err)) == 0, "%s", err);
	uv_loop_t loop;
	uv_loop_init(&loop);
	counters c = {0};
	watch w = {0};
	ck_assert_int_eq(seeds_start(&s, &loop, &cfg, &c, &ops, &w), 0);
	run_for(&loop, 500);
	/* Reported as the seeds answer (up to once each). */
	ck_assert_int_ge(w.calls, 1);
	ck_assert_int_le(w.calls, 3);
	int calls = w.calls;
	ck_assert_uint_eq(w.n, 2);
	ck_assert_uint_eq(w.list[0].family, AF_INET);
	ck_assert_uint_eq(w.list[0].port, 7000);
	ck_assert_uint_eq(w.list[0].seed, 0);     /* seed 2 gave it too */
	ck_assert_uint_eq(w.list[1].family, AF_INET6);
	ck_assert_uint_eq(w.list[1].port, 7001);
	for (size_t i = 0; i < 3; i++) {
		ck_assert_int_eq(s.seed[i].state, SEED_RESOLVED);
		ck_assert_uint_eq(s.seed[i].n, 1);
	}
	ck_assert_uint_eq(c.seed_resolutions, 3);
	/* Resolved again after 1 s, the same answer: not reported again. */
	run_for(&loop, 1300);
	ck_assert_uint_eq(c.seed_resolutions, 6);
	ck_assert_uint_eq(c.seed_failures, 0);
	ck_assert_int_eq(w.calls, calls);
	seeds_stop(&s);
	run_for(&loop, 1200);
	ck_assert_uint_eq(c.seed_resolutions, 6);   /* stopped: no more */
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	gsp_daemon_config_clear(&cfg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("daemon-seeds");
	TCase *tc = tcase_create("seeds");
	tcase_add_test(tc, test_srv_parse);
	tcase_add_test(tc, test_srv_malformed);
	tcase_add_test(tc, test_srv_no_data);
	tcase_add_test(tc, test_sort_unique);
	tcase_add_test(tc, test_loop);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
