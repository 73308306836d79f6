/* test_reference.c - the optimised shared transfers (firn_p2g_particle,
 * firn_g2p_particle) against the textbook ones of include/firn_reference.h,
 * two independent codings of docs/PHYSICS.md section 2, on the same random
 * particles; and textbook invariants of the reference itself. Everything
 * is float on both sides, so they agree to rounding, not bitwise: the
 * optimised bodies reorder the sums (about the middle node, first moments). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "firn_mpm.h"
#include "firn_reference.h"

#define NP    600
#define E_MOD 5e6 /* Pa: with F = I +- 0.05 and C ~ 10/s the stress term of the scatter is */
#define NU    0.3 /* as large as m C and m v, so a wrong sign in either shows */
#define RHO   1000.0f

/* A grid of unequal sides away from the origin, so a swapped axis or a
 * dropped lower corner shows. */
static const int GN[3] = {12, 10, 11};
static const float LOWER[3] = {-0.3f, 0.2f, 0.05f};
static const float DX = 0.1f, DT = 1e-4f;

static uint64_t rng_state;
static float frand(float lo, float hi)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (float)(rng_state >> 40) / 16777216.0f;
}

/* The same state twice: firn's structure of arrays and its grid, and the
 * reference's rows and separate grid arrays. */
typedef struct {
    firn_params P;
    firn_material mat;
    firn_particles p;
    firn_grid g;
    float x[NP][3], v[NP][3], C[NP][9], F[NP][9], mass[NP], vol[NP];
    firn_ref_particles rp;
    firn_ref_grid rg;
} setup;

static setup *make_setup(uint64_t seed)
{
    setup *s = calloc(1, sizeof *s);
    cr_assert(s);
    rng_state = seed;
    firn_params *P = &s->P;
    P->dt = DT;
    P->dx = DX;
    P->inv_dx = 1.0f / DX;
    for (int a = 0; a < 3; a++) {
        P->lower[a] = LOWER[a];
        P->n[a] = GN[a];
        P->x_min[a] = LOWER[a] + DX; /* as firn_params_build */
        P->x_max[a] = LOWER[a] + (float)(GN[a] - 2) * DX;
    }
    s->mat.model = FIRN_M_ELASTIC;
    s->mat.law = FIRN_L_COROTATED;
    s->mat.mu = (float)(E_MOD / (2.0 * (1.0 + NU)));
    s->mat.lambda = (float)(E_MOD * NU / ((1.0 + NU) * (1.0 - 2.0 * NU)));
    s->mat.rho = RHO;

    const int n = NP;
    firn_particles *p = &s->p;
    p->n = n;
    p->x = calloc(3 * n, sizeof(float));
    p->v = calloc(3 * n, sizeof(float));
    p->C = calloc(9 * n, sizeof(float));
    p->F = calloc(9 * n, sizeof(float));
    p->Jp = calloc(n, sizeof(float));
    p->damage = calloc(n, sizeof(float));
    p->vol = calloc(n, sizeof(float));
    p->mat = calloc(n, sizeof(uint8_t));
    s->g.nodes = (long long)GN[0] * GN[1] * GN[2];
    memcpy(s->g.n, GN, sizeof GN);
    s->g.node = calloc(4 * s->g.nodes, sizeof(float));
    s->rg = (firn_ref_grid){{GN[0], GN[1], GN[2]},
                            {LOWER[0], LOWER[1], LOWER[2]},
                            DX,
                            calloc(s->g.nodes, sizeof(float)),
                            calloc(s->g.nodes, sizeof(float[3]))};
    cr_assert(p->x && p->v && p->C && p->F && p->Jp && p->damage && p->vol && p->mat && s->g.node &&
              s->rg.m && s->rg.mv);

    for (int i = 0; i < n; i++) {
        for (int a = 0; a < 3; a++) {
            s->x[i][a] = frand(P->x_min[a], P->x_max[a]);
            s->v[i][a] = frand(-1.0f, 1.0f);
        }
        for (int c = 0; c < 9; c++) {
            s->C[i][c] = frand(-10.0f, 10.0f);
            s->F[i][c] = (c % 4 == 0 ? 1.0f : 0.0f) + frand(-0.05f, 0.05f);
        }
        s->vol[i] = frand(0.5f, 1.5f) * DX * DX * DX / 8.0f;
        s->mass[i] = s->vol[i] * RHO; /* as firn_p2g_finish */
        p->Jp[i] = 1.0f;
    }
    /* Six particles on the clamp's faces, moving out, for G2P's clamp. */
    for (int a = 0; a < 3; a++) {
        s->x[2 * a][a] = P->x_min[a];
        s->x[2 * a + 1][a] = P->x_max[a];
    }
    for (int i = 0; i < n; i++) {
        for (int a = 0; a < 3; a++) {
            p->x[a * n + i] = s->x[i][a];
            p->v[a * n + i] = s->v[i][a];
        }
        for (int c = 0; c < 9; c++) {
            p->C[c * n + i] = s->C[i][c];
            p->F[c * n + i] = s->F[i][c];
        }
        p->vol[i] = s->vol[i];
    }
    s->rp = (firn_ref_particles){n, s->x, s->v, s->C, s->F, s->mass, s->vol};
    return s;
}

static void free_setup(setup *s)
{
    free(s->p.x);
    free(s->p.v);
    free(s->p.C);
    free(s->p.F);
    free(s->p.Jp);
    free(s->p.damage);
    free(s->p.vol);
    free(s->p.mat);
    free(s->g.node);
    free(s->rg.m);
    free(s->rg.mv);
    free(s);
}

/* Expects |opt[k] - ref[k]| <= atol + rtol |ref[k]| for every k; logs the
 * worst element (largest error over its allowance), and names it on failure. */
static void expect_close(const char *what, const float *opt, int opt_stride, const float *ref,
                         int ref_stride, long long count, double atol, double rtol)
{
    long long worst = 0;
    double worst_ratio = -1.0, max_err = 0.0;
    for (long long k = 0; k < count; k++) {
        double o = opt[k * opt_stride], r = ref[k * ref_stride], err = fabs(o - r);
        double ratio = isnan(err) ? INFINITY : err / (atol + rtol * fabs(r));
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst = k;
        }
        if (err > max_err || isnan(err))
            max_err = err;
    }
    const double o = opt[worst * opt_stride], r = ref[worst * ref_stride];
    cr_log_info("%s: max |opt - ref| %.3g; worst at element %lld: opt %.9g, ref %.9g, %.3g of "
                "the tolerance %.3g + %.3g |ref|",
                what, max_err, worst, o, r, worst_ratio, atol, rtol);
    cr_expect(worst_ratio <= 1.0,
              "%s: element %lld: optimised %.9g, reference %.9g, |diff| %.3g > %.3g + %.3g |ref|",
              what, worst, o, r, fabs(o - r), atol, rtol);
}

static double max_abs(const float *a, int stride, long long count)
{
    double m = 0.0;
    for (long long k = 0; k < count; k++)
        m = fmax(m, fabs(a[k * stride]));
    return m;
}

/* Both P2Gs from the same particles, then grid mass and momentum and the
 * particles' new F compared. A node's momentum sums about a dozen terms as
 * large as the largest node momentum, which cancel: 1e-5 of that plus 1e-5
 * relative (measured worst 4.7e-7 of 1.9e-6). Mass: the same weights in the
 * same order, 1e-6 (measured 0). F: 1e-6 (measured 2.4e-7). */
Test(reference, p2g_matches_the_optimised_body)
{
    setup *s = make_setup(0x5eed0001ULL);
    for (int i = 0; i < NP; i++)
        firn_p2g_particle(i, &s->P, &s->mat, s->p, s->g);
    firn_ref_p2g(s->rp, s->mat.mu, s->mat.lambda, DT, s->rg);

    const long long nodes = s->g.nodes;
    cr_assert_gt(max_abs(s->rg.m, 1, nodes), 0.0);
    const double mom = max_abs(&s->rg.mv[0][0], 1, 3 * nodes);
    expect_close("grid mass", s->g.node + 3, 4, s->rg.m, 1, nodes,
                 1e-6 * max_abs(s->rg.m, 1, nodes), 1e-6);
    for (int d = 0; d < 3; d++) {
        char what[32];
        snprintf(what, sizeof what, "grid momentum %c", "xyz"[d]);
        expect_close(what, s->g.node + d, 4, &s->rg.mv[0][d], 3, nodes, 1e-5 * mom, 1e-5);
    }
    for (int c = 0; c < 9; c++) {
        char what[32];
        snprintf(what, sizeof what, "F[%d]", c);
        expect_close(what, s->p.F + c * NP, 1, &s->F[0][c], 9, NP, 1e-6, 1e-6);
    }
    free_setup(s);
}

/* Both G2Ps from the same random grid velocities (|v_node| <= 1 m/s), then
 * v, C and x compared. v is a weighted mean: 1e-6 (measured 1.8e-7). C's
 * sums cancel to about 4/dx times the node speeds: 1e-6 of that, 4e-5
 * (measured 3.8e-6). x moves by dt v from about 1 m: 1e-6 (measured 0). */
Test(reference, g2p_matches_the_optimised_body)
{
    setup *s = make_setup(0x5eed0002ULL);
    const long long nodes = s->g.nodes;
    for (long long k = 0; k < nodes; k++)
        for (int d = 0; d < 3; d++)
            s->g.node[4 * k + d] = s->rg.mv[k][d] = frand(-1.0f, 1.0f);
    for (int i = 0; i < NP; i++)
        cr_assert_eq(firn_g2p_particle(i, &s->P, s->p, s->g), 0);
    firn_ref_g2p(s->rp, DT, s->rg);

    for (int d = 0; d < 3; d++) {
        char what[32];
        snprintf(what, sizeof what, "v[%d]", d);
        expect_close(what, s->p.v + d * NP, 1, &s->v[0][d], 3, NP, 1e-6, 1e-6);
        snprintf(what, sizeof what, "x[%d]", d);
        expect_close(what, s->p.x + d * NP, 1, &s->x[0][d], 3, NP, 1e-6, 1e-6);
    }
    for (int c = 0; c < 9; c++) {
        char what[32];
        snprintf(what, sizeof what, "C[%d]", c);
        expect_close(what, s->p.C + c * NP, 1, &s->C[0][c], 9, NP, 1e-6 * 4.0 / DX, 1e-5);
    }
    /* The clamp held the six particles on its faces. */
    for (int a = 0; a < 3; a++) {
        cr_expect_geq(s->x[2 * a][a], s->P.x_min[a]);
        cr_expect_leq(s->x[2 * a + 1][a], s->P.x_max[a]);
    }
    free_setup(s);
}

/* Reference P2G conserves mass and momentum: the weights sum to 1 and
 * sum w dpos = 0, so the stress and affine terms scatter no net momentum.
 * Sums in double; the allowance is 1e-6 of what was scattered,
 * sum_p m |v| + 1.5 dx |A|_1 (|dpos| <= 1.5 dx per axis): 8e-4 here
 * (measured 1.9e-7); mass to 1e-6 relative (measured 9e-9). */
Test(reference, p2g_conserves_mass_and_momentum)
{
    setup *s = make_setup(0x5eed0003ULL);
    firn_ref_p2g(s->rp, s->mat.mu, s->mat.lambda, DT, s->rg);

    double m_p = 0.0, p_p[3] = {0.0}, scale = 0.0;
    for (int i = 0; i < NP; i++) {
        float stress[9];
        firn_ref_corotated_stress(s->F[i], s->mat.mu, s->mat.lambda, stress);
        double A1 = 0.0;
        for (int c = 0; c < 9; c++)
            A1 += fabs(-DT * s->vol[i] * 4.0 / (DX * DX) * stress[c] + s->mass[i] * s->C[i][c]);
        m_p += s->mass[i];
        for (int d = 0; d < 3; d++) {
            p_p[d] += (double)s->mass[i] * s->v[i][d];
            scale += s->mass[i] * fabs(s->v[i][d]);
        }
        scale += 1.5 * DX * A1;
    }
    double m_g = 0.0, p_g[3] = {0.0};
    for (long long k = 0; k < s->g.nodes; k++) {
        m_g += s->rg.m[k];
        for (int d = 0; d < 3; d++)
            p_g[d] += s->rg.mv[k][d];
    }
    cr_log_info(
        "mass: grid - particles %.3g of %.6g; momentum error %.3g %.3g %.3g, allowance %.3g",
        m_g - m_p, m_p, p_g[0] - p_p[0], p_g[1] - p_p[1], p_g[2] - p_p[2], 1e-6 * scale);
    cr_expect(fabs(m_g - m_p) <= 1e-6 * m_p, "mass: grid %.9g, particles %.9g", m_g, m_p);
    for (int d = 0; d < 3; d++)
        cr_expect(fabs(p_g[d] - p_p[d]) <= 1e-6 * scale,
                  "momentum %c: grid %.9g, particles %.9g, allowance %.3g", "xyz"[d], p_g[d],
                  p_p[d], 1e-6 * scale);
    free_setup(s);
}

/* Reference G2P of a linear grid velocity u + A (x_node - x0) gives each
 * particle v = u + A (x - x0) and C = A exactly (APIC, Jiang et al. 2015:
 * the quadratic B-spline's weights reproduce linear functions and its
 * second moment is dx^2/4 I). References in double; v to 1e-6 of the
 * largest node speed (measured 9.4e-7 of 5.2e-6), C to 1e-6 of 4/dx times
 * it, as C's sum cancels (measured 9.1e-6 of 2.1e-4). */
Test(reference, g2p_reproduces_a_linear_velocity_field)
{
    setup *s = make_setup(0x5eed0004ULL);
    const double u[3] = {0.7, -1.3, 0.4}, x0[3] = {0.2, 0.6, 0.5};
    double A[9];
    for (int c = 0; c < 9; c++)
        A[c] = frand(-5.0f, 5.0f);
    double vmax = 0.0;
    for (int i = 0; i < GN[0]; i++)
        for (int j = 0; j < GN[1]; j++)
            for (int k = 0; k < GN[2]; k++) {
                const double xn[3] = {LOWER[0] + i * (double)DX, LOWER[1] + j * (double)DX,
                                      LOWER[2] + k * (double)DX};
                float *gv = s->rg.mv[((long long)i * GN[1] + j) * GN[2] + k];
                for (int r = 0; r < 3; r++) {
                    double val = u[r];
                    for (int q = 0; q < 3; q++)
                        val += A[3 * r + q] * (xn[q] - x0[q]);
                    gv[r] = (float)val;
                    vmax = fmax(vmax, fabs(val));
                }
            }
    double x_before[NP][3];
    for (int i = 0; i < NP; i++)
        for (int d = 0; d < 3; d++)
            x_before[i][d] = s->x[i][d];
    firn_ref_g2p(s->rp, DT, s->rg);

    const double tol_v = 1e-6 * vmax, tol_C = 1e-6 * 4.0 / DX * vmax;
    double err_v = 0.0, err_C = 0.0;
    int at_v = 0, at_C = 0; /* the worst element, particle * 9 + component */
    for (int i = 0; i < NP; i++) {
        for (int r = 0; r < 3; r++) {
            double want = u[r];
            for (int q = 0; q < 3; q++)
                want += A[3 * r + q] * (x_before[i][q] - x0[q]);
            const double e = fabs(s->v[i][r] - want);
            if (!(e <= err_v)) {
                err_v = isnan(e) ? INFINITY : e;
                at_v = 9 * i + r;
            }
        }
        for (int c = 0; c < 9; c++) {
            const double e = fabs(s->C[i][c] - A[c]);
            if (!(e <= err_C)) {
                err_C = isnan(e) ? INFINITY : e;
                at_C = 9 * i + c;
            }
        }
    }
    cr_log_info("linear field: max |v - want| %.3g (tolerance %.3g), max |C - A| %.3g (%.3g)",
                err_v, tol_v, err_C, tol_C);
    cr_expect(err_v <= tol_v, "particle %d: v[%d] %.9g, error %.3g > %.3g", at_v / 9, at_v % 9,
              s->v[at_v / 9][at_v % 9], err_v, tol_v);
    cr_expect(err_C <= tol_C, "particle %d: C[%d] %.9g, want %.9g, error %.3g > %.3g", at_C / 9,
              at_C % 9, s->C[at_C / 9][at_C % 9], A[at_C % 9], err_C, tol_C);
    free_setup(s);
}
