/* cli_run.c - `firn run`: simulate a scene, write frames and statistics,
 * show progress. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "error.h"
#include "frame_writer.h"

/* 1 for the name of a frame file that `firn run` writes: frame_, five or
 * more digits, .ply or .png. */
static int is_frame_file(const char *name)
{
    if (strncmp(name, "frame_", 6))
        return 0;
    const char *d = name + 6, *e = d;
    while (*e >= '0' && *e <= '9')
        e++;
    return e - d >= 5 && (!strcmp(e, ".ply") || !strcmp(e, ".png"));
}

/* Removes the frame files (regular files named as firn names them) an
 * earlier run left in dir, so that the folder
 * holds this run's frames only (a shorter or failed run would otherwise sit
 * next to the later frames of the one before). Returns the count removed,
 * or -1 with err filled. */
static int remove_old_frames(const char *dir, firn_error *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        firn_set_error(err, FIRN_E_IO, "cannot list %s: %s", dir, strerror(errno));
        return -1;
    }
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_frame_file(e->d_name))
            continue;
        char path[FIRN_PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) || !S_ISREG(st.st_mode))
            continue; /* not a file this run could have written: left alone */
        if (unlink(path) == 0)
            n++;
        else if (errno != ENOENT) {
            firn_set_error(err, FIRN_E_IO, "cannot remove %s of an earlier run: %s", path,
                           strerror(errno));
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    return n;
}

int firn_cli_fail(const firn_error *err)
{
    fprintf(stderr, "firn: error: %s\n", err->msg);
    return err->code ? (int)err->code : 1;
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

int firn_cli_int(const char *opt, const char *value, int *out)
{
    char *end;
    errno = 0;
    long v = value ? strtol(value, &end, 10) : 0;
    if (!value || errno || *end || v < 1 || v > 100000000) {
        fprintf(stderr, "firn: %s expects a positive integer, got '%s'\n", opt, value ? value : "");
        return -1;
    }
    *out = (int)v;
    return 0;
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

static void progress(int tty, const firn_frame_stats *s, int frames, double elapsed)
{
    char np[32], tp[32];
    format_count((double)s->particles, np, sizeof np);
    format_count(s->throughput, tp, sizeof tp);
    double left = s->frame > 0 ? elapsed / s->frame * (frames - s->frame) : 0.0;
    if (tty) {
        int width = 24, done = frames > 0 ? width * s->frame / frames : width;
        char bar[64];
        for (int i = 0; i < width; i++)
            bar[i] = i < done ? '#' : '.';
        bar[width] = '\0';
        fprintf(stderr,
                "\r[%s] frame %d/%d  substeps %lld  particles %s  %s p-substeps/s  left %d:%02d ",
                bar, s->frame, frames, s->substeps, np, tp, (int)left / 60, (int)left % 60);
        fflush(stderr);
    } else {
        fprintf(stderr,
                "frame %d/%d substeps %lld (+%d, dt %.3g s) particles %lld  %.4g p-substeps/s  "
                "ke %.4g J  left %.0f s\n",
                s->frame, frames, s->substeps, s->frame_substeps, s->dt,
                s->particles + s->sph.particles, s->throughput,
                s->kinetic_energy + s->sph.kinetic_energy, left);
    }
}

/* Hands frame s to the writer, with the particles when the frame is one
 * that writes them (the download from the GPU happens here). */
static int submit_frame(firn_frame_writer *fw, firn_world *w, const firn_scene_def *def,
                        const firn_frame_stats *s, firn_error *err)
{
    firn_particles_view view;
    firn_sph_particles_view sph;
    int files = s->frame % def->out_every == 0 && (def->write_ply || def->write_preview);
    if (files && (firn_world_particles(w, &view, err) || firn_world_sph_particles(w, &sph, err)))
        return -1;
    return firn_frame_writer_submit(fw, files ? &view : NULL, files ? &sph : NULL, s, err);
}

typedef struct {
    const char *scene, *out;
    firn_backend backend;
    int frames, every, quiet;
} run_opts;

/* The command line; 0, or FIRN_E_USAGE after printing why. */
static int parse_run_args(int argc, char **argv, run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->backend = FIRN_BACKEND_AUTO;
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
        } else if (!strcmp(a, "--every")) {
            if (firn_cli_int("--every", i + 1 < argc ? argv[++i] : NULL, &o->every))
                return FIRN_E_USAGE;
        } else if (!strcmp(a, "--out") && i + 1 < argc) {
            o->out = argv[++i];
            if (!o->out[0] || strlen(o->out) >= FIRN_PATH_MAX) {
                fprintf(stderr, "firn run: --out needs a directory path of 1 to %d characters\n",
                        FIRN_PATH_MAX - 1);
                return FIRN_E_USAGE;
            }
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o->quiet = 1;
        } else if (a[0] == '-' || o->scene) {
            fprintf(stderr, "firn run: unexpected argument '%s' (see firn --help)\n", a);
            return FIRN_E_USAGE;
        } else {
            o->scene = a;
        }
    }
    if (!o->scene) {
        fprintf(stderr, "firn run: missing SCENE (a JSON file; see docs/SCENES.md)\n");
        return FIRN_E_USAGE;
    }
    return 0;
}

/* A fresh run replaces the statistics and frames of an earlier one. */
static int clear_earlier_run(const char *dir, int quiet, firn_error *err)
{
    char path[FIRN_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    if (unlink(path) && errno != ENOENT) {
        firn_set_error(err, FIRN_E_IO, "cannot replace %s: %s", path, strerror(errno));
        return -1;
    }
    int removed = remove_old_frames(dir, err);
    if (removed < 0)
        return -1;
    if (removed > 0 && !quiet)
        fprintf(stderr, "firn: removed %d frame files of an earlier run from %s/\n", removed, dir);
    return 0;
}

/* What the frame loop did, for the summary. */
typedef struct {
    long long substeps;
    double sim_seconds, busy, waited, t0;
} run_totals;

/* Frames 0 .. def->frames, frame k written while frame k+1 is simulated;
 * returns 0 or the CLI's exit code (the error printed). */
static int run_frames(firn_world *w, const firn_scene_def *def, int quiet, int tty, run_totals *t)
{
    firn_error err;
    firn_frame_stats s;
    int rc = 0;
    firn_frame_writer *fw = firn_frame_writer_start(firn_world_scene(w), def->out_dir, &err);
    if (!fw)
        return firn_cli_fail(&err);
    if (firn_world_stats(w, &s, &err) || submit_frame(fw, w, def, &s, &err))
        rc = firn_cli_fail(&err);
    t->t0 = firn_now();
    for (int f = 0; f < def->frames && !rc; f++) {
        if (firn_world_step_frame(w, &s, &err) || submit_frame(fw, w, def, &s, &err)) {
            if (tty && !quiet)
                fputc('\n', stderr);
            rc = firn_cli_fail(&err);
            break;
        }
        t->substeps += s.frame_substeps;
        t->sim_seconds += s.wall_seconds;
        if (!quiet)
            progress(tty, &s, def->frames, firn_now() - t->t0);
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

/* Time, throughput, the phases' shares and memory of a finished run. */
static void print_summary(firn_world *w, const firn_scene_def *def, const run_totals *t)
{
    double pss = t->sim_seconds > 0.0
                     ? (double)firn_world_particle_count(w) * t->substeps / t->sim_seconds
                     : 0.0;
    firn_profile pr = firn_world_profile(w);
    fprintf(stderr,
            "firn: done: %d frames, %lld substeps, %.2f s simulating, %.2f s writing frames "
            "alongside (%.2f s waited for), %.2f s total, %.4g particle-substeps/s\n",
            def->frames, t->substeps, t->sim_seconds, t->busy, t->waited, firn_now() - t->t0, pss);
    if (pr.total > 0.0)
        fprintf(stderr, "firn: phases: clear %.1f%%  p2g %.1f%%  grid %.1f%%  g2p %.1f%%\n",
                100 * pr.clear / pr.total, 100 * pr.p2g / pr.total, 100 * pr.grid / pr.total,
                100 * pr.g2p / pr.total);
    firn_memory m;
    firn_world_memory(w, &m);
    if (m.host_grid > 0.0 && m.host_grid_resident >= 0.0)
        fprintf(stderr,
                "firn: memory: %.1f MiB allocated; of the grid's %.1f MiB, %.1f MiB is in "
                "memory (the blocks material has reached)\n",
                m.host / (1 << 20), m.host_grid / (1 << 20), m.host_grid_resident / (1 << 20));
}

int firn_cli_run(int argc, char **argv)
{
    run_opts o;
    int rc = parse_run_args(argc, argv, &o);
    if (rc)
        return rc;
    firn_scene_def def;
    firn_error err;
    if (firn_scene_load_json(o.scene, &def, &err))
        return firn_cli_fail(&err);
    if (o.frames)
        def.frames = o.frames;
    if (o.every)
        def.out_every = o.every;
    if (o.out)
        snprintf(def.out_dir, sizeof def.out_dir, "%s", o.out);
    if (firn_mkdirs(def.out_dir, &err))
        return firn_cli_fail(&err);

    int gpus = firn_cuda_device_count();
    firn_world *w = firn_world_create(&def, o.backend, &err);
    if (!w)
        return firn_cli_fail(&err);
    if (!o.quiet) {
        if (o.backend == FIRN_BACKEND_AUTO && gpus == 0)
            fprintf(stderr, "firn: no CUDA GPU found; running on the CPU path\n");
        firn_memory m;
        firn_world_memory(w, &m);
        fprintf(stderr, "firn: %s: %lld particles on %s (%.1f MiB, %.0f B/particle) -> %s/\n",
                o.scene, firn_world_particle_count(w), firn_world_device_name(w),
                (firn_world_backend(w) == FIRN_BACKEND_CUDA ? m.device : m.host) / (1 << 20),
                m.per_particle, def.out_dir);
    }
    if (clear_earlier_run(def.out_dir, o.quiet, &err)) {
        firn_world_destroy(w);
        return firn_cli_fail(&err);
    }
    int tty = isatty(STDERR_FILENO);
    run_totals t = {0};
    rc = run_frames(w, &def, o.quiet, tty, &t);
    if (!rc && !o.quiet) {
        if (tty)
            fputc('\n', stderr);
        print_summary(w, &def, &t);
    }
    firn_world_destroy(w);
    return rc;
}
