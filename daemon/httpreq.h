/*
 * httpreq: the head of one HTTP/1.x request, as the metrics listener
 * (metrics_http.h) reads it, judged by a pure function over the bytes
 * received so far: no I/O, no allocation, no state between calls.
 *
 * What it accepts: a request line "GET /metrics HTTP/1.0" or "HTTP/1.1"
 * (a query after '?' is ignored), then header lines "Name: value", then a
 * blank line; lines end in CRLF or a bare LF.  Anything else gets an
 * error status, decided as soon as the bytes show it.  Header values are
 * not interpreted: the listener answers every request with
 * "Connection: close".
 */
#ifndef GSP_DAEMON_HTTPREQ_H
#define GSP_DAEMON_HTTPREQ_H

#include <stddef.h>

/* The most bytes of a request head (request line, headers, blank line)
 * the listener reads; a head that is not complete by then gets 431. */
#define HTTPREQ_HEAD_MAX 4096

/* The path served; every other path gets 404. */
#define HTTPREQ_PATH "/metrics"

/* Judges the len bytes of buf (what the client sent so far).  Returns 0
 * while the head may still become a valid request (more bytes needed, len
 * < HTTPREQ_HEAD_MAX); else the status to answer with, and the
 * connection closes after it:
 *   200  GET /metrics, HTTP/1.0 or 1.1, head complete
 *   400  a malformed request line or header line, a control byte, a NUL
 *   404  a well-formed GET of another path
 *   405  a well-formed request of another method
 *   431  no complete head within HTTPREQ_HEAD_MAX bytes
 *   505  a well-formed request of another HTTP version */
int httpreq_judge(const char *buf, size_t len);

#endif
