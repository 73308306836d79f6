/* scene_hash.h - the hash of what a scene simulates (host/scene_hash.c),
 * for the world (host/world.c) and its checkpoints (host/checkpoint.c). */
#ifndef FIRN_SCENE_HASH_H
#define FIRN_SCENE_HASH_H

#include <stdint.h>

#include "firn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 64-bit FNV-1a hash of what a scene simulates: every field of def except
 * time.frames and output.* (dir, every, ply, preview) and the file it came
 * from, so that a run may be resumed with more frames or into another
 * folder; a mesh enters with its file's contents, not its path. */
uint64_t firn_scene_hash(const firn_scene_def *def);

#ifdef __cplusplus
}
#endif

#endif
