/* world.c - the public world API: creation from a scene definition, frame
 * stepping with CFL substeps, statistics, and dispatch to the CPU path or the
 * CUDA backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "coupler.h"
#include "cuda_backend.h"
#include "error.h"
#include "fem_implicit.h"
#include "mpm_sph.h"
#include "pair.h"
#include "rigid.h"
#include "sample.h"
#include "scene_def.h"
#include "scene_hash.h"
#include "solver_cpu.h"
#include "world.h"

/* The public enums (firn.h) and the physics headers' mirrors of them
 * (firn_material.h, firn_mpm.h) name the same things in the same order:
 * firn_material_build copies model and law as they are. */
_Static_assert(FIRN_M_ELASTIC == (int)FIRN_MODEL_ELASTIC &&
                   FIRN_M_LIQUID == (int)FIRN_MODEL_LIQUID && FIRN_M_SNOW == (int)FIRN_MODEL_SNOW &&
                   FIRN_M_SAND == (int)FIRN_MODEL_SAND &&
                   FIRN_M_VON_MISES == (int)FIRN_MODEL_VON_MISES &&
                   FIRN_M_FRACTURE == (int)FIRN_MODEL_FRACTURE &&
                   FIRN_M_FRACTURE + 1 == (int)FIRN_MODEL_SPH_LIQUID,
               "firn_model and FIRN_M_* differ");
_Static_assert(FIRN_L_COROTATED == (int)FIRN_LAW_COROTATED &&
                   FIRN_L_NEOHOOKEAN == (int)FIRN_LAW_NEOHOOKEAN,
               "firn_elastic_law and FIRN_L_* differ");
_Static_assert(FIRN_W_SEPARATE == (int)FIRN_WALL_SEPARATE &&
                   FIRN_W_STICKY == (int)FIRN_WALL_STICKY && FIRN_W_SLIP == (int)FIRN_WALL_SLIP,
               "firn_wall_type and FIRN_W_* differ");

double firn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

float firn_material_wave_speed(const firn_material *m)
{
    float mu = m->model == FIRN_M_LIQUID ? 0.0f : m->mu;
    return sqrtf((m->lambda + 2.0f * mu) / m->rho);
}

void firn_material_build(const firn_material_def *def, firn_material *m)
{
    memset(m, 0, sizeof *m);
    m->model = (int)def->model;
    m->law = (int)def->law;
    m->mu = def->E / (2.0f * (1.0f + def->nu));
    m->lambda = def->E * def->nu / ((1.0f + def->nu) * (1.0f - 2.0f * def->nu));
    if (def->model == FIRN_MODEL_LIQUID)
        m->mu = 0.0f; /* inviscid */
    m->rho = def->density;
    m->theta_c = def->theta_c;
    m->theta_s = def->theta_s;
    m->xi = def->hardening;
    m->hmax = def->max_hardening;
    float sphi = sinf(def->friction_angle * (float)M_PI / 180.0f);
    const int fit = def->cone_fit == FIRN_CONE_EXTENSION      ? FIRN_C_EXTENSION
                    : def->cone_fit == FIRN_CONE_PLANE_STRAIN ? FIRN_C_PLANE_STRAIN
                    : def->cone_fit == FIRN_CONE_INSCRIBED    ? FIRN_C_INSCRIBED
                                                              : FIRN_C_COMPRESSION;
    m->alpha = firn_sand_cone_alpha(sphi, fit);
    if (def->model == FIRN_MODEL_SAND && def->rheology == FIRN_RHEOLOGY_MU_I) {
        m->alpha2 =
            firn_sand_cone_alpha(sinf(firn_sand_friction_angle_2(def) * (float)M_PI / 180.0f), fit);
        m->i0 = def->inertial_I0;
        m->inertia = def->grain_diameter * sqrtf(2.0f * def->grain_density);
    }
    m->yield = def->yield_stress;
    m->crit = def->crit_strain;
    m->rate = def->damage_rate;
    float c = firn_material_wave_speed(m);
    m->c2 = c * c;
}

void firn_params_build(const firn_scene_def *def, firn_params *P)
{
    memset(P, 0, sizeof *P);
    P->dx = def->dx;
    P->inv_dx = 1.0f / def->dx;
    for (int a = 0; a < 3; a++) {
        P->lower[a] = def->lower[a];
        P->n[a] = (int)ceilf((def->upper[a] - def->lower[a]) / def->dx - 1e-4f) + 1;
        P->gravity[a] = def->gravity[a];
        /* Keep the quadratic stencil inside the grid: base = floor(x/dx - 0.5)
         * must stay in [0, n - 3]. */
        P->x_min[a] = def->lower[a] + def->dx;
        P->x_max[a] = def->lower[a] + (float)(P->n[a] - 2) * def->dx;
    }
    for (int f = 0; f < 6; f++) {
        P->wall_type[f] = def->walls[f].type == FIRN_WALL_STICKY ? FIRN_W_STICKY
                          : def->walls[f].type == FIRN_WALL_SLIP ? FIRN_W_SLIP
                                                                 : FIRN_W_SEPARATE;
        P->wall_friction[f] = def->walls[f].friction;
    }
    P->bound = FIRN_WALL_LAYERS;
}

static const char *prefix(const firn_scene_def *def)
{
    return def->source[0] ? def->source : "scene";
}

/* Largest particle speed and largest signal speed (firn_wave_speed2) over
 * the particles: only materials some particle has count, and snow's
 * hardening scales snow's speed alone. */
static int state_extremes(firn_world *w, float *vmax, float *cmax, firn_error *err)
{
    /* On the GPU the device state is the current one: a failed reduction is
     * reported, never answered from a host mirror that may be stale. */
    if (w->cuda)
        return firn_cuda_reduce(w, vmax, cmax, err) == 0 ? 0 : -1;
    const int n = w->p.n;
    float v2 = 0.0f, c2 = 0.0f;
#pragma omp parallel for reduction(max : v2, c2)
    for (int i = 0; i < n; i++) {
        float vx = w->p.v[i], vy = w->p.v[n + i], vz = w->p.v[2 * n + i];
        float q = vx * vx + vy * vy + vz * vz;
        if (q > v2)
            v2 = q;
        float c = firn_wave_speed2(&w->mats[w->p.mat[i]], w->p.Jp[i]);
        if (c > c2)
            c2 = c;
    }
    *vmax = sqrtf(v2);
    *cmax = sqrtf(c2);
    return 0;
}

/* The material of the particle with the largest signal speed (host state). */
static int fastest_material(const firn_world *w)
{
    const int n = w->p.n;
    float c2 = -1.0f;
    int which = 0;
    for (int i = 0; i < n; i++) {
        float c = firn_wave_speed2(&w->mats[w->p.mat[i]], w->p.Jp[i]);
        if (c > c2) {
            c2 = c;
            which = w->p.mat[i];
        }
    }
    return which;
}

/* Fastest point of a coupled rigid body's surface [m/s]: the grid near it
 * takes that velocity. A plane's rotation is not bounded; its linear speed
 * is. Bodies that cannot touch the grid within the coming frame (not
 * coupled, or whose bounding sphere, grown by the distance its surface can
 * travel in frame_dt, misses the domain) do not limit the step. */
static float rigid_speed(firn_world *w, int *which)
{
    float s = 0.0f;
    if (which)
        *which = -1;
    if (w->cuda && w->rigids_stale) {
        firn_error err;
        if (firn_cuda_download_rigids(w, &err) == 0)
            w->rigids_stale = 0;
    }
    if (!w->def.coupling.rigid_mpm)
        return 0.0f;
    for (int k = 0; k < w->n_rigids; k++) {
        const firn_rigid *b = &w->rigids[k];
        const firn_sdf_shape *sh = &b->shape;
        if (!b->couple)
            continue;
        float v = sqrtf(b->v[0] * b->v[0] + b->v[1] * b->v[1] + b->v[2] * b->v[2]);
        float om = sqrtf(b->w[0] * b->w[0] + b->w[1] * b->w[1] + b->w[2] * b->w[2]);
        if (b->n_keys > 0 && b->motion == FIRN_MOTION_KINEMATIC) /* the coming frame's keyframes */
            firn_key_max_speed(b, b->time, b->time + w->def.frame_dt, &v, &om);
        float reach = 0.0f;
        if (sh->type != FIRN_SDF_PLANE) {
            reach = sqrtf(sh->half[0] * sh->half[0] + sh->half[1] * sh->half[1] +
                          sh->half[2] * sh->half[2]);
            if (sh->type != FIRN_SDF_BOX)
                reach += sh->radius;
            float gap = 0.0f; /* distance from the centre to the domain box */
            for (int a = 0; a < 3; a++) {
                float e = firn_maxf(w->def.lower[a] - b->x[a], b->x[a] - w->def.upper[a]);
                gap += e > 0.0f ? e * e : 0.0f;
            }
            /* A dynamic body speeds up by at most g frame_dt plus what the
             * material pushes; that is left to the next frame's estimate. */
            float travel = (v + om * reach) * w->def.frame_dt;
            if (sqrtf(gap) > reach + 2.0f * w->def.dx + travel)
                continue;
        }
        /* NaN wins, as in firn_tools_max_speed. */
        if (!(v + om * reach <= s)) {
            s = v + om * reach;
            if (which)
                *which = k;
            if (isnan(s))
                return s;
        }
    }
    return s;
}

/* More substeps per frame than this is a runaway, not a simulation. */
#define FIRN_MAX_SUBSTEPS 100000

static int current_state(firn_world *w, int need, firn_error *err);

/* Solver k's host state brought up to date (the solver table's
 * host_current: CUDA downloads what is stale). */
static int solver_current(firn_world *w, int k, firn_error *err)
{
    const firn_solver *sv = firn_solver_of(k);
    return sv->host_current ? sv->host_current(w, err) : 0;
}

/* Every solver's. */
static int solvers_current(firn_world *w, firn_error *err)
{
    for (int k = 0; k < FIRN_SOLVER_COUNT; k++)
        if (solver_current(w, k, err))
            return -1;
    return 0;
}

/* What the CFL step is made of: the largest signal speed c, the particles'
 * and the rigid surfaces' largest speeds, and what gravity adds over a
 * frame [m/s]. */
typedef struct {
    float c, v_particles, v_rigid, v_gravity;
    int rigid;                             /* the fastest coupled body, or -1 */
    int tool;                              /* 1: that is tools[rigid] */
    float dt_mpm;                          /* MPM's limit [s] (INFINITY: no limit) */
    firn_cfl_limit lim[FIRN_SOLVER_COUNT]; /* the other solvers' (the table's cfl) */
    int limiting; /* the table's solver with the shortest limit, -1: none */
} cfl_terms;

/* The CFL step into *dt_out; 0, or -1 with err filled (a device failure). */
static int cfl_step(firn_world *w, cfl_terms *t, float *dt_out, firn_error *err)
{
    const firn_scene_def *d = &w->def;
    if (state_extremes(w, &t->v_particles, &t->c, err))
        return -1;
    t->v_rigid = rigid_speed(w, &t->rigid);
    t->tool = 0;
    int fastest_tool;
    const float v_tool = firn_tools_max_speed(w, &fastest_tool);
    if (!(v_tool <= t->v_rigid) && !isnan(t->v_rigid)) {
        t->v_rigid = v_tool;
        t->rigid = fastest_tool;
        t->tool = 1;
    }
    float g = sqrtf(d->gravity[0] * d->gravity[0] + d->gravity[1] * d->gravity[1] +
                    d->gravity[2] * d->gravity[2]);
    /* The speed may grow by g * frame_dt before the next estimate. */
    t->v_gravity = g * d->frame_dt;
    float speed =
        (isnan(t->v_rigid) ? t->v_rigid : firn_maxf(t->v_particles, t->v_rigid)) + t->v_gravity;
    float dt = INFINITY;
    if (t->c > 0.0f)
        dt = firn_minf(dt, d->cfl * d->dx / t->c);
    /* !(<= 0): a NaN speed gives a NaN step, which the runaway check refuses. */
    if (!(speed <= 0.0f) && w->p.n > 0)
        dt = isnan(speed) ? speed : firn_minf(dt, d->cfl * d->dx / speed);
    t->dt_mpm = dt;
    /* the solvers with a limit of their own; the shortest is named when the
     * step runs away (a NaN limit first: firn_minf drops a NaN) */
    float others = INFINITY;
    int nan = isnan(dt);
    t->limiting = -1;
    for (int k = 0; k < FIRN_SOLVER_COUNT; k++) {
        const firn_solver *sv = firn_solver_of(k);
        firn_cfl_limit *lim = &t->lim[k];
        lim->dt = INFINITY;
        if (!sv->cfl)
            continue;
        if (sv->cfl(w, t->v_gravity, lim, err))
            return -1;
        if (isnan(lim->dt) && !nan) {
            nan = 1;
            t->limiting = k;
        } else if (!nan && lim->dt < others) {
            others = lim->dt;
            t->limiting = k;
        }
    }
    if (!nan && !(others < t->dt_mpm))
        t->limiting = -1;
    *dt_out = nan ? NAN : firn_minf(d->frame_dt, firn_minf(t->dt_mpm, others));
    return 0;
}

float firn_world_cfl_dt(firn_world *w)
{
    cfl_terms t;
    firn_error err;
    float dt;
    return cfl_step(w, &t, &dt, &err) == 0 ? dt : NAN;
}

/* What limits a CFL step, for the runaway message: "the speed of <why>". */
static void cfl_cause(firn_world *w, const cfl_terms *t, char *why, size_t size)
{
    const firn_scene_def *d = &w->def;
    const float moving = firn_maxf(t->v_particles, t->v_rigid);
    firn_error ignored;
    if (!isfinite(t->v_rigid) && t->rigid >= 0) {
        /* The segment to blame, over the window rigid_speed and
         * firn_tools_max_speed took. */
        const firn_rigid *b = t->tool ? &w->tools[t->rigid].body : &w->rigids[t->rigid];
        float v, om;
        const int k =
            b->n_keys > 0 ? firn_key_max_speed(b, b->time, b->time + d->frame_dt, &v, &om) : -1;
        const char *kind = t->tool ? "tools" : "rigids";
        const char *name = t->tool ? d->tools[t->rigid].name : d->rigids[t->rigid].name;
        if (k >= 0)
            snprintf(why, size,
                     "the surface of %s[%d] '%s', which is %g m/s: the segment from "
                     "%s[%d].keyframes[%d] (t = %.9g s) to keyframes[%d] (t = %.9g s) gives it a "
                     "speed of %g m/s and an angular speed of %g rad/s, not finite in 32-bit "
                     "floats (the keyframes are too close in time)",
                     kind, t->rigid, name, t->v_rigid, kind, t->rigid, k, b->key[k].t, k + 1,
                     b->key[k + 1].t, v, om);
        else
            snprintf(why, size,
                     "the surface of %s[%d] '%s', which is %g m/s: its velocity is not finite",
                     kind, t->rigid, name, t->v_rigid);
    } else if (t->limiting >= 0) {
        firn_solver_of(t->limiting)->cfl_cause(w, &t->lim[t->limiting], t->v_gravity, why, size);
    } else if (!isfinite(t->c) && w->frame == 0) {
        snprintf(why, size,
                 "sound in the materials, which overflows float: a material is far "
                 "too stiff or too light");
    } else if (!isfinite(t->c)) {
        snprintf(why, size, "sound in the materials, which is not finite: the state is blowing up");
    } else if (!isfinite(t->v_particles) && w->frame == 0) {
        snprintf(why, size,
                 "the particles, which overflows float: a body's initial velocity is "
                 "far too large");
    } else if (!isfinite(t->v_particles)) {
        snprintf(why, size, "the particles, which is not finite: the state is blowing up");
    } else if (t->c > moving + t->v_gravity) {
        /* Named from the host copy, brought up to date first. */
        const char *name = current_state(w, FIRN_STALE_ALL, &ignored) == 0
                               ? d->materials[fastest_material(w)].name
                               : "?";
        snprintf(why, size, "sound in material '%s', %g m/s (too stiff or too light for dx = %g m)",
                 name, t->c, d->dx);
    } else if (t->v_gravity >= moving) {
        snprintf(why, size,
                 "gravity over a frame, %g m/s (|g| = %g m/s^2 for time.frame_dt = %g s)",
                 t->v_gravity, t->v_gravity / d->frame_dt, d->frame_dt);
    } else if (t->v_rigid > t->v_particles) {
        snprintf(why, size, "the surface of %s[%d] '%s', %g m/s", t->tool ? "tools" : "rigids",
                 t->rigid, t->tool ? d->tools[t->rigid].name : d->rigids[t->rigid].name,
                 t->v_rigid);
    } else {
        snprintf(why, size,
                 "the particles, %g m/s (a body's initial velocity, or the state blowing up)",
                 t->v_particles);
    }
}

int firn_world_next_frame_step(firn_world *w, float *dt_out, int *substeps, firn_error *err)
{
    const firn_scene_def *d = &w->def;
    cfl_terms t;
    float dt = d->dt;
    if (d->dt <= 0.0f && cfl_step(w, &t, &dt, err))
        return -1;
    if (d->dt > 0.0f) { /* no CFL: what the solvers derive from their own step */
        const float g = sqrtf(d->gravity[0] * d->gravity[0] + d->gravity[1] * d->gravity[1] +
                              d->gravity[2] * d->gravity[2]);
        for (int k = 0; k < FIRN_SOLVER_COUNT; k++)
            if (firn_solver_of(k)->fixed_frame &&
                firn_solver_of(k)->fixed_frame(w, g * d->frame_dt, err))
                return -1;
    }
    if (d->dt <= 0.0f && w->dist) /* a distributed run: the step of every rank's particles */
        dt = w->dist->reduce_dt(w, dt);
    /* A fixed dt is the user's (the loader holds its count below 2^31); a
     * CFL step this short is a runaway. */
    if (d->dt <= 0.0f && (!(dt > 0.0f) || !isfinite(dt) || d->frame_dt / dt > FIRN_MAX_SUBSTEPS)) {
        char why[FIRN_ERRMSG_MAX / 2], cfl[96] = "";
        cfl_cause(w, &t, why, sizeof why);
        if (d->cfl < 0.01f)
            snprintf(cfl, sizeof cfl, "time.cfl = %g, far below its default 0.4, and ", d->cfl);
        firn_set_error(err, FIRN_E_NUMERIC,
                       "%s: frame %d: the CFL step (time.cfl x dx / speed) is %g s, more than %d "
                       "substeps per %g s frame; it is limited by %sthe speed of %s",
                       prefix(d), w->frame + 1, dt, FIRN_MAX_SUBSTEPS, d->frame_dt, cfl, why);
        return -1;
    }
    int nsub = (int)ceilf(d->frame_dt / dt - 1e-4f);
    if (nsub < 1)
        nsub = 1;
    *dt_out = d->frame_dt / (float)nsub;
    *substeps = nsub;
    return 0;
}

/* An explicit dt is unsafe above Courant number FIRN_UNSAFE_COURANT for the
 * fastest wave, or when particles cross more than a cell per substep. A
 * liquid in free fall at dx = 0.02 m was measured stable for 1000 substeps
 * at Courant 0.8 and blew up within 100 at 0.9; 0.7 leaves a margin. */
#define FIRN_UNSAFE_COURANT 0.7f
static int check_explicit_dt(firn_world *w, firn_error *err)
{
    const firn_scene_def *d = &w->def;
    if (d->dt <= 0.0f || d->force_dt)
        return 0;
    cfl_terms t;
    float dt_cfl;
    if (cfl_step(w, &t, &dt_cfl, err))
        return -1;
    /* FEM: explicit symplectic Euler on lumped-mass tets; Courant 1 on the
     * shortest altitude (the step firn_fem_cfl_dt takes at time.cfl = 1). */
    const firn_cfl_limit *fem = &t.lim[FIRN_SOLVER_FEM];
    const float fem_limit = fem->dt / d->cfl;
    if (w->fem.V.n > 0 && d->dt > fem_limit) {
        const int b = fem->body >= 0 ? fem->body : 0;
        firn_set_error(err, FIRN_E_NUMERIC,
                       "%s: time.dt = %g s is unsafe for the FEM body bodies[%d]: above its "
                       "stability limit h / c = %g s (shortest element altitude h = %g m, P-wave "
                       "speed c = %.4g m/s of material '%s'); lower time.dt, remove it to use the "
                       "CFL step, or set time.force_dt",
                       prefix(d), d->dt, b, fem_limit, w->fem.h_min, fem->c,
                       d->materials[d->bodies[b].material].name);
        return -1;
    }
    const float c = t.c, vmax = isnan(t.v_rigid) ? t.v_rigid : firn_maxf(t.v_particles, t.v_rigid);
    int which = fastest_material(w); /* the host state is current at creation */
    /* !(<= 0) and !(dt <= limit): a NaN speed gives a NaN limit, refused. */
    float limit_c = !(c <= 0.0f) ? FIRN_UNSAFE_COURANT * d->dx / c : INFINITY;
    float limit_v = !(vmax <= 0.0f) ? d->dx / vmax : INFINITY;
    if (!(d->dt <= limit_c)) {
        firn_set_error(err, FIRN_E_NUMERIC,
                       "%s: time.dt = %g s is unsafe: above the stability limit 0.7 dx / c = %g s "
                       "(wave speed c = %.4g m/s of material '%s'); lower time.dt, remove it to "
                       "use the CFL step, or set time.force_dt",
                       prefix(d), d->dt, limit_c, c, d->materials[which].name);
        return -1;
    }
    if (!(d->dt <= limit_v)) {
        firn_set_error(err, FIRN_E_NUMERIC,
                       "%s: time.dt = %g s is unsafe: material or a coupled rigid body moving at "
                       "%g m/s crosses more than a cell (dx = %g m) per substep; lower time.dt or "
                       "set time.force_dt",
                       prefix(d), d->dt, vmax, d->dx);
        return -1;
    }
    return 0;
}

/* A world of def; with a restore (r), at its state: r's state replaces
 * the sampled host state before the GPU's state is made from it (the
 * upload), or after the CPU path's scratch is allocated (its layout). */
firn_run_options firn_run_options_default(void)
{
    firn_run_options o = {.backend = FIRN_BACKEND_AUTO,
                          .p2g = FIRN_P2G_AUTO,
                          .grid = FIRN_GRID_AUTO,
                          .graphs = FIRN_GRAPHS_AUTO};
    return o;
}

/* 0 when every run option is in its enum's range, else -1 with err naming
 * the first that is not. */
static int check_run_options(const firn_run_options *o, firn_error *err)
{
    if (o->backend != FIRN_BACKEND_AUTO && o->backend != FIRN_BACKEND_CPU &&
        o->backend != FIRN_BACKEND_CUDA) {
        firn_set_error(err, FIRN_E_USAGE, "no backend %d: FIRN_BACKEND_AUTO, _CPU or _CUDA",
                       (int)o->backend);
        return -1;
    }
    if (o->p2g < FIRN_P2G_ATOMIC || o->p2g > FIRN_P2G_G2P2G) {
        firn_set_error(err, FIRN_E_USAGE,
                       "run options: no P2G variant %d (firn_p2g_variant: FIRN_P2G_ATOMIC to "
                       "FIRN_P2G_G2P2G, %d to %d)",
                       o->p2g, (int)FIRN_P2G_ATOMIC, (int)FIRN_P2G_G2P2G);
        return -1;
    }
    if (o->grid < FIRN_GRID_AUTO || o->grid > FIRN_GRID_SPARSE) {
        firn_set_error(err, FIRN_E_USAGE,
                       "run options: no grid mode %d (firn_grid_mode: FIRN_GRID_AUTO, _DENSE or "
                       "_SPARSE, %d to %d)",
                       o->grid, (int)FIRN_GRID_AUTO, (int)FIRN_GRID_SPARSE);
        return -1;
    }
    if (o->graphs < FIRN_GRAPHS_AUTO || o->graphs > FIRN_GRAPHS_ON) {
        firn_set_error(err, FIRN_E_USAGE,
                       "run options: no graph mode %d (firn_graph_mode: FIRN_GRAPHS_AUTO, _OFF "
                       "or _ON, %d to %d)",
                       o->graphs, (int)FIRN_GRAPHS_AUTO, (int)FIRN_GRAPHS_ON);
        return -1;
    }
    return 0;
}

firn_world *firn_world_create_restored(const firn_scene_def *def, const firn_run_options *opt,
                                       const firn_world_restore *r, firn_error *err)
{
    const firn_run_options run = opt ? *opt : firn_run_options_default();
    if (check_run_options(&run, err))
        return NULL;
    firn_backend backend = run.backend;
    if (firn_scene_validate(def, err))
        return NULL;
    firn_world *w = calloc(1, sizeof *w);
    if (!w) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory");
        return NULL;
    }
    w->def = *def;
    w->run = run;
    firn_params_build(def, &w->params);
    /* The domain is what the grid covers: upper rounded up to a whole cell,
     * where the upper walls act (firn_world_scene shows it). */
    for (int a = 0; a < 3; a++) {
        float top = def->lower[a] + (float)(w->params.n[a] - 1) * def->dx;
        if (fabsf(top - def->upper[a]) > 1e-4f * def->dx)
            w->def.upper[a] = top;
    }
    for (int k = 0; k < def->n_materials; k++)
        firn_material_build(&def->materials[k], &w->mats[k]);
    w->scene_hash = firn_scene_hash(&w->def);
    /* A checkpoint of another scene is refused before anything is sampled. */
    if (r && r->check(w, r->path, err))
        goto fail;
    /* The backend first: a missing GPU is named before the particles of a
     * large scene are sampled. */
    if (backend == FIRN_BACKEND_AUTO)
        backend = firn_cuda_device_count() > 0 ? FIRN_BACKEND_CUDA : FIRN_BACKEND_CPU;
    w->backend = backend;
    if (backend == FIRN_BACKEND_CUDA && !firn_cuda_available()) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "--backend cuda: this firn was built without CUDA (nvcc was not found "
                       "at build time); rebuild with the CUDA toolkit or use --backend cpu");
        goto fail;
    }
    if (backend == FIRN_BACKEND_CUDA && firn_cuda_device_count() == 0) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "--backend cuda: no usable CUDA GPU (no device, or the driver is "
                       "missing or too old); use --backend cpu or auto");
        goto fail;
    }
    if (firn_rigids_init(w, err) || firn_tools_init(w, err))
        goto fail;
    for (int k = 0; k < FIRN_SOLVER_COUNT; k++) /* the solvers beyond the world's core */
        if (firn_solver_of(k)->create && firn_solver_of(k)->create(w, def, err))
            goto fail;
    firn_coupler_build(w);
    if (w->coupler.cpic && firn_particles_alloc_cpic(&w->p, w->n_rigids + 1)) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for the CPIC records (%d x %d)",
                       w->p.n, w->n_rigids);
        goto fail;
    }

    if (backend == FIRN_BACKEND_CUDA) {
        if ((r && r->read(w, r->path, err)) || firn_cuda_init(w, err))
            goto fail;
        for (int k = 0; k < FIRN_SOLVER_COUNT; k++)
            if (firn_solver_of(k)->cuda_create && firn_solver_of(k)->cuda_create(w, err))
                goto fail;
        const char *why = firn_world_gpu_graph_obstacle(w);
        if (run.graphs == FIRN_GRAPHS_ON && why) {
            firn_set_error(err, FIRN_E_USAGE,
                           "%s: --graphs on: %s, so its substeps cannot be captured as a CUDA "
                           "graph (--graphs auto launches them kernel by kernel)",
                           prefix(def), why);
            goto fail;
        }
    } else {
        const int threads = omp_get_max_threads();
        snprintf(w->device_name, sizeof w->device_name, "CPU, %d OpenMP thread%s", threads,
                 threads == 1 ? "" : "s");
        if (firn_cpu_init(w, err) || firn_coupler_alloc(w, err) || (r && r->read(w, r->path, err)))
            goto fail;
    }
    /* A resumed run's dt passed this check at its start. */
    if (!r && check_explicit_dt(w, err))
        goto fail;
    return w;
fail:
    firn_world_destroy(w);
    return NULL;
}

firn_world *firn_world_create_with(const firn_scene_def *def, const firn_run_options *opt,
                                   firn_error *err)
{
    return firn_world_create_restored(def, opt, NULL, err);
}

firn_world *firn_world_create(const firn_scene_def *def, firn_backend backend, firn_error *err)
{
    firn_run_options o = firn_run_options_default();
    o.backend = backend;
    return firn_world_create_restored(def, &o, NULL, err);
}

void firn_world_destroy(firn_world *w)
{
    if (!w)
        return;
    for (int k = 0; k < FIRN_SOLVER_COUNT; k++) /* before the world's stream goes */
        if (firn_solver_of(k)->cuda_destroy)
            firn_solver_of(k)->cuda_destroy(w);
    if (w->cuda)
        firn_cuda_free(w);
    firn_cpu_free(w);
    firn_coupler_free(w);
    for (int k = 0; k < FIRN_SOLVER_COUNT; k++)
        if (firn_solver_of(k)->destroy)
            firn_solver_of(k)->destroy(w);
    free(w->fem_measures);
    free(w);
}

firn_backend firn_world_backend(const firn_world *w) { return w->backend; }

const char *firn_world_gpu_nondeterminism(const firn_world *w)
{
    const firn_coupler *c = &w->coupler;
    if (w->p.n > 0 && c->active[FIRN_SOLVER_MPM]) {
        if (c->cpic && w->p.cpic_slots > 0)
            return "MPM's P2G with CPIC scatters with float atomics (CPIC has no ordered P2G)";
        if (w->run.p2g != FIRN_P2G_ORDERED)
            return "MPM's P2G scatters with float atomics (--p2g ordered gathers in a fixed "
                   "order)";
    }
    int dynamic = 0;
    for (int k = 0; k < w->n_rigids; k++)
        dynamic |= w->rigids[k].motion == FIRN_MOTION_DYNAMIC;
    if (dynamic && (c->rigid_mpm || c->sph_rigid || c->pbd_rigid || c->fem_rigid))
        return "the coupling reaction on dynamic rigid bodies is summed with double atomics";
    if (w->n_tools > 0 && c->tool_mpm)
        return "the tools' reaction (their reported force) is summed with double atomics";
    if (c->fem_mpm || c->fem_sph)
        return "the FEM-MPM and FEM-SPH pairs scatter with float atomics";
    return NULL;
}
const char *firn_world_gpu_graph_obstacle(const firn_world *w)
{
    for (int b = 0; b < w->fem.bodies; b++)
        if (w->fem.implicit[b])
            return "an implicit FEM body's Newton loop reads the device between its kernels";
    return NULL;
}

const char *firn_world_device_name(const firn_world *w) { return w->device_name; }
long long firn_world_particle_count(const firn_world *w)
{
    return (long long)w->p.n + w->sph.n + w->pbd.n;
}
const firn_scene_def *firn_world_scene(const firn_world *w) { return &w->def; }
firn_profile firn_world_profile(const firn_world *w) { return w->prof; }

int firn_scene_couples_mpm_pbd(const firn_scene_def *def)
{
    int has_mpm = 0;
    for (int b = 0; b < def->n_bodies; b++)
        has_mpm |= def->bodies[b].solver == FIRN_SOLVER_KIND_MPM;
    return def->coupling.mpm_pbd && has_mpm && firn_pbd_in_scene(def);
}

size_t firn_particle_layout(int n, int slots, char *base, firn_particles *p)
{
    const size_t nn = (size_t)n, f = sizeof(float);
    const size_t bytes[9] = {3 * nn * f, 3 * nn * f, 9 * nn * f,
                             9 * nn * f, nn * f,     nn * f,
                             nn * f,     nn,         (size_t)slots * nn * sizeof(uint32_t)};
    size_t off[9], total = 0;
    for (int k = 0; k < 9; k++) {
        off[k] = total;
        total += firn_align256(bytes[k]);
    }
    if (base) {
        p->n = n;
        p->x = (float *)(base + off[0]);
        p->v = (float *)(base + off[1]);
        p->C = (float *)(base + off[2]);
        p->F = (float *)(base + off[3]);
        p->Jp = (float *)(base + off[4]);
        p->damage = (float *)(base + off[5]);
        p->vol = (float *)(base + off[6]);
        p->mat = (uint8_t *)(base + off[7]);
        p->cpic_slots = slots;
        p->cpic = slots > 0 ? (uint32_t *)(base + off[8]) : NULL;
    }
    return total;
}

static size_t no_align(size_t b) { return b; }

/* The shape of the rigid bodies' k-th, then of the tools'. */
static const firn_sdf_shape *body_or_tool_shape(const firn_world *w, int k)
{
    return k < w->n_rigids ? &w->rigids[k].shape : &w->tools[k - w->n_rigids].body.shape;
}

size_t firn_mesh_grid_bytes(const firn_world *w, size_t (*align)(size_t))
{
    size_t total = 0;
    for (int k = 0; k < w->n_rigids + w->n_tools; k++) {
        const firn_sdf_shape *sh = body_or_tool_shape(w, k);
        int first = 1;
        for (int j = 0; j < k; j++)
            first &= body_or_tool_shape(w, j)->grid != sh->grid;
        if (sh->type == FIRN_SDF_MESH && sh->grid && first)
            total += align(4 * (size_t)sh->n[0] * sh->n[1] * sh->n[2] * sizeof(float));
    }
    return total;
}

int firn_device_binned(const firn_world *w)
{
    const int v = w->run.p2g;
    return (v == FIRN_P2G_BINNED || v == FIRN_P2G_WARP || v == FIRN_P2G_ORDERED ||
            v == FIRN_P2G_G2P2G || (v == FIRN_P2G_AUTO && w->p.n >= FIRN_P2G_BINNED_MIN)) &&
           w->p.n > 0 && w->coupler.active[FIRN_SOLVER_MPM] &&
           !(w->coupler.cpic && w->p.cpic_slots > 0);
}

int firn_device_sparse(const firn_world *w)
{
    const firn_coupler *c = &w->coupler;
    /* G2P2G's P2G runs in the fused kernel, after the clear: no list of the
     * blocks it reaches can be built before it. */
    if (!firn_device_binned(w) || w->run.grid == FIRN_GRID_DENSE || w->run.p2g == FIRN_P2G_G2P2G)
        return 0;
    const int grid_pairs = (c->rigid_mpm && w->n_rigids > 0) || (c->tool_mpm && w->n_tools > 0) ||
                           c->mpm_sph || c->mpm_pbd || c->fem_mpm;
    if (grid_pairs)
        return 0;
    const double nodes = (double)w->params.n[0] * w->params.n[1] * w->params.n[2];
    return w->run.grid == FIRN_GRID_SPARSE ||
           nodes > (double)FIRN_GRID_SPARSE_RATIO * (double)w->p.n;
}

/* Binned P2G sorts by counting on a dense grid, except with ordered P2G.
 * FIRN_BIN_SORT=radix in the environment keeps CUB's radix sort there
 * too, so that the GPU check can time the two side by side (docs/BENCH.md,
 * "GPU P2G"). */
int firn_device_counting_sort(const firn_world *w)
{
    const char *e = getenv("FIRN_BIN_SORT");
    if (e && strcmp(e, "radix") == 0)
        return 0;
    /* The counting sort scans one int per cell of every bin, plus one, with
     * int offsets: a grid near the loader's 2^31 nodes keeps the radix sort. */
    double cells = 64.0;
    for (int a = 0; a < 3; a++)
        cells *= (double)((w->params.n[a] - 3) / 4 + 1);
    if (cells + 1.0 > 2147483647.0)
        return 0;
    return firn_device_binned(w) && w->run.p2g != FIRN_P2G_ORDERED && !firn_device_sparse(w);
}

/* Binned and G2P2G P2G sum their tiles in 32-bit fixed point when
 * FIRN_P2G_TILE=fixed is in the environment (kernels/mpm.cu,
 * tile_scatter_fixed): until a GPU has timed it against the float tile,
 * the GPU check asks for it by name (docs/BENCH.md, "GPU P2G"). */
int firn_device_fixed_tile(const firn_world *w)
{
    const char *e = getenv("FIRN_P2G_TILE");
    return e && strcmp(e, "fixed") == 0 && firn_device_binned(w) &&
           (w->run.p2g == FIRN_P2G_BINNED || w->run.p2g == FIRN_P2G_G2P2G ||
            w->run.p2g == FIRN_P2G_AUTO);
}

/* FIRN_P2G_REORDER's value: 0 (off) or every how many substeps of a call
 * the particles move into the bin order (1 to 1000000); -1 when it is
 * neither. */
int firn_reorder_every(const char *e)
{
    char *end = NULL;
    const long k = strtol(e, &end, 10);
    if (end == e || *end != '\0' || k < 0 || k > 1000000)
        return -1;
    return (int)k;
}

/* With binned P2G (any variant), FIRN_P2G_REORDER=k in the environment
 * moves the device particle arrays into the bin order after the binning
 * of substeps 0, k, 2k ... of each call (kernels/mpm.cu, reorder_gather):
 * off until a GPU has timed it (docs/BENCH.md, "GPU P2G"). */
int firn_device_reorder(const firn_world *w)
{
    const char *e = getenv("FIRN_P2G_REORDER");
    if (!e || !firn_device_binned(w))
        return 0;
    const int k = firn_reorder_every(e);
    return k > 0 ? k : 0;
}

/* Binned P2G's arrays besides CUB's storage: four ints a particle (key,
 * sorted key, ids, order) and two a bin of 4^3 cells (kernels/mpm.cu),
 * one more float a bin with the fixed-point tile;
 * the counting sort's two ints a cell, and one more each; the list of the
 * bins that hold particles (not with ordered P2G): three ints a bin and
 * its length. */
static size_t binned_bytes(const firn_world *w)
{
    if (!firn_device_binned(w))
        return 0;
    size_t bins = 1;
    for (int a = 0; a < 3; a++)
        bins *= (size_t)((w->params.n[a] - 3) / 4 + 1);
    size_t ordered = 0; /* ordered P2G: each cell's range, each particle's scatter state */
    if (w->run.p2g == FIRN_P2G_ORDERED)
        ordered = 2 * firn_align256(bins * 64 * sizeof(int)) +
                  firn_align256(16 * (size_t)w->p.n * sizeof(float));
    size_t sparse = 0; /* sparse grid: a flag, an offset and a list entry per 4^3-node block */
    if (firn_device_sparse(w)) {
        size_t blocks = 1;
        for (int a = 0; a < 3; a++)
            blocks *= (size_t)((w->params.n[a] - 1) / 4 + 1);
        sparse = 3 * firn_align256(blocks * sizeof(int)) + firn_align256(sizeof(int));
    }
    size_t counting = 0, listed = 0;
    if (firn_device_counting_sort(w))
        counting = 2 * firn_align256((bins * 64 + 1) * sizeof(int));
    if (w->run.p2g != FIRN_P2G_ORDERED)
        listed = 3 * firn_align256(bins * sizeof(int)) + firn_align256(sizeof(int));
    /* the fixed-point tile: a momentum bound per bin */
    const size_t fixed = firn_device_fixed_tile(w) ? firn_align256(bins * sizeof(float)) : 0;
    return 4 * firn_align256((size_t)w->p.n * sizeof(int)) + 2 * firn_align256(bins * sizeof(int)) +
           ordered + sparse + counting + listed + fixed;
}

size_t firn_device_bytes(const firn_world *w)
{
    const size_t nodes = (size_t)w->params.n[0] * w->params.n[1] * w->params.n[2];
    /* the reorder: a second particle block and two ints a particle (id and its scratch) */
    const size_t reorder =
        firn_device_reorder(w) > 0 && w->p.n > 0
            ? firn_align256(firn_particle_layout(w->p.n, w->p.cpic_slots, NULL, NULL)) +
                  2 * firn_align256((size_t)w->p.n * sizeof(int))
            : 0;
    return binned_bytes(w) + reorder +
           firn_align256(firn_particle_layout(w->p.n, w->p.cpic_slots, NULL, NULL)) +
           (firn_device_binned(w) && w->run.p2g == FIRN_P2G_G2P2G ? 2 : 1) *
               firn_align256(4 * nodes * sizeof(float)) +              /* grid (G2P2G: two) */
           firn_align256(FIRN_MAX_MATERIALS * sizeof(firn_material)) + /* materials */
           firn_align256(sizeof(unsigned long long)) +                 /* non-finite word */
           firn_align256(2 * sizeof(float)) +                          /* reduction */
           firn_align256((size_t)w->n_rigids * sizeof(firn_rigid)) +
           firn_align256((size_t)w->n_rigids * FIRN_RIGID_ACC * sizeof(double)) +
           firn_align256((size_t)w->n_tools * sizeof(firn_tool)) +
           firn_align256((size_t)w->n_tools * FIRN_TOOL_ACC * sizeof(double)) +
           firn_align256((size_t)w->n_tools * sizeof(firn_tool_record)) +
           firn_mesh_grid_bytes(w, firn_align256) +
           (firn_mpm_sph_contact(w) ? firn_align256(4 * nodes * sizeof(float)) : 0); /* MPM-SPH */
}

void firn_world_memory(const firn_world *w, firn_memory *m)
{
    const double n = w->p.n;
    double host = n * (109.0 + 4.0 * w->p.cpic_slots) + (double)firn_mesh_grid_bytes(w, no_align);
    if (w->backend == FIRN_BACKEND_CPU) {
        const double acc = (double)w->n_rigids * FIRN_RIGID_ACC * sizeof(double);
        const double tool_acc = (double)w->n_tools * FIRN_TOOL_ACC * sizeof(double);
        host += (double)w->grid.nodes * 16.0 +                     /* grid */
                n * 12.0 + ((double)w->bins.nblocks + 1.0) * 4.0 + /* binning, ids */
                (double)w->bins.nblocks * (4.0 * w->bins.chunks + 8.0 + 5.0) +
                ((double)w->chunks + (double)w->cpic_chunks) * acc + /* coupling sums */
                (double)w->chunks * tool_acc +                       /* the tools' */
                (double)w->chunks +                                  /* live chunk flags */
                (firn_pair_scratch(w, FIRN_PAIR_MPM_SPH) ? (double)w->grid.nodes * 16.0
                                                         : 0.0); /* MPM-SPH's phi */
    }
    double solver_host = 0.0, solver_device = 0.0; /* the table's solvers', on either path */
    for (int k = 0; k < FIRN_SOLVER_COUNT; k++) {
        const firn_solver *sv = firn_solver_of(k);
        solver_host += sv->host_bytes ? sv->host_bytes(w) : 0.0;
        solver_device += sv->device_bytes ? sv->device_bytes(w) : 0.0;
    }
    host += solver_host;
    m->host = host;
    m->host_grid = w->backend == FIRN_BACKEND_CPU ? (double)w->grid.nodes * 16.0 : 0.0;
    m->host_grid_resident = w->backend == FIRN_BACKEND_CPU ? firn_cpu_grid_resident(w) : 0.0;
    /* A CPU world's device figure: what the CUDA path would allocate (less
     * CUB's scratch and the SPH and PBD materials, a few KiB; the MPM-PBD
     * pair's sort is not counted). */
    m->device = w->backend == FIRN_BACKEND_CUDA ? (double)firn_cuda_state_bytes(w)
                                                : (double)firn_device_bytes(w) + solver_device;
    const double own = w->backend == FIRN_BACKEND_CUDA ? m->device : m->host;
    const double all = n + (double)w->sph.n + (double)w->pbd.n; /* every solver's particles */
    m->per_particle = all > 0 ? own / all : 0.0;
}

/* `substep` is the (1-based) substep where particle `bad` went non-finite,
 * ending at time t. The CPU path stops there; the GPU learns of it when the
 * call's nsub substeps are done, and says how far it ran on. */
static int report_nonfinite(firn_world *w, int bad, long long substep, double t, firn_error *err)
{
    char when[128];
    if (w->cuda) {
        firn_cuda_download(w, err);
        if (substep < w->substeps)
            snprintf(when, sizeof when, "substep %lld; the GPU ran on to substep %lld", substep,
                     w->substeps);
        else
            snprintf(when, sizeof when, "substep %lld", substep);
    } else {
        snprintf(when, sizeof when, "substep %lld", substep);
    }
    if (w->bad_solver >= 0 && w->bad_solver < FIRN_SOLVER_COUNT &&
        firn_solver_of(w->bad_solver)->nonfinite) {
        char head[FIRN_ERRMSG_MAX], msg[2 * FIRN_ERRMSG_MAX];
        snprintf(head, sizeof head, "%s: frame %d (t = %.6g s, %s)", prefix(&w->def), w->frame + 1,
                 t, when);
        firn_error ignored;
        if (solver_current(w, w->bad_solver, &ignored) == 0)
            firn_solver_of(w->bad_solver)->nonfinite(w, bad, head, msg, sizeof msg);
        else
            snprintf(msg, sizeof msg, "%s: %s element %d has a non-finite position or velocity",
                     head, firn_solver_of(w->bad_solver)->name, bad);
        firn_set_error(err, FIRN_E_NUMERIC, "%s", msg);
        return -1;
    }
    if (!w->cuda)
        firn_cpu_unpermute(w); /* `bad` is the particle's index in the scene's order */
    int m = w->p.mat[bad];
    firn_set_error(err, FIRN_E_NUMERIC,
                   "%s: frame %d (t = %.6g s, %s): particle %d of material '%s' has a "
                   "non-finite position or velocity; the state is not written. Likely causes: a "
                   "time step too large for the material (dt = %g s), or extreme parameters",
                   prefix(&w->def), w->frame + 1, t, when,
                   w->dist ? w->dist->scene_index(w, bad) : bad, w->def.materials[m].name,
                   w->params.dt);
    return -1;
}

int firn_world_run_substeps(firn_world *w, int nsub, float dt, firn_error *err)
{
    /* Nothing runs on a step that is not one: the state stays as it was. */
    if (nsub < 1 || !(dt > 0.0f) || !isfinite(dt)) {
        firn_set_error(err, FIRN_E_USAGE,
                       "%s: %d substeps of %g s asked: the count must be at least 1 and the "
                       "substep a finite time above 0",
                       prefix(&w->def), nsub, dt);
        return -1;
    }
    w->params.dt = dt;
    if (w->cuda) {
        /* Stale from here on: after a CUDA error part of the call may have
         * run on the device. */
        w->host_stale = FIRN_STALE_ALL;
        w->rigids_stale = 1;
        w->sph.host_stale = w->sph.cuda != NULL;
        w->pbd.host_stale = w->pbd.cuda != NULL;
        w->fem.host_stale = w->fem.cuda != NULL;
        const double t0 = w->time;
        int k = 0, bad = firn_cuda_run(w, nsub, dt, &k, err);
        if (bad == -2)
            return -1;
        for (int s = 0; s < nsub && w->n_tools > 0; s++) /* as tool_post_coupling sums it */
            w->tool_frame_time += dt;
        w->substeps += nsub;
        w->time += (double)nsub * dt;
        return bad >= 0 ? report_nonfinite(w, bad, w->substeps - nsub + 1 + k,
                                           t0 + (double)(k + 1) * dt, err)
                        : 0;
    }
    for (int s = 0; s < nsub; s++) {
        int bad = firn_coupler_substep(w);
        w->substeps++;
        w->time += dt;
        if (bad == FIRN_DIST_BAD_ELSEWHERE) {
            firn_set_error(err, FIRN_E_NUMERIC,
                           "%s: frame %d (t = %.6g s, substep %lld): a particle on another rank "
                           "has a non-finite position or velocity (that rank names it); the "
                           "state is not written",
                           prefix(&w->def), w->frame + 1, w->time, w->substeps);
            return -1;
        }
        if (bad >= 0)
            return report_nonfinite(w, bad, w->substeps, w->time, err);
    }
    return 0;
}

int firn_world_substep(firn_world *w, float dt, firn_error *err)
{
    return firn_world_run_substeps(w, 1, dt, err);
}

int firn_world_step_frame(firn_world *w, firn_frame_stats *stats, firn_error *err)
{
    float dt;
    int nsub;
    if (firn_world_next_frame_step(w, &dt, &nsub, err))
        return -1;
    double t0 = firn_now();
    firn_tools_begin_frame(w);
    if (firn_world_run_substeps(w, nsub, dt, err))
        return -1;
    double elapsed = firn_now() - t0;
    if (stats) {
        if (firn_world_stats(w, stats, err))
            return -1;
        stats->frame = w->frame + 1;
        stats->frame_substeps = nsub;
        stats->dt = dt;
        stats->wall_seconds = elapsed;
        stats->throughput =
            elapsed > 0.0 ? (double)firn_world_particle_count(w) * nsub / elapsed : 0.0;
    }
    w->frame++;
    return 0;
}

/* The host copy of the current state, in whatever order the solver keeps
 * it: at least the parts `need` (FIRN_STALE_*) are brought up to date. */
static int current_state(firn_world *w, int need, firn_error *err)
{
    const int parts = w->cuda ? w->host_stale & need : 0;
    return parts && firn_cuda_download_parts(w, parts, err) ? -1 : 0;
}

int firn_world_host_state(firn_world *w, firn_error *err)
{
    if (current_state(w, FIRN_STALE_ALL, err) || solvers_current(w, err))
        return -1;
    if (w->cuda && w->rigids_stale) {
        if (firn_cuda_download_rigids(w, err))
            return -1;
        w->rigids_stale = 0;
    }
    if (!w->cuda)
        firn_cpu_unpermute(w);
    return 0;
}

int firn_world_particles(firn_world *w, firn_particles_view *view, firn_error *err)
{
    if (current_state(w, FIRN_STALE_ALL, err))
        return -1;
    if (!w->cuda)
        firn_cpu_unpermute(w);
    view->n = w->p.n;
    view->x = w->p.x;
    view->v = w->p.v;
    view->C = w->p.C;
    view->F = w->p.F;
    view->Jp = w->p.Jp;
    view->damage = w->p.damage;
    view->vol = w->p.vol;
    view->mat = w->p.mat;
    return 0;
}

/* Sums in double, in the solver's particle layout (deterministic: the same
 * for any thread count, and whether or not the state was read out since). */
int firn_world_stats(firn_world *w, firn_frame_stats *s, firn_error *err)
{
    if (current_state(w, FIRN_STALE_XV, err)) /* x and v: vol and mat never change */
        return -1;
    const firn_particles p = w->p;
    memset(s, 0, sizeof *s);
    s->frame = w->frame;
    s->time = w->time;
    s->substeps = w->substeps;
    s->particles = p.n;
    const long long n = p.n;
    for (int a = 0; a < 3; a++) {
        s->bbox_lower[a] = INFINITY;
        s->bbox_upper[a] = -INFINITY;
    }
    const int *at = !w->cuda && w->bins.in_scene_order ? w->bins.id : NULL;
    for (long long k = 0; k < n; k++) {
        const long long i = at ? at[k] : k;
        double m = (double)p.vol[i] * w->mats[p.mat[i]].rho;
        double v2 = 0.0;
        for (int a = 0; a < 3; a++) {
            double x = p.x[a * n + i], v = p.v[a * n + i];
            s->momentum[a] += m * v;
            s->center_of_mass[a] += m * x;
            v2 += v * v;
            s->bbox_lower[a] = firn_minf(s->bbox_lower[a], (float)x);
            s->bbox_upper[a] = firn_maxf(s->bbox_upper[a], (float)x);
        }
        s->kinetic_energy += 0.5 * m * v2;
        s->mass += m;
        s->material_count[p.mat[i]]++;
    }
    for (int a = 0; a < 3; a++)
        s->center_of_mass[a] = s->mass > 0.0 ? s->center_of_mass[a] / s->mass : 0.0;
    if (w->cuda && w->rigids_stale) {
        if (firn_cuda_download_rigids(w, err))
            return -1;
        w->rigids_stale = 0;
    }
    s->n_rigids = w->n_rigids;
    for (int k = 0; k < w->n_rigids; k++) {
        const firn_rigid *b = &w->rigids[k];
        firn_rigid_stats *r = &s->rigids[k];
        for (int a = 0; a < 3; a++) {
            r->position[a] = b->x[a];
            r->velocity[a] = b->v[a];
            r->angular_velocity[a] = b->w[a];
        }
        /* What the body receives at its next step: this substep's impulse,
         * over the substep that built it. */
        firn_rigid_acc_force(b, &w->rigid_acc[FIRN_RIGID_ACC * k], w->params.dt, r->force,
                             r->torque);
        for (int a = 0; a < 4; a++)
            r->orientation[a] = b->q.q[a];
    }
    for (int k = 0; k < FIRN_SOLVER_COUNT; k++) {
        const firn_solver *sv = firn_solver_of(k);
        if (!sv->stats)
            continue;
        if (solver_current(w, k, err))
            return -1;
        sv->stats(w, s);
    }
    s->n_tools = w->n_tools;
    for (int k = 0; k < w->n_tools; k++)
        firn_tool_fill_state(w, k, &s->tools[k]);
    return 0;
}

int firn_world_sph_particles(firn_world *w, firn_sph_particles_view *view, firn_error *err)
{
    if (solver_current(w, FIRN_SOLVER_SPH, err))
        return -1;
    view->n = w->sph.n;
    view->x = w->sph.s.x;
    view->v = w->sph.s.v;
    view->rho = w->sph.s.rho;
    view->p = w->sph.s.p;
    view->mat = w->sph.s.mat;
    return 0;
}

int firn_world_pbd_particles(firn_world *w, firn_pbd_particles_view *view, firn_error *err)
{
    if (solver_current(w, FIRN_SOLVER_PBD, err))
        return -1;
    view->n = w->pbd.n;
    view->x = w->pbd.s.x;
    view->v = w->pbd.s.v;
    view->w = w->pbd.s.w;
    view->mat = w->pbd.s.mat;
    view->triangles = w->pbd.triangles;
    view->tri = w->pbd.tri;
    return 0;
}

int firn_world_fem_mesh(firn_world *w, firn_fem_mesh_view *view, firn_error *err)
{
    const firn_fem *S = &w->fem;
    memset(view, 0, sizeof *view);
    if (S->V.n == 0)
        return 0;
    if (solver_current(w, FIRN_SOLVER_FEM, err))
        return -1;
    const int ne = S->E.n;
    if (!w->fem_measures) {
        w->fem_measures = malloc(13 * (size_t)ne * sizeof(float));
        if (!w->fem_measures) {
            firn_set_error(err, FIRN_E_NOMEM,
                           "out of host memory for the FEM stress and strain (%d elements)", ne);
            return -1;
        }
    }
    float *stress = w->fem_measures, *strain = stress + 6 * (size_t)ne,
          *vm = strain + 6 * (size_t)ne;
#pragma omp parallel for schedule(static)
    for (int e = 0; e < ne; e++)
        firn_fem_element_measures(S, e, stress + 6 * (size_t)e, strain + 6 * (size_t)e, &vm[e]);
    view->n = S->V.n;
    view->x = S->V.x;
    view->v = S->V.v;
    view->fixed = S->V.fixed;
    view->elements = ne;
    view->tet = S->E.v;
    view->mat = S->E.mat;
    view->stress = stress;
    view->strain = strain;
    view->von_mises = vm;
    view->triangles = S->nf;
    view->tri = S->face;
    return 0;
}
