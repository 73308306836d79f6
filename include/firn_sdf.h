/* firn_sdf.h - signed distance functions of the rigid shapes, and the
 * quaternion helpers that place them in the world; shared by the CPU path
 * and the CUDA kernels.
 *
 * Each SDF is written in the shape's own frame (centre at the origin) and
 * returns the signed distance d (negative inside) and the outward unit
 * normal, the normalised gradient of d. Closed forms: Quilez, "distance
 * functions" (box, capsule, capped cylinder), with gradients taken from the
 * closest feature so that they are exact away from the medial axis.
 * Triangle meshes are sampled SDF grids with stored gradients, looked up by
 * trilinear interpolation (host/mesh.c builds them).
 * Quaternions are (w, x, y, z), unit, rotating body to world. */
#ifndef FIRN_SDF_H
#define FIRN_SDF_H

#include "firn_math.h"

enum {
    FIRN_SDF_PLANE = 0,
    FIRN_SDF_SPHERE,
    FIRN_SDF_BOX,
    FIRN_SDF_CAPSULE,
    FIRN_SDF_CYLINDER,
    FIRN_SDF_MESH,
    FIRN_SDF_COUNT
};

/* A shape in its own frame. 96 bytes. */
typedef struct {
    int type;
    int axis;        /* capsule, cylinder: 0 x, 1 y, 2 z */
    float radius;    /* sphere, capsule, cylinder [m] */
    float half[3];   /* box: half edges; capsule: half[axis] = half segment length;
                        cylinder: half[axis] = half height; mesh: half-extents of
                        its bounding box [m] */
    float normal[3]; /* plane: unit outward normal; the plane passes through the origin */
    /* mesh: a grid of n[0] x n[1] x n[2] points, point (i, j, k) at
     * lo + (i, j, k) h and at grid[4 ((i n[1] + j) n[2] + k)]: the signed
     * distance [m] and its gradient. Host or device memory, as the code
     * that evaluates it runs. */
    const float *grid;
    int n[3];
    float lo[3], h[3], inv_h[3];
} firn_sdf_shape;

/* ---- quaternions ---------------------------------------------------------- */

typedef struct {
    float q[4];
} firn_quat; /* w, x, y, z */

static inline FIRN_HD firn_quat firn_quat_mul(firn_quat a, firn_quat b)
{
    firn_quat r = {{a.q[0] * b.q[0] - a.q[1] * b.q[1] - a.q[2] * b.q[2] - a.q[3] * b.q[3],
                    a.q[0] * b.q[1] + a.q[1] * b.q[0] + a.q[2] * b.q[3] - a.q[3] * b.q[2],
                    a.q[0] * b.q[2] - a.q[1] * b.q[3] + a.q[2] * b.q[0] + a.q[3] * b.q[1],
                    a.q[0] * b.q[3] + a.q[1] * b.q[2] - a.q[2] * b.q[1] + a.q[3] * b.q[0]}};
    return r;
}

static inline FIRN_HD firn_quat firn_quat_normalize(firn_quat a)
{
    float n = sqrtf(a.q[0] * a.q[0] + a.q[1] * a.q[1] + a.q[2] * a.q[2] + a.q[3] * a.q[3]);
    float s = n > 0.0f ? 1.0f / n : 0.0f;
    firn_quat r = {{a.q[0] * s, a.q[1] * s, a.q[2] * s, a.q[3] * s}};
    if (n <= 0.0f)
        r.q[0] = 1.0f;
    return r;
}

/* Rotation by the angle |rv| about rv / |rv| [rad]. */
static inline FIRN_HD firn_quat firn_quat_from_rotvec(firn_vec3 rv)
{
    float angle = firn_norm(rv);
    firn_quat r = {{1.0f, 0.0f, 0.0f, 0.0f}};
    if (angle > 0.0f) {
        float s = sinf(0.5f * angle) / angle;
        r.q[0] = cosf(0.5f * angle);
        r.q[1] = rv.v[0] * s;
        r.q[2] = rv.v[1] * s;
        r.q[3] = rv.v[2] * s;
    }
    return r;
}

/* q x q^-1: body to world. */
static inline FIRN_HD firn_vec3 firn_quat_rotate(firn_quat q, firn_vec3 x)
{
    /* x + 2 w (u x x) + 2 u x (u x x), u = vector part */
    firn_vec3 u = firn_v3(q.q[1], q.q[2], q.q[3]);
    firn_vec3 t = firn_scale(firn_cross(u, x), 2.0f);
    return firn_add(firn_add(x, firn_scale(t, q.q[0])), firn_cross(u, t));
}

/* q^-1 x q: world to body. */
static inline FIRN_HD firn_vec3 firn_quat_unrotate(firn_quat q, firn_vec3 x)
{
    firn_quat c = {{q.q[0], -q.q[1], -q.q[2], -q.q[3]}};
    return firn_quat_rotate(c, x);
}

/* ---- primitives, in the shape's frame ------------------------------------- */

static inline FIRN_HD float firn_sdf_sphere(float r, firn_vec3 p, firn_vec3 *n)
{
    float len = firn_norm(p);
    *n = len > 0.0f ? firn_scale(p, 1.0f / len) : firn_v3(0.0f, 1.0f, 0.0f);
    return len - r;
}

static inline FIRN_HD float firn_sdf_box(const float h[3], firn_vec3 p, firn_vec3 *n)
{
    firn_vec3 q, out;
    int inside_axis = 0;
    for (int a = 0; a < 3; a++) {
        q.v[a] = fabsf(p.v[a]) - h[a];
        out.v[a] = firn_maxf(q.v[a], 0.0f);
        if (q.v[a] > q.v[inside_axis])
            inside_axis = a;
    }
    float lo = firn_norm(out);
    if (lo > 0.0f) { /* outside: towards the nearest face, edge or corner */
        for (int a = 0; a < 3; a++)
            n->v[a] = copysignf(out.v[a] / lo, p.v[a]);
        return lo;
    }
    *n = firn_v3(0.0f, 0.0f, 0.0f);
    n->v[inside_axis] = copysignf(1.0f, p.v[inside_axis]);
    return q.v[inside_axis];
}

/* Segment from -half to +half along axis, swept by radius r. */
static inline FIRN_HD float firn_sdf_capsule(float r, float half, int axis, firn_vec3 p,
                                             firn_vec3 *n)
{
    p.v[axis] -= firn_clampf(p.v[axis], -half, half);
    return firn_sdf_sphere(r, p, n);
}

/* Solid cylinder of radius r and half height `half` along axis. */
static inline FIRN_HD float firn_sdf_cylinder(float r, float half, int axis, firn_vec3 p,
                                              firn_vec3 *n)
{
    firn_vec3 rad = p;
    rad.v[axis] = 0.0f;
    float rho = firn_norm(rad);
    firn_vec3 er = rho > 0.0f ? firn_scale(rad, 1.0f / rho) : firn_v3(0.0f, 0.0f, 0.0f);
    if (rho <= 0.0f)
        er.v[(axis + 1) % 3] = 1.0f;
    firn_vec3 ea = firn_v3(0.0f, 0.0f, 0.0f);
    ea.v[axis] = copysignf(1.0f, p.v[axis]);
    float dr = rho - r, dh = fabsf(p.v[axis]) - half;
    if (dr > 0.0f && dh > 0.0f) { /* beyond the rim */
        float d = sqrtf(dr * dr + dh * dh);
        *n = firn_scale(firn_add(firn_scale(er, dr), firn_scale(ea, dh)), 1.0f / d);
        return d;
    }
    *n = dr > dh ? er : ea;
    return firn_maxf(dr, dh);
}

/* A mesh's SDF grid: trilinear interpolation of the distance and of the
 * stored gradient (normalised). Outside the grid's box, the distance to the
 * box plus the value at the nearest boundary point, and the gradient
 * pointing away from the box (as Genesis's SDF grids do). */
static inline FIRN_HD float firn_sdf_mesh(const firn_sdf_shape *s, firn_vec3 p, firn_vec3 *n)
{
    int i[3];
    float f[3], out2 = 0.0f;
    firn_vec3 dout;
    for (int a = 0; a < 3; a++) {
        float hi = s->lo[a] + (float)(s->n[a] - 1) * s->h[a];
        float c = firn_clampf(p.v[a], s->lo[a], hi);
        dout.v[a] = p.v[a] - c;
        out2 += dout.v[a] * dout.v[a];
        float u = (c - s->lo[a]) * s->inv_h[a];
        int k = firn_floor_index(u, s->n[a] - 2);
        i[a] = k;
        f[a] = firn_clampf(u - (float)k, 0.0f, 1.0f);
    }
    float q[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int c = 0; c < 8; c++) {
        int a0 = c >> 2, a1 = (c >> 1) & 1, a2 = c & 1;
        float w = (a0 ? f[0] : 1.0f - f[0]) * (a1 ? f[1] : 1.0f - f[1]) * (a2 ? f[2] : 1.0f - f[2]);
        const float *g = s->grid + 4 * (((long long)(i[0] + a0) * s->n[1] + (i[1] + a1)) * s->n[2] +
                                        (i[2] + a2));
        for (int k = 0; k < 4; k++)
            q[k] += w * g[k];
    }
    if (out2 > 0.0f) {
        float d = sqrtf(out2);
        *n = firn_scale(dout, 1.0f / d);
        return q[0] + d;
    }
    firn_vec3 g = firn_v3(q[1], q[2], q[3]);
    float len = firn_norm(g);
    *n = len > 0.0f ? firn_scale(g, 1.0f / len) : firn_v3(0.0f, 1.0f, 0.0f);
    return q[0];
}

static inline FIRN_HD float firn_sdf_local(const firn_sdf_shape *s, firn_vec3 p, firn_vec3 *n)
{
    switch (s->type) {
    case FIRN_SDF_PLANE:
        *n = firn_v3(s->normal[0], s->normal[1], s->normal[2]);
        return firn_dot(*n, p);
    case FIRN_SDF_SPHERE:
        return firn_sdf_sphere(s->radius, p, n);
    case FIRN_SDF_BOX:
        return firn_sdf_box(s->half, p, n);
    case FIRN_SDF_CAPSULE:
        return firn_sdf_capsule(s->radius, s->half[s->axis], s->axis, p, n);
    case FIRN_SDF_CYLINDER:
        return firn_sdf_cylinder(s->radius, s->half[s->axis], s->axis, p, n);
    case FIRN_SDF_MESH:
        return firn_sdf_mesh(s, p, n);
    default:
        *n = firn_v3(0.0f, 1.0f, 0.0f);
        return INFINITY;
    }
}

/* Half-extents of the shape's bounding box in its own frame; 0 for a plane,
 * which is unbounded. */
static inline FIRN_HD int firn_sdf_extent(const firn_sdf_shape *s, float e[3])
{
    for (int a = 0; a < 3; a++) {
        switch (s->type) {
        case FIRN_SDF_SPHERE:
            e[a] = s->radius;
            break;
        case FIRN_SDF_CAPSULE:
            e[a] = s->radius + (a == s->axis ? s->half[a] : 0.0f);
            break;
        case FIRN_SDF_CYLINDER:
            e[a] = a == s->axis ? s->half[a] : s->radius;
            break;
        default:
            e[a] = s->half[a];
            break;
        }
    }
    return s->type != FIRN_SDF_PLANE;
}

/* Half-extents of the world-axis bounding box of the shape turned by q. */
static inline FIRN_HD int firn_sdf_world_extent(const firn_sdf_shape *s, firn_quat q, float w[3])
{
    float e[3];
    w[0] = w[1] = w[2] = 0.0f;
    if (!firn_sdf_extent(s, e))
        return 0;
    for (int a = 0; a < 3; a++) {
        firn_vec3 u = firn_v3(0.0f, 0.0f, 0.0f);
        u.v[a] = 1.0f;
        u = firn_quat_rotate(q, u);
        for (int i = 0; i < 3; i++)
            w[i] += fabsf(u.v[i]) * e[a];
    }
    return 1;
}

/* A shape at position pos with orientation q: signed distance at world point
 * x and the world outward normal there. */
static inline FIRN_HD float firn_sdf_world(const firn_sdf_shape *s, firn_vec3 pos, firn_quat q,
                                           firn_vec3 x, firn_vec3 *n)
{
    firn_vec3 nl;
    float d = firn_sdf_local(s, firn_quat_unrotate(q, firn_sub(x, pos)), &nl);
    *n = firn_quat_rotate(q, nl);
    return d;
}

#endif
