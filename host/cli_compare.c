/* cli_compare.c - `firn compare`: firn_compare_backends (host/compare.c)
 * on a scene file, its report printed line by line (docs/CLI.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The command line: the scene, --frames, --p2g, --grid and --graphs; 0,
 * or FIRN_E_USAGE after printing why. */
static int parse_compare_args(int argc, char **argv, const char **scene, int *frames, int *p2g,
                              int *grid, int *graphs)
{
    *scene = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--frames")) {
            if (firn_cli_int("--frames", i + 1 < argc ? argv[++i] : NULL, frames))
                return FIRN_E_USAGE;
        } else if (!strcmp(argv[i], "--p2g")) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (firn_cli_p2g(v, p2g)) {
                fprintf(
                    stderr,
                    "firn compare: --p2g must be auto, atomic, binned, warp, ordered or g2p2g, got "
                    "'%s'\n",
                    v ? v : "");
                return FIRN_E_USAGE;
            }
        } else if (!strcmp(argv[i], "--grid")) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (firn_cli_grid(v, grid)) {
                fprintf(stderr, "firn compare: --grid must be auto, dense or sparse, got '%s'\n",
                        v ? v : "");
                return FIRN_E_USAGE;
            }
        } else if (!strcmp(argv[i], "--graphs")) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (firn_cli_graphs(v, graphs)) {
                fprintf(stderr, "firn compare: --graphs must be auto, on or off, got '%s'\n",
                        v ? v : "");
                return FIRN_E_USAGE;
            }
        } else if ((argv[i][0] == '-' && argv[i][1]) || *scene) {
            fprintf(stderr, "firn compare: unexpected argument '%s'\n", argv[i]);
            return FIRN_E_USAGE;
        } else {
            *scene = argv[i];
        }
    }
    if (!*scene) {
        fprintf(stderr, "firn compare: missing SCENE\n");
        return FIRN_E_USAGE;
    }
    return 0;
}

/* One entry as `firn compare` prints it. */
static void print_entry(const firn_compare_entry *e)
{
    if (e->statistic) {
        printf("  %-18s cpu %-13.6g gpu %-13.6g diff/scale %-10.3e %s\n", e->name, e->cpu, e->gpu,
               e->rel, e->ok ? "ok" : "FAIL");
        return;
    }
    printf("  %-12s max abs %-11.3e scale %-11.3e rel %-11.3e %s", e->name, e->max_abs, e->scale,
           e->rel, e->ok ? "ok" : "FAIL");
    if (!e->ok)
        printf(" (worst element %lld)", e->worst);
    printf("\n");
}

int firn_cli_compare(int argc, char **argv)
{
    if (firn_cli_help(argc, argv, FIRN_USAGE_COMPARE))
        return 0;
    const char *scene;
    int frames = 10, p2g = -1, grid = -1, graphs = -1;
    int rc = parse_compare_args(argc, argv, &scene, &frames, &p2g, &grid, &graphs);
    if (rc)
        return rc;
    firn_scene_def def;
    firn_error err;
    if (firn_cli_load_scene(scene, &def, &err))
        return firn_cli_fail(&err);
    firn_run_options run = firn_run_options_default();
    if (p2g >= 0)
        run.p2g = p2g;
    if (grid >= 0)
        run.grid = grid;
    if (graphs >= 0)
        run.graphs = graphs;
    firn_compare_report r;
    if (firn_compare_backends_with(&def, &run, frames, &r, &err))
        return firn_cli_fail(&err);
    printf("%s: %lld particles, CPU (%s) vs GPU (%s)\n", scene, r.particles, r.cpu_device,
           r.gpu_device);
    int stage = -1;
    for (int k = 0; k < r.n_entries; k++) {
        const firn_compare_entry *e = &r.entries[k];
        if ((int)e->stage != stage) {
            stage = (int)e->stage;
            if (e->stage == FIRN_COMPARE_SUBSTEP)
                printf("after one substep (dt = %.4g s), tolerance %.0e of each field's scale:\n",
                       r.dt, r.state_tolerance);
            else if (e->stage == FIRN_COMPARE_PERTURBED)
                printf("after one substep from a perturbed state (MPM: F = I + 0.05 U, C = 2 U' / "
                       "s; SPH, PBD, FEM: x + 0.02 l U, l the solver's length scale; SPH: v + "
                       "0.02 h U' / dt):\n");
            else
                printf("after %d frames (t = %.4g s), tolerance %.0f%% of each statistic's "
                       "scale:\n",
                       r.frames, r.time, 100 * r.stats_tolerance);
        }
        print_entry(e);
    }
    if (r.graphs_fell_back)
        printf("CUDA graphs: a capture failed, so the GPU ran kernel by kernel: %s\n",
               r.graphs_why);
    else
        printf("CUDA graphs: %lld captured, %lld launched\n", r.graph_captures, r.graph_launches);
    printf("%s\n", r.ok ? "compare: PASS" : "compare: FAIL");
    const int ok = r.ok;
    firn_compare_report_free(&r);
    return ok ? 0 : FIRN_E_COMPARE;
}
