/*
 * model: the registered model.  It owns REGISTER (its options within the
 * config, model_options.h; checking the trainer's buffer, mapping it,
 * building the layout and the engine node (a 16-bit model's keeps the
 * float32 master copy: libgossip's gsp_node_new_typed), and
 * attaching the node to the edges) and DETACH (unmapping, freeing), with
 * the model's fingerprint and summary, and the buffer's undo section.
 * The buffer is the trainer's; the daemon writes it only inside a
 * request, in the core's writes (core.h: core_write_begin/end).
 *
 * A REGISTER with the group option makes or joins the machine's local
 * group (group.h; model_group.c): the node then works on a buffer of the
 * daemon's own (a memfd, the machine's model), and each member's buffer
 * is the group's.
 */
#ifndef GOSSIPD_MODEL_H
#define GOSSIPD_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "gossip.h"
#include "group.h"
#include "mesh.h"
#include "proto.h"
#include "undo.h"

typedef enum model_mode {
	MODEL_ALONE = 0,         /* the node works on its trainer's buffer */
	MODEL_GROUP,             /* on the machine's, for a local group */
} model_mode;

typedef struct model {
	mesh *mesh;
	const gsp_daemon_config *cfg;  /* defaults and limits of settings */
	gsp_config settings;     /* the registered model's (its REGISTER's) */
	gsp_dtype dtype;         /* of the buffer's parameters */
	bool registered;
	void *owner;             /* the API client that registered it */
	char trainer[GSP_API_NAME_MAX + 1];  /* the owner's HELLO name */
	int fd;
	void *params;            /* the mapped buffer, of dtype */
	size_t map_bytes;
	gsp_layout *layout;
	gsp_node *node;
	uint8_t fingerprint[GSP_FINGERPRINT_BYTES];
	char summary[GSP_MODEL_SUMMARY_MAX + 1];
	uint64_t max_payload;
	uint64_t bytes_base_tx, bytes_base_rx;   /* peer traffic before it */
	undo undo;               /* the buffer's undo section, if it has one */
	uint64_t write_seq;      /* the write under way (edges.writing) */
	/* A copy of a gone owner's connection while its implicit DETACH
	 * runs: closed with the buffer, so the client's EOF says the daemon
	 * no longer touches it (PROTOCOL.md 5.3).  -1 if none. */
	int hold_fd;
	model_mode mode;
	group group;             /* MODEL_GROUP: the members */
	struct model_member *first;  /* the first member's buffer, until it joins */
} model;

void model_init(model *m, mesh *ms, const gsp_daemon_config *cfg);

/* REGISTER from owner (HELLO name trainer): body is the request, fd the
 * buffer it passed (-1 if none).  The call always takes fd: it is the
 * model's on success and closed on failure.  On failure the reason is in
 * err; -EBADMSG means the request itself is malformed, -ERANGE or
 * -EOPNOTSUPP options the config does not allow (model_options.h): then
 * nothing changed.  On success every session is closed, so it redials
 * with the new MODEL. */
int model_register(model *m, void *owner, const char *trainer,
		   const uint8_t *body, size_t len, int fd, char *err,
		   size_t err_len);
/* The owner's connection closed while the model stays registered (its
 * implicit DETACH waits for a step or for the neighbours): takes fd, a
 * copy of that connection, and closes it when the buffer goes. */
void model_hold_connection(model *m, int fd);
/* DETACH: the node, the mapping and the fd go; every session redials.
 * The core (core.h) calls it once the edges are detached and the write
 * under way is over, never while the node is busy. */
void model_detach(model *m);

/* Whether client may ask for the model's requests: its owner, or a
 * member of its local group. */
bool model_owned_by(const model *m, const void *client);
/* A local group's member buffer goes (group_ops.release). */
void model_member_release(void *handle);

/* Peer traffic since REGISTER. */
void model_bytes(const model *m, uint64_t *ret_sent, uint64_t *ret_received);

#endif
