/* coupler.h - the Coupler (host/coupler.c): the solvers of a world
 * and the active coupling pairs, decided once when the world is built, and
 * the one order of a substep that runs their phases (host/solver.h) on
 * either path. A new
 * solver registers its firn_solver in coupler.c and its pairs there,
 * without touching the others. The Coupler calls the solvers; they never
 * call it. */
#ifndef FIRN_COUPLER_H
#define FIRN_COUPLER_H

#include "firn.h"
#include "firn_sph_coupling.h"
#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int active[FIRN_SOLVER_COUNT];
    int rigid_mpm; /* pair active: both solvers active and coupling.rigid_mpm on */
    int cpic;      /* coupling.cpic (with rigid_mpm) */
    int mpm_sph;   /* pair active: coupling.mpm_sph */
    int sph_rigid; /* pair active: coupling.sph_rigid */
    int pbd_rigid; /* pair active: coupling.pbd_rigid */
    int mpm_pbd;   /* pair active: coupling.mpm_pbd */
    int tool_mpm;  /* pair active: tools and MPM particles, coupling.tool_mpm */
    int fem_rigid; /* pair active: coupling.fem_rigid */
    int fem_mpm;   /* pair active: coupling.fem_mpm */
    int fem_sph;   /* pair active: coupling.fem_sph */
} firn_coupler;

/* The pairs (host/pair.h), each the index of its scratch in
 * firn_world.pair_scratch. */
enum {
    FIRN_PAIR_RIGID_MPM,
    FIRN_PAIR_TOOL_MPM,
    FIRN_PAIR_MPM_SPH,
    FIRN_PAIR_MPM_PBD,
    FIRN_PAIR_SPH_RIGID,
    FIRN_PAIR_PBD_RIGID,
    FIRN_PAIR_FEM_RIGID,
    FIRN_PAIR_FEM_MPM,
    FIRN_PAIR_FEM_SPH,
    FIRN_PAIR_COUNT
};

/* CPU path: the grid update sums the coupling force per fixed chunk of
 * nodes, then over chunks in order, so the sum is the same for any thread
 * count; CPIC's G2P does the same per chunk of particles. */
#define FIRN_COUPLE_CHUNK 4096
#define FIRN_CPIC_CHUNK   2048

void firn_coupler_build(firn_world *w);
/* The CPU path's coupling scratch: each running pair's own (its
 * cpu_alloc, host/pair.h) and the grid update's and FEM surface's. */
int firn_coupler_alloc(firn_world *w, firn_error *err);
void firn_coupler_free(firn_world *w);

/* One substep on the path (cuda 0: CPU, 1: CUDA, queued into its stream),
 * every active solver's phases in the one order; *bad the lowest scene
 * index of a non-finite element a CPU phase found (-1: none; the CUDA
 * path finds its own after the call), w->bad_solver its solver. 0, or -1
 * with st->err set where a phase failed. */
int firn_coupler_run(firn_world *w, int cuda, firn_step *st, int *bad);
/* One substep on the CPU path, timed into w->prof; returns the lowest
 * scene index of a non-finite particle, or -1. */
int firn_coupler_substep(firn_world *w);
/* The name of an active solver or couple step with no CUDA path in its
 * table, or NULL when the CUDA path can run the world. */
const char *firn_coupler_no_cuda(const firn_world *w);

#ifdef __cplusplus
}
#endif

#endif
