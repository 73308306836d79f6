/* coupler.c - the Coupler: which solvers a world has, which coupling pairs
 * are active, and the phases of a substep (PHYSICS.md s1, as Genesis's
 * Coupler orders them; step 0 is this path's own):
 *
 *   0. begin_substep per solver - MPM: the particles back in its layout
 *   1. preprocess             - CPIC (coupling.cpic): each particle records
 *                               its side of every rigid surface within reach,
 *                               with the rigid poses before their step
 *   2. pre_coupling per solver - tools: advect their pose; rigid: its
 *                               step; MPM: clear grid, P2G; SPH: density,
 *                               pressure, velocities; PBD: prediction and
 *                               constraint iterations; FEM: element
 *                               forces, vertex velocities
 *                               (with CPIC: not across a rigid surface)
 *   3. couple                 - grid update: velocity + gravity, each
 *                               tool's collision (one-way, its reaction
 *                               recorded), the rigid
 *                               SDF impulse per body (two-way), walls
 *                               then SPH-rigid and PBD-rigid (two-way)
 *   4. post_coupling per solver - MPM: G2P (with CPIC: the rigid response
 *                               for nodes across a surface, two-way);
 *                               SPH: positions; PBD: velocities, box;
 *                               FEM: positions, fixed vertices, walls
 *
 * Pair activation is decided once in firn_coupler_build: a pair is active
 * when both solvers are active and its option is on. A new solver adds its
 * firn_solver to `solvers` and its pairs to `pairs` below. Calls go one
 * way: the Coupler calls the solvers' phases (host/solver.h) and, for the
 * coupled grid update, the MPM solver's grid helpers; no solver calls the
 * Coupler. firn_coupler_run is the one executor of this order for both
 * paths: the CPU runs each phase, the CUDA path (kernels/mpm.cu
 * queue_substep) queues each solver's CUDA phases from the same tables.
 */
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "coupler.h"
#include "error.h"
#include "fem.h"
#include "fem_coupling.h"
#include "mpm_sph.h"
#include "pair.h"
#include "rigid.h"
#include "firn_pbd_coupling.h"
#include "firn_sph_coupling.h"
#include "pbd.h"
#include "reduce.h"
#include "solver_cpu.h"
#include "sph.h"
#include "tool.h"
#include "world.h"

static const firn_solver *const solvers[FIRN_SOLVER_COUNT] = {
    [FIRN_SOLVER_TOOL] = &firn_tool_solver, [FIRN_SOLVER_RIGID] = &firn_rigid_solver,
    [FIRN_SOLVER_MPM] = &firn_mpm_solver,   [FIRN_SOLVER_SPH] = &firn_sph_solver,
    [FIRN_SOLVER_PBD] = &firn_pbd_solver,   [FIRN_SOLVER_FEM] = &firn_fem_solver,
};

const firn_solver *firn_solver_of(int k) { return solvers[k]; }

/* The pairs without passes of their own: rigid_mpm and tool_mpm act in
 * the grid update (firn_grid_node_tools), the FEM pairs on the FEM surface
 * (couple_fem, host/fem_coupling.c). Genesis's Tool-MPM has no option of
 * its own; firn's coupling.tool_mpm turns every tool's collision off at
 * once. */
#define GRID_PAIR(nm, ID, sa, sb, field)                                                           \
    static const firn_pair pair_##nm = {.name = #nm,                                               \
                                        .id = ID,                                                  \
                                        .a = sa,                                                   \
                                        .b = sb,                                                   \
                                        .option = offsetof(firn_scene_def, coupling.field),        \
                                        .flag = offsetof(firn_coupler, field),                     \
                                        .stage = FIRN_PAIR_IN_GRID}
GRID_PAIR(rigid_mpm, FIRN_PAIR_RIGID_MPM, FIRN_SOLVER_RIGID, FIRN_SOLVER_MPM, rigid_mpm);
GRID_PAIR(tool_mpm, FIRN_PAIR_TOOL_MPM, FIRN_SOLVER_TOOL, FIRN_SOLVER_MPM, tool_mpm);
/* FEM-Rigid's scratch: its reactions per chunk of surface vertices
 * (firn_fem_rigid_cpu). */
static int fem_rigid_alloc(firn_world *w, firn_error *err)
{
    const size_t head = firn_align256(sizeof(firn_pair_chunks));
    firn_pair_chunks *c = firn_pair_scratch_alloc(
        w, FIRN_PAIR_FEM_RIGID, "fem_rigid",
        head + (size_t)firn_fem_rigid_chunk_doubles(w->fem.ns, w->n_rigids) * sizeof(double) + 1,
        err);
    if (!c)
        return -1;
    c->chunk_acc = (double *)((char *)c + head);
    return 0;
}

/* FEM-MPM's scratch: 4 floats per grid node, zero between substeps
 * (firn_fem_mpm_cpu). */
typedef struct {
    float *D;
} fem_mpm_scratch;

static int fem_mpm_alloc(firn_world *w, firn_error *err)
{
    const size_t head = firn_align256(sizeof(fem_mpm_scratch));
    fem_mpm_scratch *s = firn_pair_scratch_alloc(
        w, FIRN_PAIR_FEM_MPM, "fem_mpm", head + 4 * (size_t)w->grid.nodes * sizeof(float), err);
    if (!s)
        return -1;
    s->D = (float *)((char *)s + head);
    return 0;
}

#define SURFACE_PAIR(nm, ID, sa, sb, alloc)                                                        \
    static const firn_pair pair_##nm = {.name = #nm,                                               \
                                        .id = ID,                                                  \
                                        .a = sa,                                                   \
                                        .b = sb,                                                   \
                                        .option = offsetof(firn_scene_def, coupling.nm),           \
                                        .flag = offsetof(firn_coupler, nm),                        \
                                        .stage = FIRN_PAIR_SURFACE,                                \
                                        .cpu_alloc = alloc}
SURFACE_PAIR(fem_rigid, FIRN_PAIR_FEM_RIGID, FIRN_SOLVER_RIGID, FIRN_SOLVER_FEM, fem_rigid_alloc);
SURFACE_PAIR(fem_mpm, FIRN_PAIR_FEM_MPM, FIRN_SOLVER_MPM, FIRN_SOLVER_FEM, fem_mpm_alloc);
SURFACE_PAIR(fem_sph, FIRN_PAIR_FEM_SPH, FIRN_SOLVER_SPH, FIRN_SOLVER_FEM, firn_fem_sph_alloc);

/* Every pair, by its id: the order their passes run in each stage. */
static const firn_pair *const pairs[FIRN_PAIR_COUNT] = {
    [FIRN_PAIR_RIGID_MPM] = &pair_rigid_mpm,      [FIRN_PAIR_TOOL_MPM] = &pair_tool_mpm,
    [FIRN_PAIR_MPM_SPH] = &firn_pair_mpm_sph,     [FIRN_PAIR_MPM_PBD] = &firn_pair_mpm_pbd,
    [FIRN_PAIR_SPH_RIGID] = &firn_pair_sph_rigid, [FIRN_PAIR_PBD_RIGID] = &firn_pair_pbd_rigid,
    [FIRN_PAIR_FEM_RIGID] = &pair_fem_rigid,      [FIRN_PAIR_FEM_MPM] = &pair_fem_mpm,
    [FIRN_PAIR_FEM_SPH] = &pair_fem_sph,
};
#define N_PAIRS (sizeof pairs / sizeof pairs[0])

void firn_coupler_build(firn_world *w)
{
    firn_coupler *c = &w->coupler;
    memset(c, 0, sizeof *c);
    for (int s = 0; s < FIRN_SOLVER_COUNT; s++)
        c->active[s] = solvers[s]->is_active(w);
    for (size_t k = 0; k < N_PAIRS; k++) {
        const firn_pair *p = pairs[k];
        int option = *(const int *)((const char *)&w->def + p->option);
        *(int *)((char *)c + p->flag) = c->active[p->a] && c->active[p->b] && option;
    }
    c->cpic = c->rigid_mpm && w->def.coupling.cpic;
}

/* The FEM surface the FEM pairs share, on the CPU path (FEM's state:
 * firn_fem_surface_alloc; each pair's own scratch is its: fem_rigid_alloc,
 * fem_mpm_alloc, firn_fem_sph_alloc). */
static int fem_alloc(firn_world *w, firn_error *err)
{
    const firn_coupler *c = &w->coupler;
    if (w->cuda || !(c->fem_rigid || c->fem_mpm || c->fem_sph))
        return 0;
    return firn_fem_surface_alloc(&w->fem, err);
}

/* Whether pair p's passes run in w. */
static int pair_runs(const firn_world *w, const firn_pair *p)
{
    return p->runs ? p->runs(w) : *(const int *)((const char *)&w->coupler + p->flag);
}

int firn_coupler_alloc(firn_world *w, firn_error *err)
{
    w->chunks = w->cpic_chunks = 0;
    w->chunk_acc = w->cpic_acc = NULL;
    w->chunk_live = NULL;
    for (int k = 0; k < FIRN_PAIR_COUNT; k++)
        w->pair_scratch[k] = NULL;
    const size_t per_chunk = (size_t)w->n_rigids * FIRN_RIGID_ACC * sizeof(double);
    for (int k = 0; k < FIRN_PAIR_COUNT && !w->cuda; k++)
        if (pairs[k]->cpu_alloc && pair_runs(w, pairs[k]) && pairs[k]->cpu_alloc(w, err))
            return -1;
    if (fem_alloc(w, err))
        return -1;
    if (w->cuda || !(w->coupler.rigid_mpm || w->coupler.mpm_sph || w->coupler.tool_mpm))
        return 0;
    w->chunks = (w->grid.nodes + FIRN_COUPLE_CHUNK - 1) / FIRN_COUPLE_CHUNK;
    const size_t grid_chunk = (size_t)(w->n_rigids + w->n_tools) * FIRN_RIGID_ACC * sizeof(double);
    w->chunk_acc = malloc((size_t)w->chunks * grid_chunk + 1);
    w->chunk_live = malloc((size_t)w->chunks);
    if (w->coupler.cpic) {
        w->cpic_chunks = ((long long)w->p.n + FIRN_CPIC_CHUNK - 1) / FIRN_CPIC_CHUNK;
        w->cpic_acc = malloc((size_t)(w->cpic_chunks > 0 ? w->cpic_chunks : 1) * per_chunk);
    }
    if (!w->chunk_acc || !w->chunk_live || (w->coupler.cpic && !w->cpic_acc)) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for the coupling accumulators");
        return -1;
    }
    return 0;
}

void firn_coupler_free(firn_world *w)
{
    free(w->chunk_acc);
    free(w->cpic_acc);
    free(w->chunk_live);
    for (int k = 0; k < FIRN_PAIR_COUNT; k++) {
        free(w->pair_scratch[k]);
        w->pair_scratch[k] = NULL;
    }
    w->chunk_acc = w->cpic_acc = NULL;
    w->chunk_live = NULL;
}

/* Grid update with the tools, the rigid bodies and/or MPM-SPH: each chunk
 * of nodes sums the reaction on each tool and body in node order into its
 * own slot (the tools' after the bodies'), the slots are added in chunk
 * order - the same result for any thread count. A chunk with no node the
 * last P2G could write holds no mass, which the update leaves alone: its
 * slot is zero without a visit, so a mostly empty domain costs little. */
typedef struct {
    const firn_params *P;
    firn_grid g;
    const firn_tool *tools;
    int nt, rstride;
    const firn_rigid *bodies;
    int nb;
    const firn_sph_view *V;
} grid_pairs_ctx;

static long long grid_pairs_chunk(long long begin, long long end, double *acc, void *ctx)
{
    const grid_pairs_ctx *c = ctx;
    for (long long node = begin; node < end; node++)
        firn_grid_node_tools(node, c->P, c->g, c->tools, c->nt, acc + c->rstride, c->bodies, c->nb,
                             acc, c->V);
    return FIRN_REDUCE_NONE;
}

/* The grid update with the rigid bodies, tools and MPM-SPH, in chunks of
 * nodes (reduce.h); the chunks without mass are skipped. */
static void couple_grid_pairs(firn_world *w)
{
    const int nb = w->coupler.rigid_mpm ? w->n_rigids : 0;
    const int nt = w->coupler.tool_mpm ? w->n_tools : 0;
    const int rstride = nb * FIRN_RIGID_ACC, stride = rstride + nt * FIRN_TOOL_ACC;
    const firn_sph_view view = firn_sph_pairs_view(w);
    grid_pairs_ctx c = {&w->params, w->grid,   w->tools, nt,
                        rstride,    w->rigids, nb,       w->coupler.mpm_sph ? &view : NULL};
    firn_cpu_live_chunks(w, FIRN_COUPLE_CHUNK, w->chunk_live);
    firn_reduce_run(w->grid.nodes, FIRN_COUPLE_CHUNK, stride, w->chunk_acc, w->chunk_live,
                    grid_pairs_chunk, &c);
    firn_reduce_add(w->chunk_acc, w->chunks, stride, 0, rstride, w->rigid_acc);
    firn_reduce_add(w->chunk_acc, w->chunks, stride, rstride, stride - rstride, w->tool_acc);
}

/* Genesis's FEM pass (its fem_surface_force), last in couple(): on each
 * surface vertex, with the start-of-substep positions and the velocities
 * of the FEM velocity step, FEM-Rigid, then FEM-MPM on the updated grid
 * (before G2P), then FEM-SPH; the walls follow in the FEM position step. */
static int couple_fem(firn_world *w, firn_step *st)
{
    (void)st;
    const firn_coupler *c = &w->coupler;
    const firn_fem_surface S = firn_fem_surface_of(&w->fem);
    firn_fem_normals_cpu(&S);
    if (c->fem_rigid)
        firn_fem_rigid_cpu(
            &S, w->rigids, w->n_rigids,
            ((firn_pair_chunks *)firn_pair_scratch(w, FIRN_PAIR_FEM_RIGID))->chunk_acc,
            w->rigid_acc);
    if (c->fem_mpm)
        firn_fem_mpm_cpu(&S, &w->params, w->grid,
                         ((fem_mpm_scratch *)firn_pair_scratch(w, FIRN_PAIR_FEM_MPM))->D);
    if (c->fem_sph) {
        const firn_sph_view V = firn_sph_pairs_view(w);
        const firn_fem_sph_scratch *f = firn_pair_scratch(w, FIRN_PAIR_FEM_SPH);
        firn_fem_sph_cpu(&S, &V, f->share, f->count);
    }
    return 0;
}

/* ---- the couple stage: one order for both paths ------------------------ */

/* The grid update, with the rigid bodies, the tools and MPM-SPH's
 * collision when they are coupled. */
static int cpu_grid(firn_world *w, firn_step *st)
{
    (void)st;
    if (w->coupler.rigid_mpm || w->coupler.mpm_sph || w->coupler.tool_mpm)
        couple_grid_pairs(w);
    else
        firn_cpu_grid(w);
    return 0;
}

static int on_mpm(const firn_world *w) { return w->coupler.active[FIRN_SOLVER_MPM]; }
static int on_fem(const firn_world *w)
{
    return w->coupler.fem_rigid || w->coupler.fem_mpm || w->coupler.fem_sph;
}

/* One pass (the CPU's, or the CUDA path's queued), 0 or -1. */
static int pass(firn_world *w, firn_step *st, int cuda, firn_step_fn cpu, const firn_step_fn *gpu)
{
    return cuda ? (*gpu)(w, st) : cpu(w, st);
}

/* Genesis's couple(), in order: the pairs' passes before the grid update
 * (MPM-SPH's contact reaction), the MPM grid update with the pairs that
 * act on its nodes (tools, rigid_mpm, mpm_sph), the pairs' passes after it
 * in table order (MPM-SPH's contact force, MPM-PBD, SPH-rigid, PBD-rigid),
 * then the FEM surface's pass with its pairs (its normals, FEM-rigid,
 * FEM-MPM, FEM-SPH). */
static int couple(firn_world *w, int cuda, firn_step *st)
{
    for (size_t k = 0; k < N_PAIRS; k++)
        if (pairs[k]->cpu_before && pair_runs(w, pairs[k]) &&
            pass(w, st, cuda, pairs[k]->cpu_before, pairs[k]->cuda_before))
            return -1;
    if (on_mpm(w) && pass(w, st, cuda, cpu_grid, &firn_cuda_grid))
        return -1;
    for (size_t k = 0; k < N_PAIRS; k++)
        if (pairs[k]->cpu_after && pair_runs(w, pairs[k]) &&
            pass(w, st, cuda, pairs[k]->cpu_after, pairs[k]->cuda_after))
            return -1;
    if (on_fem(w) && pass(w, st, cuda, couple_fem, &firn_cuda_fem_pairs))
        return -1;
    return 0;
}

/* ---- the substep, for both paths ----------------------------------------- */

double *firn_prof_field(firn_profile *p, int k)
{
    double *const f[FIRN_PROF_COUNT] = {
        [FIRN_PROF_COUPLE] = &p->couple,
        [FIRN_PROF_CLEAR] = &p->clear,
        [FIRN_PROF_P2G] = &p->p2g,
        [FIRN_PROF_SPH_SORT] = &p->sph_sort,
        [FIRN_PROF_SPH_DENSITY] = &p->sph_density,
        [FIRN_PROF_SPH_PRESSURE] = &p->sph_pressure,
        [FIRN_PROF_PBD_CONSTRAINTS] = &p->pbd_constraints,
        [FIRN_PROF_PBD_PARTICLES] = &p->pbd_particles,
        [FIRN_PROF_FEM_ELEMENTS] = &p->fem_elements,
        [FIRN_PROF_FEM_VELOCITY] = &p->fem_velocity,
        [FIRN_PROF_GRID] = &p->grid,
        [FIRN_PROF_G2P] = &p->g2p,
        [FIRN_PROF_SPH_INTEGRATE] = &p->sph_integrate,
        [FIRN_PROF_PBD_INTEGRATE] = &p->pbd_integrate,
        [FIRN_PROF_FEM_POSITION] = &p->fem_position,
    };
    return k >= 0 && k < FIRN_PROF_COUNT ? f[k] : NULL;
}

/* The CPU path's clock: the wall clock, each interval into w->prof. */
typedef struct {
    firn_profile *prof;
    double last;
} cpu_clock;

static int cpu_mark(firn_clock *c, int slot, firn_error *err)
{
    (void)err;
    cpu_clock *k = c->impl;
    const double now = omp_get_wtime();
    double *f = firn_prof_field(k->prof, slot);
    if (f)
        *f += now - k->last;
    k->last = now;
    return 0;
}

static int cpu_cpic_mark(firn_world *w, firn_step *st)
{
    (void)st;
    firn_cpu_cpic_mark(w);
    return 0;
}

/* The one list of a substep's order (PHYSICS.md 1, Genesis's Coupler; step
 * 0 is firn's own), for both paths:
 *   0. begin per solver;
 *   1. preprocess: CPIC's side marking (coupling.cpic);
 *   2. pre-coupling per solver, in solver order;
 *   3. couple: the grid update with its pairs, then the particle and
 *      surface pairs (couple, from the pair table `pairs`);
 *   4. post-coupling per solver, in solver order.
 * A distributed run's exchanges (w->dist) follow steps 2, 3 and 4. */
int firn_coupler_run(firn_world *w, int cuda, firn_step *st, int *bad)
{
    const firn_coupler *c = &w->coupler;
    const firn_phase_ops *ops[FIRN_SOLVER_COUNT];
    for (int s = 0; s < FIRN_SOLVER_COUNT; s++)
        ops[s] = cuda ? solvers[s]->cuda : &solvers[s]->cpu;
    *bad = -1;
    for (int s = 0; s < FIRN_SOLVER_COUNT; s++)
        if (c->active[s] && ops[s]->begin && ops[s]->begin(w, st))
            return -1;
    if (firn_step_mark(st, -1))
        return -1;
    if (c->cpic && ((cuda ? firn_cuda_cpic_mark(w, st) : cpu_cpic_mark(w, st)) ||
                    firn_step_mark(st, FIRN_PROF_COUPLE)))
        return -1;
    for (int s = 0; s < FIRN_SOLVER_COUNT; s++)
        if (c->active[s] && (ops[s]->pre(w, st) || firn_step_mark(st, solvers[s]->prof_pre)))
            return -1;
    if (w->dist)
        w->dist->after_p2g(w);
    if (couple(w, cuda, st) || firn_step_mark(st, FIRN_PROF_GRID))
        return -1;
    if (w->dist)
        w->dist->after_grid(w);
    for (int s = 0; s < FIRN_SOLVER_COUNT; s++)
        if (c->active[s]) {
            st->bad = -1;
            if (ops[s]->post(w, st) || firn_step_mark(st, solvers[s]->prof_post))
                return -1;
            if (st->bad >= 0 && *bad < 0) { /* the first solver's, in solver order */
                *bad = st->bad;
                w->bad_solver = s;
            }
        }
    if (w->dist)
        *bad = w->dist->after_g2p(w, *bad);
    return 0;
}

const char *firn_coupler_no_cuda(const firn_world *w)
{
    for (int s = 0; s < FIRN_SOLVER_COUNT; s++) {
        const firn_phase_ops *o = solvers[s]->cuda;
        if (w->coupler.active[s] && (!o || !o->pre || !o->post))
            return solvers[s]->name;
    }
    for (size_t k = 0; k < N_PAIRS; k++) {
        const firn_pair *p = pairs[k];
        if (pair_runs(w, p) &&
            ((p->cpu_before && !*p->cuda_before) || (p->cpu_after && !*p->cuda_after)))
            return p->name;
    }
    if (on_mpm(w) && !firn_cuda_grid)
        return "grid update";
    if (on_fem(w) && !firn_cuda_fem_pairs)
        return "fem pairs";
    if (w->coupler.cpic && !firn_cuda_cpic_mark)
        return "cpic";
    return NULL;
}

int firn_coupler_substep(firn_world *w)
{
    const double t_total = omp_get_wtime();
    cpu_clock k = {&w->prof, t_total};
    firn_clock clock = {cpu_mark, &k};
    firn_error err;
    firn_step st = {0, &w->params, &clock, &err, -1};
    int bad;
    firn_coupler_run(w, 0, &st, &bad); /* the CPU phases do not fail */
    w->prof.total += omp_get_wtime() - t_total;
    return bad;
}
