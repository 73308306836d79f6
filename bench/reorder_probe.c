/* reorder_probe.c - what the CPU path's state reordering buys
 * (host/solver_cpu.c), on a scene JSON refined by a factor:
 *
 *   reorder_probe SCENE REFINE SUBSTEPS
 *
 * Shuffles the particle state at random (the worst case of mixing flow),
 * then times SUBSTEPS substeps at the CFL step, four times from that same
 * start, alternately without reordering and with the default policy (whose
 * time includes the reorder). Build: make build/reorder_probe. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "sample.h"
#include "world.h"

static double ms_per_substep(firn_world *w, int k, float dt)
{
    firn_error e;
    double t = omp_get_wtime();
    if (firn_world_run_substeps(w, k, dt, &e)) {
        fprintf(stderr, "reorder_probe: %s\n", e.msg);
        exit(1);
    }
    return (omp_get_wtime() - t) / k * 1e3;
}

int main(int argc, char **argv)
{
    if (argc != 4 || atof(argv[2]) <= 0.0 || atoi(argv[3]) <= 0) {
        fprintf(stderr, "usage: reorder_probe SCENE REFINE SUBSTEPS\n");
        return 2;
    }
    firn_scene_def def;
    firn_error err;
    if (firn_scene_load_json(argv[1], &def, &err)) {
        fprintf(stderr, "reorder_probe: %s\n", err.msg);
        return 1;
    }
    def.dx /= (float)atof(argv[2]);
    const int T = atoi(argv[3]);
    for (int k = 0; k < 4; k++) {
        /* Each timing from the same start: a new world, shuffled alike. */
        firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
        if (!w) {
            fprintf(stderr, "reorder_probe: %s\n", err.msg);
            return 1;
        }
        const int n = w->p.n;
        size_t m = n > 0 ? (size_t)n : 1;
        int *perm = malloc(sizeof(int) * m), *scratch = malloc(sizeof(int) * m);
        if (!perm || !scratch) {
            fprintf(stderr, "reorder_probe: out of memory\n");
            return 1;
        }
        for (int i = 0; i < n; i++)
            perm[i] = i;
        unsigned r = 12345u; /* a fixed Fisher-Yates shuffle */
        for (int i = n - 1; i > 0; i--) {
            r = r * 1103515245u + 12345u;
            int j = (int)((r >> 4) % (unsigned)(i + 1)), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        firn_particles_gather(&w->p, perm, NULL, scratch);
        free(perm);
        free(scratch);
        const float dt = firn_world_cfl_dt(w);
        if (k == 0)
            printf("%s refined %sx: %d particles, grid %d x %d x %d, dt %g s, %d threads\n",
                   argv[1], argv[2], n, w->grid.n[0], w->grid.n[1], w->grid.n[2], dt,
                   omp_get_max_threads());
        w->bins.reorder_run = k % 2 ? FIRN_REORDER_RUN : 0;
        double ms = ms_per_substep(w, T, dt);
        printf("shuffled, %-10s %8.1f ms/substep over %d substeps (%lld reorders)\n",
               k % 2 ? "reordering" : "as is", ms, T, w->bins.reorders);
        firn_world_destroy(w);
    }
    return 0;
}
