/*
 * config_impl.h: the parser state config.c (keys, lines, inih) and
 * config_check.c (checks across keys) share.  Not for other modules.
 */
#ifndef GOSSIPD_CONFIG_IMPL_H
#define GOSSIPD_CONFIG_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

typedef enum section { SEC_NONE, SEC_NODE, SEC_PEER, SEC_CLUSTER, SEC_OTHER } section;

typedef struct parser {
	gsp_daemon_config *cfg;
	const char *text, *end, *pos;
	unsigned line;          /* line the reader handed out last */
	bool new_section;       /* a section header was read since the last key */
	unsigned section_line;
	bool too_long;
	section sec;
	int err;
	unsigned err_line;
	unsigned gamma_line;    /* the last Gamma = line */
	unsigned rank_line;     /* the last Rank = line */
	unsigned max_rank_line; /* the last MaxRank = line */
	unsigned wire_line;     /* the last WirePrecision = line */
	unsigned schedule_line; /* the last AverageSchedule = line */
	char *msg;
	size_t msg_len;
} parser;

/* Records the first error as "<file>:<line>: <reason>" (p->line; 0: no
 * line); returns 0, which also tells inih the line failed. */
int config__fail(parser *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A decimal 0..max: 0, or -EINVAL. */
int config__parse_uint(const char *s, unsigned long max, unsigned *ret);
/* Copies v, 1 to cap - 1 bytes, into dst: 0, or -EINVAL. */
int config__copy_str(char *dst, size_t cap, const char *v);
/* A key of [Cluster] (config_cluster.c): 1, or 0 with the refusal
 * recorded. */
int config__cluster_key(parser *p, const char *name, const char *value);
/* The checks across keys, once the file is read: 1 or 0 (failed). */
int config__check(parser *p);

#endif
