/* fem_coupling.c - the FEM pairs on the CPU: the passes of
 * include/firn_fem_coupling.h in their order. Gathers run in parallel (each
 * writes only its own vertex), scatters on one thread in vertex order (27
 * adds per vertex, a small part of the pair's cost): the result does not
 * depend on the thread count. */
#include "fem_coupling.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "reduce.h"

/* Index of vertex v in the ascending surf[0..ns), or -1. */
static int surface_index(const int *surf, int ns, int v)
{
    int lo = 0, hi = ns - 1;
    while (lo <= hi) {
        const int mid = lo + (hi - lo) / 2;
        if (surf[mid] == v)
            return mid;
        if (surf[mid] < v)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

int firn_fem_surface_faces(const firn_fem *S, int **vf_start, int **vf, firn_error *err)
{
    int *start = calloc((size_t)S->ns + 1, sizeof *start);
    int *list = malloc((S->nf ? 3 * (size_t)S->nf : 1) * sizeof *list);
    int *fill = malloc((S->ns ? (size_t)S->ns : 1) * sizeof *fill);
    if (!start || !list || !fill) {
        free(start), free(list), free(fill);
        firn_set_error(err, FIRN_E_NOMEM, "FEM coupling: out of memory for %d surface triangles",
                       S->nf);
        return -1;
    }
    for (int f = 0; f < S->nf; f++)
        for (int c = 0; c < 3; c++) {
            const int k = surface_index(S->surf, S->ns, S->face[3 * f + c]);
            if (k < 0) {
                free(start), free(list), free(fill);
                firn_set_error(err, FIRN_E_SCENE,
                               "FEM coupling: surface triangle %d names vertex %d, which is not a "
                               "surface vertex",
                               f, S->face[3 * f + c]);
                return -1;
            }
            start[k + 1]++;
        }
    for (int k = 0; k < S->ns; k++) {
        start[k + 1] += start[k];
        fill[k] = start[k];
    }
    for (int f = 0; f < S->nf; f++) /* ascending f: each vertex's list is ascending */
        for (int c = 0; c < 3; c++)
            list[fill[surface_index(S->surf, S->ns, S->face[3 * f + c])]++] = f;
    free(fill);
    *vf_start = start;
    *vf = list;
    return 0;
}

int firn_fem_surface_alloc(firn_fem *S, firn_error *err)
{
    if (firn_fem_surface_faces(S, &S->vf_start, &S->vf, err))
        return -1;
    S->normal = malloc(3 * (S->ns > 0 ? (size_t)S->ns : 1) * sizeof(float));
    if (!S->normal) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for the FEM surface");
        return -1;
    }
    return 0;
}

firn_fem_surface firn_fem_surface_of(const firn_fem *S)
{
    firn_fem_surface s = {S->V, S->ns, S->surf, S->face, S->vf_start, S->vf, S->normal, S->nf};
    return s;
}

long long firn_fem_rigid_chunk_doubles(int ns, int nb)
{
    return firn_reduce_chunks(ns, FIRN_FEM_COUPLE_CHUNK) * nb * FIRN_RIGID_ACC;
}

void firn_fem_normals_cpu(const firn_fem_surface *S)
{
#pragma omp parallel for schedule(static)
    for (int k = 0; k < S->ns; k++)
        firn_fem_surface_normal(k, S);
}

typedef struct {
    const firn_fem_surface *S;
    const firn_rigid *bodies;
    int nb;
} fem_rigid_ctx;

static long long fem_rigid_chunk(long long begin, long long end, double *acc, void *ctx)
{
    const fem_rigid_ctx *c = ctx;
    for (int k = (int)begin; k < (int)end; k++)
        firn_fem_rigid_vertex(k, c->S, c->bodies, c->nb, acc);
    return FIRN_REDUCE_NONE;
}

void firn_fem_rigid_cpu(const firn_fem_surface *S, const firn_rigid *bodies, int nb,
                        double *chunk_acc, double *acc)
{
    const int stride = nb * FIRN_RIGID_ACC;
    fem_rigid_ctx c = {S, bodies, nb};
    firn_reduce_sum(S->ns, FIRN_FEM_COUPLE_CHUNK, stride, chunk_acc, fem_rigid_chunk, &c, acc);
}

void firn_fem_mpm_cpu(const firn_fem_surface *S, const firn_params *P, firn_grid g, float *D)
{
    const int ns = S->ns;
    for (int k = 0; k < ns; k++)
        firn_fem_mpm_weigh(k, S, P, g, D);
#pragma omp parallel for schedule(static)
    for (int k = 0; k < ns; k++)
        firn_fem_mpm_vertex(k, S, P, g, D);
    for (int k = 0; k < ns; k++)
        firn_fem_mpm_scatter(k, S, P, g, D);
    /* Each node once: firn_fem_mpm_node clears its slot, so a node in
     * several stencils is updated at its first visit only. */
    for (int k = 0; k < ns; k++) {
        const firn_fem_mpm_nodes q = firn_fem_mpm_nodes_of(k, S, P);
        if (!q.ok)
            continue;
        for (int o = 0; o < 27; o++)
            firn_fem_mpm_node(firn_node_index(P->n, q.s.base[0] + o / 9, q.s.base[1] + (o / 3) % 3,
                                              q.s.base[2] + o % 3),
                              P, g, D);
    }
}

void firn_fem_sph_distance_cpu(const firn_fem_surface *S, const firn_sph_view *W)
{
    const int n = W->s.n;
    memset(W->fem_key, 0xff, (size_t)n * sizeof *W->fem_key);
#pragma omp parallel for schedule(dynamic, 16)
    for (int f = 0; f < S->nf; f++)
        firn_fem_sph_face(f, S, W, W->fem_key);
#pragma omp parallel for schedule(static)
    for (int p = 0; p < n; p++)
        firn_fem_sph_resolve(p, S, W);
}

void firn_fem_sph_cpu(const firn_fem_surface *S, const firn_sph_view *W, float *share, float *count)
{
    const int ns = S->ns;
    if (W->fem_d)
        for (int p = 0; p < W->s.n; p++)
            firn_fem_sph_wall(p, S, W);
    memset(count, 0, (size_t)W->s.n * sizeof(float));
    for (int k = 0; k < ns; k++)
        firn_fem_sph_count(k, S, W, count);
#pragma omp parallel for schedule(static)
    for (int k = 0; k < ns; k++)
        firn_fem_sph_vertex(k, S, W, count, share);
    for (int k = 0; k < ns; k++)
        firn_fem_sph_scatter(k, S, W, count, share);
}
