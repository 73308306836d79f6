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
 * v and C back in a fused substep's P2G, nor write v and C in its G2P (the
 * call's last G2P does): 108 bytes fewer. A dense grid adds
 * 80 bytes a node: written by the clear and by P2G (at least once), read
 * and written by the grid update, read by G2P, 16 bytes each. */
#define FIRN_BENCH_P2G_READ_BYTES  (27.0 * 4.0 + 1.0)
#define FIRN_BENCH_P2G_WRITE_BYTES (11.0 * 4.0)
#define FIRN_BENCH_G2P_BYTES       (18.0 * 4.0)
#define FIRN_BENCH_STATE_BYTES                                                                     \
    (FIRN_BENCH_P2G_READ_BYTES + FIRN_BENCH_P2G_WRITE_BYTES + FIRN_BENCH_G2P_BYTES)
#define FIRN_BENCH_FUSED_SAVES (27.0 * 4.0)
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
/* For the roofline's models: h_over_a, the SPH or PBF support radius over
 * the rest lattice spacing (0: neither); pbd_iters, the PBD stretch,
 * bending, density and viscosity iterations a substep; constraints, its
 * stretch and bending constraints; pbd_rigid, PBD-rigid coupling on with
 * a rigid body; vertices, the FEM vertices. */
typedef struct {
    int grid[3];
    long long nodes;
    long long sph_particles;
    long long iters[2], solves;
    long long elements;
    double h_over_a;
    int pbd_iters[4];
    long long constraints[2];
    int pbd_rigid;
    long long vertices;
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

/* ---- The roofline per solver and phase (docs/BENCH.md, "The floor per
 * phase") ---------------------------------------------------------------
 *
 * Each phase a case times gets a model of the bytes it must move from
 * memory (each array it touches read or written once per pass: particles
 * in cell order, so that neighbours come through the caches) and of the
 * floating-point operations it must execute (counted from the formulas of
 * include/ headers; a divide, square root, compare or table lookup counts one).
 * Its floor is max(bytes / copy bandwidth, operations / compute rate), and
 * measured / floor its ratio. The constants below are per particle (P),
 * per neighbour pair (N), per element (E), per vertex (V), per grid node
 * or cell, or per constraint; a pass or iteration the bench counts at run
 * time multiplies them. */

/* Neighbour search (SPH and PBF): the sort reads x and writes its cell key,
 * reads the key and writes the sorted index, and writes every cell's start
 * and end; it computes the cell (10 operations) and must test each
 * candidate of the 27 cells around a particle once a substep (6: a
 * difference, its square length and a compare). */
#define FIRN_ROOF_SORT_P_BYTES    24.0
#define FIRN_ROOF_SORT_CELL_BYTES 8.0
#define FIRN_ROOF_SORT_P_OPS      10.0
#define FIRN_ROOF_CANDIDATE_OPS   6.0
/* Every accepted neighbour: its offset, distance and the compare (10). */
#define FIRN_ROOF_PAIR_OPS 10.0

/* SPH (include/firn_sph.h; x, v, acc 12 B, rho, p, alpha, drho 4 B, mat
 * 1 B). Density: reads x and mat, writes rho; per pair the distance and
 * W (20). WCSPH's pressure phase: the non-pressure forces (reads x, v,
 * rho, mat, writes acc: 41 B; per pair cohesion, viscosity and grad W: 64),
 * the equation of state (rho, mat read, rho and p written: 13 B, 25
 * operations with its powf) and the pressure step (reads x, acc, p, rho,
 * mat, v and writes acc and v: 69 B; per pair 45); the walls 30 operations
 * a pass. Integrate: x and v read and written, 48 B, 25 operations. */
#define FIRN_ROOF_SPH_DENSITY_P_BYTES    17.0
#define FIRN_ROOF_SPH_DENSITY_N_OPS      20.0
#define FIRN_ROOF_SPH_WALL_OPS           30.0
#define FIRN_ROOF_WCSPH_PRESSURE_P_BYTES 123.0
#define FIRN_ROOF_WCSPH_PRESSURE_N_OPS   109.0
#define FIRN_ROOF_WCSPH_PRESSURE_P_OPS   85.0
#define FIRN_ROOF_SPH_INTEGRATE_P_BYTES  48.0
#define FIRN_ROOF_SPH_INTEGRATE_P_OPS    25.0
/* DFSPH's pressure phase once a substep: the factor (x read, alpha and p
 * written: 20 B; 34 a pair), the divergence source (x, v read, drho
 * written: 28 B; 33 a pair), the non-pressure forces (41 B; 64), the kick
 * (v, acc read, v written: 36 B; 6) and the density source (x, v, rho,
 * mat read, drho written: 33 B; 33 a pair): 158 B, 164 a pair, 4 walls
 * (120) and 6 operations. Each solver iteration: the Jacobi update (x,
 * drho, alpha read, v read and written; the density solve's p read and
 * written and mat: 44 or 53 B; 35 a pair), the source pass again (28 or
 * 33 B; 33 a pair) and the error mean (drho, 4 B): 76 B (divergence) or
 * 90 B (density), 68 operations a pair, 2 walls. */
#define FIRN_ROOF_DFSPH_ONCE_P_BYTES 158.0
#define FIRN_ROOF_DFSPH_ONCE_N_OPS   164.0
#define FIRN_ROOF_DFSPH_ONCE_P_OPS   126.0
#define FIRN_ROOF_DFSPH_DIV_P_BYTES  76.0
#define FIRN_ROOF_DFSPH_DENS_P_BYTES 90.0
#define FIRN_ROOF_DFSPH_ITER_N_OPS   68.0
#define FIRN_ROOF_DFSPH_ITER_P_OPS   61.0

/* PBD (include/firn_pbd.h, firn_pbf.h; x, v, x0, dx 12 B, mass, w,
 * lambda, rho 4 B, mat 1 B). The prediction: x, v, w, mat read, x0, v, x
 * written: 65 B, 25 operations. Integrate (firn_pbd_finish): w, x, v read,
 * x, v written: 52 B, 25. The apply pass after each particle pass: w, x,
 * dx, v read, x, v written: 64 B, 10. A stretch constraint per iteration:
 * its two indices, rest, compliance, order and lambda read and written:
 * 28 B, 45 operations; a bending constraint: four indices, rest,
 * compliance, order, lambda: 36 B, 220 operations (the dihedral angle,
 * its atan2 and four gradients); each sweep also reads and writes every
 * vertex's x and v and reads w once: 52 B. */
#define FIRN_ROOF_PBD_PREDICT_P_BYTES 65.0
#define FIRN_ROOF_PBD_PREDICT_P_OPS   25.0
#define FIRN_ROOF_PBD_FINISH_P_BYTES  52.0
#define FIRN_ROOF_PBD_FINISH_P_OPS    25.0
#define FIRN_ROOF_PBD_APPLY_P_BYTES   64.0
#define FIRN_ROOF_PBD_APPLY_P_OPS     10.0
#define FIRN_ROOF_PBD_STRETCH_BYTES   28.0
#define FIRN_ROOF_PBD_STRETCH_OPS     45.0
#define FIRN_ROOF_PBD_BEND_BYTES      36.0
#define FIRN_ROOF_PBD_BEND_OPS        220.0
#define FIRN_ROOF_PBD_SWEEP_V_BYTES   52.0
/* PBF's passes: lambda (x, mass, mat read, dx, rho, lambda written: 37 B;
 * 40 a pair; the walls 30), delta (x, lambda, mass, mat, dx read, dx
 * written: 45 B; 29 a pair), viscosity (x, x0, mass, mat read, dx written:
 * 41 B; 29 a pair), contact (x, x0, w, mat read, dx written: 41 B; 13 a
 * pair: two liquid particles only test their kinds). PBD-rigid (the
 * Coupler's pass): x, x0, w, mat, v read, x, v written: 65 B, 40. */
#define FIRN_ROOF_PBF_LAMBDA_P_BYTES    37.0
#define FIRN_ROOF_PBF_LAMBDA_N_OPS      40.0
#define FIRN_ROOF_PBF_DELTA_P_BYTES     45.0
#define FIRN_ROOF_PBF_DELTA_N_OPS       29.0
#define FIRN_ROOF_PBF_VISCOSITY_P_BYTES 41.0
#define FIRN_ROOF_PBF_VISCOSITY_N_OPS   29.0
#define FIRN_ROOF_PBF_CONTACT_P_BYTES   41.0
#define FIRN_ROOF_PBF_CONTACT_N_OPS     13.0
#define FIRN_ROOF_PBD_RIGID_P_BYTES     65.0
#define FIRN_ROOF_PBD_RIGID_P_OPS       40.0

/* Explicit FEM (include/firn_fem.h). Element forces: the element's four
 * indices, B, volume and material read, its four force slots written:
 * 105 B, and every vertex's x read once (12 B a vertex); F, the stable
 * Neo-Hookean stress and V P B^T: 215 operations. Velocity: each vertex's
 * slots gathered through adj (4 + 12 B a slot, 4 a element: 64 B an
 * element, 12 operations), and per vertex x read and x0, f written, v read
 * and written, mass, fixed, adj_start read: 69 B, 40 operations (expf).
 * Position: fixed, v, x0 read, x, v written: 49 B, 25. */
#define FIRN_ROOF_FEM_FORCES_E_BYTES   105.0
#define FIRN_ROOF_FEM_FORCES_V_BYTES   12.0
#define FIRN_ROOF_FEM_FORCES_E_OPS     215.0
#define FIRN_ROOF_FEM_GATHER_E_BYTES   64.0
#define FIRN_ROOF_FEM_GATHER_E_OPS     12.0
#define FIRN_ROOF_FEM_VELOCITY_V_BYTES 69.0
#define FIRN_ROOF_FEM_VELOCITY_V_OPS   40.0
#define FIRN_ROOF_FEM_POSITION_V_BYTES 49.0
#define FIRN_ROOF_FEM_POSITION_V_OPS   25.0
/* Implicit FEM (include/firn_fem_implicit.h, host/fem_implicit.c). One CG
 * iteration: the element product K p (indices, B, volume, the 30-float
 * Hessian read, four slots written: 224 B; dF, H : dF and its slots, 340
 * operations) and its gather (64 B, 12 an element); per vertex the product
 * (p, mass read, A p written: 28 B, 15), two dot products and the update
 * of du and r (p . Ap, r . r: 36 B; du, r read and written, p, Ap, held
 * read: 73 B), the preconditioner (Minv, r read, z written: 60 B), r . z
 * (24 B) and p = z + b p (36 B): 257 B, 69 operations. One Newton
 * iteration besides its CG: the element pass (F at x0 + u, the stress,
 * the projected Hessian with its eigen-decomposition, written with the
 * gradient slots and the energy: 229 B, 750 operations), the vertex
 * gradient (gathered, 64 B an element), the preconditioner's diagonal
 * blocks (each element's Hessian read again, 120 B, 1200 operations over
 * its four vertices) and per vertex u, v, mass, fixed, g, Minv, held: 100
 * B, 60; and at least two energies for the line search (61 B and 120
 * operations an element, 29 B and 15 a vertex each). A solve adds one
 * element pass more, for the converged gradient. */
#define FIRN_ROOF_CG_E_BYTES     288.0
#define FIRN_ROOF_CG_E_OPS       352.0
#define FIRN_ROOF_CG_V_BYTES     257.0
#define FIRN_ROOF_CG_V_OPS       69.0
#define FIRN_ROOF_NEWTON_E_BYTES 413.0
#define FIRN_ROOF_NEWTON_E_OPS   1950.0
#define FIRN_ROOF_NEWTON_V_BYTES 100.0
#define FIRN_ROOF_NEWTON_V_OPS   60.0
#define FIRN_ROOF_ENERGY_E_BYTES 61.0
#define FIRN_ROOF_ENERGY_E_OPS   120.0
#define FIRN_ROOF_ENERGY_V_BYTES 29.0
#define FIRN_ROOF_ENERGY_V_OPS   15.0

/* MPM (include/firn_mpm.h), the traffic model's split by phase: clear, 16
 * B a node written; P2G, 153 B a particle (less G2P2G's saving) and 16 a
 * node, and the trial F and the 27-node scatter (800 operations) with the
 * constitutive update: the SVD, return mapping and stress of sand and
 * snow (500), a liquid's J and pressure (50); the grid update, 32 B and 15
 * operations a node; G2P, 72 B a particle and 16 a node, the 27-node
 * gather of v and C and the advection: 740 operations. The nodes are a
 * GPU's dense grid, else at least the body's cells (particles / 8). */
#define FIRN_ROOF_MPM_CLEAR_NODE_BYTES 16.0
#define FIRN_ROOF_MPM_P2G_P_BYTES      (FIRN_BENCH_P2G_READ_BYTES + FIRN_BENCH_P2G_WRITE_BYTES)
#define FIRN_ROOF_MPM_P2G_NODE_BYTES   16.0
#define FIRN_ROOF_MPM_P2G_P_OPS        800.0
#define FIRN_ROOF_MPM_SVD_P_OPS        500.0
#define FIRN_ROOF_MPM_LIQUID_P_OPS     50.0
#define FIRN_ROOF_MPM_GRID_NODE_BYTES  32.0
#define FIRN_ROOF_MPM_GRID_NODE_OPS    15.0
#define FIRN_ROOF_MPM_G2P_P_BYTES      FIRN_BENCH_G2P_BYTES
#define FIRN_ROOF_MPM_G2P_NODE_BYTES   16.0
#define FIRN_ROOF_MPM_G2P_P_OPS        740.0
#define FIRN_ROOF_MPM_PPC              8.0

typedef enum {
    FIRN_ROOF_MPM = 0,
    FIRN_ROOF_WCSPH,
    FIRN_ROOF_DFSPH,
    FIRN_ROOF_PBF,   /* pbd_liquid */
    FIRN_ROOF_CLOTH, /* pbd_cloth (XPBD) */
    FIRN_ROOF_FEM,
    FIRN_ROOF_FEM_IMPLICIT
} firn_roof_solver;

/* What a case's models need to know of its world. */
typedef struct {
    firn_roof_solver solver;
    long long particles;      /* particles, cloth vertices, or FEM elements */
    long long vertices;       /* FEM: vertices */
    long long nodes;          /* MPM: the dense grid's nodes (0: not known, the body's cells);
                                 SPH, PBF: the neighbour grid's cells */
    double h_over_a;          /* SPH, PBF: support radius over the rest lattice spacing */
    double iters[2];          /* DFSPH: divergence, density iterations per substep;
                                 implicit FEM: Newton, CG iterations per substep */
    int pbd_iters[4];         /* stretch, bending, density, viscosity iterations */
    long long constraints[2]; /* cloth: stretch and bending constraints */
    int rigid_contact;        /* cloth: PBD-rigid against a body (the Coupler's pass) */
    int substeps, fused;      /* MPM: substeps a call and whether G2P2G fuses them */
    int mpm_liquid;           /* MPM: a liquid (no SVD in its constitutive update) */
} firn_roof_case;

#define FIRN_ROOF_MAX_PHASES 5
typedef struct {
    const char *name;  /* the phase's key, as the bench's phase keys */
    double bytes, ops; /* per substep */
    double iterations; /* solver iterations the phase's model holds per substep (0: none) */
    double iter_bytes, iter_ops;         /* one such iteration's share */
    double floor_ms, measured_ms, ratio; /* ratio: measured / floor (0 when the floor is 0) */
    double iter_floor_ms, iter_ms;       /* one iteration's floor, and the measured time over
                                            the iterations (0 without iterations) */
    int compute_bound;                   /* 1 where the operations set the floor */
} firn_roof_phase;

/* Neighbours within h of a particle in the bulk of a liquid at rest
 * density, (4 pi / 3) (h / a)^3 - 1, and the candidates the 27 cells of
 * edge h around it hold, 27 (h / a)^3 (a^3 the volume per particle). */
double firn_roof_neighbours(double h_over_a);
double firn_roof_candidates(double h_over_a);
/* The models of a case's phases, in the order the bench reports them
 * (bytes, ops, iterations; the floor not yet set): their count. */
int firn_roof_phases(const firn_roof_case *c, firn_roof_phase out[FIRN_ROOF_MAX_PHASES]);
/* Sets the floor of a phase from the copy bandwidth [B/s] and compute rate
 * [operations/s] (0: unknown, the floor is the bytes' alone), and its
 * ratio with the measured time [ms per substep]. */
void firn_roof_floor(firn_roof_phase *ph, double bandwidth, double rate, double measured_ms);
/* Host compute rate [floating-point operations / s]: a timed loop of
 * independent multiply-adds on every OpenMP thread, best of 3. */
double firn_bench_host_compute_rate(void);

#ifdef __cplusplus
}
#endif

#endif
