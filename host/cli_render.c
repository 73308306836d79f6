/* cli_render.c - `firn render`: a run folder's previews (frame_K.png) into
 * an MP4 with ffmpeg, in frame order at the run's pace. ffmpeg reads a
 * numbered sequence without gaps, and a run with --every writes every
 * N-th frame, so the previews are linked as 000000.png, 000001.png, ...
 * in a temporary folder inside the run folder first. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "error.h"

/* Frames played per second when the run gives no pace (a single preview). */
#define RENDER_DEFAULT_FPS 25.0

static int cmp_long(const void *pa, const void *pb)
{
    const long a = *(const long *)pa, b = *(const long *)pb;
    return a < b ? -1 : a > b;
}

/* The frame indices of dir's previews, ascending, into *out (malloc'd). */
static int list_previews(const char *dir, long **out, int *n, firn_error *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        firn_set_error(err, FIRN_E_IO, "render: cannot open the run folder '%s': %s", dir,
                       strerror(errno));
        return -1;
    }
    long *k = NULL;
    int cap = 0;
    *n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const long f = firn_cli_indexed_name(e->d_name, "frame_", ".png");
        if (f < 0)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            long *grown = realloc(k, (size_t)cap * sizeof *k);
            if (!grown) {
                free(k);
                closedir(d);
                firn_set_error(err, FIRN_E_NOMEM, "render: out of memory listing '%s'", dir);
                return -1;
            }
            k = grown;
        }
        k[(*n)++] = f;
    }
    closedir(d);
    if (*n == 0) {
        free(k);
        firn_set_error(err, FIRN_E_IO,
                       "render: '%s' holds no previews (frame_NNNNN.png): not a run folder, or "
                       "its run wrote none (output.preview false)",
                       dir);
        return -1;
    }
    qsort(k, (size_t)*n, sizeof *k, cmp_long);
    *out = k;
    return 0;
}

/* Frames per second that play the previews at the run's pace: their
 * count less one over the simulated time from the first to the last, the
 * times read from the folder's stats.jsonl. */
static int run_pace(const char *dir, const long *k, int n, double *fps, firn_error *err)
{
    if (n == 1) {
        *fps = RENDER_DEFAULT_FPS;
        return 0;
    }
    char path[FIRN_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        firn_set_error(err, FIRN_E_IO,
                       "render: cannot read '%s' (%s), which gives the frames' times; give "
                       "--fps",
                       path, strerror(errno));
        return -1;
    }
    double t[2] = {0.0, 0.0};
    int found[2] = {0, 0};
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        int frame;
        double time;
        if (sscanf(line, "{\"frame\":%d,\"time\":%lf", &frame, &time) != 2)
            continue;
        for (int e = 0; e < 2; e++)
            if (frame == k[e ? n - 1 : 0])
                t[e] = time, found[e] = 1;
    }
    free(line);
    fclose(f);
    for (int e = 0; e < 2; e++)
        if (!found[e]) {
            firn_set_error(err, FIRN_E_IO,
                           "render: '%s' has no line for frame %ld, whose preview is there; give "
                           "--fps",
                           path, k[e ? n - 1 : 0]);
            return -1;
        }
    if (!(t[1] > t[0])) {
        firn_set_error(err, FIRN_E_IO,
                       "render: '%s' gives frames %ld and %ld the times %g and %g s, not "
                       "increasing; give --fps",
                       path, k[0], k[n - 1], t[0], t[1]);
        return -1;
    }
    *fps = (n - 1) / (t[1] - t[0]);
    return 0;
}

/* The first executable file named ffmpeg in PATH's folders, into path. */
static int find_ffmpeg(char *path, size_t size)
{
    const char *p = getenv("PATH");
    if (!p)
        return -1;
    while (*p) {
        const char *end = strchr(p, ':');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        snprintf(path, size, "%.*s/ffmpeg", len ? (int)len : 1, len ? p : ".");
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0)
            return 0;
        p += len + (end != NULL);
    }
    return -1;
}

/* Links tmp/000000.png, ... to the previews; removes them and tmp. */
static int link_previews(const char *tmp, const long *k, int n, firn_error *err)
{
    char link[FIRN_PATH_MAX + 64], target[64];
    for (int i = 0; i < n; i++) {
        snprintf(link, sizeof link, "%s/%06d.png", tmp, i);
        snprintf(target, sizeof target, "../frame_%05ld.png", k[i]);
        if (symlink(target, link)) {
            firn_set_error(err, FIRN_E_IO, "render: cannot make the link '%s': %s", link,
                           strerror(errno));
            return -1;
        }
    }
    return 0;
}

static void remove_links(const char *tmp, int n)
{
    char link[FIRN_PATH_MAX + 64];
    for (int i = 0; i < n; i++) {
        snprintf(link, sizeof link, "%s/%06d.png", tmp, i);
        unlink(link);
    }
    rmdir(tmp);
}

/* Runs ffmpeg (at exe) on the linked sequence in tmp, from inside tmp (a
 * '%' in the run folder's path would read as a pattern); out is absolute.
 * 0, or -1 with err set. */
static int run_ffmpeg(const char *exe, const char *tmp, double fps, const char *out,
                      firn_error *err)
{
    char rate[32];
    snprintf(rate, sizeof rate, "%.9g", fps);
    /* yuv420p, which players expect, needs an even width and height. */
    char *const args[] = {"ffmpeg",
                          "-hide_banner",
                          "-loglevel",
                          "error",
                          "-y",
                          "-framerate",
                          rate,
                          "-i",
                          "%06d.png",
                          "-vf",
                          "pad=ceil(iw/2)*2:ceil(ih/2)*2",
                          "-c:v",
                          "libx264",
                          "-pix_fmt",
                          "yuv420p",
                          (char *)out,
                          NULL};
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) {
        firn_set_error(err, FIRN_E_IO, "render: cannot start ffmpeg: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        if (chdir(tmp)) {
            fprintf(stderr, "firn: error: render: cannot enter '%s': %s\n", tmp, strerror(errno));
            _exit(127);
        }
        execv(exe, args);
        fprintf(stderr, "firn: error: render: cannot run '%s': %s\n", exe, strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            firn_set_error(err, FIRN_E_IO, "render: waiting for ffmpeg: %s", strerror(errno));
            return -1;
        }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        firn_set_error(err, FIRN_E_IO, "render: ffmpeg ('%s') exited with status %d making '%s'",
                       exe, WEXITSTATUS(status), out);
    else
        firn_set_error(err, FIRN_E_IO, "render: ffmpeg ('%s') was killed by signal %d making '%s'",
                       exe, WTERMSIG(status), out);
    return -1;
}

int firn_cli_render(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage:\n%s", FIRN_USAGE_RENDER);
            return 0;
        }
    const char *dir = NULL, *out_arg = NULL;
    double fps = 0.0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--fps") || !strcmp(argv[i], "--out")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "firn render: %s expects a value\n", argv[i]);
                return FIRN_E_USAGE;
            }
            if (!strcmp(argv[i], "--out")) {
                out_arg = argv[++i];
                continue;
            }
            char *end;
            fps = strtod(argv[++i], &end);
            if (*end || end == argv[i] || !(fps > 0.0) || fps > 1e6) {
                fprintf(stderr,
                        "firn render: --fps expects a positive number of frames per "
                        "second (at most 1e6), not '%s'\n",
                        argv[i]);
                return FIRN_E_USAGE;
            }
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "firn render: unknown option '%s'\n\nusage:\n%s", argv[i],
                    FIRN_USAGE_RENDER);
            return FIRN_E_USAGE;
        } else if (dir) {
            fprintf(stderr, "firn render: unexpected argument '%s' (one RUN_DIR)\n", argv[i]);
            return FIRN_E_USAGE;
        } else {
            dir = argv[i];
        }
    }
    if (!dir) {
        fprintf(stderr, "firn render: missing RUN_DIR\n\nusage:\n%s", FIRN_USAGE_RENDER);
        return FIRN_E_USAGE;
    }
    if (strlen(dir) >= FIRN_PATH_MAX - 32 || (out_arg && strlen(out_arg) >= FIRN_PATH_MAX)) {
        fprintf(stderr, "firn render: %s is longer than %d characters\n",
                out_arg && strlen(out_arg) >= FIRN_PATH_MAX ? "--out" : "RUN_DIR",
                FIRN_PATH_MAX - 32);
        return FIRN_E_USAGE;
    }
    firn_error err = {0};
    long *k = NULL;
    int n = 0;
    if (list_previews(dir, &k, &n, &err))
        return firn_cli_fail(&err);
    if (!(fps > 0.0) && run_pace(dir, k, n, &fps, &err)) {
        free(k);
        return firn_cli_fail(&err);
    }
    char exe[4096];
    if (find_ffmpeg(exe, sizeof exe)) {
        free(k);
        firn_set_error(&err, FIRN_E_IO,
                       "render: ffmpeg is not on PATH; install it (Debian or Ubuntu: apt-get "
                       "install ffmpeg, the package 'ffmpeg') and run firn render again");
        return firn_cli_fail(&err);
    }
    /* ffmpeg runs in tmp, so the output is made absolute. */
    char given[FIRN_PATH_MAX + 16], cwd[FIRN_PATH_MAX], out[2 * FIRN_PATH_MAX + 32];
    char tmp[FIRN_PATH_MAX + 32];
    snprintf(given, sizeof given, "%s", out_arg ? out_arg : "");
    if (!out_arg)
        snprintf(given, sizeof given, "%s/preview.mp4", dir);
    if (given[0] != '/' && !getcwd(cwd, sizeof cwd)) {
        free(k);
        firn_set_error(&err, FIRN_E_IO, "render: cannot read the current folder: %s",
                       strerror(errno));
        return firn_cli_fail(&err);
    }
    snprintf(out, sizeof out, "%s%s%s", given[0] == '/' ? "" : cwd, given[0] == '/' ? "" : "/",
             given);
    snprintf(tmp, sizeof tmp, "%s/.render-XXXXXX", dir);
    if (!mkdtemp(tmp)) {
        free(k);
        firn_set_error(&err, FIRN_E_IO, "render: cannot make a temporary folder in '%s': %s", dir,
                       strerror(errno));
        return firn_cli_fail(&err);
    }
    int rc = link_previews(tmp, k, n, &err) || run_ffmpeg(exe, tmp, fps, out, &err);
    remove_links(tmp, n);
    if (rc == 0)
        printf("%s: %d previews (frames %ld to %ld) at %.6g frames/s -> %s\n", dir, n, k[0],
               k[n - 1], fps, out);
    free(k);
    return rc ? firn_cli_fail(&err) : 0;
}
