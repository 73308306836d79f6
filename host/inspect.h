/* inspect.h - the inspection API (host/inspect.c): what tools outside the
 * solvers (`firn compare`, `firn bench`) read of a world beyond the public
 * API, and the one edit they make to it, without the world's struct or a
 * backend's functions. Not part of the public API: what it exposes (the
 * grid, the particle state's arrays) is the solvers' internal layout. */
#ifndef FIRN_INSPECT_H
#define FIRN_INSPECT_H

#include "firn.h"
#include "firn_mpm.h"

/* The background grid: nodes per axis, their count, and 1 / dx [1/m] as the
 * solvers compute it (float). */
void firn_inspect_grid_size(const firn_world *w, int n[3]);
long long firn_inspect_grid_nodes(const firn_world *w);
float firn_inspect_inv_dx(const firn_world *w);

/* The grid after the last substep on either backend, into host buffers:
 * mass (firn_inspect_grid_nodes(w) floats) and velocity (3 times that,
 * component-major). 0, or -1 with err filled (a device error). */
int firn_inspect_grid(firn_world *w, float *mass, float *vel, firn_error *err);

/* Edits the particle state of a world that has not stepped yet: edit gets
 * the host particles in the scene's order (their mat, vol and count must
 * stay); on the CUDA backend the device state is then rebuilt from them.
 * 0, or -1 with err filled (FIRN_E_USAGE after a substep, or a device
 * error). */
/* The kinetic energy of the dynamic rigid bodies, 1/2 m v.v + 1/2 omega.L
 * [J], from the host copy of their state (current after firn_world_stats;
 * static and kinematic bodies have no mass and count 0). */
double firn_inspect_rigid_kinetic_energy(const firn_world *w);

/* Memory by solver [bytes]: host as firn_memory's host, device what the
 * CUDA path allocates for it (on the CPU path, what it would). mpm is the
 * MPM particles alone (their state, and on the CPU path their binning ids);
 * shared the rest: the grid, binning and coupling scratch, rigid bodies,
 * tools and mesh SDF grids. The parts add up to firn_world_memory's host
 * and device. */
typedef struct {
    double host, device;
} firn_inspect_bytes;
typedef struct {
    firn_inspect_bytes mpm, sph, pbd, fem, shared;
} firn_inspect_memory;
void firn_inspect_solver_memory(const firn_world *w, firn_inspect_memory *m);

/* The FEM solver's body b (0 .. the returned count - 1, in scene order):
 * its index in the scene's bodies, vertices [v[0], v[1]) and elements
 * [e[0], e[1]) of firn_world_fem_mesh's view. With b out of range only
 * the count is returned. */
int firn_inspect_fem_body(const firn_world *w, int b, int *scene_body, int v[2], int e[2]);

typedef void (*firn_particles_edit)(firn_particles *p, void *ctx);
int firn_inspect_edit_particles(firn_world *w, firn_particles_edit edit, void *ctx,
                                firn_error *err);

/* Edits the points of the SPH, PBD and FEM solvers of a world that has not
 * stepped yet, as firn_inspect_edit_particles the MPM particles: edit gets
 * each solver that has points (solver: "sph", "pbd" or "fem"), their count
 * n, positions x and velocities v (3n each, in the scene's order), held
 * (n flags, 1 for a pinned PBD particle or a fixed FEM vertex, which must
 * stay; NULL when none is) and the solver's length scale [m] (SPH: the
 * support radius; PBD: the particle size; FEM: the shortest tet altitude
 * at rest). On the CUDA backend those solvers' device states are then
 * rebuilt from the host state. 0, or -1 with err filled. */
typedef void (*firn_points_edit)(const char *solver, int n, float *x, float *v, const uint8_t *held,
                                 float length, void *ctx);
int firn_inspect_edit_points(firn_world *w, firn_points_edit edit, void *ctx, firn_error *err);

#endif
