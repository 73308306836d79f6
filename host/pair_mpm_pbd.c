/* pair_mpm_pbd.c - MPM-PBD (docs/PHYSICS.md 6) after the grid update
 * (firn_mpm_pbd_node): the PBD particles sorted by the MPM node whose
 * dx-box holds them (ties by index: the same order for any thread count),
 * then each node with mass and particles in parallel; its new velocity
 * goes through the walls again, as the grid update's does. Its CUDA pass
 * is kernels/pbd.cu's firn_cuda_mpm_pbd. */
#include <stddef.h>
#include <stdlib.h>

#include "firn_pbd_coupling.h"
#include "pair.h"
#include "pbd.h"
#include "solver_cpu.h"
#include "world.h"

/* A PBD particle and the MPM node whose dx-box holds it. */
struct firn_mpm_pbd_key {
    long long node;
    int i;
};

static int cmp_key(const void *pa, const void *pb)
{
    const struct firn_mpm_pbd_key *a = pa, *b = pb;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* The pair's scratch: the n particles' keys, then where each node's run
 * starts (runs + 1 ints) and the particle indices in that order (n
 * ints). */
typedef struct {
    struct firn_mpm_pbd_key *keys;
    int *runs;
} scratch;

static int cpu_alloc(firn_world *w, firn_error *err)
{
    const size_t n = (size_t)w->pbd.n, head = firn_align256(sizeof(scratch)),
                 keys = firn_align256(n * sizeof(struct firn_mpm_pbd_key));
    scratch *s = firn_pair_scratch_alloc(w, FIRN_PAIR_MPM_PBD, "mpm_pbd",
                                         head + keys + (2 * n + 1) * sizeof(int), err);
    if (!s)
        return -1;
    s->keys = (struct firn_mpm_pbd_key *)((char *)s + head);
    s->runs = (int *)((char *)s + head + keys);
    return 0;
}

static int cpu_after(firn_world *w, firn_step *st)
{
    (void)st;
    firn_pbd *S = &w->pbd;
    const firn_params *P = &w->params;
    const int n = S->n;
    const scratch *sc = firn_pair_scratch(w, FIRN_PAIR_MPM_PBD);
    struct firn_mpm_pbd_key *keys = sc->keys;
    int *runs = sc->runs, *order = runs + n + 1, nruns = 0;
    for (int i = 0; i < n; i++) {
        keys[i].node = firn_mpm_pbd_node_of(firn_load3(S->s.x0, n, i), P->lower, P->inv_dx, P->n);
        keys[i].i = i;
    }
    qsort(keys, (size_t)n, sizeof *keys, cmp_key);
    for (int k = 0; k < n; k++) {
        order[k] = keys[k].i;
        if (k == 0 || keys[k].node != keys[k - 1].node)
            runs[nruns++] = k;
    }
    runs[nruns] = n;
    const float dt = P->dt;
#pragma omp parallel for schedule(dynamic, 64)
    for (int r = 0; r < nruns; r++) {
        const long long node = keys[runs[r]].node;
        float *q = w->grid.node + 4 * node;
        const float m = q[3];
        if (!(m > 0.0f))
            continue;
        const firn_vec3 v = firn_mpm_pbd_node(firn_v3(q[0], q[1], q[2]), m, order + runs[r],
                                              runs[r + 1] - runs[r], S->s, dt);
        firn_grid_store_velocity(node, w->grid, firn_grid_walls(node, P, v));
    }
    return 0;
}

const firn_pair firn_pair_mpm_pbd = {
    .name = "mpm_pbd",
    .id = FIRN_PAIR_MPM_PBD,
    .a = FIRN_SOLVER_MPM,
    .b = FIRN_SOLVER_PBD,
    .option = offsetof(firn_scene_def, coupling.mpm_pbd),
    .flag = offsetof(firn_coupler, mpm_pbd),
    .stage = FIRN_PAIR_PARTICLES,
    .cpu_after = cpu_after,
    .cuda_after = &firn_cuda_mpm_pbd,
    .cpu_alloc = cpu_alloc,
};
