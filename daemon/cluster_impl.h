/* cluster's own (cluster.h): the endpoints of member records, as text
 * and from the host's interfaces (cluster_endpoints.c). */
#ifndef GOSSIPD_CLUSTER_IMPL_H
#define GOSSIPD_CLUSTER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "member.h"

/* A numeric ip:port into ret: -EINVAL, or -EADDRNOTAVAIL for a wildcard. */
int cluster__endpoint_of_text(const char *text, gsp_member_endpoint *ret);
/* A wildcard listen_bound: the host's addresses (not loopback, not IPv6
 * link-local) of its family (both for [::]) at its port; how many, up
 * to max. */
size_t cluster__host_endpoints(const char *listen_bound, gsp_member_endpoint *ep, size_t max);
/* "a.b.c.d:port" or "[v6]:port" (family 4, 6, AF_INET or AF_INET6). */
void cluster__endpoint_text(int family, const uint8_t *addr, uint16_t port, char *out);

#endif
