/* sph.cu - the SPH solver on the CUDA path: its device state, the
 * neighbour grid (kernels/neighbour.cu, the same order as the CPU's), and
 * one thin kernel per pass of include/firn_sph.h, one thread per particle
 * running the body the CPU path (host/sph_cpu.c) loops over.
 *
 * A DFSPH solve is queued as `cap` iterations with no host round trip, two
 * launches each: iterate, then source-and-sum, which writes each
 * particle's source term, sums the error terms of its block in a fixed
 * tree into a per-block partial sum, and whose last block to finish adds
 * the partial sums in block order, counts the iteration and sets a device
 * flag when the mean is within the tolerance. Every block of a later
 * iteration reads the flag and returns at once: an iteration queued after
 * convergence costs two launches of blocks_for(n) blocks, each block
 * loading the flag and nothing else (no per-particle work, no reduction;
 * the scenes' default cap is 100 iterations a solve, and solves converge in
 * a few). The sums' order is fixed, so the iteration counts do not depend
 * on the block schedule. The iteration counts are read back once per
 * firn_cuda_run. */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_backend.h"
#include "error.h"
#include "neighbour.cuh"
#include "sph.cuh"
#include "world.h"

#define FIRN_SPH_BLOCK 256

/* Device scalars of the solver. */
struct sph_flags {
    unsigned long long bad; /* first non-finite SPH particle (firn_cuda_bad_word) */
    /* Blocks of the solves' iterate and source-and-sum launches that did
     * their particles' work (divergence / density), since the state was
     * made: 2 blocks_for(n) per iteration run, none per converged one. */
    unsigned long long work[2];
    unsigned ticket; /* blocks of the running source-and-sum done with their partial sum */
    int done;        /* the current DFSPH solve has converged */
    int last[2];     /* iterations of the latest divergence / density solve */
    int total[2];    /* iterations since the start of the call */
};

struct firn_sph_cuda {
    firn_sph_particles s; /* device SoA: x, v, acc, rho, p, alpha, drho as on the host, then mat */
    void *p_block;        /* the allocation of s */
    firn_nbr_cuda N;      /* device neighbour grid */
    double *part;  /* per-block partial sums of the DFSPH error terms (blocks_for(n) used of n) */
    void *g_block; /* the allocation of N's arrays and part */
    firn_sph_material *mats; /* FIRN_MAX_MATERIALS, by scene material index */
    sph_flags *flags;
    void *small_block; /* mats and flags */
    void *temp;        /* CUB temporary storage, the larger of sort and scan */
    size_t temp_bytes;
    size_t bytes;
};

/* ---- kernels ------------------------------------------------------------- */

static __global__ void sph_density(firn_sph_params P, const firn_sph_material *mats,
                                   firn_sph_particles s, firn_nbr_grid G, const firn_rigid *bodies,
                                   int nb, firn_mpm_level L, const float *fem_d)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        s.rho[i] = firn_sph_density_rigid(i, &P, mats, s, G, bodies, nb, &L, fem_d);
}

static __global__ void sph_nonpressure(firn_sph_params P, const firn_sph_material *mats,
                                       firn_sph_particles s, firn_nbr_grid G)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        firn_store3(s.acc, s.n, i, firn_sph_nonpressure(i, &P, mats, s, G));
}

static __global__ void sph_eos(const firn_sph_material *mats, firn_sph_particles s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        firn_sph_eos(i, mats, s);
}

static __global__ void sph_pressure_step(firn_sph_params P, const firn_sph_material *mats,
                                         firn_sph_particles s, firn_nbr_grid G)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        firn_sph_pressure_step(i, &P, mats, s, G);
}

static __global__ void sph_kick(firn_sph_params P, firn_sph_particles s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        firn_sph_kick(i, &P, s);
}

static __global__ void sph_df_factor(firn_sph_params P, firn_sph_particles s, firn_nbr_grid G)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        firn_sph_df_factor(i, &P, s, G);
}

/* A solve's first source (divergence: density = 0; density: 1), before
 * its iterations. */
static __global__ void sph_df_source(firn_sph_params P, const firn_sph_material *mats,
                                     firn_sph_particles s, firn_nbr_grid G, int density)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= s.n)
        return;
    if (density)
        firn_sph_df_density_source(i, &P, mats, s, G);
    else
        firn_sph_df_div_source(i, &P, s, G);
}

/* The first launch of a solve's iteration. */
static __global__ void sph_df_iterate(firn_sph_params P, const firn_sph_material *mats,
                                      firn_sph_particles s, firn_nbr_grid G, int density,
                                      sph_flags *f)
{
    if (f->done)
        return;
    if (threadIdx.x == 0)
        atomicAdd(&f->work[density], 1ULL);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n)
        firn_sph_df_iterate(i, &P, mats, s, G, density);
}

/* The sum of v over the block's threads into sum[0], in a fixed tree
 * (blockDim.x == FIRN_SPH_BLOCK, a power of two). */
static __device__ void block_sum(double *sum, double v)
{
    sum[threadIdx.x] = v;
    __syncthreads();
    for (unsigned k = FIRN_SPH_BLOCK / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            sum[threadIdx.x] += sum[threadIdx.x + k];
        __syncthreads();
    }
}

/* The second launch of a solve's iteration: the source terms, the block's
 * sum of the error terms into part[blockIdx.x], and in the last block to
 * finish (the ticket) the sum of part in block order, the iteration's count
 * and the convergence check of host/sph_cpu.c df_solve. Every block reads
 * done before the last one writes it, so all of a launch see one value. */
static __global__ void sph_df_source_sum(firn_sph_params P, const firn_sph_material *mats,
                                         firn_sph_particles s, firn_nbr_grid G, int density,
                                         sph_flags *f, double *part, float tol)
{
    __shared__ double sum[FIRN_SPH_BLOCK];
    __shared__ int last;
    if (f->done)
        return;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double e = 0.0;
    if (i < s.n) {
        if (density)
            firn_sph_df_density_source(i, &P, mats, s, G);
        else
            firn_sph_df_div_source(i, &P, s, G);
        e = firn_sph_df_error(i, s, density);
    }
    block_sum(sum, e);
    if (threadIdx.x == 0) {
        part[blockIdx.x] = sum[0];
        atomicAdd(&f->work[density], 1ULL);
        __threadfence(); /* part written before the ticket is taken */
        last = atomicAdd(&f->ticket, 1u) == gridDim.x - 1;
        __threadfence(); /* and the other blocks' parts read after it */
    }
    __syncthreads();
    if (!last)
        return;
    double acc = 0.0;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)
        acc += ((volatile const double *)part)[b];
    block_sum(sum, acc);
    if (threadIdx.x == 0) {
        f->ticket = 0;
        f->last[density]++;
        f->total[density]++;
        if (sum[0] / (double)s.n <= (double)tol)
            f->done = 1;
    }
}

static __global__ void sph_advect(firn_sph_params P, firn_sph_particles s, unsigned long long *bad,
                                  unsigned substep)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= s.n)
        return;
    firn_sph_advect(i, &P, s);
    const int n = s.n;
    float sum = 0.0f;
    for (int c = 0; c < 3; c++)
        sum += s.x[firn_soa_index(c, n, i)] + s.v[firn_soa_index(c, n, i)];
    if (!isfinite(sum))
        atomicMin(bad, firn_cuda_bad_word(substep, i));
}

/* ---- phases ------------------------------------------------------------- */

static unsigned blocks_for(long long n)
{
    return (unsigned)((n + FIRN_SPH_BLOCK - 1) / FIRN_SPH_BLOCK);
}

/* One DFSPH solve: `cap` iterations queued, two launches each, all but
 * the first converged ones returning at once (the file's head). */
static int queue_solve(firn_sph_cuda *S, const firn_sph_params *P, int density, cudaStream_t st,
                       firn_error *err)
{
    const int cap = density ? P->dens_iters : P->div_iters;
    const unsigned b = blocks_for(S->s.n);
    const float tol = firn_sph_df_threshold(P, density);
    FIRN_CUDA_CHECK(cudaMemsetAsync(&S->flags->done, 0, sizeof(int), st), err);
    FIRN_CUDA_CHECK(cudaMemsetAsync(&S->flags->last[density], 0, sizeof(int), st), err);
    for (int it = 0; it < cap; it++) {
        FIRN_LAUNCH(sph_df_iterate, b, FIRN_SPH_BLOCK, 0, st, *P, S->mats, S->s, S->N.G, density,
                    S->flags);
        FIRN_CUDA_CHECK_LAUNCH("sph_df_iterate", st, err);
        FIRN_LAUNCH(sph_df_source_sum, b, FIRN_SPH_BLOCK, 0, st, *P, S->mats, S->s, S->N.G, density,
                    S->flags, S->part, tol);
        FIRN_CUDA_CHECK_LAUNCH("sph_df_source_sum", st, err);
    }
    return 0;
}

static int queue_wcsph(firn_sph_cuda *S, const firn_sph_params *P, cudaStream_t st, firn_error *err)
{
    const unsigned b = blocks_for(S->s.n);
    FIRN_LAUNCH(sph_nonpressure, b, FIRN_SPH_BLOCK, 0, st, *P, S->mats, S->s, S->N.G);
    FIRN_CUDA_CHECK_LAUNCH("sph_nonpressure", st, err);
    FIRN_LAUNCH(sph_eos, b, FIRN_SPH_BLOCK, 0, st, S->mats, S->s);
    FIRN_CUDA_CHECK_LAUNCH("sph_eos", st, err);
    FIRN_LAUNCH(sph_pressure_step, b, FIRN_SPH_BLOCK, 0, st, *P, S->mats, S->s, S->N.G);
    FIRN_CUDA_CHECK_LAUNCH("sph_pressure_step", st, err);
    return 0;
}

/* Bender and Koschier's order, as host/sph_cpu.c dfsph. */
static int queue_dfsph(firn_sph_cuda *S, const firn_sph_params *P, cudaStream_t st, firn_error *err)
{
    const unsigned b = blocks_for(S->s.n);
    FIRN_LAUNCH(sph_df_factor, b, FIRN_SPH_BLOCK, 0, st, *P, S->s, S->N.G);
    FIRN_CUDA_CHECK_LAUNCH("sph_df_factor", st, err);
    FIRN_LAUNCH(sph_df_source, b, FIRN_SPH_BLOCK, 0, st, *P, S->mats, S->s, S->N.G, 0);
    FIRN_CUDA_CHECK_LAUNCH("sph_df_source", st, err);
    if (queue_solve(S, P, 0, st, err))
        return FIRN_CUDA_FAILED;
    FIRN_LAUNCH(sph_nonpressure, b, FIRN_SPH_BLOCK, 0, st, *P, S->mats, S->s, S->N.G);
    FIRN_CUDA_CHECK_LAUNCH("sph_nonpressure", st, err);
    FIRN_LAUNCH(sph_kick, b, FIRN_SPH_BLOCK, 0, st, *P, S->s);
    FIRN_CUDA_CHECK_LAUNCH("sph_kick", st, err);
    FIRN_LAUNCH(sph_df_source, b, FIRN_SPH_BLOCK, 0, st, *P, S->mats, S->s, S->N.G, 1);
    FIRN_CUDA_CHECK_LAUNCH("sph_df_source", st, err);
    return queue_solve(S, P, 1, st, err);
}

static int sph_queue_pre(firn_world *w, firn_step *step)
{
    firn_sph_cuda *S = w->sph.cuda;
    const firn_sph_params *P = &w->sph.P;
    firn_error *err = step->err;
    const cudaStream_t st = firn_cuda_world_stream(w);
    /* the MPM bodies MPM-SPH couples, after P2G */
    firn_mpm_level L;
    if (firn_cuda_queue_mpm_level(w, step->P, &L, err))
        return FIRN_CUDA_FAILED;
    /* and the bodies SPH-rigid couples */
    int nb = 0;
    double *acc;
    const firn_rigid *bodies = firn_cuda_world_rigids(w, &nb, &acc);
    if (!w->coupler.sph_rigid)
        bodies = NULL, nb = 0;
    S->N.temp = S->temp;
    S->N.temp_bytes = S->temp_bytes;
    if (firn_cuda_nbr_queue_build(&S->N, &P->nb, S->s.x, st, err) ||
        firn_step_mark(step, FIRN_PROF_SPH_SORT))
        return FIRN_CUDA_FAILED;
    /* and the FEM bodies FEM-SPH couples (firn_fem_sph_face), after the sort */
    firn_sph_view V = firn_cuda_sph_view(S, P);
    if (firn_cuda_fem_queue_sph_distance(w, &V, err))
        return FIRN_CUDA_FAILED;
    FIRN_LAUNCH(sph_density, blocks_for(S->s.n), FIRN_SPH_BLOCK, 0, st, *P, S->mats, S->s, S->N.G,
                bodies, nb, L, V.fem_d);
    FIRN_CUDA_CHECK_LAUNCH("sph_density", st, err);
    if (firn_step_mark(step, FIRN_PROF_SPH_DENSITY))
        return FIRN_CUDA_FAILED;
    return P->solver == FIRN_SPH_DFSPH ? queue_dfsph(S, P, st, err) : queue_wcsph(S, P, st, err);
}

static int sph_queue_post(firn_world *w, firn_step *step)
{
    firn_sph_cuda *S = w->sph.cuda;
    const cudaStream_t st = firn_cuda_world_stream(w);
    FIRN_LAUNCH(sph_advect, blocks_for(S->s.n), FIRN_SPH_BLOCK, 0, st, w->sph.P, S->s,
                &S->flags->bad, step->substep);
    FIRN_CUDA_CHECK_LAUNCH("sph_advect", st, step->err);
    return 0;
}

const firn_phase_ops firn_cuda_sph_phases = {NULL, sph_queue_pre, sph_queue_post};

firn_sph_view firn_cuda_sph_view(const firn_sph_cuda *S, const firn_sph_params *P)
{
    firn_sph_view V;
    memset(&V, 0, sizeof V);
    V.P = *P;
    V.mats = S->mats;
    V.s = S->s;
    V.G = S->N.G;
    return V;
}

int firn_cuda_sph_begin_call(firn_sph_cuda *S, cudaStream_t st, firn_error *err)
{
    FIRN_CUDA_CHECK(cudaMemsetAsync(S->flags->total, 0, sizeof S->flags->total, st), err);
    return 0;
}

int firn_cuda_sph_end_call(firn_world *w, int nsub, unsigned long long *bad, firn_error *err)
{
    firn_sph_cuda *S = w->sph.cuda;
    const cudaStream_t st = firn_cuda_world_stream(w);
    sph_flags f;
    FIRN_CUDA_CHECK(cudaMemcpyAsync(&f, S->flags, sizeof f, cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    if (w->sph.P.solver == FIRN_SPH_DFSPH) {
        for (int k = 0; k < 2; k++) {
            w->sph.iters[k] = f.last[k];
            w->sph.iters_total[k] += f.total[k];
        }
        w->sph.solves += nsub;
    }
    *bad = f.bad;
    return f.bad != FIRN_CUDA_BAD_NONE ? firn_cuda_clear_bad_word(&S->flags->bad, st, err) : 0;
}

void firn_cuda_sph_discard_bad_word(firn_world *w)
{
    firn_cuda_discard_bad_word(&w->sph.cuda->flags->bad, firn_cuda_world_stream(w));
}

size_t firn_cuda_sph_bytes(const firn_sph_cuda *S) { return S ? S->bytes : 0; }

/* ---- device state --------------------------------------------------------- */

/* The particle block: the seven float arrays contiguous in the host's
 * order (x, v, acc: 3n each; rho, p, alpha, drho: n each), so that one copy
 * moves them, then mat. */
static size_t particle_layout(int n, char *base, firn_sph_particles *s)
{
    const size_t nn = (size_t)n, floats = firn_align256(13 * nn * sizeof(float));
    if (base) {
        s->n = n;
        s->x = (float *)base;
        s->v = s->x + 3 * nn;
        s->acc = s->v + 3 * nn;
        s->rho = s->acc + 3 * nn;
        s->p = s->rho + nn;
        s->alpha = s->p + nn;
        s->drho = s->alpha + nn;
        s->mat = (uint8_t *)(base + floats);
    }
    return floats + firn_align256(nn);
}

/* The grid block: the neighbour grid's arrays (kernels/neighbour.cu),
 * then part (n doubles, firn_sph_device_bytes' figure, of which the solves
 * use blocks_for(n)). */
static size_t grid_layout(int n, int cells, char *base, firn_sph_cuda *S)
{
    const size_t nbr = firn_cuda_nbr_layout(n, cells, base, &S->N);
    if (base)
        S->part = (double *)(base + nbr);
    return nbr + firn_align256((size_t)n * sizeof(double));
}

static const size_t small_bytes =
    ((FIRN_MAX_MATERIALS * sizeof(firn_sph_material) + 255) & ~(size_t)255) + sizeof(sph_flags);

/* Checks that the SPH state (want bytes) fits in the free device memory
 * with its kernels' extra stack (firn_cuda_room) and the driver's rounding
 * of the three large allocations. */
static int check_memory(const firn_world *w, size_t want, firn_error *err)
{
    size_t local = 0;
    const void *const kernels[] = {
        (const void *)sph_density,       (const void *)sph_nonpressure,
        (const void *)sph_pressure_step, (const void *)sph_df_iterate,
        (const void *)sph_df_source,     (const void *)sph_df_source_sum};
    if (firn_cuda_local_bytes(kernels, 6, &local, err) ||
        firn_cuda_sph_coupling_local_bytes(&local, err))
        return FIRN_CUDA_FAILED;
    firn_cuda_room r;
    if (firn_cuda_room_for(local, &r, err))
        return FIRN_CUDA_FAILED;
    const size_t rounding = (size_t)4 << 21;
    if (want + r.reserve + rounding > r.free_b) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "not enough GPU memory on %s for the SPH solver: %zu bytes (%.1f MiB) "
                       "requested for %d SPH particles and %d neighbour cells, %.1f MiB of kernel "
                       "stack and up to %.0f MiB of allocation rounding; %zu bytes (%.1f MiB) "
                       "free of %zu (%.1f MiB); use fewer particles, a larger sph.particle_size, "
                       "or --backend cpu",
                       w->device_name, want, (double)want / (1 << 20), w->sph.n, w->sph.G.cells,
                       (double)r.reserve / (1 << 20), (double)rounding / (1 << 20), r.free_b,
                       (double)r.free_b / (1 << 20), r.total_b, (double)r.total_b / (1 << 20));
        return FIRN_CUDA_FAILED;
    }
    return 0;
}

static int state_init(firn_world *w, firn_sph_cuda *S, firn_error *err)
{
    const int n = w->sph.n, cells = w->sph.G.cells;
    const cudaStream_t st = firn_cuda_world_stream(w);
    S->s.n = n;
    /* CUB's scratch, sized once for the neighbour grid's calls. */
    size_t grid_b = 0;
    if (firn_cuda_nbr_scratch(&S->N, n, cells, &grid_b, err))
        return FIRN_CUDA_FAILED;
    S->temp_bytes = grid_b;
    const size_t p_bytes = particle_layout(n, NULL, NULL), g_bytes = grid_layout(n, cells, NULL, S);
    if (p_bytes + g_bytes != firn_sph_device_bytes(n, cells)) { /* firn_world_memory's figure */
        firn_set_error(err, FIRN_E_DEVICE,
                       "internal: the SPH device layout (%zu B) differs from firn_sph_device_bytes "
                       "(%zu B)",
                       p_bytes + g_bytes, firn_sph_device_bytes(n, cells));
        return FIRN_CUDA_FAILED;
    }
    const size_t want =
        p_bytes + g_bytes + firn_align256(small_bytes) + firn_align256(S->temp_bytes);
    if (check_memory(w, want, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(cudaMalloc(&S->p_block, p_bytes), err);
    particle_layout(n, (char *)S->p_block, &S->s);
    FIRN_CUDA_CHECK(cudaMalloc(&S->g_block, g_bytes), err);
    grid_layout(n, cells, (char *)S->g_block, S);
    FIRN_CUDA_CHECK(cudaMalloc(&S->small_block, small_bytes), err);
    S->mats = (firn_sph_material *)S->small_block;
    S->flags = (sph_flags *)((char *)S->small_block + (small_bytes - sizeof(sph_flags)));
    FIRN_CUDA_CHECK(cudaMalloc(&S->temp, S->temp_bytes), err);
    S->bytes = want;

    /* Pageable host sources are staged at the call, so the locals may go. */
    sph_flags f;
    memset(&f, 0, sizeof f);
    f.bad = FIRN_CUDA_BAD_NONE;
    const firn_sph_particles *h = &w->sph.s;
    FIRN_CUDA_CHECK(
        cudaMemcpyAsync(S->s.x, h->x, 13 * (size_t)n * sizeof(float), cudaMemcpyHostToDevice, st),
        err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->s.mat, h->mat, (size_t)n, cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->mats, w->sph.mats,
                                    FIRN_MAX_MATERIALS * sizeof(firn_sph_material),
                                    cudaMemcpyHostToDevice, st),
                    err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->flags, &f, sizeof f, cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaMemsetAsync(S->g_block, 0, g_bytes, st), err);
    if (firn_cuda_nbr_reset(&S->N, st, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    return 0;
}

/* ---- launchers (extern "C", declared in host/cuda_backend.h) ---------- */

extern "C" int firn_cuda_sph_init(firn_world *w, firn_error *err)
{
    if (w->sph.n == 0)
        return 0;
    if (!w->cuda) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "firn_cuda_sph_init: the CUDA backend of this world is not initialised");
        return FIRN_CUDA_FAILED;
    }
    firn_sph_cuda *S = (firn_sph_cuda *)calloc(1, sizeof *S);
    if (!S) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory");
        return FIRN_CUDA_FAILED;
    }
    w->sph.cuda = S;
    if (state_init(w, S, err)) {
        firn_cuda_sph_free(w);
        return FIRN_CUDA_FAILED;
    }
    w->sph.host_stale = 0;
    return 0;
}

/* Best effort, as firn_cuda_free. */
extern "C" void firn_cuda_sph_free(firn_world *w)
{
    firn_sph_cuda *S = w->sph.cuda;
    if (!S)
        return;
    if (w->cuda)
        (void)cudaStreamSynchronize(firn_cuda_world_stream(w));
    cudaFree(S->p_block);
    cudaFree(S->g_block);
    cudaFree(S->small_block);
    cudaFree(S->temp);
    (void)cudaGetLastError();
    free(S);
    w->sph.cuda = NULL;
}

extern "C" int firn_cuda_sph_download(firn_world *w, firn_error *err)
{
    firn_sph_cuda *S = w->sph.cuda;
    if (!S || !w->cuda) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "firn_cuda_sph_download: the SPH solver of this world is not on the GPU");
        return FIRN_CUDA_FAILED;
    }
    const cudaStream_t st = firn_cuda_world_stream(w);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(w->sph.s.x, S->s.x, 13 * (size_t)S->s.n * sizeof(float),
                                    cudaMemcpyDeviceToHost, st),
                    err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    return 0;
}

/* For the GPU tests (test/test_gpu_sph.c): the neighbour grid of the last
 * substep into host arrays (sorted: n; start, end: cells). */
extern "C" int firn_cuda_sph_download_grid(firn_world *w, int *sorted, int *start, int *end,
                                           firn_error *err)
{
    firn_sph_cuda *S = w->sph.cuda;
    if (!S || !w->cuda) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "firn_cuda_sph_download_grid: the SPH solver of this world is not on the "
                       "GPU");
        return FIRN_CUDA_FAILED;
    }
    return firn_cuda_nbr_download(&S->N, sorted, start, end, firn_cuda_world_stream(w), err);
}

/* For the GPU tests (test/test_gpu_sph.c): the blocks of the DFSPH solves'
 * iterate and source-and-sum launches that did their particles' work since
 * the state was made (work[0] divergence, work[1] density), and the blocks
 * of each such launch. */
extern "C" int firn_cuda_sph_solve_work(firn_world *w, unsigned long long work[2], int *blocks,
                                        firn_error *err)
{
    firn_sph_cuda *S = w->sph.cuda;
    if (!S || !w->cuda) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "firn_cuda_sph_solve_work: the SPH solver of this world is not on the GPU");
        return FIRN_CUDA_FAILED;
    }
    const cudaStream_t st = firn_cuda_world_stream(w);
    sph_flags f;
    FIRN_CUDA_CHECK(cudaMemcpyAsync(&f, S->flags, sizeof f, cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    work[0] = f.work[0];
    work[1] = f.work[1];
    *blocks = (int)blocks_for(S->s.n);
    return 0;
}
