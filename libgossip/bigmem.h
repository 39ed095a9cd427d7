/* bigmem: model-sized buffers on transparent huge pages.
 *
 * A buffer the size of a model (an exact round's message, a window's
 * xdiff, a sealed frame) is new memory the first time it is written:
 * on 4 KiB pages that is one page fault per 4 KiB, about 100 ms for a
 * 7.4 MB buffer with eight daemons on two cores, on the path to the
 * next send.  MADV_HUGEPAGE takes it in 2 MiB faults (2.5x less time
 * measured side by side); reused memory costs neither.  The advice is
 * a hint: where transparent huge pages are off it does nothing, and a
 * failure changes nothing but speed.
 *
 * Owns no state; header only, for the engine and the daemon alike. */
#ifndef GSP_BIGMEM_H
#define GSP_BIGMEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* Below this a buffer has too few whole huge pages to be worth a call. */
#define GSP_BIGMEM_MIN ((size_t)4 << 20)
#define GSP_BIGMEM_PAGE ((uintptr_t)2 << 20)

/* Advise the whole 2 MiB pages inside [p, p + len). */
static inline void gsp_bigmem_advise(void *p, size_t len)
{
#ifdef MADV_HUGEPAGE
	if (!p || len < GSP_BIGMEM_MIN)
		return;
	uintptr_t lo = ((uintptr_t)p + GSP_BIGMEM_PAGE - 1) & ~(GSP_BIGMEM_PAGE - 1);
	uintptr_t hi = ((uintptr_t)p + len) & ~(GSP_BIGMEM_PAGE - 1);
	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
	(void)p;
	(void)len;
#endif
}

/* malloc(len), advised as above when it is model-sized. */
static inline void *gsp_bigmem_malloc(size_t len)
{
	void *p = malloc(len);
	gsp_bigmem_advise(p, len);
	return p;
}

#endif
