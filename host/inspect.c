/* inspect.c - the inspection API (host/inspect.h). */
#include "inspect.h"

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
float firn_inspect_sph_support(const firn_world *w) { return w->sph.P.h; }
double firn_inspect_sph_pressure_slope(const firn_world *w, double rho_max)
{
    return firn_sph_pressure_slope(&w->sph, rho_max);
}

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
