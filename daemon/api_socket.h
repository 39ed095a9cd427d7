/*
 * api: making sure the API socket's path is free before it is bound.  A
 * stale socket (its daemon died) is removed; a live one, or anything
 * that is not a socket, is left alone and refused.
 */
#ifndef GOSSIPD_API_SOCKET_H
#define GOSSIPD_API_SOCKET_H

#include <sys/un.h>

/* 0 when path is free (or was a stale socket, now removed), else a
 * negative errno with the reason logged. */
int api_socket_free(const char *path, const struct sockaddr_un *sa);

#endif
