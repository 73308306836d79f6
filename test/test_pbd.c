/* test_pbd.c - the PBD solver on the CPU path against closed forms
 * computed here: the bending gradient against finite differences, free
 * fall against the discrete integrator, a single XPBD edge against its
 * compliance, a hanging chain against the catenary, a hanging sheet against
 * the stretch XPBD and its iteration count allow; pins, contact with a
 * rigid sphere, Newton's third law with a dynamic body, determinism across
 * thread counts, checkpoints, the PLY mesh and the scene's errors. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "firn.h"
#include "firn_pbd.h"
#include "pbd.h"
#include "test_util.h"
#include "world.h"

/* A scene with one PBD cloth rectangle of n0 x n1 vertices, size s0 x s1,
 * normal `axis`, centred at c, in the domain [-1, 1]^3; no rigid bodies. */
static void cloth_scene(firn_scene_def *def, int n0, int n1, float s0, float s1, int axis,
                        const float c[3])
{
    firn_scene_default(def);
    for (int a = 0; a < 3; a++)
        def->lower[a] = -1.0f, def->upper[a] = 1.0f;
    def->dx = 0.1f; /* the MPM grid is unused */
    def->n_materials = 1;
    firn_material_default(&def->materials[0], FIRN_MODEL_PBD_CLOTH);
    snprintf(def->materials[0].name, FIRN_NAME_MAX, "cloth");
    def->n_bodies = 1;
    firn_body_default(&def->bodies[0]);
    firn_body_def *b = &def->bodies[0];
    b->solver = FIRN_SOLVER_KIND_PBD;
    b->shape.type = FIRN_SHAPE_CLOTH_RECT;
    b->shape.axis = axis;
    b->shape.resolution[0] = n0, b->shape.resolution[1] = n1;
    b->shape.size[0] = s0, b->shape.size[1] = s1;
    memcpy(b->shape.center, c, 3 * sizeof(float));
}

static firn_world *make(const firn_scene_def *def)
{
    firn_error err;
    firn_world *w = firn_world_create(def, FIRN_BACKEND_CPU, &err);
    cr_assert(w, "%s", err.msg);
    return w;
}

static void substeps(firn_world *w, int n, float dt)
{
    firn_error err;
    cr_assert(firn_world_run_substeps(w, n, dt, &err) == 0, "%s", err.msg);
}

/* ---- the shared physics -------------------------------------------------------- */

/* The dihedral angle's gradient (Bridson et al.'s closed form) equals the
 * central difference of the angle itself, including at a flat pair, where
 * the gradient of acos(n1 . n2) would be 0/0. */
Test(pbd_bending, gradient_matches_finite_differences)
{
    srand(19);
    for (int t = 0; t < 300; t++) {
        firn_vec3 x[4];
        for (int k = 0; k < 4; k++)
            x[k] = firn_v3((float)rand() / RAND_MAX, (float)rand() / RAND_MAX,
                           (float)rand() / RAND_MAX);
        if (t % 3 == 0) /* a flat pair: c and d on either side of a-b in one plane */
            x[0] = firn_v3(0, 0, 0), x[1] = firn_v3(1, 0, 0), x[2] = firn_v3(0.3f, 0.8f, 0),
            x[3] = firn_v3(0.6f, -0.7f, 0);
        float theta;
        firn_vec3 g[4], gd[4];
        if (!firn_pbd_dihedral(x[0], x[1], x[2], x[3], &theta, g))
            continue;
        if (fabsf(theta) > 2.8f) /* near +-pi the angle wraps */
            continue;
        const float h = 1e-3f;
        double worst = 0.0, scale = 0.0;
        for (int k = 0; k < 4; k++)
            for (int a = 0; a < 3; a++) {
                firn_vec3 y[4];
                float tp = 0.0f, tm = 0.0f;
                memcpy(y, x, sizeof y);
                y[k].v[a] += h;
                firn_pbd_dihedral(y[0], y[1], y[2], y[3], &tp, gd);
                y[k].v[a] -= 2.0f * h;
                firn_pbd_dihedral(y[0], y[1], y[2], y[3], &tm, gd);
                double fd = (tp - tm) / (2.0 * h);
                worst = fmax(worst, fabs(fd - g[k].v[a]));
                scale = fmax(scale, fabs(g[k].v[a]));
            }
        /* The central difference of a float angle: error ~ h^2 |theta'''| + eps / h. */
        cr_assert(worst <= 2e-2 * scale + 2e-3, "case %d: |grad - FD| = %g (gradient scale %g)", t,
                  worst, scale);
    }
}

/* A particle of mass m hanging from a pinned one by a single edge of
 * compliance alpha: XPBD's equilibrium C = -alpha~ lambda with lambda / dt^2
 * the tension m g gives a stretch of exactly alpha m g, whatever the
 * substep and the iteration count (one XPBD projection of a single
 * constraint is exact). Settled from rest at the rest length, damped by
 * the projection itself. */
static double hanging_edge(float alpha, float dt, int iters)
{
    float x[6] = {0, 0, 0, 0, 0, 0}, v[6] = {0}, x0[6], mass[2] = {0.1f, 0.1f},
          w[2] = {0.0f, 10.0f};
    uint8_t mat[2] = {0, 0};
    x[3] = -0.1f; /* component-major, n = 2: y of particle i at x[2 + i] */
    firn_pbd_particles s = {.n = 2, .x = x, .v = v, .x0 = x0, .mass = mass, .w = w, .mat = mat};
    int ev[2] = {0, 1}, order[1] = {0}, cs[2] = {0, 1};
    float rest = 0.1f, comp = alpha, lambda = 0.0f;
    firn_pbd_constraints E = {1, 2, ev, &rest, &comp, &lambda, order, 1, cs};
    firn_pbd_material m = {.stretch_compliance = alpha, .kind = FIRN_PBD_PARTICLE};
    firn_pbd_params P = {.dt = dt,
                         .psize = 0.01f,
                         .gravity = {0.0f, -9.81f, 0.0f},
                         .lower = {-10, -10, -10},
                         .upper = {10, 10, 10}};
    for (int step = 0; step < (int)lrintf(4.0f / dt); step++) {
        for (int i = 0; i < 2; i++)
            firn_pbd_predict(i, &P, &m, s);
        lambda = 0.0f;
        for (int it = 0; it < iters; it++)
            firn_pbd_stretch(0, &E, dt, s);
        for (int i = 0; i < 2; i++)
            firn_pbd_finish(i, &P, s);
    }
    return (double)x[2] - x[3] - 0.1;
}

Test(pbd_stretch, single_edge_stretches_by_alpha_m_g_at_any_substep_and_iteration_count)
{
    const float alpha = 2e-3f; /* [m/N]: m g alpha = 1.962 mm */
    const double want = alpha * 0.1 * 9.81;
    const double a = hanging_edge(alpha, 1e-3f, 1), b = hanging_edge(alpha, 5e-4f, 1),
                 c = hanging_edge(alpha, 1e-3f, 4);
    /* float positions near 0.1 m: rounding ~1e-8 m, far below 1 % of 2 mm. */
    cr_expect(fabs(a - want) < 0.01 * want, "dt 1 ms, 1 iteration: stretch %g m, want %g", a, want);
    cr_expect(fabs(b - want) < 0.01 * want, "dt 0.5 ms: stretch %g m, want %g", b, want);
    cr_expect(fabs(c - want) < 0.01 * want, "4 iterations: stretch %g m, want %g", c, want);
}

/* ---- particles ------------------------------------------------------------------ */

/* Free PBD particles (no constraints, nothing near) follow the substep's
 * integrator: v_k = v0 + k g dt, x_k = x0 + k v0 dt + g dt^2 k (k + 1) / 2
 * (semi-implicit Euler; v = (x - x0) / dt returns the velocity it moved
 * with). In float that velocity carries the rounding of x, u = 3e-8 m for
 * |x| < 0.5 m, over dt: at most K u / dt after K substeps, and the
 * position at most K^2 u / 2. */
Test(pbd_fall, free_particles_match_the_discrete_formula)
{
    firn_scene_def def;
    firn_scene_default(&def);
    for (int a = 0; a < 3; a++)
        def.lower[a] = -1.0f, def.upper[a] = 1.0f;
    def.dx = 0.1f;
    def.n_materials = 1;
    firn_material_default(&def.materials[0], FIRN_MODEL_PBD_PARTICLE);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "grain");
    def.n_bodies = 1;
    firn_body_default(&def.bodies[0]);
    def.bodies[0].solver = FIRN_SOLVER_KIND_PBD;
    def.bodies[0].shape.center[0] = def.bodies[0].shape.center[2] = 0.0f;
    def.bodies[0].shape.center[1] = 0.0f;
    def.bodies[0].velocity[0] = 0.3f;
    def.bodies[0].velocity[1] = 1.0f;
    firn_world *w = make(&def);
    const int n = w->pbd.n, K = 40;
    const float dt = 5e-3f;
    cr_assert(n == 1000, "a 0.1 m cube at p = 0.01 m holds 10^3 particles, got %d", n);
    float *x0 = malloc(3 * (size_t)n * sizeof(float));
    memcpy(x0, w->pbd.s.x, 3 * (size_t)n * sizeof(float));
    substeps(w, K, dt);
    const double g = -9.81, vy = 1.0 + K * g * dt;
    double worst_x = 0.0, worst_v = 0.0;
    for (int i = 0; i < n; i++) {
        const double dy = 1.0 * K * dt + g * dt * dt * K * (K + 1) / 2.0, dx = 0.3 * K * dt;
        worst_x = fmax(worst_x, fabs(w->pbd.s.x[n + i] - x0[n + i] - dy));
        worst_x = fmax(worst_x, fabs(w->pbd.s.x[i] - x0[i] - dx));
        worst_v = fmax(worst_v, fabs(w->pbd.s.v[n + i] - vy));
    }
    const double u = 3e-8;
    cr_expect(worst_x < K * K * u / 2.0, "position off the discrete formula by %g m", worst_x);
    cr_expect(worst_v < K * u / dt, "velocity off v0 + k g dt by %g m/s", worst_v);
    free(x0);
    firn_world_destroy(w);
}

/* ---- the colouring -------------------------------------------------------------- */

/* Every constraint is in exactly one colour, and no two constraints of a
 * colour share a particle (what makes a colour's projections independent). */
Test(pbd_colour, each_constraint_once_and_no_shared_vertex_within_a_colour)
{
    firn_scene_def def;
    cloth_scene(&def, 13, 9, 0.6f, 0.4f, 1, (const float[3]){0, 0.5f, 0});
    firn_world *w = make(&def);
    const firn_pbd *S = &w->pbd;
    cr_assert_eq(S->stretch.n, 12 * 9 + 13 * 8 + 12 * 8, "edges of a 13 x 9 grid with diagonals");
    cr_assert_eq(S->bend.n, S->stretch.n - 2 * (12 + 8), "inner edges: all but the border");
    for (int kind = 0; kind < 2; kind++) {
        const firn_pbd_constraints *C = kind ? &S->bend : &S->stretch;
        int *seen = calloc((size_t)C->n, sizeof(int)), *mark = calloc((size_t)S->n, sizeof(int));
        for (int c = 0; c < C->colours; c++)
            for (int k = C->colour_start[c]; k < C->colour_start[c + 1]; k++) {
                const int j = C->order[k];
                seen[j]++;
                for (int q = 0; q < C->k; q++) {
                    cr_assert(mark[C->v[C->k * j + q]] != c + 1,
                              "kind %d colour %d: vertex %d in two constraints", kind, c,
                              C->v[C->k * j + q]);
                    mark[C->v[C->k * j + q]] = c + 1;
                }
            }
        for (int j = 0; j < C->n; j++)
            cr_assert_eq(seen[j], 1, "kind %d: constraint %d in %d colours", kind, j, seen[j]);
        free(seen);
        free(mark);
    }
    firn_world_destroy(w);
}

/* ---- a hanging chain -------------------------------------------------------------- */

/* A strip of N segments (2 rows of vertices, width 0.04 m) of length L,
 * written as an OBJ in the shape of a V whose ends are the span S apart;
 * its four end vertices are pinned. */
static void chain_scene(firn_scene_def *def, const char *dir, int N, double L, double S)
{
    char path[256];
    snprintf(path, sizeof path, "%s/strip.obj", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    const double d = sqrt(L * L / 4.0 - S * S / 4.0); /* depth of the V */
    for (int i = 0; i <= N; i++) {
        const double s = L * i / N, t = s < L / 2 ? s / (L / 2) : (L - s) / (L / 2);
        const double x = -S / 2 + S * s / L, y = -d * t;
        for (int j = 0; j < 2; j++)
            fprintf(f, "v %.9f %.9f %.9f\n", x, y, j ? 0.02 : -0.02);
    }
    for (int i = 0; i < N; i++) {
        const int a = 2 * i + 1, b = a + 1, c = a + 2, e = a + 3; /* OBJ counts from 1 */
        fprintf(f, "f %d %d %d\nf %d %d %d\n", a, c, e, a, e, b);
    }
    fclose(f);
    float c[3] = {0.0f, 0.0f, 0.0f};
    cloth_scene(def, 2, 2, 1, 1, 1, c);
    firn_body_def *b = &def->bodies[0];
    b->shape.type = FIRN_SHAPE_MESH;
    snprintf(b->shape.file, sizeof b->shape.file, "%s", path);
    b->n_pins = 4;
    b->pins[0] = 0, b->pins[1] = 1, b->pins[2] = 2 * N, b->pins[3] = 2 * N + 1;
    def->materials[0].air_resistance = 0.02f; /* damps the swing; the equilibrium is drag-free */
    def->pbd.bending_iterations = 0;          /* a chain: no bending stiffness */
}

/* The catenary through two points a span S apart with length L: L = 2 a
 * sinh(S / 2a), sag a (cosh(S / 2a) - 1); a by bisection. */
static double catenary_sag(double L, double S)
{
    double lo = 1e-3, hi = 1e3;
    for (int k = 0; k < 200; k++) {
        const double a = sqrt(lo * hi);
        if (2.0 * a * sinh(S / (2.0 * a)) > L)
            lo = a;
        else
            hi = a;
    }
    const double a = sqrt(lo * hi);
    return a * (cosh(S / (2.0 * a)) - 1.0);
}

/* The strip settled for 8 s at substep dt with `iters` stretch
 * iterations: the pins' height less the lowest point of its centre line. */
static double chain_sag(const char *dir, int iters, float dt, double *ke)
{
    firn_scene_def def;
    const int N = 40;
    chain_scene(&def, dir, N, 1.0, 0.8);
    def.pbd.stretch_iterations = iters;
    firn_world *w = make(&def);
    substeps(w, (int)lrintf(8.0f / dt), dt);
    const int n = w->pbd.n;
    const float *y = w->pbd.s.x + n;
    double low = INFINITY;
    for (int i = 0; i <= N; i++)
        low = fmin(low, 0.5 * (y[2 * i] + y[2 * i + 1]));
    firn_frame_stats s;
    firn_error err;
    cr_assert(firn_world_stats(w, &s, &err) == 0, "%s", err.msg);
    *ke = s.pbd.kinetic_energy;
    const double sag = y[0] - low;
    firn_world_destroy(w);
    return sag;
}

/* A chain of 40 links (1 m, span 0.8 m) hangs as the catenary: its sag
 * within 2 % of a (cosh(S / 2a) - 1). Its links are stiff (compliance
 * 1e-7 m/N against a tension of about 1 N), and the discrete chain's
 * lumped masses differ from the continuous catenary by O(1 / N^2), 0.1 %
 * here; what remains is the stretch the finite iterations leave (each
 * substep's gravity, g dt^2 per particle, is not fully passed up the chain
 * by 4 Gauss-Seidel sweeps), which falls with more iterations and a
 * shorter substep (about halves with either): measured
 * +0.7 % at dt = 1 ms and 4 iterations (+2.0 % at 2 ms, the CFL step of a
 * chain falling at 2 m/s with p = 1 cm). The same within 2 % with twice
 * the iterations and with half the substep. */
Test(pbd_chain, hangs_as_the_catenary_at_any_iteration_count_and_substep, .timeout = 120)
{
    char dir[64];
    test_mkdtemp(dir, sizeof dir, "pbd_chain");
    const double want = catenary_sag(1.0, 0.8);
    const struct {
        int iters;
        float dt;
    } runs[3] = {{4, 1e-3f}, {8, 1e-3f}, {4, 5e-4f}};
    double excess[3];
    for (int r = 0; r < 3; r++) {
        double ke, sag = chain_sag(dir, runs[r].iters, runs[r].dt, &ke);
        excess[r] = sag / want - 1.0;
        cr_expect(fabs(sag / want - 1.0) < 0.02,
                  "%d iterations, dt %g s: sag %.5f m, catenary %.5f m (%+.2f %%), kinetic "
                  "energy left %.3g J",
                  runs[r].iters, runs[r].dt, sag, want, 100.0 * (sag / want - 1.0), ke);
        cr_log_info("chain: %d iterations, dt %g: sag %.5f m vs %.5f (%+.3f %%), ke %.2g J",
                    runs[r].iters, runs[r].dt, sag, want, 100.0 * (sag / want - 1.0), ke);
    }
    /* The excess is the iterations' unconverged stretch, which falls with
     * more iterations and with a shorter substep (as dt^2 / iterations). */
    cr_expect(excess[1] < excess[0] && excess[2] < excess[0],
              "excess sag %.3f %% (4 it.), %.3f %% (8 it.), %.3f %% (dt / 2): more iterations "
              "or a shorter substep must come closer",
              100 * excess[0], 100 * excess[1], 100 * excess[2]);
    test_rmdir(dir);
}

/* ---- a hanging sheet ----------------------------------------------------------- */

/* A vertical sheet (normal z) of 11 x 11 vertices, 0.4 m square, pinned
 * along its top edge by a pin box, settled for 3 s at dt = 1 ms with K = 4
 * stretch iterations. Bound on every edge's stretch s_e = |x_a - x_b| - L_e:
 *
 * - converged, XPBD's equilibrium is C_e = -alpha~ lambda_e with
 *   lambda_e / dt^2 the edge's tension T_e (Macklin et al. 2016, eq. 14-18),
 *   so s_e = alpha T_e, and T_e <= W, the sheet's whole weight (an edge
 *   never carries more than hangs below the pins);
 * - unconverged: each substep adds g dt^2 to every particle's drop, and K
 *   sweeps of Gauss-Seidel pass it up a column of R = 10 edges only
 *   partly: the slowest mode of the chain's (J W J^T) iteration shrinks by
 *   rho ~ 1 - pi^2 / R^2 a sweep, so in the steady state the edges keep an
 *   extra stretch of about g dt^2 R^2 / (pi^2 K) (a column's load is shared
 *   with the diagonals: a factor 2 of margin).
 *
 * So s_e < alpha W + 2 g dt^2 R^2 / (pi^2 K). */
static double sheet_max_stretch(float alpha, int iters, double *bound)
{
    firn_scene_def def;
    cloth_scene(&def, 11, 11, 0.4f, 0.4f, 2, (const float[3]){0, 0.3f, 0});
    firn_body_def *b = &def.bodies[0];
    b->pin_box = 1;
    const float lo[3] = {-1, 0.49f, -1}, hi[3] = {1, 1, 1};
    memcpy(b->pin_lower, lo, sizeof lo);
    memcpy(b->pin_upper, hi, sizeof hi);
    def.materials[0].stretch_compliance = alpha;
    def.materials[0].air_resistance = 0.02f;
    def.pbd.stretch_iterations = iters;
    firn_world *w = make(&def);
    cr_assert_eq(w->pbd.pinned, 11, "the top row is pinned");
    const float dt = 1e-3f;
    substeps(w, 3000, dt);
    const firn_pbd *S = &w->pbd;
    double worst = 0.0, W = 0.0;
    for (int i = 0; i < S->n; i++)
        W += S->s.mass[i] * 9.81;
    for (int j = 0; j < S->stretch.n; j++) {
        const int a = S->stretch.v[2 * j], c = S->stretch.v[2 * j + 1];
        const double len =
            firn_norm(firn_sub(firn_load3(S->s.x, S->n, a), firn_load3(S->s.x, S->n, c)));
        worst = fmax(worst, len - S->stretch.rest[j]);
    }
    const double R = 10.0;
    *bound = alpha * W + 2.0 * 9.81 * dt * dt * R * R / (M_PI * M_PI * iters);
    firn_world_destroy(w);
    return worst;
}

Test(pbd_sheet, hanging_edges_stretch_less_than_compliance_and_iterations_allow, .timeout = 120)
{
    const struct {
        float alpha;
        int iters;
    } runs[3] = {{1e-7f, 4}, {1e-4f, 4}, {1e-7f, 16}};
    for (int r = 0; r < 3; r++) {
        double bound, s = sheet_max_stretch(runs[r].alpha, runs[r].iters, &bound);
        cr_log_info("sheet: alpha %g, %d iterations: largest stretch %.3g m, bound %.3g m",
                    runs[r].alpha, runs[r].iters, s, bound);
        cr_expect(s > 0.0 && s < bound,
                  "alpha %g, %d iterations: largest stretch %.4g m, bound alpha W + 2 g dt^2 "
                  "R^2 / (pi^2 K) = %.4g m",
                  runs[r].alpha, runs[r].iters, s, bound);
    }
}

/* ---- pins and rigid bodies -------------------------------------------------------- */

/* A cloth of 21 x 21 vertices (0.6 m) at y = 0.5 over a sphere of radius
 * r at (0, 0.5 - gap, 0) with `motion`; no pins. */
static void cloth_over_sphere(firn_scene_def *def, float r, float gap, firn_motion motion)
{
    cloth_scene(def, 21, 21, 0.6f, 0.6f, 1, (const float[3]){0, 0.5f, 0});
    def->n_rigids = 1;
    firn_rigid_default(&def->rigids[0]);
    firn_rigid_def *s = &def->rigids[0];
    snprintf(s->name, FIRN_NAME_MAX, "ball");
    s->shape.type = FIRN_RSHAPE_SPHERE;
    s->shape.radius = r;
    s->shape.center[0] = s->shape.center[2] = 0.0f;
    s->shape.center[1] = 0.5f - gap;
    s->motion = motion;
    s->density = 100.0f;
    def->materials[0].bending_compliance = 10.0f; /* a soft sheet that drapes */
}

/* Pinned vertices (two corners by index, one edge's row by a box) keep
 * their place bitwise while the sheet falls and a kinematic sphere rises
 * through the pinned row, lifting the free vertices next to it: a pinned
 * vertex has inverse mass 0, so neither the constraints nor the rigid
 * contact move it. */
Test(pbd_pins, never_move_bitwise_also_against_a_rigid_body, .timeout = 60)
{
    firn_scene_def def;
    cloth_over_sphere(&def, 0.12f, 0.13f, FIRN_RIGID_KINEMATIC);
    def.rigids[0].velocity[1] = 0.2f;
    firn_body_def *b = &def.bodies[0];
    b->n_pins = 2;
    b->pins[0] = 0, b->pins[1] = 20 * 21; /* the corners at x = -0.3, z = -0.3 and x = 0.3 */
    b->pin_box = 1;
    const float lo[3] = {-1, -1, 0.29f}, hi[3] = {1, 1, 1}; /* the row at z = +0.3 */
    memcpy(b->pin_lower, lo, sizeof lo);
    memcpy(b->pin_upper, hi, sizeof hi);
    def.rigids[0].shape.center[2] = 0.3f; /* under the pinned row */
    firn_world *w = make(&def);
    const firn_pbd *S = &w->pbd;
    cr_assert_eq(S->pinned, 2 + 21, "two corners and a row of 21");
    float *x0 = malloc(3 * (size_t)S->n * sizeof(float));
    memcpy(x0, S->s.x, 3 * (size_t)S->n * sizeof(float));
    substeps(w, 600, 1e-3f); /* the sphere's centre rises to y = 0.49 */
    int moved = 0, pinned_moved = 0, lifted = 0, inside = 0;
    for (int i = 0; i < S->n; i++) {
        const firn_vec3 x = firn_load3(S->s.x, S->n, i);
        lifted += x.v[1] > 0.55f;
        inside += firn_norm(firn_sub(x, firn_rigid_pos(&w->rigids[0]))) < 0.12f;
        const int same = !memcmp(&S->s.x[i], &x0[i], 4) &&
                         !memcmp(&S->s.x[S->n + i], &x0[S->n + i], 4) &&
                         !memcmp(&S->s.x[2 * S->n + i], &x0[2 * S->n + i], 4);
        if (S->s.w[i] == 0.0f)
            pinned_moved += !same;
        else
            moved += !same;
    }
    cr_expect_eq(pinned_moved, 0, "%d pinned vertices moved", pinned_moved);
    cr_expect(moved > S->n - S->pinned - 5, "the free vertices fell (%d of %lld moved)", moved,
              S->n - S->pinned);
    cr_expect(lifted > 10, "the sphere lifted the free vertices by the pinned row (%d)", lifted);
    cr_expect(inside > 3, "pinned vertices are inside the sphere, held (%d)", inside);
    free(x0);
    firn_world_destroy(w);
}

/* A sheet dropped on a static sphere and settled: no vertex is inside the
 * sphere by more than 0.1 p (the contact keeps them at p/2 outside), and
 * the sheet rests on it (its highest vertex at the sphere's top + p/2). */
Test(pbd_rigid, cloth_dropped_on_a_sphere_stays_outside_it, .timeout = 60)
{
    firn_scene_def def;
    const float r = 0.15f, gap = 0.3f;
    cloth_over_sphere(&def, r, gap, FIRN_RIGID_STATIC);
    firn_world *w = make(&def);
    firn_error err;
    for (int f = 0; f < 90; f++) /* 1.5 s */
        cr_assert(firn_world_step_frame(w, NULL, &err) == 0, "%s", err.msg);
    const firn_pbd *S = &w->pbd;
    const float p = def.pbd.particle_size, cy = 0.5f - gap;
    double deepest = INFINITY, top = -INFINITY;
    for (int i = 0; i < S->n; i++) {
        const firn_vec3 x = firn_load3(S->s.x, S->n, i);
        const double d = firn_norm(firn_sub(x, firn_v3(0, cy, 0))) - r;
        deepest = fmin(deepest, d);
        top = fmax(top, x.v[1]);
    }
    cr_log_info("drape: deepest vertex %.3g p outside, top %.3g p above the sphere's top",
                deepest / p, (top - cy - r) / p);
    cr_expect(deepest > -0.1 * p, "a vertex is %g m inside the sphere (p = %g m)", -deepest, p);
    cr_expect(fabs(top - (cy + r + 0.5 * p)) < 0.1 * p,
              "the sheet rests on the sphere: top %g m, sphere top + p/2 = %g m", top,
              cy + r + 0.5 * p);
    firn_world_destroy(w);
}

/* PBD-rigid keeps Newton's third law: without gravity, a block of 1000
 * particles (1 kg) thrown at 1 m/s at a free sphere; the particles'
 * momentum plus the sphere's (with the impulse still pending for its next
 * step) stays the initial 1 kg m/s along x and 0 across, while the block
 * hits, pushes and slides past the sphere. Rounding: a particle's
 * velocity (x - x0) / dt carries its position's rounding u = 3e-8 m over
 * dt each substep, a random walk of N particles over K substeps: about
 * sqrt(N K) m u / dt in all, 2e-5 kg m/s here; twice that is allowed. */
Test(pbd_rigid, contact_obeys_newtons_third_law, .timeout = 60)
{
    firn_scene_def def;
    firn_scene_default(&def);
    for (int a = 0; a < 3; a++)
        def.lower[a] = -1.0f, def.upper[a] = 1.0f;
    def.dx = 0.1f;
    def.gravity[1] = 0.0f;
    def.n_materials = 1;
    firn_material_default(&def.materials[0], FIRN_MODEL_PBD_PARTICLE);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "grain");
    def.n_bodies = 1;
    firn_body_default(&def.bodies[0]);
    def.bodies[0].solver = FIRN_SOLVER_KIND_PBD;
    def.bodies[0].shape.center[0] = -0.3f, def.bodies[0].shape.center[1] = 0.02f;
    def.bodies[0].shape.center[2] = 0.0f;
    def.bodies[0].velocity[0] = 1.0f;
    def.n_rigids = 1;
    firn_rigid_default(&def.rigids[0]);
    snprintf(def.rigids[0].name, FIRN_NAME_MAX, "ball");
    def.rigids[0].shape.radius = 0.08f;
    def.rigids[0].shape.center[0] = 0.0f, def.rigids[0].shape.center[1] = 0.0f;
    def.rigids[0].shape.center[2] = 0.0f;
    def.rigids[0].motion = FIRN_RIGID_DYNAMIC;
    def.rigids[0].density = 300.0f;
    firn_world *w = make(&def);
    double p0[3] = {0, 0, 0};
    for (int i = 0; i < w->pbd.n; i++)
        for (int a = 0; a < 3; a++)
            p0[a] += (double)w->pbd.s.mass[i] * w->pbd.s.v[a * w->pbd.n + i];
    substeps(w, 500, 1e-3f);
    firn_frame_stats s;
    firn_error err;
    cr_assert(firn_world_stats(w, &s, &err) == 0, "%s", err.msg);
    const firn_rigid *b = &w->rigids[0];
    double worst = 0.0;
    for (int a = 0; a < 3; a++) {
        const double body = (double)b->mass * b->v[a] + w->rigid_acc[a];
        worst = fmax(worst, fabs(s.pbd.momentum[a] + body - p0[a]));
    }
    cr_assert(b->v[0] > 0.05f, "the sphere was pushed: v = %g m/s", b->v[0]);
    const double tol = 2.0 * sqrt(1000.0 * 500.0) * 1e-3 * 3e-8 / 1e-3;
    cr_log_info("third law: momentum change %.3g kg m/s (allowed %.3g), sphere at %.4f m/s", worst,
                tol, b->v[0]);
    cr_expect(worst < tol, "momentum changed by %g kg m/s of %g (sphere v %g m/s; allowed %g)",
              worst, p0[0], b->v[0], tol);
    firn_world_destroy(w);
}

/* ---- determinism, checkpoints, output ------------------------------------------- */

static void run_threads(int threads, float *x, float *v, firn_rigid *body)
{
    firn_scene_def def;
    cloth_over_sphere(&def, 0.12f, 0.15f, FIRN_RIGID_DYNAMIC);
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    firn_world *w = make(&def);
    substeps(w, 400, 1e-3f);
    omp_set_num_threads(saved);
    memcpy(x, w->pbd.s.x, 3 * (size_t)w->pbd.n * sizeof(float));
    memcpy(v, w->pbd.s.v, 3 * (size_t)w->pbd.n * sizeof(float));
    *body = w->rigids[0];
    firn_world_destroy(w);
}

/* The constraint sweeps (colour by colour), the particle passes and the
 * rigid reaction (summed per particle chunk, then in chunk order) give
 * bitwise the same state at 1 and 2 threads. */
Test(pbd_determinism, same_state_at_one_and_two_threads, .timeout = 60)
{
    const size_t n = 21 * 21;
    float *x1 = malloc(3 * n * sizeof(float)), *v1 = malloc(3 * n * sizeof(float));
    float *x2 = malloc(3 * n * sizeof(float)), *v2 = malloc(3 * n * sizeof(float));
    firn_rigid b1, b2;
    run_threads(1, x1, v1, &b1);
    run_threads(2, x2, v2, &b2);
    cr_expect(!memcmp(x1, x2, 3 * n * sizeof(float)), "positions differ");
    cr_expect(!memcmp(v1, v2, 3 * n * sizeof(float)), "velocities differ");
    cr_expect(!memcmp(b1.x, b2.x, sizeof b1.x) && !memcmp(b1.v, b2.v, sizeof b1.v),
              "the sphere differs");
    cr_expect(b1.v[1] != 0.0f, "the sphere was touched");
    free(x1), free(v1), free(x2), free(v2);
}

/* A checkpoint holds the PBD state: a run resumed from frame 3 continues
 * bitwise as the run that never stopped. */
Test(pbd_checkpoint, resume_is_exact, .timeout = 60)
{
    char dir[64], path[128];
    test_mkdtemp(dir, sizeof dir, "pbd_ckpt");
    snprintf(path, sizeof path, "%s/c.firn", dir);
    firn_scene_def def;
    cloth_over_sphere(&def, 0.12f, 0.1f, FIRN_RIGID_DYNAMIC);
    firn_error err;
    firn_world *a = make(&def);
    for (int f = 0; f < 6; f++) {
        cr_assert(firn_world_step_frame(a, NULL, &err) == 0, "%s", err.msg);
        if (f == 2)
            cr_assert(firn_world_save(a, path, &err) == 0, "%s", err.msg);
    }
    firn_world *b = firn_world_load(&def, FIRN_BACKEND_CPU, path, &err);
    cr_assert(b, "%s", err.msg);
    for (int f = 3; f < 6; f++)
        cr_assert(firn_world_step_frame(b, NULL, &err) == 0, "%s", err.msg);
    const size_t n = (size_t)a->pbd.n;
    cr_expect(!memcmp(a->pbd.s.x, b->pbd.s.x, 3 * n * sizeof(float)), "positions differ");
    cr_expect(!memcmp(a->pbd.s.v, b->pbd.s.v, 3 * n * sizeof(float)), "velocities differ");
    cr_expect(!memcmp(a->rigids[0].x, b->rigids[0].x, sizeof a->rigids[0].x), "sphere differs");
    firn_world_destroy(a);
    firn_world_destroy(b);
    test_rmdir(dir);
}

/* The PLY mesh: the header names the vertices and faces, the body holds
 * 26 bytes a vertex and 13 a face, and the faces are the cloth's. */
Test(pbd_output, ply_holds_vertices_and_faces)
{
    char dir[64], path[128];
    test_mkdtemp(dir, sizeof dir, "pbd_ply");
    snprintf(path, sizeof path, "%s/pbd.ply", dir);
    firn_scene_def def;
    cloth_scene(&def, 4, 3, 0.3f, 0.2f, 1, (const float[3]){0, 0.5f, 0});
    firn_world *w = make(&def);
    firn_pbd_particles_view v;
    firn_error err;
    cr_assert(firn_world_pbd_particles(w, &v, &err) == 0);
    cr_assert(firn_write_pbd_ply(path, &v, &err) == 0, "%s", err.msg);
    FILE *f = fopen(path, "rb");
    char line[256];
    long long nv = -1, nf = -1;
    while (fgets(line, sizeof line, f) && strcmp(line, "end_header\n")) {
        sscanf(line, "element vertex %lld", &nv);
        sscanf(line, "element face %lld", &nf);
    }
    const long body = ftell(f);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, body + 26 * 12, SEEK_SET);
    unsigned char cnt = 0;
    int idx[3] = {0};
    cr_assert(fread(&cnt, 1, 1, f) == 1 && fread(idx, 4, 3, f) == 3);
    fclose(f);
    cr_expect_eq(nv, 12);
    cr_expect_eq(nf, 2 * 3 * 2);
    cr_expect_eq(size - body, 26 * 12 + 13 * 12, "body of %ld bytes", size - body);
    cr_expect(cnt == 3 && !memcmp(idx, w->pbd.tri, sizeof idx), "first face %d: %d %d %d", cnt,
              idx[0], idx[1], idx[2]);
    firn_world_destroy(w);
    test_rmdir(dir);
}

/* ---- scenes and backends ----------------------------------------------------------- */

static void expect_scene_error(const char *json, const char *needle)
{
    firn_scene_def def;
    firn_error err;
    const int rc = firn_scene_parse_json(json, "t.json", &def, &err);
    cr_expect(rc == FIRN_E_SCENE, "accepted (or wrong code %d): %s", rc, json);
    cr_expect(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
}

#define CLOTH_MAT "\"materials\": {\"c\": {\"model\": \"pbd_cloth\"}}, "
#define RECT(res)                                                                                  \
    "{\"type\": \"cloth_rect\", \"center\": [0.5, 0.5, 0.5], \"size\": [0.4, 0.4], "               \
    "\"resolution\": " res "}"

Test(pbd_scene, bad_values_name_their_key)
{
    expect_scene_error("{" CLOTH_MAT "\"bodies\": [{\"material\": \"c\", \"solver\": \"pbd\", "
                       "\"shape\": " RECT("[1, 5]") "}]}",
                       "bodies[0].shape.resolution[0]");
    expect_scene_error("{" CLOTH_MAT "\"bodies\": [{\"material\": \"c\", \"solver\": \"pbd\", "
                       "\"shape\": " RECT("[5, 5]") ", \"pin\": {\"indices\": [0, 25]}}]}",
                       "bodies[0].pin.indices[1]: 25: no such vertex");
    expect_scene_error("{" CLOTH_MAT
                       "\"bodies\": [{\"material\": \"c\", \"shape\": " RECT("[5, 5]") "}]}",
                       "give the body \"solver\": \"pbd\"");
    expect_scene_error("{" CLOTH_MAT "\"bodies\": [{\"material\": \"c\", \"solver\": \"pbd\", "
                       "\"shape\": {\"type\": \"box\"}}]}",
                       "bodies[0].shape.type: a pbd_cloth body is a cloth_rect or a mesh");
    expect_scene_error(
        "{" CLOTH_MAT "\"pbd\": {\"stretch_iterations\": 0}, \"bodies\": "
        "[{\"material\": \"c\", \"solver\": \"pbd\", \"shape\": " RECT("[5, 5]") "}]}",
        "pbd.stretch_iterations = 0");
    expect_scene_error(
        "{\"materials\": {\"c\": {\"model\": \"pbd_cloth\", \"E\": 1}}, \"bodies\": "
        "[{\"material\": \"c\", \"solver\": \"pbd\", \"shape\": " RECT("[5, 5]") "}]}",
        "materials.c.E: does not apply to a pbd_cloth material");
    expect_scene_error(
        "{\"materials\": {\"c\": {\"model\": \"pbd_cloth\", \"stretch_compliance\": "
        "-1}}, \"bodies\": [{\"material\": \"c\", \"solver\": \"pbd\", \"shape\": " RECT(
            "[5, 5]") "}]}",
        "materials.c.stretch_compliance = -1: must be in [0, 1000]");
    /* An OBJ with vertices and no face. */
    char dir[64], json[1024];
    test_mkdtemp(dir, sizeof dir, "pbd_scene");
    char obj[128];
    snprintf(obj, sizeof obj, "%s/points.obj", dir);
    FILE *f = fopen(obj, "w");
    fprintf(f, "v 0 0 0\nv 1 0 0\nv 0 1 0\n");
    fclose(f);
    snprintf(
        json, sizeof json,
        "{" CLOTH_MAT "\"bodies\": [{\"material\": \"c\", \"solver\": \"pbd\", \"shape\": "
        "{\"type\": \"mesh\", \"center\": [0.5, 0.5, 0.5], \"file\": \"%s\", \"scale\": 0.2}}]}",
        obj);
    expect_scene_error(json, "has no triangles: a cloth needs faces");
    test_rmdir(dir);
}

/* A PBD world takes the backend any world takes: auto the GPU when one
 * answers, else the CPU path; cuda is refused only without a usable GPU
 * (test/test_gpu_pbd.c holds the GPU's state to the CPU's). */
Test(pbd_backend, auto_and_cuda_follow_the_device)
{
    firn_scene_def def;
    cloth_scene(&def, 5, 5, 0.4f, 0.4f, 1, (const float[3]){0, 0.5f, 0});
    firn_error err;
    const int gpu = firn_cuda_available() && firn_cuda_device_count() > 0;
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_AUTO, &err);
    cr_assert(w, "%s", err.msg);
    cr_expect_eq(firn_world_backend(w), gpu ? FIRN_BACKEND_CUDA : FIRN_BACKEND_CPU);
    firn_world_destroy(w);
    w = firn_world_create(&def, FIRN_BACKEND_CUDA, &err);
    if (gpu) {
        cr_expect(w, "--backend cuda refused a PBD world with a GPU present: %s", err.msg);
    } else {
        cr_expect_null(w);
        cr_expect_eq(err.code, FIRN_E_DEVICE);
        cr_expect(strstr(err.msg, "PBD") == NULL, "a refusal naming PBD: %s", err.msg);
    }
    firn_world_destroy(w);
}

/* ---- bending rest shape and friction ----------------------------------------------- */

/* A sheet folded at a right angle along a crease (two 0.2 x 0.2 m panels,
 * an OBJ), without gravity: its rest shape is the fold, so every bending
 * constraint starts satisfied and nothing moves (Genesis's flat rest angle
 * would unfold it). */
Test(pbd_bending, a_folded_rest_shape_is_kept)
{
    char dir[64], path[128];
    test_mkdtemp(dir, sizeof dir, "pbd_fold");
    snprintf(path, sizeof path, "%s/fold.obj", dir);
    FILE *f = fopen(path, "w");
    const int N = 5; /* vertices along each side of a panel */
    for (int i = 0; i < 2 * N - 1; i++)
        for (int j = 0; j < N; j++) {
            /* x runs up the first panel, along the crease at x = 0.2, then
             * down the second, which stands at a right angle (along y). */
            const double s = 0.2 * i / (N - 1), x = s < 0.2 ? s : 0.2, y = s < 0.2 ? 0.0 : s - 0.2;
            fprintf(f, "v %.9f %.9f %.9f\n", x, y, 0.2 * j / (N - 1));
        }
    for (int i = 0; i + 1 < 2 * N - 1; i++)
        for (int j = 0; j + 1 < N; j++) {
            const int a = i * N + j + 1, b = a + N, c = b + 1, d = a + 1;
            fprintf(f, "f %d %d %d\nf %d %d %d\n", a, b, c, a, c, d);
        }
    fclose(f);
    firn_scene_def def;
    cloth_scene(&def, 2, 2, 1, 1, 1, (const float[3]){0, 0, 0});
    def.bodies[0].shape.type = FIRN_SHAPE_MESH;
    snprintf(def.bodies[0].shape.file, sizeof def.bodies[0].shape.file, "%s", path);
    def.gravity[1] = 0.0f;
    def.materials[0].bending_compliance = 1e-3f;
    firn_world *w = make(&def);
    const int n = w->pbd.n;
    float *x0 = malloc(3 * (size_t)n * sizeof(float));
    memcpy(x0, w->pbd.s.x, 3 * (size_t)n * sizeof(float));
    substeps(w, 300, 1e-3f);
    double worst = 0.0;
    for (int k = 0; k < 3 * n; k++)
        worst = fmax(worst, fabs(w->pbd.s.x[k] - x0[k]));
    /* Rest angles are measured on the same float positions, so C starts at
     * rounding level (1e-6 rad) and moves a vertex by about that times its
     * distance to the hinge: far below 1e-5 m. */
    cr_expect(worst < 1e-5, "the fold moved by %g m", worst);
    free(x0);
    firn_world_destroy(w);
    test_rmdir(dir);
}

/* One particle on a static plane tilted by theta, released at rest at its
 * contact distance p/2: XPBD friction removes mu delta of the tangential
 * displacement per substep, delta = g cos(theta) dt^2 the depth gravity
 * drives it in, which is Coulomb's friction: above tan(theta) = mu_s it
 * slides with a = g (sin(theta) - mu_k cos(theta)), s = a T^2 / 2 (to
 * O(dt / T)), below it stays put. */
static double incline_slide(float deg, float T)
{
    firn_scene_def def;
    firn_scene_default(&def);
    for (int a = 0; a < 3; a++)
        def.lower[a] = -1.0f, def.upper[a] = 1.0f;
    def.dx = 0.1f;
    def.n_materials = 1;
    firn_material_default(&def.materials[0], FIRN_MODEL_PBD_PARTICLE);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "grain");
    def.materials[0].static_friction = 0.15f;
    def.materials[0].kinetic_friction = 0.15f;
    const double th = deg * M_PI / 180.0, p = def.pbd.particle_size;
    def.n_bodies = 1;
    firn_body_default(&def.bodies[0]);
    def.bodies[0].solver = FIRN_SOLVER_KIND_PBD;
    for (int a = 0; a < 3; a++)
        def.bodies[0].shape.size[a] = (float)p;
    /* Uphill is -x: the plane's normal n = (sin, cos, 0) tilts toward +x. */
    def.bodies[0].shape.center[0] = (float)(0.5 * p * sin(th));
    def.bodies[0].shape.center[1] = (float)(0.5 * p * cos(th));
    def.bodies[0].shape.center[2] = 0.0f;
    def.n_rigids = 1;
    firn_rigid_default(&def.rigids[0]);
    snprintf(def.rigids[0].name, FIRN_NAME_MAX, "slope");
    def.rigids[0].shape.type = FIRN_RSHAPE_PLANE;
    def.rigids[0].shape.center[0] = def.rigids[0].shape.center[1] = 0.0f;
    def.rigids[0].shape.center[2] = 0.0f;
    def.rigids[0].shape.normal[0] = (float)sin(th);
    def.rigids[0].shape.normal[1] = (float)cos(th);
    firn_world *w = make(&def);
    cr_assert_eq(w->pbd.n, 1);
    const double x0 = w->pbd.s.x[0], y0 = w->pbd.s.x[1];
    substeps(w, (int)lrintf(T / 1e-3f), 1e-3f);
    const double s = hypot(w->pbd.s.x[0] - x0, w->pbd.s.x[1] - y0);
    firn_world_destroy(w);
    return s;
}

Test(pbd_rigid, friction_on_an_incline_is_coulombs)
{
    const double g = 9.81, th = 20.0 * M_PI / 180.0, T = 0.5;
    const double want = 0.5 * g * (sin(th) - 0.15 * cos(th)) * T * T;
    const double s = incline_slide(20.0f, (float)T), rest = incline_slide(5.0f, (float)T);
    cr_log_info("incline: slid %.5f m, Coulomb %.5f m (%+.3f %%); at 5 deg %.3g m", s, want,
                100.0 * (s / want - 1.0), rest);
    /* s = a dt^2 K (K + 1) / 2 discretely: +dt / T = 0.2 % over a T^2 / 2. */
    cr_expect(fabs(s / want - 1.0) < 0.01, "20 deg: slid %.5f m in %g s, Coulomb %.5f m", s, T,
              want);
    cr_expect(rest < 1e-5, "5 deg (tan 0.087 < mu_s 0.15): moved %g m", rest);
}

/* ---- MPM-PBD --------------------------------------------------------------------- */

/* Total momentum: the MPM particles' (from their volume and material
 * density) and the PBD particles' (mass x velocity). */
static void momenta(firn_world *w, double mpm[3], double pbd[3])
{
    firn_particles_view pv;
    firn_error err;
    cr_assert(firn_world_particles(w, &pv, &err) == 0, "%s", err.msg);
    const firn_pbd *S = &w->pbd;
    for (int a = 0; a < 3; a++) {
        mpm[a] = pbd[a] = 0.0;
        for (long long i = 0; i < pv.n; i++)
            mpm[a] += (double)pv.vol[i] * w->mats[pv.mat[i]].rho * pv.v[a * pv.n + i];
        for (int i = 0; i < S->n; i++)
            pbd[a] += (double)S->s.mass[i] * S->s.v[a * S->n + i];
    }
}

/* MPM-PBD conserves momentum: without gravity, walls or air resistance, an
 * elastic cube moving at 1 m/s into a free cloth hands the cloth momentum
 * through the pair (each node gives the cloth's vertices in its box what it
 * takes from them), and MPM's transfers and the cloth's constraints keep
 * theirs, so the total stays that of the cube, to float rounding (1e-5 of
 * M v0 over 150 substeps). The pair must have acted: the cloth carries at
 * least a fifth of its share of the momentum at the cube's speed. */
Test(pbd_mpm, pair_conserves_momentum, .timeout = 120)
{
    const float c[3] = {0.0f, 0.0f, 0.0f};
    firn_scene_def def;
    cloth_scene(&def, 12, 12, 0.3f, 0.3f, 0, c);
    def.dx = 0.025f;
    def.gravity[0] = def.gravity[1] = def.gravity[2] = 0.0f;
    def.pbd.particle_size = 0.02f;
    def.materials[0].air_resistance = 0.0f;
    def.n_materials = 2;
    firn_material_default(&def.materials[1], FIRN_MODEL_ELASTIC);
    snprintf(def.materials[1].name, FIRN_NAME_MAX, "jelly");
    def.materials[1].E = 2e4f;
    def.n_bodies = 2;
    firn_body_default(&def.bodies[1]);
    firn_body_def *b = &def.bodies[1];
    b->material = 1;
    b->shape.type = FIRN_SHAPE_BOX;
    const float bc[3] = {-0.09f, 0.0f, 0.0f}, bs[3] = {0.16f, 0.16f, 0.16f};
    memcpy(b->shape.center, bc, sizeof bc);
    memcpy(b->shape.size, bs, sizeof bs);
    b->velocity[0] = 1.0f;
    firn_world *w = make(&def);
    cr_assert(w->coupler.mpm_pbd, "the MPM-PBD pair is not active");
    double m0[3], p0[3], m1[3], p1[3];
    momenta(w, m0, p0);
    const double total0 = m0[0] + p0[0];
    cr_assert_gt(total0, 0.5, "the cube's momentum %g kg m/s", total0);
    substeps(w, 150, 4e-4f);
    momenta(w, m1, p1);
    double cloth_mass = 0.0;
    for (int i = 0; i < w->pbd.n; i++)
        cloth_mass += w->pbd.s.mass[i];
    cr_log_info("MPM-PBD: momentum x MPM %.6f -> %.6f, cloth %.6f -> %.6f, total %.7f -> %.7f "
                "kg m/s",
                m0[0], m1[0], p0[0], p1[0], total0, m1[0] + p1[0]);
    for (int a = 0; a < 3; a++)
        cr_expect(fabs((m1[a] + p1[a]) - (m0[a] + p0[a])) <= 1e-5 * total0,
                  "momentum[%d]: %.9g kg m/s before, %.9g after (beyond 1e-5 of %.6g)", a,
                  m0[a] + p0[a], m1[a] + p1[a], total0);
    cr_expect_gt(p1[0], 0.2 * cloth_mass * 1.0, "the cloth gained %g kg m/s (mass %g kg)", p1[0],
                 cloth_mass);
    firn_world_destroy(w);
}

/* Air resistance is the exact solution of dv/dt = -c |v| v / m over each
 * substep, v /= 1 + c |v| dt / m: 1/|v| grows by c dt / m per substep, so a
 * cloth moving as a whole without gravity has |v| = v0 / (1 + c v0 t / m)
 * after a time t, whatever the substep, and it never reverses or grows.
 * At c = 10 kg/m on 0.64 g vertices and dt = 1 ms, c |v| dt / m is 78: the
 * explicit v -= c |v| v dt / m reversed v and grew it 77 times. */
Test(pbd_drag, air_resistance_slows_as_the_exact_solution_at_any_step)
{
    const float c0[3] = {0.0f, 0.0f, 0.0f}, v0 = 5.0f, c = 10.0f;
    const float steps[2] = {1e-4f, 1e-3f};
    for (int k = 0; k < 2; k++) {
        firn_scene_def def;
        cloth_scene(&def, 5, 5, 0.4f, 0.4f, 1, c0);
        for (int a = 0; a < 3; a++)
            def.gravity[a] = 0.0f;
        def.materials[0].density = 0.1f; /* 0.16 m^2 x 0.1 kg/m^2 / 25 vertices */
        def.materials[0].air_resistance = c;
        def.bodies[0].velocity[0] = v0;
        firn_world *w = make(&def);
        const int n = w->pbd.n, K = 10;
        substeps(w, K, steps[k]);
        /* v = (x - x0) / dt carries a float step of position, 1.5e-8 m at
         * 0.2 m, over dt: 1.5e-4 m/s at dt = 1e-4 s, 2e-3 of v there. */
        double mean = 0.0;
        const double want = v0 / (1.0 + c * w->pbd.s.w[0] * v0 * K * (double)steps[k]);
        for (int i = 0; i < n; i++) {
            cr_assert(w->pbd.s.v[i] > 0.0f && fabs(w->pbd.s.v[n + i]) < 1e-4 * v0 &&
                          fabs(w->pbd.s.v[2 * n + i]) < 1e-4 * v0,
                      "dt %g: vertex %d turned: v = (%g, %g, %g)", steps[k], i, w->pbd.s.v[i],
                      w->pbd.s.v[n + i], w->pbd.s.v[2 * n + i]);
            mean += w->pbd.s.v[i] / (double)n;
        }
        cr_expect(fabs(mean / want - 1.0) < 3e-3,
                  "dt %g: after %d substeps the mean v_x is %g m/s, not v0 / (1 + c v0 t / m) = "
                  "%g m/s",
                  steps[k], K, mean, want);
        firn_world_destroy(w);
    }
}

/* The estimate validate prints before building a cloth_rect is what the
 * built solver holds: its counts and host bytes. */
Test(pbd_rect_estimate, matches_the_built_cloth)
{
    const int res[4][2] = {{2, 2}, {6, 5}, {17, 3}, {32, 40}};
    for (int k = 0; k < 4; k++) {
        firn_scene_def def;
        cloth_scene(&def, res[k][0], res[k][1], 0.5f, 0.4f, 1, (const float[3]){0, 0, 0});
        firn_world *w = make(&def);
        firn_pbd_rect_size e;
        firn_pbd_rect_estimate(res[k][0], res[k][1], &e);
        cr_assert_eq(e.vertices, w->pbd.n, "%d x %d", res[k][0], res[k][1]);
        cr_assert_eq(e.triangles, w->pbd.triangles);
        cr_assert_eq(e.edges, w->pbd.stretch.n, "%d x %d edges", res[k][0], res[k][1]);
        cr_assert_eq(e.bends, w->pbd.bend.n, "%d x %d bends", res[k][0], res[k][1]);
        cr_assert_eq(e.host_bytes, (double)firn_pbd_host_bytes(&w->pbd), "%d x %d: %g vs %zu",
                     res[k][0], res[k][1], e.host_bytes, firn_pbd_host_bytes(&w->pbd));
        firn_world_destroy(w);
    }
}

/* The constraint lists against their definition, by brute force over the
 * vertex pairs of each body: every edge once, in (lo, hi) order, its rest
 * length the distance at rest; a bending constraint for each edge of
 * exactly two triangles, (a, b, c, d) with a -> b the edge's direction in
 * the first triangle and c, d the two triangles' third vertices. Two
 * bodies: a 7 x 5 cloth_rect and, from vertex 35, a closed fan of 40
 * triangles around a raised centre, whose 80 half-edges at the centre are
 * more than the builder sorts by insertion. */
Test(pbd_build, constraints_are_the_edges_and_inner_edges_in_order)
{
    char dir[64], path[128];
    test_mkdtemp(dir, sizeof dir, "pbd_fan");
    snprintf(path, sizeof path, "%s/fan.obj", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    const int R = 40;
    fprintf(f, "v 0 0.05 0\n");
    for (int k = 0; k < R; k++)
        fprintf(f, "v %.9f 0 %.9f\n", 0.2 * cos(2 * M_PI * k / R), 0.2 * sin(2 * M_PI * k / R));
    for (int k = 0; k < R; k++)
        fprintf(f, "f 1 %d %d\n", 2 + (k + 1) % R, 2 + k);
    fclose(f);
    firn_scene_def def;
    cloth_scene(&def, 7, 5, 0.6f, 0.4f, 1, (const float[3]){0, 0.5f, 0});
    def.n_bodies = 2;
    def.bodies[1] = def.bodies[0];
    def.bodies[1].shape.type = FIRN_SHAPE_MESH;
    def.bodies[1].shape.center[1] = -0.5f;
    snprintf(def.bodies[1].shape.file, sizeof def.bodies[1].shape.file, "%s", path);
    firn_world *w = make(&def);
    const firn_pbd *S = &w->pbd;
    cr_assert_eq(S->n, 35 + 1 + R);
    cr_assert_eq(S->triangles, 48 + R);
    const int v_range[2][2] = {{0, 35}, {35, 36 + R}}, t_range[2][2] = {{0, 48}, {48, 48 + R}};
    int ne = 0, nb = 0;
    for (int body = 0; body < 2; body++)
        for (int lo = v_range[body][0]; lo < v_range[body][1]; lo++)
            for (int hi = lo + 1; hi < v_range[body][1]; hi++) {
                int count = 0, from = -1, to = -1, opp[2] = {-1, -1};
                for (int t = t_range[body][0]; t < t_range[body][1]; t++)
                    for (int e = 0; e < 3; e++) {
                        const int a = S->tri[3 * t + e], b = S->tri[3 * t + (e + 1) % 3];
                        if ((a == lo && b == hi) || (a == hi && b == lo)) {
                            if (count == 0)
                                from = a, to = b;
                            if (count < 2)
                                opp[count] = S->tri[3 * t + (e + 2) % 3];
                            count++;
                        }
                    }
                if (count == 0)
                    continue;
                cr_assert_lt(ne, S->stretch.n, "more edges than the builder's %d", S->stretch.n);
                cr_assert(S->stretch.v[2 * ne] == lo && S->stretch.v[2 * ne + 1] == hi,
                          "edge %d is (%d, %d), want (%d, %d)", ne, S->stretch.v[2 * ne],
                          S->stretch.v[2 * ne + 1], lo, hi);
                double d2 = 0.0;
                for (int a = 0; a < 3; a++) {
                    const double d = (double)S->s.x[a * S->n + lo] - S->s.x[a * S->n + hi];
                    d2 += d * d;
                }
                cr_assert(fabs(S->stretch.rest[ne] - sqrt(d2)) <= 1e-6 * sqrt(d2),
                          "edge %d: rest %.9g, distance %.9g", ne, S->stretch.rest[ne], sqrt(d2));
                ne++;
                if (count != 2)
                    continue;
                cr_assert_lt(nb, S->bend.n, "more inner edges than the builder's %d", S->bend.n);
                const int *q = S->bend.v + 4 * nb;
                cr_assert(q[0] == from && q[1] == to && q[2] == opp[0] && q[3] == opp[1],
                          "bend %d is (%d, %d, %d, %d), want (%d, %d, %d, %d)", nb, q[0], q[1],
                          q[2], q[3], from, to, opp[0], opp[1]);
                cr_assert(isfinite(S->bend.rest[nb]), "bend %d: rest angle %g", nb,
                          S->bend.rest[nb]);
                nb++;
            }
    cr_assert_eq(ne, S->stretch.n, "%d edges by definition, %d built", ne, S->stretch.n);
    cr_assert_eq(nb, S->bend.n, "%d inner edges by definition, %d built", nb, S->bend.n);
    cr_assert_eq(ne, 6 * 5 + 7 * 4 + 6 * 4 + 2 * R, "the grid's and the fan's edges");
    cr_assert_eq(nb, ne - 2 * (6 + 4) - R, "all but the borders");
    firn_world_destroy(w);
    test_rmdir(dir);
}
