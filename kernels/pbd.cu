/* pbd.cu - the PBD solver on the CUDA path: its device state (particles as
 * a structure of arrays, the constraints and their colouring uploaded once
 * from host/pbd.c's, the neighbour grid of kernels/neighbour.cu), and one
 * thin kernel per pass of include/firn_pbd.h and include/firn_pbf.h, one
 * thread per particle or per constraint running the body the CPU path
 * (host/pbd_cpu.c) loops over. The particle passes are Jacobi (a thread
 * writes only its particle's correction, applied by the next launch) and
 * walk the grid in the CPU's order, so they too equal the CPU's to
 * rounding.
 *
 * A sweep is one launch per colour, in the colours' order: a colour's
 * constraints share no particle, so its threads touch disjoint particles
 * and the colours run one after another in the stream - the CPU's
 * Gauss-Seidel order, so the state equals the CPU's to rounding. PBD-rigid
 * is kernels/pair_pbd_rigid.cu; MPM-PBD is here (it
 * sorts the PBD particles by MPM node with CUB, as the CPU path sorts them
 * with qsort, ties by index, and runs one node per run of equal keys). */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cub/device/device_radix_sort.cuh>

#include "couple.cuh"
#include "cuda_backend.h"
#include "error.h"
#include "firn_pbd_coupling.h"
#include "firn_pbf.h"
#include "neighbour.cuh"
#include "pbd.cuh"
#include "sph.cuh" /* firn_cuda_world_stream */
#include "world.h"

#define FIRN_PBD_BLOCK 256

struct firn_pbd_cuda {
    firn_pbd_particles s; /* device SoA: x, v, x0, mass, w, dx, lambda, rho contiguous, then mat */
    void *p_block;        /* the allocation of s */
    /* Device constraints: v, rest, compliance, lambda, order; colours and
     * colour_start are the host's (firn_pbd), so colour_start is NULL here
     * (no host pointer reaches a kernel). */
    firn_pbd_constraints stretch, bend;
    void *c_block;           /* the allocation of both */
    firn_nbr_cuda N;         /* the neighbour grid (cells 0: cloth only, none) */
    void *g_block;           /* the allocation of N's arrays */
    void *temp;              /* CUB scratch of N's build */
    firn_pbd_material *mats; /* FIRN_MAX_MATERIALS, by scene material index */
    unsigned long long *bad; /* first non-finite PBD particle (firn_cuda_bad_word) */
    void *small_block;       /* mats and bad */
    /* MPM-PBD (NULL block: the pair is off): per particle its node key
     * (firn_mpm_pbd_node_of) and index, both sorted by key (stable: ties
     * by index), CUB's sort scratch and the key's bits. */
    long long *mp_key, *mp_key_sorted;
    int *mp_ids, *mp_order;
    void *mp_block, *mp_temp;
    size_t mp_temp_bytes;
    int mp_end_bit;
    size_t bytes;
};

static unsigned blocks_for(long long n)
{
    return (unsigned)((n + FIRN_PBD_BLOCK - 1) / FIRN_PBD_BLOCK);
}

/* ---- kernels ------------------------------------------------------------- */

static __global__ void pbd_predict(firn_pbd_params P, const firn_pbd_material *mats,
                                   firn_pbd_particles s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        firn_pbd_predict(i, &P, mats, s);
}

/* One colour of a sweep: the constraints order[k0 .. k1). */
static __global__ void pbd_stretch(firn_pbd_constraints E, int k0, int k1, float dt,
                                   firn_pbd_particles s)
{
    int k = k0 + (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (k < k1)
        firn_pbd_stretch(E.order[k], &E, dt, s);
}

static __global__ void pbd_bend(firn_pbd_constraints B, int k0, int k1, float dt,
                                firn_pbd_particles s)
{
    int k = k0 + (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (k < k1)
        firn_pbd_bend(B.order[k], &B, dt, s);
}

static __global__ void pbf_lambda(firn_pbd_params P, const firn_pbd_material *mats,
                                  firn_pbd_particles s, firn_nbr_grid G, const firn_rigid *bodies,
                                  int nb)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        firn_pbf_lambda(i, &P, mats, s, G, bodies, nb);
}

static __global__ void pbf_delta(firn_pbd_params P, const firn_pbd_material *mats,
                                 firn_pbd_particles s, firn_nbr_grid G)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        firn_pbf_delta(i, &P, mats, s, G);
}

static __global__ void pbf_viscosity(firn_pbd_params P, const firn_pbd_material *mats,
                                     firn_pbd_particles s, firn_nbr_grid G)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        firn_pbf_viscosity(i, &P, mats, s, G);
}

static __global__ void pbd_contact(firn_pbd_params P, const firn_pbd_material *mats,
                                   firn_pbd_particles s, firn_nbr_grid G)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        firn_pbd_contact(i, &P, mats, s, G);
}

static __global__ void pbd_apply(firn_pbd_particles s, float dt)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        firn_pbd_apply(i, s, dt);
}

static __global__ void pbd_finish(firn_pbd_params P, firn_pbd_particles s, unsigned long long *bad,
                                  unsigned substep)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n && !firn_pbd_finish(i, &P, s))
        atomicMin(bad, firn_cuda_bad_word(substep, i));
}

/* MPM-PBD's keys: particle i's node (at its start-of-substep position). */
static __global__ void mpm_pbd_keys(firn_params P, firn_pbd_particles s, long long *key, int *ids)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n) {
        key[i] = firn_mpm_pbd_node_of(firn_load3(s.x0, s.n, i), P.lower, P.inv_dx, P.n);
        ids[i] = i;
    }
}

/* One thread per sorted position; the first of each run of equal keys
 * runs its node (host/coupler.c couple_mpm_pbd's loop body) over the run's
 * particles, in index order. Runs touch disjoint particles and nodes. */
static __global__ void mpm_pbd_nodes(firn_params P, firn_grid g, firn_pbd_particles s,
                                     const long long *key, const int *order)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= s.n || (k > 0 && key[k - 1] == key[k]))
        return;
    const long long node = key[k];
    int count = 1;
    while (k + count < s.n && key[k + count] == node)
        count++;
    const float m = g.node[4 * node + 3];
    if (!(m > 0.0f))
        return;
    const float *q = g.node + 4 * node;
    const firn_vec3 v = firn_mpm_pbd_node(firn_v3(q[0], q[1], q[2]), m, order + k, count, s, P.dt);
    firn_grid_store_velocity(node, g, firn_grid_walls(node, &P, v));
}

/* ---- launchers ------------------------------------------------------------ */

/* One Gauss-Seidel sweep over C (firn_pbd_cpu_sweep): a launch per colour,
 * the colour ranges from the host's copy H. */
static int queue_sweep(const firn_pbd_constraints *C, const firn_pbd_constraints *H, int bend,
                       float dt, firn_pbd_particles s, cudaStream_t st, firn_error *err)
{
    for (int c = 0; c < H->colours; c++) {
        const int k0 = H->colour_start[c], k1 = H->colour_start[c + 1];
        if (k1 <= k0)
            continue;
        if (bend) {
            FIRN_LAUNCH(pbd_bend, blocks_for(k1 - k0), FIRN_PBD_BLOCK, 0, st, *C, k0, k1, dt, s);
            FIRN_CUDA_CHECK_LAUNCH("pbd_bend", st, err);
        } else {
            FIRN_LAUNCH(pbd_stretch, blocks_for(k1 - k0), FIRN_PBD_BLOCK, 0, st, *C, k0, k1, dt, s);
            FIRN_CUDA_CHECK_LAUNCH("pbd_stretch", st, err);
        }
    }
    return 0;
}

/* One Jacobi pass: the corrections, then their application. */
#define QUEUE_PASS(kernel)                                                                         \
    do {                                                                                           \
        FIRN_LAUNCH(kernel, b, FIRN_PBD_BLOCK, 0, st, H->P, S->mats, S->s, S->N.G);                \
        FIRN_CUDA_CHECK_LAUNCH(#kernel, st, err);                                                  \
        FIRN_LAUNCH(pbd_apply, b, FIRN_PBD_BLOCK, 0, st, S->s, H->P.dt);                           \
        FIRN_CUDA_CHECK_LAUNCH("pbd_apply", st, err);                                              \
    } while (0)

/* The particle passes (host/pbd_cpu.c firn_pbd_cpu_particle_passes): the
 * density iterations, the viscosity iterations, contact, each pass on a
 * grid rebuilt from the current positions. */
static int queue_particle_passes(firn_pbd_cuda *S, const firn_pbd *H, const firn_rigid *bodies,
                                 int nb, double *acc, cudaStream_t st, firn_error *err)
{
    const unsigned b = blocks_for(S->s.n);
    for (int it = 0; it < H->density_iterations; it++) {
        if (firn_cuda_nbr_queue_build(&S->N, &H->P.nb, S->s.x, st, err))
            return FIRN_CUDA_FAILED;
        FIRN_LAUNCH(pbf_lambda, b, FIRN_PBD_BLOCK, 0, st, H->P, S->mats, S->s, S->N.G, bodies, nb);
        FIRN_CUDA_CHECK_LAUNCH("pbf_lambda", st, err);
        FIRN_LAUNCH(pbf_delta, b, FIRN_PBD_BLOCK, 0, st, H->P, S->mats, S->s, S->N.G);
        FIRN_CUDA_CHECK_LAUNCH("pbf_delta", st, err);
        if (nb > 0) {
            const firn_pbd_view V = firn_cuda_pbd_view(S, &H->P);
            if (firn_cuda_queue_pbf_rigid(&V, bodies, nb, acc, st, err))
                return FIRN_CUDA_FAILED;
        }
        FIRN_LAUNCH(pbd_apply, b, FIRN_PBD_BLOCK, 0, st, S->s, H->P.dt);
        FIRN_CUDA_CHECK_LAUNCH("pbd_apply", st, err);
    }
    for (int it = 0; it < H->viscosity_iterations; it++) {
        if (firn_cuda_nbr_queue_build(&S->N, &H->P.nb, S->s.x, st, err))
            return FIRN_CUDA_FAILED;
        QUEUE_PASS(pbf_viscosity);
    }
    if (firn_cuda_nbr_queue_build(&S->N, &H->P.nb, S->s.x, st, err))
        return FIRN_CUDA_FAILED;
    QUEUE_PASS(pbd_contact);
    return 0;
}

static int pbd_queue_pre(firn_world *w, firn_step *step)
{
    firn_pbd_cuda *S = w->pbd.cuda;
    const firn_pbd *H = &w->pbd;
    firn_error *err = step->err;
    const cudaStream_t st = firn_cuda_world_stream(w);
    FIRN_LAUNCH(pbd_predict, blocks_for(S->s.n), FIRN_PBD_BLOCK, 0, st, H->P, S->mats, S->s);
    FIRN_CUDA_CHECK_LAUNCH("pbd_predict", st, err);
    if (S->stretch.n > 0)
        FIRN_CUDA_CHECK(
            cudaMemsetAsync(S->stretch.lambda, 0, (size_t)S->stretch.n * sizeof(float), st), err);
    if (S->bend.n > 0)
        FIRN_CUDA_CHECK(cudaMemsetAsync(S->bend.lambda, 0, (size_t)S->bend.n * sizeof(float), st),
                        err);
    for (int it = 0; it < H->stretch_iterations; it++)
        if (queue_sweep(&S->stretch, &H->stretch, 0, H->P.dt, S->s, st, err))
            return FIRN_CUDA_FAILED;
    for (int it = 0; it < H->bending_iterations; it++)
        if (queue_sweep(&S->bend, &H->bend, 1, H->P.dt, S->s, st, err))
            return FIRN_CUDA_FAILED;
    if (firn_step_mark(step, FIRN_PROF_PBD_CONSTRAINTS))
        return FIRN_CUDA_FAILED;
    int nb = 0;
    double *acc;
    const firn_rigid *bodies = firn_cuda_world_rigids(w, &nb, &acc);
    if (!w->coupler.pbd_rigid)
        nb = 0;
    if (H->particle_passes && queue_particle_passes(S, H, bodies, nb, acc, st, err))
        return FIRN_CUDA_FAILED;
    return 0;
}

static int pbd_queue_post(firn_world *w, firn_step *step)
{
    firn_pbd_cuda *S = w->pbd.cuda;
    const cudaStream_t st = firn_cuda_world_stream(w);
    FIRN_LAUNCH(pbd_finish, blocks_for(S->s.n), FIRN_PBD_BLOCK, 0, st, w->pbd.P, S->s, S->bad,
                step->substep);
    FIRN_CUDA_CHECK_LAUNCH("pbd_finish", st, step->err);
    return 0;
}

const firn_phase_ops firn_cuda_pbd_phases = {NULL, pbd_queue_pre, pbd_queue_post};

int firn_cuda_pbd_queue_mpm(firn_pbd_cuda *S, const firn_params *P, firn_grid g, cudaStream_t st,
                            firn_error *err)
{
    if (!S->mp_block || S->s.n == 0)
        return 0;
    const unsigned b = blocks_for(S->s.n);
    FIRN_LAUNCH(mpm_pbd_keys, b, FIRN_PBD_BLOCK, 0, st, *P, S->s, S->mp_key, S->mp_ids);
    FIRN_CUDA_CHECK_LAUNCH("mpm_pbd_keys", st, err);
    size_t bytes = S->mp_temp_bytes;
    FIRN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(S->mp_temp, bytes, S->mp_key, S->mp_key_sorted,
                                                    S->mp_ids, S->mp_order, S->s.n, 0,
                                                    S->mp_end_bit, st),
                    err);
    FIRN_LAUNCH(mpm_pbd_nodes, b, FIRN_PBD_BLOCK, 0, st, *P, g, S->s, S->mp_key_sorted,
                S->mp_order);
    FIRN_CUDA_CHECK_LAUNCH("mpm_pbd_nodes", st, err);
    return 0;
}

firn_pbd_view firn_cuda_pbd_view(const firn_pbd_cuda *S, const firn_pbd_params *P)
{
    /* Zeroed first: the padding after P travels to the kernel too, and
     * must not look like an address (the emulator scans every word). */
    firn_pbd_view V;
    memset(&V, 0, sizeof V);
    V.P = *P;
    V.mats = S->mats;
    V.s = S->s;
    return V;
}

int firn_cuda_pbd_end_call(firn_world *w, unsigned long long *bad, firn_error *err)
{
    return firn_cuda_take_bad_word(w->pbd.cuda->bad, firn_cuda_world_stream(w), bad, err);
}

void firn_cuda_pbd_discard_bad_word(firn_world *w)
{
    firn_cuda_discard_bad_word(w->pbd.cuda->bad, firn_cuda_world_stream(w));
}

size_t firn_cuda_pbd_bytes(const firn_pbd_cuda *S) { return S ? S->bytes : 0; }

/* ---- device state --------------------------------------------------------- */

/* The particle block: the float arrays contiguous (x, v, x0: 3n each;
 * mass, w: n each; dx: 3n; lambda, rho: n each), then mat. */
static size_t particle_layout(int n, char *base, firn_pbd_particles *s)
{
    const size_t nn = (size_t)n, floats = firn_align256(16 * nn * sizeof(float));
    if (base) {
        s->n = n;
        s->x = (float *)base;
        s->v = s->x + 3 * nn;
        s->x0 = s->v + 3 * nn;
        s->mass = s->x0 + 3 * nn;
        s->w = s->mass + nn;
        s->dx = s->w + nn;
        s->lambda = s->dx + 3 * nn;
        s->rho = s->lambda + nn;
        s->mat = (uint8_t *)(base + floats);
    }
    return floats + firn_align256(nn);
}

/* The constraint block: for stretch, then bending, the vertices (k per
 * constraint), rest, compliance, lambda and order, each 256-byte aligned. */
static size_t constraint_layout(int edges, int bends, char *base, firn_pbd_cuda *S)
{
    firn_pbd_constraints *C[2] = {&S->stretch, &S->bend};
    const int count[2] = {edges, bends}, k[2] = {2, 4};
    size_t total = 0;
    for (int c = 0; c < 2; c++) {
        const size_t m = (size_t)count[c];
        const size_t bytes[5] = {k[c] * m * 4, m * 4, m * 4, m * 4, m * 4};
        size_t off[5];
        for (int q = 0; q < 5; q++) {
            off[q] = total;
            total += firn_align256(bytes[q]);
        }
        if (base) {
            C[c]->n = count[c];
            C[c]->k = k[c];
            C[c]->v = (int *)(base + off[0]);
            C[c]->rest = (float *)(base + off[1]);
            C[c]->compliance = (float *)(base + off[2]);
            C[c]->lambda = (float *)(base + off[3]);
            C[c]->order = (int *)(base + off[4]);
            C[c]->colours = 0;
            C[c]->colour_start = NULL;
        }
    }
    return total;
}

static const size_t small_bytes =
    ((FIRN_MAX_MATERIALS * sizeof(firn_pbd_material) + 255) & ~(size_t)255) +
    sizeof(unsigned long long);

/* Checks that the PBD state (want bytes) fits in the free device memory
 * with its kernels' and the PBD-rigid kernel's extra stack (firn_cuda_room)
 * and the driver's rounding of the two large allocations. */
static int check_memory(const firn_world *w, size_t want, firn_error *err)
{
    size_t local = 0;
    const void *const kernels[] = {(const void *)pbd_predict,   (const void *)pbd_stretch,
                                   (const void *)pbd_bend,      (const void *)pbd_finish,
                                   (const void *)pbf_lambda,    (const void *)pbf_delta,
                                   (const void *)pbf_viscosity, (const void *)pbd_contact};
    if (firn_cuda_local_bytes(kernels, 8, &local, err) ||
        firn_cuda_pbd_coupling_local_bytes(&local, err))
        return FIRN_CUDA_FAILED;
    firn_cuda_room r;
    if (firn_cuda_room_for(local, &r, err))
        return FIRN_CUDA_FAILED;
    const size_t rounding = (size_t)3 << 21;
    if (want + r.reserve + rounding > r.free_b) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "not enough GPU memory on %s for the PBD solver: %zu bytes (%.1f MiB) "
                       "requested for %d PBD particles, %d stretch and %d bending constraints, "
                       "%.1f MiB of kernel stack and up to %.0f MiB of allocation rounding; %zu "
                       "bytes (%.1f MiB) free of %zu (%.1f MiB); use coarser cloth, or "
                       "--backend cpu",
                       w->device_name, want, (double)want / (1 << 20), w->pbd.n, w->pbd.stretch.n,
                       w->pbd.bend.n, (double)r.reserve / (1 << 20), (double)rounding / (1 << 20),
                       r.free_b, (double)r.free_b / (1 << 20), r.total_b,
                       (double)r.total_b / (1 << 20));
        return FIRN_CUDA_FAILED;
    }
    return 0;
}

/* Uploads constraints H into the device arrays of C (lambda zeroed: it
 * starts every substep at 0). */
static int upload_constraints(firn_pbd_constraints *C, const firn_pbd_constraints *H,
                              cudaStream_t st, firn_error *err)
{
    const size_t m = (size_t)H->n;
    if (m == 0)
        return 0;
    FIRN_CUDA_CHECK(
        cudaMemcpyAsync(C->v, H->v, (size_t)H->k * m * sizeof(int), cudaMemcpyHostToDevice, st),
        err);
    FIRN_CUDA_CHECK(
        cudaMemcpyAsync(C->rest, H->rest, m * sizeof(float), cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(C->compliance, H->compliance, m * sizeof(float),
                                    cudaMemcpyHostToDevice, st),
                    err);
    FIRN_CUDA_CHECK(
        cudaMemcpyAsync(C->lambda, H->lambda, m * sizeof(float), cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(
        cudaMemcpyAsync(C->order, H->order, m * sizeof(int), cudaMemcpyHostToDevice, st), err);
    return 0;
}

static int state_init(firn_world *w, firn_pbd_cuda *S, firn_error *err)
{
    const firn_pbd *H = &w->pbd;
    const int n = H->n;
    const cudaStream_t st = firn_cuda_world_stream(w);
    const size_t p_bytes = particle_layout(n, NULL, NULL);
    const size_t c_bytes = constraint_layout(H->stretch.n, H->bend.n, NULL, S);
    const int cells = H->G.cells;
    const size_t g_bytes = cells > 0 ? firn_cuda_nbr_layout(n, cells, NULL, NULL) : 0;
    const size_t layout = firn_pbd_device_bytes(n, H->stretch.n, H->bend.n, cells);
    if (p_bytes + c_bytes + g_bytes != layout) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "internal: the PBD device layout (%zu B) differs from firn_pbd_device_bytes "
                       "(%zu B)",
                       p_bytes + c_bytes + g_bytes, layout);
        return FIRN_CUDA_FAILED;
    }
    size_t temp_bytes = 0;
    if (cells > 0 && firn_cuda_nbr_scratch(&S->N, n, cells, &temp_bytes, err))
        return FIRN_CUDA_FAILED;
    const size_t want =
        p_bytes + c_bytes + g_bytes + firn_align256(small_bytes) + firn_align256(temp_bytes);
    if (check_memory(w, want, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(cudaMalloc(&S->p_block, p_bytes), err);
    particle_layout(n, (char *)S->p_block, &S->s);
    if (c_bytes > 0)
        FIRN_CUDA_CHECK(cudaMalloc(&S->c_block, c_bytes), err);
    constraint_layout(H->stretch.n, H->bend.n, (char *)S->c_block, S);
    if (cells > 0) {
        FIRN_CUDA_CHECK(cudaMalloc(&S->g_block, g_bytes), err);
        firn_cuda_nbr_layout(n, cells, (char *)S->g_block, &S->N);
        FIRN_CUDA_CHECK(cudaMalloc(&S->temp, temp_bytes > 0 ? temp_bytes : 1), err);
        S->N.temp = S->temp;
        S->N.temp_bytes = temp_bytes;
        if (firn_cuda_nbr_reset(&S->N, st, err))
            return FIRN_CUDA_FAILED;
    }
    FIRN_CUDA_CHECK(cudaMalloc(&S->small_block, small_bytes), err);
    S->mats = (firn_pbd_material *)S->small_block;
    S->bad =
        (unsigned long long *)((char *)S->small_block + (small_bytes - sizeof(unsigned long long)));
    S->bytes = want;

    /* Pageable host sources are staged at the call, so the local may go. */
    static const unsigned long long none = FIRN_CUDA_BAD_NONE;
    const size_t n3 = 3 * (size_t)n * sizeof(float), n1 = (size_t)n * sizeof(float);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->s.x, H->s.x, n3, cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->s.v, H->s.v, n3, cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->s.x0, H->s.x0, n3, cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->s.mass, H->s.mass, n1, cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->s.w, H->s.w, n1, cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaMemsetAsync(S->s.dx, 0, 5 * n1, st), err); /* dx, lambda, rho */
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->s.mat, H->s.mat, (size_t)n, cudaMemcpyHostToDevice, st),
                    err);
    if (upload_constraints(&S->stretch, &H->stretch, st, err) ||
        upload_constraints(&S->bend, &H->bend, st, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->mats, H->mats,
                                    FIRN_MAX_MATERIALS * sizeof(firn_pbd_material),
                                    cudaMemcpyHostToDevice, st),
                    err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->bad, &none, sizeof none, cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    return 0;
}

/* MPM-PBD's keys, indices and CUB's scratch, sized for the world's grid:
 * keys below its node count, so the sort runs over that many bits. */
static int mpm_pbd_init(firn_world *w, firn_pbd_cuda *S, firn_error *err)
{
    const long long nodes = (long long)w->params.n[0] * w->params.n[1] * w->params.n[2];
    const int n = S->s.n;
    S->mp_end_bit = 1;
    while (S->mp_end_bit < 63 && (1LL << S->mp_end_bit) < nodes)
        S->mp_end_bit++;
    size_t temp = 0;
    FIRN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
                        NULL, temp, (const long long *)NULL, (long long *)NULL, (const int *)NULL,
                        (int *)NULL, n, 0, S->mp_end_bit, firn_cuda_world_stream(w)),
                    err);
    const size_t kb = firn_align256((size_t)n * sizeof(long long)),
                 ib = firn_align256((size_t)n * sizeof(int)), want = 2 * kb + 2 * ib;
    size_t free_b = 0, total_b = 0;
    FIRN_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b), err);
    if (want + firn_align256(temp) + ((size_t)2 << 20) > free_b) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "not enough GPU memory on %s for the MPM-PBD pair's sort: %zu bytes "
                       "requested for %d PBD particles, %zu free; use --backend cpu",
                       w->device_name, want + temp, n, free_b);
        return FIRN_CUDA_FAILED;
    }
    FIRN_CUDA_CHECK(cudaMalloc(&S->mp_block, want), err);
    FIRN_CUDA_CHECK(cudaMalloc(&S->mp_temp, temp > 0 ? temp : 1), err);
    char *base = (char *)S->mp_block;
    S->mp_key = (long long *)base;
    S->mp_key_sorted = (long long *)(base + kb);
    S->mp_ids = (int *)(base + 2 * kb);
    S->mp_order = (int *)(base + 2 * kb + ib);
    S->mp_temp_bytes = temp;
    S->bytes += want + firn_align256(temp);
    return 0;
}

/* ---- launchers (extern "C", declared in host/cuda_backend.h) ---------- */

extern "C" int firn_cuda_pbd_init(firn_world *w, firn_error *err)
{
    if (w->pbd.n == 0)
        return 0;
    if (!w->cuda) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "firn_cuda_pbd_init: the CUDA backend of this world is not initialised");
        return FIRN_CUDA_FAILED;
    }
    firn_pbd_cuda *S = (firn_pbd_cuda *)calloc(1, sizeof *S);
    if (!S) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory");
        return FIRN_CUDA_FAILED;
    }
    w->pbd.cuda = S;
    if (state_init(w, S, err) || (w->coupler.mpm_pbd && mpm_pbd_init(w, S, err))) {
        firn_cuda_pbd_free(w);
        return FIRN_CUDA_FAILED;
    }
    w->pbd.host_stale = 0;
    return 0;
}

/* Best effort, as firn_cuda_free. */
extern "C" void firn_cuda_pbd_free(firn_world *w)
{
    firn_pbd_cuda *S = w->pbd.cuda;
    if (!S)
        return;
    if (w->cuda)
        (void)cudaStreamSynchronize(firn_cuda_world_stream(w));
    cudaFree(S->p_block);
    cudaFree(S->c_block);
    cudaFree(S->g_block);
    cudaFree(S->temp);
    cudaFree(S->small_block);
    cudaFree(S->mp_block);
    cudaFree(S->mp_temp);
    (void)cudaGetLastError();
    free(S);
    w->pbd.cuda = NULL;
}

/* What the device changes: x, v, x0, the liquid's density and the
 * multipliers (mass, w, mat and the topology never change; dx and the
 * liquid's lambda are scratch of a substep). */
extern "C" int firn_cuda_pbd_download(firn_world *w, firn_error *err)
{
    firn_pbd_cuda *S = w->pbd.cuda;
    if (!S || !w->cuda) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "firn_cuda_pbd_download: the PBD solver of this world is not on the GPU");
        return FIRN_CUDA_FAILED;
    }
    firn_pbd *H = &w->pbd;
    const cudaStream_t st = firn_cuda_world_stream(w);
    const size_t n3 = 3 * (size_t)S->s.n * sizeof(float);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(H->s.x, S->s.x, n3, cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(H->s.v, S->s.v, n3, cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(H->s.x0, S->s.x0, n3, cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(H->s.rho, S->s.rho, (size_t)S->s.n * sizeof(float),
                                    cudaMemcpyDeviceToHost, st),
                    err);
    if (S->stretch.n > 0)
        FIRN_CUDA_CHECK(cudaMemcpyAsync(H->stretch.lambda, S->stretch.lambda,
                                        (size_t)S->stretch.n * sizeof(float),
                                        cudaMemcpyDeviceToHost, st),
                        err);
    if (S->bend.n > 0)
        FIRN_CUDA_CHECK(cudaMemcpyAsync(H->bend.lambda, S->bend.lambda,
                                        (size_t)S->bend.n * sizeof(float), cudaMemcpyDeviceToHost,
                                        st),
                        err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    return 0;
}

/* MPM-PBD's step of the couple stage (host/coupler.c), on the grid after
 * its update. */
static int mpm_pbd_queue(firn_world *w, firn_step *st)
{
    return firn_cuda_pbd_queue_mpm(w->pbd.cuda, st->P, firn_cuda_world_grid(w),
                                   firn_cuda_world_stream(w), st->err);
}

extern "C" const firn_step_fn firn_cuda_mpm_pbd = mpm_pbd_queue;

/* PBD-rigid's step of the couple stage (host/coupler.c): the pair's
 * kernels (kernels/pair_pbd_rigid.cu) on this solver's device view. */
static int pbd_rigid_queue(firn_world *w, firn_step *st)
{
    const firn_pbd_view B = firn_cuda_pbd_view(w->pbd.cuda, &w->pbd.P);
    int n;
    double *acc;
    const firn_rigid *bodies = firn_cuda_world_rigids(w, &n, &acc);
    return firn_cuda_queue_pbd_rigid(&B, bodies, n, acc, firn_cuda_world_stream(w), st->err);
}

extern "C" const firn_step_fn firn_cuda_pbd_rigid = pbd_rigid_queue;
