/* membership: this node's view of the cluster (membership.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "membership.h"

/* The list to check against: none when it lists no key (an empty list
 * names no authority either). */
static const gsp_revoke *listed(const gsp_revoke *revoked)
{
	return revoked && revoked->count ? revoked : NULL;
}

static void set_err(char *err, size_t err_len, const char *msg)
{
	if (err && err_len)
		snprintf(err, err_len, "%s", msg);
}

int membership_init(membership *ms, const gsp_keypair *key,
		    const membership_config *cfg, const membership_ops *ops,
		    void *ctx, uint64_t now_ms, uint64_t unix_now, char *err,
		    size_t err_len)
{
	uint8_t sign_pk[GSP_SIGN_PUBLIC_BYTES];
	int r;

	memset(ms, 0, sizeof(*ms));
	if (!cfg->authority) {
		set_err(err, err_len, "membership needs an Authority");
		return -EINVAL;
	}
	if (!cfg->cert) {
		set_err(err, err_len, "membership needs this node's Certificate");
		return -EINVAL;
	}
	if (!cfg->n_endpoints || cfg->n_endpoints > GSP_MEMBER_ENDPOINTS_MAX) {
		set_err(err, err_len, "membership needs 1 to 4 endpoints to advertise");
		return -EINVAL;
	}
	gsp_member_signing_key(key->priv, sign_pk, ms->sign_sk);
	if (memcmp(cfg->cert->node_key, key->pub, GSP_KEY_BYTES) ||
	    memcmp(cfg->cert->sign_key, sign_pk, GSP_SIGN_PUBLIC_BYTES)) {
		set_err(err, err_len, "the Certificate names another node's keys");
		return -EINVAL;
	}
	if (gsp_cert_verify(cfg->cert, cfg->authority, unix_now, listed(cfg->revoked)) != 0) {
		set_err(err, err_len, "the Certificate does not verify against the Authority now");
		return -EINVAL;
	}
	memcpy(ms->authority, cfg->authority, GSP_SIGN_PUBLIC_BYTES);
	ms->revoked = cfg->revoked;
	ms->topology = cfg->topology;
	ms->ops = ops;
	ms->ctx = ctx;

	ms->self.version = GSP_MEMBER_VERSION;
	memcpy(ms->self.node_key, key->pub, GSP_KEY_BYTES);
	ms->self.incarnation = cfg->incarnation;
	ms->self.status = GSP_MEMBER_ALIVE;
	ms->self.n_endpoints = (uint8_t)cfg->n_endpoints;
	memcpy(ms->self.endpoints, cfg->endpoints, cfg->n_endpoints * sizeof(*cfg->endpoints));
	ms->self.has_cert = true;
	ms->self.cert = *cfg->cert;
	if (gsp_member_sign(&ms->self, ms->sign_sk) != 0) {
		set_err(err, err_len, "our member record does not encode (an endpoint?)");
		return -EINVAL;
	}
	r = members_init(&ms->table, key->pub, cfg->max_members);
	if (r) {
		set_err(err, err_len, r == -ENOMEM ? "out of memory" : "MaxMembers out of range");
		return r;
	}
	ms->nb = calloc(cfg->max_members, sizeof(*ms->nb));
	if (!ms->nb || members_set_self(&ms->table, &ms->self, now_ms) != 0) {
		membership_free(ms);
		set_err(err, err_len, "out of memory");
		return -ENOMEM;
	}
	ms->graph_dirty = true;
	return 0;
}

void membership_free(membership *ms)
{
	members_free(&ms->table);
	free(ms->nb);
	sodium_memzero(ms->sign_sk, sizeof(ms->sign_sk));
	ms->nb = NULL;
}

void membership_set_revoked(membership *ms, const gsp_revoke *revoked)
{
	ms->revoked = revoked;
	ms->graph_dirty = true;
}

/* ---- sessions ---------------------------------------------------------- */

static membership_session *session_of(membership *ms, const void *handle)
{
	for (size_t i = 0; i < ms->n_session; i++)
		if (ms->session[i].handle == handle)
			return &ms->session[i];
	return NULL;
}

int membership_session_up(membership *ms, void *handle)
{
	membership_session *s = session_of(ms, NULL);

	if (!handle)
		return -EINVAL;
	if (!s) {
		if (ms->n_session == MEMBERSHIP_SESSIONS_MAX)
			return -ENOSPC;
		s = &ms->session[ms->n_session++];
	}
	*s = (membership_session){ .handle = handle, .ask = true };
	return 0;
}

void membership_session_down(membership *ms, void *handle)
{
	membership_session *s = handle ? session_of(ms, handle) : NULL;

	if (!s)
		return;
	*s = (membership_session){ 0 };
	/* Its pushes go to every session now (a later session may reuse
	 * the handle's address). */
	for (size_t i = 0; i < ms->n_push; i++)
		if (ms->push[i].from == handle)
			ms->push[i].from = NULL;
}

/* ---- records in -------------------------------------------------------- */

static void push(membership *ms, const uint8_t key[GSP_KEY_BYTES], void *from)
{
	for (size_t i = 0; i < ms->n_push; i++)
		if (!memcmp(ms->push[i].key, key, GSP_KEY_BYTES)) {
			/* The newest record goes to everyone but its source. */
			ms->push[i].from = from;
			return;
		}
	if (ms->n_push == MEMBERSHIP_PUSH_MAX) {
		ms->counters.push_dropped++;
		return;
	}
	memcpy(ms->push[ms->n_push].key, key, GSP_KEY_BYTES);
	ms->push[ms->n_push++].from = from;
}

/* A record about us newer than ours: ours goes above it. */
static void refute(membership *ms, const gsp_member *rec, uint64_t now_ms)
{
	ms->self.incarnation = rec->incarnation + 1;
	if (gsp_member_sign(&ms->self, ms->sign_sk) != 0 ||
	    members_set_self(&ms->table, &ms->self, now_ms) != 0)
		return;    /* cannot happen: the record signed before */
	ms->counters.refutations++;
	push(ms, ms->self.node_key, NULL);
}

/* The session's budget of records (MEMBERSHIP_RECORDS_PER_S), filled to
 * now_ms; its size. */
static uint64_t refill(const membership *ms, membership_session *s, uint64_t now_ms)
{
	uint64_t cap = (uint64_t)(ms->table.max + MEMBERSHIP_PUSH_MAX) * 1000;
	if (!s->budget_set) {
		s->budget_set = true;
		s->budget = cap;
		s->budget_ms = now_ms;
	} else if (now_ms > s->budget_ms) {
		uint64_t gain = (now_ms - s->budget_ms) * MEMBERSHIP_RECORDS_PER_S;
		s->budget = cap - s->budget <= gain ? cap : s->budget + gain;
		s->budget_ms = now_ms;
	}
	return cap;
}

int membership_frame(membership *ms, void *handle, const uint8_t *msg,
		     size_t len, uint64_t now_ms, uint64_t unix_now)
{
	static gsp_msg_members m;    /* 4 KB: off the stack; one loop thread */
	membership_session *s = session_of(ms, handle);
	int r = gsp_msg_members_decode(msg, len, &m);

	if (r)
		return r;
	ms->counters.messages_in++;
	if (s) {
		refill(ms, s, now_ms);
		if (s->budget < (uint64_t)m.count * 1000) {
			ms->counters.records_limited += m.count;
			s->resync = true;
			return 0;
		}
		s->budget -= (uint64_t)m.count * 1000;
	}
	if (m.flags & GSP_MEMBERS_LAST)
		ms->counters.syncs_received++;
	if ((m.flags & GSP_MEMBERS_ASK) && s) {
		s->sync = true;
		ms->counters.syncs_asked++;
	}
	for (unsigned i = 0; i < m.count; i++) {
		const gsp_member *rec = &m.rec[i];

		ms->counters.records_in++;
		if (gsp_member_verify(rec, ms->authority, unix_now, listed(ms->revoked)) != 0) {
			ms->counters.records_refused++;
			continue;
		}
		switch (members_merge(&ms->table, rec, now_ms)) {
		case MERGE_NEW:
		case MERGE_NEWER:
			push(ms, rec->node_key, handle);
			ms->graph_dirty = true;
			break;
		case MERGE_SELF_REFUTE:
			refute(ms, rec, now_ms);
			break;
		default:
			break;
		}
	}
	return 0;
}

size_t membership_sessions(const membership *ms)
{
	size_t n = 0;
	for (size_t i = 0; i < ms->n_session; i++)
		n += ms->session[i].handle != NULL;
	return n;
}

int membership_leave(membership *ms, uint64_t now_ms)
{
	if (ms->self.status == GSP_MEMBER_LEFT)
		return 0;
	ms->self.status = GSP_MEMBER_LEFT;
	int r = gsp_member_sign(&ms->self, ms->sign_sk);
	if (!r)
		r = members_set_self(&ms->table, &ms->self, now_ms);
	if (r)
		return r;
	push(ms, ms->self.node_key, NULL);
	ms->graph_dirty = true;
	return 0;
}

const gsp_member *membership_record(const membership *ms,
				    const uint8_t key[static GSP_KEY_BYTES])
{
	const members_entry *e = members_find(&ms->table, key);
	return e ? &e->rec : NULL;
}

/* ---- records out ------------------------------------------------------- */

bool membership_pending(const membership *ms)
{
	if (ms->n_push || ms->graph_dirty)
		return true;
	for (size_t i = 0; i < ms->n_session; i++)
		if (ms->session[i].handle && (ms->session[i].ask || ms->session[i].sync))
			return true;
	return false;
}

/* One MEMBERS message to s, unless it went down meanwhile. */
static void send_msg(membership *ms, membership_session *s, uint8_t flags,
		     const gsp_member *const *recs, size_t n)
{
	static uint8_t buf[GSP_MEMBERS_MSG_MAX];
	size_t len;

	if (!s->handle || gsp_msg_members_encode(flags, recs, n, buf, sizeof(buf), &len) != 0)
		return;
	ms->counters.messages_out++;
	(void)ms->ops->send(ms->ctx, s->handle, buf, len);
}

static void send_sync(membership *ms, membership_session *s)
{
	const gsp_member *part[GSP_MEMBERS_PER_MSG];
	size_t n = members_count(&ms->table), k = 0;

	for (size_t pos = 0; pos < n && s->handle; pos++) {
		part[k++] = &members_at(&ms->table, pos)->rec;
		if (k == GSP_MEMBERS_PER_MSG || pos + 1 == n) {
			uint8_t flags = GSP_MEMBERS_SYNC | (pos + 1 == n ? GSP_MEMBERS_LAST : 0);
			send_msg(ms, s, flags, part, k);
			k = 0;
		}
	}
	ms->counters.syncs_sent++;
}

static void send_pushes(membership *ms, membership_session *s)
{
	const gsp_member *part[GSP_MEMBERS_PER_MSG];
	size_t k = 0;

	for (size_t i = 0; i < ms->n_push && s->handle; i++) {
		const gsp_member *rec = membership_record(ms, ms->push[i].key);

		if (ms->push[i].from == s->handle || !rec)
			continue;
		part[k++] = rec;
		if (k == GSP_MEMBERS_PER_MSG) {
			send_msg(ms, s, 0, part, k);
			k = 0;
		}
	}
	if (k)
		send_msg(ms, s, 0, part, k);
}

/* Whether set holds the keys handed up last (positions may move when
 * members come and go elsewhere; the peers to keep are the same). */
static bool same_set(const membership *ms, const graph_neighbour *set, size_t n)
{
	if (!ms->nb_known || n != ms->n_nb)
		return false;
	for (size_t i = 0; i < n; i++)
		if (memcmp(set[i].key, ms->nb[i].key, GSP_KEY_BYTES))
			return false;
	return true;
}

static void recompute(membership *ms)
{
	size_t cap = ms->table.max, n = 0;
	graph_neighbour *set = calloc(cap, sizeof(*set));

	if (!set)
		return;    /* graph_dirty stays: the next run tries again */
	ms->graph_dirty = false;
	if (graph_neighbours(ms->topology, &ms->table, set, cap, &n, NULL, NULL) != 0) {
		free(set);
		return;
	}
	bool same = same_set(ms, set, n);
	memcpy(ms->nb, set, n * sizeof(*set));
	ms->n_nb = n;
	ms->nb_known = true;
	free(set);
	if (same)
		return;
	ms->counters.graph_changes++;
	ms->ops->neighbours(ms->ctx, ms->nb, ms->n_nb);
}

void membership_detected(membership *ms, const uint8_t key[GSP_KEY_BYTES], bool dead)
{
	if (members_set_detected(&ms->table, key, dead) == 1)
		ms->graph_dirty = true;
}

void membership_run(membership *ms, uint64_t now_ms)
{
	if (ms->running)
		return;
	ms->running = true;
	for (size_t i = 0; i < ms->n_session; i++) {
		membership_session *s = &ms->session[i];
		const gsp_member *self = &ms->self;

		if (s->handle && s->resync && refill(ms, s, now_ms) == s->budget) {
			/* What was dropped comes again, whole. */
			s->resync = false;
			s->ask = true;
		}
		if (s->handle && s->ask) {
			s->ask = false;
			send_msg(ms, s, GSP_MEMBERS_ASK, &self, 1);
		}
		if (s->handle && s->sync) {
			s->sync = false;
			send_sync(ms, s);
		}
		if (s->handle)
			send_pushes(ms, s);
	}
	ms->n_push = 0;
	members_expire(&ms->table, now_ms);
	if (ms->graph_dirty)
		recompute(ms);
	ms->running = false;
}
