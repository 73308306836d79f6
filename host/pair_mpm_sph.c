/* pair_mpm_sph.c - MPM-SPH (docs/PHYSICS.md 5.7). In the grid update each
 * node collides with the SPH particles in its cell (firn_mpm_sph_node,
 * host/solver_cpu.c's grid pass); with the contact on
 * (firn_mpm_sph_contact) this module's passes add the contact force: its
 * reaction on the nodes before the grid update, in particle order (one
 * thread: the same sums for any thread count), and its force on the
 * particles after it. Its CUDA passes and their couple steps
 * (firn_cuda_mpm_sph_react, firn_cuda_mpm_sph_contact) are
 * kernels/pair_mpm_sph.cu's; the contact's
 * level is host/mpm_sph.c's. */
#include <stddef.h>
#include <string.h>

#include "mpm_sph.h"
#include "pair.h"
#include "world.h"

/* The contact's scratch: phi, then the reaction, 4 floats per node. */
static int cpu_alloc(firn_world *w, firn_error *err)
{
    const size_t head = firn_align256(sizeof(firn_mpm_sph_scratch));
    firn_mpm_sph_scratch *s = firn_pair_scratch_alloc(
        w, FIRN_PAIR_MPM_SPH, "mpm_sph", head + 4 * (size_t)w->grid.nodes * sizeof(float), err);
    if (!s)
        return -1;
    s->phi = (float *)((char *)s + head);
    s->react = s->phi + w->grid.nodes;
    return 0;
}

static int cpu_before(firn_world *w, firn_step *st)
{
    (void)st;
    const firn_sph_view V = firn_sph_pairs_view(w);
    memset(V.L.react, 0, 3 * (size_t)w->grid.nodes * sizeof(float));
    for (int i = 0; i < w->sph.n; i++)
        firn_sph_mpm_react(i, &V);
    return 0;
}

static int cpu_after(firn_world *w, firn_step *st)
{
    (void)st;
    const firn_sph_view V = firn_sph_pairs_view(w);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < w->sph.n; i++)
        firn_sph_mpm_particle(i, &V);
    return 0;
}

const firn_pair firn_pair_mpm_sph = {
    .name = "mpm_sph",
    .id = FIRN_PAIR_MPM_SPH,
    .a = FIRN_SOLVER_MPM,
    .b = FIRN_SOLVER_SPH,
    .option = offsetof(firn_scene_def, coupling.mpm_sph),
    .flag = offsetof(firn_coupler, mpm_sph),
    .stage = FIRN_PAIR_IN_GRID,
    .runs = firn_mpm_sph_contact,
    .cpu_before = cpu_before,
    .cpu_after = cpu_after,
    .cuda_before = &firn_cuda_mpm_sph_react,
    .cuda_after = &firn_cuda_mpm_sph_contact,
    .cpu_alloc = cpu_alloc,
};
