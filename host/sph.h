/* sph.h - the SPH solver on the host (host/sph.c: parameters, materials,
 * sampling, statistics; host/sph_cpu.c: the CPU path's phases;
 * kernels/sph.cu: the CUDA path's). Its state is a structure of arrays
 * (include/firn_sph.h) held on the host, and on the GPU resident on the
 * device with the host copy as a mirror. Physics: docs/PHYSICS.md s5. */
#ifndef FIRN_SPH_HOST_H
#define FIRN_SPH_HOST_H

#include "firn.h"
#include "firn_sph.h"
#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

struct firn_sph_cuda; /* kernels/sph.cu */

typedef struct {
    int n;
    firn_sph_params P;                          /* dt updated per substep */
    firn_sph_material mats[FIRN_MAX_MATERIALS]; /* by scene material index */
    firn_sph_particles s;                       /* host state (CPU) / mirror (CUDA) */
    firn_nbr_grid G;                            /* CPU neighbour grid */
    int *cell_count;                            /* CPU counting sort scratch (cells + 1) */
    void *block;                                /* the host allocation of s */
    struct firn_sph_cuda *cuda;                 /* NULL on the CPU path */
    int host_stale;                             /* CUDA: the mirror is older than the device */
    int iters[2];                               /* DFSPH, last substep: divergence, density */
    long long iters_total[2];                   /* DFSPH: iterations since the start */
    long long solves;                           /* DFSPH: substeps solved since the start */
} firn_sph;

/* From the scene: parameters, materials and the particles of every body
 * with solver sph (a lattice of spacing p through the shape, as Genesis's
 * regular sampler). n = 0 when there are none. */
int firn_sph_init(firn_sph *S, const firn_scene_def *def, firn_error *err);
void firn_sph_free(firn_sph *S);
/* Fills P's wall viscosity tables (P->h need not be set: they are in units
 * of h), by quadrature of the integrals in firn_sph_walls. */
void firn_sph_wall_table(firn_sph_params *P);
/* The largest substep the SPH particles allow [s] (docs/PHYSICS.md s5.6):
 * cfl h / (c + v_max + v_gravity) and 0.01 h^2 / nu; *c gets the sound
 * speed, *v the particles' largest speed. Reads the host state. */
float firn_sph_cfl_dt(const firn_sph *S, float cfl, float v_gravity, float *c, float *v);
/* dp/drho of the pressure law at density rho_max, the largest over the
 * particles' WCSPH materials: gamma k / rho0 (rho_max / rho0)^(gamma - 1)
 * (the sound speed squared at rest); 0 under DFSPH, whose pressure no state
 * law gives. A GPU-CPU comparison carries its density tolerance through it
 * into the pressure, which the law amplifies (a rounding difference of
 * 1e-6 rho is 1e-4 of a typical pressure scale). */
double firn_sph_pressure_slope(const firn_sph *S, double rho_max);
/* Memory: the host's (the particles, the CPU neighbour grid and lists), and
 * what the CUDA path allocates for n particles and a neighbour grid of
 * `cells` cells besides CUB's scratch and the materials (kernels/sph.cu
 * checks that its layout adds up to this). */
size_t firn_sph_host_bytes(const firn_sph *S);
size_t firn_sph_device_bytes(int n, int cells);
/* Statistics of the host state. */
void firn_sph_stats(const firn_sph *S, firn_sph_frame_stats *st);

/* The solver's phases (host/sph_cpu.c): pre_coupling sorts the particles
 * into the neighbour grid, computes density and pressure and steps the
 * velocities; post_coupling steps the positions. */
extern const firn_solver firn_sph_solver;
/* CPU path: (re)builds the neighbour grid from the current positions. */
void firn_sph_cpu_sort(firn_sph *S);

#ifdef __cplusplus
}
#endif

#endif
