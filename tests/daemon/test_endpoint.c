/* Endpoint syntax: numeric IPv4 and bracketed IPv6 literals convert to
 * socket addresses, DNS names are recognised for resolution, and every
 * malformed form is refused. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "endpoint.h"
#include "testutil.h"

START_TEST(test_numeric)
{
	struct sockaddr_storage ss;
	ck_assert_int_eq(gsp_endpoint_numeric("127.0.0.3:7001", &ss), 0);
	const struct sockaddr_in *v4 = (const struct sockaddr_in *)&ss;
	ck_assert_int_eq(v4->sin_family, AF_INET);
	ck_assert_uint_eq(ntohs(v4->sin_port), 7001);
	ck_assert_uint_eq(ntohl(v4->sin_addr.s_addr), 0x7f000003u);

	ck_assert_int_eq(gsp_endpoint_numeric("[::1]:0", &ss), 0);
	const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&ss;
	ck_assert_int_eq(v6->sin6_family, AF_INET6);
	ck_assert_uint_eq(ntohs(v6->sin6_port), 0);
	ck_assert(IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr));
	ck_assert_int_eq(gsp_endpoint_numeric("[fe80::1]:65535", &ss), 0);
}
END_TEST

START_TEST(test_names)
{
	static const char *names[] = {
		"localhost:7000", "node-1.gossip.default.svc.cluster.local:7000",
		"a:1", "host_name:2", "trailing.dot.:3", "x.y-z.0a:4",
	};
	struct sockaddr_storage ss;
	char host[GSP_HOSTNAME_MAX + 1];
	uint16_t port;
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		ck_assert_msg(gsp_endpoint_numeric(names[i], &ss) == -ENOENT,
			      "%s", names[i]);
		ck_assert_int_eq(gsp_endpoint_split(names[i], host, sizeof(host),
						    &port), 0);
	}
	ck_assert_int_eq(gsp_endpoint_split("node-1.svc:7000", host,
					    sizeof(host), &port), 0);
	ck_assert_str_eq(host, "node-1.svc");
	ck_assert_uint_eq(port, 7000);
	ck_assert_int_eq(gsp_endpoint_split("[::1]:9", host, sizeof(host),
					    &port), 0);
	ck_assert_str_eq(host, "::1");
	ck_assert_int_eq(gsp_endpoint_split("abcdef:1", host, 4, &port),
			 -ENAMETOOLONG);
}
END_TEST

START_TEST(test_malformed)
{
	char label64[80], long_name[300];
	memset(label64, 'a', 64);
	strcpy(label64 + 64, ":1");
	for (size_t i = 0; i < 254; i++)
		long_name[i] = i % 50 == 49 ? '.' : 'a';
	strcpy(long_name + 254, ":1");   /* a 254-byte name: one too long */
	const char *bad[] = {
		"", ":", ":7000", "host", "host:", "host:x", "host:-1",
		"host:65536", "host:1:2", "::1:7000", "[::1]", "[::1:7000",
		"::1]:7000", "[]:1", "[zz]:1", "[127.0.0.1]:1", "a..b:1",
		".a:1", ".:1", "-a:1", "a b:1", "a/b:1", "a%b:1", "é:1",
		"1.2.3.999:1", "1.2.3:1", label64, long_name, "host:1 ",
	};
	struct sockaddr_storage ss;
	char host[512];
	uint16_t port = 77;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		ck_assert_msg(gsp_endpoint_split(bad[i], host, sizeof(host),
						 &port) == -EINVAL, "split '%s'", bad[i]);
		ck_assert_msg(gsp_endpoint_numeric(bad[i], &ss) == -EINVAL,
			      "numeric '%s'", bad[i]);
		ck_assert_uint_eq(port, 77);   /* outputs only on success */
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("endpoint");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_numeric);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_malformed);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
