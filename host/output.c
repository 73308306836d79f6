/* output.c - frame output: binary PLY particles, PNG previews, JSONL stats.
 *
 * PLY and PNG files are written atomically: into "<path>.tmp.<pid>", flushed
 * and fsync'ed, then renamed over <path>, so a killed run never leaves a
 * half-written frame under the final name. Stats lines are appended with a
 * single write() on an O_APPEND descriptor, so a killed run never leaves
 * half a line. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <math.h>
#include <png.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "error.h"
#include "firn.h"
#include "mpm_ply.h"
#include "output.h"
#include "rigid.h"
#include "surface.h"

/* ---- atomic file writing ------------------------------------------------- */

static void io_error(firn_error *err, const char *path, int e, const char *what)
{
    firn_set_error(err, FIRN_E_IO, "cannot write '%s': %s", path, e ? strerror(e) : what);
}

FILE *firn_fopen_fresh(const char *path)
{
    /* A stale file or symlink of that name is removed (the link itself,
     * never its target), and O_EXCL refuses whatever appears meanwhile. */
    if (unlink(path) && errno != ENOENT)
        return NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); /* less the umask */
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(path);
        errno = e;
    }
    return f;
}

/* The temporaries being written now, for firn_remove_temporaries: a slot
 * is claimed (1), its path written, then published (2); the handler removes
 * the published ones. One slot per thread that writes files (the frame
 * writer's, the checkpoint's), and spares. */
#define TMP_SLOTS 4
static char tmp_path[TMP_SLOTS][FIRN_PATH_MAX + 96];
static _Atomic int tmp_state[TMP_SLOTS];

static int tmp_register(const char *tmp)
{
    if (strlen(tmp) >= sizeof tmp_path[0])
        return -1;
    for (int k = 0; k < TMP_SLOTS; k++) {
        int expect = 0;
        if (atomic_compare_exchange_strong(&tmp_state[k], &expect, 1)) {
            strcpy(tmp_path[k], tmp);
            atomic_store(&tmp_state[k], 2);
            return k;
        }
    }
    return -1; /* not removed by a signal, written as well */
}

static void tmp_release(int slot)
{
    if (slot >= 0)
        atomic_store(&tmp_state[slot], 0);
}

void firn_remove_temporaries(void)
{
    for (int k = 0; k < TMP_SLOTS; k++)
        if (atomic_load(&tmp_state[k]) == 2)
            unlink(tmp_path[k]);
}

int firn_write_atomic(const char *path, firn_emit_fn emit, void *ctx, firn_error *err)
{
    size_t len = strlen(path) + 32;
    char *tmp = malloc(len);
    if (!tmp) {
        firn_set_error(err, FIRN_E_NOMEM, "out of memory writing '%s'", path);
        return FIRN_E_NOMEM;
    }
    snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());

    FILE *f = firn_fopen_fresh(tmp);
    if (!f) {
        io_error(err, path, errno, "cannot create file");
        free(tmp);
        return FIRN_E_IO;
    }
    const int slot = tmp_register(tmp);
    /* Large buffer: frames can be hundreds of MB, written in big chunks. */
    setvbuf(f, NULL, _IOFBF, 1 << 20);

    errno = 0;
    int ok = emit(f, ctx) == 0;
    if (ok && fflush(f) != 0)
        ok = 0;
    if (ok && fsync(fileno(f)) != 0)
        ok = 0;
    int e = errno;
    /* fclose can report a deferred write error too. */
    if (fclose(f) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok)
        remove(tmp);
    tmp_release(slot);
    free(tmp);
    if (!ok) {
        io_error(err, path, e, "write failed");
        return FIRN_E_IO;
    }
    return FIRN_OK;
}

/* ---- PLY ----------------------------------------------------------------- */

#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) &&                                    \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define FIRN_HOST_BIG_ENDIAN 1
#else
#define FIRN_HOST_BIG_ENDIAN 0
#endif

#define PLY_RECORD 33   /* 8 floats + 1 uchar, packed (MPM's; the meshes' are shorter) */
#define PLY_CHUNK  8192 /* records per fwrite */

static unsigned char *put_f32le(unsigned char *dst, float value)
{
    uint32_t u;
    memcpy(&u, &value, 4);
#if FIRN_HOST_BIG_ENDIAN
    u = __builtin_bswap32(u);
#endif
    memcpy(dst, &u, 4);
    return dst + 4;
}

/* Packs record i of a particle view at d; returns the end. */
typedef unsigned char *(*pack_fn)(unsigned char *d, const void *ctx, long long i);

/* The n records of a PLY body, at most `record` bytes each, PLY_CHUNK per
 * fwrite. */
static int write_records_of(FILE *f, long long n, size_t record, pack_fn pack, const void *ctx)
{
    unsigned char *buf = malloc((size_t)PLY_CHUNK * record);
    if (!buf)
        return -1; /* errno is ENOMEM */
    for (long long i0 = 0; i0 < n; i0 += PLY_CHUNK) {
        long long i1 = i0 + PLY_CHUNK < n ? i0 + PLY_CHUNK : n;
        unsigned char *d = buf;
        for (long long i = i0; i < i1; i++)
            d = pack(d, ctx, i);
        size_t bytes = (size_t)(d - buf);
        if (fwrite(buf, 1, bytes, f) != bytes) {
            int e = errno;
            free(buf);
            errno = e; /* free may not clobber it, but keep it explicit */
            return -1;
        }
    }
    free(buf);
    return 0;
}

/* The n records of a PLY body of at most PLY_RECORD bytes each. */
static int write_records(FILE *f, long long n, pack_fn pack, const void *ctx)
{
    return write_records_of(f, n, PLY_RECORD, pack, ctx);
}

/* What the index byte of a PLY names: the scene's materials, rigid bodies
 * or tools. */
enum { NAMES_MATERIALS, NAMES_RIGIDS, NAMES_TOOLS };

/* The comment lines after "comment firn <version>": the units of the
 * properties, then, with a scene, the name of each material (rigid body,
 * tool) the index byte refers to, as "comment material 0 sand". Unnamed
 * entries are left out; bytes a header line cannot hold (control
 * characters) are written as '_'. */
static int put_ply_comments(FILE *f, const char *units, const firn_scene_def *def, int names)
{
    if (fprintf(f, "comment units %s\n", units) < 0)
        return -1;
    if (!def)
        return 0;
    static const char *const label[] = {"material", "body", "tool"};
    const int n = names == NAMES_RIGIDS  ? def->n_rigids
                  : names == NAMES_TOOLS ? def->n_tools
                                         : def->n_materials;
    for (int k = 0; k < n; k++) {
        const char *name = names == NAMES_RIGIDS  ? def->rigids[k].name
                           : names == NAMES_TOOLS ? def->tools[k].name
                                                  : def->materials[k].name;
        if (!name[0])
            continue;
        char clean[FIRN_NAME_MAX];
        size_t len = 0;
        for (; len < FIRN_NAME_MAX - 1 && name[len]; len++) {
            const unsigned char ch = (unsigned char)name[len];
            clean[len] = ch < 0x20 || ch == 0x7f ? '_' : (char)ch;
        }
        clean[len] = '\0';
        if (fprintf(f, "comment %s %d %s\n", label[names], k, clean) < 0)
            return -1;
    }
    return 0;
}

#define MESH_UNITS "x y z [m], vx vy vz [m/s]"

/* A solver's fields as PLY vertices (firn_write_fields_ply): the table and
 * the record's bytes. */
typedef struct {
    const firn_field_table *t;
    const firn_scene_def *def; /* names the materials; may be NULL */
    size_t record;
    int n_ply, order[FIRN_MAX_FIELDS]; /* the PLY fields by their rank */
} fields_ply;

/* Element i: every PLY field's components, in PLY order. */
static unsigned char *pack_fields(unsigned char *d, const void *ctx, long long i)
{
    const fields_ply *m = ctx;
    const firn_field_table *t = m->t;
    const long long n = t->count;
    for (int r = 0; r < m->n_ply; r++) {
        const firn_field *f = &t->f[m->order[r]];
        for (int c = 0; c < f->components; c++)
            if (f->type == FIRN_FIELD_UINT8)
                *d++ = ((const uint8_t *)f->data)[c * n + i];
            else
                d = put_f32le(d, ((const float *)f->data)[c * n + i]);
    }
    return d;
}

/* A field's PLY name of component c (its c-th space-separated word) into
 * out; 0, or -1 when it has fewer words. */
static int ply_name(const firn_field *f, int c, char *out, size_t size)
{
    const char *w = f->ply;
    for (int k = 0; k < c && w; k++) {
        w = strchr(w, ' ');
        w = w ? w + 1 : NULL;
    }
    if (!w || !*w)
        return -1;
    const size_t len = strcspn(w, " ");
    if (len >= size)
        return -1;
    memcpy(out, w, len);
    out[len] = '\0';
    return 0;
}

static int emit_fields_ply(FILE *f, void *ctx)
{
    const fields_ply *m = ctx;
    const firn_field_table *t = m->t;
    char units[256];
    size_t at = 0;
    units[0] = '\0';
    for (int r = 0; r < m->n_ply; r++) {
        const firn_field *q = &t->f[m->order[r]];
        if (q->unit && at < sizeof units)
            at += (size_t)snprintf(units + at, sizeof units - at, "%s%s %s", at ? ", " : "", q->ply,
                                   q->unit);
    }
    const int head = !t->ply_comment     ? fprintf(f,
                                                   "ply\n"
                                                       "format binary_little_endian 1.0\n"
                                                       "comment firn " FIRN_VERSION " %ss\n",
                                                   t->entity)
                     : t->ply_comment[0] ? fprintf(f,
                                                   "ply\n"
                                                   "format binary_little_endian 1.0\n"
                                                   "comment firn " FIRN_VERSION " %s\n",
                                                   t->ply_comment)
                                         : fputs("ply\n"
                                                 "format binary_little_endian 1.0\n"
                                                 "comment firn " FIRN_VERSION "\n",
                                                 f);
    if (head < 0 || put_ply_comments(f, units, m->def, NAMES_MATERIALS) ||
        fprintf(f, "element vertex %lld\n", t->count) < 0)
        return -1;
    for (int r = 0; r < m->n_ply; r++) {
        const firn_field *q = &t->f[m->order[r]];
        char name[64];
        for (int c = 0; c < q->components; c++)
            if (ply_name(q, c, name, sizeof name) ||
                fprintf(f, "property %s %s\n", q->type == FIRN_FIELD_UINT8 ? "uchar" : "float",
                        name) < 0)
                return -1;
    }
    if (fputs("end_header\n", f) < 0)
        return -1;
    return write_records_of(f, t->count, m->record, pack_fields, m);
}

int firn_write_fields_ply(const char *path, const firn_scene_def *def, const firn_field_table *t,
                          firn_error *err)
{
    size_t record = 0;
    int ok = t->count >= 0;
    for (int k = 0; ok && k < t->n; k++) {
        const firn_field *f = &t->f[k];
        if (!f->ply)
            continue;
        char name[64];
        ok = (t->count == 0 || f->data) && !ply_name(f, f->components - 1, name, sizeof name) &&
             ply_name(f, f->components, name, sizeof name);
        record += (size_t)f->components * (f->type == FIRN_FIELD_UINT8 ? 1u : 4u);
    }
    fields_ply m = {t, def, record, 0, {0}};
    int seen[FIRN_MAX_FIELDS] = {0};
    for (int k = 0; ok && k < t->n; k++) /* each rank below n_ply once */
        if (t->f[k].ply) {
            const int r = t->f[k].ply_rank;
            ok = r >= 0 && r < t->n_ply && r < FIRN_MAX_FIELDS && !seen[r]++;
            if (ok)
                m.order[r] = k, m.n_ply++;
        }
    if (!ok || record == 0 || m.n_ply != t->n_ply) {
        firn_set_error(err, FIRN_E_IO, "cannot write '%s': invalid %s fields", path, t->entity);
        return FIRN_E_IO;
    }
    return firn_write_atomic(path, emit_fields_ply, &m, err);
}

int firn_write_sph_ply_named(const char *path, const firn_scene_def *def,
                             const firn_sph_particles_view *p, firn_error *err)
{
    if (p->n < 0 || (p->n > 0 && (!p->x || !p->v || !p->rho || !p->p || !p->mat))) {
        firn_set_error(err, FIRN_E_IO, "cannot write '%s': invalid SPH particle view", path);
        return FIRN_E_IO;
    }
    /* the view's fields, as the SPH solver's table (host/sph_cpu.c) writes them */
    firn_field_table t = {.count = p->n, .entity = "SPH particle"};
    const int F = FIRN_FIELD_FLOAT32;
    firn_field_add(&t, "x", "x", F, 3, (void *)p->x, 0, 0.0f, 0.0f, NULL);
    firn_field_ply(&t, "x y z", "[m]");
    firn_field_add(&t, "v", "v", F, 3, (void *)p->v, 0, 0.0f, 0.0f, NULL);
    firn_field_ply(&t, "vx vy vz", "[m/s]");
    firn_field_add(&t, "rho", "density", F, 1, (void *)p->rho, 0, 0.0f, 0.0f, NULL);
    firn_field_ply(&t, "density", "[kg/m^3]");
    firn_field_add(&t, "p", "pressure", F, 1, (void *)p->p, 0, 0.0f, 0.0f, NULL);
    firn_field_ply(&t, "pressure", "[Pa]");
    firn_field_add(&t, "mat", "material", FIRN_FIELD_UINT8, 1, (void *)p->mat, 0, 0.0f, 0.0f, NULL);
    firn_field_ply(&t, "material", NULL);
    return firn_write_fields_ply(path, def, &t, err);
}

int firn_write_sph_ply(const char *path, const firn_sph_particles_view *p, firn_error *err)
{
    return firn_write_sph_ply_named(path, NULL, p, err);
}

/* A triangle mesh over vertices, as the PBD cloth and the FEM surface
 * write it: vertices x y z vx vy vz, a flag byte (pinned, fixed) and a
 * material byte (26 bytes), then faces: a count byte 3 and three int32
 * indices (13 bytes). */
typedef struct {
    long long n;
    const float *x, *v;
    const float *w;      /* PBD: inverse mass, flag = (w == 0); or NULL */
    const uint8_t *flag; /* FEM: the fixed flag; or NULL */
    const uint8_t *mat;  /* may be NULL: 0 */
    long long triangles;
    const int *tri;
    const char *comment; /* what the file holds */
    const char *flag_name;
    const char *mat_name;      /* the material byte's name; NULL: "material" */
    const firn_scene_def *def; /* names what the material byte indexes; may be NULL */
    int names;                 /* NAMES_*: what it indexes */
} mesh_ply;

static unsigned char *pack_mesh_vertex(unsigned char *d, const void *ctx, long long i)
{
    const mesh_ply *p = ctx;
    const long long n = p->n;
    for (int c = 0; c < 3; c++)
        d = put_f32le(d, p->x[c * n + i]);
    for (int c = 0; c < 3; c++)
        d = put_f32le(d, p->v[c * n + i]);
    *d++ = p->w ? p->w[i] == 0.0f : p->flag[i] != 0;
    *d++ = p->mat ? p->mat[i] : 0;
    return d;
}

static unsigned char *pack_face(unsigned char *d, const void *ctx, long long t)
{
    const mesh_ply *p = ctx;
    *d++ = 3;
    for (int k = 0; k < 3; k++) {
        uint32_t u = (uint32_t)p->tri[3 * t + k];
#if FIRN_HOST_BIG_ENDIAN
        u = __builtin_bswap32(u);
#endif
        memcpy(d, &u, 4);
        d += 4;
    }
    return d;
}

static int emit_mesh_ply(FILE *f, void *ctx)
{
    const mesh_ply *p = ctx;
    if (fprintf(f,
                "ply\n"
                "format binary_little_endian 1.0\n"
                "comment firn " FIRN_VERSION " %s\n",
                p->comment) < 0 ||
        put_ply_comments(f, MESH_UNITS, p->def, p->names) ||
        fprintf(f,
                "element vertex %lld\n"
                "property float x\nproperty float y\nproperty float z\n"
                "property float vx\nproperty float vy\nproperty float vz\n"
                "property uchar %s\n"
                "property uchar %s\n"
                "element face %lld\n"
                "property list uchar int vertex_indices\n"
                "end_header\n",
                p->n, p->flag_name, p->mat_name ? p->mat_name : "material", p->triangles) < 0)
        return -1;
    return write_records(f, p->n, pack_mesh_vertex, p) ||
                   write_records(f, p->triangles, pack_face, p)
               ? -1
               : 0;
}

/* Checks the triangles' indices, then writes the mesh. */
static int write_mesh_ply(const char *path, const mesh_ply *m, firn_error *err)
{
    for (long long k = 0; k < 3 * m->triangles; k++)
        if (m->tri[k] < 0 || m->tri[k] >= m->n) {
            firn_set_error(err, FIRN_E_IO, "cannot write '%s': triangle %lld has vertex %d of %lld",
                           path, k / 3, m->tri[k], m->n);
            return FIRN_E_IO;
        }
    return firn_write_atomic(path, emit_mesh_ply, (void *)m, err);
}

int firn_write_pbd_ply_named(const char *path, const firn_scene_def *def,
                             const firn_pbd_particles_view *p, firn_error *err)
{
    if (p->n < 0 || p->triangles < 0 || (p->n > 0 && (!p->x || !p->v || !p->w || !p->mat)) ||
        (p->triangles > 0 && !p->tri)) {
        firn_set_error(err, FIRN_E_IO, "cannot write '%s': invalid PBD particle view", path);
        return FIRN_E_IO;
    }
    const mesh_ply m = {.n = p->n,
                        .x = p->x,
                        .v = p->v,
                        .w = p->w,
                        .mat = p->mat,
                        .triangles = p->triangles,
                        .tri = p->tri,
                        .comment = "PBD particles and cloth triangles",
                        .flag_name = "pinned",
                        .def = def,
                        .names = NAMES_MATERIALS};
    return write_mesh_ply(path, &m, err);
}

int firn_write_pbd_ply(const char *path, const firn_pbd_particles_view *p, firn_error *err)
{
    return firn_write_pbd_ply_named(path, NULL, p, err);
}

/* The material byte is 0: the materials are per element, in the VTU. */
int firn_write_fem_ply(const char *path, const firn_fem_mesh_view *p, firn_error *err)
{
    if (p->n < 0 || p->triangles < 0 || (p->n > 0 && (!p->x || !p->v || !p->fixed)) ||
        (p->triangles > 0 && !p->tri)) {
        firn_set_error(err, FIRN_E_IO, "cannot write '%s': invalid FEM mesh view", path);
        return FIRN_E_IO;
    }
    const mesh_ply m = {.n = p->n,
                        .x = p->x,
                        .v = p->v,
                        .flag = p->fixed,
                        .triangles = p->triangles,
                        .tri = p->tri,
                        .comment = "FEM vertices and surface triangles",
                        .flag_name = "fixed"};
    return write_mesh_ply(path, &m, err);
}

/* The rigid bodies (tools 0) or the tools (tools 1) of def posed as stats
 * has them: every shape's surface (firn_shape_surface) moved to world
 * coordinates, x = p + R(q) y, its vertices' velocity v + omega x (x - p),
 * flag set where the body takes part in coupling (a tool: collides), and
 * the body's index. */
static int write_shapes_ply(const char *path, const firn_scene_def *def,
                            const firn_frame_stats *stats, int tools, firn_error *err)
{
    const int nb = tools ? def->n_tools : def->n_rigids;
    if ((tools ? stats->n_tools : stats->n_rigids) != nb || nb > 255) {
        firn_set_error(err, FIRN_E_IO,
                       "cannot write '%s': the statistics hold %d %s, the scene %d (at most 255)",
                       path, tools ? stats->n_tools : stats->n_rigids,
                       tools ? "tools" : "rigid bodies", nb);
        return FIRN_E_IO;
    }
    float plane_half = 0.0f;
    for (int a = 0; a < 3; a++)
        plane_half = fmaxf(plane_half, def->upper[a] - def->lower[a]);
    firn_surface s[FIRN_MAX_RIGIDS > FIRN_MAX_TOOLS ? FIRN_MAX_RIGIDS : FIRN_MAX_TOOLS];
    memset(s, 0, sizeof s);
    long long nv = 0, nt = 0;
    int rc = 0;
    for (int b = 0; b < nb && !rc; b++) {
        const firn_rigid_shape_def *sh = tools ? &def->tools[b].shape : &def->rigids[b].shape;
        rc = firn_shape_surface(sh, plane_half, &s[b], err);
        nv += s[b].nv;
        nt += s[b].nt;
    }
    float *x = rc ? NULL : malloc((size_t)6 * nv * sizeof(float) + 1);
    uint8_t *flag = rc ? NULL : malloc((size_t)2 * nv + 1);
    int *tri = rc ? NULL : malloc((size_t)3 * nt * sizeof(int) + 1);
    if (!rc && (!x || !flag || !tri)) {
        firn_set_error(err, FIRN_E_NOMEM, "out of memory writing '%s' (%lld vertices)", path, nv);
        rc = FIRN_E_NOMEM;
    }
    if (!rc) {
        float *v = x + 3 * nv;
        long long i = 0, t = 0;
        for (int b = 0; b < nb; b++) {
            const float *p, *q4, *lv, *om;
            int on;
            if (tools) {
                const firn_tool_state *ts = &stats->tools[b];
                p = ts->position, q4 = ts->orientation, lv = ts->velocity;
                om = ts->angular_velocity, on = def->tools[b].collision;
            } else {
                const firn_rigid_stats *rs = &stats->rigids[b];
                p = rs->position, q4 = rs->orientation, lv = rs->velocity;
                om = rs->angular_velocity, on = def->rigids[b].couple;
            }
            const firn_quat q = {{q4[0], q4[1], q4[2], q4[3]}};
            for (int k = 0; k < 3 * s[b].nt; k++)
                tri[3 * t + k] = (int)i + s[b].tri[k];
            t += s[b].nt;
            for (int k = 0; k < s[b].nv; k++, i++) {
                const firn_vec3 r = firn_quat_rotate(
                    q, firn_v3(s[b].v[3 * k], s[b].v[3 * k + 1], s[b].v[3 * k + 2]));
                const firn_vec3 w = firn_cross(firn_v3(om[0], om[1], om[2]), r);
                for (int a = 0; a < 3; a++) {
                    x[a * nv + i] = p[a] + r.v[a];
                    v[a * nv + i] = lv[a] + w.v[a];
                }
                flag[i] = on != 0;
                flag[nv + i] = (uint8_t)b;
            }
        }
        const mesh_ply m = {.n = nv,
                            .x = x,
                            .v = v,
                            .flag = flag,
                            .mat = flag + nv,
                            .triangles = nt,
                            .tri = tri,
                            .comment = tools ? "tool surfaces" : "rigid body surfaces",
                            .flag_name = tools ? "collides" : "couples",
                            .mat_name = tools ? "tool" : "body",
                            .def = def,
                            .names = tools ? NAMES_TOOLS : NAMES_RIGIDS};
        rc = write_mesh_ply(path, &m, err);
    }
    free(x), free(flag), free(tri);
    for (int b = 0; b < nb; b++)
        firn_surface_free(&s[b]);
    return rc;
}

int firn_write_rigids_ply(const char *path, const firn_scene_def *def,
                          const firn_frame_stats *stats, firn_error *err)
{
    return write_shapes_ply(path, def, stats, 0, err);
}

int firn_write_tools_ply(const char *path, const firn_scene_def *def, const firn_frame_stats *stats,
                         firn_error *err)
{
    return write_shapes_ply(path, def, stats, 1, err);
}

/* ---- VTK unstructured grid (.vtu) ------------------------------------------ */

/* VTK XML with every array in one appended raw block after the XML
 * (format="appended", encoding="raw"): each array is a UInt64 byte count
 * (header_type="UInt64") then its values, little-endian, and each
 * DataArray's offset is where its count starts, counted from the byte
 * after the '_' that opens the block. 78 bytes per tetrahedron and 25 per
 * vertex, besides 80 bytes of counts and 1.3 KB of XML. */
static unsigned char *put_u64le(unsigned char *dst, uint64_t u)
{
    for (int k = 0; k < 8; k++)
        dst[k] = (unsigned char)(u >> (8 * k));
    return dst + 8;
}

static unsigned char *put_i32le(unsigned char *dst, int32_t value)
{
    const uint32_t u = (uint32_t)value;
    for (int k = 0; k < 4; k++)
        dst[k] = (unsigned char)(u >> (8 * k));
    return dst + 4;
}

/* Vectors stored component-major (c n + i) as VTK's interleaved tuples. */
typedef struct {
    const float *a;
    long long n;
} vec3_soa;

static unsigned char *pack_vec3(unsigned char *d, const void *ctx, long long i)
{
    const vec3_soa *q = ctx;
    for (int c = 0; c < 3; c++)
        d = put_f32le(d, q->a[c * q->n + i]);
    return d;
}

static unsigned char *pack_f32(unsigned char *d, const void *ctx, long long i)
{
    return put_f32le(d, ((const float *)ctx)[i]);
}

static unsigned char *pack_i32(unsigned char *d, const void *ctx, long long i)
{
    return put_i32le(d, ((const int *)ctx)[i]);
}

static unsigned char *pack_u8(unsigned char *d, const void *ctx, long long i)
{
    *d = ((const uint8_t *)ctx)[i];
    return d + 1;
}

static unsigned char *pack_offset(unsigned char *d, const void *ctx, long long e)
{
    (void)ctx;
    return put_u64le(d, (uint64_t)(4 * (e + 1))); /* Int64, never negative */
}

static unsigned char *pack_tetra(unsigned char *d, const void *ctx, long long e)
{
    (void)ctx, (void)e;
    *d = 10; /* VTK_TETRA */
    return d + 1;
}

enum {
    VTU_POINTS,
    VTU_CONN,
    VTU_OFFSETS,
    VTU_TYPES,
    VTU_VELOCITY,
    VTU_FIXED,
    VTU_STRESS,
    VTU_STRAIN,
    VTU_VON_MISES,
    VTU_MATERIAL,
    VTU_ARRAYS
};

static int emit_vtu(FILE *f, void *ctx)
{
    const firn_fem_mesh_view *m = ctx;
    const long long n = m->n, ne = m->elements;
    const vec3_soa x = {m->x, n}, v = {m->v, n};
    /* Per array: records, bytes per record, packer and its context. */
    const struct {
        long long count;
        int size;
        pack_fn pack;
        const void *ctx;
    } arr[VTU_ARRAYS] = {
        [VTU_POINTS] = {n, 12, pack_vec3, &x},
        [VTU_CONN] = {4 * ne, 4, pack_i32, m->tet},
        [VTU_OFFSETS] = {ne, 8, pack_offset, NULL},
        [VTU_TYPES] = {ne, 1, pack_tetra, NULL},
        [VTU_VELOCITY] = {n, 12, pack_vec3, &v},
        [VTU_FIXED] = {n, 1, pack_u8, m->fixed},
        [VTU_STRESS] = {6 * ne, 4, pack_f32, m->stress},
        [VTU_STRAIN] = {6 * ne, 4, pack_f32, m->strain},
        [VTU_VON_MISES] = {ne, 4, pack_f32, m->von_mises},
        [VTU_MATERIAL] = {ne, 1, pack_u8, m->mat},
    };
    unsigned long long off[VTU_ARRAYS], at = 0;
    for (int k = 0; k < VTU_ARRAYS; k++) {
        off[k] = at;
        at += 8 + (unsigned long long)arr[k].count * (unsigned long long)arr[k].size;
    }
    if (fprintf(f,
                "<?xml version=\"1.0\"?>\n"
                "<!-- firn " FIRN_VERSION " FEM volume mesh -->\n"
                "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" "
                "header_type=\"UInt64\">\n"
                "<UnstructuredGrid>\n"
                "<Piece NumberOfPoints=\"%lld\" NumberOfCells=\"%lld\">\n"
                "<Points>\n"
                "<DataArray type=\"Float32\" Name=\"Points\" NumberOfComponents=\"3\" "
                "format=\"appended\" offset=\"%llu\"/>\n"
                "</Points>\n<Cells>\n"
                "<DataArray type=\"Int32\" Name=\"connectivity\" format=\"appended\" "
                "offset=\"%llu\"/>\n"
                "<DataArray type=\"Int64\" Name=\"offsets\" format=\"appended\" offset=\"%llu\"/>\n"
                "<DataArray type=\"UInt8\" Name=\"types\" format=\"appended\" offset=\"%llu\"/>\n"
                "</Cells>\n<PointData Vectors=\"velocity\">\n"
                "<DataArray type=\"Float32\" Name=\"velocity\" NumberOfComponents=\"3\" "
                "format=\"appended\" offset=\"%llu\"/>\n"
                "<DataArray type=\"UInt8\" Name=\"fixed\" format=\"appended\" offset=\"%llu\"/>\n"
                "</PointData>\n<CellData Tensors=\"stress\" Scalars=\"von_mises\">\n"
                "<DataArray type=\"Float32\" Name=\"stress\" NumberOfComponents=\"6\" "
                "format=\"appended\" offset=\"%llu\"/>\n"
                "<DataArray type=\"Float32\" Name=\"green_strain\" NumberOfComponents=\"6\" "
                "format=\"appended\" offset=\"%llu\"/>\n"
                "<DataArray type=\"Float32\" Name=\"von_mises\" format=\"appended\" "
                "offset=\"%llu\"/>\n"
                "<DataArray type=\"UInt8\" Name=\"material\" format=\"appended\" "
                "offset=\"%llu\"/>\n"
                "</CellData>\n</Piece>\n</UnstructuredGrid>\n"
                "<AppendedData encoding=\"raw\">\n_",
                n, ne, off[VTU_POINTS], off[VTU_CONN], off[VTU_OFFSETS], off[VTU_TYPES],
                off[VTU_VELOCITY], off[VTU_FIXED], off[VTU_STRESS], off[VTU_STRAIN],
                off[VTU_VON_MISES], off[VTU_MATERIAL]) < 0)
        return -1;
    for (int k = 0; k < VTU_ARRAYS; k++) {
        unsigned char count[8];
        put_u64le(count, (uint64_t)arr[k].count * (uint64_t)arr[k].size);
        if (fwrite(count, 1, 8, f) != 8 || write_records(f, arr[k].count, arr[k].pack, arr[k].ctx))
            return -1;
    }
    return fputs("\n</AppendedData>\n</VTKFile>\n", f) < 0 ? -1 : 0;
}

int firn_write_fem_vtu(const char *path, const firn_fem_mesh_view *m, firn_error *err)
{
    if (m->n < 0 || m->elements < 0 || (m->n > 0 && (!m->x || !m->v || !m->fixed)) ||
        (m->elements > 0 && (!m->tet || !m->mat || !m->stress || !m->strain || !m->von_mises))) {
        firn_set_error(err, FIRN_E_IO, "cannot write '%s': invalid FEM mesh view", path);
        return FIRN_E_IO;
    }
    for (long long k = 0; k < 4 * m->elements; k++)
        if (m->tet[k] < 0 || m->tet[k] >= m->n) {
            firn_set_error(err, FIRN_E_IO, "cannot write '%s': element %lld has vertex %d of %lld",
                           path, k / 4, m->tet[k], m->n);
            return FIRN_E_IO;
        }
    return firn_write_atomic(path, emit_vtu, (void *)m, err);
}

/* ---- time series (.pvd, .series) ------------------------------------------ */

typedef struct {
    const char *prefix, *ext;
    const firn_series_entry *e;
    int n;
} series_job;

static int emit_series(FILE *f, void *ctx)
{
    const series_job *j = ctx;
    const int pvd = strcmp(j->ext, "vtu") == 0;
    if (fputs(pvd ? "<?xml version=\"1.0\"?>\n"
                    "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
                    "<Collection>\n"
                  : "{\n  \"file-series-version\": \"1.0\",\n  \"files\": [\n",
              f) < 0)
        return -1;
    for (int k = 0; k < j->n; k++) {
        /* JSON has no NaN or infinity, nor does a timestep attribute */
        const double t = isfinite(j->e[k].time) ? j->e[k].time : 0.0;
        if ((pvd ? fprintf(f,
                           "<DataSet timestep=\"%.17g\" group=\"\" part=\"0\" "
                           "file=\"%s_%05d.%s\"/>\n",
                           t, j->prefix, j->e[k].frame, j->ext)
                 : fprintf(f, "    {\"name\": \"%s_%05d.%s\", \"time\": %.17g}%s\n", j->prefix,
                           j->e[k].frame, j->ext, t, k + 1 < j->n ? "," : "")) < 0)
            return -1;
    }
    return fputs(pvd ? "</Collection>\n</VTKFile>\n" : "  ]\n}\n", f) < 0 ? -1 : 0;
}

int firn_write_series(const char *path, const char *prefix, const char *ext,
                      const firn_series_entry *e, int n, firn_error *err)
{
    series_job j = {prefix, ext, e, n};
    return firn_write_atomic(path, emit_series, &j, err);
}

int firn_write_ply_named(const char *path, const firn_scene_def *def, const firn_particles_view *p,
                         firn_error *err)
{
    if (p->n < 0 || (p->n > 0 && !p->x)) {
        firn_set_error(err, FIRN_E_IO, "cannot write '%s': invalid particle view", path);
        return FIRN_E_IO;
    }
    /* missing optional arrays read as the rest state: v 0, Jp 1, damage 0,
     * material 0 */
    const size_t n = (size_t)p->n;
    const int fill = !p->v || !p->Jp || !p->damage || !p->mat;
    float *rest = fill && n > 0 ? calloc(5 * n * sizeof(float) + n, 1) : NULL;
    if (fill && n > 0 && !rest) {
        firn_set_error(err, FIRN_E_NOMEM, "out of memory writing '%s'", path);
        return FIRN_E_NOMEM;
    }
    for (size_t i = 0; rest && !p->Jp && i < n; i++)
        rest[3 * n + i] = 1.0f;
    firn_field_table t = {.count = p->n, .entity = "MPM particle"};
    const int F = FIRN_FIELD_FLOAT32;
    firn_field_add(&t, "x", "x", F, 3, (void *)p->x, 0, 0.0f, 0.0f, NULL);
    /* the table only reads its data; rest + k n only where rest exists */
    void *v = p->v ? (void *)p->v : rest;
    void *jp = p->Jp ? (void *)p->Jp : rest ? (void *)(rest + 3 * n) : NULL;
    void *dmg = p->damage ? (void *)p->damage : rest ? (void *)(rest + 4 * n) : NULL;
    void *mat = p->mat ? (void *)p->mat : rest ? (void *)(rest + 5 * n) : NULL;
    firn_field_add(&t, "v", "v", F, 3, v, 0, 0.0f, 0.0f, NULL);
    firn_field_add(&t, "Jp", "Jp", F, 1, jp, 0, 0.0f, 0.0f, NULL);
    firn_field_add(&t, "damage", "damage", F, 1, dmg, 0, 0.0f, 0.0f, NULL);
    firn_field_add(&t, "mat", "material", FIRN_FIELD_UINT8, 1, mat, 0, 0.0f, 0.0f, NULL);
    firn_mpm_ply_names(&t);
    const int rc = firn_write_fields_ply(path, def, &t, err);
    free(rest);
    return rc;
}

int firn_write_ply(const char *path, const firn_particles_view *p, firn_error *err)
{
    return firn_write_ply_named(path, NULL, p, err);
}

/* ---- PNG preview --------------------------------------------------------- */

/* Layout: total width PNG_WIDTH; a margin, the front view (x right, y up),
 * a gap of one margin, the top view (x right, z down), a margin. Both panels
 * share one scale so sizes compare; each is centred in its column. Below
 * them, after a margin, a band of one line of text (PNG_BAND with its
 * bottom margin): the simulated time at the left, a scale bar at the
 * right. */
#define PNG_WIDTH      640
#define PNG_MARGIN     8
#define PNG_MAX_HEIGHT 2048
#define FONT_PX        2                     /* screen pixels per font pixel */
#define FONT_H         (7 * FONT_PX)         /* a glyph's height */
#define FONT_ADVANCE   (6 * FONT_PX)         /* 5 columns and a space */
#define PNG_BAND       (FONT_H + PNG_MARGIN) /* the text line and the bottom margin */
#define SCALE_BAR_MAX  (100)                 /* the scale bar's longest length [px] */

/* MPM materials take palette[mat & 7], the SPH liquid palette[SPH_COLOR]
 * (azure), the PBD particles palette[PBD_COLOR] (magenta), the FEM surface
 * vertices palette[FEM_COLOR] (olive). */
static const unsigned char palette[11][3] = {
    {31, 119, 180},  {255, 127, 14}, {44, 160, 44}, {214, 39, 40}, {148, 103, 189}, {140, 86, 75},
    {227, 119, 194}, {23, 190, 207}, {0, 175, 255}, {200, 0, 160}, {150, 150, 0},
};
static const unsigned char bg_color[3] = {236, 236, 232};   /* outside the domain */
static const unsigned char fill_color[3] = {252, 252, 250}; /* inside the domain */
static const unsigned char frame_color[3] = {96, 96, 96};
static const unsigned char text_color[3] = {16, 16, 16}; /* time and scale bar */

typedef struct {
    int w, h;
    unsigned char *rgb;
    float *depth; /* per pixel; panels never overlap so one buffer serves both */
} image;

typedef struct {
    int x0, y0, pw, ph; /* interior rectangle of the domain in pixels */
} panel;

static void fill_rect(image *im, int x0, int y0, int w, int h, const unsigned char c[3])
{
    for (int y = y0; y < y0 + h; y++)
        for (int x = x0; x < x0 + w; x++) {
            if (x < 0 || y < 0 || x >= im->w || y >= im->h)
                continue;
            memcpy(im->rgb + 3 * ((size_t)y * im->w + x), c, 3);
        }
}

static void draw_panel_frame(image *im, const panel *pn)
{
    /* The interior over a 1 px larger rectangle leaves a 1 px frame. */
    fill_rect(im, pn->x0 - 1, pn->y0 - 1, pn->pw + 2, pn->ph + 2, frame_color);
    fill_rect(im, pn->x0, pn->y0, pn->pw, pn->ph, fill_color);
}

static int px_len(float v)
{
    int k = (int)lrintf(v);
    return k < 1 ? 1 : k;
}

/* A 5 x 7 bitmap font of the characters the band writes: each glyph is 7
 * rows, top first, bit 4 the leftmost column. Others draw as a space. */
static const struct {
    char c;
    unsigned char row[7];
} glyphs[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}},
    {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}},
    {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {'+', {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}},
    {'=', {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00}},
    {'e', {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E}},
    {'m', {0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11}},
    {'s', {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E}},
    {'t', {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06}},
};

/* Draws text with its top left corner at (x, y), clipped to the image;
 * returns its width in pixels. */
static int draw_text(image *im, int x, int y, const char *text, const unsigned char c[3])
{
    int k = 0;
    for (; text[k]; k++)
        for (size_t g = 0; g < sizeof glyphs / sizeof glyphs[0]; g++) {
            if (glyphs[g].c != text[k])
                continue;
            for (int r = 0; r < 7; r++)
                for (int col = 0; col < 5; col++)
                    if (glyphs[g].row[r] >> (4 - col) & 1)
                        fill_rect(im, x + k * FONT_ADVANCE + col * FONT_PX, y + r * FONT_PX,
                                  FONT_PX, FONT_PX, c);
        }
    return k > 0 ? k * FONT_ADVANCE - FONT_PX : 0;
}

static int text_width(const char *text)
{
    return text[0] ? (int)strlen(text) * FONT_ADVANCE - FONT_PX : 0;
}

/* The band below the panels, its text's top at y: "t = <time> s" at the
 * left when time is given (not NULL), and at the right a scale bar of the
 * longest length 1, 2 or 5 x 10^k m that is at most SCALE_BAR_MAX pixels
 * long at scale [px/m], with its length after it ("0.2 m"). */
static void draw_band(image *im, int y, const double *time, float scale)
{
    char text[64];
    if (time) {
        snprintf(text, sizeof text, "t = %.4g s", *time);
        draw_text(im, PNG_MARGIN, y, text, text_color);
    }
    double len = pow(10.0, floor(log10(SCALE_BAR_MAX / (double)scale)));
    if (5.0 * len * scale <= SCALE_BAR_MAX)
        len *= 5.0;
    else if (2.0 * len * scale <= SCALE_BAR_MAX)
        len *= 2.0;
    const int bar = px_len((float)(len * scale));
    snprintf(text, sizeof text, "%g m", len);
    const int label_x = PNG_WIDTH - PNG_MARGIN - text_width(text);
    draw_text(im, label_x, y, text, text_color);
    const int x0 = label_x - 3 * FONT_PX - bar, mid = y + FONT_H / 2;
    fill_rect(im, x0, mid - 1, bar, 3, text_color);      /* the bar */
    fill_rect(im, x0, y + 2, 2, FONT_H - 4, text_color); /* its ends */
    fill_rect(im, x0 + bar - 2, y + 2, 2, FONT_H - 4, text_color);
}

/* Draws a 2x2 dot centred on (fx, fy), clipped to the panel; t in [0,1] is
 * the nearness (1 = nearest), used both as depth and for shading. */
static void plot(image *im, const panel *pn, float fx, float fy, float t, int mat)
{
    /* Written so that NaN positions fail the test and are skipped. */
    if (!(fx >= pn->x0 - 2 && fx <= pn->x0 + pn->pw + 2 && fy >= pn->y0 - 2 &&
          fy <= pn->y0 + pn->ph + 2))
        return;
    t = t > 0 ? (t < 1 ? t : 1) : 0;
    float shade = 0.35f + 0.65f * t;
    const unsigned char *base = palette[mat];
    unsigned char c[3];
    for (int k = 0; k < 3; k++)
        c[k] = (unsigned char)lrintf(base[k] * shade);
    int ix = (int)floorf(fx - 0.5f), iy = (int)floorf(fy - 0.5f);
    for (int y = iy; y < iy + 2; y++)
        for (int x = ix; x < ix + 2; x++) {
            if (x < pn->x0 || y < pn->y0 || x >= pn->x0 + pn->pw || y >= pn->y0 + pn->ph)
                continue;
            size_t idx = (size_t)y * im->w + x;
            if (t > im->depth[idx]) { /* strict: the first of equals wins */
                im->depth[idx] = t;
                memcpy(im->rgb + 3 * idx, c, 3);
            }
        }
}

/* Palette index of the SPH particles: their own colour, whatever their
 * material (MPM materials take palette[mat & 7]). */
#define SPH_COLOR 8
#define PBD_COLOR 9
#define FEM_COLOR 10

static void render(image *im, const panel *front, const panel *top, const firn_scene_def *def,
                   long long n, const float *X, const uint8_t *mat, int color, float scale)
{
    const float *lo = def->lower, *up = def->upper;
    float ey = up[1] - lo[1], ez = up[2] - lo[2];
    for (long long i = 0; i < n; i++) {
        float x = X[i], y = X[n + i], z = X[2 * n + i];
        int m = color >= 0 ? color : (mat ? mat[i] & 7 : 0);
        float sx = (x - lo[0]) * scale;
        /* Front: looking along -z, nearer = larger z. */
        plot(im, front, front->x0 + sx, front->y0 + (up[1] - y) * scale, (z - lo[2]) / ez, m);
        /* Top: looking along -y, nearer = larger y. */
        plot(im, top, top->x0 + sx, top->y0 + (z - lo[2]) * scale, (y - lo[1]) / ey, m);
    }
}

/* Rigid bodies in grey: per pixel, the nearest point inside the body along
 * the view ray (sampled at RIGID_STEPS depths), depth-tested with the
 * particles. Only pixels and depth samples within the body's bounding box
 * (padded by a pixel) are tried; the others cannot be inside it. */
#define RIGID_STEPS 128
static const unsigned char rigid_color[3] = {70, 70, 70};
static const unsigned char tool_color[3] = {120, 60, 20}; /* tools: brown, apart from the rigids */

static void render_rigid_panel(image *im, const panel *pn, const firn_sdf_shape *sh, firn_vec3 pos,
                               firn_quat q, const firn_scene_def *def, float scale, int top,
                               const unsigned char color[3])
{
    const float *lo = def->lower, *up = def->upper;
    const int da = top ? 1 : 2; /* depth axis */
    const int va = top ? 2 : 1; /* vertical axis of the panel */
    const float ext = up[da] - lo[da];
    float bl[3], bu[3], half[3];
    const int bounded = firn_sdf_world_extent(sh, q, half);
    for (int a = 0; a < 3; a++) {
        const float pad = 1.0f / scale;
        bl[a] = bounded ? pos.v[a] - half[a] - pad : -INFINITY;
        bu[a] = bounded ? pos.v[a] + half[a] + pad : INFINITY;
    }
    for (int py = pn->y0; py < pn->y0 + pn->ph; py++)
        for (int px = pn->x0; px < pn->x0 + pn->pw; px++) {
            firn_vec3 x, n;
            x.v[0] = lo[0] + ((float)(px - pn->x0) + 0.5f) / scale;
            if (top)
                x.v[2] = lo[2] + ((float)(py - pn->y0) + 0.5f) / scale;
            else
                x.v[1] = up[1] - ((float)(py - pn->y0) + 0.5f) / scale;
            if (!(x.v[0] >= bl[0] && x.v[0] <= bu[0] && x.v[va] >= bl[va] && x.v[va] <= bu[va]))
                continue;
            for (int k = 0; k < RIGID_STEPS; k++) {
                float t = 1.0f - ((float)k + 0.5f) / RIGID_STEPS; /* nearest first */
                x.v[da] = lo[da] + t * ext;
                if (x.v[da] > bu[da])
                    continue;
                if (x.v[da] < bl[da])
                    break;
                if (firn_sdf_world(sh, pos, q, x, &n) > 0.0f)
                    continue;
                size_t idx = (size_t)py * im->w + px;
                if (t > im->depth[idx]) {
                    float shade = 0.55f + 0.45f * fabsf(n.v[top ? 1 : 2]);
                    im->depth[idx] = t;
                    for (int c = 0; c < 3; c++)
                        im->rgb[3 * idx + c] = (unsigned char)lrintf(color[c] * shade + 60.0f);
                }
                break;
            }
        }
}

static void render_rigids(image *im, const panel *front, const panel *top,
                          const firn_scene_def *def, const firn_frame_stats *s, float scale)
{
    int nr = s->n_rigids < def->n_rigids ? s->n_rigids : def->n_rigids;
    for (int k = 0; k < nr && k < FIRN_MAX_RIGIDS; k++) {
        const firn_rigid_stats *r = &s->rigids[k];
        firn_sdf_shape sh = firn_rigid_sdf_shape(&def->rigids[k].shape);
        firn_vec3 pos = firn_v3(r->position[0], r->position[1], r->position[2]);
        firn_quat q = {
            {r->orientation[0], r->orientation[1], r->orientation[2], r->orientation[3]}};
        render_rigid_panel(im, front, &sh, pos, q, def, scale, 0, rigid_color);
        render_rigid_panel(im, top, &sh, pos, q, def, scale, 1, rigid_color);
    }
    int nt = s->n_tools < def->n_tools ? s->n_tools : def->n_tools;
    for (int k = 0; k < nt && k < FIRN_MAX_TOOLS; k++) {
        const firn_tool_state *t = &s->tools[k];
        firn_sdf_shape sh = firn_rigid_sdf_shape(&def->tools[k].shape);
        firn_vec3 pos = firn_v3(t->position[0], t->position[1], t->position[2]);
        firn_quat q = {
            {t->orientation[0], t->orientation[1], t->orientation[2], t->orientation[3]}};
        render_rigid_panel(im, front, &sh, pos, q, def, scale, 0, tool_color);
        render_rigid_panel(im, top, &sh, pos, q, def, scale, 1, tool_color);
    }
}

typedef struct {
    const image *im;
    int failed, errnum; /* libpng error, and errno at that moment */
    char msg[200];
} png_job;

static void png_err_fn(png_structp png, png_const_charp msg)
{
    png_job *job = png_get_error_ptr(png);
    job->failed = 1;
    job->errnum = errno; /* libpng's "Write Error" follows a failed fwrite */
    snprintf(job->msg, sizeof job->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void png_warn_fn(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

static int emit_png(FILE *f, void *ctx)
{
    png_job *job = ctx;
    const image *im = job->im;
    png_bytep *rows = malloc(sizeof *rows * (size_t)im->h);
    if (!rows)
        return -1;
    for (int y = 0; y < im->h; y++)
        rows[y] = im->rgb + 3 * (size_t)y * im->w;

    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, job, png_err_fn, png_warn_fn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, NULL);
        free(rows);
        errno = ENOMEM;
        return -1;
    }
    /* No locals change after setjmp, so none can be clobbered by longjmp. */
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(rows);
        errno = job->errnum;
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)im->w, (png_uint_32)im->h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(rows);
    return 0;
}

/* The FEM bodies: their vertices (interior ones are mostly hidden by the
 * depth test) and each surface triangle's centre, so that a coarse mesh
 * still reads as a surface. Without memory for the centres, the vertices
 * alone. */
static void render_fem(image *im, const panel *front, const panel *top, const firn_scene_def *def,
                       const firn_fem_mesh_view *m, float scale)
{
    const long long nt = m->triangles;
    float *c = nt > 0 ? malloc(3 * (size_t)nt * sizeof *c) : NULL;
    if (c) {
        for (long long t = 0; t < nt; t++)
            for (int a = 0; a < 3; a++) {
                const int *v = m->tri + 3 * t;
                c[a * nt + t] =
                    (m->x[a * m->n + v[0]] + m->x[a * m->n + v[1]] + m->x[a * m->n + v[2]]) / 3.0f;
            }
        render(im, front, top, def, nt, c, NULL, FEM_COLOR, scale);
        free(c);
    }
    render(im, front, top, def, m->n, m->x, NULL, FEM_COLOR, scale);
}

/* Whether a view of n points at x may be drawn: none, or some with x. */
static int view_ok(long long n, const float *x) { return n >= 0 && (n == 0 || x); }

int firn_write_preview(const char *path, const firn_scene_def *def, const firn_preview *what,
                       firn_error *err)
{
    const firn_preview none = {0};
    const firn_preview *w = what ? what : &none;
    const firn_particles_view *p = w->mpm;
    const firn_sph_particles_view *sph = w->sph;
    const firn_pbd_particles_view *pbd = w->pbd;
    const firn_fem_mesh_view *fem = w->fem;
    const firn_frame_stats *stats = w->stats;
    float ex = def->upper[0] - def->lower[0];
    float ey = def->upper[1] - def->lower[1];
    float ez = def->upper[2] - def->lower[2];
    if (!(ex > 0 && ey > 0 && ez > 0)) {
        firn_set_error(err, FIRN_E_IO, "cannot write '%s': the domain is empty", path);
        return FIRN_E_IO;
    }
    const char *bad = p && !view_ok(p->n, p->x)                ? "MPM particle"
                      : sph && !view_ok(sph->n, sph->x)        ? "SPH particle"
                      : pbd && !view_ok(pbd->n, pbd->x)        ? "PBD particle"
                      : fem && !view_ok(fem->n, fem->x)        ? "FEM mesh"
                      : fem && fem->triangles > 0 && !fem->tri ? "FEM mesh"
                                                               : NULL;
    if (bad) {
        firn_set_error(err, FIRN_E_IO,
                       "cannot write '%s': invalid %s view (count < 0, or points "
                       "without positions)",
                       path, bad);
        return FIRN_E_IO;
    }

    /* One scale for both panels: fill the column width unless the domain is
     * so tall that the image would exceed PNG_MAX_HEIGHT. */
    int col = (PNG_WIDTH - 3 * PNG_MARGIN) / 2;
    float tall = ey > ez ? ey : ez;
    float scale = col / ex;
    if (tall * scale > PNG_MAX_HEIGHT - 2 * PNG_MARGIN - PNG_BAND)
        scale = (PNG_MAX_HEIGHT - 2 * PNG_MARGIN - PNG_BAND) / tall;
    panel front, top;
    front.pw = top.pw = px_len(ex * scale);
    front.ph = px_len(ey * scale);
    top.ph = px_len(ez * scale);
    front.x0 = PNG_MARGIN + (col - front.pw) / 2;
    top.x0 = 2 * PNG_MARGIN + col + (col - top.pw) / 2;
    front.y0 = top.y0 = PNG_MARGIN;

    image im;
    im.w = PNG_WIDTH;
    const int band_y = (front.ph > top.ph ? front.ph : top.ph) + 2 * PNG_MARGIN;
    im.h = band_y + PNG_BAND;
    size_t npix = (size_t)im.w * im.h;
    im.rgb = malloc(3 * npix);
    im.depth = malloc(sizeof *im.depth * npix);
    if (!im.rgb || !im.depth) {
        free(im.rgb);
        free(im.depth);
        firn_set_error(err, FIRN_E_NOMEM, "out of memory writing '%s'", path);
        return FIRN_E_NOMEM;
    }
    for (size_t i = 0; i < npix; i++) {
        memcpy(im.rgb + 3 * i, bg_color, 3);
        im.depth[i] = -INFINITY;
    }
    draw_panel_frame(&im, &front);
    draw_panel_frame(&im, &top);
    if (p && p->n > 0)
        render(&im, &front, &top, def, p->n, p->x, p->mat, -1, scale);
    if (sph && sph->n > 0)
        render(&im, &front, &top, def, sph->n, sph->x, NULL, SPH_COLOR, scale);
    if (pbd && pbd->n > 0)
        render(&im, &front, &top, def, pbd->n, pbd->x, NULL, PBD_COLOR, scale);
    if (fem && fem->n > 0)
        render_fem(&im, &front, &top, def, fem, scale);
    if (stats)
        render_rigids(&im, &front, &top, def, stats, scale);
    draw_band(&im, band_y, stats ? &stats->time : NULL, scale);

    png_job job = {.im = &im};
    int rc = firn_write_atomic(path, emit_png, &job, err);
    if (rc == FIRN_E_IO && job.failed) /* say what libpng said, too */
        firn_set_error(err, FIRN_E_IO, "cannot write '%s': PNG encoding failed: %s%s%s", path,
                       job.msg, job.errnum ? ": " : "", job.errnum ? strerror(job.errnum) : "");
    free(im.rgb);
    free(im.depth);
    return rc;
}

/* ---- JSONL stats --------------------------------------------------------- */

typedef struct {
    char buf[32768]; /* 16 material names escaped to 6 bytes a byte need about 6 KiB,
                        16 rigid bodies about 8 KiB, 8 tools about 8 KiB */
    size_t len;
    int overflow;
} line_buf;

static void put(line_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(line_buf *b, const char *fmt, ...)
{
    if (b->overflow)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->buf + b->len, sizeof b->buf - b->len, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof b->buf - b->len)
        b->overflow = 1;
    else
        b->len += (size_t)k;
}

/* A number with prec significant digits (9: float, 17: double); JSON has
 * no NaN/Inf, so those become null and the line stays parseable. */
static void put_num(line_buf *b, double v, int prec)
{
    if (isfinite(v))
        put(b, "%.*g", prec, v);
    else
        put(b, "null");
}

static void put_vec(line_buf *b, const char *key, const double v[3], int prec)
{
    put(b, ",\"%s\":[", key);
    for (int c = 0; c < 3; c++) {
        put(b, c ? "," : "");
        put_num(b, v[c], prec);
    }
    put(b, "]");
}

static void put_fvec(line_buf *b, const char *key, const float *v, int n)
{
    put(b, "\"%s\":[", key);
    for (int c = 0; c < n; c++) {
        put(b, c ? "," : "");
        put_num(b, v[c], 9);
    }
    put(b, "]");
}

static void put_json_string(line_buf *b, const char *s, size_t max)
{
    put(b, "\"");
    for (size_t i = 0; i < max && s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            put(b, "\\%c", ch);
        else if (ch < 0x20)
            put(b, "\\u%04x", ch);
        else
            put(b, "%c", ch);
    }
    put(b, "\"");
}

/* "materials":{name:count,...}: the particles of each material. */
static void put_material_counts(line_buf *b, const firn_scene_def *def, const firn_frame_stats *s)
{
    put(b, ",\"materials\":{");
    int nm = def->n_materials < FIRN_MAX_MATERIALS ? def->n_materials : FIRN_MAX_MATERIALS;
    for (int k = 0; k < nm; k++) {
        put(b, k ? "," : "");
        if (def->materials[k].name[0])
            put_json_string(b, def->materials[k].name, FIRN_NAME_MAX);
        else
            put(b, "\"%d\"", k); /* unnamed: keyed by index */
        put(b, ":%lld", s->material_count[k]);
    }
    put(b, "}");
}

/* What a rigid's and a tool's entries share: {"name" (its index k when it
 * has none), its pose, velocities and the last substep's force and torque;
 * the entry is left open. */
static void put_body_state(line_buf *b, int k, const char *name, const float position[3],
                           const float orientation[4], const float velocity[3],
                           const float angular_velocity[3], const float force[3],
                           const float torque[3])
{
    put(b, "%s{\"name\":", k ? "," : "");
    if (name && name[0])
        put_json_string(b, name, FIRN_NAME_MAX);
    else
        put(b, "\"%d\"", k);
    put(b, ",");
    put_fvec(b, "position", position, 3);
    put(b, ",");
    put_fvec(b, "orientation", orientation, 4);
    put(b, ",");
    put_fvec(b, "velocity", velocity, 3);
    put(b, ",");
    put_fvec(b, "angular_velocity", angular_velocity, 3);
    put(b, ",");
    put_fvec(b, "force", force, 3);
    put(b, ",");
    put_fvec(b, "torque", torque, 3);
}

/* "rigids":[{name, pose, velocities, coupling force and torque},...]. */
static void put_rigids(line_buf *b, const firn_scene_def *def, const firn_frame_stats *s)
{
    if (s->n_rigids > 0) {
        put(b, ",\"rigids\":[");
        int nr = s->n_rigids < FIRN_MAX_RIGIDS ? s->n_rigids : FIRN_MAX_RIGIDS;
        for (int k = 0; k < nr; k++) {
            const firn_rigid_stats *r = &s->rigids[k];
            put_body_state(b, k, k < def->n_rigids ? def->rigids[k].name : NULL, r->position,
                           r->orientation, r->velocity, r->angular_velocity, r->force, r->torque);
            put(b, "}");
        }
        put(b, "]");
    }
}

/* "tools":[{name, pose, commanded velocities, the force and torque the
 * material exerts: the last substep's and the mean over the frame},...]. */
static void put_tools(line_buf *b, const firn_scene_def *def, const firn_frame_stats *s)
{
    if (s->n_tools <= 0)
        return;
    put(b, ",\"tools\":[");
    int nt = s->n_tools < FIRN_MAX_TOOLS ? s->n_tools : FIRN_MAX_TOOLS;
    for (int k = 0; k < nt; k++) {
        const firn_tool_state *t = &s->tools[k];
        put_body_state(b, k, k < def->n_tools ? def->tools[k].name : NULL, t->position,
                       t->orientation, t->velocity, t->angular_velocity, t->force, t->torque);
        put(b, ",");
        put_fvec(b, "force_mean", t->force_mean, 3);
        put(b, ",");
        put_fvec(b, "torque_mean", t->torque_mean, 3);
        put(b, "}");
    }
    put(b, "]");
}

/* Appends the line in one write() (see within); FIRN_OK, or FIRN_E_IO with
 * err filled. */
static int append_line(const char *path, const line_buf *b, firn_error *err)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        io_error(err, path, errno, "cannot open");
        return FIRN_E_IO;
    }
    /* One write() so readers and killed runs only ever see whole lines;
     * retry only when interrupted before anything was written. A short
     * write (a full disk) is cut back off, so that the file keeps whole
     * lines only; that assumes the run is the file's one writer, as `firn
     * run` makes it (two runs into one folder would also clash on frames). */
    struct stat st;
    off_t before = fstat(fd, &st) == 0 ? st.st_size : -1;
    ssize_t w;
    do
        w = write(fd, b->buf, b->len);
    while (w < 0 && errno == EINTR);
    int e = w < 0 ? errno : 0;
    int cut = w > 0 && (size_t)w != b->len && before >= 0 && ftruncate(fd, before) == 0;
    if (close(fd) != 0 && !e)
        e = errno;
    if (e) {
        io_error(err, path, e, "write failed");
        return FIRN_E_IO;
    }
    if ((size_t)w != b->len) {
        firn_set_error(err, FIRN_E_IO, "cannot write '%s': short write (%zd of %zu bytes; %s)",
                       path, w, b->len,
                       cut     ? "is the device full? the partial line was removed"
                       : w > 0 ? "the partial line could not be removed"
                               : "is the device full?");
        return FIRN_E_IO;
    }
    return FIRN_OK;
}

/* "sph":{...}, the SPH particles' statistics, when there are any. */
static void put_sph(line_buf *b, const firn_frame_stats *s)
{
    const firn_sph_frame_stats *q = &s->sph;
    if (q->particles <= 0)
        return;
    put(b, ",\"sph\":{\"particles\":%lld,\"mass\":", q->particles);
    put_num(b, q->mass, 17);
    put(b, ",\"kinetic_energy\":");
    put_num(b, q->kinetic_energy, 17);
    put_vec(b, "momentum", q->momentum, 17);
    put_vec(b, "center_of_mass", q->center_of_mass, 17);
    put_vec(b, "bbox_lower",
            (const double[3]){q->bbox_lower[0], q->bbox_lower[1], q->bbox_lower[2]}, 9);
    put_vec(b, "bbox_upper",
            (const double[3]){q->bbox_upper[0], q->bbox_upper[1], q->bbox_upper[2]}, 9);
    put(b, ",\"mean_density\":");
    put_num(b, q->mean_density, 9);
    put(b, ",\"max_density_ratio\":");
    put_num(b, q->max_density_ratio, 9);
    put(b, ",\"mean_pressure\":");
    put_num(b, q->mean_pressure, 9);
    put(b, ",\"divergence_iterations\":%d,\"density_iterations\":%d}", q->divergence_iterations,
        q->density_iterations);
}

/* "pbd":{...}, the PBD particles' statistics, when there are any. */
static void put_pbd(line_buf *b, const firn_frame_stats *s)
{
    const firn_pbd_frame_stats *q = &s->pbd;
    if (q->particles <= 0)
        return;
    put(b, ",\"pbd\":{\"particles\":%lld,\"pinned\":%lld,\"edges\":%lld,\"bends\":%lld,\"mass\":",
        q->particles, q->pinned, q->edges, q->bends);
    put_num(b, q->mass, 17);
    put(b, ",\"kinetic_energy\":");
    put_num(b, q->kinetic_energy, 17);
    put_vec(b, "momentum", q->momentum, 17);
    put_vec(b, "center_of_mass", q->center_of_mass, 17);
    put_vec(b, "bbox_lower",
            (const double[3]){q->bbox_lower[0], q->bbox_lower[1], q->bbox_lower[2]}, 9);
    put_vec(b, "bbox_upper",
            (const double[3]){q->bbox_upper[0], q->bbox_upper[1], q->bbox_upper[2]}, 9);
    put(b, ",\"max_strain\":");
    put_num(b, q->max_strain, 9);
    if (q->liquid > 0) { /* only with liquid: the other scenes' lines stay as they were */
        put(b, ",\"liquid\":%lld,\"density_error\":", q->liquid);
        put_num(b, q->density_error, 9);
    }
    put(b, "}");
}

/* "fem":{...}, the FEM bodies' statistics, when there are any. */
static void put_fem(line_buf *b, const firn_frame_stats *s)
{
    const firn_fem_frame_stats *q = &s->fem;
    if (q->vertices <= 0)
        return;
    put(b, ",\"fem\":{\"vertices\":%lld,\"elements\":%lld,\"fixed\":%lld,\"mass\":", q->vertices,
        q->elements, q->fixed);
    put_num(b, q->mass, 17);
    put(b, ",\"kinetic_energy\":");
    put_num(b, q->kinetic_energy, 17);
    put(b, ",\"elastic_energy\":");
    put_num(b, q->elastic_energy, 17);
    put_vec(b, "momentum", q->momentum, 17);
    put_vec(b, "center_of_mass", q->center_of_mass, 17);
    put_vec(b, "bbox_lower",
            (const double[3]){q->bbox_lower[0], q->bbox_lower[1], q->bbox_lower[2]}, 9);
    put_vec(b, "bbox_upper",
            (const double[3]){q->bbox_upper[0], q->bbox_upper[1], q->bbox_upper[2]}, 9);
    put(b, ",\"max_von_mises\":");
    put_num(b, q->max_von_mises, 9);
    put(b, "}");
}

int firn_append_stats_jsonl(const char *path, const firn_scene_def *def, const firn_frame_stats *s,
                            firn_error *err)
{
    line_buf lb, *b = &lb;
    lb.len = 0;
    lb.overflow = 0;
    put(b, "{\"frame\":%d,\"time\":", s->frame);
    put_num(b, s->time, 17);
    put(b, ",\"substeps\":%lld,\"frame_substeps\":%d,\"dt\":", s->substeps, s->frame_substeps);
    put_num(b, s->dt, 9);
    put(b, ",\"particles\":%lld,\"kinetic_energy\":", s->particles);
    put_num(b, s->kinetic_energy, 17);
    const float *lo = s->bbox_lower, *hi = s->bbox_upper;
    put_vec(b, "momentum", s->momentum, 17);
    put_vec(b, "center_of_mass", s->center_of_mass, 17);
    put_vec(b, "bbox_lower", (const double[3]){lo[0], lo[1], lo[2]}, 9);
    put_vec(b, "bbox_upper", (const double[3]){hi[0], hi[1], hi[2]}, 9);
    put(b, ",\"mass\":");
    put_num(b, s->mass, 17);
    put_material_counts(b, def, s);
    put_rigids(b, def, s);
    put_tools(b, def, s);
    put_sph(b, s);
    put_pbd(b, s);
    put_fem(b, s);
    put(b, ",\"wall_seconds\":");
    put_num(b, s->wall_seconds, 17);
    put(b, ",\"throughput\":");
    put_num(b, s->throughput, 17);
    put(b, "}\n");
    if (b->overflow) {
        firn_set_error(err, FIRN_E_IO, "cannot write '%s': stats line too long", path);
        return FIRN_E_IO;
    }
    return append_line(path, b, err);
}
