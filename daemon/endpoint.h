/*
 * Endpoints: the "host:port" text of ListenAddress and Endpoint.
 *
 * This module owns their syntax and their conversion to socket addresses.
 * host is an IPv4 literal, an IPv6 literal in brackets ("[::1]:7000") or,
 * for Endpoint only, a DNS name ("node-1.gossip.svc:7000") that peers_dial.c
 * resolves with uv_getaddrinfo before every dial.  port is 0..65535.
 */
#ifndef GSP_DAEMON_ENDPOINT_H
#define GSP_DAEMON_ENDPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Longest DNS name (RFC 1035, without the trailing dot). */
#define GSP_HOSTNAME_MAX 253

/* Splits text into host (brackets removed; cap bytes with the NUL) and
 * port.  Returns 0; -EINVAL if the syntax is wrong (no port, a port out of
 * range, a host that is neither a bracketed IPv6 literal nor made of
 * letters, digits, '-', '_' and '.' in labels of 1..63 bytes); -ENAMETOOLONG
 * if host does not fit in cap. */
int gsp_endpoint_split(const char *text, char *host, size_t cap,
		       uint16_t *ret_port);

/* Converts a numeric endpoint to *ss.  Returns 0; -ENOENT if the syntax is
 * right but host is a name (resolve it); -EINVAL as gsp_endpoint_split or
 * for a bracketed host that is not an IPv6 literal. */
int gsp_endpoint_numeric(const char *text, struct sockaddr_storage *ss);

#endif
