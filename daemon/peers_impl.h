/*
 * peers' insides, shared by the peers module's files.  Nothing outside
 * the module includes it.  Its files, bottom to top, each calling only
 * those before it (tests/daemon/test_layers.py, PEERS_ORDER):
 *   peers_core.c    a peer's record, what the table tells, sending and
 *                   closing a session, retired keys' timestamps
 *   peers_dial.c    dialing, resolving, backoff
 *   peers_reload.c  a re-read [Peer] list and the slots (also those of
 *                   peers admitted by certificate or learned by address)
 *   peers.c         the link callbacks (admission, a keyless dial's
 *                   certificate), the listener, start and stop
 * The table tells the layers above only through peers_ops.
 */
#ifndef GOSSIPD_PEERS_IMPL_H
#define GOSSIPD_PEERS_IMPL_H

#include "peers.h"

/* Listed or leaving: not gone. */
static inline bool peers__present(const peer *p)
{
	return p->listing < PEER_GONE;
}

/* peers_core.c */

/* p's short name for logs, from its key. */
void peers__name(peer *p);
/* Keeps key's newest timestamp ts after its slot went to another peer
 * (peers_reload.c), so that the key, listed again, takes no older
 * handshake. */
void peers__retire(peers *ps, const uint8_t key[GSP_KEY_BYTES],
		   const uint8_t ts[GSP_HS_TIMESTAMP]);

/* peers_reload.c */

/* A slot for key, admitted by its certificate named name: NULL when the
 * table is full or the layer above refuses it. */
peer *peers__admit(peers *ps, const uint8_t key[GSP_KEY_BYTES], const char *name);
/* Keyless p learned key, which q already has: q takes p's Endpoint
 * (as its alias) and p goes. */
void peers__merge(peer *p, peer *q);
/* Keyless p learned its key (named name): the slot is its. */
void peers__learned(peer *p, const uint8_t key[GSP_KEY_BYTES], const char *name);

/* peers_dial.c */

/* Drops the addresses a name resolved to. */
void peers__forget_addrs(peer *p);
/* Dials again after the backoff delay (doubling, +-25% jitter). */
void peers__dial_later(peer *p);
/* Dials the next resolved address, or again later when none is left. */
void peers__dial_next_or_later(peer *p);
/* The peer's retry and LeaveWait timers (initialised once per slot),
 * and a first dial if it has an Endpoint. */
void peers__start_peer(peer *p);
/* Dials a new session to replace p's (a rekey), unless a dial is under
 * way; the new one replaces the old when it is up (PROTOCOL.md 4.8). */
void peers__rekey(peer *p);
/* Dials at once, the backoff started over (a moved Endpoint). */
void peers__dial_now(peer *p);

#endif
