/*
 * client_undo: the client's side of the buffer's undo section
 * (PROTOCOL.md 5.4).  It writes the section's header into a new buffer,
 * finds the daemon's process behind the socket, and, when the connection
 * to the daemon is lost, undoes a write the daemon was killed inside: the
 * parameters go back to the copy taken before it, and the copy keeps
 * what the write had added, so that the next daemon can redo it if its
 * records count it.  Internal to libgossip (client.c).
 */
#ifndef GOSSIP_CLIENT_UNDO_H
#define GOSSIP_CLIENT_UNDO_H

#include <stdint.h>

/* Marks the zeroed buffer (gsp_undo_bytes(n_floats) bytes) as one with
 * an undo section. */
void gsp_undo_init(void *buf, uint64_t n_floats);
/* A pidfd of the process at the other end of the Unix socket, or -1. */
int gsp_undo_pidfd(int sock);
/* After the connection was lost: 1 if a write under way was undone, 0 if
 * none was, -ETIMEDOUT if the daemon still runs and writes after wait_ms
 * (the write is left to it), -ESRCH if whether it runs is unknown
 * (pidfd -1: left as it is). */
int gsp_undo_recover(void *buf, uint64_t n_floats, int pidfd, int64_t wait_ms);

#endif
