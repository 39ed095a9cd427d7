/*
 * libFuzzer harness for the failure detector itself (daemon/swim.c): a
 * detector (member 0, members 1..8) fed what the input says, a list of
 *   even byte, u16 ms (little-endian): time passes, swim_tick;
 *   odd byte b, u8 len, len bytes: a message from member (b >> 1) % 12
 *     (ourselves, members and strangers), if it decodes: swim_receive.
 * Whatever comes, every message the detector sends encodes, it declares
 * only known statuses of members it has (or itself, ALIVE), its
 * incarnation never falls, the LHM stays within lhm_max, a suspect's
 * suspectors within suspicion_k + 1, and its next deadline is never
 * further away than its longest timeout.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "swim.h"

#define MEMBERS 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static swim S;

static void on_send(void *ctx, uint32_t to, const swim_msg *msg)
{
	uint8_t buf[SWIM_MSG_MAX];
	size_t len;
	(void)ctx;
	if (to == 0 || to > MEMBERS || swim_msg_encode(msg, buf, sizeof(buf), &len) != 0)
		abort();
}

static void on_declare(void *ctx, uint32_t member, unsigned status, uint64_t inc)
{
	(void)ctx;
	(void)inc;
	if (status > GSP_MEMBER_LEFT || member > MEMBERS ||
	    (member == 0 && status != GSP_MEMBER_ALIVE))
		abort();
}

static const swim_ops ops = { .send = on_send, .declare = on_declare };

static void check(uint64_t inc_before)
{
	if (S.incarnation < inc_before || S.lhm > S.cfg.lhm_max ||
	    S.n_members != MEMBERS)
		abort();
	for (uint32_t id = 1; id <= MEMBERS; id++) {
		const swim_member *m = swim_member_get(&S, id);
		if (!m || m->status > GSP_MEMBER_LEFT ||
		    m->n_suspectors > S.cfg.suspicion_k + 1)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	swim_config cfg;
	uint64_t now = 1000;
	swim_config_default(&cfg);
	cfg.seed = 1;
	if (swim_init(&S, &cfg, &ops, NULL, 0, 1) != 0)
		abort();
	for (uint32_t id = 1; id <= MEMBERS; id++)
		if (swim_member_add(&S, id, 1) != 0)
			abort();
	swim_tick(&S, now);
	size_t i = 0;
	while (i < size) {
		uint8_t op = data[i++];
		uint64_t inc = S.incarnation;
		if (!(op & 1)) {
			if (size - i < 2)
				break;
			now += (uint64_t)data[i] | (uint64_t)data[i + 1] << 8;
			i += 2;
			swim_tick(&S, now);
		} else {
			if (size - i < 1 || size - i - 1 < data[i])
				break;
			size_t len = data[i++];
			swim_msg m;
			if (swim_msg_decode(data + i, len, &m) == 0)
				swim_receive(&S, (uint32_t)((op >> 1) % 12), &m, now);
			i += len;
		}
		check(inc);
		if (swim_next_deadline(&S) > now + (uint64_t)cfg.suspicion_max_ms *
		    (SWIM_LHM_MAX + 1) + 60000)
			abort();
	}
	return 0;
}
