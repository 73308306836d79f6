/* checkpoint.c - checkpoint files: the whole state a world needs to
 * continue, written and read section by section (format: docs/CLI.md,
 * "Checkpoints").
 *
 * What is saved is what the next substep or the next frame's statistics
 * read: the MPM particles (every field, plastic state and damage, volume
 * and material), their CPIC records, the CPU path's particle layout, the
 * rigid bodies' pose, velocities, angular momentum, coupling bookkeeping
 * and pending coupling impulse, the SPH particles (every field), the SPH
 * solver's iteration counters, the tools (pose, commanded velocities,
 * clock and whether they follow their keyframes, and the sums of their
 * reaction), the FEM vertices' positions and velocities, the clocks (frame, substeps, time) and the
 * last substep's length. The grid is not: every substep clears it before P2G fills it, so nothing a
 * substep computes reads it. Materials, parameters, rigid shapes and keyframes come from the scene,
 * whose hash the header holds.
 *
 * Particles are saved in the scene's order, as both backends present them,
 * so a checkpoint of one backend resumes on the other. The CPU path keeps
 * its particles in an order of its own once it has reordered them for
 * locality (host/solver_cpu.c), and that order fixes the order of every
 * sum it takes; its layout section puts it back, so that a run resumed on
 * the CPU path continues bitwise. */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "dist.h"
#include "error.h"
#include "output.h"
#include "world.h"

_Static_assert(FIRN_CHECKPOINT_VERSION == 3, "the sections below are version 3's");
#define VERSION FIRN_CHECKPOINT_VERSION
/* Version 1 is version 3 without the tool and FEM sections, version 2
 * without the FEM section (they saved no world with tools, with FEM
 * bodies), so both are read as they are. */
#define OLDEST_VERSION  1
#define BYTE_ORDER_MARK 0x01020304u
#define TRAILER_BYTES   8
#define SECTION_BYTES   16 /* tag, zero, payload bytes */
/* A rigid body's record: 23 floats (x, q, v, w, L, force, torque,
 * couple_dt) and 7 doubles (impulse, time); then each body's pending
 * coupling impulse, FIRN_RIGID_ACC doubles. */
#define RIGID_RECORD (23 * 4 + 7 * 8)
#define RIGID_BYTES  (RIGID_RECORD + FIRN_RIGID_ACC * 8)
/* The tool section: the tools' frame time (a double), then per tool its
 * record: x, q, v, w (13 floats), its clock (a double), its keyframes
 * followed (an int32: 0 or the scene's count), x0, q0 (7 floats), the
 * reaction's last, frame and total sums (18 doubles) and the last
 * substep (a float). */
#define TOOL_RECORD (13 * 4 + 8 + 4 + 7 * 4 + 18 * 8 + 4)
#define WORLD_BYTES 40
/* The MPM, SPH, PBD and FEM sections hold their solver's saved fields
 * (firn_field_table, FIRN_FIELD_SAVED), each whole in table order: MPM
 * 109 bytes a particle (27 floats and the material byte), SPH 53 (13 and
 * the material byte), PBD and FEM 24 (x and v; masses, pins, topology and
 * meshes come from the scene). */
#define CHUNK (1 << 20)

/* ---- CRC-32C (slicing by 8) ------------------------------------------------ */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

uint32_t firn_crc32c(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&crc_once, crc_init);
    const unsigned char *p = data;
    crc = ~crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        uint32_t hi =
            (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
              crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^
              crc_table[2][(hi >> 8) & 0xff] ^ crc_table[1][(hi >> 16) & 0xff] ^
              crc_table[0][hi >> 24];
    }
    for (; n > 0; n--)
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* ---- the header ---------------------------------------------------------------- */

/* The header's fields; on disk at the offsets of pack_header, in the
 * writer's byte order. Magic, version and byte-order mark keep their
 * places in every version. */
typedef struct {
    uint32_t version, bom, header_bytes;
    uint8_t sizes[4]; /* float, double, int, long long */
    uint64_t file_bytes, scene_hash;
    int32_t frame, backend;
    int64_t substeps;
    double time;
    int32_t particles, cpic_slots, sph_particles, rigids;
    uint32_t sections;
} header;

static const uint8_t type_sizes[4] = {sizeof(float), sizeof(double), sizeof(int),
                                      sizeof(long long)};

static void put_at(unsigned char *b, size_t off, const void *v, size_t n) { memcpy(b + off, v, n); }
static void get_at(const unsigned char *b, size_t off, void *v, size_t n) { memcpy(v, b + off, n); }

/* The header's fields at their offsets: copied into b (store) or out of it. */
static void move_fields(header *h, unsigned char *b, int store)
{
#define FIELD(off, ptr, n) (store ? memcpy(b + (off), (ptr), (n)) : memcpy((ptr), b + (off), (n)))
    FIELD(8, &h->version, 4), FIELD(12, &h->bom, 4), FIELD(16, &h->header_bytes, 4);
    FIELD(20, h->sizes, 4), FIELD(24, &h->file_bytes, 8), FIELD(32, &h->scene_hash, 8);
    FIELD(40, &h->frame, 4), FIELD(44, &h->backend, 4), FIELD(48, &h->substeps, 8);
    FIELD(56, &h->time, 8), FIELD(64, &h->particles, 4), FIELD(68, &h->cpic_slots, 4);
    FIELD(72, &h->sph_particles, 4), FIELD(76, &h->rigids, 4), FIELD(80, &h->sections, 4);
#undef FIELD
}

static void pack_header(const header *h, unsigned char b[FIRN_CHECKPOINT_HEADER_BYTES])
{
    header c = *h;
    memset(b, 0, FIRN_CHECKPOINT_HEADER_BYTES);
    memcpy(b, FIRN_CHECKPOINT_MAGIC, 8);
    move_fields(&c, b, 1);
    uint32_t crc = firn_crc32c(0, b, FIRN_CHECKPOINT_HEADER_BYTES - 4);
    put_at(b, FIRN_CHECKPOINT_HEADER_BYTES - 4, &crc, 4);
}

static void unpack_header(const unsigned char *b, header *h)
{
    move_fields(h, (unsigned char *)b, 0);
}

/* ---- sections -------------------------------------------------------------------- */

/* The sections: the world's core (its clocks, the CPIC records, the CPU
 * path's layout, the rigid bodies, the tools, a distributed run's rank),
 * then one per solver (SEC_SOLVER + FIRN_SOLVER_*) whose table names a
 * section (firn_solver.section): its saved fields. */
enum { SEC_WORLD, SEC_CPIC, SEC_LAYOUT, SEC_RIGID, SEC_TOOL, SEC_DIST, SEC_SOLVER };
#define SEC_COUNT (SEC_SOLVER + FIRN_SOLVER_COUNT)
static const char core_tag[SEC_SOLVER][5] = {"WRLD", "CPIC", "CPUL", "RIGD", "TOOL", "MPIR"};

/* The solver whose fields section sec holds (FIRN_SOLVER_*), or -1. */
static int section_solver(int sec)
{
    return sec >= SEC_SOLVER && sec < SEC_COUNT && firn_solver_of(sec - SEC_SOLVER)->section
               ? sec - SEC_SOLVER
               : -1;
}

/* Section sec's tag, or NULL (a solver without a section). */
static const char *section_tag(int sec)
{
    return sec < SEC_SOLVER ? core_tag[sec] : firn_solver_of(sec - SEC_SOLVER)->section;
}

/* The section of tag b (4 bytes), or -1. */
static int section_of_tag(const unsigned char *b)
{
    for (int sec = 0; sec < SEC_COUNT; sec++)
        if (section_tag(sec) && !memcmp(b, section_tag(sec), 4))
            return sec;
    return -1;
}

/* The order sections are written in: format 3's (the tags a reader of
 * version 3 meets in this order, though it takes them in any), then the
 * section of any solver not in it, in solver order, then a distributed
 * run's. Fills order[] and returns its length. */
static int section_order(int order[SEC_COUNT])
{
    static const char *const v3[] = {"WRLD", "MPMP", "CPIC", "CPUL", "RIGD",
                                     "SPHP", "PBDP", "TOOL", "FEMV"};
    int n = 0, placed[SEC_COUNT] = {0};
    for (size_t k = 0; k < sizeof v3 / sizeof v3[0]; k++) {
        const int sec = section_of_tag((const unsigned char *)v3[k]);
        if (sec >= 0 && sec != SEC_DIST && !placed[sec])
            placed[sec] = 1, order[n++] = sec;
    }
    for (int sec = SEC_SOLVER; sec < SEC_COUNT; sec++)
        if (section_solver(sec) >= 0 && !placed[sec])
            placed[sec] = 1, order[n++] = sec;
    order[n++] = SEC_DIST;
    return n;
}

/* Solver k's table of fields (the table only records w's pointers). */
static void fields_of(const firn_world *w, int k, firn_field_table *t)
{
    firn_solver_of(k)->fields((firn_world *)w, t);
}

/* Payload bytes of solver k's section: its saved fields, whole. */
static uint64_t saved_bytes(const firn_world *w, int k)
{
    firn_field_table t;
    fields_of(w, k, &t);
    uint64_t bytes = 0;
    for (int f = 0; f < t.n; f++)
        if (t.f[f].flags & FIRN_FIELD_SAVED)
            bytes += firn_field_bytes(&t.f[f], t.count);
    return bytes;
}

/* Payload bytes of each section of w's checkpoint; 0: not in the file.
 * The world section is always there. */
static void section_sizes(const firn_world *w, uint64_t size[SEC_COUNT])
{
    const uint64_t n = (uint64_t)w->p.n;
    size[SEC_WORLD] = WORLD_BYTES;
    size[SEC_CPIC] = 4 * (uint64_t)w->p.cpic_slots * n;
    size[SEC_LAYOUT] = !w->cuda && w->bins.permuted ? 16 + 4 * n : 0;
    size[SEC_RIGID] = RIGID_BYTES * (uint64_t)w->n_rigids;
    size[SEC_TOOL] = w->n_tools > 0 ? 8 + TOOL_RECORD * (uint64_t)w->n_tools : 0;
    for (int sec = SEC_SOLVER; sec < SEC_COUNT; sec++)
        size[sec] = section_solver(sec) >= 0 ? saved_bytes(w, section_solver(sec)) : 0;
    /* One rank's file of a distributed run (host/dist_mpi.c): its rank, the
     * rank count, the scene's particle count, then each particle's scene
     * index. */
    size[SEC_DIST] = w->dist ? 16 + 4 * n : 0;
}

/* The arrays of a particle section, in file order: pointer and bytes. */
typedef struct {
    void *data;
    size_t bytes;
} span;

/* The saved fields of the solver of section sec, in file order. */
static int field_spans(const firn_world *w, int sec, span s[FIRN_MAX_FIELDS])
{
    firn_field_table t;
    fields_of(w, section_solver(sec), &t);
    int m = 0;
    for (int f = 0; f < t.n; f++)
        if (t.f[f].flags & FIRN_FIELD_SAVED)
            s[m++] = (span){t.f[f].data, firn_field_bytes(&t.f[f], t.count)};
    return m;
}

static void pack_world(const firn_world *w, unsigned char b[WORLD_BYTES])
{
    const firn_sph *S = &w->sph;
    put_at(b, 0, &w->params.dt, 4), put_at(b, 4, &S->P.dt, 4), put_at(b, 8, S->iters, 8);
    put_at(b, 16, S->iters_total, 16), put_at(b, 32, &S->solves, 8);
}

static void unpack_world(firn_world *w, const unsigned char b[WORLD_BYTES])
{
    firn_sph *S = &w->sph;
    get_at(b, 0, &w->params.dt, 4), get_at(b, 4, &S->P.dt, 4), get_at(b, 8, S->iters, 8);
    get_at(b, 16, S->iters_total, 16), get_at(b, 32, &S->solves, 8);
}

/* A rigid body's fields in record order: pointer and bytes. */
static int rigid_fields(firn_rigid *b, span s[10])
{
    span t[10] = {{b->x, 12},       {b->q.q, 16},   {b->v, 12},      {b->w, 12},
                  {b->L, 12},       {b->force, 12}, {b->torque, 12}, {&b->couple_dt, 4},
                  {b->impulse, 48}, {&b->time, 8}};
    memcpy(s, t, sizeof t);
    return 10;
}

/* A tool's fields in record order (n_keys apart: an int32 checked on
 * reading). */
static int tool_fields(firn_tool *t, firn_tool_record *r, span s[12])
{
    firn_rigid *b = &t->body;
    span u[12] = {{b->x, 12},    {b->q.q, 16},    {b->v, 12},     {b->w, 12},
                  {&b->time, 8}, {&b->n_keys, 4}, {t->x0, 12},    {t->q0.q, 16},
                  {r->last, 48}, {r->frame, 48},  {r->total, 48}, {&r->last_dt, 4}};
    memcpy(s, u, sizeof u);
    return 12;
}

/* ---- writing ------------------------------------------------------------------------- */

typedef struct {
    FILE *f;
    uint32_t crc;
    int failed;
} sink;

static void put(sink *s, const void *data, size_t n)
{
    if (s->failed || n == 0)
        return;
    if (fwrite(data, 1, n, s->f) != n) {
        s->failed = 1;
        return;
    }
    s->crc = firn_crc32c(s->crc, data, n);
}

static void put_section(sink *s, int sec, uint64_t bytes)
{
    unsigned char b[SECTION_BYTES] = {0};
    memcpy(b, section_tag(sec), 4);
    put_at(b, 8, &bytes, 8);
    put(s, b, sizeof b);
}

/* A solver's section: its saved fields, in table order. */
static void put_fields(sink *s, const firn_world *w, int sec, uint64_t bytes)
{
    span sp[FIRN_MAX_FIELDS];
    put_section(s, sec, bytes);
    for (int k = 0, m = field_spans(w, sec, sp); k < m; k++)
        put(s, sp[k].data, sp[k].bytes);
}

/* The test hook of docs/CLI.md: with FIRN_TEST_CHECKPOINT_PAUSE=K the
 * checkpoint of frame K, written and synced, waits before its rename until
 * the process is killed. */
static void test_pause(const firn_world *w, const char *path)
{
    const char *hook = getenv("FIRN_TEST_CHECKPOINT_PAUSE");
    if (!hook || !*hook || atoi(hook) != w->frame)
        return;
    fprintf(stderr, "firn: test hook: checkpoint %s written, paused before its rename\n", path);
    fflush(stderr);
    for (;;)
        pause();
}

/* Section sec of w (bytes long; wb: the world section's packed bytes). */
static void put_any_section(sink *s, firn_world *w, int sec, uint64_t bytes,
                            const unsigned char wb[WORLD_BYTES])
{
    if (section_solver(sec) >= 0) {
        put_fields(s, w, sec, bytes);
        return;
    }
    span sp[12];
    put_section(s, sec, bytes);
    switch (sec) {
    case SEC_WORLD:
        put(s, wb, WORLD_BYTES);
        break;
    case SEC_CPIC:
        put(s, w->p.cpic, bytes);
        break;
    case SEC_LAYOUT: {
        const int32_t permuted = 1, zero = 0;
        const int64_t reorders = w->bins.reorders;
        put(s, &reorders, 8), put(s, &permuted, 4), put(s, &zero, 4);
        put(s, w->bins.id, 4 * (size_t)w->p.n);
        break;
    }
    case SEC_RIGID:
        for (int k = 0; k < w->n_rigids; k++)
            for (int j = 0, m = rigid_fields(&w->rigids[k], sp); j < m; j++)
                put(s, sp[j].data, sp[j].bytes);
        put(s, w->rigid_acc, (size_t)w->n_rigids * FIRN_RIGID_ACC * sizeof(double));
        break;
    case SEC_TOOL:
        put(s, &w->tool_frame_time, 8);
        for (int k = 0; k < w->n_tools; k++)
            for (int j = 0, m = tool_fields(&w->tools[k], &w->tool_rec[k], sp); j < m; j++)
                put(s, sp[j].data, sp[j].bytes);
        break;
    default: { /* SEC_DIST */
        int32_t head[4] = {0, 0, 0, 0};
        const int *index = w->dist->indices(w, &head[0], &head[1], &head[2]);
        put(s, head, sizeof head);
        put(s, index, 4 * (size_t)w->p.n);
        break;
    }
    }
}

typedef struct {
    firn_world *w;
    const char *path;
} save_ctx;

static int emit_checkpoint(FILE *f, void *arg)
{
    const save_ctx *c = arg;
    firn_world *w = c->w;
    uint64_t size[SEC_COUNT];
    section_sizes(w, size);
    header h;
    memset(&h, 0, sizeof h);
    h.version = VERSION;
    h.bom = BYTE_ORDER_MARK;
    h.header_bytes = FIRN_CHECKPOINT_HEADER_BYTES;
    memcpy(h.sizes, type_sizes, 4);
    h.file_bytes = FIRN_CHECKPOINT_HEADER_BYTES + TRAILER_BYTES;
    for (int k = 0; k < SEC_COUNT; k++)
        if (k == SEC_WORLD || size[k] > 0) {
            h.file_bytes += SECTION_BYTES + size[k];
            h.sections++;
        }
    h.scene_hash = w->scene_hash;
    h.frame = w->frame;
    h.backend = w->backend;
    h.substeps = w->substeps;
    h.time = w->time;
    h.particles = w->p.n;
    h.cpic_slots = w->p.cpic_slots;
    h.sph_particles = w->sph.n;
    h.rigids = w->n_rigids;
    unsigned char hb[FIRN_CHECKPOINT_HEADER_BYTES], wb[WORLD_BYTES];
    pack_header(&h, hb);
    sink s = {f, 0, 0};
    put(&s, hb, sizeof hb);

    pack_world(w, wb);
    int order[SEC_COUNT];
    for (int k = 0, m = section_order(order); k < m; k++)
        if (order[k] == SEC_WORLD || size[order[k]] > 0)
            put_any_section(&s, w, order[k], size[order[k]], wb);
    put(&s, "FEND", 4);
    const uint32_t crc = s.crc;
    put(&s, &crc, 4);
    if (s.failed || fflush(f) != 0 || fsync(fileno(f)) != 0)
        return -1;
    test_pause(w, c->path);
    return 0;
}

/* Syncs the folder of path, so that the rename that put the checkpoint in
 * place survives a crash of the machine as the file's contents do. Best
 * effort: the file itself is complete either way. */
static void sync_folder(const char *path)
{
    char dir[FIRN_PATH_MAX + 96];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int firn_world_save(firn_world *w, const char *path, firn_error *err)
{
    if (firn_world_host_state(w, err))
        return -1;
    save_ctx c = {w, path};
    if (firn_write_atomic(path, emit_checkpoint, &c, err))
        return -1;
    sync_folder(path);
    return 0;
}

/* ---- reading ------------------------------------------------------------------------------ */

typedef struct {
    FILE *f;
    const char *path;
    uint32_t crc;
    uint64_t pos, size;
} source;

static int refuse(firn_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int refuse(firn_error *err, const char *path, const char *fmt, ...)
{
    char what[FIRN_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    firn_set_error(err, FIRN_E_CHECKPOINT, "checkpoint '%s' %s", path, what);
    return -1;
}

/* n bytes into data, in chunks, the CRC taken as they come. The file's
 * size was checked against its header, so a short read is an I/O error. */
static int get(source *s, void *data, size_t n, firn_error *err)
{
    unsigned char *p = data;
    while (n > 0) {
        const size_t want = n < CHUNK ? n : CHUNK;
        if (fread(p, 1, want, s->f) != want) {
            if (ferror(s->f))
                firn_set_error(err, FIRN_E_IO, "cannot read checkpoint '%s': %s", s->path,
                               strerror(errno));
            else
                refuse(err, s->path, "is truncated: it ends at byte %llu of %llu",
                       (unsigned long long)(s->pos + (size_t)(p - (unsigned char *)data)),
                       (unsigned long long)s->size);
            return -1;
        }
        s->crc = firn_crc32c(s->crc, p, want);
        s->pos += want;
        p += want;
        n -= want;
    }
    return 0;
}

/* Reads n bytes that this world has no use for (the CPU layout on the GPU). */
static int skip(source *s, uint64_t n, firn_error *err)
{
    unsigned char buf[8192];
    while (n > 0) {
        const size_t k = n < sizeof buf ? (size_t)n : sizeof buf;
        if (get(s, buf, k, err))
            return -1;
        n -= k;
    }
    return 0;
}

/* A frame's time is the sum of its substeps, each frame_dt / nsub rounded
 * to a float (relative error below 2^-24 = 6e-8) and added in double: a
 * world stepped frame by frame has |time - frame frame_dt| below 1e-7 of
 * frame frame_dt. TIME_TOLERANCE leaves a factor of 10. */
#define TIME_TOLERANCE 1e-6
/* The largest frame a checkpoint may hold: the output's file names give
 * frame numbers at most 9 digits, and the frame counter stays far below
 * INT_MAX. */
#define MAX_FRAME 999999999

/* The header's clocks and labels, which nothing else checks: the frame,
 * the backend that wrote it, the substep count and the time. The C API
 * may run substeps outside frames (firn_world_substep), which add to time
 * and substeps but not to frame, so time may exceed frame frame_dt; it may
 * not fall short of it. 0, or -1 with err filled. */
static int check_header_fields(const firn_world *w, const header *h, const char *path,
                               firn_error *err)
{
    const double frames_time = (double)h->frame * (double)w->def.frame_dt;
    int possible = 0; /* the sections with a tag */
    for (int sec = 0; sec < SEC_COUNT; sec++)
        possible += section_tag(sec) != NULL;
    if (h->sections < 1 || h->sections > (uint32_t)possible)
        return refuse(err, path, "has a damaged header: %u sections (1 to %d are possible)",
                      (unsigned)h->sections, possible);
    if (h->backend != FIRN_BACKEND_CPU && h->backend != FIRN_BACKEND_CUDA)
        return refuse(err, path, "has a damaged header: backend %d (%d is the CPU path, %d CUDA)",
                      (int)h->backend, FIRN_BACKEND_CPU, FIRN_BACKEND_CUDA);
    if (h->frame < 0 || h->frame > MAX_FRAME)
        return refuse(err, path, "has a damaged header: frame %d (0 to %d are possible)",
                      (int)h->frame, MAX_FRAME);
    if (h->substeps < h->frame)
        return refuse(err, path,
                      "has a damaged header: %lld substeps for frame %d (every frame takes at "
                      "least one)",
                      (long long)h->substeps, (int)h->frame);
    if (!isfinite(h->time) || h->time < frames_time * (1.0 - TIME_TOLERANCE) ||
        (h->substeps == 0 && h->time != 0.0))
        return refuse(err, path,
                      "has a damaged header: time %g s at frame %d after %lld substeps (frame "
                      "%d ends at %g s with time.frame_dt = %g s)",
                      h->time, (int)h->frame, (long long)h->substeps, (int)h->frame, frames_time,
                      (double)w->def.frame_dt);
    return 0;
}

/* Opens path and checks its header: what it is, its format, its size, and
 * that it is a checkpoint of w's scene. *h gets the header. */
static int open_checked(const firn_world *w, const char *path, FILE **out, header *h,
                        unsigned char b[FIRN_CHECKPOINT_HEADER_BYTES], firn_error *err)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        firn_set_error(err, FIRN_E_IO, "cannot read checkpoint '%s': %s", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        fclose(f);
        return refuse(err, path,
                      "is a directory, not a checkpoint file: name a file in it "
                      "(%s/checkpoint_<frame>.firn)",
                      path);
    }
    memset(b, 0, FIRN_CHECKPOINT_HEADER_BYTES);
    const size_t got = fread(b, 1, FIRN_CHECKPOINT_HEADER_BYTES, f);
    int bad = -1;
    uint32_t crc;
    get_at(b, FIRN_CHECKPOINT_HEADER_BYTES - 4, &crc, 4);
    memset(h, 0, sizeof *h);
    if (got >= 16)
        unpack_header(b, h);
    const uint32_t swapped = __builtin_bswap32(BYTE_ORDER_MARK);
    if (got < 8 || memcmp(b, FIRN_CHECKPOINT_MAGIC, 8))
        refuse(err, path, "is not a firn checkpoint (it does not start with %s)",
               FIRN_CHECKPOINT_MAGIC);
    else if (got < 16)
        refuse(err, path, "is truncated: %zu bytes, less than its header", got);
    else if (h->bom == swapped)
        refuse(err, path, "was written on a machine of the other byte order");
    else if (h->bom != BYTE_ORDER_MARK)
        refuse(err, path, "has a damaged header (byte-order mark %08x)", (unsigned)h->bom);
    else if (h->version < OLDEST_VERSION || h->version > VERSION)
        refuse(err, path, "is of format version %u; this firn reads versions %d to %d",
               (unsigned)h->version, OLDEST_VERSION, VERSION);
    else if (got < FIRN_CHECKPOINT_HEADER_BYTES)
        refuse(err, path, "is truncated: %zu bytes, less than its header", got);
    else if (crc != firn_crc32c(0, b, FIRN_CHECKPOINT_HEADER_BYTES - 4))
        refuse(err, path, "has a damaged header (its checksum does not match)");
    else if (h->header_bytes != FIRN_CHECKPOINT_HEADER_BYTES || memcmp(h->sizes, type_sizes, 4))
        refuse(err, path,
               "was written with other type sizes (float %d, double %d, int %d, long long %d "
               "bytes)",
               h->sizes[0], h->sizes[1], h->sizes[2], h->sizes[3]);
    else if ((uint64_t)st.st_size < h->file_bytes)
        refuse(err, path, "is truncated: %lld of its %llu bytes are there", (long long)st.st_size,
               (unsigned long long)h->file_bytes);
    else if ((uint64_t)st.st_size > h->file_bytes)
        refuse(err, path, "has %llu bytes after its end (%llu bytes)",
               (unsigned long long)st.st_size - h->file_bytes, (unsigned long long)h->file_bytes);
    else if (h->scene_hash != w->scene_hash)
        refuse(err, path,
               "is of another scene: its scene hash is %016llx, that of %s is %016llx (every "
               "key but name, description, time.frames and output.* counts)",
               (unsigned long long)h->scene_hash, w->def.source[0] ? w->def.source : "this scene",
               (unsigned long long)w->scene_hash);
    else
        bad = check_header_fields(w, h, path, err);
    if (bad) {
        fclose(f);
        return -1;
    }
    *out = f;
    return 0;
}

int firn_checkpoint_check_header(const firn_world *w, const char *path, firn_error *err)
{
    FILE *f;
    header h;
    unsigned char b[FIRN_CHECKPOINT_HEADER_BYTES];
    if (open_checked(w, path, &f, &h, b, err))
        return -1;
    fclose(f);
    return 0;
}

/* The CPU path's layout: the scene's index of the particle at each place,
 * which must be a permutation. */
static int read_layout(firn_world *w, source *s, uint64_t bytes, firn_error *err)
{
    if (w->cuda || !w->bins.id) /* the GPU keeps the scene's order */
        return skip(s, bytes, err);
    const int n = w->p.n;
    int64_t reorders;
    int32_t flags[2];
    if (get(s, &reorders, 8, err) || get(s, flags, 8, err) ||
        get(s, w->bins.id, 4 * (size_t)n, err))
        return -1;
    unsigned char *seen = calloc((size_t)n + 1, 1);
    if (!seen) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory reading checkpoint '%s'", s->path);
        return -1;
    }
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        const int id = w->bins.id[i];
        ok = id >= 0 && id < n && !seen[id];
        if (ok)
            seen[id] = 1;
    }
    free(seen);
    if (!ok)
        return refuse(err, s->path, "is damaged: its CPU particle layout is not a permutation");
    w->bins.permuted = 1;
    w->bins.in_scene_order = 1; /* put back into the layout before the next substep */
    w->bins.reorders = reorders;
    return 0;
}

/* The tools: a tool follows its scene's keyframes or none (a command
 * through the C API stopped them). */
static int read_tools(firn_world *w, source *s, firn_error *err)
{
    span sp[12];
    if (get(s, &w->tool_frame_time, 8, err))
        return -1;
    for (int k = 0; k < w->n_tools; k++) {
        firn_tool *t = &w->tools[k];
        const int keys = t->body.n_keys;
        for (int j = 0, m = tool_fields(t, &w->tool_rec[k], sp); j < m; j++)
            if (get(s, sp[j].data, sp[j].bytes, err))
                return -1;
        if (t->body.n_keys != 0 && t->body.n_keys != keys)
            return refuse(err, s->path,
                          "is damaged: tool %d follows %d keyframes; its scene has %d", k,
                          t->body.n_keys, keys);
    }
    return 0;
}

/* One rank's section of a distributed run: it must be this rank's of this
 * rank count and scene, and name particles of the scene (that every
 * particle is on exactly one rank, the run checks across the ranks). */
static int read_dist(firn_world *w, source *s, firn_error *err)
{
    int32_t head[4];
    int rank, ranks, total;
    int *index = w->dist->indices(w, &rank, &ranks, &total);
    if (get(s, head, sizeof head, err) || get(s, index, 4 * (size_t)w->p.n, err))
        return -1;
    if (head[0] != rank || head[1] != ranks || head[2] != total || head[3] != 0)
        return refuse(err, s->path,
                      "is rank %d's file of a run of %d particles on %d MPI ranks; this is rank "
                      "%d of %d, with %d particles",
                      (int)head[0], (int)head[2], (int)head[1], rank, ranks, total);
    for (int k = 0; k < w->p.n; k++)
        if (index[k] < 0 || index[k] >= total)
            return refuse(err, s->path,
                          "is damaged: its particle %d has scene index %d; the scene has %d "
                          "particles",
                          k, index[k], total);
    return 0;
}

static int read_section(firn_world *w, source *s, int sec, uint64_t bytes, firn_error *err)
{
    span sp[FIRN_MAX_FIELDS > 10 ? FIRN_MAX_FIELDS : 10];
    if (section_solver(sec) >= 0) {
        for (int k = 0, m = field_spans(w, sec, sp); k < m; k++)
            if (get(s, sp[k].data, sp[k].bytes, err))
                return -1;
        return 0;
    }
    switch (sec) {
    case SEC_WORLD: {
        unsigned char b[WORLD_BYTES];
        if (get(s, b, sizeof b, err))
            return -1;
        unpack_world(w, b);
        return 0;
    }
    case SEC_CPIC:
        return get(s, w->p.cpic, bytes, err);
    case SEC_LAYOUT:
        return read_layout(w, s, bytes, err);
    case SEC_RIGID:
        for (int k = 0; k < w->n_rigids; k++)
            for (int j = 0, m = rigid_fields(&w->rigids[k], sp); j < m; j++)
                if (get(s, sp[j].data, sp[j].bytes, err))
                    return -1;
        return get(s, w->rigid_acc, (size_t)w->n_rigids * FIRN_RIGID_ACC * sizeof(double), err);
    case SEC_TOOL:
        return read_tools(w, s, err);
    default: /* SEC_DIST */
        return read_dist(w, s, err);
    }
}

/* ---- what a checkpoint holds, checked as strictly as a scene ------------------------ */

/* The checks below run once the whole file has been read and its checksum
 * matched, and before the world uses any of it: a checksum finds damage,
 * not a file made on purpose, and a checkpoint may come from anyone.
 * Every index must name what the scene has (a material of the particle's
 * solver), every number must be finite, and values with a range must lie
 * in it, so that a checkpoint can give no state that a run of the scene
 * could not reach. */

/* Particles are kept inside their solver's box (MPM: one cell inside the
 * domain; SPH, PBD: their boxes; FEM: the domain) by clamping; the
 * sampler puts them inside the domain. A position farther out than half a
 * grid cell (each table's slack) came from no run. */

static int bad_value(firn_error *err, const char *path, const char *entity, long long index,
                     const char *field, int comp, int comps, double value, const char *rule)
{
    char c[16] = "";
    if (comps > 1)
        snprintf(c, sizeof c, "[%d]", comp);
    return refuse(err, path, "is damaged: %s %lld has %s%s = %g; %s", entity, index, field, c,
                  value, rule);
}

/* comps values of each of n entities, component-major (component c of
 * entity i at c n + i), all in [lo, hi] (finite); else the first that is
 * not is named. */
static int check_floats(firn_error *err, const char *path, const float *a, long long n, int comps,
                        float lo, float hi, const char *entity, const char *field, const char *rule)
{
    const long long all = n * comps;
    for (long long k = 0; k < all; k++)
        if (!(a[k] >= lo && a[k] <= hi))
            return bad_value(err, path, entity, k % n, field, (int)(k / n), comps, a[k], rule);
    return 0;
}

static int check_doubles(firn_error *err, const char *path, const double *a, int n,
                         const char *entity, long long index, const char *field)
{
    for (int k = 0; k < n; k++)
        if (!isfinite(a[k]))
            return bad_value(err, path, entity, index, field, k, n, a[k], "it must be finite");
    return 0;
}

/* Positions (3n, component-major) inside [lo, hi] widened by slack. */
static int check_positions(firn_error *err, const char *path, const float *x, long long n,
                           const float lo[3], const float hi[3], float slack, const char *entity,
                           const char *box)
{
    for (int a = 0; a < 3; a++) {
        char rule[160];
        snprintf(rule, sizeof rule, "it must lie in %s [%g, %g] (give or take %g m)", box,
                 (double)lo[a], (double)hi[a], (double)slack);
        for (long long i = 0; i < n; i++) {
            const float v = x[a * n + i];
            if (!(v >= lo[a] - slack && v <= hi[a] + slack))
                return bad_value(err, path, entity, i, "x", a, 3, v, rule);
        }
    }
    return 0;
}

/* The solver whose particles or vertices a material model belongs to. */
static int model_solver(int model)
{
    switch (model) {
    case FIRN_MODEL_SPH_LIQUID:
        return FIRN_SOLVER_KIND_SPH;
    case FIRN_MODEL_PBD_CLOTH:
    case FIRN_MODEL_PBD_PARTICLE:
    case FIRN_MODEL_PBD_LIQUID:
        return FIRN_SOLVER_KIND_PBD;
    case FIRN_MODEL_FEM_LINEAR:
    case FIRN_MODEL_FEM_COROTATED:
    case FIRN_MODEL_FEM_STABLE_NEOHOOKEAN:
        return FIRN_SOLVER_KIND_FEM;
    default:
        return FIRN_SOLVER_KIND_MPM;
    }
}

/* The material bytes of n particles of solver `solver`: each must be a
 * material of the scene that a body of that solver is made of. */
static int check_materials(const firn_world *w, const char *path, const uint8_t *mat, long long n,
                           int solver, const char *entity, const char *solver_name, firn_error *err)
{
    const firn_scene_def *d = &w->def;
    unsigned used = 0;
    for (int b = 0; b < d->n_bodies; b++)
        if ((int)d->bodies[b].solver == solver &&
            model_solver((int)d->materials[d->bodies[b].material].model) == solver)
            used |= 1u << d->bodies[b].material;
    for (long long i = 0; i < n; i++) {
        const int m = mat[i];
        if (m >= d->n_materials)
            return refuse(err, path,
                          "is damaged: %s %lld has material %d; the scene has %d materials (0 "
                          "to %d)",
                          entity, i, m, d->n_materials, d->n_materials - 1);
        if (!((used >> m) & 1u))
            return refuse(err, path,
                          "is damaged: %s %lld has material %d ('%s'), which no %s body of the "
                          "scene is made of",
                          entity, i, m, d->materials[m].name, solver_name);
    }
    return 0;
}

/* Solver k's saved fields, by their table's rules: the materials first,
 * then in table order the positions (in the table's box, give or take its
 * slack) and each float field's range. */
static int check_fields(const firn_world *w, const char *path, int k, firn_error *err)
{
    firn_field_table t;
    fields_of(w, k, &t);
    for (int f = 0; f < t.n; f++) {
        const firn_field *q = &t.f[f];
        if ((q->flags & FIRN_FIELD_SAVED) && (q->flags & FIRN_FIELD_MATERIAL) &&
            check_materials(w, path, q->data, t.count, t.kind, t.entity, t.solver_name, err))
            return -1;
    }
    for (int f = 0; f < t.n; f++) {
        const firn_field *q = &t.f[f];
        if (!(q->flags & FIRN_FIELD_SAVED) || (q->flags & FIRN_FIELD_MATERIAL))
            continue;
        if (q->flags & FIRN_FIELD_POSITION
                ? check_positions(err, path, q->data, t.count, t.lower, t.upper, t.slack, t.entity,
                                  t.box)
                : check_floats(err, path, q->data, t.count, q->components, q->lo, q->hi, t.entity,
                               q->what, q->rule))
            return -1;
    }
    return 0;
}

/* MPM's rules beyond its table's: a snow particle's Jp is a volume ratio,
 * and the CPIC words. */
static int check_mpm(const firn_world *w, const char *path, firn_error *err)
{
    const firn_particles *p = &w->p;
    const long long n = p->n;
    const firn_scene_def *d = &w->def;
    const char *E = "MPM particle", *fin = "it must be finite";
    for (long long i = 0; i < n; i++) {
        const float jp = p->Jp[i];
        /* Snow's Jp is a volume ratio; sand's a log volume correction. */
        const int snow = d->materials[p->mat[i]].model == FIRN_MODEL_SNOW;
        if (!(jp >= (snow ? FLT_MIN : -FLT_MAX) && jp <= FLT_MAX))
            return bad_value(err, path, E, i, "Jp", 0, 1, jp,
                             snow ? "a snow particle's must be finite and above 0" : fin);
    }
    /* CPIC: per rigid body a record, 0 or bit 31 and a normal of three
     * bytes; then the stencil nodes across a surface, bits 0 to 26. */
    const int slots = p->cpic_slots;
    for (int k = 0; k < slots && p->cpic; k++)
        for (long long i = 0; i < n; i++) {
            const uint32_t word = p->cpic[k * n + i];
            const int ok = k < slots - 1 ? word == 0 || (word & 0xff000000u) == 0x80000000u
                                         : (word >> 27) == 0;
            if (!ok)
                return refuse(err, path,
                              "is damaged: MPM particle %lld has CPIC word %d = %08x, which no "
                              "run writes",
                              i, k, (unsigned)word);
        }
    return 0;
}

/* A quaternion of a pose: finite and of unit length (every step
 * normalises it; 1e-3 is far above float rounding). */
static int check_quat(firn_error *err, const char *path, const firn_quat *q, const char *entity,
                      long long index, const char *field)
{
    double n2 = 0.0;
    for (int k = 0; k < 4; k++)
        n2 += (double)q->q[k] * q->q[k];
    if (!(fabs(sqrt(n2) - 1.0) <= 1e-3))
        return refuse(
            err, path, "is damaged: %s %lld has %s (%g, %g, %g, %g), not a unit quaternion", entity,
            index, field, (double)q->q[0], (double)q->q[1], (double)q->q[2], (double)q->q[3]);
    return 0;
}

static int check_bodies(const firn_world *w, const char *path, firn_error *err)
{
    const char *fin = "it must be finite", *pos = "it must be finite and not negative";
    for (int k = 0; k < w->n_rigids; k++) {
        const firn_rigid *b = &w->rigids[k];
        const char *E = "rigid body";
        if (check_floats(err, path, b->x, 1, 3, -FLT_MAX, FLT_MAX, E, "x", fin) ||
            check_quat(err, path, &b->q, E, k, "orientation") ||
            check_floats(err, path, b->v, 1, 3, -FLT_MAX, FLT_MAX, E, "v", fin) ||
            check_floats(err, path, b->w, 1, 3, -FLT_MAX, FLT_MAX, E, "omega", fin) ||
            check_floats(err, path, b->L, 1, 3, -FLT_MAX, FLT_MAX, E, "L", fin) ||
            check_floats(err, path, b->force, 1, 3, -FLT_MAX, FLT_MAX, E, "force", fin) ||
            check_floats(err, path, b->torque, 1, 3, -FLT_MAX, FLT_MAX, E, "torque", fin) ||
            check_floats(err, path, &b->couple_dt, 1, 1, 0.0f, FLT_MAX, E, "coupling dt", pos) ||
            check_doubles(err, path, b->impulse, FIRN_RIGID_ACC, E, k, "impulse") ||
            check_doubles(err, path, &b->time, 1, E, k, "clock") ||
            check_doubles(err, path, w->rigid_acc + FIRN_RIGID_ACC * k, FIRN_RIGID_ACC, E, k,
                          "pending impulse"))
            return -1;
    }
    if (w->n_tools > 0 && !(isfinite(w->tool_frame_time) && w->tool_frame_time >= 0.0))
        return refuse(err, path, "is damaged: the tools' frame time is %g s", w->tool_frame_time);
    for (int k = 0; k < w->n_tools; k++) {
        const firn_tool *t = &w->tools[k];
        const firn_tool_record *r = &w->tool_rec[k];
        const firn_rigid *b = &t->body;
        const char *E = "tool";
        if (check_floats(err, path, b->x, 1, 3, -FLT_MAX, FLT_MAX, E, "x", fin) ||
            check_quat(err, path, &b->q, E, k, "orientation") ||
            check_floats(err, path, b->v, 1, 3, -FLT_MAX, FLT_MAX, E, "v", fin) ||
            check_floats(err, path, b->w, 1, 3, -FLT_MAX, FLT_MAX, E, "omega", fin) ||
            check_doubles(err, path, &b->time, 1, E, k, "clock") ||
            check_floats(err, path, t->x0, 1, 3, -FLT_MAX, FLT_MAX, E, "x0", fin) ||
            check_quat(err, path, &t->q0, E, k, "orientation at the substep's start") ||
            check_doubles(err, path, r->last, FIRN_TOOL_ACC, E, k, "last reaction") ||
            check_doubles(err, path, r->frame, FIRN_TOOL_ACC, E, k, "frame's reaction") ||
            check_doubles(err, path, r->total, FIRN_TOOL_ACC, E, k, "run's reaction") ||
            check_floats(err, path, &r->last_dt, 1, 1, 0.0f, FLT_MAX, E, "last substep", pos))
            return -1;
    }
    return 0;
}

/* The world section and every solver's state, once read (the CPU layout,
 * a permutation, was checked as it was read; tools' keyframe counts too). */
static int check_state(const firn_world *w, const char *path, firn_error *err)
{
    const firn_sph *S = &w->sph;
    if (!(w->params.dt >= 0.0f && w->params.dt <= FLT_MAX) ||
        !(S->P.dt >= 0.0f && S->P.dt <= FLT_MAX))
        return refuse(err, path, "is damaged: its last substep is %g s (SPH %g s)",
                      (double)w->params.dt, (double)S->P.dt);
    if (S->iters[0] < 0 || S->iters[1] < 0 || S->iters_total[0] < 0 || S->iters_total[1] < 0 ||
        S->solves < 0)
        return refuse(err, path,
                      "is damaged: its DFSPH counters are negative (%d, %d, %lld, %lld, %lld)",
                      S->iters[0], S->iters[1], S->iters_total[0], S->iters_total[1], S->solves);
    /* each solver's saved fields in solver order, MPM's own rules (Jp, the
     * CPIC words) right after MPM's fields, then the bodies */
    for (int sec = SEC_SOLVER; sec < SEC_COUNT; sec++) {
        const int k = section_solver(sec);
        if (k >= 0 &&
            (check_fields(w, path, k, err) || (k == FIRN_SOLVER_MPM && check_mpm(w, path, err))))
            return -1;
    }
    return check_bodies(w, path, err) ? -1 : 0;
}

/* Whether the file, from its first section on, holds a section MPIR (one
 * rank's file of a distributed run): the sections' headers are walked by
 * their sizes, nothing else is read. The position is left where it was. */
static int holds_dist_section(source *s, const header *h)
{
    const long at = ftell(s->f);
    int found = 0;
    for (uint32_t k = 0; k < h->sections && !found; k++) {
        unsigned char b[SECTION_BYTES];
        uint64_t bytes;
        if (fread(b, 1, sizeof b, s->f) != sizeof b)
            break;
        get_at(b, 8, &bytes, 8);
        found = !memcmp(b, section_tag(SEC_DIST), 4);
        if (bytes > h->file_bytes || fseek(s->f, (long)bytes, SEEK_CUR))
            break;
    }
    fseek(s->f, at, SEEK_SET);
    return found;
}

static int read_body(firn_world *w, source *s, const header *h, firn_error *err)
{
    const char *path = s->path;
    if (!w->dist && holds_dist_section(s, h))
        return refuse(err, path,
                      "is one rank's file of a run on several MPI ranks: resume that run "
                      "under mpirun, on its rank count, from its manifest (docs/MPI.md)");
    if (h->particles != w->p.n || h->cpic_slots != w->p.cpic_slots ||
        h->sph_particles != w->sph.n || h->rigids != w->n_rigids)
        return refuse(err, path,
                      "holds %d MPM particles (%d CPIC words each), %d SPH particles and %d rigid "
                      "bodies; the scene has %d (%d), %d and %d",
                      h->particles, h->cpic_slots, h->sph_particles, h->rigids, w->p.n,
                      w->p.cpic_slots, w->sph.n, w->n_rigids);
    if (h->version < 2 && w->n_tools > 0)
        return refuse(err, path,
                      "is of format version %u, which holds no tools; the scene has %d (no "
                      "firn saved a world with tools in that version)",
                      (unsigned)h->version, w->n_tools);
    if (h->version < 3 && w->fem.V.n > 0)
        return refuse(err, path,
                      "is of format version %u, which holds no FEM vertices; the scene has %d "
                      "(no firn saved a world with FEM bodies in that version)",
                      (unsigned)h->version, w->fem.V.n);
    uint64_t size[SEC_COUNT];
    section_sizes(w, size);
    size[SEC_LAYOUT] = 16 + 4 * (uint64_t)w->p.n; /* whichever backend wrote it */
    int seen[SEC_COUNT] = {0};
    for (uint32_t k = 0; k < h->sections; k++) {
        unsigned char b[SECTION_BYTES];
        const uint64_t at = s->pos;
        if (get(s, b, sizeof b, err))
            return -1;
        uint64_t bytes;
        get_at(b, 8, &bytes, 8);
        const int sec = section_of_tag(b);
        if (sec < 0)
            return refuse(err, path, "is damaged: no section '%.4s' is known (at byte %llu)",
                          (const char *)b, (unsigned long long)at);
        if (seen[sec]++ || bytes != size[sec])
            return refuse(err, path,
                          "is damaged: section %s at byte %llu (%llu bytes) is %s (%llu bytes "
                          "expected)",
                          section_tag(sec), (unsigned long long)at, (unsigned long long)bytes,
                          seen[sec] > 1 ? "a second one" : "of the wrong size",
                          (unsigned long long)size[sec]);
        if (read_section(w, s, sec, bytes, err))
            return -1;
    }
    for (int sec = 0; sec < SEC_COUNT; sec++)
        if (!seen[sec] && size[sec] > 0 && sec != SEC_LAYOUT)
            return refuse(err, path, "is damaged: it has no section %s", section_tag(sec));
    const uint32_t computed = s->crc;
    unsigned char t[TRAILER_BYTES];
    if (get(s, t, 4, err))
        return -1;
    if (memcmp(t, "FEND", 4))
        return refuse(err, path, "is damaged: no end marker at byte %llu",
                      (unsigned long long)(s->pos - 4));
    uint32_t stored;
    if (get(s, &stored, 4, err))
        return -1;
    if (stored != firn_crc32c(computed, t, 4))
        return refuse(err, path,
                      "is corrupted: its checksum (CRC-32C) is %08x, its contents give %08x",
                      (unsigned)stored, (unsigned)firn_crc32c(computed, t, 4));
    if (check_state(w, path, err))
        return -1;
    w->frame = h->frame;
    w->substeps = h->substeps;
    w->time = h->time;
    return 0;
}

int firn_checkpoint_read(firn_world *w, const char *path, firn_error *err)
{
    source s = {NULL, path, 0, FIRN_CHECKPOINT_HEADER_BYTES, 0};
    header h;
    unsigned char b[FIRN_CHECKPOINT_HEADER_BYTES];
    if (open_checked(w, path, &s.f, &h, b, err))
        return -1;
    s.size = h.file_bytes;
    s.crc = firn_crc32c(0, b, sizeof b);
    int rc = read_body(w, &s, &h, err);
    fclose(s.f);
    return rc;
}

firn_world *firn_world_load_with(const firn_scene_def *def, const firn_run_options *opt,
                                 const char *path, firn_error *err)
{
    /* path NULL: a fresh world, as firn_world_create_with */
    const firn_world_restore r = {firn_checkpoint_check_header, firn_checkpoint_read, path};
    return firn_world_create_restored(def, opt, path ? &r : NULL, err);
}

firn_world *firn_world_load(const firn_scene_def *def, firn_backend backend, const char *path,
                            firn_error *err)
{
    firn_run_options o = firn_run_options_default();
    o.backend = backend;
    return firn_world_load_with(def, &o, path, err);
}
