/* firn_math.h - small fixed-size vector and matrix algebra (float32).
 * Matrices are row-major 3x3: m[3*r + c]. */
#ifndef FIRN_MATH_H
#define FIRN_MATH_H

#include "firn_hd.h"

typedef struct {
    float v[3];
} firn_vec3; /* 12 bytes */
typedef struct {
    float m[9];
} firn_mat3; /* 36 bytes */

static inline FIRN_HD firn_vec3 firn_v3(float x, float y, float z)
{
    firn_vec3 r = {{x, y, z}};
    return r;
}

static inline FIRN_HD float firn_dot(firn_vec3 a, firn_vec3 b)
{
    return a.v[0] * b.v[0] + a.v[1] * b.v[1] + a.v[2] * b.v[2];
}

static inline FIRN_HD firn_vec3 firn_cross(firn_vec3 a, firn_vec3 b)
{
    return firn_v3(a.v[1] * b.v[2] - a.v[2] * b.v[1], a.v[2] * b.v[0] - a.v[0] * b.v[2],
                   a.v[0] * b.v[1] - a.v[1] * b.v[0]);
}

static inline FIRN_HD firn_vec3 firn_add(firn_vec3 a, firn_vec3 b)
{
    return firn_v3(a.v[0] + b.v[0], a.v[1] + b.v[1], a.v[2] + b.v[2]);
}

static inline FIRN_HD firn_vec3 firn_sub(firn_vec3 a, firn_vec3 b)
{
    return firn_v3(a.v[0] - b.v[0], a.v[1] - b.v[1], a.v[2] - b.v[2]);
}

static inline FIRN_HD firn_vec3 firn_scale(firn_vec3 a, float s)
{
    return firn_v3(a.v[0] * s, a.v[1] * s, a.v[2] * s);
}

static inline FIRN_HD float firn_norm(firn_vec3 a) { return sqrtf(firn_dot(a, a)); }

static inline FIRN_HD firn_mat3 firn_m3_identity(void)
{
    firn_mat3 r = {{1, 0, 0, 0, 1, 0, 0, 0, 1}};
    return r;
}

static inline FIRN_HD firn_mat3 firn_m3_diag(float a, float b, float c)
{
    firn_mat3 r = {{a, 0, 0, 0, b, 0, 0, 0, c}};
    return r;
}

static inline FIRN_HD firn_mat3 firn_m3_mul(firn_mat3 a, firn_mat3 b)
{
    firn_mat3 r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r.m[3 * i + j] = a.m[3 * i + 0] * b.m[0 + j] + a.m[3 * i + 1] * b.m[3 + j] +
                             a.m[3 * i + 2] * b.m[6 + j];
    return r;
}

/* a * b^T */
static inline FIRN_HD firn_mat3 firn_m3_mul_bt(firn_mat3 a, firn_mat3 b)
{
    firn_mat3 r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r.m[3 * i + j] = a.m[3 * i + 0] * b.m[3 * j + 0] + a.m[3 * i + 1] * b.m[3 * j + 1] +
                             a.m[3 * i + 2] * b.m[3 * j + 2];
    return r;
}

static inline FIRN_HD firn_mat3 firn_m3_transpose(firn_mat3 a)
{
    firn_mat3 r = {{a.m[0], a.m[3], a.m[6], a.m[1], a.m[4], a.m[7], a.m[2], a.m[5], a.m[8]}};
    return r;
}

static inline FIRN_HD firn_vec3 firn_m3_apply(firn_mat3 a, firn_vec3 x)
{
    return firn_v3(a.m[0] * x.v[0] + a.m[1] * x.v[1] + a.m[2] * x.v[2],
                   a.m[3] * x.v[0] + a.m[4] * x.v[1] + a.m[5] * x.v[2],
                   a.m[6] * x.v[0] + a.m[7] * x.v[1] + a.m[8] * x.v[2]);
}

static inline FIRN_HD float firn_m3_det(firn_mat3 a)
{
    return a.m[0] * (a.m[4] * a.m[8] - a.m[5] * a.m[7]) -
           a.m[1] * (a.m[3] * a.m[8] - a.m[5] * a.m[6]) +
           a.m[2] * (a.m[3] * a.m[7] - a.m[4] * a.m[6]);
}

/* U diag(s) V^T */
static inline FIRN_HD firn_mat3 firn_m3_usv(firn_mat3 u, firn_vec3 s, firn_mat3 v)
{
    firn_mat3 r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r.m[3 * i + j] = u.m[3 * i + 0] * s.v[0] * v.m[3 * j + 0] +
                             u.m[3 * i + 1] * s.v[1] * v.m[3 * j + 1] +
                             u.m[3 * i + 2] * s.v[2] * v.m[3 * j + 2];
    return r;
}

/* Vector i of a component-major array of n vectors (component c at c*n + i,
 * firn_soa_index). */
static inline FIRN_HD firn_vec3 firn_load3(const float *a, int n, int i)
{
    return firn_v3(a[i], a[firn_soa_index(1, n, i)], a[firn_soa_index(2, n, i)]);
}

static inline FIRN_HD void firn_store3(float *a, int n, int i, firn_vec3 v)
{
    a[i] = v.v[0];
    a[firn_soa_index(1, n, i)] = v.v[1];
    a[firn_soa_index(2, n, i)] = v.v[2];
}

#endif
