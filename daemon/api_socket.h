/*
 * api: the API socket's path.  Before binding, a stale socket (its
 * daemon died) is removed; a live one, or anything that is not a
 * socket, is left alone and refused.  The path then appears only once
 * the socket listens, so whoever finds it can connect.
 */
#ifndef GOSSIPD_API_SOCKET_H
#define GOSSIPD_API_SOCKET_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/un.h>

/* 0 when path is free (or was a stale socket, now removed), else a
 * negative errno with the reason logged. */
int api_socket_free(const char *path, const struct sockaddr_un *sa);

/* The longest path api_socket_publish accepts. */
size_t api_socket_path_max(void);

/* Binds the unbound socket fd to path with mode and listens; path is
 * created only after listen(), and never replaces anything (-EEXIST if
 * something appeared there meanwhile).  0 or a negative errno. */
int api_socket_publish(int fd, const char *path, mode_t mode);

#endif
