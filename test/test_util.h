/* test_util.h - helpers the end-to-end tests share: a private temporary
 * folder per test, and running the firn binary (FIRN_BIN, default
 * build/firn) with its output captured. */
#ifndef FIRN_TEST_UTIL_H
#define FIRN_TEST_UTIL_H

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "firn.h"

/* Makes /tmp/firn_<tag>_XXXXXX into dir (at least 64 bytes). */
static inline void test_mkdtemp(char *dir, size_t size, const char *tag)
{
    snprintf(dir, size, "/tmp/firn_%s_XXXXXX", tag);
    cr_assert(mkdtemp(dir), "mkdtemp %s", dir);
}

static inline void test_rmdir(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Runs the shell command cmd and returns its exit status; stdout and
 * stderr together go to out. */
static inline int test_run(char *out, size_t size, const char *cmd)
{
    char full[PATH_MAX + 2560];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *f = popen(full, "r");
    cr_assert(f, "cannot run %s", cmd);
    size_t n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    cr_assert(WIFEXITED(st), "%s did not exit normally", cmd);
    return WEXITSTATUS(st);
}

/* Runs `firn ARGS` (in folder cwd when not NULL) and returns its exit
 * status; stdout and stderr together go to out. */
static inline int test_run_firn(char *out, size_t size, const char *cwd, const char *args)
{
    const char *bin = getenv("FIRN_BIN") ? getenv("FIRN_BIN") : "build/firn";
    char abs[PATH_MAX], cmd[PATH_MAX + 2048];
    cr_assert(realpath(bin, abs), "no firn binary at %s (set FIRN_BIN)", bin);
    if (cwd)
        snprintf(cmd, sizeof cmd, "cd '%s' && %s %s", cwd, abs, args);
    else
        snprintf(cmd, sizeof cmd, "%s %s", abs, args);
    return test_run(out, size, cmd);
}

/* A world on backend from scene text json (named name in its messages);
 * the test stops with the parser's or the world's message if either fails.
 * test_world_json: on the CPU. */
static inline firn_world *test_world_json_on(const char *json, const char *name,
                                             firn_backend backend)
{
    firn_scene_def def;
    firn_error err;
    cr_assert_eq(firn_scene_parse_json(json, name, &def, &err), 0, "%s", err.msg);
    firn_world *w = firn_world_create(&def, backend, &err);
    cr_assert(w, "%s: %s", name, err.msg);
    return w;
}

static inline firn_world *test_world_json(const char *json, const char *name)
{
    return test_world_json_on(json, name, FIRN_BACKEND_CPU);
}

/* Steps w by `frames` frames into *st (the last frame's stats); the test
 * stops on the first failed frame, naming what (a case) and the frame. */
static inline void test_step_frames(firn_world *w, int frames, firn_frame_stats *st,
                                    const char *what)
{
    firn_error err;
    for (int f = 0; f < frames; f++)
        cr_assert_eq(firn_world_step_frame(w, st, &err), 0, "%s, frame %d: %s", what, f, err.msg);
}

#endif
