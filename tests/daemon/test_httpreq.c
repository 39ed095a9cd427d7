/* The metrics listener's request head (daemon/httpreq.c): GET /metrics
 * over HTTP/1.0 and 1.1 is served; every malformed or other request gets
 * its error status, as soon as its bytes show it, and a head that never
 * completes within HTTPREQ_HEAD_MAX bytes gets 431. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "httpreq.h"
#include "testutil.h"

static int judge(const char *s)
{
	return httpreq_judge(s, strlen(s));
}

START_TEST(test_served)
{
	static const char *const ok[] = {
		"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\n\r\n",
		"GET /metrics HTTP/1.0\r\n\r\n",
		"GET /metrics HTTP/1.1\n\n",
		"GET /metrics?x=1 HTTP/1.1\r\nAccept: text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
		"User-Agent: Prometheus/2.42.0\r\nX-Prometheus-Scrape-Timeout-Seconds: 1\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nX-Empty:\r\nTab:\tv\xc3\xa9\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++)
		ck_assert_msg(judge(ok[i]) == 200, "%zu: %d", i, judge(ok[i]));
}
END_TEST

/* Every prefix of a good request waits for more; none is judged early. */
START_TEST(test_prefixes_wait)
{
	const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	size_t n = strlen(req);
	for (size_t k = 0; k < n; k++)
		ck_assert_msg(httpreq_judge(req, k) == 0, "prefix %zu", k);
	ck_assert_int_eq(httpreq_judge(req, n), 200);
}
END_TEST

START_TEST(test_other_path_method_version)
{
	ck_assert_int_eq(judge("GET / HTTP/1.1\r\n\r\n"), 404);
	ck_assert_int_eq(judge("GET /metricsx HTTP/1.1\r\n\r\n"), 404);
	ck_assert_int_eq(judge("GET /metric HTTP/1.1\r\n\r\n"), 404);
	ck_assert_int_eq(judge("GET /Metrics HTTP/1.1\r\n\r\n"), 404);
	ck_assert_int_eq(judge("POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\n"), 405);
	ck_assert_int_eq(judge("HEAD /metrics HTTP/1.1\r\n\r\n"), 405);
	ck_assert_int_eq(judge("get /metrics HTTP/1.1\r\n\r\n"), 405);
	ck_assert_int_eq(judge("GET /metrics HTTP/2.0\r\n\r\n"), 505);
	ck_assert_int_eq(judge("GET /metrics HTTP/1.2\r\n\r\n"), 505);
	ck_assert_int_eq(judge("GET /metrics HTTP/0.9\r\n\r\n"), 505);
}
END_TEST

START_TEST(test_malformed)
{
	static const char *const bad[] = {
		" GET /metrics HTTP/1.1\r\n\r\n",      /* no method */
		"GET  /metrics HTTP/1.1\r\n\r\n",      /* empty target */
		"GET\t/metrics HTTP/1.1\r\n\r\n",
		"GET /metrics  HTTP/1.1\r\n\r\n",
		"GET /metrics HTTP/1.1 \r\n\r\n",
		"GET /metrics http/1.1\r\n\r\n",
		"GET /metrics HTTP/11.1\r\n\r\n",
		"GET /metrics HTTP/1.x\r\n\r\n",
		"GET /metrics HTTP/1.1\rX\n\r\n",      /* CR alone */
		"GET /metrics\r\n\r\n",                /* HTTP/0.9 form */
		"GET /met\x01rics HTTP/1.1\r\n\r\n",   /* control byte in the target */
		"GET /m\xc3\xa9trics HTTP/1.1\r\n\r\n",/* non-ASCII in the target */
		"GET http://x/metrics HTTP/1.1\r\n\r\n", /* absolute-form */
		"GET * HTTP/1.1\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nNoColon\r\n\r\n",
		"GET /metrics HTTP/1.1\r\n: empty name\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nBad Name: v\r\n\r\n",
		"GET /metrics HTTP/1.1\r\n folded: v\r\n\r\n", /* obs-fold */
		"GET /metrics HTTP/1.1\r\nA: b\x7f\r\n\r\n",   /* DEL in a value */
		"GET /metrics HTTP/1.1\r\nA: b\x01\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nA: b\r\r\n\r\n",
		"GET /metrics HTTP/1.1\r\n\rX",              /* bad blank line */
		"\r\n",                                     /* a line before the request */
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", /* a TLS ClientHello */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(judge(bad[i]) == 400, "%zu: %d", i, judge(bad[i]));
	/* A NUL anywhere: judged on the bytes, not the C string. */
	ck_assert_int_eq(httpreq_judge("GET /metrics HTTP/1.1\r\nA: \0\r\n\r\n", 30), 400);
	ck_assert_int_eq(httpreq_judge("GET /\0etrics HTTP/1.1\r\n\r\n", 27), 400);
	/* Judged as soon as the bytes show it: no need to wait for the rest. */
	ck_assert_int_eq(judge("GE T"), 400);
	ck_assert_int_eq(judge("GET /metrics HTTP/1.1\r\nBad Name"), 400);
	ck_assert_int_eq(judge("GET /metrics XTTP"), 400);
}
END_TEST

static char big[HTTPREQ_HEAD_MAX * 2 + 64];

START_TEST(test_head_cap)
{
	/* A header that goes past the cap: 431 at the cap, not before. */
	size_t n = (size_t)snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\nX-Big: ");
	memset(big + n, 'a', sizeof(big) - n);
	ck_assert_int_eq(httpreq_judge(big, HTTPREQ_HEAD_MAX - 1), 0);
	ck_assert_int_eq(httpreq_judge(big, HTTPREQ_HEAD_MAX), 431);
	ck_assert_int_eq(httpreq_judge(big, sizeof(big)), 431);
	/* A request line longer than the cap. */
	n = (size_t)snprintf(big, sizeof(big), "GET /");
	memset(big + n, 'a', sizeof(big) - n);
	ck_assert_int_eq(httpreq_judge(big, HTTPREQ_HEAD_MAX), 431);
	/* Many short headers that never end. */
	n = (size_t)snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\n");
	while (n + 6 < sizeof(big))
		n += (size_t)snprintf(big + n, sizeof(big) - n, "A: b\r\n");
	ck_assert_int_eq(httpreq_judge(big, n), 431);
	/* A complete head exactly at the cap is served; a byte on its end
	 * (the body, or a pipelined request) does not matter. */
	n = (size_t)snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\nX: ");
	memset(big + n, 'a', HTTPREQ_HEAD_MAX - n - 4);
	memcpy(big + HTTPREQ_HEAD_MAX - 4, "\r\n\r\n", 4);
	ck_assert_int_eq(httpreq_judge(big, HTTPREQ_HEAD_MAX), 200);
	big[HTTPREQ_HEAD_MAX] = 'G';
	ck_assert_int_eq(httpreq_judge(big, HTTPREQ_HEAD_MAX + 1), 200);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("httpreq");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_served);
	tcase_add_test(tc, test_prefixes_wait);
	tcase_add_test(tc, test_other_path_method_version);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_head_cap);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
