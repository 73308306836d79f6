/* test_cli.c - the command-line tool end to end: each class of bad input
 * gets its message and exit code, a run writes its frames and statistics,
 * and a run that goes non-finite stops, names the frame and particle, and
 * keeps what it wrote before. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "firn.h"
#include "test_util.h"

static char dir[64];
static char out[4096];

static void setup(void) { test_mkdtemp(dir, sizeof dir, "cli"); }

static void teardown(void) { test_rmdir(dir); }

/* Runs `firn ARGS` and returns its exit status; stderr+stdout in out. */
static int firn(const char *args) { return test_run_firn(out, sizeof out, NULL, args); }

static const char *write_scene(const char *name, const char *json)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(json, f);
    fclose(f);
    return path;
}

#define SCENE_HEAD "{\"domain\": {\"lower\": [0,0,0], \"upper\": [1,1,1], \"dx\": 0.05},"
#define SCENE_BODY                                                                                 \
    "\"materials\": {\"jelly\": {\"model\": \"elastic\", \"E\": 1e6}},"                            \
    "\"bodies\": [{\"material\": \"jelly\", \"shape\": {\"type\": \"box\", \"center\": "           \
    "[0.5,0.5,0.5], \"size\": [0.3,0.3,0.3]}, \"velocity\": [1,0,0]}]"

static void expect(int rc, int code, const char *needle, const char *what)
{
    cr_assert_eq(rc, code, "%s: exit %d, want %d; output:\n%s", what, rc, code, out);
    cr_assert(strstr(out, needle), "%s: output lacks '%s':\n%s", what, needle, out);
}

/* Lines of the file name (relative to the test folder), each checked to be
 * a JSON document. */
static int stats_lines(const char *name)
{
    char path[256], line[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line);
        cr_assert(j, "%s: line %d is not JSON", name, lines + 1);
        cJSON_Delete(j);
        lines++;
    }
    fclose(f);
    return lines;
}

static int exists(const char *name)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 && st.st_size > 0;
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 120);

Test(cli, usage_errors_exit_2)
{
    expect(firn("frobnicate"), FIRN_E_USAGE, "unknown command 'frobnicate'", "unknown command");
    expect(firn("run"), FIRN_E_USAGE, "missing SCENE", "run without scene");
    expect(firn("run x.json --frames -3"), FIRN_E_USAGE, "--frames expects a positive integer",
           "negative frames");
    expect(firn("run x.json --backend gpu"), FIRN_E_USAGE, "--backend must be", "bad backend");
    expect(firn("run x.json --p2g shared"), FIRN_E_USAGE,
           "--p2g must be auto, atomic, binned, warp, ordered or g2p2g", "bad P2G variant");
    expect(firn("run x.json --deterministic --p2g warp"), FIRN_E_USAGE,
           "--deterministic takes the ordered P2G", "--deterministic with another P2G");
    expect(firn("compare x.json --p2g"), FIRN_E_USAGE,
           "--p2g must be auto, atomic, binned, warp, ordered or g2p2g", "P2G variant missing");
    expect(firn("bench --p2g fast"), FIRN_E_USAGE,
           "--p2g takes a list of atomic, binned, warp, ordered, g2p2g or all",
           "bad bench P2G list");
    expect(firn("run x.json --every 0"), FIRN_E_USAGE, "--every expects a positive integer",
           "zero output interval");
    expect(firn("info extra"), FIRN_E_USAGE, "unexpected argument 'extra'",
           "info with an argument");
    expect(firn("--version 2"), FIRN_E_USAGE, "unexpected argument '2'",
           "--version with an argument");
    expect(firn("--help"), 0, "firn run SCENE", "help");
}

Test(cli, missing_file_exits_4_and_names_it)
{
    char args[256];
    snprintf(args, sizeof args, "run %s/nope.json", dir);
    expect(firn(args), FIRN_E_IO, "nope.json", "missing scene");
    cr_assert(strstr(out, "No such file"), "%s", out);
}

Test(cli, malformed_json_gives_line_and_column)
{
    const char *p = write_scene("bad.json", "{\n  \"domain\": {\"dx\": 0.1,}\n}\n");
    char args[256];
    snprintf(args, sizeof args, "validate %s", p);
    expect(firn(args), FIRN_E_SCENE, "bad.json:2:", "malformed JSON");
    cr_assert(strstr(out, "malformed JSON"), "%s", out);
}

Test(cli, wrong_value_names_the_key_path)
{
    const char *p = write_scene("nu.json", SCENE_HEAD
                                "\"materials\": {\"sand\": {\"model\": \"sand\", \"nu\": 0.6}},"
                                "\"bodies\": [{\"material\": \"sand\", \"shape\": {\"type\": "
                                "\"sphere\", \"center\": [0.5,0.5,0.5], \"radius\": 0.1}}]}");
    char args[256];
    snprintf(args, sizeof args, "run %s", p);
    expect(firn(args), FIRN_E_SCENE, "materials.sand.nu", "nu out of range");
}

Test(cli, unsafe_dt_is_refused_unless_forced)
{
    const char *p = write_scene("dt.json", SCENE_HEAD "\"time\": {\"dt\": 0.005}," SCENE_BODY "}");
    char args[256];
    snprintf(args, sizeof args, "run %s --out %s/o", p, dir);
    expect(firn(args), FIRN_E_NUMERIC, "time.dt = 0.005 s is unsafe", "unsafe dt");
    cr_assert(!exists("o/frame_00000.ply"), "an unsafe scene wrote a frame");
}

/* A CFL step of more than 100000 substeps per frame: validate and run both
 * refuse it (exit 5), naming the file and the speed that limits it; run
 * writes no frame. */
Test(cli, runaway_cfl_step_is_refused_naming_its_cause)
{
    char p[256], args[600];
    snprintf(p, sizeof p, "%s",
             write_scene("g.json", SCENE_HEAD "\"gravity\": [0, -1e12, 0]," SCENE_BODY "}"));
    snprintf(args, sizeof args, "validate %s", p);
    expect(firn(args), FIRN_E_NUMERIC, "more than 100000 substeps", "validate");
    cr_assert(strstr(out, "g.json: frame 1") && strstr(out, "gravity over a frame"), "%s", out);
    snprintf(args, sizeof args, "run %s --out %s/o", p, dir);
    expect(firn(args), FIRN_E_NUMERIC, "gravity over a frame", "run");
    cr_assert(!exists("o/frame_00001.ply"), "a runaway scene wrote frame 1");
}

Test(cli, nonfinite_state_stops_and_keeps_earlier_frames)
{
    /* Courant number 6.6: the elastic block blows up within a few frames.
     * Whether a blow-up is reported depends on its course: one that ends
     * with every particle pressed into a corner of the domain, at rest,
     * with a huge but finite F, is not (at Courant 3.3 this block did so
     * once the SVD's rounding changed, and at E = 1e7 or 1e8 it did before
     * that change): a blown-up state that stays finite is a known gap of
     * the non-finite check. */
    const char *p = write_scene("nan.json", SCENE_HEAD
                                "\"time\": {\"frame_dt\": 0.01, \"frames\": 40, \"dt\": 0.01, "
                                "\"force_dt\": true}," SCENE_BODY "}");
    char args[256];
    snprintf(args, sizeof args, "run %s --out %s/o", p, dir);
    expect(firn(args), FIRN_E_NUMERIC, "non-finite", "blow-up");
    int frame = -1, particle = -1;
    const char *at = strstr(out, ": frame ");
    cr_assert(at && sscanf(at, ": frame %d", &frame) == 1, "no frame named: %s", out);
    at = strstr(out, "particle ");
    cr_assert(at && sscanf(at, "particle %d", &particle) == 1, "no particle named: %s", out);
    cr_assert(frame >= 1 && frame < 40 && particle >= 0, "frame %d particle %d", frame, particle);
    /* Frames before the failing one are complete; the failing one is absent. */
    char name[64];
    for (int f = 0; f < frame; f++) {
        snprintf(name, sizeof name, "o/frame_%05d.ply", f);
        cr_assert(exists(name), "frame %d missing", f);
    }
    snprintf(name, sizeof name, "o/frame_%05d.ply", frame);
    cr_assert(!exists(name), "the non-finite frame %d was written", frame);
    int lines = stats_lines("o/stats.jsonl");
    cr_assert_eq(lines, frame, "%d stats lines for %d finished frames", lines, frame);
}

/* Frames are written on a thread of their own, one frame behind the
 * simulation; a frame whose file cannot be written (here a directory sits
 * where frame 2's PLY goes) still stops the run with an I/O error naming
 * the file, and leaves the frames before it complete and nothing after it. */
Test(cli, failed_frame_write_stops_the_run_and_keeps_earlier_frames)
{
    const char *p =
        write_scene("w.json", SCENE_HEAD "\"time\": {\"frame_dt\": 0.01}," SCENE_BODY "}");
    char cmd[256], args[256];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/o/frame_00002.ply'", dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(args, sizeof args, "run %s --frames 6 --out %s/o --backend cpu", p, dir);
    expect(firn(args), FIRN_E_IO, "frame_00002.ply", "unwritable frame");
    cr_assert(exists("o/frame_00000.ply") && exists("o/frame_00001.ply"), "earlier frames: %s",
              out);
    cr_assert(exists("o/frame_00001.png"), "earlier preview: %s", out);
    cr_assert(!exists("o/frame_00003.ply") && !exists("o/frame_00004.ply"),
              "the run went on writing after the failure: %s", out);
    cr_assert(strstr(out, "done:") == NULL, "reported done: %s", out);
    int lines = stats_lines("o/stats.jsonl");
    cr_assert_eq(lines, 2, "%d stats lines: only frames 0 and 1 were written", lines);
}

/* --every N overrides output.every: frames 0, 2 and 4 of 5, statistics
 * for all 6 states. */
Test(cli, every_n_writes_every_nth_frame_and_all_stats)
{
    const char *p =
        write_scene("e.json", SCENE_HEAD "\"time\": {\"frame_dt\": 0.01}," SCENE_BODY "}");
    char args[256], name[64];
    snprintf(args, sizeof args, "run %s --frames 5 --every 2 --out %s/o --backend cpu", p, dir);
    expect(firn(args), 0, "done:", "--every 2");
    for (int k = 0; k <= 5; k++) {
        snprintf(name, sizeof name, "o/frame_%05d.ply", k);
        cr_assert_eq(exists(name), k % 2 == 0, "frame %d: %s", k,
                     exists(name) ? "written" : "missing");
    }
    cr_assert_eq(stats_lines("o/stats.jsonl"), 6);
}

/* A second, shorter run into the same folder leaves only its own frames:
 * those of the first run past its end are removed (and said so), other
 * files are kept. */
Test(cli, run_replaces_the_frames_of_an_earlier_run)
{
    char p[256], args[600];
    snprintf(p, sizeof p, "%s",
             write_scene("r.json", SCENE_HEAD "\"time\": {\"frame_dt\": 0.01}," SCENE_BODY "}"));
    snprintf(args, sizeof args, "run %s --frames 3 --out %s/o --backend cpu", p, dir);
    expect(firn(args), 0, "done:", "first run");
    cr_assert(exists("o/frame_00003.ply") && exists("o/frame_00003.png"));
    write_scene("o/notes.txt", "mine");
    write_scene("o/frame_3.ply", "not ours: four digits short");
    snprintf(args, sizeof args, "run %s --frames 1 --out %s/o --backend cpu", p, dir);
    expect(firn(args), 0, "removed 8 frame files of an earlier run", "second run");
    for (int k = 0; k <= 3; k++) {
        char name[64];
        snprintf(name, sizeof name, "o/frame_%05d.ply", k);
        cr_assert_eq(exists(name), k <= 1, "%s %s", name, k <= 1 ? "missing" : "left behind");
        snprintf(name, sizeof name, "o/frame_%05d.png", k);
        cr_assert_eq(exists(name), k <= 1, "%s %s", name, k <= 1 ? "missing" : "left behind");
    }
    cr_assert(exists("o/notes.txt") && exists("o/frame_3.ply"), "a file not of firn's was removed");
    cr_assert_eq(stats_lines("o/stats.jsonl"), 2);
}

Test(cli, run_writes_frames_previews_and_stats)
{
    const char *p =
        write_scene("ok.json", SCENE_HEAD "\"time\": {\"frame_dt\": 0.01}," SCENE_BODY "}");
    char args[256];
    snprintf(args, sizeof args, "run %s --frames 2 --out %s/o --backend cpu", p, dir);
    expect(firn(args), 0, "particle-substeps/s", "valid run");
    for (int k = 0; k <= 2; k++) {
        char name[64];
        snprintf(name, sizeof name, "o/frame_%05d.ply", k);
        cr_assert(exists(name), "%s missing", name);
        snprintf(name, sizeof name, "o/frame_%05d.png", k);
        cr_assert(exists(name), "%s missing", name);
    }
    cr_assert(!exists("o/frame_00003.ply"), "--frames 2 wrote a third frame");
}

Test(cli, cuda_backend_without_gpu_is_an_error)
{
    const char *p = write_scene("ok.json", SCENE_HEAD "\"time\": {\"frames\": 1}," SCENE_BODY "}");
    char args[256];
    snprintf(args, sizeof args, "run %s --out %s/o --backend cuda --quiet", p, dir);
    int rc = firn(args);
    if (firn_cuda_device_count() > 0)
        cr_assert_eq(rc, 0, "with a GPU --backend cuda must run:\n%s", out);
    else
        expect(rc, FIRN_E_DEVICE, "--backend cuda", "cuda without a GPU");
}

/* ---- help, standard input, every solver in progress and validate ------------ */

static char big[16384];

/* Runs `firn ARGS` in the test folder; output in big. */
static int firn_in_dir(const char *args) { return test_run_firn(big, sizeof big, dir, args); }

static void expect_big(int rc, int code, const char *needle, const char *what)
{
    cr_assert_eq(rc, code, "%s: exit %d, want %d; output:\n%s", what, rc, code, big);
    cr_assert(strstr(big, needle), "%s: output lacks '%s':\n%s", what, needle, big);
}

Test(cli, each_command_prints_its_help_and_exits_0)
{
    expect(firn("run --help"), 0, "firn run SCENE [--backend", "run --help");
    cr_assert(!strstr(out, "firn compare"), "run --help prints only run's usage:\n%s", out);
    expect(firn("run x.json -h"), 0, "firn run SCENE", "run -h after a scene");
    expect(firn("validate --help"), 0, "firn validate SCENE", "validate --help");
    expect(firn("compare --help"), 0, "firn compare SCENE [--frames N]", "compare --help");
    cr_assert(strstr(out, "- to read it from standard input"), "%s", out);
    expect(firn("--help"), 0, "firn run SCENE", "help");
    const char *tagline = strchr(out, '\n');
    cr_assert(tagline);
    char head[512];
    snprintf(head, sizeof head, "%.*s", (int)(strstr(out, "usage:") - out), out);
    const char *names[] = {"MPM", "SPH", "PBD", "FEM", "rigid bodies", "tools"};
    for (int k = 0; k < 6; k++)
        cr_assert(strstr(head, names[k]), "firn --help's tagline lacks %s:\n%s", names[k], head);
}

Test(cli, info_counts_threads_in_the_singular_and_plural)
{
    expect(firn("info"), 0, "OpenMP thread", "info");
    int rc = test_run(out, sizeof out, "OMP_NUM_THREADS=1 \"${FIRN_BIN:-build/firn}\" info");
    expect(rc, 0, "CPU path: 1 OpenMP thread (", "info with one thread");
    rc = test_run(out, sizeof out, "OMP_NUM_THREADS=3 \"${FIRN_BIN:-build/firn}\" info");
    expect(rc, 0, "CPU path: 3 OpenMP threads (", "info with three threads");
}

/* A unit cube as a Wavefront OBJ. */
static const char *cube_obj = "v -0.5 -0.5 -0.5\nv 0.5 -0.5 -0.5\nv 0.5 0.5 -0.5\nv -0.5 0.5 -0.5\n"
                              "v -0.5 -0.5 0.5\nv 0.5 -0.5 0.5\nv 0.5 0.5 0.5\nv -0.5 0.5 0.5\n"
                              "f 1 4 3\nf 1 3 2\nf 5 6 7\nf 5 7 8\nf 1 2 6\nf 1 6 5\n"
                              "f 4 8 7\nf 4 7 3\nf 1 5 8\nf 1 8 4\nf 2 3 7\nf 2 7 6\n";

Test(cli, dash_reads_the_scene_from_standard_input)
{
    write_scene("cube.obj", cube_obj);
    /* The mesh path is relative: from standard input it is taken from the
     * current directory (the test folder), where cube.obj is. */
    write_scene("s.txt", SCENE_HEAD "\"time\": {\"frame_dt\": 0.01}," SCENE_BODY
                                    ",\"rigids\": [{\"name\": \"m\", \"shape\": {\"type\": "
                                    "\"mesh\", \"file\": \"cube.obj\", \"scale\": 0.2, "
                                    "\"center\": [0.5, 0.15, 0.5]}}]}");
    expect_big(firn_in_dir("validate - < s.txt"), 0, "<stdin>: valid", "validate -");
    cr_assert(strstr(big, "rigid m "), "%s", big);
    expect_big(firn_in_dir("run - --frames 1 --out o --backend cpu < s.txt"), 0,
               "firn: <stdin>: MPM", "run -");
    cr_assert(exists("o/frame_00001.ply"), "run - wrote no frame 1:\n%s", big);
    /* Elsewhere the relative mesh path is not found. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "validate - < %s/s.txt", dir);
    int rc = test_run_firn(big, sizeof big, "/", cmd);
    cr_assert_neq(rc, 0, "the mesh resolved outside the current directory:\n%s", big);
    cr_assert(strstr(big, "cube.obj"), "%s", big);
}

#define FEM_SCENE                                                                                  \
    "{\"domain\": {\"lower\": [0,0,0], \"upper\": [1,1,1], \"dx\": 0.1},"                          \
    "\"time\": {\"frame_dt\": 0.01},"                                                              \
    "\"materials\": {\"jelly\": {\"model\": \"fem_stable_neohookean\", \"E\": 1e5, "               \
    "\"density\": 1000}},"                                                                         \
    "\"bodies\": [{\"material\": \"jelly\", \"solver\": \"fem\", \"shape\": {\"type\": \"box\", "  \
    "\"center\": [0.5,0.5,0.5], \"size\": [0.2,0.2,0.2], \"cells\": [2,3,4]}, \"velocity\": "      \
    "[1,0,0]%s}]%s}"

/* The number after needle in big (which must hold it). */
static double number_after(const char *needle)
{
    const char *p = strstr(big, needle);
    cr_assert(p, "output lacks '%s':\n%s", needle, big);
    return strtod(p + strlen(needle), NULL);
}

Test(cli, fem_only_run_names_fem_in_progress_and_summary)
{
    char json[2048];
    snprintf(json, sizeof json, FEM_SCENE, "", "");
    write_scene("fem.json", json);
    expect_big(firn_in_dir("run fem.json --frames 2 --out o --backend cpu"), 0,
               "firn: FEM: 60 "
               "vertices (144 "
               "elements)",
               "FEM-only run");
    /* 3 x 4 x 5 vertices, 8 kg at 1 m/s: 1/2 m v^2 = 4 J at the start;
     * gravity adds a little in two frames. */
    const char *line = strstr(big, "frame 1/2");
    cr_assert(line, "%s", big);
    cr_assert(!strncmp(strstr(line, "  ") + 2, "FEM 60 v ", 9),
              "frame 1's progress line does not begin with FEM:\n%s", big);
    const char *k = strstr(line, "ke ");
    cr_assert(k, "%s", big);
    const double ke1 = strtod(k + 3, NULL);
    cr_assert(ke1 > 3.9 && ke1 < 4.5, "frame 1's FEM kinetic energy %g J, want about 4:\n%s", ke1,
              big);
    const double kes = number_after("kinetic energy ");
    cr_assert(kes > 3.9 && kes < 4.5, "the summary's FEM kinetic energy %g J:\n%s", kes, big);
    cr_assert(number_after("elements), ") > 0.0, "no FEM throughput:\n%s", big);
    cr_assert(strstr(big, "phases: element forces"), "%s", big);
    cr_assert(!strstr(big, "clear 0.0%"), "MPM phases in a run without MPM:\n%s", big);
    cr_assert(!strstr(big, "particle-substeps/s"), "a particle rate without particles:\n%s", big);
}

Test(cli, sph_only_run_shows_its_phases)
{
    write_scene("sph.json",
                "{\"domain\": {\"lower\": [0,0,0], \"upper\": [0.3,0.3,0.3], \"dx\": 0.02},"
                "\"time\": {\"frame_dt\": 0.005},\"sph\": {\"particle_size\": 0.03},"
                "\"materials\": {\"water\": {\"model\": \"sph_liquid\"}},"
                "\"bodies\": [{\"material\": \"water\", \"solver\": \"sph\", \"shape\": {\"type\": "
                "\"box\", \"center\": [0.15,0.1,0.15], \"size\": [0.15,0.1,0.15]}}]}");
    expect_big(firn_in_dir("run sph.json --frames 1 --out o --backend cpu"), 0,
               "firn: SPH: ", "SPH-only run");
    cr_assert(strstr(big, "phases: neighbour sort "), "%s", big);
    cr_assert(strstr(big, "  SPH "), "the progress line lacks SPH:\n%s", big);
    cr_assert(!strstr(big, "firn: MPM"), "%s", big);
}

Test(cli, validate_prints_fem_tools_keyframes_and_memory_per_solver)
{
    char json[4096];
    snprintf(json, sizeof json, FEM_SCENE,
             ", \"fixed\": {\"indices\": [0, 1]}, \"integrator\": \"implicit\"",
             ",\"tools\": [{\"name\": \"paddle\", \"shape\": {\"type\": \"box\", \"center\": "
             "[0.2,0.8,0.5], \"size\": [0.05,0.1,0.1]}, \"keyframes\": [{\"t\": 0, \"position\": "
             "[0.2,0.8,0.5]}, {\"t\": 1, \"position\": [0.2,0.8,0.5]}, {\"t\": 1.5, "
             "\"position\": [0.4,0.8,0.5]}]}]");
    write_scene("fem.json", json);
    expect_big(firn_in_dir("validate fem.json"), 0,
               "FEM: 60 vertices, 144 elements, 2 fixed vertices", "validate FEM");
    cr_assert(strstr(big, "60 vertices, 144 elements, 2 fixed, implicit"), "%s", big);
    cr_assert(strstr(big, "tool paddle"), "%s", big);
    cr_assert(strstr(big, "keyframes of tool paddle: 3 from t = 0 to 1.5 s, largest speed 0.4 m/s"),
              "%s", big);
    cr_assert(strstr(big, "    FEM "), "no FEM memory line:\n%s", big);
    cr_assert(strstr(big, " B per vertex)"), "%s", big);
    cr_assert(!strstr(big, "jelly            fem_stable_neohookean 0"), "%s", big);
}

Test(cli, validate_estimates_a_cloth_before_building_it)
{
    write_scene("cloth.json",
                "{\"domain\": {\"lower\": [0,0,0], \"upper\": [1,1,1], \"dx\": 0.1},"
                "\"materials\": {\"c\": {\"model\": \"pbd_cloth\"}},"
                "\"bodies\": [{\"material\": \"c\", \"solver\": \"pbd\", \"shape\": {\"type\": "
                "\"cloth_rect\", \"center\": [0.5,0.5,0.5], \"size\": [0.5,0.4], "
                "\"resolution\": [6, 5]}}]}");
    expect_big(firn_in_dir("validate cloth.json"), 0,
               "bodies[0]: a 6 x 5 cloth_rect: 30 vertices, 69 edges, 51 bending constraints",
               "cloth estimate");
    /* Printed before the world is built, and what it builds. */
    cr_assert(strstr(big, "cloth_rect") < strstr(big, ": valid"), "%s", big);
    cr_assert(strstr(big, "30 particles (mass"), "%s", big);
    cr_assert(strstr(big, "69 edges, 51 bending constraints, particle size"), "%s", big);
}

/* ---- render ------------------------------------------------------------------ */

/* Runs `firn ARGS` from the test folder with the environment env (PATH=...
 * and the like) before it; as firn(). */
static int firn_env(const char *env, const char *args)
{
    const char *bin = getenv("FIRN_BIN") ? getenv("FIRN_BIN") : "build/firn";
    char abs[PATH_MAX], cmd[PATH_MAX + 2048];
    cr_assert(realpath(bin, abs), "no firn binary at %s (set FIRN_BIN)", bin);
    snprintf(cmd, sizeof cmd, "cd '%s' && %s %s %s", dir, env, abs, args);
    return test_run(out, sizeof out, cmd);
}

/* The contents of file name in the test folder (at most size - 1 bytes). */
static const char *slurp(const char *name, char *buf, size_t size)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    const size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The line after the line `key` in the argument list args (one a line). */
static const char *arg_after(const char *args, const char *key, char *value, size_t size)
{
    char k[64];
    snprintf(k, sizeof k, "\n%s\n", key);
    const char *p = strstr(args, k);
    cr_assert(p, "no argument %s in:\n%s", key, args);
    p += strlen(k);
    const size_t n = strcspn(p, "\n");
    snprintf(value, size, "%.*s", (int)n, p);
    return value;
}

/* firn render through a stand-in ffmpeg first on PATH, which records its
 * arguments, its folder and the files its numbered input links to, and
 * writes its output: a run with --every 2 over 5 frames of 0.02 s leaves
 * previews 0, 2 and 4, which go in as a gap-free sequence at the run's
 * pace, 1 / (2 x 0.02 s) = 25 frames/s; --fps and --out replace both; a
 * failing ffmpeg is an I/O error naming its status; without ffmpeg on PATH
 * the message says how to install it. No real ffmpeg is needed. */
Test(cli, render_makes_an_mp4_of_the_previews_through_ffmpeg)
{
    const char *scene = write_scene(
        "r.json", "{\"domain\": {\"lower\": [0,0,0], \"upper\": [1,1,1], \"dx\": 0.1},"
                  "\"time\": {\"frame_dt\": 0.02},"
                  "\"materials\": {\"j\": {\"model\": \"elastic\", \"E\": 1e5}},"
                  "\"bodies\": [{\"material\": \"j\", \"shape\": {\"type\": \"box\", \"center\": "
                  "[0.5,0.5,0.5], \"size\": [0.3,0.3,0.3]}}]}");
    char run[512], args[512], full[PATH_MAX], real[256], env[320], buf[4096], v[256], want[320];
    snprintf(run, sizeof run, "run %s --frames 5 --every 2 --out %s/run --quiet", scene, dir);
    expect(firn(run), 0, "", "the run to render");
    cr_assert(realpath(dir, full) && strlen(full) < sizeof real, "%s", full);
    snprintf(real, sizeof real, "%s", full);
    snprintf(args, sizeof args, "%s/bin", dir);
    cr_assert_eq(mkdir(args, 0755), 0);
    snprintf(args, sizeof args, "%s/bin/ffmpeg", dir);
    FILE *f = fopen(args, "w");
    cr_assert(f);
    fprintf(f,
            "#!/bin/sh\n"
            "printf '\\n%%s' \"$@\" > %s/ffmpeg_args.txt\n"
            "pwd > %s/ffmpeg_cwd.txt\n"
            "for f in *.png; do readlink \"$f\"; done > %s/ffmpeg_frames.txt\n"
            "for a; do last=$a; done\n"
            "echo fake > \"$last\"\n"
            "exit ${FAKE_STATUS:-0}\n",
            real, real, real);
    fclose(f);
    cr_assert_eq(chmod(args, 0755), 0);
    snprintf(env, sizeof env, "PATH='%s/bin:/usr/bin:/bin'", real);

    expect(firn_env(env, "render run"), 0, "run: 3 previews (frames 0 to 4) at 25 frames/s",
           "render");
    slurp("ffmpeg_args.txt", buf, sizeof buf);
    strcat(buf, "\n");
    const double fps = atof(arg_after(buf, "-framerate", v, sizeof v));
    cr_assert(fabs(fps - 25.0) < 25.0 * 1e-5, "-framerate %s, want 25 (1 / 0.04 s)", v);
    cr_assert_str_eq(arg_after(buf, "-i", v, sizeof v), "%06d.png");
    cr_assert_str_eq(arg_after(buf, "-c:v", v, sizeof v), "libx264");
    cr_assert_str_eq(arg_after(buf, "-pix_fmt", v, sizeof v), "yuv420p");
    snprintf(want, sizeof want, "\n%s/run/preview.mp4\n", real);
    cr_assert(strstr(buf, want) && !strcmp(strstr(buf, want), want), "the output is not last:%s",
              buf);
    cr_assert_str_eq(slurp("ffmpeg_frames.txt", buf, sizeof buf),
                     "../frame_00000.png\n../frame_00002.png\n../frame_00004.png\n");
    snprintf(want, sizeof want, "%s/run/.render-", real);
    cr_assert(!strncmp(slurp("ffmpeg_cwd.txt", buf, sizeof buf), want, strlen(want)), "%s", buf);
    cr_assert(exists("run/preview.mp4"));
    buf[strcspn(buf, "\n")] = '\0';
    struct stat st;
    cr_assert(stat(buf, &st) != 0, "the links' folder %s is left behind", buf);

    /* --fps and a relative --out (from the current folder). */
    expect(firn_env(env, "render run --fps 12.5 --out movie.mp4"), 0, "at 12.5 frames/s", "--fps");
    slurp("ffmpeg_args.txt", buf, sizeof buf);
    strcat(buf, "\n");
    cr_assert_str_eq(arg_after(buf, "-framerate", v, sizeof v), "12.5");
    snprintf(want, sizeof want, "\n%s/movie.mp4\n", real);
    cr_assert(strstr(buf, want), "%s", buf);
    cr_assert(exists("movie.mp4"));

    /* A failing ffmpeg. */
    snprintf(args, sizeof args, "FAKE_STATUS=3 %s", env);
    expect(firn_env(args, "render run"), FIRN_E_IO, "exited with status 3", "ffmpeg failing");

    /* No ffmpeg on PATH. */
    snprintf(args, sizeof args, "PATH='%s'", real);
    expect(firn_env(args, "render run"), FIRN_E_IO, "ffmpeg is not on PATH", "no ffmpeg");
    cr_assert(strstr(out, "apt-get install ffmpeg"), "%s", out);

    /* Argument errors. */
    expect(firn_env(env, "render"), FIRN_E_USAGE, "missing RUN_DIR", "no folder");
    expect(firn_env(env, "render run --fps 0"), FIRN_E_USAGE, "--fps expects a positive number",
           "zero fps");
    expect(firn_env(env, "render run other"), FIRN_E_USAGE, "unexpected argument 'other'",
           "two folders");
    expect(firn_env(env, "render nope"), FIRN_E_IO, "cannot open the run folder 'nope'",
           "missing folder");
    expect(firn_env(env, "render bin"), FIRN_E_IO, "'bin' holds no previews (frame_NNNNN.png)",
           "a folder without previews");
    /* Without stats.jsonl the pace is unknown, unless --fps gives it. */
    snprintf(args, sizeof args, "%s/run/stats.jsonl", dir);
    cr_assert_eq(unlink(args), 0);
    expect(firn_env(env, "render run"), FIRN_E_IO, "run/stats.jsonl", "no stats.jsonl");
    cr_assert(strstr(out, "give --fps"), "%s", out);
    expect(firn_env(env, "render run --fps 30"), 0, "at 30 frames/s", "no stats.jsonl, --fps");
    expect(firn("render --help"), 0, "firn render RUN_DIR [--fps X] [--out FILE]", "help");
    expect(firn("--help"), 0, "firn render RUN_DIR", "the command list");
}
