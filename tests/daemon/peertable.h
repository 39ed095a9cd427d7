/* The fixture of the peer table's unit tests (daemon/peers.h): a table
 * listing one peer, on a loop of the test's, with ops that count the
 * sessions coming and going, and table_run to wait on a state.
 * Header-only. */
#ifndef GSP_TEST_PEERTABLE_H
#define GSP_TEST_PEERTABLE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peers.h"

typedef struct table {
	peers ps;
	counters c;
	gsp_daemon_config cfg;
	int ups, downs;          /* session_up / session_down calls */
	int added;               /* added calls (a slot for a peer) */
} table;

static inline void table_up(void *ctx, peer *p)
{
	((table *)ctx)->ups++;
}

static inline void table_down(void *ctx, peer *p)
{
	((table *)ctx)->downs++;
}

static inline int table_frame(void *ctx, peer *p, const uint8_t *pt, size_t len)
{
	return 0;
}

static inline int table_added(void *ctx, peer *p)
{
	((table *)ctx)->added++;
	return 0;
}

static inline bool table_removed(void *ctx, peer *p)
{
	return true;
}

static const peers_ops table_ops = {table_up, table_frame, table_down,
				    table_added, table_removed, NULL, NULL};

/* A table's configuration: defaults, no peer yet (table_peer adds). */
static inline void table_init(table *t)
{
	memset(t, 0, sizeof(*t));
	gsp_daemon_config_default(&t->cfg);
}

/* A [Peer] in t's configuration: key NULL for a keyless one (its key
 * learned from its certificate), endpoint NULL for accept-only. */
static inline void table_peer(table *t, const uint8_t *key, const char *endpoint)
{
	t->cfg.peers = realloc(t->cfg.peers, (t->cfg.n_peers + 1) * sizeof(*t->cfg.peers));
	gsp_peer_config *pc = &t->cfg.peers[t->cfg.n_peers++];
	memset(pc, 0, sizeof(*pc));
	pc->index = -1;
	if (key)
		memcpy(pc->public_key, key, GSP_KEY_BYTES);
	if (endpoint)
		snprintf(pc->endpoint, sizeof(pc->endpoint), "%s", endpoint);
}

/* Starts t on loop from its configuration, with admission by adm's
 * certificates (NULL: the allowlist only), its timestamps in the replay
 * file unless that is NULL. */
static inline void table_begin(table *t, uv_loop_t *loop, const gsp_keypair *us,
			       admission *adm, const char *replay)
{
	char err[256];
	ck_assert_int_eq(peers_init(&t->ps, loop, us, &t->c, &t->cfg, &table_ops, t,
				    err, sizeof(err)), 0);
	if (adm)
		peers_set_admission(&t->ps, adm);
	if (replay)
		ck_assert_int_eq(peers_set_replay_file(&t->ps, replay), 0);
	ck_assert_int_eq(peers_start(&t->ps, "127.0.0.1:0"), 0);
}

/* A table on loop that lists `listed`, dialing it at endpoint unless
 * that is NULL (then it only accepts); its timestamps in the replay file
 * unless that is NULL. */
static inline void table_start(table *t, uv_loop_t *loop, const gsp_keypair *us,
			       const gsp_keypair *listed, const char *endpoint,
			       const char *replay)
{
	table_init(t);
	table_peer(t, listed->pub, endpoint);
	table_begin(t, loop, us, NULL, replay);
}

/* Frees a table that peers_stop stopped and whose handles have closed. */
static inline void table_free(table *t)
{
	peers_free(&t->ps);
	gsp_daemon_config_clear(&t->cfg);
}

/* Stops the table, the only one on loop, and frees it. */
static inline void table_stop(table *t, uv_loop_t *loop)
{
	peers_stop(&t->ps);
	uv_run(loop, UV_RUN_DEFAULT);
	table_free(t);
}

/* Stops two tables, the only ones on loop, and frees them. */
static inline void table_stop_both(table *a, table *b, uv_loop_t *loop)
{
	peers_stop(&a->ps);
	peers_stop(&b->ps);
	uv_run(loop, UV_RUN_DEFAULT);
	table_free(a);
	table_free(b);
}

static inline int table_port(const table *t)
{
	return atoi(strrchr(t->ps.listen_addr, ':') + 1);
}

static inline void table_deadline(uv_timer_t *timer)
{
	*(bool *)timer->data = true;
}

/* Runs loop until done(arg) holds or ms pass; returns done(arg). */
static inline bool table_run(uv_loop_t *loop, bool (*done)(const void *arg),
			     const void *arg, unsigned ms)
{
	bool expired = false;
	uv_timer_t timer;
	uv_timer_init(loop, &timer);
	timer.data = &expired;
	uv_timer_start(&timer, table_deadline, ms, 0);
	while (!expired && !done(arg))
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&timer, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	return done(arg);
}

#endif
