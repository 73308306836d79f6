/* svd_batch.c - firn_svd3 and firn_svd3_eig on FIRN_SVD_BATCH matrices in
 * SIMD lanes (the CPU path's MPM runs firn_svd3_eig_batch).
 *
 * Written with GCC's vector extensions, so it compiles for any target; on
 * x86-64 the entry point is built twice (AVX2 and the baseline SSE2) and
 * the loader picks the one the CPU runs. Each step mirrors firn_svd3 in
 * include/firn_svd.h: where the scalar code returns early or breaks, the
 * lane is masked and keeps its values. Measured on the project's VM (AMD
 * EPYC, 2^20 random matrices): 300 ns per scalar SVD, 55 ns batched with
 * AVX2, 175 ns with SSE2 only. The 32-byte vectors pass only between
 * inlined helpers, so GCC's note on their ABI in a non-AVX build does not
 * apply (the Makefile builds this file with -Wno-psabi). */
#include <math.h>

#include "firn_svd.h"
#include "svd_batch.h"

#define W FIRN_SVD_BATCH
typedef float vf __attribute__((vector_size(4 * W)));
typedef int vi __attribute__((vector_size(4 * W)));
typedef struct {
    vf m[9];
} vmat3;

#define INL static inline __attribute__((always_inline))

INL vf vsel(vi mask, vf a, vf b) { return (vf)((mask & (vi)a) | (~mask & (vi)b)); }
INL vf vabs(vf a) { return (vf)((vi)a & 0x7fffffff); }
INL vf vsplat(float a) { return (vf){0} + a; }

INL vf vsqrt(vf a)
{
    vf r;
    for (int l = 0; l < W; l++)
        r[l] = sqrtf(a[l]);
    return r;
}

INL int vany(vi a)
{
    int r = 0;
    for (int l = 0; l < W; l++)
        r |= a[l];
    return r;
}

INL void videntity(vmat3 *M)
{
    for (int c = 0; c < 9; c++)
        M->m[c] = vsplat(c % 4 == 0 ? 1.0f : 0.0f);
}

/* r = a b, summed in firn_m3_mul's order. */
INL void vmul(const vmat3 *a, const vmat3 *b, vmat3 *r)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r->m[3 * i + j] = a->m[3 * i + 0] * b->m[0 + j] + a->m[3 * i + 1] * b->m[3 + j] +
                              a->m[3 * i + 2] * b->m[6 + j];
}

/* firn_jacobi_rotate in the lanes of `active`. */
INL void vjacobi_rotate(vmat3 *S, vmat3 *V, int p, int q, vi active)
{
    vf spq = S->m[3 * p + q];
    vi m = active & ~(vabs(spq) < 1e-30f);
    vf theta = (S->m[3 * q + q] - S->m[3 * p + p]) / (2.0f * spq);
    vf t = vsel(theta >= 0.0f, vsplat(1.0f), vsplat(-1.0f)) /
           (vabs(theta) + vsqrt(theta * theta + 1.0f));
    vf c = 1.0f / vsqrt(t * t + 1.0f);
    vf s = t * c;
    for (int k = 0; k < 3; k++) {
        vf skp = S->m[3 * k + p], skq = S->m[3 * k + q];
        S->m[3 * k + p] = vsel(m, c * skp - s * skq, skp);
        S->m[3 * k + q] = vsel(m, s * skp + c * skq, skq);
    }
    for (int k = 0; k < 3; k++) {
        vf spk = S->m[3 * p + k], sqk = S->m[3 * q + k];
        S->m[3 * p + k] = vsel(m, c * spk - s * sqk, spk);
        S->m[3 * q + k] = vsel(m, s * spk + c * sqk, sqk);
    }
    S->m[3 * p + q] = vsel(m, vsplat(0.0f), S->m[3 * p + q]);
    S->m[3 * q + p] = vsel(m, vsplat(0.0f), S->m[3 * q + p]);
    for (int k = 0; k < 3; k++) {
        vf vkp = V->m[3 * k + p], vkq = V->m[3 * k + q];
        V->m[3 * k + p] = vsel(m, c * vkp - s * vkq, vkp);
        V->m[3 * k + q] = vsel(m, s * vkp + c * vkq, vkq);
    }
}

/* firn_swap_cols in the lanes of m, and the same swap of two eigenvalues. */
INL void vswap_cols(vmat3 *M, vf *ei, vf *ej, int i, int j, vi m)
{
    for (int k = 0; k < 3; k++) {
        vf a = M->m[3 * k + i], b = M->m[3 * k + j];
        M->m[3 * k + i] = vsel(m, -b, a);
        M->m[3 * k + j] = vsel(m, a, b);
    }
    vf t = *ei;
    *ei = vsel(m, *ej, t);
    *ej = vsel(m, t, *ej);
}

/* firn_givens_qr, lane by lane. */
INL void vgivens_qr(vmat3 *B, vmat3 *U, int p, int q, int col)
{
    vf a = B->m[3 * p + col], b = B->m[3 * q + col];
    vf r = vsqrt(a * a + b * b);
    vi m = ~(r < 1e-30f);
    vf c = a / r, s = b / r;
    for (int k = 0; k < 3; k++) {
        vf bp = B->m[3 * p + k], bq = B->m[3 * q + k];
        B->m[3 * p + k] = vsel(m, c * bp + s * bq, bp);
        B->m[3 * q + k] = vsel(m, -s * bp + c * bq, bq);
    }
    for (int k = 0; k < 3; k++) {
        vf up = U->m[3 * k + p], uq = U->m[3 * k + q];
        U->m[3 * k + p] = vsel(m, c * up + s * uq, up);
        U->m[3 * k + q] = vsel(m, -s * up + c * uq, uq);
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void firn_svd3_batch(int n, const firn_mat3 *A, firn_mat3 *U, firn_vec3 *s, firn_mat3 *V)
{
    /* Lanes past n hold the identity, which needs no sweep. */
    vmat3 a, at, S, v, u, b;
    for (int c = 0; c < 9; c++)
        for (int l = 0; l < W; l++)
            a.m[c][l] = l < n ? A[l].m[c] : (c % 4 == 0 ? 1.0f : 0.0f);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            at.m[3 * i + j] = a.m[3 * j + i];
    vmul(&at, &a, &S);
    videntity(&v);
    vf scale = S.m[0] + S.m[4] + S.m[8];
    vi active = ~(vi){0};
    for (int sweep = 0; sweep < 12; sweep++) {
        vf off = vabs(S.m[1]) + vabs(S.m[2]) + vabs(S.m[5]);
        active &= ~(off <= 1e-9f * scale);
        if (!vany(active))
            break;
        vjacobi_rotate(&S, &v, 0, 1, active);
        vjacobi_rotate(&S, &v, 0, 2, active);
        vjacobi_rotate(&S, &v, 1, 2, active);
    }
    vf e0 = S.m[0], e1 = S.m[4], e2 = S.m[8];
    vswap_cols(&v, &e0, &e1, 0, 1, e0 < e1);
    vswap_cols(&v, &e0, &e2, 0, 2, e0 < e2);
    vswap_cols(&v, &e1, &e2, 1, 2, e1 < e2);
    vmul(&a, &v, &b);
    videntity(&u);
    vgivens_qr(&b, &u, 0, 1, 0);
    vgivens_qr(&b, &u, 0, 2, 0);
    vgivens_qr(&b, &u, 1, 2, 1);
    for (int l = 0; l < n; l++) {
        for (int c = 0; c < 9; c++) {
            U[l].m[c] = u.m[c][l];
            V[l].m[c] = v.m[c][l];
        }
        s[l] = firn_v3(b.m[0][l], b.m[4][l], b.m[8][l]);
    }
}

/* ---- firn_svd3_eig in lanes ------------------------------------------------ */

typedef struct {
    vf v[3];
} vvec3;

INL vf vdot(const vvec3 *a, const vvec3 *b)
{
    return a->v[0] * b->v[0] + a->v[1] * b->v[1] + a->v[2] * b->v[2];
}

/* a - b s, as firn_sub(a, firn_scale(b, s)). */
INL vvec3 vsub_scaled(const vvec3 *a, const vvec3 *b, vf s)
{
    vvec3 r;
    for (int k = 0; k < 3; k++)
        r.v[k] = a->v[k] - b->v[k] * s;
    return r;
}

/* firn_sym_rotate in the lanes of `active`. */
INL void vsym_rotate(vf *app, vf *aqq, vf *apq, vf *apr, vf *aqr, vmat3 *U, int p, int q, vi active)
{
    const vf a = *apq;
    const vi m = active & ~(vabs(a) < 1e-18f);
    const vf d = *aqq - *app, h2 = d * d + 4.0f * a * a;
    const vf k = 1.0f / vsqrt(h2), sg = vsel(d >= 0.0f, vsplat(1.0f), vsplat(-1.0f));
    const vf c2 = 0.5f + 0.5f * vabs(d) * k, rc = 1.0f / vsqrt(c2);
    const vf c = c2 * rc, s = sg * a * k * rc;
    const vf mid = 0.5f * (*app + *aqq), half = 0.5f * sg * h2 * k;
    *app = vsel(m, mid - half, *app);
    *aqq = vsel(m, mid + half, *aqq);
    *apq = vsel(m, vsplat(0.0f), *apq);
    const vf xr = *apr, yr = *aqr;
    *apr = vsel(m, c * xr - s * yr, xr);
    *aqr = vsel(m, s * xr + c * yr, yr);
    for (int k3 = 0; k3 < 3; k3++) {
        const vf up = U->m[3 * k3 + p], uq = U->m[3 * k3 + q];
        U->m[3 * k3 + p] = vsel(m, c * up - s * uq, up);
        U->m[3 * k3 + q] = vsel(m, s * up + c * uq, uq);
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void firn_svd3_eig_batch(int n, const firn_mat3 *A, firn_mat3 *U, firn_vec3 *s, firn_mat3 *V)
{
    /* Lanes past n hold the identity, which needs no sweep. */
    vmat3 a, u;
    for (int c = 0; c < 9; c++)
        for (int l = 0; l < W; l++)
            a.m[c][l] = l < n ? A[l].m[c] : (c % 4 == 0 ? 1.0f : 0.0f);
    /* firn_svd3_eig's scaling by a power of two (firn_pow2_exponent,
     * firn_pow2_bits; fmaxf keeps the larger of big and a NaN's other
     * operand, as the select does). */
    vf big = vsplat(0.0f);
    for (int c = 0; c < 9; c++) {
        const vf x = vabs(a.m[c]);
        big = vsel(x > big, x, big);
    }
    vi ex = ((vi)big >> 23) & 0xff;
    const vi lo = ex<1, hi = ex> 253;
    ex = (lo & 1) | (~lo & ex);
    ex = (hi & 253) | (~hi & ex);
    const vf up = (vf)(ex << 23), down = (vf)((254 - ex) << 23);
    for (int c = 0; c < 9; c++)
        a.m[c] = a.m[c] * down;
    const vf *e = a.m;
    vf s00 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
    vf s11 = e[3] * e[3] + e[4] * e[4] + e[5] * e[5];
    vf s22 = e[6] * e[6] + e[7] * e[7] + e[8] * e[8];
    vf s01 = e[0] * e[3] + e[1] * e[4] + e[2] * e[5];
    vf s02 = e[0] * e[6] + e[1] * e[7] + e[2] * e[8];
    vf s12 = e[3] * e[6] + e[4] * e[7] + e[5] * e[8];
    videntity(&u);
    const vf scale = s00 + s11 + s22;
    vi active = ~(vi){0};
    for (int sweep = 0; sweep < 12; sweep++) {
        const vf off = vabs(s01) + vabs(s02) + vabs(s12);
        active &= ~(off <= 1e-9f * scale);
        if (!vany(active))
            break;
        vsym_rotate(&s00, &s11, &s01, &s02, &s12, &u, 0, 1, active);
        vsym_rotate(&s00, &s22, &s02, &s01, &s12, &u, 0, 2, active);
        vsym_rotate(&s11, &s22, &s12, &s01, &s02, &u, 1, 2, active);
    }
    vf e0 = s00, e1 = s11, e2 = s22;
    vswap_cols(&u, &e0, &e1, 0, 1, e0 < e1);
    vswap_cols(&u, &e0, &e2, 0, 2, e0 < e2);
    vswap_cols(&u, &e1, &e2, 1, 2, e1 < e2);
    vvec3 w[3], uc[3];
    for (int j = 0; j < 3; j++) {
        for (int c = 0; c < 3; c++)
            uc[j].v[c] = u.m[3 * c + j];
        for (int c = 0; c < 3; c++)
            w[j].v[c] = e[c] * uc[j].v[0] + e[3 + c] * uc[j].v[1] + e[6 + c] * uc[j].v[2];
    }
    /* v0, s0 */
    const vf n0 = vdot(&w[0], &w[0]);
    const vi big0 = n0 > 1e-30f;
    const vf r0 = 1.0f / vsqrt(vsel(big0, n0, vsplat(1.0f)));
    vvec3 v0, v1, v2;
    for (int k = 0; k < 3; k++)
        v0.v[k] = vsel(big0, w[0].v[k] * r0, uc[0].v[k]);
    const vf s0 = vsel(big0, n0 * r0, vsplat(0.0f));
    /* v1, s1 */
    const vvec3 w1 = vsub_scaled(&w[1], &v0, vdot(&v0, &w[1]));
    const vf n1 = vdot(&w1, &w1);
    const vi big1 = (n1 > 1e-12f * n0) & (n1 > 1e-30f);
    const vf r1 = 1.0f / vsqrt(vsel(big1, n1, vsplat(1.0f)));
    vf s1 = n1 * r1;
    for (int k = 0; k < 3; k++)
        v1.v[k] = w1.v[k] * r1;
    if (vany(~big1)) { /* rank <= 1: the longer of u_1 and u_2 made normal to v_0 */
        const vvec3 c1 = vsub_scaled(&uc[1], &v0, vdot(&v0, &uc[1]));
        const vvec3 c2 = vsub_scaled(&uc[2], &v0, vdot(&v0, &uc[2]));
        const vi first = vdot(&c1, &c1) >= vdot(&c2, &c2);
        vvec3 cm;
        for (int k = 0; k < 3; k++)
            cm.v[k] = vsel(first, c1.v[k], c2.v[k]);
        const vf rm = 1.0f / vsqrt(vdot(&cm, &cm));
        for (int k = 0; k < 3; k++)
            v1.v[k] = vsel(big1, v1.v[k], cm.v[k] * rm);
        s1 = vsel(big1, s1, vsqrt(n1));
    }
    v2.v[0] = v0.v[1] * v1.v[2] - v0.v[2] * v1.v[1];
    v2.v[1] = v0.v[2] * v1.v[0] - v0.v[0] * v1.v[2];
    v2.v[2] = v0.v[0] * v1.v[1] - v0.v[1] * v1.v[0];
    const vf s2 = vdot(&w[2], &v2) * up;
    for (int l = 0; l < n; l++) {
        for (int c = 0; c < 9; c++)
            U[l].m[c] = u.m[c][l];
        for (int k = 0; k < 3; k++) {
            V[l].m[3 * k + 0] = v0.v[k][l];
            V[l].m[3 * k + 1] = v1.v[k][l];
            V[l].m[3 * k + 2] = v2.v[k][l];
        }
        s[l] = firn_v3(s0[l] * up[l], s1[l] * up[l], s2[l]);
    }
}
