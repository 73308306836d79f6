/* neighbour.h - the neighbour grid's builds (include/firn_neighbour.h):
 * host/neighbour.c on the CPU; kernels/neighbour.cu on the GPU, declared
 * in kernels/neighbour.cuh. */
#ifndef FIRN_NEIGHBOUR_HOST_H
#define FIRN_NEIGHBOUR_HOST_H

#include "firn_neighbour.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rebuilds G from the n positions x (component-major, 3n): keys, the
 * stable sort, start and end, and the neighbour lists when G->nbr is not
 * NULL. count is scratch of G->cells + 1 ints. The result is the same for
 * any thread count. */
void firn_nbr_cpu_build(const firn_nbr_space *S, firn_nbr_grid *G, const float *x, int n,
                        int *count);

#ifdef __cplusplus
}
#endif

#endif
