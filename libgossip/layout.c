/* Model layouts: validated tensor lists packed into one flat float32
 * buffer, with the matrix view (m x k) of every tensor of >= 2 dims. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Largest model accepted: 2^38 floats (1 TiB); keeps every byte count of
 * the engine far from overflow. */
#define GSP_MAX_FLOATS (UINT64_C(1) << 38)

static int mul_capped(uint64_t a, uint64_t b, uint64_t *ret)
{
	if (a != 0 && b > GSP_MAX_FLOATS / a)
		return -EOVERFLOW;
	*ret = a * b;
	return 0;
}

int gsp_layout_new(const gsp_tensor *tensors, size_t n, gsp_layout **ret_layout)
{
	if ((!tensors && n) || !ret_layout || n == 0)
		return -EINVAL;
	gsp_layout *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->t = calloc(n, sizeof(*l->t));
	if (!l->t) {
		free(l);
		return -ENOMEM;
	}
	l->n = n;
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const gsp_tensor *in = &tensors[i];
		gsp_tensor *t = &l->t[i];
		if (in->ndim > GSP_MAX_DIMS ||
		    memchr(in->name, '\0', sizeof(in->name)) == NULL) {
			err = -EINVAL;
			break;
		}
		memcpy(t->name, in->name, sizeof(t->name));
		t->ndim = in->ndim;
		uint64_t numel = 1;
		for (unsigned d = 0; d < in->ndim && !err; d++) {
			t->shape[d] = in->shape[d];
			if (in->shape[d] == 0)
				err = -EINVAL;
			else
				err = mul_capped(numel, in->shape[d], &numel);
		}
		if (err)
			break;
		t->numel = numel;
		t->offset = l->floats;
		t->compressed = t->ndim >= 2;
		if (t->compressed) {
			t->m = t->shape[0];
			t->k = numel / t->m;
			l->n_compressed++;
			uint64_t big = t->m > t->k ? t->m : t->k;
			if (big > l->max_dim)
				l->max_dim = big;
		} else {
			l->vec_floats += numel;
		}
		if (numel > GSP_MAX_FLOATS - l->floats)
			err = -EOVERFLOW;
		else
			l->floats += numel;
	}
	if (err) {
		gsp_layout_free(l);
		return err;
	}
	*ret_layout = l;
	return 0;
}

/* Parses one decimal dimension in [1, 2^38]; advances *p. */
static int parse_dim(const char **p, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > GSP_MAX_FLOATS)
			return -EOVERFLOW;
		s++;
	}
	if (v == 0)
		return -EINVAL;
	*p = s;
	*ret = v;
	return 0;
}

int gsp_layout_parse(const char *spec, gsp_layout **ret_layout)
{
	if (!spec || !ret_layout || !*spec)
		return -EINVAL;
	size_t n = 1;
	for (const char *c = spec; *c; c++)
		n += *c == ',';
	gsp_tensor *t = calloc(n, sizeof(*t));
	if (!t)
		return -ENOMEM;
	const char *p = spec;
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		snprintf(t[i].name, sizeof(t[i].name), "t%zu", i);
		do {
			if (t[i].ndim == GSP_MAX_DIMS) {
				err = -EINVAL;
				break;
			}
			err = parse_dim(&p, &t[i].shape[t[i].ndim++]);
		} while (!err && *p == 'x' && p++);
		if (!err && *p != (i + 1 < n ? ',' : '\0'))
			err = -EINVAL;
		p++;
	}
	if (!err)
		err = gsp_layout_new(t, n, ret_layout);
	free(t);
	return err;
}

void gsp_layout_free(gsp_layout *layout)
{
	if (!layout)
		return;
	free(layout->t);
	free(layout);
}

size_t gsp_layout_count(const gsp_layout *layout)
{
	return layout ? layout->n : 0;
}

const gsp_tensor *gsp_layout_tensor(const gsp_layout *layout, size_t i)
{
	return layout && i < layout->n ? &layout->t[i] : NULL;
}

uint64_t gsp_layout_floats(const gsp_layout *layout)
{
	return layout ? layout->floats : 0;
}
