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

/* A tool as a kinematic rigid (its shape, pose, velocities and keyframes
 * in a default rigid): the rigid bodies' checks and keyframe set-up take
 * it so. */
void firn_tool_as_rigid(const firn_tool_def *t, firn_rigid_def *r);

#ifdef __cplusplus
}
#endif

#endif
