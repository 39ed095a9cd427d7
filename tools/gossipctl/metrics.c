/*
 * gossipctl metrics: the status document in the Prometheus text exposition
 * format (version 0.0.4), for a textfile collector or a scrape wrapper.
 * The text is libgossip's prom_text.h, the writer gossipd's metrics
 * listener (MetricsListen) serves too.
 */
#include <stdio.h>

#include "ipc.h"
#include "prom_text.h"
#include "subcommands.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s metrics [--socket PATH]\n\n"
		"Prints the daemon's status in the Prometheus text format: the\n"
		"daemon's identity, its model, every counter as gossipd_<name>_total,\n"
		"and per edge (label peer=\"<public key>\", and name=\"<Name>\" for a\n"
		"[Peer] with a Name) the state, generation,\n"
		"round, staleness, rounds completed, resyncs, payload bytes sent,\n"
		"wire bytes and frames each way, compression ratio against exact\n"
		"gossip, RTT in seconds and last difference norm.  gossipd serves\n"
		"the same text over HTTP when its config sets MetricsListen.\n\n"
		"%s",
		PROG_NAME, GCTL_SOCKET_HELP);
}

int metrics_main(int argc, const char *argv[])
{
	const char *socket_override;
	gsp_textbuf text = GSP_TEXTBUF_INIT;
	gsp_sdoc st;
	int rc = GCTL_EXIT_OK;

	int done = gctl_status_args(argc, argv, "metrics", usage, NULL, NULL,
				    &socket_override);
	if (done >= 0)
		return done;

	if (gctl_status_load(socket_override, &st) < 0)
		return GCTL_EXIT_FAILURE;
	if (gsp_prom_write(&st, &text) < 0) {
		fprintf(stderr, "%s: out of memory\n", PROG_NAME);
		rc = GCTL_EXIT_FAILURE;
	} else if (fwrite(text.p, 1, text.len, stdout) != text.len) {
		rc = GCTL_EXIT_FAILURE;
	}
	gsp_textbuf_free(&text);
	gsp_sdoc_clear(&st);
	return rc;
}
