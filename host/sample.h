/* sample.h - the particle state on the host: allocation, the initial
 * particles sampled from a scene's bodies, and the permutations of every
 * per-particle array (host/sample.c). */
#ifndef FIRN_SAMPLE_H
#define FIRN_SAMPLE_H

#include "firn.h"
#include "firn_cpic.h"
#include "firn_material.h"
#include "firn_mpm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A body shape's axis-aligned bounds, and whether it holds point x
 * (boundary included); every particle solver samples its bodies with these. */
void firn_shape_bounds(const firn_shape_def *s, float lo[3], float hi[3]);
int firn_shape_contains(const firn_shape_def *s, const float x[3]);

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
