/* fem_cpu.c - the FEM solver's explicit phases on the CPU path
 * (docs/PHYSICS.md, FEM): a parallel loop per pass of include/firn_fem.h,
 * in Genesis's substep order (docs/PHYSICS.md s7.3). Each element writes
 * its own force slots and each vertex sums its slots in a fixed order, so
 * the state is the same for any thread count. */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include <omp.h>

#include "fem.h"
#include "compare_stats.h"
#include "fem_implicit.h"
#include "mpm_sph.h"
#include "world.h"
#include "cuda_backend.h"

static int fem_active(const firn_world *w) { return w->fem.E.n > 0; }

/* Element forces from the start-of-substep positions, then each vertex:
 * x0 = x, v += dt f / m, damping, gravity. */
static int fem_pre_coupling(firn_world *w, firn_step *step)
{
    firn_fem *S = &w->fem;
    const firn_fem_elements E = S->E;
    const firn_fem_vertices V = S->V;
    const firn_fem_material *mats = S->mats;
    const int ne = E.n, nv = V.n;
    S->P.dt = w->params.dt;
    const firn_fem_params P = S->P;
#pragma omp parallel for schedule(static)
    for (int e = 0; e < ne; e++)
        firn_fem_element_forces(e, mats, &E, V.x, nv);
    firn_step_mark(step, FIRN_PROF_FEM_ELEMENTS);
    (void)nv;
    S->implicit_failed = -1;
    for (int b = 0; b < S->bodies; b++) {
        const int v0 = S->v_first[b], v1 = S->v_first[b + 1];
        if (!S->implicit[b]) {
#pragma omp parallel for schedule(static)
            for (int i = v0; i < v1; i++)
                firn_fem_velocity(i, &P, &V, &E);
            continue;
        }
        /* Backward Euler from x0 = x and v (host/fem_implicit.c), with the
         * domain's faces as walls in the solve; it leaves v = (x_{n+1} -
         * x_n) / dt, and the position step (and its wall law) follows after
         * coupling as for explicit bodies. A failed solve leaves v NaN, so
         * the position step reports the body, with the reason. */
        for (int i = v0; i < v1; i++)
            for (int c = 0; c < 3; c++)
                V.x0[c * V.n + i] = V.x[c * V.n + i];
        firn_fem_implicit_params ip = firn_fem_implicit_params_default();
        ip.walls = 1;
        firn_fem_implicit_stats st = {0};
        const int failed = firn_fem_implicit_step(S, b, &ip, P.gravity, P.dt, S->implicit_work, &st,
                                                  &S->implicit_error);
        S->implicit_solves++;
        S->newton_iters += st.newton_iters;
        S->pcg_iters += st.pcg_iters;
        if (failed) {
            if (S->implicit_failed < 0)
                S->implicit_failed = b;
            for (int i = v0; i < v1; i++)
                V.v[i] = NAN;
        }
    }
    return 0;
}

/* x = x0 + dt v, fixed vertices, walls; the lowest non-finite vertex. */
static int fem_post_coupling(firn_world *w, firn_step *st)
{
    firn_fem *S = &w->fem;
    const firn_fem_vertices V = S->V;
    const firn_fem_params P = S->P;
    const int n = V.n;
    int bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int i = 0; i < n; i++)
        if (!firn_fem_position(i, &P, &V) && i < bad)
            bad = i;
    st->bad = bad < n ? bad : -1;
    return 0;
}

/* The host state brought up to date (CUDA: downloaded when stale). */
static int fem_host_current(firn_world *w, firn_error *err)
{
    if (!w->fem.cuda || !w->fem.host_stale)
        return 0;
    if (firn_cuda_fem_download(w, err))
        return -1;
    w->fem.host_stale = 0;
    return 0;
}

static int fem_cfl(firn_world *w, float v_gravity, firn_cfl_limit *lim, firn_error *err)
{
    if (fem_host_current(w, err))
        return -1;
    lim->dt = firn_fem_cfl_dt(&w->fem, w->def.cfl, v_gravity, &lim->c, &lim->v, &lim->body);
    return 0;
}

static void fem_cfl_cause(const firn_world *w, const firn_cfl_limit *lim, float v_gravity,
                          char *why, size_t size)
{
    (void)v_gravity;
    const firn_scene_def *d = &w->def;
    const int b = lim->body >= 0 ? lim->body : w->fem.scene_body[0];
    float h = w->fem.h_min;
    for (int k = 0; k < w->fem.bodies; k++)
        if (w->fem.scene_body[k] == b)
            h = w->fem.h_body[k];
    snprintf(why, size,
             "the FEM body bodies[%d] (material '%s'): P-wave speed %g m/s and vertices at "
             "%g m/s over its shortest element altitude %g m",
             b, d->materials[d->bodies[b].material].name, lim->c, lim->v, h);
}

static void fem_frame_stats(const firn_world *w, firn_frame_stats *s)
{
    if (w->fem.V.n > 0)
        firn_fem_stats(&w->fem, &s->fem);
}

static void fem_nonfinite(const firn_world *w, int bad, const char *head, char *msg, size_t size)
{
    const firn_fem *S = &w->fem;
    int b = 0;
    while (b + 1 < S->bodies && bad >= S->v_first[b + 1])
        b++;
    snprintf(msg, size,
             "%s: FEM vertex %d (vertex %d of bodies[%d], material '%s') has a non-finite "
             "position or velocity; the state is not written. Likely causes: a substep too large "
             "for the material (dt = %g s; time.dt beyond the FEM limit with time.force_dt), or "
             "extreme parameters%s%s",
             head, bad, bad - S->v_first[b], S->scene_body[b],
             w->def.materials[S->body_mat[b]].name, w->params.dt,
             S->implicit_failed == b ? "; its implicit solve failed: " : "",
             S->implicit_failed == b ? S->implicit_error.msg : "");
}

static double fem_host_bytes(const firn_world *w) { return (double)firn_fem_host_bytes(&w->fem); }

static double fem_device_bytes(const firn_world *w)
{
    const firn_fem *S = &w->fem;
    const long long nodes =
        w->coupler.fem_mpm ? (long long)w->params.n[0] * w->params.n[1] * w->params.n[2] : 0;
    return (double)firn_fem_device_bytes(S->V.n, S->E.n, S->nf, S->ns, nodes, w->coupler.fem_sph,
                                         w->sph.n, firn_fem_sph_contact(w)) +
           (S->implicit_work ? (double)firn_fem_implicit_device_bytes(S->V.n, S->E.n) : 0.0);
}

/* The FEM vertices' fields: x and v saved (the mesh, masses and fixed set
 * come from the scene); the elastic forces of the last substep. */
static void fem_fields(firn_world *w, firn_field_table *t)
{
    firn_fem_vertices *V = &w->fem.V;
    const int F = FIRN_FIELD_FLOAT32;
    *t = (firn_field_table){.count = V->n,
                            .entity = "FEM vertex",
                            .solver_name = "FEM",
                            .label = "fem",
                            .kind = FIRN_SOLVER_KIND_FEM,
                            .lower = w->fem.P.lower,
                            .upper = w->fem.P.upper,
                            .box = "the domain",
                            .slack = 0.5f * w->def.dx};
    const unsigned SC = FIRN_FIELD_SAVED | FIRN_FIELD_COMPARED;
    firn_field_add(t, "x", "x", F, 3, V->x, SC | FIRN_FIELD_POSITION, 0.0f, 0.0f, NULL);
    firn_field_add(t, "v", "v", F, 3, V->v, SC, -FLT_MAX, FLT_MAX, "it must be finite");
    firn_field_add(t, "force", "elastic force", F, 3, V->f, 0, 0.0f, 0.0f, NULL);
    firn_field_add(t, "mass", "mass", F, 1, V->mass, 0, 0.0f, 0.0f, NULL);
    firn_field_add(t, "fixed", "fixed", FIRN_FIELD_UINT8, 1, V->fixed, 0, 0.0f, 0.0f, NULL);
}

/* FEM reads the world's copy of the scene (the domain its walls bound). */
static int fem_create(firn_world *w, const firn_scene_def *def, firn_error *err)
{
    (void)def;
    return firn_fem_init(&w->fem, &w->def, err) || firn_fem_implicit_attach(&w->fem, err) ? -1 : 0;
}

static int fem_cuda_create(firn_world *w, firn_error *err)
{
    return w->fem.V.n > 0 ? firn_cuda_fem_init(w, err) : 0;
}

static void fem_destroy(firn_world *w)
{
    firn_fem_implicit_detach(&w->fem);
    firn_fem_free(&w->fem);
}

static void fem_stats_mass(const firn_frame_stats *s, double *mass, double *kinetic_energy)
{
    *mass = s->fem.mass;
    *kinetic_energy = s->fem.kinetic_energy;
}

/* `firn compare`'s FEM statistics: as every solver's bodies
 * (firn_stat_bodies), then the elastic energy by the kinetic energy's
 * scale, the largest von Mises stress by the larger of the two. */
static int fem_compare_stats(firn_world *cpu, firn_world *gpu, const firn_frame_stats *sc,
                             const firn_frame_stats *sg, const firn_stat_sink *k, firn_error *err)
{
    (void)cpu, (void)gpu, (void)err;
    const firn_fem_frame_stats *c = &sc->fem, *s = &sg->fem;
    if (c->vertices <= 0)
        return 0;
    const double ke_scale = firn_stat_bodies(k, "fem", FIRN_BODY_STATS(c), FIRN_BODY_STATS(s));
    firn_stat(k, "fem elastic energy", c->elastic_energy, s->elastic_energy,
              fmax(ke_scale, fmax(c->elastic_energy, s->elastic_energy)));
    firn_stat(k, "fem max von Mises", c->max_von_mises, s->max_von_mises,
              fmax(c->max_von_mises, s->max_von_mises));
    return 0;
}

const firn_solver firn_fem_solver = {
    .name = "fem",
    .is_active = fem_active,
    .cpu = {NULL, fem_pre_coupling, fem_post_coupling},
    .cuda = &firn_cuda_fem_phases,
    .prof_pre = FIRN_PROF_FEM_VELOCITY,
    .prof_post = FIRN_PROF_FEM_POSITION,
    .host_current = fem_host_current,
    .cfl = fem_cfl,
    .cfl_cause = fem_cfl_cause,
    .stats = fem_frame_stats,
    .stats_mass = fem_stats_mass,
    .compare_stats = fem_compare_stats,
    .nonfinite = fem_nonfinite,
    .host_bytes = fem_host_bytes,
    .device_bytes = fem_device_bytes,
    .fields = fem_fields,
    .section = "FEMV",
    .create = fem_create,
    .cuda_create = fem_cuda_create,
    .cuda_destroy = firn_cuda_fem_free,
    .destroy = fem_destroy,
};
