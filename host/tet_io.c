/* tet_io.c - tetrahedral meshes from files and generated balls: TetGen's
 * .node/.ele pairs and Gmsh's ASCII .msh (versions 2.2 and 4.1) are read
 * into a firn_tet_mesh and finished (host/tet_mesh.c checks them); a ball
 * is a cube lattice mapped onto the sphere.
 *
 * A file is read whole and parsed line by line; every count a header
 * declares is checked against the bytes that follow before anything is
 * allocated for it, so truncated, garbage or hostile files end in an error
 * naming the file and line, never in a huge allocation or a read past the
 * end. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "tet_mesh.h"

/* The most vertices or tets a mesh may have: 4 indices per tet in an int. */
#define MAX_ITEMS (INT32_MAX / 4)

/* ---- a text file, line by line ---------------------------------------------- */

typedef struct {
    const char *path;
    char *buf;         /* the whole file, NUL-terminated */
    size_t len, pos;   /* the next line starts at pos */
    int line;          /* the current line, from 1 */
    char *cur;         /* the unread rest of the current line */
    int hash_comments; /* TetGen: '#' starts a comment */
} text;

static int text_open(text *t, const char *path, int hash_comments, firn_error *err)
{
    memset(t, 0, sizeof *t);
    t->path = path, t->hash_comments = hash_comments;
    /* Only a regular file, opened without blocking: a FIFO or a device
     * would block or never end. */
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        firn_set_error(err, FIRN_E_IO, "cannot read tet mesh '%s': %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        firn_set_error(err, FIRN_E_IO, "cannot read tet mesh '%s': not a regular file", path);
        return -1;
    }
    if (st.st_size >= INT32_MAX) {
        close(fd);
        firn_set_error(err, FIRN_E_SCENE, "%s: %lld bytes is too large for a tet mesh file", path,
                       (long long)st.st_size);
        return -1;
    }
    t->buf = malloc((size_t)st.st_size + 1);
    if (!t->buf) {
        close(fd);
        firn_set_error(err, FIRN_E_NOMEM, "%s: out of memory for %lld bytes", path,
                       (long long)st.st_size);
        return -1;
    }
    while (t->len < (size_t)st.st_size) {
        ssize_t n = read(fd, t->buf + t->len, (size_t)st.st_size - t->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            firn_set_error(err, FIRN_E_IO, "cannot read tet mesh '%s': %s", path, strerror(errno));
            close(fd);
            free(t->buf), t->buf = NULL;
            return -1;
        }
        if (n == 0) /* shrank while read: take what is there */
            break;
        t->len += (size_t)n;
    }
    close(fd);
    t->buf[t->len] = '\0';
    return 0;
}

static void text_close(text *t)
{
    free(t->buf);
    t->buf = NULL;
}

/* A FIRN_E_SCENE error at the current line: "path:line: ...". */
static int bad(text *t, firn_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int bad(text *t, firn_error *err, const char *fmt, ...)
{
    char msg[FIRN_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    firn_set_error(err, FIRN_E_SCENE, "%s:%d: %s", t->path, t->line, msg);
    return -1;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* The next line that holds something (comments cut, leading space
 * skipped) into t->cur: 1, or 0 at the end of the file, or -1 for a NUL
 * byte (binary data). */
static int next_line(text *t, firn_error *err)
{
    while (t->pos < t->len) {
        char *s = t->buf + t->pos, *nl = memchr(s, '\n', t->len - t->pos);
        size_t n = nl ? (size_t)(nl - s) : t->len - t->pos;
        t->line++;
        t->pos += n + (nl != NULL);
        if (memchr(s, '\0', n))
            return bad(t, err, "a NUL byte: binary data, not a text file");
        s[n] = '\0';
        if (t->hash_comments) {
            char *h = strchr(s, '#');
            if (h)
                *h = '\0';
        }
        while (is_space(*s))
            s++;
        if (*s) {
            t->cur = s;
            return 1;
        }
    }
    t->cur = t->buf + t->len; /* the empty string */
    return 0;
}

/* Bytes left after the current line. */
static size_t left(const text *t) { return t->len - t->pos; }

/* The next token of the current line, cut out for a message. */
static const char *peek(text *t, char *out, size_t size)
{
    const char *s = t->cur;
    while (is_space(*s))
        s++;
    if (!*s)
        return "the end of the line";
    size_t n = 0;
    while (s[n] && !is_space(s[n]) && n + 1 < size)
        n++;
    snprintf(out, size, "'%.*s'", (int)n, s);
    return out;
}

static int at_end(text *t)
{
    while (is_space(*t->cur))
        t->cur++;
    return *t->cur == '\0';
}

/* An integer token in [lo, hi]; what names it in the message. */
static int get_int(text *t, long long lo, long long hi, const char *what, long long *v,
                   firn_error *err)
{
    char tok[40];
    if (at_end(t))
        return bad(t, err, "expected %s, found the end of the line", what);
    char *e;
    errno = 0;
    long long k = strtoll(t->cur, &e, 10);
    if (e == t->cur || (*e && !is_space(*e)) || errno)
        return bad(t, err, "expected %s (an integer), found %s", what, peek(t, tok, sizeof tok));
    if (k < lo || k > hi) {
        if (hi == LLONG_MAX)
            return bad(t, err, "expected %s of at least %lld, found %lld", what, lo, k);
        return bad(t, err, "expected %s from %lld to %lld, found %lld", what, lo, hi, k);
    }
    t->cur = e;
    *v = k;
    return 0;
}

/* A finite number token. */
static int get_real(text *t, const char *what, double *v, firn_error *err)
{
    char tok[40];
    if (at_end(t))
        return bad(t, err, "expected %s, found the end of the line", what);
    char *e;
    double x = strtod(t->cur, &e);
    if (e == t->cur || (*e && !is_space(*e)) || !isfinite(x))
        return bad(t, err, "expected %s (a finite number), found %s", what,
                   peek(t, tok, sizeof tok));
    t->cur = e;
    *v = x;
    return 0;
}

static int end_of_line(text *t, const char *after, firn_error *err)
{
    char tok[40];
    if (!at_end(t))
        return bad(t, err, "expected the end of the line after %s, found %s", after,
                   peek(t, tok, sizeof tok));
    return 0;
}

/* The next line, which must exist: what names the record expected. */
static int need_line(text *t, const char *what, firn_error *err)
{
    int r = next_line(t, err);
    if (r < 0)
        return -1;
    if (r == 0)
        return bad(t, err, "expected %s, found the end of the file", what);
    return 0;
}

/* A declared count of records of at least min_bytes each (their newline
 * included), checked against what is left of the file before anything is
 * allocated for them. */
static int check_count(text *t, long long n, size_t min_bytes, const char *what, firn_error *err)
{
    if (n > MAX_ITEMS)
        return bad(t, err, "%lld %s is more than firn takes (%d)", n, what, MAX_ITEMS);
    if ((size_t)n > (left(t) + 1) / min_bytes)
        return bad(t, err, "the header declares %lld %s, but only %zu bytes follow", n, what,
                   left(t));
    return 0;
}

/* ---- what a file holds ------------------------------------------------------- */

/* Nodes and tets as read: node ids and tet node ids still as in the file. */
typedef struct {
    int nv, cap_v, ne, cap_e;
    double *x;                 /* 3 nv, scaled */
    long long *id;             /* nv node ids */
    int *vline;                /* nv file lines */
    long long *tnode;          /* 4 ne node ids */
    long long *eid;            /* ne element ids */
    int *eline;                /* ne file lines */
    const char *epath, *vpath; /* the files tets and nodes come from */
} raw_mesh;

static void raw_free(raw_mesh *r)
{
    free(r->x), free(r->id), free(r->vline), free(r->tnode), free(r->eid), free(r->eline);
    memset(r, 0, sizeof *r);
}

/* *p resized to need records of per elements of elem bytes. */
static int grow(void **p, size_t elem, int need, int per)
{
    void *q = realloc(*p, (size_t)(need > 0 ? need : 1) * elem * (size_t)per);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

/* Room for n nodes (n is checked against the file first). */
static int reserve_nodes(raw_mesh *r, long long n, firn_error *err)
{
    if (r->nv + n <= r->cap_v)
        return 0;
    int need = (int)(r->nv + n);
    if (grow((void **)&r->x, sizeof *r->x, need, 3) ||
        grow((void **)&r->id, sizeof *r->id, need, 1) ||
        grow((void **)&r->vline, sizeof *r->vline, need, 1)) {
        firn_set_error(err, FIRN_E_NOMEM, "%s: out of memory for %d nodes", r->vpath, need);
        return -1;
    }
    r->cap_v = need;
    return 0;
}

/* Room for one more tet, doubling. */
static int reserve_tet(raw_mesh *r, firn_error *err)
{
    if (r->ne < r->cap_e)
        return 0;
    if (r->ne >= MAX_ITEMS) {
        firn_set_error(err, FIRN_E_SCENE, "%s: more than %d tetrahedra", r->epath, MAX_ITEMS);
        return -1;
    }
    int need = r->cap_e ? (r->cap_e > MAX_ITEMS / 2 ? MAX_ITEMS : 2 * r->cap_e) : 256;
    if (grow((void **)&r->tnode, sizeof *r->tnode, need, 4) ||
        grow((void **)&r->eid, sizeof *r->eid, need, 1) ||
        grow((void **)&r->eline, sizeof *r->eline, need, 1)) {
        firn_set_error(err, FIRN_E_NOMEM, "%s: out of memory for %d tetrahedra", r->epath, need);
        return -1;
    }
    r->cap_e = need;
    return 0;
}

/* "id x y z" of one node (the rest of the line left to the caller). */
static int read_node(text *t, raw_mesh *r, long long lo_id, double scale, firn_error *err)
{
    long long id;
    double x[3];
    static const char *axis[3] = {"x", "y", "z"};
    if (lo_id != LLONG_MIN) {
        if (get_int(t, lo_id, LLONG_MAX, "a node tag", &id, err))
            return -1;
    } else if (get_int(t, LLONG_MIN, LLONG_MAX, "a node number", &id, err))
        return -1;
    for (int a = 0; a < 3; a++) {
        char what[160];
        snprintf(what, sizeof what, "node %lld's %s", id, axis[a]);
        if (get_real(t, what, &x[a], err))
            return -1;
        x[a] *= scale;
        if (!isfinite(x[a]))
            return bad(t, err, "node %lld's %s times the scale %g is not finite", id, axis[a],
                       scale);
    }
    memcpy(r->x + 3 * r->nv, x, sizeof x);
    r->id[r->nv] = id, r->vline[r->nv] = t->line;
    r->nv++;
    return 0;
}

/* "id n0 n1 n2 n3" of one tet, the node ids still unmapped. */
static int read_tet(text *t, raw_mesh *r, long long id, firn_error *err)
{
    if (reserve_tet(r, err))
        return -1;
    long long *n = r->tnode + 4 * r->ne;
    for (int i = 0; i < 4; i++) {
        char what[160];
        snprintf(what, sizeof what, "node %d of element %lld", i + 1, id);
        if (get_int(t, LLONG_MIN, LLONG_MAX, what, &n[i], err))
            return -1;
    }
    r->eid[r->ne] = id, r->eline[r->ne] = t->line;
    r->ne++;
    return 0;
}

/* ---- node ids to indices ------------------------------------------------------ */

typedef struct {
    long long id;
    int index;
} id_entry;

static int id_cmp(const void *pa, const void *pb)
{
    const id_entry *a = pa, *b = pb;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return a->index - b->index;
}

/* The mesh's tets as node indices; an element naming a node the file does
 * not have, or two nodes with one id, is an error naming them. */
static int map_nodes(raw_mesh *r, int *tet, firn_error *err)
{
    id_entry *map = malloc((size_t)(r->nv ? r->nv : 1) * sizeof *map);
    if (!map) {
        firn_set_error(err, FIRN_E_NOMEM, "%s: out of memory for %d node ids", r->vpath, r->nv);
        return -1;
    }
    for (int v = 0; v < r->nv; v++)
        map[v].id = r->id[v], map[v].index = v;
    qsort(map, (size_t)r->nv, sizeof *map, id_cmp);
    for (int v = 1; v < r->nv; v++)
        if (map[v].id == map[v - 1].id) {
            firn_set_error(err, FIRN_E_SCENE, "%s:%d: node %lld again (first at line %d)", r->vpath,
                           r->vline[map[v].index], map[v].id, r->vline[map[v - 1].index]);
            free(map);
            return -1;
        }
    for (int e = 0; e < r->ne; e++)
        for (int i = 0; i < 4; i++) {
            long long id = r->tnode[4 * e + i];
            int lo = 0, hi = r->nv;
            while (lo < hi) {
                int mid = lo + (hi - lo) / 2;
                if (map[mid].id < id)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == r->nv || map[lo].id != id) {
                firn_set_error(err, FIRN_E_SCENE,
                               "%s:%d: element %lld refers to node %lld, which %s does not have "
                               "(its nodes are numbered %lld to %lld)",
                               r->epath, r->eline[e], r->eid[e], id, r->vpath,
                               r->nv ? map[0].id : 0, r->nv ? map[r->nv - 1].id : 0);
                free(map);
                return -1;
            }
            tet[4 * e + i] = map[lo].index;
        }
    free(map);
    return 0;
}

/* The checked mesh of what was read. firn_tet_mesh_finish names elements
 * by their place in the file from 0; the file's own number and line are
 * added to its message. */
static int finish(raw_mesh *r, const char *path, firn_tet_mesh *m, firn_error *err)
{
    if (r->ne == 0) {
        firn_set_error(err, FIRN_E_SCENE, "%s: no tetrahedra", r->epath);
        return -1;
    }
    m->nv = r->nv, m->ne = r->ne;
    m->x = r->x, r->x = NULL;
    m->tet = malloc((size_t)4 * r->ne * sizeof *m->tet);
    if (!m->tet) {
        firn_set_error(err, FIRN_E_NOMEM, "%s: out of memory for %d tetrahedra", path, r->ne);
        return -1;
    }
    if (map_nodes(r, m->tet, err))
        return -1;
    if (firn_tet_mesh_finish(m, path, err) == 0)
        return 0;
    const char *at = err && strlen(err->msg) >= strlen(path)
                         ? strstr(err->msg + strlen(path), "element ")
                         : NULL;
    int e;
    if (at && sscanf(at, "element %d", &e) == 1 && e >= 0 && e < r->ne) {
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, " (element %d is number %lld at %s:%d)", e,
                 r->eid[e], r->epath, r->eline[e]);
    }
    return -1;
}

/* ---- TetGen .node and .ele ---------------------------------------------------- */

/* An optional header field: def when the line ends first. */
static int header_field(text *t, long long lo, long long hi, long long def, const char *what,
                        long long *v, firn_error *err)
{
    if (at_end(t)) {
        *v = def;
        return 0;
    }
    return get_int(t, lo, hi, what, v, err);
}

/* Up to n more numbers (attributes, a boundary marker), then the end of
 * the line; TetGen takes missing trailing ones as 0. */
static int skip_numbers(text *t, long long n, const char *after, firn_error *err)
{
    for (long long i = 0; i < n && !at_end(t); i++) {
        double skip;
        if (get_real(t, "an attribute or a boundary marker", &skip, err))
            return -1;
    }
    return end_of_line(t, after, err);
}

/* The end of a file whose records are all read: only comments and blank
 * lines may follow. */
static int no_more(text *t, long long n, const char *what, firn_error *err)
{
    char tok[40];
    int r = next_line(t, err);
    if (r < 0)
        return -1;
    if (r > 0)
        return bad(t, err,
                   "expected the end of the file after the %lld %s the header declares, "
                   "found %s",
                   n, what, peek(t, tok, sizeof tok));
    return 0;
}

static int read_tetgen_node(const char *path, double scale, raw_mesh *r, firn_error *err)
{
    text t;
    if (text_open(&t, path, 1, err))
        return -1;
    long long n, dim, nattr, marker;
    int rc = -1;
    if (need_line(&t, "the header: <nodes> <dimension 3> <attributes> <boundary markers 0|1>",
                  err) ||
        get_int(&t, 0, LLONG_MAX, "the number of nodes", &n, err) ||
        header_field(&t, LLONG_MIN, LLONG_MAX, 3, "the dimension", &dim, err) ||
        header_field(&t, 0, 1000000, 0, "the number of attributes per node", &nattr, err) ||
        header_field(&t, 0, 1, 0, "the boundary marker flag (0 or 1)", &marker, err) ||
        end_of_line(&t, "the header", err))
        goto done;
    if (dim != 3) {
        bad(&t, err, "the dimension is %lld: a tetrahedral mesh's nodes have 3", dim);
        goto done;
    }
    if (n == 0) {
        bad(&t, err, "0 nodes (a .node of a .poly or .smesh input?): a mesh lists its nodes");
        goto done;
    }
    /* A node line is at least "i x y z": 8 bytes. */
    if (check_count(&t, n, 8, "nodes", err) || reserve_nodes(r, n, err))
        goto done;
    for (long long i = 0; i < n; i++) {
        char what[160];
        snprintf(what, sizeof what, "node %lld of %lld (<number> <x> <y> <z>)", i + 1, n);
        if (need_line(&t, what, err) || read_node(&t, r, LLONG_MIN, scale, err) ||
            skip_numbers(&t, nattr + marker, "a node's coordinates, attributes and marker", err))
            goto done;
    }
    rc = no_more(&t, n, "nodes", err);
done:
    text_close(&t);
    return rc;
}

static int read_tetgen_ele(const char *path, raw_mesh *r, firn_error *err)
{
    text t;
    if (text_open(&t, path, 1, err))
        return -1;
    long long n, per, nattr;
    int rc = -1;
    if (need_line(&t, "the header: <tetrahedra> <nodes per tetrahedron 4> <attributes>", err) ||
        get_int(&t, 0, LLONG_MAX, "the number of tetrahedra", &n, err) ||
        header_field(&t, LLONG_MIN, LLONG_MAX, 4, "the number of nodes per tetrahedron", &per,
                     err) ||
        header_field(&t, 0, 1000000, 0, "the number of attributes per tetrahedron", &nattr, err) ||
        end_of_line(&t, "the header", err))
        goto done;
    if (per == 10) {
        bad(&t, err,
            "10-node (quadratic) tetrahedra: firn takes linear 4-node tetrahedra "
            "(mesh without TetGen's -o2)");
        goto done;
    }
    if (per != 4) {
        bad(&t, err, "%lld nodes per tetrahedron: expected 4", per);
        goto done;
    }
    /* A tet line is at least "i a b c d": 10 bytes. */
    if (check_count(&t, n, 10, "tetrahedra", err))
        goto done;
    for (long long i = 0; i < n; i++) {
        char what[160];
        long long id;
        snprintf(what, sizeof what, "tetrahedron %lld of %lld (<number> <4 nodes>)", i + 1, n);
        if (need_line(&t, what, err) ||
            get_int(&t, LLONG_MIN, LLONG_MAX, "a tetrahedron number", &id, err) ||
            read_tet(&t, r, id, err) ||
            skip_numbers(&t, nattr, "a tetrahedron's 4 nodes and attributes", err))
            goto done;
    }
    rc = no_more(&t, n, "tetrahedra", err);
done:
    text_close(&t);
    return rc;
}

/* ---- Gmsh .msh ---------------------------------------------------------------- */

/* Is the current line exactly the word w? */
static int line_is(text *t, const char *w)
{
    size_t n = strlen(w);
    if (strncmp(t->cur, w, n))
        return 0;
    const char *s = t->cur + n;
    while (is_space(*s))
        s++;
    return *s == '\0';
}

static int expect_word(text *t, const char *w, const char *after, firn_error *err)
{
    char tok[40];
    if (need_line(t, w, err))
        return -1;
    if (!line_is(t, w))
        return bad(t, err, "expected %s after %s, found %s", w, after, peek(t, tok, sizeof tok));
    return 0;
}

/* Gmsh's higher-order tetrahedra (10, 20, 35 and 56 nodes), named when a
 * file has no linear ones. */
static int higher_order_tet(long long type) { return type == 11 || (type >= 29 && type <= 31); }

/* Version 2.2: "$Nodes / n / tag x y z ... / $EndNodes". */
static int msh2_nodes(text *t, double scale, raw_mesh *r, firn_error *err)
{
    long long n;
    if (need_line(t, "the number of nodes", err) ||
        get_int(t, 0, LLONG_MAX, "the number of nodes", &n, err) ||
        end_of_line(t, "the number of nodes", err) || check_count(t, n, 8, "nodes", err) ||
        reserve_nodes(r, n, err))
        return -1;
    for (long long i = 0; i < n; i++) {
        char what[160];
        snprintf(what, sizeof what, "node %lld of %lld (<tag> <x> <y> <z>)", i + 1, n);
        if (need_line(t, what, err) || read_node(t, r, 1, scale, err) ||
            end_of_line(t, "a node's coordinates", err))
            return -1;
    }
    return expect_word(t, "$EndNodes", "the nodes", err);
}

/* Version 2.2: "$Elements / n / tag type ntags tags... nodes... / $EndElements". */
static int msh2_elements(text *t, raw_mesh *r, long long *higher, firn_error *err)
{
    long long n;
    if (need_line(t, "the number of elements", err) ||
        get_int(t, 0, LLONG_MAX, "the number of elements", &n, err) ||
        end_of_line(t, "the number of elements", err) || check_count(t, n, 4, "elements", err))
        return -1;
    for (long long i = 0; i < n; i++) {
        char what[160];
        long long id, type, ntags, skip;
        snprintf(what, sizeof what, "element %lld of %lld (<tag> <type> <number of tags> ...)",
                 i + 1, n);
        if (need_line(t, what, err) || get_int(t, 1, LLONG_MAX, "an element tag", &id, err) ||
            get_int(t, 1, LLONG_MAX, "an element type", &type, err))
            return -1;
        *higher += higher_order_tet(type);
        if (type != 4)
            continue; /* points, lines, triangles, other cells: not FEM tets */
        if (get_int(t, 0, 1000, "the number of tags", &ntags, err))
            return -1;
        for (long long k = 0; k < ntags; k++)
            if (get_int(t, LLONG_MIN, LLONG_MAX, "a tag", &skip, err))
                return -1;
        if (read_tet(t, r, id, err) || end_of_line(t, "a tetrahedron's 4 nodes", err))
            return -1;
    }
    return expect_word(t, "$EndElements", "the elements", err);
}

/* An integer that may be on the current line or the next (v4 node tag
 * lists). */
static int get_int_span(text *t, long long lo, long long hi, const char *what, long long *v,
                        firn_error *err)
{
    if (at_end(t) && need_line(t, what, err))
        return -1;
    return get_int(t, lo, hi, what, v, err);
}

/* Version 4.1: "$Nodes / blocks n min max / per block: dim entity
 * parametric count, count tags, count coordinate lines / $EndNodes". */
static int msh4_nodes(text *t, double scale, raw_mesh *r, firn_error *err)
{
    long long blocks, n, lo, hi;
    if (need_line(t, "<entity blocks> <nodes> <min tag> <max tag>", err) ||
        get_int(t, 0, LLONG_MAX, "the number of node blocks", &blocks, err) ||
        get_int(t, 0, LLONG_MAX, "the number of nodes", &n, err) ||
        get_int(t, 0, LLONG_MAX, "the smallest node tag", &lo, err) ||
        get_int(t, 0, LLONG_MAX, "the largest node tag", &hi, err) ||
        end_of_line(t, "the node section's header", err) ||
        check_count(t, blocks, 8, "node blocks", err) || check_count(t, n, 8, "nodes", err) ||
        reserve_nodes(r, n, err))
        return -1;
    long long done = 0;
    for (long long b = 0; b < blocks; b++) {
        long long dim, entity, param, count;
        char what[160];
        snprintf(what, sizeof what,
                 "node block %lld of %lld (<entity dim> <entity tag> <parametric> <nodes>)", b + 1,
                 blocks);
        if (need_line(t, what, err) || get_int(t, 0, 3, "an entity dimension", &dim, err) ||
            get_int(t, LLONG_MIN, LLONG_MAX, "an entity tag", &entity, err) ||
            get_int(t, 0, 1, "the parametric flag (0 or 1)", &param, err) ||
            get_int(t, 0, n - done, "the block's number of nodes (within the total)", &count,
                    err) ||
            end_of_line(t, "the node block's header", err))
            return -1;
        /* The tags first, then the coordinates, in the same order. */
        int first = r->nv;
        for (long long i = 0; i < count; i++)
            if (get_int_span(t, 1, LLONG_MAX, "a node tag", &r->id[first + i], err))
                return -1;
        if (end_of_line(t, "the block's node tags", err))
            return -1;
        for (long long i = 0; i < count; i++) {
            long long id = r->id[first + i];
            double x[3];
            snprintf(what, sizeof what, "the coordinates of node %lld", id);
            if (need_line(t, what, err))
                return -1;
            for (int a = 0; a < 3; a++) {
                if (get_real(t, what, &x[a], err))
                    return -1;
                x[a] *= scale;
                if (!isfinite(x[a]))
                    return bad(t, err, "node %lld's coordinate times the scale %g is not finite",
                               id, scale);
            }
            /* Parametric nodes carry dim more numbers (u, v, w). */
            if (skip_numbers(t, param ? dim : 0, "a node's coordinates", err))
                return -1;
            memcpy(r->x + 3 * r->nv, x, sizeof x);
            r->vline[r->nv++] = t->line;
        }
        done += count;
    }
    if (done != n)
        return bad(t, err, "the node blocks hold %lld nodes, the header declares %lld", done, n);
    return expect_word(t, "$EndNodes", "the node blocks", err);
}

/* Version 4.1: "$Elements / blocks n min max / per block: dim entity type
 * count, count lines of tag and nodes / $EndElements". */
static int msh4_elements(text *t, raw_mesh *r, long long *higher, firn_error *err)
{
    long long blocks, n, lo, hi, done = 0;
    if (need_line(t, "<entity blocks> <elements> <min tag> <max tag>", err) ||
        get_int(t, 0, LLONG_MAX, "the number of element blocks", &blocks, err) ||
        get_int(t, 0, LLONG_MAX, "the number of elements", &n, err) ||
        get_int(t, 0, LLONG_MAX, "the smallest element tag", &lo, err) ||
        get_int(t, 0, LLONG_MAX, "the largest element tag", &hi, err) ||
        end_of_line(t, "the element section's header", err) ||
        check_count(t, blocks, 8, "element blocks", err) || check_count(t, n, 4, "elements", err))
        return -1;
    for (long long b = 0; b < blocks; b++) {
        long long dim, entity, type, count;
        char what[160];
        snprintf(what, sizeof what,
                 "element block %lld of %lld (<entity dim> <entity tag> <type> <elements>)", b + 1,
                 blocks);
        if (need_line(t, what, err) || get_int(t, 0, 3, "an entity dimension", &dim, err) ||
            get_int(t, LLONG_MIN, LLONG_MAX, "an entity tag", &entity, err) ||
            get_int(t, 1, LLONG_MAX, "an element type", &type, err) ||
            get_int(t, 0, n - done, "the block's number of elements (within the total)", &count,
                    err) ||
            end_of_line(t, "the element block's header", err))
            return -1;
        if (higher_order_tet(type))
            *higher += count;
        for (long long i = 0; i < count; i++) {
            long long id;
            snprintf(what, sizeof what, "element %lld of %lld in block %lld (<tag> <nodes>)", i + 1,
                     count, b + 1);
            if (need_line(t, what, err))
                return -1;
            if (t->cur[0] == '$')
                return bad(t, err, "expected %s, found '%.40s'", what, t->cur);
            if (get_int(t, 1, LLONG_MAX, "an element tag", &id, err))
                return -1;
            /* One element a line, as Gmsh writes them: other types'
             * lines are skipped whole. */
            if (type == 4 &&
                (read_tet(t, r, id, err) || end_of_line(t, "a tetrahedron's 4 nodes", err)))
                return -1;
        }
        done += count;
    }
    if (done != n)
        return bad(t, err, "the element blocks hold %lld elements, the header declares %lld", done,
                   n);
    return expect_word(t, "$EndElements", "the element blocks", err);
}

/* A section firn does not need ($Entities, $PhysicalNames, $Periodic,
 * data...): skipped to its $End line. */
static int skip_section(text *t, firn_error *err)
{
    char end[72], name[64];
    int start = t->line;
    snprintf(name, sizeof name, "%.60s", t->cur + 1);
    for (char *s = name; *s; s++)
        if (is_space(*s)) {
            *s = '\0';
            break;
        }
    snprintf(end, sizeof end, "$End%s", name);
    for (;;) {
        int rc = next_line(t, err);
        if (rc < 0)
            return -1;
        if (rc == 0)
            return bad(t, err, "the section $%s (line %d) has no %s", name, start, end);
        if (line_is(t, end))
            return 0;
    }
}

static int read_msh(const char *path, double scale, raw_mesh *r, firn_error *err)
{
    text t;
    char tok[40];
    if (text_open(&t, path, 0, err))
        return -1;
    int rc = -1, version = 0, have_nodes = 0, have_elements = 0;
    long long higher = 0, binary, size;
    if (need_line(&t, "$MeshFormat", err))
        goto done;
    if (!line_is(&t, "$MeshFormat")) {
        bad(&t, err, "expected $MeshFormat (a Gmsh .msh file), found %s",
            peek(&t, tok, sizeof tok));
        goto done;
    }
    if (need_line(&t, "<version> <file type> <data size>", err))
        goto done;
    char ver[16];
    snprintf(ver, sizeof ver, "%.*s", (int)strcspn(t.cur, " \t\r"), t.cur);
    t.cur += strcspn(t.cur, " \t\r");
    if (get_int(&t, LLONG_MIN, LLONG_MAX, "the file type (0: ASCII, 1: binary)", &binary, err))
        goto done;
    if (binary != 0) {
        bad(&t, err,
            "a binary .msh file (file type %lld): firn reads ASCII .msh files (save with "
            "Gmsh's Mesh.Binary = 0)",
            binary);
        goto done;
    }
    if (!strcmp(ver, "2.2"))
        version = 2;
    else if (!strcmp(ver, "4.1"))
        version = 4;
    else {
        bad(&t, err,
            "version %s of the .msh format: firn reads versions 2.2 and 4.1 (save with "
            "gmsh -format msh41 or msh22)",
            ver);
        goto done;
    }
    if (get_int(&t, 1, 16, "the data size", &size, err) ||
        end_of_line(&t, "the format line", err) ||
        expect_word(&t, "$EndMeshFormat", "the format line", err))
        goto done;
    r->vpath = r->epath = path;
    for (;;) {
        int more = next_line(&t, err);
        if (more < 0)
            goto done;
        if (!more)
            break;
        if (t.cur[0] != '$') {
            bad(&t, err, "expected a section ($Name), found %s", peek(&t, tok, sizeof tok));
            goto done;
        }
        if (line_is(&t, "$Nodes") || line_is(&t, "$Elements")) {
            int nodes = line_is(&t, "$Nodes");
            if (nodes ? have_nodes++ : have_elements++) {
                bad(&t, err, "a second %s section", nodes ? "$Nodes" : "$Elements");
                goto done;
            }
            int bad_section = nodes ? (version == 2 ? msh2_nodes(&t, scale, r, err)
                                                    : msh4_nodes(&t, scale, r, err))
                                    : (version == 2 ? msh2_elements(&t, r, &higher, err)
                                                    : msh4_elements(&t, r, &higher, err));
            if (bad_section)
                goto done;
        } else if (skip_section(&t, err))
            goto done;
    }
    if (!have_nodes || !have_elements) {
        firn_set_error(err, FIRN_E_SCENE, "%s: no %s section", path,
                       have_nodes ? "$Elements" : "$Nodes");
        goto done;
    }
    if (r->ne == 0) {
        if (higher)
            firn_set_error(err, FIRN_E_SCENE,
                           "%s: no 4-node tetrahedra (element type 4), but %lld higher-order "
                           "ones: firn takes linear tetrahedra (mesh with Mesh.ElementOrder = 1)",
                           path, higher);
        else
            firn_set_error(err, FIRN_E_SCENE,
                           "%s: no 4-node tetrahedra (element type 4): a volume mesh is needed "
                           "(gmsh -3)",
                           path);
        goto done;
    }
    rc = 0;
done:
    text_close(&t);
    return rc;
}

/* ---- loading by extension ------------------------------------------------------ */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcasecmp(s + n - k, suffix);
}

int firn_tet_mesh_load(const char *path, double scale, firn_tet_mesh *m, firn_error *err)
{
    memset(m, 0, sizeof *m);
    if (!path || !*path) {
        firn_set_error(err, FIRN_E_USAGE, "a tet mesh needs a file");
        return -1;
    }
    if (!(scale > 0) || !isfinite(scale)) {
        firn_set_error(err, FIRN_E_USAGE, "%s: the scale must be positive and finite (%g)", path,
                       scale);
        return -1;
    }
    size_t len = strlen(path);
    if (len >= FIRN_PATH_MAX) {
        firn_set_error(err, FIRN_E_IO, "tet mesh path '%.64s...' is longer than %d characters",
                       path, FIRN_PATH_MAX - 1);
        return -1;
    }
    raw_mesh r;
    memset(&r, 0, sizeof r);
    char node[FIRN_PATH_MAX + 8], ele[FIRN_PATH_MAX + 8];
    int rc = -1;
    if (ends_with(path, ".msh")) {
        if (read_msh(path, scale, &r, err))
            goto done;
    } else {
        size_t stem = len;
        if (ends_with(path, ".node"))
            stem = len - 5;
        else if (ends_with(path, ".ele"))
            stem = len - 4;
        snprintf(node, sizeof node, "%.*s.node", (int)stem, path);
        snprintf(ele, sizeof ele, "%.*s.ele", (int)stem, path);
        if (stem == len && (access(node, F_OK) || access(ele, F_OK))) {
            firn_set_error(err, access(path, F_OK) ? FIRN_E_IO : FIRN_E_SCENE,
                           "cannot read tet mesh '%s': neither a .node, .ele or .msh file nor "
                           "the name of a '%s' and '%s' pair",
                           path, node, ele);
            goto done;
        }
        r.vpath = node, r.epath = ele;
        if (read_tetgen_node(node, scale, &r, err) || read_tetgen_ele(ele, &r, err))
            goto done;
    }
    rc = finish(&r, path, m, err);
done:
    raw_free(&r);
    if (rc)
        firn_tet_mesh_free(m);
    return rc;
}

/* ---- generated balls ------------------------------------------------------------ */

int firn_tet_mesh_sphere(const double c[3], double r, int n, firn_tet_mesh *m, firn_error *err)
{
    memset(m, 0, sizeof *m);
    if (n < 1 || n > 400 || !(r > 0) || !isfinite(r) || !isfinite(c[0]) || !isfinite(c[1]) ||
        !isfinite(c[2])) {
        firn_set_error(err, FIRN_E_USAGE,
                       "tet sphere: needs 1 to 400 cells across and a positive finite radius "
                       "and centre (%d cells, radius %g)",
                       n, r);
        return -1;
    }
    const int nv = (n + 1) * (n + 1) * (n + 1), ne = 6 * n * n * n;
    m->nv = nv, m->ne = ne;
    m->x = malloc((size_t)nv * 3 * sizeof *m->x);
    m->tet = malloc((size_t)ne * 4 * sizeof *m->tet);
    if (!m->x || !m->tet) {
        firn_tet_mesh_free(m);
        firn_set_error(err, FIRN_E_NOMEM, "tet sphere: out of memory for %d elements", ne);
        return -1;
    }
#define VID(i, j, k) (((k) * (n + 1) + (j)) * (n + 1) + (i))
    /* Lattice point q (coordinates 2q - n in [-n, n]) lies on the cube
     * shell s = max |2q_a - n| / n; it goes to radius r s, in the
     * direction of its point on the unit cube's surface, each face's two
     * coordinates u warped to tan(pi u / 4) first: the equiangular cubed
     * sphere, whose cells vary far less in size than a central projection's
     * (Ronchi, Iacono and Paolucci 1996). The map is continuous across the
     * faces' edges (there u = 1 stays 1), and of degree 1 in s, so every
     * shell is the same picture scaled and the quality does not fall with
     * n. */
    for (int k = 0; k <= n; k++)
        for (int j = 0; j <= n; j++)
            for (int i = 0; i <= n; i++) {
                const int q[3] = {2 * i - n, 2 * j - n, 2 * k - n};
                int big = 0;
                for (int a = 1; a < 3; a++)
                    if (abs(q[a]) > abs(q[big]))
                        big = a;
                double *x = m->x + 3 * VID(i, j, k), d[3], l2 = 0;
                if (q[big] == 0) { /* the centre (n even) */
                    memcpy(x, c, 3 * sizeof *x);
                    continue;
                }
                for (int a = 0; a < 3; a++) {
                    double u = (double)q[a] / abs(q[big]);
                    d[a] = a == big ? u : tan(M_PI / 4 * u);
                    l2 += d[a] * d[a];
                }
                const double s = (double)abs(q[big]) / n, f = r * s / sqrt(l2);
                for (int a = 0; a < 3; a++)
                    x[a] = c[a] + f * d[a];
            }
    /* Each cell into the 6 tets about its diagonal from the corner nearest
     * the centre to the farthest: the Kuhn triangulation mirrored into
     * each octant (conforming across the mirror planes, where both sides
     * cut a face along the same diagonal), so that all 8 corners of the
     * cube, where the map shears cells most, are cut alike. A cell on the
     * middle plane (n odd) keeps the plain orientation. */
    static const int perm[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1},
                                   {0, 2, 1}, {2, 1, 0}, {1, 0, 2}};
    int e = 0;
    for (int k = 0; k < n; k++)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) {
                const int cell[3] = {i, j, k};
                int start[3], dir[3], flip = 0;
                for (int a = 0; a < 3; a++) {
                    int low = 2 * cell[a] + 1 < n; /* the cell is below the middle */
                    start[a] = cell[a] + low, dir[a] = low ? -1 : 1;
                    flip ^= low;
                }
                for (int p = 0; p < 6; p++) {
                    int v[4], at[3] = {start[0], start[1], start[2]};
                    v[0] = VID(at[0], at[1], at[2]);
                    for (int s = 0; s < 3; s++) {
                        at[perm[p][s]] += dir[perm[p][s]];
                        v[s + 1] = VID(at[0], at[1], at[2]);
                    }
                    /* Odd permutations and odd numbers of mirrors turn
                     * the tet over. */
                    const int odd = (p >= 3) ^ flip;
                    int *t = m->tet + 4 * e++;
                    t[0] = v[0], t[3] = v[3];
                    t[1] = odd ? v[2] : v[1];
                    t[2] = odd ? v[1] : v[2];
                }
            }
#undef VID
    if (firn_tet_mesh_finish(m, "tet sphere", err)) {
        firn_tet_mesh_free(m);
        return -1;
    }
    return 0;
}
