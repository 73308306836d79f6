/* mesh.h - triangle meshes (host/mesh.c). */
#ifndef FIRN_MESH_H
#define FIRN_MESH_H

#include "firn.h"
#include "firn_sdf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Triangle meshes (host/mesh.c): a closed, manifold OBJ solid in its body
 * frame - scaled, centroid at the origin - with its volume integrals and,
 * built on first request, its SDF grid. */
typedef struct firn_mesh {
    int nv, nt;
    float *v;            /* 3 nv vertex coordinates, body frame [m] */
    int *tri;            /* 3 nt vertex indices, counter-clockwise seen from outside */
    double volume;       /* [m^3] */
    double centroid[3];  /* in the file's frame, scaled [m] */
    double inertia[6];   /* about the centroid, per unit density: xx yy zz xy xz yz [m^5] */
    float moments[3];    /* principal moments per unit density [m^5] */
    firn_quat principal; /* body frame to the principal axes' frame */
    float half[3];       /* half-extents of the bounding box about the centroid [m] */
    float *grid;         /* SDF grid (firn_sdf_shape), NULL until requested */
    int n[3];
    float lo[3], h[3];
} firn_mesh;

/* The mesh of an OBJ file at a scale, loaded and checked once per process
 * and kept (keyed by path, scale, size and modification time); with_sdf
 * also builds its SDF grid. Errors: FIRN_E_IO (unreadable file), FIRN_E_SCENE
 * (malformed, empty, not closed and manifold, no volume), FIRN_E_NOMEM;
 * messages name the file, not the scene key. Thread-safe. */
int firn_mesh_get(const char *path, float scale, int with_sdf, const firn_mesh **out,
                  firn_error *err);
/* A mesh from vertex and triangle arrays (tests, meshes built in code);
 * name labels messages. The caller frees it with firn_mesh_free. */
int firn_mesh_build(const float *v, int nv, const int *tri, int nt, const char *name,
                    firn_mesh **out, firn_error *err);
int firn_mesh_build_sdf(firn_mesh *m, firn_error *err);
/* The vertices (3 nv coordinates, scaled, in the file's frame) and
 * triangles (3 nt indices, polygons fanned) of an OBJ file, with no check
 * that they close a solid: a surface such as a PBD cloth. The caller frees
 * *v and *tri. Errors as firn_mesh_get's for the file itself. */
int firn_mesh_read_surface(const char *path, float scale, float **v, int *nv, int **tri, int *nt,
                           firn_error *err);

/* A bounding-volume hierarchy over a mesh's triangles with their
 * angle-weighted pseudo-normals: the exact signed distance at any point, not
 * the SDF grid's trilinear estimate. It refers to m, which must outlive it.
 * Errors: FIRN_E_NOMEM. */
typedef struct firn_mesh_bvh firn_mesh_bvh;
int firn_mesh_bvh_create(const firn_mesh *m, firn_mesh_bvh **out, firn_error *err);
void firn_mesh_bvh_free(firn_mesh_bvh *b);
/* Signed distance [m] from p (body frame) to the surface, negative inside;
 * g (may be NULL) gets its gradient. Thread-safe, deterministic. */
double firn_mesh_bvh_distance(const firn_mesh_bvh *b, const double p[3], double g[3]);
void firn_mesh_free(firn_mesh *m);
/* The mesh's SDF grid as a shape (grid pointer in host memory). */
void firn_mesh_sdf_shape(const firn_mesh *m, firn_sdf_shape *s);

#ifdef __cplusplus
}
#endif

#endif
