/*
 * mlp: a multilayer perceptron classifier, all matrix work in OpenBLAS.
 *
 * This module owns the network of gossip-train: fully connected layers
 * with ReLU between them and softmax cross-entropy on top, its parameter
 * layout (the tensors registered with gossipd), deterministic
 * initialisation from a seed, the forward pass, the mean loss of a batch
 * and its gradient (backpropagation), and counting correct predictions.
 *
 * Parameters are not owned: they live in a flat float buffer the caller
 * binds (gossipd's shared buffer, or plain memory), packed in the order of
 * gsp_mlp_tensors(): fc1.weight [out, in], fc1.bias [out], fc2.weight ...
 * Weights are row-major [out, in] as in PyTorch's nn.Linear.  Gradients
 * and activations are owned, sized for batches of up to batch_cap rows.
 */
#ifndef GSP_TOOLS_MLP_H
#define GSP_TOOLS_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "gossip.h"

/* Weight layers at most; a network has between 1 and this many. */
#define GSP_MLP_MAX_LAYERS 8

typedef struct gsp_mlp gsp_mlp;

/* Parses "784-512-256-10" (input, hidden..., classes; each 1..65536, 2 to
 * GSP_MLP_MAX_LAYERS + 1 sizes) into sizes[]; returns the count, or
 * -EINVAL. */
int gsp_mlp_parse_sizes(const char *spec,
			unsigned sizes[GSP_MLP_MAX_LAYERS + 1]);

/* A network of n_sizes layer sizes for batches of at most batch_cap rows.
 * -EINVAL for bad sizes, -ENOMEM. */
int gsp_mlp_new(const unsigned *sizes, unsigned n_sizes, unsigned batch_cap,
		gsp_mlp **ret) __attribute__((warn_unused_result));
void gsp_mlp_free(gsp_mlp *net);

/* Floats of the parameter buffer. */
size_t gsp_mlp_param_count(const gsp_mlp *net);
/* Number of tensors (two per layer) and their descriptions: names
 * fcL.weight / fcL.bias, L from 1; t must hold that many. */
size_t gsp_mlp_tensor_count(const gsp_mlp *net);
void gsp_mlp_tensors(const gsp_mlp *net, gsp_tensor *t);

/* Where the parameters live from now on (gsp_mlp_param_count() floats). */
void gsp_mlp_bind(gsp_mlp *net, float *params);
/* The gradient of the last gsp_mlp_loss_grad(), same layout. */
const float *gsp_mlp_grads(const gsp_mlp *net);

/* Initialises the bound parameters like PyTorch's nn.Linear: weights and
 * biases uniform in +-1/sqrt(fan_in), drawn from seed in tensor order. */
void gsp_mlp_init(gsp_mlp *net, uint64_t seed);

/* Mean softmax cross-entropy of a batch: x is [batch, sizes[0]] row-major,
 * labels in [0, classes).  batch in 1..batch_cap. */
double gsp_mlp_loss(gsp_mlp *net, const float *x, const uint8_t *labels,
		    unsigned batch);
/* The same, and the gradient of that mean with respect to every parameter
 * into the gradient buffer. */
double gsp_mlp_loss_grad(gsp_mlp *net, const float *x, const uint8_t *labels,
			 unsigned batch);
/* How many rows of the batch the network classifies correctly (argmax of
 * the logits, the lowest class on ties). */
unsigned gsp_mlp_correct(gsp_mlp *net, const float *x, const uint8_t *labels,
			 unsigned batch);

#endif
