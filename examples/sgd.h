/*
 * sgd: stochastic gradient descent with heavy-ball momentum over one flat
 * float vector, in PyTorch's convention (v = momentum * v + g;
 * x -= lr * v).  This module owns the momentum buffer, which stays private
 * to the trainer: it is never gossiped.
 */
#ifndef GSP_TOOLS_SGD_H
#define GSP_TOOLS_SGD_H

#include <stddef.h>

typedef struct gsp_sgd {
	size_t n;
	float lr, momentum;
	float *velocity;       /* n floats, zero at the start */
} gsp_sgd;

/* 0 or -ENOMEM. */
int gsp_sgd_init(gsp_sgd *s, size_t n, float lr, float momentum)
	__attribute__((warn_unused_result));
/* One step of params[0..n) along grads[0..n). */
void gsp_sgd_step(gsp_sgd *s, float *params, const float *grads);
void gsp_sgd_free(gsp_sgd *s);

#endif
