/* The peer table's admission by certificate (peers.h, PROTOCOL.md 4.2):
 * an unlisted key whose certificate verifies gets a slot (accept-only,
 * marked admitted, with its certificate's name); one whose certificate is
 * expired, revoked, of another authority, of another key, or missing is
 * refused, counted under its reason, and costs no slot and no call up
 * (added, session_up); a keyless [Peer] learns its key from the
 * responder's certificate, refuses its own key, and merges into the peer
 * that already has the key; a reload drops an admitted peer whose key
 * the re-read revocation list names.  Two tables on one loop over
 * loopback (peertable.h), certificates from certtest.h. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "certtest.h"
#include "peertable.h"
#include "testutil.h"

static uv_loop_t *loop;
static char dir[] = "/tmp/gsp-peers-admit-XXXXXX";
static char path_a[80], path_b[80], revoked[80], endpoint_a[64];
static ca authority, other;
static gsp_keypair ka, kb, kc;
static table A, B;
static admission adm_a, adm_b;

static void setup(void)
{
	loop = calloc(1, sizeof(*loop));
	ck_assert_int_eq(uv_loop_init(loop), 0);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path_a, sizeof(path_a), "%s/a.cert", dir);
	snprintf(path_b, sizeof(path_b), "%s/b.cert", dir);
	snprintf(revoked, sizeof(revoked), "%s/revoked", dir);
	ca_make(&authority, 0x41);
	ca_make(&other, 0x42);
	gsp_keypair_generate(&ka);
	gsp_keypair_generate(&kb);
	gsp_keypair_generate(&kc);
}

static void teardown(void)
{
	table_stop_both(&A, &B, loop);
	admission_free(&adm_a);
	admission_free(&adm_b);
	ck_assert_int_eq(uv_loop_close(loop), 0);
	free(loop);
	unlink(path_a);
	unlink(path_b);
	unlink(revoked);
	rmdir(dir);
	strcpy(dir, "/tmp/gsp-peers-admit-XXXXXX");
}

/* An admission with Authority and the certificate of key at path (and
 * the revocation list, if one is written). */
static void admission_of(admission *a, table *t, const gsp_keypair *key,
			 const char *name, const char *path, const char *list)
{
	uint8_t cert[GSP_CERT_MAX];
	char err[512];
	uint64_t now = cert_now();
	cert_write(path, cert, cert_make(&authority, key->pub, name, now - 60,
					 now + 86400 * 2, cert));
	cluster_cfg(&t->cfg, &authority, path, list);
	ck_assert_msg(admission_init(a, &t->cfg, key->pub, &t->c, now, err,
				     sizeof(err)) == 0, "%s", err);
}

/* Gone slots hold their edge's ended generation until told otherwise. */
static bool holding(void *ctx, const peer *p)
{
	(void)ctx;
	(void)p;
	return false;
}

/* Table t started with ops, admitting by adm's certificates. */
static void begin_with(table *t, const gsp_keypair *us, admission *adm,
		       const peers_ops *ops)
{
	char err[256];
	ck_assert_int_eq(peers_init(&t->ps, loop, us, &t->c, &t->cfg, ops, t, err,
				    sizeof(err)), 0);
	peers_set_admission(&t->ps, adm);
	ck_assert_int_eq(peers_start(&t->ps, "127.0.0.1:0"), 0);
}

/* A: admits by certificate, lists nobody; its gone slots hold their
 * edges if told (ops.reusable). */
static void start_a_with(const char *list, const peers_ops *ops)
{
	table_init(&A);
	admission_of(&adm_a, &A, &ka, "node-a", path_a, list);
	begin_with(&A, &ka, &adm_a, ops);
	snprintf(endpoint_a, sizeof(endpoint_a), "127.0.0.1:%d", table_port(&A));
}

static void start_a(const char *list)
{
	start_a_with(list, &table_ops);
}

/* The fixture's ops, but gone slots hold their edges. */
static const peers_ops *holding_ops(void)
{
	static peers_ops ops;
	ops = table_ops;
	ops.reusable = holding;
	return &ops;
}

static bool both_up(const void *arg)
{
	return A.ups == 1 && B.ups == 1;
}

/* A SIGHUP at t after the authority revoked key: the list re-read, the
 * peers updated. */
static void sighup_revoking(table *t, admission *a, const gsp_keypair *key)
{
	uint8_t keys[1][GSP_KEY_BYTES];
	memcpy(keys[0], key->pub, GSP_KEY_BYTES);
	revoke_write(&authority, 1, keys, 1, revoked);
	snprintf(a->revoked_path, sizeof(a->revoked_path), "%s", revoked);
	admission_reload(a);
	peers_update(&t->ps, &t->cfg);
}

/* The counter a test waits on. */
static uint64_t *watched;

static bool counted(const void *arg)
{
	return *watched >= 1;
}

/* A admits nobody by name; B, with a certificate, lists A and dials it:
 * both up. */
static void b_dials_a(void)
{
	start_a(NULL);
	table_init(&B);
	table_peer(&B, ka.pub, endpoint_a);
	admission_of(&adm_b, &B, &kb, "node-b", path_b, NULL);
	table_begin(&B, loop, &kb, &adm_b, NULL);
	ck_assert(table_run(loop, both_up, NULL, 5000));
}

START_TEST(test_admitted_by_certificate)
{
	b_dials_a();
	ck_assert_uint_eq(A.ps.n, 1);
	ck_assert_int_eq(A.added, 1);
	const peer *p = &A.ps.peer[0];
	ck_assert_mem_eq(p->cfg.public_key, kb.pub, GSP_KEY_BYTES);
	ck_assert_int_eq(p->origin, PEER_ADMITTED);
	ck_assert_str_eq(p->cert_name, "node-b");
	ck_assert_str_eq(p->cfg.endpoint, "");       /* accept-only */
	ck_assert(peers_listed(p));
	ck_assert_uint_eq(peers_degree(&A.ps), 1);

	/* Its next handshake shows a certificate again: one that expired
	 * since is refused, though the slot is there. */
	uint8_t old_cert[GSP_CERT_MAX];
	uint64_t now = cert_now();
	size_t n = cert_make(&authority, kb.pub, "node-b", now - 7200, now - 1, old_cert);
	B.ps.env.cert = old_cert;
	B.ps.env.cert_len = n;
	peers_close(&B.ps.peer[0], GSP_BYE_RESTART, "test");
	watched = &A.c.hs_cert_expired;
	ck_assert(table_run(loop, counted, NULL, 5000));
	ck_assert_int_eq(A.ups, 1);
	ck_assert_uint_eq(A.ps.n, 1);

	/* SIGHUP with b revoked: its slot goes, its session closes. */
	sighup_revoking(&A, &adm_a, &kb);
	ck_assert(!peers_listed(p));
}
END_TEST

/* B presents cert[0..len) (len 0: none) to A; A must refuse it under
 * *counter and spend nothing on it. */

static void refused(const uint8_t *cert, size_t len, uint64_t *counter,
		    const char *list)
{
	start_a(list);
	table_init(&B);
	table_peer(&B, ka.pub, endpoint_a);
	table_begin(&B, loop, &kb, NULL, NULL);
	B.ps.env.cert = len ? cert : NULL;   /* before the first dial runs */
	B.ps.env.cert_len = len;
	watched = counter;
	ck_assert(table_run(loop, counted, NULL, 5000));
	/* Bounded: a few more dials, none admitted. */
	table_run(loop, counted, NULL, 300);
	ck_assert_uint_eq(A.ps.n, 0);
	ck_assert_int_eq(A.added, 0);
	ck_assert_int_eq(A.ups + B.ups, 0);
	uint64_t *all[] = {&A.c.hs_cert_missing, &A.c.hs_cert_malformed,
			   &A.c.hs_cert_foreign, &A.c.hs_cert_expired,
			   &A.c.hs_cert_not_yet, &A.c.hs_cert_revoked,
			   &A.c.hs_cert_other_key, &A.c.hs_cert_self, &A.c.hs_refused};
	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++)
		if (all[i] != counter)
			ck_assert_uint_eq(*all[i], 0);
}

/* B presents a certificate of c for key, valid [now + from, now +
 * until), its first byte replaced by version unless that is 0. */
static void refused_cert(const ca *c, const gsp_keypair *key, int64_t from,
			 int64_t until, uint8_t version, uint64_t *counter,
			 const char *list)
{
	uint8_t cert[GSP_CERT_MAX];
	uint64_t now = cert_now();
	size_t n = cert_make(c, key->pub, "b", now + from, now + until, cert);
	if (version)
		cert[0] = version;
	refused(cert, n, counter, list);
}

START_TEST(test_expired)
{
	refused_cert(&authority, &kb, -7200, -3600, 0, &A.c.hs_cert_expired, NULL);
}
END_TEST

START_TEST(test_not_yet_valid)
{
	refused_cert(&authority, &kb, 3600, 7200, 0, &A.c.hs_cert_not_yet, NULL);
}
END_TEST

START_TEST(test_revoked)
{
	uint8_t keys[1][GSP_KEY_BYTES];
	memcpy(keys[0], kb.pub, GSP_KEY_BYTES);
	revoke_write(&authority, 1, keys, 1, revoked);
	refused_cert(&authority, &kb, -60, 3600, 0, &A.c.hs_cert_revoked, revoked);
}
END_TEST

START_TEST(test_foreign)
{
	refused_cert(&other, &kb, -60, 3600, 0, &A.c.hs_cert_foreign, NULL);
}
END_TEST

/* A valid certificate, of another node's key: a stolen certificate
 * does not admit the thief. */
START_TEST(test_other_key)
{
	refused_cert(&authority, &kc, -60, 3600, 0, &A.c.hs_cert_other_key, NULL);
}
END_TEST

START_TEST(test_missing)
{
	refused(NULL, 0, &A.c.hs_cert_missing, NULL);
}
END_TEST

/* An unknown certificate version. */
START_TEST(test_malformed)
{
	refused_cert(&authority, &kb, -60, 3600, 9, &A.c.hs_cert_malformed, NULL);
}
END_TEST

/* Keyless: B knows only A's address, learns A's key from its
 * certificate, and A admits B by B's. */
START_TEST(test_keyless)
{
	start_a(NULL);
	table_init(&B);
	table_peer(&B, NULL, endpoint_a);
	admission_of(&adm_b, &B, &kb, "node-b", path_b, NULL);
	table_begin(&B, loop, &kb, &adm_b, NULL);
	ck_assert(!peers_key_known(&B.ps.peer[0]));
	ck_assert(table_run(loop, both_up, NULL, 5000));
	const peer *p = &B.ps.peer[0];
	ck_assert(peers_key_known(p));
	ck_assert_mem_eq(p->cfg.public_key, ka.pub, GSP_KEY_BYTES);
	ck_assert_int_eq(p->origin, PEER_KEYLESS);
	ck_assert_str_eq(p->cert_name, "node-a");
	ck_assert_uint_eq(B.ps.n, 1);
	ck_assert_int_eq(A.ps.peer[0].origin, PEER_ADMITTED);
	/* The edge learned which end is lo: set up again with the key. */
	ck_assert_int_eq(B.added, 1);
	ck_assert_int_eq(peers_we_are_lo(p), memcmp(kb.pub, ka.pub, GSP_KEY_BYTES) < 0);
	/* A reload that lists it the same way keeps it. */
	peers_update(&B.ps, &B.cfg);
	ck_assert(peers_listed(p));
	ck_assert_uint_eq(B.ps.n, 1);
	/* A reload whose list revokes A's key ends the session, and each
	 * dial asks the certificate again: refused, counted. */
	sighup_revoking(&B, &adm_b, &ka);
	watched = &B.c.hs_cert_revoked;
	ck_assert(table_run(loop, counted, NULL, 5000));
	ck_assert_ptr_null(p->session);
	ck_assert_int_eq(B.downs, 1);
	ck_assert_int_eq(B.ups, 1);
}
END_TEST

/* A keyless Endpoint that is this node itself (a seed list holding our
 * own address): refused, counted, no session. */
START_TEST(test_keyless_self)
{
	start_a(NULL);
	table_init(&B);
	table_begin(&B, loop, &kb, NULL, NULL);
	table_peer(&A, NULL, endpoint_a);
	peers_update(&A.ps, &A.cfg);
	watched = &A.c.hs_cert_self;
	ck_assert(table_run(loop, counted, NULL, 5000));
	ck_assert_int_eq(A.ups, 0);
	ck_assert(!peers_key_known(&A.ps.peer[0]));
}
END_TEST

/* B lists A by key (accept-only) and by its address alone: the keyless
 * one turns out to be A, so A's slot takes the dial and the address,
 * and the keyless slot goes: one peer, one session. */
START_TEST(test_keyless_known_key)
{
	start_a(NULL);
	table_init(&B);
	table_peer(&B, ka.pub, NULL);
	table_peer(&B, NULL, endpoint_a);
	admission_of(&adm_b, &B, &kb, "node-b", path_b, NULL);
	table_begin(&B, loop, &kb, &adm_b, NULL);
	ck_assert_uint_eq(peers_degree(&B.ps), 2);
	ck_assert(table_run(loop, both_up, NULL, 5000));
	ck_assert_ptr_nonnull(B.ps.peer[0].session);
	ck_assert_str_eq(B.ps.peer[0].alias, endpoint_a);
	ck_assert_str_eq(B.ps.peer[0].cfg.endpoint, endpoint_a);
	ck_assert(!peers_listed(&B.ps.peer[1]));
	ck_assert_uint_eq(peers_degree(&B.ps), 1);
	/* A reload that lists both again adds no second peer. */
	peers_update(&B.ps, &B.cfg);
	ck_assert_uint_eq(peers_degree(&B.ps), 1);
	ck_assert_int_eq(B.ups, 1);
	/* One that lists only the key: accept-only again, as listed. */
	B.cfg.n_peers = 1;
	peers_update(&B.ps, &B.cfg);
	ck_assert_str_eq(B.ps.peer[0].alias, "");
	ck_assert_str_eq(B.ps.peer[0].cfg.endpoint, "");
	ck_assert(peers_listed(&B.ps.peer[0]));
}
END_TEST

/* Slots of B that hold key and are present. */
static int present_with(const table *t, const uint8_t *key)
{
	int n = 0;
	for (size_t i = 0; i < t->ps.n; i++)
		n += peers_listed(&t->ps.peer[i]) &&
		     !memcmp(t->ps.peer[i].cfg.public_key, key, GSP_KEY_BYTES);
	return n;
}

static bool b_up_twice(const void *arg)
{
	return B.ups == 2;
}

/* B lists A by key, then not (A found dead: its slot gone, its edge still
 * holding where the generation ended, so not reused), then a keyless
 * seed that turns out to be A, then A by key again: the seed's slot, the
 * one present, is A's; the gone one stays gone.  (The reload took the
 * gone slot back beside the seed's: two slots for one key, whose
 * sessions replaced each other for ever.) */
START_TEST(test_key_listed_again_beside_a_learned_seed)
{
	start_a(NULL);
	table_init(&B);
	table_peer(&B, ka.pub, endpoint_a);
	admission_of(&adm_b, &B, &kb, "node-b", path_b, NULL);
	begin_with(&B, &kb, &adm_b, holding_ops());
	ck_assert(table_run(loop, both_up, NULL, 5000));
	B.cfg.n_peers = 0;                       /* A not listed: gone */
	peers_update(&B.ps, &B.cfg);
	ck_assert(!peers_listed(&B.ps.peer[0]));
	table_peer(&B, NULL, endpoint_a);        /* a seed: A's address */
	peers_update(&B.ps, &B.cfg);
	ck_assert_uint_eq(B.ps.n, 2);            /* slot 0 holds the edge */
	ck_assert(table_run(loop, b_up_twice, NULL, 5000));
	ck_assert_mem_eq(B.ps.peer[1].cfg.public_key, ka.pub, GSP_KEY_BYTES);
	table_peer(&B, ka.pub, endpoint_a);      /* A by key again */
	peers_update(&B.ps, &B.cfg);
	ck_assert_int_eq(present_with(&B, ka.pub), 1);
	ck_assert(peers_listed(&B.ps.peer[1]));
	ck_assert(!peers_listed(&B.ps.peer[0]));
	ck_assert_uint_eq(peers_degree(&B.ps), 1);
}
END_TEST

static bool a_up_twice(const void *arg)
{
	return A.ups == 2;
}

/* A admitted B; a computed list without B drops it (its slot gone, its
 * edge holding where the generation ended); B dials again: A takes it
 * back in that slot, edge and all, not in a fresh one whose edge knew
 * nothing of the ended generation (B, told so, ended it at its own
 * count: a round one-sided). */
START_TEST(test_admitted_again_in_its_own_slot)
{
	start_a_with(NULL, holding_ops());
	table_init(&B);
	table_peer(&B, ka.pub, endpoint_a);
	admission_of(&adm_b, &B, &kb, "node-b", path_b, NULL);
	table_begin(&B, loop, &kb, &adm_b, NULL);
	ck_assert(table_run(loop, both_up, NULL, 5000));
	A.cfg.peers_computed = true;             /* a list without B */
	peers_update(&A.ps, &A.cfg);
	ck_assert(!peers_listed(&A.ps.peer[0]));
	ck_assert(table_run(loop, a_up_twice, NULL, 10000));   /* B redials */
	ck_assert_uint_eq(A.ps.n, 1);
	ck_assert_int_eq(A.added, 1);            /* its edge kept, not set up */
	const peer *p = &A.ps.peer[0];
	ck_assert(peers_listed(p));
	ck_assert_int_eq(p->origin, PEER_ADMITTED);
	ck_assert_str_eq(p->cert_name, "node-b");
	ck_assert_str_eq(p->cfg.endpoint, "");
	ck_assert_ptr_nonnull(p->session);
}
END_TEST

/* A's slot for B: B's handshake past A's answer, the session not yet up
 * (A waits for B's first frame). */
static bool a_confirming(void)
{
	return A.ps.n == 1 && A.ps.peer[0].links > 0 && A.ups == 0;
}

static bool b_down(const void *arg)
{
	return B.downs >= 1;
}

/* A reload removes an admitted peer while its handshake waits for the
 * peer's first frame: when that frame comes, no session goes up on the
 * gone slot.  (It did: the peer's one session sat on a gone slot, and the
 * slot that took its key later dialed in vain for ever, "a session with
 * this peer exists"; cluster-netns's formation failed so.) */
START_TEST(test_no_session_on_a_slot_gone_in_the_handshake)
{
	start_a(NULL);
	table_init(&B);
	table_peer(&B, ka.pub, endpoint_a);
	admission_of(&adm_b, &B, &kb, "node-b", path_b, NULL);
	table_begin(&B, loop, &kb, &adm_b, NULL);
	for (int i = 0; i < 100000 && !a_confirming(); i++)
		uv_run(loop, UV_RUN_ONCE);
	ck_assert(a_confirming());
	A.cfg.peers_computed = true;             /* a list without B */
	peers_update(&A.ps, &A.cfg);
	ck_assert(!peers_listed(&A.ps.peer[0]));
	ck_assert(table_run(loop, b_down, NULL, 5000));    /* closed at once */
	ck_assert_int_eq(A.ups, 0);
	ck_assert_ptr_null(A.ps.peer[0].session);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	Suite *s = suite_create("daemon-peers-admit");
	TCase *tc = tcase_create("admit");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_admitted_by_certificate);
	tcase_add_test(tc, test_expired);
	tcase_add_test(tc, test_not_yet_valid);
	tcase_add_test(tc, test_revoked);
	tcase_add_test(tc, test_foreign);
	tcase_add_test(tc, test_other_key);
	tcase_add_test(tc, test_missing);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_keyless);
	tcase_add_test(tc, test_keyless_self);
	tcase_add_test(tc, test_keyless_known_key);
	tcase_add_test(tc, test_key_listed_again_beside_a_learned_seed);
	tcase_add_test(tc, test_admitted_again_in_its_own_slot);
	tcase_add_test(tc, test_no_session_on_a_slot_gone_in_the_handshake);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
