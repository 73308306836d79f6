/* align.h - the 256-byte rounding of the device memory layouts, shared by
 * the world (host/world.c), the solvers that size their device state
 * (host/pbd.c, host/sph.c, host/fem.c, host/fem_implicit.c) and the CUDA
 * backend's launchers, none of which needs another's header for it. Not
 * part of the public API. */
#ifndef FIRN_ALIGN_H
#define FIRN_ALIGN_H

#include <stddef.h>

/* bytes rounded up to a multiple of 256, the alignment of every array of
 * the device layouts (what cudaMalloc returns). */
static inline size_t firn_align256(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

#endif
