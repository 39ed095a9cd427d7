/*
 * model_impl.h: what the model module's files share, bottom to top:
 * model_desc.c (a REGISTER's layout, fingerprint, buffer check),
 * model_group.c (a local group's machine buffer and its members'
 * REGISTERs), model.c (REGISTER, DETACH).  Not for other modules: they
 * use model.h.
 */
#ifndef GOSSIPD_MODEL_IMPL_H
#define GOSSIPD_MODEL_IMPL_H

#include "model.h"

/* A local group member's mapped buffer (group_join's handle). */
typedef struct model_member {
	void *map;
	size_t bytes;
	int fd;
} model_member;

/* model_desc.c.  The layout of a decoded REGISTER and its wire tensors; the
 * fingerprint and summary of a model of settings c and dtype; whether
 * fd is a sealed memfd of at least need bytes (else the reason). */
int model__layout_of(const gsp_api_register *reg, gsp_layout **ret,
		     gsp_wire_tensor **ret_wire);
int model__describe(const gsp_config *c, gsp_dtype dtype,
		    const gsp_wire_tensor *wire, uint32_t n,
		    uint8_t fingerprint[GSP_FINGERPRINT_BYTES], char *summary,
		    size_t summary_len);
int model__check_buffer(int fd, uint64_t need, char *err_text, size_t err_len);

/* model_group.c.  A group's first REGISTER: the trainer's buffer, mapped
 * as m->fd and m->params, becomes the first member (m->first), and the
 * node gets the machine's buffer (a memfd of the daemon's) holding its n
 * parameters.  Then, the model set up, the group begins with it. */
int model__group_machine(model *m, uint64_t n, char *err, size_t err_len);
int model__group_start(model *m, void *owner, char *err, size_t err_len);
/* A later REGISTER with the group option: owner joins if its model is
 * the group's (fingerprint, float32); takes fd whatever happens. */
int model__group_join(model *m, void *owner, const gsp_api_register *reg, int fd,
		      char *err, size_t err_len);

#endif
