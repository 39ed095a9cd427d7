/*
 * graph: the neighbours this node computes from its member table (issue
 * 36, "The graph, computed, not typed").  It owns the rule of which
 * members are in the graph and where: the members alive or suspect (a
 * suspect one still counts; dead and left ones do not, nor one the
 * failure detector found dead: members_set_detected()), and this node
 * whatever its own record says, each at its position in the table's
 * order (BLAKE2b-256 of the node key, members.h).  On those n nodes the
 * topology is libgossip's (gsp_topology_neighbours(), the graph
 * gsp_graph_new() builds), so every member that holds the same records
 * computes the same graph, and a is b's neighbour exactly when b is a's.
 *
 * Small and odd n: n = 1 (this node alone) has no neighbours; n = 2 one;
 * a torus needs n = a x b with a, b >= 2, so a torus on n < 4 or n prime
 * falls back to the ring; on n = 3 the ring is the complete graph.
 *
 * graph_diff() compares two computed sets: the neighbours added (edges to
 * start) and removed (edges to end).  membership.h computes it after
 * every change of the table.
 * Pure: no I/O, no clock.
 */
#ifndef GOSSIPD_GRAPH_H
#define GOSSIPD_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "gossip.h"
#include "members.h"

typedef struct graph_neighbour {
	uint8_t key[GSP_KEY_BYTES];
	uint8_t hash[MEMBERS_HASH_BYTES];  /* members_hash(key): the order */
	unsigned pos;                      /* its position among the n nodes */
} graph_neighbour;

/* Whether e's member is a node of the graph (above). */
bool graph_member(const members *m, const members_entry *e);

/* This node's neighbours in topo (ring, torus, complete, exponential;
 * -EINVAL otherwise) over m's graph members: ascending by position, in
 * out[0..*ret_count); *ret_n the number of nodes, *ret_self our position
 * (either may be NULL).  -ENOSPC if more than cap (n - 1 is always
 * enough), -ENOMEM; outputs written on success only.  Time O(count +
 * n x edges per node). */
int graph_neighbours(gsp_topology topo, const members *m,
		     graph_neighbour *out, size_t cap, size_t *ret_count,
		     unsigned *ret_n, unsigned *ret_self) GSP_MUST_CHECK;

/* Two neighbour sets as graph_neighbours() gives them (ascending by hash):
 * the indexes into new_set of those added, into old_set of those removed
 * (the arrays hold n_new and n_old), and their numbers. */
void graph_diff(const graph_neighbour *old_set, size_t n_old,
		const graph_neighbour *new_set, size_t n_new,
		size_t *ret_added, size_t *ret_n_added,
		size_t *ret_removed, size_t *ret_n_removed);

#endif
