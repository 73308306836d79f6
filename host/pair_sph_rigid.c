/* pair_sph_rigid.c - SPH-rigid (docs/PHYSICS.md 5.7): after the grid
 * update, each SPH particle's SDF impulse and wall term against every
 * coupled body (firn_sph_rigid_particle), the reactions summed per chunk of
 * particles in index order, then over chunks in order (reduce.h): the same
 * sums for any thread count (its scratch: the chunks' sums). Its CUDA pass
 * is kernels/pair_sph_rigid.cu, with its couple step
 * firn_cuda_sph_rigid. The bodies also bound the SPH density
 * (host/sph_cpu.c). */
#include <stddef.h>

#include "mpm_sph.h"
#include "pair.h"
#include "reduce.h"
#include "world.h"

typedef struct {
    const firn_sph_view *V;
    const firn_rigid *bodies;
    int nb;
} chunk_ctx;

static long long chunk(long long begin, long long end, double *acc, void *ctx)
{
    const chunk_ctx *c = ctx;
    for (int i = (int)begin; i < (int)end; i++)
        firn_sph_rigid_particle(i, c->V, c->bodies, c->nb, acc);
    return FIRN_REDUCE_NONE;
}

static int cpu_after(firn_world *w, firn_step *st)
{
    (void)st;
    const firn_sph_view V = firn_sph_pairs_view(w);
    chunk_ctx c = {&V, w->rigids, w->n_rigids};
    const int stride = w->n_rigids * FIRN_RIGID_ACC;
    const firn_pair_chunks *pc = firn_pair_scratch(w, FIRN_PAIR_SPH_RIGID);
    firn_reduce_sum(w->sph.n, FIRN_COUPLE_CHUNK, stride, pc->chunk_acc, chunk, &c, w->rigid_acc);
    return 0;
}

static int cpu_alloc(firn_world *w, firn_error *err)
{
    return firn_pair_chunks_alloc(w, FIRN_PAIR_SPH_RIGID, "sph_rigid", w->sph.n, err);
}

const firn_pair firn_pair_sph_rigid = {
    .name = "sph_rigid",
    .id = FIRN_PAIR_SPH_RIGID,
    .a = FIRN_SOLVER_RIGID,
    .b = FIRN_SOLVER_SPH,
    .option = offsetof(firn_scene_def, coupling.sph_rigid),
    .flag = offsetof(firn_coupler, sph_rigid),
    .stage = FIRN_PAIR_PARTICLES,
    .cpu_after = cpu_after,
    .cuda_after = &firn_cuda_sph_rigid,
    .cpu_alloc = cpu_alloc,
};
