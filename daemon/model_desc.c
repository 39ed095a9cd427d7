/* model_desc: what a REGISTER describes (model_impl.h): its layout, its
 * fingerprint and summary, and whether its buffer may be mapped.  Below
 * model_group.c and model.c; calls neither. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model_impl.h"

/* Layout from a decoded REGISTER; wire tensors become gsp_tensors. */
int model__layout_of(const gsp_api_register *reg, gsp_layout **ret,
		     gsp_wire_tensor **ret_wire)
{
	gsp_tensor *t = calloc(reg->n_tensors, sizeof(*t));
	gsp_wire_tensor *w = calloc(reg->n_tensors, sizeof(*w));
	if (!t || !w) {
		free(t);
		free(w);
		return -ENOMEM;
	}
	gsp_api_tensor_iter it;
	gsp_api_tensor_iter_init(&it, reg);
	for (uint32_t i = 0; i < reg->n_tensors && gsp_api_tensor_next(&it, &w[i]) == 1; i++) {
		memcpy(t[i].name, w[i].name, w[i].name_len);
		t[i].ndim = w[i].ndim;
		for (unsigned k = 0; k < w[i].ndim; k++)
			t[i].shape[k] = w[i].dims[k];
	}
	int err = gsp_layout_new(t, reg->n_tensors, ret);
	free(t);
	if (err)
		free(w);
	else
		*ret_wire = w;
	return err;
}


int model__describe(const gsp_config *c, gsp_dtype dtype,
		    const gsp_wire_tensor *wire, uint32_t n,
		    uint8_t fingerprint[GSP_FINGERPRINT_BYTES], char *summary,
		    size_t summary_len)
{
	gsp_model_desc desc = {
		.method = (uint8_t)c->method, .rank = (uint16_t)c->rank,
		.warm_start = c->warm_start, .gamma = c->gamma,
		.choco_fraction = c->choco_fraction, .dtype = (uint8_t)dtype,
		.precision = (uint8_t)c->wire,
		.tensors = wire,
		.n_tensors = n,
	};
	int err = gsp_model_fingerprint(&desc, fingerprint);
	if (!err)
		err = gsp_model_summary(&desc, summary, summary_len);
	return err < 0 ? err : 0;   /* the summary returns its length */
}


/* Whether an fd passed to REGISTER may be mapped: only a memfd sealed
 * against shrinking and growing, so the trainer cannot truncate the
 * mapping under the daemon (a SIGBUS) and its size is final. */
int model__check_buffer(int fd, uint64_t need, char *err_text, size_t err_len)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) !=
			 (F_SEAL_SHRINK | F_SEAL_GROW)) {
		snprintf(err_text, err_len, "the buffer must be a memfd sealed with "
			 "F_SEAL_SHRINK and F_SEAL_GROW (%s)",
			 seals < 0 ? "this fd takes no seals" : "its seals lack those");
		return -EPERM;
	}
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < need) {
		snprintf(err_text, err_len, "buffer of %lld bytes is too small for "
			 "its REGISTER's %llu bytes", (long long)st.st_size,
			 (unsigned long long)need);
		return -EINVAL;
	}
	return 0;
}

