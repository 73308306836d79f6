/* solver.h - the table of substep phases by which a solver plugs into
 * the Coupler (host/coupler.h), and the solvers a world can have. A solver
 * implements its phases in its own module (host/solver_cpu.c: MPM,
 * host/tool.c: tools, host/rigid.c: rigid bodies, host/sph_cpu.c: SPH, host/pbd_cpu.c: PBD,
 * host/fem_cpu.c: FEM) and
 * never calls the Coupler: the Coupler calls the phases in order (PHYSICS.md s1). */
#ifndef FIRN_SOLVER_H
#define FIRN_SOLVER_H

#include "firn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A solver's substep phases, as the Coupler runs them. */
typedef struct {
    const char *name;
    int (*is_active)(const firn_world *w);
    /* Before anything else in a substep: bring the solver's state into the
     * layout its phases expect (MPM, CPU: the particle order of its bins).
     * May be NULL. Not timed. */
    void (*begin_substep)(firn_world *w);
    /* Advance the solver up to coupling (rigid: its whole step; MPM: clear
     * and P2G). */
    void (*pre_coupling)(firn_world *w);
    /* After coupling (MPM: G2P). Returns the lowest scene index of a non-finite
     * element, or -1. */
    int (*post_coupling)(firn_world *w);
} firn_solver;

/* The solvers a world can have, in the order the Coupler runs their phases. */
enum {
    FIRN_SOLVER_TOOL = 0,
    FIRN_SOLVER_RIGID,
    FIRN_SOLVER_MPM,
    FIRN_SOLVER_SPH,
    FIRN_SOLVER_PBD,
    FIRN_SOLVER_FEM,
    FIRN_SOLVER_COUNT
};

#ifdef __cplusplus
}
#endif

#endif
