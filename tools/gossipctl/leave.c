/* gossipctl leave: the daemon leaves its cluster and goes on running
 * (see subcommands.h). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ipc.h"
#include "status_doc.h"
#include "subcommands.h"

/* How long leave waits for the edges' generations to end. */
#define LEAVE_WAIT_SECONDS 60

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s leave [--socket PATH] [--no-wait]\n\n"
		"The daemon leaves the cluster it is a member of, and goes on running:\n"
		"its member record says it left, so the members drop it from their\n"
		"graphs at once (their rings close over it), and its edges with them end\n"
		"their generations exactly, at the same round at both ends, while the\n"
		"links are still up.  Its [Peer] sections stay; no seed is dialed again.\n"
		"A trainer attached goes on stepping, alone.  To rejoin, restart gossipd\n"
		"(a newer incarnation).  Waits until no edge is leaving (at most %d s)\n"
		"and prints how long that took; --no-wait returns once the daemon said\n"
		"it leaves.  Exits 1 with the daemon's reason on a node that is not a\n"
		"member or has left already.\n\n"
		"%s",
		PROG_NAME, LEAVE_WAIT_SECONDS, GCTL_SOCKET_HELP);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Edges still leaving, or -1 if the status did not load. */
static int leaving(const char *socket)
{
	gsp_sdoc st;
	int n = 0;
	if (gctl_status_load(socket, &st) < 0)
		return -1;
	for (size_t i = 0; i < st.n_edges; i++)
		n += st.edges[i].state && !strcmp(st.edges[i].state, "leaving");
	gsp_sdoc_clear(&st);
	return n;
}

int leave_main(int argc, const char *argv[])
{
	const char *socket_override;
	bool no_wait = false;
	int done = gctl_status_args(argc, argv, "leave", usage, "--no-wait", &no_wait,
				    &socket_override);
	if (done >= 0)
		return done;
	double t0 = now_s();
	if (gctl_leave(gctl_socket_path(socket_override)) < 0)
		return GCTL_EXIT_FAILURE;
	if (no_wait) {
		printf("leaving the cluster\n");
		return GCTL_EXIT_OK;
	}
	for (;;) {
		int n = leaving(socket_override);
		if (n < 0)
			return GCTL_EXIT_FAILURE;
		if (n == 0)
			break;
		if (now_s() - t0 > LEAVE_WAIT_SECONDS) {
			fprintf(stderr, "%s: leave: %d edge(s) still leaving after %d s\n",
				PROG_NAME, n, LEAVE_WAIT_SECONDS);
			return GCTL_EXIT_FAILURE;
		}
		nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
	}
	printf("left the cluster: its edges ended in %.2f s\n", now_s() - t0);
	return GCTL_EXIT_OK;
}
