/* reaction.cuh - the rigid bodies' reaction summed over a warp, for the
 * kernels of every pair that pushes on rigid bodies (kernels/coupling.cu,
 * pair_sph_rigid.cu, pair_pbd_rigid.cu, pair_fem_rigid.cu): a warp sum
 * per component and one double atomicAdd per warp. */
#ifndef FIRN_REACTION_CUH
#define FIRN_REACTION_CUH

#include "cuda_check.cuh"
#include "firn_coupling.h"

static __device__ inline double warp_sum(double x)
{
    for (int off = 16; off > 0; off >>= 1)
        x += __shfl_down_sync(0xffffffffu, x, off);
    return x;
}

/* Adds each body's reaction a[nb][6] of every lane of the warp into acc:
 * for each body some lane touched, a warp sum and one double atomicAdd per
 * component. Every lane of the warp must call it (full-mask shuffles). */
static __device__ inline void warp_add_reaction(const double *a, int nb, double *acc)
{
    const int lane = threadIdx.x & 31;
    for (int k = 0; k < nb; k++) {
        int touched = 0;
        for (int c = 0; c < FIRN_RIGID_ACC; c++)
            touched |= a[FIRN_RIGID_ACC * k + c] != 0.0;
        if (!__any_sync(0xffffffffu, touched))
            continue;
        for (int c = 0; c < FIRN_RIGID_ACC; c++) {
            double s = warp_sum(a[FIRN_RIGID_ACC * k + c]);
            if (lane == 0 && s != 0.0)
                firn_atomic_add_double(acc + FIRN_RIGID_ACC * k + c, s);
        }
    }
}

#endif
