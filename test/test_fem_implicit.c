/* test_fem_implicit.c - implicit backward Euler for FEM bodies
 * (include/firn_fem_implicit.h, host/fem_implicit.c): element Hessians
 * against finite differences of the stress and of the vertex forces, their
 * projection, the conjugate gradient solve against a dense direct solve,
 * agreement with an explicit integrator written here at a small step,
 * convergence and dissipation at 20 times the explicit limit, and the
 * static deflection of a cantilever against Euler-Bernoulli. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fem_implicit.h"

static double frand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (*s >> 8) / 16777216.0 * 2.0 - 1.0;
}

static firn_fem_material material(int model, double E, double nu)
{
    firn_fem_material m = {model, (float)(E / (2 * (1 + nu))),
                           (float)(E * nu / ((1 + nu) * (1 - 2 * nu))), 1000.0f};
    return m;
}

/* One body: a box of n cells on [lo, hi], material m. Vertices with
 * x <= xfix are fixed (none when xfix < lo[0]). */
static void build_box(firn_fem *S, const double lo[3], const double hi[3], const int n[3],
                      firn_fem_material m, double xfix)
{
    firn_tet_mesh mesh;
    firn_error err;
    memset(S, 0, sizeof *S);
    cr_assert_eq(firn_tet_mesh_box(lo, hi, n, &mesh, &err), 0, "%s", err.msg);
    S->mats[0] = m;
    const int mat = 0;
    cr_assert_eq(firn_fem_build(S, &mesh, &mat, 1, &err), 0, "%s", err.msg);
    firn_tet_mesh_free(&mesh);
    for (int i = 0; i < S->V.n; i++)
        S->V.fixed[i] = S->V.x[i] <= xfix + 1e-9;
}

static const char *model_name[] = {"linear", "corotated", "stable Neo-Hookean"};

/* ---- Hessians ------------------------------------------------------------ */

/* dP = H : dF against the central difference (P(F + h dF) - P(F - h dF)) /
 * 2h of firn_fem_stress, for the unprojected Hessian of every model at
 * random F (rotated, stretched and compressed by up to 30 %). h = 1e-3:
 * the truncation error is O(h^2) ~ 1e-6 relative, the rounding of P in
 * float eps |P| / (h |dP|) ~ 1e-7 * 1 / 1e-3 = 1e-4; tolerance 2e-3. */
Test(fem_implicit, hessian_matches_stress_differences)
{
    unsigned seed = 7;
    for (int model = 0; model < 3; model++) {
        const firn_fem_material m = material(model, 1e6, 0.3);
        double worst = 0;
        for (int trial = 0; trial < 40; trial++) {
            firn_mat3 A, dF;
            for (int k = 0; k < 9; k++)
                A.m[k] = (float)((k % 4 == 0) + 0.3 * frand(&seed)), dF.m[k] = (float)frand(&seed);
            /* a rotation about a random axis times A */
            const float t = (float)(3.0 * frand(&seed));
            const firn_mat3 R = {{cosf(t), -sinf(t), 0, sinf(t), cosf(t), 0, 0, 0, 1}};
            const firn_mat3 F = firn_m3_mul(R, A);
            if (firn_m3_det(F) < 0.2f)
                continue;
            const firn_fem_hess h = firn_fem_hessian(&m, F, 0);
            const firn_mat3 dP = firn_fem_hess_apply(&h, dF);
            const double step = 1e-3;
            firn_mat3 Fp, Fm;
            for (int k = 0; k < 9; k++)
                Fp.m[k] = F.m[k] + (float)step * dF.m[k], Fm.m[k] = F.m[k] - (float)step * dF.m[k];
            const firn_mat3 Pp = firn_fem_stress(&m, Fp), Pm = firn_fem_stress(&m, Fm);
            double num = 0, den = 0;
            for (int k = 0; k < 9; k++) {
                const double fd = ((double)Pp.m[k] - Pm.m[k]) / (2 * step);
                num += (dP.m[k] - fd) * (dP.m[k] - fd), den += fd * fd;
            }
            const double rel = sqrt(num / den);
            worst = fmax(worst, rel);
            cr_assert_lt(rel, 2e-3, "%s: |H:dF - finite difference| / |fd| = %g at trial %d",
                         model_name[model], rel, trial);
        }
        cr_log_info("%s: worst relative error of H:dF %.2g", model_name[model], worst);
    }
}

/* The element Hessian-vector product assembled per vertex (slots and
 * gather) against central differences of the vertex forces
 * (firn_fem_element_forces + firn_fem_gather_force) of a randomly deformed
 * 2 x 2 x 2-cell box, displacement step 1e-3 of the 5 cm cells' size: the
 * position rounding (ulp 4e-9 m at 0.1 m) is 1e-4 of the step; tolerance
 * 2e-3. */
Test(fem_implicit, hessian_vector_product_matches_force_differences)
{
    const double lo[3] = {0, 0, 0}, hi[3] = {0.1, 0.1, 0.1};
    const int n[3] = {2, 2, 2};
    unsigned seed = 11;
    for (int model = 0; model < 3; model++) {
        firn_fem S;
        build_box(&S, lo, hi, n, material(model, 1e6, 0.3), -1);
        const int nv = S.V.n, ne = S.E.n;
        for (int k = 0; k < 3 * nv; k++)
            S.V.x[k] += (float)(0.008 * frand(&seed));
        float *H = calloc((size_t)FIRN_FEM_HESS_FLOATS * ne, sizeof *H);
        float *slot = calloc(12 * (size_t)ne, sizeof *slot), *p = calloc(3 * (size_t)nv, 4);
        float *xp = calloc(3 * (size_t)nv, 4), *xm = calloc(3 * (size_t)nv, 4);
        double *fp = calloc(3 * (size_t)nv, 8);
        for (int e = 0; e < ne; e++) {
            const firn_fem_hess h = firn_fem_hessian(&S.mats[0], firn_fem_F(&S.E, S.V.x, nv, e), 0);
            firn_fem_hess_store(H, ne, e, &h);
        }
        const double step = 5e-5;
        for (int k = 0; k < 3 * nv; k++) {
            p[k] = (float)frand(&seed);
            xp[k] = S.V.x[k] + (float)step * p[k], xm[k] = S.V.x[k] - (float)step * p[k];
        }
        for (int sgn = 0; sgn < 2; sgn++) {
            for (int e = 0; e < ne; e++)
                firn_fem_element_forces(e, S.mats, &S.E, sgn ? xm : xp, nv);
            for (int i = 0; i < nv; i++) {
                const firn_vec3 f = firn_fem_gather_force(i, &S.V, &S.E);
                for (int c = 0; c < 3; c++)
                    fp[c * nv + i] += (sgn ? 1 : -1) * f.v[c] / (2 * step); /* -df/dx p */
            }
        }
        for (int e = 0; e < ne; e++)
            firn_fem_implicit_element_Ap(e, &S.E, H, p, nv, slot);
        double num = 0, den = 0;
        for (int i = 0; i < nv; i++) {
            const firn_vec3 a = firn_fem_gather_slots(i, &S.V, slot, ne);
            for (int c = 0; c < 3; c++) {
                const double d = a.v[c] - fp[c * nv + i];
                num += d * d, den += fp[c * nv + i] * fp[c * nv + i];
            }
        }
        const double rel = sqrt(num / den);
        cr_log_info("%s: |K p - (f(x - hp) - f(x + hp))/2h| / |.| = %.2g", model_name[model], rel);
        cr_assert_lt(rel, 2e-3, "%s: K p against finite differences of the forces: %g",
                     model_name[model], rel);
        free(H), free(slot), free(p), free(xp), free(xm), free(fp);
        firn_fem_free(&S);
    }
}

/* Projection: where the Hessian is positive definite (stable Neo-Hookean
 * stretched 20 %) projecting changes nothing; compressed to half its
 * volume it has negative twist eigenvalues (mu_t + lambda' (J - alpha) s_k
 * < 0), and the projected one gives dF : H : dF >= 0 for every dF, while
 * the unprojected one is negative for some. */
Test(fem_implicit, neo_hookean_projection)
{
    const firn_fem_material m = material(FIRN_FEM_STABLE_NEOHOOKEAN, 1e6, 0.3);
    unsigned seed = 3;
    const firn_mat3 Fs = firn_m3_diag(1.2f, 1.15f, 1.25f), Fc = firn_m3_diag(0.8f, 0.75f, 0.85f);
    const firn_fem_hess a = firn_fem_hessian(&m, Fs, 0), b = firn_fem_hessian(&m, Fs, 1);
    for (int k = 0; k < 6; k++)
        cr_assert_float_eq(a.A[k], b.A[k], 1e-6f * fabsf(a.A[0]), "A[%d]", k);
    for (int k = 0; k < 3; k++)
        cr_assert(a.twist[k] > 0 && a.twist[k] == b.twist[k] && a.flip[k] == b.flip[k]);
    const firn_fem_hess c = firn_fem_hessian(&m, Fc, 0), d = firn_fem_hessian(&m, Fc, 1);
    int negative = 0;
    for (int trial = 0; trial < 200; trial++) {
        firn_mat3 dF;
        for (int k = 0; k < 9; k++)
            dF.m[k] = (float)frand(&seed);
        const firn_mat3 Pc = firn_fem_hess_apply(&c, dF), Pd = firn_fem_hess_apply(&d, dF);
        double qc = 0, qd = 0, n2 = 0;
        for (int k = 0; k < 9; k++)
            qc += Pc.m[k] * dF.m[k], qd += Pd.m[k] * dF.m[k], n2 += dF.m[k] * dF.m[k];
        negative += qc < 0;
        cr_assert_geq(qd, -1e-5 * m.mu * n2, "projected dF:H:dF = %g at trial %d", qd, trial);
    }
    cr_assert_gt(negative, 0, "the compressed Hessian should be indefinite");
}

/* ---- the linear solve ---------------------------------------------------- */

/* Gaussian elimination with partial pivoting, in place: A x = b (n x n). */
static void dense_solve(double *A, double *b, int n)
{
    for (int k = 0; k < n; k++) {
        int piv = k;
        for (int i = k + 1; i < n; i++)
            if (fabs(A[i * n + k]) > fabs(A[piv * n + k]))
                piv = i;
        for (int j = 0; j < n; j++) {
            const double t = A[k * n + j];
            A[k * n + j] = A[piv * n + j], A[piv * n + j] = t;
        }
        const double t = b[k];
        b[k] = b[piv], b[piv] = t;
        for (int i = k + 1; i < n; i++) {
            const double f = A[i * n + k] / A[k * n + k];
            for (int j = k; j < n; j++)
                A[i * n + j] -= f * A[k * n + j];
            b[i] -= f * b[k];
        }
    }
    for (int k = n - 1; k >= 0; k--) {
        for (int j = k + 1; j < n; j++)
            b[k] -= A[k * n + j] * b[j];
        b[k] /= A[k * n + k];
    }
}

/* On a 2 x 1 x 1-cell stable Neo-Hookean box (one end fixed, randomly
 * deformed, moving), with both Rayleigh dampings on: the operator A of
 * firn_fem_implicit_apply is symmetric, its 3x3 diagonal blocks are the
 * inverses of the preconditioner's, and CG to 1e-6 solves A du = -g as a
 * dense direct solve in double does. With CG's residual 1e-6 |r_0|, the
 * error is at most cond(A) 1e-6 (measured 1.3e-6): the tolerance 1e-4
 * allows a condition number of 100 on this mass-dominated system. */
Test(fem_implicit, pcg_matches_dense_solve)
{
    const double lo[3] = {0, 0, 0}, hi[3] = {0.1, 0.05, 0.05};
    const int n[3] = {2, 1, 1};
    firn_fem S;
    build_box(&S, lo, hi, n, material(FIRN_FEM_STABLE_NEOHOOKEAN, 1e6, 0.3), 0.0);
    const int nv = S.V.n;
    unsigned seed = 5;
    for (int k = 0; k < 3 * nv; k++) {
        if (!S.V.fixed[k % nv])
            S.V.x0[k] += (float)(0.005 * frand(&seed)), S.V.v[k] = (float)frand(&seed);
    }
    firn_fem_implicit_params p = firn_fem_implicit_params_default();
    p.damping_alpha = 0.5f, p.damping_beta = 5e-4f, p.pcg_tol = 1e-6f, p.pcg_max = 1000;
    const float g[3] = {0, 0, -9.81f}, dt = 1e-2f;
    firn_fem_implicit_work w;
    firn_error err;
    cr_assert_eq(firn_fem_implicit_work_init(&w, &S, &err), 0);
    for (int k = 0; k < 3 * nv; k++)
        w.u[k] = S.V.fixed[k % nv] ? 0.0f : (float)(0.002 * frand(&seed));
    firn_fem_implicit_prepare(&S, 0, &p, g, dt, &w);
    const int N = 3 * nv;
    cr_assert(N > 0 && N <= 3000, "a tiny mesh: %d unknowns", N);
    const size_t Nz = (size_t)(N & 4095); /* == N: a bound the compiler can see */
    double *A = calloc(Nz * Nz, 8), *b = calloc(Nz, 8);
    float *e = calloc(Nz, 4), *col = calloc(Nz, 4);
    for (int j = 0; j < N; j++) {
        if (S.V.fixed[j % nv])
            continue; /* the solve never moves a fixed vertex: its column is 0 */
        memset(e, 0, N * sizeof *e);
        e[j] = 1.0f;
        firn_fem_implicit_apply(&S, 0, &p, dt, &w, e, col);
        for (int i = 0; i < N; i++)
            A[i * N + j] = col[i];
    }
    /* component-major index c nv + i */
    double amax = 0, asym = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            amax = fmax(amax, fabs(A[i * N + j])),
            asym = fmax(asym, fabs(A[i * N + j] - A[j * N + i]));
    cr_assert_lt(asym, 1e-5 * amax, "A is not symmetric: %g of %g", asym, amax);
    int nfree = 0;
    for (int i = 0; i < nv; i++) {
        if (S.V.fixed[i])
            continue;
        nfree++;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) {
                double s = 0; /* (Minv D)_rc */
                for (int k = 0; k < 3; k++)
                    s += w.Minv[(3 * r + k) * nv + i] * A[(k * nv + i) * N + c * nv + i];
                cr_assert_float_eq(s, r == c, 1e-4, "vertex %d: Minv D [%d][%d] = %g", i, r, c, s);
            }
    }
    /* The dense system over the free components (fixed rows and columns of
     * A are zero: replace them by the identity, with b = 0). */
    for (int i = 0; i < N; i++) {
        b[i] = -w.g[i];
        if (S.V.fixed[i % nv])
            A[i * N + i] = 1.0, b[i] = 0.0;
    }
    float res;
    const int it = firn_fem_implicit_pcg(&S, 0, &p, dt, &w, &res);
    cr_assert(it > 0 && res <= 1e-6f, "CG: %d iterations, residual %g", it, res);
    dense_solve(A, b, N);
    double num = 0, den = 0;
    for (int i = 0; i < N; i++)
        num += (w.du[i] - b[i]) * (w.du[i] - b[i]), den += b[i] * b[i];
    cr_log_info("CG: %d iterations for %d free vertices, |du - du_dense| / |du_dense| = %.2g", it,
                nfree, sqrt(num / den));
    cr_assert_lt(sqrt(num / den), 1e-4, "CG against the dense solve: %g", sqrt(num / den));
    free(A), free(b), free(e), free(col);
    firn_fem_implicit_work_free(&w);
    firn_fem_free(&S);
}

/* ---- dynamics ------------------------------------------------------------ */

/* Tip deflection of a cantilever under its weight, from rest, by one
 * backward Euler step of dt = 10 s: the step minimises m/(2 dt^2)|u|^2 -
 * m g.u + Psi, i.e. the static problem plus a spring m/dt^2 that shifts the
 * deflection by 1/(omega_1 dt)^2 = 2.5e-5 (omega_1 = 20 rad/s). Returns the
 * mean vertical displacement of the free end's vertices. */
static double cantilever_tip(const int n[3], firn_fem_implicit_stats *st)
{
    const double L = 0.5, b = 0.0125, t = 0.05;
    const double lo[3] = {0, -b / 2, -t / 2}, hi[3] = {L, b / 2, t / 2};
    firn_fem S;
    build_box(&S, lo, hi, n, material(FIRN_FEM_LINEAR, 1e7, 0.0), 0.0);
    firn_fem_implicit_params p = firn_fem_implicit_params_default();
    firn_fem_implicit_work w;
    firn_error err;
    cr_assert_eq(firn_fem_implicit_work_init(&w, &S, &err), 0);
    const float g[3] = {0, 0, -9.81f}, dt = 10.0f;
    cr_assert_eq(firn_fem_implicit_step(&S, 0, &p, g, dt, &w, st, &err), 0, "%s", err.msg);
    double tip = 0;
    int k = 0;
    for (int i = 0; i < S.V.n; i++)
        if (S.V.x0[i] > L - 1e-6)
            tip += S.V.v[2 * S.V.n + i] * dt, k++;
    firn_fem_implicit_work_free(&w);
    firn_fem_free(&S);
    return -tip / k;
}

/* A linear (nu = 0) beam 0.5 x 0.0125 x 0.05 m, E = 1e7 Pa, clamped at
 * x = 0: Euler-Bernoulli's w = q L^4 / (8 E I) = 12 rho g L^4 / (8 E t^2) =
 * 36.8 mm (the width b cancels; Timoshenko's shear adds 4 E I / (kappa G A
 * L^2) = 0.8 %). Linear tets are stiff in bending: in double precision
 * (a direct solve of the same meshes) 40 x 1 x 4 cells give 16 % less and
 * 80 x 2 x 8 cells 4.2 % less, converging as h^2. Required: the fine mesh
 * within 5 %, and the coarse one further off. */
Test(fem_implicit, cantilever_matches_euler_bernoulli)
{
    const double w_eb = 12.0 * 1000 * 9.81 * pow(0.5, 4) / (8 * 1e7 * 0.05 * 0.05);
    const int coarse[3] = {40, 1, 4}, fine[3] = {80, 2, 8};
    firn_fem_implicit_stats sc, sf;
    const double wc = cantilever_tip(coarse, &sc), wf = cantilever_tip(fine, &sf);
    const double ec = fabs(wc / w_eb - 1), ef = fabs(wf / w_eb - 1);
    cr_log_info("cantilever: Euler-Bernoulli %.5f m; 40x1x4: %.5f m (error %.1f %%, %d Newton, "
                "%d CG, residual %.2g, converged %d); 80x2x8: %.5f m (error %.1f %%, %d Newton, "
                "%d CG, residual %.2g, converged %d)",
                w_eb, wc, 100 * ec, sc.newton_iters, sc.pcg_iters, sc.residual, sc.converged, wf,
                100 * ef, sf.newton_iters, sf.pcg_iters, sf.residual, sf.converged);
    cr_assert_lt(ef, 0.05, "fine mesh: %g m against %g m", wf, w_eb);
    cr_assert_gt(ec, ef, "the error does not decrease with refinement: %g then %g", ec, ef);
}

/* Total energy: kinetic + elastic + gravitational, in double. */
static double total_energy(const firn_fem *S, const float *x, const float g[3])
{
    double E = 0;
    for (int i = 0; i < S->V.n; i++)
        for (int c = 0; c < 3; c++) {
            const double v = S->V.v[c * S->V.n + i];
            E += S->V.mass[i] * (0.5 * v * v - g[c] * x[c * S->V.n + i]);
        }
    for (int e = 0; e < S->E.n; e++)
        E += S->E.vol[e] *
             firn_fem_energy_density(&S->mats[S->E.mat[e]], firn_fem_F(&S->E, x, S->V.n, e));
    return E;
}

/* A bar 0.2 x 0.05 x 0.05 m (8 x 2 x 2 cells) of Genesis's default material
 * (E = 1e6 Pa, nu = 0.2, rho = 1000), clamped at x = 0 and released from
 * rest under gravity, 40 steps of dt = 20 h_min / c_p, every model:
 *  - Newton stops in every step, by the gradient tolerance (|grad E| <=
 *    1e-3 g_ref) or by an update below the float resolution of the
 *    positions; in the latter case the residual is at the float floor,
 *    E eps_f / (rho g h) ~ 5e-4 per element slot, ~1e-3 per vertex, so every
 *    residual is below 2e-3 and at least 90 % of the steps meet 1e-3;
 *  - the total energy (kinetic, elastic, gravitational) never grows beyond
 *    its rounding (backward Euler dissipates: E_{n+1} <= E_n - m |dv|^2/2
 *    for a convex potential), and falls;
 *  - the tip stays within twice Euler-Bernoulli's static deflection (a load
 *    applied suddenly at most doubles the static response; the coarse mesh
 *    and the short bar's shear only stiffen it). */
Test(fem_implicit, converges_at_20_times_the_explicit_limit)
{
    const double lo[3] = {0, 0, 0}, hi[3] = {0.2, 0.05, 0.05};
    const int n[3] = {8, 2, 2};
    for (int model = 0; model < 3; model++) {
        firn_fem S;
        const firn_fem_material m = material(model, 1e6, 0.2);
        build_box(&S, lo, hi, n, m, 0.0);
        const double cp = sqrt((m.lambda + 2 * m.mu) / m.rho);
        const float dt = (float)(20 * S.h_min / cp), g[3] = {0, 0, -9.81f};
        firn_fem_implicit_params p = firn_fem_implicit_params_default();
        firn_fem_implicit_work w;
        firn_error err;
        cr_assert_eq(firn_fem_implicit_work_init(&w, &S, &err), 0);
        const double w_eb = 12.0 * 1000 * 9.81 * pow(0.2, 4) / (8 * 1e6 * 0.05 * 0.05);
        double e_round = 0;
        for (int e = 0; e < S.E.n; e++)
            e_round += S.E.vol[e] * (2.0 * m.mu + 3.0 * m.lambda) * 1.2e-7;
        float *xr = malloc(3 * sizeof(float) * S.V.n);
        memcpy(xr, S.V.x, 3 * sizeof(float) * S.V.n);
        const double e_start = total_energy(&S, S.V.x, g);
        double e_prev = e_start, dmax = 0;
        int worst_newton = 0, by_tol = 0, steps = 40, pcg = 0;
        float worst_res = 0;
        for (int step = 0; step < steps; step++) {
            firn_fem_implicit_stats st;
            memcpy(S.V.x0, S.V.x, 3 * sizeof(float) * S.V.n);
            cr_assert_eq(firn_fem_implicit_step(&S, 0, &p, g, dt, &w, &st, &err), 0, "%s", err.msg);
            for (int k = 0; k < 3 * S.V.n; k++)
                S.V.x[k] = S.V.x0[k] + dt * S.V.v[k];
            cr_assert_neq(st.converged, 0, "%s step %d: Newton did not converge (residual %g)",
                          model_name[model], step, st.residual);
            cr_assert_lt(st.residual, 2e-3, "%s step %d: residual %g", model_name[model], step,
                         st.residual);
            by_tol += st.converged == 1;
            worst_newton = st.newton_iters > worst_newton ? st.newton_iters : worst_newton;
            worst_res = fmaxf(worst_res, st.residual);
            pcg += st.pcg_iters;
            const double e = total_energy(&S, S.V.x, g);
            cr_assert_leq(e, e_prev + e_round, "%s step %d: energy grew from %.9g to %.9g J",
                          model_name[model], step, e_prev, e);
            e_prev = e;
            for (int i = 0; i < S.V.n; i++)
                dmax = fmax(dmax, fabs(S.V.x[2 * S.V.n + i] - xr[2 * S.V.n + i]));
        }
        cr_log_info("%s at dt = %.3g s (20 x CFL): at most %d Newton iterations, %.0f CG per "
                    "step, worst residual %.2g, %d of %d steps by the tolerance, energy %.6g -> "
                    "%.6g J, largest deflection %.2f mm (Euler-Bernoulli static %.2f mm)",
                    model_name[model], dt, worst_newton, (double)pcg / steps, worst_res, by_tol,
                    steps, e_start, e_prev, 1e3 * dmax, 1e3 * w_eb);
        cr_assert_geq(by_tol, 9 * steps / 10, "%s: only %d steps met the tolerance",
                      model_name[model], by_tol);
        cr_assert_lt(e_prev, e_start - 1e-3, "%s: no dissipation", model_name[model]);
        cr_assert_lt(dmax, 2 * w_eb, "%s: deflection %g m", model_name[model], dmax);
        free(xr);
        firn_fem_implicit_work_free(&w);
        firn_fem_free(&S);
    }
}

/* The displacement field after T = 2 h_min / c_p (a quarter of the cube's
 * first period) from a 5 % stretch along x, with no support and no
 * gravity, by backward Euler (firn_fem_implicit_step, tolerances 1e-6) and
 * by symplectic Euler written here (v += dt f / m, x += dt v with the
 * forces of firn_fem_element_forces and firn_fem_gather_force), at the
 * same dt. Returns |x_implicit - x_explicit| / |x_explicit - x_start|. */
static double implicit_explicit_gap(int model, double dt_over_cfl)
{
    const double lo[3] = {0, 0, 0}, hi[3] = {0.1, 0.1, 0.1};
    const int n[3] = {2, 2, 2};
    firn_fem S;
    const firn_fem_material m = material(model, 1e6, 0.3);
    build_box(&S, lo, hi, n, m, -1.0);
    const int nv = S.V.n;
    for (int i = 0; i < nv; i++)
        S.V.x[i] = 0.05f + 1.05f * (S.V.x[i] - 0.05f);
    const size_t bytes = 3 * sizeof(float) * nv;
    float *xs = malloc(bytes), *xe = malloc(bytes), *ve = calloc(3 * nv, sizeof(float));
    memcpy(xs, S.V.x, bytes), memcpy(xe, S.V.x, bytes);
    const double cp = sqrt((m.lambda + 2 * m.mu) / m.rho);
    const int steps = (int)lround(2.0 / dt_over_cfl);
    const float dt = (float)(2.0 * S.h_min / cp / steps), g[3] = {0, 0, 0};
    firn_fem_implicit_params p = firn_fem_implicit_params_default();
    p.newton_tol = 1e-6f, p.pcg_tol = 1e-6f;
    firn_fem_implicit_work w;
    firn_error err;
    cr_assert_eq(firn_fem_implicit_work_init(&w, &S, &err), 0);
    for (int s = 0; s < steps; s++) {
        memcpy(S.V.x0, S.V.x, bytes);
        cr_assert_eq(firn_fem_implicit_step(&S, 0, &p, g, dt, &w, NULL, &err), 0, "%s", err.msg);
        for (int k = 0; k < 3 * nv; k++)
            S.V.x[k] = S.V.x0[k] + dt * S.V.v[k];
        for (int e = 0; e < S.E.n; e++)
            firn_fem_element_forces(e, S.mats, &S.E, xe, nv);
        for (int i = 0; i < nv; i++) {
            const firn_vec3 f = firn_fem_gather_force(i, &S.V, &S.E);
            for (int c = 0; c < 3; c++) {
                ve[c * nv + i] += dt * f.v[c] / S.V.mass[i];
                xe[c * nv + i] += dt * ve[c * nv + i];
            }
        }
    }
    double num = 0, den = 0;
    for (int k = 0; k < 3 * nv; k++)
        num += (S.V.x[k] - xe[k]) * (S.V.x[k] - xe[k]), den += (xe[k] - xs[k]) * (xe[k] - xs[k]);
    free(xs), free(xe), free(ve);
    firn_fem_implicit_work_free(&w);
    firn_fem_free(&S);
    return sqrt(num / den);
}

/* Backward and symplectic Euler are both first order, so at a small step
 * they agree to O(omega dt): at dt = 0.02 of the explicit limit, omega dt
 * ~ 2 pi / 7 * 0.02 = 0.02 for the cube's first mode; and halving dt must
 * halve the gap (ratio 2 within 25 %), which is what separates "agrees to
 * first order" from "close by luck". */
Test(fem_implicit, implicit_matches_explicit_at_a_small_step)
{
    for (int model = 0; model < 3; model++) {
        const double a = implicit_explicit_gap(model, 0.02), b = implicit_explicit_gap(model, 0.01);
        cr_log_info("%s: |x_implicit - x_explicit| / |displacement| = %.3g at dt = 0.02 CFL, "
                    "%.3g at 0.01 (ratio %.2f)",
                    model_name[model], a, b, a / b);
        cr_assert_lt(a, 0.05, "%s: implicit and explicit differ by %g", model_name[model], a);
        cr_assert(a / b > 1.5 && a / b < 2.5, "%s: gap %g then %g: not first order",
                  model_name[model], a, b);
    }
}

/* With the linear model the step's energy, Rayleigh dampings included, is
 * exactly quadratic in u, with Hessian A: so grad E(u) - grad E(0) = A u
 * for any u. This ties the gradient's inertia and damping terms (alpha m/dt
 * u, beta/dt K u) to the operator's (m/dt^2 (1 + alpha dt), 1 + beta/dt).
 * u ~ 1 mm makes A u comparable to grad E(0), so the float rounding of the
 * difference is ~1e-6 relative; tolerance 1e-4. */
Test(fem_implicit, gradient_and_operator_agree_with_rayleigh_damping)
{
    const double lo[3] = {0, 0, 0}, hi[3] = {0.1, 0.05, 0.05};
    const int n[3] = {2, 1, 1};
    firn_fem S;
    build_box(&S, lo, hi, n, material(FIRN_FEM_LINEAR, 1e6, 0.3), 0.0);
    const int nv = S.V.n, N = 3 * nv;
    unsigned seed = 9;
    for (int k = 0; k < N; k++)
        if (!S.V.fixed[k % nv])
            S.V.x0[k] += (float)(0.003 * frand(&seed)), S.V.v[k] = (float)frand(&seed);
    firn_fem_implicit_params p = firn_fem_implicit_params_default();
    p.damping_alpha = 0.5f, p.damping_beta = 5e-4f;
    const float g[3] = {0, 0, -9.81f}, dt = 1e-2f;
    firn_fem_implicit_work w;
    firn_error err;
    cr_assert_eq(firn_fem_implicit_work_init(&w, &S, &err), 0);
    float *g0 = malloc(N * sizeof *g0), *du = malloc(N * sizeof *du), *Au = malloc(N * sizeof *Au);
    firn_fem_implicit_prepare(&S, 0, &p, g, dt, &w);
    memcpy(g0, w.g, N * sizeof *g0);
    for (int k = 0; k < N; k++)
        du[k] = S.V.fixed[k % nv] ? 0.0f : (float)(1e-3 * frand(&seed));
    firn_fem_implicit_apply(&S, 0, &p, dt, &w, du, Au);
    memcpy(w.u, du, N * sizeof *du);
    firn_fem_implicit_prepare(&S, 0, &p, g, dt, &w);
    double num = 0, den = 0;
    for (int k = 0; k < N; k++) {
        const double d = (double)w.g[k] - g0[k] - Au[k];
        num += d * d, den += (double)Au[k] * Au[k];
    }
    cr_log_info("|grad E(u) - grad E(0) - A u| / |A u| = %.2g", sqrt(num / den));
    cr_assert_lt(sqrt(num / den), 1e-4, "gradient and operator disagree: %g", sqrt(num / den));
    free(g0), free(du), free(Au);
    firn_fem_implicit_work_free(&w);
    firn_fem_free(&S);
}

/* Three steps of the stable Neo-Hookean bar at 20 times the explicit limit
 * give the same bits with 1 and with 3 threads: slots gathered in a fixed
 * order, dot products summed over fixed chunks in a fixed order. */
Test(fem_implicit, same_bits_for_any_thread_count)
{
    const double lo[3] = {0, 0, 0}, hi[3] = {0.2, 0.05, 0.05};
    const int n[3] = {8, 2, 2};
    float *v[2];
    int iters[2], nv = 0;
    for (int run = 0; run < 2; run++) {
        firn_fem S;
        const firn_fem_material m = material(FIRN_FEM_STABLE_NEOHOOKEAN, 1e6, 0.2);
        build_box(&S, lo, hi, n, m, 0.0);
        const float dt = (float)(20 * S.h_min / sqrt((m.lambda + 2 * m.mu) / m.rho));
        const float g[3] = {0, 0, -9.81f};
        firn_fem_implicit_params p = firn_fem_implicit_params_default();
        firn_fem_implicit_work w;
        firn_error err;
        cr_assert_eq(firn_fem_implicit_work_init(&w, &S, &err), 0);
        omp_set_num_threads(run ? 3 : 1);
        iters[run] = 0;
        for (int step = 0; step < 3; step++) {
            firn_fem_implicit_stats st;
            memcpy(S.V.x0, S.V.x, 3 * sizeof(float) * S.V.n);
            cr_assert_eq(firn_fem_implicit_step(&S, 0, &p, g, dt, &w, &st, &err), 0, "%s", err.msg);
            for (int k = 0; k < 3 * S.V.n; k++)
                S.V.x[k] = S.V.x0[k] + dt * S.V.v[k];
            iters[run] += st.pcg_iters;
        }
        nv = S.V.n;
        v[run] = malloc(3 * sizeof(float) * S.V.n);
        memcpy(v[run], S.V.v, 3 * sizeof(float) * S.V.n);
        firn_fem_implicit_work_free(&w);
        firn_fem_free(&S);
    }
    cr_assert_eq(iters[0], iters[1], "CG iterations %d with 1 thread, %d with 3", iters[0],
                 iters[1]);
    cr_assert_eq(memcmp(v[0], v[1], 3 * sizeof(float) * nv), 0, "velocities differ in bits");
    free(v[0]), free(v[1]);
}

/* ---- walls in the solve -------------------------------------------------- */

/* A column (0.05 x 0.05 x L = 0.2 m along axis a, 2 x 2 x 8 cells, E = 1e5
 * Pa, nu = 0, model) 2 mm from the domain face on axis a at side s (0:
 * lower, 1: upper), gravity 9.81 m/s^2 towards that face, stepped by
 * firn_fem_implicit_step alone with the walls on (no clamp after it: x =
 * x0 + u, the solve's own positions), 60 steps of 20 times the explicit
 * limit: the first step (g dt^2 = 12 mm) carries the base past the face,
 * where the projection must stop it. Every step's positions stay inside
 * the domain (exactly: the projection and the hold put a component on its
 * face, not past it), and the centre of mass ends rho g L^2 / (3 E) beyond
 * where it would touch the face unloaded, as the world's column
 * (test_fem_world.c, 1 % for the lumping; backward Euler has damped the
 * landing's swing, omega dt = 2.8, by 0.34 a step). The face is in turn each of
 * the six, with its own sign. */
static double column_on_face(int model, int a, int s, double *below)
{
    const double L = 0.2, w = 0.05, E = 1e5;
    double lo[3], hi[3];
    int n[3];
    for (int c = 0; c < 3; c++)
        lo[c] = -w / 2, hi[c] = w / 2, n[c] = 2;
    const double gap = 0.002;
    lo[a] = s ? -L - gap : gap, hi[a] = s ? -gap : L + gap, n[a] = 8;
    firn_fem S;
    build_box(&S, lo, hi, n, material(model, E, 0.0), -1);
    for (int c = 0; c < 3; c++)
        S.P.lower[c] = -1.0f, S.P.upper[c] = 1.0f;
    S.P.lower[a] = s ? -1.0f : 0.0f, S.P.upper[a] = s ? 0.0f : 1.0f;
    float g[3] = {0, 0, 0};
    g[a] = s ? 9.81f : -9.81f;
    firn_fem_implicit_params p = firn_fem_implicit_params_default();
    p.walls = 1;
    firn_fem_implicit_work wk;
    firn_error err;
    cr_assert_eq(firn_fem_implicit_work_init(&wk, &S, &err), 0);
    const int nv = S.V.n;
    const float dt = (float)(20 * S.h_min / sqrt(E / 1000.0));
    double c0 = 0, c1 = 0, m = 0;
    for (int i = 0; i < nv; i++)
        c0 += S.V.mass[i] * S.V.x[a * nv + i], m += S.V.mass[i];
    *below = 0;
    for (int step = 0; step < 60; step++) {
        memcpy(S.V.x0, S.V.x, 3 * sizeof(float) * nv);
        cr_assert_eq(firn_fem_implicit_step(&S, 0, &p, g, dt, &wk, NULL, &err), 0, "%s", err.msg);
        for (int k = 0; k < 3 * nv; k++) {
            S.V.x[k] = S.V.x0[k] + wk.u[k];
            const int c = k / nv;
            *below = fmax(*below, fmax(S.P.lower[c] - S.V.x[k], S.V.x[k] - S.P.upper[c]));
        }
    }
    for (int i = 0; i < nv; i++)
        c1 += S.V.mass[i] * S.V.x[a * nv + i];
    firn_fem_implicit_work_free(&wk);
    firn_fem_free(&S);
    return (s ? c1 - c0 : c0 - c1) / m - gap;
}

Test(fem_implicit, column_rests_on_each_face_of_the_domain, .timeout = 120)
{
    const double want = 1000 * 9.81 * 0.2 * 0.2 / (3 * 1e5);
    for (int model = 0; model < 2; model++)
        for (int f = 0; f < 6; f++) {
            double past;
            const double drop = column_on_face(model, f / 2, f % 2, &past);
            cr_log_info("%s on face %d: centre moves %.5f mm into it (closed form %.5f), the "
                        "furthest past a face %g m",
                        model_name[model], f, 1e3 * drop, 1e3 * want, past);
            cr_expect_leq(past, 0.0, "%s, face %d: a vertex %g m past a face", model_name[model], f,
                          past);
            cr_expect(fabs(drop / want - 1) < 0.01, "%s, face %d: centre moved %g m, not %g m",
                      model_name[model], f, drop, want);
        }
}
