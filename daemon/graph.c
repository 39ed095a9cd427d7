/* graph: the computed neighbour set (graph.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

static bool is_self(const members *m, const members_entry *e)
{
	return !memcmp(e->hash, m->self_hash, MEMBERS_HASH_BYTES);
}

bool graph_member(const members *m, const members_entry *e)
{
	return is_self(m, e) || (!e->detected_dead && (e->rec.status == GSP_MEMBER_ALIVE ||
							e->rec.status == GSP_MEMBER_SUSPECT));
}

/* The number of graph nodes and our position: the graph's members other
 * than us, and us among them by hash (in the table or not). */
static void graph_size(const members *m, unsigned *ret_n, unsigned *ret_self)
{
	unsigned n = 1, self = 0;

	for (size_t pos = 0; pos < members_count(m); pos++) {
		const members_entry *e = members_at(m, pos);

		if (is_self(m, e) || !graph_member(m, e))
			continue;
		if (memcmp(e->hash, m->self_hash, MEMBERS_HASH_BYTES) < 0)
			self++;
		n++;
	}
	*ret_n = n;
	*ret_self = self;
}

/* The positions of our neighbours (ascending) in a new array, and their
 * number; a torus n cannot shape is a ring. */
static int positions(gsp_topology topo, unsigned n, unsigned self, size_t cap,
		     unsigned **ret_pos, size_t *ret_count)
{
	size_t want = n - 1 < cap ? n - 1 : cap;
	unsigned *pos = malloc((want ? want : 1) * sizeof(*pos));
	int r;

	if (!pos)
		return -ENOMEM;
	r = gsp_topology_neighbours(topo, n, self, pos, want, ret_count);
	if (r == -EINVAL && topo == GSP_TOPO_TORUS)
		r = gsp_topology_neighbours(GSP_TOPO_RING, n, self, pos, want,
					    ret_count);
	if (r < 0) {
		free(pos);
		return r;
	}
	*ret_pos = pos;
	return 0;
}

int graph_neighbours(gsp_topology topo, const members *m,
		     graph_neighbour *out, size_t cap, size_t *ret_count,
		     unsigned *ret_n, unsigned *ret_self)
{
	unsigned n, self, g = 0;
	unsigned *pos = NULL;
	size_t count = 0, k = 0;
	int r;

	if (topo != GSP_TOPO_RING && topo != GSP_TOPO_TORUS &&
	    topo != GSP_TOPO_COMPLETE && topo != GSP_TOPO_EXPONENTIAL)
		return -EINVAL;
	graph_size(m, &n, &self);
	if (n > 1) {
		r = positions(topo, n, self, cap, &pos, &count);
		if (r < 0)
			return r;
	}
	/* Walk the graph's nodes in order (us at self, whether the table
	 * holds our record or not), picking the positions wanted. */
	for (size_t p = 0; p < members_count(m) && k < count; p++) {
		const members_entry *e = members_at(m, p);

		if (is_self(m, e) || !graph_member(m, e))
			continue;
		if (g == self)
			g++;
		if (g == pos[k]) {
			memcpy(out[k].key, e->rec.node_key, GSP_KEY_BYTES);
			memcpy(out[k].hash, e->hash, MEMBERS_HASH_BYTES);
			out[k].pos = g;
			k++;
		}
		g++;
	}
	free(pos);
	*ret_count = count;
	if (ret_n)
		*ret_n = n;
	if (ret_self)
		*ret_self = self;
	return 0;
}

void graph_diff(const graph_neighbour *old_set, size_t n_old,
		const graph_neighbour *new_set, size_t n_new,
		size_t *ret_added, size_t *ret_n_added,
		size_t *ret_removed, size_t *ret_n_removed)
{
	size_t i = 0, j = 0, added = 0, removed = 0;

	/* Both ascending by hash: one merge walk. */
	while (i < n_old || j < n_new) {
		int c = i == n_old ? 1 : j == n_new ? -1 :
			memcmp(old_set[i].hash, new_set[j].hash, MEMBERS_HASH_BYTES);

		if (c < 0) {
			ret_removed[removed++] = i++;
		} else if (c > 0) {
			ret_added[added++] = j++;
		} else {
			i++;
			j++;
		}
	}
	*ret_n_added = added;
	*ret_n_removed = removed;
}
