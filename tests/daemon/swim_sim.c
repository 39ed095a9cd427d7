/*
 * swim_sim: a deterministic simulation of daemon/swim.c (the failure
 * detector).  Per seed: N members on a simulated network (delay 1..20 ms,
 * 1 % loss, every message through the byte codec); one member, the
 * "hogged" one, has a CPU hog for HOG_MS: it stalls for up to 3 s at a
 * time (gaps of up to 1 s between stalls), and what falls in a stall (its
 * ticks, then its messages, as a libuv loop runs timers first) is handled
 * at the stall's end; another member stops answering (crashes) at a random
 * time.  It asserts: no live member is declared dead by anyone; the
 * crashed one is declared dead by every live member within BOUND_MS (the
 * hogged one within BOUND_MS plus a stall); at the end, after SETTLE_MS
 * without the hog, every live member sees every other alive (suspicions
 * refuted).  It prints what it measured; a failing seed prints its replay
 * command (its options, --seed N --trace: every declaration, in order).
 *
 * usage: swim_sim [--seeds N] [--first N] [--seed N] [--nodes N] [--trace]
 *                 [--stall-max MS] [--gap-max MS] [--hog-may-die]
 *                 [--no-lifeguard] [--expect-false-deaths]
 *                 [--interval MS] [--timeout MS] [--suspicion-min MS]
 *                 [--suspicion-max MS]
 * --stall-max, --gap-max: the hog's stalls (default 3000) and the time
 * between them (default 1000).  --hog-may-die: the hogged member may be
 * declared dead (its stalls outlast the timeouts), and neither detection
 * times nor its own view are judged: what is judged is that no other
 * member is declared dead, by the hogged member least of all.
 * --no-lifeguard runs with lhm_max = 0 (no local health: the mutation);
 * --expect-false-deaths then passes only if some seed declared a live
 * member dead.  The last four replace swim's defaults.
 * GSP_SIM_SEEDS_DIVISOR=N in the environment runs seeds/N (tools/run-tests:
 * 2 in build/, 10 under the sanitizers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swim.h"

#define NODES_MAX 64
#define HOG_MS 120000
#define SETTLE_MS 15000
#define BOUND_MS 5000           /* as the summary prints it */
static unsigned gap_max_ms = 1000;
#define STALLS_MAX (HOG_MS / 1 + 1)
#define PKTS_MAX (1 << 15)
#define EVENTS_MAX 300000ULL     /* per seed; about 60,000 are used */
#define FAILS_MAX 10             /* the sweep stops after as many failed seeds */

typedef struct node {
	swim s;
	uint32_t id;
	bool crashed;
	uint64_t tick_at;
	uint64_t detected;          /* when it declared the crashed one dead */
} node;

typedef struct pkt {
	uint64_t at, serial;
	uint16_t from, to;
	uint8_t len;
	uint8_t buf[SWIM_MSG_MAX];
} pkt;

typedef struct run {
	unsigned n, hog, dead;
	uint64_t now, crash_at, rng, serial;
	node *nodes;
	pkt *heap;
	unsigned n_pkts;
	uint64_t *stall_start, *stall_end;
	unsigned n_stalls;
	/* What it measured. */
	unsigned false_deaths, suspected_live, hog_suspected, hog_deaths;
	uint32_t first_false_by, first_false_of;
	uint64_t first_false_at;
	bool trace, overflow;
} run;

static run R;
static unsigned stall_max_ms = 3000;
static bool hog_may_die;
static swim_config tuned;      /* the defaults, or as the options say */

static uint64_t rnd(uint64_t *st)
{
	uint64_t z = (*st += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t uniform(uint64_t lo, uint64_t hi)
{
	return lo + rnd(&R.rng) % (hi - lo + 1);
}

/* When the member handles something that comes at t: the hogged one at
 * the end of the stall t falls in. */
static uint64_t handled_at(unsigned who, uint64_t t)
{
	if (who != R.hog)
		return t;
	unsigned lo = 0, hi = R.n_stalls;
	while (lo < hi) {          /* the first stall ending after t */
		unsigned mid = (lo + hi) / 2;
		if (R.stall_end[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < R.n_stalls && R.stall_start[lo] <= t)
		return R.stall_end[lo];
	return t;
}

static bool before(const pkt *a, const pkt *b)
{
	return a->at < b->at || (a->at == b->at && a->serial < b->serial);
}

static void heap_push(const pkt *p)
{
	if (R.n_pkts == PKTS_MAX) {
		R.overflow = true;
		return;
	}
	unsigned i = R.n_pkts++;
	while (i && before(p, &R.heap[(i - 1) / 2])) {
		R.heap[i] = R.heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	R.heap[i] = *p;
}

static void heap_pop(pkt *ret)
{
	*ret = R.heap[0];
	pkt last = R.heap[--R.n_pkts];
	unsigned i = 0;
	for (;;) {
		unsigned c = 2 * i + 1;
		if (c >= R.n_pkts)
			break;
		if (c + 1 < R.n_pkts && before(&R.heap[c + 1], &R.heap[c]))
			c++;
		if (!before(&R.heap[c], &last))
			break;
		R.heap[i] = R.heap[c];
		i = c;
	}
	if (R.n_pkts)
		R.heap[i] = last;
}

static void on_send(void *ctx, uint32_t to, const swim_msg *msg)
{
	node *from = ctx;
	pkt p = { .from = (uint16_t)from->id, .to = (uint16_t)to };
	size_t len;
	if (swim_msg_encode(msg, p.buf, sizeof(p.buf), &len) != 0) {
		fprintf(stderr, "swim_sim: swim sent a message it cannot encode\n");
		exit(2);
	}
	p.len = (uint8_t)len;
	if (to >= R.n || uniform(1, 100) == 1)
		return;                                 /* lost */
	p.at = handled_at(to, R.now + uniform(1, 20));
	p.serial = R.serial++;
	heap_push(&p);
}

static const char *status_name(unsigned st)
{
	const char *n = gsp_member_status_name(st);
	return n ? n : "?";
}

static void on_declare(void *ctx, uint32_t member, unsigned status, uint64_t inc)
{
	node *by = ctx;
	if (R.trace)
		printf("%8llu ms  %2u: %2u %s (incarnation %llu)\n",
		       (unsigned long long)R.now, by->id, member, status_name(status),
		       (unsigned long long)inc);
	if (member == by->id || member >= R.n)
		return;
	bool gone = member == R.dead && R.nodes[member].crashed;
	if (status == GSP_MEMBER_DEAD && gone) {
		if (!by->detected)
			by->detected = R.now;
	} else if (status == GSP_MEMBER_DEAD && hog_may_die && member == R.hog) {
		R.hog_deaths++;
	} else if (status == GSP_MEMBER_DEAD) {
		if (!R.false_deaths++) {
			R.first_false_by = by->id;
			R.first_false_of = member;
			R.first_false_at = R.now;
		}
	} else if (status == GSP_MEMBER_SUSPECT && !gone) {
		R.suspected_live++;
		R.hog_suspected += member == R.hog;
	}
}

static const swim_ops sim_ops = { .send = on_send, .declare = on_declare };

static void stalls(void)
{
	uint64_t t = uniform(0, gap_max_ms);
	R.n_stalls = 0;
	while (t < HOG_MS && R.n_stalls < STALLS_MAX) {
		uint64_t len = uniform(1, stall_max_ms);
		R.stall_start[R.n_stalls] = t;
		R.stall_end[R.n_stalls++] = t + len;
		t += len + uniform(1, gap_max_ms);
	}
}

static void rearm(node *nd)
{
	uint64_t d = swim_next_deadline(&nd->s);
	nd->tick_at = handled_at(nd->id, d > R.now ? d : R.now);
}

/* One seed: 0 if it held, 1 if not (reasons printed). */
static int sim_seed(unsigned long long seed, unsigned n, unsigned lhm_max,
		    uint64_t *ret_detect)
{
	swim_config cfg;
	memset(&R.n, 0, offsetof(run, nodes) - offsetof(run, n));
	R.n = n;
	R.rng = seed * 0x2545F4914F6CDD1DULL + 1;
	R.hog = (unsigned)uniform(0, n - 1);
	R.dead = (R.hog + 1 + (unsigned)uniform(0, n - 2)) % n;
	R.crash_at = uniform(20000, HOG_MS - 20000);
	R.n_pkts = 0;
	R.false_deaths = R.suspected_live = R.hog_suspected = R.hog_deaths = 0;
	R.overflow = false;
	stalls();
	for (unsigned i = 0; i < n; i++) {
		node *nd = &R.nodes[i];
		cfg = tuned;
		cfg.lhm_max = lhm_max;
		cfg.seed = seed * 1000 + i;
		if (swim_init(&nd->s, &cfg, &sim_ops, nd, i, 1) != 0)
			exit(2);
		nd->id = i;
		nd->crashed = false;
		nd->detected = 0;
		for (unsigned j = 0; j < n; j++)
			if (j != i && swim_member_add(&nd->s, j, 1) != 0)
				exit(2);
		nd->tick_at = handled_at(i, uniform(0, cfg.probe_interval_ms));
	}
	/* Bounded: a detector that floods (a bug) fails the seed, not the
	 * test's time limit. */
	uint64_t events = 0;
	for (; events < EVENTS_MAX; events++) {
		node *next = NULL;
		for (unsigned i = 0; i < n; i++)
			if (!R.nodes[i].crashed && (!next || R.nodes[i].tick_at < next->tick_at))
				next = &R.nodes[i];
		uint64_t t = next->tick_at;
		bool msg = R.n_pkts && R.heap[0].at < t;
		if (msg)
			t = R.heap[0].at;
		if (t > HOG_MS + SETTLE_MS)
			break;
		R.now = t;
		if (!R.nodes[R.dead].crashed && t >= R.crash_at) {
			R.nodes[R.dead].crashed = true;
			if (R.trace)
				printf("%8llu ms  %2u stops\n", (unsigned long long)t, R.dead);
			continue;
		}
		if (!msg) {
			swim_tick(&next->s, t);
			rearm(next);
			continue;
		}
		pkt p;
		swim_msg m;
		heap_pop(&p);
		node *to = &R.nodes[p.to];
		if (to->crashed)
			continue;
		if (swim_msg_decode(p.buf, p.len, &m) != 0) {
			fprintf(stderr, "swim_sim: a message swim sent does not decode\n");
			exit(2);
		}
		swim_receive(&to->s, p.from, &m, t);
		rearm(to);
	}
	int bad = 0;
	uint64_t worst = 0;
	if (events == EVENTS_MAX) {
		printf("seed %llu: more than %llu events (a message storm?)\n", seed, EVENTS_MAX);
		bad = 1;
	}
	for (unsigned i = 0; i < n; i++) {
		node *nd = &R.nodes[i];
		if (nd->crashed)
			continue;
		/* The hogged member handles the news up to a stall late. */
		uint64_t bound = BOUND_MS + (i == R.hog ? stall_max_ms : 0);
		if (hog_may_die)        /* only the accusations are judged */
			bound = UINT64_MAX;
		if (i == R.hog && hog_may_die)
			continue;       /* cut off for long, it may never hear */
		if (!nd->detected || nd->detected - R.crash_at > bound) {
			printf("seed %llu: member %u declared the stopped member %u dead %s\n",
			       seed, i, R.dead, nd->detected ? "too late" : "never");
			bad = 1;
		}
		if (i != R.hog && nd->detected && nd->detected - R.crash_at > worst)
			worst = nd->detected - R.crash_at;
		for (unsigned j = 0; j < n; j++) {
			const swim_member *m = swim_member_get(&nd->s, j);
			if (j == i || j == R.dead || !m || m->status == GSP_MEMBER_ALIVE)
				continue;
			printf("seed %llu: at the end member %u still sees live member %u %s\n",
			       seed, i, j, status_name(m->status));
			bad = 1;
		}
	}
	if (R.false_deaths) {
		printf("seed %llu: %u declarations of a live member dead, the first by %u "
		       "of %u at %llu ms (hogged member %u)\n", seed, R.false_deaths,
		       R.first_false_by, R.first_false_of,
		       (unsigned long long)R.first_false_at, R.hog);
		bad = 1;
	}
	if (R.overflow) {
		printf("seed %llu: the simulated network overflowed\n", seed);
		bad = 1;
	}
	*ret_detect = worst;
	return bad;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The command line again, for one seed with --trace. */
static void print_replay(int argc, char **argv, unsigned long long seed)
{
	printf(" %s", argv[0]);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seeds") || !strcmp(argv[i], "--first") ||
		    !strcmp(argv[i], "--seed")) {
			i++;
			continue;
		}
		if (strcmp(argv[i], "--trace"))
			printf(" %s", argv[i]);
	}
	printf(" --seed %llu --trace\n", seed);
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--seeds N] [--first N] [--seed N] [--nodes N] [--trace]\n"
		"  [--stall-max MS] [--gap-max MS] [--hog-may-die] [--no-lifeguard]\n"
		"  [--expect-false-deaths] [--interval MS] [--timeout MS]\n"
		"  [--suspicion-min MS] [--suspicion-max MS]\n", prog);
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long long seeds = 500, first = 1;
	unsigned n = 16, lhm_max = SWIM_LHM_MAX;
	bool expect = false;
	swim_config_default(&tuned);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool val = i + 1 < argc;
		if (!strcmp(a, "--seeds") && val)
			seeds = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(a, "--first") && val)
			first = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(a, "--seed") && val) {
			first = strtoull(argv[++i], NULL, 10);
			seeds = 1;
		} else if (!strcmp(a, "--nodes") && val)
			n = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(a, "--interval") && val)
			tuned.probe_interval_ms = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(a, "--timeout") && val)
			tuned.probe_timeout_ms = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(a, "--suspicion-min") && val)
			tuned.suspicion_min_ms = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(a, "--suspicion-max") && val)
			tuned.suspicion_max_ms = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(a, "--stall-max") && val)
			stall_max_ms = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(a, "--gap-max") && val)
			gap_max_ms = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(a, "--hog-may-die"))
			hog_may_die = true;
		else if (!strcmp(a, "--no-lifeguard"))
			lhm_max = 0;
		else if (!strcmp(a, "--expect-false-deaths"))
			expect = true;
		else if (!strcmp(a, "--trace"))
			R.trace = true;
		else
			usage(argv[0]);
	}
	if (n < 3 || n > NODES_MAX || !seeds || !stall_max_ms)
		usage(argv[0]);
	/* GSP_SIM_SEEDS_DIVISOR=N (tools/run-tests: 2 in build/, 10 under
	 * the sanitizers, enough for memory errors): seeds/N; meson test
	 * alone runs them all; not
	 * for --expect-false-deaths, whose finding needs its seeds. */
	const char *div = getenv("GSP_SIM_SEEDS_DIVISOR");
	if (div && !expect && strtoull(div, NULL, 10) > 1) {
		seeds /= strtoull(div, NULL, 10);
		if (!seeds)
			seeds = 1;
	}
	R.nodes = calloc(n, sizeof(node));
	R.heap = malloc(PKTS_MAX * sizeof(pkt));
	R.stall_start = malloc(STALLS_MAX * sizeof(uint64_t));
	R.stall_end = malloc(STALLS_MAX * sizeof(uint64_t));
	uint64_t *detect = malloc(seeds * sizeof(uint64_t));
	if (!R.nodes || !R.heap || !R.stall_start || !R.stall_end || !detect)
		return 2;
	unsigned long long failed = 0, with_false = 0, first_failed = 0;
	unsigned long long suspected = 0, hog_suspected = 0, refuted = 0, hog_deaths = 0;
	for (unsigned long long k = 0; k < seeds; k++) {
		int bad = sim_seed(first + k, n, lhm_max, &detect[k]);
		if (bad && !failed++)
			first_failed = first + k;
		if (failed == FAILS_MAX && !expect) {
			printf("stopped after %u failed seeds\n", FAILS_MAX);
			seeds = k + 1;
		}
		with_false += R.false_deaths > 0;
		suspected += R.suspected_live;
		hog_deaths += R.hog_deaths;
		hog_suspected += R.hog_suspected;
		refuted += R.nodes[R.hog].s.stats.refutations;
	}
	qsort(detect, seeds, sizeof(uint64_t), cmp_u64);
	printf("%llu seeds, %u members, Lifeguard %s: the stopped member declared dead "
	       "by all in median %llu ms, max %llu ms (bound %s); %llu seeds with a live "
	       "member declared dead; %llu suspicions of live members (%llu of the "
	       "hogged one), %llu refutations by the hogged one\n",
	       seeds, n, lhm_max ? "on" : "off",
	       (unsigned long long)detect[seeds / 2], (unsigned long long)detect[seeds - 1],
	       hog_may_die ? "not judged" : "5000", with_false, suspected, hog_suspected,
	       refuted);
	if (hog_may_die)
		printf("the hogged member (stalls up to %u ms) was declared dead %llu times\n",
		       stall_max_ms, hog_deaths);
	int rc = 0;
	if (expect && !with_false) {
		printf("FAIL: expected the hog to cause a false death without Lifeguard\n");
		rc = 1;
	} else if (expect) {
		printf("as expected without Lifeguard: false deaths in %llu of %llu seeds\n",
		       with_false, seeds);
	} else if (failed) {
		printf("FAIL: %llu seeds failed; replay the first:", failed);
		print_replay(argc, argv, first_failed);
		rc = 1;
	} else if (!hog_suspected || !refuted) {
		printf("FAIL: the hogged member was never suspected and refuted: the hog did nothing\n");
		rc = 1;
	}
	free(detect);
	free(R.stall_end);
	free(R.stall_start);
	free(R.heap);
	free(R.nodes);
	return rc;
}
