/* test_gpu_fem.c - the FEM solver on the CUDA path (kernels/fem.cu, the
 * FEM-Rigid kernel of kernels/coupling.cu) against its CPU twin
 * (host/fem_cpu.c, host/fem_coupling.c).
 *
 * Kernel level: one substep of a clamped block of each constitutive model
 * from a perturbed state (every vertex moved by up to a tenth of an edge
 * and given a random velocity), every field the substep writes (x, v, x0
 * and the gathered force f) element by element. Each element writes its
 * own force slots and each vertex sums its slots in the same adjacency
 * order on both paths, so the only differences are nvcc's FMA contraction
 * and the device's libm: the tolerance is firn compare's, |gpu - cpu| <=
 * 1e-5 scale (scale the field's largest CPU magnitude) + 1e-4 |cpu|. The
 * emulated runtime does neither, so there the fields agree bit for bit,
 * which is checked too.
 *
 * Pairs: FEM-MPM, FEM-Rigid (a dynamic ball) and FEM-SPH, each on bodies
 * already in contact, 20 substeps: the FEM vertices and the other solver's
 * state with the same tolerance (the pairs' scatters are float atomics on
 * the device, in another order than the CPU's), the ball's velocity to
 * 1e-5 relative; each pair must have acted (the state differs from a run
 * with the pair off). Then the non-finite report. Implicit bodies
 * (kernels/fem_implicit.cu): one backward Euler substep of each model from
 * a perturbed state, an explicit and an implicit body together over 20
 * substeps, with the Newton and CG counts as the CPU's, a solve that
 * Newton's cap ends (newton_max iterations on both paths, no more), and a
 * failed solve's report. Every test skips, and only, without a usable GPU (real
 * or emulated). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "fem.h"
#include "fem_implicit.h"
#include "gpu_compare.h"
#include "gpu_skip.h"
#include "test_util.h"
#include "world.h"

/* ---- worlds --------------------------------------------------------------- */

/* def from JSON written with single quotes. */
static void scene_of(const char *single_quoted, firn_scene_def *def)
{
    static char buf[4096];
    size_t n = strlen(single_quoted);
    cr_assert_lt(n, sizeof buf);
    for (size_t i = 0; i <= n; i++)
        buf[i] = single_quoted[i] == '\'' ? '"' : single_quoted[i];
    firn_error err = {0};
    cr_assert_eq(firn_scene_parse_json(buf, "t.json", def, &err), 0, "%s", err.msg);
    def->write_ply = def->write_preview = 0;
}

static void run(firn_world *w, int substeps, float dt, const char *label)
{
    firn_error err = {0};
    cr_assert_eq(firn_world_run_substeps(w, substeps, dt, &err), 0, "%s: %s", label, err.msg);
}

/* A 0.2 x 0.1 x 0.1 m block of 8 x 4 x 4 cells (768 tets) of `model`,
 * E = 1e5 Pa, its x = -0.1 face clamped, in a 1 m domain. */
static void block_scene(firn_scene_def *def, const char *model)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{'domain': {'lower': [-0.5, -0.5, -0.5], 'upper': [0.5, 0.5, 0.5], 'dx': 0.05},"
             " 'materials': {'f': {'model': '%s', 'E': 1e5, 'nu': 0.3, 'density': 1000}},"
             " 'fem': {'damping': 1},"
             " 'bodies': [{'material': 'f', 'solver': 'fem',"
             "   'shape': {'type': 'box', 'center': [0, 0, 0], 'size': [0.2, 0.1, 0.1],"
             "             'cells': [8, 4, 4]},"
             "   'fixed': {'box': {'lower': [-0.11, -1, -1], 'upper': [-0.09, 1, 1]}}}]}",
             model);
    scene_of(json, def);
}

/* The GPU world's state set to the CPU world's (host mirror, then upload). */
static void copy_fem_state(firn_world *gpu, const firn_world *cpu)
{
    const size_t n3 = 3 * (size_t)cpu->fem.V.n * sizeof(float);
    cr_assert_eq(gpu->fem.V.n, cpu->fem.V.n, "both worlds build the same vertices");
    memcpy(gpu->fem.V.x, cpu->fem.V.x, n3);
    memcpy(gpu->fem.V.v, cpu->fem.V.v, n3);
    memcpy(gpu->fem.V.x0, cpu->fem.V.x0, n3);
    firn_error err = {0};
    cr_assert_eq(firn_cuda_fem_upload(gpu, &err), 0, "firn_cuda_fem_upload: %s", err.msg);
}

/* Every vertex moved by up to `edges` of an edge (2.5 cm) per axis, fixed
 * ones too (they stay wherever they are), the free ones given a velocity up
 * to `speed` per axis. */
static void perturb_by(firn_fem *S, uint64_t seed, float edges, float speed)
{
    const int n = S->V.n;
    const float h = edges * 0.025f;
    rng_state = seed;
    for (int i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            S->V.x[a * n + i] += frand(-h, h);
            S->V.v[a * n + i] = S->V.fixed[i] ? 0.0f : frand(-speed, speed);
        }
}

/* By up to 0.1 of an edge and 0.5 m/s. */
static void perturb(firn_fem *S, uint64_t seed) { perturb_by(S, seed, 0.1f, 0.5f); }

/* ---- comparison ----------------------------------------------------------- */

/* The FEM vertices of both worlds (the GPU's downloaded through the
 * world's accessor): x, v, x0, and with bitwise set f and the bitwise
 * check on the emulated runtime. Without it (the pairs: their atomics
 * leave x a few ulps apart) f is left out: it is the stiffness times
 * position, so a position difference of 1e-7 of the scale becomes E h dx,
 * ~1e-3 N on the blocks here, far above f's own 1e-5 scale. */
static void expect_fem_close(const char *label, firn_world *gpu, firn_world *cpu, int bitwise)
{
    firn_frame_stats sg, sc;
    firn_error err = {0};
    cr_assert_eq(firn_world_stats(gpu, &sg, &err), 0, "%s", err.msg); /* downloads */
    cr_assert_eq(firn_world_stats(cpu, &sc, &err), 0, "%s", err.msg);
    const firn_fem *g = &gpu->fem, *c = &cpu->fem;
    const long long n = c->V.n;
    cr_assert_eq(g->V.n, n);
    const struct {
        const char *name;
        const float *a, *b;
    } f[4] = {{"x", g->V.x, c->V.x},
              {"v", g->V.v, c->V.v},
              {"x0", g->V.x0, c->V.x0},
              {"f", g->V.f, c->V.f}};
    for (int k = 0; k < (bitwise ? 4 : 3); k++) {
        expect_close(label, f[k].name, f[k].a, f[k].b, 3 * n, n);
        if (bitwise)
            expect_bitwise_on_emulation(label, f[k].name, f[k].a, f[k].b, 3 * n);
    }
}

/* ---- one substep from a perturbed state ----------------------------------- */

/* The clamped block of `model` (implicit: backward Euler) on both paths,
 * the GPU's state set to the CPU's perturbed one (seed), after one
 * substep of dt on each. */
static void perturbed_substep(const char *model, int implicit, uint64_t seed, float dt,
                              firn_world **cpu, firn_world **gpu)
{
    firn_scene_def def;
    block_scene(&def, model);
    def.bodies[0].fem_implicit = implicit;
    *cpu = make_world(&def, FIRN_BACKEND_CPU);
    *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    cr_assert((*gpu)->fem.cuda, "the FEM state is on the device");
    cr_assert_eq((*cpu)->fem.E.n, 8 * 4 * 4 * 6, "%d elements", (*cpu)->fem.E.n);
    cr_assert_eq((*cpu)->fem.fixed, 5 * 5, "%lld fixed vertices", (*cpu)->fem.fixed);
    perturb(&(*cpu)->fem, seed);
    copy_fem_state(*gpu, *cpu);
    run(*cpu, 1, dt, "CPU");
    run(*gpu, 1, dt, "GPU");
}

static void substep_matches(const char *model)
{
    require_gpu();
    firn_world *cpu, *gpu;
    perturbed_substep(model, 0, 0x5eedfe3ULL, 1e-4f, &cpu, &gpu);
    /* The forces are those of a strained block: not all zero. */
    const firn_fem *c = &cpu->fem;
    float fmax = 0.0f;
    for (long long k = 0; k < 3LL * c->V.n; k++)
        fmax = fmaxf(fmax, fabsf(c->V.f[k]));
    cr_assert_gt(fmax, 1e-3f, "%s: the perturbed block has no elastic force (%g N)", model, fmax);
    expect_fem_close(model, gpu, cpu, 1);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

Test(gpu_fem, linear_substep_matches_cpu_field_by_field, .timeout = 300)
{
    substep_matches("fem_linear");
}

Test(gpu_fem, corotated_substep_matches_cpu_field_by_field, .timeout = 300)
{
    substep_matches("fem_corotated");
}

Test(gpu_fem, stable_neohookean_substep_matches_cpu_field_by_field, .timeout = 300)
{
    substep_matches("fem_stable_neohookean");
}

/* 50 substeps of the block hanging from its clamp under gravity (the
 * walls out of reach): every step's forces, velocities and positions, as
 * a run; fixed vertices bitwise still on the GPU. */
Test(gpu_fem, clamped_block_over_fifty_substeps_matches_cpu, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    block_scene(&def, "fem_corotated");
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    const int n = gpu->fem.V.n;
    float *x_start = malloc(3 * (size_t)n * sizeof(float));
    cr_assert(x_start);
    memcpy(x_start, gpu->fem.V.x, 3 * (size_t)n * sizeof(float));
    run(cpu, 50, 2e-4f, "CPU");
    run(gpu, 50, 2e-4f, "GPU");
    expect_fem_close("clamped block", gpu, cpu, 1);
    int moved_fixed = -1;
    float sag = 0.0f;
    for (int i = 0; i < n; i++) {
        if (!gpu->fem.V.fixed[i]) {
            sag = fmaxf(sag, x_start[n + i] - gpu->fem.V.x[n + i]);
            continue;
        }
        for (int a = 0; a < 3; a++)
            if (memcmp(&gpu->fem.V.x[a * n + i], &x_start[a * n + i], sizeof(float)) &&
                moved_fixed < 0)
                moved_fixed = i;
    }
    cr_expect_eq(moved_fixed, -1, "fixed vertex %d moved on the GPU", moved_fixed);
    cr_expect_gt(sag, 1e-5f, "the free end did not fall (%g m)", sag);
    free(x_start);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* ---- pairs ---------------------------------------------------------------- */

/* Runs def on both paths and with the pair off (flag zeroed) on the CPU
 * for `substeps` substeps of dt; returns the worlds. */
static void pair_worlds(firn_scene_def *def, int *flag, int substeps, float dt, firn_world **cpu,
                        firn_world **gpu, firn_world **off)
{
    *cpu = make_world(def, FIRN_BACKEND_CPU);
    *gpu = make_world(def, FIRN_BACKEND_CUDA);
    *flag = 0;
    *off = make_world(def, FIRN_BACKEND_CPU);
    *flag = 1;
    run(*cpu, substeps, dt, "CPU");
    run(*gpu, substeps, dt, "GPU");
    run(*off, substeps, dt, "CPU, pair off");
}

/* An FEM block at 1 m/s into an MPM elastic block whose grid nodes it
 * reaches at once, without gravity. */
Test(gpu_fem, fem_mpm_pair_matches_cpu, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    scene_of("{'domain': {'lower': [-0.5, -0.5, -0.5], 'upper': [0.5, 0.5, 0.5], 'dx': 0.02},"
             " 'gravity': [0, 0, 0],"
             " 'materials': {'f': {'model': 'fem_corotated', 'E': 2e5, 'nu': 0.3, 'density': 1000},"
             "               'm': {'model': 'elastic', 'E': 2e5, 'nu': 0.3, 'density': 1000}},"
             " 'bodies': [{'material': 'f', 'solver': 'fem',"
             "   'shape': {'type': 'box', 'center': [-0.035, 0, 0], 'size': [0.08, 0.08, 0.08],"
             "             'cells': [4, 4, 4]}, 'velocity': [1, 0, 0]},"
             "  {'material': 'm', 'shape': {'type': 'box', 'center': [0.05, 0, 0],"
             "   'size': [0.08, 0.08, 0.08]}}]}",
             &def);
    firn_world *cpu, *gpu, *off;
    /* 10 substeps: the pair scatters with float atomics, whose order (and
     * the sums' last bits) changes run to run; over 20 substeps of contact
     * that spread reached 1.14 times the one-substep tolerance of
     * expect_close in about 1 run in 25 on the emulator; over 10, v's worst
     * was 3.4e-6 to 5.0e-6 of its scale in 30 runs, and no run failed. */
    pair_worlds(&def, &def.coupling.fem_mpm, 10, 2e-4f, &cpu, &gpu, &off);
    firn_frame_stats sc, sg, so;
    firn_error err = {0};
    cr_assert_eq(firn_world_stats(cpu, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(gpu, &sg, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(off, &so, &err), 0, "%s", err.msg);
    const double moved = sc.momentum[0] - so.momentum[0];
    cr_log_info("FEM-MPM: the MPM block gained %.4g kg m/s over the uncoupled run (FEM %.4g)",
                moved, sc.fem.momentum[0]);
    cr_expect_gt(moved, 1e-3, "FEM-MPM did not act (%g kg m/s)", moved);
    const double p0 = 0.08 * 0.08 * 0.08 * 1000.0; /* the FEM block's kg x 1 m/s */
    const double pg = sg.momentum[0] + sg.fem.momentum[0];
    cr_expect(fabs(pg - p0) < 1e-4 * p0, "GPU: total momentum %.7g of %.7g", pg, p0);
    expect_fem_close("FEM-MPM", gpu, cpu, 0);
    firn_particles_view a, b;
    cr_assert_eq(firn_world_particles(gpu, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_particles(cpu, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(a.n, b.n);
    expect_close("FEM-MPM", "MPM x", a.x, b.x, 3LL * b.n, b.n);
    expect_close("FEM-MPM", "MPM v", a.v, b.v, 3LL * b.n, b.n);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
    firn_world_destroy(off);
}

/* A dynamic ball at 1 m/s onto an FEM block it touches, without gravity:
 * FEM-Rigid's reaction is a double atomic sum on the device. */
Test(gpu_fem, fem_rigid_pair_on_a_dynamic_ball_matches_cpu, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    scene_of("{'domain': {'lower': [-0.5, -0.5, -0.5], 'upper': [0.5, 0.5, 0.5], 'dx': 0.05},"
             " 'gravity': [0, 0, 0],"
             " 'materials': {'f': {'model': 'fem_linear', 'E': 1e5, 'nu': 0.3, 'density': 1000}},"
             " 'bodies': [{'material': 'f', 'solver': 'fem',"
             "   'shape': {'type': 'box', 'center': [0, 0, 0], 'size': [0.1, 0.1, 0.1],"
             "             'cells': [5, 5, 5]}}],"
             " 'rigids': [{'name': 'ball', 'shape': {'type': 'sphere', 'center': [0, 0.085, 0.01],"
             "   'radius': 0.04}, 'motion': 'dynamic', 'density': 1000, 'velocity': [0, -1, 0]}]}",
             &def);
    firn_world *cpu, *gpu, *off;
    pair_worlds(&def, &def.coupling.fem_rigid, 20, 2e-4f, &cpu, &gpu, &off);
    firn_frame_stats sc, sg, so;
    firn_error err = {0};
    cr_assert_eq(firn_world_stats(cpu, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(gpu, &sg, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(off, &so, &err), 0, "%s", err.msg);
    const double pushed = fabs((double)sc.rigids[0].velocity[1] - so.rigids[0].velocity[1]);
    cr_log_info("FEM-Rigid: the block changed the ball's velocity by %.3g m/s", pushed);
    cr_expect_gt(pushed, 1e-3, "FEM-Rigid did not act on the ball (|dv| %g m/s)", pushed);
    for (int q = 0; q < 3; q++) {
        const float vc = sc.rigids[0].velocity[q], vg = sg.rigids[0].velocity[q];
        cr_expect(fabsf(vc - vg) <= 1e-5f * (1.0f + fabsf(vc)),
                  "ball velocity[%d]: CPU %.9g, GPU %.9g", q, vc, vg);
        const float wc = sc.rigids[0].angular_velocity[q], wg = sg.rigids[0].angular_velocity[q];
        cr_expect(fabsf(wc - wg) <= 1e-5f * (1.0f + fabsf(wc)),
                  "ball angular velocity[%d]: CPU %.9g, GPU %.9g", q, wc, wg);
        const float fc = sc.rigids[0].force[q], fg = sg.rigids[0].force[q];
        cr_expect(fabsf(fc - fg) <= 1e-4f * (1.0f + fabsf(fc)),
                  "ball force[%d]: CPU %.9g, GPU %.9g", q, fc, fg);
    }
    expect_fem_close("FEM-Rigid", gpu, cpu, 0);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
    firn_world_destroy(off);
}

/* An FEM block at 1 m/s down into a resting SPH pool, its bottom face
 * already among the particles. Over these 20 substeps (4 ms) the pair
 * speeds the block up a little (the contact distance's wall term: the top
 * layer's pressure is still about 0, and the ghost layers' weight and
 * cohesion pull the body in) before the pool slows it (from 0.31 to
 * 0.08 kg m/s within the next 5 ms): the check is that the pair acted. */
Test(gpu_fem, fem_sph_pair_matches_cpu, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    scene_of("{'domain': {'lower': [0, 0, 0], 'upper': [0.3, 0.3, 0.3], 'dx': 0.02},"
             " 'gravity': [0, -9.81, 0],"
             " 'sph': {'particle_size': 0.015},"
             " 'materials': {'water': {'model': 'sph_liquid', 'density': 1000},"
             "               'f': {'model': 'fem_corotated', 'E': 1e5, 'nu': 0.3, 'density': 500}},"
             " 'bodies': [{'material': 'water', 'solver': 'sph', 'shape': {'type': 'box',"
             "   'lower': [0, 0, 0], 'upper': [0.3, 0.09, 0.3]}},"
             "  {'material': 'f', 'solver': 'fem', 'shape': {'type': 'box',"
             "   'center': [0.15, 0.125, 0.15], 'size': [0.1, 0.06, 0.1], 'cells': [5, 3, 5]},"
             "   'velocity': [0, -1, 0]}]}",
             &def);
    firn_world *cpu, *gpu, *off;
    pair_worlds(&def, &def.coupling.fem_sph, 20, 2e-4f, &cpu, &gpu, &off);
    firn_frame_stats sc, so;
    firn_error err = {0};
    cr_assert_eq(firn_world_stats(cpu, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(off, &so, &err), 0, "%s", err.msg);
    const double dp = sc.fem.momentum[1] - so.fem.momentum[1];
    cr_log_info("FEM-SPH: the pool changed the block's momentum by %.4g kg m/s", dp);
    cr_expect_gt(fabs(dp), 1e-3, "FEM-SPH did not act (%g kg m/s)", dp);
    expect_fem_close("FEM-SPH", gpu, cpu, 0);
    firn_sph_particles_view a, b;
    cr_assert_eq(firn_world_sph_particles(gpu, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_sph_particles(cpu, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(a.n, b.n);
    expect_close("FEM-SPH", "SPH x", a.x, b.x, 3LL * b.n, b.n);
    expect_close("FEM-SPH", "SPH v", a.v, b.v, 3LL * b.n, b.n);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
    firn_world_destroy(off);
}

/* ---- checkpoints ------------------------------------------------------------ */

/* A checkpoint written by a CUDA world after 30 substeps of the hanging
 * block holds the device's vertices (the mirror is downloaded first): a CPU
 * world loaded from it has the GPU's x and v bit for bit, and a CUDA world
 * loaded from it uploads them, so one more substep on each agrees as one
 * substep does. */
Test(gpu_fem, checkpoint_of_the_gpu_state_resumes_on_either_path, .timeout = 300)
{
    require_gpu();
    char dir[64], path[128];
    test_mkdtemp(dir, sizeof dir, "gpu_fem_ckpt");
    snprintf(path, sizeof path, "%s/at.firn", dir);
    firn_scene_def def;
    block_scene(&def, "fem_corotated");
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    run(gpu, 30, 2e-4f, "GPU");
    firn_error err = {0};
    cr_assert_eq(firn_world_save(gpu, path, &err), 0, "%s", err.msg);
    firn_world *cpu = firn_world_load(&def, FIRN_BACKEND_CPU, path, &err);
    cr_assert(cpu, "%s", err.msg);
    firn_world *back = firn_world_load(&def, FIRN_BACKEND_CUDA, path, &err);
    cr_assert(back, "%s", err.msg);
    const size_t n3 = 3 * (size_t)cpu->fem.V.n * sizeof(float);
    cr_expect_eq(memcmp(cpu->fem.V.x, gpu->fem.V.x, n3), 0, "x differs from the GPU's");
    cr_expect_eq(memcmp(cpu->fem.V.v, gpu->fem.V.v, n3), 0, "v differs from the GPU's");
    run(cpu, 1, 2e-4f, "CPU");
    run(back, 1, 2e-4f, "GPU, loaded");
    expect_fem_close("resumed", back, cpu, 1);
    firn_world_destroy(cpu);
    firn_world_destroy(back);
    firn_world_destroy(gpu);
    test_rmdir(dir);
}

/* ---- errors ----------------------------------------------------------------- */

/* NaN planted in the velocity of two free vertices (the higher index
 * first): the position step makes exactly those two non-finite in substep
 * 1 (their elements' forces come from the finite positions and reach the
 * neighbours only in substep 2). Both paths run 3 substeps in one call and
 * must name an FEM vertex, substep 1 and the lower index. */
Test(gpu_fem, nonfinite_vertex_is_reported_as_the_cpu_does, .timeout = 120)
{
    require_gpu();
    firn_scene_def def;
    block_scene(&def, "fem_corotated");
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    const int n = cpu->fem.V.n, lo = 100, hi = 200;
    cr_assert_eq(n, 9 * 5 * 5, "%d vertices", n);
    cr_assert(!cpu->fem.V.fixed[lo] && !cpu->fem.V.fixed[hi], "both vertices are free");
    cpu->fem.V.v[n + hi] = NAN;
    cpu->fem.V.v[lo] = NAN;
    copy_fem_state(gpu, cpu);
    firn_error ec = {0}, eg = {0};
    cr_assert_neq(firn_world_run_substeps(cpu, 3, 1e-4f, &ec), 0, "the CPU path ran through a NaN");
    cr_assert_neq(firn_world_run_substeps(gpu, 3, 1e-4f, &eg), 0, "the GPU ran through a NaN");
    cr_expect_eq(ec.code, FIRN_E_NUMERIC, "%s", ec.msg);
    cr_expect_eq(eg.code, FIRN_E_NUMERIC, "%s", eg.msg);
    cr_expect(strstr(ec.msg, "FEM vertex 100 ") != NULL, "CPU: %s", ec.msg);
    cr_expect(strstr(eg.msg, "FEM vertex 100 ") != NULL, "GPU: %s", eg.msg);
    cr_expect(strstr(ec.msg, "substep 1)") != NULL, "CPU: %s", ec.msg);
    cr_expect(strstr(eg.msg, "substep 1; the GPU ran on to substep 3)") != NULL, "GPU: %s", eg.msg);
    firn_world_destroy(gpu);
    firn_world_destroy(cpu);
}

/* ---- implicit bodies (kernels/fem_implicit.cu) ----------------------------- */

/* The implicit solve's counters of both worlds: the same Newton
 * iterations, and CG iterations within 1 % + 1 (each solve stops when
 * |r| <= 1e-4 |r_0|, and the two paths add the dot products in another
 * order, so a solve may end one iteration apart). */
static void expect_same_iterations(const char *label, const firn_world *gpu, const firn_world *cpu)
{
    const firn_fem *g = &gpu->fem, *c = &cpu->fem;
    cr_log_info("%s: %lld solves; Newton %lld (GPU %lld), CG %lld (GPU %lld)", label,
                c->implicit_solves, c->newton_iters, g->newton_iters, c->pcg_iters, g->pcg_iters);
    cr_expect_eq(g->implicit_solves, c->implicit_solves, "%s: solves", label);
    cr_expect_eq(g->newton_iters, c->newton_iters, "%s: Newton iterations", label);
    cr_expect_gt(c->pcg_iters, 0, "%s: no CG iteration ran", label);
    cr_expect_leq(llabs(g->pcg_iters - c->pcg_iters), c->pcg_iters / 100 + 1,
                  "%s: CG iterations GPU %lld, CPU %lld", label, g->pcg_iters, c->pcg_iters);
}

/* One backward Euler substep of the clamped block of `model` from the
 * perturbed state, at 1e-2 s (about 4.5 times the explicit limit of these
 * elements, h / c = 2.5 cm / 11.6 m/s): CG runs tens of iterations, and
 * Newton several for the nonlinear models (one for the linear one, whose
 * energy is quadratic). x, v and x0 with the tolerance of the explicit step: the
 * solve is the CPU's sequence of float operations, its dot products in
 * double, so a path difference comes only from the sums' order (1e-16
 * relative) and, on a GPU, FMA contraction, not from the solver's
 * tolerances. */
static void implicit_substep_matches(const char *model)
{
    require_gpu();
    firn_world *cpu, *gpu;
    perturbed_substep(model, 1, 0x1dea11c17ULL, 1e-2f, &cpu, &gpu);
    const int linear = strcmp(model, "fem_linear") == 0;
    cr_assert_geq(cpu->fem.newton_iters, linear ? 1 : 2, "%s: %lld Newton iterations", model,
                  cpu->fem.newton_iters);
    expect_same_iterations(model, gpu, cpu);
    expect_fem_close(model, gpu, cpu, 0);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

Test(gpu_fem, implicit_linear_substep_matches_cpu, .timeout = 300)
{
    implicit_substep_matches("fem_linear");
}

Test(gpu_fem, implicit_corotated_substep_matches_cpu, .timeout = 300)
{
    implicit_substep_matches("fem_corotated");
}

Test(gpu_fem, implicit_stable_neohookean_substep_matches_cpu, .timeout = 300)
{
    implicit_substep_matches("fem_stable_neohookean");
}

/* A solve that Newton's cap ends: the clamped corotated block thrown out of
 * shape (every vertex moved by up to two edges, speeds up to 2 m/s) and
 * stepped at 5e-2 s is still above newton_tol after newton_max iterations
 * (firn_fem_implicit_step's own report on a third world from the same
 * state). One substep on each path runs newton_max Newton iterations and
 * no more: the device's check stops its loop there, and should it not, the
 * host stops it with an error naming the body instead of looping. */
Test(gpu_fem, implicit_solve_stops_at_newton_max_as_on_the_cpu, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    block_scene(&def, "fem_corotated");
    def.bodies[0].fem_implicit = 1;
    const uint64_t seed = 0xca9ca9ULL;
    const float dt = 5e-2f;
    firn_world *probe = make_world(&def, FIRN_BACKEND_CPU);
    firn_fem *S = &probe->fem;
    perturb_by(S, seed, 2.0f, 2.0f);
    memcpy(S->V.x0, S->V.x, 3 * (size_t)S->V.n * sizeof(float));
    firn_fem_implicit_params ip = firn_fem_implicit_params_default();
    ip.walls = 1; /* as a world's step */
    firn_fem_implicit_stats st;
    firn_error err = {0};
    cr_assert_eq(firn_fem_implicit_step(S, 0, &ip, S->P.gravity, dt, S->implicit_work, &st, &err),
                 0, "%s", err.msg);
    cr_log_info("the solve: %d Newton iterations (newton_max %d), residual %g, converged %d",
                st.newton_iters, ip.newton_max, st.residual, st.converged);
    cr_assert_eq(st.converged, 0, "Newton converged (%d) at residual %g: nothing tested",
                 st.converged, st.residual);
    cr_assert_eq(st.newton_iters, ip.newton_max);
    firn_world_destroy(probe);

    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    perturb_by(&cpu->fem, seed, 2.0f, 2.0f);
    copy_fem_state(gpu, cpu);
    run(cpu, 1, dt, "CPU");
    run(gpu, 1, dt, "GPU");
    for (int k = 0; k < 2; k++) {
        const firn_fem *H = k ? &gpu->fem : &cpu->fem;
        cr_expect_eq(H->implicit_solves, 1, "%s: %lld solves", k ? "GPU" : "CPU",
                     H->implicit_solves);
        cr_expect_eq(H->newton_iters, ip.newton_max, "%s: %lld Newton iterations, newton_max %d",
                     k ? "GPU" : "CPU", H->newton_iters, ip.newton_max);
    }
    cr_log_info("CG iterations: CPU %lld, GPU %lld", cpu->fem.pcg_iters, gpu->fem.pcg_iters);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* Walls in the solve: an implicit corotated block (0.1 x 0.05 x 0.1 m,
 * 4 x 2 x 4 cells) standing on the floor against a sticky x_upper face,
 * moving into both at 0.5 m/s, 6 substeps of 1e-2 s (4.5 times the explicit
 * limit): the held components and their release (the block springs back
 * off the face), the projected line search and the preconditioner of the
 * free components are the CPU's (the same Newton iterations, CG within 1 %
 * + 1, x, v and x0 close), and on both paths the block stays on the floor
 * and reaches the face without passing either. */
Test(gpu_fem, implicit_block_against_walls_matches_cpu, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    scene_of("{'domain': {'lower': [-0.5, 0, -0.5], 'upper': [0.1, 0.5, 0.5], 'dx': 0.05,"
             "   'boundary': {'x_upper': 'sticky'}},"
             " 'materials': {'f': {'model': 'fem_corotated', 'E': 1e5, 'nu': 0.3,"
             "                     'density': 1000}},"
             " 'bodies': [{'material': 'f', 'solver': 'fem', 'integrator': 'implicit',"
             "   'shape': {'type': 'box', 'lower': [0, 0, -0.05], 'upper': [0.1, 0.05, 0.05],"
             "             'cells': [4, 2, 4]}, 'velocity': [0.5, -0.5, 0]}]}",
             &def);
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    const firn_fem_params *P = &cpu->fem.P;
    int touched[2] = {0, 0};
    for (int step = 0; step < 6; step++) {
        run(cpu, 1, 1e-2f, "CPU");
        run(gpu, 1, 1e-2f, "GPU");
        for (int k = 0; k < 2; k++) {
            firn_frame_stats st;
            firn_error err = {0};
            cr_assert_eq(firn_world_stats(k ? gpu : cpu, &st, &err), 0, "%s", err.msg);
            cr_log_info("%s step %d: y from %.7g m, x up to %.7g m", k ? "GPU" : "CPU", step,
                        st.fem.bbox_lower[1], st.fem.bbox_upper[0]);
            cr_expect(st.fem.bbox_lower[1] == P->lower[1],
                      "%s step %d: the block left the floor "
                      "or passed it (y from %g m)",
                      k ? "GPU" : "CPU", step, st.fem.bbox_lower[1]);
            cr_expect(st.fem.bbox_upper[0] <= P->upper[0], "%s step %d: x up to %g m, past %g m",
                      k ? "GPU" : "CPU", step, st.fem.bbox_upper[0], P->upper[0]);
            touched[k] |= st.fem.bbox_upper[0] == P->upper[0];
        }
    }
    cr_expect(touched[0] && touched[1], "the block never reached the x_upper face (CPU %d, GPU %d)",
              touched[0], touched[1]);
    expect_same_iterations("walls", gpu, cpu);
    expect_fem_close("walls", gpu, cpu, 0);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* Two blocks in one world, the first explicit and the second implicit, both
 * clamped, 20 substeps at 4e-4 s under gravity: each body takes its own
 * integrator on the device (the explicit one the vertex kernel over its
 * range only), the implicit one's counters as the CPU's, and auto now puts
 * such a world on the GPU. */
Test(gpu_fem, explicit_and_implicit_bodies_together_match_cpu, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    scene_of("{'domain': {'lower': [-0.5, -0.5, -0.5], 'upper': [0.5, 0.5, 0.5], 'dx': 0.05},"
             " 'materials': {'f': {'model': 'fem_stable_neohookean', 'E': 1e5, 'nu': 0.3,"
             "                     'density': 1000}},"
             " 'bodies': [{'material': 'f', 'solver': 'fem',"
             "   'shape': {'type': 'box', 'center': [0, 0.2, 0], 'size': [0.2, 0.1, 0.1],"
             "             'cells': [8, 4, 4]},"
             "   'fixed': {'box': {'lower': [-0.11, -1, -1], 'upper': [-0.09, 1, 1]}}},"
             "  {'material': 'f', 'solver': 'fem', 'integrator': 'implicit',"
             "   'shape': {'type': 'box', 'center': [0, -0.2, 0], 'size': [0.2, 0.1, 0.1],"
             "             'cells': [8, 4, 4]},"
             "   'fixed': {'box': {'lower': [-0.11, -1, -1], 'upper': [-0.09, 1, 1]}}}]}",
             &def);
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    cr_assert_eq(cpu->fem.bodies, 2);
    cr_assert(!cpu->fem.implicit[0] && cpu->fem.implicit[1], "one explicit, one implicit body");
    run(cpu, 20, 4e-4f, "CPU");
    run(gpu, 20, 4e-4f, "GPU");
    cr_expect_eq(cpu->fem.implicit_solves, 20, "%lld implicit solves", cpu->fem.implicit_solves);
    expect_same_iterations("two bodies", gpu, cpu);
    expect_fem_close("two bodies", gpu, cpu, 0);
    /* Both ends fell: each integrator acted. */
    const int n = gpu->fem.V.n, half = n / 2;
    float sag[2] = {0.0f, 0.0f};
    for (int i = 0; i < n; i++)
        if (!gpu->fem.V.fixed[i])
            sag[i >= half] = fmaxf(sag[i >= half], gpu->fem.V.x0[n + i] - gpu->fem.V.x[n + i]);
    cr_expect(sag[0] > 0.0f && sag[1] > 0.0f, "a body did not fall (%g, %g m in the last step)",
              sag[0], sag[1]);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
    firn_error err = {0};
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_AUTO, &err);
    cr_assert(w, "auto: %s", err.msg);
    cr_expect_eq(w->backend, FIRN_BACKEND_CUDA, "auto kept an implicit FEM body off the GPU");
    cr_expect(w->fem.cuda != NULL);
    firn_world_destroy(w);
}

/* A NaN velocity in an implicit body: the solve's gradient is not finite
 * at its first iteration. Both paths fail the run with FIRN_E_NUMERIC,
 * naming the body's solve and why, and the same vertex (the body's first
 * free one: a failed solve leaves the body's velocities NaN). */
Test(gpu_fem, failed_implicit_solve_is_reported_as_the_cpu_does, .timeout = 120)
{
    require_gpu();
    firn_scene_def def;
    block_scene(&def, "fem_corotated");
    def.bodies[0].fem_implicit = 1;
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    cpu->fem.V.v[2 * cpu->fem.V.n + 100] = NAN;
    copy_fem_state(gpu, cpu);
    firn_error ec = {0}, eg = {0};
    cr_assert_neq(firn_world_run_substeps(cpu, 3, 1e-3f, &ec), 0, "the CPU path ran through a NaN");
    cr_assert_neq(firn_world_run_substeps(gpu, 3, 1e-3f, &eg), 0, "the GPU ran through a NaN");
    cr_expect_eq(ec.code, FIRN_E_NUMERIC, "%s", ec.msg);
    cr_expect_eq(eg.code, FIRN_E_NUMERIC, "%s", eg.msg);
    const char *why = "its implicit solve failed: FEM implicit: bodies[0]: the energy gradient "
                      "is not finite after 0 Newton iterations";
    cr_expect(strstr(ec.msg, why) != NULL, "CPU: %s", ec.msg);
    cr_expect(strstr(eg.msg, why) != NULL, "GPU: %s", eg.msg);
    int first = 0;
    while (cpu->fem.V.fixed[first])
        first++;
    char vertex[32];
    snprintf(vertex, sizeof vertex, "FEM vertex %d ", first);
    cr_expect(strstr(ec.msg, vertex) != NULL, "CPU: %s (want %s)", ec.msg, vertex);
    cr_expect(strstr(eg.msg, vertex) != NULL, "GPU: %s (want %s)", eg.msg, vertex);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* CUDA graphs (firn_graph_mode) with FEM: an explicit block (no atomics on
 * its own: every run gives the same bits) over four calls of 6 substeps,
 * the third at another dt, launched as graphs and kernel by kernel: the
 * vertices' x, v and x0 the same bits, two graphs captured per distinct
 * call (substeps [0, 3) and [4, 6) around the timed third) and launched
 * per call. An implicit body reads the device inside its substep: --graphs
 * on refuses it by name, auto launches it kernel by kernel. */
Test(gpu_fem, graphs_give_the_bits_of_launches_and_refuse_implicit_bodies, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    block_scene(&def, "fem_corotated");
    firn_world *w[2];
    const float dts[4] = {4e-4f, 4e-4f, 2e-4f, 4e-4f};
    firn_run_options opt = firn_run_options_default();
    opt.backend = FIRN_BACKEND_CUDA;
    for (int r = 0; r < 2; r++) {
        opt.graphs = r ? FIRN_GRAPHS_ON : FIRN_GRAPHS_OFF;
        w[r] = make_world_run(&def, &opt);
        for (int c = 0; c < 4; c++)
            run(w[r], 6, dts[c], r ? "graphs" : "launches");
        firn_error err = {0};
        cr_assert_eq(firn_cuda_fem_download(w[r], &err), 0, "%s", err.msg);
    }
    firn_cuda_graph_stats gs[2];
    for (int r = 0; r < 2; r++)
        firn_cuda_graph_stats_get(w[r], &gs[r]);
    cr_expect_eq(gs[0].captures + gs[0].launches, 0, "--graphs off captured");
    cr_expect_eq(gs[1].captures, 4, "%lld graphs captured, not 2 per distinct call",
                 gs[1].captures);
    cr_expect_eq(gs[1].launches, 8, "%lld graphs launched, not 2 per call", gs[1].launches);
    cr_expect_eq(gs[1].fell_back, 0, "%s", gs[1].why);
    const firn_fem_vertices *a = &w[0]->fem.V, *b = &w[1]->fem.V;
    const size_t n3 = 3 * (size_t)a->n * sizeof(float);
    cr_expect(!memcmp(a->x, b->x, n3), "x differs between graphs and launches");
    cr_expect(!memcmp(a->v, b->v, n3), "v differs between graphs and launches");
    cr_expect(!memcmp(a->x0, b->x0, n3), "x0 differs between graphs and launches");
    for (int r = 0; r < 2; r++)
        firn_world_destroy(w[r]);

    def.bodies[0].fem_implicit = 1;
    opt.graphs = FIRN_GRAPHS_ON;
    firn_error err = {0};
    cr_expect_null(firn_world_create_with(&def, &opt, &err), "--graphs on took an implicit body");
    cr_expect_eq(err.code, FIRN_E_USAGE, "%s", err.msg);
    cr_expect(strstr(err.msg, "--graphs on: an implicit FEM body's Newton loop") != NULL, "%s",
              err.msg);
    opt.graphs = FIRN_GRAPHS_AUTO;
    firn_world *im = make_world_run(&def, &opt);
    run(im, 4, 1e-3f, "implicit, auto");
    firn_cuda_graph_stats_get(im, &gs[0]);
    cr_expect_eq(gs[0].captures + gs[0].launches + gs[0].fell_back, 0,
                 "auto captured an implicit body's substeps");
    firn_world_destroy(im);
}
