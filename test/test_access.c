/* test_access.c - the direct-access API of firn.h (host/access.c): the
 * world's clocks, zero-copy views of rigid bodies, commanding a kinematic
 * body's velocity, the public structs' sizes that bindings check their
 * mirrors against, a frame written as `firn run` writes it
 * (firn_world_write_frame), the backend comparison's refusal without a
 * GPU (firn_compare_backends) and any solver's fields by name
 * (firn_world_field). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "all_solvers.h"
#include "firn.h"
#include "test_util.h"

/* A small sand block on the floor and three rigid boxes far from it: one
 * static, one kinematic (keyframed, so that a command must stop that), one
 * dynamic. */
static firn_world *make_world(void)
{
    firn_scene_def def;
    firn_scene_default(&def);
    for (int a = 0; a < 3; a++) {
        def.lower[a] = 0.0f;
        def.upper[a] = 1.0f;
    }
    def.dx = 0.05f;
    def.frame_dt = 0.01f;
    def.dt = 1e-3f;
    def.write_ply = def.write_preview = 0;
    def.n_materials = 1;
    firn_material_default(&def.materials[0], FIRN_MODEL_SAND);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "sand");
    def.n_bodies = 1;
    firn_body_default(&def.bodies[0]);
    def.bodies[0].shape.type = FIRN_SHAPE_BOX;
    const float c[3] = {0.25f, 0.16f, 0.25f}, s[3] = {0.15f, 0.1f, 0.15f};
    memcpy(def.bodies[0].shape.center, c, sizeof c);
    memcpy(def.bodies[0].shape.size, s, sizeof s);
    const firn_motion motion[3] = {FIRN_RIGID_STATIC, FIRN_RIGID_KINEMATIC, FIRN_RIGID_DYNAMIC};
    const char *const names[3] = {"post", "arm", "crate"};
    def.n_rigids = 3;
    for (int k = 0; k < 3; k++) {
        firn_rigid_def *r = &def.rigids[k];
        firn_rigid_default(r);
        snprintf(r->name, FIRN_NAME_MAX, "%s", names[k]);
        r->motion = motion[k];
        r->shape.type = FIRN_RSHAPE_BOX;
        const float rc[3] = {0.3f + 0.2f * k, 0.7f, 0.7f}, rs[3] = {0.06f, 0.06f, 0.06f};
        memcpy(r->shape.center, rc, sizeof rc);
        memcpy(r->shape.size, rs, sizeof rs);
    }
    firn_rigid_def *arm = &def.rigids[1];
    arm->n_keyframes = 2;
    arm->keyframes[0].t = 0.0f;
    memcpy(arm->keyframes[0].position, arm->shape.center, sizeof arm->shape.center);
    arm->keyframes[1] = arm->keyframes[0];
    arm->keyframes[1].t = 1.0f;
    arm->keyframes[1].position[2] -= 0.3f;
    firn_error err;
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    cr_assert_not_null(w, "%s", err.msg);
    return w;
}

/* A commanded kinematic body moves along v t and turns by omega t about
 * its axis, whatever its keyframes said: the closed form, within float
 * rounding over the substeps. */
Test(access, kinematic_rigid_follows_commanded_velocity, .timeout = 60)
{
    firn_world *w = make_world();
    firn_error err;
    firn_rigid_view r;
    cr_assert_eq(firn_world_rigid_count(w), 3);
    cr_assert_eq(firn_world_rigid_view(w, 1, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(r.motion, FIRN_RIGID_KINEMATIC);
    double x0[3];
    for (int a = 0; a < 3; a++)
        x0[a] = r.position[a];
    const float v[3] = {0.25f, -0.1f, 0.05f}, om[3] = {0.0f, 2.0f, 0.0f};
    cr_assert_eq(firn_world_set_rigid_velocity(w, 1, v, om, &err), 0, "%s", err.msg);
    const int n = 200;
    const float dt = 1e-3f;
    cr_assert_eq(firn_world_run_substeps(w, n, dt, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_rigid_view(w, 1, &r, &err), 0, "%s", err.msg);
    const double t = n * (double)dt;
    for (int a = 0; a < 3; a++)
        cr_assert(fabs(r.position[a] - (x0[a] + v[a] * t)) < 1e-5,
                  "x[%d] = %.7g after %g s, want %.7g", a, r.position[a], t, x0[a] + v[a] * t);
    /* A turn of omega t about +y: q = (cos(theta/2), 0, sin(theta/2), 0). */
    const double half = 0.5 * om[1] * t, want[4] = {cos(half), 0.0, sin(half), 0.0};
    for (int a = 0; a < 4; a++)
        cr_assert(fabs(r.orientation[a] - want[a]) < 1e-5, "q[%d] = %.7g, want %.7g", a,
                  r.orientation[a], want[a]);
    for (int a = 0; a < 3; a++) {
        cr_assert_eq(r.velocity[a], v[a]);
        cr_assert_eq(r.angular_velocity[a], om[a]);
    }
    firn_world_destroy(w);
}

/* Refusals: unknown, static and dynamic bodies, NULL and non-finite
 * components; none changes the body. */
Test(access, refusals_change_nothing, .timeout = 60)
{
    firn_world *w = make_world();
    firn_error err;
    firn_rigid_view r;
    cr_assert_eq(firn_world_rigid_view(w, 1, &r, &err), 0, "%s", err.msg);
    float before[13];
    memcpy(before, r.position, 3 * sizeof(float));
    memcpy(before + 3, r.orientation, 4 * sizeof(float));
    memcpy(before + 7, r.velocity, 3 * sizeof(float));
    memcpy(before + 10, r.angular_velocity, 3 * sizeof(float));
    const float ok[3] = {0.1f, 0.0f, 0.0f};
    const float bad[3][3] = {{NAN, 0.0f, 0.0f}, {0.0f, INFINITY, 0.0f}, {0.0f, 0.0f, -INFINITY}};
    for (int k = 0; k < 3; k++) {
        err.code = FIRN_OK;
        cr_assert_neq(firn_world_set_rigid_velocity(w, 1, bad[k], ok, &err), 0);
        cr_assert_eq(err.code, FIRN_E_USAGE);
        cr_assert(strstr(err.msg, "arm") && strstr(err.msg, "not finite"), "%s", err.msg);
        cr_assert_neq(firn_world_set_rigid_velocity(w, 1, ok, bad[k], &err), 0);
        cr_assert(strstr(err.msg, "w["), "%s", err.msg);
    }
    cr_assert_neq(firn_world_set_rigid_velocity(w, 0, ok, ok, &err), 0);
    cr_assert(strstr(err.msg, "static"), "%s", err.msg);
    cr_assert_neq(firn_world_set_rigid_velocity(w, 2, ok, ok, &err), 0);
    cr_assert(strstr(err.msg, "dynamic"), "%s", err.msg);
    cr_assert_neq(firn_world_set_rigid_velocity(w, 3, ok, ok, &err), 0);
    cr_assert(strstr(err.msg, "no rigid body 3"), "%s", err.msg);
    cr_assert_neq(firn_world_set_rigid_velocity(w, -1, ok, ok, NULL), 0);
    cr_assert_neq(firn_world_set_rigid_velocity(w, 1, NULL, ok, &err), 0);
    cr_assert_neq(firn_world_rigid_view(w, 3, &r, &err), 0);
    cr_assert_eq(err.code, FIRN_E_USAGE);
    cr_assert_eq(firn_world_rigid_view(w, 1, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(before, r.position, 3 * sizeof(float)), 0);
    cr_assert_eq(memcmp(before + 3, r.orientation, 4 * sizeof(float)), 0);
    cr_assert_eq(memcmp(before + 7, r.velocity, 3 * sizeof(float)), 0);
    cr_assert_eq(memcmp(before + 10, r.angular_velocity, 3 * sizeof(float)), 0);
    firn_world_destroy(w);
}

/* The view is the state, not a copy: it agrees with the frame statistics,
 * and the clocks with theirs. */
Test(access, views_and_clock_agree_with_stats, .timeout = 60)
{
    firn_world *w = make_world();
    firn_error err;
    firn_frame_stats st;
    int frame = -1;
    double time = -1.0;
    long long substeps = -1;
    firn_world_clock(w, &frame, &time, &substeps);
    cr_assert(frame == 0 && time == 0.0 && substeps == 0);
    for (int f = 0; f < 3; f++)
        cr_assert_eq(firn_world_step_frame(w, &st, &err), 0, "%s", err.msg);
    firn_world_clock(w, &frame, &time, &substeps);
    cr_assert_eq(frame, 3);
    cr_assert_eq(time, st.time);
    cr_assert_eq(substeps, st.substeps);
    cr_assert_eq(substeps, 30); /* dt 1 ms, 10 ms frames */
    firn_world_clock(w, NULL, NULL, NULL);
    for (int k = 0; k < 3; k++) {
        firn_rigid_view r;
        cr_assert_eq(firn_world_rigid_view(w, k, &r, &err), 0, "%s", err.msg);
        cr_assert_eq(memcmp(r.position, st.rigids[k].position, 3 * sizeof(float)), 0);
        cr_assert_eq(memcmp(r.orientation, st.rigids[k].orientation, 4 * sizeof(float)), 0);
        cr_assert_eq(memcmp(r.velocity, st.rigids[k].velocity, 3 * sizeof(float)), 0);
    }
    /* The dynamic crate has fallen for 30 ms: v_y = -g t, to float rounding. */
    cr_assert(fabs(st.rigids[2].velocity[1] + 9.81 * 0.03) < 1e-4, "v_y = %g",
              st.rigids[2].velocity[1]);
    firn_world_destroy(w);
}

Test(access, struct_sizes)
{
    cr_assert_eq(firn_struct_size("firn_scene_def"), sizeof(firn_scene_def));
    cr_assert_eq(firn_struct_size("firn_frame_stats"), sizeof(firn_frame_stats));
    cr_assert_eq(firn_struct_size("firn_tool_state"), sizeof(firn_tool_state));
    cr_assert_eq(firn_struct_size("firn_particles_view"), sizeof(firn_particles_view));
    cr_assert_eq(firn_struct_size("firn_sph_particles_view"), sizeof(firn_sph_particles_view));
    cr_assert_eq(firn_struct_size("firn_pbd_particles_view"), sizeof(firn_pbd_particles_view));
    cr_assert_eq(firn_struct_size("firn_fem_mesh_view"), sizeof(firn_fem_mesh_view));
    cr_assert_eq(firn_struct_size("firn_rigid_view"), sizeof(firn_rigid_view));
    cr_assert_eq(firn_struct_size("firn_error"), sizeof(firn_error));
    cr_assert_eq(firn_struct_size("firn_compare_entry"), sizeof(firn_compare_entry));
    cr_assert_eq(firn_struct_size("firn_compare_report"), sizeof(firn_compare_report));
    cr_assert_eq(firn_struct_size("firn_world"), 0);
    cr_assert_eq(firn_struct_size(NULL), 0);
}

/* ---- firn_world_write_frame ------------------------------------------------- */

/* A sand block with a plate pressing on it and a rigid box beside it: MPM
 * PLY and PNG, tools and rigids PLY, their series and stats.jsonl. */
static const char write_scene[] =
    "{\"domain\": {\"lower\": [0, 0, 0], \"upper\": [0.4, 0.3, 0.4], \"dx\": 0.025},"
    " \"time\": {\"frame_dt\": 0.01, \"frames\": 3},"
    " \"materials\": {\"sand\": {\"model\": \"sand\", \"E\": 3.5e5, \"density\": 1600}},"
    " \"bodies\": [{\"material\": \"sand\", \"shape\": {\"type\": \"box\","
    "   \"center\": [0.2, 0.11, 0.2], \"size\": [0.12, 0.1, 0.12]}}],"
    " \"rigids\": [{\"name\": \"crate\", \"motion\": \"dynamic\", \"density\": 500,"
    "   \"shape\": {\"type\": \"box\", \"center\": [0.08, 0.2, 0.08],"
    "   \"size\": [0.04, 0.04, 0.04]}}],"
    " \"tools\": [{\"name\": \"plate\", \"shape\": {\"type\": \"box\","
    "   \"center\": [0.2, 0.18, 0.2], \"size\": [0.08, 0.01, 0.08]},"
    "   \"velocity\": [0, -0.5, 0], \"softness\": 0.002}]}";

static char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)*len + 1);
    cr_assert(b);
    cr_assert_eq(fread(b, 1, (size_t)*len, f), (size_t)*len);
    b[*len] = '\0';
    fclose(f);
    return b;
}

/* The names in dir (but .firn.lock), sorted, joined by newlines. */
static void list_dir(const char *dir, char *out, size_t size)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    cr_assert(n >= 0, "scandir %s", dir);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            strncat(out, names[i]->d_name, size - strlen(out) - 2);
            strcat(out, "\n");
        }
        free(names[i]);
    }
    free(names);
}

/* Frames 0..3 written by firn_world_write_frame are `firn run`'s: the same
 * files, byte for byte, and the same stats.jsonl lines up to their
 * wall-clock fields (wall_seconds, throughput: the last two). */
Test(access, write_frame_is_firn_runs_frame, .timeout = 120)
{
    char dir[64], scene[128], cli[128], lib[128], out[8192];
    test_mkdtemp(dir, sizeof dir, "wframe");
    snprintf(scene, sizeof scene, "%s/scene.json", dir);
    snprintf(cli, sizeof cli, "%s/cli", dir);
    snprintf(lib, sizeof lib, "%s/lib", dir);
    FILE *f = fopen(scene, "w");
    cr_assert(f);
    fputs(write_scene, f);
    fclose(f);
    char args[512];
    snprintf(args, sizeof args, "run %s --backend cpu --out %s", scene, cli);
    int rc = test_run_firn(out, sizeof out, NULL, args);
    cr_assert_eq(rc, 0, "firn run: exit %d\n%s", rc, out);
    cr_assert_eq(mkdir(lib, 0777), 0);
    firn_scene_def def;
    firn_error err;
    cr_assert_eq(firn_scene_load_json(scene, &def, &err), 0, "%s", err.msg);
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_assert_eq(firn_world_write_frame(w, lib, NULL, &err), 0, "%s", err.msg);
    for (int k = 1; k <= 3; k++) {
        firn_frame_stats s;
        cr_assert_eq(firn_world_step_frame(w, &s, &err), 0, "%s", err.msg);
        cr_assert_eq(firn_world_write_frame(w, lib, &s, &err), 0, "%s", err.msg);
    }
    firn_world_destroy(w);
    char la[4096], lb[4096];
    list_dir(cli, la, sizeof la);
    list_dir(lib, lb, sizeof lb);
    cr_assert_str_eq(lb, la, "files written:\n%s\nfirn run's:\n%s", lb, la);
    cr_assert(strstr(la, "frame_00003.png\n") && strstr(la, "tools_00003.ply\n") &&
                  strstr(la, "rigids.ply.series\n"),
              "%s", la);
    for (char *name = la, *end; (end = strchr(name, '\n')); name = end + 1) {
        *end = '\0';
        char pa[4400], pb[4400];
        snprintf(pa, sizeof pa, "%s/%s", cli, name);
        snprintf(pb, sizeof pb, "%s/%s", lib, name);
        long na, nb;
        char *a = slurp(pa, &na), *b = slurp(pb, &nb);
        cr_assert(a && b, "%s", name);
        if (!strcmp(name, "stats.jsonl")) {
            int lines = 0;
            for (char *p = a, *q = b; *p && *q; lines++) {
                char *ea = strchr(p, '\n'), *eb = strchr(q, '\n');
                cr_assert(ea && eb);
                char *wa = strstr(p, ",\"wall_seconds\":"), *wb = strstr(q, ",\"wall_seconds\":");
                cr_assert(wa && wb && wa < ea && wb < eb);
                cr_assert(wa - p == wb - q && !memcmp(p, q, (size_t)(wa - p)),
                          "stats.jsonl line %d differs:\n%.*s\n%.*s", lines, (int)(ea - p), p,
                          (int)(eb - q), q);
                p = ea + 1, q = eb + 1;
            }
            cr_assert_eq(lines, 4);
        } else {
            cr_assert(na == nb && !memcmp(a, b, (size_t)na), "%s differs from firn run's", name);
        }
        free(a), free(b);
    }
    test_rmdir(dir);
}

/* Each refusal names its cause and writes nothing: a missing folder, a
 * file, a folder a firn run holds, a stats.jsonl with this frame or a later
 * one, statistics of another frame. */
Test(access, write_frame_refusals_write_nothing, .timeout = 60)
{
    char dir[64], path[256], out[4096];
    test_mkdtemp(dir, sizeof dir, "wrefuse");
    firn_world *w = make_world();
    firn_error err = {0};
    snprintf(path, sizeof path, "%s/none", dir);
    cr_assert_eq(firn_world_write_frame(w, path, NULL, &err), -1);
    cr_assert(err.code == FIRN_E_IO && strstr(err.msg, "No such file"), "%d %s", err.code, err.msg);
    snprintf(path, sizeof path, "%s/file", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fclose(f);
    cr_assert_eq(firn_world_write_frame(w, path, NULL, &err), -1);
    cr_assert(err.code == FIRN_E_IO && strstr(err.msg, "not a folder"), "%s", err.msg);
    cr_assert_eq(unlink(path), 0);
    /* A lock another open file description holds, as a running firn run does. */
    snprintf(path, sizeof path, "%s/.firn.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0666);
    cr_assert(fd >= 0 && flock(fd, LOCK_EX) == 0);
    cr_assert_eq(firn_world_write_frame(w, dir, NULL, &err), -1);
    cr_assert(err.code == FIRN_E_IO && strstr(err.msg, "in use by a firn run"), "%s", err.msg);
    close(fd);
    list_dir(dir, out, sizeof out);
    cr_assert_str_eq(out, "", "refused writes left %s", out);
    /* With the lock released: frame 0, then a step, and frame 0 again. */
    cr_assert_eq(firn_world_write_frame(w, dir, NULL, &err), 0, "%s", err.msg);
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    long n0, n1;
    char *before = slurp(path, &n0);
    cr_assert(before && !strncmp(before, "{\"frame\":0,", 11), "%s", before);
    firn_frame_stats s;
    cr_assert_eq(firn_world_step_frame(w, &s, &err), 0, "%s", err.msg);
    s.frame = 0;
    cr_assert_eq(firn_world_write_frame(w, dir, &s, &err), -1);
    cr_assert(err.code == FIRN_E_USAGE && strstr(err.msg, "statistics given are of frame 0"), "%s",
              err.msg);
    /* A world back at frame 0 (a new one) refused: the folder has frame 0. */
    firn_world *w0 = make_world();
    cr_assert_eq(firn_world_write_frame(w0, dir, NULL, &err), -1);
    cr_assert(err.code == FIRN_E_USAGE && strstr(err.msg, "already has frame 0"), "%s", err.msg);
    firn_world_destroy(w0);
    char *after = slurp(path, &n1);
    cr_assert(n1 == n0 && !memcmp(before, after, (size_t)n0), "stats.jsonl changed");
    free(before), free(after);
    /* The world's own frame 1 goes on after it. */
    s.frame = 1;
    cr_assert_eq(firn_world_write_frame(w, dir, &s, &err), 0, "%s", err.msg);
    after = slurp(path, &n1);
    cr_assert(after && strstr(after, "\n{\"frame\":1,"), "%s", after);
    free(after);
    cr_assert_eq(firn_world_write_frame(w, "", NULL, &err), -1);
    cr_assert_eq(err.code, FIRN_E_USAGE);
    firn_world_destroy(w);
    test_rmdir(dir);
}

/* ---- firn_compare_backends ---------------------------------------------------- */

/* Without a usable GPU (a build without CUDA, or no device) the comparison
 * is refused as `firn compare` refuses it, FIRN_E_DEVICE, with no entries;
 * a negative frame count is a usage error. */
Test(access, compare_backends_refusals, .timeout = 60)
{
    firn_world *w = make_world();
    const firn_scene_def *def = firn_world_scene(w);
    firn_compare_report r;
    firn_error err = {0};
    cr_assert_eq(firn_compare_backends(def, -1, &r, &err), -1);
    cr_assert(err.code == FIRN_E_USAGE && strstr(err.msg, "negative"), "%s", err.msg);
    cr_assert(r.n_entries == 0 && r.entries == NULL && !r.ok, "a refused comparison is not ok");
    if (!firn_cuda_available() || firn_cuda_device_count() == 0) {
        cr_assert_eq(firn_compare_backends(def, 1, &r, &err), -1);
        cr_assert_eq(err.code, FIRN_E_DEVICE, "%d %s", err.code, err.msg);
        cr_assert(r.n_entries == 0 && r.entries == NULL && !r.ok, "a refused comparison is not ok");
        char out[4096], dir[64], path[128], args[256];
        test_mkdtemp(dir, sizeof dir, "cmpnogpu");
        snprintf(path, sizeof path, "%s/s.json", dir);
        FILE *f = fopen(path, "w");
        cr_assert(f);
        fputs(write_scene, f);
        fclose(f);
        snprintf(args, sizeof args, "compare %s --frames 1", path);
        cr_assert_eq(test_run_firn(out, sizeof out, NULL, args), FIRN_E_DEVICE, "%s", out);
        cr_assert(strstr(out, err.msg), "firn compare says\n%s\nthe library\n%s", out, err.msg);
        test_rmdir(dir);
    }
    firn_compare_report_free(&r);
    firn_compare_report_free(NULL);
    firn_world_destroy(w);
}

/* Any field of a solver's table by name (firn_world_field): every name
 * firn_world_field_name lists is readable, with the count, components and
 * memory of the solver's own views; the tables hold what each solver
 * saves; a solver or field that does not exist is refused naming the ones
 * that do. */
Test(access, fields_read_every_solver_by_name, .timeout = 60)
{
    firn_world *w = test_world_json(all_solvers_json, "all_solvers.json");
    firn_frame_stats st;
    firn_error err;
    cr_assert_eq(firn_world_step_frame(w, &st, &err), 0, "%s", err.msg);
    firn_particles_view mp;
    firn_sph_particles_view sp;
    firn_pbd_particles_view pp;
    firn_fem_mesh_view fp;
    cr_assert_eq(firn_world_particles(w, &mp, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_sph_particles(w, &sp, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_pbd_particles(w, &pp, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_fem_mesh(w, &fp, &err), 0, "%s", err.msg);
    const struct {
        const char *solver;
        long long n;
        const void *x, *v;
        int fields;
    } s[4] = {{"mpm", mp.n, mp.x, mp.v, 8},
              {"sph", sp.n, sp.x, sp.v, 8},
              {"pbd", pp.n, pp.x, pp.v, 6},
              {"fem", fp.n, fp.x, fp.v, 5}};
    for (int k = 0; k < 4; k++) {
        cr_assert_gt(s[k].n, 0, "%s", s[k].solver);
        int names = 0;
        const char *name;
        while ((name = firn_world_field_name(w, s[k].solver, names))) {
            firn_field_view f;
            cr_assert_eq(firn_world_field(w, s[k].solver, name, &f, &err), 0, "%s %s: %s",
                         s[k].solver, name, err.msg);
            cr_expect_eq(f.count, s[k].n, "%s %s", s[k].solver, name);
            cr_expect_not_null(f.data, "%s %s", s[k].solver, name);
            cr_expect(f.components == 1 || f.components == 3 || f.components == 9, "%s %s: %d",
                      s[k].solver, name, f.components);
            if (!strcmp(name, "x"))
                cr_expect_eq(f.data, s[k].x, "%s x is the view's memory", s[k].solver);
            if (!strcmp(name, "v"))
                cr_expect_eq(f.data, s[k].v, "%s v is the view's memory", s[k].solver);
            if (!strcmp(name, "mat") || !strcmp(name, "fixed"))
                cr_expect_eq(f.type, FIRN_FIELD_UINT8, "%s %s", s[k].solver, name);
            names++;
        }
        cr_expect_eq(names, s[k].fields, "%s has %d fields", s[k].solver, names);
    }
    firn_field_view f;
    cr_assert_eq(firn_world_field(w, "mpm", "F", &f, &err), 0, "%s", err.msg);
    cr_expect_eq(f.components, 9);
    cr_expect_eq(f.data, mp.F);
    /* a deformation gradient of sand in one frame stays near the identity */
    const float *F = f.data;
    cr_expect(fabsf(F[0] - 1.0f) < 0.05f && fabsf(F[4 * f.count] - 1.0f) < 0.05f, "F %g %g", F[0],
              F[4 * f.count]);
    cr_assert_eq(firn_world_field(w, "sph", "temperature", &f, &err), -1);
    cr_expect_eq(err.code, FIRN_E_USAGE);
    cr_expect(strstr(err.msg, "the sph solver has no field 'temperature'; its fields are x, v, "
                              "acc, rho, p, alpha, drho, mat"),
              "%s", err.msg);
    cr_assert_eq(firn_world_field(w, "rigid", "x", &f, &err), -1);
    cr_expect(strstr(err.msg, "no solver 'rigid'; the solvers with fields are mpm, sph, pbd, fem"),
              "%s", err.msg);
    cr_expect_null(firn_world_field_name(w, "tool", 0));
    cr_expect_null(firn_world_field_name(w, "sph", 8));
    firn_world_destroy(w);
}
