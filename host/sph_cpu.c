/* sph_cpu.c - the SPH solver's phases on the CPU path (docs/PHYSICS.md s5):
 * a loop over particles per pass of include/firn_sph.h, OpenMP-parallel.
 * Every sum has one order (the neighbour grid's) and the solvers' error
 * means are summed per fixed chunk, then over chunks in order, so the state
 * is the same for any thread count. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "mpm_sph.h"
#include "compare_stats.h"
#include "firn_sph_coupling.h"
#include "neighbour.h"
#include "sph.h"
#include "world.h"
#include "cuda_backend.h"

#define SPH_CHUNK 4096

void firn_sph_cpu_sort(firn_sph *S)
{
    firn_nbr_cpu_build(&S->P.nb, &S->G, S->s.x, S->n, S->cell_count);
}

/* Mean of firn_sph_df_error over the particles, in a fixed order. */
static double df_mean_error(const firn_sph *S, int density)
{
    const int n = S->n, chunks = (n + SPH_CHUNK - 1) / SPH_CHUNK;
    double part[256], total = 0.0;
    for (int c0 = 0; c0 < chunks; c0 += 256) {
        const int c1 = c0 + 256 < chunks ? c0 + 256 : chunks;
#pragma omp parallel for schedule(static)
        for (int c = c0; c < c1; c++) {
            double sum = 0.0;
            const int end = (c + 1) * SPH_CHUNK < n ? (c + 1) * SPH_CHUNK : n;
            for (int i = c * SPH_CHUNK; i < end; i++)
                sum += firn_sph_df_error(i, S->s, density);
            part[c - c0] = sum;
        }
        for (int c = c0; c < c1; c++)
            total += part[c - c0];
    }
    return n > 0 ? total / n : 0.0;
}

/* One DFSPH solve (divergence: density = 0; density: 1), Jacobi iterations
 * until the mean error is within tolerance or the iteration cap; at least
 * one runs. Returns the iterations run. */
static int df_solve(firn_sph *S, int density)
{
    const firn_sph_params *P = &S->P;
    const int n = S->n, cap = density ? P->dens_iters : P->div_iters;
    const float tol = firn_sph_df_threshold(P, density);
    int it = 0;
    while (it < cap) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++)
            firn_sph_df_iterate(i, P, S->mats, S->s, S->G, density);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++) {
            if (density)
                firn_sph_df_density_source(i, P, S->mats, S->s, S->G);
            else
                firn_sph_df_div_source(i, P, S->s, S->G);
        }
        it++;
        if (df_mean_error(S, density) <= tol)
            break;
    }
    return it;
}

static void wcsph(firn_sph *S)
{
    const firn_sph_params *P = &S->P;
    const int n = S->n;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        firn_store3(S->s.acc, n, i, firn_sph_nonpressure(i, P, S->mats, S->s, S->G));
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        firn_sph_eos(i, S->mats, S->s);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        firn_sph_pressure_step(i, P, S->mats, S->s, S->G);
}

/* Bender and Koschier's order: the divergence solve on the velocities the
 * last substep left, then the non-pressure forces, then the density solve
 * on the predicted velocities. */
static void dfsph(firn_sph *S)
{
    const firn_sph_params *P = &S->P;
    const int n = S->n;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        firn_sph_df_factor(i, P, S->s, S->G);
    }
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        firn_sph_df_div_source(i, P, S->s, S->G);
    S->iters[0] = df_solve(S, 0);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        firn_store3(S->s.acc, n, i, firn_sph_nonpressure(i, P, S->mats, S->s, S->G));
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        firn_sph_kick(i, P, S->s);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        firn_sph_df_density_source(i, P, S->mats, S->s, S->G);
    S->iters[1] = df_solve(S, 1);
    S->iters_total[0] += S->iters[0];
    S->iters_total[1] += S->iters[1];
    S->solves++;
}

static int sph_active(const firn_world *w) { return w->sph.n > 0; }

static int sph_pre_coupling(firn_world *w, firn_step *st)
{
    firn_sph *S = &w->sph;
    const int n = S->n;
    S->P.dt = w->params.dt;
    /* the bodies SPH-rigid couples bound the density (firn_sph_density_rigid) */
    const int nb = w->coupler.sph_rigid ? w->n_rigids : 0;
    const firn_rigid *bodies = w->rigids;
    firn_sph_cpu_sort(S);
    /* and the MPM bodies MPM-SPH couples (firn_mpm_level_at), after P2G */
    firn_mpm_sph_phi(w);
    const firn_mpm_level L = firn_mpm_sph_level(w);
    /* and the FEM bodies FEM-SPH couples (firn_fem_sph_face) */
    firn_fem_sph_distance(w);
    const float *fem_d = firn_sph_pairs_view(w).fem_d;
    firn_step_mark(st, FIRN_PROF_SPH_SORT);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        S->s.rho[i] = firn_sph_density_rigid(i, &S->P, S->mats, S->s, S->G, bodies, nb, &L, fem_d);
    firn_step_mark(st, FIRN_PROF_SPH_DENSITY);
    if (S->P.solver == FIRN_SPH_DFSPH)
        dfsph(S);
    else
        wcsph(S);
    return 0;
}

static int sph_post_coupling(firn_world *w, firn_step *st)
{
    firn_sph *S = &w->sph;
    const int n = S->n;
    int bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int i = 0; i < n; i++) {
        firn_sph_advect(i, &S->P, S->s);
        firn_vec3 x = firn_load3(S->s.x, n, i), v = firn_load3(S->s.v, n, i);
        if (!isfinite(x.v[0] + x.v[1] + x.v[2] + v.v[0] + v.v[1] + v.v[2]) && i < bad)
            bad = i;
    }
    st->bad = bad < n ? bad : -1;
    return 0;
}

/* The host state brought up to date (CUDA: downloaded when stale). */
static int sph_host_current(firn_world *w, firn_error *err)
{
    if (!w->sph.cuda || !w->sph.host_stale)
        return 0;
    if (firn_cuda_sph_download(w, err))
        return -1;
    w->sph.host_stale = 0;
    return 0;
}

static int sph_cfl(firn_world *w, float v_gravity, firn_cfl_limit *lim, firn_error *err)
{
    lim->dt = INFINITY;
    lim->c = lim->v = 0.0f;
    lim->body = -1;
    if (w->sph.n <= 0)
        return 0;
    if (sph_host_current(w, err))
        return -1;
    lim->dt = firn_sph_cfl_dt(&w->sph, w->def.cfl, v_gravity, &lim->c, &lim->v);
    /* the DFSPH density solve's relaxation time (firn_sph_df_excess_share):
     * the step the liquid alone would take this frame, rounded down to a
     * quarter octave (within 19 %), so that a CUDA graph keyed by it is
     * captured again only when the liquid's speed changes that much */
    const float own = isfinite(lim->dt) ? firn_minf(lim->dt, w->def.frame_dt) : w->def.frame_dt;
    w->sph.P.tau = exp2f(floorf(4.0f * log2f(own)) * 0.25f);
    return 0;
}

/* A frame at a fixed time.dt: DFSPH's tau from the liquid's own step all
 * the same (sph_cfl), so that a fixed step far below it does not jolt the
 * pool (firn_sph_df_excess_share). WCSPH has no use for it. */
static int sph_fixed_frame(firn_world *w, float v_gravity, firn_error *err)
{
    if (w->sph.n <= 0 || w->sph.P.solver != FIRN_SPH_DFSPH)
        return 0;
    firn_cfl_limit lim;
    return sph_cfl(w, v_gravity, &lim, err);
}

static void sph_cfl_cause(const firn_world *w, const firn_cfl_limit *lim, float v_gravity,
                          char *why, size_t size)
{
    (void)v_gravity;
    snprintf(why, size,
             "the SPH liquid: sound speed %g m/s, particles at %g m/s, viscosity (support "
             "radius h = %g m)",
             lim->c, lim->v, w->sph.P.h);
}

static void sph_frame_stats(const firn_world *w, firn_frame_stats *s)
{
    if (w->sph.n > 0)
        firn_sph_stats(&w->sph, &s->sph);
}

static void sph_nonfinite(const firn_world *w, int bad, const char *head, char *msg, size_t size)
{
    snprintf(msg, size,
             "%s: SPH particle %d of material '%s' has a non-finite position or velocity; the "
             "state is not written. Likely causes: a time step too large for the liquid (dt = %g "
             "s), or extreme parameters",
             head, bad, w->def.materials[w->sph.s.mat[bad]].name, w->params.dt);
}

static double sph_host_bytes(const firn_world *w) { return (double)firn_sph_host_bytes(&w->sph); }

static double sph_device_bytes(const firn_world *w)
{
    const firn_nbr_space *nb = &w->sph.P.nb;
    return (double)firn_sph_device_bytes(w->sph.n, nb->res[0] * nb->res[1] * nb->res[2]);
}

/* The SPH particles' fields, all saved: the solves' factor and source too,
 * so that a run resumed from a checkpoint steps as the run did. */
static void sph_fields(firn_world *w, firn_field_table *t)
{
    firn_sph_particles *q = &w->sph.s;
    const unsigned S = FIRN_FIELD_SAVED;
    const int F = FIRN_FIELD_FLOAT32;
    const char *fin = "it must be finite";
    *t = (firn_field_table){.count = w->sph.n,
                            .entity = "SPH particle",
                            .solver_name = "SPH",
                            .label = "sph",
                            .kind = FIRN_SOLVER_KIND_SPH,
                            .lower = w->sph.P.lower,
                            .upper = w->sph.P.upper,
                            .box = "the SPH box",
                            .slack = 0.5f * w->def.dx};
    const unsigned SC = S | FIRN_FIELD_COMPARED;
    firn_field_add(t, "x", "x", F, 3, q->x, SC | FIRN_FIELD_POSITION, 0.0f, 0.0f, NULL);
    firn_field_ply(t, "x y z", "[m]");
    firn_field_add(t, "v", "v", F, 3, q->v, SC, -FLT_MAX, FLT_MAX, fin);
    firn_field_ply(t, "vx vy vz", "[m/s]");
    firn_field_add(t, "acc", "acceleration", F, 3, q->acc, S, -FLT_MAX, FLT_MAX, fin);
    firn_field_add(t, "rho", "density", F, 1, q->rho, SC, 0.0f, FLT_MAX,
                   "it must be finite and not negative");
    firn_field_ply(t, "density", "[kg/m^3]");
    firn_field_add(t, "p", "pressure", F, 1, q->p, SC, -FLT_MAX, FLT_MAX, fin);
    firn_field_ply(t, "pressure", "[Pa]");
    firn_field_add(t, "alpha", "DFSPH factor", F, 1, q->alpha, S, -FLT_MAX, FLT_MAX, fin);
    firn_field_add(t, "drho", "DFSPH source", F, 1, q->drho, S, -FLT_MAX, FLT_MAX, fin);
    firn_field_add(t, "mat", "material", FIRN_FIELD_UINT8, 1, q->mat, S | FIRN_FIELD_MATERIAL, 0.0f,
                   0.0f, NULL);
    firn_field_ply(t, "material", NULL);
}

/* firn compare's floors: the density's tolerance carried through the
 * pressure law. WCSPH's p = k ((rho / rho0)^gamma - 1) turns a density
 * difference of 1e-6 rho (8 ulps) into 1e-4 of a resting tank's pressure
 * scale, so p's scale is at least dp/drho times rho's, and v's at least dt
 * times the acceleration that pressure scale gives over a support radius,
 * p / (rho h). x and rho: their own magnitude. */
static double sph_compare_floor(firn_world *w, const char *name, float dt)
{
    const int is_p = !strcmp(name, "p"), is_v = !strcmp(name, "v");
    if (!is_p && !is_v)
        return 0.0;
    double rho = 0.0;
    for (long long i = 0; i < w->sph.n; i++)
        rho = fmax(rho, fabs((double)w->sph.s.rho[i]));
    const double p_floor = firn_sph_pressure_slope(&w->sph, rho) * rho;
    if (is_p)
        return p_floor;
    return rho > 0.0 ? dt * p_floor / (rho * w->sph.P.h) : 0.0;
}

static int sph_create(firn_world *w, const firn_scene_def *def, firn_error *err)
{
    return firn_sph_init(&w->sph, def, err);
}

static int sph_cuda_create(firn_world *w, firn_error *err)
{
    return w->sph.n > 0 ? firn_cuda_sph_init(w, err) : 0;
}

static void sph_destroy(firn_world *w) { firn_sph_free(&w->sph); }

static void sph_stats_mass(const firn_frame_stats *s, double *mass, double *kinetic_energy)
{
    *mass = s->sph.mass;
    *kinetic_energy = s->sph.kinetic_energy;
}

/* `firn compare`'s SPH statistics: as every solver's bodies
 * (firn_stat_bodies), then the mean density by the CPU's, the mean
 * pressure by the hydrostatic rho g L. */
static int sph_compare_stats(firn_world *cpu, firn_world *gpu, const firn_frame_stats *sc,
                             const firn_frame_stats *sg, const firn_stat_sink *k, firn_error *err)
{
    (void)cpu, (void)gpu, (void)err;
    const firn_sph_frame_stats *c = &sc->sph, *s = &sg->sph;
    if (c->particles <= 0)
        return 0;
    firn_stat_bodies(k, "sph", FIRN_BODY_STATS(c), FIRN_BODY_STATS(s));
    const double rho = c->mean_density > 0.0 ? c->mean_density : 1.0;
    firn_stat(k, "sph mean density", c->mean_density, s->mean_density, rho);
    firn_stat(k, "sph mean pressure", c->mean_pressure, s->mean_pressure,
              fmax(rho * fmax(k->g, 1e-3) * k->L, fabs(c->mean_pressure)));
    return 0;
}

const firn_solver firn_sph_solver = {
    .name = "sph",
    .is_active = sph_active,
    .cpu = {NULL, sph_pre_coupling, sph_post_coupling},
    .cuda = &firn_cuda_sph_phases,
    .prof_pre = FIRN_PROF_SPH_PRESSURE,
    .prof_post = FIRN_PROF_SPH_INTEGRATE,
    .host_current = sph_host_current,
    .cfl = sph_cfl,
    .cfl_cause = sph_cfl_cause,
    .fixed_frame = sph_fixed_frame,
    .stats = sph_frame_stats,
    .nonfinite = sph_nonfinite,
    .host_bytes = sph_host_bytes,
    .device_bytes = sph_device_bytes,
    .fields = sph_fields,
    .section = "SPHP",
    .compare_floor = sph_compare_floor,
    .stats_mass = sph_stats_mass,
    .compare_stats = sph_compare_stats,
    .create = sph_create,
    .cuda_create = sph_cuda_create,
    .cuda_destroy = firn_cuda_sph_free,
    .destroy = sph_destroy,
};
