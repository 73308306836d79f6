/* fem_implicit.h - implicit backward Euler for FEM bodies on the CPU
 * (host/fem_implicit.c): Newton on the step's energy, each Newton system
 * solved by matrix-free conjugate gradients with a block-Jacobi (3x3 per
 * vertex) preconditioner. The element and vertex bodies are in
 * include/firn_fem_implicit.h. Method: docs/PHYSICS.md, FEM, "Implicit
 * integration". */
#ifndef FIRN_FEM_IMPLICIT_HOST_H
#define FIRN_FEM_IMPLICIT_HOST_H

#include "fem.h"
#include "firn_fem_implicit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Solver settings (firn_fem_implicit_params_default; docs/PHYSICS.md says
 * why these defaults and how they differ from Genesis's). */
typedef struct {
    int newton_max;       /* most Newton iterations per step (Genesis: 1; firn: 8) */
    float newton_tol;     /* stop when |grad E| <= newton_tol g_ref (1e-3), g_ref the larger of
                             |grad E at x_n| and |m (v_n/dt + g)| [N] */
    float newton_dx;      /* ... or when no vertex moved more than this [m]; 0: 4 float ulps
                             of the body's largest coordinate (default 0) */
    int pcg_max;          /* most CG iterations per Newton iteration (Genesis: 500; firn: 2000) */
    float pcg_tol;        /* CG stops when |r| <= pcg_tol |r_0| (1e-4) */
    int linesearch_max;   /* most Armijo halvings; 0 = full Newton steps (Genesis: 0; firn: 8) */
    float linesearch_c;   /* Armijo constant (1e-4, Genesis's) */
    float linesearch_tau; /* step factor per halving (0.5, Genesis's) */
    float damping_alpha;  /* Rayleigh mass damping [1/s] (0; Genesis: 0.5) */
    float damping_beta;   /* Rayleigh stiffness damping [s] (0; Genesis: 5e-4) */
    int walls;            /* 1: the domain's faces (S->P.lower, upper, wall_type) bound the
                             solve; 0: no walls (default; a world's step sets 1) */
} firn_fem_implicit_params;

firn_fem_implicit_params firn_fem_implicit_params_default(void);

/* What one step did. */
typedef struct {
    int newton_iters;     /* Newton iterations (linear solves) */
    int pcg_iters;        /* CG iterations, summed over the Newton iterations */
    int pcg_iters_max;    /* the most CG iterations of one Newton iteration */
    float pcg_residual;   /* the last solve's |r| / |r_0| */
    float residual;       /* final |grad E| / g_ref (0 when g_ref is 0) */
    float grad0;          /* g_ref (newton_tol) [N] */
    int converged;        /* 1: residual <= newton_tol; 2: the last Newton step (before the line
                             search) was below newton_dx;
                             0: neither within newton_max */
    int linesearch_fails; /* Newton steps whose Armijo test failed every halving */
    int held;             /* vertex components a wall held at the last Newton iterate */
} firn_fem_implicit_stats;

/* Scratch for the solver, sized for all of S's vertices and elements
 * (component-major like S->V.x). 33 nv + 43 ne floats and nv bytes. */
typedef struct {
    int nv, ne;
    float *u, *g, *r, *z, *p, *Ap, *du, *ut; /* 3 nv each */
    float *Minv;                             /* 9 nv: inverse diagonal blocks */
    float *H;                                /* FIRN_FEM_HESS_FLOATS ne: element Hessians */
    float *slot;                             /* 12 ne: element slots (gradient, then A p) */
    float *en;                               /* ne: element energies V Psi [J] */
    double *part;                            /* partial sums of the dot products */
    uint8_t *held; /* nv: bit c set when a wall holds component c (firn_fem_implicit_vertex_hold) */
} firn_fem_implicit_work;

/* Allocates w for S. Errors: FIRN_E_NOMEM. */
int firn_fem_implicit_work_init(firn_fem_implicit_work *w, const firn_fem *S, firn_error *err);
void firn_fem_implicit_work_free(firn_fem_implicit_work *w);
/* The scratch of S's implicit bodies (S->implicit_work) after firn_fem_init,
 * none when no body is implicit; detach frees it (before firn_fem_free).
 * Errors: FIRN_E_NOMEM. */
int firn_fem_implicit_attach(firn_fem *S, firn_error *err);
void firn_fem_implicit_detach(firn_fem *S);

/* One backward Euler step of FEM body `body`: from x_n = S->V.x0 and
 * v_n = S->V.v, solves for x_{n+1} and leaves S->V.v = (x_{n+1} - x_n)/dt
 * (S->V.x is not touched: the post-coupling phase sets x = x0 + dt v).
 * Fixed vertices keep v = 0. With p->walls, x_{n+1} stays inside the
 * domain's faces (S->P), a projected Newton with an active set. gravity [m/s^2], dt [s]. st may be
 * NULL. Errors: FIRN_E_NUMERIC (a non-finite gradient or CG breakdown: the velocities are left as
 * they were). */
int firn_fem_implicit_step(firn_fem *S, int body, const firn_fem_implicit_params *p,
                           const float gravity[3], float dt, firn_fem_implicit_work *w,
                           firn_fem_implicit_stats *st, firn_error *err);

/* The device vectors of the CUDA path's solver (kernels/fem_implicit.cu)
 * for nv vertices and ne elements: u, g, r, z, p, Ap, du, ut, the inverse
 * diagonal blocks, the element Hessians and slots and its control block,
 * each 256-byte aligned (CUB's scratch not counted). */
size_t firn_fem_implicit_device_bytes(int nv, int ne);

/* ---- the pieces of a step, exposed for the tests ------------------------ */

/* Element pass at x = x0 + w->u: gradient slots and element Hessians
 * (w->H); then w->g = grad E (0 on fixed vertices), with p->walls the
 * held components w->held (their g zeroed), and w->Minv. Returns the
 * elastic energy sum V Psi [J]. */
double firn_fem_implicit_prepare(firn_fem *S, int body, const firn_fem_implicit_params *p,
                                 const float gravity[3], float dt, firn_fem_implicit_work *w);

/* out = A in over body's vertices, with the Hessians of the last prepare
 * (0 on fixed vertices). in and out are 3 nv component-major. */
void firn_fem_implicit_apply(firn_fem *S, int body, const firn_fem_implicit_params *p, float dt,
                             firn_fem_implicit_work *w, const float *in, float *out);

/* Solves A du = -w->g by block-Jacobi preconditioned CG into w->du, over
 * the components w->held leaves free (held ones keep du = 0).
 * Returns the iterations; *res = |r| / |r_0|. -1 on breakdown (p^T A p <= 0
 * or not finite). */
int firn_fem_implicit_pcg(firn_fem *S, int body, const firn_fem_implicit_params *p, float dt,
                          firn_fem_implicit_work *w, float *res);

#ifdef __cplusplus
}
#endif

#endif
