/* gossipctl edges: every field of every edge (see subcommands.h). */
#include <stdio.h>
#include <string.h>

#include "ipc.h"
#include "status_doc.h"
#include "subcommands.h"
#include "table.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s edges [--socket PATH]\n\n"
		"Shows one line per edge: the peer's public key and endpoint; the\n"
		"state (down, connecting, handshake, idle: the link is up but one\n"
		"end has no model registered, up: rounds flow, straggler: up, but\n"
		"STEPs go on without waiting for it; or another state a newer\n"
		"daemon adds); the generation, round and staleness (in steps);\n"
		"the rounds completed per second over the daemon's last second;\n"
		"the payload bytes sent (the engine's ROUND payloads); the wire\n"
		"bytes sent and received (every byte of the links: handshakes,\n"
		"frame headers and tags included); the frames sent and received;\n"
		"the compression ratio against exact gossip (the bytes exact\n"
		"gossip would have sent over the wire bytes sent); the round-trip\n"
		"time in milliseconds; and the norm of the last projected\n"
		"difference.  \"-\" marks a value the daemon does not know yet.\n"
		"Without edges, only the header is printed.\n\n"
		"%s",
		PROG_NAME, GCTL_SOCKET_HELP);
}

static int print_edges(const gsp_sdoc *st)
{
	static const char *const headers[] = {
		"PEER", "ENDPOINT", "STATE", "GEN", "ROUND", "STALE", "ROUNDS/S",
		"PAYLOAD_TX", "WIRE_TX", "WIRE_RX", "TX_FRAMES", "RX_FRAMES",
		"RATIO", "RTT_MS", "DIFF_NORM",
	};
	gctl_table t;
	int r = 0;

	gctl_table_init(&t, 15, headers, "lllrrrrrrrrrrrr");
	for (size_t i = 0; i < st->n_edges && r == 0; i++) {
		const gsp_sdoc_edge *e = &st->edges[i];
		char gen[GCTL_CELL_MAX], round[GCTL_CELL_MAX], stale[GCTL_CELL_MAX],
			rate[GCTL_CELL_MAX],
			pay[GCTL_CELL_MAX], txb[GCTL_CELL_MAX], rxb[GCTL_CELL_MAX],
			txf[GCTL_CELL_MAX],
			rxf[GCTL_CELL_MAX], ratio[GCTL_CELL_MAX], rtt[GCTL_CELL_MAX],
			norm[GCTL_CELL_MAX];
		const char *cells[] = {
			e->peer, e->endpoint, gsp_sdoc_edge_state(e),
			gctl_fmt_uint(gen, &e->generation),
			gctl_fmt_uint(round, &e->round),
			gctl_fmt_uint(stale, &e->staleness),
			gctl_fmt_fixed(rate, &e->rounds_per_s, 1),
			gctl_fmt_uint(pay, &e->payload_tx_bytes),
			gctl_fmt_uint(txb, &e->wire_tx_bytes),
			gctl_fmt_uint(rxb, &e->wire_rx_bytes),
			gctl_fmt_uint(txf, &e->tx_frames),
			gctl_fmt_uint(rxf, &e->rx_frames),
			gctl_fmt_ratio(ratio, e),
			gctl_fmt_fixed(rtt, &e->rtt_ms, 3),
			gctl_fmt_general(norm, &e->diff_norm, 4),
		};
		r = gctl_table_add(&t, cells);
	}
	return gctl_table_finish(&t, r);
}

int edges_main(int argc, const char *argv[])
{
	const char *socket_override;
	gsp_sdoc st;
	int rc = GCTL_EXIT_OK;

	int done = gctl_status_args(argc, argv, "edges", usage, NULL, NULL,
				    &socket_override);
	if (done >= 0)
		return done;

	if (gctl_status_load(socket_override, &st) < 0)
		return GCTL_EXIT_FAILURE;
	/* Without edges, the header alone: scripts see the same columns. */
	if (print_edges(&st) < 0)
		rc = GCTL_EXIT_FAILURE;
	gsp_sdoc_clear(&st);
	return rc;
}
