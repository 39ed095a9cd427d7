/*
 * notify: the service manager's notification protocol (sd_notify(3):
 * READY=1, RELOADING=1, STOPPING=1, WATCHDOG=1, STATUS=...) sent without
 * ever blocking the loop: a manager (or a test harness) that does not
 * read its socket gets nothing rather than a stalled daemon.  The first
 * message dropped that way is logged.
 */
#ifndef GOSSIPD_NOTIFY_H
#define GOSSIPD_NOTIFY_H

/* Sends text to $NOTIFY_SOCKET, if set.  0, -EAGAIN if its queue is full
 * (dropped), or another negative errno. */
int notify_send(const char *text);

#endif
