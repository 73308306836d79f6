/* mpm_sph.h - MPM-SPH's contact (host/mpm_sph.c): whether it runs, and on
 * the CPU path the MPM particles' volume fraction and the level the SPH
 * passes read. */
#ifndef FIRN_MPM_SPH_H
#define FIRN_MPM_SPH_H

#include "firn.h"
#include "firn_sph_coupling.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether MPM-SPH's contact runs (the pair on, both solvers with
 * particles, the liquid WCSPH): its volume fraction grid is then allocated
 * on either path. DFSPH keeps the collision alone: its pressure solve does
 * not take the bodies in, as it takes the walls, and with the contact an
 * MPM ball of 0.4 sank 49 % deeper than Archimedes (docs/PHYSICS.md 5.7). */
int firn_mpm_sph_contact(const firn_world *w);
/* MPM-SPH's contact on the CPU path: the MPM particles' volume fraction on
 * the grid (w->mpm_phi), after P2G and before the SPH density, and the
 * level the SPH passes read (phi NULL when the pair is off). */
void firn_mpm_sph_phi(firn_world *w);
firn_mpm_level firn_mpm_sph_level(const firn_world *w);
/* The SPH solver as its pairs see it (MPM-SPH, SPH-rigid, FEM-SPH on the
 * CPU path): its parameters at the world's substep, its particles and
 * neighbour grid, MPM-SPH's level and FEM-SPH's contact distance. */
firn_sph_view firn_sph_pairs_view(firn_world *w);

/* Whether FEM-SPH's contact distance runs (the pair on, both solvers with
 * bodies, the liquid WCSPH; include/firn_fem_coupling.h): DFSPH keeps the
 * vertices' contact alone, as it keeps MPM-SPH's collision alone (above). */
int firn_fem_sph_contact(const firn_world *w);
/* FEM-SPH's scratch on the CPU path (firn_fem_sph_scratch, host/pair.h):
 * the contact distance's arrays when it runs, and the vertices' contact's. */
int firn_fem_sph_alloc(firn_world *w, firn_error *err);
/* FEM-SPH's contact distance on the CPU path (its scratch's key and d),
 * after SPH's neighbour sort and before its density: the
 * triangles, then the particles, each in parallel.
 * Does nothing when the contact is off. */
void firn_fem_sph_distance(firn_world *w);

#ifdef __cplusplus
}
#endif

#endif
