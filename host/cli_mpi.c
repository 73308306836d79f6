/* cli_mpi.c - `firn run` with more than one MPI rank (make MPI=1; docs/MPI.md).
 *
 * Every rank builds the scene's world and keeps its slab's particles
 * (host/dist_mpi.c); the frames step together. After each frame rank 0
 * gathers the particles into a world of the whole scene, in the scene's
 * order, and writes stats.jsonl and the frame files from it as `firn run`
 * does.
 *
 * Checkpoints: at a frame boundary every rank writes its own file
 * (checkpoint_<frame>.rank<r>.firn: host/checkpoint.c's format, its
 * particles with their scene indices and the replicated state), then rank
 * 0, once every file is complete, writes the set's manifest
 * (checkpoint_<frame>.manifest: the rank count, the slabs, the frame's
 * clocks, and each file's name, size and CRC-32C). Both are written to a
 * temporary and renamed, so a manifest names complete files only. A
 * resume starts from a manifest, on its rank count. SIGINT, SIGTERM or
 * SIGHUP on any rank stops every rank at the same frame boundary (the
 * ranks agree after each frame) with a checkpoint set. What this run does
 * not do yet is refused with a message naming it: the GPU, and the options
 * below that are not listed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>
#include <omp.h>

#include "checkpoint.h"
#include "cli.h"
#include "dist_mpi.h"
#include "error.h"
#include "frame_writer.h"
#include "output.h"
#include "world.h"

typedef struct {
    const char *scene, *out;
    int frames, every, quiet;
    int ckpt_frames;      /* checkpoint every this many frames (0: by time or never) */
    double ckpt_seconds;  /* checkpoint when this much wall time has passed (0: never) */
    int resume;           /* --resume given */
    double rebalance;     /* --rebalance: the imbalance that resplits the slabs (0: off) */
    const char *manifest; /* --resume's MANIFEST, or NULL: the newest in the folder */
} mpi_opts;

static int parse(int argc, char **argv, mpi_opts *o, int rank)
{
    memset(o, 0, sizeof *o);
    o->rebalance = FIRN_MPI_REBALANCE_DEFAULT;
    const char *every = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--frames") || !strcmp(a, "--every")) {
            /* firn_cli_int prints its message: once, from rank 0 */
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (firn_cli_int_said(a, v, !strcmp(a, "--frames") ? &o->frames : &o->every, rank == 0))
                return FIRN_E_USAGE;
        } else if (!strcmp(a, "--out")) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                if (rank == 0)
                    fprintf(stderr, "firn run: --out needs a folder\n");
                return FIRN_E_USAGE;
            }
            o->out = argv[++i];
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--checkpoint-every")) {
            every = i + 1 < argc ? argv[++i] : "";
            int f;
            double sec;
            if (firn_cli_checkpoint_every(every, &f, &sec)) {
                if (rank == 0)
                    fprintf(stderr,
                            "firn run: --checkpoint-every expects N (frames), N followed by s, m "
                            "or h (wall time), or off; got '%s'\n",
                            every);
                return FIRN_E_USAGE;
            }
        } else if (!strcmp(a, "--rebalance")) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            char *end;
            const double x = strtod(v, &end);
            if (!strcmp(v, "off")) {
                o->rebalance = 0.0;
            } else if (!*v || *end || !(x >= 1.0 && x <= 1e6)) {
                if (rank == 0)
                    fprintf(stderr,
                            "firn run: --rebalance expects the imbalance (the largest rank's "
                            "particles over the mean, 1 or more) that resplits the slabs at a "
                            "frame boundary, or off; got '%s'\n",
                            v);
                return FIRN_E_USAGE;
            } else {
                o->rebalance = x;
            }
        } else if (!strcmp(a, "--resume")) {
            o->resume = 1;
            /* The next argument is the manifest unless it is an option or
             * the scene (a .json). */
            const char *next = i + 1 < argc ? argv[i + 1] : NULL;
            const size_t len = next ? strlen(next) : 0;
            if (next && next[0] != '-' && !(len >= 5 && !strcmp(next + len - 5, ".json")))
                o->manifest = argv[++i];
        } else if (!strncmp(a, "--resume=", 9)) {
            o->resume = 1;
            o->manifest = a + 9;
        } else if (!strcmp(a, "--backend") && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "cpu") && strcmp(v, "auto")) {
                if (rank == 0)
                    fprintf(stderr,
                            "firn run: --backend %s: not supported with %d MPI ranks: the "
                            "distributed run is on the CPU path (--backend cpu)\n",
                            v, firn_mpi_size());
                return FIRN_E_USAGE;
            }
        } else if (a[0] == '-' && strcmp(a, "-")) {
            if (rank == 0)
                fprintf(stderr,
                        "firn run: %s: not supported with %d MPI ranks (the distributed run "
                        "takes --frames, --every, --out, --quiet, --checkpoint-every, --resume, "
                        "--rebalance and --backend cpu); run it with one rank\n",
                        a, firn_mpi_size());
            return FIRN_E_USAGE;
        } else if (!o->scene) {
            o->scene = a;
        } else {
            if (rank == 0)
                fprintf(stderr, "firn run: unexpected argument '%s'\n", a);
            return FIRN_E_USAGE;
        }
    }
    if (!o->scene) {
        if (rank == 0)
            fprintf(stderr, "firn run: a SCENE is needed\n");
        return FIRN_E_USAGE;
    }
    if (o->manifest && (!o->manifest[0] || strlen(o->manifest) >= FIRN_PATH_MAX)) {
        if (rank == 0)
            fprintf(stderr, "firn run: --resume needs a manifest path of 1 to %d characters\n",
                    FIRN_PATH_MAX - 1);
        return FIRN_E_USAGE;
    }
    firn_cli_checkpoint_every(every, &o->ckpt_frames, &o->ckpt_seconds);
    return 0;
}

/* err's message once, from the first rank that failed for a reason of
 * its own (a rank told that another rank's particle went non-finite
 * defers to that rank, which names the particle), and the exit code every
 * rank returns. */
static int fail_all(int failed, const firn_error *err)
{
    const int size = firn_mpi_size();
    const int deferred = failed && strstr(err->msg, "on another rank") != NULL;
    int mine = (failed ? (deferred ? 1 : 0) : 2) * size + firn_mpi_rank(), first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int code = failed ? (int)err->code : 0, rc;
    MPI_Allreduce(&code, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (mine == first)
        firn_cli_fail(err);
    return rc ? rc : FIRN_E_IO;
}

/* ---- signals ------------------------------------------------------------------ */

/* firn run's handler (firn_cli_catch_signals, without its message, which
 * every rank would print): the first SIGINT, SIGTERM or SIGHUP asks this
 * rank to stop after the frame in progress; the ranks agree on it after
 * each frame, so that every rank stops at the same one, with a checkpoint
 * set. A second exits at once, removing the temporary files being written
 * (the set then stays without a manifest, which no resume reads). */

/* ---- checkpoint sets ---------------------------------------------------------- */

#define MANIFEST_MAGIC "firn distributed checkpoint 1"
#define MANIFEST_MAX   (1 << 20)
/* The newest sets kept, as `firn run` keeps its checkpoints. */
#define SETS_KEPT 2

static void rank_file_name(char *name, size_t size, int frame, int rank)
{
    snprintf(name, size, "checkpoint_%05d.rank%d.firn", frame, rank);
}

static void manifest_path(char *path, size_t size, const char *dir, int frame)
{
    snprintf(path, size, "%s/checkpoint_%05d.manifest", dir, frame);
}

/* The frame of a file of a checkpoint set, or its temporary (*tmp set):
 * checkpoint_<frame>.manifest or checkpoint_<frame>.rank<r>.firn, then
 * .tmp.<pid> for a temporary; -1 for another name. */
static long set_file_frame(const char *name, int *manifest, int *tmp)
{
    if (strncmp(name, "checkpoint_", 11))
        return -1;
    char *end;
    const long k = strtol(name + 11, &end, 10);
    if (end - (name + 11) < 5 || end - (name + 11) > 9 || k < 0)
        return -1;
    const char *rest = end;
    *manifest = !strncmp(rest, ".manifest", 9);
    if (*manifest)
        rest += 9;
    else if (!strncmp(rest, ".rank", 5)) {
        long r = strtol(rest + 5, &end, 10);
        if (end == rest + 5 || r < 0 || strncmp(end, ".firn", 5))
            return -1;
        rest = end + 5;
    } else
        return -1;
    *tmp = !strncmp(rest, ".tmp.", 5);
    if (!*tmp && *rest)
        return -1;
    return k;
}

/* Removes the files of the checkpoint sets in dir with a frame above
 * `after` (-1: all), or those of frame `only` (>= 0; then nothing else),
 * and every temporary; manifests first, so that no manifest names a file
 * gone. Returns how many sets' manifests went. */
static int remove_sets(const char *dir, long after, long only)
{
    int removed = 0;
    for (int pass = 0; pass < 2; pass++) {
        DIR *d = opendir(dir);
        if (!d)
            return removed;
        for (struct dirent *e; (e = readdir(d));) {
            int manifest, tmp;
            const long k = set_file_frame(e->d_name, &manifest, &tmp);
            if (k < 0 || manifest != (pass == 0))
                continue;
            if (!(tmp || (only >= 0 ? k == only : k > after)))
                continue;
            char path[FIRN_PATH_MAX + 300];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (unlink(path) == 0 && manifest && !tmp)
                removed++;
        }
        closedir(d);
    }
    return removed;
}

/* The frames of the set manifests in dir, newest first (at most max). */
static int list_sets(const char *dir, long *k, int max)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        const long f = firn_cli_indexed_name(e->d_name, "checkpoint_", ".manifest");
        if (f < 0)
            continue;
        int at;
        if (n < max) {
            at = n++;
        } else { /* full: f replaces the oldest kept, if it is newer */
            if (k[max - 1] >= f)
                continue;
            at = max - 1;
        }
        while (at > 0 && k[at - 1] < f) {
            k[at] = k[at - 1];
            at--;
        }
        k[at] = f;
    }
    closedir(d);
    return n;
}

/* The size of a file and the CRC-32C of its bytes but the last 4: a
 * checkpoint file ends with its own CRC-32C of what comes before it, and
 * the CRC of data followed by its CRC is the same constant for any data.
 * -1 with errno on failure. */
static int file_crc(const char *path, unsigned long long *bytes, uint32_t *crc)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f)
        return -1;
    if (fstat(fileno(f), &st)) {
        fclose(f);
        return -1;
    }
    static unsigned char buf[1 << 20];
    uint32_t c = 0;
    unsigned long long left = st.st_size > 4 ? (unsigned long long)st.st_size - 4 : 0;
    while (left > 0) {
        const size_t want = left < sizeof buf ? (size_t)left : sizeof buf;
        if (fread(buf, 1, want, f) != want) {
            fclose(f);
            errno = EIO;
            return -1;
        }
        c = firn_crc32c(c, buf, want);
        left -= want;
    }
    fclose(f);
    *bytes = (unsigned long long)st.st_size;
    *crc = c;
    return 0;
}

typedef struct {
    int ranks, columns, frame;
    const int *col_lo;
    long long substeps;
    double time;
    unsigned long long hash;
    const long long *info; /* per rank: bytes, crc, particles */
} manifest;

static int emit_manifest(FILE *f, void *arg)
{
    const manifest *m = arg;
    char *text = malloc(MANIFEST_MAX);
    if (!text)
        return -1;
    int at = snprintf(text, MANIFEST_MAX,
                      MANIFEST_MAGIC "\nscene_hash %016llx\nranks %d\ncolumns %d\ncol_lo", m->hash,
                      m->ranks, m->columns);
    for (int r = 0; r <= m->ranks && at < MANIFEST_MAX; r++)
        at += snprintf(text + at, MANIFEST_MAX - at, " %d", m->col_lo[r]);
    if (at < MANIFEST_MAX)
        at += snprintf(text + at, MANIFEST_MAX - at, "\nframe %d\nsubsteps %lld\ntime %.17g\n",
                       m->frame, m->substeps, m->time);
    for (int r = 0; r < m->ranks && at < MANIFEST_MAX; r++) {
        char name[96];
        rank_file_name(name, sizeof name, m->frame, r);
        at += snprintf(text + at, MANIFEST_MAX - at,
                       "rank %d file %s bytes %lld crc32c %08llx particles %lld\n", r, name,
                       m->info[3 * r], m->info[3 * r + 1], m->info[3 * r + 2]);
    }
    int rc = -1;
    if (at < MANIFEST_MAX - 32) {
        at += snprintf(text + at, MANIFEST_MAX - at, "crc32c %08x\n",
                       (unsigned)firn_crc32c(0, text, (size_t)at));
        rc = fwrite(text, 1, (size_t)at, f) == (size_t)at && fflush(f) == 0 && fsync(fileno(f)) == 0
                 ? 0
                 : -1;
    }
    free(text);
    return rc;
}

static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* The checkpoint set of the world's frame: every rank's file, then rank
 * 0's manifest once all are complete, then the sets older than the newest
 * SETS_KEPT go. fw: rank 0's frame writer (the frames before the set are
 * on disk first). Collective; 0, or the exit code (the error printed). */
static int write_set(firn_world *w, firn_frame_writer *fw, const char *dir, int quiet)
{
    const int rank = firn_mpi_rank(), size = firn_mpi_size(), frame = w->frame;
    firn_error err = {0};
    const double t0 = firn_now();
    int failed = rank == 0 && fw && firn_frame_writer_flush(fw, &err);
    if (firn_mpi_any(failed))
        return fail_all(failed, &err);
    char name[96], path[FIRN_PATH_MAX + 200];
    rank_file_name(name, sizeof name, frame, rank);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    long long mine[3] = {0, 0, w->p.n};
    failed = firn_world_save(w, path, &err) != 0;
    if (!failed) {
        unsigned long long bytes = 0;
        uint32_t crc = 0;
        if (file_crc(path, &bytes, &crc)) {
            firn_set_error(&err, FIRN_E_IO, "cannot read back checkpoint '%s': %s", path,
                           strerror(errno));
            failed = 1;
        }
        mine[0] = (long long)bytes;
        mine[1] = crc;
    }
    long long *all = rank == 0 ? malloc(3 * sizeof(long long) * (size_t)size) : NULL;
    if (rank == 0 && !all) {
        fprintf(stderr, "firn: out of host memory\n");
        MPI_Abort(MPI_COMM_WORLD, FIRN_E_NOMEM);
    }
    MPI_Gather(mine, 3, MPI_LONG_LONG, all, 3, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (firn_mpi_any(failed)) {
        free(all);
        return fail_all(failed, &err);
    }
    if (rank == 0) {
        int columns;
        const int *col_lo = firn_mpi_slabs(w, &columns);
        manifest m = {
            size, columns, frame, col_lo, w->substeps, w->time, (unsigned long long)w->scene_hash,
            all};
        manifest_path(path, sizeof path, dir, frame);
        failed = firn_write_atomic(path, emit_manifest, &m, &err) != 0;
        if (!failed) {
            sync_dir(dir);
            long k[64];
            const int n = list_sets(dir, k, 64);
            for (int i = SETS_KEPT; i < n; i++)
                if (k[i] < frame)
                    remove_sets(dir, -1, k[i]);
            if (!quiet)
                fprintf(stderr, "firn: checkpoint %s (frame %d, %d rank files, %.2f s)\n", path,
                        frame, size, firn_now() - t0);
        }
    }
    free(all);
    if (firn_mpi_any(failed))
        return fail_all(failed, &err);
    return 0;
}

/* ---- resuming ----------------------------------------------------------------- */

static int bad_manifest(firn_error *err, const char *path, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int bad_manifest(firn_error *err, const char *path, const char *field, const char *fmt, ...)
{
    char what[FIRN_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    firn_set_error(err, FIRN_E_CHECKPOINT, "--resume: manifest '%s', field '%s': %s", path, field,
                   what);
    return -1;
}

/* The next line of the manifest's text into line (without its newline). */
static int next_line(const char **at, char *line, size_t size)
{
    const char *nl = strchr(*at, '\n');
    if (!nl || (size_t)(nl - *at) >= size)
        return -1;
    memcpy(line, *at, (size_t)(nl - *at));
    line[nl - *at] = '\0';
    *at = nl + 1;
    return 0;
}

/* The parsed manifest a resume starts from. */
typedef struct {
    int ranks, columns, frame;
    int *col_lo;
    long long substeps;
    double time;
    unsigned long long hash;
    char (*file)[96];
    unsigned long long *bytes;
    unsigned *crc;
    int *particles;
} resume_set;

static void free_set(resume_set *s)
{
    free(s->col_lo), free(s->file), free(s->bytes), free(s->crc), free(s->particles);
}

/* The text of manifest path (read by rank 0, NUL-terminated) parsed and
 * checked against this run: every rank does it with the same text, so all
 * get the same answer. */
static int parse_manifest(const char *path, const char *text, size_t len, firn_world *w,
                          resume_set *s, firn_error *err)
{
    const int ranks = firn_mpi_size();
    int columns;
    const int *col_lo = firn_mpi_slabs(w, &columns);
    memset(s, 0, sizeof *s);
    /* The checksum first: a damaged manifest is named as such, not by the
     * first field its damage reaches. */
    const char *last = len >= 2 ? text + len - 2 : text;
    while (last > text && *last != '\n')
        last--;
    const size_t body = last > text ? (size_t)(last - text) + 1 : 0;
    unsigned stored;
    char tail[32];
    if (len == 0 || strlen(text) != len || text[len - 1] != '\n' ||
        sscanf(text + body, "crc32c %8x%31s", &stored, tail) != 1)
        return bad_manifest(err, path, "crc32c",
                            "no checksum line ends it (the file is truncated or not a manifest)");
    const unsigned computed = firn_crc32c(0, text, body);
    if (stored != computed)
        return bad_manifest(err, path, "crc32c",
                            "the file is damaged: its checksum is %08x, its contents give %08x",
                            stored, computed);
    const char *at = text;
    char line[512];
    if (next_line(&at, line, sizeof line) || strcmp(line, MANIFEST_MAGIC))
        return bad_manifest(err, path, "magic", "it does not start with '%s'", MANIFEST_MAGIC);
    int used;
    if (next_line(&at, line, sizeof line) ||
        sscanf(line, "scene_hash %llx%n", &s->hash, &used) != 1 || line[used])
        return bad_manifest(err, path, "scene_hash", "missing or malformed");
    if (s->hash != (unsigned long long)w->scene_hash)
        return bad_manifest(err, path, "scene_hash",
                            "%016llx; that of %s is %016llx: the set is of another scene", s->hash,
                            w->def.source, (unsigned long long)w->scene_hash);
    if (next_line(&at, line, sizeof line) || sscanf(line, "ranks %d%n", &s->ranks, &used) != 1 ||
        line[used] || s->ranks < 2)
        return bad_manifest(err, path, "ranks", "missing or malformed");
    if (s->ranks != ranks)
        return bad_manifest(err, path, "ranks",
                            "the set was written by %d MPI ranks; this run has %d. Resume it on "
                            "%d ranks (mpirun -np %d): a set is not redistributed over another "
                            "rank count",
                            s->ranks, ranks, s->ranks, s->ranks);
    if (next_line(&at, line, sizeof line) ||
        sscanf(line, "columns %d%n", &s->columns, &used) != 1 || line[used])
        return bad_manifest(err, path, "columns", "missing or malformed");
    if (s->columns != columns)
        return bad_manifest(err, path, "columns",
                            "%d block columns along x; this run's grid has %d", s->columns,
                            columns);
    s->col_lo = calloc((size_t)ranks + 1, sizeof(int));
    s->file = calloc((size_t)ranks, sizeof *s->file);
    s->bytes = calloc((size_t)ranks, sizeof *s->bytes);
    s->crc = calloc((size_t)ranks, sizeof *s->crc);
    s->particles = calloc((size_t)ranks, sizeof *s->particles);
    if (!s->col_lo || !s->file || !s->bytes || !s->crc || !s->particles) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory reading manifest '%s'", path);
        return -1;
    }
    if (next_line(&at, line, sizeof line) || strncmp(line, "col_lo", 6))
        return bad_manifest(err, path, "col_lo", "missing");
    const char *p = line + 6;
    for (int r = 0; r <= ranks; r++) {
        if (sscanf(p, " %d%n", &s->col_lo[r], &used) != 1)
            return bad_manifest(err, path, "col_lo", "fewer than %d columns", ranks + 1);
        p += used;
    }
    if (*p)
        return bad_manifest(err, path, "col_lo", "more than %d columns", ranks + 1);
    /* The set's slabs (a rebalanced run's differ from the scene's first
     * split), checked and adopted before the ranks' files are read. */
    (void)col_lo;
    firn_error serr = {0};
    if (firn_mpi_set_slabs(w, s->col_lo, &serr))
        return bad_manifest(err, path, "col_lo", "%s", serr.msg);
    if (next_line(&at, line, sizeof line) || sscanf(line, "frame %d%n", &s->frame, &used) != 1 ||
        line[used] || s->frame < 0)
        return bad_manifest(err, path, "frame", "missing or malformed");
    if (next_line(&at, line, sizeof line) ||
        sscanf(line, "substeps %lld%n", &s->substeps, &used) != 1 || line[used] ||
        s->substeps < s->frame)
        return bad_manifest(err, path, "substeps", "missing or malformed");
    if (next_line(&at, line, sizeof line) || sscanf(line, "time %lf%n", &s->time, &used) != 1 ||
        line[used] || !(s->time >= 0.0))
        return bad_manifest(err, path, "time", "missing or malformed");
    long long sum = 0;
    for (int r = 0; r < ranks; r++) {
        int rr, np;
        unsigned crc;
        unsigned long long bytes;
        char name[96], want[96];
        if (next_line(&at, line, sizeof line) ||
            sscanf(line, "rank %d file %95s bytes %llu crc32c %8x particles %d%n", &rr, name,
                   &bytes, &crc, &np, &used) != 5 ||
            line[used] || rr != r)
            return bad_manifest(err, path, "rank", "rank %d's line is missing or malformed", r);
        rank_file_name(want, sizeof want, s->frame, r);
        if (strcmp(name, want))
            return bad_manifest(err, path, "file", "rank %d's file is '%s'; it must be '%s'", r,
                                name, want);
        if (np < 0)
            return bad_manifest(err, path, "particles", "rank %d holds %d particles", r, np);
        memcpy(s->file[r], name, sizeof name);
        s->bytes[r] = bytes;
        s->crc[r] = crc;
        s->particles[r] = np;
        sum += np;
    }
    if (sum != firn_mpi_total(w))
        return bad_manifest(err, path, "particles",
                            "the ranks hold %lld particles between them; the scene has %d", sum,
                            firn_mpi_total(w));
    if (at != text + body)
        return bad_manifest(err, path, "crc32c", "lines follow the last rank's");
    return 0;
}

/* The manifest --resume names, or the newest in dir, read by rank 0 and
 * sent to every rank; then parsed, and this rank's file checked against it
 * and loaded. Collective; 0, or the exit code (the error printed). */
static int resume(firn_world *w, const mpi_opts *o, const char *dir, resume_set *set, char *mpath,
                  size_t msize)
{
    const int rank = firn_mpi_rank();
    firn_error err = {0};
    long long len = 0;
    char *text = NULL;
    int failed = 0;
    if (rank == 0) {
        failed = firn_cli_lock_output(dir, &err) != 0;
        if (!failed && o->manifest)
            snprintf(mpath, msize, "%s", o->manifest);
        else if (!failed) {
            long k[1];
            if (list_sets(dir, k, 1) == 0) {
                firn_set_error(&err, FIRN_E_CHECKPOINT,
                               "--resume: no checkpoint set in %s/ (checkpoint_<frame>.manifest, "
                               "written by --checkpoint-every and on SIGINT, SIGTERM or SIGHUP); "
                               "name one, or run without --resume",
                               dir);
                failed = 1;
            } else
                manifest_path(mpath, msize, dir, (int)k[0]);
        }
        FILE *f = failed ? NULL : fopen(mpath, "rb");
        if (!failed && !f) {
            firn_set_error(&err, FIRN_E_IO, "--resume: cannot read manifest '%s': %s", mpath,
                           strerror(errno));
            failed = 1;
        }
        if (f) {
            text = malloc(MANIFEST_MAX + 1);
            len = text ? (long long)fread(text, 1, MANIFEST_MAX + 1, f) : 0;
            if (!text || ferror(f) || len > MANIFEST_MAX) {
                firn_set_error(&err, FIRN_E_CHECKPOINT,
                               "--resume: manifest '%s' cannot be read or is larger than %d "
                               "bytes: not a manifest",
                               mpath, MANIFEST_MAX);
                failed = 1;
            }
            fclose(f);
        }
    }
    if (firn_mpi_any(failed)) {
        free(text);
        return fail_all(failed, &err);
    }
    MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    MPI_Bcast(mpath, (int)msize, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank != 0)
        text = malloc((size_t)len + 1);
    if (!text) {
        fprintf(stderr, "firn: out of host memory\n");
        MPI_Abort(MPI_COMM_WORLD, FIRN_E_NOMEM);
    }
    MPI_Bcast(text, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
    text[len] = '\0';
    failed = parse_manifest(mpath, text, (size_t)len, w, set, &err) != 0;
    free(text);
    if (firn_mpi_any(failed))
        return fail_all(failed, &err);
    /* This rank's file: where the manifest is, as it says, then loaded. */
    char path[FIRN_PATH_MAX + 200], folder[FIRN_PATH_MAX + 64];
    snprintf(folder, sizeof folder, "%s", mpath);
    char *slash = strrchr(folder, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(folder, sizeof folder, ".");
    snprintf(path, sizeof path, "%s/%s", folder, set->file[rank]);
    unsigned long long bytes = 0;
    uint32_t crc = 0;
    if (file_crc(path, &bytes, &crc)) {
        firn_set_error(&err, FIRN_E_CHECKPOINT,
                       "--resume: cannot read rank %d's checkpoint file '%s' (field 'file' of "
                       "manifest '%s'): %s",
                       rank, path, mpath, strerror(errno));
        failed = 1;
    } else if (bytes != set->bytes[rank])
        failed = bad_manifest(&err, mpath, "bytes",
                              "rank %d's file '%s' has %llu bytes; the manifest says %llu", rank,
                              path, bytes, set->bytes[rank]) != 0;
    else if (crc != set->crc[rank])
        failed = bad_manifest(&err, mpath, "crc32c",
                              "rank %d's file '%s' has checksum %08x; the manifest says %08x: "
                              "the file is damaged or of another set",
                              rank, path, (unsigned)crc, set->crc[rank]) != 0;
    else if (firn_mpi_load(w, path, set->particles[rank], &err))
        failed = 1;
    else if (w->frame != set->frame || w->substeps != set->substeps || w->time != set->time)
        failed = bad_manifest(&err, mpath, "frame",
                              "frame %d, %lld substeps, %.17g s; rank %d's file '%s' holds frame "
                              "%d, %lld substeps, %.17g s",
                              set->frame, set->substeps, set->time, rank, path, w->frame,
                              w->substeps, w->time) != 0;
    if (firn_mpi_any(failed))
        return fail_all(failed, &err);
    if (firn_mpi_check_indices(w, &err))
        return fail_all(1, &err);
    return 0;
}

/* The command that resumes this run: this one, with --resume. */
static void print_resume_hint(int argc, char **argv)
{
    fprintf(stderr, "firn: resume with: mpirun -np %d firn run", firn_mpi_size());
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
        if (strpbrk(argv[i], " \t'\"\\$`*?&;|<>()"))
            fprintf(stderr, " '%s'", argv[i]);
        else
            fprintf(stderr, " %s", argv[i]);
    }
    fprintf(stderr, " --resume\n");
}

int firn_cli_mpi_run(int argc, char **argv)
{
    const int rank = firn_mpi_rank(), size = firn_mpi_size();
    mpi_opts o;
    int rc = parse(argc, argv, &o, rank);
    if (firn_mpi_any(rc))
        return rc ? rc : FIRN_E_USAGE;
    firn_scene_def def;
    firn_error err = {0};
    int failed = firn_cli_load_scene(o.scene, &def, &err) != 0;
    if (firn_mpi_any(failed))
        return fail_all(failed, &err);
    if (o.frames)
        def.frames = o.frames;
    if (o.every)
        def.out_every = o.every;
    if (o.out)
        snprintf(def.out_dir, sizeof def.out_dir, "%s", o.out);
    firn_cli_catch_signals(1);
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    failed = !w || firn_mpi_distribute(w, &err);
    if (firn_mpi_any(failed)) {
        rc = fail_all(failed, &err);
        firn_mpi_release(w);
        firn_world_destroy(w);
        return rc;
    }
    /* Rank 0's world of the whole scene, which the frames are written from. */
    firn_world *whole = NULL;
    firn_frame_writer *fw = NULL;
    int first = 0;
    if (o.resume) {
        resume_set set;
        memset(&set, 0, sizeof set);
        char mpath[FIRN_PATH_MAX + 64];
        rc = resume(w, &o, def.out_dir, &set, mpath, sizeof mpath);
        free_set(&set);
        if (rc)
            goto done;
        first = w->frame;
        if (!o.quiet && rank == 0)
            fprintf(stderr,
                    "firn: resuming from %s (frame %d, t = %.6g s, %lld substeps, %d ranks)\n",
                    mpath, w->frame, w->time, w->substeps, size);
        if (first >= def.frames) {
            if (!o.quiet && rank == 0)
                fprintf(stderr,
                        "firn: the checkpoint is at frame %d: the run's %d frames are done\n",
                        first, def.frames);
            goto done;
        }
    }
    if (rank == 0) {
        whole = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
        failed = !whole;
        if (!failed && o.resume) {
            failed = firn_cli_prepare_resume(def.out_dir, first, o.quiet, &err) != 0;
            const int sets = failed ? 0 : remove_sets(def.out_dir, first, -1);
            if (sets > 0 && !o.quiet)
                fprintf(stderr,
                        "firn: removed %d checkpoint sets after frame %d from %s/ (they are "
                        "computed again)\n",
                        sets, first, def.out_dir);
        } else if (!failed) {
            failed = firn_cli_prepare_output(def.out_dir, o.quiet, &err) != 0;
            const int sets = failed ? 0 : remove_sets(def.out_dir, -1, -1);
            if (sets > 0 && !o.quiet)
                fprintf(stderr, "firn: removed %d checkpoint sets of an earlier run from %s/\n",
                        sets, def.out_dir);
        }
        if (!failed) {
            fw = firn_frame_writer_start(firn_world_scene(whole), def.out_dir, &err);
            failed = !fw;
        }
    }
    if (firn_mpi_any(failed)) {
        rc = fail_all(failed, &err);
        goto done;
    }
    if (!o.quiet && rank == 0)
        fprintf(stderr,
                "firn: %s: %d MPM particles on %d MPI ranks (CPU, %d OpenMP threads each) "
                "-> %s/\n",
                def.source, whole->p.n, size, omp_get_max_threads(), def.out_dir);
    const double t0 = firn_now();
    double simulating = 0.0, last_ckpt = t0;
    long long substeps = 0;
    firn_frame_stats s = {0};
    int frame = first, saved = o.resume ? first : -1;
    if (first == 0) {
        failed = firn_mpi_gather(w, whole, &err) != 0;
        if (!failed && rank == 0)
            failed = firn_world_stats(whole, &s, &err) ||
                     firn_cli_submit_frame(fw, whole, &def, &s, &err);
        if (firn_mpi_any(failed))
            rc = fail_all(failed, &err);
    }
    while (!rc) {
        /* At a frame boundary past the first, the slabs are split again
         * when the ranks' particle counts drifted apart (every rank decides
         * alike, from the positions); before the checkpoint set, whose
         * manifest then holds the new slabs. */
        if (frame > first && o.rebalance > 0.0)
            firn_mpi_rebalance(w, o.rebalance);
        /* At each frame boundary the ranks agree whether to write a
         * checkpoint set (every N frames, or by rank 0's clock) and whether
         * to stop (a signal on any rank): every rank stops at the same
         * frame, after the same set. */
        int want[2] = {firn_cli_stop_signal(), 0}, agreed[2];
        if (frame > first && o.ckpt_frames > 0 && frame % o.ckpt_frames == 0)
            want[1] = 1;
        if (frame > first && rank == 0 && o.ckpt_seconds > 0.0 &&
            firn_now() - last_ckpt >= o.ckpt_seconds)
            want[1] = 1;
        MPI_Allreduce(want, agreed, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        const int stop = agreed[0] != 0 && frame < def.frames;
        if ((agreed[1] || stop) && saved != frame) {
            if ((rc = write_set(w, fw, def.out_dir, o.quiet || stop)))
                break;
            saved = frame;
            last_ckpt = firn_now();
        }
        if (stop) {
            if (rank == 0) {
                char path[FIRN_PATH_MAX + 64];
                manifest_path(path, sizeof path, def.out_dir, frame);
                fprintf(stderr,
                        "firn: %s: every rank stopped after frame %d of %d; checkpoint %s\n",
                        firn_cli_signal_name(agreed[0]), frame, def.frames, path);
                print_resume_hint(argc, argv);
            }
            rc = 128 + agreed[0];
            break;
        }
        if (frame >= def.frames)
            break;
        firn_frame_stats local;
        failed = firn_world_step_frame(w, &local, &err) != 0;
        /* Every rank stops at the same frame: the step and a bad particle
         * are global (host/dist.h). */
        if (firn_mpi_any(failed)) {
            rc = fail_all(failed, &err);
            break;
        }
        frame = local.frame;
        failed = firn_mpi_gather(w, whole, &err) != 0;
        if (!failed && rank == 0) {
            failed = firn_world_stats(whole, &s, &err) != 0;
            if (!failed) {
                s.frame = frame;
                s.frame_substeps = local.frame_substeps;
                s.dt = local.dt;
                s.wall_seconds = local.wall_seconds;
                s.throughput = local.wall_seconds > 0.0
                                   ? (double)whole->p.n * local.frame_substeps / local.wall_seconds
                                   : 0.0;
            }
            failed = failed || firn_cli_submit_frame(fw, whole, &def, &s, &err);
        }
        if (firn_mpi_any(failed)) {
            rc = fail_all(failed, &err);
            break;
        }
        simulating += local.wall_seconds;
        substeps += local.frame_substeps;
        if (!o.quiet && rank == 0)
            fprintf(stderr, "frame %d/%d substeps %lld (+%d, dt %.3g s)\n", frame, def.frames,
                    s.substeps, local.frame_substeps, local.dt);
    }
    if (rank == 0) {
        double busy, waited;
        firn_error werr = {0};
        if (firn_frame_writer_finish(fw, &busy, &waited, &werr) && !rc)
            rc = firn_cli_fail(&werr);
        fw = NULL;
        if (!rc && !o.quiet)
            fprintf(stderr,
                    "firn: done: %d frames, %lld substeps, %.2f s simulating, %.2f s total, "
                    "%.4g particle-substeps/s\n",
                    def.frames - first, substeps, simulating, firn_now() - t0,
                    simulating > 0.0 ? (double)whole->p.n * (double)substeps / simulating : 0.0);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!rc && !o.quiet)
        firn_mpi_report(w, stderr);
done:
    if (fw) {
        double busy, waited;
        firn_error ignored;
        firn_frame_writer_finish(fw, &busy, &waited, &ignored);
    }
    firn_world_destroy(whole);
    firn_mpi_release(w);
    firn_world_destroy(w);
    return rc;
}
