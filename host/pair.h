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
 * pointer's target NULL in a build without CUDA). NULL: no such pass. */
typedef struct {
    const char *name;
    int a, b;
    size_t option, flag;
    int stage;
    int (*runs)(const firn_world *w);
    firn_step_fn cpu_before, cpu_after;
    const firn_step_fn *cuda_before, *cuda_after;
} firn_pair;

/* The pairs with passes of their own (host/pair_<name>.c). */
extern const firn_pair firn_pair_mpm_sph, firn_pair_mpm_pbd, firn_pair_sph_rigid,
    firn_pair_pbd_rigid;

/* Bytes of one of MPM-PBD's sort keys (its scratch, w->mpm_pbd_keys). */
size_t firn_mpm_pbd_key_bytes(void);

#ifdef __cplusplus
}
#endif

#endif
