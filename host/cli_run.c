/* cli_run.c - `firn run`: simulate a scene, write frames and statistics,
 * show progress; write checkpoints (periodically, and on SIGINT, SIGTERM or
 * SIGHUP) and resume from one; hold the output folder's lock. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cuda_backend.h"
#include "error.h"
#include "fem.h"
#include "frame_writer.h"
#include "inspect.h"
#include "output.h"

long firn_cli_indexed_name(const char *name, const char *prefix, const char *suffix)
{
    const size_t np = strlen(prefix);
    if (strncmp(name, prefix, np))
        return -1;
    const char *d = name + np, *e = d;
    while (*e >= '0' && *e <= '9')
        e++;
    if (e - d < 5 || e - d > 9 || strcmp(e, suffix))
        return -1;
    return strtol(d, NULL, 10);
}

/* A frame file's index (frame_K.ply, frame_K.png, sph_K.ply, pbd_K.ply,
 * fem_K.ply, fem_K.vtu, rigids_K.ply, tools_K.ply), else -1. */
static long frame_file_index(const char *name)
{
    long k = firn_cli_indexed_name(name, "frame_", ".ply");
    if (k < 0)
        k = firn_cli_indexed_name(name, "frame_", ".png");
    if (k < 0)
        k = firn_cli_indexed_name(name, "sph_", ".ply");
    if (k < 0)
        k = firn_cli_indexed_name(name, "pbd_", ".ply");
    if (k < 0)
        k = firn_cli_indexed_name(name, "fem_", ".ply");
    if (k < 0)
        k = firn_cli_indexed_name(name, "fem_", ".vtu");
    if (k < 0)
        k = firn_cli_indexed_name(name, "rigids_", ".ply");
    if (k < 0)
        k = firn_cli_indexed_name(name, "tools_", ".ply");
    return k;
}

/* A checkpoint's frame (checkpoint_K.firn), else -1. */
static long checkpoint_index(const char *name)
{
    return firn_cli_indexed_name(name, "checkpoint_", ".firn");
}

/* The temporary of a checkpoint write that a killed run left: a name
 * "checkpoint_K.firn.tmp.<pid>". */
static int is_checkpoint_temporary(const char *name)
{
    const char *t = strstr(name, ".firn.tmp.");
    char base[256];
    if (!t || (size_t)(t - name) + 5 >= sizeof base)
        return 0;
    snprintf(base, sizeof base, "%.*s", (int)(t - name) + 5, name);
    return checkpoint_index(base) >= 0;
}

/* What remove_files removes: the frame files and checkpoints with an index
 * above `after` (-1: all), and the temporaries of checkpoint writes a killed
 * run left. */
typedef struct {
    int frames, checkpoints, temporaries;
} removed_files;

/* Removes the regular files of an earlier run that come after frame
 * `after` from dir (see removed_files), so that the folder holds this run's
 * frames only (a shorter or failed run would otherwise sit next to the
 * later frames of the one before). 0, or -1 with err filled. */
static int remove_files(const char *dir, long after, removed_files *r, firn_error *err)
{
    memset(r, 0, sizeof *r);
    DIR *d = opendir(dir);
    if (!d) {
        firn_set_error(err, FIRN_E_IO, "cannot list %s: %s", dir, strerror(errno));
        return -1;
    }
    for (struct dirent *e; (e = readdir(d));) {
        const long fk = frame_file_index(e->d_name), ck = checkpoint_index(e->d_name);
        const int tmp = is_checkpoint_temporary(e->d_name);
        if (fk <= after && ck <= after && !tmp)
            continue;
        char path[FIRN_PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) || !S_ISREG(st.st_mode))
            continue; /* not a file this run could have written: left alone */
        if (unlink(path) == 0) {
            r->frames += fk > after;
            r->checkpoints += ck > after;
            r->temporaries += tmp;
        } else if (errno != ENOENT) {
            firn_set_error(err, FIRN_E_IO, "cannot remove %s of an earlier run: %s", path,
                           strerror(errno));
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    return 0;
}

/* The frames of the newest checkpoints in dir (at most max), newest
 * first, into k; their count, or -1 with err filled. */
static int list_checkpoints(const char *dir, long *k, int max, firn_error *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        firn_set_error(err, FIRN_E_IO, "cannot list %s: %s", dir, strerror(errno));
        return -1;
    }
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        long f = checkpoint_index(e->d_name);
        if (f < 0 || (n == max && f <= k[max - 1]))
            continue;
        int at = n < max ? n++ : max - 1; /* when full, the oldest goes */
        while (at > 0 && k[at - 1] < f) { /* insertion, newest first */
            k[at] = k[at - 1];
            at--;
        }
        k[at] = f;
    }
    closedir(d);
    return n;
}

static void checkpoint_path(char *path, size_t size, const char *dir, long frame)
{
    snprintf(path, size, "%s/checkpoint_%05ld.firn", dir, frame);
}

int firn_cli_fail(const firn_error *err)
{
    fprintf(stderr, "firn: error: %s\n", err->msg);
    return err->code ? (int)err->code : 1;
}

int firn_cli_help(int argc, char **argv, const char *text)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage:\n%s\n%s", text, FIRN_USAGE_SCENE);
            return 1;
        }
    return 0;
}

int firn_cli_load_scene(const char *path, firn_scene_def *def, firn_error *err)
{
    if (strcmp(path, "-"))
        return firn_scene_load_json(path, def, err);
    /* The loader's limits (scene.c): at most FIRN_SCENE_MAX_BYTES, no NUL. */
    size_t len = 0, cap = 65536;
    char *text = malloc(cap);
    for (;;) {
        if (!text) {
            firn_set_error(err, FIRN_E_NOMEM, "<stdin>: out of memory reading it");
            return FIRN_E_NOMEM;
        }
        if (len > FIRN_SCENE_MAX_BYTES) {
            free(text);
            firn_set_error(err, FIRN_E_SCENE, "<stdin>: longer than %d MiB; not a scene",
                           FIRN_SCENE_MAX_BYTES >> 20);
            return FIRN_E_SCENE;
        }
        if (cap - len < 4096) {
            char *grown = realloc(text, 2 * cap);
            if (!grown)
                free(text);
            text = grown;
            cap *= 2;
            continue;
        }
        size_t got = fread(text + len, 1, cap - len - 1, stdin);
        if (memchr(text + len, '\0', got)) {
            free(text);
            firn_set_error(err, FIRN_E_SCENE, "<stdin>: contains a NUL byte; not a JSON text");
            return FIRN_E_SCENE;
        }
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(stdin)) {
        free(text);
        firn_set_error(err, FIRN_E_IO, "<stdin>: cannot read: %s", strerror(errno));
        return FIRN_E_IO;
    }
    text[len] = '\0';
    /* A name without a folder: relative mesh paths are taken from the
     * current directory. */
    int rc = firn_scene_parse_json(text, "<stdin>", def, err);
    free(text);
    return rc;
}

int firn_cli_p2g(const char *name, int *out)
{
    if (!name)
        return -1;
    if (!strcmp(name, "atomic"))
        *out = FIRN_P2G_ATOMIC;
    else if (!strcmp(name, "binned"))
        *out = FIRN_P2G_BINNED;
    else if (!strcmp(name, "auto"))
        *out = FIRN_P2G_AUTO;
    else if (!strcmp(name, "warp"))
        *out = FIRN_P2G_WARP;
    else if (!strcmp(name, "ordered"))
        *out = FIRN_P2G_ORDERED;
    else if (!strcmp(name, "g2p2g"))
        *out = FIRN_P2G_G2P2G;
    else
        return -1;
    return 0;
}

int firn_cli_grid(const char *name, int *out)
{
    if (!name)
        return -1;
    if (!strcmp(name, "auto"))
        *out = FIRN_GRID_AUTO;
    else if (!strcmp(name, "dense"))
        *out = FIRN_GRID_DENSE;
    else if (!strcmp(name, "sparse"))
        *out = FIRN_GRID_SPARSE;
    else
        return -1;
    return 0;
}

int firn_cli_graphs(const char *name, int *out)
{
    if (!name)
        return -1;
    if (!strcmp(name, "auto"))
        *out = FIRN_GRAPHS_AUTO;
    else if (!strcmp(name, "on"))
        *out = FIRN_GRAPHS_ON;
    else if (!strcmp(name, "off"))
        *out = FIRN_GRAPHS_OFF;
    else
        return -1;
    return 0;
}

int firn_cli_backend(const char *name, firn_backend *out)
{
    if (!strcmp(name, "auto"))
        *out = FIRN_BACKEND_AUTO;
    else if (!strcmp(name, "cpu"))
        *out = FIRN_BACKEND_CPU;
    else if (!strcmp(name, "cuda"))
        *out = FIRN_BACKEND_CUDA;
    else
        return -1;
    return 0;
}

int firn_cli_int_said(const char *opt, const char *value, int *out, int say)
{
    char *end;
    errno = 0;
    long v = value ? strtol(value, &end, 10) : 0;
    if (!value || errno || *end || v < 1 || v > 100000000) {
        if (say)
            fprintf(stderr, "firn: %s expects a positive integer, got '%s'\n", opt,
                    value ? value : "");
        return -1;
    }
    *out = (int)v;
    return 0;
}

int firn_cli_int(const char *opt, const char *value, int *out)
{
    return firn_cli_int_said(opt, value, out, 1);
}

int firn_mkdirs(const char *path, firn_error *err)
{
    char buf[FIRN_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        firn_set_error(err, FIRN_E_IO, "output directory path too long: %s", path);
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0777) && errno != EEXIST) {
                firn_set_error(err, FIRN_E_IO, "cannot create output directory %s: %s", buf,
                               strerror(errno));
                return -1;
            }
            *p = c;
            if (!c)
                break;
        }
    }
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
        firn_set_error(err, FIRN_E_IO, "output path %s exists and is not a directory", path);
        return -1;
    }
    return 0;
}

static void format_count(double v, char *buf, size_t size)
{
    if (v >= 1e9)
        snprintf(buf, size, "%.2fG", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, size, "%.2fM", v / 1e6);
    else if (v >= 1e3)
        snprintf(buf, size, "%.1fk", v / 1e3);
    else
        snprintf(buf, size, "%.0f", v);
}

/* The largest magnitude of the tools' mean force over the frame [N]. */
static double tool_force(const firn_frame_stats *s)
{
    double f = 0.0;
    for (int k = 0; k < s->n_tools && k < FIRN_MAX_TOOLS; k++) {
        const float *m = s->tools[k].force_mean;
        f = fmax(f, sqrt((double)m[0] * m[0] + (double)m[1] * m[1] + (double)m[2] * m[2]));
    }
    return f;
}

/* Each active solver's count, throughput (its entities times `substeps`
 * over `seconds`; left out when seconds is 0) and kinetic energy into buf,
 * e.g. "MPM 8000 p 1.2e+06/s ke 0.5 J  FEM 125 v 2.6e+05/s ke 2.25 J  rigid
 * 1 ke 0.1 J  tools 1 F 3.2 N" (p: particles, v: vertices; rigid: the
 * dynamic bodies' energy; tools: the largest mean force on one over the
 * frame); compact counts on a terminal. */
static void solver_parts(firn_world *w, const firn_frame_stats *s, long long substeps,
                         double seconds, int tty, char *buf, size_t size)
{
    const struct {
        const char *name, *unit;
        long long n;
        double ke;
    } part[4] = {{"MPM", "p", s->particles, s->kinetic_energy},
                 {"SPH", "p", s->sph.particles, s->sph.kinetic_energy},
                 {"PBD", "p", s->pbd.particles, s->pbd.kinetic_energy},
                 {"FEM", "v", s->fem.vertices, s->fem.kinetic_energy}};
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < 4 && at < size; k++) {
        if (part[k].n <= 0)
            continue;
        const double rate = seconds > 0.0 ? (double)part[k].n * substeps / seconds : 0.0;
        char n[32], r[48] = "";
        format_count((double)part[k].n, n, sizeof n);
        if (seconds > 0.0 && tty) {
            char c[32];
            format_count(rate, c, sizeof c);
            snprintf(r, sizeof r, " %s/s", c);
        } else if (seconds > 0.0) {
            snprintf(r, sizeof r, " %.4g/s", rate);
        }
        if (tty)
            at += snprintf(buf + at, size - at, "%s%s %s%s ke %.3g J", at ? "  " : "", part[k].name,
                           n, r, part[k].ke);
        else
            at += snprintf(buf + at, size - at, "%s%s %lld %s%s ke %.4g J", at ? "  " : "",
                           part[k].name, part[k].n, part[k].unit, r, part[k].ke);
    }
    if (s->n_rigids > 0 && at < size)
        at += snprintf(buf + at, size - at, "%srigid %d ke %.4g J", at ? "  " : "", s->n_rigids,
                       firn_inspect_rigid_kinetic_energy(w));
    if (s->n_tools > 0 && at < size)
        snprintf(buf + at, size - at, "%stools %d F %.4g N", at ? "  " : "", s->n_tools,
                 tool_force(s));
}

/* `first`: the frame the run started from (a resumed run's checkpoint). */
static void progress(firn_world *w, int tty, const firn_frame_stats *s, int first, int frames,
                     double elapsed)
{
    char parts[512];
    solver_parts(w, s, s->frame_substeps, s->wall_seconds, tty, parts, sizeof parts);
    const int done_here = s->frame - first;
    double left = done_here > 0 ? elapsed / done_here * (frames - s->frame) : 0.0;
    if (tty) {
        int width = 24, done = frames > 0 ? width * s->frame / frames : width;
        char bar[64];
        for (int i = 0; i < width; i++)
            bar[i] = i < done ? '#' : '.';
        bar[width] = '\0';
        fprintf(stderr, "\r[%s] frame %d/%d  substeps %lld  %s  left %d:%02d ", bar, s->frame,
                frames, s->substeps, parts, (int)left / 60, (int)left % 60);
        fflush(stderr);
    } else {
        fprintf(stderr, "frame %d/%d substeps %lld (+%d, dt %.3g s)  %s  left %.0f s\n", s->frame,
                frames, s->substeps, s->frame_substeps, s->dt, parts, left);
    }
}

/* Hands frame s to the writer, with the particles when the frame is one
 * that writes them (the download from the GPU happens here). */
static int submit_frame(firn_frame_writer *fw, firn_world *w, const firn_scene_def *def,
                        const firn_frame_stats *s, firn_error *err)
{
    const int files = s->frame % def->out_every == 0 && (def->write_ply || def->write_preview);
    return firn_frame_writer_submit(fw, w, files, s, err);
}

/* Without --checkpoint-every: a checkpoint after the first frame that ends
 * this long after the run's start or the last checkpoint [s], so runs
 * shorter than that write none. */
#define DEFAULT_CHECKPOINT_SECONDS 600.0

typedef struct {
    const char *scene, *out;
    firn_backend backend;
    int frames, every, quiet;
    int p2g;               /* --p2g (firn_p2g_variant), -1: the scene default's */
    int deterministic;     /* --deterministic: --p2g ordered, and the scene must allow it */
    int grid;              /* --grid (firn_grid_mode), -1: auto */
    int graphs;            /* --graphs (firn_graph_mode), -1: auto */
    int ckpt_frames;       /* checkpoint every this many frames (0: by time or never) */
    double ckpt_seconds;   /* checkpoint when this much wall time has passed (0: never) */
    int resume;            /* --resume given */
    const char *ckpt_path; /* --resume's CHECKPOINT, or NULL: the newest in the folder */
} run_opts;

/* --checkpoint-every's value: N frames, N followed by s, m or h for wall
 * time, or 0 / off for none. */
static int parse_checkpoint_every(const char *value, run_opts *o)
{
    char *end;
    if (!value || !strcmp(value, "off") || !strcmp(value, "0")) {
        o->ckpt_frames = 0;
        o->ckpt_seconds = 0.0;
        return value ? 0 : -1;
    }
    errno = 0;
    long v = strtol(value, &end, 10);
    const double unit = !strcmp(end, "s")   ? 1.0
                        : !strcmp(end, "m") ? 60.0
                        : !strcmp(end, "h") ? 3600.0
                                            : 0.0;
    if (errno || end == value || v < 1 || v > 100000000 || (*end && unit == 0.0))
        return -1;
    o->ckpt_frames = *end ? 0 : (int)v;
    o->ckpt_seconds = *end ? (double)v * unit : 0.0;
    return 0;
}

/* The command line; 0, or FIRN_E_USAGE after printing why. */
static int parse_run_args(int argc, char **argv, run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->backend = FIRN_BACKEND_AUTO;
    o->p2g = -1;
    o->grid = -1;
    o->graphs = -1;
    o->ckpt_seconds = DEFAULT_CHECKPOINT_SECONDS;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--backend") && i + 1 < argc) {
            if (firn_cli_backend(argv[++i], &o->backend)) {
                fprintf(stderr, "firn run: --backend must be auto, cpu or cuda, got '%s'\n",
                        argv[i]);
                return FIRN_E_USAGE;
            }
        } else if (!strcmp(a, "--frames")) {
            if (firn_cli_int("--frames", i + 1 < argc ? argv[++i] : NULL, &o->frames))
                return FIRN_E_USAGE;
        } else if (!strcmp(a, "--p2g")) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (firn_cli_p2g(v, &o->p2g)) {
                fprintf(stderr,
                        "firn run: --p2g must be auto, atomic, binned, warp, ordered or g2p2g, got "
                        "'%s'\n",
                        v ? v : "");
                return FIRN_E_USAGE;
            }
        } else if (!strcmp(a, "--grid")) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (firn_cli_grid(v, &o->grid)) {
                fprintf(stderr, "firn run: --grid must be auto, dense or sparse, got '%s'\n",
                        v ? v : "");
                return FIRN_E_USAGE;
            }
        } else if (!strcmp(a, "--graphs")) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (firn_cli_graphs(v, &o->graphs)) {
                fprintf(stderr, "firn run: --graphs must be auto, on or off, got '%s'\n",
                        v ? v : "");
                return FIRN_E_USAGE;
            }
        } else if (!strcmp(a, "--deterministic")) {
            o->deterministic = 1;
        } else if (!strcmp(a, "--every")) {
            if (firn_cli_int("--every", i + 1 < argc ? argv[++i] : NULL, &o->every))
                return FIRN_E_USAGE;
        } else if (!strcmp(a, "--checkpoint-every")) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (parse_checkpoint_every(v, o)) {
                fprintf(stderr,
                        "firn run: --checkpoint-every expects N (frames), N followed by s, m or "
                        "h (wall time), or 0 / off, got '%s'\n",
                        v ? v : "");
                return FIRN_E_USAGE;
            }
        } else if (!strcmp(a, "--resume")) {
            o->resume = 1;
            /* The next argument is the checkpoint unless it is an option or
             * the scene (a .json file). */
            const char *next = i + 1 < argc ? argv[i + 1] : NULL;
            size_t len = next ? strlen(next) : 0;
            if (next && next[0] != '-' && !(len >= 5 && !strcmp(next + len - 5, ".json")))
                o->ckpt_path = argv[++i];
        } else if (!strncmp(a, "--resume=", 9)) {
            o->resume = 1;
            o->ckpt_path = a + 9;
        } else if (!strcmp(a, "--out") && i + 1 < argc) {
            o->out = argv[++i];
            if (!o->out[0] || strlen(o->out) >= FIRN_PATH_MAX) {
                fprintf(stderr, "firn run: --out needs a directory path of 1 to %d characters\n",
                        FIRN_PATH_MAX - 1);
                return FIRN_E_USAGE;
            }
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o->quiet = 1;
        } else if ((a[0] == '-' && a[1]) || o->scene) {
            fprintf(stderr, "firn run: unexpected argument '%s' (see firn run --help)\n", a);
            return FIRN_E_USAGE;
        } else {
            o->scene = a;
        }
    }
    if (!o->scene) {
        fprintf(stderr, "firn run: missing SCENE (a JSON file; see docs/SCENES.md)\n");
        return FIRN_E_USAGE;
    }
    if (o->ckpt_path && (!o->ckpt_path[0] || strlen(o->ckpt_path) >= FIRN_PATH_MAX)) {
        fprintf(stderr, "firn run: --resume needs a checkpoint path of 1 to %d characters\n",
                FIRN_PATH_MAX - 1);
        return FIRN_E_USAGE;
    }
    if (o->deterministic && o->p2g >= 0 && o->p2g != FIRN_P2G_ORDERED) {
        fprintf(stderr,
                "firn run: --deterministic takes the ordered P2G; it cannot be combined "
                "with --p2g %s\n",
                o->p2g == FIRN_P2G_ATOMIC   ? "atomic"
                : o->p2g == FIRN_P2G_BINNED ? "binned"
                : o->p2g == FIRN_P2G_WARP   ? "warp"
                : o->p2g == FIRN_P2G_G2P2G  ? "g2p2g"
                                            : "auto");
        return FIRN_E_USAGE;
    }
    return 0;
}

/* A fresh run replaces the statistics, frames and checkpoints of an
 * earlier one. */
static int clear_earlier_run(const char *dir, int quiet, firn_error *err)
{
    char path[FIRN_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    if (unlink(path) && errno != ENOENT) {
        firn_set_error(err, FIRN_E_IO, "cannot replace %s: %s", path, strerror(errno));
        return -1;
    }
    removed_files r;
    if (remove_files(dir, -1, &r, err))
        return -1;
    if (r.frames > 0 && !quiet)
        fprintf(stderr, "firn: removed %d frame files of an earlier run from %s/\n", r.frames, dir);
    if (r.checkpoints > 0 && !quiet)
        fprintf(stderr, "firn: removed %d checkpoints of an earlier run from %s/\n", r.checkpoints,
                dir);
    return 0;
}

/* ---- the output folder's lock ------------------------------------------------ */

/* One run at a time writes into a folder: `firn run` holds an exclusive
 * flock on DIR/.firn.lock from before it changes anything there until it
 * exits (the kernel releases it when the process ends, however it ends, so
 * a killed run leaves no lock behind; the file stays). The file says who
 * holds it: pid, host and start time. 0, or -1 with err filled
 * (FIRN_E_IO). */
static int lock_output(const char *dir, firn_error *err)
{
    char path[FIRN_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/.firn.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        firn_set_error(err, FIRN_E_IO, "cannot create the lock file %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB)) {
        const int e = errno;
        char text[512] = "", host[256] = "?", started[64] = "?";
        int pid = 0;
        const ssize_t got = pread(fd, text, sizeof text - 1, 0);
        text[got > 0 ? got : 0] = '\0';
        close(fd);
        if (e != EWOULDBLOCK) {
            firn_set_error(err, FIRN_E_IO, "cannot lock %s: %s", path, strerror(e));
            return -1;
        }
        if (sscanf(text, "pid %d\nhost %255s\nstarted %63[^\n]", &pid, host, started) >= 1)
            firn_set_error(err, FIRN_E_IO,
                           "output folder %s/ is in use by another firn run: pid %d on host %s, "
                           "started %s (lock file %s); wait for it to end or stop it, or give "
                           "this run another --out",
                           dir, pid, host, started, path);
        else
            firn_set_error(err, FIRN_E_IO,
                           "output folder %s/ is in use by another firn run (lock file %s, which "
                           "does not say which yet); wait for it to end or stop it, or give this "
                           "run another --out",
                           dir, path);
        return -1;
    }
    char host[256] = "?", started[64] = "?", text[512];
    if (gethostname(host, sizeof host))
        snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = '\0';
    const time_t now = time(NULL);
    struct tm tm;
    if (localtime_r(&now, &tm))
        strftime(started, sizeof started, "%Y-%m-%d %H:%M:%S %z", &tm);
    const int len =
        snprintf(text, sizeof text, "pid %d\nhost %s\nstarted %s\n", (int)getpid(), host, started);
    if (ftruncate(fd, 0) || pwrite(fd, text, (size_t)len, 0) != len) {
        firn_set_error(err, FIRN_E_IO, "cannot write the lock file %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    /* fd stays open, and the lock held, until the process exits. */
    return 0;
}

/* ---- resuming ---------------------------------------------------------------- */

/* A checkpoint `firn run` wrote ends a whole frame: its time is frame
 * frame_dt (within the rounding of the substeps' sum: host/checkpoint.c,
 * TIME_TOLERANCE) and its substeps number frame times the fixed dt's count,
 * or at least one and at most RUN_MAX_SUBSTEPS (host/world.c's
 * FIRN_MAX_SUBSTEPS) a frame with the CFL step. The loader accepts more
 * time and substeps than the frames account for (the C API may run
 * substeps outside frames); a resumed run does not. 0, or -1 with err
 * filled (FIRN_E_CHECKPOINT). */
#define RUN_TIME_TOLERANCE 1e-6
#define RUN_MAX_SUBSTEPS   100000
static int check_whole_frames(firn_world *w, const firn_scene_def *def, const char *path,
                              firn_error *err)
{
    firn_frame_stats s;
    if (firn_world_stats(w, &s, err))
        return -1;
    const double t = (double)s.frame * (double)def->frame_dt;
    if (!(fabs(s.time - t) <= RUN_TIME_TOLERANCE * t)) {
        firn_set_error(err, FIRN_E_CHECKPOINT,
                       "checkpoint '%s' is not the end of a frame: its time %.9g s is not that "
                       "of frame %d (%.9g s with time.frame_dt = %g s), so no firn run wrote it",
                       path, s.time, s.frame, t, (double)def->frame_dt);
        return -1;
    }
    long long lo = s.frame, hi = (long long)s.frame * RUN_MAX_SUBSTEPS;
    if (def->dt > 0.0f) {
        float dt;
        int nsub;
        if (firn_world_next_frame_step(w, &dt, &nsub, err))
            return -1;
        lo = hi = (long long)s.frame * nsub;
    }
    if (s.substeps < lo || s.substeps > hi) {
        firn_set_error(err, FIRN_E_CHECKPOINT,
                       "checkpoint '%s' holds %lld substeps for %d frames, where a run of the "
                       "scene takes %lld to %lld, so no firn run wrote it",
                       path, s.substeps, s.frame, lo, hi);
        return -1;
    }
    return 0;
}

/* The run options of the command line (--backend, --p2g, --grid, --graphs;
 * auto where not given). */
static firn_run_options run_options_of(const run_opts *o)
{
    firn_run_options r = firn_run_options_default();
    r.backend = o->backend;
    if (o->p2g >= 0)
        r.p2g = o->p2g;
    if (o->grid >= 0)
        r.grid = o->grid;
    if (o->graphs >= 0)
        r.graphs = o->graphs;
    return r;
}

/* The world of checkpoint path if it loads and ends a whole frame, else
 * NULL with err filled. */
static firn_world *load_checkpoint(const firn_scene_def *def, const run_opts *o, const char *path,
                                   firn_error *err)
{
    const firn_run_options run = run_options_of(o);
    firn_world *w = firn_world_load_with(def, &run, path, err);
    if (w && check_whole_frames(w, def, path, err)) {
        firn_world_destroy(w);
        return NULL;
    }
    return w;
}

/* The world of the checkpoint --resume names, or of the newest in the
 * output folder that loads (a refused one is named and skipped); *path
 * gets its path. NULL with err filled when there is none. */
static firn_world *open_checkpoint(const firn_scene_def *def, const run_opts *o, char *path,
                                   size_t size, firn_error *err)
{
    if (o->ckpt_path) {
        snprintf(path, size, "%s", o->ckpt_path);
        return load_checkpoint(def, o, path, err);
    }
    long k[64];
    int n = list_checkpoints(def->out_dir, k, 64, err);
    if (n < 0)
        return NULL;
    for (int i = 0; i < n; i++) {
        checkpoint_path(path, size, def->out_dir, k[i]);
        firn_world *w = load_checkpoint(def, o, path, err);
        if (w || err->code != FIRN_E_CHECKPOINT)
            return w;
        fprintf(stderr, "firn: skipping a checkpoint: %s\n", err->msg);
    }
    if (n == 0)
        firn_set_error(err, FIRN_E_CHECKPOINT,
                       "--resume: no checkpoint in %s/ (checkpoint_<frame>.firn, written by "
                       "--checkpoint-every and on SIGINT, SIGTERM or SIGHUP); name one, or run "
                       "without --resume",
                       def->out_dir);
    else
        firn_set_error(err, FIRN_E_CHECKPOINT,
                       "--resume: none of the %d checkpoints in %s/ can be resumed (see above)", n,
                       def->out_dir);
    return NULL;
}

/* The byte after frame k's line in the folder's stats.jsonl, which must
 * hold frames 0 .. k in order (a resumed run appends frame k + 1). -1 with
 * err filled otherwise. */
static long stats_end_of_frame(const char *dir, int k, firn_error *err)
{
    char path[FIRN_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    FILE *f = fopen(path, "rb");
    if (!f) {
        firn_set_error(err, FIRN_E_IO,
                       "--resume: cannot read %s (%s): the frames before the checkpoint (frame "
                       "%d) must be there; resume into the folder of the run that wrote it",
                       path, strerror(errno), k);
        return -1;
    }
    int next = 0, c = '\n';
    long at = 0;
    while (next <= k && c != EOF) {
        int frame = -1;
        if (fscanf(f, "{\"frame\":%d", &frame) != 1 || frame != next)
            break;
        while ((c = fgetc(f)) != EOF && c != '\n')
            ;
        if (c == '\n') {
            next++;
            at = ftell(f);
        }
    }
    fclose(f);
    if (next <= k) {
        firn_set_error(err, FIRN_E_IO,
                       "--resume: %s holds frames 0 to %d in order, but the checkpoint is at "
                       "frame %d: resume from an earlier checkpoint, or start over without "
                       "--resume",
                       path, next - 1, k);
        return -1;
    }
    return at;
}

/* Frame k of the checkpoint: the output folder keeps frames 0 .. k and
 * their statistics, and loses what an earlier run wrote after them
 * (the resumed run writes those frames again) and stale checkpoint
 * temporaries. Nothing is changed unless all of that can be done. */
static int prepare_resume(const char *dir, int k, int quiet, firn_error *err)
{
    if (k < 0) { /* the loader refuses such a checkpoint; nothing is removed on its word */
        firn_set_error(err, FIRN_E_CHECKPOINT, "--resume: the checkpoint is at frame %d", k);
        return -1;
    }
    long at = stats_end_of_frame(dir, k, err);
    if (at < 0)
        return -1;
    char path[FIRN_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    if (truncate(path, (off_t)at)) {
        firn_set_error(err, FIRN_E_IO, "cannot cut %s after frame %d: %s", path, k,
                       strerror(errno));
        return -1;
    }
    removed_files r;
    if (remove_files(dir, k, &r, err))
        return -1;
    if (!quiet && (r.frames > 0 || r.checkpoints > 0))
        fprintf(stderr,
                "firn: removed %d frame files and %d checkpoints after frame %d from %s/ (they "
                "are computed again)\n",
                r.frames, r.checkpoints, k, dir);
    return 0;
}

/* ---- checkpoints and signals --------------------------------------------------- */

/* The first SIGINT, SIGTERM or SIGHUP (a terminal or SSH session gone)
 * asks the frame loop to stop after the frame in progress, with a
 * checkpoint; a second exits at once, removing the temporary files being
 * written. Shared with the distributed run (host/cli_mpi.c). */
static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t signal_quiet;

int firn_cli_stop_signal(void) { return stop_signal; }

const char *firn_cli_signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGHUP ? "SIGHUP" : "SIGTERM";
}

static void on_signal(int sig)
{
    if (stop_signal) {
        firn_remove_temporaries();
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(sig, &dfl, NULL);
        raise(sig);
        return;
    }
    stop_signal = sig;
    static const char msg[] = "\nfirn: stopping after this frame with a checkpoint (a second "
                              "signal stops at once, without one)\n";
    if (!signal_quiet)
        (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
}

void firn_cli_catch_signals(int quiet)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    signal_quiet = quiet;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* With the session gone, a pipe that stderr goes to (| tee) may be
     * closed: its writes fail instead of killing the run before its
     * checkpoint. */
    signal(SIGPIPE, SIG_IGN);
}

/* The newest two checkpoints are kept: the one before the newest remains
 * should the newest be damaged after it was written. */
#define CHECKPOINTS_KEPT 2

/* Writes the checkpoint of the world's frame into dir once the frames
 * before it are on disk, then removes the checkpoints older than the
 * newest CHECKPOINTS_KEPT. */
static int write_checkpoint(firn_frame_writer *fw, firn_world *w, const char *dir, int frame,
                            int quiet, int tty, firn_error *err)
{
    char path[FIRN_PATH_MAX + 64];
    checkpoint_path(path, sizeof path, dir, frame);
    double t0 = firn_now();
    if (firn_frame_writer_flush(fw, err) || firn_world_save(w, path, err))
        return -1;
    double t1 = firn_now();
    long k[64];
    firn_error ignored; /* a folder that cannot be listed keeps its checkpoints */
    int n = list_checkpoints(dir, k, 64, &ignored);
    for (int i = CHECKPOINTS_KEPT; i < n; i++) {
        char old[FIRN_PATH_MAX + 64];
        checkpoint_path(old, sizeof old, dir, k[i]);
        if (k[i] < frame)
            unlink(old);
    }
    if (!quiet) {
        struct stat st;
        double mib = stat(path, &st) == 0 ? (double)st.st_size / (1 << 20) : 0.0;
        fprintf(stderr, "%sfirn: checkpoint %s (frame %d, %.1f MiB, %.2f s)\n", tty ? "\n" : "",
                path, frame, mib, t1 - t0);
    }
    return 0;
}

/* The command that resumes this run: this one, with --resume. */
static void print_resume_hint(int argc, char **argv)
{
    fprintf(stderr, "firn: resume with: firn run");
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--resume")) {
            const char *next = i + 1 < argc ? argv[i + 1] : NULL;
            size_t len = next ? strlen(next) : 0;
            if (next && next[0] != '-' && !(len >= 5 && !strcmp(next + len - 5, ".json")))
                i++;
            continue;
        }
        if (!strncmp(argv[i], "--resume=", 9))
            continue;
        const char *a = argv[i];
        if (strpbrk(a, " \t'\"\\$`*?&;|<>()"))
            fprintf(stderr, " '%s'", a);
        else
            fprintf(stderr, " %s", a);
    }
    fprintf(stderr, " --resume\n");
}

/* What the frame loop did, for the summary. */
typedef struct {
    int first; /* the frame the run started from */
    long long substeps;
    double sim_seconds, busy, waited, t0;
    firn_frame_stats last; /* the last frame's statistics (have_last: one was simulated) */
    int have_last;
} run_totals;

/* Frames first+1 .. def->frames (and frame 0 when first is 0), frame k
 * written while frame k+1 is simulated, with checkpoints as o says and on
 * a signal; returns 0 or the CLI's exit code (the error printed). */
static int run_frames(firn_world *w, const firn_scene_def *def, const run_opts *o, int tty,
                      int argc, char **argv, run_totals *t)
{
    firn_error err;
    firn_frame_stats s;
    int rc = 0, frame = t->first, saved = -1;
    const int quiet = o->quiet;
    firn_frame_writer *fw = firn_frame_writer_start(firn_world_scene(w), def->out_dir, &err);
    if (!fw)
        return firn_cli_fail(&err);
    if (frame == 0 && (firn_world_stats(w, &s, &err) || submit_frame(fw, w, def, &s, &err)))
        rc = firn_cli_fail(&err);
    t->t0 = firn_now();
    double last_ckpt = t->t0;
    while (!rc) {
        if (stop_signal && frame < def->frames) {
            const int sig = stop_signal;
            if (saved != frame && write_checkpoint(fw, w, def->out_dir, frame, 1, 0, &err)) {
                if (tty && !quiet)
                    fputc('\n', stderr);
                rc = firn_cli_fail(&err);
                break;
            }
            char path[FIRN_PATH_MAX + 64];
            checkpoint_path(path, sizeof path, def->out_dir, frame);
            fprintf(stderr, "%sfirn: %s: stopped after frame %d of %d; checkpoint %s\n",
                    tty && !quiet ? "\n" : "", firn_cli_signal_name(sig), frame, def->frames, path);
            print_resume_hint(argc, argv);
            rc = 128 + sig;
            break;
        }
        if (frame >= def->frames)
            break;
        if (firn_world_step_frame(w, &s, &err) || submit_frame(fw, w, def, &s, &err)) {
            if (tty && !quiet)
                fputc('\n', stderr);
            rc = firn_cli_fail(&err);
            break;
        }
        frame = s.frame;
        t->substeps += s.frame_substeps;
        t->sim_seconds += s.wall_seconds;
        t->last = s;
        t->have_last = 1;
        if (!quiet)
            progress(w, tty, &s, t->first, def->frames, firn_now() - t->t0);
        const double now = firn_now();
        if ((o->ckpt_frames > 0 && frame % o->ckpt_frames == 0) ||
            (o->ckpt_seconds > 0.0 && now - last_ckpt >= o->ckpt_seconds)) {
            if (write_checkpoint(fw, w, def->out_dir, frame, quiet, tty, &err)) {
                if (tty && !quiet)
                    fputc('\n', stderr);
                rc = firn_cli_fail(&err);
                break;
            }
            saved = frame;
            last_ckpt = firn_now();
        }
    }
    /* The frame in flight is finished even after an error: it is an earlier,
     * good one. */
    firn_error werr = {0};
    if (firn_frame_writer_finish(fw, &t->busy, &t->waited, &werr) && !rc) {
        if (tty && !quiet)
            fputc('\n', stderr);
        rc = firn_cli_fail(&werr);
    }
    return rc;
}

/* Time, each solver's count, throughput, kinetic energy and phases'
 * shares, and memory of a finished run. */
static void print_summary(firn_world *w, const firn_scene_def *def, const run_totals *t)
{
    const long long particles = firn_world_particle_count(w);
    const double sub = (double)t->substeps, secs = t->sim_seconds;
    const double pss = secs > 0.0 ? (double)particles * sub / secs : 0.0;
    firn_profile pr = firn_world_profile(w);
    fprintf(stderr,
            "firn: done: %d frames, %lld substeps, %.2f s simulating, %.2f s writing frames "
            "alongside (%.2f s waited for), %.2f s total",
            def->frames - t->first, t->substeps, secs, t->busy, t->waited, firn_now() - t->t0);
    if (particles > 0)
        fprintf(stderr, ", %.4g particle-substeps/s", pss);
    fputc('\n', stderr);
    if (!t->have_last)
        return;
    const firn_frame_stats *s = &t->last;
    /* A phase's share of the substeps' time [%]. */
    const double tot = pr.total > 0.0 ? pr.total : 1.0;
#define SHARE(x) (100.0 * (x) / tot)
    if (s->particles > 0)
        fprintf(stderr,
                "firn: MPM: %lld particles, %.4g particle-substeps/s, kinetic energy %.4g J; "
                "phases: clear %.1f%%  p2g %.1f%%  g2p %.1f%%\n",
                s->particles, secs > 0.0 ? (double)s->particles * sub / secs : 0.0,
                s->kinetic_energy, SHARE(pr.clear), SHARE(pr.p2g), SHARE(pr.g2p));
    if (s->sph.particles > 0)
        fprintf(stderr,
                "firn: SPH: %lld particles, %.4g particle-substeps/s, kinetic energy %.4g J; "
                "phases: neighbour sort %.1f%%  density %.1f%%  pressure and forces %.1f%%  "
                "positions %.1f%%\n",
                s->sph.particles, secs > 0.0 ? (double)s->sph.particles * sub / secs : 0.0,
                s->sph.kinetic_energy, SHARE(pr.sph_sort), SHARE(pr.sph_density),
                SHARE(pr.sph_pressure), SHARE(pr.sph_integrate));
    if (s->pbd.particles > 0)
        fprintf(stderr,
                "firn: PBD: %lld particles, %.4g particle-substeps/s, kinetic energy %.4g J; "
                "phases: prediction and constraints %.1f%%  particle passes (liquid, contact) "
                "%.1f%%  velocity and box %.1f%%\n",
                s->pbd.particles, secs > 0.0 ? (double)s->pbd.particles * sub / secs : 0.0,
                s->pbd.kinetic_energy, SHARE(pr.pbd_constraints), SHARE(pr.pbd_particles),
                SHARE(pr.pbd_integrate));
    if (s->fem.vertices > 0)
        fprintf(stderr,
                "firn: FEM: %lld vertices (%lld elements), %.4g vertex-substeps/s, kinetic "
                "energy %.4g J (elastic %.4g J); phases: element forces %.1f%%  vertex "
                "velocities %.1f%%  positions and walls %.1f%%\n",
                s->fem.vertices, s->fem.elements,
                secs > 0.0 ? (double)s->fem.vertices * sub / secs : 0.0, s->fem.kinetic_energy,
                s->fem.elastic_energy, SHARE(pr.fem_elements), SHARE(pr.fem_velocity),
                SHARE(pr.fem_position));
    if (s->n_rigids > 0) {
        int dynamic = 0;
        for (int k = 0; k < def->n_rigids; k++)
            dynamic += def->rigids[k].motion == FIRN_RIGID_DYNAMIC;
        fprintf(stderr, "firn: rigid bodies: %d (%d dynamic), kinetic energy %.4g J\n", s->n_rigids,
                dynamic, firn_inspect_rigid_kinetic_energy(w));
    }
    if (s->n_tools > 0)
        fprintf(stderr, "firn: tools: %d, largest mean force in the last frame %.4g N\n",
                s->n_tools, tool_force(s));
    /* grid: the MPM grid update with every coupling pair (the Coupler's
     * couple step); couple: the rigid bodies' and tools' steps and CPIC's
     * marking. */
    if (pr.total > 0.0 &&
        (s->particles > 0 || s->n_rigids > 0 || s->n_tools > 0 || SHARE(pr.grid) >= 0.05))
        fprintf(stderr,
                "firn: phases: grid update and coupling pairs %.1f%%  rigid bodies, tools and "
                "CPIC marking %.1f%%\n",
                SHARE(pr.grid), SHARE(pr.couple));
#undef SHARE
    firn_cuda_graph_stats gs;
    firn_cuda_graph_stats_get(w, &gs);
    if (gs.fell_back)
        fprintf(stderr,
                "firn: warning: a CUDA graph capture failed, so the GPU ran the substeps kernel "
                "by kernel (--graphs off does so from the start): %s\n",
                gs.why);
    else if (gs.launches > 0)
        fprintf(stderr, "firn: CUDA graphs: %lld captured, %lld launched\n", gs.captures,
                gs.launches);
    firn_memory m;
    firn_world_memory(w, &m);
    if (m.host_grid > 0.0 && m.host_grid_resident >= 0.0)
        fprintf(stderr,
                "firn: memory: %.1f MiB allocated; of the grid's %.1f MiB, %.1f MiB is in "
                "memory (the blocks material has reached)\n",
                m.host / (1 << 20), m.host_grid / (1 << 20), m.host_grid_resident / (1 << 20));
}

/* The world of a fresh run, or of the checkpoint a resumed run starts from
 * (*first gets its frame; the output folder is made ready for it). */
static firn_world *start_world(const firn_scene_def *def, const run_opts *o, int *first,
                               firn_error *err)
{
    *first = 0;
    if (!o->resume) {
        const firn_run_options run = run_options_of(o);
        firn_world *w = firn_world_create_with(def, &run, err);
        if (w && clear_earlier_run(def->out_dir, o->quiet, err)) {
            firn_world_destroy(w);
            return NULL;
        }
        return w;
    }
    char path[FIRN_PATH_MAX + 64];
    firn_world *w = open_checkpoint(def, o, path, sizeof path, err);
    if (!w)
        return NULL;
    firn_frame_stats s;
    if (firn_world_stats(w, &s, err)) {
        firn_world_destroy(w);
        return NULL;
    }
    *first = s.frame;
    if (!o->quiet)
        fprintf(stderr, "firn: resuming from %s (frame %d, t = %.6g s, %lld substeps)\n", path,
                s.frame, s.time, s.substeps);
    if (s.frame < def->frames && prepare_resume(def->out_dir, s.frame, o->quiet, err)) {
        firn_world_destroy(w);
        return NULL;
    }
    return w;
}

int firn_cli_run(int argc, char **argv)
{
    if (firn_cli_help(argc, argv, FIRN_USAGE_RUN))
        return 0;
    run_opts o;
    int rc = parse_run_args(argc, argv, &o);
    if (rc)
        return rc;
    firn_scene_def def;
    firn_error err;
    if (firn_cli_load_scene(o.scene, &def, &err))
        return firn_cli_fail(&err);
    if (o.frames)
        def.frames = o.frames;
    if (o.every)
        def.out_every = o.every;
    if (o.deterministic)
        o.p2g = FIRN_P2G_ORDERED;
    if (o.out)
        snprintf(def.out_dir, sizeof def.out_dir, "%s", o.out);
    if (firn_mkdirs(def.out_dir, &err) || lock_output(def.out_dir, &err))
        return firn_cli_fail(&err);

    firn_cli_catch_signals(o.quiet);
    int gpus = firn_cuda_device_count(), first;
    firn_world *w = start_world(&def, &o, &first, &err);
    if (!w)
        return firn_cli_fail(&err);
    const char *why = o.deterministic && firn_world_backend(w) == FIRN_BACKEND_CUDA
                          ? firn_world_gpu_nondeterminism(w)
                          : NULL;
    if (why) {
        fprintf(stderr,
                "firn: error: %s: --deterministic: on the GPU %s, so two runs of this scene may "
                "differ in the last bits (the CPU path, --backend cpu, is deterministic)\n",
                def.source, why);
        firn_world_destroy(w);
        return FIRN_E_USAGE;
    }
    if (!o.quiet) {
        if (o.backend == FIRN_BACKEND_AUTO && gpus == 0)
            fprintf(stderr, "firn: no CUDA GPU found; running on the CPU path\n");
        firn_memory m;
        firn_world_memory(w, &m);
        firn_frame_stats s0;
        char parts[512];
        if (firn_world_stats(w, &s0, &err)) {
            firn_world_destroy(w);
            return firn_cli_fail(&err);
        }
        solver_parts(w, &s0, 0, 0.0, 0, parts, sizeof parts);
        fprintf(stderr, "firn: %s: %s on %s (%.1f MiB", def.source, parts[0] ? parts : "empty",
                firn_world_device_name(w),
                (firn_world_backend(w) == FIRN_BACKEND_CUDA ? m.device : m.host) / (1 << 20));
        if (firn_world_particle_count(w) > 0)
            fprintf(stderr, ", %.0f B/particle", m.per_particle);
        fprintf(stderr, ") -> %s/\n", def.out_dir);
    }
    if (first >= def.frames) {
        if (!o.quiet)
            fprintf(stderr, "firn: the checkpoint is at frame %d: the run's %d frames are done\n",
                    first, def.frames);
        firn_world_destroy(w);
        return 0;
    }
    int tty = isatty(STDERR_FILENO);
    run_totals t = {0};
    t.first = first;
    rc = run_frames(w, &def, &o, tty, argc, argv, &t);
    if (!rc && !o.quiet) {
        if (tty)
            fputc('\n', stderr);
        print_summary(w, &def, &t);
    }
    firn_world_destroy(w);
    return rc;
}

int firn_cli_prepare_output(const char *dir, int quiet, firn_error *err)
{
    return firn_mkdirs(dir, err) || lock_output(dir, err) || clear_earlier_run(dir, quiet, err) ? -1
                                                                                                : 0;
}

int firn_cli_submit_frame(firn_frame_writer *fw, firn_world *w, const firn_scene_def *def,
                          const firn_frame_stats *s, firn_error *err)
{
    return submit_frame(fw, w, def, s, err);
}

int firn_cli_lock_output(const char *dir, firn_error *err)
{
    return firn_mkdirs(dir, err) || lock_output(dir, err) ? -1 : 0;
}

int firn_cli_prepare_resume(const char *dir, int frame, int quiet, firn_error *err)
{
    return prepare_resume(dir, frame, quiet, err);
}

int firn_cli_checkpoint_every(const char *value, int *frames, double *seconds)
{
    run_opts o;
    memset(&o, 0, sizeof o);
    if (value && parse_checkpoint_every(value, &o))
        return -1;
    *frames = value ? o.ckpt_frames : 0;
    *seconds = value ? o.ckpt_seconds : DEFAULT_CHECKPOINT_SECONDS;
    return 0;
}
