/* pair_pbd_rigid.c - PBD-rigid (docs/PHYSICS.md 6): after the grid update,
 * each PBD particle against every coupled body
 * (firn_pbd_rigid_particle), the reactions summed per chunk of particles
 * in index order, then over chunks in order (reduce.h), as SPH-rigid. Its
 * CUDA pass is kernels/pair_pbd_rigid.cu, queued by kernels/pbd.cu's
 * firn_cuda_pbd_rigid (on the PBD solver's device view). */
#include <stddef.h>

#include "firn_pbd_coupling.h"
#include "pair.h"
#include "pbd.h"
#include "reduce.h"
#include "world.h"

typedef struct {
    const firn_pbd *S;
    const firn_rigid *bodies;
    int nb;
} chunk_ctx;

static long long chunk(long long begin, long long end, double *acc, void *ctx)
{
    const chunk_ctx *c = ctx;
    for (int i = (int)begin; i < (int)end; i++)
        firn_pbd_rigid_particle(i, &c->S->P, c->S->mats, c->S->s, c->bodies, c->nb, acc);
    return FIRN_REDUCE_NONE;
}

static int cpu_after(firn_world *w, firn_step *st)
{
    (void)st;
    firn_pbd *S = &w->pbd;
    S->P.dt = w->params.dt;
    chunk_ctx c = {S, w->rigids, w->n_rigids};
    const int stride = w->n_rigids * FIRN_RIGID_ACC;
    const firn_pair_chunks *pc = firn_pair_scratch(w, FIRN_PAIR_PBD_RIGID);
    firn_reduce_sum(S->n, FIRN_COUPLE_CHUNK, stride, pc->chunk_acc, chunk, &c, w->rigid_acc);
    return 0;
}

static int cpu_alloc(firn_world *w, firn_error *err)
{
    return firn_pair_chunks_alloc(w, FIRN_PAIR_PBD_RIGID, "pbd_rigid", w->pbd.n, err);
}

const firn_pair firn_pair_pbd_rigid = {
    .name = "pbd_rigid",
    .id = FIRN_PAIR_PBD_RIGID,
    .a = FIRN_SOLVER_RIGID,
    .b = FIRN_SOLVER_PBD,
    .option = offsetof(firn_scene_def, coupling.pbd_rigid),
    .flag = offsetof(firn_coupler, pbd_rigid),
    .stage = FIRN_PAIR_PARTICLES,
    .cpu_after = cpu_after,
    .cuda_after = &firn_cuda_pbd_rigid,
    .cpu_alloc = cpu_alloc,
};
