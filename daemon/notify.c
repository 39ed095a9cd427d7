/* notify: non-blocking sd_notify (notify.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"

int notify_send(const char *text)
{
	static bool warned;
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !path[0])
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(path);
	if (len >= sizeof(sa.sun_path) || (path[0] != '/' && path[0] != '@'))
		return -EINVAL;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';      /* abstract namespace */
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	ssize_t n = sendto(fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL,
			   (struct sockaddr *)&sa, sl);
	int err = n < 0 ? -errno : 0;
	close(fd);
	if (err == -EWOULDBLOCK)
		err = -EAGAIN;
	if (err && !warned) {
		warned = true;
		gsp_warn("cannot notify the service manager (%s): %s", path,
			 strerror(-err));
	}
	return err;
}
