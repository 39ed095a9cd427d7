/*
 * status: the STATUS document, the JSON that `gossipctl status --json`
 * prints (schema in docs/DAEMON.md).  It only reads the daemon.
 */
#ifndef GOSSIPD_STATUS_H
#define GOSSIPD_STATUS_H

#include "daemon.h"

/* A new NUL-terminated document (the caller frees it), or NULL. */
char *status_json(const gossipd *d);

#endif
