/*
 * status: the STATUS document, the JSON that `gossipctl status --json`
 * prints (schema in docs/DAEMON.md).  It only reads the daemon, except
 * for its own sampler of the edges' round rates.
 */
#ifndef GOSSIPD_STATUS_H
#define GOSSIPD_STATUS_H

#include "daemon.h"

/* A new NUL-terminated document (the caller frees it), or NULL. */
char *status_json(const gossipd *d);

/* Samples each edge's completed rounds every STATUS_RATE_MS from a loop
 * timer that keeps no loop alive: rounds_per_s is the rate over the last
 * interval. */
#define STATUS_RATE_MS 1000
void status_rates_start(gossipd *d);

#endif
