/*
 * gossipctl's side of the local API: which socket to use, and the STATUS
 * document fetched with libgossip's client (client.h) over one connection
 * with a timeout.  Failures are reported on stderr here, once, so callers
 * only turn them into an exit code.
 */
#ifndef GOSSIPCTL_IPC_H
#define GOSSIPCTL_IPC_H

#include <stdbool.h>
#include <stdio.h>

#include <stddef.h>

#include "status_doc.h"

#define GCTL_DEFAULT_SOCKET "/run/gossipd/gossipd.sock"
/* The environment variable that overrides GCTL_DEFAULT_SOCKET. */
#define GCTL_SOCKET_ENV "GOSSIPD_SOCKET"
/* The --socket line of every daemon subcommand's usage. */
#define GCTL_SOCKET_HELP \
	"  --socket PATH  the daemon's socket (default: $" GCTL_SOCKET_ENV ",\n" \
	"                 else " GCTL_DEFAULT_SOCKET ")\n"
/* Seconds gossipctl waits for the daemon to accept, and on each send and
 * receive. */
#define GCTL_TIMEOUT_SECONDS 10

/* The socket to use: override if not NULL, else $GOSSIPD_SOCKET if set and
 * not empty, else GCTL_DEFAULT_SOCKET. */
const char *gctl_socket_path(const char *override);

/* If argv[*i] is "--socket PATH" or "--socket=PATH": stores PATH in
 * *ret_path, moves *i past the option and returns 1.  Returns 0 (nothing
 * touched) for any other argument, and -1 after reporting a usage error
 * (PATH missing or empty).  sub names the subcommand in messages (NULL
 * for a global option). */
int gctl_socket_option(int argc, const char *argv[], int *i, const char *sub,
		       const char **ret_path);


/* Connects to the daemon at path, says HELLO as "gossipctl" and sends
 * STATUS.  On success returns 0 and *ret_json is a malloc'd copy of the
 * document with a NUL appended (*ret_len excludes the NUL; the document
 * itself holds no NUL).  On failure reports why and returns -1. */
int gctl_fetch_status(const char *path, char **ret_json, size_t *ret_len);

/* Asks the daemon at path to leave its cluster (LEAVE).  0, or -1 after
 * reporting why. */
int gctl_leave(const char *path);

/* Fetches the document from the daemon at the given socket (NULL: the
 * default, see gctl_socket_path) and parses it (status_doc.h).  Reports
 * failures on stderr and returns -1. */
int gctl_status_load(const char *socket_override, gsp_sdoc *ret);

#endif
