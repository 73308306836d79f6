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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checkpoint.h"
#include "test_util.h"
#include "world.h"

/* Every MPM model, an SPH (DFSPH) body, a dynamic ball and a kinematic
 * blade thinner than a cell (CPIC keeps the sand on its side). */
static const char *scene_json =
    "{\n"
    "  \"domain\": {\"lower\": [0, 0, 0], \"upper\": [0.48, 0.4, 0.32], \"dx\": 0.02,\n"
    "             \"boundary\": {\"y_lower\": {\"type\": \"separate\", \"friction\": 0.3}}},\n"
    "  \"time\": {\"frame_dt\": 0.01, \"frames\": 6},\n"
    "  \"sph\": {\"particle_size\": 0.02},\n"
    "  \"materials\": {\n"
    "    \"water\": {\"model\": \"liquid\", \"E\": 2e4, \"density\": 1000},\n"
    "    \"sand\": {\"model\": \"sand\", \"E\": 5e4, \"nu\": 0.3, \"density\": 1600},\n"
    "    \"snow\": {\"model\": \"snow\", \"E\": 3e4, \"density\": 400, \"max_hardening\": 5},\n"
    "    \"jelly\": {\"model\": \"elastic\", \"E\": 2e4, \"nu\": 0.3, \"density\": 1000},\n"
    "    \"metal\": {\"model\": \"von_mises\", \"E\": 5e4, \"density\": 2000, \"yield_stress\": "
    "500},\n"
    "    \"brittle\": {\"model\": \"fracture\", \"E\": 5e4, \"nu\": 0.2, \"density\": 1200,\n"
    "                \"crit_strain\": 0.01, \"damage_rate\": 0.2},\n"
    "    \"pool\": {\"model\": \"sph_liquid\", \"density\": 1000, \"pressure_solver\": \"dfsph\"}\n"
    "  },\n"
    "  \"bodies\": [\n"
    "    {\"material\": \"water\", \"shape\": {\"type\": \"box\", \"lower\": [0.04, 0.04, 0.04],\n"
    "     \"upper\": [0.12, 0.12, 0.12]}, \"velocity\": [1, 0, 0]},\n"
    "    {\"material\": \"sand\", \"shape\": {\"type\": \"box\", \"lower\": [0.16, 0.04, 0.04],\n"
    "     \"upper\": [0.26, 0.1, 0.28]}},\n"
    "    {\"material\": \"snow\", \"shape\": {\"type\": \"sphere\", \"center\": [0.21, 0.2, 0.2],\n"
    "     \"radius\": 0.04}, \"velocity\": [0, -1, 0]},\n"
    "    {\"material\": \"jelly\", \"shape\": {\"type\": \"box\", \"center\": [0.08, 0.25, 0.2],\n"
    "     \"size\": [0.06, 0.06, 0.06]}, \"velocity\": [0.5, -0.5, 0]},\n"
    "    {\"material\": \"metal\", \"shape\": {\"type\": \"box\", \"lower\": [0.3, 0.04, 0.04],\n"
    "     \"upper\": [0.44, 0.06, 0.16]}},\n"
    "    {\"material\": \"brittle\", \"shape\": {\"type\": \"box\", \"center\": [0.37, 0.14, "
    "0.1],\n"
    "     \"size\": [0.1, 0.02, 0.08]}, \"velocity\": [0, -2, 0]},\n"
    "    {\"material\": \"pool\", \"solver\": \"sph\", \"shape\": {\"type\": \"box\",\n"
    "     \"lower\": [0.32, 0.2, 0.18], \"upper\": [0.44, 0.3, 0.28]}}\n"
    "  ],\n"
    "  \"rigids\": [\n"
    "    {\"name\": \"ball\", \"shape\": {\"type\": \"sphere\", \"center\": [0.21, 0.3, 0.1],\n"
    "     \"radius\": 0.03}, \"motion\": \"dynamic\", \"density\": 1500, \"velocity\": [0, -1.5, "
    "0]},\n"
    "    {\"name\": \"blade\", \"shape\": {\"type\": \"box\", \"center\": [0.29, 0.08, 0.16],\n"
    "     \"size\": [0.005, 0.08, 0.2]}, \"motion\": \"kinematic\", \"velocity\": [-0.8, 0, 0]}\n"
    "  ],\n"
    "  \"coupling\": {\"cpic\": true},\n"
    "  \"output\": {\"dir\": \"out\"}\n"
    "}\n";

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
}

/* ---- continuation ------------------------------------------------------------- */

/* A run saved at frame 3 and resumed from the file computes frames 4 to 6
 * exactly as the run that went on, and as a run never saved: statistics
 * equal field by field (timing aside), and the checkpoints of both at
 * frame 6, which hold every field of the state, equal byte for byte. */
Test(checkpoint, resumed_run_continues_bitwise)
{
    char dir[64], p3[128], p6a[128], p6b[128];
    test_mkdtemp(dir, sizeof dir, "ckpt_bitwise");
    snprintf(p3, sizeof p3, "%s/at3.firn", dir);
    snprintf(p6a, sizeof p6a, "%s/at6a.firn", dir);
    snprintf(p6b, sizeof p6b, "%s/at6b.firn", dir);
    firn_scene_def def;
    load_scene(&def);
    firn_world *a = make_world(&def), *plain = make_world(&def);
    firn_frame_stats sa, sb, sp;
    for (int f = 0; f < 3; f++) {
        step(a, &sa);
        step(plain, &sp);
    }
    cr_assert_gt(a->bins.reorders, 0, "the CPU layout is still the scene's order");
    cr_assert_gt(a->n_rigids, 1);
    save(a, p3);
    firn_world *b = load_world(&def, p3);
    cr_assert_eq(b->frame, 3);
    for (int f = 0; f < 3; f++) {
        step(a, &sa);
        step(b, &sb);
        step(plain, &sp);
        cr_assert_eq(memcmp(&sa, &sb, sizeof sa), 0,
                     "frame %d: the resumed run's statistics differ", sa.frame);
        cr_assert_eq(memcmp(&sa, &sp, sizeof sa), 0,
                     "frame %d: saving changed the run's statistics", sa.frame);
    }
    cr_assert_gt(sa.sph.particles, 0);
    cr_assert_gt(sa.sph.divergence_iterations, 0);
    save(a, p6a);
    save(b, p6b);
    assert_same_file(p6a, p6b);
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
    assert_refused(&def, probe, "is of format version 2; this firn reads version 1");

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
