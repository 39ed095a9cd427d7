/* The link's half of admission by certificate (PROTOCOL.md 4.2): HS_INIT
 * carries the initiator's certificate to the responder's authorize; a
 * keyless dial asks HS_WHO, learns the key from HS_CERT and continues
 * with HS_INIT on the same connection; a responder without a
 * certificate, and malformed HS_WHO / HS_CERT either way, close the
 * connection without an answer and are counted.  The link does not
 * judge certificates (its owner does: test_peers_admit.c), so opaque
 * bytes of a certificate's size stand in for one here. */
#include <sys/socket.h>

#include <sodium.h>

#include "linkpair.h"
#include "testutil.h"

static uint8_t blob[GSP_CERT_MAX];

static void fill_blob(void)
{
	for (size_t i = 0; i < sizeof(blob); i++)
		blob[i] = (uint8_t)(i * 13 + 5);
}

static void setup_blob(void)
{
	setup();
	fill_blob();
}

static void dial_keyless(const struct sockaddr_in *sa)
{
	ck_assert_int_eq(link_connect(&B.env, (const struct sockaddr *)sa, NULL, &B,
				      &B.stats, &B.link), 0);
}

/* The longest certificate rides in HS_INIT (within the pre-auth cap),
 * and arrives whole; without one, none arrives. */
START_TEST(test_init_carries_the_certificate)
{
	B.env.cert = blob;
	B.env.cert_len = GSP_CERT_MAX;
	A.cert_len = 1;
	connect_both();
	ck_assert_uint_eq(A.cert_len, GSP_CERT_MAX);
	ck_assert_mem_eq(A.cert, blob, GSP_CERT_MAX);
	ck_assert_uint_eq(B.stats.tx_bytes >= 4 + GSP_HS_INIT_MSG_MAX, 1);
}
END_TEST

START_TEST(test_init_without_certificate)
{
	A.cert_len = 1;
	connect_both();
	ck_assert_uint_eq(A.cert_len, 0);
}
END_TEST

/* Keyless: B learns A's certificate, takes the key its owner gives, and
 * the handshake completes on the same connection. */
START_TEST(test_keyless_dial)
{
	A.env.cert = blob;
	A.env.cert_len = GSP_CERT_MIN;
	B.learn_key = A.key.pub;
	dial_keyless(&listen_addr);
	ck_assert(run_until(both_up, 5000));
	ck_assert_int_eq(B.learns, 1);
	ck_assert_uint_eq(B.cert_len, GSP_CERT_MIN);
	ck_assert_mem_eq(B.cert, blob, GSP_CERT_MIN);
	ck_assert(!memcmp(link_edge_seed(A.link), link_edge_seed(B.link), 32));
	ck_assert_uint_eq(A.counters.rx_malformed + B.counters.rx_malformed, 0);
}
END_TEST

/* The owner refuses the certificate: no HS_INIT, nothing authorized. */
static bool a_closed(void)
{
	return A.counters.links_closed >= 1;
}

START_TEST(test_keyless_refused_by_owner)
{
	A.env.cert = blob;
	A.env.cert_len = GSP_CERT_MIN;
	dial_keyless(&listen_addr);
	ck_assert(run_until(b_down, 5000));
	ck_assert_int_eq(B.learns, 1);
	ck_assert(run_until(a_closed, 5000));
	ck_assert_int_eq(A.ups, 0);
	ck_assert_uint_eq(A.cert_len, 0);
}
END_TEST

/* A responder with no certificate to show: closed, counted, no answer. */
START_TEST(test_who_without_certificate)
{
	B.learn_key = A.key.pub;
	dial_keyless(&listen_addr);
	ck_assert(run_until(b_down, 5000));
	ck_assert_uint_eq(A.counters.hs_who_refused, 1);
	ck_assert_uint_eq(A.counters.rx_malformed, 0);
	ck_assert_int_eq(B.learns, 0);
	ck_assert_int_eq(A.ups + B.ups, 0);
}
END_TEST

/* Raw bytes to A: one frame, then whether A answered anything. */
static size_t raw_exchange(int fd, const uint8_t *msg, size_t len,
			   uint8_t *answer, size_t cap)
{
	uint8_t frame[4 + 512];
	ck_assert_int_eq(gsp_frame_header_write(frame, 4, (uint32_t)len), 0);
	memcpy(frame + 4, msg, len);
	ck_assert_int_eq(write(fd, frame, 4 + len), (ssize_t)(4 + len));
	return raw_read(fd, answer, cap);
}

static const uint8_t WHO[] = {GSP_HS_WHO, GSP_PROTO_VERSION_MINOR,
			      GSP_PROTO_VERSION_MAJOR};

/* HS_WHO is answered once, with exactly our certificate; a second
 * HS_WHO (or anything but HS_INIT) after it closes the connection. */
START_TEST(test_who_answered_once)
{
	A.env.cert = blob;
	A.env.cert_len = 200;
	int fd = raw_connect();
	uint8_t ans[4 + GSP_HS_CERT_MSG_MAX];
	ck_assert_uint_eq(raw_exchange(fd, WHO, sizeof(WHO), ans, 4 + 205), 4 + 205);
	gsp_hs_cert hc;
	ck_assert_int_eq(gsp_hs_cert_decode(ans + 4, 205, &hc), 0);
	ck_assert_uint_eq(hc.cert_len, 200);
	ck_assert_mem_eq(hc.cert, blob, 200);
	ck_assert_uint_eq(hc.version, GSP_PROTO_VERSION);
	ck_assert_uint_eq(raw_exchange(fd, WHO, sizeof(WHO), ans, 1), 0);
	ck_assert_uint_eq(A.counters.rx_malformed, 1);
	close(fd);
}
END_TEST

/* A connection that asked HS_WHO and got its answer is still in the
 * handshake: it counts against the per-address cap like any other, and
 * the oldest goes when a new one comes over it. */
START_TEST(test_who_counts_against_the_preauth_cap)
{
	A.env.cert = blob;
	A.env.cert_len = 200;
	A.env.preauth_per_addr = 2;
	int fds[3];
	uint8_t ans[4 + 205];
	for (int i = 0; i < 3; i++) {
		fds[i] = raw_connect();
		ck_assert_uint_eq(raw_exchange(fds[i], WHO, sizeof(WHO), ans, sizeof(ans)),
				  sizeof(ans));
	}
	/* The first was closed when the third came; the others wait. */
	ck_assert(run_until(a_closed, 2000));
	run_until(never, 100);
	ck_assert_uint_eq(A.counters.links_closed, 1);
	char c;
	ck_assert_int_eq(read(fds[0], &c, 1), 0);
	ck_assert_int_eq(read(fds[2], &c, 1), -1);
	ck_assert_int_eq(errno, EAGAIN);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}
END_TEST

/* Malformed HS_WHO: a byte too many, another major, and another minor
 * (a version mismatch): each closed without an answer. */
START_TEST(test_who_malformed)
{
	A.env.cert = blob;
	A.env.cert_len = 200;
	uint8_t ans[8];
	const uint8_t longer[] = {GSP_HS_WHO, GSP_PROTO_VERSION_MINOR,
				  GSP_PROTO_VERSION_MAJOR, 0};
	const uint8_t major[] = {GSP_HS_WHO, 0, GSP_PROTO_VERSION_MAJOR + 1};
	const uint8_t minor[] = {GSP_HS_WHO, GSP_PROTO_VERSION_MINOR + 1,
				 GSP_PROTO_VERSION_MAJOR};
	const uint8_t *msgs[] = {longer, major, minor};
	const size_t lens[] = {sizeof(longer), sizeof(major), sizeof(minor)};
	for (int i = 0; i < 3; i++) {
		int fd = raw_connect();
		ck_assert_uint_eq(raw_exchange(fd, msgs[i], lens[i], ans, 1), 0);
		close(fd);
	}
	ck_assert_uint_eq(A.counters.rx_malformed, 1);
	ck_assert_uint_eq(A.counters.version_mismatch, 2);
	ck_assert_uint_eq(A.counters.hs_who_refused, 0);
}
END_TEST

/* A raw responder that B dials keylessly: it reads B's HS_WHO, answers
 * msg[0..len), and B must close without an HS_INIT. */
static void answer_who(const uint8_t *msg, size_t len)
{
	struct sockaddr_in sa;
	int lfd = raw_listen(&sa);
	B.learn_key = A.key.pub;
	B.downs = 0;
	dial_keyless(&sa);
	raw_fd = lfd;
	ck_assert(run_until(raw_readable, 2000));
	int fd = accept(lfd, NULL, NULL);
	close(lfd);
	uint8_t who[4 + sizeof(WHO)], rest[8];
	ck_assert_uint_eq(raw_read(fd, who, sizeof(who)), sizeof(who));
	ck_assert_mem_eq(who + 4, WHO, sizeof(WHO));
	uint8_t frame[4 + 512];
	ck_assert_int_eq(gsp_frame_header_write(frame, 4, (uint32_t)len), 0);
	memcpy(frame + 4, msg, len);
	ck_assert_int_eq(write(fd, frame, 4 + len), (ssize_t)(4 + len));
	ck_assert(run_until(b_down, 5000));
	ck_assert_uint_eq(raw_read(fd, rest, sizeof(rest)), 0);   /* no HS_INIT */
	close(fd);
}

START_TEST(test_cert_malformed)
{
	uint8_t msg[3 + 2 + GSP_CERT_MAX + 1];
	gsp_hs_cert hc = {.version = GSP_PROTO_VERSION, .cert_len = GSP_CERT_MIN,
			  .cert = blob};
	size_t n;
	ck_assert_int_eq(gsp_hs_cert_encode(&hc, msg, sizeof(msg), &n), 0);
	answer_who(msg, n - 1);                      /* truncated */
	msg[3] = GSP_CERT_MAX + 1;                   /* a length over the cap */
	memset(msg + 5, 1, GSP_CERT_MAX + 1);
	answer_who(msg, 5 + GSP_CERT_MAX + 1);
	msg[3] = GSP_CERT_MIN - 1;                   /* under a certificate's */
	answer_who(msg, 5 + GSP_CERT_MIN - 1);
	uint8_t resp[GSP_HS_RESP_MSG_BYTES] = {GSP_HS_RESP, GSP_PROTO_VERSION_MINOR,
					       GSP_PROTO_VERSION_MAJOR};
	answer_who(resp, sizeof(resp));              /* another type */
	ck_assert_uint_eq(B.counters.rx_malformed, 4);
	hc.version = GSP_PROTO_VERSION + 1;          /* another minor */
	ck_assert_int_eq(gsp_hs_cert_encode(&hc, msg, sizeof(msg), &n), 0);
	answer_who(msg, n);
	ck_assert_uint_eq(B.counters.version_mismatch, 1);
	ck_assert_uint_eq(B.counters.rx_malformed, 4);
	ck_assert_int_eq(B.learns, 0);
	ck_assert_int_eq(B.ups, 0);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	Suite *s = suite_create("daemon-link-admit");
	TCase *tc = tcase_create("link-admit");
	tcase_add_checked_fixture(tc, setup_blob, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_init_carries_the_certificate);
	tcase_add_test(tc, test_init_without_certificate);
	tcase_add_test(tc, test_keyless_dial);
	tcase_add_test(tc, test_keyless_refused_by_owner);
	tcase_add_test(tc, test_who_without_certificate);
	tcase_add_test(tc, test_who_answered_once);
	tcase_add_test(tc, test_who_malformed);
	tcase_add_test(tc, test_who_counts_against_the_preauth_cap);
	tcase_add_test(tc, test_cert_malformed);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
