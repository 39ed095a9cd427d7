/* cluster: membership on the daemon's loop (cluster.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "cluster.h"
#include "cluster_impl.h"
#include "endpoint.h"
#include "log.h"

static uint64_t unix_now(void)
{
	return (uint64_t)time(NULL);
}

/* ---- the peer list ----------------------------------------------------- */

static bool listed_key(const gsp_peer_config *list, size_t n, const uint8_t *key)
{
	for (size_t i = 0; i < n; i++)
		if (!memcmp(list[i].public_key, key, GSP_KEY_BYTES))
			return true;
	return false;
}

static bool listed_endpoint(const gsp_peer_config *list, size_t n, const char *ep)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i].endpoint, ep))
			return true;
	return false;
}

static gsp_peer_config keyed(const uint8_t *key, const char *endpoint, const char *name)
{
	gsp_peer_config pc = {.index = -1};
	memcpy(pc.public_key, key, GSP_KEY_BYTES);
	snprintf(pc.endpoint, sizeof(pc.endpoint), "%s", endpoint ? endpoint : "");
	snprintf(pc.name, sizeof(pc.name), "%s", name ? name : "");
	return pc;
}

/* Whether ep is one of our own advertised endpoints (a seed name lists
 * every member, this one too). */
static bool is_self(const cluster *c, const char *ep)
{
	const gsp_member *self = &c->ms.self;
	for (size_t i = 0; i < self->n_endpoints; i++) {
		char own[GSP_ADDR_MAX];
		cluster__endpoint_text(self->endpoints[i].family, self->endpoints[i].addr,
			      self->endpoints[i].port, own);
		if (!strcmp(own, ep))
			return true;
	}
	return false;
}

/* The list the mesh should have now (cluster.h); n into *ret_n, or NULL
 * without memory. */
static gsp_peer_config *compute(cluster *c, size_t *ret_n)
{
	const membership *ms = &c->ms;
	const peers *ps = &c->mesh->peers;
	uint64_t now = uv_now(c->loop);
	size_t cap = c->n_static + ms->n_nb + c->n_seed + ps->n + 1, n = 0;
	gsp_peer_config *list = calloc(cap, sizeof(*list));
	if (!list)
		return NULL;
	for (size_t i = 0; i < c->n_static; i++)
		list[n++] = c->static_peers[i];
	if (c->left) {            /* the [Peer] sections alone */
		*ret_n = n;
		return list;
	}
	for (size_t i = 0; i < ms->n_nb; i++) {
		const gsp_member *rec = membership_record(ms, ms->nb[i].key);
		char ep[GSP_ADDR_MAX] = "";
		if (!rec || listed_key(list, n, rec->node_key))
			continue;
		if (rec->n_endpoints)
			cluster__endpoint_text(rec->endpoints[0].family, rec->endpoints[0].addr,
				      rec->endpoints[0].port, ep);
		char name[GSP_PEER_NAME_MAX] = "";
		if (rec->has_cert)
			snprintf(name, sizeof(name), "%.*s", (int)rec->cert.name_len,
				 (const char *)rec->cert.name);
		list[n++] = keyed(rec->node_key, ep, name);
	}
	if (now < c->seeding_until_ms)
		for (size_t i = 0; i < c->n_seed; i++) {
			if (listed_endpoint(list, n, c->seed_addr[i]) ||
			    is_self(c, c->seed_addr[i]))
				continue;
			gsp_peer_config pc = {.index = -1, .members_only = true};
			snprintf(pc.endpoint, sizeof(pc.endpoint), "%s", c->seed_addr[i]);
			list[n++] = pc;
		}
	for (size_t i = 0; i < ps->n; i++) {
		const peer *p = &ps->peer[i];
		if (p->origin != PEER_ADMITTED || !peers_listed(p) || !p->session ||
		    listed_key(list, n, p->cfg.public_key) ||
		    now >= c->up_since[i] + CLUSTER_ADMIT_GRACE_MS)
			continue;
		list[n] = keyed(p->cfg.public_key, NULL, p->cfg.name);
		list[n++].members_only = true;
	}
	*ret_n = n;
	return list;
}

static bool same_list(const gsp_peer_config *a, size_t na, const gsp_peer_config *b,
		      size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (memcmp(a[i].public_key, b[i].public_key, GSP_KEY_BYTES) ||
		    strcmp(a[i].endpoint, b[i].endpoint) ||
		    a[i].members_only != b[i].members_only)
			return false;
	return true;
}

/* Whether a peer admitted by its certificate is in the table but not in
 * list (its grace is over): the list goes to the mesh again, which
 * removes it. */
static bool admitted_unlisted(const cluster *c, const gsp_peer_config *list, size_t n)
{
	const peers *ps = &c->mesh->peers;
	for (size_t i = 0; i < ps->n; i++) {
		const peer *p = &ps->peer[i];
		if (p->origin == PEER_ADMITTED && peers_listed(p) &&
		    !listed_key(list, n, p->cfg.public_key))
			return true;
	}
	return false;
}

/* Hands the mesh the list, if it changed: a reload of a computed list. */
static void apply(cluster *c)
{
	size_t n;
	gsp_peer_config *list = compute(c, &n);
	if (!list || c->stopping)
		goto out;
	if (c->applied && same_list(list, n, c->applied, c->n_applied) &&
	    !admitted_unlisted(c, list, n))
		goto out;
	gsp_peer_config *copy = malloc((n ? n : 1) * sizeof(*copy));
	if (!copy)
		goto out;
	if (n)
		memcpy(copy, list, n * sizeof(*copy));
	free(c->applied);
	c->applied = list;
	c->n_applied = n;
	list = NULL;
	gsp_daemon_config cfg;
	gsp_daemon_config_default(&cfg);
	cfg.peers = copy;
	cfg.n_peers = n;
	cfg.leave_wait_ms = c->leave_wait_ms;
	cfg.peers_computed = true;
	gsp_debug("cluster: %zu peers (%zu neighbours)", n, c->ms.n_nb);
	mesh_reload(c->mesh, &cfg);    /* takes cfg */
out:
	free(list);
}

/* ---- the loop ---------------------------------------------------------- */

/* The detector probes the members alive or suspect in the table, each
 * at its record's incarnation and first endpoint: a pass over the table
 * once it changed (records added, replaced or dropped), not at every
 * run. */
static void probe_sync(cluster *c)
{
	const members *t = &c->ms.table;
	if (t->changes == c->probe_synced)
		return;
	c->probe_synced = t->changes;
	probe_sync_begin(&c->probe);
	for (size_t i = 0; i < members_count(t); i++) {
		const gsp_member *rec = &members_at(t, i)->rec;
		if ((rec->status == GSP_MEMBER_ALIVE || rec->status == GSP_MEMBER_SUSPECT) &&
		    rec->n_endpoints)
			probe_member_set(&c->probe, rec->node_key, &rec->endpoints[0],
					 rec->incarnation);
	}
	probe_sync_end(&c->probe);
}

static void on_run(uv_timer_t *t)
{
	cluster *c = t->data;
	membership_run(&c->ms, uv_now(c->loop));
	probe_sync(c);
}

/* Runs the membership on the loop's next turn. */
static void kick(cluster *c)
{
	if (c->timers_ready && !c->stopping && !uv_is_active((uv_handle_t *)&c->run))
		uv_timer_start(&c->run, on_run, 0, 0);
}

static void on_tick(uv_timer_t *t)
{
	cluster *c = t->data;
	uint64_t now = uv_now(c->loop);
	bool alone = true;
	for (size_t i = 0; i < c->mesh->peers.n; i++)
		alone &= !c->mesh->peers.peer[i].session;
	if (!c->ms.counters.syncs_received || alone) {
		c->seeding_until_ms = now + CLUSTER_SEED_WINDOW_MS;
	} else if (now >= c->next_reseed_ms) {
		c->seeding_until_ms = now + CLUSTER_SEED_WINDOW_MS;
		c->next_reseed_ms = now + CLUSTER_RESEED_MS;
	}
	apply(c);
	kick(c);
}

/* ---- membership's ops -------------------------------------------------- */

static int ms_send(void *ctx, void *session, const uint8_t *msg, size_t len)
{
	return peers_send(session, msg, len);
}

static void ms_neighbours(void *ctx, const graph_neighbour *set, size_t n)
{
	cluster *c = ctx;
	gsp_info("cluster: %zu neighbours among %zu members", n,
		 members_count(&c->ms.table));
	apply(c);
}

/* The detector's verdict (from inside its calls: recorded, and the
 * membership runs on the loop's next turn). */
static void on_verdict(void *ctx, const uint8_t key[GSP_KEY_BYTES], bool dead)
{
	cluster *c = ctx;
	char b64[GSP_KEY_BASE64_LEN + 1];
	gsp_key_to_base64(key, b64);
	gsp_info("cluster: member %.8s %s", b64, dead ? "found dead by the probes; out "
		 "of the graph until it comes back" : "answers the probes again");
	membership_detected(&c->ms, key, dead);
	kick(c);
}

static const probe_ops cluster_probe_ops = {.verdict = on_verdict};

static const membership_ops cluster_ms_ops = {
	.send = ms_send,
	.neighbours = ms_neighbours,
};

/* ---- the mesh's sessions ----------------------------------------------- */

static void on_session_up(void *ctx, peer *p)
{
	cluster *c = ctx;
	c->up_since[p->index] = uv_now(c->loop);
	if (peers_key_known(p) && probe_revive(&c->probe, p->cfg.public_key))
		gsp_info("cluster: member %s, found dead, has a session again: probed "
			 "again", p->name);
	if (membership_session_up(&c->ms, p) != 0)
		gsp_warn("cluster: no room for peer %s's session", p->name);
	kick(c);
}

static int on_frame(void *ctx, peer *p, const uint8_t *pt, size_t len)
{
	cluster *c = ctx;
	int err = membership_frame(&c->ms, p, pt, len, uv_now(c->loop), unix_now());
	kick(c);
	return err;
}

static void on_session_down(void *ctx, peer *p)
{
	cluster *c = ctx;
	c->up_since[p->index] = 0;
	membership_session_down(&c->ms, p);
	kick(c);
}

static const mesh_cluster_ops cluster_mesh_ops = {
	.session_up = on_session_up,
	.frame = on_frame,
	.session_down = on_session_down,
};

/* ---- setup ------------------------------------------------------------- */

static int copy_static(cluster *c, const gsp_daemon_config *cfg)
{
	gsp_peer_config *copy = malloc((cfg->n_peers ? cfg->n_peers : 1) * sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	if (cfg->n_peers)
		memcpy(copy, cfg->peers, cfg->n_peers * sizeof(*copy));
	free(c->static_peers);
	c->static_peers = copy;
	c->n_static = cfg->n_peers;
	c->leave_wait_ms = cfg->leave_wait_ms;
	return 0;
}

int cluster_init(cluster *c, uv_loop_t *loop, mesh *m, const gsp_keypair *key,
		 const admission *adm, const gsp_daemon_config *cfg,
		 const char *listen_bound, char *err, size_t err_len)
{
	gsp_member_endpoint ep[GSP_MAX_ADVERTISE];
	size_t n_ep = 0;
	struct timespec ts;

	memset(c, 0, sizeof(*c));
	c->probe_synced = UINT64_MAX;
	if (!cfg->cluster.have_authority || !cfg->n_seeds)
		return 0;
	for (size_t i = 0; i < cfg->cluster.n_advertise; i++)
		if (cluster__endpoint_of_text(cfg->cluster.advertise[i], &ep[n_ep]) == 0)
			n_ep++;
	if (!cfg->cluster.n_advertise) {
		int r = cluster__endpoint_of_text(listen_bound, &ep[0]);
		if (r == 0)
			n_ep = 1;
		else if (r == -EADDRNOTAVAIL)
			n_ep = cluster__host_endpoints(listen_bound, ep, GSP_MAX_ADVERTISE);
	}
	if (!n_ep) {
		snprintf(err, err_len, "membership needs an address others reach this node "
			 "at: ListenAddress %s is a wildcard and this host has no address "
			 "but loopback; set [Cluster] Advertise", listen_bound);
		return -EINVAL;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	membership_config mc = {
		.topology = cfg->topology,
		.max_members = cfg->cluster.max_members,
		.authority = adm->authority,
		.revoked = &adm->revoked,
		.cert = &adm->own,
		.endpoints = ep,
		.n_endpoints = n_ep,
		/* Milliseconds of the wall clock: a restart's is higher (a
		 * clock set back is refuted, membership.h). */
		.incarnation = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000,
	};
	int rc = membership_init(&c->ms, key, &mc, &cluster_ms_ops, c, uv_now(loop),
				 unix_now(), err, err_len);
	if (rc)
		return rc;
	c->seed_addr = calloc(SEEDS_MAX_TOTAL, sizeof(*c->seed_addr));
	if (!c->seed_addr || copy_static(c, cfg) != 0) {
		cluster_free(c);
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	if ((rc = probe_start(&c->probe, loop, key, listen_bound, c->ms.self.incarnation,
			      &cluster_probe_ops, c, err, err_len)) != 0) {
		cluster_free(c);
		return rc;
	}
	c->on = true;
	c->loop = loop;
	c->mesh = m;
	c->adm = adm;
	uv_timer_init(loop, &c->run);
	uv_timer_init(loop, &c->tick);
	c->run.data = c->tick.data = c;
	c->timers_ready = true;
	c->next_reseed_ms = uv_now(loop) + CLUSTER_RESEED_MS;
	mesh_set_cluster(m, &cluster_mesh_ops, c);
	peers_admit_members_only(&m->peers);
	uv_timer_start(&c->tick, on_tick, 0, CLUSTER_TICK_MS);
	gsp_info("cluster: a member (incarnation %llu), %s graph, at most %u members",
		 (unsigned long long)c->ms.self.incarnation, gsp_topology_name(cfg->topology),
		 cfg->cluster.max_members);
	return 0;
}

void cluster_seeds(cluster *c, const seed_addr *list, size_t n)
{
	if (!c->on)
		return;
	c->n_seed = 0;
	for (size_t i = 0; i < n && i < SEEDS_MAX_TOTAL; i++)
		cluster__endpoint_text(list[i].family, list[i].addr, list[i].port,
			      c->seed_addr[c->n_seed++]);
	apply(c);
}

void cluster_reload(cluster *c, const gsp_daemon_config *cfg)
{
	if (!c->on)
		return;
	if (copy_static(c, cfg) != 0)
		gsp_err("reload: out of memory: the [Peer] sections stay as they were");
	membership_set_revoked(&c->ms, &c->adm->revoked);
	free(c->applied);
	c->applied = NULL;    /* applied again, whatever it was */
	apply(c);
	kick(c);
}

/* Our record says LEFT, and goes to every session now. */
static int say_left(cluster *c)
{
	int err = membership_leave(&c->ms, uv_now(c->loop));
	if (err)
		return err;
	membership_run(&c->ms, uv_now(c->loop));
	gsp_info("cluster: leaving: our record says so to %zu session(s)",
		 membership_sessions(&c->ms));
	return 0;
}

void cluster_leave(cluster *c)
{
	if (!c->on || c->stopping)
		return;
	bool left = c->left;
	c->stopping = true;    /* the graph we compute now is not applied */
	if (!left && say_left(c) != 0)
		gsp_warn("cluster: cannot sign our record as left; the members' probes "
			 "will find us gone");
}

int cluster_leave_now(cluster *c)
{
	if (!c->on)
		return -EOPNOTSUPP;
	if (c->left || c->stopping)
		return -EALREADY;
	int err = say_left(c);
	if (err)
		return err;
	c->left = true;
	free(c->applied);
	c->applied = NULL;    /* the [Peer] sections alone, applied now */
	apply(c);
	return 0;
}

void cluster_close(cluster *c)
{
	if (!c->timers_ready)
		return;
	c->stopping = true;
	probe_close(&c->probe);
	uv_timer_stop(&c->run);
	uv_timer_stop(&c->tick);
	uv_close((uv_handle_t *)&c->run, NULL);
	uv_close((uv_handle_t *)&c->tick, NULL);
	c->timers_ready = false;
}

void cluster_free(cluster *c)
{
	if (c->on || c->ms.nb)
		membership_free(&c->ms);
	probe_free(&c->probe);
	free(c->static_peers);
	free(c->seed_addr);
	free(c->applied);
	c->static_peers = NULL;
	c->seed_addr = NULL;
	c->applied = NULL;
	c->on = false;
}
