/* test_surface.c - the rigid bodies' and tools' surfaces (host/surface.c)
 * and their per-frame PLY meshes (firn_write_rigids_ply, _tools_ply). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "firn.h"
#include "mesh.h"
#include "surface.h"
#include "test_util.h"

/* ---- closed, outward, on the surface ---------------------------------------- */

/* Volume by the divergence theorem, sum of a . (b x c) / 6 over the
 * triangles: positive when they face outward. */
static double signed_volume(const firn_surface *m)
{
    double v = 0.0;
    for (int t = 0; t < m->nt; t++) {
        const float *a = m->v + 3 * m->tri[3 * t], *b = m->v + 3 * m->tri[3 * t + 1],
                    *c = m->v + 3 * m->tri[3 * t + 2];
        v += (double)a[0] * ((double)b[1] * c[2] - (double)b[2] * c[1]) -
             (double)a[1] * ((double)b[0] * c[2] - (double)b[2] * c[0]) +
             (double)a[2] * ((double)b[0] * c[1] - (double)b[1] * c[0]);
    }
    return v / 6.0;
}

/* Closed and consistently oriented: every directed edge a -> b occurs once
 * and its reverse b -> a once (each edge between exactly two triangles
 * that traverse it in opposite senses); no degenerate triangle. */
static void expect_closed(const firn_surface *m, const char *what)
{
    const long long ne = 3LL * m->nt;
    long long *e = malloc((size_t)ne * sizeof *e);
    cr_assert(e);
    for (int t = 0; t < m->nt; t++)
        for (int k = 0; k < 3; k++) {
            const int a = m->tri[3 * t + k], b = m->tri[3 * t + (k + 1) % 3];
            cr_assert(a != b && a >= 0 && b >= 0 && a < m->nv && b < m->nv,
                      "%s: triangle %d has edge %d-%d", what, t, a, b);
            e[3 * t + k] = (long long)a * m->nv + b;
        }
    for (long long i = 0; i < ne; i++) {
        const long long a = e[i] / m->nv, b = e[i] % m->nv, rev = b * m->nv + a;
        int same = 0, back = 0;
        for (long long j = 0; j < ne; j++) {
            same += e[j] == e[i];
            back += e[j] == rev;
        }
        cr_assert(same == 1 && back == 1,
                  "%s: edge %lld -> %lld occurs %d times, its reverse %d times", what, a, b, same,
                  back);
    }
    free(e);
}

static firn_rigid_shape_def shape(firn_rigid_shape_type type, int axis)
{
    firn_rigid_shape_def s;
    memset(&s, 0, sizeof s);
    s.type = type;
    s.axis = axis;
    s.radius = 0.15f;
    s.height = 0.4f;
    s.size[0] = 0.2f, s.size[1] = 0.4f, s.size[2] = 0.6f;
    s.normal[1] = 1.0f;
    s.scale = 1.0f;
    return s;
}

static firn_surface surface_of(const firn_rigid_shape_def *s)
{
    firn_surface m;
    firn_error err = {0};
    cr_assert_eq(firn_shape_surface(s, 1.0f, &m, &err), 0, "%s", err.msg);
    return m;
}

/* Distance from y to the segment of half length h along axis a. */
static double segment_distance(const float *y, int a, double h)
{
    double d2 = 0.0;
    for (int k = 0; k < 3; k++) {
        double c = y[k];
        if (k == a)
            c = fabs(c) > h ? fabs(c) - h : 0.0;
        d2 += c * c;
    }
    return sqrt(d2);
}

/* A box's 12 triangles bound exactly its volume, corners at +-half. */
Test(surface, box_is_its_twelve_triangles)
{
    firn_rigid_shape_def s = shape(FIRN_RSHAPE_BOX, 1);
    firn_surface m = surface_of(&s);
    cr_assert_eq(m.nv, 8);
    cr_assert_eq(m.nt, 12);
    expect_closed(&m, "box");
    for (int i = 0; i < m.nv; i++)
        for (int a = 0; a < 3; a++)
            cr_assert_eq(fabsf(m.v[3 * i + a]), 0.5f * s.size[a]);
    const double want = 0.2 * 0.4 * 0.6, got = signed_volume(&m);
    cr_expect(fabs(got - want) <= 1e-6 * want, "box volume %.9g, want %.9g", got, want);
    firn_surface_free(&m);
}

/* A cylinder is a prism over a regular 32-gon inscribed in its circle: its
 * volume is (S/2) r^2 sin(2 pi / S) times its height, to rounding; every
 * vertex is on a cap's plane inside the circle or on the circle. Each
 * axis. */
Test(surface, cylinder_is_an_inscribed_prism_on_each_axis)
{
    for (int axis = 0; axis < 3; axis++) {
        firn_rigid_shape_def s = shape(FIRN_RSHAPE_CYLINDER, axis);
        firn_surface m = surface_of(&s);
        expect_closed(&m, "cylinder");
        const int S = FIRN_SURFACE_SEGMENTS;
        const double r = s.radius, h = 0.5 * s.height;
        for (int i = 0; i < m.nv; i++) {
            const float *y = m.v + 3 * i;
            const double along = y[axis], rho = hypot(y[(axis + 1) % 3], y[(axis + 2) % 3]);
            cr_assert(fabs(fabs(along) - h) < 1e-6 && (rho < 1e-7 || fabs(rho - r) < 1e-6),
                      "axis %d: vertex %d (%g %g %g) is off the cylinder", axis, i, y[0], y[1],
                      y[2]);
        }
        const double want = 0.5 * S * r * r * sin(2.0 * M_PI / S) * 2.0 * h,
                     got = signed_volume(&m);
        cr_expect(fabs(got - want) <= 1e-5 * want, "axis %d: volume %.9g, want %.9g", axis, got,
                  want);
        firn_surface_free(&m);
    }
}

/* A sphere's and a capsule's vertices are at distance r from the centre
 * (from the axis segment), and the polyhedron they span is inscribed: its
 * volume falls short of the solid's by about the polygons' area deficits,
 * 1 - sin(x)/x for x = 2 pi / 32 around and the same pole to pole, 0.64 %
 * each, so by 0 to 2 %. */
Test(surface, sphere_and_capsule_are_inscribed_polyhedra)
{
    for (int c = 0; c < 4; c++) {
        const int capsule = c > 0, axis = capsule ? c - 1 : 1;
        firn_rigid_shape_def s = shape(capsule ? FIRN_RSHAPE_CAPSULE : FIRN_RSHAPE_SPHERE, axis);
        firn_surface m = surface_of(&s);
        expect_closed(&m, capsule ? "capsule" : "sphere");
        const double r = s.radius, h = capsule ? 0.5 * s.height : 0.0;
        for (int i = 0; i < m.nv; i++) {
            const double d = segment_distance(m.v + 3 * i, axis, h);
            cr_assert(fabs(d - r) < 1e-6, "%s axis %d: vertex %d at %.9g from the axis, r %g",
                      capsule ? "capsule" : "sphere", axis, i, d, r);
        }
        const double want = 4.0 / 3.0 * M_PI * r * r * r + M_PI * r * r * 2.0 * h,
                     got = signed_volume(&m), short_by = (want - got) / want;
        cr_expect(short_by > 0.0 && short_by < 0.02,
                  "%s axis %d: volume %.6g, solid %.6g (%.3g %%)", capsule ? "capsule" : "sphere",
                  axis, got, want, 100 * short_by);
        firn_surface_free(&m);
    }
}

/* A mesh is its OBJ's triangles in the body frame (centroid at the
 * origin): the same counts, closed, and the volume the loader computed. */
Test(surface, mesh_is_its_obj_about_the_centroid)
{
    firn_rigid_shape_def s = shape(FIRN_RSHAPE_MESH, 1);
    snprintf(s.file, sizeof s.file, "scenes/assets/rock.obj");
    s.scale = 0.5f;
    firn_surface m = surface_of(&s);
    const firn_mesh *mesh;
    firn_error err = {0};
    cr_assert_eq(firn_mesh_get(s.file, s.scale, 0, &mesh, &err), 0, "%s", err.msg);
    cr_assert_eq(m.nv, mesh->nv);
    cr_assert_eq(m.nt, mesh->nt);
    expect_closed(&m, "rock");
    const double got = signed_volume(&m);
    cr_expect(fabs(got - mesh->volume) <= 1e-4 * mesh->volume, "volume %.9g, the loader's %.9g",
              got, mesh->volume);
    double c[3] = {0, 0, 0}, tv = 0.0; /* centroid of the solid: tets from the origin */
    for (int t = 0; t < m.nt; t++) {
        const float *p[3] = {m.v + 3 * m.tri[3 * t], m.v + 3 * m.tri[3 * t + 1],
                             m.v + 3 * m.tri[3 * t + 2]};
        const double v6 =
            (double)p[0][0] * ((double)p[1][1] * p[2][2] - (double)p[1][2] * p[2][1]) -
            (double)p[0][1] * ((double)p[1][0] * p[2][2] - (double)p[1][2] * p[2][0]) +
            (double)p[0][2] * ((double)p[1][0] * p[2][1] - (double)p[1][1] * p[2][0]);
        tv += v6;
        for (int a = 0; a < 3; a++)
            c[a] += v6 * (p[0][a] + p[1][a] + p[2][a]) / 4.0;
    }
    for (int a = 0; a < 3; a++)
        cr_expect(fabs(c[a] / tv) < 1e-5, "centroid %c at %g m, not 0", "xyz"[a], c[a] / tv);
    firn_surface_free(&m);
}

/* A plane is a square of the given half side, facing its normal. */
Test(surface, plane_is_a_square_facing_its_normal)
{
    firn_rigid_shape_def s = shape(FIRN_RSHAPE_PLANE, 1);
    s.normal[0] = 1.0f, s.normal[1] = 2.0f, s.normal[2] = -2.0f; /* |n| = 3 */
    firn_surface m;
    firn_error err = {0};
    cr_assert_eq(firn_shape_surface(&s, 0.5f, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.nv, 4);
    cr_assert_eq(m.nt, 2);
    for (int t = 0; t < 2; t++) {
        const float *a = m.v + 3 * m.tri[3 * t], *b = m.v + 3 * m.tri[3 * t + 1],
                    *c = m.v + 3 * m.tri[3 * t + 2];
        const double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]},
                     w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        const double n[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2],
                             u[0] * w[1] - u[1] * w[0]};
        /* area 0.5 (a half of the 1 m square), facing (1, 2, -2) / 3 */
        cr_expect(fabs(0.5 * (n[0] + 2 * n[1] - 2 * n[2]) / 3.0 - 0.5) < 1e-6,
                  "triangle %d: n = (%g %g %g)", t, n[0], n[1], n[2]);
    }
    for (int i = 0; i < 4; i++) {
        const float *y = m.v + 3 * i;
        cr_expect(fabs(y[0] + 2 * y[1] - 2 * y[2]) < 1e-6, "vertex %d is off the plane", i);
        cr_expect(fabs(sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]) - 0.5 * sqrt(2.0)) < 1e-6,
                  "vertex %d is not a corner of the square", i);
    }
    firn_surface_free(&m);
}

/* ---- the PLY files ----------------------------------------------------------- */

static float f32(const unsigned char *b)
{
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Two tools, a box turned 90 degrees about z and a sphere, each moving and
 * spinning: every vertex of the file is p + R y for its body-frame vertex
 * y (R computed here from the angle), its velocity v + omega x (x - p),
 * its byte the tool's index and its flag the tool's collision. */
Test(surface, tools_ply_poses_each_vertex_and_gives_its_velocity)
{
    char dir[64], path[128];
    test_mkdtemp(dir, sizeof dir, "surface");
    snprintf(path, sizeof path, "%s/tools.ply", dir);
    firn_scene_def def;
    firn_scene_default(&def);
    def.n_tools = 2;
    firn_tool_default(&def.tools[0]);
    firn_tool_default(&def.tools[1]);
    def.tools[0].shape = shape(FIRN_RSHAPE_BOX, 1);
    def.tools[1].shape = shape(FIRN_RSHAPE_SPHERE, 1);
    def.tools[1].collision = 0;
    firn_frame_stats st;
    memset(&st, 0, sizeof st);
    st.n_tools = 2;
    const float c45 = (float)cos(M_PI / 4), s45 = (float)sin(M_PI / 4);
    const float p[2][3] = {{0.3f, 0.4f, 0.5f}, {-0.1f, 0.2f, 0.0f}};
    const float lin[2][3] = {{1.0f, 0.0f, -2.0f}, {0.0f, 0.5f, 0.0f}};
    const float om[2][3] = {{0.0f, 0.0f, 3.0f}, {1.0f, -1.0f, 0.5f}};
    for (int t = 0; t < 2; t++) {
        memcpy(st.tools[t].position, p[t], sizeof p[t]);
        memcpy(st.tools[t].velocity, lin[t], sizeof lin[t]);
        memcpy(st.tools[t].angular_velocity, om[t], sizeof om[t]);
        st.tools[t].orientation[0] = t == 0 ? c45 : 1.0f; /* the box: 90 deg about z */
        st.tools[t].orientation[3] = t == 0 ? s45 : 0.0f;
    }
    firn_error err = {0};
    cr_assert_eq(firn_write_tools_ply(path, &def, &st, &err), 0, "%s", err.msg);
    size_t len = 0;
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    static unsigned char buf[1 << 20];
    len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    firn_surface box = surface_of(&def.tools[0].shape), ball = surface_of(&def.tools[1].shape);
    const int nv = box.nv + ball.nv, nt = box.nt + ball.nt;
    char want[256];
    snprintf(want, sizeof want, "element vertex %d\n", nv);
    const char *end = strstr((const char *)buf, "end_header\n");
    cr_assert(end && strstr((const char *)buf, want), "%.400s", buf);
    cr_assert(strstr((const char *)buf, "property uchar collides\nproperty uchar tool\n"));
    const unsigned char *d = (const unsigned char *)end + strlen("end_header\n");
    cr_assert_eq(len, (size_t)(d - buf) + 26 * (size_t)nv + 13 * (size_t)nt);
    for (int i = 0; i < nv; i++, d += 26) {
        const int t = i < box.nv ? 0 : 1;
        const float *y = t == 0 ? box.v + 3 * i : ball.v + 3 * (i - box.nv);
        /* R: (x, y, z) -> (-y, x, z) for the box; identity for the ball */
        const double r[3] = {t == 0 ? -y[1] : y[0], t == 0 ? y[0] : y[1], y[2]};
        for (int a = 0; a < 3; a++) {
            const double w = (double)om[t][(a + 1) % 3] * r[(a + 2) % 3] -
                             (double)om[t][(a + 2) % 3] * r[(a + 1) % 3];
            cr_assert(fabs(f32(d + 4 * a) - (p[t][a] + r[a])) < 1e-6, "vertex %d x%c %g, want %g",
                      i, "xyz"[a], f32(d + 4 * a), p[t][a] + r[a]);
            cr_assert(fabs(f32(d + 12 + 4 * a) - (lin[t][a] + w)) < 1e-5,
                      "vertex %d v%c %g, want %g", i, "xyz"[a], f32(d + 12 + 4 * a), lin[t][a] + w);
        }
        cr_assert_eq(d[24], t == 0, "vertex %d: collides %d", i, d[24]);
        cr_assert_eq(d[25], t, "vertex %d: tool %d", i, d[25]);
    }
    for (int k = 0; k < nt; k++, d += 13) {
        const int t = k < box.nt ? 0 : 1;
        const int *tri = t == 0 ? box.tri + 3 * k : ball.tri + 3 * (k - box.nt);
        cr_assert_eq(d[0], 3);
        for (int j = 0; j < 3; j++) {
            int32_t got;
            memcpy(&got, d + 1 + 4 * j, 4);
            cr_assert_eq(got, tri[j] + (t ? box.nv : 0), "face %d", k);
        }
    }
    firn_surface_free(&box);
    firn_surface_free(&ball);
    test_rmdir(dir);
}

/* firn run writes rigids_K.ply and tools_K.ply with the frames' PLY, and a
 * later run removes them as it removes the other frame files. */
Test(surface_cli, run_writes_the_bodies_and_tools_each_frame, .timeout = 120)
{
    char dir[96], path[256], out[8192];
    test_mkdtemp(dir, sizeof dir, "surface_run");
    snprintf(path, sizeof path, "%s/s.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "{\"domain\": {\"lower\": [0, 0, 0], \"upper\": [1, 1, 1], \"dx\": 0.05},"
               " \"time\": {\"frames\": 2, \"frame_dt\": 0.005},"
               " \"materials\": {\"s\": {\"model\": \"sand\"}},"
               " \"bodies\": [{\"material\": \"s\", \"shape\": {\"type\": \"box\","
               " \"center\": [0.5, 0.25, 0.5], \"size\": [0.3, 0.2, 0.3]}}],"
               " \"rigids\": [{\"name\": \"floor\", \"shape\": {\"type\": \"plane\","
               " \"center\": [0, 0.05, 0]}}, {\"name\": \"can\", \"shape\": {\"type\":"
               " \"cylinder\", \"center\": [0.2, 0.5, 0.2], \"radius\": 0.05, \"height\": 0.1}}],"
               " \"tools\": [{\"name\": \"blade\", \"shape\": {\"type\": \"box\","
               " \"center\": [0.5, 0.5, 0.5], \"size\": [0.2, 0.02, 0.2]},"
               " \"velocity\": [0, -1, 0]}],"
               " \"output\": {\"dir\": \"o\"}}\n");
    fclose(f);
    cr_assert_eq(test_run_firn(out, sizeof out, dir, "run s.json --quiet"), 0, "%s", out);
    const int S = FIRN_SURFACE_SEGMENTS;
    for (int frame = 0; frame <= 2; frame++) {
        char head[1024] = "", want[128];
        snprintf(path, sizeof path, "%s/o/rigids_%05d.ply", dir, frame);
        f = fopen(path, "rb");
        cr_assert(f, "no %s", path);
        cr_assert_gt(fread(head, 1, sizeof head - 1, f), 0);
        fclose(f);
        snprintf(want, sizeof want, "element vertex %d\n", 4 + 2 + 2 * S);
        cr_assert(strstr(head, want) && strstr(head, "property uchar body\n"), "%s", head);
        snprintf(path, sizeof path, "%s/o/tools_%05d.ply", dir, frame);
        f = fopen(path, "rb");
        cr_assert(f, "no %s", path);
        memset(head, 0, sizeof head);
        cr_assert_gt(fread(head, 1, sizeof head - 1, f), 0);
        fclose(f);
        cr_assert(strstr(head, "element vertex 8\n") && strstr(head, "element face 12\n"), "%s",
                  head);
    }
    /* A shorter run replaces the longer one's files. */
    cr_assert_eq(test_run_firn(out, sizeof out, dir, "run s.json --quiet --frames 1"), 0, "%s",
                 out);
    snprintf(path, sizeof path, "%s/o/tools_00002.ply", dir);
    cr_assert_neq(access(path, F_OK), 0, "%s is left from the earlier run", path);
    test_rmdir(dir);
}
