/* frame_writer.c - see frame_writer.h. One worker thread; the caller and
 * the worker hand one frame back and forth under a mutex: `pending` is set
 * by the caller and cleared by the worker when the frame is on disk. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "frame_writer.h"
#include "output.h"
#include "solver.h"

/* The kinds of frame file, each with its time series: file
 * "<prefix>_<frame>.<ext>", series file `series` beside them. The solvers
 * whose tables of fields have PLY fields (host/solver.h) add a kind each
 * after these, KINDS + j: prefix the table's ply_file or the solver's
 * name (MPM's "frame", SPH's "sph"), ext "ply" (fw->table). */
enum { KIND_PBD, KIND_FEM_PLY, KIND_FEM_VTU, KIND_RIGIDS, KIND_TOOLS, KINDS };
static const struct {
    const char *prefix, *ext, *series;
} kind[KINDS] = {
    [KIND_PBD] = {"pbd", "ply", "pbd.ply.series"},
    [KIND_FEM_PLY] = {"fem", "ply", "fem.ply.series"},
    [KIND_FEM_VTU] = {"fem", "vtu", "fem.pvd"},
    [KIND_RIGIDS] = {"rigids", "ply", "rigids.ply.series"},
    [KIND_TOOLS] = {"tools", "ply", "tools.ply.series"},
};

/* A solver's PLY fields copied for the writer thread: its table with the
 * data pointers into one block (t.count 0: nothing this frame). */
typedef struct {
    int solver;      /* FIRN_SOLVER_* */
    char prefix[32]; /* its files' (the table's ply_file, else the solver's name) */
    char series[48];
    firn_field_table t;
    void *block;
    size_t bytes;
} table_copy;

struct firn_frame_writer {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int pending; /* a frame is handed over and not yet written */
    int quit;
    int failed; /* the last frame failed; err says why */
    firn_error err;
    double busy;   /* seconds the thread spent writing */
    double waited; /* seconds the caller spent waiting for it */

    const firn_scene_def *def;
    char out[FIRN_PATH_MAX];
    firn_frame_stats stats;
    int with_particles; /* this frame writes PLY / PNG */
    /* The solvers with PLY fields (found at the first frame handed over),
     * kinds KINDS + j */
    int n_tables, tables_known;
    table_copy table[FIRN_SOLVER_COUNT];
    long long pbd_capacity, tri_capacity;
    float *px, *pv, *pw;
    uint8_t *pmat;
    int *ptri;
    firn_pbd_particles_view pbd; /* n = 0: none */
    void *fem_block;             /* the FEM mesh's copy, one allocation */
    size_t fem_bytes;
    firn_fem_mesh_view fem; /* n = 0: none */

    /* The frames with files, in order, and which kinds each has (bit k:
     * kind k), for the time series; `started` once the first frame is
     * written (the series of an earlier run are taken over then). */
    int started, n_series, series_cap;
    firn_series_entry *series;
    unsigned *series_kinds;
    firn_series_entry *scratch; /* one series' entries */
};

static int add_series_entry(struct firn_frame_writer *fw, int frame, double time, unsigned kinds,
                            firn_error *err)
{
    if (fw->n_series == fw->series_cap) {
        const int cap = fw->series_cap ? 2 * fw->series_cap : 64;
        firn_series_entry *e = realloc(fw->series, (size_t)cap * sizeof *e);
        if (e)
            fw->series = e;
        unsigned *k = e ? realloc(fw->series_kinds, (size_t)cap * sizeof *k) : NULL;
        if (k)
            fw->series_kinds = k;
        firn_series_entry *sc = k ? realloc(fw->scratch, (size_t)cap * sizeof *sc) : NULL;
        if (sc)
            fw->scratch = sc;
        if (!sc) {
            firn_set_error(err, FIRN_E_NOMEM, "out of host memory for the frames' time series");
            return -1;
        }
        fw->series_cap = cap;
    }
    fw->series[fw->n_series] = (firn_series_entry){frame, time};
    fw->series_kinds[fw->n_series++] = kinds;
    return 0;
}

/* Kind k's file prefix, extension and series file (k < KINDS + n_tables). */
static void kind_of(const struct firn_frame_writer *fw, int k, const char **prefix,
                    const char **ext, const char **series)
{
    if (k < KINDS) {
        *prefix = kind[k].prefix;
        *ext = kind[k].ext;
        *series = kind[k].series;
    } else {
        const table_copy *c = &fw->table[k - KINDS];
        *prefix = c->prefix;
        *ext = "ply";
        *series = c->series;
    }
}

/* Before the first frame this writer writes (frame `first`): the frames
 * before it that stats.jsonl lists (a resumed run's; a fresh run has
 * removed the file) enter the series with the kinds whose files are there. */
static int take_over_series(struct firn_frame_writer *fw, int first, firn_error *err)
{
    char path[FIRN_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/stats.jsonl", fw->out);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (!rc && getline(&line, &cap, f) > 0) {
        int frame;
        double time;
        if (sscanf(line, "{\"frame\":%d,\"time\":%lf", &frame, &time) != 2 || frame >= first ||
            frame < 0)
            continue;
        unsigned kinds = 0;
        for (int k = 0; k < KINDS + fw->n_tables; k++) {
            const char *prefix, *ext, *series;
            kind_of(fw, k, &prefix, &ext, &series);
            snprintf(path, sizeof path, "%s/%s_%05d.%s", fw->out, prefix, frame, ext);
            kinds |= (unsigned)(access(path, F_OK) == 0) << k;
        }
        if (kinds)
            rc = add_series_entry(fw, frame, time, kinds, err);
    }
    free(line);
    fclose(f);
    return rc;
}

/* Writes the series of every kind some frame has; removes those of the
 * kinds none has (an earlier run's, in the same folder). */
static int write_series(struct firn_frame_writer *fw, firn_error *err)
{
    char path[FIRN_PATH_MAX + 64];
    for (int k = 0; k < KINDS + fw->n_tables; k++) {
        const char *prefix, *ext, *series;
        kind_of(fw, k, &prefix, &ext, &series);
        int n = 0;
        for (int i = 0; i < fw->n_series; i++)
            if (fw->series_kinds[i] >> k & 1)
                fw->scratch[n++] = fw->series[i];
        snprintf(path, sizeof path, "%s/%s", fw->out, series);
        if (n > 0) {
            if (firn_write_series(path, prefix, ext, fw->scratch, n, err))
                return -1;
        } else if (unlink(path) && errno != ENOENT) {
            firn_set_error(err, FIRN_E_IO, "cannot remove %s of an earlier run: %s", path,
                           strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* The copy of field `name` of solver k's table into *data: the elements'
 * count (0: none this frame, or no such PLY field). */
static long long table_field(const struct firn_frame_writer *fw, int k, const char *name,
                             const void **data)
{
    *data = NULL;
    for (int j = 0; j < fw->n_tables; j++) {
        const table_copy *c = &fw->table[j];
        for (int f = 0; c->solver == k && f < c->t.n; f++)
            if (c->t.f[f].ply && !strcmp(c->t.f[f].name, name)) {
                *data = c->t.f[f].data;
                return c->t.count;
            }
    }
    return 0;
}

static int write_one(struct firn_frame_writer *fw, firn_error *err)
{
    const firn_scene_def *def = fw->def;
    const firn_frame_stats *s = &fw->stats;
    char path[FIRN_PATH_MAX + 64];
    const int first = !fw->started;
    if (first && take_over_series(fw, s->frame, err))
        return -1;
    fw->started = 1;
    unsigned kinds = 0; /* the kinds written */
    const int ply = fw->with_particles && def->write_ply;
    /* A solver without elements (MPM in an SPH scene) has no file. */
    for (int j = 0; ply && j < fw->n_tables; j++) {
        const table_copy *c = &fw->table[j];
        if (c->t.count <= 0)
            continue;
        snprintf(path, sizeof path, "%s/%s_%05d.ply", fw->out, c->prefix, s->frame);
        if (firn_write_fields_ply(path, def, &c->t, err))
            return -1;
        kinds |= 1u << (KINDS + j);
    }
    if (ply && fw->pbd.n > 0) {
        snprintf(path, sizeof path, "%s/pbd_%05d.ply", fw->out, s->frame);
        if (firn_write_pbd_ply_named(path, def, &fw->pbd, err))
            return -1;
        kinds |= 1u << KIND_PBD;
    }
    if (ply && fw->fem.n > 0) {
        snprintf(path, sizeof path, "%s/fem_%05d.ply", fw->out, s->frame);
        if (firn_write_fem_ply(path, &fw->fem, err))
            return -1;
        snprintf(path, sizeof path, "%s/fem_%05d.vtu", fw->out, s->frame);
        if (firn_write_fem_vtu(path, &fw->fem, err))
            return -1;
        kinds |= 1u << KIND_FEM_PLY | 1u << KIND_FEM_VTU;
    }
    if (ply && def->n_rigids > 0) {
        snprintf(path, sizeof path, "%s/rigids_%05d.ply", fw->out, s->frame);
        if (firn_write_rigids_ply(path, def, s, err))
            return -1;
        kinds |= 1u << KIND_RIGIDS;
    }
    if (ply && def->n_tools > 0) {
        snprintf(path, sizeof path, "%s/tools_%05d.ply", fw->out, s->frame);
        if (firn_write_tools_ply(path, def, s, err))
            return -1;
        kinds |= 1u << KIND_TOOLS;
    }
    if (fw->with_particles && def->write_preview) {
        snprintf(path, sizeof path, "%s/frame_%05d.png", fw->out, s->frame);
        const void *mx, *mmat, *sx;
        const long long mn = table_field(fw, FIRN_SOLVER_MPM, "x", &mx),
                        sn = table_field(fw, FIRN_SOLVER_SPH, "x", &sx);
        table_field(fw, FIRN_SOLVER_MPM, "mat", &mmat);
        const firn_particles_view mpm = {.n = mn, .x = mx, .mat = mmat};
        const firn_sph_particles_view sph = {.n = sn, .x = sx};
        const firn_preview what = {&mpm, &sph, &fw->pbd, &fw->fem, s};
        if (firn_write_preview(path, def, &what, err))
            return -1;
    }
    /* The series after the files they name, rewritten whole after each
     * frame with files, so that a stopped run leaves valid ones. */
    if ((kinds && add_series_entry(fw, s->frame, s->time, kinds, err)) ||
        ((kinds || first) && write_series(fw, err)))
        return -1;
    /* Last: a statistics line stands for a frame whose files are written. */
    snprintf(path, sizeof path, "%s/stats.jsonl", fw->out);
    return firn_append_stats_jsonl(path, def, s, err);
}

static void *worker(void *arg)
{
    struct firn_frame_writer *fw = arg;
    pthread_mutex_lock(&fw->lock);
    for (;;) {
        while (!fw->pending && !fw->quit)
            pthread_cond_wait(&fw->cv, &fw->lock);
        if (!fw->pending)
            break; /* quit with nothing left */
        pthread_mutex_unlock(&fw->lock);
        /* The caller does not touch the frame while it is pending. */
        firn_error err = {0};
        double t0 = firn_now();
        int rc = write_one(fw, &err);
        double dt = firn_now() - t0;
        pthread_mutex_lock(&fw->lock);
        fw->busy += dt;
        if (rc) {
            fw->failed = 1;
            fw->err = err;
        }
        fw->pending = 0;
        pthread_cond_broadcast(&fw->cv);
    }
    pthread_mutex_unlock(&fw->lock);
    return NULL;
}

/* The solvers whose tables have PLY fields, in solver order, once. */
static void find_tables(struct firn_frame_writer *fw, firn_world *w)
{
    if (fw->tables_known)
        return;
    fw->tables_known = 1;
    for (int k = 0; k < FIRN_SOLVER_COUNT; k++) {
        const firn_solver *sv = firn_solver_of(k);
        if (!sv->fields)
            continue;
        firn_field_table t;
        sv->fields(w, &t);
        int ply = 0;
        for (int f = 0; f < t.n; f++)
            ply |= t.f[f].ply != NULL;
        if (!ply)
            continue;
        table_copy *c = &fw->table[fw->n_tables++];
        c->solver = k;
        const char *prefix = t.ply_file ? t.ply_file : sv->name;
        snprintf(c->prefix, sizeof c->prefix, "%s", prefix);
        snprintf(c->series, sizeof c->series, "%s.ply.series", prefix);
    }
}

/* Copies the PLY fields of c's solver in w (none: t.count 0), its host copy
 * brought up to date first. */
static int copy_table(table_copy *c, firn_world *w, int frame, firn_error *err)
{
    const firn_solver *sv = firn_solver_of(c->solver);
    firn_field_table t;
    sv->fields(w, &t);
    c->t.count = 0;
    if (t.count <= 0)
        return 0;
    const char *first = NULL;
    for (int f = 0; f < t.n && !first; f++)
        first = t.f[f].ply ? t.f[f].name : NULL;
    firn_field_view view;
    if (firn_world_field(w, sv->name, first, &view, err))
        return -1;
    sv->fields(w, &t); /* the pointers after a download */
    size_t bytes = 0;
    for (int f = 0; f < t.n; f++)
        bytes += t.f[f].ply ? firn_field_bytes(&t.f[f], t.count) : 0;
    if (bytes > c->bytes) {
        free(c->block);
        c->block = malloc(bytes);
        c->bytes = c->block ? bytes : 0;
        if (!c->block) {
            firn_set_error(err, FIRN_E_NOMEM,
                           "out of host memory for a copy of frame %d (%lld %ss, %.1f MiB)", frame,
                           t.count, t.entity, (double)bytes / (1 << 20));
            return -1;
        }
    }
    unsigned char *at = c->block;
    for (int f = 0; f < t.n; f++) {
        if (!t.f[f].ply) {
            t.f[f].data = NULL; /* not the writer's */
            continue;
        }
        const size_t n = firn_field_bytes(&t.f[f], t.count);
        memcpy(at, t.f[f].data, n);
        t.f[f].data = at;
        at += n;
    }
    c->t = t;
    return 0;
}

static void free_pbd_copy(struct firn_frame_writer *fw)
{
    free(fw->px), free(fw->pv), free(fw->pw), free(fw->pmat), free(fw->ptri);
    fw->px = fw->pv = fw->pw = NULL;
    fw->pmat = NULL;
    fw->ptri = NULL;
    fw->pbd_capacity = fw->tri_capacity = 0;
}

/* The PBD particles' copy (view n = 0: none); the triangles never change,
 * but are copied with them so that the frame stands alone. */
static int copy_pbd(struct firn_frame_writer *fw, const firn_pbd_particles_view *view, int frame,
                    firn_error *err)
{
    const long long n = view ? view->n : 0, t = view ? view->triangles : 0;
    memset(&fw->pbd, 0, sizeof fw->pbd);
    if (n <= 0)
        return 0;
    if (n > fw->pbd_capacity || t > fw->tri_capacity) {
        free_pbd_copy(fw);
        size_t m = (size_t)n;
        fw->px = malloc(3 * m * sizeof(float));
        fw->pv = malloc(3 * m * sizeof(float));
        fw->pw = malloc(m * sizeof(float));
        fw->pmat = malloc(m);
        fw->ptri = malloc(3 * ((size_t)t + 1) * sizeof(int));
        fw->pbd_capacity = n;
        fw->tri_capacity = t;
        if (!fw->px || !fw->pv || !fw->pw || !fw->pmat || !fw->ptri) {
            free_pbd_copy(fw);
            firn_set_error(err, FIRN_E_NOMEM,
                           "out of host memory for a copy of frame %d (%lld PBD particles)", frame,
                           n);
            return -1;
        }
    }
    memcpy(fw->px, view->x, 3 * (size_t)n * sizeof(float));
    memcpy(fw->pv, view->v, 3 * (size_t)n * sizeof(float));
    memcpy(fw->pw, view->w, (size_t)n * sizeof(float));
    memcpy(fw->pmat, view->mat, (size_t)n);
    memcpy(fw->ptri, view->tri, 3 * (size_t)t * sizeof(int));
    fw->pbd = (firn_pbd_particles_view){n, fw->px, fw->pv, fw->pw, fw->pmat, t, fw->ptri};
    return 0;
}

/* The FEM mesh's copy (view n = 0: none), its arrays in one block. */
static int copy_fem(struct firn_frame_writer *fw, const firn_fem_mesh_view *m, int frame,
                    firn_error *err)
{
    memset(&fw->fem, 0, sizeof fw->fem);
    if (!m || m->n <= 0)
        return 0;
    const size_t n = (size_t)m->n, ne = (size_t)m->elements, nt = (size_t)m->triangles;
    const size_t bytes =
        6 * n * sizeof(float) + 13 * ne * sizeof(float) + (4 * ne + 3 * nt) * sizeof(int) + n + ne;
    if (bytes > fw->fem_bytes) {
        free(fw->fem_block);
        fw->fem_block = malloc(bytes);
        fw->fem_bytes = fw->fem_block ? bytes : 0;
        if (!fw->fem_block) {
            firn_set_error(err, FIRN_E_NOMEM,
                           "out of host memory for a copy of frame %d (%lld FEM vertices, %lld "
                           "elements)",
                           frame, m->n, m->elements);
            return -1;
        }
    }
    /* floats first, then ints, then bytes: each part stays aligned */
    float *f = fw->fem_block;
    float *x = f, *v = x + 3 * n, *stress = v + 3 * n, *strain = stress + 6 * ne,
          *vm = strain + 6 * ne;
    int *tet = (int *)(vm + ne), *tri = tet + 4 * ne;
    uint8_t *fixed = (uint8_t *)(tri + 3 * nt), *mat = fixed + n;
    memcpy(x, m->x, 3 * n * sizeof(float));
    memcpy(v, m->v, 3 * n * sizeof(float));
    memcpy(stress, m->stress, 6 * ne * sizeof(float));
    memcpy(strain, m->strain, 6 * ne * sizeof(float));
    memcpy(vm, m->von_mises, ne * sizeof(float));
    memcpy(tet, m->tet, 4 * ne * sizeof(int));
    memcpy(tri, m->tri, 3 * nt * sizeof(int));
    memcpy(fixed, m->fixed, n);
    memcpy(mat, m->mat, ne);
    fw->fem = (firn_fem_mesh_view){m->n, x,      v,      fixed, m->elements,  tet,
                                   mat,  stress, strain, vm,    m->triangles, tri};
    return 0;
}

firn_frame_writer *firn_frame_writer_start(const firn_scene_def *def, const char *out,
                                           firn_error *err)
{
    struct firn_frame_writer *fw = calloc(1, sizeof *fw);
    if (!fw) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for the frame writer");
        return NULL;
    }
    fw->def = def;
    snprintf(fw->out, sizeof fw->out, "%s", out);
    pthread_mutex_init(&fw->lock, NULL);
    pthread_cond_init(&fw->cv, NULL);
    int e = pthread_create(&fw->thread, NULL, worker, fw);
    if (e) {
        pthread_cond_destroy(&fw->cv);
        pthread_mutex_destroy(&fw->lock);
        free(fw);
        firn_set_error(err, FIRN_E_NOMEM, "cannot start the frame writer thread: %s", strerror(e));
        return NULL;
    }
    return fw;
}

/* Waits for the frame in flight; returns its failure (and clears it). */
static int wait_idle(struct firn_frame_writer *fw, firn_error *err)
{
    double t0 = firn_now();
    pthread_mutex_lock(&fw->lock);
    while (fw->pending)
        pthread_cond_wait(&fw->cv, &fw->lock);
    int failed = fw->failed;
    if (failed) {
        *err = fw->err;
        fw->failed = 0;
    }
    pthread_mutex_unlock(&fw->lock);
    fw->waited += firn_now() - t0;
    return failed ? -1 : 0;
}

int firn_frame_writer_submit(firn_frame_writer *fw, firn_world *w, int files,
                             const firn_frame_stats *s, firn_error *err)
{
    if (wait_idle(fw, err))
        return -1;
    find_tables(fw, w);
    for (int j = 0; j < fw->n_tables; j++) {
        if (!files)
            fw->table[j].t.count = 0;
        else if (copy_table(&fw->table[j], w, s->frame, err))
            return -1;
    }
    firn_pbd_particles_view pbd;
    firn_fem_mesh_view fem;
    if (files && (firn_world_pbd_particles(w, &pbd, err) || firn_world_fem_mesh(w, &fem, err)))
        return -1;
    if (copy_pbd(fw, files ? &pbd : NULL, s->frame, err) ||
        copy_fem(fw, files ? &fem : NULL, s->frame, err))
        return -1;
    fw->stats = *s;
    fw->with_particles = files != 0;
    pthread_mutex_lock(&fw->lock);
    fw->pending = 1;
    pthread_cond_broadcast(&fw->cv);
    pthread_mutex_unlock(&fw->lock);
    return 0;
}

int firn_frame_writer_flush(firn_frame_writer *fw, firn_error *err) { return wait_idle(fw, err); }

int firn_frame_writer_finish(firn_frame_writer *fw, double *busy, double *waited, firn_error *err)
{
    int rc = wait_idle(fw, err);
    pthread_mutex_lock(&fw->lock);
    fw->quit = 1;
    pthread_cond_broadcast(&fw->cv);
    pthread_mutex_unlock(&fw->lock);
    pthread_join(fw->thread, NULL);
    if (busy)
        *busy = fw->busy;
    if (waited)
        *waited = fw->waited;
    pthread_cond_destroy(&fw->cv);
    pthread_mutex_destroy(&fw->lock);
    for (int j = 0; j < fw->n_tables; j++)
        free(fw->table[j].block);
    free_pbd_copy(fw);
    free(fw->fem_block);
    free(fw->series), free(fw->series_kinds), free(fw->scratch);
    free(fw);
    return rc;
}

/* The folder dir/ for one frame of firn_world_write_frame: an existing
 * folder, not held by a `firn run` (a .firn.lock there that another process
 * holds), whose stats.jsonl has no line of frame `frame` or later. Returns
 * the lock file's descriptor, locked (-2 when there is none), or -1 with
 * err filled. */
static int frame_folder(const char *dir, int frame, firn_error *err)
{
    struct stat st;
    if (stat(dir, &st)) {
        firn_set_error(err, FIRN_E_IO, "cannot write frame %d into %s: %s", frame, dir,
                       strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        firn_set_error(err, FIRN_E_IO, "cannot write frame %d into %s: not a folder", frame, dir);
        return -1;
    }
    char path[FIRN_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/.firn.lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno != ENOENT) {
        firn_set_error(err, FIRN_E_IO, "cannot open the lock file %s: %s", path, strerror(errno));
        return -1;
    }
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB)) {
        const int e = errno;
        close(fd);
        firn_set_error(err, FIRN_E_IO,
                       e == EWOULDBLOCK ? "output folder %s/ is in use by a firn run (lock file "
                                          "%s); wait for it to end, or write into another folder"
                                        : "cannot lock %s/ (lock file %s)",
                       dir, path);
        return -1;
    }
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    FILE *f = fopen(path, "r");
    int later = -1;
    if (f) {
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, f) > 0) {
            int k;
            if (sscanf(line, "{\"frame\":%d", &k) == 1 && k >= frame && k > later)
                later = k;
        }
        free(line);
        fclose(f);
    }
    if (later >= 0) {
        if (fd >= 0)
            close(fd);
        firn_set_error(err, FIRN_E_USAGE,
                       "cannot write frame %d into %s/: its stats.jsonl already has frame %d, and "
                       "frames are appended in order; write into another folder",
                       frame, dir, later);
        return -1;
    }
    return fd >= 0 ? fd : -2;
}

int firn_world_write_frame(firn_world *w, const char *dir, const firn_frame_stats *stats,
                           firn_error *err)
{
    static const char fn[] = "firn_world_write_frame";
    if (!w || !dir || !*dir) {
        firn_set_error(err, FIRN_E_USAGE, "%s: %s", fn, !w ? "no world" : "no folder");
        return -1;
    }
    if (strlen(dir) >= FIRN_PATH_MAX) {
        firn_set_error(err, FIRN_E_USAGE, "%s: folder name longer than %d bytes", fn,
                       FIRN_PATH_MAX - 1);
        return -1;
    }
    int frame;
    long long substeps;
    firn_world_clock(w, &frame, NULL, &substeps);
    if (stats && (stats->frame != frame || stats->substeps != substeps)) {
        firn_set_error(err, FIRN_E_USAGE,
                       "%s: the statistics given are of frame %d after %lld substeps, the world "
                       "is at frame %d after %lld substeps",
                       fn, stats->frame, stats->substeps, frame, substeps);
        return -1;
    }
    firn_frame_stats s;
    if (stats)
        s = *stats;
    else if (firn_world_stats(w, &s, err))
        return -1;
    const int lock = frame_folder(dir, frame, err);
    if (lock == -1)
        return -1;
    const firn_scene_def *def = firn_world_scene(w);
    const int files = def->write_ply || def->write_preview;
    int rc = -1;
    {
        firn_frame_writer *fw = firn_frame_writer_start(def, dir, err);
        if (fw) {
            rc = firn_frame_writer_submit(fw, w, files, &s, err);
            firn_error ferr = {0};
            if (firn_frame_writer_finish(fw, NULL, NULL, &ferr) && !rc) {
                if (err)
                    *err = ferr;
                rc = -1;
            }
        }
    }
    if (lock >= 0)
        close(lock);
    return rc;
}
