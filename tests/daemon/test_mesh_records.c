/* Unit tests of the records of keys that had no slot when the records
 * were read (daemon/mesh.c's orphans): each goes to the slot its key
 * gets, whichever way (a [Peer] a reload adds, as the cluster's computed
 * neighbours come; a keyless seed that learns the key), and moves with
 * the key when the slot that took it goes before its peer met it.  No
 * network: a real mesh on a loop that is not run, reloads and a key
 * learned called directly (peers__learned, as the handshake does).  It
 * listens on 127.0.0.1; the keyless seed's address, 127.0.0.1:9, is
 * dialled once at most (refused, or cut at teardown).  Both
 * bugs were found by tools/chaos (RELIABILITY journal, 2026-12-07): a
 * restarted member lost its generations ("ended at round N there and 0
 * here", the average moved), and a generation resumed on a gone slot,
 * where a DRAIN waited for it for ever. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "log.h"
#include "mesh.h"
#include "peers_impl.h"
#include "testutil.h"
#include "tmpdir.h"

static uv_loop_t *loop;
static gsp_daemon_config cfg;
static gsp_keypair key, kk;      /* ours; K's, the peer with the record */
static counters ctrs;
static mesh ms;
static char dir[64], path[128];

#define SEED_ENDPOINT "127.0.0.1:9"   /* a keyless seed (discard: refused) */

/* The configuration: a keyless seed, and K's [Peer] if with_k. */
static void listing(gsp_daemon_config *c, bool with_k)
{
	gsp_daemon_config_default(c);
	c->engine.method = GSP_METHOD_EXACT;
	c->peers = calloc(2, sizeof(*c->peers));
	c->n_peers = with_k ? 2 : 1;
	snprintf(c->peers[0].endpoint, sizeof(c->peers[0].endpoint), SEED_ENDPOINT);
	c->peers[0].index = -1;
	memcpy(c->peers[1].public_key, kk.pub, GSP_KEY_BYTES);
	c->peers[1].index = -1;
}

static void reload(bool with_k)
{
	gsp_daemon_config c;
	listing(&c, with_k);
	mesh_reload(&ms, &c);
	gsp_daemon_config_clear(&c);
}

/* The records file: K's edge ended generation 3 at round 5 (no engine
 * state, so it stands ended there, whatever the model). */
static void records_of_k(void)
{
	edge_record r = {.generation = 3, .live = true, .applied = 5,
			 .ended_generation = 2, .ended_applied = 9};
	memcpy(r.key, kk.pub, GSP_KEY_BYTES);
	slotfile f;
	ck_assert_int_eq(slotfile_open(&f, path), 0);
	ck_assert_int_eq(edgestate_save(&f, &r, 1, 1, NULL), 0);
	slotfile_close(&f);
}

static void setup(void)
{
	loop = calloc(1, sizeof(*loop));
	ck_assert_int_eq(uv_loop_init(loop), 0);
	gsp_keypair_generate(&key);
	gsp_keypair_generate(&kk);
	tmpdir_make(dir, sizeof(dir), "meshrec");
	tmpdir_path(path, sizeof(path), dir, "edges");
	records_of_k();
	listing(&cfg, false);
	memset(&ctrs, 0, sizeof(ctrs));
	char err[256];
	ck_assert_int_eq(mesh_init(&ms, loop, &key, &ctrs, &cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(mesh_set_state_file(&ms, path), 0);
	ck_assert_uint_eq(ms.n_orphans, 1);
	/* Listening on loopback (the table's handles are then set up); the
	 * loop runs only at teardown, after peers_stop. */
	ck_assert_int_eq(peers_start(&ms.peers, "127.0.0.1:0"), 0);
}

static void teardown(void)
{
	peers_stop(&ms.peers);
	uv_run(loop, UV_RUN_DEFAULT);
	mesh_free(&ms);
	gsp_daemon_config_clear(&cfg);
	ck_assert_int_eq(uv_loop_close(loop), 0);
	free(loop);
	tmpdir_remove(dir);
}

static edge_view view_at(size_t i)
{
	edge_view v;
	edge_view_of(edges_at(&ms.edges, i), &v);
	return v;
}

/* The slot present with K's key (none: -1). */
static int slot_of_k(void)
{
	for (size_t i = 0; i < ms.peers.n; i++)
		if ((peers_listed(&ms.peers.peer[i]) || peers_leaving(&ms.peers.peer[i])) &&
		    !memcmp(ms.peers.peer[i].cfg.public_key, kk.pub, GSP_KEY_BYTES))
			return (int)i;
	return -1;
}

static void assert_holds_the_record(size_t i)
{
	edge_view v = view_at(i);
	ck_assert_uint_eq(v.generation, 3);
	ck_assert_uint_eq(v.ended_generation, 3);
	ck_assert_uint_eq(v.ended_applied, 5);
	ck_assert(!v.live);
}

static void assert_holds_nothing(size_t i)
{
	edge_view v = view_at(i);
	ck_assert_uint_eq(v.generation, 0);
	ck_assert_uint_eq(v.ended_generation, 0);
	ck_assert_uint_eq(v.ended_applied, 0);
}

/* K listed by a reload (the way the cluster's graph adds a neighbour):
 * its slot takes the record.  (It did not: a reload's [Peer] counted as
 * configured, and only configured peers present at the start had their
 * records.) */
START_TEST(test_a_peer_a_reload_adds_takes_its_record)
{
	reload(true);
	int k = slot_of_k();
	ck_assert_int_ge(k, 0);
	assert_holds_the_record((size_t)k);
}
END_TEST

/* K listed, then not (its slot gone before K met it), then the seed
 * learns K's key: the seed's slot takes the record, the gone slot keeps
 * nothing of it. */
START_TEST(test_the_record_moves_to_the_keys_next_slot)
{
	reload(true);
	int gone = slot_of_k();
	ck_assert_int_ge(gone, 0);
	reload(false);
	ck_assert_int_eq(slot_of_k(), -1);
	size_t seed = 0;
	while (seed < ms.peers.n && strcmp(ms.peers.peer[seed].cfg.endpoint, SEED_ENDPOINT))
		seed++;
	ck_assert_uint_lt(seed, ms.peers.n);
	ck_assert_int_ne((int)seed, gone);
	peers__learned(&ms.peers.peer[seed], kk.pub, "node-k");
	ck_assert_int_eq(slot_of_k(), (int)seed);
	assert_holds_the_record(seed);
	assert_holds_nothing((size_t)gone);
}
END_TEST

/* K listed, then not, then listed again: back in its own slot (added
 * again), record and all. */
START_TEST(test_listed_again_the_slot_keeps_its_record)
{
	reload(true);
	int k = slot_of_k();
	reload(false);
	reload(true);
	ck_assert_int_eq(slot_of_k(), k);
	assert_holds_the_record((size_t)k);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	gsp_log_set_level(GSP_LOG_WARNING);
	Suite *s = suite_create("daemon-mesh-records");
	TCase *tc = tcase_create("orphans");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_a_peer_a_reload_adds_takes_its_record);
	tcase_add_test(tc, test_the_record_moves_to_the_keys_next_slot);
	tcase_add_test(tc, test_listed_again_the_slot_keeps_its_record);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
