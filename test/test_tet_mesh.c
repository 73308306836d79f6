/* test_tet_mesh.c - tetrahedral meshes (host/tet_mesh.c): a generated
 * box's counts, volume, orientation and surface against the box's closed
 * forms, and the refusal of meshes with unknown vertices, repeated
 * vertices, degenerate or inverted tets, over-shared faces and a
 * non-manifold surface, each message naming the element, face or edge. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tet_mesh.h"

Test(tet_mesh, box_counts_volume_and_surface)
{
    const double lo[3] = {-0.1, 0.0, 0.2}, hi[3] = {0.2, 0.1, 0.25};
    const int n[3] = {3, 2, 4};
    firn_tet_mesh m;
    firn_error err = {0};
    cr_assert_eq(firn_tet_mesh_box(lo, hi, n, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.nv, 4 * 3 * 5);
    cr_assert_eq(m.ne, 6 * 3 * 2 * 4);
    /* The surface: two triangles per boundary cell face. */
    cr_assert_eq(m.nf, 4 * (3 * 2 + 2 * 4 + 3 * 4));
    /* Surface vertices: all but the interior (n - 1 per axis). */
    cr_assert_eq(m.ns, m.nv - 2 * 1 * 3);
    double vol = 0, vmin = INFINITY;
    for (int e = 0; e < m.ne; e++) {
        double v = firn_tet_mesh_volume(&m, e);
        vol += v;
        vmin = fmin(vmin, v);
    }
    const double box = 0.3 * 0.1 * 0.05;
    cr_assert(fabs(vol - box) < 1e-12, "volume %.15g, box %.15g", vol, box);
    /* Each cell's 6 tets have equal volume, cell / 6. */
    cr_assert(fabs(vmin - box / m.ne) < 1e-15, "smallest tet %g, expected %g", vmin, box / m.ne);
    /* Outward orientation: the divergence theorem, sum over the surface of
     * (x . n) A / 3 = volume, holds only if every face is wound outward. */
    double flux = 0;
    for (int f = 0; f < m.nf; f++) {
        const double *a = m.x + 3 * m.face[3 * f], *b = m.x + 3 * m.face[3 * f + 1],
                     *c = m.x + 3 * m.face[3 * f + 2];
        double u[3], v[3];
        for (int k = 0; k < 3; k++)
            u[k] = b[k] - a[k], v[k] = c[k] - a[k];
        double nx = u[1] * v[2] - u[2] * v[1], ny = u[2] * v[0] - u[0] * v[2],
               nz = u[0] * v[1] - u[1] * v[0];
        flux += (a[0] * nx + a[1] * ny + a[2] * nz) / 6.0;
        /* The face belongs to its tet. */
        const int *t = m.tet + 4 * m.face_tet[f];
        for (int i = 0; i < 3; i++) {
            int in = 0;
            for (int j = 0; j < 4; j++)
                in |= t[j] == m.face[3 * f + i];
            cr_assert(in, "face %d vertex %d not in its tet %d", f, m.face[3 * f + i],
                      m.face_tet[f]);
        }
    }
    cr_assert(fabs(flux - box) < 1e-12, "surface flux %.15g, volume %.15g", flux, box);
    for (int i = 1; i < m.ns; i++)
        cr_assert_lt(m.surf[i - 1], m.surf[i]);
    firn_tet_mesh_free(&m);
}

/* Two unit-corner tets sharing the face (0 1 2): vertices 0-3 and 4 below. */
static firn_tet_mesh two_tets(void)
{
    static const double x[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, -1, 5, 5, 5};
    static const int tet[] = {0, 1, 2, 3, 0, 2, 1, 4};
    firn_tet_mesh m = {.nv = 6, .ne = 2};
    m.x = malloc(sizeof x), m.tet = malloc(sizeof tet);
    memcpy(m.x, x, sizeof x), memcpy(m.tet, tet, sizeof tet);
    return m;
}

Test(tet_mesh, orientation_unused_vertices_and_surface)
{
    firn_tet_mesh m = two_tets();
    /* Both negative: flipped, not refused. */
    for (int e = 0; e < 2; e++) {
        int s = m.tet[4 * e + 1];
        m.tet[4 * e + 1] = m.tet[4 * e + 2], m.tet[4 * e + 2] = s;
    }
    firn_error err = {0};
    cr_assert_eq(firn_tet_mesh_finish(&m, "pair", &err), 0, "%s", err.msg);
    cr_assert_eq(m.nv, 5, "the unused vertex 5 is dropped");
    cr_assert_eq(m.ne, 2);
    cr_assert_eq(m.nf, 6, "the shared face is inner");
    cr_assert_eq(m.ns, 5);
    for (int e = 0; e < 2; e++)
        cr_assert(fabs(firn_tet_mesh_volume(&m, e) - 1.0 / 6) < 1e-15);
    firn_tet_mesh_free(&m);
}

static void expect_refusal(firn_tet_mesh *m, const char *want)
{
    firn_error err = {0};
    double *x = m->x;
    cr_assert_neq(firn_tet_mesh_finish(m, "bad.ele", &err), 0);
    cr_assert_eq(err.code, FIRN_E_SCENE);
    cr_assert(strstr(err.msg, "bad.ele: ") == err.msg, "%s", err.msg);
    cr_assert(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
    cr_assert_eq(m->x, x, "a refused mesh is left as given");
    firn_tet_mesh_free(m);
}

Test(tet_mesh, refuses_bad_meshes_naming_the_element)
{
    firn_tet_mesh m = two_tets();
    m.tet[7] = 9;
    expect_refusal(&m, "element 1 refers to vertex 9");
    m = two_tets();
    m.tet[6] = 0;
    expect_refusal(&m, "element 1 has vertex 0 twice");
    m = two_tets();
    m.x[3 * 4 + 2] = 0; /* vertex 4 onto the plane of face (0 1 2) */
    expect_refusal(&m, "element 1 (vertices 0 2 1 4) is degenerate");
    m = two_tets();
    m.x[3 * 4 + 2] = 1e-12;
    expect_refusal(&m, "degenerate");
    m = two_tets();
    m.x[3 * 4 + 2] = 0.5; /* vertex 4 above the face: tet 1 turns over */
    expect_refusal(&m, "element");
    m = two_tets();
    m.x[0] = NAN;
    expect_refusal(&m, "vertex 0 has a non-finite coordinate");
}

Test(tet_mesh, refuses_an_inverted_tet)
{
    /* Three tets around the box's diagonal, one wound the other way. */
    const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    const int n[3] = {1, 1, 1};
    firn_tet_mesh box;
    firn_error err = {0};
    cr_assert_eq(firn_tet_mesh_box(lo, hi, n, &box, &err), 0, "%s", err.msg);
    firn_tet_mesh m = {.nv = box.nv, .ne = box.ne};
    m.x = malloc(sizeof(double) * 3 * m.nv), m.tet = malloc(sizeof(int) * 4 * m.ne);
    memcpy(m.x, box.x, sizeof(double) * 3 * m.nv);
    memcpy(m.tet, box.tet, sizeof(int) * 4 * m.ne);
    int s = m.tet[4 * 4 + 1];
    m.tet[4 * 4 + 1] = m.tet[4 * 4 + 2], m.tet[4 * 4 + 2] = s;
    expect_refusal(&m, "element 4");
    firn_tet_mesh_free(&box);
}

Test(tet_mesh, refuses_overshared_faces_and_nonmanifold_surfaces)
{
    /* A third tet on face (0 1 2), above like tet 0. */
    static const double x[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, -1, 0.2, 0.2, 2};
    static const int tet[] = {0, 1, 2, 3, 0, 2, 1, 4, 0, 1, 2, 5};
    firn_tet_mesh m = {.nv = 6, .ne = 3};
    m.x = malloc(sizeof x), m.tet = malloc(sizeof tet);
    memcpy(m.x, x, sizeof x), memcpy(m.tet, tet, sizeof tet);
    expect_refusal(&m, "face (0 1 2) belongs to 3 elements");
    /* Two tets touching along one edge only: a non-manifold surface. */
    static const double y[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, -1, 0, 0, 0, -1};
    static const int tet2[] = {0, 1, 2, 3, 0, 5, 1, 4};
    m = (firn_tet_mesh){.nv = 6, .ne = 2};
    m.x = malloc(sizeof y), m.tet = malloc(sizeof tet2);
    memcpy(m.x, y, sizeof y), memcpy(m.tet, tet2, sizeof tet2);
    expect_refusal(&m, "surface edge (0 1) belongs to 4 surface triangles");
}
