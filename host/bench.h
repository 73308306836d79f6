/* bench.h - the benchmark's scenes and arithmetic (host/bench.c), used by
 * `firn bench` and tested on their own. */
#ifndef FIRN_BENCH_H
#define FIRN_BENCH_H

#include <stddef.h>

#include "firn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The traffic model (docs/BENCH.md): what an MPM substep's kernels must
 * read and write of each particle's arrays, each once. P2G reads x, v, C,
 * F, Jp, damage, vol (27 floats) and the material index (1 byte), and
 * writes F, Jp, damage (11 floats); G2P reads x and writes x, v, C (3 + 15
 * floats): 109 + 44 + 72 = 225 bytes. G2P2G (--p2g g2p2g) does not read x,
 * v and C back in a fused substep's P2G: 60 bytes fewer. A dense grid adds
 * 80 bytes a node: written by the clear and by P2G (at least once), read
 * and written by the grid update, read by G2P, 16 bytes each. */
#define FIRN_BENCH_P2G_READ_BYTES  (27.0 * 4.0 + 1.0)
#define FIRN_BENCH_P2G_WRITE_BYTES (11.0 * 4.0)
#define FIRN_BENCH_G2P_BYTES       (18.0 * 4.0)
#define FIRN_BENCH_STATE_BYTES                                                                     \
    (FIRN_BENCH_P2G_READ_BYTES + FIRN_BENCH_P2G_WRITE_BYTES + FIRN_BENCH_G2P_BYTES)
#define FIRN_BENCH_FUSED_SAVES (15.0 * 4.0)
#define FIRN_BENCH_NODE_BYTES  (5.0 * 16.0)

/* The MPM scenes first, then the SPH ones (FIRN_BENCH_MPM_SCENES marks
 * where they start). */
typedef enum {
    FIRN_BENCH_SAND = 0,
    FIRN_BENCH_SNOW,
    FIRN_BENCH_DAM,
    FIRN_BENCH_SPH_DAM,       /* SPH dam break, WCSPH */
    FIRN_BENCH_SPH_DAM_DFSPH, /* the same, DFSPH */
    FIRN_BENCH_PBD_CLOTH,     /* a PBD cloth falling onto a rigid sphere */
    FIRN_BENCH_PBD_LIQUID,    /* a PBD liquid (position based fluids) dam break */
    FIRN_BENCH_FEM,           /* an FEM beam swinging from its clamp, explicit */
    FIRN_BENCH_FEM_IMPLICIT,  /* the same, implicit (backward Euler) */
    FIRN_BENCH_SCENES
} firn_bench_scene;
#define FIRN_BENCH_MPM_SCENES FIRN_BENCH_SPH_DAM
typedef enum { FIRN_BENCH_DENSE = 0, FIRN_BENCH_SPARSE } firn_bench_layout;

const char *firn_bench_scene_name(firn_bench_scene s);
/* 1 for the SPH scenes; 1 for the PBD scenes. */
int firn_bench_scene_is_sph(firn_bench_scene s);
int firn_bench_scene_is_pbd(firn_bench_scene s);
/* 1 for the FEM scenes (their count is elements, not particles). */
int firn_bench_scene_is_fem(firn_bench_scene s);

/* Most particles a benchmark case asks for. */
#define FIRN_BENCH_MAX_PARTICLES (FIRN_MAX_PARTICLES - FIRN_MAX_PARTICLES / 100)

/* A standard scene holding about `particles` particles in a 1 m cube: the
 * grid spacing follows from the body volume at 8 particles per cell. Dense:
 * the material fills ~1/8 of the domain; sparse: ~1/64 (more empty grid).
 * At the coarsest grids the domain grows past the cube where the body would
 * come within two cells of a wall. Fewer than 1000 or more than
 * FIRN_BENCH_MAX_PARTICLES particles is FIRN_E_USAGE. */
/*
 * The SPH scenes (sph_dam_break: WCSPH; sph_dam_break_dfsph: DFSPH) are one
 * sph_liquid water column against the x-lower wall and the floor, of the
 * MPM dam break's proportions (0.8 x 1.2 x 1.04 s, s the layout's edge).
 * The lattice spacing a = cbrt(volume / particles) gives the particle
 * diameter p = a / 0.8^(1/3); the column is then a whole number of
 * spacings on each axis (the last chosen to match the count), so that it
 * holds the count asked for to within a few percent (about 2 % from 20k
 * up). Its neighbour grid (cells of h = 2p over the 1 m cube) may hold at
 * most 2^27 cells: about 168M particles dense, 21M sparse; more is
 * FIRN_E_USAGE. The MPM grid (no MPM particles) is a coarse 5 cm one.
 *
 * The PBD scene (pbd_cloth) is a square cloth of N x N vertices, N the
 * nearest to sqrt(particles), 0.8 m wide (dense) or 0.4 m (sparse, in a 2 m
 * domain), 0.3 m above a static sphere of radius 0.2 m: stretch, bending
 * and PBD-rigid contact all work once it lands (about 0.25 s, within the
 * default warm-up). Its particle size is the cloth's edge. The MPM grid is
 * an unused 5 cm one.
 *
 * The PBD liquid scene (pbd_liquid) is the SPH dam break's column in
 * pbd_liquid, on a lattice of spacing p = the particle size, a whole
 * number of spacings on each axis (the last chosen to match the count):
 * the neighbour grid (cells of 1.25 p over the 1 m cube) may hold at most
 * 2^27 cells, about 64M particles dense, 8M sparse.
 *
 * The FEM scenes (fem_beam, fem_beam_implicit) count elements: a stable
 * Neo-Hookean beam (E = 1e5 Pa, nu = 0.3, 1000 kg/m^3) of nx x k x k
 * cells (6 tets each, k the nearest to cbrt(count / 24), at least 2, nx
 * the nearest to count / (6 k^2): the count within a few percent),
 * 0.8 x 0.2 x 0.2 m (dense) or 0.4 x 0.1 x 0.1 m (sparse), clamped at its
 * x-lower end and released straight under gravity, so that it swings and
 * rings; explicit, or implicit (backward Euler, whose CFL step keeps only
 * the motion term). The MPM grid is an unused 5 cm one. */
int firn_bench_make_scene(firn_bench_scene scene, firn_bench_layout layout, long long particles,
                          firn_scene_def *def, firn_error *err);

/* What a case reports of its world beyond the public API (read from the
 * world's internals, host/world.h). grid/nodes: the MPM grid, or for a
 * world without MPM particles, the SPH (else the PBD) neighbour grid's
 * cells; for an FEM world the first body's cells and its vertices. iters,
 * solves: DFSPH's divergence and density iterations and the substeps
 * solved since the world was made (0 for WCSPH); for an FEM world with an
 * implicit body its Newton and CG iterations and implicit solves.
 * elements: the FEM elements (0: none). */
typedef struct {
    int grid[3];
    long long nodes;
    long long sph_particles;
    long long iters[2], solves;
    long long elements;
} firn_bench_world_info;
void firn_bench_world_info_get(const firn_world *w, firn_bench_world_info *info);

/* Particle-substeps per second. */
double firn_bench_throughput(long long particles, long long substeps, double seconds);
/* The model's bytes per particle-substep: the particles', in calls of
 * `substeps` (fused: G2P2G, whose calls fuse all but their first P2G),
 * and a dense grid's `nodes` over the particles (0 nodes: a grid whose
 * touched nodes the host does not know, the CPU's or a sparse one). */
double firn_bench_traffic(long long particles, long long nodes, int substeps, int fused);
/* Achieved bandwidth [bytes/s] at a throughput of the model's traffic. */
double firn_bench_bandwidth(double throughput, double traffic);
/* Median of n values (n >= 1); sorts a copy. */
double firn_bench_median(const double *v, int n);
/* Parses "100k,1m,8m,32m" (k = 1e3, m = 1e6, g = 1e9, case-insensitive);
 * returns the count of values or -1 on a malformed list. */
int firn_bench_parse_counts(const char *s, long long *out, int max);
/* Host memory copy bandwidth [bytes/s, read + write], best of 3 copies of
 * `bytes`, all threads. */
double firn_bench_host_copy_bandwidth(size_t bytes);

/* What the benchmark measures of the device itself (kernels/bench.cu;
 * host/device.c without CUDA): device-to-device copy bandwidth [bytes/s,
 * read + write] of `bytes`, best of 3, or 0 on failure; device memory in
 * use [bytes] (total - free), or 0. */
double firn_cuda_copy_bandwidth(size_t bytes);
size_t firn_cuda_used_bytes(void);

#ifdef __cplusplus
}
#endif

#endif
