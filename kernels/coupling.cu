/* coupling.cu - the CUDA side of rigid coupling: the rigid step (one thread
 * per body; the state stays on the device, no host round-trip per substep)
 * and the grid update with the SDF impulse of include/firn_coupling.h.
 *
 * The per-node body is the CPU path's (firn_rigid_node_impulse); only the
 * force sum differs: on the CPU, fixed node chunks added in order; here a
 * warp shuffle reduction per body and one double atomicAdd per warp, so
 * the sum depends on scheduling only through the atomics' order. */
#include "coupling.cuh"

#define FIRN_BLOCK 256

static __global__ void rigid_step(firn_rigid *bodies, double *acc, int nb, firn_params P)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < nb)
        firn_rigid_step(&bodies[k], acc + FIRN_RIGID_ACC * k, P.gravity, P.dt);
}

static __device__ double warp_sum(double x)
{
    for (int off = 16; off > 0; off >>= 1)
        x += __shfl_down_sync(0xffffffffu, x, off);
    return x;
}

/* Every thread of a warp reaches the reductions (no early return), so the
 * full-mask shuffles are safe; empty or out-of-range nodes add zeros. */
static __global__ void grid_update_rigid(firn_params P, firn_grid g, const firn_rigid *bodies,
                                         int nb, double *acc)
{
    long long node = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    firn_vec3 v = firn_v3(0.0f, 0.0f, 0.0f);
    int has = node < g.nodes && firn_grid_velocity(node, &P, g, &v);
    float m = has ? g.node[4 * node + 3] : 0.0f;
    firn_vec3 xn = firn_node_position(has ? node : 0, &P);
    const int lane = threadIdx.x & 31;
    for (int k = 0; k < nb; k++) {
        double a[FIRN_RIGID_ACC] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        if (has && bodies[k].couple)
            v = firn_rigid_node_impulse(&bodies[k], xn, v, m, P.dt, a);
        for (int c = 0; c < FIRN_RIGID_ACC; c++) {
            double s = warp_sum(a[c]);
            if (lane == 0 && s != 0.0)
                atomicAdd(acc + FIRN_RIGID_ACC * k + c, s);
        }
    }
    if (has)
        firn_grid_store_velocity(node, g, firn_grid_walls(node, &P, v));
}

int firn_cuda_queue_rigid_step(firn_rigid *bodies, double *acc, int nb, const firn_params *P,
                               cudaStream_t st, firn_error *err)
{
    if (nb <= 0)
        return 0;
    rigid_step<<<1, 32, 0, st>>>(bodies, acc, nb, *P);
    FIRN_CUDA_CHECK_LAUNCH("rigid_step", st, err);
    return 0;
}

int firn_cuda_queue_grid_rigid(const firn_params *P, firn_grid g, const firn_rigid *bodies, int nb,
                               double *acc, cudaStream_t st, firn_error *err)
{
    const unsigned blocks = (unsigned)((g.nodes + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0)
        return 0;
    grid_update_rigid<<<blocks, FIRN_BLOCK, 0, st>>>(*P, g, bodies, nb, acc);
    FIRN_CUDA_CHECK_LAUNCH("grid_update_rigid", st, err);
    return 0;
}
