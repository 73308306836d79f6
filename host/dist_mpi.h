/* dist_mpi.h - MPM across MPI ranks (host/dist_mpi.c; built with make
 * MPI=1 only). The CPU path's MPM grid is split into slabs of whole node
 * blocks along x, one per rank, chosen by particle count; each rank steps
 * its own particles and the grid nodes of its slab, plus a halo of two node
 * planes above it (docs/MPI.md). Rigid bodies and tools are replicated on
 * every rank. */
#ifndef FIRN_DIST_MPI_H
#define FIRN_DIST_MPI_H

#include <stdio.h>

#include "firn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MPI_Init (threads: funneled); returns the number of ranks. */
int firn_mpi_init(int *argc, char ***argv);
void firn_mpi_finalize(void);
int firn_mpi_rank(void);
int firn_mpi_size(void);
/* Whether any rank's value is non-zero (a collective call). */
int firn_mpi_any(int value);

/* Makes w, a world fresh from firn_world_create on every rank with the same
 * scene, this rank's part of the distributed run: refuses what is not
 * distributed (err names it), chooses the slabs from the particles'
 * positions, keeps this rank's particles and attaches the substep's hooks
 * (host/dist.h). Collective; every rank gets the same answer. */
int firn_mpi_distribute(firn_world *w, firn_error *err);

/* Frees what firn_mpi_distribute attached to w (before firn_world_destroy). */
void firn_mpi_release(firn_world *w);

/* Gathers every rank's particles into out (rank 0's world of the whole
 * scene, in the scene's order) and copies the replicated state (rigid
 * bodies, tools, time, substeps, the last dt) into it. out is NULL on the
 * other ranks. Collective. */
int firn_mpi_gather(firn_world *w, firn_world *out, firn_error *err);

/* Each rank's slab, particles, halo bytes per substep, particles migrated
 * and the seconds spent in exchanges, printed by rank 0. Collective. */
void firn_mpi_report(firn_world *w, FILE *f);

/* The slabs: *columns node-block columns along x; rank r owns columns
 * [col_lo[r], col_lo[r + 1]) of the returned col_lo (ranks + 1 entries). */
const int *firn_mpi_slabs(const firn_world *w, int *columns);

/* The scene's particle count (every rank's together). */
int firn_mpi_total(const firn_world *w);

/* firn run's --rebalance by default (docs/MPI.md, "Rebalancing"). */
#define FIRN_MPI_REBALANCE_DEFAULT 1.1

/* The largest rank's particle count over the mean (1: balanced); every
 * rank calls it and gets the same value. */
double firn_mpi_imbalance(firn_world *w);

/* At a frame boundary, every rank: when firn_mpi_imbalance exceeds
 * threshold, the slabs are split again by the particles' columns now (the
 * rule of the start) and the particles migrate to their new owners.
 * Returns 1 if the slabs changed. Depends on the positions only: two runs
 * on the same ranks rebalance alike. */
int firn_mpi_rebalance(firn_world *w, double threshold);

/* Adopts the slabs col_lo (ranks + 1 column starts, a checkpoint set's):
 * FIRN_E_CHECKPOINT unless they run from column 0 to the last and give
 * every rank at least one. Before firn_mpi_load. */
int firn_mpi_set_slabs(firn_world *w, const int *col_lo, firn_error *err);

/* Replaces this rank's particles by the n of its checkpoint file path
 * (host/checkpoint.c's format with the rank's section of scene indices),
 * which also restores the replicated state; each must lie in this rank's
 * slab. Not collective; w is to be destroyed on failure. */
int firn_mpi_load(firn_world *w, const char *path, int n, firn_error *err);

/* Whether every particle of the scene is on exactly one rank, once each
 * rank has loaded its file. Collective; every rank gets the same answer. */
int firn_mpi_check_indices(firn_world *w, firn_error *err);

#ifdef __cplusplus
}
#endif

#endif
