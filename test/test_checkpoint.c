/* test_checkpoint.c - checkpoint files (host/checkpoint.c) and `firn run
 * --checkpoint-every / --resume` on the CPU path.
 *
 * The scene has every MPM material, SPH liquid (DFSPH), a dynamic and a
 * kinematic rigid body and CPIC. A run saved at frame k and resumed must
 * continue bitwise: the same statistics, the same particles, rigid bodies
 * and SPH particles, the same checkpoint file at the end, and through the
 * command line the same PLY and PNG frames and stats.jsonl lines (but for
 * their two timing fields, wall_seconds and throughput, which measure the
 * machine). Bad checkpoints (corrupted, truncated, of another scene or
 * format version, not a checkpoint) are refused with a message naming the
 * file and what is wrong; a full disk or a SIGKILL during a write leaves
 * the previous checkpoint intact; SIGTERM stops a run with a checkpoint
 * and a resume hint. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "all_solvers.h"
#include "checkpoint.h"
#include "checkpoint_scene.h"
#include "solver.h"
#include "test_util.h"
#include "world.h"

static void load_scene(firn_scene_def *def)
{
    firn_error err;
    cr_assert_eq(firn_scene_parse_json(scene_json, "checkpoint scene", def, &err), 0, "%s",
                 err.msg);
    def->write_ply = def->write_preview = 0;
}

static firn_world *make_world(const firn_scene_def *def)
{
    firn_error err = {0};
    firn_world *w = firn_world_create(def, FIRN_BACKEND_CPU, &err);
    cr_assert(w, "firn_world_create: %s", err.msg);
    /* Reorder the CPU state at the first particle out of block order, so
     * that the saved layout is not the scene's order. */
    w->bins.reorder_run = 1 << 30;
    return w;
}

static firn_world *load_world(const firn_scene_def *def, const char *path)
{
    firn_error err = {0};
    firn_world *w = firn_world_load(def, FIRN_BACKEND_CPU, path, &err);
    cr_assert(w, "firn_world_load: %s", err.msg);
    w->bins.reorder_run = 1 << 30;
    return w;
}

static void step(firn_world *w, firn_frame_stats *s)
{
    firn_error err;
    cr_assert_eq(firn_world_step_frame(w, s, &err), 0, "%s", err.msg);
    s->wall_seconds = s->throughput = 0.0; /* the machine's, not the run's */
}

static void save(firn_world *w, const char *path)
{
    firn_error err;
    cr_assert_eq(firn_world_save(w, path, &err), 0, "%s", err.msg);
}

/* The bytes of a file (at most size), their count returned. */
static size_t slurp(const char *path, unsigned char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    size_t n = fread(buf, 1, size, f);
    fclose(f);
    return n;
}

static void spit(const char *path, const unsigned char *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    cr_assert_eq(fwrite(buf, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static void assert_same_file(const char *a, const char *b)
{
    static unsigned char x[4 << 20], y[4 << 20];
    size_t n = slurp(a, x, sizeof x), m = slurp(b, y, sizeof y);
    cr_assert(n < sizeof x, "%s is larger than the test's buffer", a);
    cr_assert_eq(n, m, "%s has %zu bytes, %s %zu", a, n, b, m);
    size_t i = 0;
    while (i < n && x[i] == y[i])
        i++;
    cr_assert_eq(i, n, "%s and %s differ first at byte %zu", a, b, i);
}

/* ---- the format ------------------------------------------------------------- */

Test(checkpoint, crc32c_check_value)
{
    cr_assert_eq(firn_crc32c(0, "123456789", 9), 0xE3069283u);
    /* in pieces, as the writer takes it */
    cr_assert_eq(firn_crc32c(firn_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
    unsigned char zeros[32] = {0};
    cr_assert_eq(firn_crc32c(0, zeros, 32), 0x8A9136AAu);
}

/* The hash covers what is simulated, not how long or where to. */
Test(checkpoint, scene_hash_ignores_frames_and_output_only)
{
    firn_scene_def a, b;
    load_scene(&a);
    b = a;
    b.frames = 600;
    b.out_every = 3;
    b.write_ply = !a.write_ply;
    snprintf(b.out_dir, sizeof b.out_dir, "elsewhere");
    snprintf(b.source, sizeof b.source, "other.json");
    cr_assert_eq(firn_scene_hash(&a), firn_scene_hash(&b));
    b = a;
    b.gravity[1] = -9.8f;
    cr_assert_neq(firn_scene_hash(&a), firn_scene_hash(&b));
    b = a;
    b.rigids[1].velocity[0] = -0.7f;
    cr_assert_neq(firn_scene_hash(&a), firn_scene_hash(&b));
    b = a;
    b.materials[2].hardening = 9.0f;
    cr_assert_neq(firn_scene_hash(&a), firn_scene_hash(&b));
    /* Sand's mu(I) keys count once its rheology is mu_i (materials[1] is
     * the sand). */
    b = a;
    cr_assert_eq(b.materials[1].model, FIRN_MODEL_SAND);
    b.materials[1].rheology = FIRN_RHEOLOGY_MU_I;
    cr_assert_neq(firn_scene_hash(&a), firn_scene_hash(&b));
    firn_scene_def c = b;
    c.materials[1].grain_diameter = 1e-3f;
    cr_assert_neq(firn_scene_hash(&b), firn_scene_hash(&c));
}

/* ---- continuation ------------------------------------------------------------- */

/* The resume the bitwise tests share, after a world a (and its twin plain,
 * never saved) ran to frame 3: a saved to dir/at3.firn and loaded back as
 * the returned world. */
static firn_world *save_and_resume(firn_world *a, const firn_scene_def *def, const char *dir)
{
    char p3[128];
    snprintf(p3, sizeof p3, "%s/at3.firn", dir);
    save(a, p3);
    return load_world(def, p3);
}

/* Then a, the resumed b and plain run 3 frames more, their statistics equal
 * field by field (timing aside) each frame, the last into *last; and the
 * checkpoints of a and b at frame 6, which hold every field of the state,
 * equal byte for byte. */
static void run_on_together(firn_world *a, firn_world *b, firn_world *plain, const char *dir,
                            firn_frame_stats *last)
{
    char p6a[128], p6b[128];
    snprintf(p6a, sizeof p6a, "%s/at6a.firn", dir);
    snprintf(p6b, sizeof p6b, "%s/at6b.firn", dir);
    firn_frame_stats sb, sp;
    for (int f = 0; f < 3; f++) {
        step(a, last);
        step(b, &sb);
        step(plain, &sp);
        cr_assert_eq(memcmp(last, &sb, sizeof sb), 0,
                     "frame %d: the resumed run's statistics differ", last->frame);
        cr_assert_eq(memcmp(last, &sp, sizeof sp), 0,
                     "frame %d: saving changed the run's statistics", last->frame);
    }
    save(a, p6a);
    save(b, p6b);
    assert_same_file(p6a, p6b);
}

/* A run saved at frame 3 and resumed from the file computes frames 4 to 6
 * exactly as the run that went on, and as a run never saved: statistics
 * equal field by field (timing aside), and the checkpoints of both at
 * frame 6, which hold every field of the state, equal byte for byte. */
Test(checkpoint, resumed_run_continues_bitwise)
{
    char dir[64];
    test_mkdtemp(dir, sizeof dir, "ckpt_bitwise");
    firn_scene_def def;
    load_scene(&def);
    firn_world *a = make_world(&def), *plain = make_world(&def);
    firn_frame_stats sa, sp;
    for (int f = 0; f < 3; f++) {
        step(a, &sa);
        step(plain, &sp);
    }
    cr_assert_gt(a->bins.reorders, 0, "the CPU layout is still the scene's order");
    cr_assert_gt(a->n_rigids, 1);
    firn_world *b = save_and_resume(a, &def, dir);
    cr_assert_eq(b->frame, 3);
    run_on_together(a, b, plain, dir, &sa);
    cr_assert_gt(sa.sph.particles, 0);
    cr_assert_gt(sa.sph.divergence_iterations, 0);
    firn_world_destroy(a);
    firn_world_destroy(b);
    firn_world_destroy(plain);
    test_rmdir(dir);
}

/* ---- refusals ------------------------------------------------------------------- */

/* A checkpoint of the scene at frame 1 in dir; its size returned. */
static size_t make_checkpoint(const firn_scene_def *def, const char *path, unsigned char *buf,
                              size_t size)
{
    firn_world *w = make_world(def);
    firn_frame_stats s;
    step(w, &s);
    save(w, path);
    firn_world_destroy(w);
    return slurp(path, buf, size);
}

/* firn_world_load of path is refused with FIRN_E_CHECKPOINT, naming the
 * file and saying `what`. */
static void assert_refused(const firn_scene_def *def, const char *path, const char *what)
{
    firn_error err = {0};
    firn_world *w = firn_world_load(def, FIRN_BACKEND_CPU, path, &err);
    cr_assert_null(w, "%s: loaded, expected '%s'", path, what);
    cr_assert_eq(err.code, FIRN_E_CHECKPOINT, "code %d: %s", err.code, err.msg);
    cr_assert(strstr(err.msg, path), "the message does not name the file: %s", err.msg);
    cr_assert(strstr(err.msg, what), "the message does not say '%s': %s", what, err.msg);
}

Test(checkpoint, bad_checkpoints_are_refused_naming_file_and_fault)
{
    static unsigned char good[1 << 20], bad[1 << 20];
    char dir[64], path[128], probe[128];
    test_mkdtemp(dir, sizeof dir, "ckpt_bad");
    snprintf(path, sizeof path, "%s/good.firn", dir);
    snprintf(probe, sizeof probe, "%s/bad.firn", dir);
    firn_scene_def def;
    load_scene(&def);
    const size_t n = make_checkpoint(&def, path, good, sizeof good);
    cr_assert(n > 1000 && n < sizeof good);

    memcpy(bad, good, n); /* one bit flipped in the particles */
    bad[n / 2] ^= 0x10;
    spit(probe, bad, n);
    assert_refused(&def, probe, "is corrupted: its checksum (CRC-32C)");

    spit(probe, good, n - 1000); /* cut short */
    assert_refused(&def, probe, "is truncated");
    spit(probe, good, 100);
    assert_refused(&def, probe, "is truncated");

    memcpy(bad, good, n); /* another version */
    uint32_t version = FIRN_CHECKPOINT_VERSION + 1;
    memcpy(bad + 8, &version, 4);
    spit(probe, bad, n);
    assert_refused(&def, probe, "is of format version 4; this firn reads versions 1 to 3");
    version = 0;
    memcpy(bad + 8, &version, 4);
    spit(probe, bad, n);
    assert_refused(&def, probe, "is of format version 0; this firn reads versions 1 to 3");

    memcpy(bad, good, n); /* the frame number changed in the header */
    bad[40] ^= 1;
    spit(probe, bad, n);
    assert_refused(&def, probe, "has a damaged header");

    spit(probe, (const unsigned char *)scene_json, strlen(scene_json));
    assert_refused(&def, probe, "is not a firn checkpoint");

    firn_scene_def other = def; /* another scene */
    other.materials[1].friction_angle = 30.0f;
    assert_refused(&other, path, "is of another scene");

    /* Reading changed nothing, and the good file still loads. */
    cr_assert_eq(slurp(path, bad, sizeof bad), n);
    cr_assert_eq(memcmp(bad, good, n), 0);
    firn_world_destroy(load_world(&def, path));
    test_rmdir(dir);
}

/* ---- crafted checkpoints ------------------------------------------------------------ */

/* The header's checksum and the trailer's made again over buf (n bytes),
 * as anyone editing a checkpoint can. */
static void reseal(unsigned char *buf, size_t n)
{
    uint32_t crc = firn_crc32c(0, buf, FIRN_CHECKPOINT_HEADER_BYTES - 4);
    memcpy(buf + FIRN_CHECKPOINT_HEADER_BYTES - 4, &crc, 4);
    crc = firn_crc32c(0, buf, n - 4);
    memcpy(buf + n - 4, &crc, 4);
}

/* The offset of section tag's payload in checkpoint buf. */
static size_t section_payload(const unsigned char *buf, size_t n, const char *tag)
{
    size_t at = FIRN_CHECKPOINT_HEADER_BYTES;
    while (at + 16 <= n) {
        uint64_t bytes;
        memcpy(&bytes, buf + at + 8, 8);
        if (!memcmp(buf + at, tag, 4))
            return at + 16;
        at += 16 + (size_t)bytes;
    }
    cr_assert_fail("no section %s", tag);
    return 0;
}

/* good (n bytes) with len bytes at off replaced by data, resealed, written
 * to probe: firn_world_load refuses it saying `what`. */
static void assert_crafted_refused(const firn_scene_def *def, const unsigned char *good, size_t n,
                                   const char *probe, size_t off, const void *data, size_t len,
                                   const char *what)
{
    static unsigned char bad[1 << 20];
    memcpy(bad, good, n);
    memcpy(bad + off, data, len);
    reseal(bad, n);
    spit(probe, bad, n);
    assert_refused(def, probe, what);
}

/* A checkpoint is checked as strictly as a scene: its checksum only finds
 * damage, and anyone can edit the file and make the checksums again. A
 * material index out of the scene's range, or of another solver's
 * material, a number that is not finite, a position outside the domain or
 * a value out of its range (damage, volume, snow's Jp, a quaternion, a
 * CPIC record) is refused, naming the field, the particle or body and the
 * file, before the world uses it (a material index of 255 wrote past a
 * stack array in the SPH CFL step). */
Test(checkpoint, crafted_contents_are_refused_naming_field_index_and_file)
{
    static unsigned char good[1 << 20];
    char dir[64], path[128], probe[128];
    test_mkdtemp(dir, sizeof dir, "ckpt_crafted");
    snprintf(path, sizeof path, "%s/good.firn", dir);
    snprintf(probe, sizeof probe, "%s/crafted.firn", dir);
    firn_scene_def def;
    load_scene(&def);
    const size_t n = make_checkpoint(&def, path, good, sizeof good);
    int32_t np, ns;
    memcpy(&np, good + 64, 4);
    memcpy(&ns, good + 72, 4);
    cr_assert(np > 100 && ns > 10);
    const size_t mpm = section_payload(good, n, "MPMP"), sph = section_payload(good, n, "SPHP");
    const size_t N = (size_t)np, S = (size_t)ns;
    const float nan = NAN, inf = INFINITY, two = 2.0f, zero = 0.0f, minus = -1.0f, far = 5.0f;
    unsigned char m;

    m = 255; /* MPM material bytes at 108 n */
    assert_crafted_refused(&def, good, n, probe, mpm + 108 * N + 5, &m, 1,
                           "is damaged: MPM particle 5 has material 255; the scene has 7 "
                           "materials (0 to 6)");
    m = 7;
    assert_crafted_refused(&def, good, n, probe, mpm + 108 * N + 5, &m, 1,
                           "MPM particle 5 has material 7; the scene has 7 materials");
    m = 6; /* pool, the SPH body's */
    assert_crafted_refused(&def, good, n, probe, mpm + 108 * N + 5, &m, 1,
                           "MPM particle 5 has material 6 ('pool'), which no MPM body");
    m = 1; /* sand, an MPM material, on an SPH particle */
    assert_crafted_refused(&def, good, n, probe, sph + 52 * S + 2, &m, 1,
                           "SPH particle 2 has material 1 ('sand'), which no SPH body");
    m = 200;
    assert_crafted_refused(&def, good, n, probe, sph + 52 * S + 2, &m, 1,
                           "SPH particle 2 has material 200; the scene has 7");

    /* x (3n floats at 0): y of particle 7, x of particle 8 */
    assert_crafted_refused(&def, good, n, probe, mpm + 4 * (N + 7), &nan, 4,
                           "MPM particle 7 has x[1] = nan");
    assert_crafted_refused(&def, good, n, probe, mpm + 4 * 8, &far, 4,
                           "MPM particle 8 has x[0] = 5; it must lie in the domain [0, 0.48]");
    assert_crafted_refused(&def, good, n, probe, mpm + 4 * (3 * N + 2 * N + 9), &inf, 4,
                           "MPM particle 9 has v[2] = inf; it must be finite");
    assert_crafted_refused(&def, good, n, probe, mpm + 4 * (6 * N + 4 * N + 10), &nan, 4,
                           "MPM particle 10 has C[4] = nan");
    assert_crafted_refused(&def, good, n, probe, mpm + 4 * (15 * N + 8 * N + 11), &inf, 4,
                           "MPM particle 11 has F[8] = inf");
    assert_crafted_refused(&def, good, n, probe, mpm + 4 * (25 * N + 12), &two, 4,
                           "MPM particle 12 has damage = 2; it must lie in [0, 1]");
    assert_crafted_refused(&def, good, n, probe, mpm + 4 * (26 * N + 13), &zero, 4,
                           "MPM particle 13 has volume = 0; it must be finite and above 0");
    size_t snow = 0; /* a snow particle (material 2): its Jp is a volume ratio */
    while (snow < N && good[mpm + 108 * N + snow] != 2)
        snow++;
    cr_assert_lt(snow, N);
    char what[160];
    snprintf(what, sizeof what, "MPM particle %zu has Jp = -1; a snow particle's must be", snow);
    assert_crafted_refused(&def, good, n, probe, mpm + 4 * (24 * N + snow), &minus, 4, what);

    /* SPH: x at 0, density at 36 n */
    assert_crafted_refused(&def, good, n, probe, sph + 4 * (S + 3), &far, 4,
                           "SPH particle 3 has x[1] = 5; it must lie in the SPH box");
    assert_crafted_refused(&def, good, n, probe, sph + 4 * (9 * S + 4), &nan, 4,
                           "SPH particle 4 has density = nan");

    /* the first rigid body: x (3 floats), then its quaternion */
    const size_t rigd = section_payload(good, n, "RIGD");
    const float q0[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    assert_crafted_refused(&def, good, n, probe, rigd + 4, &nan, 4, "rigid body 0 has x[1] = nan");
    assert_crafted_refused(&def, good, n, probe, rigd + 12, q0, 16,
                           "rigid body 0 has orientation (0, 0, 0, 0), not a unit quaternion");

    /* a CPIC record with bits no record has */
    const uint32_t word = 0x7f000000u;
    assert_crafted_refused(&def, good, n, probe, section_payload(good, n, "CPIC"), &word, 4,
                           "MPM particle 0 has CPIC word 0 = 7f000000");
    /* the world section: the last substep's length */
    assert_crafted_refused(&def, good, n, probe, section_payload(good, n, "WRLD"), &minus, 4,
                           "its last substep is -1 s");

    firn_world_destroy(load_world(&def, path));
    test_rmdir(dir);
}

/* The header's frame, backend, substeps and time are checked too: a frame
 * below 0 or beyond 999999999, fewer substeps than frames, a time that is
 * not finite or falls short of frame frame_dt, and a backend that is
 * neither the CPU path nor CUDA are refused. More time and substeps than
 * the frames take are not: the C API runs substeps outside frames. A
 * directory is named as one. */
Test(checkpoint, crafted_header_fields_are_refused)
{
    static unsigned char good[1 << 20];
    char dir[64], path[128], probe[128];
    test_mkdtemp(dir, sizeof dir, "ckpt_header");
    snprintf(path, sizeof path, "%s/good.firn", dir);
    snprintf(probe, sizeof probe, "%s/crafted.firn", dir);
    firn_scene_def def;
    load_scene(&def);
    const size_t n = make_checkpoint(&def, path, good, sizeof good); /* frame 1 */
    const int32_t frames[3] = {-5, 2147483647, 2}, backends[2] = {7, 0};
    assert_crafted_refused(&def, good, n, probe, 40, &frames[0], 4,
                           "has a damaged header: frame -5 (0 to 999999999");
    assert_crafted_refused(&def, good, n, probe, 40, &frames[1], 4,
                           "has a damaged header: frame 2147483647");
    assert_crafted_refused(&def, good, n, probe, 40, &frames[2], 4,
                           "has a damaged header: time 0.01 s at frame 2");
    assert_crafted_refused(&def, good, n, probe, 44, &backends[0], 4,
                           "has a damaged header: backend 7");
    assert_crafted_refused(&def, good, n, probe, 44, &backends[1], 4,
                           "has a damaged header: backend 0");
    const int64_t substeps = -1;
    assert_crafted_refused(&def, good, n, probe, 48, &substeps, 8,
                           "has a damaged header: -1 substeps for frame 1");
    const double times[3] = {NAN, -1e300, INFINITY};
    assert_crafted_refused(&def, good, n, probe, 56, &times[0], 8,
                           "has a damaged header: time nan s at frame 1");
    assert_crafted_refused(&def, good, n, probe, 56, &times[1], 8,
                           "has a damaged header: time -1e+300 s at frame 1");
    assert_crafted_refused(&def, good, n, probe, 56, &times[2], 8,
                           "has a damaged header: time inf s");
    assert_refused(&def, dir, "is a directory, not a checkpoint file");

    /* A frame and two substeps more through the C API load. */
    firn_world *w = load_world(&def, path);
    firn_error err;
    cr_assert_eq(firn_world_run_substeps(w, 2, 1e-3f, &err), 0, "%s", err.msg);
    save(w, probe);
    firn_world_destroy(w);
    w = load_world(&def, probe);
    cr_assert_eq(w->frame, 1);
    cr_assert_gt(w->time, 0.0115);
    firn_world_destroy(w);
    test_rmdir(dir);
}

/* Version 1 is version 2 without tools: a file of this tool-less scene
 * relabelled version 1 (its header's checksum made again) loads, and gives
 * the same state. A world with tools refuses a version-1 file (the header
 * of one, scene hash set to the tool scene's), naming why. */
Test(checkpoint, version_1_files_load_and_hold_no_tools)
{
    char dir[64], path[128], probe[128];
    static unsigned char good[4 << 20], old[4 << 20];
    test_mkdtemp(dir, sizeof dir, "ckpt_v1");
    snprintf(path, sizeof path, "%s/at1.firn", dir);
    snprintf(probe, sizeof probe, "%s/v1.firn", dir);
    firn_scene_def def;
    load_scene(&def);
    const size_t n = make_checkpoint(&def, path, good, sizeof good);
    memcpy(old, good, n);
    const uint32_t one = 1;
    memcpy(old + 8, &one, 4);
    uint32_t crc = firn_crc32c(0, old, FIRN_CHECKPOINT_HEADER_BYTES - 4);
    memcpy(old + FIRN_CHECKPOINT_HEADER_BYTES - 4, &crc, 4);
    spit(probe, old, n);
    firn_world *a = load_world(&def, path), *b = load_world(&def, probe);
    firn_frame_stats sa, sb;
    step(a, &sa);
    step(b, &sb);
    cr_assert_eq(memcmp(&sa, &sb, sizeof sa), 0, "the version-1 file resumed differently");
    firn_world_destroy(a);
    firn_world_destroy(b);

    firn_scene_def tools = def;
    tools.n_tools = 1;
    firn_tool_default(&tools.tools[0]);
    snprintf(tools.tools[0].name, FIRN_NAME_MAX, "probe");
    tools.tools[0].shape.type = FIRN_RSHAPE_SPHERE;
    tools.tools[0].shape.radius = 0.02f;
    for (int k = 0; k < 3; k++)
        tools.tools[0].shape.center[k] = 0.5f * (tools.lower[k] + tools.upper[k]);
    const uint64_t hash = firn_scene_hash(&tools);
    memcpy(old + 32, &hash, 8);
    crc = firn_crc32c(0, old, FIRN_CHECKPOINT_HEADER_BYTES - 4);
    memcpy(old + FIRN_CHECKPOINT_HEADER_BYTES - 4, &crc, 4);
    spit(probe, old, n);
    assert_refused(&tools, probe, "is of format version 1, which holds no tools");
    test_rmdir(dir);
}

/* A world with FEM bodies - an explicit block falling into MPM sand
 * (FEM-MPM) beside an implicit one on the floor - saved at frame 3 and
 * resumed goes on bitwise as the run that never stopped: statistics (the
 * FEM block's momentum, energy, bounding box) and the checkpoint at frame 6
 * byte for byte. A version-2 file (its header relabelled) is refused for
 * this scene, naming why. */
Test(checkpoint, fem_world_resumes_bitwise, .timeout = 120)
{
    char dir[64], p3[128], probe[128];
    test_mkdtemp(dir, sizeof dir, "ckpt_fem");
    snprintf(p3, sizeof p3, "%s/at3.firn", dir);
    snprintf(probe, sizeof probe, "%s/v2.firn", dir);
    static const char *json =
        "{\"domain\": {\"lower\": [0, 0, 0], \"upper\": [0.5, 0.5, 0.5], \"dx\": 0.02},"
        " \"time\": {\"frame_dt\": 0.01},"
        " \"materials\": {\"sand\": {\"model\": \"sand\"},"
        "   \"jelly\": {\"model\": \"fem_corotated\", \"E\": 1e5, \"nu\": 0.3, \"density\": 800}},"
        " \"bodies\": [{\"material\": \"sand\", \"shape\": {\"type\": \"box\","
        "   \"lower\": [0.05, 0.05, 0.05], \"upper\": [0.3, 0.12, 0.45]}},"
        "  {\"material\": \"jelly\", \"solver\": \"fem\", \"shape\": {\"type\": \"box\","
        "   \"center\": [0.17, 0.17, 0.25], \"size\": [0.08, 0.08, 0.08], \"cells\": [4, 4, 4]},"
        "   \"velocity\": [0, -1, 0]},"
        "  {\"material\": \"jelly\", \"solver\": \"fem\", \"integrator\": \"implicit\","
        "   \"shape\": {\"type\": \"box\", \"center\": [0.4, 0.1, 0.25],"
        "   \"size\": [0.06, 0.06, 0.06], \"cells\": [3, 3, 3]}, \"velocity\": [0.5, 0, 0]}]}";
    firn_scene_def def;
    firn_error err;
    cr_assert_eq(firn_scene_parse_json(json, "fem.json", &def, &err), 0, "%s", err.msg);
    def.write_ply = def.write_preview = 0;
    firn_world *a = make_world(&def), *plain = make_world(&def);
    firn_frame_stats sa, sp;
    for (int f = 0; f < 3; f++) {
        step(a, &sa);
        step(plain, &sp);
    }
    cr_assert_gt(sa.fem.vertices, 0);
    firn_world *b = save_and_resume(a, &def, dir);
    firn_frame_stats s3;
    cr_assert_eq(firn_world_stats(b, &s3, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(&sa.fem, &s3.fem, sizeof sa.fem), 0,
                 "the loaded FEM bodies differ from the saved ones");
    run_on_together(a, b, plain, dir, &sa);
    static unsigned char buf[4 << 20];
    const size_t n = slurp(p3, buf, sizeof buf);
    const uint32_t two = 2;
    memcpy(buf + 8, &two, 4);
    const uint32_t crc = firn_crc32c(0, buf, FIRN_CHECKPOINT_HEADER_BYTES - 4);
    memcpy(buf + FIRN_CHECKPOINT_HEADER_BYTES - 4, &crc, 4);
    spit(probe, buf, n);
    assert_refused(&def, probe, "is of format version 2, which holds no FEM vertices");
    firn_world_destroy(a);
    firn_world_destroy(b);
    firn_world_destroy(plain);
    test_rmdir(dir);
}

/* A world with tools - one following its keyframes, one commanded through
 * the C API (its keyframes dropped) - saved at frame 3 and resumed goes on
 * bitwise as the run that never stopped: statistics (the tools' pose,
 * velocities, force and the frame's and run's sums) and the checkpoint at
 * frame 6 byte for byte. */
Test(checkpoint, tool_world_resumes_bitwise, .timeout = 120)
{
    char dir[64];
    test_mkdtemp(dir, sizeof dir, "ckpt_tools");
    firn_scene_def def;
    firn_scene_default(&def);
    def.dx = 1.0f / 32.0f;
    def.frame_dt = 0.01f;
    def.write_ply = def.write_preview = 0;
    def.n_materials = 1;
    firn_material_default(&def.materials[0], FIRN_MODEL_SAND);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "sand");
    def.n_bodies = 1;
    firn_body_default(&def.bodies[0]);
    def.bodies[0].shape.type = FIRN_SHAPE_BOX;
    for (int k = 0; k < 3; k++) {
        def.bodies[0].shape.center[k] = k == 1 ? 0.15f : 0.5f;
        def.bodies[0].shape.size[k] = k == 1 ? 0.16f : 0.4f;
    }
    def.n_tools = 2;
    for (int t = 0; t < 2; t++) {
        firn_tool_def *d = &def.tools[t];
        firn_tool_default(d);
        snprintf(d->name, FIRN_NAME_MAX, t ? "dipper" : "blade");
        d->shape.type = FIRN_RSHAPE_BOX;
        const float c[3] = {t ? 0.6f : 0.28f, 0.2f, 0.5f}, sz[3] = {0.04f, 0.16f, 0.2f};
        memcpy(d->shape.center, c, sizeof c);
        memcpy(d->shape.size, sz, sizeof sz);
        d->friction = 0.4f;
        d->n_keyframes = 2;
        for (int j = 0; j < 2; j++)
            memcpy(d->keyframes[j].position, c, sizeof c);
        d->keyframes[1].t = 0.2f;
        d->keyframes[1].position[0] += t ? -0.05f : 0.3f;
        d->keyframes[1].position[1] -= 0.05f;
        d->keyframes[1].rotation[2] = 20.0f;
    }
    firn_world *a = make_world(&def), *plain = make_world(&def);
    firn_frame_stats sa, sp;
    firn_error err;
    const float v[3] = {0.5f, -0.2f, 0.0f}, om[3] = {0.0f, 1.0f, 0.0f};
    for (int f = 0; f < 3; f++) {
        if (f == 1) {
            cr_assert_eq(firn_world_set_tool_velocity(a, 1, v, om, &err), 0, "%s", err.msg);
            cr_assert_eq(firn_world_set_tool_velocity(plain, 1, v, om, &err), 0, "%s", err.msg);
        }
        step(a, &sa);
        step(plain, &sp);
    }
    cr_assert(fabsf(sa.tools[0].force_mean[0]) > 0.1f, "the blade met no sand: %g N",
              sa.tools[0].force_mean[0]);
    firn_world *b = save_and_resume(a, &def, dir);
    cr_assert_eq(b->tools[0].body.n_keys, 2, "the blade's keyframes were lost");
    cr_assert_eq(b->tools[1].body.n_keys, 0, "the command did not survive the checkpoint");
    firn_frame_stats s3;
    cr_assert_eq(firn_world_stats(b, &s3, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(sa.tools, s3.tools, sizeof sa.tools), 0,
                 "the loaded tools differ from the saved ones");
    run_on_together(a, b, plain, dir, &sa);
    firn_world_destroy(a);
    firn_world_destroy(b);
    firn_world_destroy(plain);
    test_rmdir(dir);
}

/* No path to read: an I/O error naming it. */
Test(checkpoint, missing_file_is_an_io_error)
{
    firn_scene_def def;
    load_scene(&def);
    firn_error err = {0};
    cr_assert_null(firn_world_load(&def, FIRN_BACKEND_CPU, "/nonexistent/x.firn", &err));
    cr_assert_eq(err.code, FIRN_E_IO);
    cr_assert(strstr(err.msg, "/nonexistent/x.firn"), "%s", err.msg);
}

/* ---- failed writes --------------------------------------------------------------- */

/* The number of files in dir whose name contains `part`. */
static int count_files(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    cr_assert(d, "cannot list %s", dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, part) != NULL;
    closedir(d);
    return n;
}

/* A write that runs out of room (a file size limit stands for a full
 * disk) fails with an I/O error, leaves no temporary, and the checkpoint
 * already at the path is the previous one, whole. */
Test(checkpoint, full_disk_keeps_the_previous_checkpoint)
{
    static unsigned char before[1 << 20], after[1 << 20];
    char dir[64], path[128];
    test_mkdtemp(dir, sizeof dir, "ckpt_full");
    snprintf(path, sizeof path, "%s/run.firn", dir);
    firn_scene_def def;
    load_scene(&def);
    firn_world *w = make_world(&def);
    firn_frame_stats s;
    step(w, &s);
    save(w, path);
    const size_t n = slurp(path, before, sizeof before);
    step(w, &s);
    struct rlimit old, small;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    small = old;
    small.rlim_cur = 64 << 10; /* less than the checkpoint */
    signal(SIGXFSZ, SIG_IGN);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    firn_error err = {0};
    int rc = firn_world_save(w, path, &err);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    cr_assert_neq(rc, 0, "a write past the file size limit succeeded");
    cr_assert_eq(err.code, FIRN_E_IO, "%s", err.msg);
    cr_assert(strstr(err.msg, path), "%s", err.msg);
    cr_assert_eq(count_files(dir, ".tmp."), 0, "a temporary was left");
    cr_assert_eq(slurp(path, after, sizeof after), n);
    cr_assert_eq(memcmp(before, after, n), 0, "the previous checkpoint changed");
    firn_world *back = load_world(&def, path);
    cr_assert_eq(back->frame, 1);
    firn_world_destroy(back);
    firn_world_destroy(w);
    test_rmdir(dir);
}

/* ---- firn run --checkpoint-every / --resume ------------------------------------ */

/* dir/scene.json: the scene, its output going to dir/out unless --out says. */
static void write_scene(const char *dir)
{
    char path[128];
    snprintf(path, sizeof path, "%s/scene.json", dir);
    spit(path, (const unsigned char *)scene_json, strlen(scene_json));
}

/* Runs `firn ARGS` in dir; returns its exit status, its output in out. */
static int firn_in(const char *dir, char *out, size_t size, const char *args)
{
    return test_run_firn(out, size, dir, args);
}

/* Strips the two timing fields, the last of a stats line, from line. */
static void strip_timing(char *line)
{
    char *t = strstr(line, ",\"wall_seconds\":");
    cr_assert(t, "no wall_seconds in %s", line);
    strcpy(t, "}\n");
}

/* dir b holds the same frame files as dir a, byte for byte, and the same
 * stats.jsonl lines but for their timing fields; frames counts them. */
static void assert_same_output(const char *a, const char *b, int frames)
{
    int files = 0;
    DIR *d = opendir(a);
    cr_assert(d, "cannot list %s", a);
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "frame_", 6) && strncmp(e->d_name, "sph_", 4))
            continue;
        char pa[600], pb[600];
        snprintf(pa, sizeof pa, "%s/%s", a, e->d_name);
        snprintf(pb, sizeof pb, "%s/%s", b, e->d_name);
        assert_same_file(pa, pb);
        files++;
    }
    closedir(d);
    cr_assert_eq(files, 3 * (frames + 1), "%s: %d frame files for %d frames", a, files, frames);
    cr_assert_eq(count_files(b, "frame_") + count_files(b, "sph_"), files,
                 "%s holds other frame files than %s", b, a);
    char sa[256], sb[256], la[8192], lb[8192];
    snprintf(sa, sizeof sa, "%s/stats.jsonl", a);
    snprintf(sb, sizeof sb, "%s/stats.jsonl", b);
    FILE *fa = fopen(sa, "r"), *fb = fopen(sb, "r");
    cr_assert(fa && fb, "no stats.jsonl in %s or %s", a, b);
    int lines = 0;
    while (fgets(la, sizeof la, fa)) {
        cr_assert(fgets(lb, sizeof lb, fb), "%s ends after %d lines", sb, lines);
        strip_timing(la);
        strip_timing(lb);
        cr_assert_str_eq(la, lb, "stats line %d differs", lines);
        lines++;
    }
    cr_assert_null(fgets(lb, sizeof lb, fb), "%s has more than %d lines", sb, lines);
    cr_assert_eq(lines, frames + 1);
    fclose(fa), fclose(fb);
}

/* A run stopped at frame 3 with a checkpoint and resumed writes what an
 * uninterrupted run writes: PLY, SPH PLY and PNG frames byte for byte,
 * stats.jsonl line for line (timing fields aside), no frame twice. */
Test(checkpoint_cli, resumed_run_writes_the_uninterrupted_output)
{
    char dir[64], out[8192];
    test_mkdtemp(dir, sizeof dir, "ckpt_cli");
    write_scene(dir);
    cr_assert_eq(firn_in(dir, out, sizeof out, "run scene.json --backend cpu --out ref -q"), 0,
                 "%s", out);
    cr_assert_eq(firn_in(dir, out, sizeof out,
                         "run scene.json --backend cpu --out run --frames 3 --checkpoint-every 3"),
                 0, "%s", out);
    cr_assert(strstr(out, "checkpoint run/checkpoint_00003.firn (frame 3"), "%s", out);
    cr_assert_eq(firn_in(dir, out, sizeof out, "run scene.json --backend cpu --out run --resume"),
                 0, "%s", out);
    cr_assert(strstr(out, "resuming from run/checkpoint_00003.firn (frame 3"), "%s", out);
    char ref[128], run[128];
    snprintf(ref, sizeof ref, "%s/ref", dir);
    snprintf(run, sizeof run, "%s/run", dir);
    assert_same_output(ref, run, 6);
    test_rmdir(dir);
}

/* Starts `firn ARGS` in dir in the background, stdout and stderr to
 * dir/log; returns its pid. env: "NAME=VALUE" or "". */
static pid_t spawn_firn(const char *dir, const char *env, const char *args)
{
    const char *bin = getenv("FIRN_BIN") ? getenv("FIRN_BIN") : "build/firn";
    char abs[PATH_MAX], cmd[PATH_MAX + 1024];
    cr_assert(realpath(bin, abs), "no firn binary at %s (set FIRN_BIN)", bin);
    snprintf(cmd, sizeof cmd, "cd '%s' && exec env %s %s %s > log 2>&1", dir, env, abs, args);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Waits (60 s at most) until dir/name holds `lines` lines, or the text
 * `needle` when it is not NULL. */
static void wait_for(const char *dir, const char *name, const char *needle, int lines)
{
    char path[128], text[65536];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (int tries = 0; tries < 6000; tries++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
        if (f)
            fclose(f);
        text[n] = '\0';
        int count = 0;
        for (size_t i = 0; i < n; i++)
            count += text[i] == '\n';
        if (needle ? strstr(text, needle) != NULL : count >= lines)
            return;
        usleep(10000);
    }
    cr_assert_fail("%s: no '%s' after 60 s", path, needle ? needle : "lines");
}

static int file_exists(const char *dir, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* SIGTERM mid-run: the run finishes its frame, writes a checkpoint and the
 * frame in flight, and exits 143 naming the checkpoint and the command
 * that resumes it; that command completes the run as an uninterrupted one
 * would have. */
Test(checkpoint_cli, sigterm_writes_a_checkpoint_and_the_resume_completes_the_run)
{
    char dir[64], out[8192], log[8192], args[256];
    test_mkdtemp(dir, sizeof dir, "ckpt_term");
    write_scene(dir);
    pid_t pid = spawn_firn(dir, "", "run scene.json --backend cpu --out run --frames 400");
    char run[128];
    snprintf(run, sizeof run, "%s/run", dir);
    wait_for(run, "stats.jsonl", NULL, 3);
    cr_assert_eq(kill(pid, SIGTERM), 0);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGTERM, "status %d", st);
    char path[128];
    snprintf(path, sizeof path, "%s/log", dir);
    log[slurp(path, (unsigned char *)log, sizeof log - 1)] = '\0';
    const char *at = strstr(log, "SIGTERM: stopped after frame ");
    cr_assert(at, "%s", log);
    const int k = atoi(at + strlen("SIGTERM: stopped after frame "));
    cr_assert(k >= 3 && k < 400, "%s", log);
    char name[64];
    snprintf(name, sizeof name, "checkpoint_%05d.firn", k);
    cr_assert(file_exists(run, name), "no %s: %s", name, log);
    cr_assert(strstr(log, "resume with: firn run scene.json --backend cpu --out run --frames 400 "
                          "--resume"),
              "%s", log);
    cr_assert_eq(count_files(run, ".tmp."), 0);
    /* The frames written so far are frames 0 .. k, their stats too. */
    cr_assert(file_exists(run, (snprintf(name, sizeof name, "frame_%05d.png", k), name)));
    cr_assert(!file_exists(run, (snprintf(name, sizeof name, "frame_%05d.png", k + 1), name)));
    snprintf(args, sizeof args, "run scene.json --backend cpu --out run --frames %d --resume -q",
             k + 2);
    cr_assert_eq(firn_in(dir, out, sizeof out, args), 0, "%s", out);
    snprintf(args, sizeof args, "run scene.json --backend cpu --out ref --frames %d -q", k + 2);
    cr_assert_eq(firn_in(dir, out, sizeof out, args), 0, "%s", out);
    char ref[128];
    snprintf(ref, sizeof ref, "%s/ref", dir);
    assert_same_output(ref, run, k + 2);
    test_rmdir(dir);
}

/* SIGKILL while a checkpoint is written (the test hook holds the writer
 * between its fsync and its rename): the previous checkpoint is whole and
 * loads, the new one is not there under its name, and --resume picks the
 * previous one, removes the dead write's temporary and completes the run. */
Test(checkpoint_cli, sigkill_during_a_checkpoint_write_keeps_the_previous_one)
{
    char dir[64], out[8192], run[128], ref[128];
    test_mkdtemp(dir, sizeof dir, "ckpt_kill");
    write_scene(dir);
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(ref, sizeof ref, "%s/ref", dir);
    pid_t pid = spawn_firn(dir, "FIRN_TEST_CHECKPOINT_PAUSE=4",
                           "run scene.json --backend cpu --out run --checkpoint-every 2");
    wait_for(dir, "log", "test hook: checkpoint run/checkpoint_00004.firn written", 0);
    cr_assert_eq(kill(pid, SIGKILL), 0);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    cr_assert(file_exists(run, "checkpoint_00002.firn"));
    cr_assert(!file_exists(run, "checkpoint_00004.firn"));
    cr_assert_eq(count_files(run, "checkpoint_00004.firn.tmp."), 1);
    firn_scene_def def;
    load_scene(&def);
    char path[160];
    snprintf(path, sizeof path, "%s/checkpoint_00002.firn", run);
    firn_world *w = load_world(&def, path);
    cr_assert_eq(w->frame, 2);
    firn_world_destroy(w);

    cr_assert_eq(firn_in(dir, out, sizeof out,
                         "run scene.json --backend cpu --out run --checkpoint-every 2 --resume"),
                 0, "%s", out);
    cr_assert(strstr(out, "resuming from run/checkpoint_00002.firn (frame 2"), "%s", out);
    cr_assert_eq(count_files(run, ".tmp."), 0, "the dead write's temporary is still there");
    /* The newest two are kept. */
    cr_assert(!file_exists(run, "checkpoint_00002.firn"));
    cr_assert(file_exists(run, "checkpoint_00004.firn") &&
              file_exists(run, "checkpoint_00006.firn"));
    cr_assert_eq(firn_in(dir, out, sizeof out, "run scene.json --backend cpu --out ref -q"), 0,
                 "%s", out);
    assert_same_output(ref, run, 6);
    test_rmdir(dir);
}

/* A second signal while the first is being served (here: the checkpoint
 * write held by the test hook) exits at once, by the signal, and takes the
 * temporary it was writing with it; the checkpoint before stays whole. */
Test(checkpoint_cli, second_signal_exits_at_once_leaving_no_partial_file)
{
    char dir[64], run[128];
    test_mkdtemp(dir, sizeof dir, "ckpt_twice");
    write_scene(dir);
    snprintf(run, sizeof run, "%s/run", dir);
    pid_t pid = spawn_firn(dir, "FIRN_TEST_CHECKPOINT_PAUSE=4",
                           "run scene.json --backend cpu --out run --checkpoint-every 2");
    wait_for(dir, "log", "test hook: checkpoint run/checkpoint_00004.firn written", 0);
    cr_assert_eq(count_files(run, ".tmp."), 1);
    cr_assert_eq(kill(pid, SIGINT), 0);
    wait_for(dir, "log", "stopping after this frame", 0);
    cr_assert_eq(kill(pid, SIGINT), 0);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT, "status %d", st);
    cr_assert_eq(count_files(run, ".tmp."), 0, "a partial file was left");
    cr_assert(!file_exists(run, "checkpoint_00004.firn"));
    firn_scene_def def;
    load_scene(&def);
    char path[160];
    snprintf(path, sizeof path, "%s/checkpoint_00002.firn", run);
    firn_world_destroy(load_world(&def, path));
    test_rmdir(dir);
}

/* --resume refuses, changing nothing, a checkpoint of another scene, and a
 * folder whose stats.jsonl lacks frames before the checkpoint. */
Test(checkpoint_cli, resume_refuses_bad_input_and_changes_nothing)
{
    char dir[64], out[8192], run[128];
    test_mkdtemp(dir, sizeof dir, "ckpt_refuse");
    write_scene(dir);
    snprintf(run, sizeof run, "%s/run", dir);
    cr_assert_eq(firn_in(dir, out, sizeof out,
                         "run scene.json --backend cpu --out run --frames 4 --checkpoint-every 2 "
                         "-q"),
                 0, "%s", out);
    /* another scene: the same with a lighter ball */
    char other[8192], path[160];
    snprintf(other, sizeof other, "%s", scene_json);
    char *d = strstr(other, "\"density\": 1500");
    cr_assert(d);
    memcpy(d, "\"density\": 1400", 15);
    snprintf(path, sizeof path, "%s/other.json", dir);
    spit(path, (const unsigned char *)other, strlen(other));
    static unsigned char before[1 << 20], after[1 << 20];
    snprintf(path, sizeof path, "%s/stats.jsonl", run);
    const size_t n = slurp(path, before, sizeof before);
    cr_assert_eq(
        firn_in(dir, out, sizeof out,
                "run other.json --backend cpu --out run --resume run/checkpoint_00004.firn"),
        FIRN_E_CHECKPOINT, "%s", out);
    cr_assert(strstr(out, "checkpoint 'run/checkpoint_00004.firn' is of another scene"), "%s", out);
    /* without a name: every checkpoint in the folder is tried and named */
    cr_assert_eq(firn_in(dir, out, sizeof out, "run other.json --backend cpu --out run --resume"),
                 FIRN_E_CHECKPOINT, "%s", out);
    cr_assert(strstr(out, "skipping a checkpoint: checkpoint 'run/checkpoint_00004.firn' is of "
                          "another scene"),
              "%s", out);
    cr_assert(strstr(out, "skipping a checkpoint: checkpoint 'run/checkpoint_00002.firn'"), "%s",
              out);
    /* frames 3 and 4 lost from stats.jsonl */
    FILE *f = fopen(path, "r");
    char line[8192];
    size_t keep = 0;
    for (int i = 0; i < 3 && fgets(line, sizeof line, f); i++)
        keep += strlen(line);
    fclose(f);
    spit(path, before, keep);
    cr_assert_eq(firn_in(dir, out, sizeof out, "run scene.json --backend cpu --out run --resume"),
                 FIRN_E_IO, "%s", out);
    cr_assert(strstr(out, "holds frames 0 to 2 in order, but the checkpoint is at frame 4"), "%s",
              out);
    cr_assert_eq(slurp(path, after, sizeof after), keep);
    spit(path, before, n);
    cr_assert(file_exists(run, "checkpoint_00004.firn") && file_exists(run, "frame_00004.ply"));
    test_rmdir(dir);
}

/* The names of the files in dir, sorted and joined, and each file's size:
 * what a refused resume must leave as it was. */
static void list_folder(const char *dir, char *buf, size_t size)
{
    struct dirent **names;
    int k = scandir(dir, &names, NULL, alphasort);
    cr_assert_geq(k, 0, "cannot list %s", dir);
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < k; i++) {
        char path[600];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && at < size)
            at += (size_t)snprintf(buf + at, size - at, "%s %lld\n", names[i]->d_name,
                                   (long long)st.st_size);
        free(names[i]);
    }
    free(names);
    cr_assert_lt(at, size);
}

/* run/checkpoint_<k>.firn with len bytes at off replaced and resealed. */
static void craft_in_place(const char *run, int k, size_t off, const void *data, size_t len)
{
    static unsigned char buf[1 << 20];
    char path[160];
    snprintf(path, sizeof path, "%s/checkpoint_%05d.firn", run, k);
    const size_t n = slurp(path, buf, sizeof buf);
    cr_assert(n > 1000 && n < sizeof buf);
    memcpy(buf + off, data, len);
    reseal(buf, n);
    spit(path, buf, n);
}

/* A crafted checkpoint (its checksums made again) is refused with exit 9
 * before anything in the output folder changes: a frame of -5 once cut
 * stats.jsonl to nothing and removed every frame and checkpoint, and a
 * material byte of 255 wrote out of bounds. Named or found in the
 * folder, the folder is left as it was. A checkpoint the loader takes
 * (it allows substeps outside frames) that does not end a whole frame is
 * not resumed either. */
Test(checkpoint_cli, crafted_checkpoint_is_refused_before_the_folder_changes)
{
    char dir[64], out[8192], run[128], before[8192], after[8192];
    test_mkdtemp(dir, sizeof dir, "ckpt_craft_cli");
    write_scene(dir);
    snprintf(run, sizeof run, "%s/run", dir);
    cr_assert_eq(firn_in(dir, out, sizeof out,
                         "run scene.json --backend cpu --out run --frames 4 --checkpoint-every 2 "
                         "-q"),
                 0, "%s", out);
    const int32_t minus5 = -5, three = 3;
    craft_in_place(run, 4, 40, &minus5, 4);
    list_folder(run, before, sizeof before);
    cr_assert_eq(firn_in(dir, out, sizeof out,
                         "run scene.json --backend cpu --out run --frames 6 --resume "
                         "run/checkpoint_00004.firn"),
                 FIRN_E_CHECKPOINT, "%s", out);
    cr_assert(strstr(out, "checkpoint 'run/checkpoint_00004.firn' has a damaged header: frame -5"),
              "%s", out);
    list_folder(run, after, sizeof after);
    cr_assert_str_eq(before, after, "the folder changed");

    /* frame 3 with frame 4's time and substeps: the loader takes it (the C
     * API may run substeps outside frames), a resume does not */
    craft_in_place(run, 4, 40, &three, 4);
    cr_assert_eq(firn_in(dir, out, sizeof out,
                         "run scene.json --backend cpu --out run --frames 6 --resume "
                         "run/checkpoint_00004.firn"),
                 FIRN_E_CHECKPOINT, "%s", out);
    cr_assert(strstr(out, "checkpoint 'run/checkpoint_00004.firn' is not the end of a frame: its "
                          "time"),
              "%s", out);

    /* both checkpoints crafted, found in the folder: each named, none used */
    craft_in_place(run, 4, 40, &minus5, 4);
    static unsigned char buf[1 << 20];
    char path[160];
    snprintf(path, sizeof path, "%s/checkpoint_00002.firn", run);
    const size_t n = slurp(path, buf, sizeof buf);
    int32_t np;
    memcpy(&np, buf + 64, 4);
    const unsigned char bad = 255;
    craft_in_place(run, 2, section_payload(buf, n, "MPMP") + 108 * (size_t)np + 5, &bad, 1);
    list_folder(run, before, sizeof before);
    cr_assert_eq(
        firn_in(dir, out, sizeof out, "run scene.json --backend cpu --out run --frames 6 --resume"),
        FIRN_E_CHECKPOINT, "%s", out);
    cr_assert(strstr(out, "skipping a checkpoint: checkpoint 'run/checkpoint_00004.firn' has a "
                          "damaged header: frame -5"),
              "%s", out);
    cr_assert(strstr(out, "skipping a checkpoint: checkpoint 'run/checkpoint_00002.firn' is "
                          "damaged: MPM particle 5 has material 255"),
              "%s", out);
    cr_assert(strstr(out, "none of the 2 checkpoints in run/ can be resumed"), "%s", out);
    list_folder(run, after, sizeof after);
    cr_assert_str_eq(before, after, "the folder changed");
    test_rmdir(dir);
}

/* --resume with no checkpoint in the folder is exit 9 (no checkpoint can
 * be resumed), as docs/CLI.md says; a directory named as the checkpoint
 * is named as one, with what to give instead. */
Test(checkpoint_cli, resume_without_a_checkpoint_or_of_a_directory_is_exit_9)
{
    char dir[64], out[8192];
    test_mkdtemp(dir, sizeof dir, "ckpt_none");
    write_scene(dir);
    cr_assert_eq(firn_in(dir, out, sizeof out, "run scene.json --backend cpu --out run --resume"),
                 FIRN_E_CHECKPOINT, "%s", out);
    cr_assert(strstr(out, "--resume: no checkpoint in run/"), "%s", out);
    cr_assert_eq(
        firn_in(dir, out, sizeof out, "run scene.json --backend cpu --out run --resume=run"),
        FIRN_E_CHECKPOINT, "%s", out);
    cr_assert(strstr(out, "checkpoint 'run' is a directory, not a checkpoint file: name a file "
                          "in it (run/checkpoint_<frame>.firn)"),
              "%s", out);
    test_rmdir(dir);
}

/* A run holds its output folder: a second run into it while the first
 * goes on (here held by the test hook) is refused with exit 4, naming the
 * first one's pid, and changes nothing there. Once the first is killed
 * (SIGKILL: no clean-up), the kernel has released its lock and the next
 * run goes ahead. */
Test(checkpoint_cli, second_run_into_a_held_folder_is_refused_naming_the_holder)
{
    char dir[64], out[8192], run[128], before[8192], after[8192], pidtext[64];
    test_mkdtemp(dir, sizeof dir, "ckpt_lock");
    write_scene(dir);
    snprintf(run, sizeof run, "%s/run", dir);
    pid_t pid = spawn_firn(dir, "FIRN_TEST_CHECKPOINT_PAUSE=2",
                           "run scene.json --backend cpu --out run --checkpoint-every 2");
    wait_for(dir, "log", "test hook: checkpoint run/checkpoint_00002.firn written", 0);
    list_folder(run, before, sizeof before);
    cr_assert_eq(firn_in(dir, out, sizeof out, "run scene.json --backend cpu --out run -q"),
                 FIRN_E_IO, "%s", out);
    snprintf(pidtext, sizeof pidtext, "is in use by another firn run: pid %d on host ", (int)pid);
    cr_assert(strstr(out, "output folder run/ ") && strstr(out, pidtext), "%s", out);
    cr_assert(strstr(out, "(lock file run/.firn.lock)"), "%s", out);
    list_folder(run, after, sizeof after);
    cr_assert_str_eq(before, after, "the refused run changed the folder");
    cr_assert_eq(kill(pid, SIGKILL), 0);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert_eq(
        firn_in(dir, out, sizeof out, "run scene.json --backend cpu --out run --frames 2 -q"), 0,
        "the dead run's lock still holds the folder: %s", out);
    test_rmdir(dir);
}

/* SIGHUP (a terminal or SSH session gone) stops a run as SIGTERM does:
 * the frame finished, a checkpoint written, exit 128 + 1, and the
 * checkpoint loads. */
Test(checkpoint_cli, sighup_writes_a_checkpoint)
{
    char dir[64], log[8192], run[128], path[160];
    test_mkdtemp(dir, sizeof dir, "ckpt_hup");
    write_scene(dir);
    snprintf(run, sizeof run, "%s/run", dir);
    pid_t pid = spawn_firn(dir, "", "run scene.json --backend cpu --out run --frames 400");
    wait_for(run, "stats.jsonl", NULL, 3);
    cr_assert_eq(kill(pid, SIGHUP), 0);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGHUP, "status %d", st);
    snprintf(path, sizeof path, "%s/log", dir);
    log[slurp(path, (unsigned char *)log, sizeof log - 1)] = '\0';
    const char *at = strstr(log, "SIGHUP: stopped after frame ");
    cr_assert(at, "%s", log);
    const int k = atoi(at + strlen("SIGHUP: stopped after frame "));
    snprintf(path, sizeof path, "%s/checkpoint_%05d.firn", run, k);
    firn_scene_def def;
    load_scene(&def);
    firn_world *w = load_world(&def, path);
    cr_assert_eq(w->frame, k);
    firn_world_destroy(w);
    test_rmdir(dir);
}

/* A solver's checkpoint section is its table's (firn_solver.section): in a
 * world with every solver, the file's sections are format 3's, in its
 * order (WRLD MPMP CPIC CPUL RIGD SPHP PBDP TOOL FEMV, each where the
 * world has it), each solver's tag distinct, 4 letters, once in the file,
 * and its payload the sum of its table's saved fields, whole. */
Test(checkpoint, solver_sections_are_their_tables)
{
    firn_world *w = test_world_json(all_solvers_json, "all_solvers.json");
    firn_error err = {0};
    cr_assert_eq(firn_world_run_substeps(w, 3, 1e-4f, &err), 0, "%s", err.msg);
    char dir[64], path[128];
    test_mkdtemp(dir, sizeof dir, "ckpt_tags");
    snprintf(path, sizeof path, "%s/c.firn", dir);
    cr_assert_eq(firn_world_save(w, path, &err), 0, "%s", err.msg);
    static unsigned char buf[1 << 22];
    const size_t n = slurp(path, buf, sizeof buf);
    cr_assert_lt(n, sizeof buf);
    char order[16][5];
    int m = 0;
    for (size_t at = FIRN_CHECKPOINT_HEADER_BYTES; at + 16 <= n - 8 && m < 16; m++) {
        uint64_t bytes;
        memcpy(order[m], buf + at, 4);
        order[m][4] = 0;
        memcpy(&bytes, buf + at + 8, 8);
        at += 16 + (size_t)bytes;
    }
    static const char *const v3[] = {"WRLD", "MPMP", "CPIC", "CPUL", "RIGD",
                                     "SPHP", "PBDP", "TOOL", "FEMV"};
    int next = 0;
    for (int k = 0; k < m; k++) {
        while (next < 9 && strcmp(v3[next], order[k]))
            next++;
        cr_expect_lt(next, 9, "section %d, %s, is out of format 3's order", k, order[k]);
    }
    for (int k = 0; k < FIRN_SOLVER_COUNT; k++) {
        const firn_solver *s = firn_solver_of(k);
        firn_field_table t;
        if (!s->fields) {
            cr_expect_null(s->section, "%s names a section but has no fields", s->name);
            continue;
        }
        s->fields(w, &t);
        cr_assert(s->section && strlen(s->section) == 4, "%s has no 4-letter section", s->name);
        for (int j = 0; j < k; j++)
            cr_expect(!firn_solver_of(j)->section || strcmp(firn_solver_of(j)->section, s->section),
                      "%s and %s share section %s", firn_solver_of(j)->name, s->name, s->section);
        uint64_t want = 0;
        for (int f = 0; f < t.n; f++)
            if (t.f[f].flags & FIRN_FIELD_SAVED)
                want += firn_field_bytes(&t.f[f], t.count);
        cr_expect_gt(want, 0, "%s saves nothing in a world that has it", s->name);
        int seen = 0;
        for (size_t at = FIRN_CHECKPOINT_HEADER_BYTES; at + 16 <= n - 8;) {
            uint64_t bytes;
            memcpy(&bytes, buf + at + 8, 8);
            if (!memcmp(buf + at, s->section, 4)) {
                seen++;
                cr_expect_eq(bytes, want, "%s's section %s holds %llu bytes, its table %llu",
                             s->name, s->section, (unsigned long long)bytes,
                             (unsigned long long)want);
            }
            at += 16 + (size_t)bytes;
        }
        cr_expect_eq(seen, 1, "%s's section %s is in the file %d times", s->name, s->section, seen);
    }
    /* and the reader takes the file back (each section by its tag) */
    firn_world *r = firn_world_load(&w->def, FIRN_BACKEND_CPU, path, &err);
    cr_expect(r, "the checkpoint does not load: %s", err.msg);
    if (r)
        firn_world_destroy(r);
    firn_world_destroy(w);
    test_rmdir(dir);
}
