/* sample.h - the particle state on the host: allocation, the initial
 * particles sampled from a scene's bodies, and the permutations of every
 * per-particle array (host/sample.c). */
#ifndef FIRN_SAMPLE_H
#define FIRN_SAMPLE_H

#include "firn.h"
#include "firn_cpic.h"
#include "firn_material.h"
#include "firn_mpm.h"
#include "mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A body shape made ready for sampling: a mesh shape's file loaded (once
 * per process, through firn_mesh_get) and its triangle hierarchy built, so
 * that the inside test costs no file access. Every particle solver samples
 * its bodies with these. */
typedef struct {
    firn_shape_def def;    /* a copy of the definition */
    const firn_mesh *mesh; /* mesh: body frame, centroid at the origin (the cache's) */
    firn_mesh_bvh *bvh;    /* mesh: exact signed distance; owned */
    float lo[3], hi[3];    /* mesh: the placed mesh's bounds [m] */
} firn_prepared_shape;

/* Prepares def. Errors (a mesh's: FIRN_E_IO unreadable file, FIRN_E_SCENE
 * malformed or open mesh, or scale not > 0; FIRN_E_NOMEM) start with the key
 * within the shape ("file: mesh '...': ...", "scale = 0: ..."): callers put
 * the shape's key path before it. firn_shape_release frees what it holds
 * (safe on a zeroed or released shape). */
int firn_shape_prepare(const firn_shape_def *def, firn_prepared_shape *s, firn_error *err);
void firn_shape_release(firn_prepared_shape *s);
/* The shape's axis-aligned bounds [m], and whether it holds point x
 * (boundary included; a mesh: exact signed distance <= 0). Thread-safe. */
void firn_shape_bounds(const firn_prepared_shape *s, float lo[3], float hi[3]);
int firn_shape_contains(const firn_prepared_shape *s, const float x[3]);

/* Initial particles from the scene's bodies (host/sample.c). */
int firn_sample_bodies(const firn_scene_def *def, const firn_material *mats, firn_particles *p,
                       firn_error *err);
int firn_particles_alloc(firn_particles *p, int n);
/* CPIC records (p->cpic, zeroed: "out of reach"), `slots` per particle. */
int firn_particles_alloc_cpic(firn_particles *p, int slots);
void firn_particles_free(firn_particles *p);
/* Spatial reordering of the initial particles (host/sample.c); -1 when out
 * of memory. */
int firn_particles_sort_spatial(firn_particles *p, const firn_params *P);
/* Permutations of every per-particle array, CPIC records included, through
 * scratch of 4n bytes (host/sample.c): gather p[i] <- p[order[i]], and
 * id[i] <- id[order[i]] when id is not NULL; scatter p[where[i]] <- p[i]. */
#define FIRN_PARTICLE_ARRAYS (28 + FIRN_CPIC_MAX + 1)
void firn_particles_gather(firn_particles *p, const int *order, int *id, void *scratch);
void firn_particles_scatter(firn_particles *p, const int *where, void *scratch);

#ifdef __cplusplus
}
#endif

#endif
