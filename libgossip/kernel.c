/* The fused low-rank kernel: apply every pending rank-r update and compute
 * every projection of one matrix in a single blocked pass over its rows,
 * so a step with k edges costs about one read-write pass over the model
 * rather than 2k.  The matrix work is OpenBLAS sgemm on row blocks small
 * enough to stay in cache between the update and the projections. */
#include <cblas.h>

#include "internal.h"

/* Floats per row block: a block is updated, then read again by the
 * projections while it is still in L2. */
#define GSP_BLOCK_FLOATS 32768

void gsp__lowrank_run(const gsp__lowrank_job *j)
{
	const size_t m = j->m, k = j->k;
	size_t rows = GSP_BLOCK_FLOATS / k;
	if (rows == 0)
		rows = 1;
	for (size_t i0 = 0; i0 < m; i0 += rows) {
		size_t mb = m - i0 < rows ? m - i0 : rows;
		float *xb = j->x + i0 * k;
		if (j->na)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
				    (int)mb, (int)k, (int)j->na, 1.0f,
				    j->l + i0 * j->na, (int)j->na, j->r,
				    (int)j->na, 1.0f, xb, (int)k);
		if (j->no)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
				    (int)mb, (int)j->no, (int)k, 1.0f, xb,
				    (int)k, j->v, (int)j->no, 0.0f,
				    j->mo + i0 * j->no, (int)j->no);
		if (j->ne)
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans,
				    (int)k, (int)j->ne, (int)mb, 1.0f, xb,
				    (int)k, j->u + i0 * j->ne, (int)j->ne,
				    i0 == 0 ? 0.0f : 1.0f, j->me, (int)j->ne);
	}
}
