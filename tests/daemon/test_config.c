/* gossipd configuration: valid files, defaults, and every kind of bad
 * input rejected with the right file and line in the message. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define KEY_A "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define KEY_B "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="

static int parse(const char *text, gsp_daemon_config *cfg, char *err)
{
	gsp_daemon_config_default(cfg);
	return gsp_daemon_config_parse(text, strlen(text), "test.conf", cfg,
				       err, 256);
}

START_TEST(test_valid)
{
	static const char text[] =
		"# a comment\n"
		"[Node]\n"
		"ListenAddress = 127.0.0.1:7000\n"
		"PrivateKey = " KEY_A "\n"
		"Socket = /run/gossipd/gossipd.sock\n"
		"Method = powergossip\n"
		"Rank = 4\n"
		"WirePrecision = float16\n"
		"Gamma = auto\n"
		"Topology = ring\n"
		"Nodes = 8\n"
		"WarmStart = off\n"
		"SyncRecords = off\n"
		"RekeyAfterSeconds = 5\n"
		"DrainWait = 0\n"
		"LeaveWait = 86400000\n"
		"MaxLocalTrainers = 256\n"
		"LocalWait = 0\n"
		"LogLevel = debug\n"
		"MetricsListen = [::1]:0\n"
		"[Peer]\n"
		"PublicKey = " KEY_A "\n"
		"Name = rack 2 \"b\" \\\\ x\n"
		"Endpoint = 127.0.0.1:7001\n"
		"[Peer]\n"
		"PublicKey = " KEY_B "\n"
		"Weight = 0.25\n";
	gsp_daemon_config cfg;
	char err[256] = "";
	ck_assert_msg(parse(text, &cfg, err) == 0, "%s", err);
	ck_assert_str_eq(cfg.listen, "127.0.0.1:7000");
	ck_assert(cfg.have_private_key);
	ck_assert_uint_eq(cfg.private_key[31], 31);
	ck_assert_uint_eq(cfg.engine.rank, 4);
	ck_assert_int_eq(cfg.engine.wire, GSP_DTYPE_FLOAT16);
	ck_assert(cfg.gamma_auto);
	ck_assert_uint_eq(cfg.nodes, 8);
	ck_assert(!cfg.engine.warm_start);
	ck_assert(!cfg.sync_records);
	ck_assert_int_eq(cfg.log_level, GSP_LOG_DEBUG);
	ck_assert_uint_eq(cfg.rekey_after_s, 5);
	ck_assert_uint_eq(cfg.drain_wait_ms, 0);
	ck_assert_uint_eq(cfg.leave_wait_ms, 86400000);
	ck_assert_uint_eq(cfg.max_local_trainers, 256);
	ck_assert_uint_eq(cfg.local_wait_ms, 0);
	ck_assert_uint_eq(cfg.n_peers, 2);
	ck_assert_str_eq(cfg.peers[0].endpoint, "127.0.0.1:7001");
	ck_assert_str_eq(cfg.metrics_listen, "[::1]:0");
	ck_assert_str_eq(cfg.peers[0].name, "rack 2 \"b\" \\\\ x");
	ck_assert_str_eq(cfg.peers[1].name, "");
	ck_assert_uint_eq(cfg.peers[0].line, 21);
	ck_assert_str_eq(cfg.peers[1].endpoint, "");
	ck_assert_uint_eq(cfg.peers[1].public_key[0], 32);
	ck_assert(cfg.peers[1].weight == 0.25f);
	ck_assert_uint_eq(cfg.peers[1].line, 25);
	ck_assert(!cfg.avg_finite);   /* off by default */
	gsp_daemon_config_clear(&cfg);
	gsp_daemon_config_clear(NULL);
	/* The last of its lines counts. */
	ck_assert_msg(parse("[Node]\nNodes = 8\nAverageSchedule = off\n"
			    "AverageSchedule = finite\n", &cfg, err) == 0, "%s", err);
	ck_assert(cfg.avg_finite);
	gsp_daemon_config_clear(&cfg);
	ck_assert_msg(parse("[Node]\nAverageSchedule = finite\nAverageSchedule = off\n",
			    &cfg, err) == 0, "%s", err);
	ck_assert(!cfg.avg_finite);
	gsp_daemon_config_clear(&cfg);
	/* The ring's matching schedule: this node's Index and its two ring
	 * neighbours' (0 and 7 are neighbours on 8). */
	ck_assert_msg(parse("[Node]\nNodes = 8\nAverageSchedule = matching\nIndex = 0\n"
			    "[Peer]\nPublicKey = " KEY_A "\nIndex = 7\n"
			    "[Peer]\nPublicKey = " KEY_B "\nIndex = 1\n", &cfg, err) == 0,
		      "%s", err);
	ck_assert(cfg.avg_finite && cfg.avg_matching);
	gsp_daemon_config_clear(&cfg);
}
END_TEST

/* An empty [Node] gets the documented defaults: Rank 4 (the quick
 * start's measured choice), not the engine's rank 1. */
START_TEST(test_defaults)
{
	gsp_daemon_config cfg;
	char err[256] = "";
	ck_assert_msg(parse("[Node]\n", &cfg, err) == 0, "%s", err);
	ck_assert_int_eq(cfg.engine.method, GSP_METHOD_POWERGOSSIP);
	ck_assert_uint_eq(cfg.engine.rank, 4);
	ck_assert_uint_eq(cfg.max_rank, 1024);
	ck_assert_int_eq(cfg.engine.wire, GSP_DTYPE_FLOAT32);
	ck_assert_uint_eq(cfg.max_staleness, 4);
	ck_assert_uint_eq(cfg.rekey_after_s, 120);
	ck_assert_uint_eq(cfg.drain_wait_ms, 2000);
	ck_assert_uint_eq(cfg.leave_wait_ms, 60000);
	ck_assert_uint_eq(cfg.max_local_trainers, 16);
	ck_assert_uint_eq(cfg.local_wait_ms, 50);
	ck_assert_str_eq(cfg.listen, "127.0.0.1:0");
	ck_assert_str_eq(cfg.socket_path, "gossipd.sock");
	gsp_daemon_config_clear(&cfg);
}
END_TEST

/* [Cluster]: its keys, and a keyless [Peer] (an Endpoint alone), which
 * it allows; the section may come after the [Peer]s. */
START_TEST(test_cluster)
{
	gsp_daemon_config cfg;
	char err[256] = "";
	uint8_t key[GSP_KEY_BYTES];
	ck_assert_msg(parse("[Node]\n[Peer]\nEndpoint = node-b:7000\n[Peer]\n"
			    "PublicKey = " KEY_A "\nEndpoint = node-c:7000\n"
			    "[Cluster]\nAuthority = " KEY_B "\nCertificate = /etc/a.cert\n"
			    "RevocationList = /etc/revoked\n", &cfg, err) == 0, "%s", err);
	ck_assert(cfg.cluster.have_authority);
	ck_assert_int_eq(gsp_key_from_base64(KEY_B, key), 0);
	ck_assert_mem_eq(cfg.cluster.authority, key, GSP_KEY_BYTES);
	ck_assert_str_eq(cfg.cluster.certificate, "/etc/a.cert");
	ck_assert_str_eq(cfg.cluster.revocation_list, "/etc/revoked");
	ck_assert_uint_eq(cfg.n_peers, 2);
	static const uint8_t zero[GSP_KEY_BYTES];
	ck_assert_mem_eq(cfg.peers[0].public_key, zero, GSP_KEY_BYTES);
	ck_assert_str_eq(cfg.peers[0].endpoint, "node-b:7000");
	gsp_daemon_config_clear(&cfg);
	/* Without [Cluster]: nothing set. */
	ck_assert_int_eq(parse("[Node]\n", &cfg, err), 0);
	ck_assert(!cfg.cluster.have_authority);
	ck_assert_str_eq(cfg.cluster.certificate, "");
	gsp_daemon_config_clear(&cfg);
	/* Membership's keys, with their defaults. */
	ck_assert_msg(parse("[Cluster]\nAuthority = " KEY_B "\nCertificate = /a.cert\n"
			    "Seed = seeds.example:7000\nAdvertise = 10.0.0.5:7000\n"
			    "Advertise = [fd00::5]:7000\nMaxMembers = 2\nLeaveOnStop = on\n",
			    &cfg, err) == 0,
		      "%s", err);
	ck_assert_uint_eq(cfg.cluster.n_advertise, 2);
	ck_assert_str_eq(cfg.cluster.advertise[0], "10.0.0.5:7000");
	ck_assert_str_eq(cfg.cluster.advertise[1], "[fd00::5]:7000");
	ck_assert_uint_eq(cfg.cluster.max_members, 2);
	ck_assert(cfg.cluster.leave_on_stop);
	ck_assert(!cfg.peers_computed);
	gsp_daemon_config_clear(&cfg);
	ck_assert_int_eq(parse("[Node]\n", &cfg, err), 0);
	ck_assert_uint_eq(cfg.cluster.n_advertise, 0);
	ck_assert_uint_eq(cfg.cluster.max_members, GSP_DEFAULT_MAX_MEMBERS);
	ck_assert(!cfg.cluster.leave_on_stop);
	gsp_daemon_config_clear(&cfg);
}
END_TEST

START_TEST(test_errors_name_the_line)
{
	static const struct {
		const char *text;
		const char *want;    /* prefix of the message */
	} cases[] = {
		{"[Node]\nRank = 0\n", "test.conf:2: Rank"},
		{"[Node]\nRank = 4x\n", "test.conf:2: Rank"},
		{"[Node]\nMaxRank = 0\n", "test.conf:2: MaxRank must be 1..1024"},
		{"[Node]\nMaxRank = 1025\n", "test.conf:2: MaxRank must be 1..1024"},
		{"[Node]\nMaxRank = 2\n\nRank = 3\n", "test.conf:4: Rank 3 is above MaxRank 2"},
		{"[Node]\n\nMaxRank = 2\n", "test.conf:3: Rank 4 (the default) is above MaxRank 2"},
		{"[Node]\nWirePrecision = half\n", "test.conf:2: WirePrecision takes float32, float16"},
		{"[Node]\nMethod = exact\nWirePrecision = bfloat16\n",
		 "test.conf:3: WirePrecision = bfloat16 applies to powergossip only, not Method = exact"},
		{"[Node]\n\nMethod = powergosip\n", "test.conf:3: unknown Method"},
		{"[Node]\nGamma = -1\n", "test.conf:2: Gamma"},
		{"[Node]\nGamma = nan\n", "test.conf:2: Gamma"},
		{"[Node]\nWarmStart = yes\n", "test.conf:2: WarmStart"},
		{"[Node]\n#\nSyncRecords = 1\n", "test.conf:3: SyncRecords takes on or off"},
		{"[Node]\nColour = blue\n", "test.conf:2: unknown key 'Colour'"},
		{"[Nodes]\nRank = 1\n", "test.conf:2: unknown section [Nodes]"},
		{"[Node]\nRank 4\n", "test.conf:2: syntax error"},
		{"[Node\nRank = 4\n", "test.conf:1: syntax error"},
		{"[Peer]\nPublicKey = abc\n", "test.conf:2: PublicKey"},
		{"[Peer]\nPublicKey = " KEY_A "x\n", "test.conf:2: PublicKey"},
		{"[Peer]\nEndpoint = 127.0.0.1:1\n", "test.conf:1: [Peer] without PublicKey"},
		/* [Cluster] (admission by certificate) */
		{"[Cluster]\nAuthority = abc\n", "test.conf:2: Authority is not a base64"},
		{"[Cluster]\nSeeds = x\n", "test.conf:2: unknown key 'Seeds' in [Cluster]"},
		{"[Cluster]\nCertificate = /a.cert\n",
		 "test.conf: [Cluster] Certificate and RevocationList need its Authority"},
		{"[Cluster]\nAuthority = " KEY_B "\n[Peer]\nName = x\n",
		 "test.conf:3: [Peer] without PublicKey needs an Endpoint"},
		{"[Cluster]\nAuthority = " KEY_B "\n[Peer]\nEndpoint = h:1\n[Peer]\n"
		 "Endpoint = h:1\n", "test.conf:5: Endpoint listed twice without PublicKey"},
		{"[Peer]\nPublicKey = " KEY_A "\n[Peer]\nPublicKey = " KEY_A "\n",
		 "test.conf:3: PublicKey listed twice"},
		{"[Peer]\nPublicKey = " KEY_A "\nWeight = 2\n", "test.conf:3: Weight"},
		{"[Node]\nMetricsListen = localhost:9464\n", "test.conf:2: MetricsListen"},
		{"[Node]\nMetricsListen = 127.0.0.1\n", "test.conf:2: MetricsListen"},
		{"[Node]\nMetricsListen = 127.0.0.1:65536\n", "test.conf:2: MetricsListen"},
		{"[Peer]\nPublicKey = " KEY_A "\nName = caf\xc3\xa9\n", "test.conf:3: Name"},
		{"[Peer]\nPublicKey = " KEY_A "\nName = a\tb\n", "test.conf:3: Name"},
		{"[Peer]\nPublicKey = " KEY_A "\nName = "
		 "0123456789012345678901234567890123456789012345678901234567890123\n",
		 "test.conf:3: Name"},
		{"[Node]\nGamma = auto\n", "test.conf: Gamma = auto needs Nodes"},
		/* Method after Gamma: the error still names Gamma's line */
		{"[Node]\nNodes = 4\nGamma = auto\nMethod = choco-sign\n",
		 "test.conf:3: Gamma = auto is exact gossip's step for the graph; a choco method"},
		{"[Node]\nMethod = choco-topk\nNodes = 4\nGamma = auto\n",
		 "test.conf:4: Gamma = auto is exact gossip's step"},
		{"[Node]\nAverageSchedule = yes\n",
		 "test.conf:2: AverageSchedule takes finite, matching or off"},
		{"[Node]\nTopology = torus\nNodes = 16\nAverageSchedule = matching\nIndex = 0\n",
		 "test.conf:4: AverageSchedule = matching is a ring's"},
		{"[Node]\nNodes = 7\nAverageSchedule = matching\nIndex = 0\n",
		 "test.conf:3: AverageSchedule = matching is a ring's"},
		{"[Node]\nNodes = 8\nAverageSchedule = matching\n",
		 "test.conf:3: AverageSchedule = matching needs this node's Index"},
		{"[Node]\nNodes = 8\nAverageSchedule = matching\nIndex = 8\n",
		 "test.conf:3: AverageSchedule = matching needs this node's Index"},
		{"[Node]\nNodes = 8\nAverageSchedule = matching\nIndex = 3\n\n[Peer]\nPublicKey = "
		 KEY_A "\n", "test.conf:6: AverageSchedule = matching: each [Peer] needs the "
		 "Index of a different ring neighbour (Index 3's are 2 and 4)"},
		{"[Node]\nNodes = 8\nAverageSchedule = matching\nIndex = 3\n\n[Peer]\nPublicKey = "
		 KEY_A "\nIndex = 5\n", "test.conf:6: AverageSchedule = matching: each [Peer]"},
		{"[Node]\nNodes = 8\nAverageSchedule = matching\nIndex = 0\n\n[Peer]\nPublicKey = "
		 KEY_A "\nIndex = 7\n[Peer]\nPublicKey = " KEY_B "\nIndex = 7\n",
		 "test.conf:9: AverageSchedule = matching: each [Peer]"},
		{"[Node]\nAverageSchedule = finite\n",
		 "test.conf:2: AverageSchedule = finite needs Nodes"},
		{"[Node]\nAverageSchedule = matching\n",
		 "test.conf:2: AverageSchedule = matching needs Nodes"},
		{"[Node]\nNodes = 4\nMethod = choco-sign\nGamma = 0.1\nAverageSchedule = matching\n",
		 "test.conf:5: AverageSchedule = matching runs exact rounds on single edges"},
		{"[Node]\nNodes = 4\nMethod = choco-sign\nGamma = 0.1\nAverageSchedule = finite\n",
		 "test.conf:5: AverageSchedule = finite runs exact rounds on single edges"},
		{"[Node]\nNodes = 4\nAverageSchedule = finite\n\n[Peer]\nPublicKey = " KEY_A
		 "\nWeight = 0.5\n", "test.conf:5: AverageSchedule = finite needs the "
		 "Metropolis-Hastings weights"},
		{"[Node]\nLogLevel = loud\n", "test.conf:2: LogLevel"},
		{"[Node]\nDrainWait = 3600001\n", "test.conf:2: DrainWait must be 0..3600000"},
		{"[Node]\n\nDrainWait = -1\n", "test.conf:3: DrainWait"},
		{"[Node]\nMaxLocalTrainers = 0\n", "test.conf:2: MaxLocalTrainers must be 1..256"},
		{"[Node]\nMaxLocalTrainers = 257\n", "test.conf:2: MaxLocalTrainers must be 1..256"},
		{"[Node]\nLocalWait = 3600001\n", "test.conf:2: LocalWait must be 0..3600000"},
		{"[Node]\nLeaveWait = 86400001\n", "test.conf:2: LeaveWait must be 0..86400000"},
		{"[Node]\nLeaveWait = 1m\n", "test.conf:2: LeaveWait must be"},
		{"[Node]\nRekeyAfterSeconds = 0\n", "test.conf:2: RekeyAfterSeconds must be 1..86400"},
		{"[Node]\nRekeyAfterSeconds = 86401\n", "test.conf:2: RekeyAfterSeconds"},
		{"[Node]\nRekeyAfterSeconds = 2m\n", "test.conf:2: RekeyAfterSeconds"},
		{"[Node]\nSocket = \n", "test.conf:2: bad Socket"},
		{"[Node]\nRank = 1\n\n\nMethod = exact\nNodes = 1\n", "test.conf:6: Nodes"},
		{"[Node]\nListenAddress = node-1:7000\n", "test.conf:2: ListenAddress must be a numeric"},
		{"[Node]\nListenAddress = 127.0.0.1\n", "test.conf:2: ListenAddress"},
		{"[Node]\nListenAddress = ::1:7000\n", "test.conf:2: ListenAddress"},
		{"[Peer]\nPublicKey = " KEY_A "\nEndpoint = a..b:1\n", "test.conf:3: bad Endpoint 'a..b:1'"},
		{"[Peer]\nPublicKey = " KEY_A "\nEndpoint = host:65536\n", "test.conf:3: bad Endpoint"},
		{"[Peer]\nPublicKey = " KEY_A "\nEndpoint = [zz]:1\n", "test.conf:3: bad Endpoint"},
		{"[Cluster]\nSeed = seeds.example\n", "test.conf:2: bad Seed 'seeds.example'"},
		{"[Cluster]\n\nSeed = seeds.example:0\n", "test.conf:3: bad Seed"},
		{"[Cluster]\nSeed = seeds.example:65536\n", "test.conf:2: bad Seed"},
		{"[Cluster]\nSeed = a..b:7000\n", "test.conf:2: bad Seed"},
		{"[Cluster]\nSeed = [zz:7000\n", "test.conf:2: bad Seed"},
		{"[Cluster]\nSeedSRV = gossip._tcp.example\n", "test.conf:2: bad SeedSRV"},
		{"[Cluster]\nSeedSRV = _gossip.tcp.example\n", "test.conf:2: bad SeedSRV"},
		{"[Cluster]\nSeedSRV = _gossip._tcp\n", "test.conf:2: bad SeedSRV"},
		{"[Cluster]\nSeedSRV = _gossip._tcp.example:7000\n", "test.conf:2: bad SeedSRV"},
		{"[Cluster]\nSeedSRV = _gossip._tcp..example\n", "test.conf:2: bad SeedSRV"},
		{"[Cluster]\nResolveIntervalSeconds = 0\n",
		 "test.conf:2: ResolveIntervalSeconds must be 1..86400"},
		{"[Cluster]\nResolveIntervalSeconds = 86401\n", "test.conf:2: ResolveIntervalSeconds"},
		{"[Cluster]\nResolveIntervalSeconds = 5s\n", "test.conf:2: ResolveIntervalSeconds"},
		{"[Cluster]\nSeeds = a:1\n", "test.conf:2: unknown key 'Seeds' in [Cluster]"},
		{"[Node]\nSeed = a:1\n", "test.conf:2: unknown key 'Seed' in [Node]"},
		{"[Clusters]\nSeed = a:1\n", "test.conf:2: unknown section [Clusters]"},
		/* Membership: Advertise and MaxMembers, and what they need. */
		{"[Cluster]\nAuthority = " KEY_B "\nCertificate = /a\nSeed = a:1\n"
		 "Advertise = node-1:7000\n", "test.conf:5: bad Advertise 'node-1:7000'"},
		{"[Cluster]\nAdvertise = 10.0.0.1\n", "test.conf:2: bad Advertise"},
		{"[Cluster]\nAdvertise = 10.0.0.1:65536\n", "test.conf:2: bad Advertise"},
		{"[Cluster]\nAdvertise = a:1\nAdvertise = 10.0.0.1:1\n", "test.conf:2: bad Advertise"},
		{"[Cluster]\nAdvertise = 10.0.0.1:1\nAdvertise = 10.0.0.2:1\nAdvertise = "
		 "10.0.0.3:1\nAdvertise = 10.0.0.4:1\nAdvertise = 10.0.0.5:1\n",
		 "test.conf:6: too many Advertise lines (at most 4)"},
		{"[Cluster]\nMaxMembers = 1\n", "test.conf:2: MaxMembers must be 2..10000"},
		{"[Cluster]\nMaxMembers = 10001\n", "test.conf:2: MaxMembers must be 2..10000"},
		{"[Cluster]\nMaxMembers = 1k\n", "test.conf:2: MaxMembers"},
		{"[Cluster]\nLeaveOnStop = yes\n", "test.conf:2: LeaveOnStop takes on or off, not 'yes'"},
		{"[Cluster]\nAdvertise = 10.0.0.1:7000\n",
		 "test.conf: [Cluster] Advertise is for membership, which needs an Authority"},
		{"[Cluster]\nAuthority = " KEY_B "\nAdvertise = 10.0.0.1:7000\n",
		 "test.conf: [Cluster] Advertise is for membership"},
		{"[Cluster]\nAuthority = " KEY_B "\nSeed = a:1\n",
		 "test.conf: [Cluster] membership (an Authority and seeds) needs this node's Certificate"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		gsp_daemon_config cfg;
		char err[256] = "";
		ck_assert_msg(parse(cases[i].text, &cfg, err) < 0, "accepted: %s",
			      cases[i].text);
		ck_assert_msg(strncmp(err, cases[i].want, strlen(cases[i].want)) == 0,
			      "case %zu: got '%s', want '%s...'", i, err, cases[i].want);
		gsp_daemon_config_clear(&cfg);
	}
}
END_TEST

/* [Cluster]: every Seed and SeedSRV kept in order with its line, the
 * interval; a 17th seed line refused by its line. */
START_TEST(test_cluster_seeds)
{
	static const char text[] =
		"[Node]\n"
		"Rank = 2\n"
		"[Cluster]\n"
		"Seed = seeds.gossip.svc:7000\n"
		"SeedSRV = _gossip._tcp.example.org\n"
		"Seed = [::1]:7001\n"
		"Seed = 10.0.0.1:7002\n"
		"ResolveIntervalSeconds = 2\n";
	gsp_daemon_config cfg;
	char err[256] = "";
	ck_assert_msg(parse(text, &cfg, err) == 0, "%s", err);
	ck_assert_uint_eq(cfg.n_seeds, 4);
	ck_assert_int_eq(cfg.seeds[0].kind, GSP_SEED_HOST);
	ck_assert_str_eq(cfg.seeds[0].text, "seeds.gossip.svc:7000");
	ck_assert_uint_eq(cfg.seeds[0].line, 4);
	ck_assert_int_eq(cfg.seeds[1].kind, GSP_SEED_SRV);
	ck_assert_str_eq(cfg.seeds[1].text, "_gossip._tcp.example.org");
	ck_assert_uint_eq(cfg.seeds[1].line, 5);
	ck_assert_str_eq(cfg.seeds[2].text, "[::1]:7001");
	ck_assert_str_eq(cfg.seeds[3].text, "10.0.0.1:7002");
	ck_assert_uint_eq(cfg.resolve_interval_s, 2);
	ck_assert_uint_eq(cfg.engine.rank, 2);
	gsp_daemon_config_clear(&cfg);

	ck_assert_msg(parse("[Node]\n", &cfg, err) == 0, "%s", err);
	ck_assert_uint_eq(cfg.n_seeds, 0);
	ck_assert_uint_eq(cfg.resolve_interval_s, 30);
	gsp_daemon_config_clear(&cfg);

	char many[2048];
	size_t len = (size_t)snprintf(many, sizeof(many), "[Cluster]\n");
	for (int i = 0; i < GSP_MAX_SEEDS + 1; i++)
		len += (size_t)snprintf(many + len, sizeof(many) - len, "%s\n",
					i % 2 ? "SeedSRV = _g._tcp.x" : "Seed = x:1");
	ck_assert_int_lt(parse(many, &cfg, err), 0);
	ck_assert_msg(strstr(err, "test.conf:18: too many Seed and SeedSRV lines (at most 16)"),
		      "%s", err);
	gsp_daemon_config_clear(&cfg);
	many[len - strlen("Seed = x:1\n")] = '\0';   /* 16 lines: accepted */
	ck_assert_msg(parse(many, &cfg, err) == 0, "%s", err);
	ck_assert_uint_eq(cfg.n_seeds, GSP_MAX_SEEDS);
	gsp_daemon_config_clear(&cfg);
}
END_TEST

START_TEST(test_long_line_and_nul)
{
	char text[600];
	gsp_daemon_config cfg;
	char err[256];
	snprintf(text, sizeof(text), "[Node]\nSocket = /%0300d\n", 0);
	ck_assert_int_lt(parse(text, &cfg, err), 0);
	ck_assert_msg(strstr(err, "test.conf:2: line longer") != NULL, "%s", err);
	gsp_daemon_config_clear(&cfg);
	static const char nul[] = "[Node]\nRank = 1\0\n";
	gsp_daemon_config_default(&cfg);
	ck_assert_int_lt(gsp_daemon_config_parse(nul, sizeof(nul) - 1, "x", &cfg,
						 err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "x:2: NUL") != NULL, "%s", err);
	ck_assert_int_eq(gsp_daemon_config_load("/nonexistent/gossipd.conf", &cfg,
						err, sizeof(err)), -ENOENT);
	ck_assert(strstr(err, "/nonexistent/gossipd.conf") != NULL);
}
END_TEST

START_TEST(test_keys)
{
	uint8_t k[GSP_KEY_BYTES], back[GSP_KEY_BYTES];
	char b64[45];
	for (int i = 0; i < GSP_KEY_BYTES; i++)
		k[i] = (uint8_t)(i * 7);
	gsp_key_to_base64(k, b64);
	ck_assert_uint_eq(strlen(b64), 44);
	ck_assert_int_eq(gsp_key_from_base64(b64, back), 0);
	ck_assert(memcmp(k, back, sizeof(k)) == 0);
	static const char *bad[] = {"", "AAAA", KEY_A "=", "!AECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
				    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8_"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_int_eq(gsp_key_from_base64(bad[i], back), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("daemon-config");
	TCase *tc = tcase_create("config");
	tcase_add_test(tc, test_valid);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_errors_name_the_line);
	tcase_add_test(tc, test_cluster);
	tcase_add_test(tc, test_cluster_seeds);
	tcase_add_test(tc, test_long_line_and_nul);
	tcase_add_test(tc, test_keys);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
