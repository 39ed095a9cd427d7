/* mlp: fully connected ReLU network with softmax cross-entropy, forward
 * and backward through OpenBLAS (see mlp.h). */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mlp.h"
#include "rng.h"

#define MAX_WIDTH 65536u

struct gsp_mlp {
	unsigned n_layers;                       /* weight layers */
	unsigned sizes[GSP_MLP_MAX_LAYERS + 1];
	unsigned batch_cap;
	size_t n_params;
	size_t weight_at[GSP_MLP_MAX_LAYERS];    /* float offsets */
	size_t bias_at[GSP_MLP_MAX_LAYERS];
	float *params;                           /* bound, not owned */
	float *grads;
	/* acts[l], l >= 1: layer l's output for the last batch, [batch, sizes[l]]
	 * (ReLU applied for hidden layers; the logits for the last one). */
	float *acts[GSP_MLP_MAX_LAYERS + 1];
	float *delta, *delta_prev;               /* [batch, widest layer] */
	float *ones;                             /* batch_cap ones */
};

int gsp_mlp_parse_sizes(const char *spec, unsigned sizes[GSP_MLP_MAX_LAYERS + 1])
{
	char buf[128], *save = NULL;
	unsigned n = 0;

	if (!spec || strlen(spec) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, spec);
	for (char *tok = strtok_r(buf, "-", &save); tok;
	     tok = strtok_r(NULL, "-", &save)) {
		unsigned long long v;
		if (n == GSP_MLP_MAX_LAYERS + 1 ||
		    gsp_cli_uint(tok, MAX_WIDTH, &v) || v == 0)
			return -EINVAL;
		sizes[n++] = (unsigned)v;
	}
	/* strtok_r skips empty fields: reject "784--10" and "-784-10". */
	if (n < 2 || spec[0] == '-' || spec[strlen(spec) - 1] == '-' ||
	    strstr(spec, "--"))
		return -EINVAL;
	return (int)n;
}

int gsp_mlp_new(const unsigned *sizes, unsigned n_sizes, unsigned batch_cap,
		gsp_mlp **ret)
{
	gsp_mlp *net;
	size_t widest = 0;

	if (n_sizes < 2 || n_sizes > GSP_MLP_MAX_LAYERS + 1 || batch_cap == 0)
		return -EINVAL;
	for (unsigned l = 0; l < n_sizes; l++)
		if (sizes[l] == 0 || sizes[l] > MAX_WIDTH)
			return -EINVAL;
	if (sizes[n_sizes - 1] > 256)   /* labels are bytes */
		return -EINVAL;
	net = calloc(1, sizeof(*net));
	if (!net)
		return -ENOMEM;
	net->n_layers = n_sizes - 1;
	net->batch_cap = batch_cap;
	memcpy(net->sizes, sizes, n_sizes * sizeof(*sizes));
	for (unsigned l = 0; l < net->n_layers; l++) {
		size_t in = sizes[l], out = sizes[l + 1];
		net->weight_at[l] = net->n_params;
		net->bias_at[l] = net->n_params + out * in;
		net->n_params += out * in + out;
		if (out > widest)
			widest = out;
		net->acts[l + 1] = malloc((size_t)batch_cap * out * sizeof(float));
		if (!net->acts[l + 1])
			goto nomem;
	}
	net->grads = calloc(net->n_params, sizeof(float));
	net->delta = malloc((size_t)batch_cap * widest * sizeof(float));
	net->delta_prev = malloc((size_t)batch_cap * widest * sizeof(float));
	net->ones = malloc((size_t)batch_cap * sizeof(float));
	if (!net->grads || !net->delta || !net->delta_prev || !net->ones)
		goto nomem;
	for (unsigned i = 0; i < batch_cap; i++)
		net->ones[i] = 1.0f;
	*ret = net;
	return 0;
nomem:
	gsp_mlp_free(net);
	return -ENOMEM;
}

void gsp_mlp_free(gsp_mlp *net)
{
	if (!net)
		return;
	for (unsigned l = 1; l <= net->n_layers; l++)
		free(net->acts[l]);
	free(net->grads);
	free(net->delta);
	free(net->delta_prev);
	free(net->ones);
	free(net);
}

size_t gsp_mlp_param_count(const gsp_mlp *net)
{
	return net->n_params;
}

size_t gsp_mlp_tensor_count(const gsp_mlp *net)
{
	return 2 * (size_t)net->n_layers;
}

void gsp_mlp_tensors(const gsp_mlp *net, gsp_tensor *t)
{
	for (unsigned l = 0; l < net->n_layers; l++) {
		gsp_tensor *w = &t[2 * l], *b = &t[2 * l + 1];
		memset(w, 0, sizeof(*w));
		memset(b, 0, sizeof(*b));
		snprintf(w->name, sizeof(w->name), "fc%u.weight", l + 1);
		w->ndim = 2;
		w->shape[0] = net->sizes[l + 1];
		w->shape[1] = net->sizes[l];
		snprintf(b->name, sizeof(b->name), "fc%u.bias", l + 1);
		b->ndim = 1;
		b->shape[0] = net->sizes[l + 1];
	}
}

void gsp_mlp_bind(gsp_mlp *net, float *params)
{
	net->params = params;
}

const float *gsp_mlp_grads(const gsp_mlp *net)
{
	return net->grads;
}

void gsp_mlp_init(gsp_mlp *net, uint64_t seed)
{
	gsp_rng rng = gsp_rng_new(seed, 0);

	for (unsigned l = 0; l < net->n_layers; l++) {
		size_t in = net->sizes[l], out = net->sizes[l + 1];
		float bound = 1.0f / sqrtf((float)in);
		float *w = net->params + net->weight_at[l];
		float *b = net->params + net->bias_at[l];
		for (size_t i = 0; i < out * in; i++)
			w[i] = gsp_rng_uniform(&rng, -bound, bound);
		for (size_t i = 0; i < out; i++)
			b[i] = gsp_rng_uniform(&rng, -bound, bound);
	}
}

/* acts[l + 1] = act(in W_l^T + b_l) for every layer; returns the logits. */
static const float *forward(gsp_mlp *net, const float *x, unsigned batch)
{
	const float *in = x;

	for (unsigned l = 0; l < net->n_layers; l++) {
		int k = (int)net->sizes[l], m = (int)net->sizes[l + 1];
		const float *w = net->params + net->weight_at[l];
		const float *b = net->params + net->bias_at[l];
		float *out = net->acts[l + 1];
		for (unsigned r = 0; r < batch; r++)
			memcpy(out + (size_t)r * m, b, (size_t)m * sizeof(float));
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)batch, m,
			    k, 1.0f, in, k, w, k, 1.0f, out, m);
		if (l + 1 < net->n_layers)
			for (size_t i = 0; i < (size_t)batch * m; i++)
				out[i] = out[i] > 0.0f ? out[i] : 0.0f;
		in = out;
	}
	return in;
}

/* Mean cross-entropy of the logits; with delta, also d(mean)/d(logits):
 * (softmax - onehot) / batch. */
static double cross_entropy(const float *logits, const uint8_t *labels,
			    unsigned batch, unsigned classes, float *delta)
{
	double total = 0;

	for (unsigned r = 0; r < batch; r++) {
		const float *z = logits + (size_t)r * classes;
		float top = z[0];
		double sum = 0;
		for (unsigned j = 1; j < classes; j++)
			top = z[j] > top ? z[j] : top;
		for (unsigned j = 0; j < classes; j++)
			sum += exp((double)z[j] - top);
		total += log(sum) + top - z[labels[r]];
		if (!delta)
			continue;
		float *d = delta + (size_t)r * classes;
		for (unsigned j = 0; j < classes; j++) {
			double p = exp((double)z[j] - top) / sum;
			d[j] = (float)((p - (j == labels[r])) / batch);
		}
	}
	return total / batch;
}

double gsp_mlp_loss(gsp_mlp *net, const float *x, const uint8_t *labels,
		    unsigned batch)
{
	const float *logits = forward(net, x, batch);
	return cross_entropy(logits, labels, batch, net->sizes[net->n_layers],
			     NULL);
}

double gsp_mlp_loss_grad(gsp_mlp *net, const float *x, const uint8_t *labels,
			 unsigned batch)
{
	const float *logits = forward(net, x, batch);
	double loss = cross_entropy(logits, labels, batch,
				    net->sizes[net->n_layers], net->delta);

	for (unsigned l = net->n_layers; l-- > 0;) {
		int k = (int)net->sizes[l], m = (int)net->sizes[l + 1];
		const float *in = l ? net->acts[l] : x;
		const float *w = net->params + net->weight_at[l];
		/* dW = delta^T in, db = delta^T 1 */
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, k,
			    (int)batch, 1.0f, net->delta, m, in, k, 0.0f,
			    net->grads + net->weight_at[l], k);
		cblas_sgemv(CblasRowMajor, CblasTrans, (int)batch, m, 1.0f,
			    net->delta, m, net->ones, 1, 0.0f,
			    net->grads + net->bias_at[l], 1);
		if (l == 0)
			break;
		/* delta of the layer below: (delta W) masked by ReLU'. */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)batch,
			    k, m, 1.0f, net->delta, m, w, k, 0.0f,
			    net->delta_prev, k);
		for (size_t i = 0; i < (size_t)batch * k; i++)
			if (!(in[i] > 0.0f))
				net->delta_prev[i] = 0.0f;
		float *t = net->delta;
		net->delta = net->delta_prev;
		net->delta_prev = t;
	}
	return loss;
}

unsigned gsp_mlp_correct(gsp_mlp *net, const float *x, const uint8_t *labels,
			 unsigned batch)
{
	unsigned classes = net->sizes[net->n_layers], right = 0;
	const float *logits = forward(net, x, batch);

	for (unsigned r = 0; r < batch; r++) {
		const float *z = logits + (size_t)r * classes;
		unsigned best = 0;
		for (unsigned j = 1; j < classes; j++)
			if (z[j] > z[best])
				best = j;
		right += best == labels[r];
	}
	return right;
}
