/* mpm_sph.c - the SPH pairs' contact state on the CPU path: whether
 * MPM-SPH's and FEM-SPH's contacts run, the MPM particles' volume fraction
 * per grid node and the level the SPH passes read
 * (include/firn_sph_coupling.h), FEM-SPH's distance to the FEM surface per
 * SPH particle (include/firn_fem_coupling.h), for the coupler's passes
 * (host/coupler.c) and the SPH density (host/sph_cpu.c). */
#include <string.h>

#include "fem_coupling.h"
#include "mpm_sph.h"
#include "pair.h"
#include "world.h"

int firn_mpm_sph_contact(const firn_world *w)
{
    return w->coupler.mpm_sph && w->coupler.active[FIRN_SOLVER_MPM] && w->p.n > 0 && w->sph.n > 0 &&
           w->sph.P.solver == FIRN_SPH_WCSPH;
}

firn_mpm_level firn_mpm_sph_level(const firn_world *w)
{
    firn_mpm_level L;
    memset(&L, 0, sizeof L);
    const firn_mpm_sph_scratch *s = firn_pair_scratch(w, FIRN_PAIR_MPM_SPH);
    if (s) {
        L.P = w->params;
        L.phi = s->phi;
        L.react = s->react;
        L.node = w->grid.node;
    }
    return L;
}

firn_sph_view firn_sph_pairs_view(firn_world *w)
{
    const firn_fem_sph_scratch *f = firn_pair_scratch(w, FIRN_PAIR_FEM_SPH);
    firn_sph_view V = {w->sph.P,          w->sph.mats,    w->sph.s, w->sph.G, firn_mpm_sph_level(w),
                       f ? f->key : NULL, f ? f->d : NULL};
    V.P.dt = w->params.dt;
    return V;
}

int firn_fem_sph_alloc(firn_world *w, firn_error *err)
{
    const size_t n = (size_t)w->sph.n, ns = w->fem.ns > 0 ? (size_t)w->fem.ns : 1;
    const int contact = firn_fem_sph_contact(w);
    const size_t head = firn_align256(sizeof(firn_fem_sph_scratch)),
                 key = contact ? firn_align256(n * sizeof(unsigned long long)) : 0,
                 d = contact ? firn_align256(n * sizeof(float)) : 0,
                 share = firn_align256(3 * ns * sizeof(float));
    char *b = firn_pair_scratch_alloc(w, FIRN_PAIR_FEM_SPH, "fem_sph",
                                      head + key + d + share + (n + 1) * sizeof(float), err);
    if (!b)
        return -1;
    firn_fem_sph_scratch *s = (firn_fem_sph_scratch *)b;
    s->key = contact ? (unsigned long long *)(b + head) : NULL;
    s->d = contact ? (float *)(b + head + key) : NULL;
    s->share = (float *)(b + head + key + d);
    s->count = (float *)(b + head + key + d + share);
    return 0;
}

int firn_fem_sph_contact(const firn_world *w)
{
    return w->coupler.fem_sph && w->fem.V.n > 0 && w->sph.n > 0 &&
           w->sph.P.solver == FIRN_SPH_WCSPH;
}

void firn_fem_sph_distance(firn_world *w)
{
    const firn_fem_sph_scratch *f = firn_pair_scratch(w, FIRN_PAIR_FEM_SPH);
    if (!f || !f->d)
        return;
    const firn_fem_surface S = firn_fem_surface_of(&w->fem);
    const firn_sph_view V = firn_sph_pairs_view(w);
    firn_fem_sph_distance_cpu(&S, &V);
}

/* One thread, in particle order: the same sums for any thread count. */
void firn_mpm_sph_phi(firn_world *w)
{
    const firn_mpm_sph_scratch *s = firn_pair_scratch(w, FIRN_PAIR_MPM_SPH);
    if (!s)
        return;
    memset(s->phi, 0, (size_t)w->grid.nodes * sizeof(float));
    const firn_particles *p = &w->p;
    for (int i = 0; i < p->n; i++)
        firn_mpm_phi_scatter(&w->params, firn_load3(p->x, p->n, i), p->vol[i], s->phi);
}
