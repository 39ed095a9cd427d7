/*
 * mesh: binds the peer table to the edges.  Each peer's session drives
 * the edge of the same index, its slot (session up and down, frames; a
 * slot another peer takes starts a new edge: edge_reuse), and each
 * edge's actions go out on its peer's session.  It also holds a reload
 * that comes while the engine is busy until the engine is free again, so
 * no SIGHUP is dropped.  Above it, one callback (mesh_set_changed) hears
 * that rounds moved, and the cluster (mesh_set_cluster) hears the
 * sessions and their MEMBERS frames, and the fetcher (mesh_set_fetch)
 * their FETCH frames.
 */
#ifndef GOSSIPD_MESH_H
#define GOSSIPD_MESH_H

#include "config.h"
#include "edge.h"
#include "edgestate.h"
#include "peers.h"

/* What the cluster above (membership) hears of the sessions: each
 * session's coming and going (after the edge's), and its MEMBERS frames
 * (a negative errno closes the session as malformed). */
typedef struct mesh_cluster_ops {
	void (*session_up)(void *ctx, peer *p);
	int (*frame)(void *ctx, peer *p, const uint8_t *pt, size_t len);
	void (*session_down)(void *ctx, peer *p);
} mesh_cluster_ops;

typedef struct mesh {
	peers peers;
	edge_set edges;
	void (*changed)(void *ctx);
	void *changed_ctx;
	const mesh_cluster_ops *cluster;  /* NULL: no membership */
	void *cluster_ctx;
	const mesh_cluster_ops *fetch;    /* FETCH frames (fetch.h), or NULL */
	void *fetch_ctx;
	gsp_daemon_config pending;   /* a reload waiting for the engine */
	bool has_pending;
	char state_path[GSP_PATH_MAX];  /* edgestate file ("": none) */
	slotfile records;        /* state_path.0 and .1 */
	bool sync_records;       /* SyncRecords */
	bool state_legacy;       /* state_path itself held the records */
	bool state_failed;       /* a save failed (logged once) */
	bool state_dropped;      /* the last save left out generations' state */
	/* Records of keys that had no slot at start (peers admitted by
	 * certificate, keyless [Peer]s not yet learned, neighbours the
	 * cluster's graph adds): each goes into the slot its key gets, and is
	 * kept in every save until then.  orphan_at[k]: where record k
	 * stands: ORPHAN_WAITING for its key's slot; taken back into slot i
	 * (< ORPHAN_SPENT) whose peer has not had a session since: if that
	 * slot goes (a reload removed it) and the key gets another one (a
	 * keyless seed's that learns it, say), the record moves there;
	 * ORPHAN_SPENT once the peer met the slot (the edge carries it on). */
	edge_record *orphans;
	uint32_t *orphan_at;
	size_t n_orphans;
	uint8_t *orphan_buf;     /* the read file they point into */
} mesh;

#define ORPHAN_WAITING UINT32_MAX
#define ORPHAN_SPENT (UINT32_MAX - 1)

/* The peers of cfg and their edges.  -EINVAL with the reason in err. */
int mesh_init(mesh *m, uv_loop_t *loop, const gsp_keypair *key, counters *c,
	      const gsp_daemon_config *cfg, char *err, size_t err_len);
void mesh_free(mesh *m);
void mesh_set_changed(mesh *m, void (*changed)(void *ctx), void *ctx);
/* The cluster above hears sessions and MEMBERS frames (ops stays valid). */
void mesh_set_cluster(mesh *m, const mesh_cluster_ops *ops, void *ctx);
/* The fetcher above hears FETCH frames and sessions going down (ops has
 * no session_up; NULL: none, FETCH frames are dropped). */
void mesh_set_fetch(mesh *m, const mesh_cluster_ops *ops, void *ctx);

/* Applies a re-read [Peer] list, now or, while the engine is busy, once
 * mesh_idle is called.  Takes cfg (it is cleared when applied). */
void mesh_reload(mesh *m, gsp_daemon_config *cfg);
/* The engine is free again (busy is false): a waiting reload runs. */
void mesh_idle(mesh *m);
/* The edges' records (edgestate) are kept at path (the slot files
 * path.0 and path.1): those there now are restored (a restart); without
 * them, those of the single file path that gossipd wrote before, which
 * goes once the slots hold newer ones.  0 or a negative errno. */
int mesh_set_state_file(mesh *m, const char *path);
/* Writes the edges' records to the state file (nothing without one);
 * the core (core.h: core_persist) says when. */
void mesh_save_records(mesh *m);
/* Whether a restart would continue every live generation: a state file
 * that saves, and each edge's state within the records' budget. */
bool mesh_resumable(const mesh *m);
/* A stop that keeps the generations, once the records are written a
 * last time: no more are (the teardown that follows must not end them
 * there). */
void mesh_records_stop(mesh *m);

peer *mesh_peer_of(mesh *m, const edge *e);
edge *mesh_edge_of(mesh *m, const peer *p);

#endif
