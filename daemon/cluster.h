/*
 * cluster: membership on the daemon's loop (issue 36).  membership.h is
 * the pure part (records, sync, the computed neighbours); this module
 * binds it to the rest: it hears the sessions and their MEMBERS frames
 * from the mesh, sends through the peer table, runs the membership on the
 * loop's next turn after anything happened (never inside a caller), and
 * turns what it computes into the peer list the mesh applies, as a reload
 * would: the [Peer] sections, plus
 *   - the computed neighbours, each at its record's first endpoint;
 *   - the seeds' addresses, as keyless peers (their key is learned from
 *     their certificate), while this node has had no full sync, or has
 *     no session, and for SeedWindow every ReseedInterval (so that two
 *     halves of a partition find each other again);
 *   - peers admitted by their certificate that are not neighbours, for
 *     AdmitGrace after their session came up (their sync), then not.
 * Seeds and those admitted peers are linked for the member records only
 * (gsp_peer_config.members_only).  The failure detector (probe.h) probes
 * every member alive or suspect in the table; a member it finds dead
 * leaves the graph (membership_detected) until a newer record of it.
 * A node is a member when its [Cluster] has an Authority and a Seed or
 * SeedSRV (and so its Certificate); otherwise this module does nothing.
 */
#ifndef GOSSIPD_CLUSTER_H
#define GOSSIPD_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "admission.h"
#include "config.h"
#include "membership.h"
#include "mesh.h"
#include "probe.h"
#include "seeds.h"

#define CLUSTER_TICK_MS 1000
#define CLUSTER_ADMIT_GRACE_MS 3000
#define CLUSTER_RESEED_MS 30000
#define CLUSTER_SEED_WINDOW_MS 5000

typedef struct cluster {
	bool on;
	membership ms;
	probe probe;
	uv_loop_t *loop;
	mesh *mesh;
	const admission *adm;
	uv_timer_t run, tick;
	bool timers_ready;
	/* The [Peer] sections (a copy; a reload replaces it). */
	gsp_peer_config *static_peers;
	size_t n_static;
	unsigned leave_wait_ms;
	/* The seeds' addresses as resolved last. */
	char (*seed_addr)[GSP_ADDR_MAX];
	size_t n_seed;
	uint64_t seeding_until_ms;     /* seeds listed until then */
	uint64_t next_reseed_ms;
	/* When each slot's session came up (0: none). */
	uint64_t up_since[GSP_MAX_PEERS];
	/* The list applied last, to apply only a changed one. */
	gsp_peer_config *applied;
	size_t n_applied;
	/* The table's change count the detector was synced at (none yet:
	 * UINT64_MAX). */
	uint64_t probe_synced;
	bool left;                   /* left on request (cluster_leave_now) */
	bool stopping;
} cluster;

/* Off unless cfg makes this node a member (above).  On: the membership of
 * key with our certificate (adm), advertising cfg's Advertise or else
 * listen_bound (the bound ListenAddress; a wildcard: the host's addresses;
 * -EINVAL with the reason in err if it has none but loopback), hooked
 * to the mesh, probing the members from listen_bound's port (probe.h).
 * Call after peers_start. */
int cluster_init(cluster *c, uv_loop_t *loop, mesh *m, const gsp_keypair *key,
		 const admission *adm, const gsp_daemon_config *cfg,
		 const char *listen_bound, char *err, size_t err_len) GSP_MUST_CHECK;
/* The seeds resolved again (seeds_ops.changed). */
void cluster_seeds(cluster *c, const seed_addr *list, size_t n);
/* A re-read configuration: its [Peer] sections join the computed list,
 * which the mesh applies (the caller's cfg is not taken). */
void cluster_reload(cluster *c, const gsp_daemon_config *cfg);
/* We leave on purpose (LeaveOnStop, at SIGTERM): our record says LEFT
 * and goes to every session now, before the links' GOODBYE, so the
 * members drop us from their graphs at once instead of by the probes.
 * Nothing is applied to the mesh after this. */
void cluster_leave(cluster *c);
/* We leave on request, and go on running (LEAVE, gossipctl leave): our
 * record says LEFT and goes to every session, then the mesh gets the
 * [Peer] sections alone, so the edges with the members end their
 * generations exactly while the links are still up; no seed is dialed
 * and no member listed again (a restart rejoins, at a newer
 * incarnation).  0, -EOPNOTSUPP when this node is not a member, -EALREADY
 * once it left or while it stops, or a signing failure. */
int cluster_leave_now(cluster *c);
/* Stops the timers (daemon stop); closes them with cb counting down. */
void cluster_close(cluster *c);
void cluster_free(cluster *c);

#endif
