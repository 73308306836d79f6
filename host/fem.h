/* fem.h - the FEM solver on the host (host/fem.c: its bodies' vertices and
 * elements built from checked tetrahedral meshes, rest data, lumped masses,
 * adjacency and surfaces; the scene's FEM bodies, their CFL limit and
 * statistics; host/fem_cpu.c: the CPU path's phases). Its state is a
 * structure of arrays (include/firn_fem.h). Physics: docs/PHYSICS.md, FEM
 * section. */
#ifndef FIRN_FEM_HOST_H
#define FIRN_FEM_HOST_H

#include <stdio.h>

#include "firn.h"
#include "firn_fem.h"
#include "solver.h"
#include "tet_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most FEM bodies in a world. */
#define FIRN_FEM_MAX_BODIES FIRN_MAX_BODIES

struct firn_fem_cuda; /* kernels/fem.cu */

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
    /* The surface the FEM pairs share on the CPU path (firn_fem_surface_alloc,
     * host/fem_coupling.c; NULL without a pair): each surface vertex's
     * triangles, surface vertex k's at vf[vf_start[k] .. vf_start[k + 1]),
     * and the vertices' normals, 3 ns floats component-major. */
    int *vf_start, *vf;
    float *normal;
    float h_min;                       /* shortest tet altitude at rest, over all elements [m] */
    float h_body[FIRN_FEM_MAX_BODIES]; /* the same per body [m] */
    /* Set by firn_fem_init (a scene's bodies); firn_fem_build leaves them,
     * but for scene_body, which it sets to -1 (no scene). */
    firn_fem_params P;                   /* dt updated per substep */
    int scene_body[FIRN_FEM_MAX_BODIES]; /* body b's index in the scene's bodies, or -1 */
    int body_mat[FIRN_FEM_MAX_BODIES];   /* body b's material index */
    long long fixed;                     /* fixed vertices */
    /* Implicit bodies (host/fem_implicit.c): implicit[b] = 1 for body b's
     * backward Euler; their solver's scratch (a firn_fem_implicit_work,
     * firn_fem_implicit_attach's, NULL when no body is implicit); the first body whose solve failed
     * this substep (-1: none), reported by post_coupling, and its message. */
    uint8_t implicit[FIRN_FEM_MAX_BODIES];
    void *implicit_work;
    int implicit_failed;
    firn_error implicit_error;
    /* Since the world was made: implicit solves (a body's substep), their
     * Newton and CG iterations (firn_fem_implicit_stats). */
    long long implicit_solves, newton_iters, pcg_iters;
    /* CUDA path (kernels/fem.cu): the device state, NULL on the CPU path;
     * host_stale: the mirror's x, v, x0 and f are older than the device's. */
    struct firn_fem_cuda *cuda;
    int host_stale;
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
/* Frees S's arrays and zeroes S but for its materials; the implicit
 * solver's scratch goes first (firn_fem_implicit_detach). */
void firn_fem_free(firn_fem *S);

/* FEM body b as messages name it, into buf: the scene's key path
 * "bodies[i]" (body b is not the scene's bodies[b] when other solvers'
 * bodies come first), or "FEM body b" for one built by firn_fem_build
 * without a scene. */
static inline const char *firn_fem_body_name(const firn_fem *S, int b, char *buf, size_t size)
{
    if (b >= 0 && b < S->bodies && S->scene_body[b] >= 0)
        snprintf(buf, size, "bodies[%d]", S->scene_body[b]);
    else
        snprintf(buf, size, "FEM body %d", b);
    return buf;
}

/* Whether the scene has FEM bodies. */
int firn_fem_in_scene(const firn_scene_def *def);
/* The FEM bodies of def (the world's: its domain's upper faces rounded to
 * the grid): materials, meshes (a box: firn_tet_mesh_box of its cells),
 * initial velocities, fixed vertices (by index in the body's vertex order
 * and/or inside the box at rest), the walls and fem.damping. S->V.n = 0
 * when there are none. Errors: FIRN_E_SCENE naming bodies[i], FIRN_E_NOMEM. */
int firn_fem_init(firn_fem *S, const firn_scene_def *def, firn_error *err);
/* The largest substep the FEM bodies allow [s]: cfl times the shortest
 * element altitude over the fastest signal in its body, the P-wave speed
 * (firn_fem_wave_speed) plus the vertices' largest speed and v_gravity.
 * INFINITY without bodies. *c gets the P-wave speed, *v_max the vertex
 * speed and *body the scene index of the limiting body (may be NULL). */
float firn_fem_cfl_dt(const firn_fem *S, float cfl, float v_gravity, float *c, float *v_max,
                      int *body);
/* Element e's Cauchy stress and Green strain (6 components, xx yy zz xy yz
 * xz) and von Mises stress at the current positions. */
void firn_fem_element_measures(const firn_fem *S, int e, float stress[6], float strain[6],
                               float *von_mises);
/* Statistics in double, in vertex and element order. */
void firn_fem_stats(const firn_fem *S, firn_fem_frame_stats *st);
/* Host memory of the solver's state [bytes]. */
size_t firn_fem_host_bytes(const firn_fem *S);
/* What the CUDA path allocates for the FEM state (kernels/fem.cu checks
 * that its layout adds up to this): nv vertices, ne elements, nf surface
 * triangles over ns surface vertices, the FEM-MPM scratch over `nodes` MPM
 * nodes (0: the pair is off) and the FEM-SPH ones (share set; a counter per
 * each of sph_n SPH particles; contact set: the contact distance's key and
 * distance per particle, host/mpm_sph.h firn_fem_sph_contact), each array
 * 256-byte aligned [bytes]. */
size_t firn_fem_device_bytes(int nv, int ne, int nf, int ns, long long nodes, int share, int sph_n,
                             int contact);
/* Whether a body of def is an FEM body with "integrator": "implicit". */
int firn_fem_scene_implicit(const firn_scene_def *def);

/* The solver's phases (host/fem_cpu.c): pre_coupling computes the element
 * forces and the vertices' velocities, post_coupling their positions. */
extern const firn_solver firn_fem_solver;

#ifdef __cplusplus
}
#endif

#endif
