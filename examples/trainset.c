/* trainset: Fashion-MNIST shards and normalised batches (see trainset.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "idx.h"
#include "rng.h"
#include "trainset.h"

#define PIXEL_MEAN 0.2860f
#define PIXEL_STD 0.3530f

int gsp_trainset_load(const char *dir, const char *set, unsigned node,
		      unsigned nodes, uint64_t seed, gsp_trainset *ret)
{
	gsp_idx images, labels;
	gsp_trainset s = {0};
	uint32_t *order = NULL;
	int err;

	if (nodes == 0 || node >= nodes)
		return -EINVAL;
	err = gsp_fmnist_images(dir, set, &images, &labels);
	if (err < 0)
		return err;
	size_t total = images.dims[0];
	size_t first = total * node / nodes, end = total * (node + 1) / nodes;
	s.features = images.dims[1] * images.dims[2];
	s.count = end - first;
	s.source_count = total;
	err = -EINVAL;
	if (s.count == 0)
		goto out;
	err = -ENOMEM;
	order = malloc(total * sizeof(*order));
	s.pixels = malloc(s.count * s.features);
	s.labels = malloc(s.count);
	if (!order || !s.pixels || !s.labels)
		goto out;
	for (size_t i = 0; i < total; i++)
		order[i] = (uint32_t)i;
	if (nodes > 1) {
		gsp_rng rng = gsp_rng_new(seed, 0x5ead);
		gsp_rng_shuffle(&rng, order, total);
	}
	for (size_t i = 0; i < s.count; i++) {
		size_t row = order[first + i];
		memcpy(s.pixels + i * s.features,
		       images.data + row * s.features, s.features);
		s.labels[i] = labels.data[row];
	}
	*ret = s;
	s = (gsp_trainset){0};
	err = 0;
out:
	gsp_trainset_free(&s);
	free(order);
	gsp_idx_free(&images);
	gsp_idx_free(&labels);
	return err;
}

void gsp_trainset_free(gsp_trainset *s)
{
	free(s->pixels);
	free(s->labels);
	memset(s, 0, sizeof(*s));
}

void gsp_trainset_batch(const gsp_trainset *s, const uint32_t *rows,
			size_t first, size_t n, float *x, uint8_t *y)
{
	const float scale = 1.0f / (255.0f * PIXEL_STD);
	const float shift = PIXEL_MEAN / PIXEL_STD;

	for (size_t i = 0; i < n; i++) {
		size_t row = rows ? rows[i] : first + i;
		const uint8_t *p = s->pixels + row * s->features;
		float *out = x + i * s->features;
		for (unsigned j = 0; j < s->features; j++)
			out[j] = (float)p[j] * scale - shift;
		y[i] = s->labels[row];
	}
}
