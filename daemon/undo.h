/*
 * undo: the undo section of the trainer's buffer (PROTOCOL.md 5.4).  It
 * owns the copy of the parameters taken before each write of the daemon
 * and the header that says a write is under way, and, at REGISTER, what
 * becomes of a write an earlier daemon left when it was killed: redone
 * (the client undid it, and the edges' records count it) or dropped (the
 * records do not).  A buffer without the section (an older client, or
 * one that opted out) makes every call a no-op.
 */
#ifndef GOSSIPD_UNDO_H
#define GOSSIPD_UNDO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

typedef struct undo {
	gsp_undo_header *h;      /* NULL: no section */
	float *params, *copy;
	uint64_t n;
} undo;

typedef enum undo_found {
	UNDO_NOTHING = 0,        /* no write was left */
	UNDO_REDONE,             /* undone by the client, counted: redone */
	UNDO_DROPPED,            /* undone by the client, not counted */
	UNDO_LOST,               /* left, not counted, and not undone */
} undo_found;

/* The buffer of `bytes` bytes at buf holds n floats of parameters: takes
 * its undo section if it has one (false if not), and settles a write an
 * earlier daemon left (*ret_found), given the last write the edges'
 * records count. */
bool undo_attach(undo *u, void *buf, uint64_t bytes, uint64_t n,
		 uint64_t counted, undo_found *ret_found);
void undo_detach(undo *u);
/* Copies the parameters, then marks write `seq` under way.  Touches only
 * the buffer: safe on the thread pool while the loop leaves it alone. */
void undo_begin(undo *u, uint64_t seq);
/* The write is counted (the records are saved): nothing to undo. */
void undo_end(undo *u);

#endif
