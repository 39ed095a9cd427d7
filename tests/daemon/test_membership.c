/*
 * Unit tests of daemon/membership.c over a simulated network: N nodes
 * (each a membership with its own key and a certificate from one
 * authority), sessions that deliver messages in order per direction with
 * the next direction picked by a seeded PRNG, and a driver that plays the
 * daemon's peer table: a session is up while either end wants it (the one
 * that wants it dials, the other admits a certificate holder), and a node
 * wants its computed neighbours, plus its seed until the seed's full sync
 * has come.  What is checked once nothing moves:
 *  - every node holds every member's newest record, and its neighbours
 *    are the topology's on the members' order (BLAKE2b of the keys, as
 *    libgossip's graph over that order builds it, computed here apart
 *    from graph.c), for ring, torus, exponential and complete, n odd and
 *    even, formed from one seed;
 *  - a node that joins later is spliced in (on a ring only its two new
 *    neighbours' sets change), and one that leaves is closed over;
 *  - records that do not verify (another authority, expired, revoked,
 *    tampered) are refused, counted, and change nothing;
 *  - a node restarted with a lower incarnation than its old record
 *    refutes the old one, and every node ends with the new one.
 * A failing seed is printed and replays (GSP_TEST_SEED=N).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "../proto/admit_fixture.h"
#include "membership.h"

#define N_MAX 24
#define Q_MAX 4096                  /* messages queued per direction, at most */
#define NOW_UNIX (T_NOT_BEFORE + 100)

typedef struct qmsg {
	uint8_t bytes[GSP_MEMBERS_MSG_MAX];
	size_t len;
} qmsg;

/* One direction of a session: a -> b. */
typedef struct dir {
	int from, to;
	bool up;
	qmsg *q;                        /* q[head..head + n): a FIFO */
	size_t head, n, cap;
} dir;

typedef struct sim_node {
	bool present;                   /* started and not stopped */
	node keys;
	gsp_cert cert;
	membership ms;
	graph_neighbour nb[N_MAX];
	size_t n_nb;
	bool nb_known;
	int seed;                       /* -1: none */
	bool seed_synced;               /* the seed's LAST came */
	unsigned nb_changes;            /* neighbours handed up */
} sim_node;

static struct sim {
	sim_node node[N_MAX];
	dir d[N_MAX][N_MAX];            /* d[a][b]: a's handle of the session with b */
	int n;
	gsp_topology topo;
	uint64_t rng;
	uint64_t now_ms;
	ca auth;
	const gsp_revoke *revoked;
} S;

static uint64_t next_rand(void)
{
	uint64_t z = (S.rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int sim_send(void *ctx, void *session, const uint8_t *msg, size_t len)
{
	dir *d = session;
	(void)ctx;
	ck_assert(d->up);
	ck_assert_uint_lt(d->n, Q_MAX);
	if (d->head + d->n == d->cap) {
		if (d->head) {             /* move the queue to the front */
			memmove(d->q, d->q + d->head, d->n * sizeof(*d->q));
			d->head = 0;
		} else {
			d->cap = d->cap ? 2 * d->cap : 8;
			d->q = realloc(d->q, d->cap * sizeof(*d->q));
			ck_assert_ptr_nonnull(d->q);
		}
	}
	qmsg *m = &d->q[d->head + d->n++];
	memcpy(m->bytes, msg, len);
	m->len = len;
	return 0;
}

static void sim_neighbours(void *ctx, const graph_neighbour *set, size_t n)
{
	sim_node *x = ctx;
	ck_assert_uint_le(n, N_MAX);
	memcpy(x->nb, set, n * sizeof(*set));
	x->n_nb = n;
	x->nb_known = true;
	x->nb_changes++;
}

static const membership_ops sim_ops = { sim_send, sim_neighbours };

static int index_of_key(const uint8_t *key)
{
	for (int i = 0; i < S.n; i++)
		if (!memcmp(S.node[i].keys.kp.pub, key, GSP_KEY_BYTES))
			return i;
	return -1;
}

static void start_node(int i, uint64_t incarnation, const ca *auth)
{
	sim_node *x = &S.node[i];
	gsp_member_endpoint ep = { 4, { 10, 0, (uint8_t)(i >> 8), (uint8_t)i }, 7000 };
	char err[128];

	x->keys = node_of((uint8_t)(i + 1));
	x->cert = cert_of(&x->keys, "node", auth);
	membership_config cfg = {
		.topology = S.topo, .max_members = 64, .authority = S.auth.pk,
		.revoked = S.revoked, .cert = &x->cert, .endpoints = &ep,
		.n_endpoints = 1, .incarnation = incarnation,
	};
	ck_assert_msg(membership_init(&x->ms, &x->keys.kp, &cfg, &sim_ops, x, S.now_ms,
				      NOW_UNIX, err, sizeof(err)) == 0, "%s", err);
	x->present = true;
	x->n_nb = 0;
	x->nb_known = false;
	x->seed_synced = false;
	x->nb_changes = 0;
}

static void sim_init(int n, gsp_topology topo, uint64_t seed)
{
	memset(&S, 0, sizeof(S));
	S.n = n;
	S.topo = topo;
	S.rng = seed;
	S.now_ms = 1000;
	S.auth = ca_of(0xC1);
	for (int a = 0; a < N_MAX; a++)
		for (int b = 0; b < N_MAX; b++) {
			S.d[a][b].from = a;
			S.d[a][b].to = b;
		}
	for (int i = 0; i < n; i++) {
		S.node[i].seed = i == 0 ? -1 : 0;
		start_node(i, 100, &S.auth);
	}
}

static void sim_free(void)
{
	for (int i = 0; i < S.n; i++)
		if (S.node[i].present)
			membership_free(&S.node[i].ms);
	for (int a = 0; a < N_MAX; a++)
		for (int b = 0; b < N_MAX; b++)
			free(S.d[a][b].q);
}

/* ---- the daemon's peer table, played --------------------------------- */

static bool is_neighbour(const sim_node *x, int j)
{
	for (size_t k = 0; k < x->n_nb; k++)
		if (index_of_key(x->nb[k].key) == j)
			return true;
	return false;
}

static bool wants(int a, int b)
{
	const sim_node *x = &S.node[a];
	if (!x->present || !S.node[b].present || a == b ||
	    x->ms.self.status != GSP_MEMBER_ALIVE)
		return false;
	return is_neighbour(x, b) || (x->seed == b && !x->seed_synced);
}

static void session_set(int a, int b, bool up)
{
	if (S.d[a][b].up == up)
		return;
	S.d[a][b].up = S.d[b][a].up = up;
	S.d[a][b].n = S.d[b][a].n = 0;   /* a closed session's queue goes */
	S.d[a][b].head = S.d[b][a].head = 0;
	if (up) {
		ck_assert_int_eq(membership_session_up(&S.node[a].ms, &S.d[a][b]), 0);
		ck_assert_int_eq(membership_session_up(&S.node[b].ms, &S.d[b][a]), 0);
	} else {
		if (S.node[a].present)
			membership_session_down(&S.node[a].ms, &S.d[a][b]);
		if (S.node[b].present)
			membership_session_down(&S.node[b].ms, &S.d[b][a]);
	}
}

/* Sessions up where either end wants one, down where neither does. */
static bool dial(void)
{
	bool changed = false;
	for (int a = 0; a < S.n; a++)
		for (int b = a + 1; b < S.n; b++) {
			bool up = wants(a, b) || wants(b, a);
			if (S.d[a][b].up != up) {
				session_set(a, b, up);
				changed = true;
			}
		}
	return changed;
}

/* Delivers one message of a direction picked at random: false if none. */
static bool deliver_one(void)
{
	dir *pick[N_MAX * N_MAX];
	size_t k = 0;

	for (int a = 0; a < S.n; a++)
		for (int b = 0; b < S.n; b++)
			if (S.d[a][b].up && S.d[a][b].n)
				pick[k++] = &S.d[a][b];
	if (!k)
		return false;
	dir *d = pick[next_rand() % k];
	qmsg *m = &d->q[d->head++];
	if (!--d->n)
		d->head = 0;
	sim_node *to = &S.node[d->to];
	ck_assert_int_eq(membership_frame(&to->ms, &S.d[d->to][d->from], m->bytes, m->len,
					  S.now_ms, NOW_UNIX), 0);
	if (to->seed == d->from && (m->bytes[1] & GSP_MEMBERS_LAST))
		to->seed_synced = true;
	return true;
}

static void run_all(void)
{
	for (int i = 0; i < S.n; i++)
		if (S.node[i].present)
			membership_run(&S.node[i].ms, S.now_ms);
}

static bool pending(void)
{
	for (int i = 0; i < S.n; i++)
		if (S.node[i].present && membership_pending(&S.node[i].ms))
			return true;
	return false;
}

/* Until nothing moves: a bounded number of steps. */
static void settle(void)
{
	for (int step = 0; step < 200000; step++) {
		S.now_ms++;
		bool moved = dial();
		if (pending()) {
			run_all();
			moved = true;
		}
		/* A few deliveries between runs, as a loop turn reads several
		 * frames. */
		for (uint64_t k = next_rand() % 4; k < 4; k++)
			moved |= deliver_one();
		if (!moved)
			return;
	}
	ck_abort_msg("the simulation did not settle");
}

/* ---- what must hold -------------------------------------------------- */

/* The topology's neighbours of each present member, on the order of their
 * key hashes: libgossip's graph of that topology (a torus on n < 4 or n
 * prime is a ring), built apart from graph.c. */
static void expected(bool adj[N_MAX][N_MAX])
{
	int idx[N_MAX], m = 0;
	uint8_t h[N_MAX][32];

	memset(adj, 0, sizeof(bool) * N_MAX * N_MAX);
	for (int i = 0; i < S.n; i++)
		if (S.node[i].present && S.node[i].ms.self.status == GSP_MEMBER_ALIVE) {
			crypto_generichash(h[i], 32, S.node[i].keys.kp.pub, GSP_KEY_BYTES, NULL, 0);
			idx[m++] = i;
		}
	for (int a = 0; a < m; a++)        /* insertion sort by hash */
		for (int b = a; b > 0 && memcmp(h[idx[b]], h[idx[b - 1]], 32) < 0; b--) {
			int t = idx[b];
			idx[b] = idx[b - 1];
			idx[b - 1] = t;
		}
	if (m < 2)
		return;
	gsp_topology topo = S.topo;
	if (topo == GSP_TOPO_TORUS) {
		bool prime = true;
		for (int f = 2; f * f <= m; f++)
			prime &= m % f != 0;
		if (m < 4 || prime)
			topo = GSP_TOPO_RING;
	}
	gsp_graph *g;
	ck_assert_int_eq(gsp_graph_new(topo, (unsigned)m, &g), 0);
	for (size_t e = 0; e < gsp_graph_edge_count(g); e++) {
		unsigned lo, hi;
		ck_assert_int_eq(gsp_graph_edge(g, e, &lo, &hi), 0);
		adj[idx[lo]][idx[hi]] = adj[idx[hi]][idx[lo]] = true;
	}
	gsp_graph_free(g);
}

static void check_formed(uint64_t seed)
{
	bool adj[N_MAX][N_MAX];
	int alive = 0;

	expected(adj);
	for (int i = 0; i < S.n; i++)
		alive += S.node[i].present && S.node[i].ms.self.status == GSP_MEMBER_ALIVE;
	for (int a = 0; a < S.n; a++) {
		sim_node *x = &S.node[a];
		if (!x->present || x->ms.self.status != GSP_MEMBER_ALIVE)
			continue;
		for (int b = 0; b < S.n; b++) {
			if (!S.node[b].present)
				continue;
			const gsp_member *r = membership_record(&x->ms, S.node[b].keys.kp.pub);
			ck_assert_msg(r, "seed %llu: node %d lacks node %d's record",
				      (unsigned long long)seed, a, b);
			ck_assert_msg(r->incarnation == S.node[b].ms.self.incarnation &&
				      r->status == S.node[b].ms.self.status,
				      "seed %llu: node %d holds an old record of node %d",
				      (unsigned long long)seed, a, b);
			ck_assert_msg(is_neighbour(x, b) == adj[a][b],
				      "seed %llu, %s, %d members: node %d %s node %d as a neighbour",
				      (unsigned long long)seed, gsp_topology_name(S.topo), alive,
				      a, adj[a][b] ? "lacks" : "has", b);
		}
	}
}

static uint64_t seed_base(void)
{
	const char *s = getenv("GSP_TEST_SEED");
	return s ? strtoull(s, NULL, 10) : 0;
}

static int seed_count(int n)
{
	return getenv("GSP_TEST_SEED") ? 1 : getenv("GSP_TEST_SMALL") ? n / 10 + 1 : n;
}

/* ---- tests ------------------------------------------------------------- */

START_TEST(forms_from_one_seed)
{
	static const gsp_topology topos[] = { GSP_TOPO_RING, GSP_TOPO_TORUS,
					      GSP_TOPO_EXPONENTIAL, GSP_TOPO_COMPLETE };
	static const int sizes[] = { 1, 2, 3, 5, 12, 16 };
	/* Under valgrind (GSP_TEST_SMALL) the largest size once, on a ring. */
	size_t n_sizes = sizeof(sizes) / sizeof(sizes[0]);

	for (size_t t = 0; t < 4; t++)
		for (size_t z = 0; z < n_sizes - (getenv("GSP_TEST_SMALL") && t > 0); z++)
			for (int s = 0; s < seed_count(8); s++) {
				uint64_t seed = seed_base() + (uint64_t)s;
				sim_init(sizes[z], topos[t], seed);
				settle();
				check_formed(seed);
				sim_free();
			}
}
END_TEST

START_TEST(a_joiner_is_spliced_in)
{
	for (int s = 0; s < seed_count(20); s++) {
		uint64_t seed = seed_base() + (uint64_t)s;
		sim_init(9, GSP_TOPO_RING, seed);
		S.node[8].present = false;    /* joins later */
		membership_free(&S.node[8].ms);
		settle();
		check_formed(seed);
		unsigned before[N_MAX];
		for (int i = 0; i < 8; i++)
			before[i] = S.node[i].nb_changes;
		/* It joins through any member. */
		S.node[8].seed = (int)(next_rand() % 8);
		start_node(8, 100, &S.auth);
		settle();
		check_formed(seed);
		int changed = 0;
		for (int i = 0; i < 8; i++)
			changed += S.node[i].nb_changes != before[i];
		ck_assert_msg(changed == 2, "seed %llu: %d members' neighbours changed, not 2",
			      (unsigned long long)seed, changed);
		sim_free();
	}
}
END_TEST

START_TEST(a_leaver_is_closed_over)
{
	for (int s = 0; s < seed_count(20); s++) {
		uint64_t seed = seed_base() + (uint64_t)s;
		sim_init(8, GSP_TOPO_RING, seed);
		settle();
		int who = (int)(next_rand() % 8);
		ck_assert_int_eq(membership_leave(&S.node[who].ms, S.now_ms), 0);
		/* Its record goes out before its sessions close. */
		for (int k = 0; k < 1000 && (pending() || deliver_one()); k++)
			run_all();
		settle();
		check_formed(seed);
		for (int i = 0; i < 8; i++) {
			if (i == who)
				continue;
			const gsp_member *r = membership_record(&S.node[i].ms,
								S.node[who].keys.kp.pub);
			ck_assert_ptr_nonnull(r);
			ck_assert_uint_eq(r->status, GSP_MEMBER_LEFT);
			ck_assert(!is_neighbour(&S.node[i], who));
		}
		sim_free();
	}
}
END_TEST

/* One record, sent by node 0 to node 1 over their session. */
static void inject(const gsp_member *rec)
{
	const gsp_member *one[1] = { rec };
	uint8_t buf[GSP_MEMBERS_MSG_MAX];
	size_t len;

	ck_assert_int_eq(gsp_msg_members_encode(0, one, 1, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(membership_frame(&S.node[1].ms, &S.d[1][0], buf, len, S.now_ms,
					  NOW_UNIX), 0);
}

START_TEST(records_that_do_not_verify_are_refused)
{
	sim_init(3, GSP_TOPO_RING, 1);
	settle();
	check_formed(1);
	membership *ms1 = &S.node[1].ms;
	size_t count = members_count(&ms1->table);
	node stranger = node_of(0x77);
	ca other = ca_of(0xC2);
	gsp_member rec;

	memset(&rec, 0, sizeof(rec));
	rec.version = GSP_MEMBER_VERSION;
	memcpy(rec.node_key, stranger.kp.pub, GSP_KEY_BYTES);
	rec.incarnation = 1;
	rec.n_endpoints = 1;
	rec.endpoints[0] = (gsp_member_endpoint){ 4, { 10, 9, 9, 9 }, 7000 };
	rec.has_cert = true;

	/* Another authority's certificate. */
	rec.cert = cert_of(&stranger, "stranger", &other);
	ck_assert_int_eq(gsp_member_sign(&rec, stranger.sign_sk), 0);
	inject(&rec);
	/* Ours, expired: its not-after moved back and signed again. */
	rec.cert = cert_of(&stranger, "stranger", &S.auth);
	rec.cert.not_after = NOW_UNIX - 1;
	ck_assert_int_eq(gsp_cert_sign(&rec.cert, S.auth.sk), 0);
	ck_assert_int_eq(gsp_member_sign(&rec, stranger.sign_sk), 0);
	inject(&rec);
	/* A good record, one byte changed after signing. */
	rec.cert = cert_of(&stranger, "stranger", &S.auth);
	ck_assert_int_eq(gsp_member_sign(&rec, stranger.sign_sk), 0);
	gsp_member tampered = rec;
	tampered.endpoints[0].port = 7001;
	inject(&tampered);
	/* No certificate at all. */
	gsp_member bare = rec;
	bare.has_cert = false;
	ck_assert_int_eq(gsp_member_sign(&bare, stranger.sign_sk), 0);
	inject(&bare);
	ck_assert_uint_eq(ms1->counters.records_refused, 4);
	ck_assert_uint_eq(members_count(&ms1->table), count);
	ck_assert_ptr_null(membership_record(ms1, stranger.kp.pub));

	/* Revoked: the same good record, against a list naming it. */
	uint8_t keys[1][GSP_KEY_BYTES];
	memcpy(keys[0], stranger.kp.pub, GSP_KEY_BYTES);
	gsp_revoke list = { .version = GSP_REVOKE_VERSION, .serial = 1, .count = 1,
			    .keys = keys };
	memcpy(list.authority, S.auth.pk, GSP_SIGN_PUBLIC_BYTES);
	membership_set_revoked(ms1, &list);
	inject(&rec);
	ck_assert_uint_eq(ms1->counters.records_refused, 5);
	ck_assert_ptr_null(membership_record(ms1, stranger.kp.pub));
	/* And without the list, it is a member. */
	membership_set_revoked(ms1, NULL);
	inject(&rec);
	ck_assert_ptr_nonnull(membership_record(ms1, stranger.kp.pub));
	sim_free();
}
END_TEST

/* A session that floods records (a valid one, eight to a message, over
 * and over at one instant): at most its budget is verified, the rest is
 * dropped unverified and counted, and once the budget is whole again the
 * node asks that session for a full sync, not before. */
static bool asked_since(const dir *d, size_t from)
{
	gsp_msg_members m;
	for (size_t k = from; k < d->n; k++) {
		const qmsg *q = &d->q[d->head + k];
		if (gsp_msg_members_decode(q->bytes, q->len, &m) == 0 &&
		    (m.flags & GSP_MEMBERS_ASK))
			return true;
	}
	return false;
}

START_TEST(a_flood_of_records_is_limited)
{
	sim_init(3, GSP_TOPO_RING, 1);
	settle();
	check_formed(1);
	membership *ms1 = &S.node[1].ms;
	gsp_member rec = *membership_record(ms1, S.node[0].keys.kp.pub);
	const gsp_member *eight[8];
	for (int i = 0; i < 8; i++)
		eight[i] = &rec;
	static uint8_t buf[GSP_MEMBERS_MSG_MAX];
	size_t len;
	ck_assert_int_eq(gsp_msg_members_encode(0, eight, 8, buf, sizeof(buf), &len), 0);
	uint64_t cap = ms1->table.max + MEMBERSHIP_PUSH_MAX;
	uint64_t in0 = ms1->counters.records_in, lim0 = ms1->counters.records_limited;
	for (uint64_t i = 0; i < 3 * cap / 8; i++)
		ck_assert_int_eq(membership_frame(ms1, &S.d[1][0], buf, len, S.now_ms,
						  NOW_UNIX), 0);
	uint64_t taken = ms1->counters.records_in - in0;
	uint64_t limited = ms1->counters.records_limited - lim0;
	ck_assert_uint_le(taken, cap);
	ck_assert_uint_ge(limited, 3 * cap / 8 * 8 - cap);
	ck_assert_uint_eq(taken + limited, 3 * cap / 8 * 8);
	/* Not whole yet: no ASK. */
	dir *back = &S.d[1][0];
	size_t q0 = back->n;
	membership_run(ms1, S.now_ms + 1000);
	ck_assert(!asked_since(back, q0));
	/* Whole again: one ASK, and the flood's records verified again. */
	S.now_ms += cap * 1000 / MEMBERSHIP_RECORDS_PER_S + 1000;
	membership_run(ms1, S.now_ms);
	ck_assert(asked_since(back, q0));
	ck_assert_int_eq(membership_frame(ms1, &S.d[1][0], buf, len, S.now_ms, NOW_UNIX), 0);
	ck_assert_uint_eq(ms1->counters.records_in - in0, taken + 8);
	sim_free();
}
END_TEST

START_TEST(a_restarted_node_refutes_its_old_record)
{
	for (int s = 0; s < seed_count(10); s++) {
		uint64_t seed = seed_base() + (uint64_t)s;
		sim_init(6, GSP_TOPO_RING, seed);
		settle();
		int who = 1 + (int)(next_rand() % 5);
		for (int b = 0; b < S.n; b++)
			session_set(who, b, false);
		membership_free(&S.node[who].ms);
		/* Its clock went back: a lower incarnation than the record
		 * the others hold. */
		start_node(who, 50, &S.auth);
		S.node[who].seed = 0;
		settle();
		ck_assert_uint_gt(S.node[who].ms.self.incarnation, 100);
		ck_assert_uint_ge(S.node[who].ms.counters.refutations, 1);
		check_formed(seed);
		sim_free();
	}
}
END_TEST

START_TEST(init_refusals)
{
	node n = node_of(1), other = node_of(2);
	ca auth = ca_of(0xC1);
	gsp_cert cert = cert_of(&other, "other", &auth);
	gsp_member_endpoint ep = { 4, { 10, 0, 0, 1 }, 7000 };
	membership_config cfg = { .topology = GSP_TOPO_RING, .max_members = 8,
				  .authority = auth.pk, .cert = &cert, .endpoints = &ep,
				  .n_endpoints = 1, .incarnation = 1 };
	static membership ms;
	char err[128];

	ck_assert_int_eq(membership_init(&ms, &n.kp, &cfg, &sim_ops, NULL, 0, NOW_UNIX,
					 err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "the Certificate names another node's keys");
	cert = cert_of(&n, "n", &auth);
	ck_assert_int_eq(membership_init(&ms, &n.kp, &cfg, &sim_ops, NULL, 0,
					 T_NOT_AFTER, err, sizeof(err)), -EINVAL);
	cfg.authority = NULL;
	ck_assert_int_eq(membership_init(&ms, &n.kp, &cfg, &sim_ops, NULL, 0, NOW_UNIX,
					 err, sizeof(err)), -EINVAL);
	cfg.authority = auth.pk;
	cfg.n_endpoints = 0;
	ck_assert_int_eq(membership_init(&ms, &n.kp, &cfg, &sim_ops, NULL, 0, NOW_UNIX,
					 err, sizeof(err)), -EINVAL);
	cfg.n_endpoints = 1;
	ck_assert_int_eq(membership_init(&ms, &n.kp, &cfg, &sim_ops, NULL, 0, NOW_UNIX,
					 err, sizeof(err)), 0);
	/* A malformed message is an error for the link. */
	uint8_t junk[4] = { GSP_MSG_MEMBERS, 0x80, 0, 0 };
	ck_assert_int_lt(membership_frame(&ms, NULL, junk, sizeof(junk), 0, NOW_UNIX), 0);
	membership_free(&ms);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("membership");
	TCase *tc = tcase_create("membership");
	SRunner *sr;
	int failed;

	if (sodium_init() < 0)
		return EXIT_FAILURE;
	tcase_add_test(tc, init_refusals);
	tcase_add_test(tc, records_that_do_not_verify_are_refused);
	tcase_add_test(tc, forms_from_one_seed);
	tcase_add_test(tc, a_joiner_is_spliced_in);
	tcase_add_test(tc, a_leaver_is_closed_over);
	tcase_add_test(tc, a_restarted_node_refutes_its_old_record);
	tcase_add_test(tc, a_flood_of_records_is_limited);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
