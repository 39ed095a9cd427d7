/* config_check: the refusals of the configuration (config_impl.h): how
 * one is recorded (config__fail, for every key's check in config.c too),
 * the decimal numbers of keys (config__parse_uint), a string key's copy
 * (config__copy_str),
 * and what one key cannot say alone, checked once the whole file is read:
 * peers listed once each with a key, and what Gamma = auto, SimSeed and
 * AverageSchedule need of the others. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_impl.h"

/* Records the first error as "<file>:<line>: <reason>"; returns 0, which
 * also tells inih the line failed. */
int config__fail(parser *p, int err, const char *fmt, ...)
{
	if (!p->err) {
		p->err = err;
		p->err_line = p->line;
		char reason[256];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(reason, sizeof(reason), fmt, ap);
		va_end(ap);
		if (p->line)
			snprintf(p->msg, p->msg_len, "%s:%u: %s", p->cfg->path,
				 p->line, reason);
		else
			snprintf(p->msg, p->msg_len, "%s: %s", p->cfg->path, reason);
	}
	return 0;
}

int config__copy_str(char *dst, size_t cap, const char *v)
{
	size_t n = strlen(v);
	if (n == 0 || n >= cap)
		return -EINVAL;
	memcpy(dst, v, n + 1);
	return 0;
}

int config__parse_uint(const char *s, unsigned long max, unsigned *ret)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

/* 1, or 0 with the first refusal recorded (config__fail). */
int config__check(parser *p)
{
	gsp_daemon_config *c = p->cfg;
	for (size_t i = 0; i < c->n_peers; i++) {
		p->line = c->peers[i].line;
		static const uint8_t zero[GSP_KEY_BYTES];
		bool keyless = !memcmp(c->peers[i].public_key, zero, GSP_KEY_BYTES);
		if (keyless && !c->cluster.have_authority)
			return config__fail(p, -EINVAL, "[Peer] without PublicKey (one with "
				    "an Endpoint may leave it out when [Cluster] has an "
				    "Authority)");
		if (keyless && !c->peers[i].endpoint[0])
			return config__fail(p, -EINVAL, "[Peer] without PublicKey needs an "
				    "Endpoint (its key is learned from there)");
		for (size_t j = 0; j < i; j++) {
			if (!keyless && !memcmp(c->peers[i].public_key,
						c->peers[j].public_key, GSP_KEY_BYTES))
				return config__fail(p, -EINVAL, "PublicKey listed twice");
			if (keyless && !memcmp(c->peers[j].public_key, zero, GSP_KEY_BYTES) &&
			    !strcmp(c->peers[i].endpoint, c->peers[j].endpoint))
				return config__fail(p, -EINVAL, "Endpoint listed twice "
					    "without PublicKey");
		}
	}
	for (size_t i = 0; c->sim_seed_set && i < c->n_peers; i++)
		if (c->peers[i].index < 0 || c->peers[i].index == c->index) {
			p->line = c->peers[i].line;
			return config__fail(p, -EINVAL, "with SimSeed every [Peer] needs its "
				    "own Index");
		}
	if ((c->cluster.certificate[0] || c->cluster.revocation_list[0]) &&
	    !c->cluster.have_authority) {
		p->line = 0;
		return config__fail(p, -EINVAL, "[Cluster] Certificate and RevocationList "
			    "need its Authority");
	}
	if (c->cluster.n_advertise && !(c->cluster.have_authority && c->n_seeds)) {
		p->line = 0;
		return config__fail(p, -EINVAL, "[Cluster] Advertise is for membership, "
			    "which needs an Authority and a Seed or SeedSRV");
	}
	if (c->cluster.have_authority && c->n_seeds && !c->cluster.certificate[0]) {
		p->line = 0;
		return config__fail(p, -EINVAL, "[Cluster] membership (an Authority and "
			    "seeds) needs this node's Certificate");
	}
	if (c->sim_seed_set && c->index < 0) {
		p->line = 0;
		return config__fail(p, -EINVAL, "SimSeed needs Index in [Node]");
	}
	if (c->engine.rank > c->max_rank) {
		p->line = p->rank_line ? p->rank_line : p->max_rank_line;
		return config__fail(p, -EINVAL, "Rank %u%s is above MaxRank %u", c->engine.rank,
			    p->rank_line ? "" : " (the default)", c->max_rank);
	}
	if (c->engine.wire != GSP_DTYPE_FLOAT32 && c->engine.method != GSP_METHOD_POWERGOSSIP) {
		p->line = p->wire_line;
		return config__fail(p, -EINVAL, "WirePrecision = %s applies to powergossip only, "
			    "not Method = %s (its messages are float32)",
			    gsp_dtype_name(c->engine.wire), gsp_method_name(c->engine.method));
	}
	if (c->gamma_auto && !c->nodes) {
		p->line = 0;
		return config__fail(p, -EINVAL, "Gamma = auto needs Nodes (and Topology)");
	}
	/* The refusals below name the schedule the file chose. */
	const char *schedule = c->avg_matching ? "matching" : "finite";
	if (c->avg_finite && !c->nodes) {
		p->line = p->schedule_line;
		return config__fail(p, -EINVAL, "AverageSchedule = %s needs Nodes (and Topology): "
			    "the schedule is the graph's", schedule);
	}
	if (c->avg_finite && c->engine.method >= GSP_METHOD_CHOCO_TOPK) {
		p->line = p->schedule_line;
		return config__fail(p, -EINVAL, "AverageSchedule = %s runs exact rounds on single "
			    "edges; a choco method's rounds need every edge", schedule);
	}
	if (c->avg_matching && (c->topology != GSP_TOPO_RING || c->nodes % 2)) {
		p->line = p->schedule_line;
		return config__fail(p, -EINVAL, "AverageSchedule = matching is a ring's: Topology = ring "
			    "and an even Nodes");
	}
	if (c->avg_matching && (c->index < 0 || (unsigned)c->index >= c->nodes)) {
		p->line = p->schedule_line;
		return config__fail(p, -EINVAL, "AverageSchedule = matching needs this node's Index "
			    "on the ring in [Node] (0..Nodes-1)");
	}
	for (size_t i = 0; c->avg_matching && i < c->n_peers; i++) {
		unsigned n = c->nodes, me = (unsigned)c->index;
		int idx = c->peers[i].index;
		bool twice = false;
		for (size_t j = 0; j < i; j++)
			twice |= c->peers[j].index == idx;
		if (idx < 0 || ((unsigned)idx != (me + 1) % n && (unsigned)idx != (me + n - 1) % n) ||
		    twice) {
			p->line = c->peers[i].line;
			return config__fail(p, -EINVAL, "AverageSchedule = matching: each [Peer] needs "
				    "the Index of a different ring neighbour (Index %u's are %u "
				    "and %u)", me, (me + n - 1) % n, (me + 1) % n);
		}
	}
	for (size_t i = 0; c->avg_finite && i < c->n_peers; i++)
		if (c->peers[i].weight > 0) {
			p->line = c->peers[i].line;
			return config__fail(p, -EINVAL, "AverageSchedule = %s needs the "
				    "Metropolis-Hastings weights of its graph: no Weight",
				    schedule);
		}
	if (c->gamma_auto && c->engine.method >= GSP_METHOD_CHOCO_TOPK) {
		/* auto is exact gossip's step for the graph; Choco's must suit
		 * its compression, and auto's diverges (BENCHMARKS.md). */
		p->line = p->gamma_line;
		return config__fail(p, -EINVAL, "Gamma = auto is exact gossip's step for the graph; "
			    "a choco method needs a number chosen for its compression "
			    "(docs/BENCHMARKS.md, the Choco gamma grid)");
	}
	return 1;
}
