/*
 * trainset: Fashion-MNIST as the trainer sees it.
 *
 * This module owns a labelled image set kept as bytes (a node's training
 * shard, or the test set), splitting the 60000 training images into
 * disjoint per-node shards, and turning rows into normalised float batches
 * ((pixel / 255 - 0.2860) / 0.3530, the data set's mean and deviation).
 * Shards: the images are permuted with a seed and node i of n takes the
 * i-th of n contiguous slices of that permutation (sizes differ by at most
 * one), so nodes given the same seed hold disjoint shards covering the set.
 */
#ifndef GSP_TOOLS_TRAINSET_H
#define GSP_TOOLS_TRAINSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct gsp_trainset {
	size_t count;          /* rows */
	size_t source_count;   /* rows of the whole set the shard came from */
	unsigned features;     /* bytes per row (784) */
	uint8_t *pixels;       /* count * features, owned */
	uint8_t *labels;       /* count, owned */
} gsp_trainset;

/* Loads set ("train" or "t10k") from dir (NULL: the Debian package's
 * directory) and keeps shard node of nodes (nodes 1: all of it, in file
 * order).  Errors: those of gsp_fmnist_images() (-ENOENT when the data set
 * is not installed), -EINVAL when node >= nodes or a shard would be
 * empty, -ENOMEM. */
int gsp_trainset_load(const char *dir, const char *set, unsigned node,
		      unsigned nodes, uint64_t seed, gsp_trainset *ret)
	__attribute__((warn_unused_result));
void gsp_trainset_free(gsp_trainset *s);

/* Rows rows[0..n) (NULL: rows first..first+n) as normalised floats into
 * x[n * features] and their labels into y[n]. */
void gsp_trainset_batch(const gsp_trainset *s, const uint32_t *rows,
			size_t first, size_t n, float *x, uint8_t *y);

#endif
