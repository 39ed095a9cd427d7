/* members: the member table (members.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "members.h"

_Static_assert(MEMBERS_MAX <= UINT32_MAX, "slot numbers are 32-bit");

void members_hash(const uint8_t key[static GSP_KEY_BYTES],
		  uint8_t ret[static MEMBERS_HASH_BYTES])
{
	crypto_generichash(ret, MEMBERS_HASH_BYTES, key, GSP_KEY_BYTES, NULL, 0);
}

int members_init(members *m, const uint8_t self_key[static GSP_KEY_BYTES],
		 size_t max_members)
{
	memset(m, 0, sizeof(*m));
	if (max_members < 1 || max_members > MEMBERS_MAX)
		return -EINVAL;
	m->slot = calloc(max_members, sizeof(*m->slot));
	m->order = calloc(max_members, sizeof(*m->order));
	m->free_slots = calloc(max_members, sizeof(*m->free_slots));
	if (!m->slot || !m->order || !m->free_slots) {
		members_free(m);
		return -ENOMEM;
	}
	memcpy(m->self_key, self_key, GSP_KEY_BYTES);
	members_hash(self_key, m->self_hash);
	m->max = max_members;
	m->tombstone_ms = MEMBERS_TOMBSTONE_MS;
	/* Popped from the top: slot 0 first. */
	for (size_t i = 0; i < max_members; i++)
		m->free_slots[i] = (uint32_t)(max_members - 1 - i);
	return 0;
}

void members_free(members *m)
{
	free(m->slot);
	free(m->order);
	free(m->free_slots);
	memset(m, 0, sizeof(*m));
}

void members_set_tombstone_ms(members *m, uint64_t tombstone_ms)
{
	m->tombstone_ms = tombstone_ms;
}

size_t members_count(const members *m)
{
	return m->count;
}

const members_entry *members_at(const members *m, size_t pos)
{
	return pos < m->count ? &m->slot[m->order[pos]] : NULL;
}

/* The first position whose hash is not below hash (binary search). */
static size_t lower_bound(const members *m, const uint8_t hash[MEMBERS_HASH_BYTES])
{
	size_t lo = 0, hi = m->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (memcmp(m->slot[m->order[mid]].hash, hash, MEMBERS_HASH_BYTES) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The entry of the node whose key hashes to hash, or NULL; *ret_pos its
 * position, or where it would go. */
static members_entry *lookup(const members *m, const uint8_t hash[MEMBERS_HASH_BYTES],
			     size_t *ret_pos)
{
	size_t pos = lower_bound(m, hash);

	*ret_pos = pos;
	if (pos < m->count &&
	    !memcmp(m->slot[m->order[pos]].hash, hash, MEMBERS_HASH_BYTES))
		return &m->slot[m->order[pos]];
	return NULL;
}

static members_entry *find(const members *m, const uint8_t key[GSP_KEY_BYTES])
{
	uint8_t hash[MEMBERS_HASH_BYTES];
	size_t pos;
	members_entry *e;

	members_hash(key, hash);
	e = lookup(m, hash, &pos);
	/* Equal hashes of different keys would be a BLAKE2b collision. */
	return e && !memcmp(e->rec.node_key, key, GSP_KEY_BYTES) ? e : NULL;
}

const members_entry *members_find(const members *m,
				  const uint8_t key[static GSP_KEY_BYTES])
{
	return find(m, key);
}

/* A free slot for rec at position pos in the order (the caller checked
 * the room). */
static members_entry *insert(members *m, size_t pos, const gsp_member *rec,
			     const uint8_t hash[MEMBERS_HASH_BYTES], uint64_t now_ms)
{
	uint32_t s = m->free_slots[m->max - m->count - 1];
	members_entry *e = &m->slot[s];

	memmove(m->order + pos + 1, m->order + pos,
		(m->count - pos) * sizeof(*m->order));
	m->order[pos] = s;
	m->count++;
	m->changes++;
	memset(e, 0, sizeof(*e));
	e->rec = *rec;
	memcpy(e->hash, hash, MEMBERS_HASH_BYTES);
	e->since_ms = now_ms;
	return e;
}

int members_set_self(members *m, const gsp_member *rec, uint64_t now_ms)
{
	size_t pos;
	members_entry *e;

	if (memcmp(rec->node_key, m->self_key, GSP_KEY_BYTES) != 0 ||
	    rec->status > GSP_MEMBER_LEFT)
		return -EINVAL;
	e = lookup(m, m->self_hash, &pos);
	if (e && gsp_member_newer(rec, &e->rec) <= 0)
		return -ESTALE;
	if (!e) {
		/* The slot kept for us: others take at most max - 1. */
		insert(m, pos, rec, m->self_hash, now_ms);
	} else {
		e->rec = *rec;
		e->since_ms = now_ms;
		m->changes++;
	}
	m->has_self = true;
	return 0;
}

/* Counts what replacing a record of status `was` (or none, when !had)
 * by rec means (members_counters). */
static void count_change(members_counters *c, bool had, unsigned was,
			 unsigned now)
{
	if (had && was == now)
		return;
	switch (now) {
	case GSP_MEMBER_ALIVE:
		if (had && was == GSP_MEMBER_SUSPECT)
			c->refutations++;
		else
			c->joins++;
		break;
	case GSP_MEMBER_SUSPECT:
		c->suspicions++;
		break;
	case GSP_MEMBER_DEAD:
		c->deaths++;
		break;
	case GSP_MEMBER_LEFT:
		c->leaves++;
		break;
	}
}

static enum members_merge_result merge(members *m, const gsp_member *rec,
				       uint64_t now_ms)
{
	uint8_t hash[MEMBERS_HASH_BYTES];
	size_t pos;
	members_entry *e;

	if (rec->version != GSP_MEMBER_VERSION || rec->status > GSP_MEMBER_LEFT)
		return MERGE_INVALID;
	if (!memcmp(rec->node_key, m->self_key, GSP_KEY_BYTES)) {
		e = m->has_self ? lookup(m, m->self_hash, &pos) : NULL;
		/* Nothing of ours yet: whatever is said of us is to outdo. */
		if (!e || gsp_member_newer(rec, &e->rec) > 0) {
			m->counters.refutations++;
			return MERGE_SELF_REFUTE;
		}
		return gsp_member_newer(rec, &e->rec) == 0 ? MERGE_SAME : MERGE_STALE;
	}
	members_hash(rec->node_key, hash);
	e = lookup(m, hash, &pos);
	if (!e) {
		if (m->count + !m->has_self >= m->max)
			return MERGE_FULL;
		insert(m, pos, rec, hash, now_ms);
		count_change(&m->counters, false, 0, rec->status);
		return MERGE_NEW;
	}
	int c = gsp_member_newer(rec, &e->rec);
	if (c == 0)
		return MERGE_SAME;
	if (c < 0)
		return MERGE_STALE;
	count_change(&m->counters, true, e->rec.status, rec->status);
	e->rec = *rec;
	e->since_ms = now_ms;
	m->changes++;
	e->detected_dead = false;
	return MERGE_NEWER;
}

int members_set_detected(members *m, const uint8_t key[static GSP_KEY_BYTES], bool dead)
{
	uint8_t hash[MEMBERS_HASH_BYTES];
	size_t pos;
	members_hash(key, hash);
	members_entry *e = lookup(m, hash, &pos);
	if (!e || !memcmp(key, m->self_key, GSP_KEY_BYTES))
		return -ENOENT;
	if (e->detected_dead == dead)
		return 0;
	e->detected_dead = dead;
	return 1;
}

enum members_merge_result members_merge(members *m, const gsp_member *rec,
					uint64_t now_ms)
{
	enum members_merge_result r = merge(m, rec, now_ms);

	m->counters.merged[r]++;
	return r;
}

const char *members_merge_name(enum members_merge_result r)
{
	static const char *const names[MERGE_RESULTS] = {
		[MERGE_NEW] = "new", [MERGE_NEWER] = "newer", [MERGE_SAME] = "same",
		[MERGE_STALE] = "stale", [MERGE_FULL] = "full",
		[MERGE_SELF_REFUTE] = "self_refute", [MERGE_INVALID] = "invalid",
	};

	return (unsigned)r < MERGE_RESULTS ? names[r] : NULL;
}

static bool is_tombstone(const members_entry *e)
{
	return e->rec.status == GSP_MEMBER_DEAD || e->rec.status == GSP_MEMBER_LEFT;
}

size_t members_expire(members *m, uint64_t now_ms)
{
	size_t kept = 0, dropped = 0;

	/* One pass: the order keeps what stays, in its order. */
	for (size_t pos = 0; pos < m->count; pos++) {
		uint32_t s = m->order[pos];
		members_entry *e = &m->slot[s];
		bool self = !memcmp(e->hash, m->self_hash, MEMBERS_HASH_BYTES);

		if (!self && is_tombstone(e) && now_ms >= e->since_ms &&
		    now_ms - e->since_ms >= m->tombstone_ms) {
			memset(e, 0, sizeof(*e));
			m->free_slots[m->max - m->count + dropped] = s;
			dropped++;
			continue;
		}
		m->order[kept++] = s;
	}
	m->count = kept;
	m->counters.expired += dropped;
	m->changes += dropped;
	return dropped;
}

size_t members_bytes(const members *m)
{
	return sizeof(*m) + m->max * (sizeof(*m->slot) + sizeof(*m->order) +
				      sizeof(*m->free_slots));
}

size_t members_digest(const members *m, size_t from,
		      members_digest_entry *out, size_t cap)
{
	size_t k = 0;

	for (size_t pos = from; pos < m->count && k < cap; pos++, k++) {
		const gsp_member *rec = &m->slot[m->order[pos]].rec;

		memset(&out[k], 0, sizeof(out[k]));
		memcpy(out[k].node_key, rec->node_key, GSP_KEY_BYTES);
		out[k].incarnation = rec->incarnation;
		out[k].status = rec->status;
	}
	return k;
}

size_t members_missing(members *m, const members_digest_entry *digest,
		       size_t n, const gsp_member **out, size_t cap)
{
	size_t k = 0;

	/* Marks the records the peer holds as new as ours (a new mark each
	 * pass, so none is cleared; at wrap-around, all are). */
	if (++m->mark == 0) {
		for (size_t pos = 0; pos < m->count; pos++)
			m->slot[m->order[pos]].mark = 0;
		m->mark = 1;
	}
	for (size_t i = 0; i < n; i++) {
		members_entry *e = find(m, digest[i].node_key);
		const gsp_member theirs = { .incarnation = digest[i].incarnation,
					    .status = digest[i].status };

		if (!e)
			continue;
		if (gsp_member_newer(&e->rec, &theirs) <= 0)
			e->mark = m->mark;
	}
	for (size_t pos = 0; pos < m->count && k < cap; pos++) {
		const members_entry *e = &m->slot[m->order[pos]];

		if (e->mark != m->mark)
			out[k++] = &e->rec;
	}
	return k;
}
