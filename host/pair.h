/* pair.h - a coupling pair as the Coupler (host/coupler.c) runs it: its
 * two solvers, the scene option that enables it, the stage of the couple
 * phase it acts in and its passes on each path. Each pair with passes of
 * its own is a module, host/pair_<name>.c, that defines its firn_pair;
 * the Coupler's table `pairs` lists them in the order they run.
 *
 * Stages (PHYSICS.md 1, Genesis's couple()):
 *   FIRN_PAIR_IN_GRID     acts on the MPM grid's nodes inside the grid
 *                         update (rigid_mpm, tool_mpm; mpm_sph's collision)
 *   FIRN_PAIR_PARTICLES   a pass of its own after the grid update, on a
 *                         solver's particles (mpm_sph's contact, mpm_pbd,
 *                         sph_rigid, pbd_rigid)
 *   FIRN_PAIR_SURFACE     on the FEM surface, in the FEM pass after them
 *                         (fem_rigid, fem_mpm, fem_sph; host/fem_coupling.c) */
#ifndef FIRN_PAIR_H
#define FIRN_PAIR_H

#include <stddef.h>

#include "firn.h"
#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { FIRN_PAIR_IN_GRID = 0, FIRN_PAIR_PARTICLES, FIRN_PAIR_SURFACE };

/* A pair: active when both solvers are and the int option at offset
 * `option` of firn_scene_def is on, which the Coupler records at offset
 * `flag` of firn_coupler. runs (NULL: the flag) says whether its passes run
 * in a world; before runs ahead of the grid update, after in its stage,
 * each on the CPU (cpu_*) or queued on CUDA (cuda_*: kernels/mpm.cu; the
 * pointer's target NULL in a build without CUDA). NULL: no such pass.
 * cpu_alloc (NULL: none) makes the pair's own scratch on the CPU path,
 * when it runs there (firn_pair_scratch_alloc, host/coupler.h, under its
 * id, FIRN_PAIR_*, which is also its place in the Coupler's order). */
typedef struct {
    const char *name;
    int id;
    int a, b;
    size_t option, flag;
    int stage;
    int (*runs)(const firn_world *w);
    firn_step_fn cpu_before, cpu_after;
    const firn_step_fn *cuda_before, *cuda_after;
    int (*cpu_alloc)(firn_world *w, firn_error *err);
} firn_pair;

/* The pairs with passes of their own (host/pair_<name>.c). */
extern const firn_pair firn_pair_mpm_sph, firn_pair_mpm_pbd, firn_pair_sph_rigid,
    firn_pair_pbd_rigid;

/* The pairs' scratch on the CPU path that other modules read
 * (firn_pair_scratch). SPH-rigid's and PBD-rigid's: each particle chunk's
 * reactions on the bodies, [chunks][n_rigids][FIRN_RIGID_ACC] (reduce.h;
 * PBD's particle passes use PBD-rigid's). */
typedef struct {
    double *chunk_acc;
} firn_pair_chunks;
/* MPM-SPH's contact (host/mpm_sph.c): the MPM particles' volume fraction
 * per grid node, then the contact's reaction, 3 floats per node. */
typedef struct {
    float *phi, *react;
} firn_mpm_sph_scratch;
/* FEM-SPH (host/mpm_sph.c, host/fem_coupling.c): the vertices' contact's
 * shares (3 per surface vertex) and counters (one per SPH particle), and,
 * with the contact distance (firn_fem_sph_contact), each SPH particle's
 * nearest triangle's key and signed distance, NULL without it. */
typedef struct {
    float *share, *count;
    unsigned long long *key;
    float *d;
} firn_fem_sph_scratch;

/* Pair id's scratch on the CPU path (FIRN_PAIR_*, host/coupler.h), NULL
 * where it has none (off, the CUDA path, or no scratch). */
void *firn_pair_scratch(const firn_world *w, int id);
/* Makes pair id's scratch: one zeroed block of `bytes`, the pair's header
 * struct first, freed with the world (host/pair.c). NULL, with err naming
 * the pair, when out of memory. */
void *firn_pair_scratch_alloc(firn_world *w, int id, const char *name, size_t bytes,
                              firn_error *err);
/* Chunks of SPH-rigid's and PBD-rigid's reactions: one block, the header
 * then the chunks of n particles. */
int firn_pair_chunks_alloc(firn_world *w, int id, const char *name, long long n, firn_error *err);

#ifdef __cplusplus
}
#endif

#endif
