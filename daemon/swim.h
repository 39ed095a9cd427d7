/*
 * swim: a failure detector, SWIM (Das, Gupta and Motivala, 2002) with
 * HashiCorp's Lifeguard (Dadgar et al., 2017).  Pure: no loop, sockets,
 * clock or allocation.  The caller passes the time, delivers messages and
 * tells it which members exist; it talks out through swim_ops.
 *
 * This module owns: its view of each member's liveness (status and
 * incarnation, proto/member.h's precedence), the probe schedule (a
 * shuffled round robin), the probes direct and indirect (PING, ACK,
 * PING_REQ, NACK), suspicions and their timeouts, the piggybacked status
 * updates, and the local health multiplier (LHM).  It does not own the
 * member list (the caller adds and removes members), addresses, or the
 * signed member records.  swim_msg.c is the messages' byte codec.
 *
 * Members are small integers chosen by the caller (SWIM_ID_NONE excluded);
 * the node itself is `self` and is not in the table.  Upward, one
 * callback: ops->declare(ctx, member, status, incarnation) when swim
 * accepts a new status or incarnation of a member (its own probe, a
 * suspicion timing out, or an update it heard); about `self` when it
 * refutes a suspicion with a new incarnation.  The ops are called from
 * inside swim_tick() and swim_receive() and must not call into this swim.
 *
 * Timing.  Each protocol period, of probe_interval x (LHM + 1), probes one
 * member: a PING, and after probe_timeout x (LHM + 1) without its ACK a
 * PING_REQ to indirect_k other members, who PING it and answer ACK, or
 * NACK at 80 % of the timeout.  No ACK by the period's end: the member is
 * suspected, and told so at once by a PING carrying the suspicion (and on
 * every later message to it: Lifeguard's buddy system).  A suspicion
 * becomes a death after a timeout that starts at
 * suspicion_max and falls towards suspicion_min as independent suspicions
 * (other suspecting members) confirm it, log-scaled up to suspicion_k of
 * them (Lifeguard), times (LHM + 1) (not Lifeguard's: a starved node's
 * own accusations wait longer).  A member told it is suspected or
 * dead takes an incarnation above it and spreads ALIVE (refutation).
 * Updates ride on every message (at most SWIM_PIGGYBACK_MAX, the least
 * sent first); news (a refutation, a death) is also pushed at once, once
 * by each member that takes it, in PINGs to indirect_k random members
 * (and a refutation to its accuser).
 *
 * Lifeguard's local health, LHM in [0, lhm_max]: for a probe that failed,
 * +1 per NACK due that did not come (+1 if there was no one to ask);
 * +1 for a refutation about this node; +1 for a late tick (called later
 * than its deadline by more than probe_interval: this node was starved);
 * -1 for a probe answered.  A late tick also voids the probe under way
 * (its ACK may be waiting unread) rather than suspect its member.
 * lhm_max = 0 turns the local health off, late ticks included (the
 * simulation's mutation).
 */
#ifndef GOSSIPD_SWIM_H
#define GOSSIPD_SWIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "member.h"

#define SWIM_ID_NONE UINT32_MAX
#define SWIM_MEMBERS_MAX 1024
#define SWIM_PIGGYBACK_MAX 8       /* status updates a message carries */
#define SWIM_INDIRECT_MAX 8        /* indirect_k at most */
#define SWIM_CONFIRM_MAX 8         /* suspicion_k at most */
#define SWIM_RELAYS_MAX 32         /* PING_REQs relayed at once */
#define SWIM_LHM_MAX 8

/* Messages.  PING and ACK of a direct probe; PING_REQ asks the receiver
 * to probe `target` for the sender, who gets ACK or NACK with its seq. */
typedef enum swim_msg_type {
	SWIM_PING = 1,
	SWIM_ACK = 2,
	SWIM_PING_REQ = 3,
	SWIM_NACK = 4,
} swim_msg_type;

/* What `from` says of `member`: status GSP_MEMBER_* at incarnation. */
typedef struct swim_update {
	uint32_t member;
	uint32_t from;
	uint64_t incarnation;
	uint8_t status;
} swim_update;

typedef struct swim_msg {
	uint8_t type;              /* swim_msg_type */
	uint32_t seq;
	/* PING: its receiver; ACK, NACK: the member probed; PING_REQ: the
	 * member to probe. */
	uint32_t target;
	uint32_t timeout_ms;       /* PING_REQ only (1..60000), else 0 */
	uint8_t n_updates;         /* 0..SWIM_PIGGYBACK_MAX */
	swim_update updates[SWIM_PIGGYBACK_MAX];
} swim_msg;

/* Encoding (version 1, integers little-endian): u8 version | u8 type |
 * u32 seq | u32 target | u32 timeout_ms | u8 n_updates | n x (u32 member |
 * u32 from | u64 incarnation | u8 status).  Strict: what decodes encodes
 * back to the same bytes. */
#define SWIM_MSG_VERSION 1
#define SWIM_MSG_HEAD 15
#define SWIM_UPDATE_BYTES 17
#define SWIM_MSG_MAX (SWIM_MSG_HEAD + SWIM_PIGGYBACK_MAX * SWIM_UPDATE_BYTES)
#define SWIM_REQ_TIMEOUT_MAX 60000

/* -EINVAL if msg breaks a rule above, -ENOBUFS if cap is short. */
int swim_msg_encode(const swim_msg *msg, uint8_t *buf, size_t cap,
		    size_t *ret_len) GSP_MUST_CHECK;
/* 0, or -EINVAL for anything but exactly one valid message; *ret is
 * written only on success. */
int swim_msg_decode(const uint8_t *buf, size_t len, swim_msg *ret) GSP_MUST_CHECK;

typedef struct swim_config {
	uint32_t probe_interval_ms;
	uint32_t probe_timeout_ms;     /* < probe_interval_ms */
	unsigned indirect_k;           /* 0..SWIM_INDIRECT_MAX */
	uint32_t suspicion_min_ms;
	uint32_t suspicion_max_ms;     /* >= suspicion_min_ms */
	unsigned suspicion_k;          /* 1..SWIM_CONFIRM_MAX */
	unsigned lhm_max;              /* 0 (off)..SWIM_LHM_MAX */
	unsigned retransmit_mult;      /* an update goes out mult x log2(n + 1) times */
	uint64_t seed;                 /* the PRNG's: a run replays from it */
} swim_config;

/* The defaults (docs/MEMBERSHIP.md, "Failure detection"). */
void swim_config_default(swim_config *cfg);

typedef struct swim_ops {
	void (*send)(void *ctx, uint32_t to, const swim_msg *msg);
	void (*declare)(void *ctx, uint32_t member, unsigned status,
			uint64_t incarnation);
} swim_ops;

typedef enum swim_probe_state {
	SWIM_PROBE_IDLE = 0,       /* nothing to probe */
	SWIM_PROBE_DIRECT,         /* PING sent, waiting for ACK */
	SWIM_PROBE_INDIRECT,       /* PING_REQs sent too */
	SWIM_PROBE_DONE,           /* answered (or voided); period runs out */
} swim_probe_state;

typedef struct swim_member {
	uint32_t id;               /* SWIM_ID_NONE: a free slot */
	uint8_t status;            /* GSP_MEMBER_* */
	uint64_t incarnation;
	/* The update to spread about it: who said it, times left to send. */
	uint32_t said_by;
	unsigned sends_left;
	/* While SUSPECT: since when, and the suspecting members (the first
	 * and up to suspicion_k confirmations). */
	uint64_t suspect_ms;
	unsigned n_suspectors;
	uint32_t suspectors[SWIM_CONFIRM_MAX + 1];
} swim_member;

typedef struct swim_relay {
	uint32_t requester;        /* SWIM_ID_NONE: free */
	uint32_t req_seq;
	uint32_t target;
	uint32_t seq;              /* of our PING to target */
	uint64_t nack_ms;
} swim_relay;

typedef struct swim_stats {
	uint64_t probes, probes_failed, indirect, suspicions, deaths;
	uint64_t refutations, late_ticks, voided, unknown_updates, dropped;
} swim_stats;

typedef struct swim {
	swim_config cfg;
	const swim_ops *ops;
	void *ctx;
	uint32_t self;
	uint64_t incarnation;      /* ours */
	uint32_t self_sends_left;  /* our ALIVE to spread */
	unsigned lhm;
	uint64_t rng;              /* splitmix64 */
	uint32_t seq;
	uint64_t due_ms;           /* the deadline last given */
	uint64_t now_ms;           /* the latest time passed */
	bool started;
	unsigned n_members;
	unsigned hi;               /* slots from hi on are free */
	swim_member members[SWIM_MEMBERS_MAX];
	/* Probe order: slots, shuffled each round. */
	uint16_t order[SWIM_MEMBERS_MAX];
	unsigned n_order, next;
	/* The probe of this period. */
	swim_probe_state probe;
	uint32_t probe_target, probe_seq;
	uint64_t probe_start_ms, probe_timeout_at, period_end_ms;
	unsigned nacks_due, nacks;
	swim_relay relays[SWIM_RELAYS_MAX];
	swim_stats stats;
} swim;

/* -EINVAL for a config out of range or self == SWIM_ID_NONE. */
int swim_init(swim *s, const swim_config *cfg, const swim_ops *ops,
	      void *ctx, uint32_t self, uint64_t incarnation) GSP_MUST_CHECK;

/* Membership, from the caller.  add: a member, ALIVE at incarnation
 * (-EEXIST, -ENOSPC, -EINVAL for self or SWIM_ID_NONE).  remove: gone
 * from the table (-ENOENT).  set_status: what the caller learnt (a
 * member record), taken if newer (proto/member.h's order); no declare. */
int swim_member_add(swim *s, uint32_t id, uint64_t incarnation) GSP_MUST_CHECK;
int swim_member_remove(swim *s, uint32_t id) GSP_MUST_CHECK;
int swim_member_set_status(swim *s, uint32_t id, unsigned status,
			   uint64_t incarnation) GSP_MUST_CHECK;
/* A member held dead that the caller hears from directly (a session that
 * came up: a partition healed, or a death heard wrongly): suspected by
 * us again, at its incarnation, so that it is probed and told (the
 * buddy system) and refutes with a higher incarnation, which clears its
 * death everywhere; one that does not answer dies again when the
 * suspicion times out.  No declare.  -ENOENT, or -EALREADY if it is not
 * dead. */
int swim_member_revive(swim *s, uint32_t id) GSP_MUST_CHECK;
/* The member's view, or NULL if not in the table. */
const swim_member *swim_member_get(const swim *s, uint32_t id);

/* Advance to now_ms (never backwards: an earlier time counts as the last). */
void swim_tick(swim *s, uint64_t now_ms);
/* When to call swim_tick next. */
uint64_t swim_next_deadline(swim *s);
/* A message from `from` (authenticated by the caller) at now_ms; one
 * from a member not in the table is dropped (counted in stats.dropped). */
void swim_receive(swim *s, uint32_t from, const swim_msg *msg, uint64_t now_ms);

/* The suspicion timeout with `confirmations` independent confirmations,
 * before the LHM's scaling. */
uint64_t swim_suspicion_timeout(const swim_config *cfg, unsigned confirmations);

#endif
