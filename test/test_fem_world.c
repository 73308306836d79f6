/* test_fem_world.c - the FEM pairs in a world (host/coupler.c's FEM pass):
 * with no gravity and no wall in reach, an FEM block driven into an MPM
 * block, and a dynamic rigid sphere driven into an FEM block, keep the
 * total momentum of the two (the pairs conserve it, MPM's transfers do, the
 * FEM internal forces sum to zero), while each pair visibly moves momentum
 * from one to the other; a pair switched off lets the bodies pass. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "firn.h"
#include "test_util.h"
#include "world.h"

static firn_world *world_of(const char *single_quoted)
{
    static char buf[4096];
    size_t n = strlen(single_quoted);
    cr_assert_lt(n, sizeof buf);
    for (size_t i = 0; i <= n; i++)
        buf[i] = single_quoted[i] == '\'' ? '"' : single_quoted[i];
    firn_scene_def def;
    firn_error err = {0};
    cr_assert_eq(firn_scene_parse_json(buf, "t.json", &def, &err), 0, "%s", err.msg);
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    cr_assert(w, "%s", err.msg);
    return w;
}

static void stats_of(firn_world *w, firn_frame_stats *st)
{
    firn_error err = {0};
    cr_assert_eq(firn_world_stats(w, st, &err), 0, "%s", err.msg);
}

static void run(firn_world *w, int substeps, float dt)
{
    firn_error err = {0};
    cr_assert_eq(firn_world_run_substeps(w, substeps, dt, &err), 0, "%s", err.msg);
}

/* An FEM block at 1 m/s along x into an MPM elastic block at rest, both
 * 8 cm, in a 1 m domain. */
static const char *fem_mpm_json =
    "{'domain': {'lower': [-0.5, -0.5, -0.5], 'upper': [0.5, 0.5, 0.5], 'dx': 0.02},"
    " 'gravity': [0, 0, 0], %s"
    " 'materials': {'f': {'model': 'fem_corotated', 'E': 2e5, 'nu': 0.3, 'density': 1000},"
    "               'm': {'model': 'elastic', 'E': 2e5, 'nu': 0.3, 'density': 1000}},"
    " 'bodies': [{'material': 'f', 'solver': 'fem',"
    "   'shape': {'type': 'box', 'center': [-0.06, 0, 0], 'size': [0.08, 0.08, 0.08],"
    "             'cells': [4, 4, 4]}, 'velocity': [1, 0, 0]},"
    "  {'material': 'm', 'shape': {'type': 'box', 'center': [0.05, 0, 0],"
    "   'size': [0.08, 0.08, 0.08]}}]}";

Test(fem_world, fem_mpm_pair_conserves_momentum_and_exchanges_it, .timeout = 120)
{
    char json[4096];
    snprintf(json, sizeof json, fem_mpm_json, "");
    firn_world *w = world_of(json);
    firn_frame_stats st;
    stats_of(w, &st);
    const double p0 = st.momentum[0] + st.fem.momentum[0];
    cr_assert(p0 > 0.5, "initial momentum %g", p0); /* 0.512 kg x 1 m/s */
    /* 60 ms at 2e-4 s: the blocks meet (1 cm gap) and push apart. */
    run(w, 300, 2e-4f);
    stats_of(w, &st);
    const double p1 = st.momentum[0] + st.fem.momentum[0];
    /* Rounding: float velocities of ~1 m/s on ~2000 particles and vertices,
     * 300 substeps: well under 1e-4 of p0. */
    cr_assert(fabs(p1 - p0) < 1e-4 * p0, "momentum %.7g -> %.7g (MPM %g, FEM %g)", p0, p1,
              st.momentum[0], st.fem.momentum[0]);
    for (int a = 1; a < 3; a++)
        cr_assert(fabs(st.momentum[a] + st.fem.momentum[a]) < 1e-4 * p0, "axis %d: %g", a,
                  st.momentum[a] + st.fem.momentum[a]);
    /* The MPM block took a good part of it. */
    cr_assert(st.momentum[0] > 0.25 * p0, "MPM block's momentum %g of %g", st.momentum[0], p0);
    firn_world_destroy(w);

    /* With the pair off, the FEM block passes into the MPM block's cells
     * untouched: its momentum stays (no force but its own). */
    snprintf(json, sizeof json, fem_mpm_json, "'coupling': {'fem_mpm': false},");
    w = world_of(json);
    run(w, 300, 2e-4f);
    stats_of(w, &st);
    cr_assert(fabs(st.fem.momentum[0] - p0) < 1e-4 * p0, "uncoupled FEM momentum %g of %g",
              st.fem.momentum[0], p0);
    cr_assert(fabs(st.momentum[0]) < 1e-6, "uncoupled MPM momentum %g", st.momentum[0]);
    firn_world_destroy(w);
}

Test(fem_world, fem_rigid_pair_satisfies_newtons_third_law, .timeout = 120)
{
    firn_world *w = world_of(
        "{'domain': {'lower': [-0.5, -0.5, -0.5], 'upper': [0.5, 0.5, 0.5], 'dx': 0.05},"
        " 'gravity': [0, 0, 0],"
        " 'materials': {'f': {'model': 'fem_linear', 'E': 1e5, 'nu': 0.3, 'density': 1000}},"
        " 'bodies': [{'material': 'f', 'solver': 'fem',"
        "   'shape': {'type': 'box', 'center': [0, 0, 0], 'size': [0.1, 0.1, 0.1],"
        "             'cells': [5, 5, 5]}}],"
        " 'rigids': [{'name': 'ball', 'shape': {'type': 'sphere', 'center': [0, 0.09, 0.01],"
        "   'radius': 0.04}, 'motion': 'dynamic', 'density': 1000, 'velocity': [0, -1, 0]}]}");
    const double m = w->rigids[0].mass;
    cr_assert_gt(m, 0.2);
    firn_frame_stats st;
    stats_of(w, &st);
    const double p0 = m * st.rigids[0].velocity[1] + st.fem.momentum[1];
    run(w, 200, 2e-4f);
    stats_of(w, &st);
    const double pr = m * st.rigids[0].velocity[1], pf = st.fem.momentum[1];
    /* The ball hit the block (1 cm gap at 1 m/s) and slowed; the block took
     * what the ball lost. The coupling force reaches the ball one substep
     * later (Genesis's order), so the last substep's reaction, at most
     * |F| dt, is still in flight: that and rounding bound the mismatch. */
    const double in_flight = fabs(st.rigids[0].force[1]) * 2e-4;
    cr_assert(pr > 0.7 * p0, "ball momentum %g of %g: the block did not push back", pr, p0);
    cr_assert(pf < 0.1 * p0, "block momentum %g", pf);
    cr_assert(fabs(pr + pf - p0) < in_flight + 1e-4 * fabs(p0),
              "momentum %.7g -> ball %.7g + block %.7g = %.7g (in flight %g)", p0, pr, pf, pr + pf,
              in_flight);
    firn_world_destroy(w);
}

/* A clamped beam (0.4 x 0.04 x 0.04 m, E = 1e7 Pa, 10 x 1 x 1 cells) under
 * gravity, stepped at 20 times the explicit limit h_min / c_p: with
 * "integrator": "implicit" (backward Euler, host/fem_implicit.c) it stays
 * finite and bounded - its tip never sags past twice the static
 * Euler-Bernoulli deflection q L^4 / (8 E I), the most an undamped beam
 * released from rest reaches - while the explicit integrator at the same
 * step blows up. */
static const char *beam_json =
    "{'domain': {'lower': [-0.5, -0.5, -0.5], 'upper': [0.5, 0.5, 0.5], 'dx': 0.1},"
    " 'gravity': [0, -9.81, 0], 'time': {'force_dt': true},"
    " 'materials': {'b': {'model': 'fem_linear', 'E': 1e7, 'nu': 0, 'density': 1000}},"
    " 'bodies': [{'material': 'b', 'solver': 'fem', %s"
    "   'shape': {'type': 'box', 'lower': [0, -0.02, -0.02], 'upper': [0.4, 0.02, 0.02],"
    "             'cells': [10, 1, 1]},"
    "   'fixed': {'box': {'lower': [-1, -1, -1], 'upper': [1e-4, 1, 1]}}}]}";

/* The largest distance of a vertex from where it started over 40
 * substeps of dt, or INFINITY when the world reports a non-finite state. */
static double largest_excursion(firn_world *w, float dt)
{
    const int n = w->fem.V.n;
    float *rest = malloc(3 * (size_t)n * sizeof *rest);
    memcpy(rest, w->fem.V.x, 3 * (size_t)n * sizeof *rest);
    double worst = 0;
    firn_error err = {0};
    for (int k = 0; k < 40 && isfinite(worst); k++) {
        if (firn_world_run_substeps(w, 1, dt, &err)) {
            cr_assert_eq(err.code, FIRN_E_NUMERIC, "%s", err.msg);
            worst = INFINITY;
            break;
        }
        for (int i = 0; i < n; i++) {
            double d2 = 0;
            for (int c = 0; c < 3; c++) {
                const double d = w->fem.V.x[c * n + i] - rest[c * n + i];
                d2 += d * d;
            }
            worst = fmax(worst, isfinite(d2) ? sqrt(d2) : INFINITY);
        }
    }
    free(rest);
    return worst;
}

Test(fem_world, implicit_body_is_stable_at_20x_the_explicit_step, .timeout = 120)
{
    char json[4096];
    snprintf(json, sizeof json, beam_json, "'integrator': 'implicit',");
    firn_world *w = world_of(json);
    const float c = sqrtf(1e7f / 1000.0f), dt = 20.0f * w->fem.h_min / c;
    const double L = 0.4, a = 0.04, I = a * a * a * a / 12.0, q = 1000.0 * 9.81 * a * a;
    const double w_static = q * L * L * L * L / (8.0 * 1e7 * I);
    const double implicit = largest_excursion(w, dt);
    firn_world_destroy(w);
    /* Released from rest, an undamped beam's tip swings to twice its static
     * sag at most; backward Euler damps, so never more. */
    cr_assert(implicit < 2.0 * w_static, "implicit: largest excursion %g m, 2 w_static %g m",
              implicit, 2 * w_static);
    cr_assert(implicit > 0.3 * w_static, "implicit: the beam did not sag (%g m, w_static %g m)",
              implicit, w_static);
    snprintf(json, sizeof json, beam_json, "");
    w = world_of(json);
    const double explicit_ = largest_excursion(w, dt);
    firn_world_destroy(w);
    cr_assert(explicit_ > 10.0 * w_static,
              "the explicit beam at 20x its limit should have blown up (excursion %g m)",
              explicit_);
}

/* An implicit FEM body that is the scene's bodies[2] but the FEM's body 1
 * (bodies[0] is MPM material): a NaN velocity makes its solve's gradient
 * not finite at once, and every part of the report names it by its scene
 * key path, bodies[2], never by its index among the FEM bodies. */
Test(fem_world, failed_implicit_solve_names_the_scene_body, .timeout = 120)
{
    firn_world *w = world_of(
        "{'domain': {'lower': [-0.5, -0.5, -0.5], 'upper': [0.5, 0.5, 0.5], 'dx': 0.05},"
        " 'materials': {'f': {'model': 'fem_corotated', 'E': 1e5, 'nu': 0.3, 'density': 1000},"
        "               'm': {'model': 'elastic', 'E': 1e5, 'nu': 0.3, 'density': 1000}},"
        " 'bodies': [{'material': 'm', 'shape': {'type': 'box', 'center': [0, -0.3, 0],"
        "              'size': [0.1, 0.1, 0.1]}},"
        "  {'material': 'f', 'solver': 'fem', 'shape': {'type': 'box', 'center': [-0.2, 0.2, 0],"
        "   'size': [0.1, 0.1, 0.1], 'cells': [2, 2, 2]}},"
        "  {'material': 'f', 'solver': 'fem', 'integrator': 'implicit',"
        "   'shape': {'type': 'box', 'center': [0.2, 0.2, 0], 'size': [0.1, 0.1, 0.1],"
        "             'cells': [2, 2, 2]}}]}");
    firn_fem *S = &w->fem;
    cr_assert_eq(S->bodies, 2);
    cr_assert(!S->implicit[0] && S->implicit[1] && S->scene_body[1] == 2);
    S->V.v[S->V.n + S->v_first[1] + 3] = NAN;
    firn_error err = {0};
    cr_assert_neq(firn_world_run_substeps(w, 1, 1e-4f, &err), 0, "the run went on through a NaN");
    cr_assert_eq(err.code, FIRN_E_NUMERIC, "%s", err.msg);
    cr_assert(strstr(err.msg, "of bodies[2], material 'f'") &&
                  strstr(err.msg, "its implicit solve failed: FEM implicit: bodies[2]: the energy "
                                  "gradient is not finite after 0 Newton iterations"),
              "%s", err.msg);
    cr_assert(!strstr(err.msg, "body 1"), "%s", err.msg);
    firn_world_destroy(w);
}

/* ---- implicit bodies on the floor ------------------------------------------ */

/* An implicit column (side 0.05 m, height L = 0.2 m, 2 x 8 x 2 cells,
 * nu = 0, Young's modulus E [Pa]) standing on the floor, of wall type wall
 * (a JSON wall), run for T s at dt = k h_min / c_p (k times the explicit
 * limit). */
typedef struct {
    double com;     /* the centre of mass's drop [m] */
    double top;     /* the top face's vertices' mean drop [m] */
    double lowest;  /* the lowest vertex's y [m] */
    double kinetic; /* kinetic energy at the end [J] */
    double dt;      /* [s] */
} column_rest;

static column_rest implicit_column(const char *model, double E, const char *wall, double k,
                                   double T)
{
    char json[4096];
    const double a = 0.05, L = 0.2;
    snprintf(json, sizeof json,
             "{'domain': {'lower': [-0.2, 0, -0.2], 'upper': [0.2, 0.4, 0.2], 'dx': 0.05,"
             "   'boundary': {'y_lower': %s}},"
             " 'gravity': [0, -9.81, 0], 'time': {'force_dt': true},"
             " 'materials': {'c': {'model': '%s', 'E': %g, 'nu': 0, 'density': 1000}},"
             " 'bodies': [{'material': 'c', 'solver': 'fem', 'integrator': 'implicit',"
             "   'shape': {'type': 'box', 'lower': [%g, 0, %g], 'upper': [%g, %g, %g],"
             "             'cells': [2, 8, 2]}}]}",
             wall, model, E, -a / 2, -a / 2, a / 2, L, a / 2);
    firn_world *w = world_of(json);
    const int n = w->fem.V.n;
    uint8_t *top = calloc((size_t)n, 1);
    for (int i = 0; i < n; i++)
        top[i] = w->fem.V.x[n + i] > L - 1e-6;
    const float dt = (float)(k * w->fem.h_min / sqrt(E / 1000.0));
    run(w, (int)lround(T / dt), dt);
    firn_frame_stats st;
    stats_of(w, &st);
    column_rest r = {L / 2 - st.fem.center_of_mass[1], 0, st.fem.bbox_lower[1],
                     st.fem.kinetic_energy, dt};
    int ntop = 0;
    for (int i = 0; i < n; i++)
        if (top[i])
            r.top += L - w->fem.V.x[n + i], ntop++;
    r.top /= ntop;
    free(top);
    firn_world_destroy(w);
    return r;
}

/* The column of implicit_column under its weight, with nothing but the
 * floor to hold it: nu = 0, so sigma_yy = -rho g (L - y), u_y = -rho g (L y
 * - y^2 / 2) / E, the top drops by rho g L^2 / (2 E) and the centre of mass
 * by rho g L^2 / (3 E). With linear elements and lumped masses the top's
 * nodal value is exact in 1-D and the centre is off by the uneven lumped
 * masses of the Kuhn tets across a section (measured -0.3 % for the
 * explicit column, fem_walls/column_settles_*): 1 % is allowed for both.
 * E = 1e5 Pa (strain 2 % at the base) for both models: at this strain and
 * nu = 0 the corotated element is the linear one to first order (R = I in
 * pure compression; the lumping's small shears rotate it by ~1e-3), and
 * the column is below its self-weight buckling height 1.986 (E I / rho g
 * A)^(1/3) = 0.255 m, which at E = 2e4 Pa (0.149 m) it is not: there the
 * corotated column rightly folds. Linear also at E = 2e4 Pa (the top 9.81
 * mm). Every wall type holds the normal component the same way (with nu =
 * 0 nothing widens). dt is 2 and 20 times the explicit limit h_min / c_p;
 * backward Euler damps the first axial mode (omega dt = 0.28 at 2 times)
 * by at least 1 - 1/sqrt(1 + 0.078) per step, so 2 s (570 steps) leave
 * 1e-9 of it. Settled: the kinetic energy is below 1e-3 of the elastic
 * energy at rest, (rho g)^2 A L^3 / (6 E); the sticky floor clamps the
 * base, and the clamped column's first bending mode (12.7 rad/s at E =
 * 1e5, damped by 1e-3 per step at 2 times) still sways with 1e-4 of it.
 * Before the walls were in the solve (they acted after it, each substep
 * undoing part of the solve's step), the top of the column at E = 1e5 and
 * 20 times the limit ended 71 mm low (linear) and 194 mm low (corotated). */
Test(fem_world, implicit_column_settles_on_the_floor_by_the_closed_form, .timeout = 600)
{
    const char *models[2] = {"fem_linear", "fem_corotated"};
    const char *walls[3] = {"'separate'", "'sticky'", "'slip'"};
    const double ks[2] = {2, 20}, g = 9.81, rho = 1000, L = 0.2, a = 0.05;
    for (int c = 0; c < 13; c++) {
        const int m = c < 12 ? c / 6 : 0, k = c < 12 ? c / 3 % 2 : 1, wl = c < 12 ? c % 3 : 0;
        const double E = c < 12 ? 1e5 : 2e4;
        const column_rest r = implicit_column(models[m], E, walls[wl], ks[k], 2.0);
        const double com = rho * g * L * L / (3 * E), top = rho * g * L * L / (2 * E);
        const double elastic = rho * g * rho * g * a * a * L * L * L / (6 * E);
        cr_log_info("%s E %g, %s floor, dt %.4g s (%g x the explicit limit): centre drops %.5f "
                    "mm (closed form %.5f), top %.5f mm (%.5f), kinetic energy %.2g J",
                    models[m], E, walls[wl], r.dt, ks[k], 1e3 * r.com, 1e3 * com, 1e3 * r.top,
                    1e3 * top, r.kinetic);
        cr_expect(fabs(r.com / com - 1) < 0.01, "%s E %g, %s, %g x: centre drops %g m, not %g m",
                  models[m], E, walls[wl], ks[k], r.com, com);
        cr_expect(fabs(r.top / top - 1) < 0.01, "%s E %g, %s, %g x: top drops %g m, not %g m",
                  models[m], E, walls[wl], ks[k], r.top, top);
        cr_expect(r.kinetic < 1e-3 * elastic, "%s E %g, %s, %g x: still moving (%g J)", models[m],
                  E, walls[wl], ks[k], r.kinetic);
        cr_expect(r.lowest >= 0.0, "%s E %g, %s, %g x: a vertex at y = %g", models[m], E, walls[wl],
                  ks[k], r.lowest);
    }
}

/* A cube (0.1 m, 4 x 4 x 4 cells, E = 1e5 Pa, nu = 0.3) settled on the floor
 * for 0.3 s, then given v0 = 1.5 m/s upward: the floor must let go at once
 * (the gradient now pulls every base vertex up), and from then on no force
 * but gravity acts on the body as a whole, so backward Euler moves its
 * centre by dt (v0 - j g dt) in step j: the discrete apex rise
 * max_J sum_{j <= J} dt (v0 - j g dt) (v0^2 / 2g = 115 mm as dt -> 0).
 * Each step's Newton residual (1e-3 of m (v / dt + g)) bounds the error of
 * its centre displacement by about 1e-3 dt^2 |v / dt + g|, so 1e-3 of the
 * rise over the flight; 1 % is allowed for the settling's left-over
 * motion. The lowest vertex must leave the floor by more than half the
 * rise. At 2 and 20 times the explicit limit. A floor that held on (never
 * released) would keep the base down and the centre within the block's
 * stretch of where it was. */
Test(fem_world, implicit_block_thrown_from_the_floor_flies, .timeout = 300)
{
    const double ks[2] = {2, 20}, v0 = 1.5, g = 9.81;
    for (int k = 0; k < 2; k++) {
        firn_world *w = world_of(
            "{'domain': {'lower': [-0.2, 0, -0.2], 'upper': [0.2, 0.4, 0.2], 'dx': 0.05},"
            " 'gravity': [0, -9.81, 0], 'time': {'force_dt': true},"
            " 'materials': {'c': {'model': 'fem_corotated', 'E': 1e5, 'nu': 0.3,"
            "   'density': 1000}},"
            " 'bodies': [{'material': 'c', 'solver': 'fem', 'integrator': 'implicit',"
            "   'shape': {'type': 'box', 'lower': [-0.05, 0, -0.05], 'upper': [0.05, 0.1, 0.05],"
            "             'cells': [4, 4, 4]}}]}");
        const double cp = sqrt(1e5 * 0.7 / (1.3 * 0.4) / 1000);
        const float dt = (float)(ks[k] * w->fem.h_min / cp);
        run(w, (int)lround(0.3 / dt), dt);
        const int n = w->fem.V.n;
        for (int i = 0; i < n; i++)
            w->fem.V.v[n + i] += (float)v0;
        firn_frame_stats st;
        stats_of(w, &st);
        const double y0 = st.fem.center_of_mass[1];
        double rise = 0, lowest = 0, want = 0, sum = 0;
        for (int j = 1; sum >= 0 || j < 3; j++) {
            sum += dt * (v0 - j * g * dt);
            want = fmax(want, sum);
            run(w, 1, dt);
            stats_of(w, &st);
            rise = fmax(rise, st.fem.center_of_mass[1] - y0);
            lowest = fmax(lowest, st.fem.bbox_lower[1]);
        }
        cr_log_info("thrown at %g x the explicit limit (dt %.4g s): centre rises %.2f mm (discrete "
                    "closed form %.2f mm), lowest vertex up to %.2f mm",
                    ks[k], dt, 1e3 * rise, 1e3 * want, 1e3 * lowest);
        cr_expect(fabs(rise / want - 1) < 0.01, "%g x: the centre rose %g m, not %g m", ks[k], rise,
                  want);
        cr_expect(lowest > 0.5 * want, "%g x: the base rose only %g m", ks[k], lowest);
        firn_world_destroy(w);
    }
}

/* Submerged volume of a sphere of radius R to depth d (a cap) [m^3]. */
static double sphere_cap(double R, double d)
{
    d = fmax(0.0, fmin(2.0 * R, d));
    return M_PI * d * d * (3.0 * R - d) / 3.0;
}

/* Archimedes through the FEM-SPH pair: an FEM ball (radius 5 cm, stable
 * Neo-Hookean, E = 2e5 Pa, 6 cells across) of density 500 dropped on a
 * 0.2 x 0.2 m DFSPH pool 0.08 m deep (p = 0.015 m) floats with half its
 * volume under the water level. The level is where the pool's
 * cross-section holds the liquid's volume (mass / mean density) plus the
 * ball's submerged volume (docs/VALIDATION.md, "MPM and FEM bodies"). The
 * fraction, averaged over 0.7-0.9 s, must be within 0.1 of 0.5: the
 * measured 0.49-0.51 (the same ball on a 0.3 m pool) leaves room for the free surface's
 * pressure offset of about h / 3 (rigid bodies float up to 20 % high from
 * it) and the ball's last bob; Genesis's contact box, which held the water
 * a particle radius off the ball, gave 0.24 at 0.8 s. */
Test(fem_world, fem_ball_floats_at_archimedes_depth_on_dfsph, .timeout = 300)
{
    const double L = 0.2, R = 0.05;
    firn_world *w = world_of(
        "{'domain': {'lower': [0, 0, 0], 'upper': [0.2, 0.24, 0.2], 'dx': 0.02},"
        " 'gravity': [0, -9.81, 0], 'time': {'frame_dt': 0.02, 'frames': 45},"
        " 'sph': {'particle_size': 0.015}, 'fem': {'damping': 2},"
        " 'materials': {'w': {'model': 'sph_liquid', 'density': 1000,"
        "                     'pressure_solver': 'dfsph'},"
        "               'b': {'model': 'fem_stable_neohookean', 'E': 2e5, 'nu': 0.3,"
        "                     'density': 500}},"
        " 'bodies': [{'material': 'w', 'solver': 'sph',"
        "             'shape': {'type': 'box', 'lower': [0, 0, 0], 'upper': [0.2, 0.08, 0.2]}},"
        "            {'material': 'b', 'solver': 'fem',"
        "             'shape': {'type': 'sphere', 'center': [0.1, 0.14, 0.1], 'radius': 0.05,"
        "                       'cells': 6}}]}");
    firn_frame_stats st;
    firn_error err = {0};
    double sum = 0.0;
    int n = 0;
    for (int f = 1; f <= 45; f++) {
        cr_assert_eq(firn_world_step_frame(w, &st, &err), 0, "%s", err.msg);
        if (f <= 35)
            continue;
        const double bottom = st.fem.center_of_mass[1] - R;
        const double V = st.sph.mass / st.sph.mean_density;
        double level = V / (L * L);
        for (int it = 0; it < 60; it++)
            level = (V + sphere_cap(R, level - bottom)) / (L * L);
        sum += sphere_cap(R, level - bottom) / (4.0 / 3.0 * M_PI * R * R * R);
        n++;
    }
    const double frac = sum / n;
    cr_log_info("FEM ball of 0.5 on DFSPH: submerged fraction %.3f over 0.7-0.9 s", frac);
    cr_assert(fabs(frac - 0.5) < 0.1, "submerged fraction %.3f, Archimedes 0.5", frac);
    firn_world_destroy(w);
}
