/* mpm.cu - the CUDA backend of the MPM substep: kernels p2g, grid_update and
 * g2p, a device reduction for the CFL step, and the launchers declared in
 * host/world.h.
 *
 * The kernels are thin wrappers: one thread runs the shared per-particle or
 * per-node body of include/firn_mpm.h, the same code the CPU reference
 * (host/solver_cpu.c) loops over; only the grid scatter differs (atomicAdd
 * here, coloured blocks there), so the two agree to float rounding.
 *
 * A call of firn_cuda_run queues all its substeps on one stream and
 * synchronises once at the end; non-finite particles are recorded on the
 * device (lowest index, atomicMin) and read back once. queue_substep
 * hands each substep to the Coupler's one order (host/coupler.c
 * firn_coupler_run), which queues every active solver's CUDA phases from
 * its table (host/solver.h): the tools', the rigid bodies' and MPM's
 * (defined here), SPH's, PBD's and FEM's (kernels/sph.cu, pbd.cu, fem.cu),
 * and the couple stage (the grid update with its pairs, then the particle
 * and surface pairs). The tools and their reaction records come back to
 * the host mirror with the call's one synchronisation. */
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "couple.cuh"
#include "coupling.cuh"
#include "cuda_backend.h"
#include "cuda_check.cuh"
#include "error.h"
#include "fem.cuh"
#include "mpm_sph.h"
#include "pair_mpm_sph.cuh"
#include "pbd.cuh"
#include "solver_cpu.h"
#include "sph.cuh"
#include "world.h"

#define FIRN_BLOCK 256

/* Events: the call's start and end (EV_START, EV_END), then the marks of
 * its timed substep (the middle one): the substep's start, then the end
 * of every interval the Coupler and the solvers mark (host/solver.h,
 * firn_step_mark), each with its profile slot. */
enum { EV_START, EV_END, EV_MARK0, EV_COUNT = EV_MARK0 + 48 };

/* Binned P2G: the particles' order by bin of FIRN_BIN^3 cells (their
 * stencil corner's) and, within a bin, by cell, rebuilt every substep, and
 * each bin's range in it. A key is bin * FIRN_BIN^3 + the cell within the
 * bin. */
#define FIRN_BIN         4
#define FIRN_TILE        (FIRN_BIN + 2) /* a bin's stencils span its cells and two more per axis */
#define FIRN_BIN_THREADS 128
/* Blocks a multiprocessor at least holds of p2g_binned, p2g_warp and
 * g2p2g compiled for a material model (__launch_bounds__'s second argument,
 * which caps a thread at 65536 / (128 n) registers, rounded down to 8: 96,
 * 80, 72, 64 for n = 5 to 8): the largest n at which nvcc 13.0 (sm_90)
 * spills nothing, from --resource-usage over n = 4 to 8
 * (bench/sass_counts.sh; docs/BENCH_LOG.md, "The constitutive update's
 * instructions"). FIRN_BINNED_MIN_BLOCKS, FIRN_WARP_MIN_BLOCKS and
 * FIRN_FUSED_MIN_BLOCKS, when defined, set one n for every model (for
 * that measurement). */
enum { FIRN_K_BINNED, FIRN_K_WARP, FIRN_K_FUSED };
static constexpr int min_blocks(int kernel, int model)
{
#ifdef FIRN_BINNED_MIN_BLOCKS
    if (kernel == FIRN_K_BINNED)
        return FIRN_BINNED_MIN_BLOCKS;
#endif
#ifdef FIRN_WARP_MIN_BLOCKS
    if (kernel == FIRN_K_WARP)
        return FIRN_WARP_MIN_BLOCKS;
#endif
#ifdef FIRN_FUSED_MIN_BLOCKS
    if (kernel == FIRN_K_FUSED)
        return FIRN_FUSED_MIN_BLOCKS;
#endif
    /* Snow's hardening and clamps need the most registers, liquid's the
     * fewest; the model read at run time (FIRN_M_ANY) carries every
     * branch. */
    return kernel == FIRN_K_BINNED
               ? (model == FIRN_M_SNOW                                                     ? 5
                  : model == FIRN_M_LIQUID                                                 ? 8
                  : model == FIRN_M_ANY || model == FIRN_M_SAND || model == FIRN_M_ELASTIC ? 6
                                                                                           : 7)
           : kernel == FIRN_K_WARP ? (model == FIRN_M_SNOW || model == FIRN_M_ANY ? 6 : 7)
                                   : (model == FIRN_M_SNOW || model == FIRN_M_LIQUID ? 5 : 6);
}
/* G2P2G's tile: the bins are those of the positions before G2P, and a
 * particle's stencil corner moves by at most one cell in a substep that
 * keeps the CFL condition (|v| dt < dx), so the stencils span the bin's
 * cells, one more below and three more above per axis. */
#define FIRN_FTILE (FIRN_BIN + 4)

struct firn_mpm_bins {
    int on;           /* the world's P2G is binned (run.p2g, and not CPIC's) */
    int warp;         /* ... and sums each warp's lanes of one cell first (p2g_warp) */
    int fused;        /* ... and fuses each G2P with the next substep's P2G (g2p2g) */
    int n[3];         /* bins per axis */
    int count;        /* n[0] n[1] n[2] */
    int end_bit;      /* bits of the largest key, for the radix sort */
    int *key;         /* per particle: its key (bin and cell) */
    int *key_sorted;  /* the keys in sorted order */
    int *ids;         /* radix sort: 0 .. n - 1; counting sort: the rank within its key */
    int *order;       /* particles by key (the radix sort: stable) */
    int *start, *end; /* per bin: its range in order (start = end: empty) */
    void *temp;       /* CUB's storage: the radix sort's, or the counting sort's scans */
    size_t temp_bytes;
    /* The counting sort (every binned variant but ordered, on a dense grid;
     * bin_keys, key_scatter): per key, its particle count (cells + 1
     * entries, the last 0) and its exclusive scan, the key's first place in
     * the order (the last: n). */
    int counting;
    int *ccount, *coff;
    /* The list of the bins that hold particles (every binned variant but
     * ordered; bin_flags, bin_list): per bin a flag and its scan, the
     * list in bin order and its length, on the device. P2G's blocks run
     * through the list, not through every bin. */
    int listed;
    int *bflag, *boff, *blist, *nbins;
    /* Ordered P2G (--p2g ordered, p2g_ordered): per key (count FIRN_BIN^3
     * cells) its range in order; per sorted particle its scatter state. */
    int ordered;
    int *cstart, *cend;
    float *ps; /* FIRN_ORDERED_FLOATS per particle, component-major by sorted position */
    /* Sparse grid (firn_device_sparse): blocks of 4^3 nodes (nb per axis,
     * nblocks in all); per block whether this substep's stencils can reach
     * it and its place in the list of those; the list and its length (the
     * previous substep's until the new one is built). */
    int sparse;
    int nb[3], nblocks;
    int *flag, *offset, *list, *nlisted;
    void *scan_temp; /* CUB's exclusive scan storage */
    size_t scan_temp_bytes;
    /* The tile in 32-bit fixed point (p2g_binned_fixed, g2p2g_fixed;
     * firn_device_fixed_tile): binned and G2P2G only. mass_max: the
     * heaviest MPM particle's mass, vol rho (the tile's scale). */
    int fixed;
    float mass_max;
    float *bound; /* per bin: its particles' largest momentum bound in the last
                     fixed-point P2G (tile_scatter_fixed), 0 before the first */
    int *id;      /* with the reorder on (FIRN_P2G_REORDER), per slot the particle's
                     index in the scene's order (firn_cuda_state's id); else NULL */
    int skew;     /* the GPU tests' key skew (firn_cuda_skew_bin_keys, skew_keys); 0: off */
    int grid;     /* the GPU tests' cap on binned P2G's blocks (firn_cuda_cap_bin_blocks); 0: off */
};

/* CUDA graphs (firn_graph_mode): what a captured call's work depends on
 * besides device memory - the substep count, the tools' frame reset, with
 * G2P2G which of its two grids the call starts on, and
 * the parameters every queued kernel gets by value (the world's, with the
 * call's dt, and the SPH, PBD and FEM solvers', with the PBD iteration
 * counts that shape its launches). The rest of what the launches bake in
 * (device pointers, particle, body and constraint counts, which phases the
 * world has) is fixed for the life of the device state, whose freeing
 * destroys the graphs. Filled by memcpy from the host structs over a zeroed
 * key, compared by memcmp: so every byte of the key must be a field's value.
 * The key and the structs it copies hold 4-byte fields only and so no
 * padding (whose bytes memcpy would copy as they are, garbage included);
 * the sizes below check it: a field added to one of them fails the build
 * until it is listed here, and one that brings padding fails it for good. */
struct graph_key {
    int nsub, tool_reset, gbase;
    firn_params P;
    firn_sph_params sph;
    firn_pbd_params pbd;
    int pbd_counts[5];
    firn_fem_params fem;
};

#define FIELD_BYTES(T, f) sizeof(((T *)0)->f)
static_assert(sizeof(firn_nbr_space) ==
                  FIELD_BYTES(firn_nbr_space, lower) + FIELD_BYTES(firn_nbr_space, h) +
                      FIELD_BYTES(firn_nbr_space, inv_h) + FIELD_BYTES(firn_nbr_space, res),
              "firn_nbr_space has padding or a field graph_key's check does not list");
static_assert(sizeof(firn_params) ==
                  FIELD_BYTES(firn_params, dt) + FIELD_BYTES(firn_params, dx) +
                      FIELD_BYTES(firn_params, inv_dx) + FIELD_BYTES(firn_params, lower) +
                      FIELD_BYTES(firn_params, n) + FIELD_BYTES(firn_params, gravity) +
                      FIELD_BYTES(firn_params, wall_type) +
                      FIELD_BYTES(firn_params, wall_friction) + FIELD_BYTES(firn_params, bound) +
                      FIELD_BYTES(firn_params, x_min) + FIELD_BYTES(firn_params, x_max),
              "firn_params has padding or a field graph_key's check does not list");
static_assert(
    sizeof(firn_sph_params) ==
        FIELD_BYTES(firn_sph_params, dt) + FIELD_BYTES(firn_sph_params, psize) +
            FIELD_BYTES(firn_sph_params, h) + FIELD_BYTES(firn_sph_params, inv_h) +
            FIELD_BYTES(firn_sph_params, kw) + FIELD_BYTES(firn_sph_params, vol) +
            FIELD_BYTES(firn_sph_params, lower) + FIELD_BYTES(firn_sph_params, upper) +
            FIELD_BYTES(firn_sph_params, nb) + FIELD_BYTES(firn_sph_params, gravity) +
            FIELD_BYTES(firn_sph_params, solver) + FIELD_BYTES(firn_sph_params, div_tol) +
            FIELD_BYTES(firn_sph_params, dens_tol) + FIELD_BYTES(firn_sph_params, tau) +
            FIELD_BYTES(firn_sph_params, div_iters) + FIELD_BYTES(firn_sph_params, dens_iters) +
            FIELD_BYTES(firn_sph_params, walls) + FIELD_BYTES(firn_sph_params, full_count) +
            FIELD_BYTES(firn_sph_params, wall_visc_t) + FIELD_BYTES(firn_sph_params, wall_visc_n),
    "firn_sph_params has padding or a field graph_key's check does not list");
static_assert(sizeof(firn_pbd_params) ==
                  FIELD_BYTES(firn_pbd_params, dt) + FIELD_BYTES(firn_pbd_params, psize) +
                      FIELD_BYTES(firn_pbd_params, gravity) + FIELD_BYTES(firn_pbd_params, lower) +
                      FIELD_BYTES(firn_pbd_params, upper) + FIELD_BYTES(firn_pbd_params, nb) +
                      FIELD_BYTES(firn_pbd_params, kw) + FIELD_BYTES(firn_pbd_params, kg) +
                      FIELD_BYTES(firn_pbd_params, pbf_eps),
              "firn_pbd_params has padding or a field graph_key's check does not list");
static_assert(sizeof(firn_fem_params) ==
                  FIELD_BYTES(firn_fem_params, dt) + FIELD_BYTES(firn_fem_params, gravity) +
                      FIELD_BYTES(firn_fem_params, damping) + FIELD_BYTES(firn_fem_params, lower) +
                      FIELD_BYTES(firn_fem_params, upper) +
                      FIELD_BYTES(firn_fem_params, wall_type) +
                      FIELD_BYTES(firn_fem_params, wall_friction),
              "firn_fem_params has padding or a field graph_key's check does not list");
static_assert(sizeof(graph_key) ==
                  FIELD_BYTES(graph_key, nsub) + FIELD_BYTES(graph_key, tool_reset) +
                      FIELD_BYTES(graph_key, gbase) + FIELD_BYTES(graph_key, P) +
                      FIELD_BYTES(graph_key, sph) + FIELD_BYTES(graph_key, pbd) +
                      FIELD_BYTES(graph_key, pbd_counts) + FIELD_BYTES(graph_key, fem),
              "graph_key has padding or a field its check does not list");
#undef FIELD_BYTES

/* A call is two graphs around its middle substep, which is queued launch
 * by launch and timed phase by phase (account_time): substeps [0, m) and
 * (m, nsub), m = nsub / 2; either may be empty (NULL). */
#define FIRN_GRAPH_SLOTS 4
struct graph_slot {
    graph_key key;
    cudaGraphExec_t before, after;
    unsigned long long used; /* the call that last launched it, for reuse order */
};

/* Threads of a sparse grid kernel's block: one per node of a 4^3 block. */
#define FIRN_SPARSE_THREADS 64

/* What ordered P2G keeps of a particle's scatter state (firn_p2g_state,
 * less the stencil, rebuilt from x): affine 9, m v 3, mass 1, x 3. */
#define FIRN_ORDERED_FLOATS 16

struct firn_cuda_state {
    firn_particles p; /* device SoA, same layout as the host mirror w->p */
    void *p_block;    /* one allocation holding all particle arrays */
    /* The physical reorder (FIRN_P2G_REORDER; firn_device_reorder): every
     * `reorder` substeps of a call (0: off), the particles move into the
     * bin order. q: a scratch block of p's layout; id: per slot, the
     * particle's original index (the identity at upload); id_q: its
     * scratch. NULL when off. */
    int reorder;
    firn_particles q;
    void *q_block;
    int *id, *id_q;
    firn_grid grid; /* device grid: mass (nodes), then mom (3 nodes), contiguous */
    /* The grid's buffers: one, or with G2P2G two (substep k of a call uses
     * gbuf[(gbase + k) & 1], the previous substep's is read by its fused
     * G2P); grid.node is the one in use, after a call its last substep's. */
    float *gbuf[2];
    int gbase;
    int nsub;            /* substeps of the call being queued */
    firn_material *mats; /* device copy of w->mats (FIRN_MAX_MATERIALS) */
    unsigned long long
        *bad;        /* first non-finite particle (firn_cuda_bad_word), or FIRN_CUDA_BAD_NONE */
    float2 *red_out; /* reduction result: (max |v|^2, max stiffness factor) */
    void *red_temp;  /* CUB temporary storage, sized for p.n once */
    size_t red_temp_bytes;
    cudaStream_t stream;
    cudaEvent_t ev[EV_COUNT];
    int mark_slot[EV_COUNT]; /* the profile slot each mark ends (-1: the substep's start) */
    int marks;               /* marks recorded in the timed substep */
    firn_rigid *rigids;      /* device rigid state (n_rigids), resident */
    double *rigid_acc;       /* coupling force/torque for the next rigid step [n_rigids][6] */
    int n_rigids;
    int cpic;                   /* the Coupler's CPIC is on (p.cpic allocated) */
    int mpm;                    /* the MPM solver is active (has particles) */
    float *mpm_phi;             /* MPM-SPH's contact: the volume fraction per node, or NULL */
    firn_tool *tools;           /* device tool state (n_tools), resident */
    double *tool_acc;           /* this substep's reaction [n_tools][6] */
    firn_tool_record *tool_rec; /* the reaction's sums [n_tools] */
    int n_tools;
    /* Device SDF grids, one per distinct mesh of the bodies and tools, and
     * the host grid each copies. */
    float *mesh_grid[FIRN_MAX_RIGIDS + FIRN_MAX_TOOLS];
    const float *mesh_grid_host[FIRN_MAX_RIGIDS + FIRN_MAX_TOOLS];
    int n_mesh_grids;
    const float *rigid_grid_host[FIRN_MAX_RIGIDS]; /* per rigid: its host grid, or NULL */
    const float *tool_grid_host[FIRN_MAX_TOOLS];   /* per tool: its host grid, or NULL */
    firn_mpm_bins bins;                            /* binned P2G (p2g_binned); bins.on 0: atomic */
    int model;    /* mpm_model: the P2G kernels' material model, or FIRN_M_ANY */
    size_t bytes; /* device memory allocated */
    /* CUDA graphs: whether the world uses them, and whether a failed
     * capture is an error (--graphs on) or ends their use (auto); the
     * captured calls (key.nsub 0: a free slot), the calls so far, counts. */
    int graphs, graphs_required;
    graph_slot slot[FIRN_GRAPH_SLOTS];
    unsigned long long calls;
    firn_cuda_graph_stats gstats;
};

static void graph_release(graph_slot *g);

/* A launch of template kernel k (p2g, p2g_binned, p2g_warp, g2p2g) for
 * material model `model` (FIRN_M_*, or FIRN_M_ANY). */
#define FIRN_MPM_LAUNCH(k, model, grid, block, shared_bytes, stream, ...)                          \
    do {                                                                                           \
        switch (model) {                                                                           \
        case FIRN_M_ELASTIC:                                                                       \
            FIRN_LAUNCH(k<FIRN_M_ELASTIC>, grid, block, shared_bytes, stream, __VA_ARGS__);        \
            break;                                                                                 \
        case FIRN_M_LIQUID:                                                                        \
            FIRN_LAUNCH(k<FIRN_M_LIQUID>, grid, block, shared_bytes, stream, __VA_ARGS__);         \
            break;                                                                                 \
        case FIRN_M_SNOW:                                                                          \
            FIRN_LAUNCH(k<FIRN_M_SNOW>, grid, block, shared_bytes, stream, __VA_ARGS__);           \
            break;                                                                                 \
        case FIRN_M_SAND:                                                                          \
            FIRN_LAUNCH(k<FIRN_M_SAND>, grid, block, shared_bytes, stream, __VA_ARGS__);           \
            break;                                                                                 \
        case FIRN_M_VON_MISES:                                                                     \
            FIRN_LAUNCH(k<FIRN_M_VON_MISES>, grid, block, shared_bytes, stream, __VA_ARGS__);      \
            break;                                                                                 \
        case FIRN_M_FRACTURE:                                                                      \
            FIRN_LAUNCH(k<FIRN_M_FRACTURE>, grid, block, shared_bytes, stream, __VA_ARGS__);       \
            break;                                                                                 \
        default:                                                                                   \
            FIRN_LAUNCH(k<FIRN_M_ANY>, grid, block, shared_bytes, stream, __VA_ARGS__);            \
        }                                                                                          \
    } while (0)

/* The material model of every MPM particle of w, or FIRN_M_ANY when they
 * use several (or there are none): the P2G kernels' MODEL (FIRN_MPM_LAUNCH).
 * From the particles' material indices, as the state is built; the GPU
 * path adds no particles afterwards. */
static int mpm_model(const firn_world *w)
{
    int model = FIRN_M_ANY;
    for (int i = 0; i < w->p.n; i++) {
        const int mi = w->mats[w->p.mat[i]].model;
        if (i > 0 && mi != model)
            return FIRN_M_ANY;
        model = mi;
    }
    return model;
}

/* ---- GPU kernels ---------------------------------------------------------- */

/* The P2G kernels that run the constitutive update (p2g, p2g_binned,
 * p2g_warp, g2p2g) are templates on MODEL, the material model of every
 * particle (FIRN_M_*), or FIRN_M_ANY to read each particle's: a scene of
 * one model runs the kernel compiled for it, without the other models'
 * branches (mpm_model, chosen when the state is built; FIRN_MPM_LAUNCH).
 * Each is instantiated for FIRN_MODELS + 1 values. */
template <int MODEL>
static __global__ void p2g(firn_params P, const firn_material *mats, firn_particles p, firn_grid g)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n)
        firn_p2g_particle_as(i, &P, mats, p, g, MODEL);
}

/* Binned P2G, step 1: each particle's bin, the bin of its stencil corner
 * (the same firn_make_stencil that P2G uses; on a GPU the two kernels may
 * contract it to FMA differently and floor it to neighbouring cells, so P2G
 * checks that its bin's tile holds the stencil, firn_tile_slot). */
static __global__ void bin_keys(firn_params P, firn_particles p, firn_mpm_bins b)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n)
        return;
    const firn_stencil st = firn_make_stencil(&P, firn_load3(p.x, p.n, i));
    const int bin =
        ((st.base[0] / FIRN_BIN) * b.n[1] + st.base[1] / FIRN_BIN) * b.n[2] + st.base[2] / FIRN_BIN;
    const int cell = ((st.base[0] % FIRN_BIN) * FIRN_BIN + st.base[1] % FIRN_BIN) * FIRN_BIN +
                     st.base[2] % FIRN_BIN;
    const int key = bin * FIRN_BIN * FIRN_BIN * FIRN_BIN + cell;
    b.key[i] = key;
    /* The counting sort's histogram, each particle's rank within its key
     * taken from the global atomic's return (after skew_keys when it runs). */
    b.ids[i] = b.counting ? (b.skew > 0 ? 0 : atomicAdd(b.ccount + key, 1)) : i;
}

/* For the GPU tests only (firn_cuda_skew_bin_keys): after bin_keys, the key
 * of every b.skew-th particle names a neighbouring cell of its stencil
 * corner's (one up or down along one axis, in turn; kept within the bins),
 * as a corner floored differently in bin_keys than in P2G would. */
static __global__ void skew_keys(int n, firn_mpm_bins b)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    if (i % b.skew != 0) {
        if (b.counting)
            b.ids[i] = atomicAdd(b.ccount + b.key[i], 1);
        return;
    }
    const int cells = FIRN_BIN * FIRN_BIN * FIRN_BIN, bin = b.key[i] / cells,
              cell = b.key[i] % cells;
    int c[3] = {bin / (b.n[1] * b.n[2]) * FIRN_BIN + cell / (FIRN_BIN * FIRN_BIN),
                bin / b.n[2] % b.n[1] * FIRN_BIN + cell / FIRN_BIN % FIRN_BIN,
                bin % b.n[2] * FIRN_BIN + cell % FIRN_BIN};
    const int j = i / b.skew, a = j % 3;
    c[a] += j / 3 % 2 ? -1 : 1;
    c[a] = c[a] < 0 ? 0 : (c[a] > FIRN_BIN * b.n[a] - 1 ? FIRN_BIN * b.n[a] - 1 : c[a]);
    b.key[i] = (((c[0] / FIRN_BIN) * b.n[1] + c[1] / FIRN_BIN) * b.n[2] + c[2] / FIRN_BIN) * cells +
               ((c[0] % FIRN_BIN) * FIRN_BIN + c[1] % FIRN_BIN) * FIRN_BIN + c[2] % FIRN_BIN;
    if (b.counting)
        b.ids[i] = atomicAdd(b.ccount + b.key[i], 1);
}

/* The counting sort, step 3 (after bin_keys' histogram and CUB's exclusive
 * scan of it): each particle to its key's first place plus its rank. The
 * order is by bin, and by cell within a bin, as the radix sort's; within a
 * cell it is the order in which the atomics of bin_keys ran, which on a GPU
 * changes from run to run. That changes only the order in which P2G's
 * float atomics add up a cell's particles, which they never fixed: the
 * variants that use this sort (binned, warp, g2p2g) are not deterministic
 * (firn_world_gpu_nondeterminism). Ordered P2G, whose sums follow the
 * order within a cell, keeps the stable radix sort. */
static __global__ void key_scatter(int n, firn_mpm_bins b)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const int key = b.key[i], k = b.coff[key] + b.ids[i];
    b.order[k] = i;
    b.key_sorted[k] = key;
}

/* Step 3 (after CUB's stable radix sort): each bin's range in the order,
 * from where the sorted keys change. Bins no particle is in keep the
 * memset's start = end = 0. */
static __global__ void bin_ranges(int n, firn_mpm_bins b)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n)
        return;
    const int cells = FIRN_BIN * FIRN_BIN * FIRN_BIN, bin = b.key_sorted[k] / cells;
    if (k == 0 || b.key_sorted[k - 1] / cells != bin)
        b.start[bin] = k;
    if (k == n - 1 || b.key_sorted[k + 1] / cells != bin)
        b.end[bin] = k + 1;
}

/* The list of bins that hold particles, step 1: with the counting sort,
 * each bin's range from the scan (its first cell's first place, the next
 * bin's first cell's); with either sort, whether the bin holds particles. */
static __global__ void bin_flags(firn_mpm_bins b)
{
    const int bin = blockIdx.x * blockDim.x + threadIdx.x;
    if (bin >= b.count)
        return;
    if (b.counting) {
        const int cells = FIRN_BIN * FIRN_BIN * FIRN_BIN;
        b.start[bin] = b.coff[bin * cells];
        b.end[bin] = b.coff[(bin + 1) * cells];
    }
    b.bflag[bin] = b.start[bin] < b.end[bin];
}

/* Step 2, after CUB's exclusive scan of the flags: the list, in bin
 * order, and its length. */
static __global__ void bin_list(firn_mpm_bins b)
{
    const int bin = blockIdx.x * blockDim.x + threadIdx.x;
    if (bin >= b.count)
        return;
    if (b.bflag[bin])
        b.blist[b.boff[bin]] = bin;
    if (bin == b.count - 1)
        *b.nbins = b.boff[bin] + b.bflag[bin];
}

/* Ordered P2G, step 3: each key's (cell's) range in the sorted order;
 * keys no particle has keep the memset's start = end = 0. */
static __global__ void cell_ranges(int n, firn_mpm_bins b)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n)
        return;
    const int key = b.key_sorted[k];
    if (k == 0 || b.key_sorted[k - 1] != key)
        b.cstart[key] = k;
    if (k == n - 1 || b.key_sorted[k + 1] != key)
        b.cend[key] = k + 1;
}

/* The physical reorder (FIRN_P2G_REORDER, firn_device_reorder): after a
 * substep's binning, the particle arrays themselves are put in the bin
 * order, so that binned P2G and G2P2G read a bin's particles k = lo..hi
 * from consecutive slots rather than through b.order. Particle field f's
 * component c of slot k moves between two blocks of one layout
 * (firn_particle_layout). */
static __device__ void particle_move(const firn_particles &dst, int j, const firn_particles &src,
                                     int i)
{
    const int n = src.n;
    for (int c = 0; c < 3; c++) {
        dst.x[c * n + j] = src.x[c * n + i];
        dst.v[c * n + j] = src.v[c * n + i];
    }
    for (int c = 0; c < 9; c++) {
        dst.C[c * n + j] = src.C[c * n + i];
        dst.F[c * n + j] = src.F[c * n + i];
    }
    dst.Jp[j] = src.Jp[i];
    dst.damage[j] = src.damage[i];
    dst.vol[j] = src.vol[i];
    dst.mat[j] = src.mat[i];
    for (int c = 0; c < src.cpic_slots; c++)
        dst.cpic[c * n + j] = src.cpic[c * n + i];
}

/* Step 1: slot k of the scratch block q takes the particle at b.order[k],
 * and its index in the scene's order. */
static __global__ void reorder_gather(firn_particles p, firn_particles q, const int *id, int *id_q,
                                      firn_mpm_bins b)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= p.n)
        return;
    const int i = b.order[k];
    particle_move(q, k, p, i);
    id_q[k] = id[i];
}

/* Step 2: back into the particle block (whose pointers the kernels and the
 * captured graphs hold), and the bin order is now the identity. */
static __global__ void reorder_commit(firn_particles p, firn_particles q, int *id, const int *id_q,
                                      firn_mpm_bins b)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= p.n)
        return;
    particle_move(p, k, q, k);
    id[k] = id_q[k];
    b.order[k] = k;
}

/* Downloads with the reorder on: slot k's particle back to its original
 * index id[k] in the scratch block, which the host copy then reads. */
static __global__ void reorder_scatter(firn_particles p, firn_particles q, const int *id)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= p.n)
        return;
    particle_move(q, id[k], p, k);
}

/* Uploads: the particles are in the original order. */
static __global__ void reorder_identity(int n, int *id)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n)
        id[k] = k;
}

/* Step 4: the constitutive update of the particle at sorted position k (as
 * p2g) and its scatter state, stored at k. */
static __global__ void p2g_order_prepare(firn_params P, const firn_material *mats, firn_particles p,
                                         firn_mpm_bins b)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= p.n)
        return;
    const int i = b.order[k], n = p.n;
    const firn_p2g_state st = firn_p2g_prepare(i, &P, mats, p);
    float *q = b.ps;
    for (int c = 0; c < 9; c++)
        q[firn_soa_index(c, n, k)] = st.affine.m[c];
    for (int c = 0; c < 3; c++) {
        q[firn_soa_index(9 + c, n, k)] = st.mv.v[c];
        q[firn_soa_index(13 + c, n, k)] = p.x[firn_soa_index(c, n, i)];
    }
    q[firn_soa_index(12, n, k)] = st.mass;
}

/* Ordered P2G (--p2g ordered, the deterministic mode): one thread per grid
 * node gathers what the particles whose stencils reach it scatter - the
 * particles of the 27 cells whose stencil corner is the node minus (a, b,
 * c), a, b, c in 0..2 - in a fixed order (a, b, c, then the stable sorted
 * order, which is by particle index within a cell), and writes the node
 * without atomics. So a run gives the same bits every time, whatever the
 * threads' timing; the node's sum is added in another order than the
 * atomic variants' (and the CPU's), so it differs from them by float
 * rounding. Cost: the sort of the binned variants, 64 bytes a particle
 * written and read back 27 times (from cache), 27 range lookups a node. */
static __device__ void ordered_node(const firn_params &P, const firn_particles &p,
                                    const firn_grid &g, const firn_mpm_bins &b, long long node)
{
    const int n = p.n;
    const int x[3] = {(int)(node / ((long long)g.n[1] * g.n[2])), (int)(node / g.n[2] % g.n[1]),
                      (int)(node % g.n[2])};
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int a = 0; a < 3; a++)
        for (int bb = 0; bb < 3; bb++)
            for (int c = 0; c < 3; c++) {
                const int o[3] = {x[0] - a, x[1] - bb, x[2] - c};
                int inside = 1;
                for (int d = 0; d < 3; d++)
                    inside &= o[d] >= 0 && o[d] <= g.n[d] - 3;
                if (!inside)
                    continue;
                const int bin =
                    ((o[0] / FIRN_BIN) * b.n[1] + o[1] / FIRN_BIN) * b.n[2] + o[2] / FIRN_BIN;
                const int cell =
                    ((o[0] % FIRN_BIN) * FIRN_BIN + o[1] % FIRN_BIN) * FIRN_BIN + o[2] % FIRN_BIN;
                const int key = bin * FIRN_BIN * FIRN_BIN * FIRN_BIN + cell;
                for (int k = b.cstart[key]; k < b.cend[key]; k++) {
                    const float *q = b.ps;
                    firn_p2g_state st;
                    for (int e = 0; e < 9; e++)
                        st.affine.m[e] = q[firn_soa_index(e, n, k)];
                    st.mv = firn_load3(q + firn_soa_index(9, n, 0), n, k);
                    st.mass = q[firn_soa_index(12, n, k)];
                    /* The corner is the key's cell (firn_stencil_at). */
                    st.s = firn_stencil_at(&P, firn_load3(q + firn_soa_index(13, n, 0), n, k), o);
                    firn_vec3 col[3];
                    const firn_vec3 m0 = firn_p2g_middle(&P, &st, col);
                    float v[4];
                    firn_p2g_node_value(&st, m0, col, a, bb, c, v);
                    for (int e = 0; e < 4; e++)
                        acc[e] += v[e];
                }
            }
    for (int e = 0; e < 4; e++)
        g.node[4 * node + e] = acc[e];
}

static __global__ void p2g_ordered(firn_params P, firn_particles p, firn_grid g, firn_mpm_bins b)
{
    const long long node = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (node < g.nodes)
        ordered_node(P, p, g, b, node);
}

/* ---- sparse grid ---------------------------------------------------------- */

/* Node block t (4^3 nodes from 4 t per axis) is reached this substep when
 * a bin t + d, d in {-1, 0, 1}^3, has particles: a bin's stencil corners are
 * its 4^3 cells, or on a GPU a cell beyond them (P2G may floor a corner at a
 * cell face to the next cell from the one bin_keys found, firn_tile_slot),
 * and a stencil reaches two nodes past its corner. */
static __global__ void block_touched(firn_mpm_bins b)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= b.nblocks)
        return;
    const int x = t / (b.nb[1] * b.nb[2]), y = t / b.nb[2] % b.nb[1], z = t % b.nb[2];
    int touched = 0;
    for (int d = 0; d < 27; d++) {
        const int bx = x + d / 9 - 1, by = y + d / 3 % 3 - 1, bz = z + d % 3 - 1;
        if (bx < 0 || by < 0 || bz < 0 || bx >= b.n[0] || by >= b.n[1] || bz >= b.n[2])
            continue;
        const int bin = (bx * b.n[1] + by) * b.n[2] + bz;
        touched |= b.start[bin] < b.end[bin];
    }
    b.flag[t] = touched;
}

/* After CUB's exclusive scan of the flags: the list of reached blocks, in
 * block order, and its length. */
static __global__ void block_list(firn_mpm_bins b)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= b.nblocks)
        return;
    if (b.flag[t])
        b.list[b.offset[t]] = t;
    if (t == b.nblocks - 1)
        *b.nlisted = b.offset[t] + b.flag[t];
}

/* Node `lane` (0 .. 63) of the listed block `item`, or -1 past the grid's
 * end. */
static __device__ long long block_node(const firn_mpm_bins &b, const firn_grid &g, int item,
                                       int lane)
{
    const int t = b.list[item];
    const int x = t / (b.nb[1] * b.nb[2]) * 4 + lane / 16,
              y = t / b.nb[2] % b.nb[1] * 4 + lane / 4 % 4, z = t % b.nb[2] * 4 + lane % 4;
    if (x >= g.n[0] || y >= g.n[1] || z >= g.n[2])
        return -1;
    return firn_node_index(g.n, x, y, z);
}

/* The listed blocks' nodes zeroed (run on the previous substep's list:
 * the grid is then zero everywhere, as a dense clear leaves it). */
static __global__ void sparse_clear(firn_mpm_bins b, firn_grid g)
{
    for (int item = blockIdx.x; item < *b.nlisted; item += gridDim.x) {
        const long long node = block_node(b, g, item, threadIdx.x);
        if (node >= 0)
            for (int c = 0; c < 4; c++)
                g.node[4 * node + c] = 0.0f;
    }
}

static __global__ void sparse_update(firn_params P, firn_mpm_bins b, firn_grid g)
{
    for (int item = blockIdx.x; item < *b.nlisted; item += gridDim.x) {
        const long long node = block_node(b, g, item, threadIdx.x);
        if (node >= 0)
            firn_grid_node(node, &P, g);
    }
}

/* Ordered P2G over the listed blocks only. */
static __global__ void p2g_ordered_sparse(firn_params P, firn_particles p, firn_grid g,
                                          firn_mpm_bins b)
{
    for (int item = blockIdx.x; item < *b.nlisted; item += gridDim.x) {
        const long long node = block_node(b, g, item, threadIdx.x);
        if (node >= 0)
            ordered_node(P, p, g, b, node);
    }
}

/* The bin's tile, shared by p2g_binned and p2g_warp: its first node
 * (the bin's first cell), zeroing, the tile slot of the cell a key names
 * (firn_tile_slot gives a stencil's), and the flush of the nodes that
 * received mass into the grid. */
static __device__ void bin_origin(const firn_mpm_bins &b, int bin, int o[3])
{
    o[0] = bin / (b.n[1] * b.n[2]) * FIRN_BIN;
    o[1] = bin / b.n[2] % b.n[1] * FIRN_BIN;
    o[2] = bin % b.n[2] * FIRN_BIN;
}

template <int T, typename V> static __device__ void tile_clear(V *tile)
{
    for (int k = threadIdx.x; k < 4 * T * T * T; k += blockDim.x)
        tile[k] = 0;
}

static __device__ int key_tile_slot(int key)
{
    const int cell = key % (FIRN_BIN * FIRN_BIN * FIRN_BIN);
    return (cell / (FIRN_BIN * FIRN_BIN) * FIRN_TILE + cell / FIRN_BIN % FIRN_BIN) * FIRN_TILE +
           cell % FIRN_BIN;
}

/* The tile is struct-of-arrays, tile[q T^3 + node] for the node's four
 * floats q (momentum, mass): at one atomic, lanes on neighbouring nodes
 * hit neighbouring words (different banks), where four floats per node put
 * lanes one node apart four banks apart (a 4-way bank conflict over 32
 * lanes on 8 consecutive nodes). */
template <int T> static __device__ void tile_flush(const float *tile, const int o[3], firn_grid g)
{
    for (int t = threadIdx.x; t < T * T * T; t += blockDim.x) {
        const float q[4] = {tile[t], tile[T * T * T + t], tile[2 * T * T * T + t],
                            tile[3 * T * T * T + t]};
        if (q[3] == 0.0f) /* no particle's stencil reached it (or outside the grid) */
            continue;
        float *d =
            g.node + 4 * firn_node_index(g.n, o[0] + t / (T * T), o[1] + t / T % T, o[2] + t % T);
        firn_atomic_add_node(d, q, FIRN_NODE_GLOBAL);
    }
}

/* A particle's scatter into the tile (firn_p2g_scatter_into's values, the
 * tile's layout above), its stencil's corner node at slot t. */
template <int T>
static __device__ void tile_scatter(const firn_params *P, float *tile, int t,
                                    const firn_p2g_state *st)
{
    firn_vec3 col[3];
    const firn_vec3 m0 = firn_p2g_middle(P, st, col);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++) {
                float v[4];
                firn_p2g_node_value(st, m0, col, a, b, c, v);
                const int node = t + (a * T + b) * T + c;
                for (int q = 0; q < 4; q++)
                    atomicAdd(tile + q * T * T * T + node, v[q]);
            }
}

/* The tile in 32-bit fixed point (p2g_binned_fixed, g2p2g_fixed; chosen
 * by firn_device_fixed_tile). A float atomicAdd on shared memory is a
 * compare-and-swap loop on sm_80 and sm_90 (load, add, ATOMS.CAST.SPIN,
 * branch, again while another lane won); an integer add is one native
 * ATOMS.ADD. Each value a particle adds to a node is scaled by 1 / q and
 * rounded to the nearest integer, the tile's integers are summed exactly,
 * and the flush adds integer times q to the grid.
 *
 * The quanta, per bin of n particles, n' = max(n, 256), L = 2^30 (1 -
 * 2^-10) / n':
 *   q_m = n' W m_max / 2^29 for mass,  q_p = 2 W B / L for momentum,
 * W = (3/4)^3 the largest of the quadratic B-spline's 27 weights, m_max
 * the heaviest particle's mass (firn_mpm_bins.mass_max), and B the largest
 * momentum bound B_i of the bin's particles in the previous substep
 * (firn_mpm_bins.bound), where B_i = max over the components of
 * |m0| + |col0| + |col1| + |col2| bounds particle i's 27 momenta over W.
 * A particle's values go into the tile only when each is at most L quanta
 * (tile_scatter_fixed bounds them first): its masses always are (w m <= W
 * m_max = 2^29 / n' quanta), its momenta while B_i <= 2 B, so a bin's
 * particles may double their momentum bound from one substep to the next.
 * A particle with larger values, or non-finite ones, scatters into the
 * grid as floats, as atomic P2G does, and so does every particle of a bin
 * without a bound (the first substep after the state is built, a bin its
 * particles reach for the first time, a bound gone non-finite), which
 * records one for the next. So q_p follows the bin's own momenta: a
 * fixed scale (a cell a substep) would be 100 to 1000 times coarser than
 * sand's momenta at the CFL substep. A bin's bound stays from the last
 * substep that had particles in it.
 *
 * Range: a node of the tile receives at most one value per particle of the
 * bin, so every partial sum of its integers is below n (L + 1/2) <= 2^30 +
 * n / 2 < 2^31 in magnitude: no sum can overflow, whatever the order.
 * Rounding: each value is v / q rounded once (one fused multiply-add, see
 * below) and moves by at most q / 2 plus the float rounding of v itself,
 * so a node's sum of N values is within N q / 2 + 2^-23 sum |v| of their
 * exact sum; the flush's conversion to float adds two more roundings of
 * the result (test gpu/fixed_tile_within_its_bound, docs/BENCH.md).
 * n' >= 256 keeps every scaled value within 2^22, where adding 1.5 2^23
 * in the same fused multiply-add leaves the rounded integer in the float's
 * low mantissa bits: the conversion is an FFMA and an integer add, where
 * F2I runs at a quarter of the rate. */
struct fixed_scale {
    float qp, qm;         /* the quanta: momentum, mass */
    float inv_qp, inv_qm; /* 1 / q */
    float lim;            /* L: the largest scaled value that goes into the tile */
    int most;             /* the bin's largest B_i so far, a float's bits (>= 0) */
};
#define FIRN_FIXED_WMAX  0.421875f   /* (3/4)^3 */
#define FIRN_FIXED_MAGIC 12582912.0f /* 1.5 2^23 */
#define FIRN_FIXED_BIAS  0x4B400000  /* its bits */
static __device__ fixed_scale fixed_scale_of(const firn_mpm_bins &b, int n, int bin)
{
    const float ne = (float)(n > 256 ? n : 256);
    fixed_scale f;
    f.lim = (1073741824.0f - 1048576.0f) / ne;                 /* 2^30 (1 - 2^-10) */
    f.qm = ne * (FIRN_FIXED_WMAX / 536870912.0f) * b.mass_max; /* 2^29 */
    const float B = b.bound[bin];
    f.qp = 2.0f * FIRN_FIXED_WMAX * B / f.lim;
    if (!(B > 0.0f && B < INFINITY)) { /* no bound yet: every particle scatters as floats */
        f.lim = -1.0f;
        f.qp = 1.0f;
    }
    f.inv_qp = 1.0f / f.qp;
    f.inv_qm = 1.0f / f.qm;
    f.most = 0;
    return f;
}

/* round(a b) for |a b| <= 2^22: the fused a b + 1.5 2^23 lies in
 * [2^23, 2^24], where floats are the integers, rounded once to the nearest
 * (ties to even), and its bits less those of 1.5 2^23 are that integer. */
static __device__ __forceinline__ int fixed_round(float a, float b)
{
    return __float_as_int(fmaf(a, b, FIRN_FIXED_MAGIC)) - FIRN_FIXED_BIAS;
}

/* A particle's scatter into the fixed-point tile (tile_scatter's values,
 * w (m0 + (a - 1) col0 + (b - 1) col1 + (c - 1) col2) and w m, with w / q
 * taken first), when every value fits: w <= W, so W (|m0| + |col0| +
 * |col1| + |col2|) per component and W m bound them. Returns 0, adding
 * nothing, when they do not fit or are not finite: the caller scatters the
 * particle into the grid as floats. most: the thread's largest B_i so far
 * (fixed_bound_record). One test per particle, not per value:
 * a branch per value made each value's add a dozen instructions (the
 * branch, its reconvergence and the shared window's address again), more
 * than the float loop it replaces. */
template <int T>
static __device__ __forceinline__ int tile_scatter_fixed(const firn_params *P, int *tile, int t,
                                                         const firn_p2g_state *st,
                                                         const fixed_scale &f, float &most)
{
    firn_vec3 col[3];
    const firn_vec3 m0 = firn_p2g_middle(P, st, col);
    const float lim = f.lim, inv_qp = f.inv_qp, inv_qm = f.inv_qm;
    float B = 0.0f;
    for (int q = 0; q < 3; q++)
        B = fmaxf(B, fabsf(m0.v[q]) + fabsf(col[0].v[q]) + fabsf(col[1].v[q]) + fabsf(col[2].v[q]));
    if (B != B)
        B = INFINITY; /* fmaxf drops a NaN: the bin's bound goes infinite, then unset */
    most = fmaxf(most, B);
    if (!(FIRN_FIXED_WMAX * st->mass * inv_qm <= lim && FIRN_FIXED_WMAX * inv_qp * B <= lim))
        return 0;
    const firn_stencil *s = &st->s;
    const float mq = st->mass * inv_qm;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            const firn_vec3 ma = firn_add(m0, firn_scale(col[0], (float)(a - 1)));
            const firn_vec3 mab = firn_add(ma, firn_scale(col[1], (float)(b - 1)));
            for (int c = 0; c < 3; c++) {
                const float w = s->w[a][0] * s->w[b][1] * s->w[c][2];
                const float wp = w * inv_qp;
                const int node = t + (a * T + b) * T + c;
                for (int q = 0; q < 3; q++)
                    atomicAdd(tile + q * T * T * T + node,
                              fixed_round(wp, mab.v[q] + (float)(c - 1) * col[2].v[q]));
                atomicAdd(tile + 3 * T * T * T + node, fixed_round(w, mq));
            }
        }
    return 1;
}

/* After a bin's scatter, every thread of the block: the threads' largest
 * B_i, reduced over each warp by shuffles, into the block's (one shared
 * atomic a warp, not one a particle). */
static __device__ __forceinline__ void fixed_bound_record(fixed_scale *fs, float most)
{
    for (int d = 16; d > 0; d /= 2)
        most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, d));
    if ((threadIdx.x & 31) == 0)
        atomicMax(&fs->most, __float_as_int(most)); /* most >= 0: its bits order as it does */
}

/* The fixed-point tile's flush: each node that received anything, its
 * integers times the quanta, added to the grid as tile_flush does. */
template <int T>
static __device__ void tile_flush_fixed(const int *tile, const int o[3], firn_grid g,
                                        const fixed_scale &f)
{
    for (int t = threadIdx.x; t < T * T * T; t += blockDim.x) {
        const int q[4] = {tile[t], tile[T * T * T + t], tile[2 * T * T * T + t],
                          tile[3 * T * T * T + t]};
        if ((q[0] | q[1] | q[2] | q[3]) == 0)
            continue;
        const float v[4] = {(float)q[0] * f.qp, (float)q[1] * f.qp, (float)q[2] * f.qp,
                            (float)q[3] * f.qm};
        float *d =
            g.node + 4 * firn_node_index(g.n, o[0] + t / (T * T), o[1] + t / T % T, o[2] + t % T);
        firn_atomic_add_node(d, v, FIRN_NODE_GLOBAL);
    }
}

/* Which of a bin's n particles (sorted by cell, about 8 a cell in dense
 * sand) thread j of the bin's loop takes: the lanes of a warp take
 * particles ceil(n / 32) apart in the order (lane l runs through its own
 * run of them), so that at each atomic they are in different cells and hit
 * different tile nodes. Consecutive lanes on consecutive particles put the
 * ~8 of a cell on the same 27 nodes at once, and a shared float atomic,
 * a compare-and-swap loop, passes once per lane on an address. -1: past
 * the bin's end (the last run is short). Threads run j up to
 * bin_lanes(n). */
static __device__ int bin_lane_particle(int j, int n)
{
    const int run = (n + 31) / 32, k = (j % 32) * run + j / 32;
    return k < n ? k : -1;
}
static __device__ int bin_lanes(int n) { return 32 * ((n + 31) / 32); }

/* Binned P2G: one thread block per bin. Its threads run the constitutive
 * update of the bin's particles (firn_p2g_prepare, as p2g) and scatter into
 * a tile of the FIRN_TILE^3 nodes the bin's stencils reach, in shared
 * memory (shared-memory atomics, fast and uncontended beside global ones);
 * then the tile's nodes that received mass are added to the grid, one
 * global atomic per node for the whole bin (a vector atomic of its four
 * floats on sm_90, four scalar ones before; firn_atomic_add_node) instead
 * of one per particle. On dense sand (8 particles a cell, 512 a bin) that
 * is 0.4 global atomics a particle (1.7 scalar ones before sm_90) instead
 * of atomic P2G's 27 (108), and the particles of one bin read neighbouring
 * grid lines. The blocks run through the list of the bins that hold
 * particles (bin_list; bin_blocks of them, fewer than the bins on a large
 * grid), not one block per bin. The lanes of a warp take
 * particles of different cells (bin_lane_particle). The blocks a
 * multiprocessor holds at least: min_blocks (without a bound the lane
 * order's indexing took the kernel to 96 registers and five blocks,
 * docs/BENCH_LOG.md, "Shared-atomic conflicts"). */
template <int MODEL, typename V>
static __device__ __forceinline__ void binned_p2g(const firn_params &P, const firn_material *mats,
                                                  firn_particles p, firn_grid g,
                                                  const firn_mpm_bins &b, V *tile, fixed_scale *fs)
{
    for (int item = blockIdx.x; item < *b.nbins; item += gridDim.x) {
        const int bin = b.blist[item], lo = b.start[bin], hi = b.end[bin];
        int o[3];
        bin_origin(b, bin, o);
        if (std::is_same<V, int>::value && threadIdx.x == 0)
            *fs = fixed_scale_of(b, hi - lo, bin);
        tile_clear<FIRN_TILE>(tile);
        __syncthreads();
        float most = 0.0f; /* the fixed-point tile's largest B_i of this thread's particles */
        for (int j = threadIdx.x; j < bin_lanes(hi - lo); j += blockDim.x) {
            const int k = bin_lane_particle(j, hi - lo);
            if (k < 0)
                continue;
            const firn_p2g_state st = firn_p2g_prepare_as(b.order[lo + k], &P, mats, p, MODEL);
            const int t = firn_tile_slot(&st.s, o, FIRN_TILE);
            /* t < 0: a stencil corner outside the bin its key names (bin_keys) */
            if constexpr (std::is_same<V, int>::value) {
                if (t < 0 || !tile_scatter_fixed<FIRN_TILE>(&P, tile, t, &st, *fs, most))
                    firn_p2g_scatter_nodes(&P, g, &st, 0u);
            } else if (t < 0) {
                firn_p2g_scatter_nodes(&P, g, &st, 0u);
            } else {
                tile_scatter<FIRN_TILE>(&P, tile, t, &st);
            }
        }
        if constexpr (std::is_same<V, int>::value)
            fixed_bound_record(fs, most);
        else
            (void)most;
        __syncthreads();
        if constexpr (std::is_same<V, int>::value) {
            tile_flush_fixed<FIRN_TILE>(tile, o, g, *fs);
            if (threadIdx.x == 0)
                b.bound[bin] = __int_as_float(fs->most);
        } else
            tile_flush<FIRN_TILE>(tile, o, g);
        __syncthreads(); /* the flush has read the tile before the next bin clears it */
    }
}

template <int MODEL>
static __global__ void __launch_bounds__(FIRN_BIN_THREADS, min_blocks(FIRN_K_BINNED, MODEL))
    p2g_binned(firn_params P, const firn_material *mats, firn_particles p, firn_grid g,
               firn_mpm_bins b)
{
    __shared__ float tile[4 * FIRN_TILE * FIRN_TILE * FIRN_TILE];
    binned_p2g<MODEL>(P, mats, p, g, b, tile, (fixed_scale *)nullptr);
}

/* Binned P2G with the tile in 32-bit fixed point (tile_scatter_fixed). */
template <int MODEL>
static __global__ void __launch_bounds__(FIRN_BIN_THREADS, min_blocks(FIRN_K_BINNED, MODEL))
    p2g_binned_fixed(firn_params P, const firn_material *mats, firn_particles p, firn_grid g,
                     firn_mpm_bins b)
{
    __shared__ int tile[4 * FIRN_TILE * FIRN_TILE * FIRN_TILE];
    __shared__ fixed_scale fs; /* the bin's, in shared memory: fewer registers */
    binned_p2g<MODEL>(P, mats, p, g, b, tile, &fs);
}

/* P2G with a warp reduction (--p2g warp): as p2g_binned, but the lanes of a
 * warp that hold particles of one cell (consecutive: the order is by cell
 * within a bin) share all 27 stencil nodes, so each node's four values are
 * summed across them with shuffles first (a segmented reduction over runs
 * of equal keys, Gao et al. 2018), and only the first lane of each run adds
 * them to the tile. On dense sand (8 particles a cell) that is an eighth of
 * p2g_binned's shared-memory atomics, each free of the other lanes of its
 * cell, at the cost of a few shuffles per value. The block's loop runs the
 * same number of rounds in every warp; lanes past the bin's end take part
 * in the shuffles with zeros, each a run of its own. So does a lane whose
 * stencil corner is not in the cell its key names (bin_keys): it adds its
 * own values to the tile, or when the tile does not hold its stencil
 * scatters straight into the grid and shuffles zeros. */
template <int MODEL>
static __global__ void __launch_bounds__(FIRN_BIN_THREADS, min_blocks(FIRN_K_WARP, MODEL))
    p2g_warp(firn_params P, const firn_material *mats, firn_particles p, firn_grid g,
             firn_mpm_bins b)
{
    __shared__ float tile[4 * FIRN_TILE * FIRN_TILE * FIRN_TILE];
    for (int item = blockIdx.x; item < *b.nbins; item += gridDim.x) {
        const int bin = b.blist[item], lo = b.start[bin], hi = b.end[bin];
        int o[3];
        bin_origin(b, bin, o);
        const unsigned all = 0xffffffffu;
        const int lane = threadIdx.x & 31;
        tile_clear<FIRN_TILE>(tile);
        __syncthreads();
        for (int first = lo; first < hi; first += blockDim.x) {
            if (first + (int)(threadIdx.x & ~31u) >= hi)
                continue; /* the whole warp is past the bin's end */
            const int k = first + threadIdx.x, valid = k < hi;
            int key = valid ? b.key_sorted[k] : -1 - lane;
            firn_p2g_state st;
            firn_vec3 col[3], m0 = firn_v3(0.0f, 0.0f, 0.0f);
            int t = -1;
            if (valid) {
                st = firn_p2g_prepare_as(b.order[k], &P, mats, p, MODEL);
                m0 = firn_p2g_middle(&P, &st, col);
                t = firn_tile_slot(&st.s, o, FIRN_TILE);
                if (t != key_tile_slot(key))
                    key = -1 - lane; /* not its key's cell: a run of its own */
                if (t < 0)
                    firn_p2g_scatter_nodes(&P, g, &st, 0u);
            }
            const int into = t >= 0; /* this lane's values go into the tile */
            /* This lane's run of equal keys: it ends at the lowest lane at or
             * above this one whose successor differs; it starts where the
             * predecessor differs. The longest run bounds the shuffle steps. */
            const int next = __shfl_down_sync(all, key, 1), prev = __shfl_up_sync(all, key, 1);
            const unsigned ends = __ballot_sync(all, lane == 31 || next != key);
            const int last = lane + __ffs((int)(ends >> lane)) - 1;
            const int head = lane == 0 || prev != key;
            int span = last - lane + 1;
            for (int d = 16; d > 0; d /= 2) {
                const int other = __shfl_xor_sync(all, span, d);
                span = other > span ? other : span;
            }
            for (int a = 0; a < 3; a++)
                for (int bb = 0; bb < 3; bb++)
                    for (int c = 0; c < 3; c++) {
                        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                        if (into)
                            firn_p2g_node_value(&st, m0, col, a, bb, c, v);
                        for (int q = 0; q < 4; q++) {
                            for (int d = 1; d < span; d *= 2) {
                                const float w = __shfl_down_sync(all, v[q], d);
                                if (lane + d <= last)
                                    v[q] += w;
                            }
                            if (head && into)
                                atomicAdd(tile + q * FIRN_TILE * FIRN_TILE * FIRN_TILE +
                                              (t + (a * FIRN_TILE + bb) * FIRN_TILE + c),
                                          v[q]);
                        }
                    }
        }
        __syncthreads();
        tile_flush<FIRN_TILE>(tile, o, g);
        __syncthreads(); /* the flush has read the tile before the next bin clears it */
    }
}

/* G2P2G (--p2g g2p2g): substep k's G2P and substep k + 1's P2G in one
 * kernel, as Claymore fuses them (Wang et al. 2020). One thread block per
 * bin of the positions before G2P (the bins substep k's P2G used, or built
 * after the last fused kernel): each thread gathers its particle's velocity
 * and affine velocity from grid `from` (substep k's, updated), advects it,
 * stores x (v and C are stored by the call's last G2P only: nothing reads
 * them in between), runs the constitutive update from those values in
 * registers (firn_g2p2g_particle) and scatters into an FIRN_FTILE^3 tile
 * one cell wider than p2g_binned's on each side, which the particle's new
 * stencil lies in when it moved at most a cell; a particle that moved
 * further (a substep beyond the CFL limit) scatters straight into the grid.
 * The tile is then added to grid `to` (substep k + 1's, cleared) as in
 * p2g_binned. What fusion saves: the launch, P2G's reads of x, v and C
 * and G2P's writes of v and C (108 of the 225 bytes a particle moves in a
 * substep, docs/BENCH.md). */
template <int MODEL, typename V>
static __device__ __forceinline__ void
fused_g2p2g(const firn_params &P, const firn_material *mats, firn_particles p, firn_grid from,
            firn_grid to, const firn_mpm_bins &b, unsigned long long *bad, unsigned substep,
            V *tile, int &next, fixed_scale *fs)
{
    if (threadIdx.x == 0)
        next = blockIdx.x;
    __syncthreads();
    while (next < *b.nbins) {
        const int bin = b.blist[next], lo = b.start[bin], hi = b.end[bin];
        int o[3];
        bin_origin(b, bin, o);
        for (int a = 0; a < 3; a++)
            o[a] -= 1; /* the tile starts a cell below the bin */
        if (std::is_same<V, int>::value && threadIdx.x == 0)
            *fs = fixed_scale_of(b, hi - lo, bin);
        tile_clear<FIRN_FTILE>(tile);
        __syncthreads();
        float most = 0.0f; /* the fixed-point tile's largest B_i of this thread's particles */
        for (int j = threadIdx.x; j < bin_lanes(hi - lo); j += blockDim.x) {
            const int k = bin_lane_particle(j, hi - lo);
            if (k < 0)
                continue;
            const int i = b.order[lo + k];
            int nonfinite;
            const firn_p2g_state st =
                firn_g2p2g_particle_as(i, &P, mats, p, from, &nonfinite, MODEL);
            if (nonfinite)
                atomicMin(bad, firn_cuda_bad_word(substep, b.id ? b.id[i] : i));
            const int t = firn_tile_slot(&st.s, o, FIRN_FTILE);
            if constexpr (std::is_same<V, int>::value) {
                if (t < 0 || !tile_scatter_fixed<FIRN_FTILE>(&P, tile, t, &st, *fs, most))
                    firn_p2g_scatter_nodes(&P, to, &st, 0u);
            } else if (t < 0) {
                firn_p2g_scatter_nodes(&P, to, &st, 0u);
            } else {
                tile_scatter<FIRN_FTILE>(&P, tile, t, &st);
            }
        }
        if constexpr (std::is_same<V, int>::value)
            fixed_bound_record(fs, most);
        else
            (void)most;
        __syncthreads();
        if constexpr (std::is_same<V, int>::value) {
            tile_flush_fixed<FIRN_FTILE>(tile, o, to, *fs);
            if (threadIdx.x == 0)
                b.bound[bin] = __int_as_float(fs->most);
        } else
            tile_flush<FIRN_FTILE>(tile, o, to);
        __syncthreads(); /* the flush has read the tile before the next bin clears it */
        if (threadIdx.x == 0)
            next += gridDim.x;
        __syncthreads();
    }
}

template <int MODEL>
static __global__ void __launch_bounds__(FIRN_BIN_THREADS, min_blocks(FIRN_K_FUSED, MODEL))
    g2p2g(firn_params P, const firn_material *mats, firn_particles p, firn_grid from, firn_grid to,
          firn_mpm_bins b, unsigned long long *bad, unsigned substep)
{
    __shared__ float tile[4 * FIRN_FTILE * FIRN_FTILE * FIRN_FTILE];
    /* The list entry the block takes next, in shared memory: as a loop
     * counter in a register it took the kernel past its 80 registers
     * (min_blocks), and nvcc 13.0 spilled the tile's origin. */
    __shared__ int next;
    fused_g2p2g<MODEL>(P, mats, p, from, to, b, bad, substep, tile, next, (fixed_scale *)nullptr);
}

/* G2P2G with the tile in 32-bit fixed point (tile_scatter_fixed). */
template <int MODEL>
static __global__ void __launch_bounds__(FIRN_BIN_THREADS, min_blocks(FIRN_K_FUSED, MODEL))
    g2p2g_fixed(firn_params P, const firn_material *mats, firn_particles p, firn_grid from,
                firn_grid to, firn_mpm_bins b, unsigned long long *bad, unsigned substep)
{
    __shared__ int tile[4 * FIRN_FTILE * FIRN_FTILE * FIRN_FTILE];
    __shared__ int next;
    __shared__ fixed_scale fs;
    fused_g2p2g<MODEL>(P, mats, p, from, to, b, bad, substep, tile, next, &fs);
}

static __global__ void grid_update(firn_params P, firn_grid g)
{
    long long node = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (node < g.nodes)
        firn_grid_node(node, &P, g);
}

/* A non-finite particle is named by its index in the scene's order: with
 * the reorder on, id[i] (the CPU path's report names the lowest). */
static __global__ void g2p(firn_params P, firn_particles p, firn_grid g, unsigned long long *bad,
                           unsigned substep, const int *id)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n && firn_g2p_particle(i, &P, p, g))
        atomicMin(bad, firn_cuda_bad_word(substep, id ? id[i] : i));
}

/* Reduction input per particle: (|v|^2, firn_wave_speed2). */
struct speed_wave {
    firn_particles p;
    const firn_material *mats;
    __device__ float2 operator()(int i) const
    {
        const int n = p.n;
        const firn_vec3 v = firn_load3(p.v, n, i);
        const float vx = v.v[0], vy = v.v[1], vz = v.v[2];
        return make_float2(vx * vx + vy * vy + vz * vz, firn_wave_speed2(&mats[p.mat[i]], p.Jp[i]));
    }
};

struct max2 {
    __device__ float2 operator()(float2 a, float2 b) const
    {
        return make_float2(fmaxf(a.x, b.x), fmaxf(a.y, b.y));
    }
};

/* Both maxima start from 0, as the CPU loop in world.c. */
static const float2 reduce_init = {0.0f, 0.0f};

static cudaError_t reduce_launch(firn_cuda_state *s, void *temp, size_t &temp_bytes)
{
    speed_wave op = {s->p, s->mats};
    return cub::DeviceReduce::TransformReduce(temp, temp_bytes, thrust::counting_iterator<int>(0),
                                              s->red_out, s->p.n, max2(), op, reduce_init,
                                              s->stream);
}

static cudaError_t bin_sort(firn_cuda_state *s, void *temp, size_t &temp_bytes)
{
    firn_mpm_bins &b = s->bins;
    return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, b.key, b.key_sorted, b.ids, b.order,
                                           s->p.n, 0, b.end_bit, s->stream);
}

/* The counting sort's scan of the per-key counts (cells + 1 entries, the
 * last 0: its sum, n, closes the last key's range). */
static cudaError_t key_scan(firn_cuda_state *s, void *temp, size_t &temp_bytes)
{
    firn_mpm_bins &b = s->bins;
    return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, b.ccount, b.coff,
                                         b.count * FIRN_BIN * FIRN_BIN * FIRN_BIN + 1, s->stream);
}

/* The scan of the bins' flags for their list. */
static cudaError_t bin_scan(firn_cuda_state *s, void *temp, size_t &temp_bytes)
{
    firn_mpm_bins &b = s->bins;
    return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, b.bflag, b.boff, b.count, s->stream);
}

/* Blocks of a binned P2G kernel (p2g_binned, p2g_warp, g2p2g), which run
 * through the list of bins that hold particles: a block per bin up to
 * FIRN_BIN_GRID, each taking every FIRN_BIN_GRID-th listed bin past that.
 * The list's length is on the device (no host round trip, and a captured
 * graph stays valid), so the grid is sized for the worst case, every bin
 * listed, and capped: at 8M particles of dense sand about 16k of 125k bins
 * hold particles, four a block. 4096 is not measured: enough for several
 * waves on any GPU (an H200 holds about 800 of these blocks at once). */
#define FIRN_BIN_GRID 4096
static unsigned bin_blocks(const firn_mpm_bins &b)
{
    const int cap = b.grid > 0 ? b.grid : FIRN_BIN_GRID;
    return (unsigned)(b.count < cap ? b.count : cap);
}

static cudaError_t block_scan(firn_cuda_state *s, void *temp, size_t &temp_bytes)
{
    firn_mpm_bins &b = s->bins;
    return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, b.flag, b.offset, b.nblocks, s->stream);
}

/* Blocks of a sparse kernel: enough for the listed blocks on any GPU
 * (each loops over the list), few enough that a short list costs little. */
static unsigned sparse_blocks(const firn_mpm_bins &b)
{
    return (unsigned)(b.nblocks < 4096 ? b.nblocks : 4096);
}

/* Binned P2G's layout: bins of FIRN_BIN^3 cells over the stencil corners
 * (0 .. n - 3 per axis). */
static void bins_layout(const firn_world *w, firn_mpm_bins *b)
{
    b->count = 1;
    for (int a = 0; a < 3; a++) {
        b->n[a] = (w->params.n[a] - 3) / FIRN_BIN + 1;
        b->count *= b->n[a];
    }
    b->nblocks = 1; /* the sparse grid's blocks of 4^3 nodes, over every node */
    for (int a = 0; a < 3; a++) {
        b->nb[a] = (w->params.n[a] - 1) / 4 + 1;
        b->nblocks *= b->nb[a];
    }
    const long long keys = (long long)b->count * FIRN_BIN * FIRN_BIN * FIRN_BIN;
    b->end_bit = 1;
    while (b->end_bit < 31 && (1LL << b->end_bit) < keys)
        b->end_bit++;
}

/* Every kernel this file defines, for check_device_memory's stack sizing:
 * the driver reserves a kernel's stack for every thread the GPU holds at
 * its first launch, whichever kernel it is. A kernel added to the file is
 * added here; the GPU tests count the file's __global__ functions against
 * firn_cuda_mpm_kernel_count. */
#define FIRN_MPM_MODEL_KERNELS(k)                                                                  \
    (const void *)k<FIRN_M_ANY>, (const void *)k<FIRN_M_ELASTIC>, (const void *)k<FIRN_M_LIQUID>,  \
        (const void *)k<FIRN_M_SNOW>, (const void *)k<FIRN_M_SAND>,                                \
        (const void *)k<FIRN_M_VON_MISES>, (const void *)k<FIRN_M_FRACTURE>
static_assert(FIRN_MODELS == 6, "FIRN_MPM_MODEL_KERNELS and FIRN_MPM_LAUNCH list every model");
static const void *const mpm_kernels[] = {FIRN_MPM_MODEL_KERNELS(p2g),
                                          (const void *)bin_keys,
                                          (const void *)skew_keys,
                                          (const void *)key_scatter,
                                          (const void *)bin_ranges,
                                          (const void *)bin_flags,
                                          (const void *)bin_list,
                                          (const void *)cell_ranges,
                                          (const void *)reorder_gather,
                                          (const void *)reorder_commit,
                                          (const void *)reorder_scatter,
                                          (const void *)reorder_identity,
                                          (const void *)p2g_order_prepare,
                                          (const void *)p2g_ordered,
                                          (const void *)block_touched,
                                          (const void *)block_list,
                                          (const void *)sparse_clear,
                                          (const void *)sparse_update,
                                          (const void *)p2g_ordered_sparse,
                                          FIRN_MPM_MODEL_KERNELS(p2g_binned),
                                          FIRN_MPM_MODEL_KERNELS(p2g_warp),
                                          FIRN_MPM_MODEL_KERNELS(g2p2g),
                                          FIRN_MPM_MODEL_KERNELS(p2g_binned_fixed),
                                          FIRN_MPM_MODEL_KERNELS(g2p2g_fixed),
                                          (const void *)grid_update,
                                          (const void *)g2p};
#define FIRN_MPM_KERNELS ((int)(sizeof mpm_kernels / sizeof mpm_kernels[0]))

/* For the GPU tests only (declared there): the kernels the table lists,
 * and the instantiations of each template kernel. */
extern "C" int firn_cuda_mpm_kernel_count(void) { return FIRN_MPM_KERNELS; }
extern "C" int firn_cuda_mpm_model_variants(void) { return FIRN_MODELS + 1; }

/* ---- device state --------------------------------------------------------- */

/* Copies the particle arrays of `parts` (FIRN_STALE_*: x and v; the rest,
 * volume and material included) from src to dst (same n) on the stream. */
static int copy_particles(const firn_particles *dst, const firn_particles *src, cudaMemcpyKind kind,
                          cudaStream_t st, int parts, firn_error *err)
{
    const size_t n = (size_t)src->n, f = sizeof(float);
    if (n == 0)
        return 0;
    if (parts & FIRN_STALE_XV) {
        FIRN_CUDA_CHECK(cudaMemcpyAsync(dst->x, src->x, 3 * n * f, kind, st), err);
        FIRN_CUDA_CHECK(cudaMemcpyAsync(dst->v, src->v, 3 * n * f, kind, st), err);
    }
    if (!(parts & FIRN_STALE_REST))
        return 0;
    FIRN_CUDA_CHECK(cudaMemcpyAsync(dst->C, src->C, 9 * n * f, kind, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(dst->F, src->F, 9 * n * f, kind, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(dst->Jp, src->Jp, n * f, kind, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(dst->damage, src->damage, n * f, kind, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(dst->vol, src->vol, n * f, kind, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(dst->mat, src->mat, n, kind, st), err);
    if (src->cpic_slots > 0 && dst->cpic && src->cpic)
        FIRN_CUDA_CHECK(cudaMemcpyAsync(dst->cpic, src->cpic,
                                        (size_t)src->cpic_slots * n * sizeof(uint32_t), kind, st),
                        err);
    return 0;
}

/* Checks that the device state (want bytes) fits in the free device memory
 * before anything is allocated, with the kernels' stack and the driver's
 * allocation rounding. 0, or FIRN_CUDA_FAILED with err filled. */
static int check_device_memory(const firn_world *w, const firn_cuda_state *s, size_t want,
                               firn_error *err)
{
    const int n = w->p.n;
    /* The kernels' stack beyond the default (firn_cuda_room) is counted, so
     * that a scene that passes this check does not fail at their first
     * launch. */
    size_t local = 0;
    if (firn_cuda_local_bytes(mpm_kernels, FIRN_MPM_KERNELS, &local, err) ||
        (w->n_rigids > 0 && firn_cuda_coupling_local_bytes(w->coupler.cpic, &local, err)) ||
        (w->n_tools > 0 && firn_cuda_tool_local_bytes(&local, err)))
        return FIRN_CUDA_FAILED;
    firn_cuda_room r;
    if (firn_cuda_room_for(local, &r, err))
        return FIRN_CUDA_FAILED;
    /* The large allocations below (the particles, the grid and each mesh
     * grid) may each be rounded up to the driver's 2 MiB granularity; the
     * small ones together take at most another 2 MiB. */
    int large = 2;
    for (int k = 0; k < w->n_rigids; k++)
        large += w->rigids[k].shape.type == FIRN_SDF_MESH && w->rigids[k].shape.grid;
    for (int k = 0; k < w->n_tools; k++)
        large += w->tools[k].body.shape.type == FIRN_SDF_MESH && w->tools[k].body.shape.grid;
    const size_t rounding = (size_t)(large + 1) << 21;
    if (want + r.reserve + rounding > r.free_b) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "not enough GPU memory on %s: %zu bytes (%.1f MiB) requested for %d "
                       "particles and a %d x %d x %d grid, %.1f MiB of kernel stack (%zu B "
                       "beyond the default for each of %d x %d threads) and up to %.0f MiB of "
                       "allocation rounding; %zu bytes (%.1f MiB) free of %zu (%.1f MiB); use "
                       "fewer particles, a coarser dx, or --backend cpu",
                       w->device_name, want, (double)want / (1 << 20), n, s->grid.n[0],
                       s->grid.n[1], s->grid.n[2], (double)r.reserve / (1 << 20), r.extra, r.sms,
                       r.threads_per_sm, (double)rounding / (1 << 20), r.free_b,
                       (double)r.free_b / (1 << 20), r.total_b, (double)r.total_b / (1 << 20));
        return FIRN_CUDA_FAILED;
    }
    return 0;
}

/* The device copy of the SDF grid of the mesh shape sh (host memory): made
 * at its first use, once however many bodies and tools share it. */
static int device_mesh_grid(firn_cuda_state *s, const firn_sdf_shape *sh, const float **out,
                            firn_error *err)
{
    for (int j = 0; j < s->n_mesh_grids; j++)
        if (s->mesh_grid_host[j] == sh->grid) {
            *out = s->mesh_grid[j];
            return 0;
        }
    const size_t bytes = 4 * (size_t)sh->n[0] * sh->n[1] * sh->n[2] * sizeof(float);
    float *d = NULL;
    FIRN_CUDA_CHECK(cudaMalloc(&d, bytes), err);
    s->mesh_grid[s->n_mesh_grids] = d;
    s->mesh_grid_host[s->n_mesh_grids++] = sh->grid;
    /* On the world's stream: the legacy stream does not order with a
     * non-blocking one. The host grid outlives the copy. */
    FIRN_CUDA_CHECK(cudaMemcpyAsync(d, sh->grid, bytes, cudaMemcpyHostToDevice, s->stream), err);
    *out = d;
    return 0;
}

/* Points the mesh shape of a staged copy at its device grid; host_grid
 * gets the host one (NULL for an analytic shape). */
static int stage_shape(firn_cuda_state *s, firn_sdf_shape *sh, const float **host_grid,
                       firn_error *err)
{
    *host_grid = NULL;
    if (sh->type != FIRN_SDF_MESH || !sh->grid)
        return 0;
    *host_grid = sh->grid;
    return device_mesh_grid(s, sh, &sh->grid, err);
}

/* Copies n items of size bytes from the host array src, staged with fix
 * applied to each, to the device array dst, and waits (the staging copy
 * is freed after the copy). */
static int upload_staged(firn_cuda_state *s, void *dst, const void *src, int n, size_t size,
                         int (*fix)(firn_cuda_state *, void *, int, firn_error *), firn_error *err)
{
    const size_t bytes = (size_t)n * size;
    char *staged = (char *)malloc(bytes + 1);
    if (!staged) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory");
        return FIRN_CUDA_FAILED;
    }
    memcpy(staged, src, bytes);
    int failed = 0;
    for (int k = 0; k < n && !failed; k++)
        failed = fix(s, staged + (size_t)k * size, k, err) != 0;
    if (!failed)
        failed = FIRN_CUDA_CALL(
            cudaMemcpyAsync(dst, staged, bytes, cudaMemcpyHostToDevice, s->stream), err);
    /* Before staged is freed, whatever was queued. */
    if (failed)
        (void)cudaStreamSynchronize(s->stream);
    else
        failed = FIRN_CUDA_CALL(cudaStreamSynchronize(s->stream), err);
    free(staged);
    return failed ? FIRN_CUDA_FAILED : 0;
}

static int stage_rigid(firn_cuda_state *s, void *item, int k, firn_error *err)
{
    return stage_shape(s, &((firn_rigid *)item)->shape, &s->rigid_grid_host[k], err);
}

static int stage_tool(firn_cuda_state *s, void *item, int k, firn_error *err)
{
    return stage_shape(s, &((firn_tool *)item)->body.shape, &s->tool_grid_host[k], err);
}

/* The rigid bodies and their pending coupling force on the device, the
 * device's bodies pointing at device copies of their mesh grids. */
static int upload_rigids(firn_world *w, firn_cuda_state *s, size_t r_bytes, size_t a_bytes,
                         firn_error *err)
{
    FIRN_CUDA_CHECK(cudaMalloc(&s->rigids, r_bytes), err);
    FIRN_CUDA_CHECK(cudaMalloc(&s->rigid_acc, a_bytes), err);
    if (upload_staged(s, s->rigids, w->rigids, s->n_rigids, sizeof(firn_rigid), stage_rigid, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(
        cudaMemcpyAsync(s->rigid_acc, w->rigid_acc, a_bytes, cudaMemcpyHostToDevice, s->stream),
        err);
    return 0;
}

/* The tools (their mesh grids as the bodies'), their records and a zero
 * reaction sum on the device. */
static int upload_tools(firn_world *w, firn_cuda_state *s, firn_error *err)
{
    const int nt = s->n_tools;
    FIRN_CUDA_CHECK(cudaMalloc(&s->tools, (size_t)nt * sizeof(firn_tool)), err);
    FIRN_CUDA_CHECK(cudaMalloc(&s->tool_acc, (size_t)nt * FIRN_TOOL_ACC * sizeof(double)), err);
    FIRN_CUDA_CHECK(cudaMalloc(&s->tool_rec, (size_t)nt * sizeof(firn_tool_record)), err);
    if (upload_staged(s, s->tools, w->tools, nt, sizeof(firn_tool), stage_tool, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(cudaMemcpyAsync(s->tool_rec, w->tool_rec, (size_t)nt * sizeof(firn_tool_record),
                                    cudaMemcpyHostToDevice, s->stream),
                    err);
    FIRN_CUDA_CHECK(
        cudaMemsetAsync(s->tool_acc, 0, (size_t)nt * FIRN_TOOL_ACC * sizeof(double), s->stream),
        err);
    return 0;
}

static int state_init(firn_world *w, firn_cuda_state *s, firn_error *err)
{
    const int n = w->p.n;
    int dev = 0;
    cudaDeviceProp prop;
    FIRN_CUDA_CHECK(cudaGetDevice(&dev), err);
    FIRN_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev), err);
    snprintf(w->device_name, sizeof w->device_name, "%.200s (CUDA device %d, sm_%d%d)", prop.name,
             dev, prop.major, prop.minor);

    for (int a = 0; a < 3; a++)
        s->grid.n[a] = w->params.n[a];
    s->grid.nodes = (long long)s->grid.n[0] * s->grid.n[1] * s->grid.n[2];
    s->p.n = n;

    /* Everything is allocated here, once; check it fits before asking.
     * firn_device_bytes (host/world.c) sizes the same arrays for
     * firn_world_memory. */
    const size_t p_bytes = firn_particle_layout(n, w->p.cpic_slots, NULL, NULL);
    const size_t g_bytes = 4 * (size_t)s->grid.nodes * sizeof(float);
    const size_t m_bytes = FIRN_MAX_MATERIALS * sizeof(firn_material);
    size_t temp_bytes = 0;
    if (n > 0)
        FIRN_CUDA_CHECK(reduce_launch(s, NULL, temp_bytes), err);
    const size_t r_bytes = (size_t)w->n_rigids * sizeof(firn_rigid);
    const size_t a_bytes = (size_t)w->n_rigids * FIRN_RIGID_ACC * sizeof(double);
    /* Binned P2G: its arrays (in firn_device_bytes) and CUB's sort storage. */
    s->bins.on = firn_device_binned(w);
    s->bins.warp = s->bins.on && w->run.p2g == FIRN_P2G_WARP;
    s->bins.ordered = s->bins.on && w->run.p2g == FIRN_P2G_ORDERED;
    s->bins.fused = s->bins.on && w->run.p2g == FIRN_P2G_G2P2G;
    s->bins.sparse = firn_device_sparse(w);
    s->bins.counting = firn_device_counting_sort(w);
    const char *tile_env = getenv("FIRN_P2G_TILE");
    if (tile_env && strcmp(tile_env, "fixed") != 0 && strcmp(tile_env, "float") != 0) {
        firn_set_error(err, FIRN_E_USAGE,
                       "FIRN_P2G_TILE=%.40s in the environment: binned P2G's tile is \"float\" "
                       "(the default) or \"fixed\"",
                       tile_env);
        return FIRN_CUDA_FAILED;
    }
    s->bins.fixed = firn_device_fixed_tile(w);
    const char *reorder_env = getenv("FIRN_P2G_REORDER");
    if (reorder_env && firn_reorder_every(reorder_env) < 0) {
        firn_set_error(err, FIRN_E_USAGE,
                       "FIRN_P2G_REORDER=%.40s in the environment: the particles' reorder into "
                       "the bin order is 0 (off, the default) or every how many substeps (1 to "
                       "1000000)",
                       reorder_env);
        return FIRN_CUDA_FAILED;
    }
    s->reorder = firn_device_reorder(w);
    s->bins.mass_max = 0.0f;
    for (int i = 0; i < w->p.n; i++) {
        const float m = w->p.vol[i] * w->mats[w->p.mat[i]].rho;
        s->bins.mass_max = m > s->bins.mass_max ? m : s->bins.mass_max;
    }
    s->bins.listed = s->bins.on && !s->bins.ordered;
    /* Under FIRN_DEBUG_SYNC each launch synchronises, which a capture cannot. */
    s->graphs = !firn_cuda_debug_sync() && w->run.graphs != FIRN_GRAPHS_OFF;
    s->graphs_required = s->graphs && w->run.graphs == FIRN_GRAPHS_ON;
    size_t sort_bytes = 0, scan_bytes = 0;
    if (s->bins.on) {
        firn_mpm_bins &b = s->bins;
        bins_layout(w, &b);
        /* temp serves the counting sort's scan, or the radix sort, and the
         * scan of the bins' flags after either. */
        size_t list_bytes = 0;
        if (b.counting)
            FIRN_CUDA_CHECK(key_scan(s, NULL, sort_bytes), err);
        else
            FIRN_CUDA_CHECK(bin_sort(s, NULL, sort_bytes), err);
        if (b.listed)
            FIRN_CUDA_CHECK(bin_scan(s, NULL, list_bytes), err);
        sort_bytes = sort_bytes > list_bytes ? sort_bytes : list_bytes;
    }
    if (s->bins.sparse)
        FIRN_CUDA_CHECK(block_scan(s, NULL, scan_bytes), err);
    const size_t want = firn_device_bytes(w) + firn_align256(temp_bytes) +
                        firn_align256(sort_bytes) + firn_align256(scan_bytes);
    if (check_device_memory(w, s, want, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), err);
    for (int k = 0; k < EV_COUNT; k++)
        FIRN_CUDA_CHECK(cudaEventCreate(&s->ev[k]), err);
    FIRN_CUDA_CHECK(cudaMalloc(&s->p_block, p_bytes), err);
    firn_particle_layout(n, w->p.cpic_slots, (char *)s->p_block, &s->p);
    if (s->reorder > 0 && n > 0) {
        FIRN_CUDA_CHECK(cudaMalloc(&s->q_block, p_bytes), err);
        firn_particle_layout(n, w->p.cpic_slots, (char *)s->q_block, &s->q);
        FIRN_CUDA_CHECK(cudaMalloc(&s->id, (size_t)n * sizeof(int)), err);
        FIRN_CUDA_CHECK(cudaMalloc(&s->id_q, (size_t)n * sizeof(int)), err);
        FIRN_LAUNCH(reorder_identity, (unsigned)((n + FIRN_BLOCK - 1) / FIRN_BLOCK), FIRN_BLOCK, 0,
                    s->stream, n, s->id);
        FIRN_CUDA_CHECK_LAUNCH("reorder_identity", s->stream, err);
        s->bins.id = s->id;
    } else {
        s->reorder = 0;
    }
    for (int k = 0; k < 1 + s->bins.fused; k++) {
        FIRN_CUDA_CHECK(cudaMalloc(&s->gbuf[k], g_bytes), err);
        /* Zero once: a sparse grid clears only the blocks it wrote since. */
        FIRN_CUDA_CHECK(cudaMemsetAsync(s->gbuf[k], 0, g_bytes, s->stream), err);
    }
    s->grid.node = s->gbuf[0];
    FIRN_CUDA_CHECK(cudaMalloc(&s->mats, m_bytes), err);
    FIRN_CUDA_CHECK(cudaMalloc(&s->bad, sizeof(unsigned long long)), err);
    FIRN_CUDA_CHECK(cudaMalloc(&s->red_out, sizeof(float2)), err);
    if (temp_bytes > 0)
        FIRN_CUDA_CHECK(cudaMalloc(&s->red_temp, temp_bytes), err);
    s->red_temp_bytes = temp_bytes;
    if (s->bins.on) {
        firn_mpm_bins &b = s->bins;
        const size_t pb = (size_t)n * sizeof(int), bb = (size_t)b.count * sizeof(int);
        FIRN_CUDA_CHECK(cudaMalloc(&b.key, pb), err);
        FIRN_CUDA_CHECK(cudaMalloc(&b.key_sorted, pb), err);
        FIRN_CUDA_CHECK(cudaMalloc(&b.ids, pb), err);
        FIRN_CUDA_CHECK(cudaMalloc(&b.order, pb), err);
        FIRN_CUDA_CHECK(cudaMalloc(&b.start, bb), err);
        FIRN_CUDA_CHECK(cudaMalloc(&b.end, bb), err);
        FIRN_CUDA_CHECK(cudaMalloc(&b.temp, sort_bytes), err);
        b.temp_bytes = sort_bytes;
        if (b.counting) {
            /* cells + 1 ints (bb is in bytes already) */
            const size_t kb = ((size_t)b.count * FIRN_BIN * FIRN_BIN * FIRN_BIN + 1) * sizeof(int);
            FIRN_CUDA_CHECK(cudaMalloc(&b.ccount, kb), err);
            FIRN_CUDA_CHECK(cudaMalloc(&b.coff, kb), err);
        }
        if (b.fixed) {
            FIRN_CUDA_CHECK(cudaMalloc(&b.bound, bb), err);
            FIRN_CUDA_CHECK(cudaMemsetAsync(b.bound, 0, bb, s->stream), err);
        }
        if (b.listed) {
            FIRN_CUDA_CHECK(cudaMalloc(&b.bflag, bb), err);
            FIRN_CUDA_CHECK(cudaMalloc(&b.boff, bb), err);
            FIRN_CUDA_CHECK(cudaMalloc(&b.blist, bb), err);
            FIRN_CUDA_CHECK(cudaMalloc(&b.nbins, sizeof(int)), err);
            FIRN_CUDA_CHECK(cudaMemsetAsync(b.nbins, 0, sizeof(int), s->stream), err);
        }
        if (b.sparse) {
            const size_t tb = (size_t)b.nblocks * sizeof(int);
            FIRN_CUDA_CHECK(cudaMalloc(&b.flag, tb), err);
            FIRN_CUDA_CHECK(cudaMalloc(&b.offset, tb), err);
            FIRN_CUDA_CHECK(cudaMalloc(&b.list, tb), err);
            FIRN_CUDA_CHECK(cudaMalloc(&b.nlisted, sizeof(int)), err);
            FIRN_CUDA_CHECK(cudaMemsetAsync(b.nlisted, 0, sizeof(int), s->stream), err);
            if (scan_bytes > 0)
                FIRN_CUDA_CHECK(cudaMalloc(&b.scan_temp, scan_bytes), err);
            b.scan_temp_bytes = scan_bytes;
        }
        if (b.ordered) {
            const size_t cb = bb * FIRN_BIN * FIRN_BIN * FIRN_BIN;
            FIRN_CUDA_CHECK(cudaMalloc(&b.cstart, cb), err);
            FIRN_CUDA_CHECK(cudaMalloc(&b.cend, cb), err);
            FIRN_CUDA_CHECK(cudaMalloc(&b.ps, FIRN_ORDERED_FLOATS * (size_t)n * sizeof(float)),
                            err);
        }
    }
    s->bytes = want;
    s->n_rigids = w->n_rigids;
    s->model = mpm_model(w);
    s->cpic = w->coupler.cpic && s->p.cpic_slots > 0;
    s->mpm = w->coupler.active[FIRN_SOLVER_MPM];
    if (firn_mpm_sph_contact(w)) { /* counted in firn_device_bytes */
        FIRN_CUDA_CHECK(cudaMalloc(&s->mpm_phi, 4 * (size_t)s->grid.nodes * sizeof(float)), err);
    }
    s->n_tools = w->n_tools;
    if (s->n_rigids > 0 && upload_rigids(w, s, r_bytes, a_bytes, err))
        return FIRN_CUDA_FAILED;
    if (s->n_tools > 0 && upload_tools(w, s, err))
        return FIRN_CUDA_FAILED;
    static const unsigned long long none = FIRN_CUDA_BAD_NONE;
    if (copy_particles(&s->p, &w->p, cudaMemcpyHostToDevice, s->stream, FIRN_STALE_ALL, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(cudaMemcpyAsync(s->mats, w->mats, m_bytes, cudaMemcpyHostToDevice, s->stream),
                    err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(s->bad, &none, sizeof none, cudaMemcpyHostToDevice, s->stream),
                    err);
    FIRN_CUDA_CHECK(cudaMemsetAsync(s->grid.node, 0, g_bytes, s->stream), err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(s->stream), err);
    w->host_stale = 0;
    return 0;
}

/* ---- launchers (extern "C", declared in host/cuda_backend.h) ---------- */

extern "C" size_t firn_cuda_state_bytes(const firn_world *w)
{
    return w->cuda ? w->cuda->bytes + firn_cuda_sph_bytes(w->sph.cuda) +
                         firn_cuda_pbd_bytes(w->pbd.cuda) + firn_cuda_fem_bytes(w->fem.cuda)
                   : 0;
}

cudaStream_t firn_cuda_world_stream(const firn_world *w) { return w->cuda->stream; }

extern "C" int firn_cuda_init(firn_world *w, firn_error *err)
{
    const char *no_cuda = firn_coupler_no_cuda(w);
    if (no_cuda) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "the %s solver has no CUDA path (its table in host/solver.h); run the "
                       "scene on the CPU (--backend cpu)",
                       no_cuda);
        return FIRN_CUDA_FAILED;
    }
    firn_cuda_state *s = (firn_cuda_state *)calloc(1, sizeof *s);
    if (!s) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory");
        return -1;
    }
    w->cuda = s;
    if (state_init(w, s, err)) {
        firn_cuda_free(w); /* releases whatever was allocated; w->cuda = NULL */
        return FIRN_CUDA_FAILED;
    }
    return 0;
}

/* Best effort: after a device fault these calls fail too, and there is
 * nothing better to do than to release what can be released. */
extern "C" void firn_cuda_free(firn_world *w)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return;
    if (s->stream)
        (void)cudaStreamSynchronize(s->stream);
    for (int k = 0; k < FIRN_GRAPH_SLOTS; k++)
        graph_release(&s->slot[k]);
    cudaFree(s->p_block);
    cudaFree(s->q_block);
    cudaFree(s->id);
    cudaFree(s->id_q);
    cudaFree(s->gbuf[0]);
    cudaFree(s->gbuf[1]);
    cudaFree(s->mats);
    cudaFree(s->bad);
    cudaFree(s->red_out);
    cudaFree(s->red_temp);
    cudaFree(s->bins.key);
    cudaFree(s->bins.key_sorted);
    cudaFree(s->bins.ids);
    cudaFree(s->bins.order);
    cudaFree(s->bins.start);
    cudaFree(s->bins.end);
    cudaFree(s->bins.temp);
    cudaFree(s->bins.ccount);
    cudaFree(s->bins.coff);
    cudaFree(s->bins.bound);
    cudaFree(s->bins.bflag);
    cudaFree(s->bins.boff);
    cudaFree(s->bins.blist);
    cudaFree(s->bins.nbins);
    cudaFree(s->bins.flag);
    cudaFree(s->bins.offset);
    cudaFree(s->bins.list);
    cudaFree(s->bins.nlisted);
    cudaFree(s->bins.scan_temp);
    cudaFree(s->bins.cstart);
    cudaFree(s->bins.cend);
    cudaFree(s->bins.ps);
    cudaFree(s->rigids);
    cudaFree(s->rigid_acc);
    cudaFree(s->mpm_phi);
    cudaFree(s->tools);
    cudaFree(s->tool_acc);
    cudaFree(s->tool_rec);
    for (int k = 0; k < s->n_mesh_grids; k++)
        cudaFree(s->mesh_grid[k]);
    for (int k = 0; k < EV_COUNT; k++)
        if (s->ev[k])
            (void)cudaEventDestroy(s->ev[k]);
    if (s->stream)
        (void)cudaStreamDestroy(s->stream);
    (void)cudaGetLastError();
    free(s);
    w->cuda = NULL;
}

static int not_initialised(const char *fn, firn_error *err)
{
    firn_set_error(err, FIRN_E_DEVICE, "%s: the CUDA backend of this world is not initialised", fn);
    return FIRN_CUDA_FAILED;
}

/* Queues the Coupler's phases (host/coupler.c) on the stream: CPIC side
 * marking (when on), the rigid step, the MPM clear and p2g, the SPH
 * pre-coupling phases (sort, density, pressure), the PBD ones (predict,
 * constraint sweeps), the grid update (with the rigid impulse when the
 * rigid_mpm pair is active, and MPM-SPH when mpm_sph is), SPH-rigid,
 * PBD-rigid, g2p, the SPH position step, the PBD velocities and box - p2g
 * and g2p in their CPIC variants when CPIC is on. Phases of a solver the
 * world does not have are left out. Returns 0 or -2. */
/* Binned P2G's binning: the particles' keys, their order and each bin's
 * range, by a counting sort (on a dense grid without ordered P2G: the
 * keys' histogram with global atomics in bin_keys, CUB's exclusive scan of
 * it, key_scatter; the ranges from the scan in bin_flags) or CUB's stable
 * radix sort (ordered P2G, whose sums follow the order within a cell, and
 * the sparse grid, where a scan over every cell would cost what the sparse
 * grid saves: bin_ranges); the list of the bins that hold particles (not
 * with ordered P2G, which works per node); with a sparse grid, the blocks
 * this substep reaches. */
static int queue_binning(firn_cuda_state *s, const firn_params *P, unsigned pblocks,
                         unsigned substep, firn_error *err)
{
    firn_mpm_bins &b = s->bins;
    if (b.counting)
        FIRN_CUDA_CHECK(
            cudaMemsetAsync(b.ccount, 0,
                            ((size_t)b.count * FIRN_BIN * FIRN_BIN * FIRN_BIN + 1) * sizeof(int),
                            s->stream),
            err);
    FIRN_LAUNCH(bin_keys, pblocks, FIRN_BLOCK, 0, s->stream, *P, s->p, b);
    FIRN_CUDA_CHECK_LAUNCH("bin_keys", s->stream, err);
    if (b.skew > 0) {
        FIRN_LAUNCH(skew_keys, pblocks, FIRN_BLOCK, 0, s->stream, s->p.n, b);
        FIRN_CUDA_CHECK_LAUNCH("skew_keys", s->stream, err);
    }
    size_t bytes = b.temp_bytes;
    if (b.counting) {
        FIRN_CUDA_CHECK(key_scan(s, b.temp, bytes), err);
        FIRN_LAUNCH(key_scatter, pblocks, FIRN_BLOCK, 0, s->stream, s->p.n, b);
        FIRN_CUDA_CHECK_LAUNCH("key_scatter", s->stream, err);
    } else {
        FIRN_CUDA_CHECK(bin_sort(s, b.temp, bytes), err);
        FIRN_CUDA_CHECK(cudaMemsetAsync(b.start, 0, (size_t)b.count * sizeof(int), s->stream), err);
        FIRN_CUDA_CHECK(cudaMemsetAsync(b.end, 0, (size_t)b.count * sizeof(int), s->stream), err);
        FIRN_LAUNCH(bin_ranges, pblocks, FIRN_BLOCK, 0, s->stream, s->p.n, b);
        FIRN_CUDA_CHECK_LAUNCH("bin_ranges", s->stream, err);
    }
    /* The reorder on substeps 0, r, 2r ... of the call (a captured graph
     * holds the same launches whatever call replays it). */
    if (s->reorder > 0 && substep % (unsigned)s->reorder == 0 && pblocks > 0) {
        FIRN_LAUNCH(reorder_gather, pblocks, FIRN_BLOCK, 0, s->stream, s->p, s->q, s->id, s->id_q,
                    b);
        FIRN_CUDA_CHECK_LAUNCH("reorder_gather", s->stream, err);
        FIRN_LAUNCH(reorder_commit, pblocks, FIRN_BLOCK, 0, s->stream, s->p, s->q, s->id, s->id_q,
                    b);
        FIRN_CUDA_CHECK_LAUNCH("reorder_commit", s->stream, err);
    }
    if (b.listed) {
        const unsigned bblocks = (unsigned)((b.count + FIRN_BLOCK - 1) / FIRN_BLOCK);
        FIRN_LAUNCH(bin_flags, bblocks, FIRN_BLOCK, 0, s->stream, b);
        FIRN_CUDA_CHECK_LAUNCH("bin_flags", s->stream, err);
        bytes = b.temp_bytes;
        FIRN_CUDA_CHECK(bin_scan(s, b.temp, bytes), err);
        FIRN_LAUNCH(bin_list, bblocks, FIRN_BLOCK, 0, s->stream, b);
        FIRN_CUDA_CHECK_LAUNCH("bin_list", s->stream, err);
    }
    if (!b.sparse)
        return 0;
    const unsigned tblocks = (unsigned)((b.nblocks + FIRN_BLOCK - 1) / FIRN_BLOCK);
    FIRN_LAUNCH(block_touched, tblocks, FIRN_BLOCK, 0, s->stream, b);
    FIRN_CUDA_CHECK_LAUNCH("block_touched", s->stream, err);
    bytes = b.scan_temp_bytes;
    FIRN_CUDA_CHECK(block_scan(s, b.scan_temp, bytes), err);
    FIRN_LAUNCH(block_list, tblocks, FIRN_BLOCK, 0, s->stream, b);
    FIRN_CUDA_CHECK_LAUNCH("block_list", s->stream, err);
    return 0;
}

/* Binned P2G's scatter: one thread block per bin (p2g_binned, p2g_warp),
 * or ordered P2G (its cell ranges, the particles' scatter states, then the
 * gather over every node, or over the listed blocks of a sparse grid). */
static int queue_binned_scatter(firn_cuda_state *s, const firn_params *P, unsigned pblocks,
                                firn_error *err)
{
    firn_mpm_bins &b = s->bins;
    if (b.ordered) {
        const size_t cells = (size_t)b.count * FIRN_BIN * FIRN_BIN * FIRN_BIN * sizeof(int);
        FIRN_CUDA_CHECK(cudaMemsetAsync(b.cstart, 0, cells, s->stream), err);
        FIRN_CUDA_CHECK(cudaMemsetAsync(b.cend, 0, cells, s->stream), err);
        FIRN_LAUNCH(cell_ranges, pblocks, FIRN_BLOCK, 0, s->stream, s->p.n, b);
        FIRN_CUDA_CHECK_LAUNCH("cell_ranges", s->stream, err);
        FIRN_LAUNCH(p2g_order_prepare, pblocks, FIRN_BLOCK, 0, s->stream, *P, s->mats, s->p, b);
        FIRN_CUDA_CHECK_LAUNCH("p2g_order_prepare", s->stream, err);
        if (b.sparse) {
            FIRN_LAUNCH(p2g_ordered_sparse, sparse_blocks(b), FIRN_SPARSE_THREADS, 0, s->stream, *P,
                        s->p, s->grid, b);
            FIRN_CUDA_CHECK_LAUNCH("p2g_ordered_sparse", s->stream, err);
            return 0;
        }
        const unsigned gblocks = (unsigned)((s->grid.nodes + FIRN_BLOCK - 1) / FIRN_BLOCK);
        FIRN_LAUNCH(p2g_ordered, gblocks, FIRN_BLOCK, 0, s->stream, *P, s->p, s->grid, b);
        FIRN_CUDA_CHECK_LAUNCH("p2g_ordered", s->stream, err);
        return 0;
    }
    if (b.warp) {
        FIRN_MPM_LAUNCH(p2g_warp, s->model, bin_blocks(b), FIRN_BIN_THREADS, 0, s->stream, *P,
                        s->mats, s->p, s->grid, b);
        FIRN_CUDA_CHECK_LAUNCH("p2g_warp", s->stream, err);
        return 0;
    }
    if (b.fixed) {
        FIRN_MPM_LAUNCH(p2g_binned_fixed, s->model, bin_blocks(b), FIRN_BIN_THREADS, 0, s->stream,
                        *P, s->mats, s->p, s->grid, b);
        FIRN_CUDA_CHECK_LAUNCH("p2g_binned_fixed", s->stream, err);
        return 0;
    }
    FIRN_MPM_LAUNCH(p2g_binned, s->model, bin_blocks(b), FIRN_BIN_THREADS, 0, s->stream, *P,
                    s->mats, s->p, s->grid, b);
    FIRN_CUDA_CHECK_LAUNCH("p2g_binned", s->stream, err);
    return 0;
}

/* G2P2G's pre-coupling phase for substep k > 0 of a call: the clear of
 * substep k's grid, the fused G2P of substep k - 1 (from its grid) and P2G
 * of substep k, then the bins of the new positions for the next fused
 * kernel (none after the call's last). */
static int queue_fused(firn_cuda_state *s, const firn_params *P, unsigned k, firn_step *step,
                       firn_error *err)
{
    const unsigned pblocks = (unsigned)((s->p.n + FIRN_BLOCK - 1) / FIRN_BLOCK);
    FIRN_CUDA_CHECK(
        cudaMemsetAsync(s->grid.node, 0, 4 * (size_t)s->grid.nodes * sizeof(float), s->stream),
        err);
    if (firn_step_mark(step, FIRN_PROF_CLEAR))
        return FIRN_CUDA_FAILED;
    firn_grid from = s->grid;
    from.node = s->gbuf[(s->gbase + k - 1) & 1];
    /* g2p2g reads `from` through the read-only cache (__ldg, firn_load_node),
     * which does not see the kernel's own writes: it scatters into the
     * other grid, or the loads are stale. */
    if (!from.node || from.node == s->grid.node) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "g2p2g: substep %u of the call would gather from the grid it scatters "
                       "into (grid %p; G2P2G's two grids are %p and %p)",
                       k, (void *)s->grid.node, (void *)s->gbuf[0], (void *)s->gbuf[1]);
        return FIRN_CUDA_FAILED;
    }
    if (s->bins.fixed) {
        FIRN_MPM_LAUNCH(g2p2g_fixed, s->model, bin_blocks(s->bins), FIRN_BIN_THREADS, 0, s->stream,
                        *P, s->mats, s->p, from, s->grid, s->bins, s->bad, k - 1);
        FIRN_CUDA_CHECK_LAUNCH("g2p2g_fixed", s->stream, err);
    } else {
        FIRN_MPM_LAUNCH(g2p2g, s->model, bin_blocks(s->bins), FIRN_BIN_THREADS, 0, s->stream, *P,
                        s->mats, s->p, from, s->grid, s->bins, s->bad, k - 1);
        FIRN_CUDA_CHECK_LAUNCH("g2p2g", s->stream, err);
    }
    if ((int)k + 1 < s->nsub && queue_binning(s, P, pblocks, k + 1, err))
        return FIRN_CUDA_FAILED;
    return 0;
}

/* Whether substep k of the call ends with G2P: always, but with G2P2G only
 * the call's last (the others' G2P is fused into the next P2G). */
static int ends_with_g2p(const firn_cuda_state *s, unsigned k)
{
    return !(s->mpm && s->bins.fused) || (int)k + 1 == s->nsub;
}

static int queue_mpm_pre(firn_cuda_state *s, const firn_params *P, unsigned k, firn_step *step,
                         firn_error *err)
{
    const unsigned pblocks = (unsigned)((s->p.n + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (s->mpm && s->bins.fused && k > 0)
        return queue_fused(s, P, k, step, err);
    if (s->mpm && s->bins.sparse) {
        /* The clear of the blocks the last substep wrote, then the new
         * list; the grid is zero outside it, as after a dense clear. */
        FIRN_LAUNCH(sparse_clear, sparse_blocks(s->bins), FIRN_SPARSE_THREADS, 0, s->stream,
                    s->bins, s->grid);
        FIRN_CUDA_CHECK_LAUNCH("sparse_clear", s->stream, err);
        if (queue_binning(s, P, pblocks, k, err))
            return FIRN_CUDA_FAILED;
    } else if (s->mpm && !s->bins.ordered) { /* ordered P2G writes every node itself */
        FIRN_CUDA_CHECK(
            cudaMemsetAsync(s->grid.node, 0, 4 * (size_t)s->grid.nodes * sizeof(float), s->stream),
            err);
    }
    if (firn_step_mark(step, FIRN_PROF_CLEAR))
        return FIRN_CUDA_FAILED;
    if (s->mpm && s->cpic) {
        if (firn_cuda_queue_p2g_cpic(P, s->mats, s->p, s->grid, s->rigids, s->n_rigids, s->stream,
                                     err))
            return FIRN_CUDA_FAILED;
    } else if (s->mpm && s->bins.on) {
        if ((!s->bins.sparse && queue_binning(s, P, pblocks, k, err)) ||
            queue_binned_scatter(s, P, pblocks, err))
            return FIRN_CUDA_FAILED;
    } else if (s->mpm && pblocks > 0) {
        FIRN_MPM_LAUNCH(p2g, s->model, pblocks, FIRN_BLOCK, 0, s->stream, *P, s->mats, s->p,
                        s->grid);
        FIRN_CUDA_CHECK_LAUNCH("p2g", s->stream, err);
    }
    return 0;
}

/* ---- the couple stage's passes (host/coupler.c couple, host/pair.h) ----- */

/* The SPH solver as the pairs see it, with MPM-SPH's level set when the
 * contact is on. */
/* The SPH solver's view as the pairs see it (kernels/couple.cuh): with
 * MPM-SPH's volume fraction on the grid when the contact is on. */
firn_sph_view firn_cuda_couple_sph_view(firn_world *w, const firn_params *P)
{
    firn_cuda_state *s = w->cuda;
    firn_sph_view V;
    memset(&V, 0, sizeof V);
    if (w->sph.cuda)
        V = firn_cuda_sph_view(w->sph.cuda, &w->sph.P);
    if (s->mpm_phi) {
        V.L.P = *P;
        V.L.phi = s->mpm_phi;
        V.L.node = s->grid.node;
        V.L.react = s->mpm_phi + s->grid.nodes;
    }
    return V;
}

firn_grid firn_cuda_world_grid(const firn_world *w) { return w->cuda->grid; }

static int cpic_queue(firn_world *w, firn_step *st)
{
    firn_cuda_state *s = w->cuda;
    if (!s->cpic) /* no particle has CPIC slots */
        return 0;
    return firn_cuda_queue_cpic_mark(st->P, s->p, s->rigids, s->n_rigids, s->stream, st->err);
}

/* The grid update with the pairs on its nodes: the tools (with the rigid
 * bodies and MPM-SPH), MPM-SPH with the rigid bodies, the rigid bodies
 * alone, or none (sparse or dense). */
static int grid_queue(firn_world *w, firn_step *st)
{
    firn_cuda_state *s = w->cuda;
    const firn_params *P = st->P;
    firn_error *err = st->err;
    const firn_coupler *c = &w->coupler;
    const unsigned gblocks = (unsigned)((s->grid.nodes + FIRN_BLOCK - 1) / FIRN_BLOCK);
    const firn_sph_view V = firn_cuda_couple_sph_view(w, P);
    if (c->tool_mpm && s->n_tools > 0)
        return firn_cuda_queue_grid_tools(P, s->grid, s->tools, s->n_tools, s->tool_acc, s->rigids,
                                          c->rigid_mpm ? s->n_rigids : 0, s->rigid_acc,
                                          c->mpm_sph && w->sph.cuda ? &V : NULL, s->stream, err);
    if (c->mpm_sph && w->sph.cuda)
        return firn_cuda_queue_grid_pairs(P, s->grid, s->rigids, c->rigid_mpm ? s->n_rigids : 0,
                                          s->rigid_acc, &V, s->stream, err);
    if (c->rigid_mpm)
        return firn_cuda_queue_grid_rigid(P, s->grid, s->rigids, s->n_rigids, s->rigid_acc,
                                          s->stream, err);
    if (s->bins.sparse) {
        FIRN_LAUNCH(sparse_update, sparse_blocks(s->bins), FIRN_SPARSE_THREADS, 0, s->stream, *P,
                    s->bins, s->grid);
        FIRN_CUDA_CHECK_LAUNCH("sparse_update", s->stream, err);
    } else if (gblocks > 0) {
        FIRN_LAUNCH(grid_update, gblocks, FIRN_BLOCK, 0, s->stream, *P, s->grid);
        FIRN_CUDA_CHECK_LAUNCH("grid_update", s->stream, err);
    }
    return 0;
}

extern "C" {
const firn_step_fn firn_cuda_cpic_mark = cpic_queue;
const firn_step_fn firn_cuda_grid = grid_queue;
}

/* ---- the CUDA path's phases (host/solver.h), run in order by the Coupler -- */

static int tool_queue_pre(firn_world *w, firn_step *st)
{
    firn_cuda_state *s = w->cuda;
    return firn_cuda_queue_tool_advect(s->tools, s->tool_acc, s->n_tools, st->P, s->stream,
                                       st->err);
}

static int tool_queue_post(firn_world *w, firn_step *st)
{
    firn_cuda_state *s = w->cuda;
    return firn_cuda_queue_tool_record(s->tool_rec, s->tool_acc, s->n_tools, st->P->dt,
                                       st->substep == 0 && w->tool_frame_reset, s->stream, st->err);
}

static int rigid_queue_pre(firn_world *w, firn_step *st)
{
    firn_cuda_state *s = w->cuda;
    return firn_cuda_queue_rigid_step(s->rigids, s->rigid_acc, s->n_rigids, st->P, s->stream,
                                      st->err);
}

static int rigid_queue_post(firn_world *w, firn_step *st)
{
    (void)w, (void)st;
    return 0;
}

/* G2P2G: every phase of substep k works on its grid. */
static int mpm_queue_begin(firn_world *w, firn_step *st)
{
    firn_cuda_state *s = w->cuda;
    if (s->bins.fused)
        s->grid.node = s->gbuf[(s->gbase + st->substep) & 1];
    return 0;
}

static int mpm_queue_pre(firn_world *w, firn_step *st)
{
    return queue_mpm_pre(w->cuda, st->P, st->substep, st, st->err);
}

static int mpm_queue_post(firn_world *w, firn_step *st)
{
    firn_cuda_state *s = w->cuda;
    const firn_params *P = st->P;
    const unsigned pblocks = (unsigned)((s->p.n + FIRN_BLOCK - 1) / FIRN_BLOCK);
    if (s->cpic)
        return firn_cuda_queue_g2p_cpic(P, s->mats, s->p, s->grid, s->rigids, s->n_rigids,
                                        s->rigid_acc, s->bad, st->substep, s->stream, st->err);
    if (pblocks > 0 && ends_with_g2p(s, st->substep)) {
        /* In storage order, binned or not: on an H200 (8M sand) G2P in the
         * binned order took 0.36 ms against 0.30 - its particle reads
         * become gathers, and the sampled order is coherent already. */
        FIRN_LAUNCH(g2p, pblocks, FIRN_BLOCK, 0, s->stream, *P, s->p, s->grid, s->bad, st->substep,
                    s->id);
        FIRN_CUDA_CHECK_LAUNCH("g2p", s->stream, st->err);
    }
    return 0;
}

extern "C" {
const firn_phase_ops firn_cuda_tool_phases = {NULL, tool_queue_pre, tool_queue_post};
const firn_phase_ops firn_cuda_rigid_phases = {NULL, rigid_queue_pre, rigid_queue_post};
const firn_phase_ops firn_cuda_mpm_phases = {mpm_queue_begin, mpm_queue_pre, mpm_queue_post};
}

firn_rigid *firn_cuda_world_rigids(const firn_world *w, int *n, double **acc)
{
    *n = w->cuda->n_rigids;
    *acc = w->cuda->rigid_acc;
    return w->cuda->rigids;
}

int firn_cuda_queue_mpm_level(firn_world *w, const firn_params *P, firn_mpm_level *L,
                              firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    memset(L, 0, sizeof *L);
    if (!s->mpm_phi)
        return 0;
    if (firn_cuda_queue_mpm_phi(P, s->p, s->mpm_phi, s->grid.nodes, s->stream, err))
        return FIRN_CUDA_FAILED;
    L->P = *P;
    L->phi = s->mpm_phi;
    L->node = s->grid.node;
    return 0;
}

/* The CUDA path's clock: each mark records an event into the stream, with
 * the profile slot of the interval it ends (account_time reads them). */
static int cuda_mark(firn_clock *c, int slot, firn_error *err)
{
    firn_cuda_state *s = (firn_cuda_state *)c->impl;
    if (EV_MARK0 + s->marks >= EV_COUNT) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "the timed substep has more than %d profile marks (kernels/mpm.cu EV_COUNT)",
                       EV_COUNT - EV_MARK0);
        return FIRN_CUDA_FAILED;
    }
    s->mark_slot[EV_MARK0 + s->marks] = slot;
    FIRN_CUDA_CHECK(cudaEventRecord(s->ev[EV_MARK0 + s->marks], s->stream), err);
    s->marks++;
    return 0;
}

/* Substep `substep` of the call, queued into the stream in the Coupler's
 * one order (host/coupler.c firn_coupler_run); timed: with its marks. */
static int queue_substep(firn_world *w, const firn_params *P, unsigned substep, int timed,
                         firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    firn_clock clock = {cuda_mark, s};
    if (timed)
        s->marks = 0;
    firn_step st = {substep, P, timed ? &clock : NULL, err, -1};
    int bad;
    return firn_coupler_run(w, 1, &st, &bad) ? FIRN_CUDA_FAILED : 0;
}

static float elapsed_ms(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0.0f;
    }
    return ms;
}

/* Profile: the timed substep's marks (the middle one of the call: by then
 * the stream holds queued work, so the GPU is not waiting on the host's
 * launches as it may in the first) and the whole call; the call's time is
 * split over the profile's slots in that substep's proportions. Events per
 * phase of every substep would add records to every substep of a stream
 * of short kernels. */
static void account_time(firn_world *w, firn_cuda_state *s)
{
    double t[FIRN_PROF_COUNT] = {0};
    float sub = 0.0f;
    for (int k = 1; k < s->marks; k++) {
        const int slot = s->mark_slot[EV_MARK0 + k];
        const float ms = elapsed_ms(s->ev[EV_MARK0 + k - 1], s->ev[EV_MARK0 + k]);
        if (slot >= 0 && slot < FIRN_PROF_COUNT) {
            t[slot] += ms;
            sub += ms;
        }
    }
    const float total = elapsed_ms(s->ev[EV_START], s->ev[EV_END]);
    const double scale = sub > 0.0f ? 1e-3 * total / sub : 0.0;
    for (int k = 0; k < FIRN_PROF_COUNT; k++)
        *firn_prof_field(&w->prof, k) += scale * t[k];
    w->prof.total += 1e-3 * total;
}

/* The tools and their records into the host mirror with the call's
 * synchronisation; the mirror's mesh shapes point at their host grids
 * again on every way out, the failed ones included. */
static int download_tools(firn_world *w, firn_cuda_state *s, firn_error *err)
{
    const int nt = s->n_tools;
    int failed = nt > 0 &&
                 (FIRN_CUDA_CALL(cudaMemcpyAsync(w->tools, s->tools, (size_t)nt * sizeof(firn_tool),
                                                 cudaMemcpyDeviceToHost, s->stream),
                                 err) ||
                  FIRN_CUDA_CALL(cudaMemcpyAsync(w->tool_rec, s->tool_rec,
                                                 (size_t)nt * sizeof(firn_tool_record),
                                                 cudaMemcpyDeviceToHost, s->stream),
                                 err));
    if (failed) /* a copy may still be in flight; err keeps the first failure */
        (void)cudaStreamSynchronize(s->stream);
    else
        failed = FIRN_CUDA_CALL(cudaStreamSynchronize(s->stream), err);
    for (int k = 0; k < nt; k++)
        if (s->tool_grid_host[k])
            w->tools[k].body.shape.grid = s->tool_grid_host[k];
    return failed ? FIRN_CUDA_FAILED : 0;
}

/* ---- CUDA graphs ---------------------------------------------------------- */

static void graph_release(graph_slot *g)
{
    if (g->before)
        (void)cudaGraphExecDestroy(g->before);
    if (g->after)
        (void)cudaGraphExecDestroy(g->after);
    memset(g, 0, sizeof *g);
}

static void graph_key_of(const firn_world *w, int nsub, float dt, graph_key *k)
{
    memset(k, 0, sizeof *k);
    k->nsub = nsub;
    k->tool_reset = w->tool_frame_reset;
    k->gbase = w->cuda->gbase;
    memcpy(&k->P, &w->params, sizeof k->P);
    k->P.dt = dt;
    memcpy(&k->sph, &w->sph.P, sizeof k->sph);
    memcpy(&k->pbd, &w->pbd.P, sizeof k->pbd);
    const int counts[5] = {w->pbd.stretch_iterations, w->pbd.bending_iterations,
                           w->pbd.density_iterations, w->pbd.viscosity_iterations,
                           w->pbd.particle_passes};
    memcpy(k->pbd_counts, counts, sizeof counts);
    memcpy(&k->fem, &w->fem.P, sizeof k->fem);
}

/* Substeps [k0, k1) of the call, launch by launch; substep `timed` (-1:
 * none) with its phase events. */
static int queue_substeps(firn_world *w, const firn_params *P, int k0, int k1, int timed,
                          firn_error *err)
{
    for (int k = k0; k < k1; k++)
        if (queue_substep(w, P, (unsigned)k, k == timed, err))
            return FIRN_CUDA_FAILED;
    return 0;
}

/* Substeps [k0, k1) captured and instantiated into *exec (NULL when the
 * range is empty). Nothing runs: the stream only records. */
static int graph_capture(firn_world *w, const firn_params *P, int k0, int k1, cudaGraphExec_t *exec,
                         firn_error *err)
{
    const cudaStream_t st = w->cuda->stream;
    *exec = NULL;
    if (k1 <= k0)
        return 0;
    FIRN_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), err);
    const int failed = queue_substeps(w, P, k0, k1, -1, err);
    cudaGraph_t g = NULL;
    const cudaError_t end = cudaStreamEndCapture(st, &g);
    if (failed || firn_cuda_check(end, "cudaStreamEndCapture", __FILE__, __LINE__, err)) {
        if (g)
            (void)cudaGraphDestroy(g);
        return FIRN_CUDA_FAILED;
    }
    const int bad = FIRN_CUDA_CALL(cudaGraphInstantiate(exec, g, 0), err);
    (void)cudaGraphDestroy(g);
    return bad ? FIRN_CUDA_FAILED : 0;
}

/* The captured graphs of this call, captured now if no slot has its key
 * (into a free slot, or the one launched longest ago); NULL when the world
 * does not use graphs, or auto's capture failed (then it stops trying). */
static graph_slot *graph_for(firn_world *w, const firn_params *P, int nsub, firn_error *err,
                             int *failed)
{
    firn_cuda_state *s = w->cuda;
    *failed = 0;
    if (!s->graphs || firn_world_gpu_graph_obstacle(w))
        return NULL;
    graph_key k;
    graph_key_of(w, nsub, P->dt, &k);
    graph_slot *g = &s->slot[0];
    for (int i = 0; i < FIRN_GRAPH_SLOTS; i++) {
        graph_slot *c = &s->slot[i];
        if (c->key.nsub && !memcmp(&c->key, &k, sizeof k))
            return c;
        if (c->used < g->used)
            g = c;
    }
    graph_release(g);
    const int m = nsub / 2;
    if (graph_capture(w, P, 0, m, &g->before, err) ||
        graph_capture(w, P, m + 1, nsub, &g->after, err)) {
        graph_release(g);
        if (s->graphs_required) {
            *failed = 1;
            return NULL;
        }
        /* auto: the failure kept for the record, the call launched as
         * without graphs. */
        snprintf(s->gstats.why, sizeof s->gstats.why, "%s", err->msg);
        memset(err, 0, sizeof *err);
        (void)cudaGetLastError();
        s->graphs = 0;
        s->gstats.fell_back = 1;
        return NULL;
    }
    g->key = k;
    s->gstats.captures += (g->before != NULL) + (g->after != NULL);
    return g;
}

/* The call's substeps: two graphs around the middle substep, or every
 * substep launch by launch; the middle one timed in both. */
static int queue_call(firn_world *w, const firn_params *P, int nsub, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    const int m = nsub / 2;
    int failed;
    s->nsub = nsub;
    graph_slot *g = graph_for(w, P, nsub, err, &failed);
    if (failed)
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(cudaEventRecord(s->ev[EV_START], s->stream), err);
    if (!g) {
        if (queue_substeps(w, P, 0, nsub, m, err))
            return FIRN_CUDA_FAILED;
    } else {
        g->used = ++s->calls;
        if (g->before) {
            FIRN_CUDA_CHECK(cudaGraphLaunch(g->before, s->stream), err);
            s->gstats.launches++;
        }
        if (queue_substep(w, P, (unsigned)m, 1, err))
            return FIRN_CUDA_FAILED;
        if (g->after) {
            FIRN_CUDA_CHECK(cudaGraphLaunch(g->after, s->stream), err);
            s->gstats.launches++;
        }
    }
    FIRN_CUDA_CHECK(cudaEventRecord(s->ev[EV_END], s->stream), err);
    if (s->bins.fused) { /* the next call starts on the grid this one ended on */
        s->gbase = (s->gbase + nsub - 1) & 1;
        s->grid.node = s->gbuf[s->gbase];
    }
    return 0;
}

extern "C" void firn_cuda_graph_stats_get(const firn_world *w, firn_cuda_graph_stats *out)
{
    if (w->cuda)
        *out = w->cuda->gstats;
    else
        memset(out, 0, sizeof *out);
}

/* Queues nsub substeps and reads the non-finite words back (MPM's, the
 * SPH solver's into *sph_bad, the PBD solver's into *pbd_bad, the FEM
 * solver's into *fem_bad); 0 or -2. */
static int run_substeps(firn_world *w, const firn_params *P, int nsub, unsigned long long *bad,
                        unsigned long long *sph_bad, unsigned long long *pbd_bad,
                        unsigned long long *fem_bad, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (w->sph.cuda && firn_cuda_sph_begin_call(w->sph.cuda, s->stream, err))
        return FIRN_CUDA_FAILED;
    if (queue_call(w, P, nsub, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(cudaMemcpyAsync(bad, s->bad, sizeof *bad, cudaMemcpyDeviceToHost, s->stream),
                    err);
    if (download_tools(w, s, err))
        return FIRN_CUDA_FAILED;
    if (w->sph.cuda && firn_cuda_sph_end_call(w, nsub, sph_bad, err))
        return FIRN_CUDA_FAILED;
    if (w->pbd.cuda && firn_cuda_pbd_end_call(w, pbd_bad, err))
        return FIRN_CUDA_FAILED;
    if (w->fem.cuda && firn_cuda_fem_end_call(w, fem_bad, err))
        return FIRN_CUDA_FAILED;
    return 0;
}

extern "C" int firn_cuda_run(firn_world *w, int nsub, float dt, int *bad_substep, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_run", err);
    if (nsub <= 0)
        return -1;
    firn_params P = w->params;
    P.dt = dt;
    w->sph.P.dt = dt; /* the SPH, PBD and FEM solvers' substep, as on the CPU path */
    w->pbd.P.dt = dt;
    w->fem.P.dt = dt;
    unsigned long long bad = FIRN_CUDA_BAD_NONE, sph_bad = FIRN_CUDA_BAD_NONE,
                       pbd_bad = FIRN_CUDA_BAD_NONE, fem_bad = FIRN_CUDA_BAD_NONE;
    const int failed = run_substeps(w, &P, nsub, &bad, &sph_bad, &pbd_bad, &fem_bad, err);
    w->tool_frame_reset = 0;
    if (failed) {
        firn_cuda_discard_bad_word(s->bad, s->stream);
        if (w->sph.cuda)
            firn_cuda_sph_discard_bad_word(w);
        if (w->pbd.cuda)
            firn_cuda_pbd_discard_bad_word(w);
        if (w->fem.cuda)
            firn_cuda_fem_discard_bad_word(w);
        return FIRN_CUDA_FAILED;
    }
    w->host_stale = FIRN_STALE_ALL;
    account_time(w, s);
    /* The earliest substep's report; within one substep MPM's before the
     * SPH solver's before the PBD solver's before the FEM solver's, the CPU
     * path's solver order. */
    if (bad == FIRN_CUDA_BAD_NONE && sph_bad == FIRN_CUDA_BAD_NONE &&
        pbd_bad == FIRN_CUDA_BAD_NONE && fem_bad == FIRN_CUDA_BAD_NONE)
        return -1;
    /* Reset on the world's stream (a legacy-stream copy would not order
     * with this non-blocking stream). */
    if (bad != FIRN_CUDA_BAD_NONE && firn_cuda_clear_bad_word(s->bad, s->stream, err))
        return FIRN_CUDA_FAILED;
    w->bad_solver = FIRN_SOLVER_MPM;
    if (sph_bad != FIRN_CUDA_BAD_NONE &&
        (bad == FIRN_CUDA_BAD_NONE || (sph_bad >> 32) < (bad >> 32))) {
        w->bad_solver = FIRN_SOLVER_SPH;
        bad = sph_bad;
    }
    if (pbd_bad != FIRN_CUDA_BAD_NONE &&
        (bad == FIRN_CUDA_BAD_NONE || (pbd_bad >> 32) < (bad >> 32))) {
        w->bad_solver = FIRN_SOLVER_PBD;
        bad = pbd_bad;
    }
    if (fem_bad != FIRN_CUDA_BAD_NONE &&
        (bad == FIRN_CUDA_BAD_NONE || (fem_bad >> 32) < (bad >> 32))) {
        w->bad_solver = FIRN_SOLVER_FEM;
        bad = fem_bad;
    }
    if (bad_substep)
        *bad_substep = (int)(bad >> 32);
    return (int)(bad & 0xffffffffu);
}

extern "C" int firn_cuda_download_parts(firn_world *w, int parts, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_download", err);
    /* With the reorder on, slot k holds particle id[k]: back to the
     * scene's order in the scratch block first. */
    const firn_particles *src = &s->p;
    if (s->reorder > 0 && s->p.n > 0) {
        FIRN_LAUNCH(reorder_scatter, (unsigned)((s->p.n + FIRN_BLOCK - 1) / FIRN_BLOCK), FIRN_BLOCK,
                    0, s->stream, s->p, s->q, s->id);
        FIRN_CUDA_CHECK_LAUNCH("reorder_scatter", s->stream, err);
        src = &s->q;
    }
    if (copy_particles(&w->p, src, cudaMemcpyDeviceToHost, s->stream, parts, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(cudaStreamSynchronize(s->stream), err);
    w->host_stale &= ~parts;
    return 0;
}

extern "C" int firn_cuda_download(firn_world *w, firn_error *err)
{
    return firn_cuda_download_parts(w, FIRN_STALE_ALL, err);
}

extern "C" int firn_cuda_download_rigids(firn_world *w, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_download_rigids", err);
    if (s->n_rigids == 0)
        return 0;
    /* Once the first copy is queued, the host mirror's mesh pointers may
     * hold device addresses: they point at host memory again on every way
     * out, the failed ones included. */
    int failed =
        FIRN_CUDA_CALL(cudaMemcpyAsync(w->rigids, s->rigids,
                                       (size_t)s->n_rigids * sizeof(firn_rigid),
                                       cudaMemcpyDeviceToHost, s->stream),
                       err) ||
        FIRN_CUDA_CALL(cudaMemcpyAsync(w->rigid_acc, s->rigid_acc,
                                       (size_t)s->n_rigids * FIRN_RIGID_ACC * sizeof(double),
                                       cudaMemcpyDeviceToHost, s->stream),
                       err);
    if (failed) /* the first copy may still be in flight; err keeps the first failure */
        (void)cudaStreamSynchronize(s->stream);
    else
        failed = FIRN_CUDA_CALL(cudaStreamSynchronize(s->stream), err);
    for (int k = 0; k < s->n_rigids; k++)
        if (s->rigid_grid_host[k])
            w->rigids[k].shape.grid = s->rigid_grid_host[k];
    return failed ? FIRN_CUDA_FAILED : 0;
}

extern "C" int firn_cuda_upload_tool(firn_world *w, int tool, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_upload_tool", err);
    if (tool < 0 || tool >= s->n_tools) {
        firn_set_error(err, FIRN_E_USAGE, "firn_cuda_upload_tool: no tool %d (the device has %d)",
                       tool, s->n_tools);
        return FIRN_CUDA_FAILED;
    }
    firn_tool staged = w->tools[tool];
    const float *host_grid;
    if (stage_shape(s, &staged.body.shape, &host_grid, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(
        cudaMemcpyAsync(s->tools + tool, &staged, sizeof staged, cudaMemcpyHostToDevice, s->stream),
        err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(s->stream), err); /* before staged goes */
    return 0;
}

extern "C" int firn_cuda_upload_rigid(firn_world *w, int k, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_upload_rigid", err);
    if (k < 0 || k >= s->n_rigids) {
        firn_set_error(err, FIRN_E_USAGE,
                       "firn_cuda_upload_rigid: no rigid body %d (the device has %d)", k,
                       s->n_rigids);
        return FIRN_CUDA_FAILED;
    }
    firn_rigid staged = w->rigids[k];
    const float *host_grid;
    if (stage_shape(s, &staged.shape, &host_grid, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(
        cudaMemcpyAsync(s->rigids + k, &staged, sizeof staged, cudaMemcpyHostToDevice, s->stream),
        err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(s->stream), err); /* before staged goes */
    return 0;
}

extern "C" int firn_cuda_reduce(firn_world *w, float *max_speed, float *max_wave_speed,
                                firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_reduce", err);
    float2 r = reduce_init;
    if (s->p.n > 0) {
        size_t temp_bytes = s->red_temp_bytes;
        FIRN_CUDA_CHECK(reduce_launch(s, s->red_temp, temp_bytes), err);
        FIRN_CUDA_CHECK(
            cudaMemcpyAsync(&r, s->red_out, sizeof r, cudaMemcpyDeviceToHost, s->stream), err);
        FIRN_CUDA_CHECK(cudaStreamSynchronize(s->stream), err);
    }
    *max_speed = sqrtf(r.x);
    *max_wave_speed = sqrtf(r.y);
    return 0;
}

/* After firn_cuda_run the grid holds the last substep's mass and, where
 * the mass is positive, velocity (the grid update overwrote momentum). */
extern "C" int firn_cuda_download_grid(firn_world *w, float *mass, float *vel, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_download_grid", err);
    firn_grid host = s->grid;
    host.node = (float *)malloc(4 * (size_t)host.nodes * sizeof(float));
    if (!host.node) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for a grid copy (%lld nodes)",
                       host.nodes);
        return FIRN_CUDA_FAILED;
    }
    cudaError_t e = cudaMemcpyAsync(host.node, s->grid.node, 4 * (size_t)host.nodes * sizeof(float),
                                    cudaMemcpyDeviceToHost, s->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s->stream);
    if (e == cudaSuccess)
        firn_grid_split(&host, mass, vel);
    free(host.node);
    FIRN_CUDA_CHECK(e, err);
    return 0;
}

/* For the GPU tests only (declared there): with the reorder on, per slot
 * the scene index of the particle in it (id); returns 0, -1 when the
 * reorder is off, or -2. */
extern "C" int firn_cuda_download_ids(firn_world *w, int *id, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_download_ids", err);
    if (s->reorder <= 0)
        return -1;
    const cudaError_t e =
        cudaMemcpyAsync(id, s->id, (size_t)s->p.n * sizeof(int), cudaMemcpyDeviceToHost, s->stream);
    FIRN_CUDA_CHECK(e, err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(s->stream), err);
    return 0;
}

/* For the GPU tests only (declared there): binned P2G's last order and
 * per-bin ranges (order: n; start, end: the bin count, n[0] n[1] n[2] of
 * *bins_n), the order by slot; firn_cuda_download_bins names the slots'
 * particles. Returns 0, -1 when the world's P2G is not binned, or -2. */
static int download_bins_raw(firn_world *w, int *order, int *start, int *end, int bins_n[3],
                             firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_download_bins", err);
    if (!s->bins.on)
        return -1;
    const firn_mpm_bins &b = s->bins;
    for (int a = 0; a < 3; a++)
        bins_n[a] = b.n[a];
    FIRN_CUDA_CHECK(cudaMemcpyAsync(order, b.order, (size_t)s->p.n * sizeof(int),
                                    cudaMemcpyDeviceToHost, s->stream),
                    err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(start, b.start, (size_t)b.count * sizeof(int),
                                    cudaMemcpyDeviceToHost, s->stream),
                    err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(end, b.end, (size_t)b.count * sizeof(int),
                                    cudaMemcpyDeviceToHost, s->stream),
                    err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(s->stream), err);
    return 0;
}

/* For the GPU tests only (declared there): download_bins_raw, the order
 * naming each particle by its index in the scene's order (with the
 * reorder on, id[order[k]]), as without the reorder. */
extern "C" int firn_cuda_download_bins(firn_world *w, int *order, int *start, int *end,
                                       int bins_n[3], firn_error *err)
{
    const int r = download_bins_raw(w, order, start, end, bins_n, err);
    firn_cuda_state *s = w->cuda;
    if (r || s->reorder <= 0 || s->p.n == 0)
        return r;
    int *id = (int *)malloc((size_t)s->p.n * sizeof(int));
    if (!id) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory");
        return FIRN_CUDA_FAILED;
    }
    if (firn_cuda_download_ids(w, id, err)) {
        free(id);
        return FIRN_CUDA_FAILED;
    }
    for (int k = 0; k < s->p.n; k++)
        order[k] = id[order[k]];
    free(id);
    return 0;
}

/* For the GPU tests only (declared there): the list of the bins that hold
 * particles that binned P2G's blocks ran through (list: up to the bin
 * count; *listed its length). Returns 0, -1 when the world's P2G has no
 * list (not binned, or ordered), or -2. */
extern "C" int firn_cuda_download_bin_list(firn_world *w, int *list, int *listed, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_download_bin_list", err);
    if (!s->bins.on || !s->bins.listed)
        return -1;
    const firn_mpm_bins &b = s->bins;
    FIRN_CUDA_CHECK(
        cudaMemcpyAsync(listed, b.nbins, sizeof(int), cudaMemcpyDeviceToHost, s->stream), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(list, b.blist, (size_t)b.count * sizeof(int),
                                    cudaMemcpyDeviceToHost, s->stream),
                    err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(s->stream), err);
    if (*listed < 0 || *listed > b.count) {
        firn_set_error(err, FIRN_E_DEVICE, "the list of bins has length %d of %d bins", *listed,
                       b.count);
        return FIRN_CUDA_FAILED;
    }
    return 0;
}

/* For the GPU tests only (declared there): from the next call on, binned
 * P2G's kernels run on at most `blocks` blocks (0: FIRN_BIN_GRID), so that
 * a small scene has more listed bins than blocks and each block runs
 * through several. The captured graphs are dropped. Returns 0, -1 when
 * the world's P2G is not binned, or -2. */
extern "C" int firn_cuda_cap_bin_blocks(firn_world *w, int blocks, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_cap_bin_blocks", err);
    if (!s->bins.on)
        return -1;
    FIRN_CUDA_CHECK(cudaStreamSynchronize(s->stream), err);
    for (int k = 0; k < FIRN_GRAPH_SLOTS; k++)
        graph_release(&s->slot[k]);
    s->bins.grid = blocks > 0 ? blocks : 0;
    return 0;
}

/* For the GPU tests only (declared there): from the next call on, the
 * binning gives every `every`-th particle the key of a cell next to its
 * stencil corner's (skew_keys; 0: off), as a GPU whose two kernels round
 * the corner differently would. The captured graphs are dropped. Returns
 * 0, -1 when the world's P2G is not binned, or -2. */
extern "C" int firn_cuda_skew_bin_keys(firn_world *w, int every, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_skew_bin_keys", err);
    if (!s->bins.on)
        return -1;
    FIRN_CUDA_CHECK(cudaStreamSynchronize(s->stream), err);
    for (int k = 0; k < FIRN_GRAPH_SLOTS; k++)
        graph_release(&s->slot[k]);
    s->bins.skew = every > 0 ? every : 0;
    return 0;
}

/* For the GPU tests only (declared there): the fixed-point tile's bound of
 * each bin (firn_mpm_bins.bound), copied into out[count]. Returns the
 * number of bins, or -1 when the world's P2G has no fixed-point tile or
 * count is short. */
extern "C" int firn_cuda_fixed_tile_bounds(firn_world *w, float *out, int count, firn_error *err)
{
    firn_cuda_state *s = w->cuda;
    if (!s)
        return not_initialised("firn_cuda_fixed_tile_bounds", err);
    if (!s->bins.fixed || count < s->bins.count)
        return -1;
    FIRN_CUDA_CHECK(cudaMemcpyAsync(out, s->bins.bound, (size_t)s->bins.count * sizeof(float),
                                    cudaMemcpyDeviceToHost, s->stream),
                    err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(s->stream), err);
    return s->bins.count;
}
