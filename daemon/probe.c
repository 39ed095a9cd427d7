/* probe: the failure detector on the loop (probe.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "log.h"
#include "members.h"
#include "probe.h"

uint32_t probe_id(const uint8_t key[GSP_KEY_BYTES])
{
	uint8_t hash[MEMBERS_HASH_BYTES];
	members_hash(key, hash);
	uint32_t id = (uint32_t)hash[0] | (uint32_t)hash[1] << 8 | (uint32_t)hash[2] << 16 |
		      (uint32_t)hash[3] << 24;
	return id == SWIM_ID_NONE ? SWIM_ID_NONE - 1 : id;
}

static size_t bucket_of(uint32_t id)
{
	return id & (PROBE_BUCKETS - 1);
}

/* The member probed as id, or NULL; SWIM_ID_NONE: a free slot, or NULL
 * if all SWIM_MEMBERS_MAX are taken. */
static probe_member *find(const probe *p, uint32_t id)
{
	if (id == SWIM_ID_NONE) {
		for (size_t i = 0; i < SWIM_MEMBERS_MAX; i++)
			if (p->member[i].id == SWIM_ID_NONE)
				return &p->member[i];
		return NULL;
	}
	for (uint16_t s = p->bucket[bucket_of(id)]; s != PROBE_NONE; s = p->member[s].next)
		if (p->member[s].id == id)
			return &p->member[s];
	return NULL;
}

/* m takes id, and its place in the index. */
static void index_add(probe *p, probe_member *m, uint32_t id)
{
	uint16_t *head = &p->bucket[bucket_of(id)];
	m->id = id;
	m->next = *head;
	*head = (uint16_t)(m - p->member);
}

/* m leaves the index, and its slot is free (wiped). */
static void index_remove(probe *p, probe_member *m)
{
	if (m->id != SWIM_ID_NONE) {
		uint16_t s = (uint16_t)(m - p->member);
		for (uint16_t *at = &p->bucket[bucket_of(m->id)]; *at != PROBE_NONE;
		     at = &p->member[*at].next)
			if (*at == s) {
				*at = m->next;
				break;
			}
	}
	sodium_memzero(m, sizeof(*m));
	m->id = SWIM_ID_NONE;
	m->next = PROBE_NONE;
}

/* ---- the detector's time ---------------------------------------------- */

static void on_timer(uv_timer_t *t);

/* The timer at the detector's next deadline. */
static void rearm(probe *p)
{
	uint64_t now = uv_now(p->loop), due = swim_next_deadline(p->sw);
	uv_timer_start(&p->timer, on_timer, due > now ? due - now : 0, 0);
}

static void on_timer(uv_timer_t *t)
{
	probe *p = t->data;
	swim_tick(p->sw, uv_now(p->loop));
	rearm(p);
}

/* ---- datagrams -------------------------------------------------------- */

static void swim_send(void *ctx, uint32_t to, const swim_msg *msg)
{
	probe *p = ctx;
	probe_member *m = find(p, to);
	uint8_t plain[SWIM_MSG_MAX], dgram[PROBE_DGRAM_MAX];
	size_t len;
	unsigned long long clen;
	if (!m || swim_msg_encode(msg, plain, sizeof(plain), &len) != 0)
		return;
	dgram[0] = PROBE_DGRAM_TYPE;
	dgram[1] = PROBE_DGRAM_VERSION;
	memcpy(dgram + 2, p->key->pub, GSP_KEY_BYTES);
	uint8_t *nonce = dgram + PROBE_DGRAM_HEAD;
	randombytes_buf(nonce, PROBE_DGRAM_NONCE);
	crypto_aead_xchacha20poly1305_ietf_encrypt(nonce + PROBE_DGRAM_NONCE, &clen, plain, len,
						   dgram, PROBE_DGRAM_HEAD, NULL, nonce, m->tx);
	uv_buf_t buf = uv_buf_init((char *)dgram,
				   (unsigned)(PROBE_DGRAM_HEAD + PROBE_DGRAM_NONCE + clen));
	if (uv_udp_try_send(&p->udp, &buf, 1, (const struct sockaddr *)&m->addr) < 0)
		p->counters.tx_dropped++;
	else
		p->counters.tx++;
}

static void swim_declare(void *ctx, uint32_t member, unsigned status, uint64_t incarnation)
{
	probe *p = ctx;
	probe_member *m = find(p, member);
	(void)incarnation;
	if (!m)
		return;    /* ourselves: a refutation */
	p->ops->verdict(p->ctx, m->key, status == GSP_MEMBER_DEAD);
}

static const swim_ops probe_swim_ops = {.send = swim_send, .declare = swim_declare};

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	probe *p = h->data;
	(void)suggested;
	*buf = uv_buf_init((char *)p->rxbuf, sizeof(p->rxbuf));
}

int probe_dgram_open(const probe *p, const uint8_t *d, size_t len, uint32_t *ret_id,
		     swim_msg *ret)
{
	uint8_t plain[SWIM_MSG_MAX];
	unsigned long long plen;
	size_t min = PROBE_DGRAM_HEAD + PROBE_DGRAM_NONCE + crypto_aead_xchacha20poly1305_ietf_ABYTES;
	if (len < min || len > PROBE_DGRAM_MAX || d[0] != PROBE_DGRAM_TYPE ||
	    d[1] != PROBE_DGRAM_VERSION)
		return -EBADMSG;
	uint32_t id = probe_id(d + 2);
	const probe_member *m = find(p, id);
	if (!m || memcmp(m->key, d + 2, GSP_KEY_BYTES))
		return -ENOENT;
	const uint8_t *nonce = d + PROBE_DGRAM_HEAD;
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &plen, NULL, nonce + PROBE_DGRAM_NONCE,
						       len - PROBE_DGRAM_HEAD - PROBE_DGRAM_NONCE,
						       d, PROBE_DGRAM_HEAD, nonce, m->rx) != 0 ||
	    swim_msg_decode(plain, (size_t)plen, ret) != 0)
		return -EBADMSG;
	*ret_id = id;
	return 0;
}

int probe_source_key(const struct sockaddr *sa, uint8_t ret_key[RATELIMIT_KEY])
{
	int err = ratelimit_key(sa, ret_key);
	if (err)
		return err;
	/* The address's key has room for the port: an IPv4-mapped one in its
	 * first two bytes (zero), an IPv6 /64 in bytes 8 and 9 (zeroed). */
	uint16_t port = sa->sa_family == AF_INET ?
			ntohs(((const struct sockaddr_in *)sa)->sin_port) :
			ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	size_t at = ret_key[10] == 0xff && ret_key[11] == 0xff ? 0 : 8;
	ret_key[at] = (uint8_t)(port >> 8);
	ret_key[at + 1] = (uint8_t)port;
	return 0;
}

static void on_recv(uv_udp_t *u, ssize_t nread, const uv_buf_t *buf,
		    const struct sockaddr *from, unsigned flags)
{
	probe *p = u->data;
	swim_msg msg;
	uint32_t id;
	uint8_t key[RATELIMIT_KEY];
	unsigned log;
	if (nread <= 0 || (flags & UV_UDP_PARTIAL)) {
		if (nread < 0 || (flags & UV_UDP_PARTIAL))
			p->counters.rx_refused++;
		return;
	}
	p->counters.rx++;
	if (!from || probe_source_key(from, key) != 0 ||
	    !ratelimit_take(p->limit, key, uv_now(p->loop), &log)) {
		p->counters.rx_limited++;
		if (log)
			gsp_info("probe: %u datagram(s) over a source's rate limit dropped", log);
		return;
	}
	int err = probe_dgram_open(p, (const uint8_t *)buf->base, (size_t)nread, &id, &msg);
	if (err) {
		if (err == -ENOENT)
			p->counters.rx_unknown++;
		else
			p->counters.rx_refused++;
		return;
	}
	swim_receive(p->sw, id, &msg, uv_now(p->loop));
	rearm(p);
}

/* ---- members ---------------------------------------------------------- */

static int session_keys(probe *p, probe_member *m)
{
	if (memcmp(p->key->pub, m->key, GSP_KEY_BYTES) < 0)
		return crypto_kx_client_session_keys(m->rx, m->tx, p->key->pub, p->key->priv,
						     m->key);
	return crypto_kx_server_session_keys(m->rx, m->tx, p->key->pub, p->key->priv, m->key);
}

static void to_sockaddr(const gsp_member_endpoint *ep, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (ep->family == 4) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, ep->addr, 4);
		in->sin_port = htons(ep->port);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, ep->addr, 16);
		in6->sin6_port = htons(ep->port);
	}
}

void probe_sync_begin(probe *p)
{
	if (p->on)
		p->pass++;
}

void probe_member_set(probe *p, const uint8_t key[GSP_KEY_BYTES],
		      const gsp_member_endpoint *ep, uint64_t incarnation)
{
	if (!p->on || !memcmp(key, p->key->pub, GSP_KEY_BYTES))
		return;
	uint32_t id = probe_id(key);
	probe_member *m = find(p, id);
	if (m && memcmp(m->key, key, GSP_KEY_BYTES)) {
		if (m->mark != p->pass)
			p->counters.collisions++;
		return;
	}
	if (m) {
		m->mark = p->pass;
		to_sockaddr(ep, &m->addr);
		if (incarnation <= m->incarnation)
			return;
		/* Restarted: probed afresh, alive at its new incarnation (it
		 * is in the detector's table: -ENOENT cannot happen).  Found
		 * dead in its last life, it is alive in this one: that verdict
		 * too, which the detector's fresh entry, alive from the start,
		 * never gives (without it the caller kept the member out of
		 * its graph for good, while STATUS showed it alive: found by
		 * tools/chaos). */
		const swim_member *sm = swim_member_get(p->sw, id);
		bool was_dead = sm && sm->status == GSP_MEMBER_DEAD;
		m->incarnation = incarnation;
		if (swim_member_remove(p->sw, id) != 0 ||
		    swim_member_add(p->sw, id, incarnation) != 0) {
			index_remove(p, m);
			return;
		}
		if (was_dead)
			p->ops->verdict(p->ctx, key, false);
		return;
	}
	if (!(m = find(p, SWIM_ID_NONE)))
		return;    /* SWIM_MEMBERS_MAX probed already */
	memcpy(m->key, key, GSP_KEY_BYTES);
	if (session_keys(p, m) != 0 || swim_member_add(p->sw, id, incarnation) != 0) {
		index_remove(p, m);
		return;
	}
	index_add(p, m, id);
	m->incarnation = incarnation;
	m->mark = p->pass;
	to_sockaddr(ep, &m->addr);
}

void probe_sync_end(probe *p)
{
	if (!p->on)
		return;
	for (size_t i = 0; i < SWIM_MEMBERS_MAX; i++) {
		probe_member *m = &p->member[i];
		if (m->id == SWIM_ID_NONE || m->mark == p->pass)
			continue;
		if (swim_member_remove(p->sw, m->id) != 0)
			gsp_warn("probe: member %08x was not in the detector", m->id);
		index_remove(p, m);
	}
	rearm(p);
}

int probe_local(const probe *p, struct sockaddr_storage *ret)
{
	int len = sizeof(*ret);
	return p->handles_ready ? uv_udp_getsockname(&p->udp, (struct sockaddr *)ret, &len)
				: -EBADF;
}

bool probe_revive(probe *p, const uint8_t key[GSP_KEY_BYTES])
{
	if (!p->on || probe_status(p, key) != GSP_MEMBER_DEAD ||
	    swim_member_revive(p->sw, probe_id(key)) != 0)
		return false;
	rearm(p);
	return true;
}

int probe_status(const probe *p, const uint8_t key[GSP_KEY_BYTES])
{
	if (!p->on)
		return -1;
	const swim_member *sm = swim_member_get(p->sw, probe_id(key));
	const probe_member *m = find(p, probe_id(key));
	return sm && m && !memcmp(m->key, key, GSP_KEY_BYTES) ? sm->status : -1;
}

/* ---- setup ------------------------------------------------------------ */

int probe_start(probe *p, uv_loop_t *loop, const gsp_keypair *key, const char *bind_addr,
		uint64_t incarnation, const probe_ops *ops, void *ctx, char *err,
		size_t err_len)
{
	struct sockaddr_storage ss;
	swim_config cfg;
	int rc;

	memset(p, 0, sizeof(*p));
	p->loop = loop;
	p->key = key;
	p->ops = ops;
	p->ctx = ctx;
	p->sw = calloc(1, sizeof(*p->sw));
	p->member = calloc(SWIM_MEMBERS_MAX, sizeof(*p->member));
	p->bucket = malloc(PROBE_BUCKETS * sizeof(*p->bucket));
	p->limit = malloc(sizeof(*p->limit));
	if (!p->sw || !p->member || !p->bucket || !p->limit) {
		probe_free(p);
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < SWIM_MEMBERS_MAX; i++) {
		p->member[i].id = SWIM_ID_NONE;
		p->member[i].next = PROBE_NONE;
	}
	for (size_t i = 0; i < PROBE_BUCKETS; i++)
		p->bucket[i] = PROBE_NONE;
	ratelimit_init(p->limit, PROBE_RATE_PER_S, PROBE_BURST);
	swim_config_default(&cfg);
	randombytes_buf(&cfg.seed, sizeof(cfg.seed));
	if ((rc = swim_init(p->sw, &cfg, &probe_swim_ops, p, probe_id(key->pub),
			    incarnation)) != 0) {
		probe_free(p);
		snprintf(err, err_len, "the failure detector: %s", strerror(-rc));
		return rc;
	}
	if (gsp_endpoint_numeric(bind_addr, &ss) != 0) {
		probe_free(p);
		snprintf(err, err_len, "cannot bind the probes to '%s'", bind_addr);
		return -EINVAL;
	}
	uv_udp_init(loop, &p->udp);
	uv_timer_init(loop, &p->timer);
	p->udp.data = p->timer.data = p;
	p->handles_ready = true;
	if ((rc = uv_udp_bind(&p->udp, (const struct sockaddr *)&ss, 0)) != 0 ||
	    (rc = uv_udp_recv_start(&p->udp, on_alloc, on_recv)) != 0) {
		snprintf(err, err_len, "probes on UDP %s: %s", bind_addr, uv_strerror(rc));
		probe_close(p);
		return rc;
	}
	p->on = true;
	rearm(p);
	return 0;
}

void probe_close(probe *p)
{
	if (!p->handles_ready)
		return;
	p->on = false;
	uv_udp_recv_stop(&p->udp);
	uv_timer_stop(&p->timer);
	uv_close((uv_handle_t *)&p->udp, NULL);
	uv_close((uv_handle_t *)&p->timer, NULL);
	p->handles_ready = false;
}

void probe_free(probe *p)
{
	if (p->member)
		sodium_memzero(p->member, SWIM_MEMBERS_MAX * sizeof(*p->member));
	free(p->member);
	free(p->sw);
	free(p->bucket);
	free(p->limit);
	p->member = NULL;
	p->sw = NULL;
	p->bucket = NULL;
	p->limit = NULL;
	p->on = false;
}
