/*
 * lifecycle: the daemon's life after its start (main.c sets it up):
 * signals (SIGTERM/SIGINT: the edges' records saved, or the model
 * detached, then GOODBYE to peers and exit 0; SIGHUP: the configuration
 * re-read), the stop in its order, and the service manager's protocol
 * (notify.h, never blocking): READY=1, RELOADING=1, STOPPING=1 and
 * WATCHDOG=1 from a loop timer.
 */
#ifndef GOSSIPD_LIFECYCLE_H
#define GOSSIPD_LIFECYCLE_H

#include "daemon.h"

/* SIGTERM, SIGINT and SIGHUP handled on d's loop from now on. */
void lifecycle_signals_start(gossipd *d);
/* READY=1 with the listening address (at start and after a reload). */
void lifecycle_ready(gossipd *d);
/* WATCHDOG=1 at half the service manager's interval, if it asks. */
void lifecycle_watchdog_start(gossipd *d);

#endif
