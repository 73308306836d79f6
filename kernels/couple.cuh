/* couple.cuh - what the solvers' launchers and the couple stage's pairs
 * read of a CUDA world (kernels/mpm.cu holds it): each pair's queue step
 * (host/solver.h firn_step_fn) lives in its pair's file and reaches the
 * world's device state through these. */
#ifndef FIRN_COUPLE_CUH
#define FIRN_COUPLE_CUH

#include "cuda_check.cuh"
#include "firn_sph_coupling.h"

/* The world's stream: every phase and copy is queued on it, so that the
 * Coupler's order holds without other synchronisation. */
cudaStream_t firn_cuda_world_stream(const struct firn_world *w);
/* The device rigid bodies (*n of them) and their coupling accumulators
 * (*acc, FIRN_RIGID_ACC doubles each). */
firn_rigid *firn_cuda_world_rigids(const struct firn_world *w, int *n, double **acc);
/* The SPH solver's view as the pairs see it (firn_cuda_sph_view, zero
 * without SPH), with MPM-SPH's volume fraction on the grid in V.L when the
 * contact is on; P the substep's parameters. */
firn_sph_view firn_cuda_couple_sph_view(struct firn_world *w, const firn_params *P);
/* The device grid (mass, then momentum). */
firn_grid firn_cuda_world_grid(const struct firn_world *w);

#endif
