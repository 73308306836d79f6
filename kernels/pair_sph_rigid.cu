/* pair_sph_rigid.cu - SPH-rigid on the GPU (include/firn_sph_coupling.h;
 * the CPU's pass is host/pair_sph_rigid.c): one thread per SPH particle,
 * the bodies' reaction summed per warp (reaction.cuh). Launcher in
 * kernels/pair_sph_rigid.cuh; queued by the couple stage through
 * firn_cuda_sph_rigid, at the end of this file. */
#include "couple.cuh"
#include "firn_sph_coupling.h"
#include "pair_sph_rigid.cuh"
#include "reaction.cuh"
#include "solver.h"

#define FIRN_BLOCK 256

/* SPH-rigid, one thread per SPH particle. */
static __global__ void sph_rigid(firn_sph_view V, const firn_rigid *bodies, int nb, double *acc)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double a[FIRN_MAX_RIGIDS * FIRN_RIGID_ACC];
    for (int k = 0; k < nb * FIRN_RIGID_ACC; k++)
        a[k] = 0.0;
    if (i < V.s.n)
        firn_sph_rigid_particle(i, &V, bodies, nb, a);
    warp_add_reaction(a, nb, acc);
}

int firn_cuda_queue_sph_rigid(const firn_sph_view *V, const firn_rigid *bodies, int nb, double *acc,
                              cudaStream_t st, firn_error *err)
{
    const unsigned blocks = (unsigned)((V->s.n + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0 || nb <= 0)
        return 0;
    FIRN_LAUNCH(sph_rigid, blocks, FIRN_BLOCK, 0, st, *V, bodies, nb, acc);
    FIRN_CUDA_CHECK_LAUNCH("sph_rigid", st, err);
    return 0;
}

int firn_cuda_sph_rigid_local_bytes(size_t *bytes, firn_error *err)
{
    const void *const kernels[] = {(const void *)sph_rigid};
    return firn_cuda_local_bytes(kernels, 1, bytes, err);
}

/* ---- the pair's step of the couple stage (host/coupler.c) ---------------- */

static int sph_rigid_queue(firn_world *w, firn_step *st)
{
    const firn_sph_view V = firn_cuda_couple_sph_view(w, st->P);
    int n;
    double *acc;
    const firn_rigid *bodies = firn_cuda_world_rigids(w, &n, &acc);
    return firn_cuda_queue_sph_rigid(&V, bodies, n, acc, firn_cuda_world_stream(w), st->err);
}

extern "C" const firn_step_fn firn_cuda_sph_rigid = sph_rigid_queue;
