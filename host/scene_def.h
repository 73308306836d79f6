/* scene_def.h - pure functions of a scene definition (host/scene_def.c),
 * beside its defaults (firn_scene_default and the others, include/firn.h):
 * what the scene reader's checks and the solvers both take from a
 * firn_scene_def. They call nothing else of firn's. */
#ifndef FIRN_SCENE_DEF_H
#define FIRN_SCENE_DEF_H

#include "firn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The SPH box: sph.lower/upper, or the domain when neither is given. */
void firn_sph_box(const firn_scene_def *def, float lower[3], float upper[3]);
/* The PBD box: pbd.lower/upper, or the domain when neither is given. */
void firn_pbd_box(const firn_scene_def *def, float lower[3], float upper[3]);
/* Sand mu(I): friction_angle_2 as given, or friction_angle + 11.86 deg when
 * 0 (Jop et al. 2006's glass beads: tan 32.76 and tan 20.9 deg) [deg]. */
float firn_sand_friction_angle_2(const firn_material_def *def);
/* A tool as a kinematic rigid (its shape, pose, velocities and keyframes
 * in a default rigid): the rigid bodies' checks and keyframe set-up take
 * it so. */
void firn_tool_as_rigid(const firn_tool_def *t, firn_rigid_def *r);

#ifdef __cplusplus
}
#endif

#endif
