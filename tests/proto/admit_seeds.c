/*
 * Writes the seed corpora of fuzz_cert, fuzz_revoke, fuzz_member and
 * fuzz_members_msg (tests/fuzz/corpus/{cert,revoke,member,members_msg}/)
 * from the fixed test keys of admit_fixture.h (they protect nothing):
 *   build/tests/proto/admit-seeds tests/fuzz/corpus
 * The same inputs each run (Ed25519 signatures are deterministic).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "admit_fixture.h"
#include "members_msg.h"

static const char *dir;

static void put(const char *sub, const char *name, const void *bytes, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	f = fopen(path, "wb");
	if (!f || fwrite(bytes, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(EXIT_FAILURE);
	}
}

static void certs(void)
{
	char name[GSP_CERT_NAME_MAX + 1], text[GSP_CERT_TEXT_MAX + 1];
	uint8_t buf[GSP_CERT_MAX];
	ca c = ca_of(0xC1);
	node n = node_of(1);
	gsp_cert cert = cert_of(&n, "node-1.example", &c);
	size_t len;

	ck_assert_int_eq(gsp_cert_encode(&cert, buf, sizeof(buf), &len), 0);
	put("cert", "valid", buf, len);
	ck_assert_int_eq(gsp_cert_to_text(&cert, text, sizeof(text)), 0);
	put("cert", "valid_text", text, strlen(text));
	memset(name, 'z', GSP_CERT_NAME_MAX);
	name[GSP_CERT_NAME_MAX] = '\0';
	cert = cert_of(&n, name, &c);
	ck_assert_int_eq(gsp_cert_encode(&cert, buf, sizeof(buf), &len), 0);
	put("cert", "longest_name", buf, len);
	put("cert", "truncated", buf, len / 2);
}

static void lists(void)
{
	uint8_t keys[3][GSP_KEY_BYTES], buf[GSP_REVOKE_BYTES(3)];
	gsp_revoke l = { .version = GSP_REVOKE_VERSION, .serial = 1, .keys = keys };
	ca c = ca_of(0xC1);
	size_t len;

	ck_assert_int_eq(gsp_revoke_sign(&l, c.sk), 0);
	ck_assert_int_eq(gsp_revoke_encode(&l, buf, sizeof(buf), &len), 0);
	put("revoke", "empty", buf, len);
	for (int i = 0; i < 3; i++)
		memset(keys[i], 0x10 * (i + 1), GSP_KEY_BYTES);
	l.count = 3;
	l.serial = 2;
	ck_assert_int_eq(gsp_revoke_sign(&l, c.sk), 0);
	ck_assert_int_eq(gsp_revoke_encode(&l, buf, sizeof(buf), &len), 0);
	put("revoke", "three", buf, len);
	/* A count that the input does not hold. */
	buf[1 + GSP_SIGN_PUBLIC_BYTES + 8] = 0xff;
	put("revoke", "count_beyond_input", buf, len);
}

static void records(void)
{
	static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	uint8_t buf[GSP_MEMBER_MAX];
	ca c = ca_of(0xC1);
	node n = node_of(1);
	gsp_member m;
	size_t len;

	memset(&m, 0, sizeof(m));
	m.version = GSP_MEMBER_VERSION;
	memcpy(m.node_key, n.kp.pub, GSP_KEY_BYTES);
	m.incarnation = 3;
	m.n_endpoints = 1;
	m.endpoints[0] = (gsp_member_endpoint){ 4, { 127, 0, 0, 1 }, 7000 };
	ck_assert_int_eq(gsp_member_sign(&m, n.sign_sk), 0);
	ck_assert_int_eq(gsp_member_encode(&m, buf, sizeof(buf), &len), 0);
	put("member", "alive_no_cert", buf, len);

	m.status = GSP_MEMBER_SUSPECT;
	m.n_endpoints = 2;
	m.endpoints[1].family = 6;
	memcpy(m.endpoints[1].addr, v6, 16);
	m.endpoints[1].port = 7001;
	m.has_cert = true;
	m.cert = cert_of(&n, "node-1", &c);
	ck_assert_int_eq(gsp_member_sign(&m, n.sign_sk), 0);
	ck_assert_int_eq(gsp_member_encode(&m, buf, sizeof(buf), &len), 0);
	put("member", "suspect_with_cert", buf, len);

	/* MEMBERS messages: an ask with no record, and the last part of a
	 * sync with both records above. */
	gsp_member first = m;
	first.status = GSP_MEMBER_ALIVE;
	first.has_cert = false;
	first.n_endpoints = 1;
	ck_assert_int_eq(gsp_member_sign(&first, n.sign_sk), 0);
	const gsp_member *both[2] = { &first, &m };
	uint8_t msg[GSP_MEMBERS_MSG_MAX];
	ck_assert_int_eq(gsp_msg_members_encode(GSP_MEMBERS_ASK, NULL, 0, msg, sizeof(msg), &len), 0);
	put("members_msg", "ask", msg, len);
	ck_assert_int_eq(gsp_msg_members_encode(GSP_MEMBERS_SYNC | GSP_MEMBERS_LAST, both, 2,
						msg, sizeof(msg), &len), 0);
	put("members_msg", "sync_last_two", msg, len);
}

/* Check's assertions (the fixture's) report to a runner: run as a test. */
START_TEST(write_seeds)
{
	certs();
	lists();
	records();
}
END_TEST

int main(int argc, char *argv[])
{
	Suite *s = suite_create("admit-seeds");
	TCase *tc = tcase_create("seeds");
	SRunner *sr;
	int failed;

	if (argc != 2) {
		fprintf(stderr, "usage: admit-seeds CORPUS_DIR\n");
		return 2;
	}
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	dir = argv[1];
	tcase_add_test(tc, write_seeds);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_SILENT);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
