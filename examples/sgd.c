/* sgd: momentum SGD on a flat vector through OpenBLAS (see sgd.h). */
#include <cblas.h>
#include <errno.h>
#include <stdlib.h>

#include "sgd.h"

int gsp_sgd_init(gsp_sgd *s, size_t n, float lr, float momentum)
{
	s->velocity = calloc(n ? n : 1, sizeof(float));
	if (!s->velocity)
		return -ENOMEM;
	s->n = n;
	s->lr = lr;
	s->momentum = momentum;
	return 0;
}

void gsp_sgd_step(gsp_sgd *s, float *params, const float *grads)
{
	cblas_sscal((int)s->n, s->momentum, s->velocity, 1);
	cblas_saxpy((int)s->n, 1.0f, grads, 1, s->velocity, 1);
	cblas_saxpy((int)s->n, -s->lr, s->velocity, 1, params, 1);
}

void gsp_sgd_free(gsp_sgd *s)
{
	free(s->velocity);
	s->velocity = NULL;
}
