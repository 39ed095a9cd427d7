/* edge_core: what every other file of the edge module uses of one edge
 * (edge_impl.h), and calls nothing of theirs: frames out (edge__send, not
 * while reading an ended session's frames: edge__quiet), the changed
 * signal to the set's owner, our kept ROUND messages (edge__kept,
 * edge__msg_free), the rounds applied on a live edge, and the count of
 * PROTOCOL.md 4.9's rows taken (EDGE_ROW, edge_rows_hit).
 *
 * The edge module's files call one way, each only the files before it
 * (tests/daemon/test_layers.py checks it):
 *   edge_core <- edge_estimate <- edge_sched <- edge_resync <- edge_end
 *   <- edge_gen <- edge <- edge_records <- edges_pace <- edges
 *   <- edges_api */
#include <stdlib.h>

#include "edge_impl.h"

/* How often each row of PROTOCOL.md 4.9 was taken (the loop is one
 * thread). */
static uint64_t rows_hit[EDGE_ROW_COUNT];

#define EDGE_ROW_NAME(id) #id,
static const char *const row_ids[EDGE_ROW_COUNT] = {EDGE_ROW_IDS(EDGE_ROW_NAME)};

void edge__row(edge_row row)
{
	rows_hit[row]++;
}

size_t edge_rows(void)
{
	return EDGE_ROW_COUNT;
}

const char *edge_row_id(size_t row)
{
	return row < EDGE_ROW_COUNT ? row_ids[row] : NULL;
}

uint64_t edge_rows_hit(size_t row)
{
	return row < EDGE_ROW_COUNT ? rows_hit[row] : 0;
}

void edge__changed(edge *e)
{
	e->set->ops->changed(e->set->ctx);
}

bool edge__quiet(const edge *e)
{
	return e->input == INPUT_KEPT_ENDED;
}

int edge__send(edge *e, const uint8_t *pt, size_t len)
{
	if (edge__quiet(e) || e->state == EDGE_DOWN)
		return 0;
	return e->set->ops->send(e->set->ctx, e, pt, len);
}

int edge__send_round(edge *e, const edge_msg *m)
{
	if (!e->set->attached || !e->peer_attached)
		return 0;
	int err = edge__send(e, m->buf, m->len);
	return err < 0 ? err : 1;
}

void edge__msg_free(edge_msg *m)
{
	free(m->buf);
	*m = (edge_msg){0};
}

uint64_t edge__applied(const edge *e)
{
	gsp_edge_info info;
	if (!edge__live(e) || gsp_node_edge_info(e->set->model.node, e->index, &info) != 0)
		return 0;
	return info.state == GSP_EDGE_COMPLETED ? info.round - 1 : e->completed;
}

int edge__kept(const edge *e, uint64_t round)
{
	for (int k = 0; k < 2; k++)
		if (round && e->sent[k].buf && e->sent[k].round == round)
			return k;
	return -1;
}
