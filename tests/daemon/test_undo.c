/* The buffer's undo section, both halves (PROTOCOL.md 5.4): the daemon's
 * copy and mark (daemon/undo.c), the client's undo after a lost
 * connection (libgossip/client_undo.c), and what the next daemon makes of
 * what it finds at REGISTER. */
#define _GNU_SOURCE
#include <check.h>
#include <stdbool.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_undo.h"
#include "undo.h"

#define N 37                       /* not a multiple of 16: the padding */

static uint8_t *buf;
static float *x;

static void setup(void)
{
	buf = calloc(1, gsp_undo_bytes(N));
	ck_assert_ptr_nonnull(buf);
	gsp_undo_init(buf, N);
	x = (float *)buf;
	for (int i = 0; i < N; i++)
		x[i] = (float)i;
}

static void teardown(void)
{
	free(buf);
}

static gsp_undo_header *header(void)
{
	return (gsp_undo_header *)(buf + gsp_undo_offset(N));
}

/* A write of the daemon's: +1.5 on every parameter. */
static void daemon_writes(undo *u, uint64_t seq)
{
	undo_begin(u, seq);
	for (int i = 0; i < N; i++)
		x[i] += 1.5f;
}

/* A fresh daemon takes the section (its records count no write) and is
 * inside write 1. */
static void attached_and_writing(undo *u)
{
	undo_found f;
	ck_assert(undo_attach(u, buf, gsp_undo_bytes(N), N, 0, &f));
	ck_assert_int_eq(f, UNDO_NOTHING);
	daemon_writes(u, 1);
}

/* Valgrind 3.19 does not know pidfd_open (ENOSYS): the client's half is
 * then left to the runs outside valgrind. */
static bool no_pidfd(void)
{
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (fd >= 0)
		close(fd);
	return fd < 0 && errno == ENOSYS;
}

/* A pidfd of a child that has exited (a killed daemon). */
static int dead_pidfd(void)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	return fd;
}

START_TEST(test_layout)
{
	ck_assert_uint_eq(gsp_undo_offset(N), 192);    /* 148 rounded up to 64 */
	ck_assert_uint_eq(gsp_undo_bytes(N), 192 + 64 + 4 * N);
	ck_assert_uint_eq(gsp_undo_offset(16), 64);
	ck_assert_uint_eq(sizeof(gsp_undo_header), GSP_UNDO_HEADER);
	ck_assert(!memcmp(header()->magic, "gsp-undo", 8));
}
END_TEST

START_TEST(test_no_section)
{
	undo u;
	undo_found f;
	/* Too small for one, or no magic: every call is a no-op. */
	ck_assert(!undo_attach(&u, buf, gsp_undo_bytes(N) - 1, N, 0, &f));
	ck_assert_int_eq(f, UNDO_NOTHING);
	header()->magic[7] ^= 1;
	ck_assert(!undo_attach(&u, buf, gsp_undo_bytes(N), N, 0, &f));
	undo_begin(&u, 1);
	undo_end(&u);
	ck_assert_uint_eq(header()->state, GSP_UNDO_IDLE);
	ck_assert(x[3] == 3.0f);
}
END_TEST

START_TEST(test_daemon_marks_and_clears)
{
	undo u;
	undo_found f;
	ck_assert(undo_attach(&u, buf, gsp_undo_bytes(N), N, 0, &f));
	ck_assert_int_eq(f, UNDO_NOTHING);
	daemon_writes(&u, 7);
	ck_assert_uint_eq(header()->state, GSP_UNDO_WRITING);
	ck_assert_uint_eq(header()->seq, 7);
	const float *copy = (const float *)(header() + 1);
	for (int i = 0; i < N; i++)
		ck_assert(copy[i] == (float)i);    /* taken before the write */
	undo_end(&u);
	ck_assert_uint_eq(header()->state, GSP_UNDO_IDLE);
	/* Nothing marked: the client has nothing to undo. */
	if (no_pidfd())
		return;
	int fd = dead_pidfd();
	ck_assert_int_eq(gsp_undo_recover(buf, N, fd, 1000), 0);
	close(fd);
	ck_assert(x[0] == 1.5f);
}
END_TEST

/* The daemon is killed inside write 4; the client undoes it; the trainer
 * steps on (+0.25); the next daemon's records count `counted` writes. */
static void killed_inside_a_write(uint64_t counted, undo_found want)
{
	undo u;
	undo_found f;
	float before[N];
	if (no_pidfd())
		return;
	memcpy(before, x, sizeof(before));
	ck_assert(undo_attach(&u, buf, gsp_undo_bytes(N), N, 3, &f));
	daemon_writes(&u, 4);
	int fd = dead_pidfd();
	ck_assert_int_eq(gsp_undo_recover(buf, N, fd, 1000), 1);
	close(fd);
	ck_assert_uint_eq(header()->state, GSP_UNDO_UNDONE);
	for (int i = 0; i < N; i++)
		ck_assert(x[i] == before[i]);       /* back as before */
	for (int i = 0; i < N; i++)
		x[i] += 0.25f;
	ck_assert(undo_attach(&u, buf, gsp_undo_bytes(N), N, counted, &f));
	ck_assert_int_eq(f, want);
	ck_assert_uint_eq(header()->state, GSP_UNDO_IDLE);
	float redo = want == UNDO_REDONE ? 1.5f : 0.0f;
	for (int i = 0; i < N; i++)
		ck_assert(x[i] == before[i] + 0.25f + redo);
}

START_TEST(test_undone_and_counted_is_redone)
{
	killed_inside_a_write(4, UNDO_REDONE);
	killed_inside_a_write(9, UNDO_REDONE);   /* again, on top */
}
END_TEST

START_TEST(test_undone_and_not_counted_stays_undone)
{
	killed_inside_a_write(3, UNDO_DROPPED);
}
END_TEST

START_TEST(test_left_marked_is_lost_unless_counted)
{
	/* A client that did not undo (an old one, or no pidfd): counted,
	 * the write was whole; not counted, it is reported. */
	undo u;
	undo_found f;
	attached_and_writing(&u);
	ck_assert_int_eq(gsp_undo_recover(buf, N, -1, 1000), -ESRCH);
	ck_assert(undo_attach(&u, buf, gsp_undo_bytes(N), N, 1, &f));
	ck_assert_int_eq(f, UNDO_NOTHING);
	daemon_writes(&u, 2);
	ck_assert(undo_attach(&u, buf, gsp_undo_bytes(N), N, 1, &f));
	ck_assert_int_eq(f, UNDO_LOST);
	ck_assert_uint_eq(header()->state, GSP_UNDO_IDLE);
	ck_assert(x[0] == 3.0f);                      /* both writes stay */
}
END_TEST

START_TEST(test_a_live_daemon_is_left_its_write)
{
	/* The daemon's process still runs (here: this one): the client waits
	 * and touches nothing, whether the write ends meanwhile or not. */
	undo u;
	attached_and_writing(&u);
	if (no_pidfd())
		return;
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(gsp_undo_recover(buf, N, fd, 30), -ETIMEDOUT);
	ck_assert_uint_eq(header()->state, GSP_UNDO_WRITING);
	ck_assert(x[0] == 1.5f);
	undo_end(&u);
	ck_assert_int_eq(gsp_undo_recover(buf, N, fd, 30), 0);
	close(fd);
	ck_assert(x[0] == 1.5f);
}
END_TEST

START_TEST(test_pidfd_of_a_socket_peer)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	int fd = gsp_undo_pidfd(sv[0]);
	if (no_pidfd())
		ck_assert_int_eq(fd, -1);
	else
		ck_assert_int_ge(fd, 0);    /* this process */
	if (fd >= 0)
		close(fd);
	close(sv[0]);
	close(sv[1]);
	ck_assert_int_eq(gsp_undo_pidfd(-1), -1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("daemon-undo");
	TCase *tc = tcase_create("undo");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_no_section);
	tcase_add_test(tc, test_daemon_marks_and_clears);
	tcase_add_test(tc, test_undone_and_counted_is_redone);
	tcase_add_test(tc, test_undone_and_not_counted_stays_undone);
	tcase_add_test(tc, test_left_marked_is_lost_unless_counted);
	tcase_add_test(tc, test_a_live_daemon_is_left_its_write);
	tcase_add_test(tc, test_pidfd_of_a_socket_peer);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
