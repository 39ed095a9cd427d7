/* trainerlink: the trainer tools' connection to gossipd (see trainerlink.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto.h"             /* this client's protocol version */
#include "trainerlink.h"

int trainer_link_connect(const char *prog, const char *socket, const char *name,
			 gsp_client **ret)
{
	const gsp_client_options opts = {.client_name = name};
	gsp_client_failure f;
	int err = gsp_client_connect_opts(socket, &opts, ret, &f);

	if (err == -ENOENT || err == -ECONNREFUSED)
		fprintf(stderr, "%s: gossipd is not running: cannot connect "
			"to %s (%s)\n", prog, socket, gsp_strerror(err));
	else if (err < 0 && f.stage == GSP_CLIENT_VERSION)
		fprintf(stderr, "%s: gossipd at %s speaks another protocol "
			"version (%u.%u; this client speaks %u.%u)\n", prog,
			socket, GSP_PROTO_MAJOR(f.version),
			GSP_PROTO_MINOR(f.version), GSP_PROTO_VERSION_MAJOR,
			GSP_PROTO_VERSION_MINOR);
	else if (err == -EPROTONOSUPPORT)
		fprintf(stderr, "%s: gossipd at %s refused this client's "
			"protocol version %u.%u: %s\n", prog, socket,
			GSP_PROTO_VERSION_MAJOR, GSP_PROTO_VERSION_MINOR, f.text);
	else if (err < 0)
		fprintf(stderr, "%s: cannot connect to gossipd at %s: %s\n",
			prog, socket, gsp_strerror(err));
	return err;
}

int trainer_link_fail(const char *prog, gsp_client *c, const char *what,
		      int err)
{
	const char *text = gsp_client_last_error(c);

	if (err == -ECONNRESET || err == -EPIPE)
		fprintf(stderr, "%s: %s: gossipd closed the connection (%s)\n",
			prog, what, gsp_strerror(err));
	else if (*text)
		fprintf(stderr, "%s: %s refused by gossipd: %s (%s)\n", prog,
			what, text, gsp_strerror(err));
	else
		fprintf(stderr, "%s: %s: %s\n", prog, what, gsp_strerror(err));
	return 1;
}

static unsigned count(const char *json, const char *needle)
{
	unsigned n = 0;
	for (const char *p = json; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

int trainer_link_wait_edges(const char *prog, gsp_client *c, unsigned n,
			    unsigned timeout_s)
{
	unsigned configured = 0, up = 0;

	for (unsigned tries = 0; tries < timeout_s * 100; tries++) {
		char *json;
		int err = gsp_client_status(c, &json);
		if (err < 0) {
			trainer_link_fail(prog, c, "status", err);
			return -1;
		}
		configured = count(json, "\"peer\":");
		up = count(json, "\"state\":\"up\"");
		free(json);
		if (up >= (n ? n : configured))
			return 0;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "%s: only %u of %u edges came up within %u s (are the "
		"neighbours' gossipd and trainers running?)\n", prog, up,
		n ? n : configured, timeout_s);
	return -1;
}

int trainer_link_dump(const char *prog, const char *path, const float *x,
		      size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(x, sizeof(float), n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "%s: --dump %s: %s\n", prog, path,
			strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	return 0;
}
