/* api: the socket path before it is bound (api_socket.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_socket.h"
#include "log.h"

/* Makes sure nothing lives at path before we bind it.  A socket that
 * nobody accepts on (ECONNREFUSED: its daemon died) is removed; a socket
 * that accepts belongs to a live process and is left alone, as is
 * anything that is not a socket. */
int api_socket_free(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		gsp_err("%s exists and is not a socket; remove it or choose "
			"another Socket", path);
		return -EEXIST;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	int e = rc == 0 ? 0 : errno;
	close(fd);
	if (e == ENOENT)        /* gone meanwhile */
		return 0;
	if (e == ECONNREFUSED) {
		gsp_info("removing the stale socket %s (no process serves it)", path);
		if (unlink(path) != 0 && errno != ENOENT) {
			gsp_err("cannot remove the stale socket %s: %s", path,
				strerror(errno));
			return -errno;
		}
		return 0;
	}
	if (e == 0 || e == EAGAIN || e == EINPROGRESS) {
		/* EAGAIN: a live listener whose backlog is full. */
		gsp_err("another process is serving %s; stop it or choose another "
			"Socket", path);
		return -EADDRINUSE;
	}
	gsp_err("cannot tell whether another process serves %s (%s); "
		"leaving it alone", path, strerror(e));
	return -e;
}

/* The temporary name is path + ".<pid>" (at most 8 more bytes). */
#define TMP_SUFFIX_MAX 8

size_t api_socket_path_max(void)
{
	return sizeof(((struct sockaddr_un *)0)->sun_path) - 1 - TMP_SUFFIX_MAX;
}

/* Binds and listens under the temporary name, then links path to it:
 * path appears only once it accepts.  Bound but not yet listening, it
 * refused connections as a dead daemon's socket does, so a client
 * reported "stale socket" and a second gossipd starting on the same
 * path removed it. */
int api_socket_publish(int fd, const char *path, mode_t mode)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) > api_socket_path_max())
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.%d", path, (int)getpid());
	unlink(sa.sun_path);   /* ours from an earlier life of this pid */
	mode_t old = umask(0177);
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc != 0)
		return -errno;
	int err = 0;
	if (chmod(sa.sun_path, mode) != 0 || listen(fd, SOMAXCONN) != 0 ||
	    link(sa.sun_path, path) != 0)
		err = -errno;
	unlink(sa.sun_path);
	return err;
}
