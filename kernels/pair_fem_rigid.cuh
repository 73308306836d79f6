/* pair_fem_rigid.cuh - FEM-Rigid's launcher (kernels/pair_fem_rigid.cu),
 * for kernels/fem.cu's surface pass. Returns 0 or FIRN_CUDA_FAILED with
 * err filled. */
#ifndef FIRN_PAIR_FEM_RIGID_CUH
#define FIRN_PAIR_FEM_RIGID_CUH

#include "cuda_check.cuh"
#include "firn_fem_coupling.h"

/* FEM-Rigid (kernels/pair_fem_rigid.cu): one thread per surface vertex
 * (firn_fem_rigid_vertex), the reaction reduced per warp, then double
 * atomicAdd into acc. */
int firn_cuda_queue_fem_rigid(const firn_fem_surface *S, const firn_rigid *bodies, int nb,
                              double *acc, cudaStream_t st, firn_error *err);
/* Raises *bytes to the most local memory one thread of the FEM-Rigid
 * kernel uses (as firn_cuda_coupling_local_bytes). */
int firn_cuda_fem_coupling_local_bytes(size_t *bytes, firn_error *err);

#endif
