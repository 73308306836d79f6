/* pair_mpm_sph.cuh - MPM-SPH's contact launchers (kernels/pair_mpm_sph.cu),
 * for kernels/mpm.cu. Return 0 or FIRN_CUDA_FAILED with err filled. */
#ifndef FIRN_PAIR_MPM_SPH_CUH
#define FIRN_PAIR_MPM_SPH_CUH

#include "cuda_check.cuh"
#include "firn_sph_coupling.h"

/* MPM-SPH's contact (kernels/pair_mpm_sph.cu): the MPM particles' volume fraction on the grid
 * (firn_mpm_phi_scatter into phi, zeroed first, nodes floats; float
 * atomics), after P2G and before the SPH density; and, after the grid
 * update, the contact force on the SPH particles (firn_sph_mpm_particle,
 * one thread each; V->L set). */
int firn_cuda_queue_mpm_phi(const firn_params *P, firn_particles p, float *phi, long long nodes,
                            cudaStream_t st, firn_error *err);
int firn_cuda_queue_sph_mpm(const firn_sph_view *V, cudaStream_t st, firn_error *err);
/* MPM-SPH's contact: zeroes V->L.react and scatters the reaction of the
 * contact force into it (firn_sph_mpm_react), before the grid update. */
int firn_cuda_queue_sph_mpm_react(const firn_sph_view *V, long long nodes, cudaStream_t st,
                                  firn_error *err);
/* Raises *bytes to the most local memory one thread of its kernels uses. */
int firn_cuda_mpm_sph_local_bytes(size_t *bytes, firn_error *err);

#endif
