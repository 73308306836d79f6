/* surface.c - see surface.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "mesh.h"
#include "surface.h"

static int alloc_surface(firn_surface *m, int nv, int nt, firn_error *err)
{
    m->nv = nv;
    m->nt = nt;
    m->v = malloc((size_t)3 * nv * sizeof(float));
    m->tri = malloc((size_t)3 * nt * sizeof(int));
    if (!m->v || !m->tri) {
        firn_surface_free(m);
        firn_set_error(err, FIRN_E_NOMEM, "out of memory for a surface of %d vertices", nv);
        return FIRN_E_NOMEM;
    }
    return 0;
}

void firn_surface_free(firn_surface *m)
{
    free(m->v);
    free(m->tri);
    m->v = NULL;
    m->tri = NULL;
    m->nv = m->nt = 0;
}

static void put_vertex(firn_surface *m, int i, float x, float y, float z)
{
    m->v[3 * i] = x;
    m->v[3 * i + 1] = y;
    m->v[3 * i + 2] = z;
}

static void put_tri(firn_surface *m, int t, int a, int b, int c)
{
    m->tri[3 * t] = a;
    m->tri[3 * t + 1] = b;
    m->tri[3 * t + 2] = c;
}

/* A solid of revolution about axis `axis` from its profile: count points
 * (rho, h) from the top pole (rho 0, on the axis at height h) down to the
 * bottom pole, the ones between them rings of FIRN_SURFACE_SEGMENTS
 * vertices at radius rho. Heights go along the axis, angles counter-
 * clockwise seen from its positive end. */
static int lathe(const float (*profile)[2], int count, int axis, firn_surface *m, firn_error *err)
{
    const int S = FIRN_SURFACE_SEGMENTS, rings = count - 2;
    if (alloc_surface(m, 2 + rings * S, 2 * S * rings, err))
        return FIRN_E_NOMEM;
    const int u = (axis + 1) % 3, w = (axis + 2) % 3; /* e_u x e_w = e_axis */
    float p[3];
    for (int k = 0; k < count; k++) {
        const int first = k == 0 ? 0 : k == count - 1 ? 1 : 2 + (k - 1) * S;
        const int n = k == 0 || k == count - 1 ? 1 : S;
        for (int j = 0; j < n; j++) {
            const double th = 2.0 * M_PI * j / S;
            p[axis] = profile[k][1];
            p[u] = (float)(profile[k][0] * cos(th));
            p[w] = (float)(profile[k][0] * sin(th));
            put_vertex(m, first + j, p[0], p[1], p[2]);
        }
    }
    int t = 0;
    for (int j = 0; j < S; j++) {
        const int j1 = (j + 1) % S;
        put_tri(m, t++, 0, 2 + j, 2 + j1);
        const int last = 2 + (rings - 1) * S;
        put_tri(m, t++, 1, last + j1, last + j);
        for (int r = 0; r + 1 < rings; r++) {
            const int up = 2 + r * S, lo = up + S;
            put_tri(m, t++, up + j, lo + j, lo + j1);
            put_tri(m, t++, up + j, lo + j1, up + j1);
        }
    }
    return 0;
}

/* A box of half edges h: 8 corners (corner c at (+-h0, +-h1, +-h2), bit a of
 * c set for +), two triangles per face. */
static int box(const float h[3], firn_surface *m, firn_error *err)
{
    if (alloc_surface(m, 8, 12, err))
        return FIRN_E_NOMEM;
    for (int c = 0; c < 8; c++)
        put_vertex(m, c, c & 1 ? h[0] : -h[0], c & 2 ? h[1] : -h[1], c & 4 ? h[2] : -h[2]);
    int t = 0;
    for (int a = 0; a < 3; a++) {
        const int b = 1 << ((a + 1) % 3), d = 1 << ((a + 2) % 3);
        for (int side = 0; side < 2; side++) {
            const int base = side ? 1 << a : 0;
            /* Corners base, base+b, base+b+d, base+d go counter-clockwise
             * seen from +a (e_b x e_d = e_a); the - face takes them reversed. */
            int q[4] = {base, base + b, base + b + d, base + d};
            if (!side) {
                int s = q[1];
                q[1] = q[3];
                q[3] = s;
            }
            put_tri(m, t++, q[0], q[1], q[2]);
            put_tri(m, t++, q[0], q[2], q[3]);
        }
    }
    return 0;
}

/* The square of half side hs in the plane through the origin with unit
 * normal n, its triangles facing n. */
static int plane(const float n[3], float hs, firn_surface *m, firn_error *err)
{
    if (alloc_surface(m, 4, 2, err))
        return FIRN_E_NOMEM;
    /* t1: n crossed with the axis least aligned with it; t2 = n x t1, so
     * t1 x t2 = n. */
    int a = fabsf(n[0]) <= fabsf(n[1]) && fabsf(n[0]) <= fabsf(n[2]) ? 0
            : fabsf(n[1]) <= fabsf(n[2])                             ? 1
                                                                     : 2;
    float e[3] = {0.0f, 0.0f, 0.0f}, t1[3], t2[3];
    e[a] = 1.0f;
    t1[0] = n[1] * e[2] - n[2] * e[1];
    t1[1] = n[2] * e[0] - n[0] * e[2];
    t1[2] = n[0] * e[1] - n[1] * e[0];
    const float l = sqrtf(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2]);
    for (int k = 0; k < 3; k++)
        t1[k] /= l;
    t2[0] = n[1] * t1[2] - n[2] * t1[1];
    t2[1] = n[2] * t1[0] - n[0] * t1[2];
    t2[2] = n[0] * t1[1] - n[1] * t1[0];
    static const float s[4][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
    for (int c = 0; c < 4; c++)
        put_vertex(m, c, hs * (s[c][0] * t1[0] + s[c][1] * t2[0]),
                   hs * (s[c][0] * t1[1] + s[c][1] * t2[1]),
                   hs * (s[c][0] * t1[2] + s[c][1] * t2[2]));
    put_tri(m, 0, 0, 1, 2);
    put_tri(m, 1, 0, 2, 3);
    return 0;
}

int firn_shape_surface(const firn_rigid_shape_def *s, float plane_half, firn_surface *out,
                       firn_error *err)
{
    memset(out, 0, sizeof *out);
    const int R = FIRN_SURFACE_RINGS;
    float prof[FIRN_SURFACE_RINGS + 2][2];
    const float r = s->radius, hh = 0.5f * s->height;
    switch (s->type) {
    case FIRN_RSHAPE_PLANE: {
        float n[3], l = 0.0f;
        for (int a = 0; a < 3; a++)
            l += s->normal[a] * s->normal[a];
        l = sqrtf(l);
        for (int a = 0; a < 3; a++)
            n[a] = l > 0.0f ? s->normal[a] / l : (a == 1);
        return plane(n, plane_half, out, err);
    }
    case FIRN_RSHAPE_BOX: {
        const float h[3] = {0.5f * s->size[0], 0.5f * s->size[1], 0.5f * s->size[2]};
        return box(h, out, err);
    }
    case FIRN_RSHAPE_SPHERE:
    case FIRN_RSHAPE_CAPSULE: {
        /* Polar angle pi k / R from the top pole; a capsule's upper half
         * (equator included) raised by hh and its lower half (the equator
         * again) lowered by hh, the band between them its cylinder. */
        const int capsule = s->type == FIRN_RSHAPE_CAPSULE;
        int c = 0;
        for (int k = 0; k <= R; k++) {
            const double ph = M_PI * k / R;
            const float rho = k == 0 || k == R ? 0.0f : (float)(r * sin(ph));
            const float y = (float)(r * cos(ph));
            if (capsule && k == R / 2) {
                prof[c][0] = rho, prof[c++][1] = y + hh;
                prof[c][0] = rho, prof[c++][1] = y - hh;
            } else {
                prof[c][0] = rho;
                prof[c++][1] = y + (capsule ? (k < R / 2 ? hh : -hh) : 0.0f);
            }
        }
        return lathe((const float(*)[2])prof, c, capsule ? s->axis : 1, out, err);
    }
    case FIRN_RSHAPE_CYLINDER: {
        const float cyl[4][2] = {{0.0f, hh}, {r, hh}, {r, -hh}, {0.0f, -hh}};
        return lathe(cyl, 4, s->axis, out, err);
    }
    case FIRN_RSHAPE_MESH: {
        const firn_mesh *mesh;
        int rc = firn_mesh_get(s->file, s->scale, 0, &mesh, err);
        if (rc)
            return rc;
        if (alloc_surface(out, mesh->nv, mesh->nt, err))
            return FIRN_E_NOMEM;
        memcpy(out->v, mesh->v, (size_t)3 * mesh->nv * sizeof(float));
        memcpy(out->tri, mesh->tri, (size_t)3 * mesh->nt * sizeof(int));
        return 0;
    }
    default:
        firn_set_error(err, FIRN_E_SCENE, "unknown rigid shape type %d", (int)s->type);
        return FIRN_E_SCENE;
    }
}
