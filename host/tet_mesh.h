/* tet_mesh.h - tetrahedral meshes for FEM bodies (host/tet_mesh.c: the
 * checks, the orientation and the surface; generated boxes; host/tet_io.c:
 * TetGen and Gmsh files, generated spheres). A mesh is built once, at world
 * creation, and then handed to the FEM solver, which keeps only its arrays. */
#ifndef FIRN_TET_MESH_H
#define FIRN_TET_MESH_H

#include "firn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A checked tetrahedral mesh (firn_tet_mesh_finish). Every tet is
 * positively oriented: det[x1 - x0, x2 - x0, x3 - x0] > 0. The surface is
 * the set of faces that belong to exactly one tet, each counter-clockwise
 * seen from outside; every surface edge is shared by exactly two surface
 * faces. Every vertex belongs to at least one tet. */
typedef struct {
    int nv;        /* vertices */
    int ne;        /* tetrahedra */
    int nf;        /* surface triangles */
    int ns;        /* surface vertices */
    double *x;     /* 3 nv coordinates, interleaved (x0 y0 z0 x1 ...) [m] */
    int *tet;      /* 4 ne vertex indices */
    int *face;     /* 3 nf vertex indices of the surface triangles */
    int *face_tet; /* nf: the tet each surface triangle belongs to */
    int *surf;     /* ns surface vertex indices, ascending */
} firn_tet_mesh;

/* A box [lo, hi] of n[0] x n[1] x n[2] cells, each cut into 6 tets about its
 * diagonal from the lowest to the highest corner (the Freudenthal / Kuhn
 * triangulation, conforming across cells): (n0+1)(n1+1)(n2+1) vertices,
 * 6 n0 n1 n2 tets. Errors: FIRN_E_USAGE (n < 1, lo >= hi, too many
 * elements), FIRN_E_NOMEM. m is finished (checked, with its surface). */
int firn_tet_mesh_box(const double lo[3], const double hi[3], const int n[3], firn_tet_mesh *m,
                      firn_error *err);

/* Checks a mesh whose nv, ne, x and tet are filled (face, face_tet and surf
 * NULL) and completes it:
 *  - every index is in [0, nv) and a tet's 4 vertices are distinct;
 *  - coordinates are finite;
 *  - no tet is degenerate: |volume| > 1e-9 of the cube of its longest edge;
 *  - all tets have one orientation: if all are negative, two vertices of
 *    every tet are swapped; a tet against the majority is inverted;
 *  - no face belongs to more than two tets;
 *  - the surface is a closed 2-manifold (each surface edge in exactly two
 *    surface faces);
 *  - vertices that belong to no tet are removed (indices renumbered).
 * Errors: FIRN_E_SCENE with a message that starts with name and names the
 * element, face or edge (element and vertex numbers as in the input, from
 * 0); FIRN_E_NOMEM. On failure m is left as it was given. */
int firn_tet_mesh_finish(firn_tet_mesh *m, const char *name, firn_error *err);

/* Reads a tetrahedral mesh file, by its extension:
 *  - TetGen: NAME.node and NAME.ele, given either one or NAME alone (when
 *    both exist). Headers "<nodes> [3 [<attributes> [<markers 0|1>]]]" and
 *    "<tets> [4 [<attributes>]]" (missing fields take these defaults);
 *    lines "<number> <x> <y> <z> [attributes] [marker]" and "<number> <4
 *    node numbers> [attributes]"; '#' comments and blank lines anywhere.
 *    Node numbers are the .node's own (from 0, 1 or anything, as long as
 *    they are distinct); 10-node tets are refused.
 *  - Gmsh: NAME.msh, ASCII, format version 2.2 or 4.1 (its $MeshFormat
 *    decides); 4-node tetrahedra (element type 4) are taken, every other
 *    element type is skipped, sections other than $MeshFormat, $Nodes and
 *    $Elements are skipped; node tags may be sparse and in any order.
 * Coordinates are multiplied by scale (> 0), then the mesh is finished
 * (firn_tet_mesh_finish, with path as its name; a message naming an
 * element adds its number and line in the file). Errors: FIRN_E_IO (a
 * missing or unreadable file, naming it), FIRN_E_SCENE (malformed content:
 * "path:line: expected ..."; a binary .msh, another version, an unknown
 * node, no tetrahedra; or a check of firn_tet_mesh_finish), FIRN_E_USAGE
 * (scale), FIRN_E_NOMEM. On failure m is zeroed. */
int firn_tet_mesh_load(const char *path, double scale, firn_tet_mesh *m, firn_error *err);

/* A ball of radius r [m] centred at c: the cube [-1, 1]^3 cut into n x n x
 * n cells, 6 tets each, mapped onto the ball shell by shell (the cube shell
 * at max-norm s goes to the sphere of radius r s, through the equiangular
 * cubed-sphere map). n is the number of cells - and of tets along a
 * diameter through the centre parallel to an axis - across the ball:
 * (n+1)^3 vertices, 6 n^3 tets, 12 n^2 surface triangles, whose vertices
 * lie on the sphere. Dihedral angles lie between 26.3 and 114 degrees for
 * every n tested (1 to 48; the map draws every shell alike, so they do not
 * degrade with n); the volume falls short of 4/3 pi r^3 by about 1 / n^2
 * of it.
 * Errors: FIRN_E_USAGE (n outside 1..400, r not positive, c not finite),
 * FIRN_E_NOMEM. */
int firn_tet_mesh_sphere(const double c[3], double r, int n, firn_tet_mesh *m, firn_error *err);

/* Frees the arrays and zeroes m. */
void firn_tet_mesh_free(firn_tet_mesh *m);

/* Signed volume of tet e [m^3] (positive in a finished mesh). */
double firn_tet_mesh_volume(const firn_tet_mesh *m, int e);

/* The centroid of m's solid (its tets' centroids weighted by volume) [m]:
 * an FEM mesh file's body is placed with it at the shape's center. */
void firn_fem_mesh_centroid(const firn_tet_mesh *m, double c[3]);

#ifdef __cplusplus
}
#endif

#endif
