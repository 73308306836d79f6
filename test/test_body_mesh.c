/* test_body_mesh.c - particle bodies shaped by a closed triangle mesh
 * (shape type "mesh", host/sample.c over host/mesh.c): an OBJ cube fills
 * like the box primitive, an OBJ sphere holds the particle volume of the
 * solid it encloses, sampling is the same for any thread count, the errors
 * name the key path, and a scene with a mesh body runs end to end. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_util.h"
#include "sample.h"

static char tmpdir[64];

static void make_tmpdir(void) { test_mkdtemp(tmpdir, sizeof tmpdir, "body_mesh"); }

static void remove_tmpdir(void) { test_rmdir(tmpdir); }

/* Writes text to tmpdir/name; returns the path (static buffer). */
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

/* A cube of edge 2h centred at the origin, 6 quads wound counter-clockwise
 * seen from outside; drop_face leaves one out (-1: none), opening it. */
static const char *cube_obj(const char *name, float h, int drop_face)
{
    static const int quads[6][4] = {{1, 2, 4, 3}, {5, 7, 8, 6}, {1, 5, 6, 2},
                                    {3, 4, 8, 7}, {1, 3, 7, 5}, {2, 6, 8, 4}};
    char text[1024] = "# cube\n";
    for (int i = 0; i < 8; i++) {
        size_t len = strlen(text);
        snprintf(text + len, sizeof text - len, "v %.9g %.9g %.9g\n", (i & 4) ? h : -h,
                 (i & 2) ? h : -h, (i & 1) ? h : -h);
    }
    for (int f = 0; f < 6; f++) {
        if (f == drop_face)
            continue;
        size_t len = strlen(text);
        const int *q = quads[f];
        snprintf(text + len, sizeof text - len, "f %d %d %d %d\n", q[0], q[1], q[2], q[3]);
    }
    return write_file(name, text);
}

/* A latitude-longitude sphere of radius r: `lat` bands, `lon` meridians,
 * a vertex at each pole. The coordinates are rounded to float before they
 * are written (exactly, with 9 digits), so that *volume - the divergence
 * theorem over the triangles, sum a . (b x c) / 6 - and *area are those of
 * the solid the loader reads. */
static const char *uv_sphere_obj(const char *name, float r, int lat, int lon, double *volume,
                                 double *area)
{
    int nv = 2 + (lat - 1) * lon, nt = 2 * lon * (lat - 1);
    float(*v)[3] = malloc(sizeof *v * (size_t)nv);
    int(*t)[3] = malloc(sizeof *t * (size_t)nt);
    v[0][0] = 0.0f, v[0][1] = r, v[0][2] = 0.0f; /* north pole, vertex 0 */
    for (int i = 1; i < lat; i++)
        for (int j = 0; j < lon; j++) {
            double th = M_PI * i / lat, ph = 2.0 * M_PI * j / lon;
            float *p = v[1 + (i - 1) * lon + j];
            p[0] = (float)(r * sin(th) * cos(ph));
            p[1] = (float)(r * cos(th));
            p[2] = (float)(r * sin(th) * sin(ph));
        }
    const int south = nv - 1;
    v[south][0] = 0.0f, v[south][1] = -r, v[south][2] = 0.0f;
#define RING(i, j) (1 + ((i)-1) * lon + ((j) % lon))
    int k = 0;
    for (int j = 0; j < lon; j++) {
        /* Seen from outside, phi runs clockwise about +y: (a, b, c) below
         * is counter-clockwise. */
        t[k][0] = 0, t[k][1] = RING(1, j + 1), t[k][2] = RING(1, j), k++;
        t[k][0] = south, t[k][1] = RING(lat - 1, j), t[k][2] = RING(lat - 1, j + 1), k++;
        for (int i = 1; i + 1 < lat; i++) {
            int a = RING(i, j), b = RING(i + 1, j), c = RING(i + 1, j + 1), d = RING(i, j + 1);
            t[k][0] = a, t[k][1] = d, t[k][2] = c, k++;
            t[k][0] = a, t[k][1] = c, t[k][2] = b, k++;
        }
    }
#undef RING
    cr_assert_eq(k, nt);
    *volume = *area = 0.0;
    for (int n = 0; n < nt; n++) {
        const float *a = v[t[n][0]], *b = v[t[n][1]], *c = v[t[n][2]];
        double bc[3] = {(double)b[1] * c[2] - (double)b[2] * c[1],
                        (double)b[2] * c[0] - (double)b[0] * c[2],
                        (double)b[0] * c[1] - (double)b[1] * c[0]};
        *volume += (a[0] * bc[0] + a[1] * bc[1] + a[2] * bc[2]) / 6.0;
        double e1[3], e2[3];
        for (int q = 0; q < 3; q++)
            e1[q] = (double)b[q] - a[q], e2[q] = (double)c[q] - a[q];
        double x = e1[1] * e2[2] - e1[2] * e2[1], y = e1[2] * e2[0] - e1[0] * e2[2],
               z = e1[0] * e2[1] - e1[1] * e2[0];
        *area += 0.5 * sqrt(x * x + y * y + z * z);
    }
    cr_assert(*volume > 0.0, "the sphere is wound inside out (volume %g)", *volume);
    size_t cap = (size_t)nv * 64 + (size_t)nt * 40 + 16, len = 0;
    char *text = malloc(cap);
    text[0] = '\0';
    for (int n = 0; n < nv; n++)
        len += (size_t)snprintf(text + len, cap - len, "v %.9g %.9g %.9g\n", v[n][0], v[n][1],
                                v[n][2]);
    for (int n = 0; n < nt; n++)
        len += (size_t)snprintf(text + len, cap - len, "f %d %d %d\n", t[n][0] + 1, t[n][1] + 1,
                                t[n][2] + 1);
    const char *path = write_file(name, text);
    free(text);
    free(v);
    free(t);
    return path;
}

/* One sand body in the unit box at dx = 1/64 m (lattice spacing s = dx / 2
 * at the default 8 particles per cell). */
static void one_body_scene(firn_scene_def *def)
{
    firn_scene_default(def);
    def->dx = 1.0f / 64.0f;
    def->write_ply = def->write_preview = 0;
    def->n_materials = 1;
    firn_material_default(&def->materials[0], FIRN_MODEL_SAND);
    snprintf(def->materials[0].name, FIRN_NAME_MAX, "sand");
    def->n_bodies = 1;
    firn_body_default(&def->bodies[0]);
    def->bodies[0].seed = 7;
}

static void set_mesh(firn_shape_def *s, const char *file, float scale)
{
    s->type = FIRN_SHAPE_MESH;
    snprintf(s->file, sizeof s->file, "%s", file);
    s->scale = scale;
}

static long long particle_count(const firn_scene_def *def)
{
    firn_error err;
    firn_world *w = firn_world_create(def, FIRN_BACKEND_CPU, &err);
    cr_assert(w, "%s", err.msg);
    long long n = firn_world_particle_count(w);
    firn_world_destroy(w);
    return n;
}

Test(body_mesh, an_obj_cube_fills_like_the_box_primitive)
{
    make_tmpdir();
    /* Edge 0.25 m given as 0.125 units at scale 2, away from the lattice
     * of the domain. */
    char obj[256];
    snprintf(obj, sizeof obj, "%s", cube_obj("cube.obj", 0.0625f, -1));
    firn_scene_def def;
    one_body_scene(&def);
    float center[3] = {0.43f, 0.51f, 0.377f};
    memcpy(def.bodies[0].shape.center, center, sizeof center);
    for (int a = 0; a < 3; a++)
        def.bodies[0].shape.size[a] = 0.25f;
    long long n_box = particle_count(&def);
    set_mesh(&def.bodies[0].shape, obj, 2.0f);
    long long n_mesh = particle_count(&def);
    double rel = fabs((double)(n_mesh - n_box)) / (double)n_box;
    cr_assert(rel < 0.01, "mesh cube %lld particles, box %lld (%.3f %%)", n_mesh, n_box,
              100.0 * rel);

    /* The prepared shape's bounds are the placed, scaled cube's. */
    firn_prepared_shape ps;
    firn_error err;
    cr_assert_eq(firn_shape_prepare(&def.bodies[0].shape, &ps, &err), 0, "%s", err.msg);
    float lo[3], hi[3];
    firn_shape_bounds(&ps, lo, hi);
    for (int a = 0; a < 3; a++) {
        cr_assert(fabsf(lo[a] - (center[a] - 0.125f)) < 1e-6f, "lo[%d] = %g", a, lo[a]);
        cr_assert(fabsf(hi[a] - (center[a] + 0.125f)) < 1e-6f, "hi[%d] = %g", a, hi[a]);
    }
    float in[3] = {center[0] + 0.12f, center[1] - 0.12f, center[2]};
    float out[3] = {center[0] + 0.13f, center[1], center[2]};
    cr_assert(firn_shape_contains(&ps, in));
    cr_assert(!firn_shape_contains(&ps, out));
    cr_assert(firn_shape_contains(&ps, center));
    firn_shape_release(&ps);
    firn_shape_release(&ps); /* a second release is harmless */
    remove_tmpdir();
}

/* The particles' volume (N s^3, s the lattice spacing) against the enclosed
 * volume of a 20 x 40 latitude-longitude sphere. Stratified sampling is
 * unbiased: a lattice cell that the surface cuts holds a particle with
 * probability equal to the part of it inside, so only those cells add
 * error, each a Bernoulli draw of variance <= 1/4. They lie in the shell
 * of thickness sqrt(3) s about the surface: n_cut <= sqrt(3) A / s^2, and
 * the error is within 5 standard deviations: 5 s^3 sqrt(n_cut) / 2 (here
 * about 0.7 % of the volume; a wrong inside test - the SDF grid's 5 mm
 * cells, say, or the bounding sphere - is off by more). */
Test(body_mesh, an_obj_sphere_holds_its_enclosed_volume, .timeout = 120)
{
    make_tmpdir();
    const float r = 0.15f;
    double volume, area;
    char obj[256];
    snprintf(obj, sizeof obj, "%s", uv_sphere_obj("sphere.obj", r, 20, 40, &volume, &area));
    /* The mesh module agrees with the closed form. */
    const firn_mesh *m;
    firn_error err;
    cr_assert_eq(firn_mesh_get(obj, 1.0f, 0, &m, &err), 0, "%s", err.msg);
    cr_assert(fabs(m->volume - volume) < 1e-9 * volume, "mesh volume %.9g, closed form %.9g",
              m->volume, volume);

    firn_scene_def def;
    one_body_scene(&def);
    const float center[3] = {0.5f, 0.45f, 0.55f};
    memcpy(def.bodies[0].shape.center, center, sizeof center);
    set_mesh(&def.bodies[0].shape, obj, 1.0f);
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    cr_assert(w, "%s", err.msg);
    firn_particles_view p;
    cr_assert_eq(firn_world_particles(w, &p, &err), 0, "%s", err.msg);
    const double s = def.dx / cbrt(def.bodies[0].particles_per_cell);
    double vol = 0.0, r2max = 0.0;
    for (long long i = 0; i < p.n; i++) {
        vol += p.vol[i];
        double r2 = 0.0;
        for (int a = 0; a < 3; a++) {
            double d = p.x[a * p.n + i] - center[a];
            r2 += d * d;
        }
        r2max = fmax(r2max, r2);
    }
    double n_cut = sqrt(3.0) * area / (s * s), tol = 5.0 * s * s * s * sqrt(n_cut) / 2.0;
    cr_assert(fabs(vol - volume) < tol,
              "particle volume %.6g m^3, mesh encloses %.6g m^3: off by %.3g, tolerance %.3g "
              "(%lld particles, s = %g m)",
              vol, volume, vol - volume, tol, p.n, s);
    /* The polyhedron is inscribed in the sphere (its centroid at the
     * sphere's centre by symmetry): nothing lies outside it. */
    cr_assert(sqrt(r2max) <= r * (1.0 + 1e-5), "a particle at %g m from the centre, r = %g",
              sqrt(r2max), r);
    firn_world_destroy(w);
    remove_tmpdir();
}

Test(body_mesh, mesh_sampling_is_the_same_for_any_thread_count, .timeout = 120)
{
    make_tmpdir();
    double volume, area;
    char obj[256];
    snprintf(obj, sizeof obj, "%s", uv_sphere_obj("sphere.obj", 0.1f, 12, 24, &volume, &area));
    firn_scene_def def;
    one_body_scene(&def);
    set_mesh(&def.bodies[0].shape, obj, 1.0f);
    float *x[2] = {NULL, NULL};
    long long n[2];
    int saved = omp_get_max_threads();
    for (int run = 0; run < 2; run++) {
        omp_set_num_threads(run == 0 ? 1 : 3);
        firn_error err;
        firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
        cr_assert(w, "%s", err.msg);
        firn_particles_view p;
        cr_assert_eq(firn_world_particles(w, &p, &err), 0, "%s", err.msg);
        n[run] = p.n;
        x[run] = malloc((size_t)(3 * p.n) * sizeof(float));
        memcpy(x[run], p.x, (size_t)(3 * p.n) * sizeof(float));
        firn_world_destroy(w);
    }
    omp_set_num_threads(saved);
    cr_assert_eq(n[0], n[1]);
    cr_assert(!memcmp(x[0], x[1], (size_t)(3 * n[0]) * sizeof(float)),
              "1 and 3 threads sample different positions");
    free(x[0]);
    free(x[1]);
    remove_tmpdir();
}

/* Parses a one-body scene whose body shape is `shape`, named tmpdir/t.json
 * (a relative file is taken from tmpdir). */
static int parse_body_shape(const char *shape, firn_scene_def *def, firn_error *err)
{
    char buf[2048], name[128];
    snprintf(buf, sizeof buf,
             "{\"materials\": {\"m\": {\"model\": \"sand\"}},"
             " \"bodies\": [{\"material\": \"m\", \"shape\": %s}]}",
             shape);
    snprintf(name, sizeof name, "%s/t.json", tmpdir);
    return firn_scene_parse_json(buf, name, def, err);
}

static void expect_error(const char *shape, firn_status code, const char *n1, const char *n2)
{
    firn_scene_def def;
    firn_error err;
    int rc = parse_body_shape(shape, &def, &err);
    cr_assert_eq(rc, code, "%s: rc %d, want %d (%s)", shape, rc, code, rc ? err.msg : "");
    cr_assert_eq(err.code, code);
    cr_assert(strstr(err.msg, n1), "message '%s' lacks '%s'", err.msg, n1);
    cr_assert(!n2 || strstr(err.msg, n2), "message '%s' lacks '%s'", err.msg, n2);
}

Test(body_mesh, bad_mesh_bodies_name_the_key_path)
{
    make_tmpdir();
    cube_obj("open.obj", 0.1f, 2);
    cube_obj("cube.obj", 0.1f, -1);
    expect_error("{\"type\": \"mesh\", \"file\": \"missing.obj\"}", FIRN_E_IO,
                 "t.json: bodies[0].shape.file", "missing.obj");
    expect_error("{\"type\": \"mesh\", \"file\": \"open.obj\"}", FIRN_E_SCENE,
                 "t.json: bodies[0].shape.file: mesh '", "the surface has a hole");
    expect_error("{\"type\": \"mesh\"}", FIRN_E_SCENE, "bodies[0].shape.file", "missing");
    expect_error("{\"type\": \"mesh\", \"file\": \"\"}", FIRN_E_SCENE, "bodies[0].shape.file",
                 "must not be empty");
    expect_error("{\"type\": \"mesh\", \"file\": \"cube.obj\", \"scale\": 0}", FIRN_E_SCENE,
                 "bodies[0].shape.scale = 0", "must be > 0");
    expect_error("{\"type\": \"mesh\", \"file\": \"cube.obj\", \"scale\": -2}", FIRN_E_SCENE,
                 "bodies[0].shape.scale = -2", "must be > 0");
    expect_error("{\"type\": \"mesh\", \"file\": \"cube.obj\", \"radius\": 0.1}", FIRN_E_SCENE,
                 "bodies[0].shape", "radius");
    /* Placed so that the cube (0.2 m) reaches past the wall layers. */
    expect_error("{\"type\": \"mesh\", \"file\": \"cube.obj\", \"center\": [0.5, 0.1, 0.5]}",
                 FIRN_E_SCENE, "bodies[0]: mesh", "outside the allowed");

    /* A definition built in code: validated when the world is made. */
    firn_scene_def def;
    firn_error err;
    one_body_scene(&def);
    char missing[256];
    snprintf(missing, sizeof missing, "%s/missing.obj", tmpdir);
    set_mesh(&def.bodies[0].shape, missing, 1.0f);
    cr_assert_null(firn_world_create(&def, FIRN_BACKEND_CPU, &err));
    cr_assert_eq(err.code, FIRN_E_IO, "%d: %s", err.code, err.msg);
    cr_assert(strstr(err.msg, "bodies[0].shape.file"), "%s", err.msg);

    /* The sampler's own preparation names the key within the shape. */
    firn_prepared_shape ps;
    cr_assert_neq(firn_shape_prepare(&def.bodies[0].shape, &ps, &err), 0);
    cr_assert_eq(err.code, FIRN_E_IO);
    cr_assert(!strncmp(err.msg, "file: ", 6), "%s", err.msg);
    firn_shape_release(&ps);
    def.bodies[0].shape.scale = 0.0f;
    cr_assert_neq(firn_shape_prepare(&def.bodies[0].shape, &ps, &err), 0);
    cr_assert(!strncmp(err.msg, "scale = 0", 9), "%s", err.msg);
    firn_shape_release(&ps);
    remove_tmpdir();
}

Test(body_mesh, a_scene_with_a_mesh_body_runs_end_to_end, .timeout = 120)
{
    make_tmpdir();
    double volume, area;
    uv_sphere_obj("ball.obj", 1.0f, 10, 20, &volume, &area);
    char scene[1024];
    snprintf(scene, sizeof scene,
             "{\"domain\": {\"lower\": [0, 0, 0], \"upper\": [0.3, 0.3, 0.3], \"dx\": 0.02},"
             " \"time\": {\"frame_dt\": 0.01, \"frames\": 2},"
             " \"materials\": {\"jelly\": {\"model\": \"elastic\"}},"
             " \"bodies\": [{\"material\": \"jelly\", \"velocity\": [0, -1, 0],"
             "   \"shape\": {\"type\": \"mesh\", \"file\": \"ball.obj\", \"scale\": 0.08,"
             "              \"center\": [0.15, 0.15, 0.15]}}],"
             " \"output\": {\"dir\": \"%s/out\"}}",
             tmpdir);
    const char *path = write_file("scene.json", scene);
    char args[512], out[8192];
    /* From another folder: the OBJ path is taken from the scene's. */
    snprintf(args, sizeof args, "run '%s' --backend cpu", path);
    int rc = test_run_firn(out, sizeof out, "/", args);
    cr_assert_eq(rc, 0, "firn run exited %d:\n%s", rc, out);
    char ply[256];
    struct stat st;
    snprintf(ply, sizeof ply, "%s/out/frame_00002.ply", tmpdir);
    cr_assert_eq(stat(ply, &st), 0, "no %s:\n%s", ply, out);
    /* About volume * scale^3 / s^3 particles, s = 0.01 m. */
    double expect = volume * pow(0.08, 3) / 1e-6;
    const char *at = strstr(out, "frame 2/2");
    at = at ? strstr(at, "MPM ") : NULL; /* the progress line: "MPM <particles> p ..." */
    cr_assert(at, "%s", out);
    long long n = atoll(at + 4);
    cr_assert(fabs((double)n - expect) < 0.05 * expect, "%lld particles, expected about %.0f\n%s",
              n, expect, out);
    remove_tmpdir();
}
