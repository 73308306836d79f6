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

#include <string.h>

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

/* Orders the eigenvalues e0, e1, e2 decreasing by three compare-and-swaps,
 * swapping M's columns with them (firn_swap_cols keeps det M); both SVDs
 * sort their eigenvalues this way. */
static inline FIRN_HD void firn_sort_eig3(float e0, float e1, float e2, firn_mat3 *M)
{
    float t;
    if (e0 < e1) {
        firn_swap_cols(M, 0, 1);
        t = e0;
        e0 = e1;
        e1 = t;
    }
    if (e0 < e2) {
        firn_swap_cols(M, 0, 2);
        t = e0;
        e0 = e2;
        e2 = t;
    }
    if (e1 < e2)
        firn_swap_cols(M, 1, 2);
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
    firn_sort_eig3(S.m[0], S.m[4], S.m[8], V);
    firn_mat3 B = firn_m3_mul(A, *V);
    *U = firn_m3_identity();
    firn_givens_qr(&B, U, 0, 1, 0);
    firn_givens_qr(&B, U, 0, 2, 0);
    firn_givens_qr(&B, U, 1, 2, 1);
    *sig = firn_v3(B.m[0], B.m[4], B.m[8]);
}

/* 1 / sqrt(x): on the GPU the hardware's reciprocal square root (rsqrtf,
 * MUFU.RSQ, within 2 ulp), on the CPU 1 / sqrtf. */
static inline FIRN_HD float firn_rsqrtf(float x)
{
#ifdef __CUDA_ARCH__
    return rsqrtf(x);
#else
    return 1.0f / sqrtf(x);
#endif
}

/* 2^(e - 127) for x's biased exponent e clamped to [1, 253] (so that it and
 * its inverse, firn_pow2_inv, are normal floats): a power of two near |x|,
 * to scale by exactly. */
static inline FIRN_HD unsigned firn_pow2_exponent(float x)
{
    unsigned b;
    memcpy(&b, &x, sizeof b);
    const unsigned e = (b >> 23) & 0xffu;
    return e < 1u ? 1u : (e > 253u ? 253u : e);
}

static inline FIRN_HD float firn_pow2_bits(unsigned e)
{
    const unsigned b = e << 23;
    float r;
    memcpy(&r, &b, sizeof r);
    return r;
}

/* One Jacobi rotation of a symmetric 3x3 matrix held as its six distinct
 * entries, in the plane (p, q) with r the third axis: *app, *aqq, *apq and
 * the off-diagonal *apr, *aqr; it zeroes a_pq, and accumulates U <- U G
 * (G as firn_jacobi_rotate's: the same rotation, t = tan of its angle the
 * root of t^2 + 2 theta t - 1 = 0 of smaller magnitude, theta = d / (2 a_pq),
 * d = a_qq - a_pp). Without a division: the new a_pp and a_qq are the
 * eigenvalues of the 2x2 block, (a_pp + a_qq) / 2 -+ sgn(d) h / 2 with
 * h = sqrt(d^2 + 4 a_pq^2), and with k = 1 / h, cos^2 = (1 + |d| k) / 2 (in
 * [1/2, 1]) and sin = sgn(d) a_pq k / cos: two reciprocal square roots. A
 * NaN entry passes the test and spreads, for G2P to report. */
static inline FIRN_HD void firn_sym_rotate(float *app, float *aqq, float *apq, float *apr,
                                           float *aqr, firn_mat3 *U, int p, int q)
{
    const float a = *apq;
    if (fabsf(a) < 1e-18f) /* so that d^2 + 4 a^2 is a normal float */
        return;
    const float d = *aqq - *app, h2 = d * d + 4.0f * a * a;
    const float k = firn_rsqrtf(h2), sg = d >= 0.0f ? 1.0f : -1.0f;
    const float c2 = 0.5f + 0.5f * fabsf(d) * k, rc = firn_rsqrtf(c2);
    const float c = c2 * rc, s = sg * a * k * rc;
    const float mid = 0.5f * (*app + *aqq), half = 0.5f * sg * h2 * k;
    *app = mid - half;
    *aqq = mid + half;
    *apq = 0.0f;
    const float xr = *apr, yr = *aqr;
    *apr = c * xr - s * yr;
    *aqr = s * xr + c * yr;
    for (int k3 = 0; k3 < 3; k3++) {
        const float up = U->m[3 * k3 + p], uq = U->m[3 * k3 + q];
        U->m[3 * k3 + p] = c * up - s * uq;
        U->m[3 * k3 + q] = s * up + c * uq;
    }
}

/* The SVD A = U diag(s) V^T with firn_svd3's conventions (U and V proper
 * rotations, s[0] >= s[1] >= |s[2]|, s[2] < 0 exactly when det A < 0), from
 * the symmetric eigen-solve of A A^T instead of A^T A and a QR:
 *   - cyclic Jacobi on the six distinct entries of A A^T (firn_sym_rotate),
 *     with firn_svd3's stopping test, gives U and the squared singular
 *     values, sorted as firn_svd3 sorts them;
 *   - V^T = diag(s)^-1 U^T A: the columns w_j = A^T u_j are s_j v_j, so
 *     Gram-Schmidt on them gives v_0, v_1 and s_0 = |w_0|, s_1 (one
 *     reciprocal square root each, no division), v_2 = v_0 x v_1 (so V is a
 *     rotation whatever s_2 is: a singular or inverted A needs no 1 / s_2),
 *     and s_2 = w_2 . v_2, whose sign is that of det A.
 * Where A has rank 1 or 0 (s_1 below 1e-6 s_0), v_1 (and v_0) are any unit
 * vectors that complete the rotation, as any are a valid SVD there. A is
 * first scaled by a power of two (exactly) to a largest entry in [1, 2), and
 * s scaled back: A A^T neither overflows nor underflows for any finite A
 * (firn_svd3's A^T A overflows past about 1e19; a blown-up F must still
 * give a non-finite stress, not a zero one), and the thresholds below are
 * relative to A's size. */
static inline FIRN_HD void firn_svd3_eig(firn_mat3 A, firn_mat3 *U, firn_vec3 *sig, firn_mat3 *V)
{
    float big = 0.0f;
    for (int c = 0; c < 9; c++)
        big = fmaxf(big, fabsf(A.m[c]));
    const unsigned ex = firn_pow2_exponent(big);
    const float down = firn_pow2_bits(254u - ex), up = firn_pow2_bits(ex);
    for (int c = 0; c < 9; c++)
        A.m[c] *= down;
    const float *a = A.m;
    float s00 = a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
    float s11 = a[3] * a[3] + a[4] * a[4] + a[5] * a[5];
    float s22 = a[6] * a[6] + a[7] * a[7] + a[8] * a[8];
    float s01 = a[0] * a[3] + a[1] * a[4] + a[2] * a[5];
    float s02 = a[0] * a[6] + a[1] * a[7] + a[2] * a[8];
    float s12 = a[3] * a[6] + a[4] * a[7] + a[5] * a[8];
    *U = firn_m3_identity();
    const float scale = s00 + s11 + s22;
    for (int sweep = 0; sweep < 12; sweep++) {
        const float off = fabsf(s01) + fabsf(s02) + fabsf(s12);
        if (off <= 1e-9f * scale)
            break;
        firn_sym_rotate(&s00, &s11, &s01, &s02, &s12, U, 0, 1);
        firn_sym_rotate(&s00, &s22, &s02, &s01, &s12, U, 0, 2);
        firn_sym_rotate(&s11, &s22, &s12, &s01, &s02, U, 1, 2);
    }
    firn_sort_eig3(s00, s11, s22, U);
    /* w_j = A^T u_j */
    firn_vec3 w[3], u[3];
    for (int j = 0; j < 3; j++) {
        u[j] = firn_v3(U->m[j], U->m[3 + j], U->m[6 + j]);
        for (int c = 0; c < 3; c++)
            w[j].v[c] = a[c] * u[j].v[0] + a[3 + c] * u[j].v[1] + a[6 + c] * u[j].v[2];
    }
    firn_vec3 v0 = u[0], v1;
    const float n0 = firn_dot(w[0], w[0]);
    float s0 = 0.0f, s1;
    if (n0 > 1e-30f) {
        const float r = firn_rsqrtf(n0);
        v0 = firn_scale(w[0], r);
        s0 = n0 * r;
    }
    const firn_vec3 w1 = firn_sub(w[1], firn_scale(v0, firn_dot(v0, w[1])));
    const float n1 = firn_dot(w1, w1);
    if (n1 > 1e-12f * n0 && n1 > 1e-30f) {
        const float r = firn_rsqrtf(n1);
        v1 = firn_scale(w1, r);
        s1 = n1 * r;
    } else { /* rank <= 1: the longer of u_1 and u_2 made normal to v_0 */
        const firn_vec3 c1 = firn_sub(u[1], firn_scale(v0, firn_dot(v0, u[1])));
        const firn_vec3 c2 = firn_sub(u[2], firn_scale(v0, firn_dot(v0, u[2])));
        const firn_vec3 cm = firn_dot(c1, c1) >= firn_dot(c2, c2) ? c1 : c2;
        v1 = firn_scale(cm, firn_rsqrtf(firn_dot(cm, cm)));
        s1 = sqrtf(n1);
    }
    const firn_vec3 v2 = firn_cross(v0, v1);
    *sig = firn_v3(s0 * up, s1 * up, firn_dot(w[2], v2) * up);
    for (int k = 0; k < 3; k++) {
        V->m[3 * k + 0] = v0.v[k];
        V->m[3 * k + 1] = v1.v[k];
        V->m[3 * k + 2] = v2.v[k];
    }
}

#endif
