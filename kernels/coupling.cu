/* coupling.cu - the CUDA side of rigid coupling: the rigid step (one thread
 * per body; the state stays on the device, no host round-trip per substep),
 * the grid update with the SDF impulse of include/firn_coupling.h, with
 * MPM-SPH's term on the nodes (include/firn_sph_coupling.h; launcher in
 * kernels/sph.cuh), and the CPIC variants of the transfers
 * (include/firn_cpic.h): side marking, p2g and g2p; and the tool solver's
 * phases with Tool-MPM (include/firn_tool.h): advection, the grid update
 * with the tools, the records of their reaction. The pairs on particles
 * and surfaces have a file each: kernels/pair_sph_rigid.cu,
 * pair_mpm_sph.cu, pair_pbd_rigid.cu, pair_fem_rigid.cu.
 *
 * The per-node body is the CPU path's (firn_rigid_node_impulse); only the
 * force sum differs: on the CPU, fixed node chunks added in order; here a
 * warp shuffle reduction per body and one double atomicAdd per warp, so
 * the sum depends on scheduling only through the atomics' order. */
#include <cstring>

#include "coupling.cuh"
#include "firn_cpic.h"
#include "firn_tool.h"
#include "pair_mpm_sph.cuh"
#include "pair_sph_rigid.cuh"
#include "reaction.cuh"
#include "sph.cuh"

#define FIRN_BLOCK 256

static __global__ void rigid_step(firn_rigid *bodies, double *acc, int nb, firn_params P)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < nb)
        firn_rigid_step(&bodies[k], acc + FIRN_RIGID_ACC * k, P.gravity, P.dt);
}

/* Every thread of a warp reaches the reductions (no early return), so the
 * full-mask vote and shuffles are safe; empty or out-of-range nodes add
 * zeros. */
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
        int touched = 0;
        if (has && bodies[k].couple) {
            v = firn_rigid_node_impulse(&bodies[k], xn, v, m, a);
            for (int c = 0; c < FIRN_RIGID_ACC; c++)
                touched |= a[c] != 0.0;
        }
        /* A warp none of whose nodes this body reached (most of a domain:
         * empty nodes, or far from the body) skips its six reductions. */
        if (!__any_sync(0xffffffffu, touched))
            continue;
        for (int c = 0; c < FIRN_RIGID_ACC; c++) {
            double s = warp_sum(a[c]);
            if (lane == 0 && s != 0.0)
                atomicAdd(acc + FIRN_RIGID_ACC * k + c, s);
        }
    }
    if (has)
        firn_grid_store_velocity(node, g, firn_grid_walls(node, &P, v));
}

/* ---- SPH pairs --------------------------------------------------------------- */

/* The grid update with MPM-SPH (and the rigid bodies when nb > 0): the
 * CPU's per-node body, firn_grid_node_tools without tools, with the reaction in local
 * memory per thread. No early return: every lane reaches the shuffles. */
static __global__ void grid_update_pairs(firn_params P, firn_grid g, const firn_rigid *bodies,
                                         int nb, double *acc, firn_sph_view V)
{
    long long node = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    double a[FIRN_MAX_RIGIDS * FIRN_RIGID_ACC];
    for (int k = 0; k < nb * FIRN_RIGID_ACC; k++)
        a[k] = 0.0;
    if (node < g.nodes)
        firn_grid_node_tools(node, &P, g, NULL, 0, NULL, bodies, nb, a, &V);
    warp_add_reaction(a, nb, acc);
}

int firn_cuda_queue_grid_pairs(const firn_params *P, firn_grid g, const firn_rigid *bodies, int nb,
                               double *acc, const firn_sph_view *V, cudaStream_t st,
                               firn_error *err)
{
    const unsigned blocks = (unsigned)((g.nodes + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0)
        return 0;
    FIRN_LAUNCH(grid_update_pairs, blocks, FIRN_BLOCK, 0, st, *P, g, bodies, nb, acc, *V);
    FIRN_CUDA_CHECK_LAUNCH("grid_update_pairs", st, err);
    return 0;
}

int firn_cuda_sph_coupling_local_bytes(size_t *bytes, firn_error *err)
{
    const void *const kernels[] = {(const void *)grid_update_pairs};
    return firn_cuda_local_bytes(kernels, 1, bytes, err) ||
                   firn_cuda_sph_rigid_local_bytes(bytes, err) ||
                   firn_cuda_mpm_sph_local_bytes(bytes, err)
               ? FIRN_CUDA_FAILED
               : 0;
}

/* ---- tools ----------------------------------------------------------------- */

/* One thread per tool: the pose advects (firn_tool_advect) and the
 * substep's reaction sum restarts, as the CPU's tool_pre_coupling. */
static __global__ void tool_advect(firn_tool *tools, double *acc, int nt, float dt)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= nt)
        return;
    firn_tool_advect(&tools[k], dt);
    for (int c = 0; c < FIRN_TOOL_ACC; c++)
        acc[FIRN_TOOL_ACC * k + c] = 0.0;
}

/* The grid update with the tools (and the rigid bodies when nb > 0, MPM-SPH
 * when use_V): the CPU's per-node body, firn_grid_node_tools, with both
 * reactions in local memory per thread, then added per warp. No early
 * return: every lane reaches the shuffles. */
static __global__ void grid_update_tools(firn_params P, firn_grid g, const firn_tool *tools, int nt,
                                         double *tacc, const firn_rigid *bodies, int nb,
                                         double *acc, firn_sph_view V, int use_V)
{
    long long node = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    double ta[FIRN_MAX_TOOLS * FIRN_TOOL_ACC], a[FIRN_MAX_RIGIDS * FIRN_RIGID_ACC];
    for (int k = 0; k < nt * FIRN_TOOL_ACC; k++)
        ta[k] = 0.0;
    for (int k = 0; k < nb * FIRN_RIGID_ACC; k++)
        a[k] = 0.0;
    if (node < g.nodes)
        firn_grid_node_tools(node, &P, g, tools, nt, ta, bodies, nb, a, use_V ? &V : NULL);
    warp_add_reaction(ta, nt, tacc);
    warp_add_reaction(a, nb, acc);
}

/* One thread per tool: the substep's reaction into its record, as the
 * CPU's tool_post_coupling. */
static __global__ void tool_record(firn_tool_record *rec, const double *acc, int nt, float dt,
                                   int reset_frame)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < nt)
        firn_tool_record_add(&rec[k], acc + FIRN_TOOL_ACC * k, dt, reset_frame);
}

int firn_cuda_queue_tool_advect(firn_tool *tools, double *acc, int nt, const firn_params *P,
                                cudaStream_t st, firn_error *err)
{
    if (nt <= 0)
        return 0;
    FIRN_LAUNCH(tool_advect, 1, 32, 0, st, tools, acc, nt, P->dt);
    FIRN_CUDA_CHECK_LAUNCH("tool_advect", st, err);
    return 0;
}

int firn_cuda_queue_grid_tools(const firn_params *P, firn_grid g, const firn_tool *tools, int nt,
                               double *tacc, const firn_rigid *bodies, int nb, double *acc,
                               const firn_sph_view *V, cudaStream_t st, firn_error *err)
{
    const unsigned blocks = (unsigned)((g.nodes + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0)
        return 0;
    firn_sph_view none;
    memset(&none, 0, sizeof none);
    FIRN_LAUNCH(grid_update_tools, blocks, FIRN_BLOCK, 0, st, *P, g, tools, nt, tacc, bodies, nb,
                acc, V ? *V : none, V != NULL);
    FIRN_CUDA_CHECK_LAUNCH("grid_update_tools", st, err);
    return 0;
}

int firn_cuda_queue_tool_record(firn_tool_record *rec, const double *acc, int nt, float dt,
                                int reset_frame, cudaStream_t st, firn_error *err)
{
    if (nt <= 0)
        return 0;
    FIRN_LAUNCH(tool_record, 1, 32, 0, st, rec, acc, nt, dt, reset_frame);
    FIRN_CUDA_CHECK_LAUNCH("tool_record", st, err);
    return 0;
}

int firn_cuda_tool_local_bytes(size_t *bytes, firn_error *err)
{
    const void *const kernels[] = {(const void *)tool_advect, (const void *)grid_update_tools,
                                   (const void *)tool_record};
    return firn_cuda_local_bytes(kernels, 3, bytes, err);
}

/* For the GPU tests only (declared there): one launch of grid_update_tools
 * on a grid of P->n nodes, from node (mass and momentum, 4 floats a node,
 * in the grid's layout) into the same array, with the tools' and the
 * bodies' reactions added into tacc [nt][6] and acc [nb][6]; analytic
 * shapes only (the bodies' and tools' mesh grids stay on the host). On the
 * legacy stream, synchronously. Returns 0 or FIRN_CUDA_FAILED. */
extern "C" int firn_cuda_grid_tools_once(const firn_params *P, float *node, const firn_tool *tools,
                                         int nt, double *tacc, const firn_rigid *bodies, int nb,
                                         double *acc, firn_error *err)
{
    /* Zeroed whole: the 4 bytes of padding after n[] travel to the kernel
     * too, and stack garbage there can read as a host address. */
    firn_grid g;
    memset(&g, 0, sizeof g);
    for (int a = 0; a < 3; a++)
        g.n[a] = P->n[a];
    g.nodes = (long long)g.n[0] * g.n[1] * g.n[2];
    const size_t gb = 4 * (size_t)g.nodes * sizeof(float);
    const size_t tb = (size_t)nt * sizeof(firn_tool), bb = (size_t)nb * sizeof(firn_rigid);
    const size_t tab = (size_t)nt * FIRN_TOOL_ACC * sizeof(double),
                 ab = (size_t)nb * FIRN_RIGID_ACC * sizeof(double);
    firn_tool *dtools = NULL;
    firn_rigid *db = NULL;
    double *dta = NULL, *da = NULL;
    g.node = NULL;
    int failed =
        FIRN_CUDA_CALL(cudaMalloc(&g.node, gb), err) ||
        FIRN_CUDA_CALL(cudaMalloc(&dtools, tb + 1), err) ||
        FIRN_CUDA_CALL(cudaMalloc(&db, bb + 1), err) ||
        FIRN_CUDA_CALL(cudaMalloc(&dta, tab + 1), err) ||
        FIRN_CUDA_CALL(cudaMalloc(&da, ab + 1), err) ||
        FIRN_CUDA_CALL(cudaMemcpy(g.node, node, gb, cudaMemcpyHostToDevice), err) ||
        (nt > 0 && FIRN_CUDA_CALL(cudaMemcpy(dtools, tools, tb, cudaMemcpyHostToDevice), err)) ||
        (nb > 0 && FIRN_CUDA_CALL(cudaMemcpy(db, bodies, bb, cudaMemcpyHostToDevice), err)) ||
        (nt > 0 && FIRN_CUDA_CALL(cudaMemcpy(dta, tacc, tab, cudaMemcpyHostToDevice), err)) ||
        (nb > 0 && FIRN_CUDA_CALL(cudaMemcpy(da, acc, ab, cudaMemcpyHostToDevice), err)) ||
        firn_cuda_queue_grid_tools(P, g, dtools, nt, dta, db, nb, da, NULL, 0, err) ||
        FIRN_CUDA_CALL(cudaMemcpy(node, g.node, gb, cudaMemcpyDeviceToHost), err) ||
        (nt > 0 && FIRN_CUDA_CALL(cudaMemcpy(tacc, dta, tab, cudaMemcpyDeviceToHost), err)) ||
        (nb > 0 && FIRN_CUDA_CALL(cudaMemcpy(acc, da, ab, cudaMemcpyDeviceToHost), err));
    cudaFree(g.node);
    cudaFree(dtools);
    cudaFree(db);
    cudaFree(dta);
    cudaFree(da);
    return failed ? FIRN_CUDA_FAILED : 0;
}

/* ---- CPIC ------------------------------------------------------------------ */

static __global__ void cpic_mark(firn_params P, firn_particles p, const firn_rigid *bodies, int nb)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n)
        firn_cpic_mark(i, &P, p, bodies, nb);
}

static __global__ void p2g_cpic(firn_params P, const firn_material *mats, firn_particles p,
                                firn_grid g, const firn_rigid *bodies, int nb)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n)
        firn_p2g_particle_cpic(i, &P, mats, p, g, bodies, nb);
}

/* The bodies' reaction: per thread in local memory, then, for each body
 * some lane of the warp touched, a warp sum and one double atomicAdd per
 * component. Only a whole warp returns early: every lane of a warp with a
 * particle near a body reaches the shuffles. */
static __global__ void g2p_cpic(firn_params P, const firn_material *mats, firn_particles p,
                                firn_grid g, const firn_rigid *bodies, int nb, double *acc,
                                unsigned long long *bad, unsigned substep)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    /* A warp none of whose particles has a record (most of them, away from
     * the bodies): plain G2P, and no reaction array to clear and sum. The
     * branch is the whole warp's, so the shuffles below stay converged. */
    const int near = i < p.n && firn_cpic_any(p, i, nb);
    if (!__any_sync(0xffffffffu, near)) {
        if (i < p.n && firn_g2p_particle(i, &P, p, g))
            atomicMin(bad, firn_cuda_bad_word(substep, i));
        return;
    }
    double a[FIRN_CPIC_MAX * FIRN_RIGID_ACC];
    for (int k = 0; k < nb * FIRN_RIGID_ACC; k++)
        a[k] = 0.0;
    if (i < p.n && firn_g2p_particle_cpic(i, &P, mats, p, g, bodies, nb, a))
        atomicMin(bad, firn_cuda_bad_word(substep, i));
    warp_add_reaction(a, nb, acc);
}

int firn_cuda_queue_cpic_mark(const firn_params *P, firn_particles p, const firn_rigid *bodies,
                              int nb, cudaStream_t st, firn_error *err)
{
    const unsigned blocks = (unsigned)((p.n + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0 || nb <= 0)
        return 0;
    FIRN_LAUNCH(cpic_mark, blocks, FIRN_BLOCK, 0, st, *P, p, bodies, nb);
    FIRN_CUDA_CHECK_LAUNCH("cpic_mark", st, err);
    return 0;
}

int firn_cuda_queue_p2g_cpic(const firn_params *P, const firn_material *mats, firn_particles p,
                             firn_grid g, const firn_rigid *bodies, int nb, cudaStream_t st,
                             firn_error *err)
{
    const unsigned blocks = (unsigned)((p.n + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0)
        return 0;
    FIRN_LAUNCH(p2g_cpic, blocks, FIRN_BLOCK, 0, st, *P, mats, p, g, bodies, nb);
    FIRN_CUDA_CHECK_LAUNCH("p2g_cpic", st, err);
    return 0;
}

int firn_cuda_queue_g2p_cpic(const firn_params *P, const firn_material *mats, firn_particles p,
                             firn_grid g, const firn_rigid *bodies, int nb, double *acc,
                             unsigned long long *bad, unsigned substep, cudaStream_t st,
                             firn_error *err)
{
    const unsigned blocks = (unsigned)((p.n + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0)
        return 0;
    FIRN_LAUNCH(g2p_cpic, blocks, FIRN_BLOCK, 0, st, *P, mats, p, g, bodies, nb, acc, bad, substep);
    FIRN_CUDA_CHECK_LAUNCH("g2p_cpic", st, err);
    return 0;
}

/* ---- launchers ------------------------------------------------------------- */

int firn_cuda_queue_rigid_step(firn_rigid *bodies, double *acc, int nb, const firn_params *P,
                               cudaStream_t st, firn_error *err)
{
    if (nb <= 0)
        return 0;
    FIRN_LAUNCH(rigid_step, 1, 32, 0, st, bodies, acc, nb, *P);
    FIRN_CUDA_CHECK_LAUNCH("rigid_step", st, err);
    return 0;
}

int firn_cuda_queue_grid_rigid(const firn_params *P, firn_grid g, const firn_rigid *bodies, int nb,
                               double *acc, cudaStream_t st, firn_error *err)
{
    const unsigned blocks = (unsigned)((g.nodes + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (blocks == 0)
        return 0;
    FIRN_LAUNCH(grid_update_rigid, blocks, FIRN_BLOCK, 0, st, *P, g, bodies, nb, acc);
    FIRN_CUDA_CHECK_LAUNCH("grid_update_rigid", st, err);
    return 0;
}

int firn_cuda_coupling_local_bytes(int cpic, size_t *bytes, firn_error *err)
{
    const void *const kernels[] = {(const void *)rigid_step, (const void *)grid_update_rigid,
                                   /* CPIC's, last */
                                   (const void *)cpic_mark, (const void *)p2g_cpic,
                                   (const void *)g2p_cpic};
    return firn_cuda_local_bytes(kernels, cpic ? 5 : 2, bytes, err);
}
