/* test_world.c - invariants of whole substeps on the CPU path: transfers
 * conserve mass and momentum and reproduce affine fields, free fall is
 * exact, energy does not grow, an elastic bar rings at the rod frequency,
 * sand piles up, runs are deterministic (with CPIC too), reordering the
 * state is invisible. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "all_solvers.h"
#include "firn_cpic.h"
#include "inspect.h"
#include "solver_cpu.h"
#include "test_util.h"
#include "world.h"

/* A scene in a 1 m box with one material and one body; no gravity unless
 * the test sets it. */
static void small_scene(firn_scene_def *def, firn_model model, firn_shape_def shape, float dx)
{
    firn_scene_default(def);
    def->dx = dx;
    for (int a = 0; a < 3; a++)
        def->gravity[a] = 0.0f;
    def->n_materials = 1;
    firn_material_default(&def->materials[0], model);
    snprintf(def->materials[0].name, FIRN_NAME_MAX, "%s", firn_model_name(model));
    def->n_bodies = 1;
    firn_body_default(&def->bodies[0]);
    def->bodies[0].material = 0;
    def->bodies[0].shape = shape;
    def->bodies[0].seed = 7;
    def->write_ply = def->write_preview = 0;
}

static firn_shape_def box(float cx, float cy, float cz, float size)
{
    firn_shape_def s = {0};
    s.type = FIRN_SHAPE_BOX;
    s.center[0] = cx, s.center[1] = cy, s.center[2] = cz;
    s.size[0] = s.size[1] = s.size[2] = size;
    return s;
}

/* A static plate 0.6 m wide and 0.3 dx thick at height y, centred in x and
 * z, with coupling.cpic on. */
static void cpic_plate(firn_scene_def *def, float y)
{
    def->n_rigids = 1;
    firn_rigid_default(&def->rigids[0]);
    def->rigids[0].shape.type = FIRN_RSHAPE_BOX;
    def->rigids[0].shape.center[1] = y;
    def->rigids[0].shape.size[0] = def->rigids[0].shape.size[2] = 0.6f;
    def->rigids[0].shape.size[1] = 0.3f * def->dx;
    def->coupling.cpic = 1;
}

static firn_world *make_world(const firn_scene_def *def)
{
    firn_error err;
    firn_world *w = firn_world_create(def, FIRN_BACKEND_CPU, &err);
    cr_assert(w, "world: %s", err.msg);
    return w;
}

static double particle_mass(const firn_world *w, int i)
{
    return (double)w->p.vol[i] * w->mats[w->p.mat[i]].rho;
}

/* APIC angular momentum of the particles about the origin:
 * sum m (x x v) + m dx^2/4 eps_abc C_cb (quadratic B-spline D = dx^2/4 I). */
static void particle_momenta(const firn_world *w, double P[3], double L[3])
{
    const int n = w->p.n;
    const double D = 0.25 * w->def.dx * w->def.dx;
    memset(P, 0, 3 * sizeof(double));
    memset(L, 0, 3 * sizeof(double));
    for (int i = 0; i < n; i++) {
        double m = particle_mass(w, i), x[3], v[3], C[9];
        for (int a = 0; a < 3; a++)
            x[a] = w->p.x[a * n + i], v[a] = w->p.v[a * n + i];
        for (int c = 0; c < 9; c++)
            C[c] = w->p.C[c * n + i];
        for (int a = 0; a < 3; a++)
            P[a] += m * v[a];
        L[0] += m * (x[1] * v[2] - x[2] * v[1] + D * (C[7] - C[5]));
        L[1] += m * (x[2] * v[0] - x[0] * v[2] + D * (C[2] - C[6]));
        L[2] += m * (x[0] * v[1] - x[1] * v[0] + D * (C[3] - C[1]));
    }
}

static void grid_momenta(const firn_world *w, double *M, double P[3], double L[3])
{
    const firn_grid *g = &w->grid;
    *M = 0.0;
    memset(P, 0, 3 * sizeof(double));
    memset(L, 0, 3 * sizeof(double));
    for (long long node = 0; node < g->nodes; node++) {
        const float *q = g->node + 4 * node;
        double m = q[3];
        if (m <= 0.0)
            continue;
        long long k = node % g->n[2], j = (node / g->n[2]) % g->n[1],
                  i = node / ((long long)g->n[1] * g->n[2]);
        double x[3] = {w->def.lower[0] + i * w->def.dx, w->def.lower[1] + j * w->def.dx,
                       w->def.lower[2] + k * w->def.dx};
        double p[3] = {m * q[0], m * q[1], m * q[2]};
        *M += m;
        for (int a = 0; a < 3; a++)
            P[a] += p[a];
        L[0] += x[1] * p[2] - x[2] * p[1];
        L[1] += x[2] * p[0] - x[0] * p[2];
        L[2] += x[0] * p[1] - x[1] * p[0];
    }
}

static void random_motion(firn_world *w, unsigned seed)
{
    const int n = w->p.n;
    srand(seed);
    for (int i = 0; i < n; i++) {
        for (int a = 0; a < 3; a++)
            w->p.v[a * n + i] = (float)rand() / RAND_MAX - 0.5f;
        for (int c = 0; c < 9; c++)
            w->p.C[c * n + i] = 4.0f * ((float)rand() / RAND_MAX - 0.5f);
    }
}

static void expect_close3(const double a[3], const double b[3], double scale, double tol,
                          const char *what)
{
    for (int k = 0; k < 3; k++)
        cr_assert(fabs(a[k] - b[k]) <= tol * scale, "%s[%d]: %.10g vs %.10g (scale %g)", what, k,
                  a[k], b[k], scale);
}

Test(transfers, p2g_g2p_conserve_mass_and_momenta)
{
    /* With dt = 0 (no stress impulse, no motion) P2G and G2P are pure
     * transfers: grid mass = particle mass, and APIC conserves linear and
     * angular momentum in both directions (Jiang et al. 2015), to float
     * rounding: 1e-5 of the momentum scale. */
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_ELASTIC, box(0.5f, 0.5f, 0.5f, 0.2f), 0.05f);
    firn_world *w = make_world(&def);
    random_motion(w, 1);
    double M = 0.0, P0[3], L0[3], Mg, Pg[3], Lg[3], P1[3], L1[3];
    for (int i = 0; i < w->p.n; i++)
        M += particle_mass(w, i);
    particle_momenta(w, P0, L0);
    w->params.dt = 0.0f;
    firn_cpu_clear(w);
    firn_cpu_p2g(w);
    double mom_scale = M * 0.5, ang_scale = M * 0.5 * 1.0;
    /* Momentum before the grid update: mom holds momentum, so divide. */
    firn_cpu_grid(w); /* dt = 0: velocity = momentum / mass, walls far away */
    grid_momenta(w, &Mg, Pg, Lg);
    cr_assert(fabs(Mg - M) <= 1e-5 * M, "grid mass %.9g vs particle mass %.9g", Mg, M);
    expect_close3(Pg, P0, mom_scale, 1e-5, "P2G linear momentum");
    expect_close3(Lg, L0, ang_scale, 1e-5, "P2G angular momentum");
    cr_assert_eq(firn_cpu_g2p(w), -1);
    particle_momenta(w, P1, L1);
    expect_close3(P1, Pg, mom_scale, 1e-5, "G2P linear momentum");
    expect_close3(L1, Lg, ang_scale, 1e-5, "G2P angular momentum");
    firn_world_destroy(w);
}

Test(transfers, affine_velocity_field_is_reproduced)
{
    /* Particles carrying v = A x + b and C = A (APIC's exact representation
     * of an affine field) come back from P2G-G2P with the same v and C,
     * wherever every stencil node lies inside the material. */
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_ELASTIC, box(0.5f, 0.5f, 0.5f, 0.4f), 0.05f);
    firn_world *w = make_world(&def);
    const int n = w->p.n;
    const float A[9] = {0.3f, -0.7f, 0.2f, 0.5f, 0.1f, -0.4f, -0.2f, 0.6f, -0.3f},
                b[3] = {0.1f, -0.2f, 0.3f};
    for (int i = 0; i < n; i++) {
        for (int r = 0; r < 3; r++) {
            float v = b[r];
            for (int c = 0; c < 3; c++)
                v += A[3 * r + c] * w->p.x[c * n + i];
            w->p.v[r * n + i] = v;
        }
        for (int c = 0; c < 9; c++)
            w->p.C[c * n + i] = A[c];
    }
    w->params.dt = 0.0f;
    firn_cpu_clear(w);
    firn_cpu_p2g(w);
    firn_cpu_grid(w);
    float *x0 = malloc(3 * sizeof(float) * n);
    memcpy(x0, w->p.x, 3 * sizeof(float) * n);
    firn_cpu_g2p(w);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        int interior = 1;
        for (int a = 0; a < 3; a++)
            interior &= fabsf(x0[a * n + i] - 0.5f) < 0.2f - 2.5f * def.dx;
        if (!interior)
            continue;
        checked++;
        for (int r = 0; r < 3; r++) {
            float v = b[r];
            for (int c = 0; c < 3; c++)
                v += A[3 * r + c] * x0[c * n + i];
            cr_assert(fabsf(w->p.v[r * n + i] - v) < 2e-6f, "v[%d] of particle %d: %.8g vs %.8g", r,
                      i, w->p.v[r * n + i], v);
        }
        for (int c = 0; c < 9; c++)
            cr_assert(fabsf(w->p.C[c * n + i] - A[c]) < 2e-5f, "C[%d] of particle %d: %.8g vs %.8g",
                      c, i, w->p.C[c * n + i], A[c]);
    }
    cr_assert_gt(checked, 100, "only %d interior particles", checked);
    free(x0);
    firn_world_destroy(w);
}

/* A world of every material model and elastic law (the six models, then
 * neo-Hookean elastic), assigned particle by particle in turn so that each
 * batch of the CPU path's P2G mixes materials with and without the SVD,
 * with random v, C, a strained F and each particle's own Jp and damage:
 * sand's volume correction 0 for half its particles (so compressed ones
 * take the cone's projection) and up to 0.2 for the rest, snow's Jp in
 * [0.9, 1.1], fracture's damage in [0, 0.9]. With `cpic`, a static plate
 * 0.3 dx thick cuts the cube at y = 0.4 and the particles are marked. */
#define EVERY_MATERIAL (FIRN_MODEL_SPH_LIQUID + 1)
static firn_world *every_model_world(int cpic)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_ELASTIC, box(0.5f, 0.5f, 0.5f, 0.3f), 0.05f);
    def.n_materials = EVERY_MATERIAL;
    for (int m = 0; m < EVERY_MATERIAL; m++) {
        firn_model model = m < FIRN_MODEL_SPH_LIQUID ? (firn_model)m : FIRN_MODEL_ELASTIC;
        firn_material_default(&def.materials[m], model);
        snprintf(def.materials[m].name, FIRN_NAME_MAX, "%s%s", firn_model_name(model),
                 m < FIRN_MODEL_SPH_LIQUID ? "" : "_neohookean");
    }
    def.materials[FIRN_MODEL_SPH_LIQUID].law = FIRN_LAW_NEOHOOKEAN;
    if (cpic)
        cpic_plate(&def, 0.4f);
    firn_world *w = make_world(&def);
    cr_assert_eq(w->coupler.cpic, cpic);
    w->bins.reorder_run = 0; /* keep particle i at index i */
    random_motion(w, 3);
    const int n = w->p.n;
    srand(5);
    for (int i = 0; i < n; i++) {
        const int m = i % EVERY_MATERIAL;
        w->p.mat[i] = (uint8_t)m;
        for (int c = 0; c < 9; c++)
            w->p.F[c * n + i] = (c % 4 == 0) + 0.3f * ((float)rand() / RAND_MAX - 0.5f);
        float u = (float)rand() / RAND_MAX;
        w->p.Jp[i] =
            m == FIRN_MODEL_SAND ? (i / EVERY_MATERIAL % 2 ? 0.2f * u : 0.0f) : 0.9f + 0.2f * u;
        w->p.damage[i] = m == FIRN_MODEL_FRACTURE ? 0.9f * (float)rand() / RAND_MAX : 0.0f;
    }
    if (cpic)
        firn_cpu_cpic_mark(w);
    return w;
}

/* The CPU path's P2G (batched SVDs, block by block) against the
 * one-particle body the GPU kernel runs (firn_p2g_particle, or
 * firn_p2g_particle_cpic), particle by particle in index order: each
 * particle's new F, Jp and damage are the same (bitwise without FMA
 * contraction, since the batched SVD then is the scalar one), and the grid
 * receives the same sums in another order: within 1e-5 of the largest value
 * of its kind (about 200 float additions to a node). */
static void batched_p2g_vs_one_particle(int cpic)
{
    firn_world *w = every_model_world(cpic), *r = every_model_world(cpic);
    const int n = w->p.n;
    cr_assert_eq(r->p.n, n);
    w->params.dt = r->params.dt = 2e-4f;
    float *dmg0 = malloc(sizeof(float) * n);
    memcpy(dmg0, w->p.damage, sizeof(float) * n);
    firn_cpu_clear(w);
    firn_cpu_p2g(w);
    firn_cpu_clear(r);
    for (int i = 0; i < n; i++)
        if (cpic)
            firn_p2g_particle_cpic(i, &r->params, r->mats, r->p, r->grid, r->rigids, r->n_rigids);
        else
            firn_p2g_particle(i, &r->params, r->mats, r->p, r->grid);
    int projected = 0, grown = 0, marked = 0;
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < 9; c++) {
            float a = w->p.F[c * n + i], b = r->p.F[c * n + i];
#if defined(__FMA__) || defined(__FP_FAST_FMAF)
            cr_assert(fabsf(a - b) <= 1e-5f, "F[%d] of particle %d: %.9g vs %.9g", c, i, a, b);
#else
            cr_assert(a == b, "F[%d] of particle %d: %.9g vs %.9g", c, i, a, b);
#endif
        }
#if defined(__FMA__) || defined(__FP_FAST_FMAF)
        int same_jp = fabsf(w->p.Jp[i] - r->p.Jp[i]) <= 1e-5f * fmaxf(1.0f, fabsf(r->p.Jp[i]));
#else
        int same_jp = w->p.Jp[i] == r->p.Jp[i];
#endif
        cr_assert(same_jp && w->p.damage[i] == r->p.damage[i],
                  "particle %d (material %d): Jp %.9g vs %.9g, damage %g vs %g", i, w->p.mat[i],
                  w->p.Jp[i], r->p.Jp[i], w->p.damage[i], r->p.damage[i]);
        projected += w->p.mat[i] == FIRN_MODEL_SAND && w->p.Jp[i] == 0.0f;
        grown += w->p.mat[i] == FIRN_MODEL_FRACTURE && w->p.damage[i] > dmg0[i];
        marked += cpic && w->p.cpic[i] != 0;
    }
    /* The branches this test is for were taken. */
    cr_assert_gt(projected, 0, "no sand particle was projected onto the cone");
    cr_assert_gt(grown, 0, "no fracture particle's damage grew");
    free(dmg0);
    if (cpic)
        cr_assert(marked > 0 && marked < n, "%d of %d particles near the plate", marked, n);
    double big[2] = {0.0, 0.0};
    for (long long k = 0; k < 4 * r->grid.nodes; k++)
        big[k % 4 == 3] = fmax(big[k % 4 == 3], fabs(r->grid.node[k]));
    cr_assert_gt(big[1], 0.0);
    for (long long k = 0; k < 4 * r->grid.nodes; k++)
        cr_assert(fabs(w->grid.node[k] - r->grid.node[k]) <= 1e-5 * big[k % 4 == 3],
                  "node %lld component %lld: %.9g vs %.9g (largest %g)", k / 4, k % 4,
                  w->grid.node[k], r->grid.node[k], big[k % 4 == 3]);
    firn_world_destroy(w);
    firn_world_destroy(r);
}

Test(transfers, batched_p2g_is_the_one_particle_p2g) { batched_p2g_vs_one_particle(0); }

Test(transfers, batched_cpic_p2g_is_the_one_particle_cpic_p2g) { batched_p2g_vs_one_particle(1); }

Test(motion, free_fall_matches_the_discrete_formula)
{
    /* A stress-free body in free fall follows symplectic Euler exactly:
     * v_n = v0 + n dt g, x_n = x0 + n dt v0 + dt^2 g n (n+1) / 2. */
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_LIQUID, box(0.5f, 0.8f, 0.5f, 0.1f), 0.02f);
    def.gravity[1] = -9.81f;
    def.bodies[0].velocity[0] = 0.3f;
    firn_world *w = make_world(&def);
    /* dt at Courant number 0.15 for the liquid's wave speed (16.7 m/s). */
    const int n = w->p.n, steps = 400;
    const float dt = 2e-4f;
    float *x0 = malloc(3 * sizeof(float) * n);
    memcpy(x0, w->p.x, 3 * sizeof(float) * n);
    firn_error err;
    for (int s = 0; s < steps; s++)
        cr_assert_eq(firn_world_substep(w, dt, &err), 0, "%s", err.msg);
    /* The CPU path may have reordered its state; the view is in scene order. */
    firn_particles_view p;
    cr_assert_eq(firn_world_particles(w, &p, &err), 0, "%s", err.msg);
    double vy = -9.81 * steps * dt, dy = -9.81 * (double)dt * dt * steps * (steps + 1) / 2.0;
    double dxx = 0.3 * steps * dt;
    /* Float rounding: each substep rounds mom/mass and the 27-term weighted
     * sum, at most ~8 ulp of |v| (8 * 6e-8 * 1 m/s) per step; over n steps
     * that bounds |dv| by n * 8 ulp and |dx| by dt n^2/2 * 8 ulp + n ulp(x). */
    double tol_v = steps * 8.0 * 6e-8, tol_x = dt * steps * steps / 2.0 * 8.0 * 6e-8 + steps * 6e-8;
    for (int i = 0; i < n; i++) {
        cr_assert(fabs(p.v[n + i] - vy) < tol_v, "vy %.7g vs %.7g", p.v[n + i], vy);
        cr_assert(fabs(p.v[i] - 0.3) < tol_v, "vx %.7g vs 0.3", p.v[i]);
        cr_assert(fabs(p.x[n + i] - x0[n + i] - dy) < tol_x, "y drop %.7g vs %.7g",
                  p.x[n + i] - x0[n + i], dy);
        cr_assert(fabs(p.x[i] - x0[i] - dxx) < tol_x, "x drift %.7g vs %.7g", p.x[i] - x0[i], dxx);
    }
    free(x0);
    firn_world_destroy(w);
}

/* Kinetic + gravitational + elastic (fixed corotated) energy [J]. */
static double total_energy(firn_world *w)
{
    const int n = w->p.n;
    const firn_material *m = &w->mats[0];
    double e = 0.0;
    for (int i = 0; i < n; i++) {
        double mass = particle_mass(w, i), v2 = 0.0;
        for (int a = 0; a < 3; a++)
            v2 += (double)w->p.v[a * n + i] * w->p.v[a * n + i];
        e += 0.5 * mass * v2 - mass * w->def.gravity[1] * (w->p.x[n + i] - w->def.lower[1]);
        firn_mat3 F = firn_load9(w->p.F, n, i), U, V;
        firn_vec3 s;
        firn_svd3(F, &U, &s, &V);
        double J = (double)s.v[0] * s.v[1] * s.v[2], psi = 0.0;
        for (int a = 0; a < 3; a++)
            psi += m->mu * (s.v[a] - 1.0) * (s.v[a] - 1.0);
        psi += 0.5 * m->lambda * (J - 1.0) * (J - 1.0);
        e += w->p.vol[i] * psi;
    }
    return e;
}

Test(motion, elastic_cube_dropped_on_floor_gains_no_energy)
{
    /* MPM with APIC and walls only dissipates: the total energy of a jelly
     * cube bouncing on the floor never exceeds its initial value (1 percent
     * allowed for the time discretisation of the elastic energy). */
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_ELASTIC, box(0.5f, 0.3f, 0.5f, 0.16f), 0.025f);
    def.gravity[1] = -9.81f;
    def.frame_dt = 0.01f;
    firn_world *w = make_world(&def);
    double e0 = total_energy(w), emax = e0;
    firn_frame_stats s;
    firn_error err;
    int bounced = 0;
    for (int f = 0; f < 40; f++) {
        cr_assert_eq(firn_world_step_frame(w, &s, &err), 0, "%s", err.msg);
        double e = total_energy(w);
        emax = fmax(emax, e);
        bounced |= s.momentum[1] > 0.0;
    }
    cr_assert(bounced || s.bbox_lower[1] < 0.15f, "the cube never reached the floor");
    cr_assert(emax <= 1.01 * e0, "energy grew from %.6g J to %.6g J", e0, emax);
    firn_world_destroy(w);
}

/* Momentum along x of the particles left of x = mid. */
static double left_momentum(const firn_world *w, float mid)
{
    const int n = w->p.n;
    double P = 0.0;
    for (int i = 0; i < n; i++)
        if (w->p.x[i] < mid)
            P += particle_mass(w, i) * w->p.v[i];
    return P;
}

/* The period of the first axial mode of a free elastic bar of length L along
 * x (square section L/10, E = 1e5 Pa, rho = 1000 kg/m^3, law `law`) on cells
 * of L/cells, from the zero crossings of the left half's momentum. */
static double bar_period(firn_elastic_law law, float nu, int cells, double *expected)
{
    const float L = 0.4f, E = 1e5f, rho = 1000.0f, V = 0.05f;
    firn_scene_def def;
    firn_shape_def bar = box(0.3f, 0.1f, 0.1f, L);
    bar.size[1] = bar.size[2] = 0.1f * L;
    small_scene(&def, FIRN_MODEL_ELASTIC, bar, L / (float)cells);
    def.upper[0] = 0.6f;
    def.upper[1] = def.upper[2] = 0.2f;
    def.materials[0].E = E;
    def.materials[0].nu = nu;
    def.materials[0].density = rho;
    def.materials[0].law = law;
    def.frame_dt = 1e-3f;
    firn_world *w = make_world(&def);

    /* The mode's velocity field v = V cos(pi (x - x0) / L), with its
     * gradient in C; V / c = 0.5 % strain, the linear regime. */
    const int n = w->p.n;
    const float x0 = 0.3f - 0.5f * L, k = (float)M_PI / L;
    for (int i = 0; i < n; i++) {
        float u = k * (w->p.x[i] - x0);
        w->p.v[i] = V * cosf(u);
        w->p.C[i] = -V * k * sinf(u);
    }
    /* u(x, t) = (V / omega) cos(k (x - x0)) sin(omega t): the left half's
     * momentum goes as cos(omega t) and crosses zero at omega t = pi / 2,
     * 3 pi / 2, 5 pi / 2; the first and third crossings are a period
     * apart. */
    *expected = 2.0 * L / sqrt(E / rho);
    double t_prev = 0.0, P_prev = left_momentum(w, 0.3f), cross[3];
    int found = 0;
    firn_frame_stats st;
    firn_error err;
    for (int f = 1; found < 3 && f <= (int)(3.0 * *expected / def.frame_dt); f++) {
        cr_assert_eq(firn_world_step_frame(w, &st, &err), 0, "%s", err.msg);
        double t = f * (double)def.frame_dt, P = left_momentum(w, 0.3f);
        if ((P < 0.0) != (P_prev < 0.0))
            cross[found++] = t_prev + (t - t_prev) * P_prev / (P_prev - P);
        t_prev = t, P_prev = P;
    }
    firn_world_destroy(w);
    cr_assert_eq(found, 3, "the bar's momentum crossed zero %d times in %.3g s", found, t_prev);
    return cross[2] - cross[0];
}

Test(motion, elastic_bar_vibrates_at_the_rod_frequency)
{
    /* PHYSICS.md 9: a free bar's first axial mode has the period 2 L / c,
     * c = sqrt(E / rho) (rod theory; the lateral-inertia correction is
     * under 1e-3 here). At the default 8 particles per cell and Courant number
     * the bar on 40 cells runs 1.3 % slow with either law, and the error
     * falls with the cell (1.6 % on 20 cells, 1.0 % on 80), the step (0.7 %
     * at a Courant number of 0.05 on 20 cells) and more particles per cell
     * (0.3 % at 27 on 40 cells); 2.5 % holds that with room, while a wrong
     * modulus, density or affine scale moves the period by far more (a
     * 10 % error in E, 5 %). */
    for (int law = 0; law < 2; law++) {
        double expect, T = bar_period((firn_elastic_law)law, 0.3f, 40, &expect);
        cr_log_info("%s: period %.5f s, rod theory %.5f s", law ? "neohookean" : "corotated", T,
                    expect);
        cr_expect(fabs(T / expect - 1.0) < 0.025, "%s bar: period %.5f s, rod theory %.5f s",
                  law ? "neohookean" : "corotated", T, expect);
    }
}

Test(motion, bad_step_arguments_are_refused_and_change_nothing)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SAND, box(0.5f, 0.3f, 0.5f, 0.16f), 0.05f);
    firn_error err;
    cr_expect_null(firn_world_create(&def, (firn_backend)7, &err));
    cr_expect_eq(err.code, FIRN_E_USAGE, "%s", err.msg);
    firn_world *w = make_world(&def);
    const struct {
        int n;
        float dt;
    } bad[] = {{0, 1e-4f}, {-1, 1e-4f}, {1, 0.0f}, {1, -1e-3f}, {1, NAN}, {1, INFINITY}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        cr_expect_eq(firn_world_run_substeps(w, bad[k].n, bad[k].dt, &err), -1, "%d x %g s ran",
                     bad[k].n, bad[k].dt);
        cr_expect_eq(err.code, FIRN_E_USAGE, "%s", err.msg);
    }
    cr_expect_eq(firn_world_substep(w, -1e-3f, &err), -1);
    firn_frame_stats st;
    cr_assert_eq(firn_world_stats(w, &st, &err), 0, "%s", err.msg);
    cr_expect(st.time == 0.0 && st.substeps == 0, "time %g, %lld substeps", st.time, st.substeps);
    cr_expect_eq(firn_world_substep(w, 1e-4f, &err), 0, "a good step after bad ones: %s", err.msg);
    firn_world_destroy(w);
}

/* A CFL step of more than 100000 substeps per frame is refused, and the
 * message names the speed that limits it. */
static void expect_cfl_cause(const firn_scene_def *def, const char *needle)
{
    firn_world *w = make_world(def);
    float dt;
    int nsub;
    firn_error err;
    cr_expect_eq(firn_world_next_frame_step(w, &dt, &nsub, &err), -1, "accepted: %g s x %d", dt,
                 nsub);
    cr_expect_eq(err.code, FIRN_E_NUMERIC);
    cr_expect(strstr(err.msg, "more than 100000 substeps") && strstr(err.msg, needle),
              "message lacks '%s': %s", needle, err.msg);
    firn_world_destroy(w);
}

Test(motion, a_runaway_cfl_step_names_what_limits_it)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SAND, box(0.5f, 0.3f, 0.5f, 0.16f), 0.05f);
    def.frame_dt = 0.02f;
    float dt;
    int nsub;
    firn_error err;
    firn_world *w = make_world(&def);
    cr_assert_eq(firn_world_next_frame_step(w, &dt, &nsub, &err), 0, "%s", err.msg);
    cr_expect_float_eq(dt * (float)nsub, def.frame_dt, 1e-6f);
    firn_world_destroy(w);

    firn_scene_def d = def;
    d.materials[0].E = 1e14f; /* sound at ~2e5 m/s */
    expect_cfl_cause(&d, "sound in material 'sand'");
    d = def;
    d.gravity[1] = -1e12f;
    expect_cfl_cause(&d, "gravity over a frame");
    d = def;
    d.bodies[0].velocity[0] = 1e9f;
    expect_cfl_cause(&d, "the particles, 1e+09 m/s");
    d = def;
    d.bodies[0].velocity[0] = 1e30f; /* its square overflows */
    expect_cfl_cause(&d, "overflows float");
    d = def;
    d.cfl = 1e-9f;
    expect_cfl_cause(&d, "time.cfl = 1e-09, far below");
    d = def;
    d.n_rigids = 1;
    firn_rigid_default(&d.rigids[0]);
    snprintf(d.rigids[0].name, FIRN_NAME_MAX, "puck");
    d.rigids[0].shape.type = FIRN_RSHAPE_SPHERE;
    d.rigids[0].shape.radius = 0.05f;
    d.rigids[0].shape.center[0] = d.rigids[0].shape.center[2] = 0.5f;
    d.rigids[0].shape.center[1] = 0.7f;
    d.rigids[0].motion = FIRN_RIGID_KINEMATIC;
    d.rigids[0].velocity[1] = -1e9f;
    expect_cfl_cause(&d, "rigids[0] 'puck'");
}

/* Each solver with a step limit of its own (the solver table's cfl) names
 * itself when its limit runs away: a body of that solver thrown at 1e9
 * m/s beside MPM sand at rest, whose own limit is then far longer. */
Test(motion, each_solver_names_its_own_runaway_cfl_step)
{
    static const struct {
        const char *material, *solver, *shape, *needle;
    } cases[] = {
        {"{\"model\": \"sph_liquid\", \"density\": 1000}", "sph",
         "\"type\": \"box\", \"lower\": [0.1, 0.1, 0.1], \"upper\": [0.2, 0.2, 0.2]",
         "the SPH liquid: sound speed"},
        {"{\"model\": \"pbd_liquid\", \"density\": 1000}", "pbd",
         "\"type\": \"box\", \"lower\": [0.1, 0.1, 0.1], \"upper\": [0.2, 0.2, 0.2]",
         "the PBD particles, 1e+09 m/s"},
        {"{\"model\": \"fem_linear\", \"E\": 1e5, \"nu\": 0.3, \"density\": 1000}", "fem",
         "\"type\": \"box\", \"center\": [0.15, 0.15, 0.15], \"size\": [0.1, 0.1, 0.1], "
         "\"cells\": [2, 2, 2]",
         "the FEM body bodies[1] (material 'b')"},
    };
    for (int k = 0; k < 3; k++) {
        char json[2048];
        snprintf(json, sizeof json,
                 "{\"domain\": {\"lower\": [0, 0, 0], \"upper\": [0.4, 0.4, 0.4], \"dx\": 0.02},"
                 " \"time\": {\"frame_dt\": 0.02, \"frames\": 1},"
                 " \"sph\": {\"particle_size\": 0.02}, \"pbd\": {\"particle_size\": 0.02},"
                 " \"materials\": {\"sand\": {\"model\": \"sand\", \"E\": 3.5e5, \"nu\": 0.3,"
                 " \"density\": 1600}, \"b\": %s},"
                 " \"bodies\": [{\"material\": \"sand\", \"shape\": {\"type\": \"box\", "
                 "\"lower\": [0.25, 0.05, 0.25], \"upper\": [0.35, 0.12, 0.35]}},"
                 " {\"material\": \"b\", \"solver\": \"%s\", \"shape\": {%s}, \"velocity\": "
                 "[1e9, 0, 0]}]}",
                 cases[k].material, cases[k].solver, cases[k].shape);
        firn_world *w = test_world_json(json, "runaway.json");
        float dt;
        int nsub;
        firn_error err;
        cr_expect_eq(firn_world_next_frame_step(w, &dt, &nsub, &err), -1, "%s: accepted %g s x %d",
                     cases[k].solver, dt, nsub);
        cr_expect(strstr(err.msg, "more than 100000 substeps") && strstr(err.msg, cases[k].needle),
                  "%s: message lacks '%s': %s", cases[k].solver, cases[k].needle, err.msg);
        firn_world_destroy(w);
    }
}

static void column_result(firn_model model, float *height, float *radius, double *ke_per_mass)
{
    firn_scene_def def;
    firn_shape_def c = {0};
    c.type = FIRN_SHAPE_CYLINDER;
    c.axis = 1;
    c.radius = 0.06f;
    c.height = 0.2f;
    c.center[0] = c.center[2] = 0.3f;
    c.center[1] = 0.075f + 0.1f;
    small_scene(&def, model, c, 0.02f);
    def.upper[0] = def.upper[2] = 0.6f;
    def.upper[1] = 0.4f;
    def.gravity[1] = -9.81f;
    def.frame_dt = 0.02f;
    def.walls[2].friction = 0.5f; /* rough floor */
    if (model == FIRN_MODEL_SAND) {
        def.materials[0].E = 3.5e5f;
        def.materials[0].density = 1600.0f;
        def.materials[0].friction_angle = 35.0f;
    } else {
        def.materials[0].E = 2e5f;
    }
    firn_world *w = make_world(&def);
    firn_frame_stats s;
    firn_error err;
    for (int f = 0; f < 60; f++)
        cr_assert_eq(firn_world_step_frame(w, &s, &err), 0, "%s", err.msg);
    *height = s.bbox_upper[1] - s.bbox_lower[1];
    *radius = 0.5f * (s.bbox_upper[0] - s.bbox_lower[0]);
    *ke_per_mass = s.kinetic_energy / s.mass;
    firn_world_destroy(w);
}

Test(motion, sand_column_comes_to_rest_as_a_pile, .timeout = 300)
{
    /* A 0.2 m sand column (35 deg, radius 0.06 m) collapses: after 1.2 s it
     * is at rest (rms speed < 3 cm/s), lower and wider than the column, yet
     * it stops at a finite runout with a pile, while the same column of
     * liquid spreads to the walls (0.26 m away) in a thinner layer. */
    float hs, rs, hl, rl;
    double kes, kel;
    column_result(FIRN_MODEL_SAND, &hs, &rs, &kes);
    column_result(FIRN_MODEL_LIQUID, &hl, &rl, &kel);
    cr_log_info(
        "sand: height %.3f m, radius %.3f m, ke/m %.3g; liquid: height %.3f m, radius %.3f m", hs,
        rs, kes, hl, rl);
    cr_assert(kes < 0.5 * 0.03 * 0.03, "sand still moving: ke/m = %g J/kg", kes);
    cr_assert(hs < 0.2f && hs > 0.03f, "sand pile height %g m", hs);
    cr_assert(rs > 0.07f, "sand footprint radius %g m did not spread", rs);
    cr_assert(rs < 0.8f * rl, "sand runout %g m not shorter than the liquid's %g m", rs, rl);
    cr_assert(hs > 1.3f * hl, "sand pile %g m not taller than the liquid layer %g m", hs, hl);
}

Test(binning, order_is_the_stable_sort_and_colours_cover_every_block)
{
    /* The CPU binning counts particles per block in parallel slices; its
     * order must still be the serial stable sort by block (the order every
     * node's sum follows), and each colour's work list must hold each of its
     * non-empty blocks once, fullest first. Positions are shuffled so that
     * every slice meets every block. */
    int saved = omp_get_max_threads();
    omp_set_num_threads(3);
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SNOW, box(0.5f, 0.45f, 0.55f, 0.5f), 0.04f);
    firn_world *w = make_world(&def);
    omp_set_num_threads(saved);
    const firn_cpu_bins *b = &w->bins;
    cr_assert_eq(b->chunks, 3);
    const int n = w->p.n;
    srand(11);
    for (int i = n - 1; i > 0; i--) {
        int j = rand() % (i + 1);
        for (int a = 0; a < 3; a++) {
            float t = w->p.x[a * n + i];
            w->p.x[a * n + i] = w->p.x[a * n + j];
            w->p.x[a * n + j] = t;
        }
    }
    w->bins.reorder_run = 0; /* keep the shuffled layout */
    firn_cpu_clear(w);
    firn_cpu_p2g(w);
    int *key = malloc(sizeof(int) * n), *seen = calloc((size_t)b->nblocks, sizeof(int));
    for (int i = 0; i < n; i++) {
        firn_stencil s = firn_make_stencil(&w->params, firn_load3(w->p.x, n, i));
        key[i] = ((s.base[0] / 4) * b->nb[1] + s.base[1] / 4) * b->nb[2] + s.base[2] / 4;
    }
    cr_assert_eq(b->start[0], 0);
    cr_assert_eq(b->start[b->nblocks], n);
    for (int blk = 0; blk < b->nblocks; blk++)
        for (int k = b->start[blk]; k < b->start[blk + 1]; k++) {
            cr_assert_eq(key[b->order[k]], blk, "order[%d] = %d is not in block %d", k, b->order[k],
                         blk);
            if (k > b->start[blk])
                cr_assert_gt(b->order[k], b->order[k - 1], "block %d not in particle order at %d",
                             blk, k);
        }
    int listed = 0;
    for (int c = 0; c < 8; c++)
        for (int j = b->work_start[c]; j < b->work_start[c + 1]; j++) {
            int blk = (int)(b->work[j] & 0xffffffffu), np = b->start[blk + 1] - b->start[blk];
            int bx = blk / (b->nb[1] * b->nb[2]), by = blk / b->nb[2] % b->nb[1],
                bz = blk % b->nb[2];
            cr_assert_eq((bx & 1) | (by & 1) << 1 | (bz & 1) << 2, c,
                         "block %d listed in colour %d", blk, c);
            cr_assert_gt(np, 0, "empty block %d listed", blk);
            cr_assert_eq((int)(b->work[j] >> 32), np);
            if (j > b->work_start[c])
                cr_assert_leq(np, (int)(b->work[j - 1] >> 32), "colour %d not fullest first at %d",
                              c, j);
            seen[blk]++;
            listed++;
        }
    for (int blk = 0; blk < b->nblocks; blk++)
        cr_assert_eq(seen[blk], b->start[blk + 1] > b->start[blk], "block %d listed %d times", blk,
                     seen[blk]);
    cr_assert_eq(b->work_start[8], listed);
    free(key);
    free(seen);
    firn_world_destroy(w);
}

/* cpic: a static plate 0.3 dx thick under the bodies, coupling.cpic on. */
static void run_mixed(int threads, int cpic, float **x_out, float **F_out, int *n_out)
{
    omp_set_num_threads(threads);
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SNOW, box(0.3f, 0.3f, 0.5f, 0.16f), 0.025f);
    def.gravity[1] = -9.81f;
    def.n_materials = 2;
    firn_material_default(&def.materials[1], FIRN_MODEL_SAND);
    snprintf(def.materials[1].name, FIRN_NAME_MAX, "sand");
    def.n_bodies = 2;
    def.bodies[1] = def.bodies[0];
    def.bodies[1].material = 1;
    def.bodies[1].shape = box(0.6f, 0.4f, 0.5f, 0.14f);
    def.bodies[1].velocity[0] = -2.0f;
    if (cpic)
        cpic_plate(&def, 0.21f);
    firn_world *w = make_world(&def);
    cr_assert_eq(w->coupler.cpic, cpic);
    firn_frame_stats s;
    firn_error err;
    for (int f = 0; f < 4; f++)
        cr_assert_eq(firn_world_step_frame(w, &s, &err), 0, "%s", err.msg);
    firn_particles_view p;
    cr_assert_eq(firn_world_particles(w, &p, &err), 0, "%s", err.msg);
    int n = (int)p.n;
    *n_out = n;
    *x_out = malloc(3 * sizeof(float) * n);
    *F_out = malloc(9 * sizeof(float) * n);
    memcpy(*x_out, p.x, 3 * sizeof(float) * n);
    memcpy(*F_out, p.F, 9 * sizeof(float) * n);
    firn_world_destroy(w);
}

Test(determinism, same_state_bitwise_for_any_thread_count)
{
    /* The CPU path's coloured scatter fixes the summation order, so 1, 2, 3
     * and 8 threads give bitwise the same state, run after run. */
    int nthreads[] = {1, 2, 3, 8, 2};
    float *x0, *F0;
    int n0;
    run_mixed(nthreads[0], 0, &x0, &F0, &n0);
    for (int t = 1; t < 5; t++) {
        float *x, *F;
        int n;
        run_mixed(nthreads[t], 0, &x, &F, &n);
        cr_assert_eq(n, n0);
        cr_assert(!memcmp(x, x0, 3 * sizeof(float) * n), "positions differ with %d threads",
                  nthreads[t]);
        cr_assert(!memcmp(F, F0, 9 * sizeof(float) * n), "F differs with %d threads", nthreads[t]);
        free(x);
        free(F);
    }
    free(x0);
    free(F0);
}

Test(determinism, cpic_same_state_bitwise_for_any_thread_count)
{
    /* CPIC's side marking writes per particle and its scatter skips nodes
     * inside the same coloured order: still bitwise the same. */
    float *x0, *F0, *x1, *F1;
    int n0, n1;
    run_mixed(1, 1, &x0, &F0, &n0);
    run_mixed(3, 1, &x1, &F1, &n1);
    cr_assert_eq(n0, n1);
    cr_assert(!memcmp(x0, x1, 3 * sizeof(float) * n0), "positions differ with 3 threads");
    cr_assert(!memcmp(F0, F1, 9 * sizeof(float) * n0), "F differs with 3 threads");
    free(x0);
    free(F0);
    free(x1);
    free(F1);
}

/* firn_world_memory's host figure is what creating a CPU world takes from
 * the heap and the grid's own mapping: glibc's counters (main arena in use +
 * mmapped blocks) plus the grid's bytes rise by it across
 * firn_world_create, to within the world struct itself and 1 %
 * (allocator headers, page rounding, OpenMP's first-use allocations). The
 * scene has 134k particles on a 65^3 grid, so 1 % is about 0.2 MB. */
#include <malloc.h>

static double heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return (double)mi.uordblks + (double)mi.hblkhd;
}

Test(memory, host_figure_is_what_the_cpu_world_allocates)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SAND, box(0.5f, 0.5f, 0.5f, 0.4f), 1.0f / 64.0f);
    firn_world *warm = make_world(&def); /* OpenMP and stdio set up */
    firn_world_destroy(warm);

    /* Made with FIRN_BIN_CHUNKS_MAX threads, so that the binning slices'
     * scratch (4 B per slice and block; at most 2 n / blocks slices) is well
     * above the 1 %. */
    int saved = omp_get_max_threads();
    omp_set_num_threads(FIRN_BIN_CHUNKS_MAX);
    double before = heap_in_use();
    firn_world *w = make_world(&def);
    /* The grid is its own mapping, outside the heap. */
    double rise = heap_in_use() - before + 16.0 * (double)w->grid.nodes;
    omp_set_num_threads(saved);
    const int most = (int)(2LL * w->p.n / w->bins.nblocks);
    cr_assert_eq(w->bins.chunks, most < FIRN_BIN_CHUNKS_MAX ? most : FIRN_BIN_CHUNKS_MAX);
    firn_memory m;
    firn_world_memory(w, &m);
    const double n = (double)w->p.n;
    cr_assert_gt(n, 100000.0);
    cr_assert_gt(4.0 * w->bins.chunks * w->bins.nblocks, 0.02 * m.host, "slices' scratch %d x %d",
                 w->bins.chunks, w->bins.nblocks);
    cr_assert_lt(fabs(rise - m.host), 0.01 * m.host + sizeof(firn_world),
                 "heap rose by %.0f bytes, firn_world_memory says %.0f", rise, m.host);
    cr_assert_float_eq(m.per_particle, m.host / n, 1e-9 * m.host);
    /* A GPU world of the same scene: particle arrays (109 B each, 256-byte
     * aligned) and the 16-byte grid nodes, plus a few KiB of constants. */
    double nodes = (double)w->grid.nodes;
    cr_assert_geq(m.device, 109.0 * n + 16.0 * nodes);
    cr_assert_lt(m.device, 109.0 * n + 16.0 * nodes + 16384.0);
    firn_world_destroy(w);
}

/* Resident memory of this process, bytes (Linux). */
static double resident_bytes(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    cr_assert(f, "no /proc/self/statm");
    cr_assert_eq(fscanf(f, "%ld %ld", &pages, &rss), 2);
    fclose(f);
    return (double)rss * (double)sysconf(_SC_PAGESIZE);
}

/* The CPU grid's empty part takes address space, not memory: a 6 cm cube of
 * sand in a 1 m domain at dx = 1/256 (a 272 MB grid of 257^3 nodes) runs
 * ten substeps with the process's resident memory grown by under a quarter
 * of the grid. The cube's node blocks lie in about 24 of the 257 x-slices
 * (1 MB each): 9 MB here with the particles, 4 KiB pages; some 30 MB where transparent
 * huge pages back the allocation in 2 MB units; clearing the whole grid
 * would make all 272 MB resident. */
Test(memory, empty_grid_blocks_take_no_resident_memory)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SAND, box(0.5f, 0.5f, 0.5f, 0.06f), 1.0f / 256.0f);
    def.gravity[1] = -9.81f;
    firn_scene_def small;
    small_scene(&small, FIRN_MODEL_SAND, box(0.5f, 0.5f, 0.5f, 0.2f), 1.0f / 32.0f);
    firn_world *warm = make_world(&small); /* OpenMP's threads and stdio set up */
    firn_error err;
    cr_assert_eq(firn_world_substep(warm, 1e-4f, &err), 0, "%s", err.msg);
    firn_world_destroy(warm);
    const double before = resident_bytes();
    firn_world *w = make_world(&def);
    cr_assert_eq(firn_world_run_substeps(w, 10, firn_world_cfl_dt(w), &err), 0, "%s", err.msg);
    const double grid = 16.0 * (double)w->grid.nodes, rise = resident_bytes() - before;
    cr_assert_gt(grid, 2.5e8);
    cr_assert_lt(rise, 0.25 * grid,
                 "resident memory rose by %.1f MB for a %.1f MB grid and %d particles", rise / 1e6,
                 grid / 1e6, w->p.n);
    /* firn_world_memory reports the grid's allocation and its part in
     * memory: some blocks were written, and all of that is in the rise. */
    firn_memory m;
    firn_world_memory(w, &m);
    cr_expect_eq(m.host_grid, grid);
    cr_expect(m.host_grid_resident > 0.0 && m.host_grid_resident <= rise,
              "grid in memory %.1f MB, resident memory rose by %.1f MB", m.host_grid_resident / 1e6,
              rise / 1e6);
    cr_log_info("grid %.1f MB, in memory %.2f MB, process rise %.2f MB", grid / 1e6,
                m.host_grid_resident / 1e6, rise / 1e6);
    firn_world_destroy(w);
}

/* The CFL step takes the largest signal speed over the particles: each
 * particle's material wave speed, snow's scaled by sqrt of its own
 * hardening. A material no body uses does not count, and a hardened snow
 * particle does not scale the jelly's speed. At rest without gravity,
 * dt = cfl dx / c exactly. */
Test(motion, cfl_step_uses_the_signal_speed_of_the_particles_own_materials)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_ELASTIC, box(0.3f, 0.5f, 0.5f, 0.2f), 1.0f / 32.0f);
    def.materials[0].E = 3e6f;
    def.n_materials = 3;
    firn_material_default(&def.materials[1], FIRN_MODEL_SNOW);
    snprintf(def.materials[1].name, FIRN_NAME_MAX, "snow");
    firn_material_default(&def.materials[2], FIRN_MODEL_ELASTIC);
    snprintf(def.materials[2].name, FIRN_NAME_MAX, "steel_unused");
    def.materials[2].E = 2e11f, def.materials[2].density = 7800.0f;
    def.n_bodies = 2;
    firn_body_default(&def.bodies[1]);
    def.bodies[1].material = 1;
    def.bodies[1].shape = box(0.7f, 0.5f, 0.5f, 0.2f);
    firn_world *w = make_world(&def);
    const firn_material *jelly = &w->mats[0], *snow = &w->mats[1];
    const float cfl_dx = def.cfl * def.dx;

    /* At rest: the jelly is the faster of the two materials in use. */
    cr_assert_gt(jelly->c2, snow->c2);
    float want = cfl_dx / sqrtf(jelly->c2);
    cr_assert_float_eq(firn_world_cfl_dt(w), want, 1e-5f * want, "dt %g, want %g (the jelly's)",
                       firn_world_cfl_dt(w), want);

    /* Compress the snow until its hardening makes it the fastest: Jp = 0.75
     * gives h = exp(xi * 0.25), 12 for xi = 10 (capped at max_hardening when set). */
    for (int i = 0; i < w->p.n; i++)
        if (w->p.mat[i] == 1)
            w->p.Jp[i] = 0.75f;
    float h = firn_snow_hardening(snow, 0.75f);
    cr_assert_gt(snow->c2 * h, jelly->c2, "h = %g does not make the snow the fastest", h);
    want = cfl_dx / sqrtf(snow->c2 * h);
    cr_assert_float_eq(firn_world_cfl_dt(w), want, 1e-5f * want, "dt %g, want %g (hardened snow)",
                       firn_world_cfl_dt(w), want);
    firn_world_destroy(w);
}

/* A domain of 0.9 m at dx = 1/64 m is 57.6 cells: the grid has 59 nodes and
 * ends at 0.90625 m. The world's scene says so, and particles are kept one
 * cell inside that end, where the upper walls act; a whole-cell domain is
 * left exactly as given. */
Test(motion, domain_upper_is_rounded_up_to_the_grid)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SAND, box(0.4f, 0.4f, 0.4f, 0.2f), 1.0f / 64.0f);
    def.upper[0] = 0.9f;
    firn_world *w = make_world(&def);
    const firn_scene_def *ws = firn_world_scene(w);
    cr_assert_eq(w->params.n[0], 59);
    cr_assert_float_eq(ws->upper[0], 0.90625f, 1e-6f);
    cr_assert_float_eq(w->params.x_max[0], ws->upper[0] - def.dx, 1e-6f);
    cr_assert_eq(ws->upper[1], def.upper[1], "a whole-cell domain changed: %.9g", ws->upper[1]);
    cr_assert_eq(ws->upper[2], def.upper[2]);
    firn_world_destroy(w);
}

/* A liquid column collapsing under gravity: flow that breaks up the block
 * order within a few dozen substeps. */
static void collapsing_column(firn_scene_def *def)
{
    small_scene(def, FIRN_MODEL_LIQUID, box(0.25f, 0.3f, 0.5f, 0.3f), 0.04f);
    def->gravity[1] = -9.81f;
}

/* The CPU path reorders its particle state as material flows
 * (host/solver_cpu.c). A collapsing liquid column is reordered several
 * times; every particle must come back to its scene index, and the motion
 * must be the one computed without reordering, up to the rounding of the
 * nodes' sums taken in another order. */
Test(reorder, state_comes_back_in_scene_order_and_moves_as_without)
{
    firn_scene_def def;
    collapsing_column(&def);
    firn_world *w[2] = {make_world(&def), make_world(&def)};
    w[1]->bins.reorder_run = 0; /* never */
    const int n = w[0]->p.n;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++)
            w[k]->p.damage[i] = (float)i; /* a liquid neither reads nor writes damage */
    firn_error err;
    const float dt = firn_world_cfl_dt(w[0]);
    for (int s = 0; s < 300; s++)
        for (int k = 0; k < 2; k++)
            cr_assert_eq(firn_world_substep(w[k], dt, &err), 0, "%s", err.msg);
    cr_assert_gt(w[0]->bins.reorders, 0, "the flow never broke the block order");
    cr_assert_eq(w[1]->bins.reorders, 0);
    firn_particles_view p[2];
    for (int k = 0; k < 2; k++)
        cr_assert_eq(firn_world_particles(w[k], &p[k], &err), 0, "%s", err.msg);
    double dmax = 0.0;
    for (int i = 0; i < n; i++) {
        cr_assert_eq(p[0].damage[i], (float)i, "index %d holds particle %g", i, p[0].damage[i]);
        for (int a = 0; a < 3; a++)
            dmax = fmax(dmax, fabs(p[0].x[a * n + i] - p[1].x[a * n + i]));
    }
    /* Rounding differences (a few ulps per node sum) grow over 300 substeps
     * of a splashing column to about 1e-6 m here; a particle misplaced by
     * the permutation would be off by the particle spacing, dx / 2. */
    cr_assert_lt(dmax, 1e-3 * def.dx, "reordered and plain runs differ by %g m", dmax);
    cr_assert(w[0]->bins.in_scene_order, "the view is not in scene order");
    for (int k = 0; k < 2; k++)
        firn_world_destroy(w[k]);
}

/* Reading the state (frames, statistics) puts it in scene order for the
 * reader and back into the solver's layout before the next substep, so how
 * often a run writes output cannot change what it computes: bitwise. */
Test(reorder, reading_the_state_does_not_change_the_run)
{
    firn_scene_def def;
    collapsing_column(&def);
    firn_world *w[2] = {make_world(&def), make_world(&def)};
    firn_error err;
    firn_particles_view p[2];
    firn_frame_stats st[2];
    const float dt = firn_world_cfl_dt(w[0]);
    for (int s = 0; s < 300; s++) {
        for (int k = 0; k < 2; k++)
            cr_assert_eq(firn_world_substep(w[k], dt, &err), 0, "%s", err.msg);
        if (s % 10 == 0) /* world 0 is read out every 10 substeps, world 1 never */
            cr_assert_eq(firn_world_particles(w[0], &p[0], &err), 0, "%s", err.msg);
    }
    cr_assert_gt(w[0]->bins.reorders, 0, "the flow never broke the block order");
    for (int k = 0; k < 2; k++)
        cr_assert_eq(firn_world_stats(w[k], &st[k], &err), 0, "%s", err.msg);
    cr_assert_eq(w[0]->bins.reorders, w[1]->bins.reorders);
    cr_assert(st[0].kinetic_energy == st[1].kinetic_energy &&
                  st[0].momentum[1] == st[1].momentum[1],
              "statistics differ: kinetic energy %.17g vs %.17g", st[0].kinetic_energy,
              st[1].kinetic_energy);
    for (int k = 0; k < 2; k++)
        cr_assert_eq(firn_world_particles(w[k], &p[k], &err), 0, "%s", err.msg);
    const size_t n = (size_t)p[0].n;
    cr_assert(!memcmp(p[0].x, p[1].x, 3 * n * sizeof(float)) &&
                  !memcmp(p[0].v, p[1].v, 3 * n * sizeof(float)) &&
                  !memcmp(p[0].C, p[1].C, 9 * n * sizeof(float)) &&
                  !memcmp(p[0].F, p[1].F, 9 * n * sizeof(float)),
              "reading the state out changed the run");
    for (int k = 0; k < 2; k++)
        firn_world_destroy(w[k]);
}

/* firn_cpu_live_chunks marks exactly the chunks of consecutive nodes that
 * hold a node of a block the last P2G wrote: against marking every such
 * node one by one, for chunk sizes that split the z rows anywhere. */
Test(grid, live_chunks_are_those_holding_a_written_block_node)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SNOW, box(0.3f, 0.4f, 0.5f, 0.2f), 1.0f / 40.0f);
    def.bodies[0].velocity[0] = 4.0f;
    firn_world *w = make_world(&def);
    firn_error err;
    cr_assert_eq(firn_world_run_substeps(w, 5, 2e-4f, &err), 0, "%s", err.msg);
    const firn_cpu_bins *b = &w->bins;
    const int *n = w->grid.n;
    cr_assert(b->dirty_valid && b->ndirty > 0 && b->ndirty < b->nblocks / 2);
    const long long sizes[] = {1, 3, 7, 41, 64, 1000, 4096};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        const long long chunk = sizes[t], chunks = (w->grid.nodes + chunk - 1) / chunk;
        unsigned char *live = malloc((size_t)chunks), *want = calloc((size_t)chunks, 1);
        cr_assert(live && want);
        firn_cpu_live_chunks(w, chunk, live);
        for (int d = 0; d < b->ndirty; d++) {
            const int blk = b->dirty[d];
            const int c[3] = {blk / (b->nb[1] * b->nb[2]), blk / b->nb[2] % b->nb[1],
                              blk % b->nb[2]};
            for (int i = 4 * c[0]; i < 4 * c[0] + 4 && i < n[0]; i++)
                for (int j = 4 * c[1]; j < 4 * c[1] + 4 && j < n[1]; j++)
                    for (int k = 4 * c[2]; k < 4 * c[2] + 4 && k < n[2]; k++)
                        want[firn_node_index(n, i, j, k) / chunk] = 1;
        }
        long long marked = 0;
        for (long long q = 0; q < chunks; q++) {
            cr_assert_eq(live[q], want[q], "chunk size %lld: chunk %lld live %d, want %d", chunk, q,
                         live[q], want[q]);
            marked += live[q];
        }
        cr_assert(marked > 0 && marked < chunks, "chunk size %lld: %lld of %lld", chunk, marked,
                  chunks);
        free(live);
        free(want);
    }
    /* Not known (after a full clear): every chunk. */
    firn_cpu_clear(w);
    unsigned char live[64];
    firn_cpu_live_chunks(w, (w->grid.nodes + 63) / 64, live);
    for (int q = 0; q < 64; q++)
        cr_assert_eq(live[q], 1);
    firn_world_destroy(w);
}

Test(grid, clearing_only_the_written_blocks_leaves_the_full_clears_grid)
{
    /* Each substep clears and updates only the node blocks the last P2G
     * wrote. A body crossing the domain leaves blocks behind every substep;
     * if any kept a value, the grid and the particles would part from a run
     * that clears and updates the whole grid every substep. Bitwise, after
     * 60 substeps, over every node. */
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SNOW, box(0.3f, 0.4f, 0.5f, 0.12f), 1.0f / 40.0f);
    def.bodies[0].velocity[0] = 6.0f;
    def.bodies[0].velocity[1] = 2.0f;
    def.gravity[1] = -9.81f;
    firn_world *a = make_world(&def), *b = make_world(&def);
    b->bins.full_grid = 1; /* the reference: the whole grid, every substep */
    firn_error err;
    const float dt = 2e-4f;
    for (int k = 0; k < 60; k++) {
        cr_assert_eq(firn_world_substep(a, dt, &err), 0, "%s", err.msg);
        cr_assert_eq(firn_world_substep(b, dt, &err), 0, "%s", err.msg);
    }
    cr_assert_lt(a->bins.ndirty, a->bins.nblocks / 2, "the body should leave most blocks empty");
    cr_assert(!memcmp(a->grid.node, b->grid.node, 16 * (size_t)a->grid.nodes),
              "grids differ after partial clears");
    cr_assert(!memcmp(a->p.x, b->p.x, 12 * (size_t)a->p.n), "positions differ");
    firn_world_destroy(a);
    firn_world_destroy(b);
}

static void scale_velocity(firn_particles *p, void *ctx)
{
    const float k = *(const float *)ctx;
    for (long long i = 0; i < 3LL * p->n; i++)
        p->v[i] *= k;
}

/* The inspection API (host/inspect.h) reports the world's own grid and
 * edits the state a world then steps from, in the scene's order, only
 * before the first substep. */
Test(inspect, grid_and_particle_edit_are_the_worlds_own)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_ELASTIC, box(0.5f, 0.5f, 0.5f, 0.2f), 0.05f);
    def.bodies[0].velocity[0] = 1.0f;
    firn_world *w = make_world(&def);
    int n[3];
    firn_inspect_grid_size(w, n);
    for (int a = 0; a < 3; a++)
        cr_assert_eq(n[a], w->params.n[a]);
    cr_assert_eq(firn_inspect_grid_nodes(w), w->grid.nodes);
    cr_assert_eq(firn_inspect_inv_dx(w), w->params.inv_dx);
    float k = 2.0f;
    firn_error err;
    cr_assert_eq(firn_inspect_edit_particles(w, scale_velocity, &k, &err), 0, "%s", err.msg);
    for (int i = 0; i < w->p.n; i++)
        cr_assert_eq(w->p.v[i], 2.0f, "particle %d: vx %g", i, w->p.v[i]);
    cr_assert_eq(firn_world_substep(w, 1e-4f, &err), 0, "%s", err.msg);
    /* The grid after that substep: total mass and x momentum of the moving
     * body (grid velocity times mass, after the update). */
    const long long nodes = firn_inspect_grid_nodes(w);
    float *mass = malloc((size_t)nodes * sizeof(float)),
          *vel = malloc(3 * (size_t)nodes * sizeof(float));
    cr_assert(mass && vel);
    cr_assert_eq(firn_inspect_grid(w, mass, vel, &err), 0, "%s", err.msg);
    double M = 0.0, Px = 0.0, Mp = 0.0;
    for (long long i = 0; i < nodes; i++) {
        M += mass[i];
        Px += (double)mass[i] * vel[i];
    }
    for (int i = 0; i < w->p.n; i++)
        Mp += particle_mass(w, i);
    cr_assert_float_eq(M, Mp, 1e-5 * Mp, "grid mass %g, particles %g", M, Mp);
    cr_assert_float_eq(Px, 2.0 * Mp, 1e-4 * Mp, "grid x momentum %g, edited particles %g", Px,
                       2.0 * Mp);
    free(mass);
    free(vel);
    cr_assert_neq(firn_inspect_edit_particles(w, scale_velocity, &k, &err), 0);
    cr_assert_eq(err.code, FIRN_E_USAGE);
    firn_world_destroy(w);
}

/* The inspection API's per-solver figures: the dynamic rigid bodies'
 * kinetic energy is 1/2 m v^2 + 1/2 I omega^2 (the static one counts 0),
 * and the solvers' memory adds up to firn_world_memory's. */
Test(inspect, rigid_kinetic_energy_and_memory_by_solver)
{
    const char *json =
        "{\"domain\": {\"lower\": [0,0,0], \"upper\": [1,1,1], \"dx\": 0.05},"
        "\"materials\": {\"j\": {\"model\": \"elastic\"}, \"w\": {\"model\": \"sph_liquid\"}},"
        "\"bodies\": [{\"material\": \"j\", \"shape\": {\"type\": \"box\", \"center\": "
        "[0.5,0.2,0.5], \"size\": [0.2,0.2,0.2]}}, {\"material\": \"w\", \"solver\": \"sph\", "
        "\"shape\": {\"type\": \"box\", \"center\": [0.2,0.2,0.2], \"size\": [0.1,0.1,0.1]}}],"
        "\"rigids\": [{\"name\": \"ball\", \"motion\": \"dynamic\", \"density\": 200, "
        "\"velocity\": [1,0,0], \"angular_velocity\": [0,2,0], \"shape\": {\"type\": "
        "\"sphere\", \"center\": [0.5,0.7,0.5], \"radius\": 0.1}}, {\"name\": \"floor\", "
        "\"shape\": {\"type\": \"plane\", \"center\": [0,0.05,0]}}]}";
    firn_scene_def def;
    firn_error err;
    cr_assert_eq(firn_scene_parse_json(json, "t.json", &def, &err), 0, "%s", err.msg);
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    cr_assert(w, "%s", err.msg);
    const double m = 200.0 * 4.0 / 3.0 * M_PI * 1e-3, I = 0.4 * m * 0.01;
    const double want = 0.5 * m * 1.0 + 0.5 * I * 4.0;
    const double got = firn_inspect_rigid_kinetic_energy(w);
    cr_assert(fabs(got - want) <= 1e-5 * want, "rigid kinetic energy %.9g J, want %.9g", got, want);
    firn_memory all;
    firn_inspect_memory sm;
    firn_world_memory(w, &all);
    firn_inspect_solver_memory(w, &sm);
    cr_assert(sm.mpm.host > 0.0 && sm.sph.host > 0.0 && sm.shared.host > 0.0);
    cr_assert_eq(sm.pbd.host, 0.0);
    cr_assert_eq(sm.fem.host, 0.0);
    cr_assert(fabs(sm.mpm.host + sm.sph.host + sm.shared.host - all.host) < 1.0);
    cr_assert(fabs(sm.mpm.device + sm.sph.device + sm.shared.device - all.device) < 1.0);
    firn_world_destroy(w);
}

/* The substep's order is one list for both paths (host/coupler.c
 * firn_coupler_run): each (solver, phase) ends the profile slot its table
 * names, and a solver marks the intervals inside its phases. On the CPU
 * path a world with every solver and pair times each of its phases. The
 * CUDA path's twin is gpu/every_solver_phase_is_timed_on_the_gpu. */
Test(world, every_solver_phase_is_timed_on_the_cpu, .timeout = 60)
{
    firn_world *w = test_world_json(all_solvers_json, "all_solvers.json");
    firn_error err;
    cr_assert_eq(firn_world_run_substeps(w, 4, 1e-4f, &err), 0, "%s", err.msg);
    const firn_profile p = firn_world_profile(w);
    all_solvers_check_profile(&p, "CPU", 0);
#ifdef FIRN_WITH_CUDA /* every solver and couple step has its CUDA phases */
    cr_expect_null(firn_coupler_no_cuda(w), "%s has no CUDA phases in a CUDA build",
                   firn_coupler_no_cuda(w));
#else /* none has: the CUDA backend names the first active solver it lacks */
    cr_expect_str_eq(firn_coupler_no_cuda(w), "tool");
#endif
    firn_world_destroy(w);
}

/* The run options (firn_run_options) are checked before anything is made:
 * a value outside its enum is FIRN_E_USAGE naming the option and the
 * value; NULL is the defaults; the world keeps what it was given. They are
 * not part of the scene: the scene hash, which checkpoints carry, is the
 * same for any options. */
Test(world, run_options_out_of_range_are_refused_by_name)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SAND, box(0.5f, 0.5f, 0.5f, 0.2f), 0.05f);
    static const struct {
        int field, value;
        const char *says;
    } bad[] = {
        {0, 7, "no backend 7"},      {1, 6, "no P2G variant 6"}, {1, -1, "no P2G variant -1"},
        {2, 3, "no grid mode 3"},    {2, -1, "no grid mode -1"}, {3, 3, "no graph mode 3"},
        {3, -2, "no graph mode -2"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        firn_run_options o = firn_run_options_default();
        o.backend = FIRN_BACKEND_CPU;
        int *f[4] = {(int *)&o.backend, &o.p2g, &o.grid, &o.graphs};
        *f[bad[k].field] = bad[k].value;
        firn_error err = {0};
        firn_world *w = firn_world_create_with(&def, &o, &err);
        cr_expect_null(w, "case %zu (%s) was taken", k, bad[k].says);
        cr_expect_eq(err.code, FIRN_E_USAGE, "case %zu: code %d (%s)", k, err.code, err.msg);
        cr_expect(strstr(err.msg, bad[k].says) != NULL, "case %zu: \"%s\" lacks \"%s\"", k, err.msg,
                  bad[k].says);
        if (w)
            firn_world_destroy(w);
    }
    firn_error err = {0};
    firn_world *d = firn_world_create_with(&def, NULL, &err);
    cr_assert(d, "NULL options: %s", err.msg);
    const firn_run_options z = firn_run_options_default();
    cr_expect(d->run.backend == z.backend && d->run.p2g == z.p2g && d->run.grid == z.grid &&
                  d->run.graphs == z.graphs,
              "NULL is not the defaults");
    firn_run_options o = {FIRN_BACKEND_CPU, FIRN_P2G_ORDERED, FIRN_GRID_SPARSE, FIRN_GRAPHS_OFF};
    firn_world *w = firn_world_create_with(&def, &o, &err);
    cr_assert(w, "%s", err.msg);
    cr_expect(w->run.p2g == FIRN_P2G_ORDERED && w->run.grid == FIRN_GRID_SPARSE &&
                  w->run.graphs == FIRN_GRAPHS_OFF,
              "the world did not keep its options");
    cr_expect_eq(w->scene_hash, d->scene_hash, "the run options changed the scene hash");
    firn_world_destroy(w);
    firn_world_destroy(d);
}
