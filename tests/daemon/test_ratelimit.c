/* Unit tests of the per-address rate of handshake attempts: the token
 * buckets themselves (daemon/ratelimit.h: burst, refill, one address
 * apart from another, the least recently seen evicted from a full table,
 * refusals logged once a second with their count, the keys of IPv4 and
 * IPv6 addresses), and the link layer that uses them on loopback: a
 * connection over its address's rate is closed before anything is read
 * and counted, while another address still gets through. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <sodium.h>

#include "hsframe.h"
#include "linkpair.h"
#include "ratelimit.h"
#include "testutil.h"

static void key_of(uint8_t k[RATELIMIT_KEY], uint32_t n)
{
	memset(k, 0, RATELIMIT_KEY);
	memcpy(k, &n, sizeof(n));
}

/* How many attempts of key at now go through, of tries. */
static unsigned takes(ratelimit *rl, uint32_t key, uint64_t now, unsigned tries)
{
	uint8_t k[RATELIMIT_KEY];
	unsigned ok = 0, logged;
	key_of(k, key);
	for (unsigned i = 0; i < tries; i++)
		ok += ratelimit_take(rl, k, now, &logged);
	return ok;
}

START_TEST(test_burst_then_rate)
{
	static ratelimit rl;
	ratelimit_init(&rl, 10, 5);
	ck_assert_uint_eq(takes(&rl, 1, 1000, 8), 5);       /* the burst */
	ck_assert_uint_eq(takes(&rl, 1, 1099, 1), 0);       /* 0.99 token */
	ck_assert_uint_eq(takes(&rl, 1, 1100, 2), 1);       /* 10 a second */
	ck_assert_uint_eq(takes(&rl, 1, 1300, 5), 2);
	/* Another address has its own bucket. */
	ck_assert_uint_eq(takes(&rl, 2, 1300, 8), 5);
	/* A long pause refills up to the burst, not beyond. */
	ck_assert_uint_eq(takes(&rl, 1, 100000, 8), 5);
	/* Time going back (it cannot, but) takes nothing away. */
	ck_assert_uint_eq(takes(&rl, 1, 50000, 1), 0);
}
END_TEST

START_TEST(test_full_table_evicts_least_recent)
{
	static ratelimit rl;
	ratelimit_init(&rl, 1, 2);
	/* Every slot taken and emptied, key 0 first (least recent). */
	for (uint32_t k = 0; k < RATELIMIT_SLOTS; k++)
		ck_assert_uint_eq(takes(&rl, k, 10 + k, 2), 2);
	ck_assert_uint_eq(takes(&rl, 5, 10 + RATELIMIT_SLOTS, 1), 0);
	/* One more address takes key 0's slot... */
	ck_assert_uint_eq(takes(&rl, 9999, 10 + RATELIMIT_SLOTS, 1), 1);
	/* ...so key 0 starts over with a full bucket, while key 1 (still in
	 * the table, emptied a moment ago) gets nothing. */
	ck_assert_uint_eq(takes(&rl, 1, 11 + RATELIMIT_SLOTS, 1), 0);
	ck_assert_uint_eq(takes(&rl, 0, 11 + RATELIMIT_SLOTS, 3), 2);
}
END_TEST

START_TEST(test_refusals_logged_once_a_second)
{
	static ratelimit rl;
	uint8_t k[RATELIMIT_KEY];
	unsigned logged = 99;
	ratelimit_init(&rl, 1, 1);
	key_of(k, 7);
	ck_assert(ratelimit_take(&rl, k, 0, &logged));
	ck_assert(!ratelimit_take(&rl, k, 0, &logged));
	ck_assert_uint_eq(logged, 1);               /* the first, at once */
	for (int i = 0; i < 5; i++) {
		ck_assert(!ratelimit_take(&rl, k, 100 + i, &logged));
		ck_assert_uint_eq(logged, 0);
	}
	/* 0.9 s later: still under a token, and still within the second. */
	ck_assert(!ratelimit_take(&rl, k, 900, &logged));
	ck_assert_uint_eq(logged, 0);
	/* A second after the last line: the count of all since it. */
	ck_assert(ratelimit_take(&rl, k, 1000, &logged));
	ck_assert(!ratelimit_take(&rl, k, 1000, &logged));
	ck_assert_uint_eq(logged, 7);
}
END_TEST

START_TEST(test_keys)
{
	struct sockaddr_in a4 = {.sin_family = AF_INET};
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6}, b6 = a6;
	struct sockaddr un = {.sa_family = AF_UNIX};
	uint8_t k[RATELIMIT_KEY], k2[RATELIMIT_KEY];
	static const uint8_t mapped[RATELIMIT_KEY] = {
		[10] = 0xff, [11] = 0xff, [12] = 127, [13] = 0, [14] = 0, [15] = 2,
	};
	inet_pton(AF_INET, "127.0.0.2", &a4.sin_addr);
	a4.sin_port = htons(1234);
	ck_assert_int_eq(ratelimit_key((struct sockaddr *)&a4, k), 0);
	ck_assert_mem_eq(k, mapped, RATELIMIT_KEY);
	/* One /64: one key, whatever the interface part. */
	inet_pton(AF_INET6, "2001:db8:1:2::1", &a6.sin6_addr);
	inet_pton(AF_INET6, "2001:db8:1:2:ffff::9", &b6.sin6_addr);
	ck_assert_int_eq(ratelimit_key((struct sockaddr *)&a6, k), 0);
	ck_assert_int_eq(ratelimit_key((struct sockaddr *)&b6, k2), 0);
	ck_assert_mem_eq(k, k2, RATELIMIT_KEY);
	inet_pton(AF_INET6, "2001:db8:1:3::1", &b6.sin6_addr);
	ck_assert_int_eq(ratelimit_key((struct sockaddr *)&b6, k2), 0);
	ck_assert(memcmp(k, k2, RATELIMIT_KEY) != 0);
	ck_assert_int_eq(ratelimit_key(&un, k), -EAFNOSUPPORT);
}
END_TEST

/* ---- on links --------------------------------------------------------- */

/* A raw TCP client of A's listener from the loopback address src. */
static int connect_from(const char *src)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	inet_pton(AF_INET, src, &sa.sin_addr);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&listen_addr,
				 sizeof(listen_addr)), 0);
	return fd;
}

static bool a_refused_one(void)
{
	return A.counters.hs_rate_limited >= 1;
}

/* B's HS_INIT on fd: whether A answered it. */
static bool answered(int fd)
{
	gsp_hs hs;
	uint8_t ts[GSP_HS_TIMESTAMP], frame[4 + GSP_HS_INIT_MSG_BYTES];
	uint8_t resp[4 + GSP_HS_RESP_MSG_BYTES];
	gsp_hs_timestamp(ts);
	size_t n = hs_init_frame(&hs, &B.key, A.key.pub, ts, frame);
	gsp_hs_clear(&hs);
	if (write(fd, frame, n) != (ssize_t)n)
		return false;
	return raw_read(fd, resp, sizeof(resp)) == sizeof(resp);
}

START_TEST(test_link_refuses_over_rate)
{
	static ratelimit rl;
	ratelimit_init(&rl, 1, 3);
	A.env.hs_limit = &rl;
	int fds[4];
	for (int i = 0; i < 3; i++)
		fds[i] = connect_from("127.0.0.1");
	/* The fourth within the second is over the burst. */
	fds[3] = connect_from("127.0.0.1");
	ck_assert(run_until(a_refused_one, 2000));
	ck_assert_uint_eq(A.counters.hs_rate_limited, 1);
	/* Closed before anything was read: its HS_INIT gets no answer,
	 * while one within the rate does. */
	ck_assert(!answered(fds[3]));
	ck_assert(answered(fds[0]));
	/* Another address has its own bucket: a real dial gets through. */
	int other = connect_from("127.0.0.2");
	ck_assert(answered(other));
	ck_assert_uint_eq(A.counters.hs_rate_limited, 1);
	ck_assert_uint_eq(A.counters.rx_malformed + A.counters.hs_refused, 0);
	close(other);
	for (int i = 0; i < 4; i++)
		close(fds[i]);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	signal(SIGPIPE, SIG_IGN);
	Suite *s = suite_create("daemon-ratelimit");
	TCase *tc = tcase_create("limiter");
	tcase_add_test(tc, test_burst_then_rate);
	tcase_add_test(tc, test_full_table_evicts_least_recent);
	tcase_add_test(tc, test_refusals_logged_once_a_second);
	tcase_add_test(tc, test_keys);
	suite_add_tcase(s, tc);
	TCase *links = tcase_create("link");
	tcase_add_checked_fixture(links, setup, teardown);
	tcase_add_test(links, test_link_refuses_over_rate);
	suite_add_tcase(s, links);
	return run_suite(s);
}
