/* main.c - the firn command-line tool. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <omp.h>

#include "firn.h"
#include "cli.h"

static const char *usage =
    "firn " FIRN_VERSION
    " - Material Point Method engine for snow, sand, liquid and elastic solids\n"
    "\n"
    "usage:\n"
    "  firn run SCENE [--backend auto|cpu|cuda] [--frames N] [--every N] [--out DIR] [--quiet]\n"
    "                 [--checkpoint-every N|Ns|Nm|Nh|off] [--resume [CHECKPOINT]]\n"
    "                 [--p2g auto|atomic|binned|warp|ordered|g2p2g] [--deterministic]\n"
    "                 [--grid auto|dense|sparse] [--graphs auto|on|off]\n"
    "                 run a JSON scene, writing PLY frames, PNG previews and stats.jsonl;\n"
    "                 --deterministic: the GPU gives the same bits every run (ordered P2G;\n"
    "                 refused for a scene with a phase that cannot)\n"
    "                 checkpoints (default every 10 minutes, and on SIGINT/SIGTERM) let\n"
    "                 --resume continue a stopped run\n"
    "  firn validate SCENE       check a scene and print what it would simulate\n"
    "  firn compare SCENE [--frames N] [--p2g auto|atomic|binned|warp|ordered|g2p2g]\n"
    "                 [--grid auto|dense|sparse] [--graphs auto|on|off]\n"
    "                 run the scene on the CPU and the GPU and report the differences\n"
    "                 (--p2g: the GPU's P2G; auto: binned from 300k particles)\n"
    "  firn bench [options]      particle throughput per scene, size and backend (bench --help)\n"
    "  firn info                 version, build, threads and CUDA devices\n"
    "  firn --help               this text\n"
    "\n"
    "Exit codes: 0 ok, 2 usage, 3 invalid scene, 4 I/O, 5 numerical (NaN, unsafe dt),\n"
    "6 GPU/CUDA, 7 out of memory, 8 compare beyond tolerance, 9 unusable checkpoint,\n"
    "130/143 stopped by SIGINT/SIGTERM (with a checkpoint). Scene format: docs/SCENES.md\n";

static int cmd_info(void)
{
    printf("firn %s\n", FIRN_VERSION);
    printf("build: CPU%s\n", firn_cuda_available() ? " + CUDA" : " only (built without nvcc)");
    printf("CPU path: %d OpenMP threads (set OMP_NUM_THREADS to change)\n", omp_get_max_threads());
    int n = firn_cuda_device_count();
    if (!firn_cuda_available())
        printf("CUDA devices: none (this build has no CUDA)\n");
    else if (n == 0) {
        /* Says why: no driver, a driver older than the runtime, no device. */
        char why[512];
        firn_cuda_device_describe(0, why, sizeof why);
        printf("CUDA devices: none usable (%s)\n", why);
    }
    for (int i = 0; i < n; i++) {
        char buf[512];
        firn_cuda_device_describe(i, buf, sizeof buf);
        printf("CUDA device %d: %s\n", i, buf);
    }
    return 0;
}

/* Bytes as MiB or GiB. */
static const char *mem_str(double bytes, char *buf, size_t size)
{
    if (bytes >= 1024.0 * 1024.0 * 1024.0)
        snprintf(buf, size, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
    else
        snprintf(buf, size, "%.1f MiB", bytes / (1024.0 * 1024.0));
    return buf;
}

static int fail(const firn_error *err)
{
    fprintf(stderr, "firn: error: %s\n", err->msg);
    return err->code ? (int)err->code : 1;
}

static int cmd_validate(int argc, char **argv)
{
    if (argc != 1) {
        fprintf(stderr, "firn validate: expected one SCENE argument\n");
        return FIRN_E_USAGE;
    }
    firn_scene_def def;
    firn_error err;
    if (firn_scene_load_json(argv[0], &def, &err))
        return fail(&err);
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    if (!w)
        return fail(&err);
    firn_frame_stats s;
    firn_world_stats(w, &s, &err);
    float dt;
    int nsub;
    if (firn_world_next_frame_step(w, &dt, &nsub, &err)) {
        firn_world_destroy(w);
        return fail(&err);
    }
    int n[3];
    for (int a = 0; a < 3; a++)
        n[a] = (int)ceilf((def.upper[a] - def.lower[a]) / def.dx - 1e-4f) + 1;
    printf("%s: valid\n", argv[0]);
    printf("  grid: %d x %d x %d nodes, dx = %g m\n", n[0], n[1], n[2], def.dx);
    const firn_scene_def *ws = firn_world_scene(w);
    if (memcmp(ws->upper, def.upper, sizeof def.upper))
        printf("  domain: upper (%g, %g, %g) rounded up to whole cells: (%g, %g, %g)\n",
               def.upper[0], def.upper[1], def.upper[2], ws->upper[0], ws->upper[1], ws->upper[2]);
    printf("  particles: %lld (mass %.4g kg)\n", s.particles, s.mass);
    for (int k = 0; k < def.n_materials; k++)
        printf("    %-16s %-10s %lld\n", def.materials[k].name,
               firn_model_name(def.materials[k].model), s.material_count[k]);
    if (s.sph.particles > 0) {
        int dfsph = 0;
        for (int k = 0; k < def.n_bodies; k++)
            if (def.bodies[k].solver == FIRN_SOLVER_KIND_SPH)
                dfsph =
                    def.materials[def.bodies[k].material].pressure_solver == FIRN_PRESSURE_DFSPH;
        printf("  SPH: %lld particles (mass %.4g kg), particle size %g m, support radius %g m, "
               "%s\n",
               s.sph.particles, s.sph.mass, def.sph_particle_size, 2.0f * def.sph_particle_size,
               dfsph ? "DFSPH" : "WCSPH");
    }
    if (s.pbd.particles > 0)
        printf("  PBD: %lld particles (mass %.4g kg, %lld pinned), %lld edges, %lld bending "
               "constraints, particle size %g m, %d stretch / %d bending / %d density / %d "
               "viscosity iterations per substep\n",
               s.pbd.particles, s.pbd.mass, s.pbd.pinned, s.pbd.edges, s.pbd.bends,
               def.pbd_particle_size, def.pbd_stretch_iterations, def.pbd_bending_iterations,
               def.pbd_density_iterations, def.pbd_viscosity_iterations);
    static const char *motion[] = {"static", "kinematic", "dynamic"};
    for (int r = 0; r < def.n_rigids; r++)
        printf("  rigid %-16s %-9s at (%.3g, %.3g, %.3g)%s\n", def.rigids[r].name,
               motion[def.rigids[r].motion], def.rigids[r].shape.center[0],
               def.rigids[r].shape.center[1], def.rigids[r].shape.center[2],
               def.rigids[r].couple && def.coupling_rigid_mpm ? "" : " (not coupled)");
    printf("  time: %d frames of %g s, %s dt = %.4g s, %d substeps in the first frame\n",
           def.frames, def.frame_dt, def.dt > 0.0f ? "fixed" : "CFL", def.frame_dt / nsub, nsub);
    printf("  output: %s (every %d frame%s)\n", def.out_dir, def.out_every,
           def.out_every > 1 ? "s" : "");
    /* The world here is a CPU one: host is what the CPU path holds, device
     * what the GPU path would allocate. */
    firn_memory m;
    firn_world_memory(w, &m);
    char a[32], b[32], c[32];
    /* Per particle: MPM and SPH particles together. */
    printf("  memory: CPU path %s (%.0f B/particle; %s of it the grid, resident only where "
           "material goes); GPU %s on the device (%.0f B/particle)\n",
           mem_str(m.host, a, sizeof a), m.per_particle, mem_str(m.host_grid, c, sizeof c),
           mem_str(m.device, b, sizeof b),
           s.particles + s.sph.particles > 0 ? m.device / (double)(s.particles + s.sph.particles)
                                             : 0.0);
    firn_world_destroy(w);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? FIRN_E_USAGE : 0;
    }
    const char *cmd = argv[1];
    if ((!strcmp(cmd, "--version") || !strcmp(cmd, "info")) && argc > 2) {
        fprintf(stderr, "firn %s: unexpected argument '%s'\n", cmd, argv[2]);
        return FIRN_E_USAGE;
    }
    if (!strcmp(cmd, "--version")) {
        printf("firn %s\n", FIRN_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "run"))
        return firn_cli_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "validate"))
        return cmd_validate(argc - 2, argv + 2);
    if (!strcmp(cmd, "info"))
        return cmd_info();
    if (!strcmp(cmd, "compare"))
        return firn_cli_compare(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench"))
        return firn_cli_bench(argc - 2, argv + 2);
    fprintf(stderr, "firn: unknown command '%s'\n\n%s", cmd, usage);
    return FIRN_E_USAGE;
}
