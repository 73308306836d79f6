/* couple.cuh - what the couple stage's pairs read of a CUDA world
 * (kernels/mpm.cu holds it): each pair's queue step (host/solver.h
 * firn_step_fn) lives in its pair's file and reaches the world's device
 * state through these, with sph.cuh's firn_cuda_world_stream and
 * firn_cuda_world_rigids. */
#ifndef FIRN_COUPLE_CUH
#define FIRN_COUPLE_CUH

#include "cuda_check.cuh"
#include "firn_sph_coupling.h"

/* The SPH solver's view as the pairs see it (firn_cuda_sph_view, zero
 * without SPH), with MPM-SPH's volume fraction on the grid in V.L when the
 * contact is on; P the substep's parameters. */
firn_sph_view firn_cuda_couple_sph_view(struct firn_world *w, const firn_params *P);
/* The device grid (mass, then momentum). */
firn_grid firn_cuda_world_grid(const struct firn_world *w);

#endif
