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
/* The SPH particles' support radius h [m] and their pressure law's dp/drho
 * at density rho_max (firn_sph_pressure_slope; 0 under DFSPH). */
float firn_inspect_sph_support(const firn_world *w);
double firn_inspect_sph_pressure_slope(const firn_world *w, double rho_max);

/* The grid after the last substep on either backend, into host buffers:
 * mass (firn_inspect_grid_nodes(w) floats) and velocity (3 times that,
 * component-major). 0, or -1 with err filled (a device error). */
int firn_inspect_grid(firn_world *w, float *mass, float *vel, firn_error *err);

/* Edits the particle state of a world that has not stepped yet: edit gets
 * the host particles in the scene's order (their mat, vol and count must
 * stay); on the CUDA backend the device state is then rebuilt from them.
 * 0, or -1 with err filled (FIRN_E_USAGE after a substep, or a device
 * error). */
typedef void (*firn_particles_edit)(firn_particles *p, void *ctx);
int firn_inspect_edit_particles(firn_world *w, firn_particles_edit edit, void *ctx,
                                firn_error *err);

#endif
