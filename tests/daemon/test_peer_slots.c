/* Unit tests of the peer table's slots (daemon/peers_reload.c) and of an
 * edge taken by another peer (edge_reusable, edge_reuse): peers come and
 * go by key, and a gone peer's slot goes to a peer added later, so the
 * table stays as large as the peers listed at once; never while the gone
 * peer's edge is still ending (LeaveWait), and the new peer's edge keeps
 * nothing of the last one's generations or records. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "edgepair.h"
#include "peers.h"
#include "testutil.h"

/* ---- the table -------------------------------------------------------- */

typedef struct slots {
	peers ps;
	counters c;
	gsp_daemon_config cfg;
	bool leave;              /* removed peers must leave first */
	bool reusable;           /* what ops->reusable says */
	int added;
} slots;

static int slots_frame(void *ctx, peer *p, const uint8_t *pt, size_t len)
{
	return 0;
}

static void slots_session(void *ctx, peer *p)
{
}

static int slots_added(void *ctx, peer *p)
{
	((slots *)ctx)->added++;
	return 0;
}

static bool slots_removed(void *ctx, peer *p)
{
	return !((slots *)ctx)->leave;
}

static bool slots_reusable(void *ctx, const peer *p)
{
	return ((slots *)ctx)->reusable;
}

static const peers_ops slots_ops = {
	.session_up = slots_session, .frame = slots_frame,
	.session_down = slots_session, .added = slots_added,
	.removed = slots_removed, .reusable = slots_reusable,
};

static uv_loop_t *loop;
static gsp_keypair us;
static slots T;

/* T's config lists key alone, or no peer (NULL). */
static void list(const uint8_t *key)
{
	free(T.cfg.peers);
	T.cfg.peers = calloc(1, sizeof(*T.cfg.peers));
	T.cfg.n_peers = key != NULL;
	if (key)
		memcpy(T.cfg.peers[0].public_key, key, GSP_KEY_BYTES);
}

static void new_key(uint8_t key[GSP_KEY_BYTES])
{
	gsp_keypair k;
	gsp_keypair_generate(&k);
	memcpy(key, k.pub, GSP_KEY_BYTES);
}

/* A reload that lists key alone. */
static void reload_listing(const uint8_t key[GSP_KEY_BYTES])
{
	list(key);
	peers_update(&T.ps, &T.cfg);
}

/* A reload that lists a new key alone (returned in key). */
static void reload_new(uint8_t key[GSP_KEY_BYTES])
{
	new_key(key);
	reload_listing(key);
}

static peer *find(const uint8_t key[GSP_KEY_BYTES])
{
	for (size_t i = 0; i < T.ps.n; i++)
		if (!memcmp(T.ps.peer[i].cfg.public_key, key, GSP_KEY_BYTES))
			return &T.ps.peer[i];
	return NULL;
}

/* a and b are in slots ia and ib, of n in use. */
static void assert_slots(const uint8_t *a, size_t ia, const uint8_t *b, size_t ib,
			 size_t n)
{
	ck_assert_ptr_nonnull(find(a));
	ck_assert_uint_eq(find(a)->index, ia);
	ck_assert_ptr_nonnull(find(b));
	ck_assert_uint_eq(find(b)->index, ib);
	ck_assert_uint_eq(T.ps.n, n);
}

static void setup(void)
{
	char err[256];
	loop = uv_default_loop();
	gsp_keypair_generate(&us);
	memset(&T, 0, sizeof(T));
	T.reusable = true;
	gsp_daemon_config_default(&T.cfg);
	uint8_t first[GSP_KEY_BYTES];
	new_key(first);
	list(first);
	ck_assert_int_eq(peers_init(&T.ps, loop, &us, &T.c, &T.cfg, &slots_ops, &T, err,
				    sizeof(err)), 0);
	ck_assert_int_eq(peers_start(&T.ps, "127.0.0.1:0"), 0);
}

static void teardown(void)
{
	peers_stop(&T.ps);
	uv_run(loop, UV_RUN_DEFAULT);
	peers_free(&T.ps);
	gsp_daemon_config_clear(&T.cfg);
}

START_TEST(test_a_gone_peers_slot_goes_to_the_next)
{
	/* 20 times: the listed peer is removed (nothing to end) and another
	 * added in the same reload: the table keeps one slot. */
	for (int k = 0; k < 20; k++) {
		uint8_t next[GSP_KEY_BYTES];
		reload_new(next);
		ck_assert_uint_eq(T.ps.n, 1);
		ck_assert_ptr_eq(find(next), &T.ps.peer[0]);
		ck_assert(peers_listed(&T.ps.peer[0]));
		ck_assert_uint_eq(T.ps.peer[0].index, 0);
	}
	ck_assert_int_eq(T.added, 20);
	ck_assert_uint_eq(peers_degree(&T.ps), 1);
}
END_TEST

START_TEST(test_a_leaving_peers_slot_is_not_reused)
{
	/* The removed peer must leave first: while it leaves (and its edge's
	 * generation still ends) the new peer takes a new slot; once it is
	 * gone, the next new peer takes its slot. */
	uint8_t a[GSP_KEY_BYTES], b[GSP_KEY_BYTES];
	memcpy(a, T.ps.peer[0].cfg.public_key, GSP_KEY_BYTES);
	T.leave = true;
	reload_new(b);
	assert_slots(a, 0, b, 1, 2);             /* a's slot is its own */
	ck_assert(peers_leaving(find(a)));
	/* Its LeaveWait runs; its edge ends with it, and it goes. */
	ck_assert(uv_is_active((uv_handle_t *)&find(a)->leave));
	peers_leave_done(find(a));
	ck_assert(!peers_leaving(find(a)) && !peers_listed(find(a)));
	/* The second peer goes at once; a third takes the first's slot. */
	T.leave = false;
	reload_new(b);
	ck_assert_uint_eq(find(b)->index, 0);
	ck_assert_uint_eq(T.ps.n, 2);
	ck_assert_ptr_null(find(a));
}
END_TEST

START_TEST(test_a_slot_whose_edge_holds_the_peer_is_not_reused)
{
	/* ops->reusable says the gone peer's edge still holds something of
	 * it (an update to land): the new peer takes a new slot. */
	uint8_t a[GSP_KEY_BYTES], b[GSP_KEY_BYTES];
	memcpy(a, T.ps.peer[0].cfg.public_key, GSP_KEY_BYTES);
	T.reusable = false;
	reload_new(b);
	assert_slots(a, 0, b, 1, 2);
	/* Listed again, a returns to its own slot, with its history. */
	reload_listing(a);
	ck_assert(peers_listed(&T.ps.peer[0]));
	ck_assert_uint_eq(T.ps.n, 2);
}
END_TEST

START_TEST(test_a_slot_ended_alone_is_reused_last)
{
	/* LeaveWait passed before the peer answered: its slot stays its own
	 * (added back, it reconciles its count) while others are free. */
	uint8_t a[GSP_KEY_BYTES], b[GSP_KEY_BYTES];
	memcpy(a, T.ps.peer[0].cfg.public_key, GSP_KEY_BYTES);
	T.leave = true;
	list(NULL);
	peers_update(&T.ps, &T.cfg);
	ck_assert(peers_leaving(find(a)));
	/* What on_leave_wait does, at once. */
	find(a)->listing = PEER_LEAVE_EXPIRED;
	peers_leave_done(find(a));
	ck_assert_int_eq(find(a)->listing, PEER_GONE_ALONE);
	reload_new(b);
	assert_slots(a, 0, b, 1, 2);
}
END_TEST

START_TEST(test_a_retired_key_keeps_its_timestamp)
{
	/* a's slot goes to b; listed again, a refuses a handshake no newer
	 * than its last, as if it had kept its slot; its traffic stays in
	 * the table's. */
	uint8_t a[GSP_KEY_BYTES], b[GSP_KEY_BYTES];
	memcpy(a, T.ps.peer[0].cfg.public_key, GSP_KEY_BYTES);
	memset(T.ps.peer[0].last_ts, 0x42, GSP_HS_TIMESTAMP);
	T.ps.peer[0].stats.tx_bytes = 100;
	T.ps.peer[0].stats.rx_bytes = 200;
	reload_new(b);
	ck_assert_ptr_null(find(a));
	/* Its traffic still counts in the node's (model_bytes). */
	uint64_t tx, rx;
	peers_traffic(&T.ps, &tx, &rx);
	ck_assert_uint_eq(tx, 100);
	ck_assert_uint_eq(rx, 200);
	ck_assert_uint_eq(T.ps.peer[0].stats.tx_bytes, 0);
	static const uint8_t zero[GSP_HS_TIMESTAMP];
	ck_assert_mem_eq(T.ps.peer[0].last_ts, zero, GSP_HS_TIMESTAMP);
	reload_listing(a);
	ck_assert_uint_eq(find(a)->index, 0);
	uint8_t want[GSP_HS_TIMESTAMP];
	memset(want, 0x42, sizeof(want));
	ck_assert_mem_eq(find(a)->last_ts, want, GSP_HS_TIMESTAMP);
}
END_TEST

/* ---- the edge of a reused slot ---------------------------------------- */

static gsp_config engine_config(void)
{
	gsp_config c;
	gsp_config_default(&c);
	c.method = GSP_METHOD_POWERGOSSIP;
	c.rank = 2;
	return c;
}

static void round_trip(edgepair *p)
{
	ck_assert_int_ge(ep_step(&p->a), 0);
	ck_assert_int_ge(ep_step(&p->b), 0);
	ep_pump(p);
}

START_TEST(test_a_reused_edge_keeps_nothing_of_the_last_peer)
{
	/* a's peer b is removed: their generation ends at the same round at
	 * both ends.  Not reusable while it is live or ends, nor while a
	 * session is up; then a's edge takes a new peer: no generation, no ended
	 * generation, no record of b's, and it says it has no history. */
	edgepair p;
	gsp_config c = engine_config();
	ep_init(&p, "9x7,3", &c);
	ep_session_up(&p, 5);
	ep_pump(&p);
	for (int t = 0; t < 3; t++)
		round_trip(&p);
	ck_assert_int_ge(gsp_node_apply(p.a.node), 0);
	ck_assert_int_ge(gsp_node_apply(p.b.node), 0);
	ck_assert(!edge_reusable(p.a.e));                    /* live, up */
	ep_end_session(&p.a);
	ck_assert(!edge_reusable(p.a.e));                    /* live */
	/* Removed while the link is down: its generation ends once the peer
	 * answers (LeaveWait), on its next session. */
	ck_assert(!edge_end_begin(p.a.e, END_REMOVED));
	ck_assert(!edge_reusable(p.a.e));                    /* ending */
	ep_session_up(&p, 6);
	ep_pump(&p);
	ck_assert_int_eq(p.a.ended, 1);
	ck_assert(!ep_view(p.a.e).live);
	ck_assert_uint_eq(ep_view(p.a.e).ended_applied, 3);
	ck_assert(!edge_reusable(p.a.e));                    /* session up */
	ep_end_session(&p.a);
	ck_assert(edge_reusable(p.a.e));
	gsp_peer_config next = {.index = -1};
	edge_reuse(p.a.e, &next, "next", true);
	edge_view v = ep_view(p.a.e);
	ck_assert_uint_eq(v.index, 0);
	ck_assert_str_eq(v.name, "next");
	ck_assert_uint_eq(v.generation, 0);
	ck_assert_uint_eq(v.ended_generation, 0);
	ck_assert_uint_eq(v.ended_applied, 0);
	ck_assert_uint_eq(v.completed, 0);
	ck_assert_uint_eq(v.rounds_total, 0);
	ck_assert_uint_eq(v.session_no, 0);
	edge_record r;
	edge_record_of(p.a.e, &r);
	ck_assert_uint_eq(r.generation, 0);
	ck_assert_uint_eq(r.ended_generation, 0);
	ck_assert_uint_eq(r.ended_applied, 0);
	ck_assert_uint_eq(r.msg_len, 0);
	ck_assert(!r.live);
	/* The slot's new peer (a daemon of no history at b's place): their
	 * first generation starts on the engine edge from a new seed, and
	 * their rounds keep the pair's sum. */
	ep_restart(&p.b, &c, false, true);
	double sum0 = ep_sum(&p);
	ep_session_up(&p, 7);
	ep_pump(&p);
	ck_assert(ep_view(p.a.e).live && ep_view(p.b.e).live);
	ck_assert_uint_eq(ep_view(p.a.e).generation, 1);
	ck_assert_uint_eq(ep_info(&p.a).round, 0);
	for (int t = 0; t < 3; t++)
		round_trip(&p);
	ck_assert_int_ge(gsp_node_apply(p.a.node), 0);
	ck_assert_int_ge(gsp_node_apply(p.b.node), 0);
	ck_assert_uint_eq(ep_view(p.a.e).completed, 3);
	ck_assert_double_eq_tol(ep_sum(&p), sum0, 1e-6 * fabs(sum0) + 1e-3);
	ep_free(&p);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	Suite *s = suite_create("daemon-peer-slots");
	TCase *tc = tcase_create("table");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_a_gone_peers_slot_goes_to_the_next);
	tcase_add_test(tc, test_a_leaving_peers_slot_is_not_reused);
	tcase_add_test(tc, test_a_slot_whose_edge_holds_the_peer_is_not_reused);
	tcase_add_test(tc, test_a_slot_ended_alone_is_reused_last);
	tcase_add_test(tc, test_a_retired_key_keeps_its_timestamp);
	suite_add_tcase(s, tc);
	TCase *te = tcase_create("edge");
	tcase_add_test(te, test_a_reused_edge_keeps_nothing_of_the_last_peer);
	suite_add_tcase(s, te);
	return run_suite(s);
}
