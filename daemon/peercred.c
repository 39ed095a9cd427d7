/* peercred: local API access check (peercred.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peercred.h"

/* Whether process pid has gid among its supplementary groups
 * (/proc/PID/status, "Groups:"). */
static bool in_groups(pid_t pid, gid_t gid)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	FILE *f = fopen(path, "re");
	bool found = false;
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Groups:", 7) != 0)
			continue;
		char *p = line + 7, *end;
		for (;;) {
			errno = 0;
			unsigned long g = strtoul(p, &end, 10);
			if (end == p || errno)
				break;
			if ((gid_t)g == gid)
				found = true;
			p = end;
		}
		break;
	}
	fclose(f);
	return found;
}

int peercred_check(int fd, gid_t socket_gid, char *why, size_t why_len)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) {
		int e = errno;
		snprintf(why, why_len, "SO_PEERCRED: %s", strerror(e));
		return -e;
	}
	if (cr.uid == 0 || cr.uid == geteuid() || cr.gid == socket_gid ||
	    in_groups(cr.pid, socket_gid))
		return 0;
	snprintf(why, why_len, "uid %u gid %u (pid %ld) is not root, this daemon's "
		 "user or in the socket's group %u", (unsigned)cr.uid,
		 (unsigned)cr.gid, (long)cr.pid, (unsigned)socket_gid);
	return -EACCES;
}
