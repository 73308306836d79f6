/* test_output.c - PLY, PNG preview and JSONL stats writers (host/output.c). */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <sys/resource.h>
#include <signal.h>
#include <dirent.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "firn.h"
#include "test_util.h"

/* ---- helpers ------------------------------------------------------------- */

static void make_tmpdir(char dir[64])
{
    strcpy(dir, "/tmp/firn_test_output_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

/* Number of entries in dir (without . and ..); counts temp files too. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* The test dirs are flat, so removing their files then the dir suffices. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    unsigned char *buf = malloc(*len + 1);
    cr_assert_eq(fread(buf, 1, *len, f), *len);
    buf[*len] = 0;
    fclose(f);
    return buf;
}

static float f32le(const unsigned char *b)
{
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Three particles with distinct, awkward values in every field. */
static const float X[9] = {0.125f, -1.5f, 3.0e-7f, 2.0f, 0.0f, -0.0f, 1e6f, 0.333333f, 7.25f};
static const float V[9] = {1.f, 2.f, 3.f, -4.f, -5.f, -6.f, 0.5f, 1e-3f, -2e3f};
static const float JP[3] = {1.0f, 0.97f, 1.2f};
static const float DMG[3] = {0.0f, 0.5f, 1.0f};
static const uint8_t MAT[3] = {0, 7, 255};

static firn_particles_view three_particles(void)
{
    firn_particles_view v = {.n = 3, .x = X, .v = V, .Jp = JP, .damage = DMG, .mat = MAT};
    return v;
}

/* ---- PLY ----------------------------------------------------------------- */

Test(output, ply_reads_back_exactly)
{
    char dir[64], path[128];
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/frame.ply", dir);
    firn_particles_view v = three_particles();
    firn_error err = {0};
    cr_assert_eq(firn_write_ply(path, &v, &err), FIRN_OK, "%s", err.msg);

    size_t len;
    unsigned char *buf = slurp(path, &len);
    const char *end = strstr((const char *)buf, "end_header\n");
    cr_assert_not_null(end);
    size_t header = (size_t)(end - (const char *)buf) + strlen("end_header\n");
    const char *want =
        "ply\nformat binary_little_endian 1.0\ncomment firn " FIRN_VERSION "\n"
        "element vertex 3\n"
        "property float x\nproperty float y\nproperty float z\n"
        "property float vx\nproperty float vy\nproperty float vz\n"
        "property uchar material\nproperty float jp\nproperty float damage\nend_header\n";
    cr_assert_eq(header, strlen(want));
    cr_assert_eq(memcmp(buf, want, header), 0, "header differs");
    cr_assert_eq(len, header + 3 * 33, "file is header + 3 packed 33-byte records");

    for (int i = 0; i < 3; i++) {
        const unsigned char *r = buf + header + 33 * i;
        for (int c = 0; c < 3; c++) {
            cr_assert_eq(f32le(r + 4 * c), X[c * 3 + i], "x[%d][%d]", i, c);
            cr_assert_eq(f32le(r + 12 + 4 * c), V[c * 3 + i], "v[%d][%d]", i, c);
        }
        cr_assert_eq(r[24], MAT[i]);
        cr_assert_eq(f32le(r + 25), JP[i]);
        cr_assert_eq(f32le(r + 29), DMG[i]);
    }
    free(buf);
    cr_assert_eq(count_entries(dir), 1, "no temp file is left behind");
    remove_tree(dir);
}

Test(output, ply_into_missing_directory_fails_cleanly)
{
    char dir[64], path[160];
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/no_such_dir/frame.ply", dir);
    firn_particles_view v = three_particles();
    firn_error err = {0};
    cr_assert_eq(firn_write_ply(path, &v, &err), FIRN_E_IO);
    cr_assert_eq(err.code, FIRN_E_IO);
    cr_assert_not_null(strstr(err.msg, path), "message names the path: %s", err.msg);
    cr_assert_eq(count_entries(dir), 0, "nothing is left behind");
    remove_tree(dir);
}

Test(output, ply_replaces_existing_file_fully)
{
    char dir[64], path[128];
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/frame.ply", dir);
    /* A larger stale file: any leftover byte would show in the size. */
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 100000; i++)
        fputc('J', f);
    fclose(f);

    firn_particles_view v = three_particles();
    firn_error err = {0};
    cr_assert_eq(firn_write_ply(path, &v, &err), FIRN_OK, "%s", err.msg);
    size_t len;
    unsigned char *buf = slurp(path, &len);
    cr_assert_eq(memcmp(buf, "ply\n", 4), 0);
    cr_assert_lt(len, 1000);
    cr_assert_null(memchr(buf, 'J', len), "no byte of the old file survives");
    free(buf);
    cr_assert_eq(count_entries(dir), 1, "only the frame, no temp file");
    remove_tree(dir);
}

Test(output, ply_temporary_never_writes_through_a_symlink)
{
    /* A symlink planted at the temporary's name (path.tmp.<pid>) pointing at
     * a file elsewhere: the frame is written as a file of its own and the
     * link's target keeps its bytes. */
    char dir[64], path[128], tmp[160], victim[128];
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/frame.ply", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    snprintf(victim, sizeof victim, "%s/victim", dir);
    FILE *f = fopen(victim, "wb");
    fputs("keep", f);
    fclose(f);
    cr_assert_eq(symlink(victim, tmp), 0);

    firn_particles_view v = three_particles();
    firn_error err = {0};
    cr_assert_eq(firn_write_ply(path, &v, &err), FIRN_OK, "%s", err.msg);
    size_t len;
    unsigned char *buf = slurp(victim, &len);
    cr_expect(len == 4 && !memcmp(buf, "keep", 4), "the link's target was written");
    free(buf);
    struct stat st;
    cr_expect(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "the frame is not a file of its own");
    cr_expect_eq(count_entries(dir), 2, "the frame and the victim, no temporary or link left");
    remove_tree(dir);
}

/* ---- JSONL stats --------------------------------------------------------- */

static void two_material_scene(firn_scene_def *def)
{
    memset(def, 0, sizeof *def);
    def->n_materials = 2;
    strcpy(def->materials[0].name, "sand");
    strcpy(def->materials[1].name, "wa\"ter"); /* needs escaping */
}

static firn_frame_stats some_stats(int frame)
{
    firn_frame_stats s;
    memset(&s, 0, sizeof s);
    s.frame = frame;
    s.time = (frame + 1) / 60.0;
    s.substeps = 1234567890123LL;
    s.frame_substeps = 17;
    s.dt = 9.8e-4f;
    s.particles = 3000;
    s.kinetic_energy = 0.1 + 0.2; /* not exactly 0.3: needs all 17 digits */
    s.momentum[0] = -1.0 / 3.0;
    s.momentum[1] = 2.5;
    s.momentum[2] = 1e-300;
    s.center_of_mass[1] = 0.75;
    s.bbox_lower[0] = -0.1f;
    s.bbox_upper[2] = 0.3f;
    s.mass = 12.5;
    s.material_count[0] = 1000;
    s.material_count[1] = 2000;
    s.material_count[2] = 99; /* beyond n_materials: not listed */
    s.wall_seconds = 0.0125;
    s.throughput = 4.08e6;
    return s;
}

static double num(const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    cr_assert(cJSON_IsNumber(it), "key %s is a number", key);
    return it->valuedouble;
}

static void check_line(const char *line, const firn_frame_stats *s)
{
    cJSON *j = cJSON_Parse(line);
    cr_assert_not_null(j, "valid JSON: %s", line);
    cr_assert_eq(num(j, "frame"), s->frame);
    cr_assert_eq(num(j, "time"), s->time, "doubles round-trip exactly");
    cr_assert_eq(num(j, "substeps"), (double)s->substeps);
    cr_assert_eq(num(j, "frame_substeps"), s->frame_substeps);
    cr_assert_eq((float)num(j, "dt"), s->dt, "floats round-trip exactly");
    cr_assert_eq(num(j, "particles"), (double)s->particles);
    cr_assert_eq(num(j, "kinetic_energy"), s->kinetic_energy);
    cr_assert_eq(num(j, "mass"), s->mass);
    cr_assert_eq(num(j, "wall_seconds"), s->wall_seconds);
    cr_assert_eq(num(j, "throughput"), s->throughput);
    const char *vecs[] = {"momentum", "center_of_mass", "bbox_lower", "bbox_upper"};
    for (int k = 0; k < 4; k++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, vecs[k]);
        cr_assert(cJSON_IsArray(a) && cJSON_GetArraySize(a) == 3, "%s has 3 items", vecs[k]);
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "momentum");
    cr_assert_eq(cJSON_GetArrayItem(m, 0)->valuedouble, s->momentum[0]);
    cr_assert_eq(cJSON_GetArrayItem(m, 2)->valuedouble, s->momentum[2]);
    const cJSON *lo = cJSON_GetObjectItemCaseSensitive(j, "bbox_lower");
    cr_assert_eq((float)cJSON_GetArrayItem(lo, 0)->valuedouble, s->bbox_lower[0]);
    const cJSON *mats = cJSON_GetObjectItemCaseSensitive(j, "materials");
    cr_assert(cJSON_IsObject(mats));
    cr_assert_eq(cJSON_GetArraySize(mats), 2, "one entry per defined material");
    cr_assert_eq(num(mats, "sand"), 1000);
    cr_assert_eq(num(mats, "wa\"ter"), 2000);
    cJSON_Delete(j);
}

/* A fresh folder, its stats.jsonl path and the two-material scene. */
static void stats_setup(char dir[64], char path[128], firn_scene_def *def)
{
    make_tmpdir(dir);
    snprintf(path, 128, "%s/stats.jsonl", dir);
    two_material_scene(def);
}

Test(output, stats_lines_are_json_and_append)
{
    char dir[64], path[128];
    firn_scene_def def;
    stats_setup(dir, path, &def);
    firn_frame_stats s0 = some_stats(0), s1 = some_stats(1);
    firn_error err = {0};
    cr_assert_eq(firn_append_stats_jsonl(path, &def, &s0, &err), FIRN_OK, "%s", err.msg);
    cr_assert_eq(firn_append_stats_jsonl(path, &def, &s1, &err), FIRN_OK, "%s", err.msg);

    size_t len;
    char *text = (char *)slurp(path, &len);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    cr_assert_eq(lines, 2, "one line per append");
    cr_assert_eq(text[len - 1], '\n', "ends with a complete line");
    char *nl = strchr(text, '\n');
    *nl = 0;
    text[len - 1] = 0;
    check_line(text, &s0);
    check_line(nl + 1, &s1);
    free(text);
    remove_tree(dir);
}

Test(output, stats_short_write_keeps_whole_lines)
{
    /* A file-size limit stands in for a full disk: the second line is cut
     * short by the kernel (write returns fewer bytes), is an I/O error that
     * says so, and is removed, so the file still holds the first line
     * only. SIGXFSZ is ignored so that the write returns instead. */
    char dir[64], path[128];
    firn_scene_def def;
    stats_setup(dir, path, &def);
    firn_frame_stats s0 = some_stats(0), s1 = some_stats(1);
    firn_error err = {0};
    cr_assert_eq(firn_append_stats_jsonl(path, &def, &s0, &err), FIRN_OK, "%s", err.msg);
    size_t len0;
    free(slurp(path, &len0));

    struct rlimit old, lim;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = len0 + 40;
    signal(SIGXFSZ, SIG_IGN);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = firn_append_stats_jsonl(path, &def, &s1, &err);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_DFL);

    cr_expect_eq(rc, FIRN_E_IO);
    cr_expect(strstr(err.msg, "short write (40 of") && strstr(err.msg, "partial line was removed"),
              "%s", err.msg);
    size_t len;
    char *text = (char *)slurp(path, &len);
    cr_expect_eq(len, len0, "the file is %zu bytes, was %zu before the cut line", len, len0);
    cr_expect_eq(text[len - 1], '\n');
    free(text);
    remove_tree(dir);
}

Test(output, stats_non_finite_values_stay_valid_json)
{
    char dir[64], path[128];
    firn_scene_def def;
    stats_setup(dir, path, &def);
    firn_frame_stats s = some_stats(0);
    s.kinetic_energy = NAN;
    s.bbox_upper[0] = INFINITY;
    firn_error err = {0};
    cr_assert_eq(firn_append_stats_jsonl(path, &def, &s, &err), FIRN_OK, "%s", err.msg);
    size_t len;
    char *text = (char *)slurp(path, &len);
    cJSON *j = cJSON_Parse(text);
    cr_assert_not_null(j, "valid JSON: %s", text);
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "kinetic_energy")));
    cJSON_Delete(j);
    free(text);
    remove_tree(dir);
}

Test(output, stats_into_missing_directory_fails)
{
    char dir[64], path[160];
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/no_such_dir/stats.jsonl", dir);
    firn_scene_def def;
    two_material_scene(&def);
    firn_frame_stats s = some_stats(0);
    firn_error err = {0};
    cr_assert_eq(firn_append_stats_jsonl(path, &def, &s, &err), FIRN_E_IO);
    cr_assert_not_null(strstr(err.msg, path), "message names the path: %s", err.msg);
    remove_tree(dir);
}

/* ---- PNG preview ----------------------------------------------------------- */

/* Layout for a unit-cube domain: 640 px wide, 8 px margins, two 308 px
 * columns, so 1 m = 308 px; the front view (x right, y up) starts at
 * (8, 8), the top view (x right, z down) at (324, 8); height 308 + 16. */
static void unit_cube(firn_scene_def *def)
{
    memset(def, 0, sizeof *def);
    def->upper[0] = def->upper[1] = def->upper[2] = 1.0f;
}

static const unsigned char *pixel(const unsigned char *rgb, int w, int x, int y)
{
    return rgb + 3 * ((size_t)y * w + x);
}

Test(output, png_preview_shows_particles_where_expected)
{
    char dir[64], path[128];
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/frame.png", dir);
    firn_scene_def def;
    unit_cube(&def);
    /* Two particles at the same (x, y) = (0.5, 0.5): red (material 3) in
     * front at z = 0.75, blue (material 0) behind at z = 0.25. Red comes
     * first, so only a depth test (not drawing order) keeps it on top. */
    const float x[6] = {0.5f, 0.5f, 0.5f, 0.5f, 0.75f, 0.25f};
    const uint8_t mat[2] = {3, 0};
    firn_particles_view v = {.n = 2, .x = x, .mat = mat};
    firn_error err = {0};
    cr_assert_eq(firn_write_preview_png(path, &def, &v, &err), FIRN_OK, "%s", err.msg);
    cr_assert_eq(count_entries(dir), 1, "no temp file is left behind");

    size_t len;
    unsigned char *buf = slurp(path, &len);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    cr_assert_eq(memcmp(buf, sig, 8), 0, "PNG signature");
    cr_assert_eq(memcmp(buf + 12, "IHDR", 4), 0, "IHDR comes first");
    uint32_t w = (uint32_t)buf[16] << 24 | buf[17] << 16 | buf[18] << 8 | buf[19];
    uint32_t h = (uint32_t)buf[20] << 24 | buf[21] << 16 | buf[22] << 8 | buf[23];
    cr_assert_eq(w, 640);
    cr_assert_eq(h, 324, "height follows the domain's aspect ratio");

    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    cr_assert(png_image_begin_read_from_memory(&img, buf, len));
    img.format = PNG_FORMAT_RGB;
    unsigned char *rgb = malloc(PNG_IMAGE_SIZE(img));
    cr_assert(png_image_finish_read(&img, NULL, rgb, 0, NULL));

    const unsigned char *bg = pixel(rgb, 640, 2, 2);        /* outside both panels */
    const unsigned char *empty = pixel(rgb, 640, 20, 20);   /* inside, no particle */
    const unsigned char *front = pixel(rgb, 640, 162, 162); /* (x, y) = (0.5, 0.5) */
    const unsigned char *top = pixel(rgb, 640, 478, 239);   /* (x, z) = (0.5, 0.75) */
    cr_assert(bg[0] > 200 && bg[1] > 200 && bg[2] > 200, "light background");
    cr_assert(empty[0] > 200 && empty[1] > 200 && empty[2] > 200, "light domain");
    cr_assert(front[0] > front[1] + 50 && front[0] > front[2] + 50,
              "front view shows the nearer red particle: %d %d %d", front[0], front[1], front[2]);
    cr_assert(top[0] > top[1] + 50 && top[0] > top[2] + 50, "top view shows it at z = 0.75");
    const unsigned char *top_blue = pixel(rgb, 640, 478, 85); /* (x, z) = (0.5, 0.25) */
    cr_assert(top_blue[2] > top_blue[0] + 50, "top view shows the blue one at z = 0.25");
    free(rgb);
    free(buf);
    remove_tree(dir);
}

Test(output, png_preview_is_deterministic)
{
    char dir[64], a[128], b[128];
    make_tmpdir(dir);
    snprintf(a, sizeof a, "%s/a.png", dir);
    snprintf(b, sizeof b, "%s/b.png", dir);
    firn_scene_def def;
    unit_cube(&def);
    def.upper[1] = 2.0f; /* a tall domain */
    firn_particles_view v = three_particles();
    firn_error err = {0};
    cr_assert_eq(firn_write_preview_png(a, &def, &v, &err), FIRN_OK, "%s", err.msg);
    cr_assert_eq(firn_write_preview_png(b, &def, &v, &err), FIRN_OK, "%s", err.msg);
    size_t la, lb;
    unsigned char *da = slurp(a, &la), *db = slurp(b, &lb);
    cr_assert_eq(la, lb);
    cr_assert_eq(memcmp(da, db, la), 0, "same input, same bytes");
    free(da);
    free(db);
    remove_tree(dir);
}

/* `firn run` writes per frame the surface PLY (vertices and triangles),
 * the volume VTU (points, tets of type 10, stress, strain, von Mises,
 * velocity) and a stats line with an "fem" block. */
Test(output, fem_run_writes_ply_vtu_and_stats, .timeout = 120)
{
    char dir[96], path[256], out[8192];
    test_mkdtemp(dir, sizeof dir, "fem_out");
    snprintf(path, sizeof path, "%s/s.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "{\"domain\": {\"lower\": [0, 0, 0], \"upper\": [1, 1, 1], \"dx\": 0.1},"
               " \"time\": {\"frames\": 2, \"frame_dt\": 0.005},"
               " \"materials\": {\"j\": {\"model\": \"fem_corotated\", \"E\": 1e5}},"
               " \"bodies\": [{\"material\": \"j\", \"solver\": \"fem\", \"shape\": {\"type\":"
               " \"box\", \"center\": [0.5, 0.5, 0.5], \"size\": [0.2, 0.1, 0.1],"
               " \"cells\": [2, 1, 1]}, \"fixed\": {\"indices\": [0]}}],"
               " \"output\": {\"dir\": \"o\"}}\n");
    fclose(f);
    cr_assert_eq(test_run_firn(out, sizeof out, dir, "run s.json --quiet"), 0, "%s", out);
    /* 3 x 2 x 2 vertices, 12 tets, 2 triangles per boundary cell face:
     * 2 (2 + 2 + 1) faces of cells = 10, so 20 triangles */
    snprintf(path, sizeof path, "%s/o/fem_00002.ply", dir);
    f = fopen(path, "rb");
    cr_assert(f, "no %s", path);
    char head[1024] = "";
    cr_assert_gt(fread(head, 1, sizeof head - 1, f), 0);
    fclose(f);
    cr_assert(strstr(head, "element vertex 12\n") && strstr(head, "element face 20\n") &&
                  strstr(head, "property uchar fixed\n"),
              "%s", head);
    snprintf(path, sizeof path, "%s/o/fem_00002.vtu", dir);
    f = fopen(path, "r");
    cr_assert(f, "no %s", path);
    static char vtu[1 << 16];
    size_t len = fread(vtu, 1, sizeof vtu - 1, f);
    vtu[len] = '\0';
    fclose(f);
    cr_assert(strstr(vtu, "NumberOfPoints=\"12\" NumberOfCells=\"12\""), "%.300s", vtu);
    cr_assert(
        strstr(vtu, "Name=\"types\" format=\"ascii\">\n10 10 10 10 10 10 10 10 10 10 10 10\n"),
        "cell types");
    cr_assert(strstr(vtu, "Name=\"stress\" NumberOfComponents=\"6\""));
    cr_assert(strstr(vtu, "Name=\"green_strain\" NumberOfComponents=\"6\""));
    cr_assert(strstr(vtu, "Name=\"von_mises\""));
    cr_assert(strstr(vtu, "Name=\"velocity\" NumberOfComponents=\"3\""));
    cr_assert(strstr(vtu, "</VTKFile>\n"));
    snprintf(path, sizeof path, "%s/o/stats.jsonl", dir);
    f = fopen(path, "r");
    cr_assert(f);
    len = fread(vtu, 1, sizeof vtu - 1, f);
    vtu[len] = '\0';
    fclose(f);
    cr_assert(strstr(vtu, "\"fem\":{\"vertices\":12,\"elements\":12,\"fixed\":1,"), "%.600s", vtu);
    cr_assert(strstr(vtu, "\"elastic_energy\":") && strstr(vtu, "\"max_von_mises\":"));
    snprintf(path, sizeof path, "%s/o/frame_00002.png", dir);
    cr_assert_eq(access(path, F_OK), 0, "no preview %s", path);
    test_rmdir(dir);
}
