/* test_mesh.c - triangle-mesh rigid bodies (host/mesh.c): OBJ loading, the
 * SDF grid of a cube and a sphere against their closed forms, volume
 * integrals and principal axes, the errors for missing, open, misoriented
 * and empty meshes (naming the key path and the edge), paths relative to
 * the scene file, and a mesh cube coupling like the box primitive. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"
#include "mesh.h"
#include "rigid.h"

static char tmpdir[64];

static void make_tmpdir(void) { test_mkdtemp(tmpdir, sizeof tmpdir, "mesh"); }

static void remove_tmpdir(void) { test_rmdir(tmpdir); }

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    return path;
}

/* A cube of edge 2h centred at the origin: 8 vertices, 6 quads wound
 * counter-clockwise seen from outside, with texture and normal indices that
 * the loader must skip. drop_face leaves one face out (-1: none); flip_face
 * reverses one. */
static const char *cube_obj(const char *name, float h, int drop_face, int flip_face)
{
    static const int quads[6][4] = {{1, 2, 4, 3}, {5, 7, 8, 6}, {1, 5, 6, 2},
                                    {3, 4, 8, 7}, {1, 3, 7, 5}, {2, 6, 8, 4}};
    char text[2048] = "# cube\nmtllib none.mtl\no cube\n";
    for (int i = 0; i < 8; i++) {
        size_t len = strlen(text);
        snprintf(text + len, sizeof text - len, "v %g %g %g\n", (i & 4) ? h : -h, (i & 2) ? h : -h,
                 (i & 1) ? h : -h);
    }
    strcat(text, "vt 0 0\nvn 0 0 1\ns off\n");
    for (int f = 0; f < 6; f++) {
        if (f == drop_face)
            continue;
        size_t len = strlen(text);
        const int *q = quads[f];
        if (f == flip_face)
            snprintf(text + len, sizeof text - len, "f %d/1/1 %d/1/1 %d/1/1 %d/1/1\n", q[3], q[2],
                     q[1], q[0]);
        else
            snprintf(text + len, sizeof text - len, "f %d/1/1 %d//1 %d %d/1\n", q[0], q[1], q[2],
                     q[3]);
    }
    return write_file(name, text);
}

static float frand(unsigned *s, float lo, float hi)
{
    *s = *s * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(*s >> 8) / 16777216.0f;
}

Test(mesh, cube_obj_sdf_matches_the_box_within_a_cell)
{
    make_tmpdir();
    const firn_mesh *m;
    firn_error err;
    const char *path = cube_obj("cube.obj", 0.1f, -1, -1);
    cr_assert_eq(firn_mesh_get(path, 1.0f, 1, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m->nv, 8);
    cr_assert_eq(m->nt, 12, "6 quads fan into 12 triangles, got %d", m->nt);
    /* 0.2 m padded by 20 % of it on each side: 0.28 m, 56 cells of 5 mm. */
    cr_assert_eq(m->n[0], 57, "grid points per axis %d", m->n[0]);
    firn_sdf_shape s;
    firn_mesh_sdf_shape(m, &s);
    const float h[3] = {0.1f, 0.1f, 0.1f}, cell = m->h[0];
    unsigned seed = 1;
    for (int k = 0; k < 4000; k++) {
        firn_vec3 p, n, nt;
        for (int a = 0; a < 3; a++)
            p.v[a] = frand(&seed, -0.135f, 0.135f);
        float d = firn_sdf_local(&s, p, &n), dt = firn_sdf_box(h, p, &nt);
        cr_assert(fabsf(d - dt) < cell, "at (%g, %g, %g): mesh %g, box %g", p.v[0], p.v[1], p.v[2],
                  d, dt);
        /* Away from edges and the medial axis the normals agree. */
        float q[3], lo = 1.0f;
        for (int a = 0; a < 3; a++)
            q[a] = fabsf(p.v[a]);
        int face = 0;
        for (int a = 1; a < 3; a++)
            if (q[a] > q[face])
                face = a;
        for (int a = 0; a < 3; a++)
            if (a != face)
                lo = fminf(lo, q[face] - q[a]);
        if (lo > 2.0f * cell && (q[face] > 0.1f + 2.0f * cell || q[face] < 0.1f - 2.0f * cell) &&
            q[face] > 2.0f * cell)
            cr_assert(firn_dot(n, nt) > 0.98f,
                      "at (%g, %g, %g): normal (%g, %g, %g) vs (%g, %g, %g)", p.v[0], p.v[1],
                      p.v[2], n.v[0], n.v[1], n.v[2], nt.v[0], nt.v[1], nt.v[2]);
    }
    /* Beyond the grid's box: positive, growing, pointing away. */
    firn_vec3 n;
    float d1 = firn_sdf_local(&s, firn_v3(0.5f, 0.0f, 0.0f), &n);
    float d2 = firn_sdf_local(&s, firn_v3(0.7f, 0.0f, 0.0f), &n);
    cr_assert(fabsf(d1 - 0.4f) < cell && fabsf(d2 - d1 - 0.2f) < 1e-5f, "d = %g, %g", d1, d2);
    cr_assert(n.v[0] > 0.999f);
    remove_tmpdir();
}

/* An icosphere of radius r: the icosahedron subdivided `levels` times,
 * written with negative (relative) indices. */
static const char *sphere_obj(const char *name, float r, int levels)
{
    const float t = (1.0f + sqrtf(5.0f)) / 2.0f;
    float v0[12][3] = {{-1, t, 0},  {1, t, 0},  {-1, -t, 0}, {1, -t, 0}, {0, -1, t},  {0, 1, t},
                       {0, -1, -t}, {0, 1, -t}, {t, 0, -1},  {t, 0, 1},  {-t, 0, -1}, {-t, 0, 1}};
    static const int f0[20][3] = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11},
                                  {1, 5, 9},  {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
                                  {3, 9, 4},  {3, 4, 2},  {3, 2, 6},   {3, 6, 8},  {3, 8, 9},
                                  {4, 9, 5},  {2, 4, 11}, {6, 2, 10},  {8, 6, 7},  {9, 8, 1}};
    int nv = 12, nf = 20, capv = 12 * (1 << (2 * levels)) + 2, capf = 20 << (2 * levels);
    float(*v)[3] = malloc(sizeof *v * (size_t)capv);
    int(*f)[3] = malloc(sizeof *f * (size_t)capf), (*g)[3] = malloc(sizeof *g * (size_t)capf);
    memcpy(v, v0, sizeof v0);
    memcpy(f, f0, sizeof f0);
    for (int l = 0; l < levels; l++) {
        int ng = 0;
        for (int k = 0; k < nf; k++) {
            int mid[3];
            for (int e = 0; e < 3; e++) {
                int a = f[k][e], b = f[k][(e + 1) % 3];
                float m[3];
                for (int c = 0; c < 3; c++)
                    m[c] = 0.5f * (v[a][c] + v[b][c]);
                int found = -1; /* midpoints are shared: look for an equal one */
                for (int j = 12; j < nv && found < 0; j++)
                    if (fabsf(v[j][0] - m[0]) + fabsf(v[j][1] - m[1]) + fabsf(v[j][2] - m[2]) <
                        1e-6f)
                        found = j;
                if (found < 0) {
                    memcpy(v[nv], m, sizeof m);
                    found = nv++;
                }
                mid[e] = found;
            }
            int a = f[k][0], b = f[k][1], c = f[k][2];
            int tri[4][3] = {{a, mid[0], mid[2]},
                             {b, mid[1], mid[0]},
                             {c, mid[2], mid[1]},
                             {mid[0], mid[1], mid[2]}};
            memcpy(g[ng], tri, sizeof tri);
            ng += 4;
        }
        memcpy(f, g, sizeof *g * (size_t)ng);
        nf = ng;
    }
    size_t cap = (size_t)nv * 48 + (size_t)nf * 40 + 64, len = 0;
    char *text = malloc(cap);
    text[0] = '\0';
    for (int i = 0; i < nv; i++) {
        float s = r / sqrtf(v[i][0] * v[i][0] + v[i][1] * v[i][1] + v[i][2] * v[i][2]);
        len += (size_t)snprintf(text + len, cap - len, "v %.7f %.7f %.7f\n", v[i][0] * s,
                                v[i][1] * s, v[i][2] * s);
    }
    for (int k = 0; k < nf; k++)
        len += (size_t)snprintf(text + len, cap - len, "f %d %d %d\n", f[k][0] - nv, f[k][1] - nv,
                                f[k][2] - nv);
    const char *path = write_file(name, text);
    free(text);
    free(v);
    free(f);
    free(g);
    return path;
}

Test(mesh, sphere_obj_sdf_matches_the_sphere_within_a_cell)
{
    make_tmpdir();
    const firn_mesh *m;
    firn_error err;
    const char *path = sphere_obj("ball.obj", 0.5f, 3); /* scaled to r = 0.1 below */
    cr_assert_eq(firn_mesh_get(path, 0.2f, 1, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m->nt, 1280);
    /* A faceted sphere has a little less volume than the round one. */
    double v_ball = 4.0 / 3.0 * M_PI * 1e-3;
    cr_assert(m->volume < v_ball && m->volume > 0.97 * v_ball, "volume %g", m->volume);
    firn_sdf_shape s;
    firn_mesh_sdf_shape(m, &s);
    const float cell = fmaxf(m->h[0], fmaxf(m->h[1], m->h[2]));
    unsigned seed = 5;
    for (int k = 0; k < 4000; k++) {
        firn_vec3 p, n;
        for (int a = 0; a < 3; a++)
            p.v[a] = frand(&seed, -0.13f, 0.13f);
        float d = firn_sdf_local(&s, p, &n), r = firn_norm(p);
        cr_assert(fabsf(d - (r - 0.1f)) < cell, "at radius %g: mesh %g, sphere %g", r, d, r - 0.1f);
        if (r > 0.03f)
            cr_assert(firn_dot(n, firn_scale(p, 1.0f / r)) > 0.97f, "radius %g: normal off", r);
    }
    remove_tmpdir();
}

Test(mesh, volume_centroid_and_principal_axes_of_a_turned_box)
{
    /* A 0.1 x 0.2 x 0.3 box at (1, 2, 3), turned 30 degrees about z, wound
     * inside out: the loader turns it around. */
    const float c = cosf((float)M_PI / 6.0f), sn = sinf((float)M_PI / 6.0f);
    const float e[3] = {0.05f, 0.1f, 0.15f};
    float v[8 * 3];
    for (int i = 0; i < 8; i++) {
        float x = (i & 4) ? e[0] : -e[0], y = (i & 2) ? e[1] : -e[1], z = (i & 1) ? e[2] : -e[2];
        v[3 * i + 0] = 1.0f + c * x - sn * y;
        v[3 * i + 1] = 2.0f + sn * x + c * y;
        v[3 * i + 2] = 3.0f + z;
    }
    static const int quads[6][4] = {{0, 1, 3, 2}, {4, 6, 7, 5}, {0, 4, 5, 1},
                                    {2, 3, 7, 6}, {0, 2, 6, 4}, {1, 5, 7, 3}};
    int tri[12 * 3];
    for (int f = 0; f < 6; f++) { /* reversed winding */
        const int *q = quads[f];
        int t0[3] = {q[0], q[2], q[1]}, t1[3] = {q[0], q[3], q[2]};
        memcpy(tri + 6 * f, t0, sizeof t0);
        memcpy(tri + 6 * f + 3, t1, sizeof t1);
    }
    firn_mesh *m;
    firn_error err;
    cr_assert_eq(firn_mesh_build(v, 8, tri, 12, "box", &m, &err), 0, "%s", err.msg);
    cr_assert(fabs(m->volume - 0.006) < 1e-8, "volume %g", m->volume);
    const double want_c[3] = {1, 2, 3};
    for (int a = 0; a < 3; a++)
        cr_assert(fabs(m->centroid[a] - want_c[a]) < 1e-5, "centroid[%d] = %g", a, m->centroid[a]);
    /* Principal moments per unit density: V (b^2 + c^2) / 12 etc. */
    const double V = 0.006, A = 0.1, B = 0.2, C = 0.3;
    double want[3] = {V * (B * B + C * C) / 12, V * (A * A + C * C) / 12, V * (A * A + B * B) / 12};
    for (int a = 0; a < 3; a++) {
        int found = 0;
        for (int b = 0; b < 3; b++)
            found |= fabs(m->moments[b] - want[a]) < 1e-4 * want[a];
        cr_assert(found, "moment %g missing (have %g, %g, %g)", want[a], m->moments[0],
                  m->moments[1], m->moments[2]);
    }
    /* Each principal axis (principal rotates it into the body frame) is an
     * eigenvector of the inertia tensor with its moment. */
    const double *I = m->inertia;
    const double T[3][3] = {{I[0], I[3], I[4]}, {I[3], I[1], I[5]}, {I[4], I[5], I[2]}};
    for (int a = 0; a < 3; a++) {
        firn_vec3 u = firn_v3(0.0f, 0.0f, 0.0f);
        u.v[a] = 1.0f;
        u = firn_quat_rotate(m->principal, u);
        for (int r = 0; r < 3; r++) {
            double Iu = T[r][0] * u.v[0] + T[r][1] * u.v[1] + T[r][2] * u.v[2];
            cr_assert(fabs(Iu - m->moments[a] * u.v[r]) < 1e-3 * want[2], "axis %d not principal",
                      a);
        }
    }
    for (int a = 0; a < 3; a++)
        cr_assert(m->half[a] > 0.09f && m->half[a] < 0.16f, "half[%d] = %g", a, m->half[a]);
    firn_mesh_free(m);
}

/* ---- errors and scene keys ----------------------------------------------------- */

static int parse_with_mesh(const char *shape, firn_scene_def *def, firn_error *err)
{
    char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"materials\": {\"m\": {\"model\": \"sand\"}},"
             " \"bodies\": [{\"material\": \"m\", \"shape\": {\"type\": \"box\"}}],"
             " \"rigids\": [{\"shape\": %s, \"motion\": \"dynamic\"}]}",
             shape);
    return firn_scene_parse_json(buf, "t.json", def, err);
}

static void expect_mesh_error(const char *shape, firn_status code, const char *n1, const char *n2)
{
    firn_scene_def def;
    firn_error err;
    int rc = parse_with_mesh(shape, &def, &err);
    cr_assert_eq(rc, code, "%s: rc %d, want %d (%s)", shape, rc, code, rc ? err.msg : "");
    cr_assert_eq(err.code, code);
    cr_assert(strstr(err.msg, n1), "message '%s' lacks '%s'", err.msg, n1);
    cr_assert(!n2 || strstr(err.msg, n2), "message '%s' lacks '%s'", err.msg, n2);
}

Test(mesh, bad_meshes_name_the_key_path_the_file_and_the_edge)
{
    make_tmpdir();
    char shape[512];
    snprintf(shape, sizeof shape, "{\"type\": \"mesh\", \"file\": \"%s/missing.obj\"}", tmpdir);
    expect_mesh_error(shape, FIRN_E_IO, "t.json: rigids[0].shape.file", "missing.obj");
    /* An open box: the edges of the missing face belong to one face. */
    snprintf(shape, sizeof shape, "{\"type\": \"mesh\", \"file\": \"%s\"}",
             cube_obj("open.obj", 0.1f, 3, -1));
    expect_mesh_error(shape, FIRN_E_SCENE, "rigids[0].shape.file: mesh '", "open.obj");
    expect_mesh_error(shape, FIRN_E_SCENE, "not a closed manifold: the edge between vertices",
                      "belongs to one face only");
    /* One face turned around. */
    snprintf(shape, sizeof shape, "{\"type\": \"mesh\", \"file\": \"%s\"}",
             cube_obj("flipped.obj", 0.1f, -1, 2));
    expect_mesh_error(shape, FIRN_E_SCENE, "rigids[0].shape.file", "run it the same way");
    /* Three faces on one edge. */
    const char *fin = write_file("fin.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nv 0 0 -1\n"
                                            "f 1 3 2\nf 1 2 4\nf 2 3 4\nf 3 1 4\nf 1 2 5\n");
    snprintf(shape, sizeof shape, "{\"type\": \"mesh\", \"file\": \"%s\"}", fin);
    expect_mesh_error(shape, FIRN_E_SCENE, "the edge between vertices 1 and 2 is shared by 3 faces",
                      "line 6");
    snprintf(shape, sizeof shape, "{\"type\": \"mesh\", \"file\": \"%s\"}",
             write_file("empty.obj", "# nothing\nv 0 0 0\nv 1 0 0\n"));
    expect_mesh_error(shape, FIRN_E_SCENE, "rigids[0].shape.file", "no faces");
    snprintf(shape, sizeof shape, "{\"type\": \"mesh\", \"file\": \"%s\"}",
             write_file("range.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n"));
    expect_mesh_error(shape, FIRN_E_SCENE, "line 4: vertex number 9 is out of range", NULL);
    snprintf(shape, sizeof shape, "{\"type\": \"mesh\", \"file\": \"%s\", \"scale\": 0}",
             cube_obj("cube.obj", 0.1f, -1, -1));
    expect_mesh_error(shape, FIRN_E_SCENE, "rigids[0].shape.scale = 0: must be > 0", NULL);
    /* A NUL byte mid-line, and a device of them that never ends. */
    const char *nul = write_file("nul.obj", "v 0 0 0\nv 1 0 0\n");
    FILE *f = fopen(nul, "a");
    fputs("v 0 1", f), fputc('\0', f), fputs(" 0\nf 1 2 3\n", f);
    fclose(f);
    snprintf(shape, sizeof shape, "{\"type\": \"mesh\", \"file\": \"%s\"}", nul);
    expect_mesh_error(shape, FIRN_E_SCENE, "line 3: a NUL byte: not a text OBJ file", NULL);
    /* On the last line, with no newline after it. */
    f = fopen(nul, "w");
    fputs("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3", f), fputc('\0', f), fputs(" junk", f);
    fclose(f);
    expect_mesh_error(shape, FIRN_E_SCENE, "line 4: a NUL byte: not a text OBJ file", NULL);
    /* A device (or a FIFO) is not read at all: it may never end. */
    expect_mesh_error("{\"type\": \"mesh\", \"file\": \"/dev/zero\"}", FIRN_E_IO,
                      "mesh '/dev/zero': not a regular file", NULL);
    /* A line of 8191 characters is the longest allowed; a coordinate that
     * the scale takes past float is named. */
    char line[8300];
    memset(line, ' ', 8191);
    memcpy(line, "v 0 0 0", 7);
    line[8191] = '\0';
    f = fopen(nul, "w");
    fprintf(f, "%s\nv 1 0 0\nv 0 1e38 0\nf 1 2 3\n", line);
    fclose(f);
    snprintf(shape, sizeof shape, "{\"type\": \"mesh\", \"file\": \"%s\", \"scale\": 100}", nul);
    expect_mesh_error(shape, FIRN_E_SCENE,
                      "line 3: coordinate 1e+38 times scale 100 overflows float", NULL);
    f = fopen(nul, "w");
    fprintf(f, "%s \n", line);
    fclose(f);
    snprintf(shape, sizeof shape, "{\"type\": \"mesh\", \"file\": \"%s\"}", nul);
    expect_mesh_error(shape, FIRN_E_SCENE, "line 1: line longer than 8191 characters", NULL);
    expect_mesh_error("{\"type\": \"mesh\"}", FIRN_E_SCENE, "rigids[0].shape.file: missing", NULL);
    expect_mesh_error("{\"type\": \"mesh\", \"file\": \"x.obj\", \"radius\": 1}", FIRN_E_SCENE,
                      "rigids[0].shape.radius: unknown key for a mesh", NULL);
    remove_tmpdir();
}

/* An OBJ file with no vertex or face reads as an empty surface (NULL
 * arrays); building a solid of it is refused, not a memcpy from NULL
 * (found by test/fuzz/fuzz_obj.c under UBSan). */
Test(mesh, an_empty_obj_is_refused_as_a_solid)
{
    make_tmpdir();
    float *v;
    int *tri, nv, nt;
    firn_error err;
    firn_mesh *m = NULL;
    cr_assert_eq(firn_mesh_read_surface(write_file("void.obj", "# nothing\n"), 1.0f, &v, &nv, &tri,
                                        &nt, &err),
                 0, "%s", err.msg);
    cr_assert_eq(nv, 0);
    cr_assert_eq(nt, 0);
    cr_assert_neq(firn_mesh_build(v, nv, tri, nt, "void.obj", &m, &err), 0);
    cr_assert_null(m);
    cr_assert(strstr(err.msg, "no faces"), "%s", err.msg);
    free(v);
    free(tri);
    remove_tmpdir();
}

Test(mesh, relative_file_is_taken_from_the_scene_folder_and_gives_mass)
{
    make_tmpdir();
    char sub[128], scene[160];
    snprintf(sub, sizeof sub, "%s/assets", tmpdir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    cube_obj("assets/cube.obj", 0.5f, -1, -1); /* a 1 m cube, scaled to 0.1 m */
    snprintf(scene, sizeof scene, "%s/scene.json", tmpdir);
    FILE *f = fopen(scene, "w");
    fputs("{\"materials\": {\"m\": {\"model\": \"sand\"}},"
          " \"bodies\": [{\"material\": \"m\", \"shape\": {\"type\": \"box\"}}],"
          " \"rigids\": [{\"shape\": {\"type\": \"mesh\", \"file\": \"assets/cube.obj\","
          " \"scale\": 0.1, \"center\": [0.5, 0.8, 0.5]}, \"motion\": \"dynamic\","
          " \"density\": 1000}]}",
          f);
    fclose(f);
    firn_scene_def def;
    firn_error err;
    cr_assert_eq(firn_scene_load_json(scene, &def, &err), FIRN_OK, "%s", err.msg);
    char want[200];
    snprintf(want, sizeof want, "%s/assets/cube.obj", tmpdir);
    cr_assert_str_eq(def.rigids[0].shape.file, want);
    cr_assert_eq(def.rigids[0].shape.type, FIRN_RSHAPE_MESH);
    float mass, I[3];
    firn_rigid_mass_properties(&def.rigids[0], &mass, I);
    cr_assert(fabsf(mass - 1.0f) < 1e-4f, "mass %g kg", mass);
    for (int a = 0; a < 3; a++)
        cr_assert(fabsf(I[a] - 1.0f * 0.02f / 12.0f) < 1e-6f, "I[%d] = %g", a, I[a]);
    remove_tmpdir();
}

/* An elastic block dropped on a static body: a mesh cube or the box
 * primitive of the same size. Returns the block's centre of mass height. */
static double drop_on(int mesh, const char *obj)
{
    firn_scene_def def;
    firn_scene_default(&def);
    def.dx = 1.0f / 32.0f;
    def.frame_dt = 0.01f;
    def.write_ply = def.write_preview = 0;
    def.n_materials = 1;
    firn_material_default(&def.materials[0], FIRN_MODEL_ELASTIC);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "jelly");
    def.n_bodies = 1;
    firn_body_default(&def.bodies[0]);
    def.bodies[0].shape.center[1] = 0.6f;
    def.bodies[0].seed = 3;
    def.n_rigids = 1;
    firn_rigid_def *r = &def.rigids[0];
    firn_rigid_default(r);
    r->shape.center[1] = 0.4f;
    r->rotation[1] = 20.0f;
    if (mesh) {
        r->shape.type = FIRN_RSHAPE_MESH;
        snprintf(r->shape.file, sizeof r->shape.file, "%s", obj);
    } else {
        r->shape.type = FIRN_RSHAPE_BOX;
        for (int a = 0; a < 3; a++)
            r->shape.size[a] = 0.2f;
    }
    firn_error err;
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    cr_assert(w, "%s", err.msg);
    firn_frame_stats s;
    for (int f = 0; f < 25; f++)
        cr_assert_eq(firn_world_step_frame(w, &s, &err), 0, "%s", err.msg);
    firn_world_destroy(w);
    return s.center_of_mass[1];
}

Test(mesh, a_mesh_cube_holds_material_like_the_box_primitive, .timeout = 120)
{
    make_tmpdir();
    char obj[256];
    snprintf(obj, sizeof obj, "%s", cube_obj("cube.obj", 0.1f, -1, -1));
    double y_mesh = drop_on(1, obj), y_box = drop_on(0, NULL);
    /* The block (0.1 m) rests on the top face at 0.5 m. */
    cr_assert(y_box > 0.53 && y_box < 0.62, "on the box: y = %g", y_box);
    cr_log_info("on the mesh y = %g, on the box y = %g", y_mesh, y_box);
    cr_assert(fabs(y_mesh - y_box) < 0.25 / 32.0, "on the mesh y = %g, on the box y = %g", y_mesh,
              y_box);
    remove_tmpdir();
}
