/* pair_mpm_sph.cu - MPM-SPH's contact on the GPU (include/firn_sph_coupling.h;
 * the CPU's passes are host/pair_mpm_sph.c): the MPM bodies' volume
 * fraction on the grid, the contact's reaction on the nodes before the
 * grid update and its force on the SPH particles after it. The grid
 * update's MPM-SPH term is kernels/coupling.cu's grid_update_pairs.
 * Launchers in kernels/pair_mpm_sph.cuh; queued by the couple stage
 * (host/coupler.c) through the steps at the end of this file. */
#include "couple.cuh"
#include "firn_sph_coupling.h"
#include "pair_mpm_sph.cuh"
#include "solver.h"

#define FIRN_BLOCK 256

/* MPM-SPH's contact: the volume fraction, one thread per MPM particle. */
static __global__ void mpm_phi(firn_params P, firn_particles p, float *phi)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n)
        firn_mpm_phi_scatter(&P, firn_load3(p.x, p.n, i), p.vol[i], phi);
}

/* MPM-SPH's contact force, one thread per SPH particle. */
static __global__ void sph_mpm(firn_sph_view V)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < V.s.n)
        firn_sph_mpm_particle(i, &V);
}

/* MPM-SPH's contact: its reaction on the nodes, one thread per SPH particle. */
static __global__ void sph_mpm_react(firn_sph_view V)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < V.s.n)
        firn_sph_mpm_react(i, &V);
}

int firn_cuda_queue_sph_mpm_react(const firn_sph_view *V, long long nodes, cudaStream_t st,
                                  firn_error *err)
{
    FIRN_CUDA_CHECK(cudaMemsetAsync(V->L.react, 0, 3 * (size_t)nodes * sizeof(float), st), err);
    const unsigned blocks = (unsigned)((V->s.n + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0)
        return 0;
    FIRN_LAUNCH(sph_mpm_react, blocks, FIRN_BLOCK, 0, st, *V);
    FIRN_CUDA_CHECK_LAUNCH("sph_mpm_react", st, err);
    return 0;
}

int firn_cuda_queue_mpm_phi(const firn_params *P, firn_particles p, float *phi, long long nodes,
                            cudaStream_t st, firn_error *err)
{
    FIRN_CUDA_CHECK(cudaMemsetAsync(phi, 0, (size_t)nodes * sizeof(float), st), err);
    const unsigned blocks = (unsigned)((p.n + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0)
        return 0;
    FIRN_LAUNCH(mpm_phi, blocks, FIRN_BLOCK, 0, st, *P, p, phi);
    FIRN_CUDA_CHECK_LAUNCH("mpm_phi", st, err);
    return 0;
}

int firn_cuda_queue_sph_mpm(const firn_sph_view *V, cudaStream_t st, firn_error *err)
{
    const unsigned blocks = (unsigned)((V->s.n + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0 || !V->L.phi)
        return 0;
    FIRN_LAUNCH(sph_mpm, blocks, FIRN_BLOCK, 0, st, *V);
    FIRN_CUDA_CHECK_LAUNCH("sph_mpm", st, err);
    return 0;
}

int firn_cuda_mpm_sph_local_bytes(size_t *bytes, firn_error *err)
{
    const void *const kernels[] = {(const void *)mpm_phi, (const void *)sph_mpm,
                                   (const void *)sph_mpm_react};
    return firn_cuda_local_bytes(kernels, 3, bytes, err);
}

/* ---- the pair's steps of the couple stage (host/coupler.c) --------------- */

static int mpm_sph_react_queue(firn_world *w, firn_step *st)
{
    const firn_sph_view V = firn_cuda_couple_sph_view(w, st->P);
    return firn_cuda_queue_sph_mpm_react(&V, firn_cuda_world_grid(w).nodes,
                                         firn_cuda_world_stream(w), st->err);
}

static int mpm_sph_contact_queue(firn_world *w, firn_step *st)
{
    const firn_sph_view V = firn_cuda_couple_sph_view(w, st->P);
    return firn_cuda_queue_sph_mpm(&V, firn_cuda_world_stream(w), st->err);
}

extern "C" {
const firn_step_fn firn_cuda_mpm_sph_react = mpm_sph_react_queue;
const firn_step_fn firn_cuda_mpm_sph_contact = mpm_sph_contact_queue;
}
