/* test_gpu_sph.c - the SPH solver on the CUDA path (kernels/sph.cu)
 * against its CPU twin (host/sph_cpu.c).
 *
 * Kernel level: one substep from a random state (a jittered lattice of
 * about 2200 particles with random velocities, some at the box's faces
 * moving out), WCSPH and DFSPH, every field of the particles (x, v, acc,
 * rho, p, alpha, drho: each written by one or more of the kernels) element
 * by element, and the neighbour grid exactly. Both paths sum over
 * neighbours in the same order (CUB's radix sort is stable, as the CPU's
 * counting sort), so the only source of difference is nvcc's FMA
 * contraction and libm's last bits (powf, expf): the tolerance is
 * |gpu - cpu| <= 1e-5 scale + 1e-4 |cpu|, scale the field's largest CPU
 * magnitude, as firn compare's (on the emulated runtime, which does not
 * contract, the two agree bitwise). WCSPH's pressure law amplifies a
 * density's rounding (dp/drho = c0^2: 1e-6 rho is 1e-4 of a resting tank's
 * pressure scale; seen on an H200 as 2e-4), so the density's tolerance is
 * carried through it: p's scale is at least dp/drho times rho's, acc's at
 * least that pressure over rho h (a pressure difference across a support
 * radius), v's at least dt times acc's, as in firn compare. The
 * sort's keys come from the same initial positions on both paths, so the
 * grids must be identical even on a GPU. DFSPH's solves stop on the
 * device: over a call launched as CUDA graphs, only the iterations the CPU
 * runs do per-particle work or sum the error terms.
 *
 * Scene level: frames of scenes/sph_dam_break.json, the coupling pairs'
 * scenes for a few substeps, and a non-finite SPH particle reported as the
 * CPU reports it. Every test skips, and only, without a usable GPU. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "gpu_compare.h"
#include "gpu_skip.h"
#include "sph.h"
#include "world.h"

#ifdef FIRN_WITH_CUDA
/* kernels/sph.cu, for this test only: the neighbour grid of the last
 * substep (sorted: n; start, end: cells); the blocks of the DFSPH solves'
 * launches that did their particles' work (divergence, density), and the
 * blocks of one launch. */
int firn_cuda_sph_download_grid(firn_world *w, int *sorted, int *start, int *end, firn_error *err);
int firn_cuda_sph_solve_work(firn_world *w, unsigned long long work[2], int *blocks,
                             firn_error *err);
#endif
#ifdef FIRN_EMU_BUILD
/* test/emu/runtime.cpp: the runs of a kernel or a CUB call by name. */
unsigned long long firn_emu_runs(const char *name);
#endif

/* ---- worlds --------------------------------------------------------------- */

/* A 0.2 m cube of water (p = 0.015 m: 13^3 particles) in a 0.4 m box. */
static void sph_scene(firn_scene_def *def, firn_pressure_solver solver)
{
    firn_scene_default(def);
    const float lo[3] = {0, 0, 0}, hi[3] = {0.4f, 0.4f, 0.4f};
    memcpy(def->lower, lo, sizeof lo);
    memcpy(def->upper, hi, sizeof hi);
    def->dx = 0.02f;
    def->sph.particle_size = 0.015f;
    def->write_ply = def->write_preview = 0;
    def->n_materials = 1;
    firn_material_default(&def->materials[0], FIRN_MODEL_SPH_LIQUID);
    snprintf(def->materials[0].name, FIRN_NAME_MAX, "water");
    def->materials[0].pressure_solver = solver;
    def->n_bodies = 1;
    firn_body_default(&def->bodies[0]);
    def->bodies[0].solver = FIRN_SOLVER_KIND_SPH;
    def->bodies[0].shape.type = FIRN_SHAPE_BOX;
    const float c[3] = {0.2f, 0.15f, 0.2f}, s[3] = {0.2f, 0.2f, 0.2f};
    memcpy(def->bodies[0].shape.center, c, sizeof c);
    memcpy(def->bodies[0].shape.size, s, sizeof s);
}

/* Jitters the lattice by up to 0.3 p per axis and gives random velocities
 * up to 0.5 m/s; every 40th particle sits 1 mm inside a face of the SPH box
 * moving out through it at 2 m/s (the box's clamp). */
static void randomise(firn_sph *S, uint64_t seed)
{
    const int n = S->n;
    const float p = S->P.psize;
    rng_state = seed;
    for (int i = 0; i < n; i++) {
        for (int a = 0; a < 3; a++) {
            S->s.x[a * n + i] += frand(-0.3f, 0.3f) * p;
            S->s.v[a * n + i] = frand(-0.5f, 0.5f);
        }
        if (i % 40 == 0) {
            const int a = (i / 40) % 3, up = (i / 120) % 2;
            S->s.x[a * n + i] = up ? S->P.upper[a] - 0.001f : S->P.lower[a] + 0.001f;
            S->s.v[a * n + i] = up ? 2.0f : -2.0f;
        }
    }
}

/* A CPU world and a CUDA world (graphs: firn_graph_mode) holding the same
 * random SPH state; the CUDA world's device copy is rebuilt from its host
 * mirror. */
static void twin_worlds(firn_pressure_solver solver, firn_graph_mode graphs, firn_world **cpu,
                        firn_world **gpu)
{
    firn_scene_def def;
    firn_error err = {0};
    sph_scene(&def, solver);
    firn_run_options run = firn_run_options_default();
    run.backend = FIRN_BACKEND_CUDA;
    run.graphs = graphs;
    *cpu = make_world(&def, FIRN_BACKEND_CPU);
    *gpu = make_world_run(&def, &run);
    cr_assert_eq((*cpu)->sph.n, (*gpu)->sph.n, "both worlds sample the same particles");
    cr_assert_gt((*cpu)->sph.n, 2000, "%d SPH particles", (*cpu)->sph.n);
    randomise(&(*cpu)->sph, 0x5eed5badULL + (uint64_t)solver);
    memcpy((*gpu)->sph.block, (*cpu)->sph.block, 13 * (size_t)(*cpu)->sph.n * sizeof(float));
    firn_cuda_sph_free(*gpu);
    cr_assert_eq(firn_cuda_sph_init(*gpu, &err), 0, "firn_cuda_sph_init: %s", err.msg);
}

/* ---- comparison ----------------------------------------------------------- */

/* Every field of the two SPH states, with the density's tolerance carried
 * through the pressure law into p, acc and v (the file's head). */
static void expect_sph_close(const char *label, const firn_sph *g, const firn_sph *c)
{
    const long long n = c->n;
    double rho_scale = 0.0;
    for (long long i = 0; i < n; i++)
        rho_scale = fmax(rho_scale, fabs((double)c->s.rho[i]));
    const double p_floor = firn_sph_pressure_slope(c, rho_scale) * rho_scale;
    const double acc_floor = rho_scale > 0.0 ? p_floor / (rho_scale * c->P.h) : 0.0;
    expect_close(label, "x", g->s.x, c->s.x, 3 * n, n);
    expect_close_floor(label, "v", g->s.v, c->s.v, 3 * n, n, c->P.dt * acc_floor);
    expect_close_floor(label, "acc", g->s.acc, c->s.acc, 3 * n, n, acc_floor);
    expect_close(label, "rho", g->s.rho, c->s.rho, n, n);
    expect_close_floor(label, "p", g->s.p, c->s.p, n, n, p_floor);
    expect_close(label, "alpha", g->s.alpha, c->s.alpha, n, n);
    expect_close(label, "drho", g->s.drho, c->s.drho, n, n);
}

/* ---- one substep from a random state -------------------------------------- */

static void substep_matches_cpu(firn_pressure_solver solver)
{
    require_gpu();
    const char *label = solver == FIRN_PRESSURE_DFSPH ? "DFSPH" : "WCSPH";
    firn_world *cpu, *gpu;
    twin_worlds(solver, FIRN_GRAPHS_AUTO, &cpu, &gpu);
    const float dt = 2e-4f;
    firn_error err = {0};
    cr_assert_eq(firn_world_substep(cpu, dt, &err), 0, "%s: CPU substep: %s", label, err.msg);
    cr_assert_eq(firn_world_substep(gpu, dt, &err), 0, "%s: GPU substep: %s", label, err.msg);
    cr_assert_eq(firn_cuda_sph_download(gpu, &err), 0, "%s: download: %s", label, err.msg);
    expect_sph_close(label, &gpu->sph, &cpu->sph);
    if (solver == FIRN_PRESSURE_DFSPH) {
        cr_log_info("%s: iterations: CPU %d + %d, GPU %d + %d", label, cpu->sph.iters[0],
                    cpu->sph.iters[1], gpu->sph.iters[0], gpu->sph.iters[1]);
        cr_expect_gt(cpu->sph.iters[1], 1, "the density solve converged at once: nothing tested");
        for (int k = 0; k < 2; k++) {
            cr_expect_eq(gpu->sph.iters[k], cpu->sph.iters[k],
                         "%s solve: GPU %d iterations, CPU %d", k ? "density" : "divergence",
                         gpu->sph.iters[k], cpu->sph.iters[k]);
            cr_expect_eq(gpu->sph.iters_total[k], cpu->sph.iters_total[k]);
        }
        cr_expect_eq(gpu->sph.solves, 1);
    }
#ifdef FIRN_WITH_CUDA
    /* The neighbour grid both built from the same positions: identical. */
    const int n = cpu->sph.n, cells = cpu->sph.G.cells;
    int *sorted = malloc((size_t)n * sizeof(int)), *start = malloc((size_t)cells * sizeof(int)),
        *end = malloc((size_t)cells * sizeof(int));
    cr_assert(sorted && start && end);
    cr_assert_eq(firn_cuda_sph_download_grid(gpu, sorted, start, end, &err), 0, "%s", err.msg);
    int bad_sorted = -1, bad_cell = -1;
    for (int i = 0; i < n && bad_sorted < 0; i++)
        if (sorted[i] != cpu->sph.G.sorted[i])
            bad_sorted = i;
    for (int c = 0; c < cells && bad_cell < 0; c++)
        if (start[c] != cpu->sph.G.start[c] || end[c] != cpu->sph.G.end[c])
            bad_cell = c;
    cr_expect_eq(bad_sorted, -1, "%s: sorted[%d]: GPU %d, CPU %d", label, bad_sorted,
                 bad_sorted >= 0 ? sorted[bad_sorted] : 0,
                 bad_sorted >= 0 ? cpu->sph.G.sorted[bad_sorted] : 0);
    cr_expect_eq(bad_cell, -1, "%s: cell %d: GPU [%d, %d), CPU [%d, %d)", label, bad_cell,
                 bad_cell >= 0 ? start[bad_cell] : 0, bad_cell >= 0 ? end[bad_cell] : 0,
                 bad_cell >= 0 ? cpu->sph.G.start[bad_cell] : 0,
                 bad_cell >= 0 ? cpu->sph.G.end[bad_cell] : 0);
    int empty = 0;
    for (int c = 0; c < cells; c++)
        empty += start[c] == end[c];
    cr_expect(empty > 0 && empty < cells, "%d of %d cells empty: the test needs both kinds", empty,
              cells);
    free(sorted), free(start), free(end);
#endif
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

Test(gpu_sph, wcsph_substep_and_neighbour_grid_match_cpu, .timeout = 120)
{
    substep_matches_cpu(FIRN_PRESSURE_WCSPH);
}

Test(gpu_sph, dfsph_substep_iterations_and_neighbour_grid_match_cpu, .timeout = 300)
{
    substep_matches_cpu(FIRN_PRESSURE_DFSPH);
}

/* The DFSPH solves stop on the device. Three substeps in one call, launched
 * as CUDA graphs, each solve queued at the scene's cap (100 iterations),
 * run the CPU's iterations, and only those do work: the blocks of the
 * solves' launches that did their particles' work are two launches' worth
 * (iterate, source-and-sum) per iteration run, so every block of a
 * converged iteration returned at once. On the emulated runtime also: two
 * launches per queued iteration, and no CUB reduction (the solves sum
 * their error terms themselves, and not once converged). */
Test(gpu_sph, dfsph_converged_iterations_do_no_work, .timeout = 300)
{
    require_gpu();
    firn_world *cpu, *gpu;
    twin_worlds(FIRN_PRESSURE_DFSPH, FIRN_GRAPHS_ON, &cpu, &gpu);
    const int nsub = 3;
    const float dt = 2e-4f;
    firn_error err = {0};
#ifdef FIRN_WITH_CUDA
    unsigned long long before[2], after[2];
    int blocks = 0;
    cr_assert_eq(firn_cuda_sph_solve_work(gpu, before, &blocks, &err), 0, "%s", err.msg);
#endif
#ifdef FIRN_EMU_BUILD
    const char *names[3] = {"sph_df_iterate", "sph_df_source_sum", "cub::DeviceReduce::Sum"};
    unsigned long long runs[3];
    for (int k = 0; k < 3; k++)
        runs[k] = firn_emu_runs(names[k]);
#endif
    cr_assert_eq(firn_world_run_substeps(cpu, nsub, dt, &err), 0, "CPU: %s", err.msg);
    cr_assert_eq(firn_world_run_substeps(gpu, nsub, dt, &err), 0, "GPU: %s", err.msg);
    firn_cuda_graph_stats gs;
    firn_cuda_graph_stats_get(gpu, &gs);
    cr_expect_eq(gs.launches, 2, "%lld graphs launched, not 2 (%s)", gs.launches, gs.why);
    const firn_sph *c = &cpu->sph, *g = &gpu->sph;
    const int cap[2] = {c->P.div_iters, c->P.dens_iters};
    cr_expect_eq(g->solves, nsub);
    for (int k = 0; k < 2; k++) {
        const char *kind = k ? "density" : "divergence";
        cr_log_info("%s: %lld iterations in %d solves (CPU %lld), %d queued", kind,
                    (long long)g->iters_total[k], nsub, (long long)c->iters_total[k],
                    nsub * cap[k]);
        cr_expect_eq(g->iters_total[k], c->iters_total[k], "%s: GPU %lld iterations, CPU %lld",
                     kind, (long long)g->iters_total[k], (long long)c->iters_total[k]);
        cr_expect_eq(g->iters[k], c->iters[k]);
        cr_expect_lt(c->iters_total[k], nsub * cap[k] / 2,
                     "%s: few converged iterations queued: nothing tested", kind);
    }
#ifdef FIRN_WITH_CUDA
    cr_assert_eq(firn_cuda_sph_solve_work(gpu, after, &blocks, &err), 0, "%s", err.msg);
    for (int k = 0; k < 2; k++) {
        const unsigned long long want = 2ULL * (unsigned long long)blocks * c->iters_total[k];
        cr_expect_eq(after[k] - before[k], want,
                     "%s solves: %llu blocks did their particles' work, %llu for %lld iterations "
                     "of %d blocks",
                     k ? "density" : "divergence", after[k] - before[k], want,
                     (long long)c->iters_total[k], 2 * blocks);
    }
#endif
#ifdef FIRN_EMU_BUILD
    const unsigned long long queued = (unsigned long long)nsub * (cap[0] + cap[1]);
    for (int k = 0; k < 3; k++) {
        const unsigned long long ran = firn_emu_runs(names[k]) - runs[k], want = k < 2 ? queued : 0;
        cr_expect_eq(ran, want, "%s ran %llu times in %d substeps, not %llu", names[k], ran, nsub,
                     want);
    }
#endif
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* ---- scenes --------------------------------------------------------------- */

static firn_world *scene_world(const char *path, firn_backend backend, firn_scene_def *def)
{
    firn_error err = {0};
    cr_assert_eq(firn_scene_load_json(path, def, &err), 0, "%s", err.msg);
    def->write_ply = def->write_preview = 0;
    return make_world(def, backend);
}

/* `firn compare` on a world of SPH alone lists SPH's fields and its frame
 * statistics (the SPH solver's compare_stats), and no MPM field, statistic
 * or grid entry: nothing writes the grid without MPM particles, and a
 * solver without elements has no entries (host/compare.c). */
Test(gpu_sph, compare_of_an_sph_world_lists_only_its_fields, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    sph_scene(&def, FIRN_PRESSURE_WCSPH);
    firn_compare_report r;
    firn_error err = {0};
    cr_assert_eq(firn_compare_backends(&def, 1, &r, &err), 0, "%s", err.msg);
    cr_expect(r.ok, "the SPH pool's paths differ");
    int fields = 0, stats = 0, density = 0;
    for (int e = 0; e < r.n_entries; e++) {
        const char *name = r.entries[e].name;
        cr_expect(!strncmp(name, "sph ", 4), "entry '%s' in a world of SPH alone", name);
        fields += !r.entries[e].statistic;
        stats += r.entries[e].statistic;
        density += !strcmp(name, "sph mean density");
    }
    cr_expect_eq(fields, 8, "%d SPH fields, not x, v, rho, p after one substep and again perturbed",
                 fields);
    cr_expect_eq(stats, 15,
                 "%d SPH statistics, not its kinetic energy, centre, momentum and box per axis, "
                 "mean density and pressure",
                 stats);
    cr_expect_eq(density, 1, "no 'sph mean density' statistic");
    firn_compare_report_free(&r);
}

/* firn_world_memory's device figure for an SPH scene: a CPU world's
 * estimate (firn_sph_device_bytes with the MPM arrays) is what the CUDA
 * world allocates, less CUB's scratch and the materials (under 1 MiB at
 * this size), and the CUDA world reports what it allocated. */
Test(gpu_sph, memory_figure_is_what_the_device_allocates, .timeout = 120)
{
    require_gpu();
    firn_scene_def def;
    firn_world *cpu = scene_world("scenes/sph_dam_break.json", FIRN_BACKEND_CPU, &def);
    firn_world *gpu = scene_world("scenes/sph_dam_break.json", FIRN_BACKEND_CUDA, &def);
    firn_memory mc, mg;
    firn_world_memory(cpu, &mc);
    firn_world_memory(gpu, &mg);
    cr_assert_gt(cpu->sph.n, 0);
    cr_expect_gt(mc.device, (double)firn_sph_device_bytes(cpu->sph.n, 1) - 1.0,
                 "the CPU world's device figure counts the SPH state");
    cr_expect_geq(mg.device, mc.device, "GPU %.0f B, CPU twin's estimate %.0f B", mg.device,
                  mc.device);
    cr_expect_leq(mg.device, mc.device + 1048576.0, "GPU %.0f B, CPU twin's estimate %.0f B",
                  mg.device, mc.device);
    cr_expect_gt(mc.per_particle, 0.0, "an SPH-only scene's memory per particle");
    firn_world_destroy(gpu);
    firn_world_destroy(cpu);
}

/* Two frames of the dam break (about 100 substeps, the column falling and
 * the surge starting along the floor). Particle by particle the paths part
 * as FMA rounding grows through the pressure (chaotic) flow, so the frame
 * statistics are compared: the centre of mass and the bounding box within
 * 1e-3 of the tank's size (0.8 mm: the column falls about 2 cm by then),
 * the kinetic energy and the mean density within 1 % (firn compare's
 * tolerance for statistics). */
Test(gpu_sph, dam_break_frames_match_cpu, .timeout = 600)
{
    require_gpu();
    firn_scene_def def;
    firn_world *cpu = scene_world("scenes/sph_dam_break.json", FIRN_BACKEND_CPU, &def);
    firn_world *gpu = scene_world("scenes/sph_dam_break.json", FIRN_BACKEND_CUDA, &def);
    firn_frame_stats sc, sg;
    firn_error err = {0};
    for (int f = 0; f < 2; f++) {
        cr_assert_eq(firn_world_step_frame(cpu, &sc, &err), 0, "CPU: %s", err.msg);
        cr_assert_eq(firn_world_step_frame(gpu, &sg, &err), 0, "GPU: %s", err.msg);
        cr_assert_eq(sc.frame_substeps, sg.frame_substeps, "frame %d: substeps CPU %d, GPU %d",
                     f + 1, sc.frame_substeps, sg.frame_substeps);
    }
    const firn_sph_frame_stats *c = &sc.sph, *g = &sg.sph;
    cr_assert_gt(c->particles, 0);
    const double L = def.upper[0] - def.lower[0];
    for (int a = 0; a < 3; a++) {
        cr_expect(fabs(c->center_of_mass[a] - g->center_of_mass[a]) <= 1e-3 * L,
                  "centre of mass[%d]: CPU %.7g, GPU %.7g", a, c->center_of_mass[a],
                  g->center_of_mass[a]);
        cr_expect(fabs(c->bbox_lower[a] - g->bbox_lower[a]) <= 1e-3 * L,
                  "bbox lower[%d]: CPU %.7g, GPU %.7g", a, c->bbox_lower[a], g->bbox_lower[a]);
        cr_expect(fabs(c->bbox_upper[a] - g->bbox_upper[a]) <= 1e-3 * L,
                  "bbox upper[%d]: CPU %.7g, GPU %.7g", a, c->bbox_upper[a], g->bbox_upper[a]);
    }
    cr_expect(c->kinetic_energy > 0.0, "the column never moved");
    cr_expect(fabs(c->kinetic_energy - g->kinetic_energy) <= 1e-2 * c->kinetic_energy,
              "kinetic energy: CPU %.7g J, GPU %.7g J", c->kinetic_energy, g->kinetic_energy);
    cr_expect(fabs(c->mean_density - g->mean_density) <= 1e-2 * c->mean_density,
              "mean density: CPU %.7g, GPU %.7g", c->mean_density, g->mean_density);
    cr_log_info("dam break, 2 frames: |d com| %.3g %.3g %.3g m, KE CPU %.7g GPU %.7g J, mean "
                "density CPU %.7g GPU %.7g",
                fabs(c->center_of_mass[0] - g->center_of_mass[0]),
                fabs(c->center_of_mass[1] - g->center_of_mass[1]),
                fabs(c->center_of_mass[2] - g->center_of_mass[2]), c->kinetic_energy,
                g->kinetic_energy, c->mean_density, g->mean_density);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* The pairs on the device: MPM-SPH (the snowball of sph_snowball_pool
 * lowered 2.5 cm into the pool, so that the contact, its reaction and the
 * covered liquid in the density all act from the first substep) and SPH-rigid (the box of
 * sph_floating_box lowered into the water and moving down at 0.5 m/s), 10 substeps of each scene's
 * first frame step, so that the pair acts from the first substep: the SPH and MPM particles element
 * by element (as above; the MPM fields with firn compare's 1e-5 of the scale) and, as the pairs'
 * force sums are double atomics on the device, the rigid body's state to 1e-5 relative. The pair
 * must have acted: the SPH velocities differ from a CPU run without it. */
static void pair_scene_matches_cpu(const char *path, int body, int rigid, float y)
{
    require_gpu();
    firn_scene_def def;
    firn_error err = {0};
    cr_assert_eq(firn_scene_load_json(path, &def, &err), 0, "%s", err.msg);
    def.write_ply = def.write_preview = 0;
    if (body >= 0)
        def.bodies[body].shape.center[1] = y;
    if (rigid >= 0) { /* moving into the liquid, so that its SDF impulse acts too */
        def.rigids[rigid].shape.center[1] = y;
        def.rigids[rigid].velocity[1] = -0.5f;
    }
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    if (body >= 0)
        def.coupling.mpm_sph = 0;
    else
        def.coupling.sph_rigid = 0;
    firn_world *off = make_world(&def, FIRN_BACKEND_CPU);
    float dt;
    int nsub;
    cr_assert_eq(firn_world_next_frame_step(cpu, &dt, &nsub, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_run_substeps(cpu, 10, dt, &err), 0, "CPU: %s", err.msg);
    cr_assert_eq(firn_world_run_substeps(gpu, 10, dt, &err), 0, "GPU: %s", err.msg);
    cr_assert_eq(firn_world_run_substeps(off, 10, dt, &err), 0, "CPU, pair off: %s", err.msg);
    double moved = 0.0;
    for (long long k = 0; k < 3LL * cpu->sph.n; k++)
        moved = fmax(moved, fabs((double)cpu->sph.s.v[k] - off->sph.s.v[k]));
    cr_log_info("%s: the pair changed SPH velocities by up to %.3g m/s", path, moved);
    cr_expect_gt(moved, 1e-3, "%s: the pair did not act (max |dv| %g m/s)", path, moved);
    firn_world_destroy(off);
    cr_assert_eq(firn_cuda_sph_download(gpu, &err), 0, "%s", err.msg);
    expect_sph_close(path, &gpu->sph, &cpu->sph);
    firn_particles_view a, b;
    cr_assert_eq(firn_world_particles(gpu, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_particles(cpu, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(a.n, b.n);
    if (b.n > 0) {
        expect_close(path, "mpm x", a.x, b.x, 3 * b.n, b.n);
        expect_close(path, "mpm v", a.v, b.v, 3 * b.n, b.n);
    }
    firn_frame_stats sc, sg;
    cr_assert_eq(firn_world_stats(cpu, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(gpu, &sg, &err), 0, "%s", err.msg);
    for (int k = 0; k < sc.n_rigids; k++)
        cr_log_info("%s: rigid %d force CPU (%.6g %.6g %.6g) GPU (%.6g %.6g %.6g) N", path, k,
                    sc.rigids[k].force[0], sc.rigids[k].force[1], sc.rigids[k].force[2],
                    sg.rigids[k].force[0], sg.rigids[k].force[1], sg.rigids[k].force[2]);
    for (int k = 0; k < sc.n_rigids; k++)
        for (int q = 0; q < 3; q++) {
            const float vc = sc.rigids[k].velocity[q], vg = sg.rigids[k].velocity[q];
            cr_expect(fabsf(vc - vg) <= 1e-5f * (1.0f + fabsf(vc)),
                      "%s: rigid %d velocity[%d]: CPU %.9g, GPU %.9g", path, k, q, vc, vg);
            const float fc = sc.rigids[k].force[q], fg = sg.rigids[k].force[q];
            cr_expect(fabsf(fc - fg) <= 1e-4f * (1.0f + fabsf(fc)),
                      "%s: rigid %d force[%d]: CPU %.9g, GPU %.9g", path, k, q, fc, fg);
        }
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

Test(gpu_sph, mpm_sph_pair_matches_cpu, .timeout = 300)
{
    pair_scene_matches_cpu("scenes/sph_snowball_pool.json", 1, -1, 0.12f);
}

Test(gpu_sph, sph_rigid_pair_matches_cpu, .timeout = 300)
{
    pair_scene_matches_cpu("scenes/sph_floating_box.json", -1, 0, 0.12f);
}

/* A NaN planted in one SPH particle's velocity spreads to its neighbours
 * in the first substep. Both paths run 3 substeps in one call and must name
 * an SPH particle, substep 1 and the same (lowest) particle index. */
Test(gpu_sph, nonfinite_sph_particle_is_reported_as_the_cpu_does, .timeout = 120)
{
    require_gpu();
    firn_world *cpu, *gpu;
    twin_worlds(FIRN_PRESSURE_WCSPH, FIRN_GRAPHS_AUTO, &cpu, &gpu);
    const int n = cpu->sph.n, j = n / 2;
    cpu->sph.s.v[n + j] = NAN;
    gpu->sph.s.v[n + j] = NAN;
    firn_error err = {0};
    firn_cuda_sph_free(gpu);
    cr_assert_eq(firn_cuda_sph_init(gpu, &err), 0, "firn_cuda_sph_init: %s", err.msg);
    firn_error ec = {0}, eg = {0};
    cr_assert_neq(firn_world_run_substeps(cpu, 3, 1e-4f, &ec), 0, "the CPU path ran through a NaN");
    cr_assert_neq(firn_world_run_substeps(gpu, 3, 1e-4f, &eg), 0, "the GPU ran through a NaN");
    cr_expect_eq(ec.code, FIRN_E_NUMERIC, "%s", ec.msg);
    cr_expect_eq(eg.code, FIRN_E_NUMERIC, "%s", eg.msg);
    cr_expect(strstr(ec.msg, "SPH particle") != NULL, "CPU: %s", ec.msg);
    cr_expect(strstr(eg.msg, "SPH particle") != NULL, "GPU: %s", eg.msg);
    cr_expect(strstr(eg.msg, "substep 1; the GPU ran on to substep 3)") != NULL, "GPU: %s", eg.msg);
    const char *pc = strstr(ec.msg, "particle "), *pg = strstr(eg.msg, "particle ");
    cr_assert(pc && pg, "CPU: %s\nGPU: %s", ec.msg, eg.msg);
    cr_expect_eq(atoi(pc + 9), atoi(pg + 9), "CPU: %s\nGPU: %s", ec.msg, eg.msg);
    firn_world_destroy(gpu);
    firn_world_destroy(cpu);
}
