/* peers: the top of the peers module (peers.h; its order in
 * peers_impl.h): the link callbacks (a handshake admitted by key and
 * timestamp, kept in the replay file; which of two sessions is kept; a
 * session's frames, GOODBYE and end, and the redial after it), the
 * listener, and the table's start and stop. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "endpoint.h"
#include "log.h"
#include "peers_impl.h"
#include "replay.h"
#include "text.h"

/* ---- link callbacks --------------------------------------------------- */

static peer *peer_by_key(peers *ps, const uint8_t key[GSP_KEY_BYTES])
{
	for (size_t i = 0; i < ps->n; i++)
		if (peers__present(&ps->peer[i]) &&
		    sodium_memcmp(ps->peer[i].cfg.public_key, key, GSP_KEY_BYTES) == 0)
			return &ps->peer[i];
	return NULL;
}

/* Every peer's newest timestamp to the replay file, so a restart does
 * not take an old HS_INIT again. */
static void save_timestamps(peers *ps)
{
	static const uint8_t zero[GSP_HS_TIMESTAMP];
	if (!ps->replay_path[0])
		return;
	replay_entry *e = calloc(ps->n + ps->n_retired + 1, sizeof(*e));
	size_t n = 0;
	for (size_t i = 0; e && i < ps->n; i++)
		if (memcmp(ps->peer[i].last_ts, zero, sizeof(zero)) != 0) {
			memcpy(e[n].key, ps->peer[i].cfg.public_key, GSP_KEY_BYTES);
			memcpy(e[n++].ts, ps->peer[i].last_ts, GSP_HS_TIMESTAMP);
		}
	for (size_t i = 0; e && i < ps->n_retired; i++)
		if (memcmp(ps->retired[i].ts, zero, sizeof(zero)) != 0) {
			memcpy(e[n].key, ps->retired[i].key, GSP_KEY_BYTES);
			memcpy(e[n++].ts, ps->retired[i].ts, GSP_HS_TIMESTAMP);
		}
	int err = e ? replay_save(ps->replay_path, e, n) : -ENOMEM;
	free(e);
	if (err && !ps->replay_failed)
		gsp_err("cannot save handshake timestamps to %s: %s (a restart "
			"may accept a replayed handshake)", ps->replay_path,
			gsp_strerror(err));
	ps->replay_failed = err != 0;
}

int peers_set_replay_file(peers *ps, const char *path)
{
	replay_entry *e = calloc(REPLAY_MAX, sizeof(*e));
	if (!e)
		return -ENOMEM;
	int n = replay_load(path, e);
	if (n < 0) {
		free(e);
		return n;
	}
	for (int k = 0; k < n; k++) {
		size_t i = 0;
		while (i < ps->n && memcmp(ps->peer[i].cfg.public_key, e[k].key, GSP_KEY_BYTES))
			i++;
		if (i < ps->n)
			memcpy(ps->peer[i].last_ts, e[k].ts, GSP_HS_TIMESTAMP);
		else     /* a key not listed now: kept for when it is again */
			peers__retire(ps, e[k].key, e[k].ts);
	}
	free(e);
	snprintf(ps->replay_path, sizeof(ps->replay_path), "%s", path);
	return 0;
}

/* The verdict on a certificate (cert_len 0: none), counted by reason
 * when it refuses; for key, or (key NULL) for the key it names, which
 * goes into ret_key. */
static admit_verdict admit_check(peers *ps, const uint8_t *key,
				 const uint8_t *cert, size_t cert_len,
				 uint8_t ret_key[GSP_KEY_BYTES],
				 char name[GSP_CERT_NAME_MAX + 1], const char **why)
{
	admit_verdict v = ADMIT_NO_AUTHORITY;
	uint64_t now = (uint64_t)time(NULL);
	if (ps->adm && key)
		v = admission_check(ps->adm, key, cert, cert_len, now, name);
	else if (ps->adm)
		v = admission_learn(ps->adm, cert, cert_len, now, ret_key, name);
	if (v != ADMIT_OK && ps->adm) {
		*why = admission_refused(ps->adm, v);
	} else if (v != ADMIT_OK) {
		ps->counters->hs_refused++;
		*why = "its key is not a configured peer";
	}
	return v;
}

/* An unlisted key: a slot if its certificate admits it, else nothing
 * allocated (PROTOCOL.md 4.2, "Admission"). */
static peer *admit(peers *ps, plink *l, const uint8_t key[GSP_KEY_BYTES],
		   const uint8_t *cert, size_t cert_len)
{
	char name[GSP_CERT_NAME_MAX + 1], b64[45];
	const char *why = "";
	peer *p = NULL;
	gsp_key_to_base64(key, b64);
	if (admit_check(ps, key, cert, cert_len, NULL, name, &why) == ADMIT_OK &&
	    !(p = peers__admit(ps, key, name))) {
		ps->counters->hs_refused++;
		why = "no slot for another peer";
	}
	if (!p)
		link_preauth_warn(l, "handshake refused: public key %s: %s", b64, why);
	return p;
}

/* A peer admitted by an earlier certificate (or whose key a keyless
 * [Peer] learned from one): every handshake shows a valid one again (it
 * may have expired or been revoked since). */
static bool readmit(peers *ps, plink *l, peer *p, const uint8_t *cert,
		    size_t cert_len)
{
	char name[GSP_CERT_NAME_MAX + 1];
	const char *why = "";
	if (admit_check(ps, p->cfg.public_key, cert, cert_len, NULL, name, &why) ==
	    ADMIT_OK)
		return true;
	link_preauth_warn(l, "handshake refused: peer %s: %s", p->name, why);
	return false;
}

static int on_authorize(plink *l, const uint8_t key[GSP_KEY_BYTES],
			const uint8_t ts[GSP_HS_TIMESTAMP], const uint8_t *cert,
			size_t cert_len)
{
	peers *ps = link_env_ctx(l);
	peer *p = peer_by_key(ps, key);
	if (!p && !(p = admit(ps, l, key, cert, cert_len)))
		return -EACCES;
	if (p->origin != PEER_CONFIGURED && !readmit(ps, l, p, cert, cert_len))
		return -EACCES;
	if (memcmp(ts, p->last_ts, GSP_HS_TIMESTAMP) <= 0) {
		ps->counters->hs_replayed++;
		gsp_warn("peer %s: handshake refused: replayed or old timestamp", p->name);
		if (!p->session)
			peers_error(p, "handshake refused: replayed or old timestamp");
		return -EACCES;
	}
	memcpy(p->last_ts, ts, GSP_HS_TIMESTAMP);
	save_timestamps(ps);
	link_bind(l, p, &p->stats, p->name);
	p->links++;
	return 0;
}

/* A keyless dial: the responder's certificate names its key.  Our own
 * key (a seed that is this node) is refused; a key already in the
 * table takes the dial over, and the keyless slot goes. */
static int on_learn(plink *l, const uint8_t *cert, size_t len,
		    uint8_t ret_key[GSP_KEY_BYTES])
{
	peer *p = link_owner(l);
	peers *ps = p->set;
	char name[GSP_CERT_NAME_MAX + 1];
	const char *why = "";
	if (admit_check(ps, NULL, cert, len, ret_key, name, &why) != ADMIT_OK) {
		gsp_warn("peer %s: Endpoint %s refused: %s", p->name, p->cfg.endpoint, why);
		peers_error(p, "Endpoint %s refused: %s", p->cfg.endpoint, why);
		return -EACCES;
	}
	if (peers_key_known(p)) {
		/* Learned before: the same key, or the address moved to
		 * another node, which this slot does not follow. */
		if (!sodium_memcmp(p->cfg.public_key, ret_key, GSP_KEY_BYTES))
			return 0;
		ps->counters->hs_refused++;
		gsp_warn("peer %s: Endpoint %s now presents another key ('%s'): "
			 "not taken (restart gossipd to learn it)", p->name,
			 p->cfg.endpoint, name);
		peers_error(p, "Endpoint %s now presents another key", p->cfg.endpoint);
		return -EACCES;
	}
	peer *q = peer_by_key(ps, ret_key);
	if (!q) {
		peers__learned(p, ret_key, name);
		link_bind(l, p, &p->stats, p->name);
		return 0;
	}
	bool take = !q->session && !q->dialed;
	peers__merge(p, q);
	if (!take)
		return -EACCES;     /* q has its session or dial: this one goes */
	p->links--;
	p->dialed = NULL;
	link_bind(l, q, &q->stats, q->name);
	q->links++;
	q->dialed = l;
	return 0;
}

/* Two sessions with one peer (PROTOCOL.md 4.8): keep the one whose
 * initiator has the smaller key; between two of one initiator, the
 * newer.  Returns true if l is kept. */
static bool wins_over(const peer *p, const plink *l, const plink *old)
{
	if (link_is_initiator(l) == link_is_initiator(old))
		return true;
	return link_is_initiator(l) == peers_we_are_lo(p);
}

static void on_up(plink *l)
{
	peer *p = link_owner(l);
	peers *ps = p->set;
	/* Removed while this link was in its handshake (the responder waits
	 * for the initiator's first frame): no session on a gone slot.  One
	 * there held the peer's only session while the slot that took its
	 * key later dialed in vain, "a session with this peer exists". */
	if (!peers__present(p)) {
		link_close(l, GSP_BYE_NOT_ALLOWED, "removed from the configuration");
		return;
	}
	/* A simultaneous open: the peer's session is up first, but our own
	 * dial, still in its handshake, is the one both ends keep.  Starting
	 * the edge on the peer's would cost a generation when ours replaces
	 * it; hold it (its frames unread) until our dial ends either way. */
	if (!p->session && p->dialed && p->dialed != l && wins_over(p, p->dialed, l)) {
		if (p->held)
			link_close(p->held, GSP_BYE_REPLACED, "replaced by a newer session");
		p->held = l;
		return;
	}
	if (p->dialed == l)
		p->dialed = NULL;
	if (p->held && p->held != l) {
		plink *held = p->held;
		p->held = NULL;
		link_close(held, GSP_BYE_REPLACED, "replaced by a newer session");
	}
	bool rekeyed = p->rekeying && link_is_initiator(l);
	p->rekeying = false;
	if (p->session && p->session != l) {
		if (!wins_over(p, l, p->session)) {
			link_close(l, GSP_BYE_REPLACED, "a session with this peer exists");
			return;
		}
		plink *old = p->session;
		link_close(old, GSP_BYE_REPLACED, "replaced by a newer session");
		ps->counters->sessions_rekeyed += rekeyed;
	}
	p->session = l;
	peers__forget_addrs(p);
	uv_timer_stop(&p->retry);
	gsp_info("peer %s: session up (%s)", p->name,
		 link_is_initiator(l) ? "we connected" : "it connected");
	ps->ops->session_up(ps->ctx, p);
}

static int on_frame(plink *l, const uint8_t *pt, size_t len)
{
	peer *p = link_owner(l);
	if (p->held == l)
		return 0;        /* it goes when our dial ends */
	if (p->session != l)
		return -EBADMSG;
	return p->set->ops->frame(p->set->ctx, p, pt, len);
}

/* GOODBYE reasons as PROTOCOL.md 4.4 names them, for logs. */
static const char *bye_name(uint16_t reason)
{
	static const char *const names[] = {
		[GSP_BYE_UNSPECIFIED] = "unspecified",
		[GSP_BYE_SHUTDOWN] = "shutdown",
		[GSP_BYE_RESTART] = "restart",
		[GSP_BYE_VERSION] = "version",
		[GSP_BYE_FINGERPRINT] = "fingerprint",
		[GSP_BYE_MALFORMED] = "malformed",
		[GSP_BYE_NOT_ALLOWED] = "not allowed",
		[GSP_BYE_REPLACED] = "replaced",
		[GSP_BYE_TIMEOUT] = "timeout",
		[GSP_BYE_MODEL_CHANGED] = "model changed",
		[GSP_BYE_INTERNAL] = "internal",
	};
	return reason < sizeof(names) / sizeof(*names) ? names[reason] : "unknown";
}

static void on_goodbye(plink *l, uint16_t reason, const char *text, size_t len)
{
	peer *p = link_owner(l);
	char safe[4 * GSP_GOODBYE_TEXT_MAX + 1];
	text_escape(text, len, safe, sizeof(safe));
	gsp_info("peer %s: GOODBYE %s (reason %u): %s", p->name, bye_name(reason),
		 reason, safe);
	/* Why the edge went down, unless it comes straight back (a model
	 * change, a newer session) or we saw it ourselves (its MODEL came
	 * first: the mismatch is already recorded). */
	if (reason != GSP_BYE_MODEL_CHANGED && reason != GSP_BYE_REPLACED &&
	    reason != GSP_BYE_FINGERPRINT && p->session == l)
		peers_error(p, "the peer said GOODBYE %s: %s", bye_name(reason), safe);
}

static void on_down(plink *l, const char *why)
{
	peer *p = link_owner(l);
	if (!p)
		return;          /* never authenticated */
	peers *ps = p->set;
	p->links--;
	bool was_dialed = p->dialed == l;
	if (was_dialed)
		p->dialed = NULL;
	if (p->held == l)
		p->held = NULL;
	/* Our dial failed: the held session's first frames were not read,
	 * so it cannot carry the edge; both ends dial again. */
	if (was_dialed && p->held) {
		plink *held = p->held;
		p->held = NULL;
		link_close(held, GSP_BYE_UNSPECIFIED, "");
	}
	if (why[0] && (!p->session || p->session == l))
		peers_error(p, "%s", why);
	if (p->session == l) {
		p->session = NULL;
		p->rekeying = false;
		ps->ops->session_down(ps->ctx, p);
	}
	if (p->session || p->dialed || p->resolving)
		return;
	if (was_dialed)
		peers__dial_next_or_later(p);
	else
		peers__dial_later(p);
}

/* The session we initiated is RekeyAfterSeconds old. */
static void on_rekey(plink *l)
{
	peer *p = link_owner(l);
	if (p && p->session == l)
		peers__rekey(p);
}

static const link_ops peer_link_ops = {
	.authorize = on_authorize,
	.learn = on_learn,
	.up = on_up,
	.rekey = on_rekey,
	.frame = on_frame,
	.goodbye = on_goodbye,
	.down = on_down,
};

/* ---- the table -------------------------------------------------------- */

int peers_init(peers *ps, uv_loop_t *loop, const gsp_keypair *key,
	       counters *c, const gsp_daemon_config *cfg, const peers_ops *ops,
	       void *ctx, char *err, size_t err_len)
{
	*ps = (peers){
		.env = {.loop = loop, .key = key, .counters = c,
			.ops = &peer_link_ops, .ctx = ps,
			.rekey_ms = cfg->rekey_after_s * 1000u},
		.loop = loop, .key = key, .counters = c, .ops = ops, .ctx = ctx,
	};
	ps->peer = calloc(GSP_MAX_PEERS, sizeof(*ps->peer));
	ps->retired = calloc(GSP_MAX_PEERS, sizeof(*ps->retired));
	ps->env.hs_limit = malloc(sizeof(*ps->env.hs_limit));
	if (!ps->peer || !ps->retired || !ps->env.hs_limit) {
		peers_free(ps);
		return -ENOMEM;
	}
	ratelimit_init(ps->env.hs_limit, LINK_HS_RATE_PER_S, LINK_HS_BURST);
	for (size_t i = 0; i < cfg->n_peers; i++) {
		peer *p = &ps->peer[i];
		p->set = ps;
		p->index = i;
		p->cfg = cfg->peers[i];
		p->origin = peers_key_known(p) ? PEER_CONFIGURED : PEER_KEYLESS;
		peers__name(p);
		if (!memcmp(p->cfg.public_key, key->pub, GSP_KEY_BYTES)) {
			snprintf(err, err_len, "%s:%u: [Peer] is this node's own key",
				 cfg->path, p->cfg.line);
			return -EINVAL;
		}
	}
	ps->n = cfg->n_peers;
	return 0;
}

void peers_set_admission(peers *ps, admission *adm)
{
	ps->adm = adm;
	ps->env.cert = adm->cert_len ? adm->cert : NULL;
	ps->env.cert_len = adm->cert_len;
}

void peers_free(peers *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		peers__forget_addrs(&ps->peer[i]);
	free(ps->peer);
	free(ps->retired);
	free(ps->env.hs_limit);
	ps->peer = NULL;
	ps->retired = NULL;
	ps->n_retired = ps->retired_next = 0;
	ps->env.hs_limit = NULL;
	ps->n = 0;
}

static void on_incoming(uv_stream_t *server, int status)
{
	peers *ps = server->data;
	plink *l;
	if (status < 0 || ps->stopping)
		return;
	int err = link_accept(&ps->env, server, &l);
	if (err && err != -ECONNREFUSED)
		gsp_debug("cannot accept a connection: %s", gsp_strerror(err));
}

int peers_start(peers *ps, const char *listen)
{
	struct sockaddr_storage ss;
	int err = gsp_endpoint_numeric(listen, &ss);
	if (err) {
		gsp_err("bad ListenAddress '%s' (want a numeric ipv4:port or "
			"[ipv6]:port)", listen);
		return -EINVAL;
	}
	uv_tcp_init(ps->loop, &ps->listener);
	ps->listener.data = ps;
	err = uv_tcp_bind(&ps->listener, (struct sockaddr *)&ss, 0);
	if (!err)
		err = uv_listen((uv_stream_t *)&ps->listener, SOMAXCONN, on_incoming);
	if (err) {
		gsp_err("cannot listen on %s: %s", listen, uv_strerror(err));
		return err;
	}
	struct sockaddr_storage bound;
	int blen = sizeof(bound);
	uv_tcp_getsockname(&ps->listener, (struct sockaddr *)&bound, &blen);
	link_addr_name((struct sockaddr *)&bound, ps->listen_addr,
		       sizeof(ps->listen_addr));
	for (size_t i = 0; i < ps->n; i++)
		peers__start_peer(&ps->peer[i]);
	return 0;
}

void peers_stop(peers *ps)
{
	ps->stopping = true;
	link_close_all(&ps->env, GSP_BYE_SHUTDOWN, "gossipd is stopping");
	for (size_t i = 0; i < ps->n; i++) {
		if (!ps->peer[i].timers_ready)
			continue;
		uv_close((uv_handle_t *)&ps->peer[i].retry, NULL);
		uv_close((uv_handle_t *)&ps->peer[i].leave, NULL);
	}
	uv_close((uv_handle_t *)&ps->listener, NULL);
}

void peers_stop_begin(peers *ps)
{
	ps->stop_begun = true;
}

void peers_reconnect_all(peers *ps, uint16_t reason, const char *text)
{
	if (ps->stopping || ps->stop_begun)
		return;
	for (size_t i = 0; i < ps->n; i++)
		peers_close(&ps->peer[i], reason, text);
}
