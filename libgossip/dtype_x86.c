/*
 * dtype_x86: the passes of a 16-bit buffer and its float32 master copy
 * (dtype.c) 8 values at a time with AVX2, and F16C for float16: the same
 * results as the scalar passes (tests/engine/test_dtype.c compares them),
 * several times faster.  Elsewhere, or without those instructions, they
 * do nothing and dtype.c's scalar passes do all.
 */
#include "internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

#define X86_TARGET __attribute__((target("avx2,f16c")))

/* AVX2 from the compiler's CPU check; F16C from CPUID leaf 1 (ECX bit
 * 29), which clang's __builtin_cpu_supports does not know. */
bool gsp__dtype_x86_ok(void)
{
	unsigned a, b, c, d;
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2") || !__get_cpuid(1, &a, &b, &c, &d))
		return false;
	return (c & bit_F16C) != 0;
}

/* m rounded to bfloat16 (nearest even; NaN quiet), in 32-bit lanes. */
X86_TARGET static inline __m256i bf16_to8(__m256 m)
{
	__m256i u = _mm256_castps_si256(m);
	__m256i hi = _mm256_srli_epi32(u, 16);
	__m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
	__m256i rounded = _mm256_srli_epi32(
		_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
	__m256i nan = _mm256_or_si256(hi, _mm256_set1_epi32(0x0040));
	__m256i ax = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
	__m256i is_nan = _mm256_cmpgt_epi32(ax, _mm256_set1_epi32(0x7f800000));
	return _mm256_blendv_epi8(rounded, nan, is_nan);
}

/* The values of bfloat16 bits in 32-bit lanes. */
X86_TARGET static inline __m256 bf16_from8(__m256i w)
{
	return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* All ones where f is neither an infinity nor a NaN. */
X86_TARGET static inline __m256 finite8(__m256 f)
{
	__m256i e = _mm256_set1_epi32(0x7f800000);
	__m256i inf_nan = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(f), e), e);
	return _mm256_castsi256_ps(_mm256_xor_si256(inf_nan, _mm256_set1_epi32(-1)));
}

/* The new master: m where the buffer holds what the node saw there
 * (same), else the buffer's value fb plus the part of m the seen value
 * fs had not. */
X86_TARGET static inline __m256 merge8(__m256 m, __m256 fs, __m256 fb, __m256i same)
{
	__m256 kept = _mm256_and_ps(_mm256_sub_ps(m, fs), finite8(fs));
	return _mm256_blendv_ps(_mm256_add_ps(fb, kept), m, _mm256_castsi256_ps(same));
}

X86_TARGET static inline __m128i load8(const uint16_t *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

X86_TARGET static inline void store8(uint16_t *p, __m128i v)
{
	_mm_storeu_si128((__m128i *)p, v);
}

X86_TARGET static size_t read_in_bf16(const gsp__dtype_arrays *a, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 m = _mm256_loadu_ps(a->master + i);
		__m128i b = load8(a->buf + i), s = load8(a->seen + i);
		__m256i b32 = _mm256_cvtepu16_epi32(b), s32 = _mm256_cvtepu16_epi32(s);
		__m256 r = merge8(m, bf16_from8(s32), bf16_from8(b32),
				  _mm256_cmpeq_epi32(b32, s32));
		_mm256_storeu_ps(a->master + i, r);
		store8(a->seen + i, b);
	}
	return i;
}

X86_TARGET static size_t write_out_bf16(const gsp__dtype_arrays *a, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256i w = bf16_to8(_mm256_loadu_ps(a->master + i));
		/* 8 lanes of 32 bits (each < 2^16) to 8 of 16, in order. */
		__m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(w, w), 0x08);
		store8(a->buf + i, _mm256_castsi256_si128(p));
		store8(a->seen + i, _mm256_castsi256_si128(p));
	}
	return i;
}

X86_TARGET static size_t read_in_half(const gsp__dtype_arrays *a, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 m = _mm256_loadu_ps(a->master + i);
		__m128i b = load8(a->buf + i), s = load8(a->seen + i);
		__m256i same = _mm256_cvtepi16_epi32(_mm_cmpeq_epi16(b, s));
		__m256 r = merge8(m, _mm256_cvtph_ps(s), _mm256_cvtph_ps(b), same);
		_mm256_storeu_ps(a->master + i, r);
		store8(a->seen + i, b);
	}
	return i;
}

X86_TARGET static size_t write_out_half(const gsp__dtype_arrays *a, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m128i w = _mm256_cvtps_ph(_mm256_loadu_ps(a->master + i),
					    _MM_FROUND_TO_NEAREST_INT);
		store8(a->buf + i, w);
		store8(a->seen + i, w);
	}
	return i;
}

size_t gsp__dtype_read_in_x86(gsp_dtype dtype, const gsp__dtype_arrays *a, size_t n)
{
	if (dtype == GSP_DTYPE_FLOAT16)
		return read_in_half(a, n);
	if (dtype == GSP_DTYPE_BFLOAT16)
		return read_in_bf16(a, n);
	return 0;
}

size_t gsp__dtype_write_out_x86(gsp_dtype dtype, const gsp__dtype_arrays *a, size_t n)
{
	if (dtype == GSP_DTYPE_FLOAT16)
		return write_out_half(a, n);
	if (dtype == GSP_DTYPE_BFLOAT16)
		return write_out_bf16(a, n);
	return 0;
}

#else

bool gsp__dtype_x86_ok(void)
{
	return false;
}

size_t gsp__dtype_read_in_x86(gsp_dtype dtype, const gsp__dtype_arrays *a, size_t n)
{
	(void)dtype, (void)a, (void)n;
	return 0;
}

size_t gsp__dtype_write_out_x86(gsp_dtype dtype, const gsp__dtype_arrays *a, size_t n)
{
	(void)dtype, (void)a, (void)n;
	return 0;
}

#endif
