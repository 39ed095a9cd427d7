/* ratelimit: token buckets per source address (ratelimit.h). */
#include <errno.h>
#include <string.h>

#include <netinet/in.h>

#include "ratelimit.h"

void ratelimit_init(ratelimit *rl, unsigned per_s, unsigned burst)
{
	memset(rl, 0, sizeof(*rl));
	rl->per_s = per_s ? per_s : 1;
	rl->burst = burst ? burst : 1;
}

int ratelimit_key(const struct sockaddr *sa, uint8_t ret_key[RATELIMIT_KEY])
{
	uint8_t key[RATELIMIT_KEY] = {0};
	if (sa->sa_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 8);
	} else {
		return -EAFNOSUPPORT;
	}
	memcpy(ret_key, key, RATELIMIT_KEY);
	return 0;
}

/* key's slot, or the one it takes over (a free one, else the one seen
 * least recently), reset to a full bucket. */
static ratelimit_slot *slot_of(ratelimit *rl, const uint8_t key[RATELIMIT_KEY],
			       uint64_t now_ms)
{
	ratelimit_slot *victim = &rl->slot[0];
	for (size_t i = 0; i < RATELIMIT_SLOTS; i++) {
		ratelimit_slot *s = &rl->slot[i];
		if (s->used && !memcmp(s->key, key, RATELIMIT_KEY))
			return s;
		if (victim->used && (!s->used || s->seen_ms < victim->seen_ms))
			victim = s;
	}
	memset(victim, 0, sizeof(*victim));
	victim->used = true;
	memcpy(victim->key, key, RATELIMIT_KEY);
	victim->milli = (uint64_t)rl->burst * 1000;
	victim->seen_ms = now_ms;
	return victim;
}

bool ratelimit_take(ratelimit *rl, const uint8_t key[RATELIMIT_KEY],
		    uint64_t now_ms, unsigned *ret_log)
{
	ratelimit_slot *s = slot_of(rl, key, now_ms);
	uint64_t cap = (uint64_t)rl->burst * 1000;
	if (now_ms > s->seen_ms) {
		/* per_s tokens a second: per_s thousandths a millisecond. */
		uint64_t gain = (now_ms - s->seen_ms) * rl->per_s;
		s->milli = gain >= cap - s->milli ? cap : s->milli + gain;
	}
	s->seen_ms = now_ms;
	if (s->milli >= 1000) {
		s->milli -= 1000;
		return true;
	}
	s->refused++;
	*ret_log = 0;
	if (!s->logged || now_ms - s->logged_ms >= 1000) {
		*ret_log = s->refused;
		s->refused = 0;
		s->logged = true;
		s->logged_ms = now_ms;
	}
	return false;
}
