/*
 * client-example: the smallest trainer using libgossip's client.
 * Connects to gossipd, registers a 100x100 matrix and a bias of 100,
 * fills them with random values, runs 10 gossip steps and detaches.
 *
 *	client-example [SOCKET]      (default /run/gossipd/gossipd.sock)
 */
#include <stdio.h>
#include <stdlib.h>

#include "client.h"

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/run/gossipd/gossipd.sock";
	gsp_tensor tensors[2] = {
		{.name = "weight", .ndim = 2, .shape = {100, 100}},
		{.name = "bias", .ndim = 1, .shape = {100}},
	};
	gsp_client_step_result st;
	gsp_client *c;
	float *params;
	int r;

	r = gsp_client_connect(path, "client-example", &c);
	if (r < 0) {
		fprintf(stderr, "client-example: cannot connect to gossipd at %s: %s\n",
			path, gsp_strerror(r));
		return 1;
	}
	/* The buffer is shared with the daemon: weight first, then bias. */
	r = gsp_client_register(c, tensors, 2, &params);
	if (r < 0) {
		fprintf(stderr, "client-example: register: %s (%s)\n",
			gsp_strerror(r), gsp_client_last_error(c));
		gsp_client_close(c);
		return 1;
	}
	srand(1);
	for (int i = 0; i < 100 * 100 + 100; i++)
		params[i] = (float)rand() / (float)RAND_MAX - 0.5f;

	for (int step = 0; step < 10; step++) {
		/* A real trainer runs its forward, backward and optimizer
		 * step on params here, then gossips. */
		r = gsp_client_step(c, 0, &st);
		if (r < 0) {
			fprintf(stderr, "client-example: step: %s (%s)\n",
				gsp_strerror(r), gsp_client_last_error(c));
			break;
		}
		printf("step %llu: applied %u projected %u skipped %u "
		       "staleness %u sent %llu B received %llu B\n",
		       (unsigned long long)st.step, st.edges_applied,
		       st.edges_projected, st.edges_skipped, st.max_staleness,
		       (unsigned long long)st.bytes_sent,
		       (unsigned long long)st.bytes_received);
	}
	if (r == 0)
		r = gsp_client_detach(c);
	gsp_client_close(c);
	return r < 0 ? 1 : 0;
}
