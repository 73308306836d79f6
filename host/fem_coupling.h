/* fem_coupling.h - the FEM pairs on the CPU (host/fem_coupling.c): the
 * surface's vertex-to-triangle lists, built once, and the passes of
 * include/firn_fem_coupling.h in their order, gathers in parallel, scatters
 * in vertex order on one thread, so that every result is the same for any
 * thread count. docs/PHYSICS.md, FEM pairs. */
#ifndef FIRN_FEM_COUPLING_HOST_H
#define FIRN_FEM_COUPLING_HOST_H

#include "fem.h"
#include "firn_fem_coupling.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Surface vertex k's triangles: (*vf)[(*vf_start)[k] .. (*vf_start)[k+1]),
 * indices into S->face, ascending; *vf_start has S->ns + 1 entries, *vf
 * 3 S->nf. The caller frees both. Errors: FIRN_E_NOMEM; FIRN_E_SCENE when a
 * triangle names a vertex that is not in S->surf (S not from
 * firn_fem_build). */
int firn_fem_surface_faces(const firn_fem *S, int **vf_start, int **vf, firn_error *err);

/* The surface the FEM pairs share on the CPU path into S: its
 * vertex-to-triangle lists (firn_fem_surface_faces) and room for its
 * normals; firn_fem_free frees them. 0, or -1 with err set. */
int firn_fem_surface_alloc(firn_fem *S, firn_error *err);

/* The view of S's surface the pairs take (firn_fem_surface_alloc's). */
firn_fem_surface firn_fem_surface_of(const firn_fem *S);

/* Chunks of surface vertices whose rigid reactions are summed apart, and
 * the doubles firn_fem_rigid_cpu's chunk_acc must hold. */
#define FIRN_FEM_COUPLE_CHUNK 256
long long firn_fem_rigid_chunk_doubles(int ns, int nb);

/* firn_fem_surface_normal at every surface vertex. */
void firn_fem_normals_cpu(const firn_fem_surface *S);

/* FEM-Rigid at every surface vertex: each chunk of vertices sums its
 * reactions in vertex order into its slot of chunk_acc, the slots are added
 * into acc[nb][6] in chunk order. */
void firn_fem_rigid_cpu(const firn_fem_surface *S, const firn_rigid *bodies, int nb,
                        double *chunk_acc, double *acc);

/* FEM-MPM (after the grid update, before G2P): D is 4 floats per grid
 * node, zero on entry and on return. Only the nodes of the vertices'
 * stencils are visited. */
void firn_fem_mpm_cpu(const firn_fem_surface *S, const firn_params *P, firn_grid g, float *D);

/* FEM-SPH's contact distance (W->fem_key and W->fem_d, W->s.n each):
 * the keys to ~0, firn_fem_sph_face for every triangle in parallel (an
 * atomic minimum: the same keys for any thread count), then
 * firn_fem_sph_resolve for every particle in parallel. */
void firn_fem_sph_distance_cpu(const firn_fem_surface *S, const firn_sph_view *W);

/* FEM-SPH: with the contact distance (W->fem_d), the wall term at every
 * particle in particle order on one thread, then the vertices' contact;
 * share holds 3 S->ns floats, count W->s.n floats (scratch). */
void firn_fem_sph_cpu(const firn_fem_surface *S, const firn_sph_view *W, float *share,
                      float *count);

#ifdef __cplusplus
}
#endif

#endif
