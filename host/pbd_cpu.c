/* pbd_cpu.c - the PBD solver's phases on the CPU path (docs/PHYSICS.md
 * s6): a loop over particles per pass of include/firn_pbd.h, and the
 * constraint projections as Gauss-Seidel sweeps colour by colour (the
 * colours of host/pbd.c), each colour's constraints in parallel. No two
 * constraints of a colour share a particle, so the state is the same for
 * any thread count. PBD-rigid runs in the Coupler (host/coupler.c). */
#include <string.h>

#include <omp.h>

#include "pbd.h"
#include "world.h"

void firn_pbd_cpu_sweep(const firn_pbd_constraints *C, int bend, float dt, firn_pbd_particles s)
{
    for (int c = 0; c < C->colours; c++) {
        const int k0 = C->colour_start[c], k1 = C->colour_start[c + 1];
#pragma omp parallel for schedule(static)
        for (int k = k0; k < k1; k++) {
            if (bend)
                firn_pbd_bend(C->order[k], C, dt, s);
            else
                firn_pbd_stretch(C->order[k], C, dt, s);
        }
    }
}

static int pbd_active(const firn_world *w) { return w->pbd.n > 0; }

/* Genesis's order (GENESIS.md s3.4): store x0, gravity and air resistance,
 * x += v dt, then the stretch iterations and the bending iterations, each
 * constraint's lambda starting the substep at 0. */
static void pbd_pre_coupling(firn_world *w)
{
    firn_pbd *S = &w->pbd;
    const int n = S->n;
    const double t0 = omp_get_wtime();
    S->P.dt = w->params.dt;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        firn_pbd_predict(i, &S->P, S->mats, S->s);
    memset(S->stretch.lambda, 0, (size_t)S->stretch.n * sizeof(float));
    memset(S->bend.lambda, 0, (size_t)S->bend.n * sizeof(float));
    for (int it = 0; it < S->stretch_iterations; it++)
        firn_pbd_cpu_sweep(&S->stretch, 0, S->P.dt, S->s);
    for (int it = 0; it < S->bending_iterations; it++)
        firn_pbd_cpu_sweep(&S->bend, 1, S->P.dt, S->s);
    w->prof.pbd_constraints += omp_get_wtime() - t0;
}

/* After PBD-rigid: v = (x - x0) / dt and the box. */
static int pbd_post_coupling(firn_world *w)
{
    firn_pbd *S = &w->pbd;
    const int n = S->n;
    int bad = n;
    const double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int i = 0; i < n; i++)
        if (!firn_pbd_finish(i, &S->P, S->s) && i < bad)
            bad = i;
    w->prof.pbd_integrate += omp_get_wtime() - t0;
    return bad < n ? bad : -1;
}

const firn_solver firn_pbd_solver = {
    .name = "pbd",
    .is_active = pbd_active,
    .begin_substep = NULL,
    .pre_coupling = pbd_pre_coupling,
    .post_coupling = pbd_post_coupling,
};
