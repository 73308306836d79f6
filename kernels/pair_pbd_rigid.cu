/* pair_pbd_rigid.cu - PBD-rigid on the GPU (include/firn_pbd_coupling.h,
 * firn_pbf.h; the CPU's pass is host/pair_pbd_rigid.c): one thread per
 * PBD particle, the bodies' reaction summed per warp (reaction.cuh).
 * Launchers in kernels/pair_pbd_rigid.cuh; queued by the couple stage
 * through kernels/pbd.cu's firn_cuda_pbd_rigid (the pair's step reads the
 * PBD solver's device view, which pbd.cu holds). */
#include "firn_pbf.h"
#include "pair_pbd_rigid.cuh"
#include "reaction.cuh"

#define FIRN_BLOCK 256

/* One thread per PBD particle (firn_pbd_rigid_particle: the particle's own
 * position only, so threads never share a write), the reaction in local
 * memory per thread. No early return: every lane reaches the shuffles. */
static __global__ void pbd_rigid(firn_pbd_view V, const firn_rigid *bodies, int nb, double *acc)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double a[FIRN_MAX_RIGIDS * FIRN_RIGID_ACC];
    for (int k = 0; k < nb * FIRN_RIGID_ACC; k++)
        a[k] = 0.0;
    if (i < V.s.n)
        firn_pbd_rigid_particle(i, &V.P, V.mats, V.s, bodies, nb, a);
    warp_add_reaction(a, nb, acc);
}

int firn_cuda_queue_pbd_rigid(const firn_pbd_view *V, const firn_rigid *bodies, int nb, double *acc,
                              cudaStream_t st, firn_error *err)
{
    const unsigned blocks = (unsigned)((V->s.n + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0 || nb <= 0)
        return 0;
    FIRN_LAUNCH(pbd_rigid, blocks, FIRN_BLOCK, 0, st, *V, bodies, nb, acc);
    FIRN_CUDA_CHECK_LAUNCH("pbd_rigid", st, err);
    return 0;
}

/* One thread per PBD particle (firn_pbf_body_react: reads only), the
 * reaction in local memory per thread. No early return: every lane
 * reaches the shuffles. */
static __global__ void pbf_rigid(firn_pbd_view V, const firn_rigid *bodies, int nb, double *acc)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double a[FIRN_MAX_RIGIDS * FIRN_RIGID_ACC];
    for (int k = 0; k < nb * FIRN_RIGID_ACC; k++)
        a[k] = 0.0;
    if (i < V.s.n)
        firn_pbf_body_react(i, &V.P, V.mats, V.s, bodies, nb, a);
    warp_add_reaction(a, nb, acc);
}

int firn_cuda_queue_pbf_rigid(const firn_pbd_view *V, const firn_rigid *bodies, int nb, double *acc,
                              cudaStream_t st, firn_error *err)
{
    const unsigned blocks = (unsigned)((V->s.n + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0 || nb <= 0)
        return 0;
    FIRN_LAUNCH(pbf_rigid, blocks, FIRN_BLOCK, 0, st, *V, bodies, nb, acc);
    FIRN_CUDA_CHECK_LAUNCH("pbf_rigid", st, err);
    return 0;
}

int firn_cuda_pbd_coupling_local_bytes(size_t *bytes, firn_error *err)
{
    const void *const kernels[] = {(const void *)pbd_rigid, (const void *)pbf_rigid};
    return firn_cuda_local_bytes(kernels, 2, bytes, err);
}
