/* firn_svd.h - robust 3x3 singular value decomposition, A = U diag(s) V^T.
 *
 * The structure follows McAdams et al. 2011 ("Computing the singular value
 * decomposition of 3x3 matrices with minimal branching and elementary
 * floating point operations"): Jacobi eigenanalysis of the symmetric A^T A
 * gives V, the columns of A V are sorted by length, and a Givens QR of A V
 * gives U and the singular values. Unlike the paper we use exact Jacobi
 * rotations (not the quaternion approximation) and a convergence test, so the
 * result holds to float rounding for degenerate (rank 0..2) and inverted A.
 *
 * Conventions (those of Genesis/taichi's svd): U and V are proper rotations
 * (det = +1); s[0] >= s[1] >= |s[2]|; s[2] < 0 exactly when det A < 0. */
#ifndef FIRN_SVD_H
#define FIRN_SVD_H

#include "firn_math.h"

/* One Jacobi rotation on the symmetric S (rows/cols p, q) that zeroes S[p][q],
 * accumulated into V (V <- V G). */
static inline FIRN_HD void firn_jacobi_rotate(firn_mat3 *S, firn_mat3 *V, int p, int q)
{
    float spq = S->m[3 * p + q];
    if (fabsf(spq) < 1e-30f)
        return;
    float theta = (S->m[3 * q + q] - S->m[3 * p + p]) / (2.0f * spq);
    float t = (theta >= 0.0f ? 1.0f : -1.0f) / (fabsf(theta) + sqrtf(theta * theta + 1.0f));
    float c = 1.0f / sqrtf(t * t + 1.0f);
    float s = t * c;
    /* S <- G^T S G with G = identity except G[p][p] = G[q][q] = c, G[p][q] = s,
     * G[q][p] = -s. */
    for (int k = 0; k < 3; k++) { /* columns: S G */
        float skp = S->m[3 * k + p], skq = S->m[3 * k + q];
        S->m[3 * k + p] = c * skp - s * skq;
        S->m[3 * k + q] = s * skp + c * skq;
    }
    for (int k = 0; k < 3; k++) { /* rows: G^T (S G) */
        float spk = S->m[3 * p + k], sqk = S->m[3 * q + k];
        S->m[3 * p + k] = c * spk - s * sqk;
        S->m[3 * q + k] = s * spk + c * sqk;
    }
    S->m[3 * p + q] = S->m[3 * q + p] = 0.0f;
    for (int k = 0; k < 3; k++) {
        float vkp = V->m[3 * k + p], vkq = V->m[3 * k + q];
        V->m[3 * k + p] = c * vkp - s * vkq;
        V->m[3 * k + q] = s * vkp + c * vkq;
    }
}

/* Swap columns i and j of M, negating one so a rotation stays a rotation. */
static inline FIRN_HD void firn_swap_cols(firn_mat3 *M, int i, int j)
{
    for (int k = 0; k < 3; k++) {
        float t = M->m[3 * k + i];
        M->m[3 * k + i] = -M->m[3 * k + j];
        M->m[3 * k + j] = t;
    }
}

/* Givens rotation on rows p, q of B (p < q) zeroing B[q][col]; U <- U G. The
 * new B[p][col] = sqrt(a^2 + b^2) >= 0. */
static inline FIRN_HD void firn_givens_qr(firn_mat3 *B, firn_mat3 *U, int p, int q, int col)
{
    float a = B->m[3 * p + col], b = B->m[3 * q + col];
    float r = sqrtf(a * a + b * b);
    if (r < 1e-30f)
        return;
    float c = a / r, s = b / r;
    for (int k = 0; k < 3; k++) {
        float bp = B->m[3 * p + k], bq = B->m[3 * q + k];
        B->m[3 * p + k] = c * bp + s * bq;
        B->m[3 * q + k] = -s * bp + c * bq;
    }
    for (int k = 0; k < 3; k++) {
        float up = U->m[3 * k + p], uq = U->m[3 * k + q];
        U->m[3 * k + p] = c * up + s * uq;
        U->m[3 * k + q] = -s * up + c * uq;
    }
}

static inline FIRN_HD void firn_svd3(firn_mat3 A, firn_mat3 *U, firn_vec3 *sig, firn_mat3 *V)
{
    firn_mat3 S = firn_m3_mul(firn_m3_transpose(A), A);
    *V = firn_m3_identity();
    float scale = S.m[0] + S.m[4] + S.m[8];
    for (int sweep = 0; sweep < 12; sweep++) {
        float off = fabsf(S.m[1]) + fabsf(S.m[2]) + fabsf(S.m[5]);
        if (off <= 1e-9f * scale)
            break;
        firn_jacobi_rotate(&S, V, 0, 1);
        firn_jacobi_rotate(&S, V, 0, 2);
        firn_jacobi_rotate(&S, V, 1, 2);
    }
    /* Sort eigenvalues of A^T A (squared singular values) in decreasing order. */
    float e0 = S.m[0], e1 = S.m[4], e2 = S.m[8], t;
    if (e0 < e1) {
        firn_swap_cols(V, 0, 1);
        t = e0;
        e0 = e1;
        e1 = t;
    }
    if (e0 < e2) {
        firn_swap_cols(V, 0, 2);
        t = e0;
        e0 = e2;
        e2 = t;
    }
    if (e1 < e2) {
        firn_swap_cols(V, 1, 2);
        t = e1;
        e1 = e2;
        e2 = t;
    }
    (void)e0;
    firn_mat3 B = firn_m3_mul(A, *V);
    *U = firn_m3_identity();
    firn_givens_qr(&B, U, 0, 1, 0);
    firn_givens_qr(&B, U, 0, 2, 0);
    firn_givens_qr(&B, U, 1, 2, 1);
    *sig = firn_v3(B.m[0], B.m[4], B.m[8]);
}

#endif
