/* gossipctl's local API client (see ipc.h). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "client.h"
#include "ipc.h"
#include "proto.h"              /* gossipctl's own protocol version */
#include "subcommands.h"

const char *gctl_socket_path(const char *override)
{
	const char *env;

	if (override)
		return override;
	env = getenv(GCTL_SOCKET_ENV);
	return env && *env ? env : GCTL_DEFAULT_SOCKET;
}

int gctl_socket_option(int argc, const char *argv[], int *i, const char *sub,
		       const char **ret_path)
{
	return gctl_option(argc, argv, i, sub, "--socket", ret_path);
}

/* ---- the daemon ---------------------------------------------------------- */

static void say(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "gossipctl: PATH: <message>" on stderr. */
static void say(const char *path, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s: ", PROG_NAME, path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Reports a failed client call once; request names what was asked (HELLO
 * for the connection).  Returns -1. */
static int report(const char *path, const char *request,
		  const gsp_client_failure *f)
{
	int err = -f->code;

	switch (f->stage) {
	case GSP_CLIENT_CONNECT:
		if (f->code == -ENAMETOOLONG)
			fprintf(stderr, "%s: cannot connect to %s: the path is longer "
				"than %zu bytes\n", PROG_NAME, path,
				sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		else
			fprintf(stderr, "%s: cannot connect to %s: %s%s\n", PROG_NAME,
				path, strerror(err),
				err == ENOENT || err == ECONNREFUSED ?
				" (is gossipd running?)" : "");
		break;
	case GSP_CLIENT_IO:
		if (f->code == -ETIMEDOUT)
			say(path, "timed out waiting for gossipd after %d s",
			    GCTL_TIMEOUT_SECONDS);
		else if (f->code == -ECONNRESET || f->code == -EPIPE)
			say(path, "gossipd closed the connection");
		else
			say(path, "talking to gossipd: %s", strerror(err));
		break;
	case GSP_CLIENT_DAEMON:
		say(path, "gossipd refused %s: %s%s(%s)", request, f->text,
		    *f->text ? " " : "", gsp_strerror(f->code));
		break;
	case GSP_CLIENT_VERSION:
		say(path, "gossipd speaks local API version %u.%u, gossipctl %u.%u",
		    GSP_PROTO_MAJOR(f->version), GSP_PROTO_MINOR(f->version),
		    GSP_PROTO_VERSION_MAJOR, GSP_PROTO_VERSION_MINOR);
		break;
	case GSP_CLIENT_FRAME:
		if (f->frame_len == 0)
			say(path, "malformed reply from gossipd: empty frame");
		else
			say(path, "malformed reply from gossipd: a %lu-byte frame "
			    "(the limit is %lu)", (unsigned long)f->frame_len,
			    (unsigned long)GSP_CLIENT_MAX_FRAME);
		break;
	case GSP_CLIENT_REPLY:
		if (f->unexpected_type)
			say(path, "unexpected reply 0x%02x from gossipd to %s",
			    (unsigned)f->reply_type, request);
		else
			say(path, "malformed reply from gossipd to %s: %s", request,
			    gsp_strerror(f->code));
		break;
	default:
		say(path, "%s: %s", request, gsp_strerror(f->code));
		break;
	}
	return -1;
}

int gctl_fetch_status(const char *path, char **ret_json, size_t *ret_len)
{
	const gsp_client_options opts = {
		.client_name = "gossipctl",
		.timeout_ms = GCTL_TIMEOUT_SECONDS * 1000,
	};
	gsp_client_failure f;
	gsp_client *c;
	char *json;
	int r;

	if (gsp_client_connect_opts(path, &opts, &c, &f) < 0)
		return report(path, "HELLO", &f);
	r = gsp_client_status(c, &json);
	if (r < 0)
		r = report(path, "STATUS", gsp_client_last_failure(c));
	gsp_client_close(c);
	if (r < 0)
		return -1;
	*ret_len = strlen(json);   /* the document holds no NUL */
	*ret_json = json;
	return 0;
}

int gctl_leave(const char *path)
{
	const gsp_client_options opts = {
		.client_name = "gossipctl",
		.timeout_ms = GCTL_TIMEOUT_SECONDS * 1000,
	};
	gsp_client_failure f;
	gsp_client *c;

	if (gsp_client_connect_opts(path, &opts, &c, &f) < 0)
		return report(path, "HELLO", &f);
	int r = gsp_client_leave(c);
	if (r < 0)
		r = report(path, "LEAVE", gsp_client_last_failure(c));
	gsp_client_close(c);
	return r < 0 ? -1 : 0;
}

int gctl_status_load(const char *socket_override, gsp_sdoc *ret)
{
	const char *path = gctl_socket_path(socket_override);
	char err[256];
	size_t len;
	char *json;
	int r;

	if (gctl_fetch_status(path, &json, &len) < 0)
		return -1;
	r = gsp_sdoc_parse(json, len, ret, err, sizeof(err));
	free(json);
	if (r < 0)
		fprintf(stderr, "%s: %s: malformed status document from gossipd: %s\n",
			PROG_NAME, path, err);
	return r;
}
