/* rigid.h - rigid bodies (host/rigid.c). */
#ifndef FIRN_RIGID_H
#define FIRN_RIGID_H

#include "firn.h"
#include "firn_coupling.h"
#include "firn_sdf.h"
#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rigid bodies (host/rigid.c): state from the scene's rigids (mass and
 * inertia from shape and density), the CPU rigid step. */
int firn_rigids_init(firn_world *w, firn_error *err);
void firn_rigid_mass_properties(const firn_rigid_def *def, float *mass, float inertia[3]);
firn_sdf_shape firn_rigid_sdf_shape(const firn_rigid_shape_def *s);
/* A kinematic body's keyframes from rd (orientations on the shortest arc,
 * each segment's rotation vector); tools use it too. */
void firn_rigid_init_keyframes(firn_rigid *b, const firn_rigid_def *rd);
/* Euler angles [deg] about x, then y, then z (world axes) as a quaternion. */
firn_quat firn_rotation_quat(const float deg[3]);
/* The rigid solver's phase table for the Coupler. */
extern const firn_solver firn_rigid_solver;
extern const firn_solver firn_mpm_solver; /* host/solver_cpu.c */

#ifdef __cplusplus
}
#endif

#endif
