/* model_group: a local group's buffers (model_impl.h): the machine's
 * buffer the node works on, and the REGISTERs of the members that join
 * (group.h owns the members' arithmetic). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "model_impl.h"
#include "model_options.h"

void model_member_release(void *handle)
{
	model_member *mb = handle;
	if (!mb)
		return;
	if (mb->map)
		munmap(mb->map, mb->bytes);
	if (mb->fd >= 0)
		close(mb->fd);
	free(mb);
}

static int refuse_dtype(gsp_dtype dtype, char *err, size_t err_len)
{
	if (dtype == GSP_DTYPE_FLOAT32)
		return 0;
	snprintf(err, err_len, "a local group's models are float32, not %s "
		 "(the group averages float32 buffers)", gsp_dtype_name(dtype));
	return -EOPNOTSUPP;
}

int model__group_machine(model *m, uint64_t n, char *err, size_t err_len)
{
	int r = refuse_dtype(m->dtype, err, err_len);
	if (r)
		return r;
	model_member *mb = malloc(sizeof(*mb));
	int fd = memfd_create("gossipd-machine", MFD_CLOEXEC);
	void *map = MAP_FAILED;
	if (mb && fd >= 0 && ftruncate(fd, (off_t)m->map_bytes) == 0)
		map = mmap(NULL, m->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!mb || map == MAP_FAILED) {
		r = mb ? -errno : -ENOMEM;
		snprintf(err, err_len, "cannot make the machine's buffer: %s",
			 strerror(-r));
		free(mb);
		if (fd >= 0)
			close(fd);
		return r;
	}
	memcpy(map, m->params, n * sizeof(float));
	*mb = (model_member){.map = m->params, .bytes = m->map_bytes, .fd = m->fd};
	m->first = mb;
	m->params = map;
	m->fd = fd;
	return 0;
}

int model__group_start(model *m, void *owner, char *err, size_t err_len)
{
	int r = group_begin(&m->group, m->params, gsp_layout_floats(m->layout));
	if (!r)
		r = group_join(&m->group, owner, m->first->map, m->first);
	if (r) {
		group_end(&m->group);
		snprintf(err, err_len, "cannot start the local group: %s", strerror(-r));
		return r;
	}
	m->first = NULL;         /* the group's now */
	m->mode = MODEL_GROUP;
	return 0;
}

/* Whether reg's model is the group's: its settings within the config,
 * float32, the same fingerprint. */
static int same_model(model *m, const gsp_api_register *reg, char *err, size_t err_len)
{
	gsp_config settings;
	gsp_layout *layout = NULL;
	gsp_wire_tensor *wire = NULL;
	uint8_t fp[GSP_FINGERPRINT_BYTES];
	char summary[GSP_MODEL_SUMMARY_MAX + 1];
	int r = model_options_resolve(m->cfg, &reg->opts, &settings, err, err_len);
	if (!r)
		r = refuse_dtype(model_options_dtype(&reg->opts), err, err_len);
	if (r)
		return r;
	r = model__layout_of(reg, &layout, &wire);
	if (!r)
		r = model__describe(&settings, GSP_DTYPE_FLOAT32, wire, reg->n_tensors, fp,
				    summary, sizeof(summary));
	free(wire);
	gsp_layout_free(layout);
	if (r) {
		snprintf(err, err_len, "bad tensor list: %s", gsp_strerror(r));
		return r;
	}
	if (memcmp(fp, m->fingerprint, sizeof(fp)) != 0) {
		snprintf(err, err_len, "not the local group's model: ours %s; this "
			 "REGISTER's %s", m->summary, summary);
		return -EINVAL;
	}
	return 0;
}

int model__group_join(model *m, void *owner, const gsp_api_register *reg, int fd,
		      char *err, size_t err_len)
{
	model_member *mb = NULL;
	int r = same_model(m, reg, err, err_len);
	if (!r && fd < 0) {
		snprintf(err, err_len, "REGISTER needs the buffer's fd (SCM_RIGHTS)");
		r = -EBADF;
	}
	if (!r)
		r = model__check_buffer(fd, reg->buffer_bytes, err, err_len);
	if (!r && !(mb = malloc(sizeof(*mb)))) {
		snprintf(err, err_len, "out of memory");
		r = -ENOMEM;
	}
	if (r) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	*mb = (model_member){.bytes = reg->buffer_bytes, .fd = fd};
	mb->map = mmap(NULL, mb->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mb->map == MAP_FAILED) {
		r = -errno;
		mb->map = NULL;
		snprintf(err, err_len, "cannot map the buffer: %s", strerror(-r));
	} else if ((r = group_join(&m->group, owner, mb->map, mb)) != 0) {
		if (r == -EUSERS)
			snprintf(err, err_len, "the local group has MaxLocalTrainers (%u) "
				 "trainers already", m->group.max_members);
		else if (r == -EEXIST)
			snprintf(err, err_len, "this connection already registered "
				 "a model; DETACH it first");
		else if (r == -EBUSY)
			snprintf(err, err_len, "the local group's model is being detached");
		else
			snprintf(err, err_len, "cannot join the local group: %s",
				 strerror(-r));
	}
	if (r) {
		model_member_release(mb);
		return r;
	}
	gsp_info("a trainer joined the local group (%u trainers): %s",
		 m->group.n_members, m->summary);
	return 0;
}
