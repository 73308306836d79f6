/* pbd_cpu.c - the PBD solver's phases on the CPU path (docs/PHYSICS.md
 * s6): a loop over particles per pass of include/firn_pbd.h and
 * include/firn_pbf.h, and the constraint projections as Gauss-Seidel
 * sweeps colour by colour (the colours of host/pbd.c), each colour's
 * constraints in parallel. No two constraints of a colour share a
 * particle, and the particle passes are Jacobi (each particle gathers its
 * own correction), so the state is the same for any thread count.
 * PBD-rigid runs in the Coupler (host/coupler.c). */
#include <float.h>
#include <stdio.h>
#include <string.h>

#include <omp.h>

#include "firn_pbf.h"
#include "compare_stats.h"
#include "neighbour.h"
#include "pbd.h"
#include "pair.h"
#include "reduce.h"
#include "world.h"
#include "cuda_backend.h"

void firn_pbd_cpu_sweep(const firn_pbd_constraints *C, int bend, float dt, firn_pbd_particles s)
{
    for (int c = 0; c < C->colours; c++) {
        const int k0 = C->colour_start[c], k1 = C->colour_start[c + 1];
#pragma omp parallel for schedule(static)
        for (int k = k0; k < k1; k++) {
            if (bend)
                firn_pbd_bend(C->order[k], C, dt, s);
            else
                firn_pbd_stretch(C->order[k], C, dt, s);
        }
    }
}

static void apply(firn_pbd *S)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < S->n; i++)
        firn_pbd_apply(i, S->s, S->P.dt);
}

/* The bodies' reaction to their ghosts in the density correction
 * (firn_pbf_body_react), as PBD-rigid's: each chunk of particles sums it in
 * particle order into its own slot of chunk_acc, the slots are added into
 * acc in chunk order, so the sum is the same for any thread count. */
typedef struct {
    const firn_pbd *S;
    const firn_rigid *bodies;
    int nb;
} react_ctx;

static long long react_chunk(long long begin, long long end, double *acc, void *ctx)
{
    const react_ctx *c = ctx;
    for (int i = (int)begin; i < (int)end; i++)
        firn_pbf_body_react(i, &c->S->P, c->S->mats, c->S->s, c->bodies, c->nb, acc);
    return FIRN_REDUCE_NONE;
}

static void body_reaction(firn_pbd *S, const firn_rigid *bodies, int nb, double *chunk_acc,
                          double *acc)
{
    const int stride = nb * FIRN_RIGID_ACC;
    react_ctx c = {S, bodies, nb};
    firn_reduce_sum(S->n, FIRN_COUPLE_CHUNK, stride, chunk_acc, react_chunk, &c, acc);
}

/* Genesis's order (GENESIS s3.4, steps 6-9): the density iterations
 * (lambda, then the correction, then apply), the viscosity iterations, one
 * contact pass; the neighbour grid rebuilt from the current positions
 * before each pass that walks it, so that every pair within h finds each
 * other from both sides (docs/PHYSICS.md s6.8). */
void firn_pbd_cpu_particle_passes(firn_pbd *S, const firn_rigid *bodies, int nb, double *chunk_acc,
                                  double *acc)
{
    const int n = S->n;
    const firn_pbd_params *P = &S->P;
    for (int it = 0; it < S->density_iterations; it++) {
        firn_nbr_cpu_build(&P->nb, &S->G, S->s.x, n, S->cell_count);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++)
            firn_pbf_lambda(i, P, S->mats, S->s, S->G, bodies, nb);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++)
            firn_pbf_delta(i, P, S->mats, S->s, S->G);
        if (nb > 0)
            body_reaction(S, bodies, nb, chunk_acc, acc);
        apply(S);
    }
    for (int it = 0; it < S->viscosity_iterations; it++) {
        firn_nbr_cpu_build(&P->nb, &S->G, S->s.x, n, S->cell_count);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++)
            firn_pbf_viscosity(i, P, S->mats, S->s, S->G);
        apply(S);
    }
    firn_nbr_cpu_build(&P->nb, &S->G, S->s.x, n, S->cell_count);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        firn_pbd_contact(i, P, S->mats, S->s, S->G);
    apply(S);
}

static int pbd_active(const firn_world *w) { return w->pbd.n > 0; }

/* Genesis's order (GENESIS.md s3.4): store x0, gravity and air resistance,
 * x += v dt, then the stretch iterations and the bending iterations, each
 * constraint's lambda starting the substep at 0. */
static int pbd_pre_coupling(firn_world *w, firn_step *st)
{
    firn_pbd *S = &w->pbd;
    const int n = S->n;
    S->P.dt = w->params.dt;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        firn_pbd_predict(i, &S->P, S->mats, S->s);
    memset(S->stretch.lambda, 0, (size_t)S->stretch.n * sizeof(float));
    memset(S->bend.lambda, 0, (size_t)S->bend.n * sizeof(float));
    for (int it = 0; it < S->stretch_iterations; it++)
        firn_pbd_cpu_sweep(&S->stretch, 0, S->P.dt, S->s);
    for (int it = 0; it < S->bending_iterations; it++)
        firn_pbd_cpu_sweep(&S->bend, 1, S->P.dt, S->s);
    firn_step_mark(st, FIRN_PROF_PBD_CONSTRAINTS);
    if (S->particle_passes) {
        /* the rigid step has run: the bodies stand where the couple phase finds them */
        const int nb = w->coupler.pbd_rigid ? w->n_rigids : 0;
        const firn_pair_chunks *pc = firn_pair_scratch(w, FIRN_PAIR_PBD_RIGID);
        firn_pbd_cpu_particle_passes(S, w->rigids, nb, pc ? pc->chunk_acc : NULL, w->rigid_acc);
    }
    return 0;
}

/* After PBD-rigid and MPM-PBD: the box (v carries the substep's corrections,
 * firn_pbd_move). */
static int pbd_post_coupling(firn_world *w, firn_step *st)
{
    firn_pbd *S = &w->pbd;
    const int n = S->n;
    int bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int i = 0; i < n; i++)
        if (!firn_pbd_finish(i, &S->P, S->s) && i < bad)
            bad = i;
    st->bad = bad < n ? bad : -1;
    return 0;
}

/* The host state brought up to date (CUDA: downloaded when stale). */
static int pbd_host_current(firn_world *w, firn_error *err)
{
    if (!w->pbd.cuda || !w->pbd.host_stale)
        return 0;
    if (firn_cuda_pbd_download(w, err))
        return -1;
    w->pbd.host_stale = 0;
    return 0;
}

static int pbd_cfl(firn_world *w, float v_gravity, firn_cfl_limit *lim, firn_error *err)
{
    if (pbd_host_current(w, err))
        return -1;
    lim->c = 0.0f;
    lim->body = -1;
    lim->dt = firn_pbd_cfl_dt(&w->pbd, w->def.cfl, v_gravity, &lim->v);
    return 0;
}

static void pbd_cfl_cause(const firn_world *w, const firn_cfl_limit *lim, float v_gravity,
                          char *why, size_t size)
{
    const firn_scene_def *d = &w->def;
    if (v_gravity > lim->v)
        snprintf(why, size,
                 "gravity over a frame, %g m/s (|g| = %g m/s^2 for time.frame_dt = %g s), that "
                 "the PBD particles (pbd.particle_size = %g m, now at %g m/s) may gain",
                 v_gravity, v_gravity / d->frame_dt, d->frame_dt, w->pbd.P.psize, lim->v);
    else
        snprintf(why, size, "the PBD particles, %g m/s (pbd.particle_size = %g m)", lim->v,
                 w->pbd.P.psize);
}

static void pbd_frame_stats(const firn_world *w, firn_frame_stats *s)
{
    if (w->pbd.n > 0)
        firn_pbd_stats(&w->pbd, &s->pbd);
}

static void pbd_nonfinite(const firn_world *w, int bad, const char *head, char *msg, size_t size)
{
    snprintf(msg, size,
             "%s: PBD particle %d of material '%s' has a non-finite position or velocity; the "
             "state is not written. Likely causes: extreme parameters (compliance, density) or a "
             "substep too large (dt = %g s)",
             head, bad, w->def.materials[w->pbd.s.mat[bad]].name, w->params.dt);
}

static double pbd_host_bytes(const firn_world *w) { return (double)firn_pbd_host_bytes(&w->pbd); }

static double pbd_device_bytes(const firn_world *w)
{
    const firn_pbd *S = &w->pbd;
    return (double)firn_pbd_device_bytes(S->n, S->stretch.n, S->bend.n, S->G.cells);
}

/* The PBD particles' fields: x and v saved (the masses, pins and
 * materials come from the scene); the liquid's density as its last
 * iteration left it. */
static void pbd_fields(firn_world *w, firn_field_table *t)
{
    firn_pbd_particles *q = &w->pbd.s;
    const unsigned S = FIRN_FIELD_SAVED;
    const int F = FIRN_FIELD_FLOAT32;
    *t = (firn_field_table){.count = w->pbd.n,
                            .entity = "PBD particle",
                            .solver_name = "PBD",
                            .label = "pbd",
                            .kind = FIRN_SOLVER_KIND_PBD,
                            .lower = w->pbd.P.lower,
                            .upper = w->pbd.P.upper,
                            .box = "the PBD box",
                            .slack = 0.5f * w->def.dx};
    const unsigned SC = S | FIRN_FIELD_COMPARED;
    firn_field_add(t, "x", "x", F, 3, q->x, SC | FIRN_FIELD_POSITION, 0.0f, 0.0f, NULL);
    firn_field_add(t, "v", "v", F, 3, q->v, SC, -FLT_MAX, FLT_MAX, "it must be finite");
    firn_field_add(t, "mass", "mass", F, 1, q->mass, 0, 0.0f, 0.0f, NULL);
    firn_field_add(t, "w", "inverse mass", F, 1, q->w, 0, 0.0f, 0.0f, NULL);
    firn_field_add(t, "rho", "density", F, 1, q->rho, 0, 0.0f, 0.0f, NULL);
    firn_field_add(t, "mat", "material", FIRN_FIELD_UINT8, 1, q->mat, 0, 0.0f, 0.0f, NULL);
}

static int pbd_create(firn_world *w, const firn_scene_def *def, firn_error *err)
{
    return firn_pbd_init(&w->pbd, def, err);
}

static int pbd_cuda_create(firn_world *w, firn_error *err)
{
    return w->pbd.n > 0 ? firn_cuda_pbd_init(w, err) : 0;
}

static void pbd_destroy(firn_world *w) { firn_pbd_free(&w->pbd); }

static void pbd_stats_mass(const firn_frame_stats *s, double *mass, double *kinetic_energy)
{
    *mass = s->pbd.mass;
    *kinetic_energy = s->pbd.kinetic_energy;
}

/* `firn compare`'s PBD statistics: as every solver's bodies
 * (firn_stat_bodies), then the largest edge strain (a ratio already)
 * within the tolerance of 1. */
static int pbd_compare_stats(firn_world *cpu, firn_world *gpu, const firn_frame_stats *sc,
                             const firn_frame_stats *sg, const firn_stat_sink *k, firn_error *err)
{
    (void)cpu, (void)gpu, (void)err;
    if (sc->pbd.particles <= 0)
        return 0;
    firn_stat_bodies(k, "pbd", FIRN_BODY_STATS(&sc->pbd), FIRN_BODY_STATS(&sg->pbd));
    firn_stat(k, "pbd max strain", sc->pbd.max_strain, sg->pbd.max_strain, 1.0);
    return 0;
}

const firn_solver firn_pbd_solver = {
    .name = "pbd",
    .is_active = pbd_active,
    .cpu = {NULL, pbd_pre_coupling, pbd_post_coupling},
    .cuda = &firn_cuda_pbd_phases,
    .prof_pre = FIRN_PROF_PBD_PARTICLES,
    .prof_post = FIRN_PROF_PBD_INTEGRATE,
    .host_current = pbd_host_current,
    .cfl = pbd_cfl,
    .cfl_cause = pbd_cfl_cause,
    .stats = pbd_frame_stats,
    .stats_mass = pbd_stats_mass,
    .compare_stats = pbd_compare_stats,
    .nonfinite = pbd_nonfinite,
    .host_bytes = pbd_host_bytes,
    .device_bytes = pbd_device_bytes,
    .fields = pbd_fields,
    .section = "PBDP",
    .create = pbd_create,
    .cuda_create = pbd_cuda_create,
    .cuda_destroy = firn_cuda_pbd_free,
    .destroy = pbd_destroy,
};
