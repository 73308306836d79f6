/* pbd.c - the PBD solver's setup and host-side reads: parameters and
 * materials from the scene, the particles and constraints of its bodies
 * (cloth rectangles, OBJ surfaces, particle lattices), pins, the colouring
 * of the constraints, the CFL limit and the statistics. The phases are in
 * host/pbd_cpu.c. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "firn_pbf.h"
#include "mesh.h"
#include "pbd.h"
#include "sample.h"
#include "align.h"
#include "scene_def.h"

int firn_pbd_in_scene(const firn_scene_def *def)
{
    for (int b = 0; b < def->n_bodies; b++)
        if (def->bodies[b].solver == FIRN_SOLVER_KIND_PBD)
            return 1;
    return 0;
}

/* ---- colouring ------------------------------------------------------------ */

#define COLOUR_WORDS (FIRN_PBD_MAX_COLOURS / 64)

int firn_pbd_colour(firn_pbd_constraints *C, int nverts, firn_error *err)
{
    uint64_t *used = calloc((size_t)nverts * COLOUR_WORDS + 1, sizeof *used);
    int *colour = malloc(((size_t)C->n + 1) * sizeof *colour);
    int count[FIRN_PBD_MAX_COLOURS + 1] = {0}, rc = -1;
    C->colours = 0;
    if (!used || !colour) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory colouring %d PBD constraints", C->n);
        goto done;
    }
    for (int j = 0; j < C->n; j++) {
        uint64_t taken[COLOUR_WORDS] = {0};
        for (int k = 0; k < C->k; k++)
            for (int q = 0; q < COLOUR_WORDS; q++)
                taken[q] |= used[(size_t)C->v[C->k * j + k] * COLOUR_WORDS + q];
        int c = 0;
        while (c < FIRN_PBD_MAX_COLOURS && (taken[c / 64] >> (c % 64) & 1u))
            c++;
        if (c == FIRN_PBD_MAX_COLOURS) {
            firn_set_error(err, FIRN_E_SCENE,
                           "a PBD vertex (%d) is in more than %d constraints of one kind; the "
                           "constraints cannot be coloured (is the mesh degenerate?)",
                           C->v[C->k * j], FIRN_PBD_MAX_COLOURS);
            goto done;
        }
        colour[j] = c;
        count[c + 1]++;
        C->colours = c + 1 > C->colours ? c + 1 : C->colours;
        for (int k = 0; k < C->k; k++)
            used[(size_t)C->v[C->k * j + k] * COLOUR_WORDS + c / 64] |= (uint64_t)1 << (c % 64);
    }
    for (int c = 0; c < C->colours; c++)
        count[c + 1] += count[c];
    for (int c = 0; c <= C->colours; c++)
        C->colour_start[c] = count[c];
    for (int j = 0; j < C->n; j++) /* stable: constraint order within a colour */
        C->order[count[colour[j]]++] = j;
    rc = 0;
done:
    free(used);
    free(colour);
    return rc;
}

/* ---- building ------------------------------------------------------------- */

static int constraints_alloc(firn_pbd_constraints *C, int n, int k)
{
    memset(C, 0, sizeof *C);
    C->n = n;
    C->k = k;
    const size_t m = (size_t)n + 1;
    C->v = malloc(m * k * sizeof(int));
    C->rest = malloc(m * sizeof(float));
    C->compliance = malloc(m * sizeof(float));
    C->lambda = calloc(m, sizeof(float));
    C->order = malloc(m * sizeof(int));
    C->colour_start = malloc((FIRN_PBD_MAX_COLOURS + 1) * sizeof(int));
    return C->v && C->rest && C->compliance && C->lambda && C->order && C->colour_start ? 0 : -1;
}

static void constraints_free(firn_pbd_constraints *C)
{
    free(C->v), free(C->rest), free(C->compliance), free(C->lambda), free(C->order);
    free(C->colour_start);
    memset(C, 0, sizeof *C);
}

/* A body's surface before it joins the solver: vertices, triangles. */
typedef struct {
    float *v;
    int nv, *tri, nt;
} surface;

/* The cloth rectangle: res[0] x res[1] vertices on a grid in the plane
 * normal to axis, vertex (i, j) at index i res[1] + j; each quad split
 * along alternating diagonals (a checkerboard), which keeps the sheet from
 * favouring one shear direction. */
static int rect_surface(const firn_shape_def *s, surface *m)
{
    const int ua = s->axis == 0 ? 1 : 0, va = s->axis == 2 ? 1 : 2;
    const int n0 = s->resolution[0], n1 = s->resolution[1];
    m->nv = n0 * n1;
    m->nt = 2 * (n0 - 1) * (n1 - 1);
    m->v = malloc(3 * (size_t)m->nv * sizeof(float));
    m->tri = malloc(3 * (size_t)m->nt * sizeof(int));
    if (!m->v || !m->tri)
        return -1;
    for (int i = 0; i < n0; i++)
        for (int j = 0; j < n1; j++) {
            float *x = m->v + 3 * (i * n1 + j);
            x[s->axis] = s->center[s->axis];
            x[ua] = s->center[ua] + s->size[0] * ((float)i / (float)(n0 - 1) - 0.5f);
            x[va] = s->center[va] + s->size[1] * ((float)j / (float)(n1 - 1) - 0.5f);
        }
    int t = 0;
    for (int i = 0; i + 1 < n0; i++)
        for (int j = 0; j + 1 < n1; j++) {
            const int a = i * n1 + j, b = a + n1, c = b + 1, d = a + 1;
            const int q[2][3][3] = {{{a, b, c}, {a, c, d}}, {{a, b, d}, {b, c, d}}};
            const int k = (i + j) & 1;
            for (int h = 0; h < 2; h++, t++)
                for (int e = 0; e < 3; e++)
                    m->tri[3 * t + e] = q[k][h][e];
        }
    return 0;
}

/* An OBJ cloth: the file's vertices and faces, scaled, with the mean of the
 * vertices moved to center. */
static int mesh_surface(const firn_shape_def *s, surface *m, firn_error *err)
{
    if (firn_mesh_read_surface(s->file, s->scale, &m->v, &m->nv, &m->tri, &m->nt, err))
        return -1;
    double mean[3] = {0.0, 0.0, 0.0};
    for (int i = 0; i < m->nv; i++)
        for (int a = 0; a < 3; a++)
            mean[a] += m->v[3 * i + a];
    for (int i = 0; i < m->nv; i++)
        for (int a = 0; a < 3; a++)
            m->v[3 * i + a] += s->center[a] - (float)(mean[a] / (m->nv > 0 ? m->nv : 1));
    return 0;
}

static double tri_area(const float *v, const int *t)
{
    double e1[3], e2[3];
    for (int a = 0; a < 3; a++) {
        e1[a] = (double)v[3 * t[1] + a] - v[3 * t[0] + a];
        e2[a] = (double)v[3 * t[2] + a] - v[3 * t[0] + a];
    }
    const double c[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                         e1[0] * e2[1] - e1[1] * e2[0]};
    return 0.5 * sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
}

static firn_vec3 vert(const float *x, int n, int i) { return firn_load3(x, n, i); }

/* Half-edge q of the triangles tri from t0: edge q % 3 of triangle
 * t0 + q / 3, which runs from -> to; opp is its third vertex. */
static void half_edge(const int *tri, int t0, int q, int *from, int *to, int *opp)
{
    const int *t = tri + 3 * (t0 + q / 3), e = q % 3;
    *from = t[e], *to = t[(e + 1) % 3], *opp = t[(e + 2) % 3];
}

static int half_edge_lo(const int *tri, int t0, int q)
{
    int a, b, c;
    half_edge(tri, t0, q, &a, &b, &c);
    return a < b ? a : b;
}

static int cmp_ll(const void *pa, const void *pb)
{
    const long long a = *(const long long *)pa, b = *(const long long *)pb;
    return a < b ? -1 : a > b;
}

/* The edges and inner edges of the cloth triangles S->tri[t0 .. t1) (the
 * particles' positions are their rest positions), appended to the solver's
 * constraint lists at *ne and *nb; with count set only counts them. Edges
 * come in the order of (lo, hi) vertex, lo < hi; the two triangles of an
 * inner edge in triangle order. The half-edges are bucketed by lo in
 * linear time (a counting sort, stable, so each bucket holds them in
 * triangle order) and each bucket, a vertex's few edges, sorted by hi: a
 * 4096 x 4096 cloth has 100M half-edges, whose qsort as 20-byte records
 * took half a minute of CPU and 4 GB of scratch. */
static int cloth_constraints(firn_pbd *S, int t0, int t1, const firn_pbd_material *m, int *ne,
                             int *nb, int count)
{
    const int nh = 3 * (t1 - t0);
    if (nh == 0)
        return 0;
    int vmin = S->tri[3 * t0], vmax = vmin;
    for (int k = 3 * t0; k < 3 * t1; k++)
        vmin = S->tri[k] < vmin ? S->tri[k] : vmin, vmax = S->tri[k] > vmax ? S->tri[k] : vmax;
    const int nv = vmax - vmin + 1;
    /* Bucket v holds the half-edges whose lo is vmin + v: first counts
     * them, then points at each bucket's start, then (after the placing)
     * at its end. */
    int *first = calloc((size_t)nv + 1, sizeof *first), *idx = malloc((size_t)nh * sizeof *idx);
    long long *key = NULL;
    int rc = -1, widest = 0;
    if (!first || !idx)
        goto done;
    for (int q = 0; q < nh; q++)
        first[half_edge_lo(S->tri, t0, q) - vmin + 1]++;
    for (int v = 0; v < nv; v++) {
        widest = first[v + 1] > widest ? first[v + 1] : widest;
        first[v + 1] += first[v];
    }
    for (int q = 0; q < nh; q++)
        idx[first[half_edge_lo(S->tri, t0, q) - vmin]++] = q;
    key = malloc((size_t)widest * sizeof *key);
    if (!key)
        goto done;
    for (int v = 0; v < nv; v++) {
        const int b0 = v > 0 ? first[v - 1] : 0, d = first[v] - b0;
        /* (hi, q): q orders the triangles. */
        for (int k = 0; k < d; k++) {
            int a, b, c;
            half_edge(S->tri, t0, idx[b0 + k], &a, &b, &c);
            key[k] = (long long)(a < b ? b : a) << 32 | idx[b0 + k];
        }
        if (d > 16) {
            qsort(key, (size_t)d, sizeof *key, cmp_ll);
        } else {
            for (int k = 1; k < d; k++) {
                const long long x = key[k];
                int j = k;
                for (; j > 0 && key[j - 1] > x; j--)
                    key[j] = key[j - 1];
                key[j] = x;
            }
        }
        for (int k = 0; k < d;) {
            int e = k + 1;
            while (e < d && key[e] >> 32 == key[k] >> 32)
                e++;
            int from, to, opp;
            half_edge(S->tri, t0, (int)(key[k] & 0xffffffff), &from, &to, &opp);
            const int lo = from < to ? from : to, hi = from < to ? to : from;
            if (!count) {
                const int j = *ne;
                S->stretch.v[2 * j] = lo;
                S->stretch.v[2 * j + 1] = hi;
                S->stretch.rest[j] =
                    firn_norm(firn_sub(vert(S->s.x, S->n, lo), vert(S->s.x, S->n, hi)));
                S->stretch.compliance[j] = m->stretch_compliance;
            }
            (*ne)++;
            /* Bending across an edge of exactly two triangles: (a, b, c)
             * runs a -> b in the first. */
            if (e - k == 2) {
                if (!count) {
                    int from2, to2, opp2;
                    half_edge(S->tri, t0, (int)(key[k + 1] & 0xffffffff), &from2, &to2, &opp2);
                    const int j = *nb;
                    int *q = S->bend.v + 4 * j;
                    q[0] = from, q[1] = to, q[2] = opp, q[3] = opp2;
                    firn_vec3 g[4];
                    float theta = 0.0f;
                    if (!firn_pbd_dihedral(vert(S->s.x, S->n, q[0]), vert(S->s.x, S->n, q[1]),
                                           vert(S->s.x, S->n, q[2]), vert(S->s.x, S->n, q[3]),
                                           &theta, g))
                        theta = 0.0f;
                    S->bend.rest[j] = theta;
                    S->bend.compliance[j] = m->bending_compliance;
                }
                (*nb)++;
            }
            k = e;
        }
    }
    rc = 0;
done:
    free(first);
    free(idx);
    free(key);
    return rc;
}

/* The kernel sum of a lattice of edges step[3] at a particle mass of its
 * cell's volume V times rho0, over rho0: V sum_k W(|k|), k the lattice
 * vectors within the support; and its distance from 1, rest density. */
static double liquid_sum(const double step[3], const firn_pbd_params *P)
{
    double sum = 0.0;
    for (int a = -3; a <= 3; a++)
        for (int b = -3; b <= 3; b++)
            for (int c = -3; c <= 3; c++) {
                const double x = a * step[0], y = b * step[1], z = c * step[2];
                sum += firn_pbf_w(P, (float)sqrt(x * x + y * y + z * z));
            }
    return step[0] * step[1] * step[2] * sum;
}

static double liquid_misfit(const double step[3], const void *arg)
{
    return fabs(liquid_sum(step, arg) - 1.0);
}

float firn_pbf_rest_spacing(const firn_pbd_params *P)
{
    float lo = 0.9f * P->psize, hi = P->psize;
    for (int k = 0; k < 40; k++) {
        const float s = 0.5f * (lo + hi);
        const double cube[3] = {s, s, s};
        if (liquid_sum(cube, P) < 1.0)
            lo = s;
        else
            hi = s;
    }
    return 0.5f * (lo + hi);
}

/* The particles and triangles of PBD body b: a cloth's surface, or a
 * particle body's lattice (into *pts, count *npts; its shape's exact
 * volume into *volume) filling its shape (firn_fill_fit): cells of edge
 * about p, a liquid's chosen so that the lattice starts at rest density
 * (about 0.95 p). */
static int body_geometry(const firn_scene_def *def, const firn_pbd_params *P, int b, surface *m,
                         float **pts, long long *npts, double *volume, firn_error *err)
{
    const firn_body_def *bd = &def->bodies[b];
    memset(m, 0, sizeof *m);
    *pts = NULL;
    *npts = 0;
    if (def->materials[bd->material].model == FIRN_MODEL_PBD_CLOTH) {
        if (bd->shape.type == FIRN_SHAPE_CLOTH_RECT ? rect_surface(&bd->shape, m)
                                                    : mesh_surface(&bd->shape, m, err)) {
            if (bd->shape.type == FIRN_SHAPE_CLOTH_RECT)
                firn_set_error(err, FIRN_E_NOMEM, "out of host memory for a cloth");
            return -1;
        }
        return 0;
    }
    firn_prepared_shape shape;
    firn_error e;
    if (firn_shape_prepare(&bd->shape, &shape, &e)) {
        firn_set_error(err, e.code, "%s%sbodies[%d].shape.%s", def->source,
                       def->source[0] ? ": " : "", b, e.msg);
        return -1;
    }
    const float p = def->pbd.particle_size;
    firn_fill f;
    const int liquid = def->materials[bd->material].model == FIRN_MODEL_PBD_LIQUID;
    const float s = liquid ? firn_pbf_rest_spacing(P) : p;
    firn_fill_fit(&shape, s, liquid ? liquid_misfit : NULL, P, NULL, NULL, &f);
    const long long c = f.count;
    *volume = firn_shape_volume(&shape);
    *pts = malloc(3 * (size_t)(c + 1) * sizeof(float));
    if (*pts)
        firn_fill_points(&shape, &f, *pts, (int)c, 0);
    firn_shape_release(&shape);
    if (!*pts) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for %lld PBD particles", c);
        return -1;
    }
    if (c == 0) {
        firn_set_error(
            err, FIRN_E_SCENE,
            "%s%sbodies[%d]: the shape holds no PBD particle at pbd.particle_size = %g m",
            def->source, def->source[0] ? ": " : "", b, p);
        return -1;
    }
    *npts = c;
    return 0;
}

static int alloc_particles(firn_pbd *S, int n)
{
    const size_t nn = (size_t)n + 1, f = sizeof(float);
    S->s.x = calloc(3 * nn, f);
    S->s.v = calloc(3 * nn, f);
    S->s.x0 = calloc(3 * nn, f);
    S->s.mass = calloc(nn, f);
    S->s.w = calloc(nn, f);
    S->s.dx = calloc(3 * nn, f);
    S->s.lambda = calloc(nn, f);
    S->s.rho = calloc(nn, f);
    S->s.mat = calloc(nn, 1);
    S->n = S->s.n = n;
    return S->s.x && S->s.v && S->s.x0 && S->s.mass && S->s.w && S->s.dx && S->s.lambda &&
                   S->s.rho && S->s.mat
               ? 0
               : -1;
}

/* The CPU neighbour grid over the PBD box (cells of edge P.nb.h). */
static int alloc_grid(firn_pbd *S)
{
    firn_nbr_grid *G = &S->G;
    const size_t nn = (size_t)S->n + 1;
    G->cells = S->P.nb.res[0] * S->P.nb.res[1] * S->P.nb.res[2];
    const size_t nc = (size_t)G->cells + 1;
    G->key = malloc(nn * sizeof(unsigned));
    G->sorted = malloc(nn * sizeof(int));
    G->start = malloc(nc * sizeof(int));
    G->end = malloc(nc * sizeof(int));
    S->cell_count = malloc(nc * sizeof(int));
    G->nbr = G->nbr_count = NULL;
    return G->key && G->sorted && G->start && G->end && S->cell_count ? 0 : -1;
}

/* The sum of w over the cubic lattice of spacing p about a particle,
 * itself included (the lattice sites within the support). */
static double lattice_sum(const firn_pbd_params *P, float p)
{
    double sum = 0.0;
    const int R = (int)ceilf(P->nb.h / p);
    for (int a = -R; a <= R; a++)
        for (int b = -R; b <= R; b++)
            for (int c = -R; c <= R; c++)
                sum += firn_pbf_w(P, p * sqrtf((float)(a * a + b * b + c * c)));
    return sum;
}

void firn_pbd_params_kernels(firn_pbd_params *P)
{
    /* Support h = 2.5 p: 80 lattice neighbours, and a density estimate
     * that tells packings apart (body- and face-centred packings of the
     * lattice's number density read within 0.3 % of it; at Genesis's
     * 1.25 p, which holds the 6 nearest only, they read 13 and 15 % light,
     * so the liquid packed denser unseen: docs/PHYSICS.md s6.8). */
    const float h = 2.5f * P->psize, p = P->psize;
    P->nb = firn_nbr_space_of(P->lower, P->upper, h);
    /* poly6 scaled so that the lattice sums to 1 / p^3 (the continuum
     * normalisation's lattice sum is 0.9954 / p^3 at h = 2.5 p): a particle
     * of mass rho0 p^3 then reads rho0 in the lattice. The spiky gradient
     * takes the same factor, as the gradient of the scaled density. */
    P->kw = 315.0f / (64.0f * (float)M_PI * h * h * h);
    P->kg = 45.0f / ((float)M_PI * h * h * h * h);
    const double scale = 1.0 / (lattice_sum(P, p) * (double)p * p * p);
    P->kw = (float)(P->kw * scale);
    P->kg = (float)(P->kg * scale);
    /* eps: 1 % of the denominator of a particle with a full lattice
     * neighbourhood at rest (where sum_j g_ij = 0), so that lambda stays
     * bounded for a particle with few neighbours (Macklin and Mueller's
     * constraint force mixing) and barely softens a full one. */
    const float vol = p * p * p;
    const int R = (int)ceilf(h / p);
    double sq = 0.0;
    for (int a = -R; a <= R; a++)
        for (int b = -R; b <= R; b++)
            for (int c = -R; c <= R; c++) {
                const firn_vec3 d = firn_v3((float)a * p, (float)b * p, (float)c * p);
                const firn_vec3 g = firn_scale(firn_pbf_grad_w(P, d, firn_norm(d)), vol);
                sq += firn_dot(g, g);
            }
    P->pbf_eps = (float)(0.01 * sq);
}

/* Pins of cloth body b (particles [first, first + nv)): by index, and the
 * vertices inside the pin box. Returns how many vertices the box holds. */
static int pin(firn_pbd *S, const firn_body_def *bd, int first, int nv)
{
    int boxed = 0;
    for (int k = 0; k < bd->n_pins; k++)
        if (bd->pins[k] >= 0 && bd->pins[k] < nv)
            S->s.w[first + bd->pins[k]] = 0.0f;
    for (int i = first; bd->pin_box && i < first + nv; i++) {
        int in = 1;
        for (int a = 0; a < 3; a++) {
            const float x = S->s.x[a * S->n + i];
            in &= x >= bd->pin_lower[a] && x <= bd->pin_upper[a];
        }
        if (in)
            S->s.w[i] = 0.0f;
        boxed += in;
    }
    return boxed;
}

static void materials_build(firn_pbd *S, const firn_scene_def *def)
{
    for (int k = 0; k < def->n_materials; k++) {
        const firn_material_def *d = &def->materials[k];
        firn_pbd_material *m = &S->mats[k];
        m->stretch_compliance = d->stretch_compliance;
        m->bending_compliance = d->bending_compliance;
        m->air_resistance = d->air_resistance;
        m->mu_s = d->static_friction;
        m->mu_k = d->kinetic_friction;
        m->kind = d->model == FIRN_MODEL_PBD_CLOTH    ? FIRN_PBD_CLOTH
                  : d->model == FIRN_MODEL_PBD_LIQUID ? FIRN_PBD_LIQUID
                                                      : FIRN_PBD_PARTICLE;
        m->rho0 = d->density;
        m->density_relaxation = d->density_relaxation;
        m->viscosity_relaxation = d->viscosity_relaxation;
    }
}

/* Counts, then writes, every PBD body's particles, triangles and
 * constraints. */
static int build_bodies(firn_pbd *S, const firn_scene_def *def, firn_error *err)
{
    surface *surf = calloc((size_t)FIRN_MAX_BODIES, sizeof *surf);
    float **pts = calloc((size_t)FIRN_MAX_BODIES, sizeof *pts);
    long long *npts = calloc((size_t)FIRN_MAX_BODIES, sizeof *npts), total = 0, tris = 0;
    double *volume = calloc((size_t)FIRN_MAX_BODIES, sizeof *volume);
    int rc = -1, ne = 0, nb = 0;
    if (!surf || !pts || !npts || !volume) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory building the PBD bodies");
        goto done;
    }
    for (int b = 0; b < def->n_bodies; b++) {
        if (def->bodies[b].solver != FIRN_SOLVER_KIND_PBD)
            continue;
        if (body_geometry(def, &S->P, b, &surf[b], &pts[b], &npts[b], &volume[b], err))
            goto done;
        total += surf[b].nv + npts[b];
        tris += surf[b].nt;
    }
    if (total > FIRN_MAX_PARTICLES || tris > FIRN_MAX_PARTICLES) {
        firn_set_error(err, FIRN_E_SCENE, "%s%sthe PBD bodies hold %lld particles; at most %d",
                       def->source, def->source[0] ? ": " : "", total, FIRN_MAX_PARTICLES);
        goto done;
    }
    rc = 0;
    if (total == 0)
        goto done;
    rc = -1;
    S->triangles = (int)tris;
    S->tri = malloc(3 * ((size_t)tris + 1) * sizeof(int));
    if (!S->tri || alloc_particles(S, (int)total)) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for %lld PBD particles", total);
        goto done;
    }
    int q = 0, t = 0;
    for (int b = 0; b < def->n_bodies; b++) {
        const firn_body_def *bd = &def->bodies[b];
        S->body_first[b] = q;
        if (bd->solver != FIRN_SOLVER_KIND_PBD)
            continue;
        const firn_material_def *md = &def->materials[bd->material];
        const int nv = surf[b].nv + (int)npts[b];
        double area = 0.0;
        for (int k = 0; k < surf[b].nt; k++)
            area += tri_area(surf[b].v, surf[b].tri + 3 * k);
        /* A cloth's mass spread evenly over its vertices (Genesis: area
         * rho / N); a particle body's, liquid or not, its shape's exact
         * volume times rho over its particles, so that it holds its mass
         * (Genesis gives liquid and free particles the mass rho: s6.1). */
        const float mass = surf[b].nv > 0 ? (float)(area * md->density / surf[b].nv)
                                          : (float)(volume[b] * md->density / (double)nv);
        for (int i = 0; i < nv; i++) {
            for (int a = 0; a < 3; a++) {
                S->s.x[a * S->n + q + i] =
                    surf[b].nv > 0 ? surf[b].v[3 * i + a] : pts[b][a * (int)npts[b] + i];
                S->s.v[a * S->n + q + i] = bd->velocity[a];
            }
            S->s.mass[q + i] = mass;
            S->s.w[q + i] = 1.0f / mass;
            S->s.mat[q + i] = (uint8_t)bd->material;
        }
        for (int k = 0; k < 3 * surf[b].nt; k++)
            S->tri[3 * t + k] = q + surf[b].tri[k];
        if (surf[b].nv > 0 &&
            cloth_constraints(S, t, t + surf[b].nt, &S->mats[bd->material], &ne, &nb, 1)) {
            firn_set_error(err, FIRN_E_NOMEM, "out of host memory for a cloth's edges");
            goto done;
        }
        t += surf[b].nt;
        if (surf[b].nv > 0 && pin(S, bd, q, nv) == 0 && bd->pin_box) {
            float lo[3], hi[3];
            for (int a = 0; a < 3; a++) {
                lo[a] = INFINITY, hi[a] = -INFINITY;
                for (int i = q; i < q + nv; i++)
                    lo[a] = fminf(lo[a], S->s.x[a * S->n + i]),
                    hi[a] = fmaxf(hi[a], S->s.x[a * S->n + i]);
            }
            firn_set_error(err, FIRN_E_SCENE,
                           "%s%sbodies[%d].pin.box: [%g, %g] x [%g, %g] x [%g, %g] holds none of "
                           "the cloth's vertices (they span [%g, %g] x [%g, %g] x [%g, %g]): a "
                           "box that pins nothing is a mistake",
                           def->source, def->source[0] ? ": " : "", b, bd->pin_lower[0],
                           bd->pin_upper[0], bd->pin_lower[1], bd->pin_upper[1], bd->pin_lower[2],
                           bd->pin_upper[2], lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]);
            goto done;
        }
        q += nv;
    }
    S->body_first[def->n_bodies] = q;
    for (int b = def->n_bodies; b < FIRN_MAX_BODIES; b++)
        S->body_first[b + 1] = q;
    if (constraints_alloc(&S->stretch, ne, 2) || constraints_alloc(&S->bend, nb, 4)) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for %d PBD constraints", ne + nb);
        goto done;
    }
    ne = nb = t = 0;
    for (int b = 0; b < def->n_bodies; b++) {
        const firn_body_def *bd = &def->bodies[b];
        if (bd->solver != FIRN_SOLVER_KIND_PBD || surf[b].nv == 0)
            continue;
        if (cloth_constraints(S, t, t + surf[b].nt, &S->mats[bd->material], &ne, &nb, 0)) {
            firn_set_error(err, FIRN_E_NOMEM, "out of host memory for a cloth's edges");
            goto done;
        }
        t += surf[b].nt;
    }
    /* A pinned vertex starts and stays at rest. */
    for (int i = 0; i < S->n; i++) {
        S->pinned += S->s.w[i] == 0.0f;
        for (int a = 0; S->s.w[i] == 0.0f && a < 3; a++)
            S->s.v[a * S->n + i] = 0.0f;
    }
    for (int a = 0; a < 3; a++)
        memcpy(S->s.x0 + (size_t)a * S->n, S->s.x + (size_t)a * S->n, (size_t)S->n * sizeof(float));
    rc = firn_pbd_colour(&S->stretch, S->n, err) || firn_pbd_colour(&S->bend, S->n, err) ? -1 : 0;
done:
    for (int b = 0; surf && b < FIRN_MAX_BODIES; b++) {
        free(surf[b].v);
        free(surf[b].tri);
        free(pts ? pts[b] : NULL);
    }
    free(surf);
    free(pts);
    free(npts);
    free(volume);
    return rc;
}

int firn_pbd_init(firn_pbd *S, const firn_scene_def *def, firn_error *err)
{
    memset(S, 0, sizeof *S);
    S->P.psize = def->pbd.particle_size;
    firn_pbd_box(def, S->P.lower, S->P.upper);
    for (int a = 0; a < 3; a++)
        S->P.gravity[a] = def->gravity[a];
    S->stretch_iterations = def->pbd.stretch_iterations;
    S->bending_iterations = def->pbd.bending_iterations;
    S->density_iterations = def->pbd.density_iterations;
    S->viscosity_iterations = def->pbd.viscosity_iterations;
    firn_pbd_params_kernels(&S->P);
    materials_build(S, def);
    if (!firn_pbd_in_scene(def))
        return 0;
    if (build_bodies(S, def, err)) {
        firn_pbd_free(S);
        return -1;
    }
    for (int i = 0; i < S->n; i++)
        S->particle_passes |= S->mats[S->s.mat[i]].kind != FIRN_PBD_CLOTH;
    if (S->particle_passes && alloc_grid(S)) {
        firn_set_error(err, FIRN_E_NOMEM,
                       "out of host memory for the PBD neighbour grid (%d cells)", S->G.cells);
        firn_pbd_free(S);
        return -1;
    }
    return 0;
}

void firn_pbd_free(firn_pbd *S)
{
    free(S->s.x), free(S->s.v), free(S->s.x0), free(S->s.mass), free(S->s.w), free(S->s.mat);
    free(S->s.dx), free(S->s.lambda), free(S->s.rho);
    memset(&S->s, 0, sizeof S->s);
    free(S->G.key), free(S->G.sorted), free(S->G.start), free(S->G.end), free(S->cell_count);
    memset(&S->G, 0, sizeof S->G);
    S->cell_count = NULL;
    constraints_free(&S->stretch);
    constraints_free(&S->bend);
    free(S->tri);
    S->tri = NULL;
    S->n = S->triangles = 0;
}

/* ---- reads ---------------------------------------------------------------- */

float firn_pbf_reach2(const firn_pbd_params *P)
{
    const float p = P->psize, vol = p * p * p;
    const int R = (int)ceilf(P->nb.h / p);
    double S = 0.0, D = P->pbf_eps;
    for (int a = -R; a <= R; a++)
        for (int b = -R; b <= R; b++)
            for (int c = -R; c <= R; c++) {
                /* j at (a, b, c) p: d = x_i - x_j */
                const firn_vec3 d = firn_v3(-(float)a * p, -(float)b * p, -(float)c * p);
                const firn_vec3 g = firn_scale(firn_pbf_grad_w(P, d, firn_norm(d)), vol);
                S += (double)c * p * g.v[2];
                D += firn_dot(g, g);
            }
    return (float)(S / D);
}

float firn_pbd_cfl_dt(const firn_pbd *S, float cfl, float v_gravity, float *v_max)
{
    float v2 = 0.0f;
    for (int i = 0; i < S->n; i++)
        if (S->s.w[i] > 0.0f) {
            firn_vec3 v = firn_load3(S->s.v, S->n, i);
            v2 = firn_maxf(v2, firn_dot(v, v));
        }
    *v_max = sqrtf(v2);
    const float speed = sqrtf(v2) + v_gravity;
    float dt = S->n > 0 && S->pinned < S->n && speed > 0.0f ? cfl * S->P.psize / speed : INFINITY;
    /* The liquid's hydrostatic bound (docs/PHYSICS.md s6.7): a resting
     * column of depth H holds when the density iterations lift each
     * particle by the g dt^2 gravity adds per substep, which takes a
     * compression growing with depth to C = g dt^2 H / (K omega L^2) at the
     * bottom; C <= FIRN_PBF_COMPRESSION gives the step. */
    const float g = firn_norm(firn_v3(S->P.gravity[0], S->P.gravity[1], S->P.gravity[2]));
    float omega = INFINITY, lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < S->n; i++) {
        const firn_pbd_material *m = &S->mats[S->s.mat[i]];
        if (m->kind != FIRN_PBD_LIQUID || !(S->s.w[i] > 0.0f))
            continue;
        omega = firn_minf(omega, m->density_relaxation);
        const float y = firn_dot(firn_load3(S->s.x, S->n, i),
                                 firn_v3(S->P.gravity[0], S->P.gravity[1], S->P.gravity[2])) /
                        g;
        lo = firn_minf(lo, y), hi = firn_maxf(hi, y);
    }
    if (g > 0.0f && hi >= lo && S->density_iterations > 0) {
        const float H = hi - lo + S->P.psize;
        dt = firn_minf(dt, sqrtf(FIRN_PBF_COMPRESSION * (float)S->density_iterations * omega *
                                 firn_pbf_reach2(&S->P) / (g * H)));
    }
    return dt;
}

/* As allocated by alloc_particles, constraints_alloc and build_bodies. */
static size_t constraint_host_bytes(const firn_pbd_constraints *C)
{
    const size_t m = (size_t)C->n + 1;
    return m * ((size_t)C->k + 4) * sizeof(int) + (FIRN_PBD_MAX_COLOURS + 1) * sizeof(int);
}

size_t firn_pbd_host_bytes(const firn_pbd *S)
{
    if (S->n == 0)
        return 0;
    const size_t nn = (size_t)S->n + 1;
    const size_t grid =
        S->G.cells > 0 ? 2 * nn * sizeof(int) + 3 * ((size_t)S->G.cells + 1) * sizeof(int) : 0;
    return nn * (16 * sizeof(float) + 1) + constraint_host_bytes(&S->stretch) +
           constraint_host_bytes(&S->bend) + 3 * ((size_t)S->triangles + 1) * sizeof(int) + grid;
}

void firn_pbd_rect_estimate(int n0, int n1, firn_pbd_rect_size *out)
{
    /* rect_surface: one diagonal per quad; an edge is inner (two
     * triangles, one bending constraint) unless it lies on the border. */
    const long long a = n0, b = n1, quads = (a - 1) * (b - 1);
    out->vertices = a * b;
    out->triangles = 2 * quads;
    out->edges = (a - 1) * b + a * (b - 1) + quads;
    out->bends = out->edges - 2 * (a - 1) - 2 * (b - 1);
    /* As firn_pbd_host_bytes and constraint_host_bytes count them. */
    const double colours = (FIRN_PBD_MAX_COLOURS + 1) * sizeof(int);
    out->host_bytes = (double)(out->vertices + 1) * (16 * sizeof(float) + 1) +
                      (double)(out->edges + 1) * (2 + 4) * sizeof(int) + colours +
                      (double)(out->bends + 1) * (4 + 4) * sizeof(int) + colours +
                      3.0 * (double)(out->triangles + 1) * sizeof(int);
}

size_t firn_pbd_device_bytes(int n, int edges, int bends, int cells)
{
    if (n == 0)
        return 0;
    const size_t nn = (size_t)n, ne = (size_t)edges, nb = (size_t)bends, nc = (size_t)cells;
    /* particles: x, v, x0 (3n each), mass, w, dx (3n), lambda, rho (16 floats), then mat */
    size_t bytes = firn_align256(16 * nn * sizeof(float)) + firn_align256(nn);
    /* the neighbour grid (kernels/neighbour.cu): key, sorted, start, end, key_sorted, ids,
     * count */
    const size_t g[7] = {nn * 4, nn * 4, nc * 4, nc * 4, nn * 4, nn * 4, nc * 4};
    for (int k = 0; cells > 0 && k < 7; k++)
        bytes += firn_align256(g[k]);
    /* per kind of constraint: vertices (k each), rest, compliance, lambda, order */
    const size_t c[10] = {2 * ne * 4, ne * 4, ne * 4, ne * 4, ne * 4,
                          4 * nb * 4, nb * 4, nb * 4, nb * 4, nb * 4};
    for (int k = 0; k < 10; k++)
        bytes += firn_align256(c[k]);
    return bytes;
}

void firn_pbd_stats(const firn_pbd *S, firn_pbd_frame_stats *st)
{
    memset(st, 0, sizeof *st);
    const int n = S->n;
    st->particles = n;
    st->pinned = S->pinned;
    st->edges = S->stretch.n;
    st->bends = S->bend.n;
    for (int a = 0; a < 3; a++) {
        st->bbox_lower[a] = n ? INFINITY : 0.0f;
        st->bbox_upper[a] = n ? -INFINITY : 0.0f;
    }
    for (int i = 0; i < n; i++) {
        const double m = S->s.mass[i];
        double v2 = 0.0;
        for (int a = 0; a < 3; a++) {
            const double x = S->s.x[a * n + i], v = S->s.v[a * n + i];
            st->momentum[a] += m * v;
            st->center_of_mass[a] += m * x;
            v2 += v * v;
            st->bbox_lower[a] = firn_minf(st->bbox_lower[a], (float)x);
            st->bbox_upper[a] = firn_maxf(st->bbox_upper[a], (float)x);
        }
        st->kinetic_energy += 0.5 * m * v2;
        st->mass += m;
    }
    for (int a = 0; n > 0 && a < 3; a++)
        st->center_of_mass[a] /= st->mass;
    for (int j = 0; j < S->stretch.n; j++) {
        const int a = S->stretch.v[2 * j], b = S->stretch.v[2 * j + 1];
        const double len = firn_norm(firn_sub(firn_load3(S->s.x, n, a), firn_load3(S->s.x, n, b)));
        st->max_strain = fmax(st->max_strain, fabs(len / S->stretch.rest[j] - 1.0));
    }
    for (int i = 0; i < n; i++) {
        const firn_pbd_material *m = &S->mats[S->s.mat[i]];
        if (m->kind != FIRN_PBD_LIQUID)
            continue;
        st->liquid++;
        st->density_error += fmax(S->s.rho[i] / m->rho0 - 1.0, 0.0);
    }
    if (st->liquid > 0)
        st->density_error /= (double)st->liquid;
}
