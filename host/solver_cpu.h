/* solver_cpu.h - the MPM solver on the CPU path (host/solver_cpu.c):
 * its scratch, its phases (the Coupler runs them through firn_mpm_solver)
 * and the grid helpers the tests and `firn compare` use. */
#ifndef FIRN_SOLVER_CPU_H
#define FIRN_SOLVER_CPU_H

#include "firn.h"
#include "firn_mpm.h"
#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CPU scratch for the race-free coloured scatter (solver_cpu.c). */
typedef struct {
    int block_cells; /* edge of a block in cells */
    int nb[3];       /* blocks per axis */
    int nblocks;
    int chunks; /* particle chunks binned in parallel (fixed at init) */
    int *count; /* chunks x nblocks: each chunk's particles per block, then its offsets */
    int *start; /* nblocks + 1 */
    unsigned long long *work; /* nblocks: the non-empty blocks (count << 32 | block), colour by
                                 colour, fullest first */
    int work_start[9];        /* colour c's blocks are work[work_start[c] .. work_start[c + 1]) */
    unsigned char *touched;   /* nblocks: node blocks (4^3 nodes) the last P2G could write */
    int *dirty;               /* nblocks: those node blocks, in index order */
    int ndirty;
    int dirty_valid;    /* dirty lists every grid node that may be non-zero; 0: clear all */
    int full_grid;      /* the reference the block-wise phases are tested against: binning
                           leaves dirty_valid 0, so clear, update and couple cover the whole
                           grid every substep */
    int *order;         /* n particle indices sorted by block (stable) */
    int *key;           /* n block of each particle; scratch once order is built */
    int *id;            /* n: the scene's index of the particle at each index */
    int permuted;       /* the solver's layout is not the scene's order (id not the identity) */
    int in_scene_order; /* the state is, for now, in the scene's order (read out) */
    int reorder_run;    /* reorder past one far step in this many (FIRN_REORDER_RUN); 0: never */
    long long reorders; /* state reorders so far */
} firn_cpu_bins;

/* The CPU path reorders the particle state by block when more than one
 * particle in this many, taken in block order, lies outside the cache line
 * (16 floats) after its predecessor: below that, P2G's and G2P's reads of
 * each state array keep streaming. */
#define FIRN_REORDER_RUN 16

/* The CPU binning counts particles in at most this many slices in parallel
 * (one per OpenMP thread at init, and at most 2 n / blocks): chunks x blocks
 * ints of scratch. */
#define FIRN_BIN_CHUNKS_MAX 64

/* CPU path: puts the particle state in the scene's order for readers, and
 * back into the solver's layout before the next substep - so reading the
 * state never changes what the solver computes. No-ops when it already is. */
void firn_cpu_unpermute(firn_world *w);
void firn_cpu_repermute(firn_world *w);

/* The phases (host/solver_cpu.c). G2P returns the lowest scene index
 * (bins.id) of a particle whose state became non-finite, or -1. */
int firn_cpu_init(firn_world *w, firn_error *err);
void firn_cpu_free(firn_world *w);
/* Bytes of the grid's mapping in memory now (mincore), -1 if unknown. */
double firn_cpu_grid_resident(const firn_world *w);
void firn_cpu_clear(firn_world *w);
void firn_cpu_p2g(firn_world *w);
void firn_cpu_grid(firn_world *w);
/* live[c] = 1 for each chunk c of `chunk` consecutive nodes that holds a
 * node the last P2G could write (every chunk when that is not known), else
 * 0: the other chunks' nodes hold no mass. */
void firn_cpu_live_chunks(const firn_world *w, long long chunk, unsigned char *live);
int firn_cpu_g2p(firn_world *w);
/* CPIC (include/firn_cpic.h): side marking before the rigid step; P2G and
 * G2P without the nodes across a rigid surface (G2P adds the bodies'
 * reaction to w->rigid_acc, summed per fixed particle chunk in order). */
void firn_cpu_cpic_mark(firn_world *w);
int firn_cpu_g2p_cpic(firn_world *w);
/* Splits a host grid into mass (nodes) and momentum/velocity (3 nodes,
 * component-major). */
void firn_grid_split(const firn_grid *g, float *mass, float *vel);

/* The MPM solver's phase table for the Coupler. */
extern const firn_solver firn_mpm_solver;

#ifdef __cplusplus
}
#endif

#endif
