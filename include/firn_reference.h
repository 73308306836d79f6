/* firn_reference.h - the MLS-MPM transfers as a textbook writes them, to be
 * read before firn_mpm.h.
 *
 * Same physics as firn_p2g_particle and firn_g2p_particle (docs/PHYSICS.md
 * section 2) without their optimisations: one particle at a time, each of the
 * 27 stencil nodes visited with its own dpos and outer product, particles as
 * one row each, grid mass and momentum in separate arrays. Serial and host
 * only; test/test_reference.c checks the optimised bodies against it. The
 * stress written out is the elastic one (fixed corotated); another material
 * changes only that line (firn_constitutive, section 3). */
#ifndef FIRN_REFERENCE_H
#define FIRN_REFERENCE_H

#include <math.h>

#include "firn_svd.h"

/* Node (i, j, k) sits at lower + (i, j, k) dx, at index (i n[1] + j) n[2] + k. */
typedef struct {
    int n[3];
    float lower[3];
    float dx;
    float *m;       /* mass [kg] */
    float (*mv)[3]; /* momentum [kg m/s]; after the grid update, velocity [m/s] */
} firn_ref_grid;

typedef struct {
    int n;
    float (*x)[3]; /* position [m] */
    float (*v)[3]; /* velocity [m/s] */
    float (*C)[9]; /* APIC affine velocity, row-major [1/s] */
    float (*F)[9]; /* deformation gradient, row-major */
    float *mass;   /* [kg] */
    float *vol;    /* initial volume [m^3] */
} firn_ref_particles;

/* Quadratic B-spline: base is the stencil's corner node, fx = (x - lower)/dx
 * - base in [0.5, 1.5), w[o][d] the weight of node base + o along axis d.
 * base is not clamped (firn's is): x must lie in G2P's clamp box. */
static inline void firn_ref_weights(const firn_ref_grid *g, const float x[3], int base[3],
                                    float fx[3], float w[3][3])
{
    const float inv_dx = 1.0f / g->dx;
    for (int d = 0; d < 3; d++) {
        float xg = (x[d] - g->lower[d]) * inv_dx;
        base[d] = (int)floorf(xg - 0.5f);
        fx[d] = xg - (float)base[d];
        w[0][d] = 0.5f * (1.5f - fx[d]) * (1.5f - fx[d]);
        w[1][d] = 0.75f - (fx[d] - 1.0f) * (fx[d] - 1.0f);
        w[2][d] = 0.5f * (fx[d] - 0.5f) * (fx[d] - 0.5f);
    }
}

/* Fixed corotated Kirchhoff stress P F^T = 2 mu (F - R) F^T + lambda J (J - 1) I,
 * with R = U V^T the rotation of F's polar decomposition. */
static inline void firn_ref_corotated_stress(const float F[9], float mu, float lambda,
                                             float stress[9])
{
    firn_mat3 A, U, V;
    firn_vec3 s;
    for (int c = 0; c < 9; c++)
        A.m[c] = F[c];
    firn_svd3(A, &U, &s, &V);
    const float J = F[0] * (F[4] * F[8] - F[5] * F[7]) - F[1] * (F[3] * F[8] - F[5] * F[6]) +
                    F[2] * (F[3] * F[7] - F[4] * F[6]);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            float sum = 0.0f; /* ((F - R) F^T)[r][c] */
            for (int k = 0; k < 3; k++) {
                float R_rk = U.m[3 * r] * V.m[3 * k] + U.m[3 * r + 1] * V.m[3 * k + 1] +
                             U.m[3 * r + 2] * V.m[3 * k + 2];
                sum += (F[3 * r + k] - R_rk) * F[3 * c + k];
            }
            stress[3 * r + c] = 2.0f * mu * sum + (r == c ? lambda * J * (J - 1.0f) : 0.0f);
        }
}

/* Node (a, b, c) of a particle's 3 x 3 x 3 stencil: its index, its weight
 * and dpos = node - x [m]. */
static inline long long firn_ref_node(const firn_ref_grid *g, const int base[3], const float fx[3],
                                      const float w[3][3], int a, int b, int c, float *weight,
                                      float dpos[3])
{
    dpos[0] = ((float)a - fx[0]) * g->dx;
    dpos[1] = ((float)b - fx[1]) * g->dx;
    dpos[2] = ((float)c - fx[2]) * g->dx;
    *weight = w[a][0] * w[b][1] * w[c][2];
    return ((long long)(base[0] + a) * g->n[1] + base[1] + b) * g->n[2] + base[2] + c;
}

/* P2G for an elastic body. The grid must be zeroed first. F is advanced
 * here, from the C of the last G2P, as firn does (mls-mpm88 does it at the
 * end of G2P: the same sequence). */
static inline void firn_ref_p2g(firn_ref_particles p, float mu, float lambda, float dt,
                                firn_ref_grid g)
{
    const float inv_dx = 1.0f / g.dx;
    for (int i = 0; i < p.n; i++) {
        int base[3];
        float fx[3], w[3][3];
        firn_ref_weights(&g, p.x[i], base, fx, w);

        float F[9]; /* F <- (I + dt C) F */
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) {
                float CF = 0.0f;
                for (int k = 0; k < 3; k++)
                    CF += p.C[i][3 * r + k] * p.F[i][3 * k + c];
                F[3 * r + c] = p.F[i][3 * r + c] + dt * CF;
            }
        for (int c = 0; c < 9; c++)
            p.F[i][c] = F[c];

        float stress[9];
        firn_ref_corotated_stress(F, mu, lambda, stress);

        /* MLS: the force -V0 stress grad(w), with grad(w) = 4 inv_dx^2 w dpos,
         * is linear in dpos like APIC's m C, so the two scatter as one matrix. */
        float affine[9];
        for (int c = 0; c < 9; c++)
            affine[c] = -dt * p.vol[i] * 4.0f * inv_dx * inv_dx * stress[c] + p.mass[i] * p.C[i][c];

        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 3; c++) {
                    float weight, dpos[3];
                    const long long node = firn_ref_node(&g, base, fx, w, a, b, c, &weight, dpos);
                    for (int d = 0; d < 3; d++)
                        g.mv[node][d] +=
                            weight * (p.mass[i] * p.v[i][d] + affine[3 * d] * dpos[0] +
                                      affine[3 * d + 1] * dpos[1] + affine[3 * d + 2] * dpos[2]);
                    g.m[node] += weight * p.mass[i];
                }
    }
}

/* G2P, from grid velocities: v, the APIC C = 4 inv_dx^2 sum w v_node dpos^T,
 * and the advected x, kept within [lower + dx, lower + (n - 2) dx] so the
 * next stencil stays in the grid (the velocity is left as is). */
static inline void firn_ref_g2p(firn_ref_particles p, float dt, firn_ref_grid g)
{
    const float dx = g.dx, inv_dx = 1.0f / g.dx;
    for (int i = 0; i < p.n; i++) {
        int base[3];
        float fx[3], w[3][3];
        firn_ref_weights(&g, p.x[i], base, fx, w);

        float v[3] = {0.0f, 0.0f, 0.0f}, C[9] = {0.0f};
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 3; c++) {
                    float weight, dpos[3];
                    const long long node = firn_ref_node(&g, base, fx, w, a, b, c, &weight, dpos);
                    const float *gv = g.mv[node];
                    for (int r = 0; r < 3; r++) {
                        v[r] += weight * gv[r];
                        for (int q = 0; q < 3; q++)
                            C[3 * r + q] += 4.0f * inv_dx * inv_dx * weight * gv[r] * dpos[q];
                    }
                }

        for (int d = 0; d < 3; d++) {
            const float lo = g.lower[d] + dx, hi = g.lower[d] + (float)(g.n[d] - 2) * dx;
            p.x[i][d] = fminf(fmaxf(p.x[i][d] + dt * v[d], lo), hi);
            p.v[i][d] = v[d];
        }
        for (int c = 0; c < 9; c++)
            p.C[i][c] = C[c];
    }
}

#endif
