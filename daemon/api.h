/*
 * api: the local API server (PROTOCOL.md 5): a Unix stream socket (mode
 * 0660) polled with libuv, raw recvmsg() so REGISTER can carry the
 * buffer's fd with SCM_RIGHTS.  It owns every API client: its bounded
 * buffers, its requests (at most one in progress) and their one reply
 * each.  A malformed frame closes only that client.
 *
 * Limits: API_MAX_CLIENTS clients at once; a client is not read while a
 * reply to it is unsent, so it holds at most one reply.
 */
#ifndef GOSSIPD_API_H
#define GOSSIPD_API_H

#include "daemon.h"

#define API_MAX_CLIENTS 256

int api_start(gossipd *d);
/* Closes every client (detaching the model) and the socket. */
void api_stop(gossipd *d);
/* The same, for a stop that keeps the model's generations: its
 * trainer's connection closes without a DETACH, and its socket stays
 * open (model_hold_connection) until the process exits. */
void api_stop_keeping_model(gossipd *d);

#endif
