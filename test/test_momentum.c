/* test_momentum.c - total linear and angular momentum through every
 * coupling pair over an impact, with no gravity and no wall reached: the
 * sum over all solvers (MPM particles with their APIC part, SPH, PBD and
 * FEM particles, dynamic rigid bodies with their spin) is computed here in
 * double from the state, before and after, and must not change beyond
 * float rounding (linear) or the pair's stated lever-arm error (angular).
 * Each case is a small scene at the substep its stiffest material forces
 * (hardened snow, stiff elastic, WCSPH water, explicit FEM). Tool-MPM is
 * tool_world/newtons_third_law_over_a_run (test_tool.c): a tool is
 * kinematic, so its reported impulse, not its momentum, is what the
 * material's change must match. A dynamic box hit off-centre by a single
 * particle spins as the impulse's moment says. The
 * measured drifts are tabled in docs/VALIDATION.md ("Momentum through the
 * pairs"). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "firn.h"
#include "test_util.h"
#include "world.h"

/* Total momentum P and angular momentum L about o of every solver's
 * state, and the scales that bound their float rounding: sum m |v| and
 * sum m |x - o| |v| (plus the bodies' |L|). */
typedef struct {
    double P[3], L[3], p_scale, l_scale;
    double part[6][3]; /* P of MPM, SPH, PBD, FEM, the rigid bodies */
} totals;

static void add_point(totals *t, int who, double m, const double x[3], const double v[3],
                      const double o[3])
{
    const double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]};
    const double s = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    for (int a = 0; a < 3; a++) {
        t->P[a] += m * v[a];
        t->part[who][a] += m * v[a];
    }
    t->L[0] += m * (r[1] * v[2] - r[2] * v[1]);
    t->L[1] += m * (r[2] * v[0] - r[0] * v[2]);
    t->L[2] += m * (r[0] * v[1] - r[1] * v[0]);
    t->p_scale += m * s;
    t->l_scale += m * s * sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
}

static void totals_of(firn_world *w, const double o[3], totals *t)
{
    memset(t, 0, sizeof *t);
    firn_error err;
    double x[3], v[3];
    /* MPM: m v and x x m v, plus APIC's own angular momentum: with the
     * quadratic B-spline's D = dx^2 / 4 I, P2G puts sum_i w (x_i - x_p) x
     * m C (x_i - x_p) = m dx^2 / 4 eps_abc C_cb on the grid besides
     * x_p x m v_p (Jiang et al. 2015), which G2P takes back. */
    firn_particles_view pv;
    cr_assert(firn_world_particles(w, &pv, &err) == 0, "%s", err.msg);
    const double d2 = 0.25 * (double)w->params.dx * w->params.dx;
    for (long long i = 0; i < pv.n; i++) {
        const double m = (double)pv.vol[i] * w->mats[pv.mat[i]].rho;
        for (int a = 0; a < 3; a++)
            x[a] = pv.x[a * pv.n + i], v[a] = pv.v[a * pv.n + i];
        add_point(t, 0, m, x, v, o);
        double C[9]; /* component c (row-major) of particle i at [c n + i] */
        for (int c = 0; c < 9; c++)
            C[c] = pv.C[c * pv.n + i];
        t->L[0] += m * d2 * (C[7] - C[5]);
        t->L[1] += m * d2 * (C[2] - C[6]);
        t->L[2] += m * d2 * (C[3] - C[1]);
    }
    const firn_sph *H = &w->sph;
    for (int i = 0; i < H->n; i++) {
        for (int a = 0; a < 3; a++)
            x[a] = H->s.x[a * H->n + i], v[a] = H->s.v[a * H->n + i];
        add_point(t, 1, H->mats[H->s.mat[i]].mass, x, v, o);
    }
    const firn_pbd *B = &w->pbd;
    for (int i = 0; i < B->n; i++) {
        for (int a = 0; a < 3; a++)
            x[a] = B->s.x[a * B->n + i], v[a] = B->s.v[a * B->n + i];
        add_point(t, 2, B->s.mass[i], x, v, o);
    }
    const firn_fem_vertices *V = &w->fem.V;
    for (int i = 0; i < V->n; i++) {
        for (int a = 0; a < 3; a++)
            x[a] = V->x[a * V->n + i], v[a] = V->v[a * V->n + i];
        add_point(t, 3, V->mass[i], x, v, o);
    }
    for (int k = 0; k < w->n_rigids; k++) {
        const firn_rigid *b = &w->rigids[k];
        if (b->motion != FIRN_MOTION_DYNAMIC)
            continue;
        for (int a = 0; a < 3; a++)
            x[a] = b->x[a], v[a] = b->v[a];
        add_point(t, 4, b->mass, x, v, o);
        /* The coupling's impulse on the body in the last substep (rigid_acc:
         * linear, then its moment about the centre of mass) is applied at
         * the body's next step: it is momentum in flight, counted here. */
        const double *J = w->rigid_acc + FIRN_RIGID_ACC * k;
        const double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]};
        t->L[0] += r[1] * J[2] - r[2] * J[1];
        t->L[1] += r[2] * J[0] - r[0] * J[2];
        t->L[2] += r[0] * J[1] - r[1] * J[0];
        for (int a = 0; a < 3; a++) {
            t->P[a] += J[a];
            t->part[4][a] += J[a];
            t->L[a] += b->L[a] + J[3 + a];
            t->l_scale += fabs(b->L[a]);
        }
    }
}

static firn_world *make(const char *json, firn_scene_def *def)
{
    firn_error err;
    cr_assert(firn_scene_parse_json(json, "momentum", def, &err) == 0, "%s", err.msg);
    firn_world *w = firn_world_create(def, FIRN_BACKEND_CPU, &err);
    cr_assert(w, "%s", err.msg);
    return w;
}

/* One case: a scene, its substep and count, and the pair it tests. */
typedef struct {
    const char *name, *json;
    float dt;
    int substeps;
    int from, to; /* the solvers (totals.part) the pair moves momentum between */
    int angular;  /* 1: the pair and its solvers conserve angular momentum too */
    float lever;  /* > 0: the pair takes each impulse up to this far [m] from where it gives
                     it back, so |dL| <= sum m |v| lever */
} impact;

typedef struct {
    double dp, dl;    /* max over axes |dP| / P scale, |dL| / L scale */
    double moved;     /* momentum the pair moved into `to`, / the P scale */
    double dl_abs[3]; /* the change in L [kg m^2/s] */
    double dl_norm, p_scale;
} drift;

/* Runs c about o (the centre of the domain) and returns the drifts. */
static drift run_impact(const impact *c, const double o[3])
{
    firn_scene_def def;
    firn_world *w = make(c->json, &def);
    totals t0, t1;
    totals_of(w, o, &t0);
    firn_error err;
    cr_assert(firn_world_run_substeps(w, c->substeps, c->dt, &err) == 0, "%s: %s", c->name,
              err.msg);
    totals_of(w, o, &t1);
    drift d = {0};
    double moved = 0.0;
    for (int a = 0; a < 3; a++) {
        d.dp = fmax(d.dp, fabs(t1.P[a] - t0.P[a]) / t0.p_scale);
        d.dl = fmax(d.dl, fabs(t1.L[a] - t0.L[a]) / t0.l_scale);
        d.dl_abs[a] = t1.L[a] - t0.L[a];
        const double dm = t1.part[c->to][a] - t0.part[c->to][a];
        moved += dm * dm;
    }
    d.moved = sqrt(moved) / t0.p_scale;
    d.dl_norm =
        sqrt(d.dl_abs[0] * d.dl_abs[0] + d.dl_abs[1] * d.dl_abs[1] + d.dl_abs[2] * d.dl_abs[2]);
    d.p_scale = t0.p_scale;
    cr_log_info("%s: dt %g s x %d: |dP| / sum m|v| %.2e, |dL| / sum m|r||v| %.2e (dL %.3g %.3g "
                "%.3g), moved %.3f of sum m|v|",
                c->name, c->dt, c->substeps, d.dp, d.dl, d.dl_abs[0], d.dl_abs[1], d.dl_abs[2],
                d.moved);
    firn_world_destroy(w);
    return d;
}

#define DOMAIN "\"domain\": {\"lower\": [0, 0, 0], \"upper\": [1, 1, 1], \"dx\": 0.02}, "
#define NOG    "\"gravity\": [0, 0, 0], "
#define SNOW                                                                                       \
    "\"snow\": {\"model\": \"snow\", \"E\": 1.4e5, \"nu\": 0.2, \"density\": 400, \"theta_c\": "   \
    "0.025, \"theta_s\": 0.0075, \"hardening\": 10}"
#define SNOWBALL(x, y, z, r, vx)                                                                   \
    "{\"material\": \"snow\", \"shape\": {\"type\": \"sphere\", \"center\": [" #x ", " #y ", " #z  \
    "], \"radius\": " #r "}, \"velocity\": [" #vx ", 0, 0], \"particles_per_cell\": 8}"
#define HEAP                                                                                       \
    "{\"material\": \"grain\", \"solver\": \"pbd\", \"shape\": {\"type\": \"box\", \"center\": "   \
    "[0.56, 0.5, 0.5], \"size\": [0.1, 0.1, 0.1]}}"
#define GRAIN "\"grain\": {\"model\": \"pbd_particle\", \"density\": 500}"
#define WATER "\"water\": {\"model\": \"sph_liquid\", \"density\": 1000}"
#define POOL                                                                                       \
    "{\"material\": \"water\", \"solver\": \"sph\", \"shape\": {\"type\": \"box\", \"center\": "   \
    "[0.56, 0.5, 0.5], \"size\": [0.1, 0.1, 0.1]}}"
#define JELLY "\"jelly\": {\"model\": \"fem_corotated\", \"E\": 1e5, \"nu\": 0.3, \"density\": 800}"
#define JELLY_BODY(x, vx)                                                                          \
    "{\"material\": \"jelly\", \"solver\": \"fem\", \"shape\": {\"type\": \"box\", \"center\": "   \
    "[" #x                                                                                         \
    ", 0.52, 0.5], \"size\": [0.08, 0.08, 0.08], \"cells\": [3, 3, 3]}, \"velocity\": [" #vx       \
    ", 0, 0]}"
#define BALL                                                                                       \
    "\"rigids\": [{\"name\": \"ball\", \"shape\": {\"type\": \"sphere\", \"center\": [0.465, "     \
    "0.52, 0.5], \"radius\": 0.04}, \"motion\": \"dynamic\", \"density\": 1000, \"velocity\": "    \
    "[3, 0, 0], \"friction\": 0.3}]"

/* The pairs, each over an impact off the line of centres (y 0.52 against
 * 0.5) near x = 0.5 m, where a float position is kept to 6e-8 m. */
static const impact cases[] = {
    {"MPM-PBD, snowball into a heap (hardened snow's substep)",
     "{" DOMAIN NOG "\"pbd\": {\"particle_size\": 0.02}, \"materials\": {" GRAIN ", " SNOW
     "}, \"bodies\": [" HEAP ", " SNOWBALL(0.47, 0.52, 0.5, 0.04, 4) "]}",
     3.5e-5f, 400, 0, 2, 0, 0},
    {"MPM-PBD, snowball into a frictionless heap",
     "{" DOMAIN NOG "\"pbd\": {\"particle_size\": 0.02}, \"materials\": {\"grain\": "
     "{\"model\": \"pbd_particle\", \"density\": 500, \"static_friction\": 0, "
     "\"kinetic_friction\": 0}, " SNOW "}, \"bodies\": [" HEAP
     ", " SNOWBALL(0.47, 0.52, 0.5, 0.04, 4) "]}",
     3.5e-5f, 400, 0, 2, 0, 0.0173f},
    {"MPM-PBD, stiff elastic ball into a heap",
     "{" DOMAIN NOG "\"pbd\": {\"particle_size\": 0.02}, \"materials\": {" GRAIN
     ", \"rubber\": {\"model\": \"elastic\", \"E\": 2e6, \"nu\": 0.3, \"density\": 1000}}, "
     "\"bodies\": [" HEAP ", {\"material\": \"rubber\", \"shape\": {\"type\": \"sphere\", "
     "\"center\": [0.47, 0.52, 0.5], \"radius\": 0.04}, \"velocity\": [4, 0, 0]}]}",
     5e-5f, 300, 0, 2, 0, 0},
    {"FEM-MPM, jelly block into snow",
     "{" DOMAIN NOG "\"materials\": {" JELLY ", " SNOW "}, \"bodies\": [" JELLY_BODY(
         0.465, 3) ", {\"material\": \"snow\", \"shape\": {\"type\": \"box\", \"center\": [0.56, "
                   "0.5, 0.5], "
                   "\"size\": [0.1, 0.1, 0.1]}, \"particles_per_cell\": 8}]}",
     5e-5f, 300, 3, 0, 0, 0.052f},
    {"PBD-rigid, ball into a heap",
     "{" DOMAIN NOG "\"pbd\": {\"particle_size\": 0.02}, \"materials\": {" GRAIN
     "}, \"bodies\": [" HEAP "], " BALL "}",
     5e-5f, 300, 4, 2, 0, 0},
    {"PBD-rigid, ball into a frictionless heap",
     "{" DOMAIN NOG "\"pbd\": {\"particle_size\": 0.02}, \"materials\": {\"grain\": "
     "{\"model\": \"pbd_particle\", \"density\": 500, \"static_friction\": 0, "
     "\"kinetic_friction\": 0}}, \"bodies\": [" HEAP "], " BALL "}",
     5e-5f, 300, 4, 2, 0, 3.0f * 5e-5f},
    {"FEM-rigid, ball into a jelly block",
     "{" DOMAIN NOG "\"materials\": {" JELLY "}, \"bodies\": [" JELLY_BODY(0.55, 0) "], " BALL "}",
     5e-5f, 300, 4, 3, 1, 0},
    {"MPM-rigid, ball into snow",
     "{" DOMAIN NOG "\"materials\": {" SNOW "}, \"bodies\": [{\"material\": \"snow\", \"shape\": "
     "{\"type\": \"box\", \"center\": [0.56, 0.5, 0.5], \"size\": [0.1, 0.1, 0.1]}, "
     "\"particles_per_cell\": 8}], " BALL "}",
     5e-5f, 300, 4, 0, 1, 0},
    {"MPM-SPH, snowball into water",
     "{" DOMAIN NOG "\"sph\": {\"particle_size\": 0.02}, \"materials\": {" WATER ", " SNOW
     "}, \"bodies\": [" POOL ", " SNOWBALL(0.47, 0.52, 0.5, 0.04, 4) "]}",
     5e-5f, 300, 0, 1, 0, 0.052f},
    {"FEM-SPH, jelly block into water",
     "{" DOMAIN NOG "\"sph\": {\"particle_size\": 0.02}, \"materials\": {" JELLY ", " WATER
     "}, \"bodies\": [" JELLY_BODY(0.465, 3) ", " POOL "]}",
     5e-5f, 300, 3, 1, 0, 0.035f},
    {"SPH-rigid, ball into water",
     "{" DOMAIN NOG "\"sph\": {\"particle_size\": 0.02}, \"materials\": {" WATER
     "}, \"bodies\": [" POOL "], " BALL "}",
     5e-5f, 300, 4, 1, 1, 0},
};

/* Linear momentum: every pair moves momentum between its solvers as equal
 * and opposite changes, and the solvers keep theirs (MPM's transfers, the
 * PBD contacts and constraints, SPH's symmetric pair forces, FEM's internal
 * forces, the rigid step), so the total changes by float rounding only: a
 * few ulp (6e-8) of the momenta added per particle and substep, which
 * averages to far below 1e-5 of sum m |v| over a few hundred substeps.
 * Before PBD carried its velocity (firn_pbd_move) the snowball case drifted
 * by 1.6e-2, and before SPH's viscosity was symmetric the SPH pairs by
 * 2.5e-3 to 7e-3. The pair must have acted: at least a tenth of sum m |v|
 * moved into the struck solver.
 * Angular momentum about the domain's centre: held to the same 1e-5 where
 * the pair gives each impulse back at the point it takes it from (the
 * rigid pairs: the body takes the node's, vertex's or particle's impulse
 * there, its moment included). The pairs that exchange between a particle
 * and a node or vertex a distance r apart change L by r x J per exchange,
 * so |dL| <= sum |J| r_max, and the impulses of an impact, of one sign,
 * sum to about the momentum moved, at most sum m |v|: r_max is sqrt(3)/2
 * dx for MPM-PBD (the node's box), 1.5 sqrt(3) dx for FEM-MPM (the
 * stencil) and MPM-SPH (its contact force's reaction goes to the
 * particle's stencil), sqrt(3) h / 2 for FEM-SPH (the vertex's box). PBD-rigid
 * takes the impulse at the particle's predicted position, which the
 * particle's momentum carries from its start: r_max = |v| dt. PBD particles
 * carry no spin, so their friction with each other (the heap's default
 * 0.15) removes angular momentum: those cases are held to linear
 * momentum, and frictionless twins to the bound. */
Test(momentum, linear_through_every_pair, .timeout = 120)
{
    const double o[3] = {0.5, 0.5, 0.5};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const drift d = run_impact(&cases[k], o);
        cr_expect(d.dp <= 1e-5, "%s: |dP| = %.3g of sum m |v|", cases[k].name, d.dp);
        cr_expect(d.moved >= 0.1, "%s: only %.3g of sum m |v| moved: no impact", cases[k].name,
                  d.moved);
        if (cases[k].angular)
            cr_expect(d.dl <= 1e-5, "%s: |dL| = %.3g of sum m |r| |v|", cases[k].name, d.dl);
        if (cases[k].lever > 0.0f)
            cr_expect(d.dl_norm <= d.p_scale * cases[k].lever,
                      "%s: |dL| = %.3g kg m^2/s, over sum m |v| x %g m = %.3g", cases[k].name,
                      d.dl_norm, cases[k].lever, d.p_scale * cases[k].lever);
    }
}

/* R diag(I) R^T w for the unit quaternion q (w, x, y, z), body to world. */
static void inertia_times(const float q[4], const double I[3], const double w[3], double out[3])
{
    const double a = q[0], b = q[1], c = q[2], d = q[3];
    const double R[3][3] = {{1 - 2 * (c * c + d * d), 2 * (b * c - a * d), 2 * (b * d + a * c)},
                            {2 * (b * c + a * d), 1 - 2 * (b * b + d * d), 2 * (c * d - a * b)},
                            {2 * (b * d - a * c), 2 * (c * d + a * b), 1 - 2 * (b * b + c * c)}};
    double wb[3];
    for (int i = 0; i < 3; i++) /* R^T w, scaled by the principal moment */
        wb[i] = I[i] * (R[0][i] * w[0] + R[1][i] * w[1] + R[2][i] * w[2]);
    for (int i = 0; i < 3; i++)
        out[i] = R[i][0] * wb[0] + R[i][1] * wb[1] + R[i][2] * wb[2];
}

/* A dynamic box at rest, struck off-centre by one free PBD particle
 * (frictionless, so the impulse is along the face normal), spins as the
 * impulse's moment says: summed over the substeps, with J_k the body's
 * linear momentum change M (V_k+1 - V_k) and r_k the particle's offset from
 * the centre of mass when it was taken, L = sum r_k x J_k, and the body's
 * angular velocity w must satisfy I_world w = L, I the box's closed form
 * M (b^2 + c^2) / 12 about each axis (not the solver's). Two heights and
 * two masses of the particle. Tolerance 1 %: r_k is read at the end of the
 * substep, up to |v| dt = 1.5e-4 m from where the pair took it, 0.5 % of
 * the 0.03 m lever arm. */
Test(momentum, off_centre_hit_spins_as_the_impulse_moment, .timeout = 60)
{
    const float heights[2] = {0.03f, -0.02f}, dens[2] = {8000.0f, 3000.0f};
    for (int k = 0; k < 2; k++) {
        char json[2048];
        snprintf(json, sizeof json,
                 "{" DOMAIN NOG "\"pbd\": {\"particle_size\": 0.02}, \"materials\": {\"shot\": "
                 "{\"model\": \"pbd_particle\", \"density\": %g, \"static_friction\": 0, "
                 "\"kinetic_friction\": 0}}, \"bodies\": [{\"material\": \"shot\", \"solver\": "
                 "\"pbd\", \"shape\": {\"type\": \"box\", \"center\": [0.46, %g, 0.5], \"size\": "
                 "[0.02, 0.02, 0.02]}, \"velocity\": [3, 0, 0]}], \"rigids\": [{\"name\": "
                 "\"box\", \"shape\": {\"type\": \"box\", \"center\": [0.55, 0.5, 0.5], \"size\": "
                 "[0.1, 0.1, 0.1]}, \"motion\": \"dynamic\", \"density\": 1000, \"friction\": 0}]}",
                 dens[k], 0.5 + heights[k]);
        firn_scene_def def;
        firn_world *w = make(json, &def);
        cr_assert_eq(w->pbd.n, 1, "%d PBD particles", w->pbd.n);
        const firn_rigid *b = &w->rigids[0];
        const double M = b->mass, s = 0.1, I[3] = {M * s * s / 6, M * s * s / 6, M * s * s / 6};
        double L[3] = {0, 0, 0}, J[3] = {0, 0, 0}, r[3], V[3];
        firn_error err;
        for (int step = 0; step < 600; step++) {
            for (int a = 0; a < 3; a++) {
                r[a] = w->pbd.s.x[a] - b->x[a];
                V[a] = b->v[a];
            }
            /* the body's step applies the last substep's coupling impulse,
             * taken with the particle where it is now */
            cr_assert(firn_world_run_substeps(w, 1, 5e-5f, &err) == 0, "%s", err.msg);
            double dJ[3];
            for (int a = 0; a < 3; a++) {
                dJ[a] = M * (b->v[a] - V[a]);
                J[a] += dJ[a];
            }
            L[0] += r[1] * dJ[2] - r[2] * dJ[1];
            L[1] += r[2] * dJ[0] - r[0] * dJ[2];
            L[2] += r[0] * dJ[1] - r[1] * dJ[0];
        }
        const double wv[3] = {b->w[0], b->w[1], b->w[2]};
        double Iw[3];
        inertia_times(b->q.q, I, wv, Iw);
        cr_log_info(
            "off-centre hit %d: J = (%.5g, %.5g, %.5g) N s, sum r x J = (%.4g, %.4g, %.4g), "
            "I w = (%.4g, %.4g, %.4g) kg m^2/s",
            k, J[0], J[1], J[2], L[0], L[1], L[2], Iw[0], Iw[1], Iw[2]);
        const double p0 = 3.0 * w->pbd.s.mass[0];
        cr_assert(J[0] > 0.5 * p0, "the particle did not strike: J_x %g of its %g N s", J[0], p0);
        const double Ln = sqrt(L[0] * L[0] + L[1] * L[1] + L[2] * L[2]);
        for (int a = 0; a < 3; a++)
            cr_expect(fabs(Iw[a] - L[a]) <= 1e-2 * Ln, "hit %d, axis %d: I w = %.6g, r x J = %.6g",
                      k, a, Iw[a], L[a]);
        firn_world_destroy(w);
    }
}
