/* fem.h - the FEM solver on the host (host/fem.c: its bodies' vertices and
 * elements built from checked tetrahedral meshes, rest data, lumped masses,
 * adjacency and surfaces). Its state is a structure of arrays
 * (include/firn_fem.h). Physics: docs/PHYSICS.md, FEM section. */
#ifndef FIRN_FEM_HOST_H
#define FIRN_FEM_HOST_H

#include "firn.h"
#include "firn_fem.h"
#include "tet_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most FEM bodies in a world. */
#define FIRN_FEM_MAX_BODIES FIRN_MAX_BODIES

typedef struct {
    firn_fem_vertices V;
    firn_fem_elements E;
    firn_fem_material mats[FIRN_MAX_MATERIALS]; /* by material index (E.mat) */
    int bodies;
    /* Body b's vertices are [v_first[b], v_first[b + 1]), its elements
     * [e_first[b], e_first[b + 1]), its surface triangles [f_first[b],
     * f_first[b + 1]) and surface vertices [s_first[b], s_first[b + 1]). */
    int v_first[FIRN_FEM_MAX_BODIES + 1], e_first[FIRN_FEM_MAX_BODIES + 1];
    int f_first[FIRN_FEM_MAX_BODIES + 1], s_first[FIRN_FEM_MAX_BODIES + 1];
    int nf, ns;
    int *face;     /* 3 nf surface triangles, vertex indices of V, outward */
    int *face_tet; /* nf: the element of E each belongs to */
    int *surf;     /* ns surface vertices, ascending within each body */
    float h_min;   /* shortest tet altitude at rest, over all elements [m] */
} firn_fem;

/* Builds S's vertices, elements and surfaces from nbodies checked meshes,
 * body b made of material mat[b] (an index into S->mats, which the caller
 * fills first): rest data Dm^-1 and V per element, lumped vertex masses
 * (sum of rho V / 4 over a vertex's elements), the vertex-to-slot
 * adjacency, v = 0, nothing fixed. S's other fields are zeroed first; on
 * failure S holds nothing. Errors: FIRN_E_SCENE (an element that float
 * rounding leaves without a positive volume, named by body and element),
 * FIRN_E_NOMEM. */
int firn_fem_build(firn_fem *S, const firn_tet_mesh *meshes, const int *mat, int nbodies,
                   firn_error *err);
void firn_fem_free(firn_fem *S);

#ifdef __cplusplus
}
#endif

#endif
