/* test_fem_coupling.c - the FEM pairs (include/firn_fem_coupling.h,
 * host/fem_coupling.c) on synthetic states built here: FEM boxes from
 * firn_tet_mesh_box, a dense MPM grid, rigid bodies, SPH particles with
 * their neighbour grid. Conservation laws are checked in double against
 * sums taken here; the one-vertex cases against closed forms. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "fem_coupling.h"

static double frand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (*s >> 8) / 16777216.0 * 2.0 - 1.0;
}

/* ---- fixtures ------------------------------------------------------------- */

typedef struct {
    firn_fem S;
    float *normal; /* S.normal */
    firn_fem_surface surf;
} fem_box;

static void fem_box_init(fem_box *b, const double lo[3], const double hi[3], const int n[3])
{
    firn_tet_mesh mesh;
    firn_error err = {0};
    cr_assert_eq(firn_tet_mesh_box(lo, hi, n, &mesh, &err), 0, "%s", err.msg);
    memset(&b->S, 0, sizeof b->S);
    b->S.mats[0] = (firn_fem_material){FIRN_FEM_LINEAR, 4e5f, 2.7e5f, 1000.0f};
    const int mat = 0;
    cr_assert_eq(firn_fem_build(&b->S, &mesh, &mat, 1, &err), 0, "%s", err.msg);
    firn_tet_mesh_free(&mesh);
    cr_assert_eq(firn_fem_surface_alloc(&b->S, &err), 0, "%s", err.msg);
    b->normal = b->S.normal;
    b->surf = firn_fem_surface_of(&b->S);
    firn_fem_normals_cpu(&b->surf);
}

static void fem_box_free(fem_box *b) { firn_fem_free(&b->S); }

static int surface_vertex_at(const fem_box *b, double x, double y, double z)
{
    const firn_fem_vertices V = b->S.V;
    for (int k = 0; k < b->S.ns; k++) {
        const firn_vec3 p = firn_load3(V.x0, V.n, b->S.surf[k]);
        if (fabs(p.v[0] - x) < 1e-6 && fabs(p.v[1] - y) < 1e-6 && fabs(p.v[2] - z) < 1e-6)
            return k;
    }
    cr_assert_fail("no surface vertex at (%g, %g, %g)", x, y, z);
    return -1;
}

/* A dense grid of n^3 nodes at spacing dx from lower, no walls (bound 0). */
typedef struct {
    firn_params P;
    firn_grid g;
    float *D;
} mpm_grid;

static void mpm_grid_init(mpm_grid *G, float lower, float dx, int n)
{
    memset(G, 0, sizeof *G);
    G->P.dx = dx;
    G->P.inv_dx = 1.0f / dx;
    G->P.dt = 1e-3f;
    for (int a = 0; a < 3; a++) {
        G->P.lower[a] = lower;
        G->P.n[a] = G->g.n[a] = n;
    }
    G->g.nodes = (long long)n * n * n;
    G->g.node = calloc(4 * (size_t)G->g.nodes, sizeof *G->g.node);
    G->D = calloc(4 * (size_t)G->g.nodes, sizeof *G->D);
}

static void mpm_grid_free(mpm_grid *G) { free(G->g.node), free(G->D); }

/* Sum of m v over the FEM vertices and M u over the nodes, in double. */
static void total_momentum(const firn_fem_vertices *V, const firn_grid *g, double p[3],
                           double *scale)
{
    p[0] = p[1] = p[2] = *scale = 0.0;
    for (int i = 0; i < V->n; i++)
        for (int c = 0; c < 3; c++) {
            p[c] += (double)V->mass[i] * V->v[c * V->n + i];
            *scale += fabs((double)V->mass[i] * V->v[c * V->n + i]);
        }
    for (long long j = 0; g && j < g->nodes; j++)
        for (int c = 0; c < 3; c++) {
            p[c] += (double)g->node[4 * j + 3] * g->node[4 * j + c];
            *scale += fabs((double)g->node[4 * j + 3] * g->node[4 * j + c]);
        }
}

/* ---- surface normal ------------------------------------------------------- */

Test(fem_coupling, normal_is_the_face_normal_on_a_face_and_area_weighted_at_an_edge)
{
    /* Cells 0.1 x 0.2 x 0.1: triangles on the y = hi face (x-z cells,
     * 0.1 x 0.1) are half the area of those on the z = hi face (x-y cells,
     * 0.1 x 0.2), so area weighting differs from counting triangles. */
    const double lo[3] = {0, 0, 0}, hi[3] = {0.2, 0.4, 0.2};
    const int n[3] = {2, 2, 2};
    fem_box b;
    fem_box_init(&b, lo, hi, n);
    const firn_fem_vertices V = b.S.V;
    /* Face centres: the face normal. */
    const double centres[6][3] = {{0.1, 0.2, 0.2}, {0.1, 0.2, 0}, {0.1, 0, 0.1},
                                  {0.1, 0.4, 0.1}, {0, 0.2, 0.1}, {0.2, 0.2, 0.1}};
    const float want[6][3] = {{0, 0, 1}, {0, 0, -1}, {0, -1, 0}, {0, 1, 0}, {-1, 0, 0}, {1, 0, 0}};
    for (int f = 0; f < 6; f++) {
        const int k = surface_vertex_at(&b, centres[f][0], centres[f][1], centres[f][2]);
        const firn_vec3 nk = firn_load3(b.normal, b.S.ns, k);
        for (int c = 0; c < 3; c++)
            cr_assert(fabsf(nk.v[c] - want[f][c]) < 1e-6f, "face %d: n = (%g, %g, %g)", f, nk.v[0],
                      nk.v[1], nk.v[2]);
    }
    /* Edge between the y = 0.4 and z = 0.2 faces: the incident triangles'
     * areas on each face, classified by where their vertices lie. */
    const int k = surface_vertex_at(&b, 0.1, 0.4, 0.2), i = b.S.surf[k];
    double area[2] = {0, 0};
    int count[2] = {0, 0};
    for (int f = 0; f < b.S.nf; f++) {
        const int *t = b.S.face + 3 * f;
        if (t[0] != i && t[1] != i && t[2] != i)
            continue;
        double p[3][3];
        for (int q = 0; q < 3; q++)
            for (int c = 0; c < 3; c++)
                p[q][c] = V.x0[c * V.n + t[q]];
        const int on_y =
            fabs(p[0][1] - 0.4) < 1e-6 && fabs(p[1][1] - 0.4) < 1e-6 && fabs(p[2][1] - 0.4) < 1e-6;
        const double u[3] = {p[1][0] - p[0][0], p[1][1] - p[0][1], p[1][2] - p[0][2]};
        const double w[3] = {p[2][0] - p[0][0], p[2][1] - p[0][1], p[2][2] - p[0][2]};
        const double cx = u[1] * w[2] - u[2] * w[1], cy = u[2] * w[0] - u[0] * w[2],
                     cz = u[0] * w[1] - u[1] * w[0];
        area[on_y ? 0 : 1] += 0.5 * sqrt(cx * cx + cy * cy + cz * cz);
        count[on_y ? 0 : 1]++;
    }
    cr_assert(count[0] > 0 && count[1] > 0);
    const double len = hypot(area[0], area[1]);
    const double ny = area[0] / len, nz = area[1] / len;
    const double cl = hypot(count[0], count[1]);
    cr_assert(fabs(ny - count[0] / cl) > 0.05, "the mesh does not tell area from count weighting");
    const firn_vec3 nk = firn_load3(b.normal, b.S.ns, k);
    cr_assert(fabsf(nk.v[0]) < 1e-6f && fabs(nk.v[1] - ny) < 1e-6 && fabs(nk.v[2] - nz) < 1e-6,
              "edge n = (%g, %g, %g), want (0, %g, %g)", nk.v[0], nk.v[1], nk.v[2], ny, nz);
    fem_box_free(&b);
}

/* ---- FEM-MPM -------------------------------------------------------------- */

/* One vertex (mass m, velocity v, normal +z) at x and its hand-built
 * surface: one vertex, no triangles. */
typedef struct {
    float x[3], v[3], x0[3], mass, f[3], normal[3];
    uint8_t fixed;
    int surf, vf_start[2];
    firn_fem_surface S;
} one_vertex;

static void one_vertex_init(one_vertex *o, firn_vec3 x, firn_vec3 v, float m)
{
    memset(o, 0, sizeof *o);
    for (int c = 0; c < 3; c++)
        o->x[c] = o->x0[c] = x.v[c], o->v[c] = v.v[c];
    o->mass = m;
    o->normal[2] = 1.0f;
    firn_fem_vertices V = {1, o->x, o->v, o->x0, &o->mass, o->f, NULL, &o->fixed, NULL};
    firn_fem_surface S = {V, 1, &o->surf, NULL, o->vf_start, NULL, o->normal, 0};
    o->S = S;
}

Test(fem_coupling, mpm_one_vertex_one_node_reaches_the_common_velocity)
{
    mpm_grid G;
    mpm_grid_init(&G, 0.0f, 0.1f, 8);
    /* Vertex at (0.43, 0.36, 0.36), normal +z: stencil base (3, 3, 3); node
     * (4, 3, 4) is 0.04 above it along n, node (4, 3, 5) 0.14 > dx above,
     * node (4, 3, 3) 0.06 below. */
    const firn_vec3 x = firn_v3(0.43f, 0.36f, 0.36f), v = firn_v3(1.0f, -2.0f, 0.5f);
    const float m = 0.3f, M = 2.0f;
    const firn_vec3 u = firn_v3(-0.5f, 0.25f, -1.5f);
    one_vertex o;
    one_vertex_init(&o, x, v, m);
    const long long j = firn_node_index(G.P.n, 4, 3, 4);
    float *q = G.g.node + 4 * j;
    q[0] = u.v[0], q[1] = u.v[1], q[2] = u.v[2], q[3] = M;
    /* The node's weight, in double. */
    double w = 1.0;
    const double xg[3] = {4.3, 3.6, 3.6};
    const int node[3] = {4, 3, 4};
    for (int a = 0; a < 3; a++) {
        const double fx = xg[a] - 3.0;
        const int off = node[a] - 3;
        w *= off == 0   ? 0.5 * (1.5 - fx) * (1.5 - fx)
             : off == 1 ? 0.75 - (fx - 1) * (fx - 1)
                        : 0.5 * (fx - 0.5) * (fx - 0.5);
    }
    cr_assert(w < 1.0 && w > 0.05);
    firn_fem_mpm_cpu(&o.S, &G.P, G.g, G.D);
    for (int c = 0; c < 3; c++) {
        const double vs = (m * v.v[c] + w * M * u.v[c]) / (m + w * M);
        const double us = (1 - w) * u.v[c] + w * vs;
        cr_assert(fabs(o.v[c] - vs) < 1e-6 * (1 + fabs(vs)), "v*[%d] = %.9g, want %.9g", c, o.v[c],
                  vs);
        cr_assert(fabs(q[c] - us) < 1e-6 * (1 + fabs(us)), "u'[%d] = %.9g, want %.9g", c, q[c], us);
        const double p0 = m * v.v[c] + M * u.v[c], p1 = (double)m * o.v[c] + (double)M * q[c];
        cr_assert(fabs(p1 - p0) < 1e-6 * (fabs(m * v.v[c]) + fabs(M * u.v[c])),
                  "momentum %d: %.9g -> %.9g", c, p0, p1);
    }
    cr_assert_eq(q[3], M, "node mass changed");
    for (long long k = 0; k < 4 * G.g.nodes; k++)
        cr_assert_eq(G.D[k], 0.0f, "scratch not cleared at %lld", k);

    /* A node more than dx beyond the vertex along n: no exchange. */
    one_vertex_init(&o, x, v, m);
    memset(q, 0, 4 * sizeof *q);
    const long long j2 = firn_node_index(G.P.n, 4, 3, 5);
    float *q2 = G.g.node + 4 * j2;
    q2[0] = u.v[0], q2[1] = u.v[1], q2[2] = u.v[2], q2[3] = M;
    firn_fem_mpm_cpu(&o.S, &G.P, G.g, G.D);
    for (int c = 0; c < 3; c++) {
        cr_assert_eq(o.v[c], v.v[c], "vertex changed by a node beyond dx");
        cr_assert_eq(q2[c], u.v[c], "node beyond dx changed");
    }
    /* A fixed vertex is an infinite mass: it keeps its velocity and the
     * node's share w of its mass takes it, u' = (1 - w) u + w v. */
    one_vertex_init(&o, x, v, m);
    o.fixed = 1;
    q[0] = u.v[0], q[1] = u.v[1], q[2] = u.v[2], q[3] = M;
    memset(q2, 0, 4 * sizeof *q2);
    firn_fem_mpm_cpu(&o.S, &G.P, G.g, G.D);
    for (int c = 0; c < 3; c++) {
        const double us = (1 - w) * u.v[c] + w * v.v[c];
        cr_assert_eq(o.v[c], v.v[c], "fixed vertex moved");
        cr_assert(fabs(q[c] - us) < 1e-6 * (1 + fabs(us)), "u'[%d] = %.9g, want %.9g", c, q[c], us);
    }
    memset(q, 0, 4 * sizeof *q);
    /* Below the vertex (inside the body) it does couple. */
    one_vertex_init(&o, x, v, m);
    memset(q2, 0, 4 * sizeof *q2);
    const long long j3 = firn_node_index(G.P.n, 4, 3, 3);
    float *q3 = G.g.node + 4 * j3;
    q3[0] = u.v[0], q3[1] = u.v[1], q3[2] = u.v[2], q3[3] = M;
    firn_fem_mpm_cpu(&o.S, &G.P, G.g, G.D);
    cr_assert(fabsf(o.v[0] - v.v[0]) > 0.01f, "vertex not coupled to a node behind it");
    mpm_grid_free(&G);
}

/* A 6^3-cell FEM box of 0.15 m (cells of 0.025) in a grid of dx 0.05:
 * several surface vertices per node, so W_j > 1 at many nodes. Random
 * vertex velocities; nodes around the box with random masses and
 * velocities. */
static void crowded_setup(fem_box *b, mpm_grid *G, unsigned seed)
{
    const double lo[3] = {0.3, 0.3, 0.3}, hi[3] = {0.45, 0.45, 0.45};
    const int n[3] = {6, 6, 6};
    fem_box_init(b, lo, hi, n);
    mpm_grid_init(G, 0.0f, 0.05f, 16);
    unsigned s = seed;
    firn_fem_vertices V = b->S.V;
    for (int i = 0; i < V.n; i++)
        for (int c = 0; c < 3; c++)
            V.v[c * V.n + i] = (float)frand(&s);
    for (long long j = 0; j < G->g.nodes; j++) {
        const firn_vec3 xn = firn_node_position(j, &G->P);
        int near = 1;
        for (int c = 0; c < 3; c++)
            near &= xn.v[c] > 0.2f && xn.v[c] < 0.55f;
        if (!near || frand(&s) < -0.6)
            continue;
        for (int c = 0; c < 3; c++)
            G->g.node[4 * j + c] = (float)(2.0 * frand(&s));
        G->g.node[4 * j + 3] = (float)(1e-3 * (1.5 + frand(&s)));
    }
}

Test(fem_coupling, mpm_conserves_momentum_and_stays_bounded_with_crowded_nodes)
{
    fem_box b;
    mpm_grid G;
    crowded_setup(&b, &G, 11);
    /* The case the normalisation exists for. */
    float wmax = 0.0f;
    for (int k = 0; k < b.S.ns; k++)
        firn_fem_mpm_weigh(k, &b.surf, &G.P, G.g, G.D);
    for (long long j = 0; j < G.g.nodes; j++) {
        wmax = firn_maxf(wmax, G.D[4 * j + 3]);
        G.D[4 * j + 3] = 0.0f;
    }
    cr_assert(wmax > 2.0f, "no node is crowded (max W = %g)", wmax);

    double p0[3], p1[3], scale;
    total_momentum(&b.S.V, &G.g, p0, &scale);
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    const firn_fem_vertices V = b.S.V;
    for (int c = 0; c < 3; c++) {
        for (int i = 0; i < V.n; i++)
            lo[c] = firn_minf(lo[c], V.v[c * V.n + i]), hi[c] = firn_maxf(hi[c], V.v[c * V.n + i]);
        for (long long j = 0; j < G.g.nodes; j++)
            if (G.g.node[4 * j + 3] > 0.0f)
                lo[c] = firn_minf(lo[c], G.g.node[4 * j + c]),
                hi[c] = firn_maxf(hi[c], G.g.node[4 * j + c]);
    }
    float *before = malloc(3 * (size_t)V.n * sizeof *before);
    memcpy(before, V.v, 3 * (size_t)V.n * sizeof *before);
    firn_fem_mpm_cpu(&b.surf, &G.P, G.g, G.D);
    total_momentum(&b.S.V, &G.g, p1, &scale);
    int changed = 0;
    for (int k = 0; k < b.S.ns; k++)
        changed += V.v[b.S.surf[k]] != before[b.S.surf[k]];
    cr_assert(changed > b.S.ns / 2, "only %d of %d surface vertices coupled", changed, b.S.ns);
    cr_log_info("FEM-MPM: max W %.2f, %d of %d vertices coupled, momentum error / scale %.2e "
                "%.2e %.2e",
                wmax, changed, b.S.ns, fabs(p1[0] - p0[0]) / scale, fabs(p1[1] - p0[1]) / scale,
                fabs(p1[2] - p0[2]) / scale);
    for (int c = 0; c < 3; c++)
        cr_assert(fabs(p1[c] - p0[c]) < 1e-6 * scale, "momentum %d: %.9g -> %.9g (scale %.3g)", c,
                  p0[c], p1[c], scale);
    /* Convex combinations: nothing leaves the old range. */
    for (int c = 0; c < 3; c++) {
        const float eps = 1e-6f * (hi[c] - lo[c]);
        for (int i = 0; i < V.n; i++)
            cr_assert(V.v[c * V.n + i] >= lo[c] - eps && V.v[c * V.n + i] <= hi[c] + eps,
                      "vertex %d leaves [%g, %g]: %g", i, lo[c], hi[c], V.v[c * V.n + i]);
        for (long long j = 0; j < G.g.nodes; j++)
            if (G.g.node[4 * j + 3] > 0.0f)
                cr_assert(G.g.node[4 * j + c] >= lo[c] - eps && G.g.node[4 * j + c] <= hi[c] + eps,
                          "node %lld leaves [%g, %g]: %g", j, lo[c], hi[c], G.g.node[4 * j + c]);
    }
    for (long long k = 0; k < 4 * G.g.nodes; k++)
        cr_assert_eq(G.D[k], 0.0f, "scratch not cleared at %lld", k);
    free(before);
    fem_box_free(&b);
    mpm_grid_free(&G);
}

/* ---- FEM-Rigid ------------------------------------------------------------ */

/* A dynamic sphere of radius 0.06 centred just above the top face of the
 * box [0.3, 0.45]^3, off-centre, moving and spinning; the box's surface
 * vertices move up (into it) or down (away) at about speed. */
static firn_rigid sphere_over_box(void)
{
    firn_rigid r;
    memset(&r, 0, sizeof r);
    r.shape.type = FIRN_SDF_SPHERE;
    r.shape.radius = 0.06f;
    r.q.q[0] = 1.0f;
    r.principal.q[0] = 1.0f;
    r.x[0] = 0.36f, r.x[1] = 0.41f, r.x[2] = 0.49f;
    r.v[0] = 0.2f, r.v[2] = -0.3f;
    r.w[0] = 1.0f, r.w[1] = -2.0f, r.w[2] = 0.5f;
    r.motion = FIRN_MOTION_DYNAMIC;
    r.mass = 1.0f, r.inv_mass = 1.0f;
    r.couple = 1;
    r.friction = 0.3f, r.restitution = 0.2f, r.softness = 0.002f;
    return r;
}

static void box_velocities(fem_box *b, float speed, unsigned seed)
{
    unsigned s = seed;
    firn_fem_vertices V = b->S.V;
    for (int i = 0; i < V.n; i++) {
        V.v[i] = (float)(0.3 * frand(&s));
        V.v[V.n + i] = (float)(0.3 * frand(&s));
        V.v[2 * V.n + i] = speed * (float)(1.0 + 0.2 * frand(&s));
    }
}

Test(fem_coupling, rigid_satisfies_newtons_third_law)
{
    fem_box b;
    const double lo[3] = {0.3, 0.3, 0.3}, hi[3] = {0.45, 0.45, 0.45};
    const int n[3] = {6, 6, 6};
    fem_box_init(&b, lo, hi, n);
    box_velocities(&b, 1.0f, 5);
    firn_rigid bodies[2] = {sphere_over_box(), sphere_over_box()};
    bodies[1].x[0] = 0.40f, bodies[1].x[1] = 0.33f, bodies[1].x[2] = 0.25f; /* below, also hit */
    bodies[1].v[2] = 2.0f; /* rising faster than the vertices: approaching */
    const firn_fem_vertices V = b.S.V;
    float *before = malloc(3 * (size_t)V.n * sizeof *before);
    memcpy(before, V.v, 3 * (size_t)V.n * sizeof *before);
    double acc[2 * FIRN_RIGID_ACC] = {0};
    double *chunk = malloc((size_t)firn_fem_rigid_chunk_doubles(b.S.ns, 2) * sizeof *chunk);
    firn_fem_rigid_cpu(&b.surf, bodies, 2, chunk, acc);
    /* What the vertices gained, linear and angular about each body's
     * centre: only the vertices that body touched. Both bodies here touch
     * disjoint sets (top and bottom faces). */
    double J[2][6] = {{0}};
    int hit[2] = {0, 0};
    for (int i = 0; i < V.n; i++) {
        double dp[3], x[3];
        int moved = 0;
        for (int c = 0; c < 3; c++) {
            dp[c] = (double)V.mass[i] * ((double)V.v[c * V.n + i] - before[c * V.n + i]);
            x[c] = V.x0[c * V.n + i];
            moved |= V.v[c * V.n + i] != before[c * V.n + i];
        }
        if (!moved)
            continue;
        const int k = x[2] > 0.4 ? 0 : 1;
        hit[k]++;
        double r[3];
        for (int c = 0; c < 3; c++)
            r[c] = x[c] - bodies[k].x[c];
        J[k][0] += dp[0], J[k][1] += dp[1], J[k][2] += dp[2];
        J[k][3] += r[1] * dp[2] - r[2] * dp[1];
        J[k][4] += r[2] * dp[0] - r[0] * dp[2];
        J[k][5] += r[0] * dp[1] - r[1] * dp[0];
    }
    cr_assert(hit[0] >= 4 && hit[1] >= 4, "vertices hit: %d, %d", hit[0], hit[1]);
    for (int k = 0; k < 2; k++) {
        double scale = 0;
        for (int c = 0; c < 6; c++)
            scale = fmax(scale, fabs(J[k][c]));
        cr_assert(scale > 1e-4, "body %d: no impulse", k);
        double err = 0;
        for (int c = 0; c < 6; c++)
            err = fmax(err, fabs(J[k][c] + acc[FIRN_RIGID_ACC * k + c]) / scale);
        cr_log_info("FEM-Rigid body %d: %d vertices hit, |J| %.3g, max |J_v + J_b| / |J| %.2e", k,
                    hit[k], scale, err);
        for (int c = 0; c < 6; c++)
            cr_assert(fabs(J[k][c] + acc[FIRN_RIGID_ACC * k + c]) < 1e-5 * scale,
                      "body %d, component %d: vertices %.9g, body %.9g", k, c, J[k][c],
                      acc[FIRN_RIGID_ACC * k + c]);
    }
    free(before), free(chunk);
    fem_box_free(&b);
}

Test(fem_coupling, rigid_leaves_a_vertex_moving_away_untouched)
{
    fem_box b;
    const double lo[3] = {0.3, 0.3, 0.3}, hi[3] = {0.45, 0.45, 0.45};
    const int n[3] = {3, 3, 3};
    fem_box_init(&b, lo, hi, n);
    /* Moving down, away from the sphere faster than it falls (0.3 m/s). */
    box_velocities(&b, -2.0f, 7);
    firn_rigid body = sphere_over_box();
    body.w[0] = body.w[1] = body.w[2] = 0.0f;
    body.friction = 0.0f;
    const firn_fem_vertices V = b.S.V;
    float *before = malloc(3 * (size_t)V.n * sizeof *before);
    memcpy(before, V.v, 3 * (size_t)V.n * sizeof *before);
    double acc[FIRN_RIGID_ACC] = {0};
    double *chunk = malloc((size_t)firn_fem_rigid_chunk_doubles(b.S.ns, 1) * sizeof *chunk);
    firn_fem_rigid_cpu(&b.surf, &body, 1, chunk, acc);
    cr_assert_eq(memcmp(before, V.v, 3 * (size_t)V.n * sizeof *before), 0, "a vertex changed");
    for (int c = 0; c < FIRN_RIGID_ACC; c++)
        cr_assert_eq(acc[c], 0.0, "reaction %d = %g", c, acc[c]);
    /* The same vertices moving up into it are hit (the setup reaches). */
    box_velocities(&b, 2.0f, 7);
    memcpy(before, V.v, 3 * (size_t)V.n * sizeof *before);
    firn_fem_rigid_cpu(&b.surf, &body, 1, chunk, acc);
    cr_assert_neq(memcmp(before, V.v, 3 * (size_t)V.n * sizeof *before), 0, "nothing hit");
    /* Fixed vertices (Dirichlet) are left alone, with no reaction. */
    box_velocities(&b, 2.0f, 7);
    memcpy(before, V.v, 3 * (size_t)V.n * sizeof *before);
    memset(V.fixed, 1, (size_t)V.n);
    memset(acc, 0, sizeof acc);
    firn_fem_rigid_cpu(&b.surf, &body, 1, chunk, acc);
    cr_assert_eq(memcmp(before, V.v, 3 * (size_t)V.n * sizeof *before), 0, "a fixed vertex moved");
    for (int c = 0; c < FIRN_RIGID_ACC; c++)
        cr_assert_eq(acc[c], 0.0, "reaction %d = %g from fixed vertices", c, acc[c]);
    free(before), free(chunk);
    fem_box_free(&b);
}

/* ---- FEM-SPH -------------------------------------------------------------- */

/* Particles of diameter p in the box [lower, lower + cells h): state, a
 * material, the neighbour grid (counting sort, stable). */
typedef struct {
    firn_sph_view W;
    firn_sph_material mat;
    float *x, *v;
    uint8_t *m;
    int *key, *sorted, *start, *end;
} sph_set;

static void sph_set_sort(sph_set *S)
{
    firn_sph_view *W = &S->W;
    const int n = W->s.n, cells = W->G.cells;
    memset(W->G.start, 0, (size_t)cells * sizeof(int));
    memset(W->G.end, 0, (size_t)cells * sizeof(int));
    for (int i = 0; i < n; i++) {
        S->key[i] = (int)firn_nbr_cell_of(&W->P.nb, firn_load3(W->s.x, n, i));
        W->G.end[S->key[i]]++;
    }
    int sum = 0;
    for (int c = 0; c < cells; c++) {
        W->G.start[c] = sum;
        sum += W->G.end[c];
        W->G.end[c] = W->G.start[c];
    }
    for (int i = 0; i < n; i++)
        W->G.sorted[W->G.end[S->key[i]]++] = i;
}

static void sph_set_init(sph_set *S, float p, float lower, int cells, int n, float rho0)
{
    memset(S, 0, sizeof *S);
    firn_sph_params *P = &S->W.P;
    P->psize = p;
    P->h = 2.0f * p;
    P->inv_h = 1.0f / P->h;
    for (int a = 0; a < 3; a++) {
        P->lower[a] = lower;
        P->upper[a] = lower + (float)cells * P->h;
    }
    P->nb = firn_nbr_space_of(P->lower, P->upper, P->h);
    S->mat.rho0 = rho0;
    S->mat.mass = 0.8f * p * p * p * rho0;
    S->W.mats = &S->mat;
    S->x = calloc(3 * (size_t)n, sizeof *S->x);
    S->v = calloc(3 * (size_t)n, sizeof *S->v);
    S->m = calloc((size_t)n, 1);
    S->key = calloc((size_t)n, sizeof *S->key);
    S->sorted = calloc((size_t)n, sizeof *S->sorted);
    S->start = calloc((size_t)cells * cells * cells, sizeof *S->start);
    S->end = calloc((size_t)cells * cells * cells, sizeof *S->end);
    S->W.s.n = n;
    S->W.s.x = S->x, S->W.s.v = S->v, S->W.s.mat = S->m;
    S->W.G.cells = cells * cells * cells;
    S->W.G.sorted = S->sorted, S->W.G.start = S->start, S->W.G.end = S->end;
}

static void sph_set_free(sph_set *S)
{
    free(S->x), free(S->v), free(S->m), free(S->key), free(S->sorted), free(S->start), free(S->end);
}

/* Kinetic energy of the FEM vertices and the SPH particles [J]. */
static double kinetic_energy(const firn_fem_vertices *V, const sph_set *S)
{
    double e = 0.0;
    for (int i = 0; i < V->n; i++)
        for (int c = 0; c < 3; c++)
            e += 0.5 * V->mass[i] * (double)V->v[c * V->n + i] * V->v[c * V->n + i];
    const int n = S->W.s.n;
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 3; c++)
            e += 0.5 * S->mat.mass * (double)S->v[c * n + i] * S->v[c * n + i];
    return e;
}

static void sph_momentum(const sph_set *S, double p[3], double *scale)
{
    const int n = S->W.s.n;
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            p[c] += (double)S->mat.mass * S->v[c * n + i];
            *scale += fabs((double)S->mat.mass * S->v[c * n + i]);
        }
}

/* One vertex (mass m, normal +z) and the two particles in its box within a
 * particle radius p / 2 of its surface (each in no other box, C_p = 1), a
 * third outside the box, a fourth in the box but farther out along n than
 * p / 2 (not yet touching): an inelastic contact along n between the vertex
 * and the touching particles' mass M at their mean velocity u, so both end
 * with the normal velocity (m v_n + M u_n) / (m + M), the tangential
 * velocities kept; the other two untouched; closed form in doubles here. */
Test(fem_coupling, sph_one_vertex_and_its_particles_meet_at_the_common_normal_velocity)
{
    sph_set S;
    const int np = 4;
    sph_set_init(&S, 0.01f, 0.0f, 10, np, 1000.0f);
    /* Vertex at 0.1 (normal +z), p = 0.01: two particles within the box
     * (|d|_inf < 0.01) and 0.004 and 0 along n (< p / 2), one outside the
     * box, one in it at 0.007 along n. */
    const float px[4][3] = {{0.105f, 0.1f, 0.104f},
                            {0.095f, 0.104f, 0.1f},
                            {0.1f, 0.1f, 0.112f},
                            {0.1f, 0.098f, 0.107f}};
    const float pv[4][3] = {
        {1.0f, 0.0f, -2.0f}, {0.0f, 3.0f, 1.0f}, {5.0f, 5.0f, 5.0f}, {0.0f, 0.0f, -4.0f}};
    for (int i = 0; i < np; i++)
        for (int c = 0; c < 3; c++)
            S.x[c * np + i] = px[i][c], S.v[c * np + i] = pv[i][c];
    sph_set_sort(&S);
    one_vertex o;
    const float m = 0.002f;
    one_vertex_init(&o, firn_v3(0.1f, 0.1f, 0.1f), firn_v3(0.5f, -0.5f, 1.0f), m);
    float share[3], count[4];
    firn_fem_sph_cpu(&o.S, &S.W, share, count);
    const double mp = S.mat.mass, M = 2.0 * mp, un = (-2.0 + 1.0) / 2.0, vn = 1.0;
    const double common = (m * vn + M * un) / (m + M);
    const double want[3] = {0.5, -0.5, common}, v0[3] = {0.5, -0.5, 1.0};
    for (int c = 0; c < 3; c++) {
        cr_assert(fabs(o.v[c] - want[c]) < 1e-6, "v'[%d] = %.9g, want %.9g", c, o.v[c], want[c]);
        const double dv = -m * (want[c] - v0[c]) / M; /* each particle's */
        for (int i = 0; i < 2; i++)
            cr_assert(fabs(S.v[c * np + i] - (pv[i][c] + dv)) < 1e-5 * (1 + fabs(dv)),
                      "particle %d v[%d] = %.9g, want %.9g", i, c, S.v[c * np + i], pv[i][c] + dv);
        cr_assert_eq(S.v[c * np + 2], pv[2][c], "particle outside the box changed");
        cr_assert_eq(S.v[c * np + 3], pv[3][c], "particle beyond p / 2 along n changed");
    }
    /* the particles' mean normal velocity is the vertex's now */
    cr_assert(fabs(0.5 * (S.v[2 * np + 0] + S.v[2 * np + 1]) - common) < 1e-5);
    sph_set_free(&S);
}

/* SPH particles scattered in a shell around the box [0.3, 0.45]^3 with
 * random velocities: many vertices share particles. */
static void sph_shell(sph_set *S, unsigned seed)
{
    const int n = 4000;
    sph_set_init(S, 0.01f, 0.2f, 16, n, 1000.0f);
    unsigned s = seed;
    for (int i = 0; i < n; i++) {
        float x[3];
        int inside;
        do {
            inside = 1;
            for (int c = 0; c < 3; c++) {
                x[c] = (float)(0.375 + 0.095 * frand(&s));
                inside &= x[c] > 0.305f && x[c] < 0.445f;
            }
        } while (inside);
        for (int c = 0; c < 3; c++) {
            S->x[c * n + i] = x[c];
            S->v[c * n + i] = (float)frand(&s);
        }
    }
    sph_set_sort(S);
}

/* The box [0.3, 0.45]^3 of 12^3 cells (vertices 1.25 cm apart), its
 * vertices moving (box_velocities), in the shell of 4000 particles. */
static const double shell_lo[3] = {0.3, 0.3, 0.3}, shell_hi[3] = {0.45, 0.45, 0.45};

static void box_in_shell(fem_box *b, sph_set *S)
{
    const int n[3] = {12, 12, 12};
    fem_box_init(b, shell_lo, shell_hi, n);
    box_velocities(b, 0.5f, 9);
    sph_shell(S, 21);
}

/* A box of 12^3 cells (vertices 1.25 cm apart, boxes 2 cm wide: a particle
 * is in up to 8 boxes) in the shell: momentum conserved, energy not
 * gained. */
Test(fem_coupling, sph_conserves_momentum)
{
    fem_box b;
    sph_set S;
    box_in_shell(&b, &S);
    double p0[3] = {0}, p1[3] = {0}, scale = 0, s1 = 0;
    total_momentum(&b.S.V, NULL, p0, &scale);
    sph_momentum(&S, p0, &scale);
    const double e0 = kinetic_energy(&b.S.V, &S);
    float *share = calloc(3 * (size_t)b.S.ns, sizeof *share);
    float *count = calloc((size_t)S.W.s.n, sizeof *count);
    firn_fem_sph_cpu(&b.surf, &S.W, share, count);
    int coupled = 0;
    for (int k = 0; k < b.S.ns; k++)
        coupled += share[k] != 0.0f || share[b.S.ns + k] != 0.0f || share[2 * b.S.ns + k] != 0.0f;
    cr_assert(coupled > b.S.ns / 2, "only %d of %d surface vertices coupled", coupled, b.S.ns);
    float shared = 0.0f;
    for (int p = 0; p < S.W.s.n; p++)
        shared = fmaxf(shared, count[p]);
    cr_assert(shared >= 4.0f, "no particle in 4 or more boxes (at most %g)", shared);
    total_momentum(&b.S.V, NULL, p1, &s1);
    sph_momentum(&S, p1, &s1);
    cr_log_info("FEM-SPH: %d of %d vertices coupled, up to %g per particle, momentum error / "
                "scale %.2e %.2e %.2e",
                coupled, b.S.ns, shared, fabs(p1[0] - p0[0]) / scale, fabs(p1[1] - p0[1]) / scale,
                fabs(p1[2] - p0[2]) / scale);
    for (int c = 0; c < 3; c++)
        cr_assert(fabs(p1[c] - p0[c]) < 1e-6 * scale, "momentum %d: %.9g -> %.9g (scale %.3g)", c,
                  p0[c], p1[c], scale);
    /* Energy: each vertex's contact is inelastic (loses mu |d|^2 / 2) and
     * averaging a shared particle's parts loses more; float rounding of the
     * velocities (1e-7 of the energy) is the allowance. */
    const double e1 = kinetic_energy(&b.S.V, &S);
    cr_log_info("FEM-SPH: kinetic energy %.6g J -> %.6g J", e0, e1);
    cr_assert(e1 <= e0 * (1.0 + 1e-6), "kinetic energy rose from %.9g to %.9g J", e0, e1);
    cr_assert(e1 < 0.999 * e0, "no energy was taken (%.9g -> %.9g J): nothing coupled?", e0, e1);
    free(share), free(count);
    sph_set_free(&S);
    fem_box_free(&b);
}

/* The nearest point of a triangle (firn_triangle_nearest) against a brute
 * force search: for random triangles (some long and thin) and points all
 * around them, the distance to the returned point is at most the smallest
 * over a grid of 400 x 400 barycentric steps, and no more than the grid's
 * spacing (the longest edge over 400) below it; the weights lie in [0, 1]
 * and sum to 1. */
Test(fem_coupling, triangle_nearest_point_matches_a_brute_force_search)
{
    unsigned s = 5;
    const int N = 400;
    for (int t = 0; t < 200; t++) {
        firn_vec3 v[3];
        for (int a = 0; a < 3; a++)
            v[a] = firn_v3((float)frand(&s), (float)frand(&s), (float)frand(&s));
        if (t % 4 == 0) /* long and thin: 0.02 off the midpoint of a side up to 3.5 long */
            v[2] = firn_add(firn_scale(firn_add(v[0], v[1]), 0.5f),
                            firn_v3(0.02f * (float)frand(&s), 0.02f * (float)frand(&s),
                                    0.02f * (float)frand(&s)));
        const firn_vec3 x =
            firn_v3((float)(1.5 * frand(&s)), (float)(1.5 * frand(&s)), (float)(1.5 * frand(&s)));
        float w[3];
        firn_triangle_nearest(x, v[0], v[1], v[2], w);
        cr_assert(fabsf(w[0] + w[1] + w[2] - 1.0f) < 1e-5f, "weights sum to %g",
                  w[0] + w[1] + w[2]);
        for (int a = 0; a < 3; a++)
            cr_assert(w[a] >= -1e-6f && w[a] <= 1.0f + 1e-6f, "weight %d is %g", a, w[a]);
        double y[3], got = 0.0, best = 1e30, edge = 0.0;
        for (int c = 0; c < 3; c++) {
            y[c] = w[0] * v[0].v[c] + w[1] * v[1].v[c] + w[2] * v[2].v[c];
            got += (x.v[c] - y[c]) * (x.v[c] - y[c]);
        }
        got = sqrt(got);
        for (int a = 0; a < 3; a++)
            edge = fmax(edge, firn_norm(firn_sub(v[a], v[(a + 1) % 3])));
        for (int i = 0; i <= N; i++)
            for (int j = 0; i + j <= N; j++) {
                const double b1 = (double)i / N, b2 = (double)j / N, b0 = 1.0 - b1 - b2;
                double d2 = 0.0;
                for (int c = 0; c < 3; c++) {
                    const double q = b0 * v[0].v[c] + b1 * v[1].v[c] + b2 * v[2].v[c] - x.v[c];
                    d2 += q * q;
                }
                best = fmin(best, d2);
            }
        best = sqrt(best);
        cr_assert(got <= best + 1e-5, "triangle %d: distance %.7g, a grid point is at %.7g", t, got,
                  best);
        cr_assert(got >= best - edge / N - 1e-5, "triangle %d: distance %.7g, grid's best %.7g", t,
                  got, best);
    }
}

/* Closed-form signed distance to the axis-aligned box [lo, hi]. */
static double box_sdf(const double lo[3], const double hi[3], const float x[3])
{
    double out = 0.0, in = -1e30;
    for (int c = 0; c < 3; c++) {
        const double q = fabs(x[c] - 0.5 * (lo[c] + hi[c])) - 0.5 * (hi[c] - lo[c]);
        out += q > 0.0 ? q * q : 0.0;
        in = fmax(in, q);
    }
    return sqrt(out) + fmin(in, 0.0);
}

/* FEM-SPH's contact distance and wall term on a box of 12^3 cells, whose
 * surface triangles lie on its six faces, with the shell of particles
 * around it (some up to 5 mm inside):
 *   - each particle within h of the surface (either side) gets the box's
 *     signed distance in closed form, within 1 um, and every other one
 *     FIRN_FEM_SPH_FAR;
 *   - the wall term and the contact together conserve linear momentum
 *     (the wall's reaction, -m dv spread over the nearest triangle's
 *     vertices by barycentric weights, is exact), and the wall acted;
 *   - the vertices' contact takes only the particles inside (count 0 for
 *     every particle at d >= 0), and the wall term none of them. */
Test(fem_coupling, sph_contact_distance_is_the_box_sdf_and_the_wall_conserves_momentum)
{
    fem_box b;
    sph_set S;
    box_in_shell(&b, &S);
    const int np = S.W.s.n;
    const float h = S.W.P.h;
    float *pr = malloc((size_t)np * sizeof *pr), *rho = malloc((size_t)np * sizeof *rho);
    unsigned s = 3;
    for (int p = 0; p < np; p++) {
        pr[p] = (float)(500.0 * (1.0 + frand(&s)));
        rho[p] = (float)(1000.0 * (1.0 + 0.01 * frand(&s)));
    }
    S.W.s.p = pr, S.W.s.rho = rho;
    S.W.P.dt = 1e-3f;
    S.W.P.vol = 0.8f * S.W.P.psize * S.W.P.psize * S.W.P.psize;
    S.W.P.kw = 8.0f / ((float)M_PI * h * h * h);
    S.W.P.gravity[1] = -9.81f;
    S.W.fem_key = malloc((size_t)np * sizeof *S.W.fem_key);
    S.W.fem_d = malloc((size_t)np * sizeof *S.W.fem_d);
    firn_fem_sph_distance_cpu(&b.surf, &S.W);
    int near = 0, inside = 0;
    for (int p = 0; p < np; p++) {
        const float x[3] = {S.x[p], S.x[np + p], S.x[2 * np + p]};
        const double want = box_sdf(shell_lo, shell_hi, x);
        if (fabs(fabs(want) - h) < 1e-6)
            continue;
        if (fabs(want) < h) {
            near++;
            inside += want < 0.0;
            cr_assert(fabs(S.W.fem_d[p] - want) < 1e-6, "particle %d: distance %.8g, box %.8g", p,
                      S.W.fem_d[p], want);
        } else {
            cr_assert(S.W.fem_d[p] == FIRN_FEM_SPH_FAR, "particle %d at %.4g from the box: %g", p,
                      want, S.W.fem_d[p]);
        }
    }
    cr_assert(near > np / 4 && inside > 50, "%d particles near the surface, %d inside", near,
              inside);
    /* A particle inside gets no wall term (the vertices' contact alone
     * carries it): firn_fem_sph_wall leaves it and the vertices as they
     * were. */
    for (int p = 0; p < np; p++) {
        if (!(S.W.fem_d[p] < 0.0f))
            continue;
        const float v[3] = {S.v[p], S.v[np + p], S.v[2 * np + p]};
        firn_fem_sph_wall(p, &b.surf, &S.W);
        for (int c = 0; c < 3; c++)
            cr_assert(S.v[c * np + p] == v[c], "particle %d inside (d = %g): the wall moved it", p,
                      S.W.fem_d[p]);
    }
    double p0[3] = {0}, p1[3] = {0}, scale = 0, s1 = 0;
    total_momentum(&b.S.V, NULL, p0, &scale);
    sph_momentum(&S, p0, &scale);
    float *v0 = malloc(3 * (size_t)np * sizeof *v0);
    memcpy(v0, S.v, 3 * (size_t)np * sizeof *v0);
    float *share = calloc(3 * (size_t)b.S.ns, sizeof *share);
    float *count = calloc((size_t)np, sizeof *count);
    firn_fem_sph_cpu(&b.surf, &S.W, share, count);
    int pushed = 0, close = 0;
    for (int p = 0; p < np; p++) {
        if (S.W.fem_d[p] >= 0.0f)
            cr_assert(count[p] == 0.0f, "particle %d at d = %g met %g vertices", p, S.W.fem_d[p],
                      count[p]);
        if (S.W.fem_d[p] >= 0.0f && S.W.fem_d[p] < 0.5f * h) {
            close++;
            pushed +=
                S.v[p] != v0[p] || S.v[np + p] != v0[np + p] || S.v[2 * np + p] != v0[2 * np + p];
        }
    }
    cr_assert(close > 100 && pushed == close, "the wall moved %d of the %d particles within h / 2",
              pushed, close);
    total_momentum(&b.S.V, NULL, p1, &s1);
    sph_momentum(&S, p1, &s1);
    for (int c = 0; c < 3; c++)
        cr_assert(fabs(p1[c] - p0[c]) < 1e-6 * scale, "momentum %d: %.9g -> %.9g (scale %.3g)", c,
                  p0[c], p1[c], scale);
    free(share), free(count), free(v0), free(pr), free(rho);
    free(S.W.fem_key), free(S.W.fem_d);
    sph_set_free(&S);
    fem_box_free(&b);
}

/* ---- determinism ---------------------------------------------------------- */

/* The three pairs on an 8^3-cell box (386 surface vertices, two rigid
 * chunks), with `threads` OpenMP threads; returns a copy of everything
 * they wrote: vertex velocities, normals, grid, SPH velocities, reactions,
 * FEM-SPH's nearest-triangle keys and distances. */
static float *run_pairs(int threads, size_t *len)
{
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    fem_box b;
    const double lo[3] = {0.3, 0.3, 0.3}, hi[3] = {0.45, 0.45, 0.45};
    const int n[3] = {8, 8, 8};
    fem_box_init(&b, lo, hi, n);
    box_velocities(&b, 1.0f, 13);
    firn_rigid bodies[2] = {sphere_over_box(), sphere_over_box()};
    bodies[1].x[2] = 0.25f;
    double acc[2 * FIRN_RIGID_ACC] = {0};
    double *chunk = malloc((size_t)firn_fem_rigid_chunk_doubles(b.S.ns, 2) * sizeof *chunk);
    firn_fem_rigid_cpu(&b.surf, bodies, 2, chunk, acc);
    mpm_grid G;
    mpm_grid_init(&G, 0.0f, 0.05f, 16);
    unsigned s = 17;
    for (long long j = 0; j < G.g.nodes; j++)
        if (frand(&s) > 0.0) {
            for (int c = 0; c < 3; c++)
                G.g.node[4 * j + c] = (float)frand(&s);
            G.g.node[4 * j + 3] = (float)(1e-3 * (1.5 + frand(&s)));
        }
    firn_fem_mpm_cpu(&b.surf, &G.P, G.g, G.D);
    sph_set S;
    sph_shell(&S, 23);
    float *share = calloc(3 * (size_t)b.S.ns, sizeof *share);
    float *count = calloc((size_t)S.W.s.n, sizeof *count);
    firn_fem_sph_cpu(&b.surf, &S.W, share, count);
    /* FEM-SPH's contact distance (the triangles in parallel): keys and
     * distances */
    const int n_sph = S.W.s.n;
    unsigned long long *key = malloc((size_t)n_sph * sizeof *key);
    float *dist = malloc((size_t)n_sph * sizeof *dist);
    S.W.fem_key = key, S.W.fem_d = dist;
    firn_fem_sph_distance_cpu(&b.surf, &S.W);
    S.W.fem_key = NULL, S.W.fem_d = NULL;
    const size_t nv = 3 * (size_t)b.S.V.n, nn = 3 * (size_t)b.S.ns, ng = 4 * (size_t)G.g.nodes,
                 np = 3 * (size_t)n_sph, nk = 2 * (size_t)n_sph, nd = (size_t)n_sph;
    *len = nv + nn + ng + np + 2 * 2 * FIRN_RIGID_ACC + nk + nd;
    float *out = malloc(*len * sizeof *out);
    memcpy(out, b.S.V.v, nv * sizeof *out);
    memcpy(out + nv, b.normal, nn * sizeof *out);
    memcpy(out + nv + nn, G.g.node, ng * sizeof *out);
    memcpy(out + nv + nn + ng, S.v, np * sizeof *out);
    memcpy(out + nv + nn + ng + np, acc, sizeof acc);
    memcpy(out + nv + nn + ng + np + 2 * 2 * FIRN_RIGID_ACC, key, nk * sizeof *out);
    memcpy(out + nv + nn + ng + np + 2 * 2 * FIRN_RIGID_ACC + nk, dist, nd * sizeof *out);
    free(key), free(dist);
    free(chunk), free(share), free(count);
    sph_set_free(&S);
    mpm_grid_free(&G);
    fem_box_free(&b);
    omp_set_num_threads(saved);
    return out;
}

Test(fem_coupling, same_result_for_one_and_two_threads)
{
    size_t n1, n2;
    float *a = run_pairs(1, &n1), *b = run_pairs(2, &n2);
    cr_assert_eq(n1, n2);
    for (size_t k = 0; k < n1; k++)
        cr_assert(memcmp(&a[k], &b[k], sizeof *a) == 0, "word %zu: %.9g vs %.9g", k, a[k], b[k]);
    free(a), free(b);
}
