/* client_undo: undoing a killed daemon's write (client_undo.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "client_undo.h"
#include "proto.h"

static gsp_undo_header *header_of(void *buf, uint64_t n_floats)
{
	return (gsp_undo_header *)((uint8_t *)buf + gsp_undo_offset(n_floats));
}

void gsp_undo_init(void *buf, uint64_t n_floats)
{
	memcpy(header_of(buf, n_floats)->magic, GSP_UNDO_MAGIC, sizeof(GSP_UNDO_MAGIC) - 1);
}

int gsp_undo_pidfd(int sock)
{
#ifdef SYS_pidfd_open
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0)
		return -1;
	int fd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
	return fd < 0 ? -1 : fd;
#else
	(void)sock;
	return -1;
#endif
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint32_t state_of(const gsp_undo_header *h)
{
	return __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);
}

int gsp_undo_recover(void *buf, uint64_t n_floats, int pidfd, int64_t wait_ms)
{
	gsp_undo_header *h = header_of(buf, n_floats);
	if (state_of(h) != GSP_UNDO_WRITING)
		return 0;
	if (pidfd < 0)
		return -ESRCH;
	/* A live daemon finishes its write (the state goes back to IDLE);
	 * only one that exited leaves it marked. */
	int64_t end = now_ms() + wait_ms;
	for (;;) {
		struct pollfd p = {.fd = pidfd, .events = POLLIN};
		int64_t left = end - now_ms();
		int r = poll(&p, 1, left < 10 ? (left > 0 ? (int)left : 0) : 10);
		if (state_of(h) != GSP_UNDO_WRITING)
			return 0;
		if (r > 0)
			break;                   /* the daemon is gone */
		if (r < 0 && errno != EINTR)
			return -errno;
		if (left <= 0)
			return -ETIMEDOUT;
	}
	float *x = buf, *copy = (float *)(h + 1);
	for (uint64_t i = 0; i < n_floats; i++) {
		float before = copy[i];
		copy[i] = x[i] - before;     /* what the write added */
		x[i] = before;
	}
	__atomic_store_n(&h->state, GSP_UNDO_UNDONE, __ATOMIC_RELEASE);
	return 1;
}
