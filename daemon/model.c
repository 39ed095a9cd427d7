/* model: REGISTER and DETACH (model.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "model_impl.h"
#include "model_options.h"

void model_init(model *m, mesh *ms, const gsp_daemon_config *cfg)
{
	*m = (model){.mesh = ms, .cfg = cfg, .fd = -1, .hold_fd = -1};
}

void model_hold_connection(model *m, int fd)
{
	if (m->hold_fd >= 0)
		close(m->hold_fd);
	m->hold_fd = fd;
}

static void model_free(model *m)
{
	group_end(&m->group);    /* its members take the node's last change */
	if (m->first)
		model_member_release(m->first);
	m->first = NULL;
	m->mode = MODEL_ALONE;
	gsp_node_free(m->node);
	gsp_layout_free(m->layout);
	undo_detach(&m->undo);
	if (m->params)
		munmap(m->params, m->map_bytes);
	if (m->fd >= 0)
		close(m->fd);
	if (m->hold_fd >= 0)
		close(m->hold_fd);    /* the gone owner's EOF: we let go */
	m->hold_fd = -1;
	m->node = NULL;
	m->layout = NULL;
	m->params = NULL;
	m->fd = -1;
	m->registered = false;
	m->owner = NULL;
}

/* The largest ROUND payload of any edge, those added after REGISTER
 * too (rounds 1 and 2 cover both message shapes; the finite-time
 * schedule's rounds carry the whole model). */
static uint64_t max_payload(const model *m)
{
	uint64_t best = 0;
	for (uint64_t r = 1; r <= 2; r++) {
		int64_t sz = gsp_node_method_message_size(m->node, r);
		if (sz > (int64_t)best)
			best = (uint64_t)sz;
	}
	uint64_t whole = (uint64_t)gsp_layout_floats(m->layout) * 4;   /* float32 */
	if (m->mesh->edges.sched_n && whole > best)
		best = whole;
	return best;
}

/* The buffer's undo section, and a write the last daemon left in it:
 * the records count it only if they are this buffer's. */
static void take_undo(model *m, uint64_t n, const edge_owner *owner)
{
	edge_set *s = &m->mesh->edges;
	uint64_t counted = edgestate_owned_by(&s->owner, owner) ? s->writes : 0;
	undo_found found;
	if (!undo_attach(&m->undo, m->params, m->map_bytes, n, counted, &found))
		return;
	switch (found) {
	case UNDO_REDONE:
		s->counters->writes_redone++;
		gsp_info("the buffer holds a write the last gossipd made and was "
			 "killed in, undone by the client: its records count it, so "
			 "it is redone");
		break;
	case UNDO_DROPPED:
		s->counters->writes_undone++;
		gsp_info("the buffer holds a write the last gossipd made and was "
			 "killed in, undone by the client: its records do not count "
			 "it, so it stays undone");
		break;
	case UNDO_LOST:
		s->counters->rounds_unreconciled++;
		gsp_warn("the last gossipd was killed inside a write into the buffer "
			 "its records do not count, and the client did not undo it: "
			 "that step's rounds may have landed here only");
		break;
	case UNDO_NOTHING:
		break;
	}
}

int model_register(model *m, void *owner, const char *trainer,
		   const uint8_t *body, size_t len, int fd, char *err_text,
		   size_t err_len)
{
	gsp_api_register reg;
	gsp_wire_tensor *wire = NULL;
	gsp_config settings;
	bool grouped = false;
	int err = gsp_api_register_decode(body, len, &reg);
	if (err) {
		snprintf(err_text, err_len, "malformed REGISTER: %s", gsp_strerror(err));
		err = -EBADMSG;
		goto refuse;
	}
	grouped = reg.opts.set & GSP_REG_GROUP;
	if (m->registered && grouped && m->mode == MODEL_GROUP)
		return model__group_join(m, owner, &reg, fd, err_text, err_len);
	if (m->registered) {
		err = -EBUSY;
		if (model_owned_by(m, owner))
			snprintf(err_text, err_len, "this connection already registered "
				 "a model; DETACH it first");
		else if (m->mode == MODEL_GROUP)
			snprintf(err_text, err_len, "a local group's model is registered, "
				 "first by trainer '%s': REGISTER with the group option "
				 "to join it", m->trainer);
		else
			snprintf(err_text, err_len, "a model is already registered, held "
				 "by trainer '%s'; one model per daemon: that trainer "
				 "must detach or exit first", m->trainer);
		goto refuse;
	}
	err = model_options_resolve(m->cfg, &reg.opts, &settings, err_text, err_len);
	if (err)
		goto refuse;
	if (fd < 0) {
		snprintf(err_text, err_len, "REGISTER needs the buffer's fd "
			 "(SCM_RIGHTS)");
		err = -EBADF;
		goto refuse;
	}
	m->fd = fd;
	fd = -1;
	m->settings = settings;
	m->dtype = model_options_dtype(&reg.opts);
	err = model__layout_of(&reg, &m->layout, &wire);
	if (err) {
		snprintf(err_text, err_len, "bad tensor list: %s", gsp_strerror(err));
		goto fail;
	}
	uint64_t n = gsp_layout_floats(m->layout);
	if (reg.buffer_bytes / gsp_dtype_size(m->dtype) < n) {
		snprintf(err_text, err_len, "buffer of %llu bytes is too small for "
			 "%llu values of %s", (unsigned long long)reg.buffer_bytes,
			 (unsigned long long)n, gsp_dtype_name(m->dtype));
		err = -EINVAL;
		goto fail;
	}
	if ((err = model__check_buffer(m->fd, reg.buffer_bytes, err_text, err_len)) != 0)
		goto fail;
	m->map_bytes = reg.buffer_bytes;   /* the undo section with it */
	m->params = mmap(NULL, m->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			 m->fd, 0);
	if (m->params == MAP_FAILED) {
		m->params = NULL;
		err = -errno;
		snprintf(err_text, err_len, "cannot map the buffer: %s", strerror(-err));
		goto fail;
	}
	/* The records' owner: this model in this buffer (the memfd the
	 * trainer keeps across a restart of gossipd). */
	edge_model em = {.owner.set = true};
	struct stat st;
	if (grouped && (err = model__group_machine(m, n, err_text, err_len)) != 0)
		goto fail;
	err = model__describe(&m->settings, m->dtype, wire, reg.n_tensors,
			      m->fingerprint, m->summary, sizeof(m->summary));
	if (!err && fstat(m->fd, &st) != 0)
		err = -errno;
	if (!err) {
		memcpy(em.owner.fingerprint, m->fingerprint, sizeof(m->fingerprint));
		em.owner.dev = (uint64_t)st.st_dev;
		em.owner.ino = (uint64_t)st.st_ino;
		/* A 16-bit buffer's section is not read: the undo section
		 * holds float32 copies (PROTOCOL.md 5.3). */
		if (m->dtype == GSP_DTYPE_FLOAT32 && !grouped)
			take_undo(m, n, &em.owner);
		err = gsp_node_new_typed(m->layout, m->params, m->dtype, &m->settings,
					 &m->node);
	}
	if (err) {
		snprintf(err_text, err_len, "cannot set up the engine: %s",
			 gsp_strerror(err));
		goto fail;
	}
	em.node = m->node;
	em.layout = m->layout;
	em.method = (uint8_t)m->settings.method;
	em.rank = (uint16_t)m->settings.rank;
	em.summary = m->summary;
	memcpy(em.fingerprint, m->fingerprint, sizeof(em.fingerprint));
	/* Sizes need the node's edges: attach, then measure. */
	if ((err = edges_attach(&m->mesh->edges, &em)) != 0) {
		snprintf(err_text, err_len, "cannot set up the engine: %s",
			 gsp_strerror(err));
		goto fail;
	}
	m->max_payload = max_payload(m);
	edges_model_max_payload(&m->mesh->edges, m->max_payload);
	uint32_t cap;
	if (gsp_proto_peer_max_frame(m->max_payload, &cap) != 0) {
		snprintf(err_text, err_len, "messages of %llu bytes exceed the "
			 "frame limit", (unsigned long long)m->max_payload);
		err = -EMSGSIZE;
		edges_detach(&m->mesh->edges);
		goto fail;
	}
	free(wire);
	/* The bytes STEP counts start here: the links' totals now (taken
	 * while the model does not count as registered yet, or they would be
	 * less the last registration's base). */
	model_bytes(m, &m->bytes_base_tx, &m->bytes_base_rx);
	if (grouped && (err = model__group_start(m, owner, err_text, err_len)) != 0) {
		edges_detach(&m->mesh->edges);
		goto fail;
	}
	m->registered = true;
	m->owner = grouped ? NULL : owner;
	snprintf(m->trainer, sizeof(m->trainer), "%s", trainer);
	gsp_info("model registered by trainer '%s': %s", trainer, m->summary);
	peers_reconnect_all(&m->mesh->peers, GSP_BYE_MODEL_CHANGED, "model registered");
	return 0;
fail:
	free(wire);
	model_free(m);
refuse:
	if (fd >= 0)
		close(fd);
	return err;
}

void model_detach(model *m)
{
	if (!m->registered)
		return;
	model_free(m);
	gsp_info("model detached");
	peers_reconnect_all(&m->mesh->peers, GSP_BYE_MODEL_CHANGED, "model detached");
}

bool model_owned_by(const model *m, const void *client)
{
	if (!m->registered)
		return false;
	/* A group ends with its last member's DETACH: no one owns it then. */
	if (m->mode == MODEL_GROUP)
		return m->group.state != GROUP_ENDING && group_has(&m->group, client);
	return m->owner == client;
}

void model_bytes(const model *m, uint64_t *ret_sent, uint64_t *ret_received)
{
	uint64_t tx, rx;
	peers_traffic(&m->mesh->peers, &tx, &rx);
	*ret_sent = tx - (m->registered ? m->bytes_base_tx : 0);
	*ret_received = rx - (m->registered ? m->bytes_base_rx : 0);
}
