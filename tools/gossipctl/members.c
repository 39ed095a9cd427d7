/* gossipctl members: the cluster's members as this node sees them, and
 * which of them it computed as its neighbours (see subcommands.h). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ipc.h"
#include "status_doc.h"
#include "subcommands.h"
#include "table.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s members [--socket PATH]\n\n"
		"Shows the members of the cluster this node belongs to (a node whose\n"
		"[Cluster] has an Authority and seeds; gossipd.conf(5)), one line each,\n"
		"in the order every member sorts them (BLAKE2b of the key): the\n"
		"public key, the certificate's name, the status its record says (alive,\n"
		"suspect, dead, left), what the failure detector's probes find (alive,\n"
		"suspect, dead; - for this node), the incarnation, the endpoint others\n"
		"dial, and whether this\n"
		"node computed it as its neighbour (yes) or it is this node (self).\n"
		"A first line gives the members in all and the neighbours.  The same\n"
		"as JSON: gossipctl status --json, its \"cluster\" object.  Exits 1\n"
		"with a message on a node that is not a member.\n\n"
		"%s",
		PROG_NAME, GCTL_SOCKET_HELP);
}

static int print_members(const gsp_sdoc *st)
{
	static const char *const headers[] = {
		"KEY", "NAME", "STATUS", "PROBE", "INCARNATION", "ENDPOINT", "NEIGHBOUR",
	};
	gctl_table t;
	int r = 0;

	printf("members:   %" PRIu64 ", %zu neighbour(s)\n\n",
	       st->members_total.set ? st->members_total.v : (uint64_t)st->n_members,
	       st->n_neighbours);
	gctl_table_init(&t, 7, headers, "llllrll");
	for (size_t i = 0; i < st->n_members && r == 0; i++) {
		const gsp_sdoc_member *m = &st->members[i];
		char inc[GCTL_CELL_MAX];
		bool self = m->key && st->public_key && !strcmp(m->key, st->public_key);
		const char *cells[] = {
			m->key ? m->key : "-", m->name && *m->name ? m->name : "-",
			m->status ? m->status : "-", m->probe ? m->probe : "-",
			gctl_fmt_uint(inc, &m->incarnation),
			m->endpoint ? m->endpoint : "-",
			self ? "self" : m->neighbour ? "yes" : "no",
		};
		r = gctl_table_add(&t, cells);
	}
	return gctl_table_finish(&t, r);
}

int members_main(int argc, const char *argv[])
{
	const char *socket_override;
	gsp_sdoc st;
	int rc = GCTL_EXIT_OK;

	int done = gctl_status_args(argc, argv, "members", usage, NULL, NULL,
				    &socket_override);
	if (done >= 0)
		return done;
	if (gctl_status_load(socket_override, &st) < 0)
		return GCTL_EXIT_FAILURE;
	if (!st.have_cluster) {
		fprintf(stderr, "%s: this gossipd is not a member of a cluster (its "
			"[Cluster] has no Authority and seeds)\n", PROG_NAME);
		rc = GCTL_EXIT_FAILURE;
	} else if (print_members(&st) < 0) {
		rc = GCTL_EXIT_FAILURE;
	}
	gsp_sdoc_clear(&st);
	return rc;
}
