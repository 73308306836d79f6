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

/* The shape's exact volume [m^3]: a box's, sphere's or cylinder's closed
 * form, a mesh's enclosed volume (its signed tetrahedra about the origin,
 * host/mesh.c); 0 for a cloth. */
double firn_shape_volume(const firn_prepared_shape *s);

/* A regular lattice through a shape's bounds: point (i, j, k), for i below
 * n[0] and so on, at first + (i step[0], j step[1], k step[2]); a body
 * gets the points its shape contains (the SPH and PBD solvers'). */
typedef struct {
    int n[3];        /* points along each axis */
    float step[3];   /* spacing along each axis [m] */
    float first[3];  /* point (0, 0, 0) [m] */
    long long count; /* the points inside the shape */
} firn_fill;

/* Genesis's regular sampler: spacing s, as many whole spacings as fit the
 * bounds on each axis (at least one), centred in them. A body of extent L
 * then spans floor(L / s) s, up to a spacing short of L. */
void firn_fill_regular(const firn_prepared_shape *s, float spacing, firn_fill *f);
/* A lattice that fills the shape: n[a] cells of edge step[a] = L[a] / n[a]
 * split the bounds' extent L[a] along axis a, a point at each cell's centre,
 * so that a box holds exactly its volume in cells. n[a] is the nearest
 * whole number to L[a] / s; with `misfit` it is instead that or one more
 * or less, the choice that minimises misfit(step, arg) (the PBD solver's
 * liquid: its lattice's kernel sum's distance from rest density). A curved shape
 * (sphere, cylinder, mesh) holds its volume up to the cells its surface
 * cuts; among FIRN_FILL_SHIFTS shifts of the lattice within half a cell,
 * the one whose count times the cell volume is closest to the exact
 * volume is taken (the first, unshifted, when it is within 0.01 %).
 * Deterministic, the same for any thread count. */
#define FIRN_FILL_SHIFTS 32
typedef double (*firn_fill_misfit)(const double step[3], const void *arg);
void firn_fill_fit(const firn_prepared_shape *s, float spacing, firn_fill_misfit misfit,
                   const void *arg, const float region_lo[3], const float region_hi[3],
                   firn_fill *f);
/* (With region_lo and region_hi, not NULL, the lattice fills the shape's
 * bounds clipped to that box instead, and the volume the shifts aim at is
 * the shape's times the clipped bounds' share of the bounds: exact for a
 * box.) */
/* Visits the points inside the shape in order (i, then j, then k); writes
 * them, component-major with stride n, from x[q0] on when x is not NULL.
 * Returns how many. */
long long firn_fill_points(const firn_prepared_shape *s, const firn_fill *f, float *x, int n,
                           long long q0);

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
