/* undo: the buffer's undo section (undo.h). */
#include <string.h>

#include "undo.h"

static uint32_t state_of(const undo *u)
{
	return __atomic_load_n(&u->h->state, __ATOMIC_ACQUIRE);
}

static void set_state(undo *u, uint32_t state)
{
	__atomic_store_n(&u->h->state, state, __ATOMIC_RELEASE);
}

bool undo_attach(undo *u, void *buf, uint64_t bytes, uint64_t n,
		 uint64_t counted, undo_found *ret_found)
{
	*u = (undo){0};
	*ret_found = UNDO_NOTHING;
	if (bytes < gsp_undo_bytes(n))
		return false;
	gsp_undo_header *h = (gsp_undo_header *)((uint8_t *)buf + gsp_undo_offset(n));
	if (memcmp(h->magic, GSP_UNDO_MAGIC, sizeof(h->magic)) != 0)
		return false;
	*u = (undo){.h = h, .params = buf, .copy = (float *)(h + 1), .n = n};
	uint32_t state = state_of(u);
	uint64_t seq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
	if (state == GSP_UNDO_UNDONE && seq <= counted) {
		/* The copy holds what that write added. */
		for (uint64_t i = 0; i < n; i++)
			u->params[i] += u->copy[i];
		*ret_found = UNDO_REDONE;
	} else if (state == GSP_UNDO_UNDONE) {
		*ret_found = UNDO_DROPPED;
	} else if (state == GSP_UNDO_WRITING && seq > counted) {
		*ret_found = UNDO_LOST;
	}
	set_state(u, GSP_UNDO_IDLE);
	return true;
}

void undo_detach(undo *u)
{
	*u = (undo){0};
}

void undo_begin(undo *u, uint64_t seq)
{
	if (!u->h)
		return;
	memcpy(u->copy, u->params, u->n * sizeof(float));
	__atomic_store_n(&u->h->seq, seq, __ATOMIC_RELEASE);
	set_state(u, GSP_UNDO_WRITING);
}

void undo_end(undo *u)
{
	if (u->h)
		set_state(u, GSP_UNDO_IDLE);
}
