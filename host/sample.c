/* sample.c - initial particles from the scene's bodies.
 *
 * Each body is filled by stratified jittered sampling: a lattice of spacing
 * s = dx / cbrt(ppc) covers the shape's bounding box, and each lattice cell
 * holding a sample gets one particle at a random point inside it. The
 * particles of a body share its shape's exact volume (about s^3 each, the
 * volume of a lattice cell). The jitter of cell
 * (i,j,k) is a hash of (seed, i, j, k), so sampling is reproducible and
 * independent of traversal order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "sample.h"

static uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static float unit_float(uint64_t h) { return (float)(h >> 40) * (1.0f / 16777216.0f); }

int firn_shape_prepare(const firn_shape_def *def, firn_prepared_shape *s, firn_error *err)
{
    memset(s, 0, sizeof *s);
    s->def = *def;
    if (def->type != FIRN_SHAPE_MESH)
        return 0;
    if (!memchr(def->file, '\0', sizeof def->file)) {
        firn_set_error(err, FIRN_E_SCENE, "file: not NUL-terminated");
        return -1;
    }
    if (!(def->scale > 0.0f) || !isfinite(def->scale)) {
        firn_set_error(err, FIRN_E_SCENE, "scale = %g: must be > 0", (double)def->scale);
        return -1;
    }
    firn_error e;
    if (firn_mesh_get(def->file, def->scale, 0, &s->mesh, &e) ||
        firn_mesh_bvh_create(s->mesh, &s->bvh, &e)) {
        firn_set_error(err, e.code, "file: %s", e.msg);
        return -1;
    }
    for (int a = 0; a < 3; a++) {
        float lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < s->mesh->nv; i++) {
            lo = fminf(lo, s->mesh->v[3 * i + a]);
            hi = fmaxf(hi, s->mesh->v[3 * i + a]);
        }
        s->lo[a] = def->center[a] + lo;
        s->hi[a] = def->center[a] + hi;
    }
    return 0;
}

void firn_shape_release(firn_prepared_shape *s)
{
    firn_mesh_bvh_free(s->bvh);
    s->bvh = NULL;
    s->mesh = NULL;
}

void firn_shape_bounds(const firn_prepared_shape *ps, float lo[3], float hi[3])
{
    const firn_shape_def *s = &ps->def;
    for (int a = 0; a < 3; a++) {
        float half;
        switch (s->type) {
        case FIRN_SHAPE_MESH:
            lo[a] = ps->lo[a];
            hi[a] = ps->hi[a];
            continue;
        case FIRN_SHAPE_SPHERE:
            half = s->radius;
            break;
        case FIRN_SHAPE_CYLINDER:
            half = a == s->axis ? 0.5f * s->height : s->radius;
            break;
        default:
            half = 0.5f * s->size[a];
            break;
        }
        lo[a] = s->center[a] - half;
        hi[a] = s->center[a] + half;
    }
}

int firn_shape_contains(const firn_prepared_shape *ps, const float x[3])
{
    const firn_shape_def *s = &ps->def;
    float d[3];
    for (int a = 0; a < 3; a++)
        d[a] = x[a] - s->center[a];
    switch (s->type) {
    case FIRN_SHAPE_SPHERE:
        return d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= s->radius * s->radius;
    case FIRN_SHAPE_CYLINDER: {
        float r2 = 0.0f;
        for (int a = 0; a < 3; a++)
            if (a != s->axis)
                r2 += d[a] * d[a];
        return r2 <= s->radius * s->radius && 2.0f * fabsf(d[s->axis]) <= s->height;
    }
    case FIRN_SHAPE_MESH: {
        /* The exact distance's sign (pseudo-normals, host/mesh.c): robust
         * where a ray-parity test would hit an edge or a vertex; the
         * bounds check first spares the hierarchy most outside points. */
        double p[3];
        for (int a = 0; a < 3; a++) {
            if (x[a] < ps->lo[a] || x[a] > ps->hi[a])
                return 0;
            p[a] = (double)x[a] - (double)s->center[a];
        }
        return firn_mesh_bvh_distance(ps->bvh, p, NULL) <= 0.0;
    }
    default:
        for (int a = 0; a < 3; a++)
            if (2.0f * fabsf(d[a]) > s->size[a])
                return 0;
        return 1;
    }
}

double firn_shape_volume(const firn_prepared_shape *ps)
{
    const firn_shape_def *s = &ps->def;
    const double r = s->radius;
    switch (s->type) {
    case FIRN_SHAPE_BOX:
        return (double)s->size[0] * s->size[1] * s->size[2];
    case FIRN_SHAPE_SPHERE:
        return 4.0 / 3.0 * M_PI * r * r * r;
    case FIRN_SHAPE_CYLINDER:
        return M_PI * r * r * s->height;
    case FIRN_SHAPE_MESH:
        return ps->mesh ? ps->mesh->volume : 0.0;
    default:
        return 0.0;
    }
}

void firn_fill_regular(const firn_prepared_shape *s, float spacing, firn_fill *f)
{
    float lo[3], hi[3];
    firn_shape_bounds(s, lo, hi);
    for (int a = 0; a < 3; a++) {
        f->n[a] = (int)floorf((hi[a] - lo[a]) / spacing + 1e-4f);
        if (f->n[a] < 1)
            f->n[a] = 1;
        f->step[a] = spacing;
        f->first[a] = 0.5f * (lo[a] + hi[a]) - 0.5f * (float)(f->n[a] - 1) * spacing;
    }
    f->count = firn_fill_points(s, f, NULL, 0, 0);
}

/* Points along an axis of extent L for a spacing near s: the nearest whole
 * number of cells, at least 1. */
static int cells_near(double L, double s)
{
    const long c = lround(L / s);
    return c < 1 ? 1 : (int)c;
}

/* n[3] cells over extents L[3] whose edges minimise `misfit`, each count
 * the nearest whole number of cells of edge s or one more or less (at
 * least 1); among equals, the most nearly cubic. */
static void fit_cells(const double L[3], double s, firn_fill_misfit misfit, const void *arg,
                      int n[3])
{
    int lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
        n[a] = cells_near(L[a], s);
        lo[a] = n[a] > 1 ? n[a] - 1 : 1, hi[a] = n[a] + 1;
    }
    double best = INFINITY, best_aniso = INFINITY;
    for (int i = lo[0]; i <= hi[0]; i++)
        for (int j = lo[1]; j <= hi[1]; j++)
            for (int k = lo[2]; k <= hi[2]; k++) {
                const int m[3] = {i, j, k};
                double step[3], aniso = 0.0;
                for (int a = 0; a < 3; a++) {
                    step[a] = L[a] / m[a];
                    aniso = fmax(aniso, fabs(step[a] / s - 1.0));
                }
                const double miss = misfit(step, arg);
                if (miss < best - 1e-9 || (miss <= best + 1e-9 && aniso < best_aniso)) {
                    best = miss, best_aniso = aniso;
                    memcpy(n, m, sizeof m);
                }
            }
}

void firn_fill_fit(const firn_prepared_shape *s, float spacing, firn_fill_misfit misfit,
                   const void *arg, const float region_lo[3], const float region_hi[3],
                   firn_fill *f)
{
    float lo[3], hi[3];
    double L[3];
    firn_shape_bounds(s, lo, hi);
    for (int a = 0; region_lo && a < 3; a++) {
        lo[a] = fmaxf(lo[a], region_lo[a]);
        hi[a] = fminf(hi[a], region_hi[a]);
    }
    for (int a = 0; a < 3; a++) {
        L[a] = (double)hi[a] - lo[a];
        f->n[a] = cells_near(L[a], spacing);
    }
    if (misfit)
        fit_cells(L, spacing, misfit, arg, f->n);
    double c = 1.0;
    for (int a = 0; a < 3; a++) {
        f->step[a] = (float)(L[a] / f->n[a]);
        f->first[a] = lo[a] + 0.5f * f->step[a];
        c *= L[a] / f->n[a];
    }
    f->count = firn_fill_points(s, f, NULL, 0, 0);
    if (s->def.type == FIRN_SHAPE_BOX)
        return;
    /* Shift k by the R3 sequence (Roberts 2018: fractional parts of
     * k / phi3^(a+1), phi3 the plastic number), recentred on 0, so shift 0
     * is the centred lattice. */
    const double g[3] = {0.8191725133961645, 0.6710436067037893, 0.5497004779019703};
    double volume = firn_shape_volume(s);
    if (region_lo) {
        float blo[3], bhi[3];
        firn_shape_bounds(s, blo, bhi);
        for (int a = 0; a < 3; a++)
            volume *= L[a] / ((double)bhi[a] - blo[a]);
    }
    const double target = volume / c;
    firn_fill best = *f;
    for (int k = 1; k < FIRN_FILL_SHIFTS && fabs((double)best.count - target) > 1e-4 * target;
         k++) {
        firn_fill t = *f;
        for (int a = 0; a < 3; a++) {
            const double u = 0.5 + k * g[a];
            t.first[a] = lo[a] + (float)(u - floor(u)) * f->step[a];
        }
        t.count = firn_fill_points(s, &t, NULL, 0, 0);
        if (fabs((double)t.count - target) < fabs((double)best.count - target))
            best = t;
    }
    *f = best;
}

long long firn_fill_points(const firn_prepared_shape *s, const firn_fill *f, float *x, int n,
                           long long q0)
{
    if (!x) {
        long long count = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : count)
        for (int i = 0; i < f->n[0]; i++)
            for (int j = 0; j < f->n[1]; j++)
                for (int k = 0; k < f->n[2]; k++) {
                    const float y[3] = {f->first[0] + (float)i * f->step[0],
                                        f->first[1] + (float)j * f->step[1],
                                        f->first[2] + (float)k * f->step[2]};
                    count += firn_shape_contains(s, y);
                }
        return count;
    }
    long long q = q0;
    for (int i = 0; i < f->n[0]; i++)
        for (int j = 0; j < f->n[1]; j++)
            for (int k = 0; k < f->n[2]; k++) {
                const float y[3] = {f->first[0] + (float)i * f->step[0],
                                    f->first[1] + (float)j * f->step[1],
                                    f->first[2] + (float)k * f->step[2]};
                if (!firn_shape_contains(s, y))
                    continue;
                for (int a = 0; a < 3; a++)
                    x[a * n + q] = y[a];
                q++;
            }
    return q - q0;
}

/* The lattice of one body: spacing s, corner lo, cells[3] cells, and the
 * volume vol each of its particles carries. */
typedef struct {
    const firn_body_def *b;
    const firn_prepared_shape *shape;
    uint64_t seed;
    float s, lo[3], vol;
    int cells[3];
} lattice;

static lattice body_lattice(const firn_body_def *b, const firn_prepared_shape *shape, int index,
                            float dx)
{
    lattice L;
    L.b = b;
    L.shape = shape;
    L.seed = b->seed ? b->seed : (uint64_t)index + 1;
    L.s = dx / cbrtf(b->particles_per_cell);
    L.vol = L.s * L.s * L.s;
    float hi[3];
    firn_shape_bounds(shape, L.lo, hi);
    for (int a = 0; a < 3; a++)
        L.cells[a] = (int)ceilf((hi[a] - L.lo[a]) / L.s);
    return L;
}

/* Visits the samples of the lattice slab i (all j, k) in order; with
 * p == NULL only counts them, else writes them from particle q0 on. */
static long long sample_slab(const lattice *L, int i, firn_particles *p, int q0, int mat_index,
                             float jp0)
{
    const firn_body_def *b = L->b;
    const float s = L->s;
    long long count = 0;
    for (int j = 0; j < L->cells[1]; j++)
        for (int k = 0; k < L->cells[2]; k++) {
            uint64_t h = splitmix64(
                L->seed ^ splitmix64(((uint64_t)i << 42) ^ ((uint64_t)j << 21) ^ (uint64_t)k));
            float x[3] = {L->lo[0] + ((float)i + unit_float(h)) * s,
                          L->lo[1] + ((float)j + unit_float(splitmix64(h))) * s,
                          L->lo[2] + ((float)k + unit_float(splitmix64(h + 1))) * s};
            if (!firn_shape_contains(L->shape, x))
                continue;
            if (p) {
                int n = p->n, q = q0 + (int)count;
                for (int a = 0; a < 3; a++) {
                    p->x[a * n + q] = x[a];
                    p->v[a * n + q] = b->velocity[a];
                }
                for (int c = 0; c < 9; c++) {
                    p->C[c * n + q] = 0.0f;
                    p->F[c * n + q] = (c % 4 == 0) ? 1.0f : 0.0f;
                }
                p->Jp[q] = jp0;
                p->damage[q] = 0.0f;
                p->vol[q] = L->vol;
                p->mat[q] = (uint8_t)mat_index;
            }
            count++;
        }
    return count;
}

/* Samples per slab of a body's lattice, counted in parallel; their sum is
 * returned, *slabs (cells[0] counts) is malloc'd, NULL when out of memory. */
static long long count_slabs(const lattice *L, long long **slabs)
{
    long long *c = malloc((size_t)(L->cells[0] > 0 ? L->cells[0] : 1) * sizeof(long long));
    *slabs = c;
    if (!c)
        return 0;
    long long total = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : total)
    for (int i = 0; i < L->cells[0]; i++) {
        c[i] = sample_slab(L, i, NULL, 0, 0, 0.0f);
        total += c[i];
    }
    return total;
}

int firn_particles_alloc(firn_particles *p, int n)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    size_t m = n > 0 ? (size_t)n : 1;
    p->x = malloc(3 * m * sizeof(float));
    p->v = malloc(3 * m * sizeof(float));
    p->C = malloc(9 * m * sizeof(float));
    p->F = malloc(9 * m * sizeof(float));
    p->Jp = malloc(m * sizeof(float));
    p->damage = malloc(m * sizeof(float));
    p->vol = malloc(m * sizeof(float));
    p->mat = malloc(m);
    if (!p->x || !p->v || !p->C || !p->F || !p->Jp || !p->damage || !p->vol || !p->mat) {
        firn_particles_free(p);
        return -1;
    }
    return 0;
}

int firn_particles_alloc_cpic(firn_particles *p, int slots)
{
    free(p->cpic);
    p->cpic = NULL;
    p->cpic_slots = slots;
    if (slots <= 0)
        return 0;
    p->cpic = calloc((size_t)slots * (p->n > 0 ? (size_t)p->n : 1), sizeof(uint32_t));
    if (!p->cpic) {
        p->cpic_slots = 0;
        return -1;
    }
    return 0;
}

void firn_particles_free(firn_particles *p)
{
    free(p->x);
    free(p->v);
    free(p->C);
    free(p->F);
    free(p->Jp);
    free(p->damage);
    free(p->vol);
    free(p->mat);
    free(p->cpic);
    memset(p, 0, sizeof *p);
}

int firn_sample_bodies(const firn_scene_def *def, const firn_material *mats, firn_particles *p,
                       firn_error *err)
{
    long long total = 0, counts[FIRN_MAX_BODIES];
    long long *slabs[FIRN_MAX_BODIES] = {0};
    lattice lat[FIRN_MAX_BODIES];
    int rc = -1;
    /* Calloc'd: a shape holds its definition (a path of FIRN_PATH_MAX). */
    firn_prepared_shape *shapes = calloc((size_t)FIRN_MAX_BODIES, sizeof *shapes);
    if (!shapes) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory sampling bodies");
        return -1;
    }
    for (int b = 0; b < def->n_bodies; b++) {
        if (def->bodies[b].solver != FIRN_SOLVER_KIND_MPM) { /* another solver samples it */
            memset(&lat[b], 0, sizeof lat[b]);
            counts[b] = 0;
            slabs[b] = malloc(1);
            if (!slabs[b]) {
                firn_set_error(err, FIRN_E_NOMEM, "out of host memory sampling bodies[%d]", b);
                goto done;
            }
            continue;
        }
        firn_error e;
        if (firn_shape_prepare(&def->bodies[b].shape, &shapes[b], &e)) {
            firn_set_error(err, e.code, "%s%sbodies[%d].shape.%s", def->source,
                           def->source[0] ? ": " : "", b, e.msg);
            goto done;
        }
        lat[b] = body_lattice(&def->bodies[b], &shapes[b], b, def->dx);
        counts[b] = count_slabs(&lat[b], &slabs[b]);
        if (!slabs[b]) {
            firn_set_error(err, FIRN_E_NOMEM, "out of host memory sampling bodies[%d]", b);
            goto done;
        }
        if (counts[b] == 0) {
            firn_set_error(err, FIRN_E_SCENE,
                           "%s%sbodies[%d]: the shape holds no particle at particles_per_cell = %g "
                           "and dx = %g",
                           def->source, def->source[0] ? ": " : "", b,
                           def->bodies[b].particles_per_cell, def->dx);
            goto done;
        }
        /* The samples are as many as the shape's volume in cells only on
         * average (a cell the surface cuts holds its sample with the
         * probability of the fraction inside): the body's exact volume
         * is shared out, so that it holds its mass. */
        lat[b].vol = (float)(firn_shape_volume(&shapes[b]) / (double)counts[b]);
        total += counts[b];
    }
    if (total > FIRN_MAX_PARTICLES) {
        firn_set_error(err, FIRN_E_SCENE,
                       "%s%sthe bodies hold %lld particles; at most %d are allowed (32-bit "
                       "indices); use a coarser dx or fewer particles_per_cell",
                       def->source, def->source[0] ? ": " : "", total, FIRN_MAX_PARTICLES);
        goto done;
    }
    if (firn_particles_alloc(p, (int)total)) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for %lld particles (%.1f MiB)", total,
                       (double)total * 109.0 / (1 << 20));
        goto done;
    }
    /* Each slab starts at the running sum of the slabs before it, so the
     * particles come out in the same order for any thread count. */
    long long offset = 0;
    for (int b = 0; b < def->n_bodies; b++) {
        const firn_body_def *body = &def->bodies[b];
        /* Sand's Jp is a volume correction (starts at 0); snow's is the
         * plastic volume ratio (starts at 1). */
        float jp0 = mats[body->material].model == FIRN_M_SAND ? 0.0f : 1.0f;
        long long *start = slabs[b];
        for (int i = 0; i < lat[b].cells[0]; i++) {
            long long c = start[i];
            start[i] = offset;
            offset += c;
        }
#pragma omp parallel for schedule(dynamic, 1)
        for (int i = 0; i < lat[b].cells[0]; i++)
            sample_slab(&lat[b], i, p, (int)start[i], body->material, jp0);
    }
    rc = 0;
done:
    for (int b = 0; b < def->n_bodies; b++) {
        free(slabs[b]);
        firn_shape_release(&shapes[b]);
    }
    free(shapes);
    return rc;
}

_Static_assert(FIRN_MAX_RIGIDS <= FIRN_CPIC_MAX,
               "FIRN_PARTICLE_ARRAYS must hold a CPIC word array per rigid body plus one");

/* Every per-particle array of p: its base and element size (n elements
 * each). Returns how many. */
static int particle_arrays(firn_particles *p, void **a, size_t *size)
{
    int k = 0;
    for (int c = 0; c < 3; c++) {
        a[k] = p->x + (size_t)c * p->n, size[k++] = sizeof(float);
        a[k] = p->v + (size_t)c * p->n, size[k++] = sizeof(float);
    }
    for (int c = 0; c < 9; c++) {
        a[k] = p->C + (size_t)c * p->n, size[k++] = sizeof(float);
        a[k] = p->F + (size_t)c * p->n, size[k++] = sizeof(float);
    }
    a[k] = p->Jp, size[k++] = sizeof(float);
    a[k] = p->damage, size[k++] = sizeof(float);
    a[k] = p->vol, size[k++] = sizeof(float);
    a[k] = p->mat, size[k++] = 1;
    for (int c = 0; c < p->cpic_slots; c++)
        a[k] = p->cpic + (size_t)c * p->n, size[k++] = sizeof(uint32_t);
    return k;
}

/* One array of n elements of `size` (4 or 1) bytes through scratch:
 * gather a[i] <- a[idx[i]], or scatter a[idx[i]] <- a[i]. */
static void permute(void *a, void *scratch, const int *idx, int n, size_t size, int scatter)
{
    if (size == 4) {
        const uint32_t *src = a;
        uint32_t *dst = scratch;
        if (scatter) {
#pragma omp parallel for schedule(static)
            for (int j = 0; j < n; j++)
                dst[idx[j]] = src[j];
        } else {
#pragma omp parallel for schedule(static)
            for (int j = 0; j < n; j++)
                dst[j] = src[idx[j]];
        }
    } else {
        const uint8_t *src = a;
        uint8_t *dst = scratch;
        if (scatter) {
#pragma omp parallel for schedule(static)
            for (int j = 0; j < n; j++)
                dst[idx[j]] = src[j];
        } else {
#pragma omp parallel for schedule(static)
            for (int j = 0; j < n; j++)
                dst[j] = src[idx[j]];
        }
    }
    memcpy(a, scratch, (size_t)n * size);
}

static void permute_all(firn_particles *p, const int *idx, int *id, void *scratch, int scatter)
{
    void *a[FIRN_PARTICLE_ARRAYS];
    size_t size[FIRN_PARTICLE_ARRAYS];
    int k = particle_arrays(p, a, size);
    for (int j = 0; j < k; j++)
        permute(a[j], scratch, idx, p->n, size[j], scatter);
    if (id)
        permute(id, scratch, idx, p->n, sizeof(int), scatter);
}

void firn_particles_gather(firn_particles *p, const int *order, int *id, void *scratch)
{
    permute_all(p, order, id, scratch, 0);
}

void firn_particles_scatter(firn_particles *p, const int *where, void *scratch)
{
    permute_all(p, where, NULL, scratch, 1);
}

/* Reorders particles by the 4^3-cell block of their position, keeping
 * sampling order within a block. Done once, before the run: particles that
 * share grid nodes then sit together in memory, so P2G and G2P reuse cache
 * lines (and GPU warps touch nearby nodes). This order is the scene's
 * particle order: frames, comparisons and the API present particles in it
 * for the whole run (the CPU path's reordering during the run is undone
 * for them: host/solver_cpu.c). */
int firn_particles_sort_spatial(firn_particles *p, const firn_params *P)
{
    const int n = p->n, B = 4;
    int nb[3];
    for (int a = 0; a < 3; a++)
        nb[a] = (P->n[a] + B - 1) / B;
    long long nblocks = (long long)nb[0] * nb[1] * nb[2];
    size_t m = n > 0 ? (size_t)n : 1;
    int *key = malloc(m * sizeof(int)), *order = malloc(m * sizeof(int));
    int *start = calloc((size_t)nblocks + 1, sizeof(int));
    float *scratch = malloc(m * sizeof(float));
    if (!key || !order || !start || !scratch) {
        free(key), free(order), free(start), free(scratch);
        return -1;
    }
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        firn_stencil s = firn_make_stencil(P, firn_load3(p->x, n, i));
        key[i] = ((s.base[0] / B) * nb[1] + s.base[1] / B) * nb[2] + s.base[2] / B;
    }
    for (int i = 0; i < n; i++)
        start[key[i] + 1]++;
    for (long long k = 0; k < nblocks; k++)
        start[k + 1] += start[k];
    for (int i = 0; i < n; i++)
        order[start[key[i]]++] = i;
    firn_particles_gather(p, order, NULL, scratch);
    free(key), free(order), free(start), free(scratch);
    return 0;
}
