/* pair_sph_rigid.cuh - SPH-rigid's launcher (kernels/pair_sph_rigid.cu),
 * for kernels/mpm.cu. Returns 0 or FIRN_CUDA_FAILED with err filled. */
#ifndef FIRN_PAIR_SPH_RIGID_CUH
#define FIRN_PAIR_SPH_RIGID_CUH

#include "cuda_check.cuh"
#include "firn_sph_coupling.h"

/* SPH-rigid (kernels/pair_sph_rigid.cu), one thread per SPH particle
 * (firn_sph_rigid_particle), the reaction reduced per warp, then double
 * atomicAdd into acc. */
int firn_cuda_queue_sph_rigid(const firn_sph_view *V, const firn_rigid *bodies, int nb, double *acc,
                              cudaStream_t st, firn_error *err);
/* Raises *bytes to the most local memory one thread of its kernel uses. */
int firn_cuda_sph_rigid_local_bytes(size_t *bytes, firn_error *err);

#endif
