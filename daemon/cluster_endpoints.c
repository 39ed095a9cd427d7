/* cluster_endpoints: the endpoints of member records (cluster_impl.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>
#include <uv.h>

#include "cluster_impl.h"
#include "config.h"
#include "endpoint.h"

/* ---- endpoints --------------------------------------------------------- */

int cluster__endpoint_of_text(const char *text, gsp_member_endpoint *ret)
{
	struct sockaddr_storage ss;
	if (gsp_endpoint_numeric(text, &ss) != 0)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
		ret->family = 4;
		memcpy(ret->addr, &in->sin_addr, 4);
		ret->port = ntohs(in->sin_port);
		return sodium_is_zero(ret->addr, 4) ? -EADDRNOTAVAIL : 0;
	}
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
	ret->family = 6;
	memcpy(ret->addr, &in6->sin6_addr, 16);
	ret->port = ntohs(in6->sin6_port);
	return sodium_is_zero(ret->addr, 16) ? -EADDRNOTAVAIL : 0;
}

/* A wildcard ListenAddress: the host's addresses (not loopback, not
 * IPv6 link-local) of its family (both for [::]), at the bound port, in
 * the order the kernel lists the interfaces; how many, up to max. */
size_t cluster__host_endpoints(const char *listen_bound, gsp_member_endpoint *ep, size_t max)
{
	struct sockaddr_storage ss;
	uv_interface_address_t *ifs;
	int n_ifs;
	size_t n = 0;
	if (gsp_endpoint_numeric(listen_bound, &ss) != 0 ||
	    uv_interface_addresses(&ifs, &n_ifs) != 0)
		return 0;
	uint16_t port = ntohs(ss.ss_family == AF_INET
				      ? ((const struct sockaddr_in *)&ss)->sin_port
				      : ((const struct sockaddr_in6 *)&ss)->sin6_port);
	for (int i = 0; i < n_ifs && n < max; i++) {
		const uv_interface_address_t *a = &ifs[i];
		int fam = a->address.address4.sin_family;
		if (a->is_internal || (fam == AF_INET6 && ss.ss_family == AF_INET))
			continue;
		gsp_member_endpoint *e = &ep[n];
		memset(e, 0, sizeof(*e));
		e->port = port;
		if (fam == AF_INET) {
			e->family = 4;
			memcpy(e->addr, &a->address.address4.sin_addr, 4);
		} else if (fam == AF_INET6 &&
			   !IN6_IS_ADDR_LINKLOCAL(&a->address.address6.sin6_addr)) {
			e->family = 6;
			memcpy(e->addr, &a->address.address6.sin6_addr, 16);
		} else {
			continue;
		}
		n++;
	}
	uv_free_interface_addresses(ifs, n_ifs);
	return n;
}

/* "a.b.c.d:port" or "[v6]:port", out of GSP_ADDR_MAX bytes. */
void cluster__endpoint_text(int family, const uint8_t *addr, uint16_t port,
			  char *out)
{
	char host[INET6_ADDRSTRLEN] = "";
	inet_ntop(family == 4 || family == AF_INET ? AF_INET : AF_INET6, addr, host,
		  sizeof(host));
	if (family == 4 || family == AF_INET)
		snprintf(out, GSP_ADDR_MAX, "%s:%u", host, port);
	else
		snprintf(out, GSP_ADDR_MAX, "[%s]:%u", host, port);
}

