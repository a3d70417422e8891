/*
 * bigmem.h -- a hint for the large buffers of one call (maps, their
 * smoothed weights, ring spectra): transparent huge pages where the kernel
 * offers them on request (/sys/kernel/mm/transparent_hugepage/enabled set
 * to madvise, as on Debian and Ubuntu). A map of nside 1024 is 25600 pages
 * of 4 KiB, each a page fault on its first touch; in 2 MiB pages, 50.
 * Header only (no symbol of the library): the engine and the harness both
 * use it. A no-op where madvise or MADV_HUGEPAGE is missing, and for
 * buffers below 8 MiB; the buffer stays an ordinary malloc'd one.
 */
#ifndef ARKCOS_BIGMEM_H
#define ARKCOS_BIGMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

/* Asks for huge pages over the 2 MiB-aligned interior of [p, p + bytes);
 * call before the buffer is first written. */
static inline void arkcos_hint_huge(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  const uintptr_t huge = (uintptr_t)2 << 20;
  if (!p || bytes < 4 * huge) return;
  const uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + bytes) & ~(huge - 1);
  if (e > a) (void)madvise((void *)a, (size_t)(e - a), MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

#endif
