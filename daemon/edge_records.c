/* edge_records: what an edge keeps in the edges' records (edgestate.h)
 * and how a restarted daemon takes it back (PROTOCOL.md 4.6): a record of
 * where each generation stood, and a live generation's whole state, which
 * continues it when the buffer the records name registers again.  Calls
 * edge_core and edge_end only (the module's order: edge_core.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "edge_impl.h"
#include "log.h"

/* The engine edge holds an ended generation's last update, to land at
 * the next apply. */
static bool landing(const edge *e)
{
	gsp_edge_info info;
	return e->set->attached && !edge__live(e) &&
	       gsp_node_edge_info(e->set->model.node, e->index, &info) == 0 &&
	       info.state == GSP_EDGE_COMPLETED;
}

bool edge_state_fits(const edge *e)
{
	size_t len, kept = 0;
	for (int k = 0; k < 2; k++)
		kept += e->sent[k].buf ? e->sent[k].len : 0;
	return e->set->attached &&
	       gsp_node_edge_state_size(e->set->model.node, e->index, &len) == 0 &&
	       len + kept <= EDGESTATE_STATE_MAX;
}

void edge_record_of(edge *e, edge_record *r)
{
	const edge_msg *m = &e->ended_msg;
	memset(r, 0, sizeof(*r));
	r->generation = e->generation;
	r->live = edge__live(e);
	r->ended_generation = e->ended_generation;
	r->ended_applied = e->ended_applied;
	memcpy(r->seed, e->gen_seed, sizeof(r->seed));
	/* A live generation with rounds applied supersedes the ended one's
	 * record; with none yet, that record and its message stay (a peer
	 * still in the ended generation completes from it). */
	if (edge__live(e) && (r->applied = edge__applied(e)) > 0) {
		int k = edge__kept(e, r->applied);
		m = k >= 0 ? &e->sent[k] : NULL;
	}
	if (m && m->buf && m->len <= EDGESTATE_MSG_MAX) {
		r->msg = m->buf;
		r->msg_len = (uint32_t)m->len;
	}
	/* All of a live generation, for it to continue; of an ended one
	 * whose last update is still to land, for it to land. */
	free(e->saved);
	e->saved = NULL;
	size_t len;
	if ((!edge__live(e) && !landing(e)) || !edge_state_fits(e) ||
	    gsp_node_edge_save(e->set->model.node, e->index, &e->saved, &len) != 0 ||
	    len > EDGESTATE_MSG_MAX)
		return;
	r->engine = e->saved;
	r->engine_len = (uint32_t)len;
	r->weight = e->weight;
	for (int k = 0; k < 2; k++)
		if (e->sent[k].buf && e->sent[k].len <= EDGESTATE_MSG_MAX) {
			r->kept[k] = e->sent[k].buf;
			r->kept_len[k] = (uint32_t)e->sent[k].len;
		}
}

/* A kept ROUND of r's message bytes (none if they do not decode). */
static int copy_round(const uint8_t *msg, uint32_t len, uint32_t generation,
		      edge_msg *ret)
{
	gsp_msg_round m;
	*ret = (edge_msg){0};
	if (!len || gsp_msg_round_decode(msg, len, &m) != 0 || m.generation != generation)
		return 0;
	if (!(ret->buf = gsp_bigmem_malloc(len)))
		return -ENOMEM;
	memcpy(ret->buf, msg, len);
	ret->len = len;
	ret->round = m.round;
	ret->degree = m.degree;
	return 0;
}

static void drop_resume(edge *e)
{
	if (e->gen == GEN_RESUMING)
		e->gen = GEN_NONE;
	free(e->resume);
	e->resume = NULL;
	for (int k = 0; k < 2; k++)
		edge__msg_free(&e->resume_sent[k]);
}

void edge__resume(edge *e, bool ours)
{
	edge_set *s = e->set;
	gsp_edge_info info;
	int err = !ours ? -ESTALE
			: gsp_node_edge_load(s->model.node, e->index, e->resume, e->resume_len);
	if (!err)
		err = gsp_node_edge_info(s->model.node, e->index, &info);
	bool resuming = e->gen == GEN_RESUMING;
	if (err && resuming)
		EDGE_ROW(G6);
	else if (resuming)
		EDGE_ROW(G5);
	if (err) {
		gsp_warn("peer %s: generation %u cannot continue (%s): it ended at round "
			 "%llu", e->name, e->generation, gsp_strerror(err),
			 (unsigned long long)e->completed);
		(void)gsp_node_edge_disable(s->model.node, e->index);
		/* An ended generation's last update cannot land now. */
		if (!resuming && e->ended_generation == e->generation &&
		    e->ended_applied)
			edge__drop_landing(e);
		drop_resume(e);
		return;
	}
	if (!resuming) {
		/* An ended generation's last update: it lands at the next
		 * apply (the engine edge stays disabled). */
		drop_resume(e);
		return;
	}
	/* The ended record edge_restore wrote for want of this goes. */
	if (e->ended_generation == e->generation) {
		edge__msg_free(&e->ended_msg);
		e->ended_generation = e->resume_ended_generation;
		e->ended_applied = e->resume_ended_applied;
	}
	for (int k = 0; k < 2; k++) {
		edge__msg_free(&e->sent[k]);
		e->sent[k] = e->resume_sent[k];
		e->resume_sent[k] = (edge_msg){0};
	}
	free(e->resume);
	e->resume = NULL;
	e->gen = GEN_LIVE;
	e->weight = e->resume_weight;
	e->sent_round = info.round;
	e->completed = info.state == GSP_EDGE_IN_FLIGHT ? info.round - 1 : info.round;
	e->last_apply_step = s->steps;
	s->dirty = true;
	gsp_info("peer %s: generation %u of before the restart continues at round %llu",
		 e->name, e->generation, (unsigned long long)e->completed);
}

void edge_resume_cancel(edge *e)
{
	if (e->gen != GEN_RESUMING)
		return;
	EDGE_ROW(G6);
	drop_resume(e);
	gsp_info("peer %s: generation %u of before the restart ends at round %llu: "
		 "the peer went before the model registered", e->name, e->generation,
		 (unsigned long long)e->completed);
}

int edge_restore(edge *e, const edge_record *r)
{
	uint32_t g = r->ended_generation;
	uint64_t a = r->ended_applied;
	if (r->live && r->applied) {
		g = r->generation;
		a = r->applied;
	}
	edge_msg kept;
	if (copy_round(r->msg, r->msg_len, g, &kept) != 0)
		return -ENOMEM;
	if (kept.round != a)
		edge__msg_free(&kept);
	edge__msg_free(&e->ended_msg);
	e->ended_msg = kept;
	e->no_history = false;
	e->generation = r->generation;
	memcpy(e->gen_seed, r->seed, sizeof(e->gen_seed));
	e->ended_generation = a ? g : 0;
	e->ended_applied = a;
	e->completed = e->sent_round = r->live ? r->applied : 0;
	drop_resume(e);
	if (r->engine_len) {
		/* Until it continues, our RESYNC says it is live (fill_resync);
		 * if it cannot, it stands ended at `applied`, and a peer that
		 * meets us then ends it there too. */
		for (int k = 0; k < 2; k++)
			if (copy_round(r->kept[k], r->kept_len[k], r->generation,
				       &e->resume_sent[k]) != 0) {
				drop_resume(e);
				return -ENOMEM;
			}
		if (!(e->resume = malloc(r->engine_len))) {
			drop_resume(e);
			return -ENOMEM;
		}
		memcpy(e->resume, r->engine, r->engine_len);
		e->resume_len = r->engine_len;
		if (r->live) {
			EDGE_ROW(G4);
			e->gen = GEN_RESUMING;
		}
		e->resume_weight = r->weight;
		e->resume_ended_generation = r->ended_generation;
		e->resume_ended_applied = r->ended_applied;
		/* Meanwhile our RESYNC says C = applied (at most what was
		 * completed) and S, the last kept round: consistent with the
		 * peer, which resends what we may lack. */
		for (int k = 0; k < 2; k++)
			if (e->resume_sent[k].round > e->sent_round)
				e->sent_round = e->resume_sent[k].round;
		if (e->set->attached)
			edge__resume(e, edgestate_owned_by(&e->set->owner,
							   &e->set->model.owner));
		if (r->live)
			return 0;
	}
	gsp_info("peer %s: generation %u of before the restart ends at round %llu",
		 e->name, r->generation, (unsigned long long)(r->live ? r->applied : 0));
	return 0;
}
