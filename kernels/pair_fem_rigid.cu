/* pair_fem_rigid.cu - FEM-Rigid on the GPU (include/firn_fem_coupling.h;
 * the CPU's pass is host/fem_coupling.c's firn_fem_rigid_cpu): one thread
 * per surface vertex, the bodies' reaction summed per warp
 * (reaction.cuh). Launcher in kernels/fem.cuh; queued by kernels/fem.cu's
 * surface pass. */
#include "pair_fem_rigid.cuh"
#include "reaction.cuh"

#define FIRN_BLOCK 256

/* One thread per surface vertex (firn_fem_rigid_vertex: its own vertex's
 * velocity only), the reaction in local memory per thread. No early
 * return: every lane reaches the shuffles. */
static __global__ void fem_rigid(firn_fem_surface S, const firn_rigid *bodies, int nb, double *acc)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    double a[FIRN_MAX_RIGIDS * FIRN_RIGID_ACC];
    for (int c = 0; c < nb * FIRN_RIGID_ACC; c++)
        a[c] = 0.0;
    if (k < S.ns)
        firn_fem_rigid_vertex(k, &S, bodies, nb, a);
    warp_add_reaction(a, nb, acc);
}

int firn_cuda_queue_fem_rigid(const firn_fem_surface *S, const firn_rigid *bodies, int nb,
                              double *acc, cudaStream_t st, firn_error *err)
{
    const unsigned blocks = (unsigned)((S->ns + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0 || nb <= 0)
        return 0;
    FIRN_LAUNCH(fem_rigid, blocks, FIRN_BLOCK, 0, st, *S, bodies, nb, acc);
    FIRN_CUDA_CHECK_LAUNCH("fem_rigid", st, err);
    return 0;
}

int firn_cuda_fem_coupling_local_bytes(size_t *bytes, firn_error *err)
{
    const void *const kernels[] = {(const void *)fem_rigid};
    return firn_cuda_local_bytes(kernels, 1, bytes, err);
}
