/* firn_fem_implicit.h - implicit (backward Euler) FEM: the per-element and
 * per-vertex bodies of the Newton / preconditioned conjugate gradient solve,
 * shared by the CPU loop (host/fem_implicit.c) and CUDA kernels. Method,
 * tolerances and defaults: docs/PHYSICS.md, FEM, "Implicit integration".
 *
 * A step solves for the displacement u = x_{n+1} - x_n that minimises
 *   E(u) = sum_i m_i/(2 dt^2) |u_i - dt v_i - dt^2 g|^2
 *        + alpha dt sum_i m_i/(2 dt^2) |u_i|^2          (Rayleigh, mass)
 *        + sum_e V_e Psi(F_e)                             (elastic)
 *        + beta/(2 dt) u^T K u                            (Rayleigh, stiffness)
 * with K the elastic Hessian at the current iterate. Newton's system is
 * A du = -grad E, A = m/dt^2 (1 + alpha dt) + (1 + beta/dt) K.
 *
 * Precision: F is built from D = D(x_n) + D(u), the rest-relative edges of
 * the step's start plus those of the displacement, so that the strain of a
 * small displacement is not lost to the rounding of x (whose ulp at 0.5 m
 * is 6e-8 m, a strain of 5e-6 over a 1 cm element).
 *
 * The element Hessian d^2 Psi / dF^2 of every model is stored in the basis
 * of F's singular value decomposition F = U diag(s) V^T (Smith, de Goes and
 * Kim 2019, "Analytic eigensystems for isotropic distortion energies"):
 * with M = U^T dF V, dP = U N V^T, where the diagonal of N is A (a symmetric
 * 3x3, the "scaling" block) times the diagonal of M, and each off-diagonal
 * pair (i, j) of M splits into a twist (M_ij - M_ji)/sqrt 2 and a flip
 * (M_ij + M_ji)/sqrt 2, each an eigenvector with its own eigenvalue.
 * Projecting the Hessian to positive semi-definite is then clamping 3 + 3
 * eigenvalues and those of A. */
#ifndef FIRN_FEM_IMPLICIT_H
#define FIRN_FEM_IMPLICIT_H

#include "firn_fem.h"

/* An element's d^2 Psi / dF^2 in its SVD basis (above). Stored per element
 * as FIRN_FEM_HESS_FLOATS floats: U (9), V (9), A (6: 00 11 22 01 02 12),
 * twist (3), flip (3); pair k is (i, j) = (1, 2), (0, 2), (0, 1). 120 bytes. */
typedef struct {
    firn_mat3 U, V;
    float A[6];
    float twist[3], flip[3];
} firn_fem_hess;

#define FIRN_FEM_HESS_FLOATS 30

/* Strain energy density Psi(F) [J/m^3] of each model, zero at F = I:
 *  linear     mu |eps|^2 + lambda/2 tr(eps)^2, eps = (F + F^T)/2 - I
 *  corotated  mu |F - R|^2 + lambda/2 tr(R^T F - I)^2
 *  stable NH  mu'/2 (I_C - 3) + lambda'/2 (J - alpha)^2 - mu'/2 log((I_C + 1)/4)
 *             - lambda'/2 (1 - alpha)^2, with firn_fem_stress's mu', lambda', alpha.
 * firn_fem_stress is its gradient dPsi/dF. */
static inline FIRN_HD float firn_fem_energy_density(const firn_fem_material *m, firn_mat3 F)
{
    if (m->model == FIRN_FEM_COROTATED) {
        firn_mat3 U, V;
        firn_vec3 s;
        firn_svd3(F, &U, &s, &V);
        const float d0 = s.v[0] - 1.0f, d1 = s.v[1] - 1.0f, d2 = s.v[2] - 1.0f, tr = d0 + d1 + d2;
        return m->mu * (d0 * d0 + d1 * d1 + d2 * d2) + 0.5f * m->lambda * tr * tr;
    }
    if (m->model == FIRN_FEM_STABLE_NEOHOOKEAN) {
        const float mu = 4.0f / 3.0f * m->mu, lam = m->lambda + 5.0f / 6.0f * m->mu;
        const float alpha = 1.0f + 0.75f * mu / lam;
        float ic = 0.0f;
        for (int k = 0; k < 9; k++)
            ic += F.m[k] * F.m[k];
        const float J = firn_m3_det(F);
        return 0.5f * mu * (ic - 3.0f) +
               0.5f * lam * ((J - alpha) * (J - alpha) - (1.0f - alpha) * (1.0f - alpha)) -
               0.5f * mu * logf((ic + 1.0f) * 0.25f);
    }
    float e2 = 0.0f;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            const float e = 0.5f * (F.m[3 * r + c] + F.m[3 * c + r]) - (r == c ? 1.0f : 0.0f);
            e2 += e * e;
        }
    const float tr = F.m[0] + F.m[4] + F.m[8] - 3.0f;
    return m->mu * e2 + 0.5f * m->lambda * tr * tr;
}

/* Eigen-decomposition of the symmetric 3x3 a (00 11 22 01 02 12) by Jacobi
 * rotations; a is replaced by Q diag(max(d, 0)) Q^T. */
static inline FIRN_HD void firn_fem_project_sym3(float a[6])
{
    firn_mat3 S = {{a[0], a[3], a[4], a[3], a[1], a[5], a[4], a[5], a[2]}};
    firn_mat3 Q = firn_m3_identity();
    const float scale =
        fabsf(a[0]) + fabsf(a[1]) + fabsf(a[2]) + fabsf(a[3]) + fabsf(a[4]) + fabsf(a[5]);
    for (int sweep = 0; sweep < 12; sweep++) {
        if (fabsf(S.m[1]) + fabsf(S.m[2]) + fabsf(S.m[5]) <= 1e-9f * scale)
            break;
        firn_jacobi_rotate(&S, &Q, 0, 1);
        firn_jacobi_rotate(&S, &Q, 0, 2);
        firn_jacobi_rotate(&S, &Q, 1, 2);
    }
    const float d[3] = {firn_maxf(S.m[0], 0.0f), firn_maxf(S.m[4], 0.0f), firn_maxf(S.m[8], 0.0f)};
    float r[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[3 * i + j] = Q.m[3 * i] * d[0] * Q.m[3 * j] + Q.m[3 * i + 1] * d[1] * Q.m[3 * j + 1] +
                           Q.m[3 * i + 2] * d[2] * Q.m[3 * j + 2];
    a[0] = r[0], a[1] = r[4], a[2] = r[8], a[3] = r[1], a[4] = r[2], a[5] = r[5];
}

/* d^2 Psi / dF^2 at F, in F's SVD basis. project: clamp negative
 * eigenvalues to 0 (Newton needs a positive semi-definite element matrix;
 * the unprojected Hessian is for checking against finite differences).
 *  linear: constant, U = V = I: A = 2 mu I + lambda 1 1^T, twist 0, flip 2 mu
 *    (dP = mu (dF + dF^T) + lambda tr(dF) I exactly).
 *  corotated and stable NH, isotropic in the singular values s (Smith et
 *    al. 2019, s4-5): A_ij = d^2 Psi / ds_i ds_j, twist_k = (Psi_i + Psi_j) /
 *    (s_i + s_j), flip_k = (Psi_i - Psi_j) / (s_i - s_j), Psi_i = dPsi/ds_i.
 *  corotated, Psi = mu sum (s_i - 1)^2 + lambda/2 (sum s_i - 3)^2:
 *    A = 2 mu I + lambda 1 1^T, flip 2 mu, twist (2 mu (s_i + s_j - 2) +
 *    2 lambda tr(S - I)) / (s_i + s_j); 0 at rest, negative under
 *    compression, where it is clamped: this is the Hessian with the
 *    rotation's derivative, which "R fixed" (twist 0, Genesis's) drops.
 *  stable NH (Smith, de Goes and Kim 2018, s4), mu_t = mu' (1 - 1/(I_C + 1)),
 *    b = lambda' (J - alpha), g_i = J / s_i: A_ij = mu_t delta_ij + 2 mu' /
 *    (I_C + 1)^2 s_i s_j + lambda' g_i g_j + b s_k (i != j, k the third);
 *    twist_k = mu_t + b s_k, flip_k = mu_t - b s_k. */
static inline FIRN_HD firn_fem_hess firn_fem_hessian(const firn_fem_material *m, firn_mat3 F,
                                                     int project)
{
    firn_fem_hess h;
    if (m->model == FIRN_FEM_LINEAR) {
        h.U = h.V = firn_m3_identity();
        const float d = 2.0f * m->mu + m->lambda;
        h.A[0] = h.A[1] = h.A[2] = d;
        h.A[3] = h.A[4] = h.A[5] = m->lambda;
        for (int k = 0; k < 3; k++)
            h.twist[k] = 0.0f, h.flip[k] = 2.0f * m->mu;
        return h;
    }
    firn_vec3 sv;
    firn_svd3(F, &h.U, &sv, &h.V);
    const float *s = sv.v;
    if (m->model == FIRN_FEM_COROTATED) {
        const float mu = m->mu, lam = m->lambda, tr = s[0] + s[1] + s[2] - 3.0f;
        h.A[0] = h.A[1] = h.A[2] = 2.0f * mu + lam;
        h.A[3] = h.A[4] = h.A[5] = lam;
        for (int k = 0; k < 3; k++) {
            const float ss = s[k == 0 ? 1 : 0] + s[k == 2 ? 1 : 2]; /* pair k */
            const float t = 2.0f * mu * (ss - 2.0f) + 2.0f * lam * tr;
            /* s_i + s_j -> 0 only for a nearly flat inverted element, where
             * the twist is unbounded; it is then treated as 0. */
            h.twist[k] = ss > 1e-4f ? t / ss : 0.0f;
            h.flip[k] = 2.0f * mu;
        }
    } else {
        const float mu = 4.0f / 3.0f * m->mu, lam = m->lambda + 5.0f / 6.0f * m->mu;
        const float alpha = 1.0f + 0.75f * mu / lam;
        const float ic = s[0] * s[0] + s[1] * s[1] + s[2] * s[2], J = s[0] * s[1] * s[2];
        const float mut = mu * (1.0f - 1.0f / (ic + 1.0f)),
                    c2 = 2.0f * mu / ((ic + 1.0f) * (ic + 1.0f));
        const float b = lam * (J - alpha);
        const float g[3] = {s[1] * s[2], s[0] * s[2], s[0] * s[1]};
        for (int i = 0; i < 3; i++)
            h.A[i] = mut + c2 * s[i] * s[i] + lam * g[i] * g[i];
        h.A[3] = c2 * s[0] * s[1] + lam * g[0] * g[1] + b * s[2];
        h.A[4] = c2 * s[0] * s[2] + lam * g[0] * g[2] + b * s[1];
        h.A[5] = c2 * s[1] * s[2] + lam * g[1] * g[2] + b * s[0];
        for (int k = 0; k < 3; k++)
            h.twist[k] = mut + b * s[k], h.flip[k] = mut - b * s[k];
    }
    if (project) {
        firn_fem_project_sym3(h.A);
        for (int k = 0; k < 3; k++)
            h.twist[k] = firn_maxf(h.twist[k], 0.0f), h.flip[k] = firn_maxf(h.flip[k], 0.0f);
    }
    return h;
}

/* dP = (d^2 Psi / dF^2) : dF. */
static inline FIRN_HD firn_mat3 firn_fem_hess_apply(const firn_fem_hess *h, firn_mat3 dF)
{
    const firn_mat3 M = firn_m3_mul(firn_m3_transpose(h->U), firn_m3_mul(dF, h->V));
    firn_mat3 N;
    const float *a = h->A;
    N.m[0] = a[0] * M.m[0] + a[3] * M.m[4] + a[4] * M.m[8];
    N.m[4] = a[3] * M.m[0] + a[1] * M.m[4] + a[5] * M.m[8];
    N.m[8] = a[4] * M.m[0] + a[5] * M.m[4] + a[2] * M.m[8];
    for (int k = 0; k < 3; k++) {
        const int i = k == 0 ? 1 : 0, j = k == 2 ? 1 : 2; /* pair k */
        const float sum = 0.5f * (h->twist[k] + h->flip[k]),
                    dif = 0.5f * (h->flip[k] - h->twist[k]);
        const float mij = M.m[3 * i + j], mji = M.m[3 * j + i];
        N.m[3 * i + j] = sum * mij + dif * mji;
        N.m[3 * j + i] = sum * mji + dif * mij;
    }
    return firn_m3_mul(h->U, firn_m3_mul_bt(N, h->V));
}

static inline FIRN_HD void firn_fem_hess_store(float *H, int ne, int e, const firn_fem_hess *h)
{
    for (int k = 0; k < 9; k++)
        H[firn_soa_index(k, ne, e)] = h->U.m[k], H[firn_soa_index(9 + k, ne, e)] = h->V.m[k];
    for (int k = 0; k < 6; k++)
        H[firn_soa_index(18 + k, ne, e)] = h->A[k];
    for (int k = 0; k < 3; k++) {
        H[firn_soa_index(24 + k, ne, e)] = h->twist[k];
        H[firn_soa_index(27 + k, ne, e)] = h->flip[k];
    }
}

static inline FIRN_HD firn_fem_hess firn_fem_hess_load(const float *H, int ne, int e)
{
    firn_fem_hess h;
    for (int k = 0; k < 9; k++)
        h.U.m[k] = H[firn_soa_index(k, ne, e)], h.V.m[k] = H[firn_soa_index(9 + k, ne, e)];
    for (int k = 0; k < 6; k++)
        h.A[k] = H[firn_soa_index(18 + k, ne, e)];
    for (int k = 0; k < 3; k++)
        h.twist[k] = H[firn_soa_index(24 + k, ne, e)], h.flip[k] = H[firn_soa_index(27 + k, ne, e)];
    return h;
}

/* ---- per element -------------------------------------------------------- */

/* The edge matrix [y1 - y0, y2 - y0, y3 - y0] of element e's vertices in the
 * component-major field y (n vertices). */
static inline FIRN_HD firn_mat3 firn_fem_edges(const firn_fem_elements *E, const float *y, int n,
                                               int e)
{
    const int *t = E->v + 4 * e;
    const firn_vec3 y0 = firn_load3(y, n, t[0]);
    firn_mat3 D;
    for (int c = 0; c < 3; c++) {
        const firn_vec3 d = firn_sub(firn_load3(y, n, t[c + 1]), y0);
        for (int r = 0; r < 3; r++)
            D.m[3 * r + c] = d.v[r];
    }
    return D;
}

/* F of element e at x = x0 + u, as D(x0) + D(u) times B (see the top). */
static inline FIRN_HD firn_mat3 firn_fem_F_step(const firn_fem_elements *E, const float *x0,
                                                const float *u, int n, int e)
{
    const firn_mat3 D0 = firn_fem_edges(E, x0, n, e), Du = firn_fem_edges(E, u, n, e);
    firn_mat3 D;
    for (int k = 0; k < 9; k++)
        D.m[k] = D0.m[k] + Du.m[k];
    return firn_m3_mul(D, firn_fem_load_B(E, e));
}

/* Writes H = V G B^T as element e's 4 vertex slots (slot 4e + k at
 * [c * 4 ne + 4e + k]): vertex k+1 gets column k, vertex 0 minus their sum.
 * With G = P this is the gradient of V Psi (minus the elastic force), with
 * G = dP the Hessian-vector product. */
static inline FIRN_HD void firn_fem_slots_store(float *slot, int ne, int e, float vol, firn_mat3 G,
                                                firn_mat3 B)
{
    const firn_mat3 H = firn_m3_mul_bt(G, B);
    const int ns = 4 * ne;
    for (int r = 0; r < 3; r++) {
        float s0 = 0.0f;
        for (int k = 0; k < 3; k++) {
            const float h = vol * H.m[3 * r + k];
            slot[firn_soa_index(r, ns, 4 * e + k + 1)] = h;
            s0 += h;
        }
        slot[firn_soa_index(r, ns, 4 * e)] = -s0;
    }
}

/* Newton's element pass at x = x0 + u: the energy gradient's slots
 * (V P B^T) and the element Hessian (projected), stored at H. Returns V Psi. */
static inline FIRN_HD float firn_fem_implicit_element(int e, const firn_fem_material *mats,
                                                      const firn_fem_elements *E, const float *x0,
                                                      const float *u, int n, float *gslot, float *H)
{
    const firn_fem_material *m = &mats[E->mat[e]];
    const firn_mat3 F = firn_fem_F_step(E, x0, u, n, e);
    firn_fem_slots_store(gslot, E->n, e, E->vol[e], firn_fem_stress(m, F), firn_fem_load_B(E, e));
    const firn_fem_hess h = firn_fem_hessian(m, F, 1);
    firn_fem_hess_store(H, E->n, e, &h);
    return E->vol[e] * firn_fem_energy_density(m, F);
}

/* V Psi of element e at x0 + u (the line search's energy). */
static inline FIRN_HD float firn_fem_implicit_element_energy(int e, const firn_fem_material *mats,
                                                             const firn_fem_elements *E,
                                                             const float *x0, const float *u, int n)
{
    return E->vol[e] * firn_fem_energy_density(&mats[E->mat[e]], firn_fem_F_step(E, x0, u, n, e));
}

/* K_e p into element e's slots: dF = D(p) B, dP = H : dF, slots V dP B^T. */
static inline FIRN_HD void firn_fem_implicit_element_Ap(int e, const firn_fem_elements *E,
                                                        const float *H, const float *p, int n,
                                                        float *aslot)
{
    const firn_mat3 B = firn_fem_load_B(E, e);
    const firn_fem_hess h = firn_fem_hess_load(H, E->n, e);
    const firn_mat3 dF = firn_m3_mul(firn_fem_edges(E, p, n, e), B);
    firn_fem_slots_store(aslot, E->n, e, E->vol[e], firn_fem_hess_apply(&h, dF), B);
}

/* ---- per vertex --------------------------------------------------------- */

/* The sum of vertex i's slots in adjacency order (deterministic). */
static inline FIRN_HD firn_vec3 firn_fem_gather_slots(int i, const firn_fem_vertices *V,
                                                      const float *slot, int ne)
{
    const int ns = 4 * ne;
    firn_vec3 f = firn_v3(0.0f, 0.0f, 0.0f);
    for (int a = V->adj_start[i]; a < V->adj_start[i + 1]; a++) {
        const int s = V->adj[a];
        f = firn_add(
            f, firn_v3(slot[s], slot[firn_soa_index(1, ns, s)], slot[firn_soa_index(2, ns, s)]));
    }
    return f;
}

/* The row of element e's "shape gradient" for its vertex k: dF = d b^T for
 * a displacement d of that vertex (b = row k-1 of B, or minus their sum). */
static inline FIRN_HD firn_vec3 firn_fem_shape_row(const firn_fem_elements *E, int e, int k)
{
    const firn_mat3 B = firn_fem_load_B(E, e);
    if (k > 0)
        return firn_v3(B.m[3 * (k - 1)], B.m[3 * (k - 1) + 1], B.m[3 * (k - 1) + 2]);
    return firn_v3(-(B.m[0] + B.m[3] + B.m[6]), -(B.m[1] + B.m[4] + B.m[7]),
                   -(B.m[2] + B.m[5] + B.m[8]));
}

/* Vertex i's 3x3 diagonal block of A = cm m_i I + ck K (K's block: the sum
 * over i's elements of V_e (H : d b^T) b for d the unit vectors), row-major. */
static inline FIRN_HD firn_mat3 firn_fem_implicit_diag_block(int i, const firn_fem_vertices *V,
                                                             const firn_fem_elements *E,
                                                             const float *H, float cm, float ck)
{
    firn_mat3 D = firn_m3_diag(cm * V->mass[i], cm * V->mass[i], cm * V->mass[i]);
    for (int a = V->adj_start[i]; a < V->adj_start[i + 1]; a++) {
        const int s = V->adj[a], e = s / 4;
        const firn_vec3 b = firn_fem_shape_row(E, e, s % 4);
        const firn_fem_hess h = firn_fem_hess_load(H, E->n, e);
        for (int c = 0; c < 3; c++) {
            firn_mat3 dF;
            for (int r = 0; r < 3; r++)
                for (int q = 0; q < 3; q++)
                    dF.m[3 * r + q] = (r == c ? b.v[q] : 0.0f);
            const firn_vec3 col = firn_m3_apply(firn_fem_hess_apply(&h, dF), b);
            for (int r = 0; r < 3; r++)
                D.m[3 * r + c] += ck * E->vol[e] * col.v[r];
        }
    }
    return D;
}

/* Inverse of a symmetric positive definite 3x3 (the block-Jacobi
 * preconditioner), by cofactors; identity for a singular block. */
static inline FIRN_HD firn_mat3 firn_fem_inverse3(firn_mat3 A)
{
    const float *a = A.m;
    firn_mat3 C = {{a[4] * a[8] - a[5] * a[7], a[2] * a[7] - a[1] * a[8], a[1] * a[5] - a[2] * a[4],
                    a[5] * a[6] - a[3] * a[8], a[0] * a[8] - a[2] * a[6], a[2] * a[3] - a[0] * a[5],
                    a[3] * a[7] - a[4] * a[6], a[1] * a[6] - a[0] * a[7],
                    a[0] * a[4] - a[1] * a[3]}};
    const float det = a[0] * C.m[0] + a[1] * C.m[3] + a[2] * C.m[6];
    if (!(fabsf(det) > 0.0f))
        return firn_m3_identity();
    for (int k = 0; k < 9; k++)
        C.m[k] /= det;
    return C;
}

/* Vertex i's row of A p: cm m_i p_i + ck (K p)_i, 0 for a fixed vertex. */
static inline FIRN_HD firn_vec3 firn_fem_implicit_vertex_Ap(int i, const firn_fem_vertices *V,
                                                            const float *aslot, int ne,
                                                            const float *p, float cm, float ck)
{
    if (V->fixed[i])
        return firn_v3(0.0f, 0.0f, 0.0f);
    return firn_add(firn_scale(firn_load3(p, V->n, i), cm * V->mass[i]),
                    firn_scale(firn_fem_gather_slots(i, V, aslot, ne), ck));
}

/* Vertex i's energy gradient at u (without the stiffness damping term):
 * m/dt^2 (u - dt v - dt^2 g) + alpha m/dt u + sum of its gradient slots. */
static inline FIRN_HD firn_vec3 firn_fem_implicit_vertex_gradient(int i, const firn_fem_vertices *V,
                                                                  const float *gslot, int ne,
                                                                  const float *u, const float g[3],
                                                                  float dt, float alpha)
{
    if (V->fixed[i])
        return firn_v3(0.0f, 0.0f, 0.0f);
    const firn_vec3 ui = firn_load3(u, V->n, i), vi = firn_load3(V->v, V->n, i);
    const float k = V->mass[i] / (dt * dt);
    firn_vec3 r;
    for (int c = 0; c < 3; c++)
        r.v[c] = k * (ui.v[c] - dt * vi.v[c] - dt * dt * g[c]) + alpha * dt * k * ui.v[c];
    return firn_add(r, firn_fem_gather_slots(i, V, gslot, ne));
}

/* ---- walls in the solve (docs/PHYSICS.md, FEM, "Implicit integration") -- */

/* The domain's faces P->lower, P->upper bound each component of x0 + u;
 * P NULL: no walls. A component is held (its bit c set in the result)
 * when the vertex is on or past a face and the energy gradient g pushes it
 * into that face (g_c > 0 at a lower face, < 0 at an upper one): Newton
 * then treats it as fixed. One that g pulls away is free again, so a body
 * lifts off. On a sticky face a held normal holds the other two
 * components too. g's held components are zeroed: what is left is the
 * gradient of the free ones. Fixed vertices hold nothing here (their g is
 * already 0 and the solve never moves them). */
static inline FIRN_HD int firn_fem_implicit_vertex_hold(int i, const firn_fem_vertices *V,
                                                        const firn_fem_params *P, const float *u,
                                                        firn_vec3 *g)
{
    if (!P || V->fixed[i])
        return 0;
    int held = 0, stick = 0;
    for (int a = 0; a < 3; a++) {
        const float ua = u[firn_soa_index(a, V->n, i)], x0 = V->x0[firn_soa_index(a, V->n, i)];
        if (ua <= P->lower[a] - x0 && g->v[a] > 0.0f)
            held |= 1 << a, stick |= P->wall_type[2 * a] == FIRN_W_STICKY;
        else if (ua >= P->upper[a] - x0 && g->v[a] < 0.0f)
            held |= 1 << a, stick |= P->wall_type[2 * a + 1] == FIRN_W_STICKY;
    }
    if (stick)
        held = 7;
    for (int a = 0; a < 3; a++)
        if (held >> a & 1)
            g->v[a] = 0.0f;
    return held;
}

/* Puts vertex i's u back inside the walls: lower - x0 <= u <= upper - x0
 * (the same float bounds that firn_fem_implicit_vertex_hold tests, so a
 * projected component is exactly on its face). */
static inline FIRN_HD void firn_fem_implicit_project(int i, const firn_fem_vertices *V,
                                                     const firn_fem_params *P, float *u)
{
    if (!P || V->fixed[i])
        return;
    for (int a = 0; a < 3; a++) {
        const long long k = firn_soa_index(a, V->n, i);
        const float x0 = V->x0[k];
        u[k] = firn_minf(firn_maxf(u[k], P->lower[a] - x0), P->upper[a] - x0);
    }
}

/* The preconditioner's block of vertex i: the inverse of its 3x3 block of
 * A restricted to its free components (held ones: zero rows and columns),
 * 0 for a fixed vertex. */
static inline FIRN_HD firn_mat3 firn_fem_implicit_precond(int i, const firn_fem_vertices *V,
                                                          const firn_fem_elements *E,
                                                          const float *H, float cm, float ck,
                                                          int held)
{
    if (V->fixed[i] || held == 7)
        return firn_m3_diag(0.0f, 0.0f, 0.0f);
    firn_mat3 D = firn_fem_implicit_diag_block(i, V, E, H, cm, ck);
    for (int c = 0; c < 3; c++)
        if (held >> c & 1)
            for (int k = 0; k < 3; k++)
                D.m[3 * c + k] = D.m[3 * k + c] = (k == c ? 1.0f : 0.0f);
    firn_mat3 M = firn_fem_inverse3(D);
    for (int c = 0; c < 3; c++)
        if (held >> c & 1)
            for (int k = 0; k < 3; k++)
                M.m[3 * c + k] = M.m[3 * k + c] = 0.0f;
    return M;
}

#endif
