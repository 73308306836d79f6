/* test_fem_implicit.c - implicit backward Euler for FEM bodies
 * (include/firn_fem_implicit.h, host/fem_implicit.c): element Hessians
 * against finite differences of the stress and of the vertex forces, their
 * projection, the conjugate gradient solve against a dense direct solve,
 * agreement with an explicit integrator written here at a small step,
 * convergence and dissipation at 20 times the explicit limit, and the
 * static deflection of a cantilever against Euler-Bernoulli. */
#include <criterion/criterion.h>
#include <math.h>
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
    double *A = calloc((size_t)N * N, 8), *b = calloc(N, 8);
    float *e = calloc(N, 4), *col = calloc(N, 4);
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
