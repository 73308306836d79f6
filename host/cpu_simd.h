/* cpu_simd.h - the CPU path's P2G scatter and G2P gather with a grid node's
 * four floats (momentum or velocity x, y, z and mass) in one 16-byte
 * vector: a node is one load, one add and one store in P2G, and a row of
 * three z-adjacent nodes three loads in G2P.
 *
 * Each lane does exactly the operations of firn_p2g_scatter_nodes and
 * firn_g2p_particle (include/firn_mpm.h) on its component, in the same
 * order, so without FMA contraction (the default build) the results are
 * bitwise theirs: the shared functions stay the reference the GPU runs,
 * and the tests hold these to them. In G2P the fourth lane carries the
 * mass through the same arithmetic and is dropped. Written with GCC's
 * vector extensions (SSE on x86-64, NEON on aarch64). */
#ifndef FIRN_CPU_SIMD_H
#define FIRN_CPU_SIMD_H

#include <string.h>

#include "firn_mpm.h"

typedef float firn_v4 __attribute__((vector_size(16)));

static inline firn_v4 firn_v4_load(const float *p)
{
    firn_v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void firn_v4_store(float *p, firn_v4 v) { memcpy(p, &v, sizeof v); }

typedef int firn_v4i __attribute__((vector_size(16)));

/* Lanes of a where m is set (all ones), else of b. */
static inline firn_v4 firn_v4_select(firn_v4i m, firn_v4 a, firn_v4 b)
{
    return (firn_v4)((m & (firn_v4i)a) | (~m & (firn_v4i)b));
}

/* firn_make_stencil with the three axes in the lanes of one vector: each
 * lane does the shared function's operations on its axis (firn_floor_index's
 * clamps as selects, truncation by the vector conversion). */
static inline firn_stencil firn_cpu_make_stencil(const firn_params *P, firn_vec3 x)
{
    const firn_v4 zero = {0.0f}, big = {1073741824.0f, 1073741824.0f, 1073741824.0f, 0.0f};
    const firn_v4 xv = {x.v[0], x.v[1], x.v[2], 0.0f};
    const firn_v4 lo = {P->lower[0], P->lower[1], P->lower[2], 0.0f};
    const firn_v4 xg = (xv - lo) * P->inv_dx;
    firn_v4 t = xg - 0.5f;
    t = firn_v4_select(t > zero, t, zero);
    t = firn_v4_select(t < big, t, big);
    firn_v4i b = __builtin_convertvector(t, firn_v4i);
    const firn_v4i hi = {P->n[0] - 3, P->n[1] - 3, P->n[2] - 3, 0};
    const firn_v4i below = b < hi;
    b = (b & below) | (hi & ~below);
    const firn_v4 f = xg - __builtin_convertvector(b, firn_v4);
    const firn_v4 w0 = 0.5f * (1.5f - f) * (1.5f - f);
    const firn_v4 w1 = 0.75f - (f - 1.0f) * (f - 1.0f);
    const firn_v4 w2 = 0.5f * (f - 0.5f) * (f - 0.5f);
    firn_stencil s;
    for (int a = 0; a < 3; a++) {
        s.base[a] = b[a];
        s.fx[a] = f[a];
        s.w[0][a] = w0[a];
        s.w[1][a] = w1[a];
        s.w[2][a] = w2[a];
    }
    return s;
}

/* firn_p2g_scatter_nodes, a node at a time. The momentum's rows are built
 * in vectors whose mass lane adds (a - 1) 0, (b - 1) 0 and (c - 1) 0 = +-0
 * to the mass: the mass, exactly. Always inlined, so that where `skip` is
 * the constant 0 (no CPIC) its test drops out. */
static inline __attribute__((always_inline)) void
firn_cpu_scatter_nodes(const firn_params *P, firn_grid g, const firn_p2g_state *st, unsigned skip)
{
    const firn_stencil *s = &st->s;
    firn_vec3 col[3];
    const firn_vec3 m = firn_p2g_middle(P, st, col);
    const firn_v4 m0 = {m.v[0], m.v[1], m.v[2], st->mass};
    const firn_v4 c0 = {col[0].v[0], col[0].v[1], col[0].v[2], 0.0f};
    const firn_v4 c1 = {col[1].v[0], col[1].v[1], col[1].v[2], 0.0f};
    const firn_v4 c2 = {col[2].v[0], col[2].v[1], col[2].v[2], 0.0f};
    long long sx, sy;
    float *q0 = g.node + firn_stencil_corner(P, s, &sx, &sy);
    for (int a = 0; a < 3; a++) {
        const firn_v4 ma = m0 + (float)(a - 1) * c0;
        for (int b = 0; b < 3; b++) {
            const firn_v4 row = ma + (float)(b - 1) * c1;
            float wab = s->w[a][0] * s->w[b][1];
            float *q = q0 + a * sx + b * sy;
            for (int c = 0; c < 3; c++, q += 4) {
                if ((skip >> (9 * a + 3 * b + c)) & 1u)
                    continue;
                float w = wab * s->w[c][2];
                firn_v4 add = row + (float)(c - 1) * c2;
                firn_v4_store(q, firn_v4_load(q) + w * add);
            }
        }
    }
}

/* firn_g2p_particle, a row of three nodes at a time. */
static inline int firn_cpu_g2p_particle(int i, const firn_params *P, firn_particles p, firn_grid g)
{
    firn_vec3 x = firn_load3(p.x, p.n, i);
    firn_stencil s = firn_cpu_make_stencil(P, x);
    long long sx, sy;
    const float *q0 = g.node + firn_stencil_corner(P, &s, &sx, &sy);
    const float wc0 = s.w[0][2], wc1 = s.w[1][2], wc2 = s.w[2][2];
    firn_v4 v = {0.0f}, m0 = {0.0f}, m1 = {0.0f}, m2 = {0.0f};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            const float *nd = q0 + a * sx + b * sy;
            const float wab = s.w[a][0] * s.w[b][1];
            firn_v4 t0 = wc0 * firn_v4_load(nd), t2 = wc2 * firn_v4_load(nd + 8);
            firn_v4 r = wab * (t0 + wc1 * firn_v4_load(nd + 4) + t2), rc = wab * (t2 - t0);
            v += r;
            m0 += (float)(a - 1) * r;
            m1 += (float)(b - 1) * r;
            m2 += rc;
        }
    firn_g2p_sums acc;
    for (int k = 0; k < 3; k++) {
        acc.v.v[k] = v[k];
        acc.m[0].v[k] = m0[k];
        acc.m[1].v[k] = m1[k];
        acc.m[2].v[k] = m2[k];
    }
    return firn_g2p_finish(i, P, p, x, acc.v, firn_g2p_affine(P, &s, &acc));
}

#endif
