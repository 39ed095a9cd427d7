/* The fused low-rank kernel: apply every pending rank-r update and compute
 * every projection of one matrix in a single pass over its elements, so a
 * step with k edges costs about one read-write pass over the model rather
 * than 2k.
 *
 * How.  The matrix is walked in blocks of 4 rows x 32 columns held in
 * vector registers: each block is loaded once, updated (X += L R^T), stored
 * once, and while still in registers projected (Mo += X V, Me^T += U^T X).
 * R^T, V^T and the Me^T accumulator are re-read for every block of rows, so
 * the columns are cut into tiles whose slices of them stay in L1, and the
 * next block of rows is prefetched.  Large jobs are shared with the
 * engine's worker threads (pool.c; the caller is worker 0): each worker
 * takes one fixed, contiguous share of the rows and sums its own Me^T, and
 * the caller adds them up in worker order, so a step's result is
 * reproducible.
 * Small jobs run on the caller alone, and gsp__lowrank_alone() runs a job
 * on the calling thread with no shared state, for callers that spread
 * whole jobs over the workers themselves.
 *
 * Cores share little that is written.  Moving a cache line between cores
 * costs far more than reading it, and writing a line another core holds
 * costs most.  So a helper first copies R^T and V^T (sequential reads) into
 * a private buffer it alone ever touches, sums Me^T there, and hands it
 * back through a ring buffer whose lines were last used jobs ago; the task
 * itself goes through the ring too.  Callers should likewise not reuse the
 * memory of one job's inputs for the very next job (powergossip.c rotates
 * scratch slots).
 *
 * Arithmetic.  Only the local model X and projections of X are computed
 * here; the buffers both ends of an edge must agree on bit for bit are
 * derived from exchanged messages elsewhere (gsp__edge_diff), so this file
 * may use fused multiply-add and any summation order.  The project builds
 * with -ffp-contract=off; the kernel functions opt in to contraction
 * explicitly (KERNEL_FN).  The register kernel (kernel_body.h) is compiled
 * for AVX-512, AVX2+FMA and baseline C, each on vectors of its register
 * width, and the widest the CPU runs is picked once at start-up.
 *
 * Fallback.  When another thread is already in the kernel, or a buffer
 * cannot grow, the job runs on the plain OpenBLAS path instead: up to three
 * sgemm calls per block of rows. */
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "internal.h"

/* ---- compiler plumbing ------------------------------------------------ */

/* Contraction of a * b + c into fused multiply-adds, for this file only. */
#if defined(__clang__)
#define FP_CONTRACT _Pragma("clang fp contract(fast)")
#define CONTRACT_ATTR
#else
#define FP_CONTRACT
#define CONTRACT_ATTR optimize("fp-contract=fast")
#endif
#define KERNEL_FN static inline __attribute__((always_inline, CONTRACT_ATTR))
/* Small constant loops must be unrolled for their arrays to become
 * registers. */
#define UNROLL _Pragma("GCC unroll 4")

#define MAX_WORKERS GSP_POOL_MAX
/* Floats of the R^T, V^T and Me^T slices of one column tile: they are
 * re-read for every block of rows and should stay in L1 (32 KiB of 48 here;
 * a 256 KiB tile that stays in L2 measured 5-10% slower at k = 8). */
#define TILE_FLOATS 8192
/* Cost of a job: multiply-adds plus MEM_COST per element of X for moving
 * it through memory.  Jobs are shared from PARALLEL_MIN_COST on. */
#define MEM_COST 8
#define PARALLEL_MIN_COST (1u << 18)
/* Ring buffer for data shared with helpers, in floats (grows if needed). */
#define RING_FLOATS ((size_t)1 << 20)

/* ---- the register kernel ---------------------------------------------- */

/* What one worker reads and writes besides X, L, U and Mo. */
typedef struct share {
	float *met;               /* its Me^T (ne x ld), summed here */
	float *copy;              /* if set: copy R^T, V^T here first */
	float *met_out;           /* if set: copy Me^T here at the end */
} share;

/* One job as the workers see it.  Worker w runs rows [w rows_each,
 * (w + 1) rows_each): a fixed split, so results never depend on timing. */
typedef struct task {
	float *x;                 /* X, L, U, Mo of the job */
	const float *l, *u;
	float *mo;
	size_t m, k, na, no, ne;
	const float *rt, *vt;     /* R^T (na x ld), V^T (no x ld) */
	size_t ld;                /* row stride of R^T, V^T, Me^T */
	size_t cb;                /* column tile width, multiple of 32 */
	size_t rows_each;         /* rows per worker, a multiple of 4 */
	unsigned nw;              /* workers taking part */
	share w[MAX_WORKERS];
} task;

/* The register kernel for each vector width (kernel_body.h). */
#define KB(name) name##_w4
#define KB_W 4
#include "kernel_body.h"
#undef KB
#undef KB_W

/* One instance per instruction set, picked once at start-up.  The
 * arguments: rows per block, vectors per row of a block, Mo columns per
 * pass.  Measured on cache-resident 256 x 512 blocks at k = 8 (BENCHMARKS.md,
 * "Every instruction set"): AVX-512 and AVX2 both run fastest with 4, 2, 4
 * (AVX2 then spills a few of its 16 registers, yet beats every shape that
 * fits), plain 4-float vectors with 4, 2, 2. */
__attribute__((noinline, CONTRACT_ATTR))
static void part_generic(const task *t, unsigned w)
{
	part_body_w4(t, w, 4, 2, 2);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_X86_VARIANTS 1
/* Everything between these is compiled for the instruction set t. */
#define PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define TARGET_BEGIN(t) \
	PRAGMA(clang attribute push(__attribute__((target(t))), apply_to = function))
#define TARGET_END PRAGMA(clang attribute pop)
#else
#define TARGET_BEGIN(t) PRAGMA(GCC push_options) PRAGMA(GCC target(t))
#define TARGET_END PRAGMA(GCC pop_options)
#endif
TARGET_BEGIN("avx2,fma")
#define KB(name) name##_w8
#define KB_W 8
#include "kernel_body.h"
#undef KB
#undef KB_W
TARGET_END

__attribute__((noinline, target("avx2,fma"), CONTRACT_ATTR))
static void part_avx2(const task *t, unsigned w)
{
	part_body_w8(t, w, 4, 2, 4);
}

TARGET_BEGIN("avx512f,avx2,fma")
#define KB(name) name##_w16
#define KB_W 16
#include "kernel_body.h"
#undef KB
#undef KB_W
TARGET_END

__attribute__((noinline, target("avx512f,avx2,fma"), CONTRACT_ATTR))
static void part_avx512(const task *t, unsigned w)
{
	part_body_w16(t, w, 4, 2, 4);
}
#endif

static void (*part)(const task *t, unsigned w) = part_generic;
static pthread_once_t part_once = PTHREAD_ONCE_INIT;
static const char *part_name = "generic";

/* The widest variant this CPU runs, or the one GSP_KERNEL names if the
 * CPU can run it (for tests and benchmarks of every variant). */
static void pick_part(void)
{
	const char *want = getenv("GSP_KERNEL");
	if (want && strcmp(want, "generic") == 0)
		return;
#ifdef HAVE_X86_VARIANTS
	__builtin_cpu_init();
	bool fma = __builtin_cpu_supports("fma");
	bool avx2 = fma && __builtin_cpu_supports("avx2");
	bool avx512 = avx2 && __builtin_cpu_supports("avx512f");
	if (avx512 && !(want && strcmp(want, "avx2") == 0)) {
		part = part_avx512;
		part_name = "avx512";
	} else if (avx2) {
		part = part_avx2;
		part_name = "avx2";
	}
#endif
}

const char *gsp_kernel_name(void)
{
	pthread_once(&part_once, pick_part);
	return part_name;
}

/* ---- buffers ---------------------------------------------------------- */

/* What the kernel keeps between jobs; used only by the thread holding the
 * pool (gsp__pool_acquire). */
static struct kbufs {
	/* Caller-private buffers (helpers never touch them). */
	float *buf;                   /* R^T, V^T, caller's Me^T when alone */
	size_t buf_len;
	float *hbuf[MAX_WORKERS];     /* helper w's private buffer (only
				       * helper w reads or writes it) */
	size_t hbuf_len[MAX_WORKERS];
	float *spare;                 /* stands in for arrays of count 0 */
	size_t spare_len;
	float *ring;                  /* data shared with helpers */
	size_t ring_len, ring_pos;
} pool;

static void run_part(const void *t, unsigned w)
{
	part(t, w);
}

/* Grows a 64-byte aligned buffer to at least n floats; false on OOM. */
static bool reserve(float **buf, size_t *len, size_t n)
{
	if (n <= *len)
		return true;
	void *p = NULL;
	if (posix_memalign(&p, 64, n * sizeof(float)))
		return false;
	gsp_bigmem_advise(p, n * sizeof(float));
	free(*buf);
	*buf = p;
	*len = n;
	return true;
}

/* n floats (64-byte aligned) from the ring.  reserve_ring() must have
 * made room for the whole job first. */
static float *ring_take(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (pool.ring_pos + n > pool.ring_len)
		pool.ring_pos = 0;
	float *p = pool.ring + pool.ring_pos;
	pool.ring_pos += n;
	return p;
}

/* The ring holds at least four jobs, so a line is reused only after
 * helpers have long moved on. */
static bool reserve_ring(size_t n)
{
	size_t want = 4 * (n + 16 * 16);
	if (want < RING_FLOATS)
		want = RING_FLOATS;
	if (want > pool.ring_len) {
		if (!reserve(&pool.ring, &pool.ring_len, want))
			return false;
		pool.ring_pos = 0;
	}
	return true;
}

/* ---- the OpenBLAS path ------------------------------------------------ */

/* Floats per row block: a block is updated, then read again by the
 * projections while it is still in L2. */
#define BLAS_BLOCK_FLOATS 32768

static void lowrank_blas(const gsp__lowrank_job *j)
{
	const size_t m = j->m, k = j->k, ld = j->ldt;
	const int na = (int)j->na, no = (int)j->no, ne = (int)j->ne;
	size_t rows = BLAS_BLOCK_FLOATS / k;
	if (rows == 0)
		rows = 1;
	for (size_t i0 = 0; i0 < m; i0 += rows) {
		int mb = (int)(m - i0 < rows ? m - i0 : rows);
		float *xb = j->x + i0 * k;
		float beta = i0 == 0 ? 0.0f : 1.0f;
		if (!ld) {
			/* X += L R^T, Mo = X V, Me (+)= X^T U. */
			if (na)
				cblas_sgemm(CblasRowMajor, CblasNoTrans,
					    CblasTrans, mb, (int)k, na, 1.0f,
					    j->l + i0 * na, na, j->r, na, 1.0f,
					    xb, (int)k);
			if (no)
				cblas_sgemm(CblasRowMajor, CblasNoTrans,
					    CblasNoTrans, mb, no, (int)k, 1.0f,
					    xb, (int)k, j->v, no, 0.0f,
					    j->mo + i0 * no, no);
			if (ne)
				cblas_sgemm(CblasRowMajor, CblasTrans,
					    CblasNoTrans, (int)k, ne, mb, 1.0f,
					    xb, (int)k, j->u + i0 * ne, ne, beta,
					    j->me, ne);
		} else {
			/* The same with R^T, V^T and Me^T. */
			if (na)
				cblas_sgemm(CblasRowMajor, CblasNoTrans,
					    CblasNoTrans, mb, (int)k, na, 1.0f,
					    j->l + i0 * na, na, j->rt, (int)ld,
					    1.0f, xb, (int)k);
			if (no)
				cblas_sgemm(CblasRowMajor, CblasNoTrans,
					    CblasTrans, mb, no, (int)k, 1.0f,
					    xb, (int)k, j->vt, (int)ld, 0.0f,
					    j->mo + i0 * no, no);
			if (ne)
				cblas_sgemm(CblasRowMajor, CblasTrans,
					    CblasNoTrans, ne, (int)k, mb, 1.0f,
					    j->u + i0 * ne, ne, xb, (int)k, beta,
					    j->met, (int)ld);
		}
	}
}

/* ---- entry point ------------------------------------------------------ */

/* Transposes the rows x cols row-major src into dst (cols x rows, row
 * stride ld). */
static void transpose(float *dst, size_t ld, const float *src, size_t rows,
		      size_t cols)
{
	for (size_t i = 0; i < rows; i++)
		for (size_t c = 0; c < cols; c++)
			dst[c * ld + i] = src[i * cols + c];
}

/* The task of job j on nw workers with R^T, V^T and the caller's Me^T at
 * rt, vt, met (row stride ld), rows_each rows to each worker; the helpers'
 * shares are the caller's to fill. */
static task task_of(const gsp__lowrank_job *j, const float *rt,
		    const float *vt, float *met, size_t ld, size_t rows_each,
		    unsigned nw)
{
	size_t cb = (TILE_FLOATS / (j->na + j->no + j->ne)) & ~(size_t)31;
	return (task){
		.x = j->x, .l = j->l, .u = j->u, .mo = j->mo,
		.m = j->m, .k = j->k, .na = j->na, .no = j->no, .ne = j->ne,
		.rt = rt, .vt = vt, .ld = ld, .cb = cb < 32 ? 32 : cb,
		.rows_each = rows_each, .nw = nw, .w[0].met = met,
	};
}

/* Sets up and runs the job on nw workers; false if a buffer could not
 * grow (nothing was changed then). */
static bool run_pool(const gsp__lowrank_job *j, size_t nw)
{
	const size_t m = j->m, k = j->k, na = j->na, no = j->no, ne = j->ne;
	const float *rt = j->rt, *vt = j->vt;
	float *met = j->met;
	size_t ld = j->ldt;
	if (!ld) {
		/* Row-major R, V, Me: transpose into the caller's private
		 * buffer.  Rows start on cache lines, an odd number of lines
		 * apart so that they do not all fall on the same L1 sets. */
		ld = (k + 15) & ~(size_t)15;
		if (!(ld & 16))
			ld += 16;
		if (!reserve(&pool.buf, &pool.buf_len, ld * (na + no + ne)))
			return false;
		float *p = pool.buf;
		transpose(p, ld, j->r, k, na);
		transpose(p + ld * na, ld, j->v, k, no);
		rt = p;
		vt = p + ld * na;
		met = p + ld * (na + no);
	}
	/* Arrays of a zero count are never read, but pointers into them are
	 * offset: point them at a caller-private buffer of ld floats. */
	if (!na || !no || !ne) {
		if (!reserve(&pool.spare, &pool.spare_len, ld))
			return false;
		rt = na ? rt : pool.spare;
		vt = no ? vt : pool.spare;
		met = ne ? met : pool.spare;
	}
	const size_t own = ld * (na + no + ne);   /* R^T, V^T, Me^T */
	task local, *t = &local;
	if (nw > 1) {
		/* The task and the helpers' Me^T go to the ring.  Each
		 * helper copies R^T and V^T to a private buffer. */
		size_t shared = sizeof(task) / sizeof(float) +
				(nw - 1) * ld * ne + 2 * nw * 16;
		if (!reserve_ring(shared))
			return false;
		for (size_t w = 1; w < nw; w++)
			if (!reserve(&pool.hbuf[w], &pool.hbuf_len[w], own))
				return false;
		t = (task *)ring_take(sizeof(task) / sizeof(float) + 1);
	}
	/* One contiguous share of the rows per worker: each reads the
	 * slices of R^T, V^T and Me^T of a column tile for as many rows as
	 * possible (chunks of 32 rows, dealt round-robin, made k = 8 on a
	 * 4096 x 4096 matrix 25% slower).  Strips of 4 rows stay whole. */
	size_t each = ((m + nw - 1) / nw + 3) & ~(size_t)3;
	*t = task_of(j, rt, vt, met, ld, each, (unsigned)nw);
	for (size_t w = 1; w < nw; w++)
		t->w[w] = (share){
			.copy = pool.hbuf[w],
			.met = ne ? pool.hbuf[w] + ld * (na + no) : met,
			.met_out = ne ? ring_take(ld * ne) : NULL,
		};
	gsp__pool_run(t->nw, run_part, t);
	/* The helpers' Me^T added to the caller's. */
	for (size_t w = 1; ne && w < nw; w++)
		for (size_t e = 0; e < ne; e++)
			for (size_t c = 0; c < k; c++)
				met[e * ld + c] += t->w[w].met_out[e * ld + c];
	if (!j->ldt)
		for (size_t c = 0; c < k; c++)
			for (size_t e = 0; e < ne; e++)
				j->me[c * ne + e] = met[e * ld + c];
	return true;
}

void gsp__lowrank_run(const gsp__lowrank_job *j)
{
	const size_t m = j->m, k = j->k, na = j->na, no = j->no, ne = j->ne;
	if (m == 0 || k == 0 || na + no + ne == 0)
		return;
	pthread_once(&part_once, pick_part);
	if (!gsp__pool_acquire()) {
		lowrank_blas(j);
		return;
	}
	/* Workers: one per PARALLEL_MIN_COST of work, each >= 4 rows. */
	size_t nw = m * k * (na + no + ne + MEM_COST) / PARALLEL_MIN_COST;
	if (nw > m / 4)
		nw = m / 4;
	if (nw > gsp__pool_size())
		nw = gsp__pool_size();
	if (nw < 1)
		nw = 1;
	bool ok = run_pool(j, nw);
	gsp__pool_release();
	if (!ok)
		lowrank_blas(j);
}

void gsp__lowrank_alone(const gsp__lowrank_job *j, float *spare)
{
	const size_t m = j->m, k = j->k, na = j->na, no = j->no, ne = j->ne;
	if (m == 0 || k == 0 || na + no + ne == 0)
		return;
	pthread_once(&part_once, pick_part);
	task t = task_of(j, na ? j->rt : spare, no ? j->vt : spare,
			 ne ? j->met : spare, j->ldt, m, 1);
	part(&t, 0);
}
