/*
 * peercred: who may use the local API.  The socket file is mode 0660, so
 * the kernel already admits only its owner and group; the daemon checks
 * again on each connection with SO_PEERCRED, in case the mode or an fd
 * was passed on: root, the daemon's own user, or a process whose
 * primary or supplementary groups include the socket's group.
 */
#ifndef GOSSIPD_PEERCRED_H
#define GOSSIPD_PEERCRED_H

#include <stddef.h>
#include <sys/types.h>

/* 0 if the peer of connected Unix socket fd may use the API, else
 * -EACCES (or the error that kept it from being checked) with the
 * peer's uid, gid and pid in why. */
int peercred_check(int fd, gid_t socket_gid, char *why, size_t why_len);

#endif
