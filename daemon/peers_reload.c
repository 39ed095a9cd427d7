/* peers: applying a re-read [Peer] list (peers.h): peers found by key
 * (a keyless one by its Endpoint), a removed one leaving until its edge
 * has ended, and the slots of gone peers taken by peers added later or
 * admitted by their certificate.  Above peers_core.c and peers_dial.c
 * in the module's order (peers_impl.h). */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "log.h"
#include "peers_impl.h"

/* ---- keys whose slot went to another peer ----------------------------- */

/* p's key, listed again: its newest timestamp, if its slot went. */
static void unretire(peers *ps, peer *p)
{
	for (size_t i = 0; i < ps->n_retired; i++)
		if (!memcmp(ps->retired[i].key, p->cfg.public_key, GSP_KEY_BYTES)) {
			memcpy(p->last_ts, ps->retired[i].ts, GSP_HS_TIMESTAMP);
			memset(&ps->retired[i], 0, sizeof(ps->retired[i]));
			return;
		}
}

/* ---- slots ------------------------------------------------------------ */

/* The slot that holds key: a present one first (a keyless [Peer] that
 * learned it, or one admitted by its certificate: taking a gone slot of
 * the key back beside it made two slots for one key, whose sessions
 * replaced each other for ever), else a gone one, whose edge still knows
 * where its generation ended. */
static peer *peer_listed(peers *ps, const uint8_t key[GSP_KEY_BYTES])
{
	peer *gone = NULL;
	for (size_t j = 0; j < ps->n; j++) {
		peer *p = &ps->peer[j];
		if (memcmp(p->cfg.public_key, key, GSP_KEY_BYTES))
			continue;
		if (peers__present(p))
			return p;
		if (!gone)
			gone = p;
	}
	return gone;
}

static bool keyless_cfg(const gsp_peer_config *pc)
{
	return sodium_is_zero(pc->public_key, GSP_KEY_BYTES);
}

/* Whether keyless [Peer] pc (found by its Endpoint) is p. */
static bool is_keyless_of(const peer *p, const gsp_peer_config *pc)
{
	const char *ep = p->origin == PEER_KEYLESS ? p->cfg.endpoint : p->alias;
	return peers__present(p) && !strcmp(ep, pc->endpoint);
}

static bool in_config(const gsp_daemon_config *cfg, const peer *p)
{
	for (size_t i = 0; i < cfg->n_peers; i++) {
		const gsp_peer_config *pc = &cfg->peers[i];
		if (keyless_cfg(pc) ? is_keyless_of(p, pc)
				    : !memcmp(p->cfg.public_key, pc->public_key, GSP_KEY_BYTES))
			return true;
	}
	return false;
}

/* Whether a keyless [Peer] of cfg has Endpoint ep. */
static bool alias_listed(const gsp_daemon_config *cfg, const char *ep)
{
	for (size_t i = 0; i < cfg->n_peers; i++)
		if (keyless_cfg(&cfg->peers[i]) && !strcmp(cfg->peers[i].endpoint, ep))
			return true;
	return false;
}

/* An admitted peer stays through a reload unless its key is revoked, or,
 * in a list the cluster computed, unless it is not in it. */
static bool stays(peers *ps, const peer *p, const gsp_daemon_config *cfg)
{
	if (p->origin == PEER_ADMITTED && !cfg->peers_computed)
		return !ps->adm || !admission_revoked(ps->adm, p->cfg.public_key);
	return in_config(cfg, p);
}

/* p is gone as `how` says, and nothing of it is left: no link (whose
 * callbacks would find the slot's next peer), no name being resolved,
 * and its edge holds nothing of it (ops->reusable). */
static bool slot_free(peers *ps, const peer *p, peer_listing how)
{
	return p->listing == how && !p->links && !p->resolving &&
	       (!ps->ops->reusable || ps->ops->reusable(ps->ctx, p));
}

static peer *free_slot(peers *ps, peer_listing how)
{
	for (size_t i = 0; i < ps->n; i++)
		if (slot_free(ps, &ps->peer[i], how))
			return &ps->peer[i];
	return NULL;
}

/* A slot for a new peer: a gone peer's whose edge ended with it, else a
 * new one, else (the table full) one whose edge ended alone: that peer,
 * added back, can no longer reconcile its count. */
static peer *take_slot(peers *ps)
{
	peer *p = free_slot(ps, PEER_GONE);
	if (!p && ps->n < GSP_MAX_PEERS) {
		p = &ps->peer[ps->n];
		memset(p, 0, sizeof(*p));
		p->set = ps;
		p->index = ps->n;
		return p;
	}
	if (!p && (p = free_slot(ps, PEER_GONE_ALONE)))
		gsp_warn("reload: the peer table is full: peer %s's slot, whose edge "
			 "ended without its answer, goes to another peer", p->name);
	if (!p)
		return NULL;
	/* Everything of the gone peer goes but its timestamp (kept apart)
	 * and the slot's timers (initialised, so the loop knows them: the
	 * bytes are put back at the same address). */
	peers__retire(ps, p->cfg.public_key, p->last_ts);
	ps->retired_stats.tx_bytes += p->stats.tx_bytes;
	ps->retired_stats.rx_bytes += p->stats.rx_bytes;
	ps->retired_stats.tx_frames += p->stats.tx_frames;
	ps->retired_stats.rx_frames += p->stats.rx_frames;
	peer old = *p;
	memset(p, 0, sizeof(*p));
	p->set = ps;
	p->index = old.index;
	p->timers_ready = old.timers_ready;
	memcpy(&p->retry, &old.retry, sizeof(p->retry));
	memcpy(&p->leave, &old.leave, sizeof(p->leave));
	return p;
}

/* A peer the reload lists for the first time (or again, after its slot
 * went to another), or one admitted by its certificate. */
static peer *peer_add(peers *ps, const gsp_peer_config *pc, peer_origin origin)
{
	/* What added it: a reload, or a handshake's certificate. */
	const char *by = origin == PEER_ADMITTED ? "admission" : "reload";
	peer *p = take_slot(ps);
	if (!p) {
		gsp_err("%s: cannot add another peer (%d at most)", by, GSP_MAX_PEERS);
		return NULL;
	}
	p->cfg = *pc;
	p->origin = origin;
	peers__name(p);
	unretire(ps, p);
	int err = ps->ops->added(ps->ctx, p);
	if (err) {
		gsp_err("%s: cannot add peer %s: %s", by, p->name, gsp_strerror(err));
		p->listing = PEER_GONE;   /* its slot is free again */
		return NULL;
	}
	if (p->index == ps->n)
		ps->n++;
	gsp_info("%s: peer %s added (slot %zu%s)", by, p->name, p->index,
		 origin == PEER_ADMITTED ? ", admitted by its certificate" : "");
	peers__start_peer(p);
	return p;
}

/* key's own gone slot, nothing of its last peer left open on it: its
 * edge still knows where the generation with that peer ended. */
static peer *gone_slot_of(peers *ps, const uint8_t key[GSP_KEY_BYTES])
{
	for (size_t j = 0; j < ps->n; j++) {
		peer *p = &ps->peer[j];
		if (!peers__present(p) && !p->links && !p->resolving &&
		    !memcmp(p->cfg.public_key, key, GSP_KEY_BYTES))
			return p;
	}
	return NULL;
}

peer *peers__admit(peers *ps, const uint8_t key[GSP_KEY_BYTES], const char *name)
{
	gsp_peer_config pc = {.index = -1, .members_only = ps->admit_members_only};
	memcpy(pc.public_key, key, GSP_KEY_BYTES);
	snprintf(pc.name, sizeof(pc.name), "%s", name);
	/* Back in its own slot, if it is left: a fresh slot's edge knows
	 * nothing of the generation that ended with it, so the peer, told
	 * so, ended it at its own count (a round one-sided when the two
	 * counts differ). */
	peer *p = gone_slot_of(ps, key);
	if (p) {
		p->cfg = pc;
		p->origin = PEER_ADMITTED;
		p->listing = PEER_LISTED;
		p->alias[0] = '\0';
		peers__name(p);
		uv_timer_stop(&p->leave);
		gsp_info("admission: peer %s back in its slot %zu, admitted by its "
			 "certificate", p->name, p->index);
		peers__start_peer(p);
	} else {
		p = peer_add(ps, &pc, PEER_ADMITTED);
	}
	if (p)
		snprintf(p->cert_name, sizeof(p->cert_name), "%s", name);
	return p;
}

void peers__learned(peer *p, const uint8_t key[GSP_KEY_BYTES], const char *name)
{
	peers *ps = p->set;
	memcpy(p->cfg.public_key, key, GSP_KEY_BYTES);
	snprintf(p->cert_name, sizeof(p->cert_name), "%s", name);
	peers__name(p);
	unretire(ps, p);
	/* Its edge, never started without a key, learns which end is lo. */
	if (ps->ops->added(ps->ctx, p) != 0)
		gsp_warn("peer %s: its edge could not be set up again", p->name);
	gsp_info("peer %s: Endpoint %s presents certificate '%s'", p->name,
		 p->cfg.endpoint, name);
}

void peers__merge(peer *p, peer *q)
{
	gsp_info("peer %s: Endpoint %s is peer %s's; one peer for both", q->name,
		 p->cfg.endpoint, q->name);
	snprintf(q->alias, sizeof(q->alias), "%s", p->cfg.endpoint);
	if (!q->cfg.endpoint[0])
		snprintf(q->cfg.endpoint, sizeof(q->cfg.endpoint), "%s", p->cfg.endpoint);
	/* p never had a session: its edge has nothing to end. */
	(void)p->set->ops->removed(p->set->ctx, p);
	p->listing = PEER_GONE;
	uv_timer_stop(&p->retry);
	peers__forget_addrs(p);
}

/* A removed peer goes: no more dialing, its sessions close. */
static void peer_remove(peer *p, peer_listing how)
{
	p->listing = how;
	uv_timer_stop(&p->retry);
	uv_timer_stop(&p->leave);
	peers__forget_addrs(p);
	if (p->dialed)
		link_close(p->dialed, GSP_BYE_UNSPECIFIED, "");
	peers_close(p, GSP_BYE_NOT_ALLOWED, "removed from the configuration");
}

void peers_leave_done(peer *p)
{
	if (!peers_leaving(p))
		return;
	gsp_info("peer %s: its edge has ended; removed", p->name);
	peer_remove(p, p->listing == PEER_LEAVE_EXPIRED ? PEER_GONE_ALONE : PEER_GONE);
}

static void on_leave_wait(uv_timer_t *t)
{
	peer *p = t->data;
	if (p->listing != PEER_LEAVING)
		return;
	p->listing = PEER_LEAVE_EXPIRED;
	/* The edge layer logs how its generation ends. */
	if (p->set->ops->leave_expired)
		p->set->ops->leave_expired(p->set->ctx, p);
}

void peers_admit_members_only(peers *ps)
{
	ps->admit_members_only = true;
}

void peers_update(peers *ps, const gsp_daemon_config *cfg)
{
	for (size_t j = 0; j < ps->n; j++) {
		peer *p = &ps->peer[j];
		if (p->alias[0] && !alias_listed(cfg, p->alias)) {
			/* The keyless [Peer] that was p went: an admitted p
			 * is accept-only again (a listed one's Endpoint is
			 * its own, set below). */
			p->alias[0] = '\0';
			if (p->origin == PEER_ADMITTED)
				p->cfg.endpoint[0] = '\0';
		}
		if (p->origin == PEER_KEYLESS && peers_key_known(p) && ps->adm &&
		    admission_revoked(ps->adm, p->cfg.public_key))
			/* Its next dial asks its certificate again: refused. */
			peers_close(p, GSP_BYE_NOT_ALLOWED, "revoked");
		if (!peers_listed(p) || stays(ps, p, cfg))
			continue;
		if (ps->ops->removed(ps->ctx, p)) {
			gsp_info("reload: peer %s removed", p->name);
			peer_remove(p, PEER_GONE);
		} else {
			gsp_info("reload: peer %s removed; it stays until its edge has "
				 "ended at the same round at both ends (at most LeaveWait, "
				 "%u ms)", p->name, cfg->leave_wait_ms);
			p->listing = PEER_LEAVING;
			uv_timer_start(&p->leave, on_leave_wait, cfg->leave_wait_ms, 0);
		}
	}
	for (size_t i = 0; i < cfg->n_peers; i++) {
		const gsp_peer_config *pc = &cfg->peers[i];
		if (!memcmp(pc->public_key, ps->key->pub, GSP_KEY_BYTES))
			continue;
		if (keyless_cfg(pc)) {
			bool known = false;
			for (size_t j = 0; j < ps->n; j++)
				known |= is_keyless_of(&ps->peer[j], pc);
			if (!known)
				(void)peer_add(ps, pc, PEER_KEYLESS);
			continue;
		}
		peer *p = peer_listed(ps, pc->public_key);
		if (!p) {
			(void)peer_add(ps, pc, PEER_CONFIGURED);
			continue;
		}
		p->origin = PEER_CONFIGURED;
		bool gone = !peers_listed(p) && !peers_leaving(p);
		bool moved = strcmp(p->cfg.endpoint, pc->endpoint) != 0 || gone;
		if (!peers_listed(p))
			gsp_info("reload: peer %s added again", p->name);
		p->listing = PEER_LISTED;
		uv_timer_stop(&p->leave);
		memcpy(p->cfg.endpoint, pc->endpoint, sizeof(p->cfg.endpoint));
		memcpy(p->cfg.name, pc->name, sizeof(p->cfg.name));
		p->cfg.weight = pc->weight;
		if (p->cfg.members_only && !pc->members_only) {
			/* A neighbour now: its edge starts a generation in a
			 * session whose first RESYNC does not say NO_START. */
			p->cfg.members_only = false;
			if (p->session) {
				gsp_info("peer %s: a neighbour now; its edge starts in "
					 "a new session", p->name);
				peers_close(p, GSP_BYE_MODEL_CHANGED, "a neighbour now");
			}
		}
		if (moved && !p->session && !p->dialed)
			peers__dial_now(p);
	}
}
