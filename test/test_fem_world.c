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
