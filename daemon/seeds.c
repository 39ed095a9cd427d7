/* seeds: [Cluster]'s seeds resolved on the loop, again every
 * ResolveIntervalSeconds; the merged list reported when it changes
 * (seeds.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "seeds.h"

/* One lookup in flight: the loop's request, and for SRV the answer the
 * worker fills.  Its own allocation, so a stop never frees it under a
 * worker. */
typedef struct seeds_lookup {
	union {
		uv_getaddrinfo_t gai;
		uv_work_t work;
	} req;
	seeds *s;
	uint16_t index;
	char name[GSP_ADDR_MAX];  /* the worker's copy of the SRV name */
	int rc;
	size_t n, cut;
	seed_addr addrs[SEEDS_MAX_PER_SEED];
	char err[128];
} lookup;

const char *seeds_state_name(seed_state st)
{
	switch (st) {
	case SEED_RESOLVED:
		return "resolved";
	case SEED_STALE:
		return "stale";
	case SEED_FAILED:
		return "failed";
	default:
		return "pending";
	}
}

bool seeds_same_config(const seeds *s, const gsp_daemon_config *cfg)
{
	if (s->n_seeds != cfg->n_seeds)
		return false;
	if (s->n_seeds && s->interval_s != cfg->resolve_interval_s)
		return false;
	for (size_t i = 0; i < s->n_seeds; i++)
		if (s->seed[i].cfg.kind != cfg->seeds[i].kind ||
		    strcmp(s->seed[i].cfg.text, cfg->seeds[i].text))
			return false;
	return true;
}

void seeds_addr_text(const seed_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	inet_ntop(a->family, a->addr, ip, sizeof(ip));
	snprintf(buf, len, a->family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip, a->port);
}

static int addr_cmp(const void *x, const void *y)
{
	const seed_addr *a = x, *b = y;
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	int c = memcmp(a->addr, b->addr, sizeof(a->addr));
	if (c)
		return c;
	if (a->port != b->port)
		return a->port < b->port ? -1 : 1;
	return a->seed < b->seed ? -1 : a->seed > b->seed;
}

size_t seeds_sort_unique(seed_addr *a, size_t n)
{
	if (n == 0)
		return 0;
	qsort(a, n, sizeof(*a), addr_cmp);
	size_t k = 1;
	for (size_t i = 1; i < n; i++) {
		const seed_addr *last = &a[k - 1];
		if (a[i].family == last->family && a[i].port == last->port &&
		    !memcmp(a[i].addr, last->addr, sizeof(last->addr)))
			continue;
		a[k++] = a[i];
	}
	return k;
}

static bool same_list(const seed_addr *a, size_t na, const seed_addr *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (addr_cmp(&a[i], &b[i]))
			return false;
	return true;
}

/* Every seed's last good answer into one list; reported if it changed. */
static void merge(seeds *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_seeds; i++) {
		memcpy(&s->scratch[n], s->seed[i].addrs, s->seed[i].n * sizeof(seed_addr));
		n += s->seed[i].n;
	}
	n = seeds_sort_unique(s->scratch, n);
	size_t cut = n > SEEDS_MAX_TOTAL ? n - SEEDS_MAX_TOTAL : 0;
	if (cut > s->cut)
		s->counters->seed_addresses_cut += cut - s->cut;
	s->cut = cut;
	n -= cut;
	if (same_list(s->list, s->n_list, s->scratch, n))
		return;
	memcpy(s->list, s->scratch, n * sizeof(seed_addr));
	s->n_list = n;
	gsp_info("seeds: %zu address(es)%s", n, cut ? " (more cut: too many)" : "");
	if (s->ops && s->ops->changed)
		s->ops->changed(s->ctx, s->list, s->n_list);
}

/* A lookup's end, on the loop: the seed's answer kept or its failure
 * noted (logged when what the seed says changes), then the merge. */
static void finish(lookup *l)
{
	seeds *s = l->s;
	seed *sd = &s->seed[l->index];
	sd->in_flight = NULL;
	if (s->run != SEEDS_RUNNING || l->rc == UV_ECANCELED) {
		free(l);
		return;
	}
	if (l->rc > 0) {
		size_t n = seeds_sort_unique(l->addrs, l->n);
		bool same = sd->state == SEED_RESOLVED &&
			    same_list(sd->addrs, sd->n, l->addrs, n);
		memcpy(sd->addrs, l->addrs, n * sizeof(seed_addr));
		sd->n = n;
		sd->cut = l->cut;
		s->counters->seed_addresses_cut += l->cut;
		sd->state = SEED_RESOLVED;
		sd->last_error[0] = '\0';
		sd->resolutions++;
		s->counters->seed_resolutions++;
		if (!same)
			gsp_info("seed '%s': %zu address(es)%s", sd->cfg.text, n,
				 l->cut ? " (more cut: too many)" : "");
	} else {
		seed_state st = sd->state == SEED_RESOLVED || sd->state == SEED_STALE
					? SEED_STALE : SEED_FAILED;
		if (st != sd->state || strcmp(sd->last_error, l->err))
			gsp_warn("seed '%s': %s%s", sd->cfg.text, l->err,
				 st == SEED_STALE ? " (its last addresses kept)" : "");
		sd->state = st;
		snprintf(sd->last_error, sizeof(sd->last_error), "%s", l->err);
		sd->failures++;
		s->counters->seed_failures++;
	}
	free(l);
	merge(s);
}

static void on_getaddrinfo(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	lookup *l = req->data;
	l->rc = status;
	if (status < 0)
		snprintf(l->err, sizeof(l->err), "cannot resolve: %s", uv_strerror(status));
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		seed_addr a = {.family = (uint8_t)ai->ai_family, .seed = l->index};
		if (ai->ai_family == AF_INET) {
			const struct sockaddr_in *in = (const void *)ai->ai_addr;
			memcpy(a.addr, &in->sin_addr, 4);
			a.port = ntohs(in->sin_port);
		} else if (ai->ai_family == AF_INET6) {
			const struct sockaddr_in6 *in6 = (const void *)ai->ai_addr;
			memcpy(a.addr, &in6->sin6_addr, 16);
			a.port = ntohs(in6->sin6_port);
		} else {
			continue;
		}
		if (l->n < SEEDS_MAX_PER_SEED)
			l->addrs[l->n++] = a;
		else
			l->cut++;
	}
	uv_freeaddrinfo(res);
	if (status == 0 && l->n == 0) {
		l->rc = UV_EAI_NODATA;
		snprintf(l->err, sizeof(l->err), "cannot resolve: no addresses");
	} else if (status == 0) {
		l->rc = (int)l->n;
	}
	finish(l);
}

static void srv_work(uv_work_t *req)
{
	lookup *l = req->data;
	l->rc = seeds_srv_lookup(l->name, l->index, l->addrs,
				 SEEDS_MAX_PER_SEED, &l->cut, l->err, sizeof(l->err));
	l->n = l->rc > 0 ? (size_t)l->rc : 0;
}

static void srv_done(uv_work_t *req, int status)
{
	lookup *l = req->data;
	if (status == UV_ECANCELED)
		l->rc = UV_ECANCELED;
	finish(l);
}

/* Starts one seed's lookup unless one is under way. */
static void resolve(seeds *s, uint16_t i)
{
	seed *sd = &s->seed[i];
	if (sd->in_flight)
		return;
	lookup *l = calloc(1, sizeof(*l));
	if (!l) {
		gsp_warn("seed '%s': out of memory", sd->cfg.text);
		return;
	}
	l->s = s;
	l->index = i;
	int rc;
	if (sd->cfg.kind == GSP_SEED_SRV) {
		snprintf(l->name, sizeof(l->name), "%s", sd->cfg.text);
		l->req.work.data = l;
		rc = uv_queue_work(s->loop, &l->req.work, srv_work, srv_done);
	} else {
		char host[GSP_HOSTNAME_MAX + 1], port[8];
		uint16_t port_no = 0;
		if (gsp_endpoint_split(sd->cfg.text, host, sizeof(host), &port_no)) {
			free(l);    /* the config checked it */
			return;
		}
		snprintf(port, sizeof(port), "%u", port_no);
		struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
					 .ai_flags = AI_NUMERICSERV};
		l->req.gai.data = l;
		rc = uv_getaddrinfo(s->loop, &l->req.gai, on_getaddrinfo, host, port, &hints);
	}
	if (rc) {
		gsp_warn("seed '%s': cannot start a lookup: %s", sd->cfg.text, uv_strerror(rc));
		free(l);
		return;
	}
	sd->in_flight = l;
}

static void on_timer(uv_timer_t *t)
{
	seeds *s = t->data;
	for (size_t i = 0; i < s->n_seeds; i++)
		resolve(s, (uint16_t)i);
}

int seeds_start(seeds *s, uv_loop_t *loop, const gsp_daemon_config *cfg,
		counters *c, const seeds_ops *ops, void *ctx)
{
	memset(s, 0, sizeof(*s));
	s->loop = loop;
	s->counters = c;
	s->ops = ops;
	s->ctx = ctx;
	s->interval_s = cfg->resolve_interval_s;
	s->n_seeds = cfg->n_seeds;
	for (size_t i = 0; i < cfg->n_seeds; i++)
		s->seed[i].cfg = cfg->seeds[i];
	int rc = uv_timer_init(loop, &s->timer);
	if (rc)
		return rc;
	s->timer.data = s;
	uint64_t ms = (uint64_t)s->interval_s * 1000;
	if ((rc = uv_timer_start(&s->timer, on_timer, 0, ms)) != 0) {
		uv_close((uv_handle_t *)&s->timer, NULL);
		return rc;
	}
	uv_unref((uv_handle_t *)&s->timer);
	s->run = SEEDS_RUNNING;
	gsp_info("seeds: %zu seed(s), resolved every %u s", s->n_seeds, s->interval_s);
	return 0;
}

void seeds_stop(seeds *s)
{
	if (s->run != SEEDS_RUNNING)
		return;
	s->run = SEEDS_OFF;
	uv_timer_stop(&s->timer);
	uv_close((uv_handle_t *)&s->timer, NULL);
	for (size_t i = 0; i < s->n_seeds; i++)
		if (s->seed[i].in_flight)
			uv_cancel((uv_req_t *)&s->seed[i].in_flight->req);
}
