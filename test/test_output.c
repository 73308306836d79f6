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
#include "output.h"
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
        "comment units x y z [m], vx vy vz [m/s], jp [1], damage [1]\n"
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

/* A solver's PLY frame from its table of fields (firn_write_fields_ply,
 * how the frame writer writes SPH's): only the fields with PLY names, in
 * table order, one property per component, a field's unit in the units
 * comment; the records packed as the properties say. A field whose names
 * do not match its components is refused and nothing is written. This is
 * what lets a solver's new field reach its frames from its own table. */
Test(output, fields_ply_writes_the_tables_ply_fields_in_order)
{
    char dir[64], path[128];
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/t.ply", dir);
    const float T[3] = {273.15f, 300.5f, -1.0f}, hidden[3] = {9, 9, 9};
    firn_field_table t = {.count = 3, .entity = "test particle"};
    const int F = FIRN_FIELD_FLOAT32;
    firn_field_add(&t, "x", "x", F, 3, (void *)X, 0, 0.0f, 0.0f, NULL);
    firn_field_ply(&t, "x y z", "[m]");
    firn_field_add(&t, "hidden", "hidden", F, 1, (void *)hidden, 0, 0.0f, 0.0f, NULL);
    firn_field_add(&t, "mat", "material", FIRN_FIELD_UINT8, 1, (void *)MAT, 0, 0.0f, 0.0f, NULL);
    firn_field_ply(&t, "material", NULL);
    firn_field_add(&t, "T", "temperature", F, 1, (void *)T, 0, 0.0f, 0.0f, NULL);
    firn_field_ply(&t, "temperature", "[K]");
    firn_error err = {0};
    cr_assert_eq(firn_write_fields_ply(path, NULL, &t, &err), FIRN_OK, "%s", err.msg);
    size_t len;
    unsigned char *buf = slurp(path, &len);
    const char *want =
        "ply\nformat binary_little_endian 1.0\ncomment firn " FIRN_VERSION " test particles\n"
        "comment units x y z [m], temperature [K]\n"
        "element vertex 3\n"
        "property float x\nproperty float y\nproperty float z\n"
        "property uchar material\nproperty float temperature\nend_header\n";
    const size_t header = strlen(want);
    cr_assert(len >= header && !memcmp(buf, want, header), "header:\n%.*s", (int)len, buf);
    cr_assert_eq(len, header + 3 * 17, "3 records of 3 floats, a byte and a float");
    for (int i = 0; i < 3; i++) {
        const unsigned char *r = buf + header + 17 * i;
        for (int c = 0; c < 3; c++)
            cr_assert_eq(f32le(r + 4 * c), X[c * 3 + i], "x[%d][%d]", i, c);
        cr_assert_eq(r[12], MAT[i]);
        cr_assert_eq(f32le(r + 13), T[i]);
    }
    free(buf);
    /* two names for three components: refused, the file left as it was */
    t.f[0].ply = "x y";
    cr_assert_eq(firn_write_fields_ply(path, NULL, &t, &err), FIRN_E_IO);
    cr_assert(strstr(err.msg, "test particle"), "%s", err.msg);
    t.f[0].ply = "x y z w";
    cr_assert_eq(firn_write_fields_ply(path, NULL, &t, &err), FIRN_E_IO);
    buf = slurp(path, &len);
    cr_assert_eq(len, header + 3 * 17, "the refused writes left the file alone");
    free(buf);
    cr_assert_eq(count_entries(dir), 1, "no temp file is left behind");
    remove_tree(dir);
}

/* A table whose PLY order is not its own (MPM's: x, v, material, jp,
 * damage, where its table holds x v C F Jp damage vol mat for the
 * checkpoint) names its PLY fields in PLY order (firn_field_ply_named): the
 * header, the units and the records follow that order, and the header's
 * comment is the table's (ply_comment "": "firn <version>" alone). Two
 * fields of one rank are refused. */
Test(output, fields_ply_follows_the_ply_order_not_the_table_order)
{
    char dir[64], path[128];
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/t.ply", dir);
    const float T[3] = {273.15f, 300.5f, -1.0f};
    firn_field_table t = {.count = 3, .entity = "test particle", .ply_comment = ""};
    const int F = FIRN_FIELD_FLOAT32;
    firn_field_add(&t, "T", "temperature", F, 1, (void *)T, 0, 0.0f, 0.0f, NULL);
    firn_field_add(&t, "mat", "material", FIRN_FIELD_UINT8, 1, (void *)MAT, 0, 0.0f, 0.0f, NULL);
    firn_field_add(&t, "x", "x", F, 3, (void *)X, 0, 0.0f, 0.0f, NULL);
    firn_field_ply_named(&t, "x", "x y z", "[m]");
    firn_field_ply_named(&t, "T", "temperature", "[K]");
    firn_field_ply_named(&t, "mat", "material", NULL);
    firn_error err = {0};
    cr_assert_eq(firn_write_fields_ply(path, NULL, &t, &err), FIRN_OK, "%s", err.msg);
    size_t len;
    unsigned char *buf = slurp(path, &len);
    const char *want = "ply\nformat binary_little_endian 1.0\ncomment firn " FIRN_VERSION "\n"
                       "comment units x y z [m], temperature [K]\n"
                       "element vertex 3\n"
                       "property float x\nproperty float y\nproperty float z\n"
                       "property float temperature\nproperty uchar material\nend_header\n";
    const size_t header = strlen(want);
    cr_assert(len >= header && !memcmp(buf, want, header), "header:\n%.*s", (int)len, buf);
    cr_assert_eq(len, header + 3 * 17);
    for (int i = 0; i < 3; i++) {
        const unsigned char *r = buf + header + 17 * i;
        for (int c = 0; c < 3; c++)
            cr_assert_eq(f32le(r + 4 * c), X[c * 3 + i], "x[%d][%d]", i, c);
        cr_assert_eq(f32le(r + 12), T[i]);
        cr_assert_eq(r[16], MAT[i]);
    }
    free(buf);
    t.f[1].ply_rank = 0; /* the material at x's place */
    cr_assert_eq(firn_write_fields_ply(path, NULL, &t, &err), FIRN_E_IO);
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

/* The PLY header of a run's frame: after the units, one comment line per
 * named material with its index, as the material byte holds it; a control
 * character in a name becomes '_' so that the header keeps its lines. The
 * SPH and PBD files name them too, the rigid bodies' file its bodies. */
static char *ply_header(const char *path)
{
    size_t len;
    char *buf = (char *)slurp(path, &len);
    char *end = strstr(buf, "end_header\n");
    cr_assert_not_null(end, "%s has no header", path);
    end[strlen("end_header\n")] = '\0';
    return buf;
}

Test(output, ply_header_names_materials_and_units)
{
    char dir[64], path[128];
    make_tmpdir(dir);
    firn_scene_def def;
    memset(&def, 0, sizeof def);
    def.n_materials = 3;
    strcpy(def.materials[0].name, "sand");
    strcpy(def.materials[2].name, "new\nline"); /* material 1 has no name */
    firn_particles_view v = three_particles();
    firn_error err = {0};
    snprintf(path, sizeof path, "%s/frame.ply", dir);
    cr_assert_eq(firn_write_ply_named(path, &def, &v, &err), FIRN_OK, "%s", err.msg);
    char *h = ply_header(path);
    cr_expect(strstr(h, "comment firn " FIRN_VERSION "\n"
                        "comment units x y z [m], vx vy vz [m/s], jp [1], damage [1]\n"
                        "comment material 0 sand\n"
                        "comment material 2 new_line\n"
                        "element vertex 3\n"),
              "%s", h);
    free(h);

    const float rho[3] = {1000, 1001, 999}, pr[3] = {0, 1, 2};
    firn_sph_particles_view sph = {3, X, V, rho, pr, MAT};
    snprintf(path, sizeof path, "%s/sph.ply", dir);
    cr_assert_eq(firn_write_sph_ply_named(path, &def, &sph, &err), FIRN_OK, "%s", err.msg);
    h = ply_header(path);
    cr_expect(strstr(h, "comment units x y z [m], vx vy vz [m/s], density [kg/m^3], pressure "
                        "[Pa]\ncomment material 0 sand\ncomment material 2 new_line\nelement"),
              "%s", h);
    free(h);

    const float w[3] = {0, 1, 1};
    const int tri[3] = {0, 1, 2};
    firn_pbd_particles_view pbd = {3, X, V, w, MAT, 1, tri};
    snprintf(path, sizeof path, "%s/pbd.ply", dir);
    cr_assert_eq(firn_write_pbd_ply_named(path, &def, &pbd, &err), FIRN_OK, "%s", err.msg);
    h = ply_header(path);
    cr_expect(strstr(h, "comment units x y z [m], vx vy vz [m/s]\ncomment material 0 sand\n"), "%s",
              h);
    free(h);

    def.n_rigids = 1;
    strcpy(def.rigids[0].name, "ball");
    def.rigids[0].shape.type = FIRN_RSHAPE_SPHERE;
    def.rigids[0].shape.radius = 0.1f;
    def.upper[0] = def.upper[1] = def.upper[2] = 1.0f;
    firn_frame_stats st;
    memset(&st, 0, sizeof st);
    st.n_rigids = 1;
    st.rigids[0].orientation[0] = 1.0f;
    snprintf(path, sizeof path, "%s/rigids.ply", dir);
    cr_assert_eq(firn_write_rigids_ply(path, &def, &st, &err), FIRN_OK, "%s", err.msg);
    h = ply_header(path);
    cr_expect(strstr(h, "comment units x y z [m], vx vy vz [m/s]\ncomment body 0 ball\n"), "%s", h);
    free(h);
    remove_tree(dir);
}

/* ---- VTU ------------------------------------------------------------------- */

/* A reader of firn's VTU written from the VTK file format's description,
 * apart from the writer: the XML before the appended block must nest
 * (every opened tag closed in order), the VTKFile tag must declare raw
 * appended data with UInt64 sizes, little-endian; each DataArray's offset
 * must point at a UInt64 byte count equal to its values' size, the arrays
 * must follow one another without gaps, and the file must end right after
 * the last one with "</AppendedData></VTKFile>". */
typedef struct {
    char name[32], type[16];
    int components;
    const unsigned char *data; /* the values, after the count */
    uint64_t bytes;
} vtu_array;

static uint64_t u64le(const unsigned char *b)
{
    uint64_t u = 0;
    for (int k = 7; k >= 0; k--)
        u = u << 8 | b[k];
    return u;
}

/* The value of attribute key in the tag that starts at tag (NULL: none). */
static int attr(const char *tag, const char *key, char *out, size_t size)
{
    const char *end = strchr(tag, '>');
    char pat[48];
    snprintf(pat, sizeof pat, " %s=\"", key);
    const char *a = strstr(tag, pat);
    if (!a || a > end)
        return 0;
    a += strlen(pat);
    const char *q = strchr(a, '"');
    cr_assert(q && q < end && (size_t)(q - a) < size, "attribute %s", key);
    memcpy(out, a, (size_t)(q - a));
    out[q - a] = '\0';
    return 1;
}

static int read_vtu(const unsigned char *buf, size_t len, vtu_array *arr, int max)
{
    const char *text = (const char *)buf;
    const char *app = strstr(text, "<AppendedData encoding=\"raw\">");
    cr_assert_not_null(app, "no raw appended block");
    const unsigned char *base = (const unsigned char *)strchr(app, '_');
    cr_assert_not_null(base);
    base++;
    /* the XML part nests */
    char stack[32][32];
    int depth = 0;
    for (const char *t = strchr(text, '<'); t && t < app; t = strchr(t + 1, '<')) {
        if (t[1] == '?' || t[1] == '!')
            continue;
        const char *end = strchr(t, '>');
        char name[32];
        const int closing = t[1] == '/';
        sscanf(t + 1 + closing, "%31[A-Za-z]", name);
        if (closing) {
            cr_assert(depth > 0 && !strcmp(stack[depth - 1], name), "</%s> closes nothing", name);
            depth--;
        } else if (end[-1] != '/') {
            cr_assert_lt(depth, 32);
            strcpy(stack[depth++], name);
        }
    }
    cr_assert(depth == 1 && !strcmp(stack[0], "VTKFile"), "only VTKFile is open around the data");
    char v[64];
    const char *vf = strstr(text, "<VTKFile ");
    cr_assert(attr(vf, "type", v, sizeof v) && !strcmp(v, "UnstructuredGrid"));
    cr_assert(attr(vf, "byte_order", v, sizeof v) && !strcmp(v, "LittleEndian"));
    cr_assert(attr(vf, "header_type", v, sizeof v) && !strcmp(v, "UInt64"));
    int n = 0;
    uint64_t next = 0;
    for (const char *t = strstr(text, "<DataArray "); t && t < app;
         t = strstr(t + 1, "<DataArray ")) {
        cr_assert_lt(n, max);
        vtu_array *a = &arr[n++];
        cr_assert(attr(t, "format", v, sizeof v) && !strcmp(v, "appended"), "format %s", v);
        cr_assert(attr(t, "Name", a->name, sizeof a->name) &&
                  attr(t, "type", a->type, sizeof a->type));
        a->components = attr(t, "NumberOfComponents", v, sizeof v) ? atoi(v) : 1;
        cr_assert(attr(t, "offset", v, sizeof v));
        const uint64_t off = strtoull(v, NULL, 10);
        cr_assert_eq(off, next, "%s starts at %llu, the one before ends at %llu", a->name,
                     (unsigned long long)off, (unsigned long long)next);
        cr_assert_leq((size_t)(base - buf) + off + 8, len);
        a->bytes = u64le(base + off);
        a->data = base + off + 8;
        next = off + 8 + a->bytes;
        cr_assert_leq((size_t)(base - buf) + next, len, "%s runs past the file", a->name);
    }
    const char *tail = "\n</AppendedData>\n</VTKFile>\n";
    cr_assert_eq((size_t)(base - buf) + next + strlen(tail), len, "the file ends after the data");
    cr_assert_eq(memcmp(base + next, tail, strlen(tail)), 0);
    return n;
}

static const vtu_array *find_array(const vtu_array *arr, int n, const char *name, const char *type,
                                   int components, uint64_t values)
{
    for (int k = 0; k < n; k++)
        if (!strcmp(arr[k].name, name)) {
            const int size = !strcmp(type, "UInt8") ? 1 : !strcmp(type, "Int64") ? 8 : 4;
            cr_assert_str_eq(arr[k].type, type, "%s", name);
            cr_assert_eq(arr[k].components, components, "%s", name);
            cr_assert_eq(arr[k].bytes, values * size, "%s holds %llu bytes", name,
                         (unsigned long long)arr[k].bytes);
            return &arr[k];
        }
    cr_assert_fail("no array %s", name);
    return NULL;
}

/* Two tetrahedra over five vertices with distinct values in every field:
 * each array decodes back to the values written. */
Test(output, vtu_binary_decodes_back)
{
    char dir[64], path[128];
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/fem.vtu", dir);
    float x[15], v[15], stress[12], strain[12], vm[2] = {1.5e5f, -0.0f};
    for (int k = 0; k < 15; k++)
        x[k] = 0.1f * k - 0.7f, v[k] = -3.25f + 1e-3f * k;
    for (int k = 0; k < 12; k++)
        stress[k] = 1e4f * k + 0.5f, strain[k] = 1e-6f * k - 2e-5f;
    const uint8_t fixed[5] = {1, 0, 0, 1, 0}, mat[2] = {3, 250};
    const int tet[8] = {0, 1, 2, 3, 1, 2, 3, 4};
    const firn_fem_mesh_view m = {5, x, v, fixed, 2, tet, mat, stress, strain, vm, 0, NULL};
    firn_error err = {0};
    cr_assert_eq(firn_write_fem_vtu(path, &m, &err), FIRN_OK, "%s", err.msg);
    size_t len;
    unsigned char *buf = slurp(path, &len);
    cr_assert(strstr((char *)buf, "<Piece NumberOfPoints=\"5\" NumberOfCells=\"2\">"));
    vtu_array arr[16];
    const int n = read_vtu(buf, len, arr, 16);
    cr_assert_eq(n, 10, "10 arrays");
    const vtu_array *pts = find_array(arr, n, "Points", "Float32", 3, 15);
    const vtu_array *vel = find_array(arr, n, "velocity", "Float32", 3, 15);
    for (int i = 0; i < 5; i++)
        for (int c = 0; c < 3; c++) {
            cr_expect_eq(f32le(pts->data + 4 * (3 * i + c)), x[c * 5 + i], "x[%d][%d]", i, c);
            cr_expect_eq(f32le(vel->data + 4 * (3 * i + c)), v[c * 5 + i], "v[%d][%d]", i, c);
        }
    const vtu_array *conn = find_array(arr, n, "connectivity", "Int32", 1, 8);
    for (int k = 0; k < 8; k++)
        cr_expect_eq((int32_t)(uint32_t)(conn->data[4 * k] | conn->data[4 * k + 1] << 8 |
                                         conn->data[4 * k + 2] << 16 |
                                         (uint32_t)conn->data[4 * k + 3] << 24),
                     tet[k], "connectivity %d", k);
    const vtu_array *offs = find_array(arr, n, "offsets", "Int64", 1, 2);
    cr_expect(u64le(offs->data) == 4 && u64le(offs->data + 8) == 8, "offsets 4 8");
    const vtu_array *types = find_array(arr, n, "types", "UInt8", 1, 2);
    cr_expect(types->data[0] == 10 && types->data[1] == 10, "VTK_TETRA");
    const vtu_array *fx = find_array(arr, n, "fixed", "UInt8", 1, 5);
    cr_expect_eq(memcmp(fx->data, fixed, 5), 0);
    const vtu_array *sa = find_array(arr, n, "stress", "Float32", 6, 12);
    const vtu_array *ga = find_array(arr, n, "green_strain", "Float32", 6, 12);
    for (int k = 0; k < 12; k++) {
        cr_expect_eq(f32le(sa->data + 4 * k), stress[k]);
        cr_expect_eq(f32le(ga->data + 4 * k), strain[k]);
    }
    const vtu_array *va = find_array(arr, n, "von_mises", "Float32", 1, 2);
    cr_expect(f32le(va->data) == vm[0] && signbit(f32le(va->data + 4)));
    const vtu_array *ma = find_array(arr, n, "material", "UInt8", 1, 2);
    cr_expect(ma->data[0] == 3 && ma->data[1] == 250);
    free(buf);
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
 * (8, 8), the top view (x right, z down) at (324, 8); below them, from
 * y = 324, a 14 px line of text and a margin: height 308 + 16 + 22. */
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
    cr_assert_eq(firn_write_preview(path, &def, &(firn_preview){.mpm = &v}, &err), FIRN_OK, "%s",
                 err.msg);
    cr_assert_eq(count_entries(dir), 1, "no temp file is left behind");

    size_t len;
    unsigned char *buf = slurp(path, &len);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    cr_assert_eq(memcmp(buf, sig, 8), 0, "PNG signature");
    cr_assert_eq(memcmp(buf + 12, "IHDR", 4), 0, "IHDR comes first");
    uint32_t w = (uint32_t)buf[16] << 24 | buf[17] << 16 | buf[18] << 8 | buf[19];
    uint32_t h = (uint32_t)buf[20] << 24 | buf[21] << 16 | buf[22] << 8 | buf[23];
    cr_assert_eq(w, 640);
    cr_assert_eq(h, 346, "height follows the domain's aspect ratio");

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

/* A preview decoded to RGB (w x h). */
static unsigned char *read_png_rgb(const char *path, unsigned *w, unsigned *h)
{
    size_t len;
    unsigned char *buf = slurp(path, &len);
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    cr_assert(png_image_begin_read_from_memory(&img, buf, len));
    img.format = PNG_FORMAT_RGB;
    unsigned char *rgb = malloc(PNG_IMAGE_SIZE(img));
    cr_assert(png_image_finish_read(&img, NULL, rgb, 0, NULL));
    *w = img.width, *h = img.height;
    free(buf);
    return rgb;
}

static int is_text(const unsigned char *rgb, int w, int x, int y)
{
    const unsigned char *p = pixel(rgb, w, x, y);
    return p[0] == 16 && p[1] == 16 && p[2] == 16;
}

/* Text-coloured pixels in the rectangle [x0, x1) x [y0, y1). */
static int text_pixels(const unsigned char *rgb, int w, int x0, int y0, int x1, int y1)
{
    int n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            n += is_text(rgb, w, x, y);
    return n;
}

/* The band under the panels (unit cube: from y = 324, glyphs 5 x 7 font
 * pixels of 2 x 2, 12 px apart): "t = 1.25 s" from x = 8 when the
 * statistics give the time, none without them; at the right the scale
 * bar, 0.2 m (the longest of 1, 2, 5 x 10^k m within 100 px at 308 px/m):
 * 62 px on its middle row, y = 331, left of the label "0.2 m" (58 px wide,
 * ending 8 px from the right edge, 6 px after the bar). */
Test(output, png_preview_shows_time_and_scale_bar)
{
    char dir[64], a[128], b[128], c[128];
    make_tmpdir(dir);
    snprintf(a, sizeof a, "%s/a.png", dir);
    snprintf(b, sizeof b, "%s/b.png", dir);
    snprintf(c, sizeof c, "%s/c.png", dir);
    firn_scene_def def;
    unit_cube(&def);
    firn_particles_view none = {.n = 0};
    firn_frame_stats st;
    memset(&st, 0, sizeof st);
    st.time = 1.25;
    firn_error err = {0};
    cr_assert_eq(firn_write_preview(a, &def, &(firn_preview){.mpm = &none, .stats = &st}, &err),
                 FIRN_OK, "%s", err.msg);
    st.time = 2.5;
    cr_assert_eq(firn_write_preview(b, &def, &(firn_preview){.mpm = &none, .stats = &st}, &err),
                 FIRN_OK, "%s", err.msg);
    cr_assert_eq(firn_write_preview(c, &def, &(firn_preview){.mpm = &none}, &err), FIRN_OK, "%s",
                 err.msg);
    unsigned w, h;
    unsigned char *ra = read_png_rgb(a, &w, &h), *rb = read_png_rgb(b, &w, &h);
    unsigned char *rc = read_png_rgb(c, &w, &h);
    cr_assert(w == 640 && h == 346, "%u x %u", w, h);
    /* "t" (top row: column 1), "1" (column 2) at the 5th place, "5" (top
     * row full) at the 8th */
    cr_expect(is_text(ra, 640, 8 + 2, 324) && !is_text(ra, 640, 8, 324), "the t");
    cr_expect(is_text(ra, 640, 8 + 4 * 12 + 4, 324) && !is_text(ra, 640, 8 + 4 * 12, 324),
              "the 1 of 1.25");
    for (int col = 0; col < 5; col++)
        cr_expect(is_text(ra, 640, 8 + 7 * 12 + 2 * col, 324), "the top row of the 5, column %d",
                  col);
    const int na = text_pixels(ra, 640, 0, 324, 320, 338);
    cr_expect_gt(na, 100, "the time's text: %d pixels", na);
    cr_expect_neq(memcmp(ra, rb, 3 * 640 * 346), 0, "another time, another text");
    cr_expect_eq(text_pixels(rc, 640, 0, 324, 320, 338), 0, "no time without statistics");
    cr_expect_eq(text_pixels(ra, 640, 0, 0, 640, 324), 0, "no text over the panels");
    for (unsigned char *r = ra; r; r = r == ra ? rc : NULL) {
        cr_expect_eq(text_pixels(r, 640, 400, 331, 574 - 6, 332), 62, "the bar: 0.2 m");
        cr_expect(is_text(r, 640, 506, 331) && !is_text(r, 640, 505, 331), "the bar starts");
        cr_expect_gt(text_pixels(r, 640, 574, 324, 632, 338), 40, "the label");
    }
    free(ra), free(rb), free(rc);
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
    cr_assert_eq(firn_write_preview(a, &def, &(firn_preview){.mpm = &v}, &err), FIRN_OK, "%s",
                 err.msg);
    cr_assert_eq(firn_write_preview(b, &def, &(firn_preview){.mpm = &v}, &err), FIRN_OK, "%s",
                 err.msg);
    size_t la, lb;
    unsigned char *da = slurp(a, &la), *db = slurp(b, &lb);
    cr_assert_eq(la, lb);
    cr_assert_eq(memcmp(da, db, la), 0, "same input, same bytes");
    free(da);
    free(db);
    remove_tree(dir);
}

/* One preview function (firn_write_preview) takes what it draws as
 * options: NULL draws the empty domain, as views of no points do; each
 * solver's points are drawn (the image changes); a view with points but no
 * positions is refused by solver with FIRN_E_IO, and no file is left. */
Test(output, png_preview_draws_what_its_options_name)
{
    char dir[64], a[128], b[128], c[128], d[128];
    make_tmpdir(dir);
    snprintf(a, sizeof a, "%s/a.png", dir);
    snprintf(b, sizeof b, "%s/b.png", dir);
    snprintf(c, sizeof c, "%s/c.png", dir);
    snprintf(d, sizeof d, "%s/d.png", dir);
    firn_scene_def def;
    unit_cube(&def);
    firn_error err = {0};
    const firn_particles_view none = {.n = 0};
    cr_assert_eq(firn_write_preview(a, &def, NULL, &err), FIRN_OK, "%s", err.msg);
    cr_assert_eq(firn_write_preview(b, &def, &(firn_preview){.mpm = &none}, &err), FIRN_OK, "%s",
                 err.msg);
    const firn_particles_view v = three_particles();
    const firn_sph_particles_view sph = {.n = 3, .x = v.x};
    cr_assert_eq(firn_write_preview(c, &def, &(firn_preview){.sph = &sph}, &err), FIRN_OK, "%s",
                 err.msg);
    size_t la, lb, lc;
    unsigned char *da = slurp(a, &la), *db = slurp(b, &lb), *dc = slurp(c, &lc);
    cr_expect(la == lb && !memcmp(da, db, la), "NULL is not the empty domain");
    cr_expect(la != lc || memcmp(da, dc, la), "the SPH points were not drawn");
    free(da), free(db), free(dc);
    const firn_pbd_particles_view pbd = {.n = 2, .x = NULL};
    cr_expect_eq(firn_write_preview(d, &def, &(firn_preview){.mpm = &v, .pbd = &pbd}, &err),
                 FIRN_E_IO);
    cr_expect(strstr(err.msg, "PBD particle") && strstr(err.msg, "d.png"), "%s", err.msg);
    cr_expect_eq(count_entries(dir), 3, "a refused preview left a file");
    remove_tree(dir);
}

/* s.json in dir: one FEM box of 12 vertices and 12 tetrahedra, `frames`
 * frames of 5 ms, output into dir/o. */
static void write_fem_scene(const char *dir, int frames)
{
    char path[256];
    snprintf(path, sizeof path, "%s/s.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f,
            "{\"domain\": {\"lower\": [0, 0, 0], \"upper\": [1, 1, 1], \"dx\": 0.1},"
            " \"time\": {\"frames\": %d, \"frame_dt\": 0.005},"
            " \"materials\": {\"j\": {\"model\": \"fem_corotated\", \"E\": 1e5}},"
            " \"bodies\": [{\"material\": \"j\", \"solver\": \"fem\", \"shape\": {\"type\":"
            " \"box\", \"center\": [0.5, 0.5, 0.5], \"size\": [0.2, 0.1, 0.1],"
            " \"cells\": [2, 1, 1]}, \"fixed\": {\"indices\": [0]}}],"
            " \"output\": {\"dir\": \"o\"}}\n",
            frames);
    fclose(f);
}

/* fem.pvd in out lists frames 0 .. n-1 in order, each's timestep the time
 * stats.jsonl gives the frame (to the bit) and its file there; the
 * surface PLYs' fem.ply.series lists the same frames and times. */
static void check_series(const char *out, int n)
{
    char path[256];
    snprintf(path, sizeof path, "%s/stats.jsonl", out);
    size_t len;
    char *stats = (char *)slurp(path, &len);
    double time[64];
    int lines = 0;
    for (char *line = strtok(stats, "\n"); line && lines < 64; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        cr_assert_not_null(j);
        cr_assert_eq(num(j, "frame"), lines);
        time[lines++] = num(j, "time");
        cJSON_Delete(j);
    }
    free(stats);
    cr_assert_eq(lines, n, "stats.jsonl has %d lines", lines);

    snprintf(path, sizeof path, "%s/fem.pvd", out);
    char *pvd = (char *)slurp(path, &len);
    cr_assert(!strncmp(pvd, "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\"", 45) &&
                  strstr(pvd, "<Collection>\n") && strstr(pvd, "</Collection>\n</VTKFile>\n"),
              "%s", pvd);
    int k = 0;
    for (const char *d = strstr(pvd, "<DataSet "); d; d = strstr(d + 1, "<DataSet "), k++) {
        double t;
        int frame, used = 0;
        cr_assert_eq(
            sscanf(d, "<DataSet timestep=\"%lf\" group=\"\" part=\"0\" file=\"fem_%d.vtu\"/>%n", &t,
                   &frame, &used),
            2, "%.100s", d);
        cr_assert_gt(used, 0, "%.100s", d);
        cr_expect_eq(frame, k, "entry %d names frame %d", k, frame);
        cr_expect_eq(t, time[k < n ? k : 0], "frame %d at %.17g s, stats say %.17g", k, t,
                     time[k < n ? k : 0]);
        snprintf(path, sizeof path, "%s/fem_%05d.vtu", out, frame);
        cr_expect_eq(access(path, F_OK), 0, "%s", path);
    }
    cr_expect_eq(k, n, "%d entries in fem.pvd, %d frames", k, n);
    free(pvd);

    snprintf(path, sizeof path, "%s/fem.ply.series", out);
    char *series = (char *)slurp(path, &len);
    cJSON *j = cJSON_Parse(series);
    cr_assert_not_null(j, "%s", series);
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(j, "file-series-version");
    cr_expect(cJSON_IsString(ver) && !strcmp(ver->valuestring, "1.0"));
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(j, "files");
    cr_assert(cJSON_IsArray(files) && cJSON_GetArraySize(files) == n, "%s", series);
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(files, i);
        char want[32];
        snprintf(want, sizeof want, "fem_%05d.ply", i);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        cr_expect(cJSON_IsString(name) && !strcmp(name->valuestring, want), "entry %d", i);
        cr_expect_eq(num(e, "time"), time[i], "entry %d", i);
    }
    cJSON_Delete(j);
    free(series);
}

/* `firn run` writes per frame the surface PLY (vertices and triangles),
 * the volume VTU (points, tets of type 10, stress, strain, von Mises,
 * velocity) and a stats line with an "fem" block. */
Test(output, fem_run_writes_ply_vtu_and_stats, .timeout = 120)
{
    char dir[96], path[256], out[8192];
    test_mkdtemp(dir, sizeof dir, "fem_out");
    write_fem_scene(dir, 2);
    FILE *f;
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
    size_t len;
    unsigned char *bin = slurp(path, &len);
    cr_assert(strstr((char *)bin, "NumberOfPoints=\"12\" NumberOfCells=\"12\""), "%.300s", bin);
    vtu_array arr[16];
    const int na = read_vtu(bin, len, arr, 16);
    const vtu_array *types = find_array(arr, na, "types", "UInt8", 1, 12);
    for (int k = 0; k < 12; k++)
        cr_expect_eq(types->data[k], 10, "cell %d is a tetrahedron", k);
    find_array(arr, na, "stress", "Float32", 6, 6 * 12);
    find_array(arr, na, "green_strain", "Float32", 6, 6 * 12);
    find_array(arr, na, "von_mises", "Float32", 1, 12);
    find_array(arr, na, "velocity", "Float32", 3, 3 * 12);
    free(bin);
    static char vtu[1 << 16];
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
    char o[160];
    snprintf(o, sizeof o, "%s/o", dir);
    check_series(o, 3);
    /* no MPM particles: no MPM frame files, nor their series */
    for (int k = 0; k <= 2; k++) {
        snprintf(path, sizeof path, "%s/o/frame_%05d.ply", dir, k);
        cr_expect_neq(access(path, F_OK), 0, "%s written for a scene without MPM particles", path);
    }
    snprintf(path, sizeof path, "%s/o/frame.ply.series", dir);
    cr_expect_neq(access(path, F_OK), 0, "%s", path);
    test_rmdir(dir);
}

/* A run stopped after frame 2 and resumed to frame 4: the series name
 * frames 0 to 4, those of the first run included; a series left by an
 * earlier run of another scene (SPH) is removed. */
Test(output, fem_series_survive_a_resume, .timeout = 120)
{
    char dir[96], path[256], out[8192];
    test_mkdtemp(dir, sizeof dir, "fem_series");
    write_fem_scene(dir, 4);
    snprintf(path, sizeof path, "%s/o", dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/o/sph.ply.series", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("{\"file-series-version\": \"1.0\", \"files\": []}\n", f);
    fclose(f);
    cr_assert_eq(
        test_run_firn(out, sizeof out, dir, "run s.json --quiet --frames 2 --checkpoint-every 1"),
        0, "%s", out);
    cr_expect_neq(access(path, F_OK), 0, "the SPH series of an earlier run is left");
    snprintf(path, sizeof path, "%s/o", dir);
    check_series(path, 3);
    cr_assert_eq(test_run_firn(out, sizeof out, dir, "run s.json --quiet --resume"), 0, "%s", out);
    check_series(path, 5);
    test_rmdir(dir);
}
