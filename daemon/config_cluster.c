/* config_cluster: the keys of [Cluster] (config_impl.h): the seeds that
 * discovery resolves (Seed, SeedSRV; seeds.h) and how often
 * (ResolveIntervalSeconds), and admission by certificate (Authority,
 * Certificate, RevocationList; admission.h) and membership (Advertise,
 * MaxMembers, LeaveOnStop; cluster.h).  Syntax only: nothing is resolved or read
 * here. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config_impl.h"
#include "endpoint.h"

/* An SRV name: _service._proto.name, a DNS name (endpoint.h's labels)
 * whose first two labels start with '_' and that has a third. */
static bool srv_name_ok(const char *v)
{
	char probe[GSP_HOSTNAME_MAX + 8], host[GSP_HOSTNAME_MAX + 1];
	uint16_t port;
	size_t n = strlen(v);
	if (n == 0 || n > GSP_HOSTNAME_MAX || v[0] != '_' || v[n - 1] == '.')
		return false;
	snprintf(probe, sizeof(probe), "%s:1", v);
	if (gsp_endpoint_split(probe, host, sizeof(host), &port))
		return false;
	const char *proto = strchr(v, '.');
	return proto && proto[1] == '_' && strchr(proto + 1, '.');
}

static int add_seed(parser *p, gsp_seed_kind kind, const char *v)
{
	gsp_daemon_config *c = p->cfg;
	if (c->n_seeds >= GSP_MAX_SEEDS)
		return config__fail(p, -E2BIG, "too many Seed and SeedSRV lines (at most %d)",
				    GSP_MAX_SEEDS);
	gsp_seed_config *s = &c->seeds[c->n_seeds];
	size_t n = strlen(v);
	if (n == 0 || n >= sizeof(s->text))
		return 0;
	memcpy(s->text, v, n + 1);
	s->kind = kind;
	s->line = p->line;
	c->n_seeds++;
	return 1;
}

int config__cluster_key(parser *p, const char *name, const char *v)
{
	gsp_daemon_config *c = p->cfg;
	if (!strcmp(name, "Seed")) {
		char host[GSP_HOSTNAME_MAX + 1];
		uint16_t port;
		if (gsp_endpoint_split(v, host, sizeof(host), &port) || port == 0 ||
		    strlen(v) >= GSP_ADDR_MAX || !add_seed(p, GSP_SEED_HOST, v))
			return p->err ? 0 : config__fail(p, -EINVAL, "bad Seed '%s' (want "
					 "ipv4:port, [ipv6]:port or name:port, port 1..65535)", v);
		return 1;
	}
	if (!strcmp(name, "SeedSRV")) {
		if (!srv_name_ok(v) || strlen(v) >= GSP_ADDR_MAX || !add_seed(p, GSP_SEED_SRV, v))
			return p->err ? 0 : config__fail(p, -EINVAL, "bad SeedSRV '%s' (want an SRV "
					 "name, _service._proto.name)", v);
		return 1;
	}
	if (!strcmp(name, "ResolveIntervalSeconds"))
		return config__parse_uint(v, GSP_MAX_RESOLVE_INTERVAL_S, &c->resolve_interval_s) ||
				       !c->resolve_interval_s
			       ? config__fail(p, -EINVAL, "ResolveIntervalSeconds must be 1..%u, "
				      "not '%s'", GSP_MAX_RESOLVE_INTERVAL_S, v)
			       : 1;
	gsp_cluster_config *cl = &c->cluster;
	if (!strcmp(name, "Authority")) {
		if (gsp_key_from_base64(v, cl->authority))
			return config__fail(p, -EINVAL, "Authority is not a base64 32-byte "
				    "key (gossipctl pubkey --ca prints it): '%s'", v);
		cl->have_authority = true;
		return 1;
	}
	if (!strcmp(name, "Certificate"))
		return config__copy_str(cl->certificate, sizeof(cl->certificate), v)
			       ? config__fail(p, -EINVAL, "Certificate path empty or too long") : 1;
	if (!strcmp(name, "RevocationList"))
		return config__copy_str(cl->revocation_list, sizeof(cl->revocation_list), v)
			       ? config__fail(p, -EINVAL, "RevocationList path empty or too long") : 1;
	if (!strcmp(name, "Advertise")) {
		struct sockaddr_storage ss;
		if (cl->n_advertise >= GSP_MAX_ADVERTISE)
			return config__fail(p, -E2BIG, "too many Advertise lines (at most %d)",
					    GSP_MAX_ADVERTISE);
		if (gsp_endpoint_numeric(v, &ss) ||
		    config__copy_str(cl->advertise[cl->n_advertise], GSP_ADDR_MAX, v))
			return config__fail(p, -EINVAL, "bad Advertise '%s' (want a numeric "
					    "ipv4:port or [ipv6]:port)", v);
		cl->n_advertise++;
		return 1;
	}
	if (!strcmp(name, "LeaveOnStop")) {
		if (strcmp(v, "on") && strcmp(v, "off"))
			return config__fail(p, -EINVAL, "LeaveOnStop takes on or off, not '%s'", v);
		cl->leave_on_stop = !strcmp(v, "on");
		return 1;
	}
	if (!strcmp(name, "MaxMembers"))
		return config__parse_uint(v, GSP_MAX_MEMBERS, &cl->max_members) ||
				       cl->max_members < 2
			       ? config__fail(p, -EINVAL, "MaxMembers must be 2..%u, not '%s'",
					      GSP_MAX_MEMBERS, v)
			       : 1;
	return config__fail(p, -EINVAL, "unknown key '%s' in [Cluster]", name);
}
