/* pbd.h - the PBD solver on the host (host/pbd.c: parameters, materials,
 * the particles and constraints of the scene's bodies, their colouring,
 * statistics; host/pbd_cpu.c: the CPU path's phases; kernels/pbd.cu: the
 * CUDA path's). Its state is a structure of arrays (include/firn_pbd.h)
 * held on the host, and on the GPU resident on the device with the host
 * copy as a mirror. Physics: docs/PHYSICS.md s6. */
#ifndef FIRN_PBD_HOST_H
#define FIRN_PBD_HOST_H

#include "firn.h"
#include "firn_pbd.h"
#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most colours a constraint graph may need (a vertex in more than this
 * many constraints of one kind cannot be coloured). */
#define FIRN_PBD_MAX_COLOURS 256

struct firn_pbd_cuda; /* kernels/pbd.cu */

typedef struct {
    int n;
    firn_pbd_params P;                          /* dt updated per substep */
    firn_pbd_material mats[FIRN_MAX_MATERIALS]; /* by scene material index */
    firn_pbd_particles s;
    firn_pbd_constraints stretch; /* one per unique cloth edge */
    firn_pbd_constraints bend;    /* one per inner edge (two triangles) */
    int stretch_iterations, bending_iterations;
    int density_iterations, viscosity_iterations;
    int particle_passes; /* 1: liquid or free particles, so the neighbour grid, PBF and contact
                            run each substep; 0: cloth only */
    firn_nbr_grid G;     /* CPU neighbour grid (cells of P.nb; no lists: positions move between
                            the passes that read it) */
    int *cell_count;     /* CPU counting sort scratch (cells + 1) */
    int triangles;
    int *tri; /* 3 per cloth triangle */
    long long pinned;
    int body_first[FIRN_MAX_BODIES + 1]; /* particles of scene body b: [body_first[b],
                                            body_first[b + 1]) */
    struct firn_pbd_cuda *cuda;          /* NULL on the CPU path */
    int host_stale; /* CUDA: the mirror (x, v, x0, lambda) is older than the device */
} firn_pbd;

/* From the scene: parameters, materials, and the particles and constraints
 * of every body with solver pbd: a cloth's vertices (rectangle or OBJ
 * surface), edges, inner edges and pins; a pbd_particle body's lattice of
 * spacing pbd.particle_size through its shape. n = 0 when there are none. */
int firn_pbd_init(firn_pbd *S, const firn_scene_def *def, firn_error *err);
void firn_pbd_free(firn_pbd *S);
/* Whether the scene has PBD bodies. */
int firn_pbd_in_scene(const firn_scene_def *def);
/* Greedy colouring of C's constraints (over nverts particles), in
 * constraint order, each into the lowest colour none of its vertices has;
 * fills order, colours and colour_start. -1 with err filled when a vertex
 * needs more than FIRN_PBD_MAX_COLOURS colours or memory runs out. */
int firn_pbd_colour(firn_pbd_constraints *C, int nverts, firn_error *err);
/* The largest substep the PBD particles allow [s]: a free particle moves at
 * most cfl p per substep at its speed plus v_gravity, so that it cannot
 * pass a rigid surface's contact layer (p / 2) unseen; with liquid, at
 * most the step at which a resting column of its depth reaches the
 * compression FIRN_PBF_COMPRESSION. INFINITY when nothing moves. */
float firn_pbd_cfl_dt(const firn_pbd *S, float cfl, float v_gravity, float *v_max);
/* The compression C = rho / rho0 - 1 a resting liquid column may reach at
 * its bottom at the CFL step (firn_pbd_cfl_dt; docs/PHYSICS.md s6.7). */
#define FIRN_PBF_COMPRESSION 0.005f
/* L^2 = S / D of the density iterations in the lattice [m^2]: with
 * g_ij = p^3 grad W (x_i - x_j), S = sum_j (z_j - z_i) g_ij,z and
 * D = sum_j |g_ij|^2 + eps, one iteration of relaxation omega moves a
 * particle by omega L^2 |dC/dz| up a compression gradient dC/dz. */
float firn_pbf_reach2(const firn_pbd_params *P);
void firn_pbd_stats(const firn_pbd *S, firn_pbd_frame_stats *st);
/* Memory: the host's (particles, constraints, triangles, neighbour grid),
 * and what the CUDA path allocates for n particles, `edges` stretch and
 * `bends` bending constraints and a neighbour grid of `cells` cells (0:
 * none) besides CUB's scratch, the materials and its non-finite word
 * (kernels/pbd.cu checks that its layout adds up to this). */
size_t firn_pbd_host_bytes(const firn_pbd *S);
size_t firn_pbd_device_bytes(int n, int edges, int bends, int cells);
/* A cloth_rect of n0 x n1 vertices before it is built: its vertices,
 * triangles, stretch constraints (edges) and bending constraints (inner
 * edges), and the host bytes firn_pbd_host_bytes gives for a PBD solver
 * of that cloth alone. */
typedef struct {
    long long vertices, triangles, edges, bends;
    double host_bytes;
} firn_pbd_rect_size;
void firn_pbd_rect_estimate(int n0, int n1, firn_pbd_rect_size *out);
/* The spacing s in [0.9 p, p] of the cubic lattice whose kernel sum is rest
 * density at a particle mass of rho0 s^3, s^3 sum_k W(|k| s) = 1, by
 * bisection: a pbd_liquid body's lattice spacing, about (host/pbd.c). With
 * the kernel scaled so that the lattice of spacing p reads rest density
 * (s6.8), it is p to float rounding. */
float firn_pbf_rest_spacing(const firn_pbd_params *P);
/* The solver's kernel constants, neighbour space and density relaxation
 * epsilon from P->psize and the box (host/pbd.c). */
void firn_pbd_params_kernels(firn_pbd_params *P);

/* The solver's phases (host/pbd_cpu.c): pre_coupling predicts and runs the
 * constraint iterations, post_coupling sets the velocities and applies the
 * box. */
extern const firn_solver firn_pbd_solver;
/* CPU path: one Gauss-Seidel sweep over C, colour by colour, each colour's
 * constraints in parallel (bend: bending constraints, else stretch). */
void firn_pbd_cpu_sweep(const firn_pbd_constraints *C, int bend, float dt, firn_pbd_particles s);
/* CPU path: the particle passes of a substep after the constraints (the
 * neighbour grid, the density and viscosity iterations, contact),
 * docs/PHYSICS.md s6.8. The nb bodies' surfaces take part in the density
 * constraint (firn_pbf_body), their reactions summed per chunk of
 * FIRN_COUPLE_CHUNK particles into chunk_acc (one slot of
 * nb * FIRN_RIGID_ACC per chunk) and then into acc; nb = 0: none. */
void firn_pbd_cpu_particle_passes(firn_pbd *S, const firn_rigid *bodies, int nb, double *chunk_acc,
                                  double *acc);

#ifdef __cplusplus
}
#endif

#endif
