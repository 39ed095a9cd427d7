/*
 * libFuzzer harness for the MEMBERS peer message (proto/members_msg.c,
 * with the member record decoder it calls): the decoder either refuses
 * with -ENOMSG, -EBADMSG or a documented GSP_ADM_* code, leaving its
 * output untouched, or accepts a message within GSP_MEMBERS_MSG_MAX whose
 * records encode back, with its flags, to exactly the input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "members_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int known(int r)
{
	return r == -ENOMSG || r == -EBADMSG ||
	       (r <= GSP_ADM_ETRUNCATED && r >= GSP_ADM_ENOCERT);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static gsp_msg_members m, untouched;
	static uint8_t again[GSP_MEMBERS_MSG_MAX];
	const gsp_member *ptrs[GSP_MEMBERS_PER_MSG];
	uint8_t *copy;
	size_t n;
	int r;

	if (sodium_init() < 0)
		abort();
	copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	memset(&m, 0xA5, sizeof(m));
	memset(&untouched, 0xA5, sizeof(untouched));
	r = gsp_msg_members_decode(copy, size, &m);
	if (r != 0) {
		if (!known(r) || memcmp(&m, &untouched, sizeof(m)) != 0)
			abort();
		free(copy);
		return 0;
	}
	if (size > GSP_MEMBERS_MSG_MAX || m.count > GSP_MEMBERS_PER_MSG)
		abort();
	for (unsigned i = 0; i < m.count; i++)
		ptrs[i] = &m.rec[i];
	if (gsp_msg_members_encode(m.flags, ptrs, m.count, again, sizeof(again), &n) != 0 ||
	    n != size || memcmp(again, copy, size) != 0)
		abort();
	free(copy);
	return 0;
}
