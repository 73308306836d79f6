/* sph.cuh - launchers of kernels/sph.cu for kernels/mpm.cu and
 * kernels/coupling.cu: the SPH solver's phases on the GPU, queued on the
 * world's stream. All int functions return 0 or FIRN_CUDA_FAILED with err
 * filled. Physics: include/firn_sph.h; the CPU twin: host/sph_cpu.c. */
#ifndef FIRN_SPH_CUH
#define FIRN_SPH_CUH

#include "couple.cuh"
#include "cuda_check.cuh"
#include "firn_sph_coupling.h"

struct firn_sph_cuda; /* kernels/sph.cu, held in firn_sph.cuda */

/* firn_cuda_world_stream and firn_cuda_world_rigids: kernels/couple.cuh. */
/* MPM-SPH's contact: queues the MPM particles' volume fraction onto the
 * grid (after P2G) and fills *L with it; L->phi NULL when the contact is
 * off (kernels/mpm.cu). */
int firn_cuda_queue_mpm_level(struct firn_world *w, const firn_params *P, firn_mpm_level *L,
                              firn_error *err);
/* FEM-SPH's contact distance (include/firn_fem_coupling.h): after the SPH
 * neighbour sort, queues the nearest triangle of each particle of V and its
 * signed distance, and points V->fem_key and V->fem_d at them; both NULL
 * when the contact is off (kernels/fem.cu). */
int firn_cuda_fem_queue_sph_distance(struct firn_world *w, firn_sph_view *V, firn_error *err);

/* The SPH solver's CUDA phases (host/solver.h firn_cuda_sph_phases):
 * pre-coupling (host/sph_cpu.c sph_pre_coupling) queues the neighbour grid
 * from the current positions (keys and per-cell counts, CUB's exclusive
 * scan to start, end = start + count, CUB's stable radix sort of the
 * particle indices by cell), the density, then WCSPH (non-pressure,
 * equation of state, pressure and velocity step) or DFSPH (factor,
 * divergence solve, non-pressure, kick, density solve); the density counts
 * the bodies SPH-rigid couples, the MPM bodies (MPM-SPH's contact) and the
 * FEM bodies (FEM-SPH's contact distance) as boundaries
 * (firn_sph_density_rigid). Post-coupling: the position step
 * and the box, non-finite particles recorded in the SPH word (substep of
 * the call, particle index). */
/* The SPH solver as the coupling pairs see it on the device: P (dt set by
 * the caller), device materials, particles and neighbour grid. */
firn_sph_view firn_cuda_sph_view(const struct firn_sph_cuda *S, const firn_sph_params *P);

/* At the start of a call: clears the DFSPH iteration totals. At its end,
 * after the stream synchronised: reads the iterations of the last solves and
 * the call's totals into w->sph (DFSPH; nsub solves), and the SPH
 * non-finite word into *bad (FIRN_CUDA_BAD_NONE when none), which it
 * resets. */
int firn_cuda_sph_begin_call(struct firn_sph_cuda *S, cudaStream_t st, firn_error *err);
int firn_cuda_sph_end_call(struct firn_world *w, int nsub, unsigned long long *bad,
                           firn_error *err);

/* After a CUDA error part way through a call: lets the queued work finish
 * and clears the SPH non-finite word (best effort, as mpm.cu's). */
void firn_cuda_sph_discard_bad_word(struct firn_world *w);

/* Device memory the SPH state holds (0 without one). */
size_t firn_cuda_sph_bytes(const struct firn_sph_cuda *S);

/* Coupling kernels. The grid update (kernels/coupling.cu) with every
 * active pair (firn_grid_node_tools without tools: the rigid impulse of nb bodies, then
 * MPM-SPH with V), the bodies' reaction reduced per warp into acc. */
int firn_cuda_queue_grid_pairs(const firn_params *P, firn_grid g, const firn_rigid *bodies, int nb,
                               double *acc, const firn_sph_view *V, cudaStream_t st,
                               firn_error *err);
/* Raises *bytes to the most local memory one thread of the SPH coupling
 * kernels uses (as firn_cuda_coupling_local_bytes): the grid update's,
 * SPH-rigid's and MPM-SPH's (pair_sph_rigid.cuh, pair_mpm_sph.cuh). */
int firn_cuda_sph_coupling_local_bytes(size_t *bytes, firn_error *err);

#endif
