/* surface.h - triangulated surfaces of the rigid bodies' and tools' shapes,
 * for the per-frame PLY meshes (firn_write_shapes_ply in firn.h). */
#ifndef FIRN_SURFACE_H
#define FIRN_SURFACE_H

#include "firn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Subdivisions of the round shapes: segments around the axis (a regular
 * polygon), and rings from pole to pole of a sphere (half that per
 * hemisphere of a capsule). */
#define FIRN_SURFACE_SEGMENTS 32
#define FIRN_SURFACE_RINGS    16

/* A triangle mesh: nv vertices (x y z each, interleaved) and nt triangles,
 * counter-clockwise seen from outside. */
typedef struct {
    int nv, nt;
    float *v;
    int *tri;
} firn_surface;

/* The surface of shape s in its body frame (its centre, a mesh's centroid,
 * at the origin; a capsule's or cylinder's axis along s->axis): a box's 12
 * triangles, polygonal spheres, capsules and cylinders whose vertices lie on
 * the exact surface, a mesh's own triangles, and for a plane the square of
 * half side plane_half about the origin. 0, or FIRN_E_NOMEM / a mesh's load
 * error with err filled. */
int firn_shape_surface(const firn_rigid_shape_def *s, float plane_half, firn_surface *out,
                       firn_error *err);
void firn_surface_free(firn_surface *m);

#ifdef __cplusplus
}
#endif

#endif
