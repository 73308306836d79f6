/* inspect.c - the inspection API (host/inspect.h). */
#include "inspect.h"

#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "error.h"
#include "solver_cpu.h"
#include "world.h"

void firn_inspect_grid_size(const firn_world *w, int n[3])
{
    for (int a = 0; a < 3; a++)
        n[a] = w->params.n[a];
}

long long firn_inspect_grid_nodes(const firn_world *w)
{
    return (long long)w->params.n[0] * w->params.n[1] * w->params.n[2];
}

float firn_inspect_inv_dx(const firn_world *w) { return w->params.inv_dx; }

int firn_inspect_grid(firn_world *w, float *mass, float *vel, firn_error *err)
{
    if (w->cuda)
        return firn_cuda_download_grid(w, mass, vel, err) ? -1 : 0;
    firn_grid_split(&w->grid, mass, vel);
    return 0;
}

int firn_inspect_edit_particles(firn_world *w, firn_particles_edit edit, void *ctx, firn_error *err)
{
    if (w->substeps > 0) {
        firn_set_error(err, FIRN_E_USAGE, "particles are edited only before the first substep");
        return -1;
    }
    if (!w->cuda) {
        firn_cpu_unpermute(w);
        edit(&w->p, ctx);
        return 0;
    }
    edit(&w->p, ctx); /* the host mirror is the uploaded state before a substep */
    firn_cuda_free(w);
    return firn_cuda_init(w, err) ? -1 : 0;
}

int firn_inspect_edit_points(firn_world *w, firn_points_edit edit, void *ctx, firn_error *err)
{
    if (w->substeps > 0) {
        firn_set_error(err, FIRN_E_USAGE, "points are edited only before the first substep");
        return -1;
    }
    if (w->sph.n > 0)
        edit("sph", w->sph.n, w->sph.s.x, w->sph.s.v, NULL, w->sph.P.h, ctx);
    if (w->pbd.n > 0) {
        uint8_t *held = malloc((size_t)w->pbd.n);
        if (!held) {
            firn_set_error(err, FIRN_E_NOMEM, "out of host memory");
            return -1;
        }
        for (int i = 0; i < w->pbd.n; i++)
            held[i] = w->pbd.s.w[i] == 0.0f;
        edit("pbd", w->pbd.n, w->pbd.s.x, w->pbd.s.v, held, w->pbd.P.psize, ctx);
        free(held);
    }
    if (w->fem.V.n > 0) {
        edit("fem", w->fem.V.n, w->fem.V.x, w->fem.V.v, w->fem.V.fixed, w->fem.h_min, ctx);
        memcpy(w->fem.V.x0, w->fem.V.x, 3 * (size_t)w->fem.V.n * sizeof(float));
    }
    if (!w->cuda)
        return 0;
    /* The host mirrors are the uploaded state before a substep: rebuild the
     * device states from them, in the order the world made them. */
    firn_cuda_sph_free(w);
    firn_cuda_pbd_free(w);
    firn_cuda_fem_free(w);
    return (w->sph.n > 0 && firn_cuda_sph_init(w, err)) ||
                   (w->pbd.n > 0 && firn_cuda_pbd_init(w, err)) ||
                   (w->fem.V.n > 0 && firn_cuda_fem_init(w, err))
               ? -1
               : 0;
}

double firn_inspect_rigid_kinetic_energy(const firn_world *w)
{
    double e = 0.0;
    for (int k = 0; k < w->n_rigids; k++) {
        const firn_rigid *b = &w->rigids[k];
        double v2 = 0.0, wl = 0.0;
        for (int a = 0; a < 3; a++) {
            v2 += (double)b->v[a] * b->v[a];
            wl += (double)b->w[a] * b->L[a];
        }
        e += b->mass > 0.0f ? 0.5 * b->mass * v2 + 0.5 * wl : 0.0;
    }
    return e;
}

/* Solver k's memory, as its table counts it for firn_world_memory. */
static firn_inspect_bytes solver_bytes(const firn_world *w, int k)
{
    const firn_solver *s = firn_solver_of(k);
    firn_inspect_bytes b = {0};
    b.host = s->host_bytes ? s->host_bytes(w) : 0.0;
    b.device = s->device_bytes ? s->device_bytes(w) : 0.0;
    return b;
}

void firn_inspect_solver_memory(const firn_world *w, firn_inspect_memory *m)
{
    firn_memory all;
    firn_world_memory(w, &all);
    const double n = w->p.n;
    const int cpu = w->backend == FIRN_BACKEND_CPU;
    /* As firn_world_memory counts them (host/world.c). */
    m->mpm.host = n * (109.0 + 4.0 * w->p.cpic_slots) + (cpu ? n * 12.0 : 0.0);
    m->mpm.device =
        n > 0 ? (double)firn_align256(firn_particle_layout(w->p.n, w->p.cpic_slots, NULL, NULL))
              : 0.0;
    m->sph = solver_bytes(w, FIRN_SOLVER_SPH);
    m->pbd = solver_bytes(w, FIRN_SOLVER_PBD);
    m->fem = solver_bytes(w, FIRN_SOLVER_FEM);
    m->shared.host = all.host - m->mpm.host - m->sph.host - m->pbd.host - m->fem.host;
    m->shared.device = all.device - m->mpm.device - m->sph.device - m->pbd.device - m->fem.device;
    if (m->shared.host < 0.0)
        m->shared.host = 0.0;
    if (m->shared.device < 0.0)
        m->shared.device = 0.0;
}

int firn_inspect_fem_body(const firn_world *w, int b, int *scene_body, int v[2], int e[2])
{
    const firn_fem *S = &w->fem;
    if (S->V.n == 0)
        return 0;
    if (b >= 0 && b < S->bodies) {
        *scene_body = S->scene_body[b];
        v[0] = S->v_first[b], v[1] = S->v_first[b + 1];
        e[0] = S->e_first[b], e[1] = S->e_first[b + 1];
    }
    return S->bodies;
}
