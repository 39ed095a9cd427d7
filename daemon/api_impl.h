/*
 * api_impl.h: what the API server's files share, bottom to top:
 * api_client.c (a connection's replies and close), api_request.c (the
 * requests), api.c (the socket, accepting, reading).  Not for other
 * modules: they use api.h.
 */
#ifndef GOSSIPD_API_IMPL_H
#define GOSSIPD_API_IMPL_H

#include <sys/types.h>

#include "api.h"
#include "rxbuf.h"

/* Unsent reply bytes one client may hold: one reply of the largest
 * frame. */
#define API_MAX_UNSENT (GSP_FRAME_HEADER + (size_t)GSP_API_MAX_FRAME)

typedef struct api_client api_client;

struct api_client {
	gossipd *d;
	int fd;
	uv_poll_t poll;
	rxbuf rx;
	uint8_t *wbuf;           /* unsent reply bytes */
	size_t wlen, woff;
	int passed_fd;           /* fd received with the current frame */
	bool hello;
	bool closing;
	char name[GSP_API_NAME_MAX + 1];
	char log_name[4 * GSP_API_NAME_MAX + 1];   /* name, escaped for logs */
	api_client *next;
};

struct api_server {
	int fd;
	uv_poll_t poll;
	dev_t dev;               /* the socket file we created, to remove */
	ino_t ino;               /* only that one at exit */
	gid_t gid;               /* its group: who may connect (peercred.h) */
	uint64_t refused;        /* connections refused by peercred */
	api_client *clients;
	size_t n_clients;
	uv_poll_cb on_poll;      /* a client's events (api.c's reads) */
};

/* api_client.c.  Sends what is unsent (a client that cannot take it is
 * closed). */
void api__flush(api_client *c);
/* Drops the pending reply, detaches the client's model, closes it. */
void api__client_close(api_client *c);
/* Queues one reply frame and sends what it can. */
void api__reply(api_client *c, const uint8_t *body, size_t len);
void api__reply_ok(api_client *c);
void api__reply_error(api_client *c, int code, const char *text);

/* api_request.c.  One frame's request: 0, or a negative errno for a
 * malformed one (the caller closes the client). */
int api__on_request(api_client *c, const uint8_t *body, size_t len);

#endif
