/*
 * metrics_http: gossipd's opt-in metrics listener (MetricsListen).  It
 * owns one TCP listener on the daemon's loop and the connections it
 * accepts, and answers GET /metrics with the status document in the
 * Prometheus text format: the very text `gossipctl metrics` prints
 * (libgossip's status_doc.h and prom_text.h, over the document that the
 * callback given at start returns, which main wires to status_json).
 *
 * Bounds, so that no scraper can hold the daemon or delay a STEP:
 *   - at most METRICS_HTTP_MAX_CONNS connections at once; one more is
 *     accepted and closed at once (counter metrics_rejected);
 *   - a request head of at most HTTPREQ_HEAD_MAX bytes (httpreq.h),
 *     judged as its bytes come; a bad request gets its status (400, 404,
 *     405, 431, 505; counter metrics_bad_requests);
 *   - METRICS_HTTP_TIMEOUT_MS from accept to the last byte of the
 *     response handed to the kernel: a client that sends nothing, trickles
 *     its request or does not read the response is cut off then (counter
 *     metrics_timed_out);
 *   - one response per connection, with "Connection: close".
 * Everything runs on the loop without blocking it: reads and writes are
 * libuv's, and a response is built in one go (as the STATUS request's
 * document is).  Served requests count in metrics_scrapes.
 */
#ifndef GOSSIPD_METRICS_HTTP_H
#define GOSSIPD_METRICS_HTTP_H

#include <stddef.h>

#include <uv.h>

#include "counters.h"

#define METRICS_HTTP_MAX_CONNS 8
#define METRICS_HTTP_TIMEOUT_MS 5000

typedef struct metrics_http metrics_http;

/* The status document (JSON, NUL-terminated, malloc'd; the listener
 * frees it), or NULL when it cannot be made (the scrape gets 500). */
typedef char *(*metrics_http_doc_fn)(void *ctx);

/* Listens on listen (numeric "ipv4:port" or "[ipv6]:port"; port 0 picks
 * one) and writes the bound address into ret_addr.  c's metrics_*
 * counters are the listener's.  Returns 0 and *ret, or a negative errno
 * (logged). */
int metrics_http_start(uv_loop_t *loop, const char *listen, counters *c,
		       metrics_http_doc_fn doc, void *ctx, metrics_http **ret,
		       char *ret_addr, size_t addr_len);

/* Closes the listener and every connection at once; the memory goes
 * with the last close callback.  NULL is fine. */
void metrics_http_stop(metrics_http *m);

#endif
