/* peers: the bottom of the peers module (peers.h; its files, bottom to
 * top: peers_core.c, peers_dial.c, peers_reload.c, peers.c, each calling
 * only those before it: peers_impl.h).  Here: a peer's record (its last
 * error, where it stands in the configuration, its name, the timestamp
 * of a key whose slot went to another peer), what the table tells the
 * layers above (degree, traffic, a link's state, which end is lo), and
 * sending on and closing a peer's session. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "peers_impl.h"

static void peer_verror(peer *p, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void peer_verror(peer *p, const char *fmt, va_list ap)
{
	vsnprintf(p->last_error, sizeof(p->last_error), fmt, ap);
}

void peers_error(peer *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	peer_verror(p, fmt, ap);
	va_end(ap);
}

void peers_session_ok(peer *p)
{
	p->backoff_ms = PEERS_BACKOFF_MIN_MS;
	p->last_error[0] = '\0';
}

bool peers_listed(const peer *p)
{
	return p->listing == PEER_LISTED;
}

bool peers_leaving(const peer *p)
{
	return p->listing == PEER_LEAVING || p->listing == PEER_LEAVE_EXPIRED;
}

uint16_t peers_degree(const peers *ps)
{
	uint16_t n = 0;
	for (size_t i = 0; i < ps->n; i++)
		n += peers__present(&ps->peer[i]) && !ps->peer[i].cfg.members_only;
	return n ? n : 1;
}

void peers_traffic(const peers *ps, uint64_t *ret_tx, uint64_t *ret_rx)
{
	uint64_t tx = ps->retired_stats.tx_bytes, rx = ps->retired_stats.rx_bytes;
	for (size_t i = 0; i < ps->n; i++) {
		tx += ps->peer[i].stats.tx_bytes;
		rx += ps->peer[i].stats.rx_bytes;
	}
	*ret_tx = tx;
	*ret_rx = rx;
}

bool peers_key_known(const peer *p)
{
	return !sodium_is_zero(p->cfg.public_key, GSP_KEY_BYTES);
}

bool peers_we_are_lo(const peer *p)
{
	return memcmp(p->set->key->pub, p->cfg.public_key, GSP_KEY_BYTES) < 0;
}

const char *peers_link_state(const peer *p)
{
	if (p->session)
		return NULL;
	if (p->dialed)
		return link_get_phase(p->dialed) == LINK_HANDSHAKE ? "handshake"
								    : "connecting";
	return p->resolving ? "connecting" : "down";
}

void peers__name(peer *p)
{
	char b64[45];
	gsp_key_to_base64(p->cfg.public_key, b64);
	/* A keyless [Peer] before its key is learned: "keyless". */
	snprintf(p->name, sizeof(p->name), "%.8s",
		 peers_key_known(p) ? b64 : "keyless");
}

/* ---- keys whose slot went to another peer ----------------------------- */

void peers__retire(peers *ps, const uint8_t key[GSP_KEY_BYTES],
		   const uint8_t ts[GSP_HS_TIMESTAMP])
{
	static const uint8_t zero[GSP_HS_TIMESTAMP];
	if (!memcmp(ts, zero, sizeof(zero)))
		return;          /* no handshake yet: nothing to refuse */
	/* The oldest goes when the ring is full. */
	peer_retired *r = &ps->retired[ps->retired_next];
	ps->retired_next = (ps->retired_next + 1) % GSP_MAX_PEERS;
	if (ps->n_retired < GSP_MAX_PEERS)
		ps->n_retired++;
	memcpy(r->key, key, GSP_KEY_BYTES);
	memcpy(r->ts, ts, GSP_HS_TIMESTAMP);
}

/* ---- a peer's session ------------------------------------------------- */

int peers_send(peer *p, const uint8_t *pt, size_t len)
{
	return p->session ? link_send(p->session, pt, len) : -ENOTCONN;
}

void peers_close(peer *p, uint16_t reason, const char *text)
{
	if (p->session)
		link_close(p->session, reason, text);
}
