/* tet_mesh.c - the checks every tetrahedral mesh passes before the FEM
 * solver sees it (indices, finite coordinates, degenerate and inverted
 * tets, faces shared by more than two tets, a closed manifold surface),
 * its orientation, its surface triangles, and generated boxes. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tet_mesh.h"

/* The faces of a positively oriented tet, counter-clockwise seen from
 * outside, opposite vertex 3, 0, 1 and 2. */
static const int tet_faces[4][3] = {{0, 2, 1}, {1, 2, 3}, {0, 3, 2}, {0, 1, 3}};

static double signed_volume(const double *x, const int *t)
{
    const double *a = x + 3 * t[0], *b = x + 3 * t[1], *c = x + 3 * t[2], *d = x + 3 * t[3];
    double u[3], v[3], w[3];
    for (int k = 0; k < 3; k++)
        u[k] = b[k] - a[k], v[k] = c[k] - a[k], w[k] = d[k] - a[k];
    return (u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0]) +
            u[2] * (v[0] * w[1] - v[1] * w[0])) /
           6.0;
}

double firn_tet_mesh_volume(const firn_tet_mesh *m, int e)
{
    return signed_volume(m->x, m->tet + 4 * e);
}

static double longest_edge(const double *x, const int *t)
{
    double l2 = 0;
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++) {
            double s = 0;
            for (int k = 0; k < 3; k++) {
                double d = x[3 * t[i] + k] - x[3 * t[j] + k];
                s += d * d;
            }
            if (s > l2)
                l2 = s;
        }
    return sqrt(l2);
}

/* A face or an edge as its sorted vertices, with where it came from. */
typedef struct {
    int v[3];  /* sorted; v[2] = -1 for an edge */
    int owner; /* face: tet * 4 + local face; edge: surface face */
} key;

static int key_cmp(const void *pa, const void *pb)
{
    const key *a = pa, *b = pb;
    for (int k = 0; k < 3; k++)
        if (a->v[k] != b->v[k])
            return a->v[k] < b->v[k] ? -1 : 1;
    return a->owner < b->owner ? -1 : a->owner > b->owner;
}

static void sort3(int *v)
{
    int t;
    if (v[0] > v[1])
        t = v[0], v[0] = v[1], v[1] = t;
    if (v[1] > v[2])
        t = v[1], v[1] = v[2], v[2] = t;
    if (v[0] > v[1])
        t = v[0], v[0] = v[1], v[1] = t;
}

static int same(const key *a, const key *b)
{
    return a->v[0] == b->v[0] && a->v[1] == b->v[1] && a->v[2] == b->v[2];
}

/* Indices, finite coordinates, degenerate tets; the orientation of each tet
 * into sign[] (+1 or -1). */
static int check_elements(const firn_tet_mesh *m, const char *name, signed char *sign,
                          firn_error *err)
{
    for (int i = 0; i < 3 * m->nv; i++)
        if (!isfinite(m->x[i])) {
            firn_set_error(err, FIRN_E_SCENE, "%s: vertex %d has a non-finite coordinate", name,
                           i / 3);
            return -1;
        }
    for (int e = 0; e < m->ne; e++) {
        const int *t = m->tet + 4 * e;
        for (int i = 0; i < 4; i++) {
            if (t[i] < 0 || t[i] >= m->nv) {
                firn_set_error(err, FIRN_E_SCENE,
                               "%s: element %d refers to vertex %d, but the mesh has vertices 0 to "
                               "%d",
                               name, e, t[i], m->nv - 1);
                return -1;
            }
            for (int j = 0; j < i; j++)
                if (t[j] == t[i]) {
                    firn_set_error(err, FIRN_E_SCENE,
                                   "%s: element %d has vertex %d twice (%d %d %d %d)", name, e,
                                   t[i], t[0], t[1], t[2], t[3]);
                    return -1;
                }
        }
        double vol = signed_volume(m->x, t), l = longest_edge(m->x, t);
        if (!(fabs(vol) > 1e-9 * l * l * l)) {
            firn_set_error(err, FIRN_E_SCENE,
                           "%s: element %d (vertices %d %d %d %d) is degenerate: volume %.3g m^3 "
                           "for a longest edge of %.3g m",
                           name, e, t[0], t[1], t[2], t[3], fabs(vol), l);
            return -1;
        }
        sign[e] = vol > 0 ? 1 : -1;
    }
    return 0;
}

/* The faces of all tets, sorted: a face shared by two tets is inner, by one
 * a surface face, by three or more an error. */
static int find_surface(firn_tet_mesh *m, const char *name, int **face_out, int **face_tet_out,
                        int *nf_out, firn_error *err)
{
    size_t n = (size_t)4 * m->ne;
    key *k = malloc(n * sizeof *k);
    if (!k) {
        firn_set_error(err, FIRN_E_NOMEM, "%s: out of memory for %zu faces", name, n);
        return -1;
    }
    for (int e = 0; e < m->ne; e++)
        for (int f = 0; f < 4; f++) {
            key *q = &k[4 * e + f];
            for (int i = 0; i < 3; i++)
                q->v[i] = m->tet[4 * e + tet_faces[f][i]];
            sort3(q->v);
            q->owner = 4 * e + f;
        }
    qsort(k, n, sizeof *k, key_cmp);
    int nf = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && same(&k[j], &k[i]))
            j++;
        if (j - i > 2) {
            firn_set_error(err, FIRN_E_SCENE,
                           "%s: face (%d %d %d) belongs to %zu elements (%d, %d, %d...); a face "
                           "may belong to two at most",
                           name, k[i].v[0], k[i].v[1], k[i].v[2], j - i, k[i].owner / 4,
                           k[i + 1].owner / 4, k[i + 2].owner / 4);
            free(k);
            return -1;
        }
        nf += j - i == 1;
        i = j;
    }
    int *face = malloc((size_t)3 * (nf ? nf : 1) * sizeof *face);
    int *face_tet = malloc((size_t)(nf ? nf : 1) * sizeof *face_tet);
    if (!face || !face_tet) {
        free(face), free(face_tet), free(k);
        firn_set_error(err, FIRN_E_NOMEM, "%s: out of memory for %d surface faces", name, nf);
        return -1;
    }
    nf = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && same(&k[j], &k[i]))
            j++;
        if (j - i == 1) {
            int e = k[i].owner / 4, f = k[i].owner % 4;
            for (int c = 0; c < 3; c++)
                face[3 * nf + c] = m->tet[4 * e + tet_faces[f][c]];
            face_tet[nf++] = e;
        }
        i = j;
    }
    free(k);
    *face_out = face, *face_tet_out = face_tet, *nf_out = nf;
    return 0;
}

/* Each surface edge in exactly two surface faces, traversed once each way
 * (a closed, consistently oriented 2-manifold). */
static int check_surface(const int *face, int nf, const char *name, firn_error *err)
{
    size_t n = (size_t)3 * nf;
    key *k = malloc((n ? n : 1) * sizeof *k);
    if (!k) {
        firn_set_error(err, FIRN_E_NOMEM, "%s: out of memory for %zu surface edges", name, n);
        return -1;
    }
    for (int f = 0; f < nf; f++)
        for (int c = 0; c < 3; c++) {
            int a = face[3 * f + c], b = face[3 * f + (c + 1) % 3];
            key *q = &k[3 * f + c];
            q->v[0] = a < b ? a : b, q->v[1] = a < b ? b : a, q->v[2] = -1;
            q->owner = a < b ? 2 * f : 2 * f + 1; /* the direction in its low bit */
        }
    qsort(k, n, sizeof *k, key_cmp);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && same(&k[j], &k[i]))
            j++;
        if (j - i != 2 || (k[i].owner & 1) == (k[i + 1].owner & 1)) {
            firn_set_error(err, FIRN_E_SCENE,
                           "%s: surface edge (%d %d) belongs to %zu surface triangle%s%s; the "
                           "surface must be closed and manifold (two triangles per edge)",
                           name, k[i].v[0], k[i].v[1], j - i, j - i == 1 ? "" : "s",
                           j - i == 2 ? " facing the same way" : "");
            free(k);
            return -1;
        }
        i = j;
    }
    free(k);
    return 0;
}

int firn_tet_mesh_finish(firn_tet_mesh *m, const char *name, firn_error *err)
{
    if (m->nv < 4 || m->ne < 1) {
        firn_set_error(err, FIRN_E_SCENE,
                       "%s: a mesh needs at least 4 vertices and 1 element (%d "
                       "and %d)",
                       name, m->nv, m->ne);
        return -1;
    }
    signed char *sign = malloc((size_t)m->ne);
    int *tet = malloc((size_t)16 * m->ne);
    int *remap = malloc((size_t)m->nv * sizeof *remap);
    double *x = malloc((size_t)24 * m->nv);
    int *face = NULL, *face_tet = NULL, *surf = NULL, nf = 0;
    if (!sign || !tet || !remap || !x) {
        firn_set_error(err, FIRN_E_NOMEM, "%s: out of memory for %d elements", name, m->ne);
        goto fail;
    }
    if (check_elements(m, name, sign, err))
        goto fail;
    int positive = 0;
    for (int e = 0; e < m->ne; e++)
        positive += sign[e] > 0;
    const int want = 2 * positive >= m->ne ? 1 : -1;
    for (int e = 0; e < m->ne; e++)
        if (sign[e] != want) {
            firn_set_error(err, FIRN_E_SCENE,
                           "%s: element %d (vertices %d %d %d %d) is inverted: its orientation is "
                           "against %d of the %d elements",
                           name, e, m->tet[4 * e], m->tet[4 * e + 1], m->tet[4 * e + 2],
                           m->tet[4 * e + 3], want > 0 ? positive : m->ne - positive, m->ne);
            goto fail;
        }
    /* Renumber the vertices that tets use, in their order. */
    for (int v = 0; v < m->nv; v++)
        remap[v] = -1;
    int nv = 0;
    for (int e = 0; e < m->ne; e++)
        for (int i = 0; i < 4; i++)
            if (remap[m->tet[4 * e + i]] < 0)
                remap[m->tet[4 * e + i]] = 1;
    for (int v = 0; v < m->nv; v++)
        if (remap[v] > 0) {
            memcpy(x + 3 * nv, m->x + 3 * v, 3 * sizeof *x);
            remap[v] = nv++;
        }
    for (int e = 0; e < m->ne; e++) {
        int *t = tet + 4 * e;
        for (int i = 0; i < 4; i++)
            t[i] = remap[m->tet[4 * e + i]];
        if (want < 0) {
            int s = t[1];
            t[1] = t[2], t[2] = s;
        }
    }
    firn_tet_mesh out = {.nv = nv, .ne = m->ne, .x = x, .tet = tet};
    if (find_surface(&out, name, &face, &face_tet, &nf, err) || check_surface(face, nf, name, err))
        goto fail;
    /* Surface vertices, ascending (remap reused as a mark). */
    memset(remap, 0, (size_t)nv * sizeof *remap);
    for (int i = 0; i < 3 * nf; i++)
        remap[face[i]] = 1;
    int ns = 0;
    for (int v = 0; v < nv; v++)
        ns += remap[v];
    surf = malloc((size_t)(ns ? ns : 1) * sizeof *surf);
    if (!surf) {
        firn_set_error(err, FIRN_E_NOMEM, "%s: out of memory for %d surface vertices", name, ns);
        goto fail;
    }
    ns = 0;
    for (int v = 0; v < nv; v++)
        if (remap[v])
            surf[ns++] = v;
    free(sign), free(remap);
    free(m->x), free(m->tet), free(m->face), free(m->face_tet), free(m->surf);
    out.nf = nf, out.face = face, out.face_tet = face_tet, out.ns = ns, out.surf = surf;
    *m = out;
    return 0;
fail:
    free(sign), free(tet), free(remap), free(x), free(face), free(face_tet), free(surf);
    return -1;
}

void firn_tet_mesh_free(firn_tet_mesh *m)
{
    free(m->x), free(m->tet), free(m->face), free(m->face_tet), free(m->surf);
    memset(m, 0, sizeof *m);
}

int firn_tet_mesh_box(const double lo[3], const double hi[3], const int n[3], firn_tet_mesh *m,
                      firn_error *err)
{
    memset(m, 0, sizeof *m);
    for (int k = 0; k < 3; k++)
        if (n[k] < 1 || !(hi[k] > lo[k])) {
            firn_set_error(err, FIRN_E_USAGE,
                           "tet box: axis %d needs at least one cell and lo < hi (%d cells, %g to "
                           "%g)",
                           k, n[k], lo[k], hi[k]);
            return -1;
        }
    const int64_t nv = (int64_t)(n[0] + 1) * (n[1] + 1) * (n[2] + 1);
    const int64_t ne = (int64_t)6 * n[0] * n[1] * n[2];
    if (ne > INT32_MAX / 4 || nv > INT32_MAX / 3) {
        firn_set_error(err, FIRN_E_USAGE, "tet box: %d x %d x %d cells is too many elements", n[0],
                       n[1], n[2]);
        return -1;
    }
    m->nv = (int)nv, m->ne = (int)ne;
    m->x = malloc((size_t)nv * 3 * sizeof *m->x);
    m->tet = malloc((size_t)ne * 4 * sizeof *m->tet);
    if (!m->x || !m->tet) {
        firn_tet_mesh_free(m);
        firn_set_error(err, FIRN_E_NOMEM, "tet box: out of memory for %lld elements",
                       (long long)ne);
        return -1;
    }
#define VID(i, j, k) (((k) * (n[1] + 1) + (j)) * (n[0] + 1) + (i))
    for (int k = 0; k <= n[2]; k++)
        for (int j = 0; j <= n[1]; j++)
            for (int i = 0; i <= n[0]; i++) {
                const int c[3] = {i, j, k};
                for (int a = 0; a < 3; a++)
                    m->x[3 * VID(i, j, k) + a] = lo[a] + (hi[a] - lo[a]) * c[a] / n[a];
            }
    /* The 6 paths from the cell's lowest corner to its highest, one axis at
     * a time: tet (c, c + e_a, c + e_a + e_b, c + 1) for each order a, b, c
     * of the axes; an odd permutation is negatively oriented, so its
     * middle vertices are swapped. */
    static const int perm[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1},
                                   {0, 2, 1}, {2, 1, 0}, {1, 0, 2}};
    int e = 0;
    for (int k = 0; k < n[2]; k++)
        for (int j = 0; j < n[1]; j++)
            for (int i = 0; i < n[0]; i++)
                for (int p = 0; p < 6; p++) {
                    int c[3] = {i, j, k}, v[4];
                    v[0] = VID(c[0], c[1], c[2]);
                    for (int s = 0; s < 3; s++) {
                        c[perm[p][s]]++;
                        v[s + 1] = VID(c[0], c[1], c[2]);
                    }
                    int *t = m->tet + 4 * e++;
                    t[0] = v[0], t[3] = v[3];
                    t[1] = p < 3 ? v[1] : v[2];
                    t[2] = p < 3 ? v[2] : v[1];
                }
#undef VID
    if (firn_tet_mesh_finish(m, "tet box", err)) {
        firn_tet_mesh_free(m);
        return -1;
    }
    return 0;
}

void firn_fem_mesh_centroid(const firn_tet_mesh *m, double c[3])
{
    double vol = 0.0;
    c[0] = c[1] = c[2] = 0.0;
    for (int e = 0; e < m->ne; e++) {
        const double v = firn_tet_mesh_volume(m, e);
        vol += v;
        for (int k = 0; k < 4; k++)
            for (int a = 0; a < 3; a++)
                c[a] += v / 4.0 * m->x[3 * m->tet[4 * e + k] + a];
    }
    for (int a = 0; a < 3; a++)
        c[a] = vol > 0.0 ? c[a] / vol : 0.0;
}
