/* test_fem_stress.c - FEM element physics (include/firn_fem.h) against
 * closed forms computed here in double precision: the patch test (a mesh
 * under a uniform deformation has uniform stress and no net force on its
 * inner vertices), forces as minus the gradient of each model's strain
 * energy, the three models' agreement with linear elasticity at small
 * strain, frame indifference of the corotated and Neo-Hookean models, and
 * lumped masses (host/fem.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fem.h"

static double frand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (*s >> 8) / 16777216.0 * 2.0 - 1.0;
}

static firn_fem_material material(int model)
{
    const double E = 1e6, nu = 0.3;
    firn_fem_material m = {model, (float)(E / (2 * (1 + nu))),
                           (float)(E * nu / ((1 + nu) * (1 - 2 * nu))), 1000.0f};
    return m;
}

static void mat_mul(const double a[9], const double b[9], double r[9])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
}

static double det3(const double a[9])
{
    return a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) +
           a[2] * (a[3] * a[7] - a[4] * a[6]);
}

/* The rotation of F's polar decomposition, in double: the iteration
 * R <- (R + R^-T) / 2 (Higham 1986) from R = F, which converges to it for
 * det F > 0. */
static void polar_rotation(const double F[9], double R[9])
{
    memcpy(R, F, 9 * sizeof *R);
    for (int it = 0; it < 60; it++) {
        double d = det3(R), cof[9];
        cof[0] = R[4] * R[8] - R[5] * R[7], cof[1] = R[5] * R[6] - R[3] * R[8];
        cof[2] = R[3] * R[7] - R[4] * R[6], cof[3] = R[2] * R[7] - R[1] * R[8];
        cof[4] = R[0] * R[8] - R[2] * R[6], cof[5] = R[1] * R[6] - R[0] * R[7];
        cof[6] = R[1] * R[5] - R[2] * R[4], cof[7] = R[2] * R[3] - R[0] * R[5];
        cof[8] = R[0] * R[4] - R[1] * R[3];
        for (int k = 0; k < 9; k++)
            R[k] = 0.5 * (R[k] + cof[k] / d); /* R^-T = cof R / det R */
    }
}

/* Strain energy density of each model, in double, written from the
 * models' energies (not from the stresses the code implements):
 *   linear     mu |eps|^2 + lambda/2 tr(eps)^2, eps = (F + F^T)/2 - I;
 *   corotated  mu |F - R|^2 + lambda/2 tr(R^T F - I)^2;
 *   stable NH  mu'/2 (I_C - 3) + lambda'/2 (J - alpha)^2 - mu'/2 log(I_C + 1),
 *              mu' = 4/3 mu, lambda' = lambda + 5/6 mu, alpha = 1 + 3/4 mu'/lambda'. */
static double energy_density(const firn_fem_material *m, const double F[9])
{
    const double mu = m->mu, lam = m->lambda;
    if (m->model == FIRN_FEM_LINEAR) {
        double e2 = 0, tr = 0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double e = 0.5 * (F[3 * i + j] + F[3 * j + i]) - (i == j);
                e2 += e * e;
                tr += i == j ? e : 0;
            }
        return mu * e2 + 0.5 * lam * tr * tr;
    }
    if (m->model == FIRN_FEM_COROTATED) {
        double R[9], d2 = 0, tr = -3;
        polar_rotation(F, R);
        for (int k = 0; k < 9; k++)
            d2 += (F[k] - R[k]) * (F[k] - R[k]);
        for (int i = 0; i < 3; i++)
            for (int r = 0; r < 3; r++)
                tr += R[3 * r + i] * F[3 * r + i];
        return mu * d2 + 0.5 * lam * tr * tr;
    }
    const double mu2 = 4.0 / 3.0 * mu, lam2 = lam + 5.0 / 6.0 * mu;
    const double alpha = 1 + 0.75 * mu2 / lam2;
    double ic = 0;
    for (int k = 0; k < 9; k++)
        ic += F[k] * F[k];
    const double J = det3(F);
    return 0.5 * mu2 * (ic - 3) + 0.5 * lam2 * (J - alpha) * (J - alpha) - 0.5 * mu2 * log(ic + 1);
}

/* One element's arrays: vertices 0..3, element 0. */
typedef struct {
    float x[12], B[9], vol, fslot[12];
    int v[4];
    uint8_t mat;
    firn_fem_elements E;
    double rest[12];
} one_tet;

static void one_tet_init(one_tet *t, unsigned seed)
{
    static const double ref[4][3] = {{0, 0, 0}, {0.1, 0, 0}, {0, 0.1, 0}, {0, 0, 0.1}};
    unsigned s = seed;
    firn_vec3 p[4];
    for (int k = 0; k < 4; k++) {
        for (int c = 0; c < 3; c++) {
            t->rest[3 * k + c] = ref[k][c] + 0.02 * frand(&s);
            t->x[c * 4 + k] = (float)t->rest[3 * k + c];
        }
        p[k] = firn_v3(t->x[k], t->x[4 + k], t->x[8 + k]);
        t->v[k] = k;
    }
    firn_mat3 B;
    cr_assert_eq(firn_fem_rest(p, &B, &t->vol), 0);
    memcpy(t->B, B.m, sizeof t->B);
    t->mat = 0;
    t->E = (firn_fem_elements){1, t->v, t->B, &t->vol, &t->mat, t->fslot};
}

/* The element's energy V Psi(F) at positions y (12, vertex-major) in double. */
static double element_energy(const one_tet *t, const firn_fem_material *m, const double *y)
{
    double D[9], F[9], B[9];
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 3; r++)
            D[3 * r + c] = y[3 * (c + 1) + r] - y[r];
    for (int k = 0; k < 9; k++)
        B[k] = t->B[k];
    mat_mul(D, B, F);
    return t->vol * energy_density(m, F);
}

Test(fem_stress, forces_are_minus_the_energy_gradient)
{
    for (int model = 0; model < 3; model++)
        for (unsigned seed = 1; seed <= 4; seed++) {
            one_tet t;
            one_tet_init(&t, seed);
            firn_fem_material m = material(model);
            /* A finite deformation: stretch, shear and a rotation of ~30 deg. */
            unsigned s = seed * 77;
            double y[12];
            const double c = cos(0.5), sn = sin(0.5);
            for (int k = 0; k < 4; k++) {
                double p[3];
                for (int a = 0; a < 3; a++)
                    p[a] = t.rest[3 * k + a] * (1 + 0.2 * a) + 0.01 * frand(&s);
                y[3 * k] = c * p[0] - sn * p[1], y[3 * k + 1] = sn * p[0] + c * p[1];
                y[3 * k + 2] = p[2];
                for (int a = 0; a < 3; a++)
                    t.x[a * 4 + k] = (float)y[3 * k + a];
            }
            firn_fem_element_forces(0, &m, &t.E, t.x, 4);
            double worst = 0, scale = 0;
            for (int i = 0; i < 12; i++) {
                const double h = 1e-6;
                double yp[12], ym[12];
                memcpy(yp, y, sizeof yp), memcpy(ym, y, sizeof ym);
                yp[i] += h, ym[i] -= h;
                const double g =
                    -(element_energy(&t, &m, yp) - element_energy(&t, &m, ym)) / (2 * h);
                const double f = t.fslot[(i % 3) * 4 + i / 3];
                worst = fmax(worst, fabs(f - g));
                scale = fmax(scale, fabs(g));
            }
            /* Float forces against a double central difference (truncation
             * ~h^2, rounding ~1e-16 E / h): 1e-3 of the largest component
             * covers the float stress's rounding with room. */
            cr_assert(worst < 1e-3 * scale, "model %d seed %u: force error %g of %g", model, seed,
                      worst, scale);
            cr_assert(scale > 1.0, "model %d: the deformation must load the element (%g N)", model,
                      scale);
        }
}

Test(fem_stress, models_agree_with_linear_elasticity_at_small_strain)
{
    unsigned s = 5;
    for (int trial = 0; trial < 10; trial++) {
        firn_mat3 F;
        double G[9];
        const double d = 1e-3;
        for (int k = 0; k < 9; k++) {
            G[k] = frand(&s);
            F.m[k] = (float)((k % 4 == 0) + d * G[k]);
        }
        /* Closed form: P = 2 mu eps + lambda tr(eps) I, eps = d sym(G). */
        const firn_fem_material lin = material(FIRN_FEM_LINEAR);
        double P0[9], tr = d * (G[0] + G[4] + G[8]), n0 = 0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                P0[3 * i + j] =
                    lin.mu * d * (G[3 * i + j] + G[3 * j + i]) + (i == j ? lin.lambda * tr : 0.0);
                n0 += P0[3 * i + j] * P0[3 * i + j];
            }
        n0 = sqrt(n0);
        for (int model = 0; model < 3; model++) {
            firn_fem_material m = material(model);
            firn_mat3 P = firn_fem_stress(&m, F);
            double e = 0;
            for (int k = 0; k < 9; k++)
                e += (P.m[k] - P0[k]) * (P.m[k] - P0[k]);
            e = sqrt(e);
            /* The models differ from the linear law at second order: a
             * relative difference of order d = 1e-3 (the antisymmetric part
             * of G rotates by d), plus float rounding of F - I, about
             * 1e-7 / 1e-3 = 1e-4. */
            cr_assert(e < 1e-2 * n0, "model %d trial %d: |P - P_lin| = %g of %g", model, trial, e,
                      n0);
        }
    }
}

Test(fem_stress, corotated_and_neohookean_are_frame_indifferent)
{
    unsigned s = 9;
    for (int model = FIRN_FEM_COROTATED; model <= FIRN_FEM_STABLE_NEOHOOKEAN; model++) {
        firn_fem_material m = material(model);
        firn_mat3 F;
        for (int k = 0; k < 9; k++)
            F.m[k] = (float)((k % 4 == 0) + 0.3 * frand(&s));
        /* Q: a rotation of 1 rad about (1, 2, 3). */
        const double a[3] = {1 / sqrt(14.0), 2 / sqrt(14.0), 3 / sqrt(14.0)}, c = cos(1.0),
                     sn = sin(1.0);
        firn_mat3 Q;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double k = i == j ? c : 0.0;
                k += (1 - c) * a[i] * a[j];
                if ((i + 1) % 3 == j)
                    k -= sn * a[3 - i - j];
                if ((j + 1) % 3 == i)
                    k += sn * a[3 - i - j];
                Q.m[3 * i + j] = (float)k;
            }
        firn_mat3 P = firn_fem_stress(&m, F);
        firn_mat3 QP = firn_m3_mul(Q, P);
        firn_mat3 PQ = firn_fem_stress(&m, firn_m3_mul(Q, F));
        double e = 0, n = 0;
        for (int k = 0; k < 9; k++) {
            e = fmax(e, fabs(QP.m[k] - PQ.m[k]));
            n = fmax(n, fabs(QP.m[k]));
        }
        /* P(QF) = Q P(F) for an objective energy; float rounding and the
         * SVD's tolerance leave ~1e-6 of the stress. */
        cr_assert(e < 1e-4 * n, "model %d: |P(QF) - Q P(F)| = %g of %g", model, e, n);
    }
    /* The linear model is not: a pure rotation stresses it. */
    firn_fem_material lin = material(FIRN_FEM_LINEAR);
    firn_mat3 R = firn_m3_identity();
    R.m[0] = R.m[4] = (float)cos(0.5), R.m[1] = -(R.m[3] = (float)sin(0.5));
    cr_assert(fabs(firn_fem_stress(&lin, R).m[0]) > 0.1 * lin.mu);
}

static void affine(const double A[9], const double *X, float *x, int n)
{
    for (int i = 0; i < n; i++)
        for (int r = 0; r < 3; r++)
            x[r * n + i] = (float)(A[3 * r] * X[3 * i] + A[3 * r + 1] * X[3 * i + 1] +
                                   A[3 * r + 2] * X[3 * i + 2] + 0.01 * r);
}

Test(fem_stress, patch_test_uniform_deformation_gives_uniform_stress)
{
    const double lo[3] = {0, 0, 0}, hi[3] = {0.3, 0.2, 0.25};
    const int n[3] = {3, 2, 3};
    firn_tet_mesh mesh;
    firn_error err = {0};
    cr_assert_eq(firn_tet_mesh_box(lo, hi, n, &mesh, &err), 0, "%s", err.msg);
    for (int model = 0; model < 3; model++) {
        firn_fem S;
        memset(&S, 0, sizeof S);
        S.mats[0] = material(model);
        const int mat = 0;
        cr_assert_eq(firn_fem_build(&S, &mesh, &mat, 1, &err), 0, "%s", err.msg);
        unsigned s = 3 + model;
        double A[9];
        for (int k = 0; k < 9; k++)
            A[k] = (k % 4 == 0) + 0.05 * frand(&s);
        affine(A, mesh.x, S.V.x, S.V.n);
        firn_mat3 Af;
        for (int k = 0; k < 9; k++)
            Af.m[k] = (float)A[k];
        const firn_mat3 P0 = firn_fem_stress(&S.mats[0], Af);
        double pn = 0;
        for (int k = 0; k < 9; k++)
            pn = fmax(pn, fabs(P0.m[k]));
        for (int e = 0; e < S.E.n; e++) {
            firn_mat3 F = firn_fem_F(&S.E, S.V.x, S.V.n, e);
            firn_mat3 P = firn_fem_stress(&S.mats[0], F);
            for (int k = 0; k < 9; k++) {
                /* F = D B in float: ~1e-7 relative to |F| = 1; P magnifies
                 * F - I's rounding by (lambda + 2 mu) / |P| ~ 1 / 0.05. */
                cr_assert(fabs(F.m[k] - A[k]) < 1e-5, "model %d element %d F[%d] = %.8g, A = %.8g",
                          model, e, k, F.m[k], A[k]);
                cr_assert(fabs(P.m[k] - P0.m[k]) < 1e-5 * 20 * pn,
                          "model %d element %d P[%d] = %g, uniform %g", model, e, k, P.m[k],
                          P0.m[k]);
            }
            firn_fem_element_forces(e, S.mats, &S.E, S.V.x, S.V.n);
        }
        /* Inner vertices are in equilibrium: the net force is rounding
         * against the force of one element face, |P| h^2. */
        const double fscale = pn * 0.1 * 0.1;
        int inner = 0;
        for (int i = 0; i < S.V.n; i++) {
            const double *X = mesh.x + 3 * i;
            int on_boundary = 0;
            for (int a = 0; a < 3; a++)
                on_boundary |= fabs(X[a] - lo[a]) < 1e-12 || fabs(X[a] - hi[a]) < 1e-12;
            if (on_boundary)
                continue;
            inner++;
            firn_vec3 f = firn_fem_gather_force(i, &S.V, &S.E);
            cr_assert(firn_norm(f) < 1e-4 * fscale, "model %d inner vertex %d: net force %g N",
                      model, i, firn_norm(f));
        }
        cr_assert_eq(inner, 2 * 1 * 2);
        /* All forces sum to zero (no net force from internal stress). */
        firn_vec3 tot = firn_v3(0, 0, 0);
        for (int i = 0; i < S.V.n; i++)
            tot = firn_add(tot, firn_fem_gather_force(i, &S.V, &S.E));
        cr_assert(firn_norm(tot) < 1e-4 * fscale * S.V.n, "net force %g", firn_norm(tot));
        firn_fem_free(&S);
    }
    firn_tet_mesh_free(&mesh);
}

Test(fem_stress, lumped_masses_sum_to_the_body_mass)
{
    const double lo[3] = {-0.1, 0, 0}, hi[3] = {0.1, 0.05, 0.4};
    const int n[3] = {4, 1, 8};
    firn_tet_mesh mesh;
    firn_error err = {0};
    cr_assert_eq(firn_tet_mesh_box(lo, hi, n, &mesh, &err), 0, "%s", err.msg);
    firn_fem S;
    memset(&S, 0, sizeof S);
    S.mats[0] = material(FIRN_FEM_LINEAR);
    S.mats[0].rho = 700.0f;
    const int mat = 0;
    cr_assert_eq(firn_fem_build(&S, &mesh, &mat, 1, &err), 0, "%s", err.msg);
    double total = 0;
    for (int i = 0; i < S.V.n; i++) {
        total += S.V.mass[i];
        cr_assert_gt(S.V.mass[i], 0.0f);
    }
    const double want = 700.0 * 0.2 * 0.05 * 0.4;
    cr_assert(fabs(total - want) < 1e-6 * want, "mass %.9g, rho V = %.9g", total, want);
    /* The elements' rest volumes (float, from Dm) tile the box. */
    double vol = 0;
    for (int e = 0; e < S.E.n; e++)
        vol += S.E.vol[e];
    cr_assert(fabs(vol - want / 700.0) < 1e-5 * want / 700.0, "volume %.9g", vol);
    /* A corner vertex of a Kuhn box on the diagonal belongs to 6 tets, the
     * other corners to 1 or 2: a corner's mass is rho V_tet (1 or 2 or 6)/4. */
    const double vt = 0.2 * 0.05 * 0.4 / (6.0 * 4 * 1 * 8);
    cr_assert(fabs(S.V.mass[0] - 700.0 * vt * 6 / 4) < 1e-6 * 700.0 * vt, "corner mass %g",
              S.V.mass[0]);
    /* Shortest altitude of a Kuhn tet of cell a x b x c. */
    cr_assert_gt(S.h_min, 0.0f);
    cr_assert_lt(S.h_min, 0.05f);
    firn_fem_free(&S);
    firn_tet_mesh_free(&mesh);
}
