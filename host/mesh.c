/* mesh.c - triangle meshes for rigid bodies and particle bodies: Wavefront
 * OBJ loading (`v` and `f` lines; polygons fan-triangulated; everything else
 * ignored), the closed-manifold check, volume integrals (mass, centroid and
 * inertia from signed tetrahedra), principal axes, the exact signed distance
 * through a triangle hierarchy (particle bodies' inside test), and the SDF
 * grid that the coupling samples (PHYSICS.md s4, as Genesis builds it: 5 mm cells, 32 to 128 per
 * axis, the box padded by 20 % of the largest extent).
 *
 * Each grid point holds the exact distance to the nearest triangle, found
 * through a bounding-volume hierarchy, signed by the angle-weighted
 * pseudo-normal of the nearest feature - face, edge or vertex (Baerentzen
 * and Aanaes 2005, "Signed distance computation using the angle weighted
 * pseudonormal"; exact for a closed, manifold, consistently oriented mesh)
 * - and the gradient (point - nearest point) / distance, which is the
 * SDF's gradient wherever the nearest point is unique.
 *
 * Meshes of files are cached for the process (firn_mesh_get), so that
 * validation, the world and the preview renderer share one load and one
 * grid; entries are never freed while the process runs, so the grid
 * pointers worlds hold stay valid. */
#include <ctype.h>
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "mesh.h"

#define SDF_CELL      0.005 /* [m] */
#define SDF_MIN_CELLS 32
#define SDF_MAX_CELLS 128
#define SDF_PAD       0.2 /* of the largest extent, on every side */

/* ---- OBJ ------------------------------------------------------------------- */

typedef struct {
    float *v;
    int nv, cap_v;
    int *tri, *line; /* 3 per triangle; the file line of each triangle's face */
    int nt, cap_t;
} obj_data;

static void obj_free(obj_data *o)
{
    free(o->v);
    free(o->tri);
    free(o->line);
    memset(o, 0, sizeof *o);
}

static int grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int c = *cap ? *cap : 256;
    while (c < need) {
        if (c > INT_MAX / 2)
            return -1;
        c *= 2;
    }
    void *q = realloc(*p, (size_t)c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int nomem(firn_error *err, const char *name)
{
    firn_set_error(err, FIRN_E_NOMEM, "out of host memory reading mesh '%s'", name);
    return -1;
}

static int bad_obj(firn_error *err, const char *name, int line, const char *what)
{
    firn_set_error(err, FIRN_E_SCENE, "mesh '%s' line %d: %s", name, line, what);
    return -1;
}

/* The OBJ file at path, opened for reading; NULL with err filled. */
static FILE *open_obj(const char *path, firn_error *err)
{
    /* Only a regular file: the mesh is read more than once (validation, then
     * each world), and a FIFO or a device would block or never end. Opened
     * without blocking and checked on the open file, so that no path can
     * block here. */
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
        close(fd);
        firn_set_error(err, FIRN_E_IO, "cannot read mesh '%s': not a regular file", path);
        return NULL;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        firn_set_error(err, FIRN_E_IO, "cannot read mesh '%s': %s", path, strerror(e));
    }
    return f;
}

/* A "v x y z" line (s after the 'v'): the vertex, scaled. */
static int parse_vertex(char *s, float scale, obj_data *o, const char *path, int lineno,
                        firn_error *err)
{
    char msg[160];
    char *e = s;
    double x[3];
    for (int a = 0; a < 3; a++) {
        char *next;
        x[a] = strtod(e, &next);
        if (next == e || !isfinite(x[a])) {
            bad_obj(err, path, lineno, "a vertex needs 3 finite coordinates");
            return -1;
        }
        e = next;
    }
    if (grow((void **)&o->v, &o->cap_v, 3 * (o->nv + 1), sizeof(float))) {
        nomem(err, path);
        return -1;
    }
    for (int a = 0; a < 3; a++) {
        o->v[3 * o->nv + a] = (float)(x[a] * scale);
        if (!isfinite(o->v[3 * o->nv + a])) {
            snprintf(msg, sizeof msg, "coordinate %g times scale %g overflows float", x[a],
                     (double)scale);
            bad_obj(err, path, lineno, msg);
            return -1;
        }
    }
    o->nv++;
    return 0;
}

/* An "f v1 v2 v3 ..." line (s after the 'f'): the polygon, as a fan of
 * triangles; *poly is scratch kept between lines. */
static int parse_face(char *s, obj_data *o, int **poly, int *cap_poly, const char *path, int lineno,
                      firn_error *err)
{
    char msg[160];
    char *e = s;
    int count = 0;
    for (;;) {
        while (*e == ' ' || *e == '\t')
            e++;
        if (*e == '\0' || *e == '\n' || *e == '\r' || *e == '#')
            break;
        char *next;
        long k = strtol(e, &next, 10);
        if (next == e) {
            bad_obj(err, path, lineno, "a face lists vertex numbers (v, v/vt, v//vn or v/vt/vn)");
            return -1;
        }
        /* 1-based; negative counts back from the last vertex read. */
        long idx = k > 0 ? k - 1 : (long)o->nv + k;
        if (k == 0 || idx < 0 || idx >= INT_MAX) {
            snprintf(msg, sizeof msg, "vertex number %ld is out of range", k);
            bad_obj(err, path, lineno, msg);
            return -1;
        }
        if (grow((void **)poly, cap_poly, count + 1, sizeof(int))) {
            nomem(err, path);
            return -1;
        }
        (*poly)[count++] = (int)idx;
        e = next;
        while (*e && *e != ' ' && *e != '\t' && *e != '\n' && *e != '\r')
            e++; /* the /vt/vn part */
    }
    if (count < 3) {
        bad_obj(err, path, lineno, "a face needs at least 3 vertices");
        return -1;
    }
    if (grow((void **)&o->tri, &o->cap_t, 3 * (o->nt + count - 2), sizeof(int))) {
        nomem(err, path);
        return -1;
    }
    int cap_line = o->cap_t / 3;
    void *ln = realloc(o->line, (size_t)(cap_line > 0 ? cap_line : 1) * sizeof(int));
    if (!ln) {
        nomem(err, path);
        return -1;
    }
    o->line = ln;
    for (int k = 1; k + 1 < count; k++) { /* fan */
        o->tri[3 * o->nt + 0] = (*poly)[0];
        o->tri[3 * o->nt + 1] = (*poly)[k];
        o->tri[3 * o->nt + 2] = (*poly)[k + 1];
        o->line[o->nt] = lineno;
        o->nt++;
    }
    return 0;
}

static int parse_obj(const char *path, float scale, obj_data *o, firn_error *err)
{
    FILE *f = open_obj(path, err);
    if (!f)
        return -1;
    char buf[8193], msg[160]; /* a line of 8191 characters and its newline */
    int lineno = 0, *poly = NULL, cap_poly = 0, rc = -1;
    for (long at = ftell(f); fgets(buf, sizeof buf, f); at = ftell(f)) {
        lineno++;
        size_t len = strlen(buf);
        /* A line that took more bytes of the (regular) file than it holds
         * has a NUL byte; one that filled the buffer with no newline before
         * the end of the file is too long. */
        if (ftell(f) - at != (long)len) {
            bad_obj(err, path, lineno, "a NUL byte: not a text OBJ file");
            goto done;
        }
        if (len == sizeof buf - 1 && buf[len - 1] != '\n' && !feof(f)) {
            bad_obj(err, path, lineno, "line longer than 8191 characters");
            goto done;
        }
        char *s = buf;
        while (*s == ' ' || *s == '\t')
            s++;
        if (s[0] == 'v' && (s[1] == ' ' || s[1] == '\t')) {
            if (parse_vertex(s + 1, scale, o, path, lineno, err))
                goto done;
        } else if (s[0] == 'f' && (s[1] == ' ' || s[1] == '\t')) {
            if (parse_face(s + 1, o, &poly, &cap_poly, path, lineno, err))
                goto done;
        }
    }
    if (ferror(f)) {
        firn_set_error(err, FIRN_E_IO, "cannot read mesh '%s': %s", path, strerror(errno));
        goto done;
    }
    for (int t = 0; t < 3 * o->nt; t++)
        if (o->tri[t] >= o->nv) {
            snprintf(msg, sizeof msg, "vertex number %d is out of range: the file has %d vertices",
                     o->tri[t] + 1, o->nv);
            bad_obj(err, path, o->line[t / 3], msg);
            goto done;
        }
    rc = 0;
done:
    free(poly);
    fclose(f);
    return rc;
}

int firn_mesh_read_surface(const char *path, float scale, float **v, int *nv, int **tri, int *nt,
                           firn_error *err)
{
    obj_data o;
    memset(&o, 0, sizeof o);
    *v = NULL, *tri = NULL, *nv = *nt = 0;
    if (parse_obj(path, scale, &o, err)) {
        obj_free(&o);
        return -1;
    }
    free(o.line);
    *v = o.v, *nv = o.nv, *tri = o.tri, *nt = o.nt;
    return 0;
}

/* ---- closed, manifold, oriented ------------------------------------------- */

typedef struct {
    int lo, hi;    /* vertex indices, lo < hi */
    int tri, slot; /* triangle and its edge slot (0: v0v1, 1: v1v2, 2: v2v0) */
    int forward;   /* the triangle runs the edge lo -> hi */
} half_edge;

static int cmp_half_edge(const void *pa, const void *pb)
{
    const half_edge *a = pa, *b = pb;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    return a->tri < b->tri ? -1 : (a->tri > b->tri);
}

/* Every edge must be shared by exactly two triangles that run it in
 * opposite directions. Fills twin[3t + slot] with the triangle across each
 * edge. Reports the bad edge whose first triangle comes first in the file;
 * line[] (may be NULL) gives file lines for the message. */
static int check_manifold(const int *tri, int nt, const int *line, const char *name, int *twin,
                          firn_error *err)
{
    for (int t = 0; t < nt; t++)
        for (int e = 0; e < 3; e++)
            if (tri[3 * t + e] == tri[3 * t + (e + 1) % 3]) {
                char msg[160];
                snprintf(msg, sizeof msg,
                         "not a closed manifold: a face repeats vertex %d (a degenerate face)",
                         tri[3 * t + e] + 1);
                if (line)
                    return bad_obj(err, name, line[t], msg);
                firn_set_error(err, FIRN_E_SCENE, "mesh '%s' triangle %d: %s", name, t, msg);
                return -1;
            }
    half_edge *h = malloc((size_t)3 * nt * sizeof *h);
    if (!h)
        return nomem(err, name);
    for (int t = 0; t < nt; t++)
        for (int e = 0; e < 3; e++) {
            int a = tri[3 * t + e], b = tri[3 * t + (e + 1) % 3];
            half_edge *x = &h[3 * t + e];
            x->lo = a < b ? a : b;
            x->hi = a < b ? b : a;
            x->tri = t;
            x->slot = e;
            x->forward = a < b;
        }
    qsort(h, (size_t)3 * nt, sizeof *h, cmp_half_edge);
    int bad_start = -1, bad_count = 0, bad_tri = INT_MAX;
    for (int s = 0; s < 3 * nt;) {
        int e = s + 1;
        while (e < 3 * nt && h[e].lo == h[s].lo && h[e].hi == h[s].hi)
            e++;
        int ok = e - s == 2 && h[s].forward != h[s + 1].forward;
        if (ok) {
            twin[3 * h[s].tri + h[s].slot] = h[s + 1].tri;
            twin[3 * h[s + 1].tri + h[s + 1].slot] = h[s].tri;
        } else if (h[s].tri < bad_tri) { /* sorted by triangle within a group */
            bad_start = s;
            bad_count = e - s;
            bad_tri = h[s].tri;
        }
        s = e;
    }
    if (bad_start < 0) {
        free(h);
        return 0;
    }
    const half_edge *b = &h[bad_start];
    char where[96] = "", msg[400];
    for (int k = 0; k < bad_count && k < 4; k++) {
        size_t len = strlen(where);
        snprintf(where + len, sizeof where - len, "%s%s %d", k ? "," : "",
                 line ? "line" : "triangle", line ? line[b[k].tri] : b[k].tri);
    }
    if (bad_count == 1)
        snprintf(msg, sizeof msg,
                 "not a closed manifold: the edge between vertices %d and %d belongs to one face "
                 "only (%s): the surface has a hole",
                 b->lo + 1, b->hi + 1, where);
    else if (bad_count > 2)
        snprintf(msg, sizeof msg,
                 "not a closed manifold: the edge between vertices %d and %d is shared by %d faces "
                 "(%s%s)",
                 b->lo + 1, b->hi + 1, bad_count, where, bad_count > 4 ? ", ..." : "");
    else
        snprintf(msg, sizeof msg,
                 "not a closed manifold: the two faces at the edge between vertices %d and %d "
                 "(%s) run it the same way: their orientations disagree",
                 b->lo + 1, b->hi + 1, where);
    firn_set_error(err, FIRN_E_SCENE, "mesh '%s': %s", name, msg);
    free(h);
    return -1;
}

/* ---- volume integrals and principal axes ------------------------------------ */

/* Eigen-decomposition of a symmetric 3x3 matrix by cyclic Jacobi rotations:
 * A = V diag(w) V^T, V's columns the eigenvectors, right-handed. */
static void jacobi3(const double A[3][3], double w[3], double V[3][3])
{
    double a[3][3];
    memcpy(a, A, sizeof a);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            V[i][j] = i == j;
    for (int sweep = 0; sweep < 50; sweep++) {
        double off = fabs(a[0][1]) + fabs(a[0][2]) + fabs(a[1][2]);
        double diag = fabs(a[0][0]) + fabs(a[1][1]) + fabs(a[2][2]);
        if (off <= 1e-15 * diag || off == 0.0)
            break;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                if (a[p][q] == 0.0)
                    continue;
                double theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < 3; k++) { /* a = J^T a J */
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 3; k++) {
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 3; k++) {
                    double vkp = V[k][p], vkq = V[k][q];
                    V[k][p] = c * vkp - s * vkq;
                    V[k][q] = s * vkp + c * vkq;
                }
            }
    }
    for (int i = 0; i < 3; i++)
        w[i] = a[i][i];
    double det = V[0][0] * (V[1][1] * V[2][2] - V[1][2] * V[2][1]) -
                 V[0][1] * (V[1][0] * V[2][2] - V[1][2] * V[2][0]) +
                 V[0][2] * (V[1][0] * V[2][1] - V[1][1] * V[2][0]);
    if (det < 0.0)
        for (int i = 0; i < 3; i++)
            V[i][2] = -V[i][2];
}

/* The unit quaternion of a rotation matrix (Shepperd's method). */
static firn_quat quat_of_matrix(const double R[3][3])
{
    double tr = R[0][0] + R[1][1] + R[2][2], q[4];
    if (tr > 0.0) {
        double s = 2.0 * sqrt(tr + 1.0);
        q[0] = 0.25 * s;
        q[1] = (R[2][1] - R[1][2]) / s;
        q[2] = (R[0][2] - R[2][0]) / s;
        q[3] = (R[1][0] - R[0][1]) / s;
    } else if (R[0][0] > R[1][1] && R[0][0] > R[2][2]) {
        double s = 2.0 * sqrt(1.0 + R[0][0] - R[1][1] - R[2][2]);
        q[0] = (R[2][1] - R[1][2]) / s;
        q[1] = 0.25 * s;
        q[2] = (R[0][1] + R[1][0]) / s;
        q[3] = (R[0][2] + R[2][0]) / s;
    } else if (R[1][1] > R[2][2]) {
        double s = 2.0 * sqrt(1.0 + R[1][1] - R[0][0] - R[2][2]);
        q[0] = (R[0][2] - R[2][0]) / s;
        q[1] = (R[0][1] + R[1][0]) / s;
        q[2] = 0.25 * s;
        q[3] = (R[1][2] + R[2][1]) / s;
    } else {
        double s = 2.0 * sqrt(1.0 + R[2][2] - R[0][0] - R[1][1]);
        q[0] = (R[1][0] - R[0][1]) / s;
        q[1] = (R[0][2] + R[2][0]) / s;
        q[2] = (R[1][2] + R[2][1]) / s;
        q[3] = 0.25 * s;
    }
    firn_quat r = {{(float)q[0], (float)q[1], (float)q[2], (float)q[3]}};
    return firn_quat_normalize(r);
}

/* Volume, centroid and inertia of the solid the triangles bound: each
 * triangle (a, b, c) with the origin spans a tetrahedron of signed volume
 * a . (b x c) / 6 and second moment V/20 (sum p p^T + s s^T), s = a + b + c
 * (the tetrahedron's covariance). A mesh wound inside out comes out with a
 * negative volume and is turned around. */
static int mass_properties(firn_mesh *m, const char *name, firn_error *err)
{
    double vol = 0.0, c[3] = {0, 0, 0}, S[3][3] = {{0}};
    double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
    for (int i = 0; i < m->nv; i++)
        for (int a = 0; a < 3; a++) {
            lo[a] = fmin(lo[a], m->v[3 * i + a]);
            hi[a] = fmax(hi[a], m->v[3 * i + a]);
        }
    for (int t = 0; t < m->nt; t++) {
        double p[3][3], s[3];
        for (int k = 0; k < 3; k++)
            for (int a = 0; a < 3; a++)
                p[k][a] = m->v[3 * m->tri[3 * t + k] + a];
        double V = (p[0][0] * (p[1][1] * p[2][2] - p[1][2] * p[2][1]) -
                    p[0][1] * (p[1][0] * p[2][2] - p[1][2] * p[2][0]) +
                    p[0][2] * (p[1][0] * p[2][1] - p[1][1] * p[2][0])) /
                   6.0;
        vol += V;
        for (int a = 0; a < 3; a++) {
            s[a] = p[0][a] + p[1][a] + p[2][a];
            c[a] += V * s[a] / 4.0;
        }
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                S[i][j] +=
                    V / 20.0 *
                    (p[0][i] * p[0][j] + p[1][i] * p[1][j] + p[2][i] * p[2][j] + s[i] * s[j]);
    }
    double ext = fmax(hi[0] - lo[0], fmax(hi[1] - lo[1], hi[2] - lo[2]));
    if (!(fabs(vol) > 1e-9 * ext * ext * ext) || !isfinite(vol)) {
        firn_set_error(err, FIRN_E_SCENE, "mesh '%s': encloses no volume (%g m^3)", name, vol);
        return -1;
    }
    if (vol < 0.0) {
        vol = -vol;
        for (int a = 0; a < 3; a++)
            c[a] = -c[a];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                S[i][j] = -S[i][j];
        for (int t = 0; t < m->nt; t++) {
            int x = m->tri[3 * t + 1];
            m->tri[3 * t + 1] = m->tri[3 * t + 2];
            m->tri[3 * t + 2] = x;
        }
    }
    for (int a = 0; a < 3; a++)
        m->centroid[a] = c[a] / vol;
    m->volume = vol;
    /* About the centroid: S_c = S - V c c^T; I = tr(S_c) 1 - S_c. */
    double I[3][3], tr = 0.0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            S[i][j] -= vol * m->centroid[i] * m->centroid[j];
    for (int i = 0; i < 3; i++)
        tr += S[i][i];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            I[i][j] = (i == j ? tr : 0.0) - S[i][j];
    m->inertia[0] = I[0][0], m->inertia[1] = I[1][1], m->inertia[2] = I[2][2];
    m->inertia[3] = I[0][1], m->inertia[4] = I[0][2], m->inertia[5] = I[1][2];
    double w[3], V[3][3];
    jacobi3(I, w, V);
    for (int a = 0; a < 3; a++)
        m->moments[a] = (float)w[a];
    m->principal = quat_of_matrix(V);
    /* Body frame: centroid at the origin. */
    for (int i = 0; i < m->nv; i++)
        for (int a = 0; a < 3; a++)
            m->v[3 * i + a] = (float)(m->v[3 * i + a] - m->centroid[a]);
    for (int a = 0; a < 3; a++)
        m->half[a] = (float)fmax(hi[a] - m->centroid[a], m->centroid[a] - lo[a]);
    return 0;
}

/* ---- building ---------------------------------------------------------------- */

void firn_mesh_free(firn_mesh *m)
{
    if (!m)
        return;
    free(m->v);
    free(m->tri);
    free(m->grid);
    free(m);
}

/* Takes over v and tri (freed on failure too). */
static int mesh_from(float *v, int nv, int *tri, int nt, const int *line, const char *name,
                     firn_mesh **out, firn_error *err)
{
    *out = NULL;
    firn_mesh *m = calloc(1, sizeof *m);
    int *twin = malloc((size_t)3 * (nt > 0 ? nt : 1) * sizeof(int));
    if (!m || !twin) {
        free(v), free(tri), free(m), free(twin);
        return nomem(err, name);
    }
    m->v = v, m->nv = nv, m->tri = tri, m->nt = nt;
    if (nt == 0) {
        firn_set_error(err, FIRN_E_SCENE,
                       "mesh '%s': no faces (%d vertices): a mesh must be "
                       "a closed surface",
                       name, nv);
        goto fail;
    }
    if (check_manifold(tri, nt, line, name, twin, err) || mass_properties(m, name, err))
        goto fail;
    free(twin);
    *out = m;
    return 0;
fail:
    free(twin);
    firn_mesh_free(m);
    return -1;
}

int firn_mesh_build(const float *v, int nv, const int *tri, int nt, const char *name,
                    firn_mesh **out, firn_error *err)
{
    float *vc = malloc((size_t)3 * (nv > 0 ? nv : 1) * sizeof(float));
    int *tc = malloc((size_t)3 * (nt > 0 ? nt : 1) * sizeof(int));
    if (!vc || !tc) {
        free(vc), free(tc);
        return nomem(err, name);
    }
    /* An empty surface may come with NULL arrays (firn_mesh_read_surface of
     * a file with no v or f line): memcpy must not see them. */
    if (nv > 0)
        memcpy(vc, v, (size_t)3 * nv * sizeof(float));
    if (nt > 0)
        memcpy(tc, tri, (size_t)3 * nt * sizeof(int));
    for (int k = 0; k < 3 * nt; k++)
        if (tc[k] < 0 || tc[k] >= nv) {
            free(vc), free(tc);
            firn_set_error(err, FIRN_E_SCENE, "mesh '%s': triangle %d refers to vertex %d of %d",
                           name, k / 3, tri[k], nv);
            return -1;
        }
    return mesh_from(vc, nv, tc, nt, NULL, name, out, err);
}

/* ---- SDF grid ------------------------------------------------------------------- */

typedef struct {
    float lo[3], hi[3];
    int left, right;  /* children; -1 in a leaf */
    int first, count; /* leaf: triangles order[first .. first + count) */
} bvh_node;

struct firn_mesh_bvh {
    const firn_mesh *m;
    double *fn; /* 3 per triangle: unit face normal */
    double *en; /* 9 per triangle: edge pseudo-normals (slots v0v1, v1v2, v2v0) */
    double *vn; /* 3 per vertex: angle-weighted pseudo-normal */
    int *order;
    bvh_node *node;
    int nodes, root;
};

typedef struct {
    float key;
    int tri;
} sort_key;

static int cmp_key(const void *a, const void *b)
{
    float x = ((const sort_key *)a)->key, y = ((const sort_key *)b)->key;
    return x < y ? -1 : (x > y);
}

static int bvh_build(firn_mesh_bvh *b, sort_key *keys, int first, int count)
{
    const firn_mesh *m = b->m;
    int id = b->nodes++;
    bvh_node *nd = &b->node[id];
    float clo[3] = {FLT_MAX, FLT_MAX, FLT_MAX}, chi[3] = {-FLT_MAX, -FLT_MAX, -FLT_MAX};
    for (int a = 0; a < 3; a++)
        nd->lo[a] = FLT_MAX, nd->hi[a] = -FLT_MAX;
    for (int k = first; k < first + count; k++) {
        int t = b->order[k];
        for (int a = 0; a < 3; a++) {
            float cen = 0.0f;
            for (int j = 0; j < 3; j++) {
                float x = m->v[3 * m->tri[3 * t + j] + a];
                nd->lo[a] = fminf(nd->lo[a], x);
                nd->hi[a] = fmaxf(nd->hi[a], x);
                cen += x / 3.0f;
            }
            clo[a] = fminf(clo[a], cen);
            chi[a] = fmaxf(chi[a], cen);
        }
    }
    nd->left = nd->right = -1;
    nd->first = first;
    nd->count = count;
    if (count <= 4)
        return id;
    int axis = 0;
    for (int a = 1; a < 3; a++)
        if (chi[a] - clo[a] > chi[axis] - clo[axis])
            axis = a;
    for (int k = 0; k < count; k++) {
        int t = b->order[first + k];
        float cen = 0.0f;
        for (int j = 0; j < 3; j++)
            cen += m->v[3 * m->tri[3 * t + j] + axis] / 3.0f;
        keys[k].key = cen;
        keys[k].tri = t;
    }
    qsort(keys, (size_t)count, sizeof *keys, cmp_key);
    for (int k = 0; k < count; k++)
        b->order[first + k] = keys[k].tri;
    int half = count / 2;
    int l = bvh_build(b, keys, first, half);
    int r = bvh_build(b, keys, first + half, count - half);
    nd = &b->node[id]; /* b->node does not move: allocated for 2 nt nodes */
    nd->left = l;
    nd->right = r;
    nd->count = 0;
    return id;
}

static double box_dist2(const bvh_node *n, const double p[3])
{
    double d2 = 0.0;
    for (int a = 0; a < 3; a++) {
        double d = p[a] < n->lo[a] ? n->lo[a] - p[a] : (p[a] > n->hi[a] ? p[a] - n->hi[a] : 0.0);
        d2 += d * d;
    }
    return d2;
}

static double dot3(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Closest point to p on triangle (a, b, c) (Ericson, Real-Time Collision
 * Detection, 5.1.5), and its feature: 0 face, 1-3 vertex a, b, c, 4 edge
 * ab, 5 edge bc, 6 edge ca. Returns the squared distance. */
static double closest_on_triangle(const double p[3], const double a[3], const double b[3],
                                  const double c[3], double q[3], int *feature)
{
    double ab[3], ac[3], ap[3], bp[3], cp[3];
    for (int k = 0; k < 3; k++) {
        ab[k] = b[k] - a[k];
        ac[k] = c[k] - a[k];
        ap[k] = p[k] - a[k];
        bp[k] = p[k] - b[k];
        cp[k] = p[k] - c[k];
    }
    double d1 = dot3(ab, ap), d2 = dot3(ac, ap), d3 = dot3(ab, bp), d4 = dot3(ac, bp);
    double d5 = dot3(ab, cp), d6 = dot3(ac, cp);
    double u = 0.0, v = 0.0; /* q = a + u ab + v ac */
    if (d1 <= 0.0 && d2 <= 0.0) {
        *feature = 1;
    } else if (d3 >= 0.0 && d4 <= d3) {
        *feature = 2, u = 1.0;
    } else if (d6 >= 0.0 && d5 <= d6) {
        *feature = 3, v = 1.0;
    } else {
        double vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
        if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0) {
            *feature = 4, u = d1 / (d1 - d3);
        } else if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0) {
            *feature = 6, v = d2 / (d2 - d6);
        } else if (va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0) {
            double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
            *feature = 5, u = 1.0 - w, v = w;
        } else {
            double den = 1.0 / (va + vb + vc);
            *feature = 0, u = vb * den, v = vc * den;
        }
    }
    double d2sum = 0.0;
    for (int k = 0; k < 3; k++) {
        q[k] = a[k] + u * ab[k] + v * ac[k];
        double d = p[k] - q[k];
        d2sum += d * d;
    }
    return d2sum;
}

static void tri_vertex(const firn_mesh *m, int t, int j, double out[3])
{
    for (int a = 0; a < 3; a++)
        out[a] = m->v[3 * m->tri[3 * t + j] + a];
}

/* Signed distance at p, and the gradient. */
static double signed_distance(const firn_mesh_bvh *b, const double p[3], double g[3])
{
    const firn_mesh *m = b->m;
    double best = DBL_MAX, q[3] = {0, 0, 0};
    int best_t = 0, best_f = 0, stack[128], sp = 0;
    stack[sp++] = b->root;
    while (sp > 0) {
        const bvh_node *n = &b->node[stack[--sp]];
        if (box_dist2(n, p) >= best)
            continue;
        if (n->left < 0) {
            for (int k = n->first; k < n->first + n->count; k++) {
                int t = b->order[k], f;
                double va[3], vb[3], vc[3], c[3];
                tri_vertex(m, t, 0, va);
                tri_vertex(m, t, 1, vb);
                tri_vertex(m, t, 2, vc);
                double d2 = closest_on_triangle(p, va, vb, vc, c, &f);
                if (d2 < best) {
                    best = d2, best_t = t, best_f = f;
                    memcpy(q, c, sizeof q);
                }
            }
            continue;
        }
        double dl = box_dist2(&b->node[n->left], p), dr = box_dist2(&b->node[n->right], p);
        int near = dl <= dr ? n->left : n->right, far = dl <= dr ? n->right : n->left;
        if (sp + 2 <= (int)(sizeof stack / sizeof stack[0])) {
            stack[sp++] = far;
            stack[sp++] = near;
        }
    }
    const double *pn;
    if (best_f == 0)
        pn = &b->fn[3 * best_t];
    else if (best_f <= 3)
        pn = &b->vn[3 * m->tri[3 * best_t + best_f - 1]];
    else
        pn = &b->en[9 * best_t + 3 * (best_f - 4)];
    double r[3] = {p[0] - q[0], p[1] - q[1], p[2] - q[2]};
    double dist = sqrt(best), sign = dot3(r, pn) < 0.0 ? -1.0 : 1.0;
    if (dist > 1e-12) {
        for (int a = 0; a < 3; a++)
            g[a] = sign * r[a] / dist;
    } else {
        double len = sqrt(dot3(pn, pn));
        for (int a = 0; a < 3; a++)
            g[a] = len > 0.0 ? pn[a] / len : (a == 1);
    }
    return sign * dist;
}

static int nomem_bvh(firn_error *err, int nt)
{
    firn_set_error(err, FIRN_E_NOMEM,
                   "out of host memory for a mesh's triangle hierarchy (%d triangles)", nt);
    return -1;
}

void firn_mesh_bvh_free(firn_mesh_bvh *b)
{
    if (!b)
        return;
    free(b->fn), free(b->en), free(b->vn), free(b->order), free(b->node), free(b);
}

int firn_mesh_bvh_create(const firn_mesh *m, firn_mesh_bvh **out, firn_error *err)
{
    const int nt = m->nt, nv = m->nv;
    *out = NULL;
    firn_mesh_bvh *b = calloc(1, sizeof *b);
    sort_key *keys = malloc((size_t)nt * sizeof *keys);
    int *twin = malloc((size_t)3 * nt * sizeof(int));
    if (!b || !keys || !twin) {
        free(b), free(keys), free(twin);
        return nomem_bvh(err, nt);
    }
    b->m = m;
    b->fn = calloc((size_t)3 * nt, sizeof(double));
    b->en = calloc((size_t)9 * nt, sizeof(double));
    b->vn = calloc((size_t)3 * nv, sizeof(double));
    b->order = malloc((size_t)nt * sizeof(int));
    b->node = malloc((size_t)2 * nt * sizeof(bvh_node));
    if (!b->fn || !b->en || !b->vn || !b->order || !b->node) {
        free(keys), free(twin);
        firn_mesh_bvh_free(b);
        return nomem_bvh(err, nt);
    }
    {
        firn_error ignore;
        check_manifold(m->tri, nt, NULL, "", twin, &ignore); /* checked when loaded */
    }
    /* Face normals; vertex pseudo-normals weighted by the face's angle
     * there; edge pseudo-normals: the two faces' normals added. */
    for (int t = 0; t < nt; t++) {
        double p[3][3], e1[3], e2[3], n[3];
        for (int j = 0; j < 3; j++)
            tri_vertex(m, t, j, p[j]);
        for (int a = 0; a < 3; a++)
            e1[a] = p[1][a] - p[0][a], e2[a] = p[2][a] - p[0][a];
        n[0] = e1[1] * e2[2] - e1[2] * e2[1];
        n[1] = e1[2] * e2[0] - e1[0] * e2[2];
        n[2] = e1[0] * e2[1] - e1[1] * e2[0];
        double len = sqrt(dot3(n, n));
        for (int a = 0; a < 3; a++)
            b->fn[3 * t + a] = len > 0.0 ? n[a] / len : 0.0;
        for (int j = 0; j < 3; j++) {
            double u[3], w[3];
            for (int a = 0; a < 3; a++) {
                u[a] = p[(j + 1) % 3][a] - p[j][a];
                w[a] = p[(j + 2) % 3][a] - p[j][a];
            }
            double lu = sqrt(dot3(u, u)), lw = sqrt(dot3(w, w));
            double cosang = lu > 0.0 && lw > 0.0 ? dot3(u, w) / (lu * lw) : 1.0;
            double ang = acos(fmax(-1.0, fmin(1.0, cosang)));
            for (int a = 0; a < 3; a++)
                b->vn[3 * m->tri[3 * t + j] + a] += ang * b->fn[3 * t + a];
        }
    }
    for (int t = 0; t < nt; t++)
        for (int e = 0; e < 3; e++)
            for (int a = 0; a < 3; a++)
                b->en[9 * t + 3 * e + a] = b->fn[3 * t + a] + b->fn[3 * twin[3 * t + e] + a];
    for (int t = 0; t < nt; t++)
        b->order[t] = t;
    b->root = bvh_build(b, keys, 0, nt);
    free(keys), free(twin);
    *out = b;
    return 0;
}

double firn_mesh_bvh_distance(const firn_mesh_bvh *b, const double p[3], double g[3])
{
    double scratch[3];
    return signed_distance(b, p, g ? g : scratch);
}

int firn_mesh_build_sdf(firn_mesh *m, firn_error *err)
{
    if (m->grid)
        return 0;
    const int nv = m->nv;
    firn_mesh_bvh *b;
    if (firn_mesh_bvh_create(m, &b, err))
        return -1;

    /* The grid's box: the mesh's, padded; 5 mm cells, 32 to 128 per axis. */
    float ext = 2.0f * fmaxf(m->half[0], fmaxf(m->half[1], m->half[2]));
    float lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
        lo[a] = FLT_MAX, hi[a] = -FLT_MAX;
        for (int i = 0; i < nv; i++) {
            lo[a] = fminf(lo[a], m->v[3 * i + a]);
            hi[a] = fmaxf(hi[a], m->v[3 * i + a]);
        }
        lo[a] -= (float)SDF_PAD * ext;
        hi[a] += (float)SDF_PAD * ext;
        int cells = (int)ceil((hi[a] - lo[a]) / SDF_CELL - 1e-3);
        cells =
            cells < SDF_MIN_CELLS ? SDF_MIN_CELLS : (cells > SDF_MAX_CELLS ? SDF_MAX_CELLS : cells);
        m->n[a] = cells + 1;
        m->lo[a] = lo[a];
        m->h[a] = (hi[a] - lo[a]) / (float)cells;
    }
    const long long points = (long long)m->n[0] * m->n[1] * m->n[2];
    float *grid = malloc((size_t)points * 4 * sizeof(float));
    if (!grid) {
        firn_mesh_bvh_free(b);
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for a mesh SDF grid (%d triangles)",
                       m->nt);
        return -1;
    }
#pragma omp parallel for schedule(dynamic, 64)
    for (long long k = 0; k < points; k++) {
        int i = (int)(k / ((long long)m->n[1] * m->n[2])), j = (int)((k / m->n[2]) % m->n[1]);
        int l = (int)(k % m->n[2]);
        double p[3] = {m->lo[0] + (double)i * m->h[0], m->lo[1] + (double)j * m->h[1],
                       m->lo[2] + (double)l * m->h[2]},
               g[3];
        double d = signed_distance(b, p, g);
        grid[4 * k + 0] = (float)d;
        for (int a = 0; a < 3; a++)
            grid[4 * k + 1 + a] = (float)g[a];
    }
    firn_mesh_bvh_free(b);
    m->grid = grid;
    return 0;
}

void firn_mesh_sdf_shape(const firn_mesh *m, firn_sdf_shape *s)
{
    memset(s, 0, sizeof *s);
    s->type = FIRN_SDF_MESH;
    s->axis = 1;
    for (int a = 0; a < 3; a++) {
        s->half[a] = m->half[a];
        s->n[a] = m->n[a];
        s->lo[a] = m->lo[a];
        s->h[a] = m->h[a];
        s->inv_h[a] = m->h[a] > 0.0f ? 1.0f / m->h[a] : 0.0f;
    }
    s->grid = m->grid;
}

/* ---- the cache -------------------------------------------------------------------- */

typedef struct cache_entry {
    char path[FIRN_PATH_MAX];
    float scale;
    long long size, mtime_ns;
    firn_mesh *mesh;
    struct cache_entry *next;
} cache_entry;

static cache_entry *cache;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

int firn_mesh_get(const char *path, float scale, int with_sdf, const firn_mesh **out,
                  firn_error *err)
{
    struct stat st;
    *out = NULL;
    if (!path || !*path) {
        firn_set_error(err, FIRN_E_SCENE, "a mesh needs a file");
        return -1;
    }
    if (strlen(path) >= FIRN_PATH_MAX) {
        firn_set_error(err, FIRN_E_IO, "mesh path longer than %d characters", FIRN_PATH_MAX - 1);
        return -1;
    }
    if (stat(path, &st) != 0) {
        firn_set_error(err, FIRN_E_IO, "cannot read mesh '%s': %s", path, strerror(errno));
        return -1;
    }
    const long long size = (long long)st.st_size,
                    mtime = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    int rc = 0;
    pthread_mutex_lock(&cache_lock);
    cache_entry *e = cache;
    while (e && !(e->scale == scale && e->size == size && e->mtime_ns == mtime &&
                  !strcmp(e->path, path)))
        e = e->next;
    if (!e) {
        obj_data o;
        memset(&o, 0, sizeof o);
        firn_mesh *m = NULL;
        e = calloc(1, sizeof *e);
        if (!e) {
            rc = nomem(err, path);
        } else if (parse_obj(path, scale, &o, err)) {
            obj_free(&o);
            rc = -1;
        } else {
            /* mesh_from takes over o.v and o.tri, success or not. */
            rc = mesh_from(o.v, o.nv, o.tri, o.nt, o.line, path, &m, err);
            free(o.line);
        }
        if (rc == 0) {
            snprintf(e->path, sizeof e->path, "%s", path);
            e->scale = scale;
            e->size = size;
            e->mtime_ns = mtime;
            e->mesh = m;
            e->next = cache;
            cache = e;
        } else {
            free(e);
            e = NULL;
        }
    }
    if (rc == 0 && with_sdf)
        rc = firn_mesh_build_sdf(e->mesh, err);
    if (rc == 0)
        *out = e->mesh;
    pthread_mutex_unlock(&cache_lock);
    return rc;
}
