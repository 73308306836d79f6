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
#include "firn_coupling.h"
#include "inspect.h"
#include "pbd.h"
#include "rigid.h"
#ifdef FIRN_WITH_MPI
#include "dist_mpi.h"
#endif

static const char *usage =
    "firn " FIRN_VERSION
    " - simulation engine for snow, sand, liquids, cloth and elastic solids: MPM,\n"
    "SPH, PBD and FEM solvers coupled with rigid bodies and tools\n"
    "\n"
    "usage:\n" FIRN_USAGE_RUN FIRN_USAGE_VALIDATE FIRN_USAGE_COMPARE FIRN_USAGE_RENDER
    "  firn bench [options]      particle throughput per scene, size and backend (bench --help)\n"
    "  firn info                 version, build, threads and CUDA devices\n"
    "  firn --help               this text (firn CMD --help: that command's)\n"
    "\n" FIRN_USAGE_SCENE "\n"
    "Exit codes: 0 ok, 2 usage, 3 invalid scene, 4 I/O, 5 numerical (NaN, unsafe dt),\n"
    "6 GPU/CUDA, 7 out of memory, 8 compare beyond tolerance, 9 unusable checkpoint,\n"
    "130/143 stopped by SIGINT/SIGTERM (with a checkpoint). Scene format: docs/SCENES.md\n";

static int cmd_info(void)
{
    printf("firn %s\n", FIRN_VERSION);
    printf("build: CPU%s\n", firn_cuda_available() ? " + CUDA" : " only (built without nvcc)");
    const int threads = omp_get_max_threads();
    printf("CPU path: %d OpenMP thread%s (set OMP_NUM_THREADS to change)\n", threads,
           threads == 1 ? "" : "s");
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

/* Cloth rectangles this many vertices and up take a while to build: the
 * build is linear, about 0.6 us of CPU a vertex plus the page faults of
 * its ~290 bytes (2048 x 2048: 3.4 s, 1.2 GB; 4096 x 4096: 20 s, 4.8 GB). */
#define CLOTH_SLOW_VERTICES 4000000

/* The memory of each cloth_rect, estimated from its resolution before the
 * world is built (a large one takes long to build). */
static void print_cloth_estimates(const firn_scene_def *def)
{
    for (int b = 0; b < def->n_bodies; b++) {
        const firn_body_def *bd = &def->bodies[b];
        if (bd->solver != FIRN_SOLVER_KIND_PBD || bd->shape.type != FIRN_SHAPE_CLOTH_RECT)
            continue;
        firn_pbd_rect_size e;
        firn_pbd_rect_estimate(bd->shape.resolution[0], bd->shape.resolution[1], &e);
        char h[32], d[32];
        printf(
            "  bodies[%d]: a %d x %d cloth_rect: %lld vertices, %lld edges, %lld bending "
            "constraints; about %s on the host, %s on a GPU%s\n",
            b, bd->shape.resolution[0], bd->shape.resolution[1], e.vertices, e.edges, e.bends,
            mem_str(e.host_bytes, h, sizeof h),
            mem_str((double)firn_pbd_device_bytes((int)e.vertices, (int)e.edges, (int)e.bends, 0),
                    d, sizeof d),
            e.vertices >= CLOTH_SLOW_VERTICES
                ? " (estimated from its resolution; building it takes a while)"
                : "");
    }
    fflush(stdout);
}

/* The keyframes of a rigid body or tool: how many, over what time, the
 * largest speed and angular speed of their segments. The loader has
 * checked every one of them. */
static void print_keyframes(const char *what, const char *name, const firn_rigid_def *rd)
{
    if (rd->n_keyframes <= 0)
        return;
    firn_rigid b;
    memset(&b, 0, sizeof b);
    firn_rigid_init_keyframes(&b, rd);
    float v = 0.0f, om = 0.0f;
    firn_key_max_speed(&b, -INFINITY, INFINITY, &v, &om);
    printf("  keyframes of %s %s: %d from t = %g to %g s, largest speed %.4g m/s and angular "
           "speed %.4g rad/s; all pass the load checks\n",
           what, name, rd->n_keyframes, rd->keyframes[0].t, rd->keyframes[rd->n_keyframes - 1].t, v,
           om);
}

/* Memory of one solver: host and device, per entity. */
static void print_solver_memory(const char *name, firn_inspect_bytes m, long long n,
                                const char *entity)
{
    char a[32], b[32];
    printf("    %-7s %s on the CPU path, %s on a GPU", name, mem_str(m.host, a, sizeof a),
           mem_str(m.device, b, sizeof b));
    if (n > 0)
        printf(" (%.0f and %.0f B per %s)", m.host / (double)n, m.device / (double)n, entity);
    putchar('\n');
}

static int cmd_validate(int argc, char **argv)
{
    if (firn_cli_help(argc, argv, FIRN_USAGE_VALIDATE))
        return 0;
    if (argc != 1) {
        fprintf(stderr, "firn validate: expected one SCENE argument (see firn validate --help)\n");
        return FIRN_E_USAGE;
    }
    firn_scene_def def;
    firn_error err;
    if (firn_cli_load_scene(argv[0], &def, &err))
        return fail(&err);
    print_cloth_estimates(&def);
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    if (!w)
        return fail(&err);
    firn_frame_stats s;
    float dt;
    int nsub;
    if (firn_world_stats(w, &s, &err) || firn_world_next_frame_step(w, &dt, &nsub, &err)) {
        firn_world_destroy(w);
        return fail(&err);
    }
    int n[3];
    for (int a = 0; a < 3; a++)
        n[a] = (int)ceilf((def.upper[a] - def.lower[a]) / def.dx - 1e-4f) + 1;
    printf("%s: valid\n", def.source);
    printf("  grid: %d x %d x %d nodes, dx = %g m\n", n[0], n[1], n[2], def.dx);
    const firn_scene_def *ws = firn_world_scene(w);
    if (memcmp(ws->upper, def.upper, sizeof def.upper))
        printf("  domain: upper (%g, %g, %g) rounded up to whole cells: (%g, %g, %g)\n",
               def.upper[0], def.upper[1], def.upper[2], ws->upper[0], ws->upper[1], ws->upper[2]);
    if (s.particles > 0) {
        printf("  MPM: %lld particles (mass %.4g kg)\n", s.particles, s.mass);
        for (int k = 0; k < def.n_materials; k++)
            if (s.material_count[k] > 0)
                printf("    %-16s %-10s %lld\n", def.materials[k].name,
                       firn_model_name(def.materials[k].model), s.material_count[k]);
    }
    if (s.sph.particles > 0) {
        int dfsph = 0;
        for (int k = 0; k < def.n_bodies; k++)
            if (def.bodies[k].solver == FIRN_SOLVER_KIND_SPH)
                dfsph =
                    def.materials[def.bodies[k].material].pressure_solver == FIRN_PRESSURE_DFSPH;
        printf("  SPH: %lld particles (mass %.4g kg), particle size %g m, support radius %g m, "
               "%s\n",
               s.sph.particles, s.sph.mass, def.sph.particle_size, 2.0f * def.sph.particle_size,
               dfsph ? "DFSPH" : "WCSPH");
    }
    if (s.pbd.particles > 0)
        printf("  PBD: %lld particles (mass %.4g kg, %lld pinned), %lld edges, %lld bending "
               "constraints, particle size %g m, %d stretch / %d bending / %d density / %d "
               "viscosity iterations per substep\n",
               s.pbd.particles, s.pbd.mass, s.pbd.pinned, s.pbd.edges, s.pbd.bends,
               def.pbd.particle_size, def.pbd.stretch_iterations, def.pbd.bending_iterations,
               def.pbd.density_iterations, def.pbd.viscosity_iterations);
    if (s.fem.vertices > 0) {
        printf("  FEM: %lld vertices, %lld elements, %lld fixed vertices (mass %.4g kg)\n",
               s.fem.vertices, s.fem.elements, s.fem.fixed, s.fem.mass);
        firn_fem_mesh_view mesh;
        if (firn_world_fem_mesh(w, &mesh, &err)) {
            firn_world_destroy(w);
            return fail(&err);
        }
        int nb = firn_inspect_fem_body(w, -1, NULL, NULL, NULL);
        for (int b = 0; b < nb; b++) {
            int sb = 0, v[2], e[2];
            firn_inspect_fem_body(w, b, &sb, v, e);
            long long fixed = 0;
            for (int i = v[0]; i < v[1]; i++)
                fixed += mesh.fixed[i];
            const firn_body_def *bd = &def.bodies[sb];
            printf("    bodies[%d] %-16s %-22s %d vertices, %d elements, %lld fixed, %s\n", sb,
                   def.materials[bd->material].name,
                   firn_model_name(def.materials[bd->material].model), v[1] - v[0], e[1] - e[0],
                   fixed, bd->fem_implicit ? "implicit (backward Euler)" : "explicit");
        }
    }
    static const char *motion[] = {"static", "kinematic", "dynamic"};
    for (int r = 0; r < def.n_rigids; r++)
        printf("  rigid %-16s %-9s at (%.3g, %.3g, %.3g)%s\n", def.rigids[r].name,
               motion[def.rigids[r].motion], def.rigids[r].shape.center[0],
               def.rigids[r].shape.center[1], def.rigids[r].shape.center[2],
               def.rigids[r].couple && def.coupling.rigid_mpm ? "" : " (not coupled)");
    for (int k = 0; k < def.n_tools; k++) {
        const firn_tool_def *t = &def.tools[k];
        printf("  tool %-16s at (%.3g, %.3g, %.3g), ", t->name, t->shape.center[0],
               t->shape.center[1], t->shape.center[2]);
        if (t->n_keyframes > 0)
            printf("following its keyframes");
        else
            printf("velocity (%.3g, %.3g, %.3g) m/s, angular velocity (%.3g, %.3g, %.3g) rad/s",
                   t->velocity[0], t->velocity[1], t->velocity[2], t->angular_velocity[0],
                   t->angular_velocity[1], t->angular_velocity[2]);
        printf(", friction %g%s\n", t->friction,
               t->collision && def.coupling.tool_mpm ? "" : " (does not act on the material)");
    }
    for (int r = 0; r < def.n_rigids; r++)
        print_keyframes("rigid", def.rigids[r].name, &def.rigids[r]);
    for (int k = 0; k < def.n_tools; k++) {
        firn_rigid_def rd;
        memset(&rd, 0, sizeof rd);
        rd.n_keyframes = def.tools[k].n_keyframes;
        memcpy(rd.keyframes, def.tools[k].keyframes, sizeof rd.keyframes);
        print_keyframes("tool", def.tools[k].name, &rd);
    }
    printf("  time: %d frames of %g s, %s dt = %.4g s, %d substeps in the first frame\n",
           def.frames, def.frame_dt, def.dt > 0.0f ? "fixed" : "CFL", def.frame_dt / nsub, nsub);
    printf("  output: %s (every %d frame%s)\n", def.out_dir, def.out_every,
           def.out_every > 1 ? "s" : "");
    /* The world here is a CPU one: host is what the CPU path holds, device
     * what the GPU path would allocate. */
    firn_memory m;
    firn_world_memory(w, &m);
    char a[32], b[32], c[32];
    /* Per particle: the MPM, SPH and PBD particles together, as m.per_particle. */
    const long long all = s.particles + s.sph.particles + s.pbd.particles;
    printf("  memory: CPU path %s (%.0f B/particle; %s of it the grid, resident only where "
           "material goes); GPU %s on the device (%.0f B/particle)\n",
           mem_str(m.host, a, sizeof a), m.per_particle, mem_str(m.host_grid, c, sizeof c),
           mem_str(m.device, b, sizeof b), all > 0 ? m.device / (double)all : 0.0);
    /* other: the grid, binning and coupling scratch, rigid bodies, tools and
     * mesh SDF grids. */
    firn_inspect_memory sm;
    firn_inspect_solver_memory(w, &sm);
    printf("  memory by solver (other: the grid, coupling scratch, rigid bodies, tools, mesh "
           "SDFs):\n");
    if (s.particles > 0)
        print_solver_memory("MPM", sm.mpm, s.particles, "particle");
    if (s.sph.particles > 0)
        print_solver_memory("SPH", sm.sph, s.sph.particles, "particle");
    if (s.pbd.particles > 0)
        print_solver_memory("PBD", sm.pbd, s.pbd.particles, "particle");
    if (s.fem.vertices > 0)
        print_solver_memory("FEM", sm.fem, s.fem.vertices, "vertex");
    print_solver_memory("other", sm.shared, 0, "");
    firn_world_destroy(w);
    return 0;
}

static int firn_main(int argc, char **argv)
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
    if (!strcmp(cmd, "render"))
        return firn_cli_render(argc - 2, argv + 2);
    fprintf(stderr, "firn: unknown command '%s'\n\n%s", cmd, usage);
    return FIRN_E_USAGE;
}

#ifdef FIRN_WITH_MPI
/* Built with make MPI=1: under mpirun with more than one rank, `firn run`
 * is distributed (host/cli_mpi.c) and every other command is refused; with
 * one rank, firn is the firn of the build without MPI. */
int main(int argc, char **argv)
{
    const int ranks = firn_mpi_init(&argc, &argv);
    int rc;
    if (ranks == 1)
        rc = firn_main(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "run"))
        rc = firn_cli_mpi_run(argc - 2, argv + 2);
    else {
        if (firn_mpi_rank() == 0)
            fprintf(stderr,
                    "firn %s: not supported with %d MPI ranks: only `firn run` is distributed; "
                    "run it with one rank\n",
                    argc >= 2 ? argv[1] : "", ranks);
        rc = FIRN_E_USAGE;
    }
    firn_mpi_finalize();
    return rc;
}
#else
int main(int argc, char **argv) { return firn_main(argc, argv); }
#endif
