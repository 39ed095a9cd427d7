/* The register kernel of kernel.c, once per vector width: kernel.c
 * includes this file once for each instruction set, with
 *
 *   KB_W      floats per vector (16: AVX-512, 8: AVX2, 4: SSE2 and others)
 *   KB(name)  the name of this width's copy of a function
 *
 * so every variant works on vectors its registers hold (a vector type
 * wider than the instruction set's lives in memory, several times
 * slower).  Needs kernel.c's task, share, KERNEL_FN, FP_CONTRACT and
 * UNROLL.  Not a header of its own: it has no include guard on purpose. */

#define VEC KB(vec)
typedef float VEC __attribute__((vector_size(KB_W * sizeof(float))));
typedef float KB(vecu) __attribute__((vector_size(KB_W * sizeof(float)),
				      aligned(sizeof(float))));
typedef int KB(veci) __attribute__((vector_size(KB_W * sizeof(int))));
/* Unaligned loads and stores through an aligned(4) type (a vector of
 * float aliases float only, so pointers and sizes read from the task can
 * stay in registers across stores). */
#define LD(p) ((VEC) * (const KB(vecu) *)(p))
#define ST(p, v) (*(KB(vecu) *)(p) = (v))
#if defined(__clang__)
#define SHUF(v, ...) __builtin_shufflevector(v, v, __VA_ARGS__)
#else
#define SHUF(v, ...) __builtin_shuffle(v, (KB(veci)){__VA_ARGS__})
#endif

#if KB_W == 16
#define SPLAT(f) __extension__({ float f_ = (f); \
	(VEC){f_, f_, f_, f_, f_, f_, f_, f_, f_, f_, f_, f_, f_, f_, f_, f_}; })
#elif KB_W == 8
#define SPLAT(f) __extension__({ float f_ = (f); \
	(VEC){f_, f_, f_, f_, f_, f_, f_, f_}; })
#elif KB_W == 4
#define SPLAT(f) __extension__({ float f_ = (f); (VEC){f_, f_, f_, f_}; })
#else
#error "KB_W must be 16, 8 or 4"
#endif

/* The sum of the lanes of *p. */
KERNEL_FN float KB(hsum)(const VEC *p)
{
	FP_CONTRACT
	VEC v = *p;
#if KB_W == 16
	v += SHUF(v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
	v += SHUF(v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
	v += SHUF(v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
	v += SHUF(v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
#elif KB_W == 8
	v += SHUF(v, 4, 5, 6, 7, 0, 1, 2, 3);
	v += SHUF(v, 2, 3, 0, 1, 6, 7, 4, 5);
	v += SHUF(v, 1, 0, 3, 2, 5, 4, 7, 6);
#else
	v += SHUF(v, 2, 3, 0, 1);
	v += SHUF(v, 1, 0, 3, 2);
#endif
	return v[0];
}

/* One nr x (KB_W cv) block of X at x (row stride k), held in registers:
 *   X += L R^T                         na terms (na may be 0)
 *   acc[t][b] += X[t] . V^T[b]         g columns of V (from vt)
 *   Me^T[c] += sum_t U[t][c] X[t]      ne terms (ne may be 0)
 * l, u: the block's first row of L and U (row strides lda, ne); rt, vt,
 * met: R^T, V^T, Me^T at the block's first column (row stride ld); pf:
 * offset of the next block of rows to prefetch (0: none).  nr, cv and g
 * are constants after inlining, so xv and acc live in registers. */
KERNEL_FN void KB(block)(float *x, size_t k, size_t pf, const float *l,
		     size_t lda, size_t na, const float *rt, const float *vt,
		     const float *u, size_t ne, float *met, size_t ld,
		     VEC acc[4][4], const int nr, const int cv, const int g)
{
	FP_CONTRACT
	VEC xv[4][2];
	/* Fetch the same columns of the next block of rows (pf floats on):
	 * rows are too short for the hardware prefetchers to get ahead. */
	UNROLL for (int t = 0; t < nr; t++)
		UNROLL for (int c = 0; c < (cv * KB_W + 15) / 16; c++)
			__builtin_prefetch(x + pf + t * k + 16 * c, 1, 3);
	UNROLL for (int t = 0; t < nr; t++)
		UNROLL for (int c = 0; c < cv; c++)
			xv[t][c] = LD(x + t * k + KB_W * c);
	for (size_t a = 0; a < na; a++) {
		const float *r = rt + a * ld;
		VEC r0 = LD(r), r1 = cv > 1 ? LD(r + KB_W) : r0;
		UNROLL for (int t = 0; t < nr; t++) {
			VEC s = SPLAT(l[t * lda + a]);
			xv[t][0] += s * r0;
			if (cv > 1)
				xv[t][1] += s * r1;
		}
	}
	if (na)
		UNROLL for (int t = 0; t < nr; t++)
			UNROLL for (int c = 0; c < cv; c++)
				ST(x + t * k + KB_W * c, xv[t][c]);
	UNROLL for (int b = 0; b < g; b++) {
		const float *v = vt + b * ld;
		VEC v0 = LD(v), v1 = cv > 1 ? LD(v + KB_W) : v0;
		UNROLL for (int t = 0; t < nr; t++) {
			acc[t][b] += xv[t][0] * v0;
			if (cv > 1)
				acc[t][b] += xv[t][1] * v1;
		}
	}
	for (size_t c = 0; c < ne; c++) {
		float *p = met + c * ld;
		VEC m0 = LD(p), m1 = cv > 1 ? LD(p + KB_W) : m0;
		UNROLL for (int t = 0; t < nr; t++) {
			VEC s = SPLAT(u[t * ne + c]);
			m0 += s * xv[t][0];
			if (cv > 1)
				m1 += s * xv[t][1];
		}
		ST(p, m0);
		if (cv > 1)
			ST(p + KB_W, m1);
	}
}

/* Rows [i, i + nr) over columns [c0, c1) (a multiple of 16 wide): the
 * update and Me^T (into met) if upd, and Mo columns [b0, b0 + g); pf as
 * for KB(block)(). */
KERNEL_FN void KB(strip)(const task *t, float *met, size_t i, size_t pf,
		     size_t c0, size_t c1, bool upd, size_t b0, const int nr,
		     const int cv, const int g)
{
	FP_CONTRACT
	const size_t k = t->k, ld = t->ld, no = t->no;
	const size_t na = upd ? t->na : 0, ne = upd ? t->ne : 0;
	const float *l = t->na ? t->l + i * t->na : NULL;
	const float *u = t->ne ? t->u + i * t->ne : NULL;
	const float *rt = t->rt, *vt = t->vt + b0 * ld;
	float *x = t->x + i * k;
	VEC acc[4][4];
	UNROLL for (int q = 0; q < nr; q++)
		UNROLL for (int b = 0; b < g; b++)
			acc[q][b] = (VEC){0};
	size_t c = c0;
	for (; c + KB_W * cv <= c1; c += KB_W * cv)
		KB(block)(x + c, k, pf, l, t->na, na, rt + c, vt + c, u, ne,
		      met + c, ld, acc, nr, cv, g);
	if (cv > 1 && c < c1)
		KB(block)(x + c, k, pf, l, t->na, na, rt + c, vt + c, u, ne,
		      met + c, ld, acc, nr, 1, g);
	UNROLL for (int q = 0; q < nr; q++)
		UNROLL for (int b = 0; b < g; b++)
			t->mo[(i + q) * no + b0 + b] += KB(hsum)(&acc[q][b]);
}

/* Dispatch on the Mo group size so every strip sees constants. */
KERNEL_FN void KB(strip_g)(const task *t, float *met, size_t i, size_t pf,
		       size_t c0, size_t c1, bool upd, size_t b0,
		       const int nr, const int cv, const int mog)
{
	size_t g = t->no - b0;
	if (g >= (size_t)mog)
		KB(strip)(t, met, i, pf, c0, c1, upd, b0, nr, cv, mog);
	else if (g == 3)
		KB(strip)(t, met, i, pf, c0, c1, upd, b0, nr, cv, 3);
	else if (g == 2)
		KB(strip)(t, met, i, pf, c0, c1, upd, b0, nr, cv, 2);
	else if (g == 1)
		KB(strip)(t, met, i, pf, c0, c1, upd, b0, nr, cv, 1);
	else
		KB(strip)(t, met, i, pf, c0, c1, upd, b0, nr, cv, 0);
}

/* Rows [r0, r1) of the task, with blocks of rb rows, cv vectors and up to
 * mog Mo columns.  Writes their Mo; adds to met. */
KERNEL_FN void KB(rows_body)(const task *t, float *met, size_t r0, size_t r1,
			 const int rb, const int cv, const int mog)
{
	FP_CONTRACT
	const size_t k = t->k, na = t->na, no = t->no, ne = t->ne;
	const size_t ld = t->ld, kv = k & ~(size_t)15;
	if (no)
		memset(t->mo + r0 * no, 0, (r1 - r0) * no * sizeof(float));
	for (size_t c0 = 0; c0 < kv; c0 += t->cb) {
		size_t c1 = kv - c0 < t->cb ? kv : c0 + t->cb;
		for (size_t i = r0; i < r1;) {
			/* The first pass updates and does Me and the first
			 * Mo columns; further passes the other Mo columns. */
			int nr = r1 - i >= (size_t)rb ? rb : 1;
			size_t pf = i + 2 * nr <= r1 ? nr * k : 0;
			size_t b0 = 0;
			do {
				if (nr == rb)
					KB(strip_g)(t, met, i, pf, c0, c1, b0 == 0,
						b0, rb, cv, mog);
				else
					KB(strip_g)(t, met, i, pf, c0, c1, b0 == 0,
						b0, 1, cv, mog);
				b0 += mog;
			} while (b0 < no);
			i += nr;
		}
	}
	/* The last k % 16 columns, one element at a time. */
	for (size_t i = r0; kv < k && i < r1; i++) {
		float *x = t->x + i * k;
		for (size_t c = kv; c < k; c++) {
			float v = x[c];
			for (size_t a = 0; a < na; a++)
				v += t->l[i * na + a] * t->rt[a * ld + c];
			x[c] = v;
			for (size_t b = 0; b < no; b++)
				t->mo[i * no + b] += v * t->vt[b * ld + c];
			for (size_t e = 0; e < ne; e++)
				met[e * ld + c] += t->u[i * ne + e] * v;
		}
	}
}

/* Worker w's part of the task: zeroes its Me^T, then runs its fixed
 * share of the rows (alone: all rows). */
KERNEL_FN void KB(part_body)(const task *shared, unsigned w, const int rb,
			 const int cv, const int mog)
{
	FP_CONTRACT
	task t = *shared;         /* private copy: no shared reads in loops */
	const share *s = &t.w[w];
	const size_t ld = t.ld, na = t.na, no = t.no, ne = t.ne;
	float *met = s->met;
	if (s->copy) {
		/* Sequential copies bring R^T and V^T into this core's
		 * cache; the loops then read them many times. */
		memcpy(s->copy, t.rt, ld * na * sizeof(float));
		memcpy(s->copy + ld * na, t.vt, ld * no * sizeof(float));
		t.rt = s->copy;
		t.vt = s->copy + ld * na;
	}
	if (ne)
		memset(met, 0, ne * ld * sizeof(float));
	if (t.nw == 1) {
		KB(rows_body)(&t, met, 0, t.m, rb, cv, mog);
	} else {
		/* A fixed share: each Me^T partial always sums the same
		 * rows in the same order, so a step's messages do not depend
		 * on thread timing. */
		size_t r0 = w * t.rows_each, r1 = r0 + t.rows_each;
		if (r0 < t.m)
			KB(rows_body)(&t, met, r0, r1 < t.m ? r1 : t.m, rb, cv, mog);
	}
	if (s->met_out && ne)
		memcpy(s->met_out, met, ne * ld * sizeof(float));
}

#undef VEC
#undef LD
#undef ST
#undef SHUF
#undef SPLAT
