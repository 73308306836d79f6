/* sample.c - initial particles from the scene's bodies.
 *
 * Each body is filled by stratified jittered sampling: a lattice of spacing
 * s = dx / cbrt(ppc) covers the shape's bounding box, and each lattice cell
 * holding a sample gets one particle at a random point inside it. Every
 * particle carries the volume s^3 of its lattice cell. The jitter of cell
 * (i,j,k) is a hash of (seed, i, j, k), so sampling is reproducible and
 * independent of traversal order. */
#include <stdlib.h>
#include <string.h>

#include "world.h"

static uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static float unit_float(uint64_t h) { return (float)(h >> 40) * (1.0f / 16777216.0f); }

static void shape_bounds(const firn_shape_def *s, float lo[3], float hi[3])
{
    for (int a = 0; a < 3; a++) {
        float half;
        switch (s->type) {
        case FIRN_SHAPE_SPHERE: half = s->radius; break;
        case FIRN_SHAPE_CYLINDER: half = a == s->axis ? 0.5f * s->height : s->radius; break;
        default: half = 0.5f * s->size[a]; break;
        }
        lo[a] = s->center[a] - half;
        hi[a] = s->center[a] + half;
    }
}

static int shape_contains(const firn_shape_def *s, const float x[3])
{
    float d[3];
    for (int a = 0; a < 3; a++)
        d[a] = x[a] - s->center[a];
    switch (s->type) {
    case FIRN_SHAPE_SPHERE: return d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= s->radius * s->radius;
    case FIRN_SHAPE_CYLINDER: {
        float r2 = 0.0f;
        for (int a = 0; a < 3; a++)
            if (a != s->axis)
                r2 += d[a] * d[a];
        return r2 <= s->radius * s->radius && 2.0f * fabsf(d[s->axis]) <= s->height;
    }
    default:
        for (int a = 0; a < 3; a++)
            if (2.0f * fabsf(d[a]) > s->size[a])
                return 0;
        return 1;
    }
}

/* Visits the samples of one body; with p == NULL only counts them. */
static long long sample_body(const firn_body_def *b, int index, float dx, int mat_index, float jp0,
                             firn_particles *p, int offset, long long capacity)
{
    uint64_t seed = b->seed ? b->seed : (uint64_t)index + 1;
    float s = dx / cbrtf(b->particles_per_cell);
    float lo[3], hi[3];
    shape_bounds(&b->shape, lo, hi);
    int cells[3];
    for (int a = 0; a < 3; a++)
        cells[a] = (int)ceilf((hi[a] - lo[a]) / s);
    long long count = 0;
    for (int i = 0; i < cells[0]; i++)
        for (int j = 0; j < cells[1]; j++)
            for (int k = 0; k < cells[2]; k++) {
                uint64_t h = splitmix64(seed ^ splitmix64(((uint64_t)i << 42) ^
                                                             ((uint64_t)j << 21) ^ (uint64_t)k));
                float x[3] = {lo[0] + ((float)i + unit_float(h)) * s,
                              lo[1] + ((float)j + unit_float(splitmix64(h))) * s,
                              lo[2] + ((float)k + unit_float(splitmix64(h + 1))) * s};
                if (!shape_contains(&b->shape, x))
                    continue;
                if (p && count < capacity) { /* the counting pass sized it */
                    int n = p->n, q = offset + (int)count;
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
                    p->vol[q] = s * s * s;
                    p->mat[q] = (uint8_t)mat_index;
                }
                count++;
            }
    return count;
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
    for (int b = 0; b < def->n_bodies; b++) {
        counts[b] = sample_body(&def->bodies[b], b, def->dx, 0, 0.0f, NULL, 0, 0);
        if (counts[b] == 0) {
            firn_set_error(err, FIRN_E_SCENE,
                           "%s%sbodies[%d]: the shape holds no particle at particles_per_cell = %g "
                           "and dx = %g",
                           def->source, def->source[0] ? ": " : "", b,
                           def->bodies[b].particles_per_cell, def->dx);
            return -1;
        }
        total += counts[b];
    }
    if (total > 0x7fffffffLL) {
        firn_set_error(err, FIRN_E_SCENE, "%s%sthe bodies hold %lld particles; at most 2^31 - 1",
                       def->source, def->source[0] ? ": " : "", total);
        return -1;
    }
    if (firn_particles_alloc(p, (int)total)) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for %lld particles (%.1f MiB)", total,
                       (double)total * 109.0 / (1 << 20));
        return -1;
    }
    int offset = 0;
    for (int b = 0; b < def->n_bodies; b++) {
        const firn_body_def *body = &def->bodies[b];
        /* Sand's Jp is a volume correction (starts at 0); snow's is the
         * plastic volume ratio (starts at 1). */
        float jp0 = mats[body->material].model == FIRN_M_SAND ? 0.0f : 1.0f;
        sample_body(body, b, def->dx, body->material, jp0, p, offset, counts[b]);
        offset += (int)counts[b];
    }
    return 0;
}

/* Reorders particles by the 4^3-cell block of their position, keeping
 * sampling order within a block. Done once, before the run: particles that
 * share grid nodes then sit together in memory, so P2G and G2P reuse cache
 * lines (and GPU warps touch nearby nodes), while particle indices stay
 * fixed for the whole run and frames can be compared particle by particle. */
int firn_particles_sort_spatial(firn_particles *p, const firn_params *P)
{
    const int n = p->n, B = 4;
    int nb[3];
    for (int a = 0; a < 3; a++)
        nb[a] = (P->n[a] + B - 1) / B;
    long long nblocks = (long long)nb[0] * nb[1] * nb[2];
    int *key = malloc((size_t)n * sizeof(int)), *order = malloc((size_t)n * sizeof(int));
    int *start = calloc((size_t)nblocks + 1, sizeof(int));
    firn_particles q;
    if (!key || !order || !start || firn_particles_alloc(&q, n)) {
        free(key), free(order), free(start);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        firn_stencil s = firn_make_stencil(P, firn_load3(p->x, n, i));
        key[i] = ((s.base[0] / B) * nb[1] + s.base[1] / B) * nb[2] + s.base[2] / B;
        start[key[i] + 1]++;
    }
    for (long long k = 0; k < nblocks; k++)
        start[k + 1] += start[k];
    for (int i = 0; i < n; i++)
        order[start[key[i]]++] = i;
    for (int j = 0; j < n; j++) {
        int i = order[j];
        for (int c = 0; c < 3; c++) {
            q.x[c * n + j] = p->x[c * n + i];
            q.v[c * n + j] = p->v[c * n + i];
        }
        for (int c = 0; c < 9; c++) {
            q.C[c * n + j] = p->C[c * n + i];
            q.F[c * n + j] = p->F[c * n + i];
        }
        q.Jp[j] = p->Jp[i];
        q.damage[j] = p->damage[i];
        q.vol[j] = p->vol[i];
        q.mat[j] = p->mat[i];
    }
    free(key), free(order), free(start);
    firn_particles_free(p);
    *p = q;
    return 0;
}
