/* api: the socket path before it is bound (api_socket.h). */
#include <errno.h>
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

