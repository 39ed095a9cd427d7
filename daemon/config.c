/* gossipd configuration file: INI parsed by libinih, values checked here,
 * every error reported as "<file>:<line>: <reason>". */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>
#include <sodium.h>

#include "endpoint.h"
#include "file.h"

#define CONFIG_MAX_BYTES (1 << 20)

#include "config_impl.h"

void gsp_daemon_config_default(gsp_daemon_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->listen, sizeof(cfg->listen), "127.0.0.1:0");
	snprintf(cfg->socket_path, sizeof(cfg->socket_path), "gossipd.sock");
	gsp_config_default(&cfg->engine);
	cfg->engine.rank = GSP_DAEMON_DEFAULT_RANK;
	cfg->max_rank = GSP_MAX_RANK;
	cfg->topology = GSP_TOPO_RING;
	cfg->max_staleness = 4;
	cfg->max_wait_ms = GSP_DAEMON_DEFAULT_MAX_WAIT_MS;
	cfg->detach_wait_ms = GSP_DAEMON_DEFAULT_DETACH_WAIT_MS;
	cfg->leave_wait_ms = GSP_DAEMON_DEFAULT_LEAVE_WAIT_MS;
	cfg->drain_wait_ms = GSP_DAEMON_DEFAULT_DRAIN_WAIT_MS;
	cfg->max_local_trainers = GSP_DAEMON_DEFAULT_MAX_LOCAL_TRAINERS;
	cfg->local_wait_ms = GSP_DAEMON_DEFAULT_LOCAL_WAIT_MS;
	cfg->max_round_change = GSP_DAEMON_DEFAULT_MAX_ROUND_CHANGE;
	cfg->sync_records = true;
	cfg->rekey_after_s = GSP_DAEMON_DEFAULT_REKEY_AFTER_S;
	cfg->log_level = GSP_LOG_INFO;
	cfg->index = -1;
	cfg->resolve_interval_s = GSP_DEFAULT_RESOLVE_INTERVAL_S;
	cfg->cluster.max_members = GSP_DEFAULT_MAX_MEMBERS;
}

void gsp_daemon_config_clear(gsp_daemon_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->peers);
	free(cfg->avg_steps);
	cfg->avg_steps = NULL;
	cfg->avg_n_steps = 0;
	sodium_memzero(cfg->private_key, sizeof(cfg->private_key));
	cfg->peers = NULL;
	cfg->n_peers = 0;
}

/* The ini_reader: hands out one line at a time so the handler knows the
 * line number and whether a new section started (a second [Peer]). */
static char *reader(char *str, int num, void *stream)
{
	parser *p = stream;
	if (p->pos >= p->end)
		return NULL;
	const char *nl = memchr(p->pos, '\n', (size_t)(p->end - p->pos));
	size_t len = nl ? (size_t)(nl - p->pos) + 1 : (size_t)(p->end - p->pos);
	p->line++;
	if (len >= (size_t)num) {
		p->too_long = true;
		len = (size_t)num - 1;
	}
	memcpy(str, p->pos, len);
	str[len] = '\0';
	p->pos = nl ? nl + 1 : p->end;
	const char *s = str;
	while (*s == ' ' || *s == '\t')
		s++;
	/* Cleared by the handler, which inih calls only for key lines. */
	if (*s == '[') {
		p->new_section = true;
		p->section_line = p->line;
	}
	return str;
}

static int parse_uint(const char *s, unsigned long max, unsigned *ret)
{
	return config__parse_uint(s, max, ret);
}

static int parse_float(const char *s, float *ret)
{
	char *end;
	if (!((*s >= '0' && *s <= '9') || *s == '.'))
		return -EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v > 1e6)
		return -EINVAL;
	*ret = (float)v;
	return 0;
}

/* ListenAddress, MetricsListen: numeric ipv4:port or [ipv6]:port. */
static int numeric_address(parser *p, const char *name, char *dst, size_t cap,
			   const char *v)
{
	struct sockaddr_storage ss;
	if (config__copy_str(dst, cap, v) || gsp_endpoint_numeric(v, &ss))
		return config__fail(p, -EINVAL, "%s must be a numeric ipv4:port or "
			    "[ipv6]:port, not '%s'", name, v);
	return 1;
}

static int node_key(parser *p, const char *name, const char *v)
{
	gsp_daemon_config *c = p->cfg;
	if (!strcmp(name, "ListenAddress"))
		return numeric_address(p, name, c->listen, sizeof(c->listen), v);
	if (!strcmp(name, "MetricsListen"))
		return numeric_address(p, name, c->metrics_listen,
				       sizeof(c->metrics_listen), v);
	if (!strcmp(name, "PrivateKeyFile"))
		return config__copy_str(c->private_key_file, sizeof(c->private_key_file), v)
			       ? config__fail(p, -EINVAL, "bad PrivateKeyFile '%s'", v)
			       : 1;
	if (!strcmp(name, "PrivateKey")) {
		if (gsp_key_from_base64(v, c->private_key))
			return config__fail(p, -EINVAL, "PrivateKey is not a base64 32-byte key");
		c->have_private_key = true;
		return 1;
	}
	if (!strcmp(name, "Socket"))
		return config__copy_str(c->socket_path, sizeof(c->socket_path), v)
			       ? config__fail(p, -EINVAL, "bad Socket '%s'", v)
			       : 1;
	if (!strcmp(name, "Method"))
		return gsp_method_parse(v, &c->engine.method)
			       ? config__fail(p, -EINVAL, "unknown Method '%s' (powergossip, "
					 "exact, choco-topk, choco-randk, choco-sign)", v)
			       : 1;
	if (!strcmp(name, "Rank")) {
		p->rank_line = p->line;
		return parse_uint(v, GSP_MAX_RANK, &c->engine.rank) || !c->engine.rank
			       ? config__fail(p, -EINVAL, "Rank must be 1..1024, not '%s'", v)
			       : 1;
	}
	if (!strcmp(name, "WirePrecision")) {
		gsp_dtype d;
		p->wire_line = p->line;
		if (gsp_dtype_parse(v, &d) != 0)
			return config__fail(p, -EINVAL, "WirePrecision takes float32, float16 or "
					    "bfloat16, not '%s'", v);
		c->engine.wire = d;
		return 1;
	}
	if (!strcmp(name, "MaxRank")) {
		p->max_rank_line = p->line;
		return parse_uint(v, GSP_MAX_RANK, &c->max_rank) || !c->max_rank
			       ? config__fail(p, -EINVAL, "MaxRank must be 1..1024, not '%s'", v)
			       : 1;
	}
	if (!strcmp(name, "Gamma")) {
		p->gamma_line = p->line;
		if (!strcmp(v, "auto")) {
			c->gamma_auto = true;
			return 1;
		}
		c->gamma_auto = false;
		return parse_float(v, &c->engine.gamma)
			       ? config__fail(p, -EINVAL, "Gamma must be a number >= 0 or auto, not '%s'", v)
			       : 1;
	}
	if (!strcmp(name, "AverageSchedule")) {
		p->schedule_line = p->line;
		if (strcmp(v, "finite") && strcmp(v, "matching") && strcmp(v, "off"))
			return config__fail(p, -EINVAL, "AverageSchedule takes finite, matching or off, "
				    "not '%s'", v);
		c->avg_finite = strcmp(v, "off") != 0;
		c->avg_matching = !strcmp(v, "matching");
		return 1;
	}
	if (!strcmp(name, "Fraction"))
		return parse_float(v, &c->engine.choco_fraction) ||
				       c->engine.choco_fraction <= 0 ||
				       c->engine.choco_fraction > 1
			       ? config__fail(p, -EINVAL, "Fraction must be in (0, 1], not '%s'", v)
			       : 1;
	bool *on_off = !strcmp(name, "WarmStart")     ? &c->engine.warm_start
		       : !strcmp(name, "SyncRecords") ? &c->sync_records
						      : NULL;
	if (on_off) {
		if (strcmp(v, "on") && strcmp(v, "off"))
			return config__fail(p, -EINVAL, "%s takes on or off, not '%s'", name, v);
		*on_off = !strcmp(v, "on");
		return 1;
	}
	if (!strcmp(name, "Topology"))
		return gsp_topology_parse(v, &c->topology)
			       ? config__fail(p, -EINVAL, "unknown Topology '%s'", v)
			       : 1;
	if (!strcmp(name, "Nodes"))
		return parse_uint(v, 4096, &c->nodes) || c->nodes < 2
			       ? config__fail(p, -EINVAL, "Nodes must be 2..4096, not '%s'", v)
			       : 1;
	if (!strcmp(name, "MaxStaleness"))
		return parse_uint(v, 1000000, &c->max_staleness) || !c->max_staleness
			       ? config__fail(p, -EINVAL, "MaxStaleness must be 1..1000000, not '%s'", v)
			       : 1;
	if (!strcmp(name, "MaxRoundChange"))
		return parse_float(v, &c->max_round_change) || !(c->max_round_change >= 0)
			       ? config__fail(p, -EINVAL, "MaxRoundChange must be a number >= 0 "
				      "(0: no bound), not '%s'", v)
			       : 1;
	if (!strcmp(name, "MaxWait"))
		return parse_uint(v, 3600000, &c->max_wait_ms)
			       ? config__fail(p, -EINVAL, "MaxWait must be 0..3600000 (ms), not '%s'", v)
			       : 1;
	if (!strcmp(name, "DetachWait"))
		return parse_uint(v, 3600000, &c->detach_wait_ms)
			       ? config__fail(p, -EINVAL, "DetachWait must be 0..3600000 (ms), not '%s'", v)
			       : 1;
	if (!strcmp(name, "LeaveWait"))
		return parse_uint(v, GSP_DAEMON_MAX_LEAVE_WAIT_MS, &c->leave_wait_ms)
			       ? config__fail(p, -EINVAL, "LeaveWait must be 0..%u (ms), not '%s'",
				      GSP_DAEMON_MAX_LEAVE_WAIT_MS, v)
			       : 1;
	if (!strcmp(name, "DrainWait"))
		return parse_uint(v, 3600000, &c->drain_wait_ms)
			       ? config__fail(p, -EINVAL, "DrainWait must be 0..3600000 (ms), not '%s'", v)
			       : 1;
	if (!strcmp(name, "MaxLocalTrainers"))
		return parse_uint(v, GSP_DAEMON_MAX_LOCAL_TRAINERS, &c->max_local_trainers) ||
				       !c->max_local_trainers
			       ? config__fail(p, -EINVAL, "MaxLocalTrainers must be 1..%u, not '%s'",
				      GSP_DAEMON_MAX_LOCAL_TRAINERS, v)
			       : 1;
	if (!strcmp(name, "LocalWait"))
		return parse_uint(v, 3600000, &c->local_wait_ms)
			       ? config__fail(p, -EINVAL, "LocalWait must be 0..3600000 (ms), not '%s'", v)
			       : 1;
	if (!strcmp(name, "RekeyAfterSeconds"))
		return parse_uint(v, GSP_DAEMON_MAX_REKEY_AFTER_S, &c->rekey_after_s) ||
				       !c->rekey_after_s
			       ? config__fail(p, -EINVAL, "RekeyAfterSeconds must be 1..%u, not '%s'",
				      GSP_DAEMON_MAX_REKEY_AFTER_S, v)
			       : 1;
	if (!strcmp(name, "SimSeed")) {
		char *end;
		if (*v < '0' || *v > '9')
			return config__fail(p, -EINVAL, "SimSeed must be a number, not '%s'", v);
		errno = 0;
		c->sim_seed = strtoull(v, &end, 10);
		if (errno || *end)
			return config__fail(p, -EINVAL, "SimSeed must be a number, not '%s'", v);
		c->sim_seed_set = true;
		return 1;
	}
	if (!strcmp(name, "Index")) {
		unsigned idx;
		if (parse_uint(v, 65535, &idx))
			return config__fail(p, -EINVAL, "Index must be 0..65535, not '%s'", v);
		c->index = (int)idx;
		return 1;
	}
	if (!strcmp(name, "LogLevel")) {
		static const char *levels[] = {"error", "warning", "info", "debug"};
		for (int i = 0; i < 4; i++)
			if (!strcmp(v, levels[i])) {
				c->log_level = (gsp_log_level)i;
				return 1;
			}
		return config__fail(p, -EINVAL, "LogLevel must be error, warning, info or debug, not '%s'", v);
	}
	return config__fail(p, -EINVAL, "unknown key '%s' in [Node]", name);
}

static int peer_key(parser *p, const char *name, const char *v)
{
	gsp_daemon_config *c = p->cfg;
	gsp_peer_config *peer = &c->peers[c->n_peers - 1];
	if (!strcmp(name, "PublicKey"))
		return gsp_key_from_base64(v, peer->public_key)
			       ? config__fail(p, -EINVAL, "PublicKey is not a base64 32-byte key: '%s'", v)
			       : 1;
	if (!strcmp(name, "Endpoint"))
	{
		char host[GSP_HOSTNAME_MAX + 1];
		uint16_t port;
		if (config__copy_str(peer->endpoint, sizeof(peer->endpoint), v) ||
		    gsp_endpoint_split(v, host, sizeof(host), &port))
			return config__fail(p, -EINVAL, "bad Endpoint '%s' (want ipv4:port, "
				    "[ipv6]:port or name:port)", v);
		return 1;
	}
	if (!strcmp(name, "Index")) {
		unsigned idx;
		if (parse_uint(v, 65535, &idx))
			return config__fail(p, -EINVAL, "Index must be 0..65535, not '%s'", v);
		peer->index = (int)idx;
		return 1;
	}
	if (!strcmp(name, "Name")) {
		bool printable = true;
		for (const char *q = v; *q; q++)
			printable = printable && *q >= 0x20 && *q < 0x7f;
		if (!printable || config__copy_str(peer->name, sizeof(peer->name), v))
			return config__fail(p, -EINVAL, "Name must be 1..%d printable ASCII "
				    "characters", GSP_PEER_NAME_MAX - 1);
		return 1;
	}
	if (!strcmp(name, "Weight"))
		return parse_float(v, &peer->weight) || !(peer->weight > 0) ||
				       peer->weight > 1
			       ? config__fail(p, -EINVAL, "Weight must be in (0, 1], not '%s'", v)
			       : 1;
	return config__fail(p, -EINVAL, "unknown key '%s' in [Peer]", name);
}

static int open_section(parser *p, const char *sec)
{
	gsp_daemon_config *c = p->cfg;
	if (!strcmp(sec, "Node") || !strcmp(sec, "Cluster")) {
		p->sec = sec[0] == 'N' ? SEC_NODE : SEC_CLUSTER;
		return 1;
	}
	if (strcmp(sec, "Peer")) {
		p->sec = SEC_OTHER;
		return config__fail(p, -EINVAL, "unknown section [%s] (expected [Node], [Peer] "
				    "or [Cluster])", sec);
	}
	if (c->n_peers >= GSP_MAX_PEERS)
		return config__fail(p, -E2BIG, "too many [Peer] sections (at most %d)", GSP_MAX_PEERS);
	gsp_peer_config *peers = realloc(c->peers, (c->n_peers + 1) * sizeof(*peers));
	if (!peers)
		return config__fail(p, -ENOMEM, "out of memory");
	c->peers = peers;
	memset(&peers[c->n_peers], 0, sizeof(*peers));
	peers[c->n_peers].line = p->section_line;
	peers[c->n_peers].index = -1;
	c->n_peers++;
	p->sec = SEC_PEER;
	return 1;
}

static int handler(void *user, const char *sec, const char *name,
		   const char *value)
{
	parser *p = user;
	if (p->too_long)
		return config__fail(p, -EINVAL, "line longer than %d characters", INI_MAX_LINE - 1);
	/* inih calls us per key only: a header read since the last key
	 * opens a new section, so two [Peer] sections stay apart. */
	if (p->new_section || p->sec == SEC_NONE) {
		p->new_section = false;
		if (!open_section(p, sec))
			return 0;
	}
	if (p->sec == SEC_NODE)
		return node_key(p, name, value);
	if (p->sec == SEC_PEER)
		return peer_key(p, name, value);
	if (p->sec == SEC_CLUSTER)
		return config__cluster_key(p, name, value);
	return 0;
}

/* Checks that need the whole file. */
int gsp_daemon_config_parse(const char *text, size_t len, const char *path,
			    gsp_daemon_config *cfg, char *err, size_t err_len)
{
	parser p = {.cfg = cfg, .text = text, .end = text + len, .pos = text,
		    .msg = err, .msg_len = err_len};
	snprintf(cfg->path, sizeof(cfg->path), "%s", path ? path : "<config>");
	if (memchr(text, '\0', len)) {
		const char *z = memchr(text, '\0', len);
		for (const char *s = text; s < z; s++)
			p.line += *s == '\n';
		p.line++;
		config__fail(&p, -EINVAL, "NUL byte in the file");
		return p.err;
	}
	int rc = ini_parse_stream(reader, &p, handler, &p);
	if (rc > 0 && (!p.err || (unsigned)rc < p.err_line)) {
		/* inih's own syntax error (no '=', unclosed '['), which inih
		 * reports only at the end: it wins if it came first. */
		p.err = 0;
		p.line = (unsigned)rc;
		config__fail(&p, -EINVAL, "syntax error (expected [Section] or Key = Value)");
	} else if (!p.err && rc < 0) {
		config__fail(&p, -ENOMEM, "cannot parse");
	}
	if (!p.err)
		config__check(&p);
	return p.err;
}

int gsp_daemon_config_load(const char *path, gsp_daemon_config *cfg, char *err,
			   size_t err_len)
{
	/* The text may hold an inline PrivateKey: read without stdio, and
	 * wiped after parsing. */
	uint8_t *buf;
	size_t n;
	int rc = file_read(path, CONFIG_MAX_BYTES, &buf, &n);
	if (rc) {
		snprintf(err, err_len, "%s: %s", path,
			 rc == -EFBIG ? "larger than 1 MiB" : strerror(-rc));
		return rc;
	}
	rc = gsp_daemon_config_parse((const char *)buf, n, path, cfg, err, err_len);
	sodium_memzero(buf, n);
	free(buf);
	return rc;
}
