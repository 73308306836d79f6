/* solver_cpu.c - the CPU reference path: the four MPM phases looping over
 * the shared per-particle and per-node bodies of include/firn_mpm.h.
 *
 * Determinism: P2G scatters into shared nodes. Instead of atomics, particles
 * are binned by the block (BLOCK^3 cells) of their stencil corner, and the
 * blocks are processed in 8 colours (parity of the block coordinates). Two
 * blocks of one colour are at least BLOCK >= 3 cells apart, so their 3x3x3
 * stencils never share a node and run in parallel without races; each node
 * receives its contributions colour by colour, block by block, in particle
 * order - the same order for any thread count. The other phases write only
 * their own particle or node.
 *
 * Constitutive update: P2G takes a block's particles 8 at a time, and
 * their 3x3 SVDs run side by side in SIMD lanes (host/svd_batch.c), each
 * lane the scalar firn_svd3_eig (the GPU's algorithm); the rest of each particle's update and its
 * scatter follow one particle at a time, in block order. The scatter and
 * G2P's gather move a grid node's four floats as one vector (cpu_simd.h),
 * bitwise the shared functions' results.
 *
 * Locality: particles start sorted by block (host/sample.c), and the state
 * arrays are read in block order. As material flows, particles in that order
 * lie ever farther apart in memory, and each read of a state array becomes a
 * cache line of its own. When more than one particle in FIRN_REORDER_RUN
 * lies outside the cache line after its predecessor, the state is permuted
 * into block order
 * (stable, so it is the same for any thread count). bins.id remembers which
 * particle of the scene sits where; firn_cpu_unpermute puts the scene's
 * order back for anyone who reads particles, and firn_cpu_repermute the
 * solver's layout before the next substep, so the layout - and with it
 * every sum's order - never depends on when the state was read. */
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <omp.h>

#include "cpu_simd.h"
#include "error.h"
#include "compare_stats.h"
#include "firn_cpic.h"
#include "mpm_ply.h"
#include "reduce.h"
#include "sample.h"
#include "solver_cpu.h"
#include "svd_batch.h"
#include "world.h"

#define BLOCK 4

int firn_cpu_init(firn_world *w, firn_error *err)
{
    firn_grid *g = &w->grid;
    firn_cpu_bins *b = &w->bins;
    for (int a = 0; a < 3; a++)
        g->n[a] = w->params.n[a];
    g->nodes = (long long)g->n[0] * g->n[1] * g->n[2];
    /* A private anonymous mapping: zero pages that take memory only once
     * written (whatever the allocator's settings), and the substeps write
     * only the node blocks near particles (below), so the part of a large
     * domain that material never reaches takes address space, not memory. */
    g->node = mmap(NULL, 16 * (size_t)g->nodes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (g->node == MAP_FAILED)
        g->node = NULL;
    b->block_cells = BLOCK;
    for (int a = 0; a < 3; a++)
        b->nb[a] = (g->n[a] + BLOCK - 1) / BLOCK;
    b->nblocks = b->nb[0] * b->nb[1] * b->nb[2];
    /* One slice per thread, but no more than 2 n / nblocks, so that the
     * slices' counts (4 B per slice and block, cleared and summed every
     * substep) stay within 8 B per particle on a large, mostly empty grid. */
    long long most = 2LL * w->p.n / b->nblocks;
    b->chunks = omp_get_max_threads();
    if (b->chunks > FIRN_BIN_CHUNKS_MAX)
        b->chunks = FIRN_BIN_CHUNKS_MAX;
    if (b->chunks > most)
        b->chunks = most > 1 ? (int)most : 1;
    b->count = malloc((size_t)b->chunks * (size_t)b->nblocks * sizeof(int));
    b->start = malloc(((size_t)b->nblocks + 1) * sizeof(int));
    b->work = malloc((size_t)b->nblocks * sizeof(*b->work));
    b->touched = malloc((size_t)b->nblocks);
    b->dirty = malloc((size_t)b->nblocks * sizeof(int));
    b->ndirty = 0;
    b->dirty_valid = 1; /* zero, and no block written */
    size_t n = w->p.n > 0 ? (size_t)w->p.n : 1;
    b->order = malloc(n * sizeof(int));
    b->key = malloc(n * sizeof(int));
    b->id = malloc(n * sizeof(int));
    if (!g->node || !b->count || !b->start || !b->work || !b->touched || !b->dirty || !b->order ||
        !b->key || !b->id) {
        firn_cpu_free(w);
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for a %d x %d x %d grid (%.1f MiB)",
                       g->n[0], g->n[1], g->n[2], (double)g->nodes * 16.0 / (1 << 20));
        return -1;
    }
    for (int i = 0; i < w->p.n; i++)
        b->id[i] = i;
    b->permuted = 0;
    b->in_scene_order = 0;
    b->reorder_run = FIRN_REORDER_RUN;
    b->reorders = 0;
    return 0;
}

double firn_cpu_grid_resident(const firn_world *w)
{
    const size_t bytes = 16 * (size_t)w->grid.nodes, page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t pages = (bytes + page - 1) / page;
    if (!w->grid.node || pages == 0)
        return 0.0;
    unsigned char *in = malloc(pages);
    if (!in || mincore(w->grid.node, bytes, in)) {
        free(in);
        return -1.0;
    }
    size_t n = 0;
    for (size_t k = 0; k < pages; k++)
        n += in[k] & 1;
    free(in);
    return (double)n * (double)page;
}

void firn_cpu_free(firn_world *w)
{
    if (w->grid.node)
        munmap(w->grid.node, 16 * (size_t)w->grid.nodes);
    free(w->bins.count);
    free(w->bins.start);
    free(w->bins.work);
    free(w->bins.touched);
    free(w->bins.dirty);
    free(w->bins.order);
    free(w->bins.key);
    free(w->bins.id);
    w->grid.node = NULL;
    w->bins.count = w->bins.start = w->bins.order = w->bins.key = w->bins.id = NULL;
    w->bins.work = NULL;
    w->bins.touched = NULL;
    w->bins.dirty = NULL;
}

void firn_cpu_clear(firn_world *w)
{
    float *q = w->grid.node;
    long long count = 4 * w->grid.nodes;
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < count; i++)
        q[i] = 0.0f;
    w->bins.dirty_valid = 0;
}

/* Row r (0..15) of node block `blk`: the nodes first .. first + *len - 1,
 * consecutive along z (4, fewer at the grid's upper z face). Returns 0 for
 * a row past the grid's upper x or y face. */
static int block_row(const firn_cpu_bins *b, const firn_grid *g, int blk, int r, long long *first,
                     int *len)
{
    const int i = 4 * (blk / (b->nb[1] * b->nb[2])) + r / 4;
    const int j = 4 * (blk / b->nb[2] % b->nb[1]) + r % 4, k = 4 * (blk % b->nb[2]);
    if (i >= g->n[0] || j >= g->n[1])
        return 0;
    *first = firn_node_index(g->n, i, j, k);
    *len = k + 4 < g->n[2] ? 4 : g->n[2] - k;
    return 1;
}

/* The substep's clear: only the node blocks the last P2G could write
 * (a full clear when that is not known), so a mostly empty grid costs
 * nothing here. */
static void clear_dirty(firn_world *w)
{
    firn_cpu_bins *b = &w->bins;
    if (!b->dirty_valid) {
        firn_cpu_clear(w);
        return;
    }
    const firn_grid *g = &w->grid;
    float *q = g->node;
#pragma omp parallel for schedule(static)
    for (int d = 0; d < b->ndirty; d++) {
        long long first;
        int len;
        for (int r = 0; r < 16; r++)
            if (block_row(b, g, b->dirty[d], r, &first, &len))
                memset(q + 4 * first, 0, 4 * sizeof(float) * (size_t)len);
    }
}

/* Work items: a block's particle count above its index, so that sorting
 * them puts the fullest blocks first (ties by index), and the last blocks
 * handed to the threads of a colour are the small ones. */
static int fuller_first(const void *pa, const void *pb)
{
    const unsigned long long a = *(const unsigned long long *)pa,
                             b = *(const unsigned long long *)pb;
    return (a < b) - (a > b);
}

/* Stable counting sort of particles by the block of their stencil corner,
 * in parallel: chunk c (a fixed slice of the particles, whatever the thread
 * count) counts its particles per block; a block's particles then go to
 * start[block] in chunk order, and within a chunk in particle order - the
 * serial sort's order. Then each colour's list of non-empty blocks. */
static void bin_particles(firn_world *w)
{
    firn_cpu_bins *b = &w->bins;
    const firn_params *P = &w->params;
    const int n = w->p.n, nbk = b->nblocks, T = b->chunks;
    const float *x = w->p.x;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < T; c++) {
        int *cnt = b->count + (size_t)c * nbk;
        memset(cnt, 0, (size_t)nbk * sizeof(int));
        const int lo = (int)((long long)n * c / T), hi = (int)((long long)n * (c + 1) / T);
        for (int i = lo; i < hi; i++) {
            firn_stencil s = firn_cpu_make_stencil(P, firn_load3(x, n, i));
            int k =
                ((s.base[0] / BLOCK) * b->nb[1] + s.base[1] / BLOCK) * b->nb[2] + s.base[2] / BLOCK;
            b->key[i] = k;
            cnt[k]++;
        }
    }
#pragma omp parallel for schedule(static)
    for (int k = 0; k < nbk; k++) {
        int sum = 0;
        for (int c = 0; c < T; c++)
            sum += b->count[(size_t)c * nbk + k];
        b->start[k + 1] = sum;
    }
    b->start[0] = 0;
    for (int k = 0; k < nbk; k++)
        b->start[k + 1] += b->start[k];
#pragma omp parallel for schedule(static)
    for (int k = 0; k < nbk; k++) {
        int at = b->start[k];
        for (int c = 0; c < T; c++) {
            int *cnt = b->count + (size_t)c * nbk + k, m = *cnt;
            *cnt = at;
            at += m;
        }
    }
#pragma omp parallel for schedule(static)
    for (int c = 0; c < T; c++) {
        int *at = b->count + (size_t)c * nbk;
        const int lo = (int)((long long)n * c / T), hi = (int)((long long)n * (c + 1) / T);
        for (int i = lo; i < hi; i++)
            b->order[at[b->key[i]]++] = i;
    }
    /* Each colour's non-empty blocks, and the node blocks P2G writes: a
     * particle of block B scatters to nodes 4B .. 4B + 5 along each axis,
     * node blocks B and B + 1. */
    memset(b->touched, 0, (size_t)nbk);
    int m = 0;
    for (int colour = 0; colour < 8; colour++) {
        const int cx = colour & 1, cy = (colour >> 1) & 1, cz = (colour >> 2) & 1;
        b->work_start[colour] = m;
        for (int bx = cx; bx < b->nb[0]; bx += 2)
            for (int by = cy; by < b->nb[1]; by += 2)
                for (int bz = cz; bz < b->nb[2]; bz += 2) {
                    int blk = (bx * b->nb[1] + by) * b->nb[2] + bz;
                    unsigned long long np = (unsigned)(b->start[blk + 1] - b->start[blk]);
                    if (np == 0)
                        continue;
                    b->work[m++] = np << 32 | (unsigned)blk;
                    for (int i = bx; i <= bx + 1 && i < b->nb[0]; i++)
                        for (int j = by; j <= by + 1 && j < b->nb[1]; j++)
                            for (int k = bz; k <= bz + 1 && k < b->nb[2]; k++)
                                b->touched[(i * b->nb[1] + j) * b->nb[2] + k] = 1;
                }
        qsort(b->work + b->work_start[colour], (size_t)(m - b->work_start[colour]),
              sizeof(*b->work), fuller_first);
    }
    b->work_start[8] = m;
    b->ndirty = 0;
    for (int blk = 0; blk < nbk; blk++)
        if (b->touched[blk])
            b->dirty[b->ndirty++] = blk;
    b->dirty_valid = !b->full_grid; /* the reference: as if nothing were known */
    /* Far steps: the next particle in block order lies outside the 16
     * floats (one cache line) that follow the previous one in memory. */
    long long far = 0;
#pragma omp parallel for schedule(static) reduction(+ : far)
    for (int k = 1; k < n; k++)
        far += (unsigned)(b->order[k] - b->order[k - 1] - 1) >= 16u;
    if (far * b->reorder_run > n) {
        firn_particles_gather(&w->p, b->order, b->id, b->key);
#pragma omp parallel for schedule(static)
        for (int k = 0; k < n; k++)
            b->order[k] = k;
        b->permuted = 1;
        b->reorders++;
    }
}

void firn_cpu_unpermute(firn_world *w)
{
    firn_cpu_bins *b = &w->bins;
    if (!b->permuted || b->in_scene_order)
        return;
    firn_particles_scatter(&w->p, b->id, b->key);
    b->in_scene_order = 1;
}

void firn_cpu_repermute(firn_world *w)
{
    firn_cpu_bins *b = &w->bins;
    if (!b->in_scene_order)
        return;
    firn_particles_gather(&w->p, b->id, NULL, b->key);
    b->in_scene_order = 0;
}

/* P2G of the particles order[k0..k1) of one block, FIRN_SVD_BATCH at a
 * time: the SVDs of a batch's trial deformation gradients run side by side
 * in SIMD lanes (host/svd_batch.c, the scalar firn_svd3_eig's results, as
 * firn_constitutive on the GPU computes them), then
 * each particle finishes its constitutive update and scatters, in the order
 * of the one-particle loop (firn_p2g_particle). `cpic` is a constant at
 * each call, so the plain variant compiles to the loop without CPIC. */
static inline __attribute__((always_inline)) void p2g_block(firn_world *w, int k0, int k1, int cpic)
{
    const firn_params *P = &w->params;
    const firn_particles p = w->p;
    const int *order = w->bins.order;
    for (int k = k0; k < k1; k += FIRN_SVD_BATCH) {
        const int nl = k1 - k < FIRN_SVD_BATCH ? k1 - k : FIRN_SVD_BATCH;
        firn_mat3 C[FIRN_SVD_BATCH], F[FIRN_SVD_BATCH], U[FIRN_SVD_BATCH], V[FIRN_SVD_BATCH];
        firn_vec3 sig[FIRN_SVD_BATCH];
        const firn_material *mat[FIRN_SVD_BATCH];
        float Jps[FIRN_SVD_BATCH], dmgs[FIRN_SVD_BATCH];
        int svd = 0;
        for (int l = 0; l < nl; l++) { /* the batch's loads, all issued before the SVD */
            const int i = order[k + l];
            C[l] = firn_load9(p.C, p.n, i);
            F[l] = firn_p2g_trial_F(P, C[l], firn_load9(p.F, p.n, i));
            mat[l] = &w->mats[p.mat[i]];
            Jps[l] = p.Jp[i];
            dmgs[l] = p.damage[i];
            svd |= firn_needs_svd(mat[l]);
        }
        if (svd)
            firn_svd3_eig_batch(nl, F, U, sig, V);
        for (int l = 0; l < nl; l++) {
            const int i = order[k + l];
            const firn_material *m = mat[l];
            float Jp = Jps[l], dmg = dmgs[l];
            firn_mat3 tau = firn_needs_svd(m) ? firn_constitutive_svd(m, &F[l], &Jp, &dmg, U[l],
                                                                      sig[l], V[l], P->dt)
                                              : firn_constitutive_direct(m, &F[l]);
            firn_p2g_state st =
                firn_p2g_finish(i, P, m, p, C[l], F[l], Jp, dmg, tau, firn_load3(p.v, p.n, i),
                                firn_cpu_make_stencil(P, firn_load3(p.x, p.n, i)));
            const unsigned skip =
                cpic ? firn_p2g_cpic_skip(i, P, p, w->rigids, w->n_rigids, &st) : 0u;
            firn_cpu_scatter_nodes(P, w->grid, &st, skip);
        }
    }
}

/* The coloured scatter: blocks of one colour (parity in x, y, z) are two
 * blocks apart, so their stencils never share a node, and the order in
 * which they run changes no sum. Each colour's non-empty blocks go to the
 * threads one at a time, fullest first. */
static void p2g_colours(firn_world *w, int cpic)
{
    const firn_cpu_bins *b = &w->bins;
    for (int colour = 0; colour < 8; colour++) {
        const int j0 = b->work_start[colour], j1 = b->work_start[colour + 1];
#pragma omp parallel for schedule(dynamic, 1)
        for (int j = j0; j < j1; j++) {
            const int blk = (int)(b->work[j] & 0xffffffffu);
            /* Branched here, inside the region OpenMP outlines, so that each
             * call inlines p2g_block with `cpic` a constant. */
            if (cpic)
                p2g_block(w, b->start[blk], b->start[blk + 1], 1);
            else
                p2g_block(w, b->start[blk], b->start[blk + 1], 0);
        }
    }
}

void firn_cpu_p2g(firn_world *w)
{
    bin_particles(w);
    p2g_colours(w, w->coupler.cpic);
}

void firn_cpu_live_chunks(const firn_world *w, long long chunk, unsigned char *live)
{
    const firn_cpu_bins *b = &w->bins;
    const firn_grid *g = &w->grid;
    const long long chunks = (g->nodes + chunk - 1) / chunk;
    memset(live, !b->dirty_valid, (size_t)chunks);
    if (!b->dirty_valid)
        return;
    for (int d = 0; d < b->ndirty; d++) {
        long long first;
        int len;
        for (int r = 0; r < 16; r++)
            if (block_row(b, g, b->dirty[d], r, &first, &len))
                for (long long c = first / chunk; c <= (first + len - 1) / chunk; c++)
                    live[c] = 1;
    }
}

void firn_cpu_grid(firn_world *w)
{
    const firn_params *P = &w->params;
    const firn_cpu_bins *b = &w->bins;
    firn_grid g = w->grid;
    if (!b->dirty_valid) {
#pragma omp parallel for schedule(static)
        for (long long node = 0; node < g.nodes; node++)
            firn_grid_node(node, P, g);
        return;
    }
    /* Nodes outside the blocks P2G wrote hold no mass: nothing to update. */
#pragma omp parallel for schedule(static)
    for (int d = 0; d < b->ndirty; d++) {
        long long first;
        int len;
        for (int r = 0; r < 16; r++)
            if (block_row(b, &g, b->dirty[d], r, &first, &len))
                for (int k = 0; k < len; k++)
                    firn_grid_node(first + k, P, g);
    }
}

int firn_cpu_g2p(firn_world *w)
{
    const firn_params *P = &w->params;
    const int n = w->p.n;
    const int *id = w->bins.id;
    int bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int i = 0; i < n; i++)
        if (firn_cpu_g2p_particle(i, P, w->p, w->grid) && id[i] < bad)
            bad = id[i];
    return bad < n ? bad : -1;
}

void firn_cpu_cpic_mark(firn_world *w)
{
    const firn_params *P = &w->params;
    const int n = w->p.n, nb = w->n_rigids;
    const firn_rigid *bodies = w->rigids;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        firn_cpic_mark(i, P, w->p, bodies, nb);
}

static long long g2p_cpic_chunk(long long begin, long long end, double *acc, void *ctx)
{
    const firn_world *w = ctx;
    const firn_params *P = &w->params;
    const int nb = w->n_rigids;
    long long bad = FIRN_REDUCE_NONE;
    for (int i = (int)begin; i < (int)end; i++) {
        /* firn_g2p_particle_cpic, with plain G2P in the node-vector form. */
        firn_cpic_ctx c;
        int b = firn_cpic_load(&c, w->p, i, nb)
                    ? firn_g2p_near_cpic(i, P, w->mats, w->p, w->grid, w->rigids, nb, &c, acc)
                    : firn_cpu_g2p_particle(i, P, w->p, w->grid);
        if (b && w->bins.id[i] < bad)
            bad = w->bins.id[i];
    }
    return bad;
}

/* G2P with CPIC's rigid response, in chunks of FIRN_CPIC_CHUNK particles
 * (reduce.h). */
int firn_cpu_g2p_cpic(firn_world *w)
{
    const int stride = w->n_rigids * FIRN_RIGID_ACC;
    const long long bad = firn_reduce_sum(w->p.n, FIRN_CPIC_CHUNK, stride, w->cpic_acc,
                                          g2p_cpic_chunk, w, w->rigid_acc);
    return bad < w->p.n ? (int)bad : -1;
}

/* The MPM solver's phases for the Coupler (host/coupler.c). */
static int mpm_active(const firn_world *w) { return w->p.n > 0; }

static int mpm_begin(firn_world *w, firn_step *st)
{
    (void)st;
    firn_cpu_repermute(w);
    return 0;
}

static int mpm_pre_coupling(firn_world *w, firn_step *st)
{
    clear_dirty(w);
    firn_step_mark(st, FIRN_PROF_CLEAR);
    firn_cpu_p2g(w);
    return 0;
}

static int mpm_post_coupling(firn_world *w, firn_step *st)
{
    st->bad = w->coupler.cpic ? firn_cpu_g2p_cpic(w) : firn_cpu_g2p(w);
    return 0;
}

/* The MPM particles' fields, all saved (Jp's further rule for snow and
 * the CPIC words are host/checkpoint.c's), in the scene's order only
 * after firn_cpu_unpermute. */
static void mpm_fields(firn_world *w, firn_field_table *t)
{
    firn_particles *p = &w->p;
    const unsigned S = FIRN_FIELD_SAVED;
    const int F = FIRN_FIELD_FLOAT32;
    const char *fin = "it must be finite";
    *t = (firn_field_table){.count = p->n,
                            .entity = "MPM particle",
                            .solver_name = "MPM",
                            .kind = FIRN_SOLVER_KIND_MPM,
                            .lower = w->def.lower,
                            .upper = w->def.upper,
                            .box = "the domain",
                            .slack = 0.5f * w->def.dx};
    const unsigned SC = S | FIRN_FIELD_COMPARED;
    firn_field_add(t, "x", "x", F, 3, p->x, SC | FIRN_FIELD_POSITION, 0.0f, 0.0f, NULL);
    firn_field_add(t, "v", "v", F, 3, p->v, SC, -FLT_MAX, FLT_MAX, fin);
    firn_field_add(t, "C", "C", F, 9, p->C, SC, -FLT_MAX, FLT_MAX, fin);
    firn_field_add(t, "F", "F", F, 9, p->F, SC, -FLT_MAX, FLT_MAX, fin);
    firn_field_add(t, "Jp", "Jp", F, 1, p->Jp, SC, -FLT_MAX, FLT_MAX, fin);
    firn_field_add(t, "damage", "damage", F, 1, p->damage, SC, 0.0f, 1.0f, "it must lie in [0, 1]");
    firn_field_add(t, "vol", "volume", F, 1, p->vol, S, FLT_MIN, FLT_MAX,
                   "it must be finite and above 0");
    firn_field_add(t, "mat", "material", FIRN_FIELD_UINT8, 1, p->mat, S | FIRN_FIELD_MATERIAL, 0.0f,
                   0.0f, NULL);
    firn_mpm_ply_names(t);
}

/* firn compare's floor for C: C is a difference of grid velocities over a
 * cell, so its rounding follows the velocities, not C (a body translating
 * at 2 m/s on 1.6 cm cells has C near 0 give or take 5e-5 / s): at least
 * 4 max|v| / dx. The other fields: their own magnitude. */
static double mpm_compare_floor(firn_world *w, const char *name, float dt)
{
    (void)dt;
    if (strcmp(name, "C"))
        return 0.0;
    double v = 0.0;
    for (long long i = 0; i < 3 * w->p.n; i++)
        v = fmax(v, fabs((double)w->p.v[i]));
    return 4.0 * w->params.inv_dx * v;
}

/* MPM's mass and kinetic energy: the frame statistics' top-level fields. */
static void mpm_stats_mass(const firn_frame_stats *s, double *mass, double *kinetic_energy)
{
    *mass = s->mass;
    *kinetic_energy = s->kinetic_energy;
}

/* Position moments: mean and variance per axis. */
static void moments(const firn_particles *p, double mean[3], double var[3])
{
    for (int a = 0; a < 3; a++) {
        double s = 0.0, s2 = 0.0;
        for (long long i = 0; i < p->n; i++) {
            double x = p->x[a * p->n + i];
            s += x;
            s2 += x * x;
        }
        mean[a] = s / (double)p->n;
        var[a] = s2 / (double)p->n - mean[a] * mean[a];
    }
}

/* `firn compare`'s MPM statistics: the kinetic energy, then per axis the
 * centre of mass, momentum, bounding box and the positions' standard
 * deviation (from both worlds' particles, their host state current),
 * scaled as firn_stat_bodies. */
static int mpm_compare_stats(firn_world *cpu, firn_world *gpu, const firn_frame_stats *sc,
                             const firn_frame_stats *sg, const firn_stat_sink *k, firn_error *err)
{
    (void)err;
    const firn_particles *a = &gpu->p, *b = &cpu->p;
    if (b->n <= 0)
        return 0;
    static const char ax[] = "xyz";
    const double M = sc->mass, L = k->L, g = k->g;
    const double ke_scale = firn_stat_energy_scale(M, sc->kinetic_energy, sg->kinetic_energy, L, g);
    const double p_scale =
        M * firn_stat_speed_scale(M, sc->kinetic_energy, sg->kinetic_energy, L, g);
    double mc[3], vc[3], mg[3], vg[3];
    moments(b, mc, vc);
    moments(a, mg, vg);
    firn_stat(k, "kinetic energy", sc->kinetic_energy, sg->kinetic_energy, ke_scale);
    char name[40];
    for (int d = 0; d < 3; d++) {
        snprintf(name, sizeof name, "centre of mass %c", ax[d]);
        firn_stat(k, name, sc->center_of_mass[d], sg->center_of_mass[d], L);
        snprintf(name, sizeof name, "momentum %c", ax[d]);
        firn_stat(k, name, sc->momentum[d], sg->momentum[d], p_scale);
        snprintf(name, sizeof name, "bbox lower %c", ax[d]);
        firn_stat(k, name, sc->bbox_lower[d], sg->bbox_lower[d], L);
        snprintf(name, sizeof name, "bbox upper %c", ax[d]);
        firn_stat(k, name, sc->bbox_upper[d], sg->bbox_upper[d], L);
        snprintf(name, sizeof name, "std dev %c", ax[d]);
        firn_stat(k, name, sqrt(fmax(vc[d], 0.0)), sqrt(fmax(vg[d], 0.0)), L);
    }
    return 0;
}

/* MPM's particles from the scene's MPM bodies, in a spatial order (the
 * sampler's lattice sorted by cell), and freed. */
static int mpm_create(firn_world *w, const firn_scene_def *def, firn_error *err)
{
    if (firn_sample_bodies(def, w->mats, &w->p, err))
        return -1;
    if (firn_particles_sort_spatial(&w->p, &w->params)) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory sorting %d particles", w->p.n);
        return -1;
    }
    return 0;
}

static void mpm_destroy(firn_world *w) { firn_particles_free(&w->p); }

const firn_solver firn_mpm_solver = {
    .name = "mpm",
    .is_active = mpm_active,
    .cpu = {mpm_begin, mpm_pre_coupling, mpm_post_coupling},
    .cuda = &firn_cuda_mpm_phases,
    .prof_pre = FIRN_PROF_P2G,
    .prof_post = FIRN_PROF_G2P,
    .fields = mpm_fields,
    .section = "MPMP",
    .compare_floor = mpm_compare_floor,
    .stats_mass = mpm_stats_mass,
    .compare_stats = mpm_compare_stats,
    .create = mpm_create,
    .destroy = mpm_destroy,
};

void firn_grid_split(const firn_grid *g, float *mass, float *vel)
{
    for (long long k = 0; k < g->nodes; k++) {
        const float *q = g->node + 4 * k;
        mass[k] = q[3];
        for (int a = 0; a < 3; a++)
            vel[a * g->nodes + k] = q[a];
    }
}
