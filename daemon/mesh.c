/* mesh: peers to edges and back (mesh.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "file.h"

#include "log.h"
#include "mesh.h"

peer *mesh_peer_of(mesh *m, const edge *e)
{
	return &m->peers.peer[edge_index(e)];
}

edge *mesh_edge_of(mesh *m, const peer *p)
{
	return edges_at(&m->edges, p->index);
}

/* ---- peers to edges --------------------------------------------------- */

/* The record slot i took back, if it has not met its peer since. */
static edge_record *orphan_taken(mesh *m, const peer *p, size_t *ret_k)
{
	for (size_t k = 0; k < m->n_orphans; k++)
		if (m->orphan_at[k] == p->index &&
		    !memcmp(m->orphans[k].key, p->cfg.public_key, GSP_KEY_BYTES)) {
			*ret_k = k;
			return &m->orphans[k];
		}
	return NULL;
}

static void on_session_up(void *ctx, peer *p)
{
	mesh *m = ctx;
	size_t k;
	if (orphan_taken(m, p, &k))
		m->orphan_at[k] = ORPHAN_SPENT;
	edge_session_up(mesh_edge_of(m, p), link_edge_seed(p->session));
	if (m->cluster)
		m->cluster->session_up(m->cluster_ctx, p);
}

/* The edge's frames to the edge; MEMBERS to the cluster above, or
 * dropped without one (a peer whose cluster has membership, ours not:
 * the edge works all the same). */
static int on_frame(void *ctx, peer *p, const uint8_t *pt, size_t len)
{
	mesh *m = ctx;
	if (len && pt[0] == GSP_MSG_MEMBERS)
		return m->cluster ? m->cluster->frame(m->cluster_ctx, p, pt, len) : 0;
	if (len && pt[0] == GSP_MSG_FETCH)
		return m->fetch ? m->fetch->frame(m->fetch_ctx, p, pt, len) : 0;
	return edge_frame(mesh_edge_of(m, p), pt, len);
}

static void on_session_down(void *ctx, peer *p)
{
	mesh *m = ctx;
	edge_session_down(mesh_edge_of(m, p));
	if (m->cluster)
		m->cluster->session_down(m->cluster_ctx, p);
	if (m->fetch)
		m->fetch->session_down(m->fetch_ctx, p);
}

void mesh_set_cluster(mesh *m, const mesh_cluster_ops *ops, void *ctx)
{
	m->cluster = ops;
	m->cluster_ctx = ctx;
}

void mesh_set_fetch(mesh *m, const mesh_cluster_ops *ops, void *ctx)
{
	m->fetch = ops;
	m->fetch_ctx = ctx;
}

/* A new peer in a new slot gets a new edge; in a gone peer's slot, that
 * peer's edge starts over (on_reusable allowed it). */
static int on_added(void *ctx, peer *p)
{
	mesh *m = ctx;
	/* A reused slot's record of its former peer, if any, went with it. */
	for (size_t k = 0; k < m->n_orphans; k++)
		if (m->orphan_at[k] == p->index)
			m->orphan_at[k] = ORPHAN_SPENT;
	if (p->index < m->edges.n)
		edge_reuse(mesh_edge_of(m, p), &p->cfg, p->name, peers_we_are_lo(p));
	else if (!edge_add(&m->edges, &p->cfg, p->name, peers_we_are_lo(p)))
		return -ENOMEM;
	/* A peer not in the peer table when the records were read (admitted
	 * by its certificate, a keyless one that learned its key, a [Peer] a
	 * reload added, a neighbour the cluster's graph added): its edge's
	 * record of before a restart, if the file had one.  (The graph's
	 * neighbours come as [Peer]s: a restarted member whose neighbours
	 * were added so lost their generations, and the average moved.) */
	for (size_t k = 0; k < m->n_orphans; k++) {
		uint32_t at = m->orphan_at[k];
		if (memcmp(m->orphans[k].key, p->cfg.public_key, GSP_KEY_BYTES) ||
		    !(at == ORPHAN_WAITING || (at < m->peers.n && at != p->index &&
					       !peers_listed(&m->peers.peer[at]) &&
					       !peers_leaving(&m->peers.peer[at]))))
			continue;
		/* Taken back by a slot that went before its peer met it (a
		 * reload removed it): the record moves to this one. */
		if (at != ORPHAN_WAITING)
			edge_unrestore(edges_at(&m->edges, at));
		m->orphan_at[k] = (uint32_t)p->index;
		return edge_restore(mesh_edge_of(m, p), &m->orphans[k]);
	}
	return 0;
}

/* A gone peer's slot takes another peer only once its edge holds nothing
 * of it: the generation ended at both ends and its last update landed. */
static bool on_reusable(void *ctx, const peer *p)
{
	mesh *m = ctx;
	return edge_reusable(edges_at_const(&m->edges, p->index));
}

/* The edge's generation ends first, at the same round at both ends:
 * until then the peer is leaving, not gone.  A generation of before a
 * restart that waits for the model (GEN_RESUMING) ends at its count:
 * none of it runs here, and a gone slot must not take it up at REGISTER
 * (a DRAIN would wait for it for ever). */
static bool on_removed(void *ctx, peer *p)
{
	edge *e = mesh_edge_of(ctx, p);
	if (!edge_end_begin(e, END_REMOVED))
		return false;
	edge_resume_cancel(e);
	return true;
}

/* LeaveWait passed: the edge ends without the peer's answer (at once,
 * or after a step off the loop or a write it waits for). */
static void on_leave_expired(void *ctx, peer *p)
{
	if (edge_end_alone(mesh_edge_of(ctx, p)))
		peers_leave_done(p);
}

static const peers_ops mesh_peers_ops = {
	.session_up = on_session_up,
	.frame = on_frame,
	.session_down = on_session_down,
	.added = on_added,
	.removed = on_removed,
	.leave_expired = on_leave_expired,
	.reusable = on_reusable,
};

/* ---- edges to peers --------------------------------------------------- */

static int edge_send(void *ctx, edge *e, const uint8_t *pt, size_t len)
{
	return peers_send(mesh_peer_of(ctx, e), pt, len);
}

static void edge_close(void *ctx, edge *e, uint16_t reason, const char *text)
{
	peers_close(mesh_peer_of(ctx, e), reason, text);
}

static void edge_error(void *ctx, edge *e, const char *text)
{
	peers_error(mesh_peer_of(ctx, e), "%s", text);
}

static void edge_accepted(void *ctx, edge *e)
{
	peers_session_ok(mesh_peer_of(ctx, e));
}

static void edge_max_frame(void *ctx, edge *e, uint32_t max_body)
{
	peer *p = mesh_peer_of(ctx, e);
	if (p->session)
		link_set_max_frame(p->session, max_body);
}

static void edge_changed(void *ctx)
{
	mesh *m = ctx;
	if (m->changed)
		m->changed(m->changed_ctx);
}

static uint16_t edge_degree(void *ctx)
{
	mesh *m = ctx;
	return peers_degree(&m->peers);
}

/* An ending we asked for is over: a leaving peer goes now; one added
 * again meanwhile gets a new session, for a new generation. */
static void edge_ended(void *ctx, edge *e, edge_end_why why)
{
	peer *p = mesh_peer_of(ctx, e);
	if (why == END_DETACH)
		return;   /* the model goes, and every session with it */
	if (peers_leaving(p))
		peers_leave_done(p);
	else if (peers_listed(p) && p->session)
		peers_close(p, GSP_BYE_MODEL_CHANGED, "edge generation ended; reconnect");
}

static const edge_ops mesh_edge_ops = {
	.send = edge_send,
	.close = edge_close,
	.error = edge_error,
	.accepted = edge_accepted,
	.set_max_frame = edge_max_frame,
	.changed = edge_changed,
	.degree = edge_degree,
	.ended = edge_ended,
};

int mesh_init(mesh *m, uv_loop_t *loop, const gsp_keypair *key, counters *c,
	      const gsp_daemon_config *cfg, char *err, size_t err_len)
{
	memset(m, 0, sizeof(*m));
	slotfile_init(&m->records);
	m->sync_records = cfg->sync_records;
	int rc = peers_init(&m->peers, loop, key, c, cfg, &mesh_peers_ops, m, err,
			    err_len);
	if (!rc)
		rc = edge_set_init(&m->edges, &mesh_edge_ops, m, c);
	if (rc) {
		if (rc == -ENOMEM)
			snprintf(err, err_len, "out of memory");
		return rc;
	}
	edges_sim_seed(&m->edges, cfg->sim_seed_set, cfg->sim_seed, cfg->index);
	edges_configure(&m->edges, cfg->nodes > 1 ? cfg->nodes - 1 : GSP_MAX_PEERS,
			cfg->max_round_change);
	if (edges_set_schedule(&m->edges, cfg->avg_steps, cfg->avg_n_steps,
			       cfg->avg_matching ? cfg->nodes : 0,
			       cfg->index < 0 ? 0 : (unsigned)cfg->index) != 0) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->peers.n; i++) {
		peer *p = &m->peers.peer[i];
		if (!edge_add(&m->edges, &p->cfg, p->name, peers_we_are_lo(p))) {
			snprintf(err, err_len, "out of memory");
			return -ENOMEM;
		}
	}
	return 0;
}

static void orphans_free(mesh *m)
{
	free(m->orphans);
	free(m->orphan_at);
	m->orphan_at = NULL;
	free(m->orphan_buf);
	m->orphans = NULL;
	m->orphan_buf = NULL;
	m->n_orphans = 0;
}

void mesh_free(mesh *m)
{
	orphans_free(m);
	slotfile_close(&m->records);
	edge_set_free(&m->edges);
	peers_free(&m->peers);
	if (m->has_pending)
		gsp_daemon_config_clear(&m->pending);
	m->has_pending = false;
}

void mesh_set_changed(mesh *m, void (*changed)(void *ctx), void *ctx)
{
	m->changed = changed;
	m->changed_ctx = ctx;
}

void mesh_reload(mesh *m, gsp_daemon_config *cfg)
{
	if (m->has_pending)
		gsp_daemon_config_clear(&m->pending);
	m->pending = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	m->has_pending = true;
	if (m->edges.busy)
		gsp_info("reload: a step is running; the peers change after it");
	else
		mesh_idle(m);
}

void mesh_idle(mesh *m)
{
	if (!m->has_pending || m->edges.busy)
		return;
	m->has_pending = false;
	peers_update(&m->peers, &m->pending);
	gsp_daemon_config_clear(&m->pending);
}

/* ---- the edges' records ----------------------------------------------- */

/* The single file of before the slots is older than what they hold. */
static void remove_legacy(mesh *m)
{
	if (unlink(m->state_path) != 0 && errno != ENOENT)
		gsp_warn("cannot remove the old edges' records %s: %s", m->state_path,
			 strerror(errno));
	m->state_legacy = false;
}

int mesh_set_state_file(mesh *m, const char *path)
{
	uint8_t *buf;
	size_t len;
	slotfile_close(&m->records);
	int rc = slotfile_open(&m->records, path);
	m->records.sync = m->sync_records;
	if (!rc)
		rc = slotfile_read(&m->records, EDGESTATE_FILE_MAX, &buf, &len);
	bool slots = rc == 0;
	if (rc == -ENOENT)      /* the single file of before the slots */
		rc = file_read(path, EDGESTATE_FILE_MAX, &buf, &len);
	if (rc == -ENOENT)
		rc = 0, buf = NULL, len = 0;
	if (rc)
		return rc;
	bool legacy = !slots && buf;
	edge_record *r = buf ? calloc(EDGESTATE_MAX, sizeof(*r)) : NULL;
	uint64_t writes = 0;
	edge_owner owner = {0};
	int n = buf ? (r ? edgestate_parse(buf, len, r, &writes, &owner) : -ENOMEM) : 0;
	if (buf && n >= 0)
		edges_records_found(&m->edges, writes, &owner);
	size_t orphans = 0;
	for (int k = 0; !rc && k < n; k++) {
		bool slot = false;
		for (size_t i = 0; !rc && i < m->peers.n; i++)
			/* A keyless [Peer]'s key is all zero until learned:
			 * no record is its. */
			if (peers_key_known(&m->peers.peer[i]) &&
			    !memcmp(m->peers.peer[i].cfg.public_key, r[k].key, GSP_KEY_BYTES)) {
				rc = edge_restore(edges_at(&m->edges, i), &r[k]);
				slot = true;
			}
		if (!slot && !sodium_is_zero(r[k].key, GSP_KEY_BYTES))
			r[orphans++] = r[k];
	}
	orphans_free(m);
	uint32_t *at = !rc && orphans ? malloc(orphans * sizeof(*at)) : NULL;
	if (!rc && orphans && !at)
		rc = -ENOMEM;
	if (!rc && orphans) {
		for (size_t k = 0; k < orphans; k++)
			at[k] = ORPHAN_WAITING;
		m->orphans = r;
		m->orphan_at = at;
		m->n_orphans = orphans;
		m->orphan_buf = buf;
		r = NULL;
		buf = NULL;
	}
	free(r);
	free(buf);
	if (n < 0)
		return n;
	snprintf(m->state_path, sizeof(m->state_path), "%s", path);
	m->state_legacy = legacy;
	if (slots)
		remove_legacy(m);
	return rc;
}

bool mesh_resumable(const mesh *m)
{
	return m->state_path[0] && !m->state_failed && !m->state_dropped &&
	       edges_resumable(&m->edges);
}

void mesh_records_stop(mesh *m)
{
	m->state_path[0] = 0;
}

void mesh_save_records(mesh *m)
{
	if (!m->state_path[0])
		return;
	edge_set *s = &m->edges;
	edge_record *r = calloc(s->n + m->n_orphans + 1, sizeof(*r));
	int err = r ? 0 : -ENOMEM;
	size_t total = 0, state = 0, n = 0;
	for (size_t i = 0; !err && i < s->n; i++) {
		const peer *p = &m->peers.peer[i];
		edge_record_of(edges_at(s, i), &r[n]);
		memcpy(r[n].key, p->cfg.public_key, GSP_KEY_BYTES);
		/* A gone slot that holds nothing: no record (its key's record
		 * may be waiting below). */
		if (peers_listed(p) || peers_leaving(p) || !edgestate_record_empty(&r[n]))
			n++;
	}
	/* The records still waiting for their key's slot (unless a slot
	 * holds a record of that key). */
	for (size_t k = 0; !err && k < m->n_orphans && n < EDGESTATE_MAX; k++) {
		bool slot = false;
		for (size_t i = 0; i < n; i++)
			slot |= !memcmp(r[i].key, m->orphans[k].key, GSP_KEY_BYTES) &&
				!edgestate_record_empty(&r[i]);
		if (m->orphan_at[k] == ORPHAN_WAITING && !slot)
			r[n++] = m->orphans[k];
	}
	for (size_t i = 0; !err && i < n; i++) {
		total += r[i].msg_len;
		state += (size_t)r[i].engine_len + r[i].kept_len[0] + r[i].kept_len[1];
	}
	/* A file the next start could not read keeps nothing: past the cap,
	 * the generations' state goes (a restart then ends them at the
	 * counts, as without it), and then the messages (a peer one round
	 * behind then cannot complete it, and counts it unreconciled). */
	m->state_dropped = r && total + state > EDGESTATE_FILE_MAX / 2;
	for (size_t i = 0; r && total + state > EDGESTATE_FILE_MAX / 2 && i < n; i++) {
		r[i].engine = r[i].kept[0] = r[i].kept[1] = NULL;
		r[i].engine_len = r[i].kept_len[0] = r[i].kept_len[1] = 0;
	}
	for (size_t i = 0; r && total > EDGESTATE_FILE_MAX / 2 && i < n; i++) {
		r[i].msg = NULL;
		r[i].msg_len = 0;
	}
	if (!err)
		err = edgestate_save(&m->records, r, n, s->writes, &s->owner);
	if (!err)
		s->counters->records_saved++;
	if (!err && m->state_legacy)
		remove_legacy(m);
	free(r);
	edges_records_saved(s);
	if (err && !m->state_failed)
		gsp_err("cannot save the edges' records to %s: %s (a restart may land "
			"a round at one end only)", m->state_path, gsp_strerror(err));
	m->state_failed = err != 0;
}
