/* test_cli.c - the command-line tool end to end: each class of bad input
 * gets its message and exit code, a run writes its frames and statistics,
 * and a run that goes non-finite stops, names the frame and particle, and
 * keeps what it wrote before. */
#include <criterion/criterion.h>
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
    /* Courant number 3.3: the elastic block blows up within a few frames. */
    const char *p = write_scene("nan.json", SCENE_HEAD
                                "\"time\": {\"frame_dt\": 0.01, \"frames\": 40, \"dt\": 0.005, "
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
