/* dist.h - the hooks by which a distributed run (host/mpi.c, built with
 * make MPI=1) joins the MPM substep of the CPU path. A world that is not
 * distributed has w->dist NULL, and none of this runs: the build without
 * MPI neither compiles host/mpi.c nor links MPI.
 *
 * The Coupler (host/coupler.c) calls after_p2g once the solvers' pre-
 * coupling phases are done (MPM's P2G among them), after_grid once the grid
 * update and its coupling pairs are done, and after_g2p at the end of the
 * substep; the frame's CFL step (host/world.c) goes through reduce_dt. */
#ifndef FIRN_DIST_H
#define FIRN_DIST_H

#ifdef __cplusplus
extern "C" {
#endif

struct firn_world;

/* after_g2p's answer when a particle went non-finite on another rank. */
#define FIRN_DIST_BAD_ELSEWHERE (-3)

typedef struct firn_dist_ops {
    /* Halo nodes' mass and momentum summed into their owners. */
    void (*after_p2g)(struct firn_world *w);
    /* The rigid bodies' and tools' reactions summed over the ranks; the
     * owners' node velocities copied to the halos. */
    void (*after_grid)(struct firn_world *w);
    /* `bad` as the substep found it on this rank (-1: none). When a
     * particle went non-finite on any rank, returns the one with the
     * lowest scene index, as a local index, on the rank that holds it, and
     * FIRN_DIST_BAD_ELSEWHERE on the others; else particles that left this
     * rank's slab migrate, and -1. */
    int (*after_g2p)(struct firn_world *w, int bad);
    /* The scene index of the particle with local index i (the index the
     * MPM solver's phases report, host/solver_cpu.c's bins.id). */
    int (*scene_index)(const struct firn_world *w, int i);
    /* The frame's CFL step: the minimum over the ranks (NaN if any is). */
    float (*reduce_dt)(struct firn_world *w, float dt);
    /* The scene indices of this rank's particles, in the order of w->p
     * (room for the scene's count), this rank, the rank count and the
     * scene's particle count: what a rank's checkpoint file saves and
     * restores besides the state of a world (host/checkpoint.c). */
    int *(*indices)(struct firn_world *w, int *rank, int *ranks, int *total);
} firn_dist_ops;

#ifdef __cplusplus
}
#endif

#endif
