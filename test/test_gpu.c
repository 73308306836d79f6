/* test_gpu.c - the CUDA backend against its CPU twin.
 *
 * Kernel level: one substep (p2g, grid_update, g2p) on random particles of
 * each material model, particle fields and grid element by element against
 * host/solver_cpu.c, with |gpu - cpu| <= 1e-5 + 1e-4 |cpu| in each field's
 * natural unit (the scatter's atomics add in another order and nvcc
 * contracts to FMA, so bitwise equality is not expected). Invariants: the
 * GPU transfers conserve mass and momentum. Scene level: five frames of a
 * small scene per model, compared by centre of mass and kinetic energy.
 *
 * Every test skips, and only, when no usable CUDA GPU is present. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_skip.h"
#include "all_solvers.h"
#include "bench.h"
#include "cuda_backend.h"
#include "firn_cpic.h"
#include "gpu_compare.h"
#include "solver_cpu.h"
#include "test_util.h"
#include "world.h"

/* The per-model tests also run sand with the mu(I) rheology, as a model
 * value past the real ones. */
#define SAND_MU_I ((firn_model)FIRN_MODEL_COUNT)

static firn_model base_model(firn_model m) { return m == SAND_MU_I ? FIRN_MODEL_SAND : m; }

static const char *model_label(firn_model m)
{
    static const char *names[FIRN_MODEL_COUNT + 1] = {
        "elastic",   "liquid",   "snow",       "sand",
        "von_mises", "fracture", "sph_liquid", [SAND_MU_I] = "sand_mu_i"};
    return (int)m >= 0 && m <= FIRN_MODEL_COUNT && names[m] ? names[m] : "?";
}

/* ---- worlds --------------------------------------------------------------- */

/* One box of one material near the floor of a unit domain, moving down and
 * sideways so that it hits the floor wall within the first frames. */
static void small_scene(firn_scene_def *def, firn_model model, float box)
{
    firn_scene_default(def);
    def->dx = 1.0f / 32.0f;
    def->frames = 5;
    def->write_ply = 0;
    def->write_preview = 0;
    def->n_materials = 1;
    firn_material_default(&def->materials[0], base_model(model));
    if (model == SAND_MU_I)
        def->materials[0].rheology = FIRN_RHEOLOGY_MU_I;
    snprintf(def->materials[0].name, FIRN_NAME_MAX, "%s", model_label(model));
    def->n_bodies = 1;
    firn_body_def *b = &def->bodies[0];
    firn_body_default(b);
    b->material = 0;
    b->shape.type = FIRN_SHAPE_BOX;
    const float center[3] = {0.5f, 0.2f, 0.5f}, vel[3] = {0.5f, -1.0f, 0.25f};
    for (int a = 0; a < 3; a++) {
        b->shape.center[a] = center[a];
        b->shape.size[a] = box;
        b->velocity[a] = vel[a];
    }
    b->seed = 7;
}

/* ---- random particle state ------------------------------------------------ */

/* Overwrites x, v, C, F, Jp, damage with random values (vol and mat stay as
 * sampled): F = I + perturbation, positions in a central cluster, away from
 * the walls, and with spread, one in five anywhere the particles may be, so
 * that walls and clamping are exercised too. */
static void randomise(firn_particles *p, const firn_params *P, firn_model model, int spread_out,
                      uint64_t seed)
{
    const int n = p->n;
    rng_state = seed;
    for (int i = 0; i < n; i++) {
        int spread = spread_out && i % 5 == 0;
        for (int a = 0; a < 3; a++) {
            p->x[a * n + i] = spread ? frand(P->x_min[a], P->x_max[a]) : frand(0.35f, 0.65f);
            p->v[a * n + i] = frand(-1.0f, 1.0f);
        }
        for (int c = 0; c < 9; c++) {
            p->C[c * n + i] = frand(-5.0f, 5.0f);
            p->F[c * n + i] = (c % 4 == 0 ? 1.0f : 0.0f) + frand(-0.05f, 0.05f);
        }
        p->Jp[i] = model == FIRN_MODEL_SNOW               ? frand(0.95f, 1.05f)
                   : base_model(model) == FIRN_MODEL_SAND ? frand(-0.02f, 0.02f)
                                                          : 1.0f;
        p->damage[i] = model == FIRN_MODEL_FRACTURE ? frand(0.0f, 0.5f) : 0.0f;
    }
}

static void copy_state(firn_particles *dst, const firn_particles *src)
{
    const size_t n = (size_t)src->n;
    memcpy(dst->x, src->x, 3 * n * sizeof(float));
    memcpy(dst->v, src->v, 3 * n * sizeof(float));
    memcpy(dst->C, src->C, 9 * n * sizeof(float));
    memcpy(dst->F, src->F, 9 * n * sizeof(float));
    memcpy(dst->Jp, src->Jp, n * sizeof(float));
    memcpy(dst->damage, src->damage, n * sizeof(float));
}

/* A CPU world and a CUDA world holding the same random state; the CUDA
 * world's device copy is rebuilt from the host arrays by re-initialising.
 * free_space: no gravity and no particle near a wall, so that nothing but
 * the transfers changes the momentum. */
static void twin_worlds_grid(firn_model model, int free_space, int p2g, int grid, firn_world **cpu,
                             firn_world **gpu)
{
    firn_scene_def def;
    firn_error err = {0};
    small_scene(&def, model, 0.15f);
    firn_run_options run = run_p2g(FIRN_BACKEND_CUDA, p2g);
    run.grid = grid;
    if (free_space)
        def.gravity[0] = def.gravity[1] = def.gravity[2] = 0.0f;
    *cpu = make_world(&def, FIRN_BACKEND_CPU);
    *gpu = make_world_run(&def, &run);
    cr_assert_eq((*cpu)->p.n, (*gpu)->p.n, "both worlds sample the same particles");
    randomise(&(*cpu)->p, &(*cpu)->params, model, !free_space, 0x5eed0000ULL + (uint64_t)model);
    copy_state(&(*gpu)->p, &(*cpu)->p);
    firn_cuda_free(*gpu);
    cr_assert_eq(firn_cuda_init(*gpu, &err), 0, "firn_cuda_init: %s", err.msg);
}

static void twin_worlds_p2g(firn_model model, int free_space, int p2g, firn_world **cpu,
                            firn_world **gpu)
{
    twin_worlds_grid(model, free_space, p2g, FIRN_GRID_AUTO, cpu, gpu);
}

static void twin_worlds(firn_model model, int free_space, firn_world **cpu, firn_world **gpu)
{
    twin_worlds_p2g(model, free_space, FIRN_P2G_BINNED, cpu, gpu);
}

static const int p2g_variants[] = {FIRN_P2G_ATOMIC, FIRN_P2G_BINNED, FIRN_P2G_WARP,
                                   FIRN_P2G_ORDERED};
static const char *const p2g_labels[] = {"atomic P2G", "binned P2G", "warp-reduced P2G",
                                         "ordered P2G"};
#define N_P2G ((int)(sizeof p2g_variants / sizeof p2g_variants[0]))

/* ---- comparison ----------------------------------------------------------- */

/* Checks |gpu - cpu| <= 1e-5 + 1e-4 |cpu| for count values laid out
 * component-major with stride n, each divided by unit first; reports the
 * worst element. */
static void expect_close_unit(const char *model, const char *what, const float *gpu,
                              const float *cpu, long long count, long long n, double unit)
{
    double worst = 0.0;
    long long at = -1;
    for (long long k = 0; k < count; k++) {
        double a = gpu[k] / unit, b = cpu[k] / unit;
        double r = fabs(a - b) / (1e-5 + 1e-4 * fabs(b));
        if (isnan(r)) /* a NaN on either side is a failure, not a pass */
            r = INFINITY;
        if (at < 0 || r > worst) {
            worst = r;
            at = k;
        }
    }
    if (at < 0)
        return;
    cr_expect(worst <= 1.0,
              "%s: %s differs beyond 1e-5 + 1e-4 |cpu| (in units of %g): worst at element "
              "%lld (item %lld, component %lld): gpu %.9g, cpu %.9g, |diff| %.3g (%.3g x the "
              "tolerance)",
              model, what, unit, at, at % n, at / n, (double)gpu[at], (double)cpu[at],
              fabs((double)gpu[at] - cpu[at]), worst);
}

static const firn_model all_models[] = {
    FIRN_MODEL_ELASTIC,   FIRN_MODEL_LIQUID,   FIRN_MODEL_SNOW, FIRN_MODEL_SAND,
    FIRN_MODEL_VON_MISES, FIRN_MODEL_FRACTURE, SAND_MU_I};
#define N_MODELS ((int)(sizeof all_models / sizeof all_models[0]))

/* ---- kernels against the CPU twin ----------------------------------------- */

ParameterizedTestParameters(gpu, substep_matches_cpu)
{
    return cr_make_param_array(firn_model, (void *)all_models, N_MODELS);
}

static void expect_grid_close(const char *name, firn_world *cpu, firn_world *gpu, double vunit);

#ifdef FIRN_WITH_CUDA
/* kernels/mpm.cu, for these tests only. */
int firn_cuda_skew_bin_keys(firn_world *w, int every, firn_error *err);
int firn_cuda_mpm_kernel_count(void);
int firn_cuda_mpm_model_variants(void);
#endif

/* One substep of P2G variant `variant` (firn_p2g_variant) on grid `grid`
 * (firn_grid_mode) against the CPU; with skew > 0 (binned and warp P2G),
 * every skew-th particle's bin key names a cell next to its stencil
 * corner's (firn_cuda_skew_bin_keys). */
static void substep_case_keys(firn_model model, int variant, int grid, int skew)
{
    char name[128];
    snprintf(name, sizeof name, "%s, %s%s%s", model_label(model), p2g_labels[variant],
             grid == FIRN_GRID_SPARSE  ? ", sparse grid"
             : grid == FIRN_GRID_DENSE ? ", dense grid"
                                       : "",
             skew ? ", keys a cell off" : "");
    const float dt = 1e-4f;
    firn_world *cpu, *gpu;
    firn_error err = {0};
    twin_worlds_grid(model, 0, p2g_variants[variant], grid, &cpu, &gpu);
#ifdef FIRN_WITH_CUDA
    if (skew)
        cr_assert_eq(firn_cuda_skew_bin_keys(gpu, skew, &err), 0, "%s: %s", name, err.msg);
#endif

    cpu->params.dt = dt;
    firn_cpu_clear(cpu);
    firn_cpu_p2g(cpu);
    firn_cpu_grid(cpu);
    int bad_cpu = firn_cpu_g2p(cpu);
    firn_cpu_unpermute(cpu); /* random positions: P2G reordered the CPU state */
    int bad_gpu = firn_cuda_run(gpu, 1, dt, NULL, &err);
    cr_assert_neq(bad_gpu, -2, "%s: firn_cuda_run: %s", name, err.msg);
    cr_assert_eq(firn_cuda_download(gpu, &err), 0, "%s: firn_cuda_download: %s", name, err.msg);
    cr_expect_eq(bad_gpu, bad_cpu, "%s: first non-finite particle: gpu %d, cpu %d", name, bad_gpu,
                 bad_cpu);

    const long long n = cpu->p.n;
    expect_close_unit(name, "x", gpu->p.x, cpu->p.x, 3 * n, n, 1.0);
    expect_close_unit(name, "v", gpu->p.v, cpu->p.v, 3 * n, n, 1.0);
    /* C = 4 inv_dx^2 sum w v_grid dpos amplifies the rounding of the grid
     * velocities by about 4 inv_dx: compared as C dx / 4, a velocity. */
    expect_close_unit(name, "C", gpu->p.C, cpu->p.C, 9 * n, n, 4.0 * cpu->params.inv_dx);
    expect_close_unit(name, "F", gpu->p.F, cpu->p.F, 9 * n, n, 1.0);
    expect_close_unit(name, "Jp", gpu->p.Jp, cpu->p.Jp, n, n, 1.0);
    expect_close_unit(name, "damage", gpu->p.damage, cpu->p.damage, n, n, 1.0);

    expect_grid_close(name, cpu, gpu, 1.0);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

static void substep_case(firn_model model, int variant)
{
    substep_case_keys(model, variant, FIRN_GRID_AUTO, 0);
}

/* The bin of a particle comes from bin_keys, its stencil from P2G's own
 * firn_make_stencil: on a GPU the two kernels may contract the corner's
 * arithmetic to FMA differently and floor it a cell apart. Binned and warp
 * P2G with a third of the keys a cell off their stencil corner (along each
 * axis, up and down, into the next bin or within the bin) against the CPU:
 * a particle whose stencil its bin's tile does not hold scatters straight
 * into the grid, in warp P2G one whose corner is not its key's cell does
 * not join that cell's run, and the sparse grid lists the blocks such a
 * stencil reaches. */
Test(gpu, binned_p2g_with_keys_a_cell_off_matches_cpu, .timeout = 300)
{
    require_gpu();
    const firn_model models[] = {FIRN_MODEL_SAND, FIRN_MODEL_ELASTIC};
    const int grids[] = {FIRN_GRID_DENSE, FIRN_GRID_SPARSE};
    for (int m = 0; m < 2; m++)
        for (int v = 0; v < N_P2G; v++)
            for (int g = 0; g < 2; g++)
                if (p2g_variants[v] == FIRN_P2G_BINNED || p2g_variants[v] == FIRN_P2G_WARP)
                    substep_case_keys(models[m], v, grids[g], 3);
}

/* check_device_memory sizes the stack of every kernel of kernels/mpm.cu:
 * its table holds as many kernels as the file defines, a template kernel
 * (on the line after `template <int MODEL>`) once per material model and
 * once for FIRN_M_ANY. */
Test(gpu, every_mpm_kernel_is_in_the_stack_sizing_table)
{
    require_gpu();
#ifdef FIRN_WITH_CUDA
    FILE *f = fopen("kernels/mpm.cu", "r");
    cr_assert_not_null(f, "kernels/mpm.cu (the tests run from the repository's root)");
    char line[1024];
    int defined = 0, in_comment = 0, templ = 0;
    const int variants = firn_cuda_mpm_model_variants();
    cr_expect_eq(variants, FIRN_MODELS + 1);
    while (fgets(line, sizeof line, f)) {
        const int was_templ = templ;
        templ = !in_comment && !strncmp(line, "template <int MODEL>", 20);
        /* __global__ outside comments */
        for (const char *c = line; *c; c++) {
            if (in_comment) {
                if (c[0] == '*' && c[1] == '/')
                    in_comment = 0, c++;
            } else if (c[0] == '/' && c[1] == '*') {
                in_comment = 1, c++;
            } else if (c[0] == '/' && c[1] == '/') {
                break;
            } else if (!strncmp(c, "__global__", 10)) {
                defined += was_templ ? variants : 1;
                c += 9;
            }
        }
    }
    fclose(f);
    cr_expect_gt(defined, 10, "only %d kernels found in kernels/mpm.cu", defined);
    cr_expect_eq(firn_cuda_mpm_kernel_count(), defined,
                 "kernels/mpm.cu defines %d kernels, its stack sizing table (mpm_kernels) lists %d",
                 defined, firn_cuda_mpm_kernel_count());
#endif
}

/* The grid after the update, in units of one particle's mass m0 (the
 * same tolerance for every density): mass, and mass x velocity (in units
 * of m0 vunit, vunit the velocities' scale). The
 * velocity alone is compared weighted by mass because at a node that
 * only the tail of a stencil reaches (mass ~1e-6 m0) it is a ratio of
 * two tiny sums, exact to a few ulps of the momenta summed there rather
 * than of itself, and such a node hardly moves any particle. */
static void expect_grid_close(const char *name, firn_world *cpu, firn_world *gpu, double vunit)
{
    firn_error err = {0};
    const long long nodes = cpu->grid.nodes;
    float *mass = malloc((size_t)nodes * sizeof(float));
    float *vel = malloc(3 * (size_t)nodes * sizeof(float));
    float *mv_gpu = malloc(3 * (size_t)nodes * sizeof(float));
    float *mv_cpu = malloc(3 * (size_t)nodes * sizeof(float));
    float *cmass = malloc((size_t)nodes * sizeof(float));
    float *cvel = malloc(3 * (size_t)nodes * sizeof(float));
    cr_assert(mass && vel && mv_gpu && mv_cpu && cmass && cvel, "out of host memory");
    firn_grid_split(&cpu->grid, cmass, cvel);
    cr_assert_eq(firn_cuda_download_grid(gpu, mass, vel, &err), 0,
                 "%s: firn_cuda_download_grid: %s", name, err.msg);
    for (long long k = 0; k < 3 * nodes; k++) {
        mv_gpu[k] = mass[k % nodes] * vel[k];
        mv_cpu[k] = cmass[k % nodes] * cvel[k];
    }
    const double m0 = (double)cpu->p.vol[0] * cpu->mats[cpu->p.mat[0]].rho;
    expect_close_unit(name, "grid mass", mass, cmass, nodes, nodes, m0);
    expect_close_unit(name, "grid mass x velocity", mv_gpu, mv_cpu, 3 * nodes, nodes, m0 * vunit);
    free(mass);
    free(vel);
    free(mv_gpu);
    free(mv_cpu);
    free(cmass);
    free(cvel);
}

ParameterizedTest(firn_model *model, gpu, substep_matches_cpu)
{
    require_gpu();
    for (int v = 0; v < N_P2G; v++)
        substep_case(*model, v);
}

ParameterizedTestParameters(gpu, transfers_conserve_mass_and_momentum)
{
    return cr_make_param_array(firn_model, (void *)all_models, N_MODELS);
}

/* Without gravity and walls, one substep must keep the total momentum: the
 * grid after p2g holds all particle mass and momentum (the quadratic
 * B-spline is a partition of unity and reproduces linear functions, so the
 * affine and stress terms sum to zero), the grid update changes nothing, and
 * g2p hands it all back (APIC, PHYSICS.md s2). */
ParameterizedTest(firn_model *model, gpu, transfers_conserve_mass_and_momentum)
{
    require_gpu();
    const char *name = model_label(*model);
    const float dt = 1e-4f;
    firn_world *cpu, *gpu;
    firn_error err = {0};
    twin_worlds(*model, 1, &cpu, &gpu);
    const firn_particles *p = &gpu->p;
    const long long n = p->n, nodes = cpu->grid.nodes;

    double pm = 0.0, pmom[3] = {0}, scale = 0.0;
    for (long long i = 0; i < n; i++) {
        double m = (double)p->vol[i] * gpu->mats[p->mat[i]].rho;
        pm += m;
        for (int a = 0; a < 3; a++) {
            pmom[a] += m * p->v[a * n + i];
            scale += m * fabs(p->v[a * n + i]);
        }
    }
    scale *= 1e-5; /* momentum tolerance: 1e-5 of sum m |v| */

    cr_assert_neq(firn_cuda_run(gpu, 1, dt, NULL, &err), -2, "%s: firn_cuda_run: %s", name,
                  err.msg);
    float *mass = malloc((size_t)nodes * sizeof(float));
    float *vel = malloc(3 * (size_t)nodes * sizeof(float));
    cr_assert(mass && vel, "out of host memory");
    cr_assert_eq(firn_cuda_download_grid(gpu, mass, vel, &err), 0,
                 "%s: firn_cuda_download_grid: %s", name, err.msg);
    double gm = 0.0, gmom[3] = {0};
    for (long long k = 0; k < nodes; k++) {
        gm += mass[k];
        if (mass[k] > 0.0f)
            for (int a = 0; a < 3; a++)
                gmom[a] += (double)mass[k] * vel[a * nodes + k];
    }
    cr_expect(fabs(gm - pm) <= 1e-5 * pm,
              "%s: grid mass %.9g kg != particle mass %.9g kg (relative %.3g > 1e-5)", name, gm, pm,
              fabs(gm - pm) / pm);
    for (int a = 0; a < 3; a++)
        cr_expect(fabs(gmom[a] - pmom[a]) <= scale,
                  "%s: p2g: grid momentum[%d] %.9g != particle momentum %.9g kg m/s (diff %.3g "
                  "> 1e-5 sum m|v| = %.3g)",
                  name, a, gmom[a], pmom[a], fabs(gmom[a] - pmom[a]), scale);

    cr_assert_eq(firn_cuda_download(gpu, &err), 0, "%s: firn_cuda_download: %s", name, err.msg);
    for (int a = 0; a < 3; a++) {
        double after = 0.0;
        for (long long i = 0; i < n; i++)
            after += (double)p->vol[i] * gpu->mats[p->mat[i]].rho * p->v[a * n + i];
        cr_expect(fabs(after - pmom[a]) <= scale,
                  "%s: g2p: particle momentum[%d] %.9g after the substep, %.9g before (diff %.3g "
                  "> 1e-5 sum m|v| = %.3g)",
                  name, a, after, pmom[a], fabs(after - pmom[a]), scale);
    }
    free(mass);
    free(vel);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* The device reduction behind the CFL step against a host loop. */
ParameterizedTestParameters(gpu, reduce_matches_cpu)
{
    return cr_make_param_array(firn_model, (void *)all_models, N_MODELS);
}

ParameterizedTest(firn_model *model, gpu, reduce_matches_cpu)
{
    require_gpu();
    const char *name = model_label(*model);
    firn_world *cpu, *gpu;
    firn_error err = {0};
    twin_worlds(*model, 0, &cpu, &gpu);
    const firn_particles *p = &cpu->p;
    const int n = p->n;
    float v2 = 0.0f, c2 = 0.0f;
    for (int i = 0; i < n; i++) {
        float vx = p->v[i], vy = p->v[n + i], vz = p->v[2 * n + i];
        v2 = fmaxf(v2, vx * vx + vy * vy + vz * vz);
        c2 = fmaxf(c2, firn_wave_speed2(&cpu->mats[p->mat[i]], p->Jp[i]));
    }
    float speed = -1.0f, wave = -1.0f;
    cr_assert_eq(firn_cuda_reduce(gpu, &speed, &wave, &err), 0, "%s: firn_cuda_reduce: %s", name,
                 err.msg);
    cr_expect(fabsf(speed - sqrtf(v2)) <= 1e-6f * sqrtf(v2), "%s: max speed gpu %.9g, cpu %.9g",
              name, speed, sqrtf(v2));
    cr_expect(fabsf(wave - sqrtf(c2)) <= 1e-5f * sqrtf(c2), "%s: max wave speed gpu %.9g, cpu %.9g",
              name, wave, sqrtf(c2));
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* G2P2G (--p2g g2p2g) fuses each substep's G2P with the next one's P2G
 * within a call, on two grids taken in turn, with the float tile and the
 * fixed-point one: calls of several substeps
 * against as many CPU substeps (clear, P2G, grid update, G2P each), every
 * particle field and the last substep's grid, within 1e-5 of each field's
 * scale plus 1e-4 of the value (expect_close; the fused arithmetic is the
 * unfused one's, only the order of the float atomic sums differs, and the
 * plastic models amplify that over substeps: unfused binned P2G reached 5x
 * the one-substep tolerance of the absolute units on the jumps case, 2.5e-6
 * of the scale). Two calls
 * (2 then 3 substeps; 2 and 2 with jumps): the second starts on the grid
 * the first ended on, the other of the two.
 * With jump, dt is long enough for some particles to move more than a cell
 * in a substep (their new stencil leaves the bin's tile and scatters
 * straight into the grid); the test checks that some did. */
static void g2p2g_case(firn_model model, int jump, int fixed)
{
    char name[64];
    snprintf(name, sizeof name, "%s, g2p2g%s%s", model_label(model), jump ? ", jumps" : "",
             fixed ? ", fixed-point tile" : "");
    firn_world *cpu, *gpu;
    firn_error err = {0};
    cr_assert_eq(setenv("FIRN_P2G_TILE", fixed ? "fixed" : "float", 1), 0);
    twin_worlds_p2g(model, 0, FIRN_P2G_G2P2G, &cpu, &gpu);
    const long long n = cpu->p.n;
    const float dt = jump ? 1e-3f : 1e-4f;
    const int calls[2] = {2, jump ? 2 : 3};
    if (jump) { /* 60 m/s along x: 1.9 cells a substep */
        for (long long i = 0; i < n; i++)
            cpu->p.v[i] += 60.0f;
        copy_state(&gpu->p, &cpu->p);
        firn_cuda_free(gpu);
        cr_assert_eq(firn_cuda_init(gpu, &err), 0, "firn_cuda_init: %s", err.msg);
    }
    long long jumped = 0; /* particle-substeps whose stencil corner moved more than a cell */
    firn_stencil *corner = malloc((size_t)n * sizeof *corner);
    cr_assert(corner, "out of host memory");
    for (int c = 0; c < 2; c++) {
        cpu->params.dt = dt;
        for (int k = 0; k < calls[c]; k++) {
            for (long long i = 0; i < n; i++)
                corner[i] = firn_make_stencil(&cpu->params, firn_load3(cpu->p.x, (int)n, (int)i));
            firn_cpu_repermute(cpu);
            firn_cpu_clear(cpu);
            firn_cpu_p2g(cpu);
            firn_cpu_grid(cpu);
            cr_assert_eq(firn_cpu_g2p(cpu), -1, "%s: the CPU state went non-finite", name);
            firn_cpu_unpermute(cpu);
            for (long long i = 0; i < n; i++) {
                const firn_stencil after =
                    firn_make_stencil(&cpu->params, firn_load3(cpu->p.x, (int)n, (int)i));
                int far = 0;
                for (int a = 0; a < 3; a++)
                    far |= abs(after.base[a] - corner[i].base[a]) > 1;
                jumped += far;
            }
        }
        cr_assert_eq(firn_cuda_run(gpu, calls[c], dt, NULL, &err), -1,
                     "%s: firn_cuda_run: %s (or a non-finite particle)", name, err.msg);
        cr_assert_eq(firn_cuda_download(gpu, &err), 0, "%s: firn_cuda_download: %s", name, err.msg);
        char label[96];
        snprintf(label, sizeof label, "%s, call %d", name, c + 1);
        double vmax = 1.0;
        for (long long k = 0; k < 3 * n; k++)
            vmax = fmax(vmax, fabs((double)cpu->p.v[k]));
        expect_close(label, "x", gpu->p.x, cpu->p.x, 3 * n, n);
        expect_close(label, "v", gpu->p.v, cpu->p.v, 3 * n, n);
        /* C is a difference quotient of grid velocities over dx / 4: its
         * rounding is theirs times 4 inv_dx. */
        expect_close_floor(label, "C", gpu->p.C, cpu->p.C, 9 * n, n,
                           4.0 * cpu->params.inv_dx * vmax);
        expect_close(label, "F", gpu->p.F, cpu->p.F, 9 * n, n);
        expect_close_floor(label, "Jp", gpu->p.Jp, cpu->p.Jp, n, n, 1.0);
        expect_close_floor(label, "damage", gpu->p.damage, cpu->p.damage, n, n, 1.0);
        expect_grid_close(label, cpu, gpu, vmax);
    }
    cr_log_info("%s: %lld of %lld particle-substeps moved more than a cell", name, jumped,
                n * (calls[0] + calls[1]));
    if (jump)
        cr_expect(jumped > 0, "%s: no particle moved more than a cell in a substep", name);
    else
        cr_expect_eq(jumped, 0, "%s: a particle moved more than a cell at dt %g", name, dt);
    free(corner);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
    unsetenv("FIRN_P2G_TILE");
}

ParameterizedTestParameters(gpu, g2p2g_matches_cpu_over_substeps)
{
    return cr_make_param_array(firn_model, (void *)all_models, N_MODELS);
}

ParameterizedTest(firn_model *model, gpu, g2p2g_matches_cpu_over_substeps, .timeout = 120)
{
    require_gpu();
    g2p2g_case(*model, 0, 0);
    g2p2g_case(*model, 1, 0);
    /* The fixed-point tile (FIRN_P2G_TILE=fixed): the first substep after
     * the state is built scatters as floats, the later ones through the
     * tile; with jumps a particle that moved beyond the tile scatters as
     * floats too. The jumps (dt 1e-3 s, 60 m/s, random C of +-5/s) only
     * for the models without a plastic return: there the tile's rounding,
     * a few times the float sums' (gpu/fixed_tile_within_its_bound), is
     * amplified past the tolerance by the yield projections (F of von
     * Mises 27 times, of sand 1.5 times, over four substeps), and snow's
     * state runs away to 1e17 m/s on both paths. */
    g2p2g_case(*model, 0, 1);
    if (*model == FIRN_MODEL_ELASTIC || *model == FIRN_MODEL_LIQUID ||
        *model == FIRN_MODEL_FRACTURE)
        g2p2g_case(*model, 1, 1);
}

/* ---- the fixed-point tile ------------------------------------------------- */

#ifdef FIRN_WITH_CUDA
int firn_cuda_fixed_tile_bounds(firn_world *w, float *out, int count, firn_error *err);
#endif

/* Binned P2G with the tile in 32-bit fixed point (FIRN_P2G_TILE=fixed,
 * kernels/mpm.cu, tile_scatter_fixed) against the exact sum of the values
 * the particles add, in double precision on the host from the same state
 * (firn_p2g_prepare and firn_p2g_node_value, the kernels' own arithmetic),
 * within the bound the kernel's comment derives, node by node:
 *   |grid - exact| <= sum_i q_i / 2 + (k + 4) 2^-24 sum_i |v_i|
 * where q_i is the quantum of the bin of the particle adding value v_i
 * (the test recomputes it from the bin's particle count and the bound the
 * previous substep left, read back from the device), and k the float adds
 * at the node (up to 8 tiles' flushes, and the values of particles that
 * did not fit the tile); the 4 more cover the flush's conversion and the
 * grid update's division and the test's product mass x velocity.
 * Adversarial cases, each after one substep that records the bins' bounds
 * (a bin without one scatters as floats): a dense heap (half the particles
 * within 1.3 cells: bins of several hundred, the coarsest quanta), and a
 * fast particle (60 m/s, 200 times the others' momentum) a tenth of a cell
 * short of the next bin, which it enters with a momentum its new bin's
 * scale cannot hold (it must scatter as floats: the test checks it did
 * not fit). The float tile's error against the same exact sums is logged
 * beside it. */
typedef struct {
    double worst;  /* the largest |grid - exact| / bound over the nodes and components */
    double fitted; /* particles whose values went into the tile */
    double missed; /* particles in a bin with a bound whose values did not fit */
} fixed_tile_result;

static fixed_tile_result fixed_tile_case(firn_model model, int heap, int fast, int fixed)
{
    fixed_tile_result r = {0.0, 0.0, 0.0};
    if (fixed)
        cr_assert_eq(setenv("FIRN_P2G_TILE", "fixed", 1), 0);
    else
        cr_assert_eq(setenv("FIRN_P2G_TILE", "float", 1), 0);
    firn_world *cpu, *gpu;
    firn_error err = {0};
    twin_worlds_p2g(model, 1, FIRN_P2G_BINNED, &cpu, &gpu);
    const int n = cpu->p.n;
    const float dt = 1e-4f, dx = cpu->params.dx;
    /* a bin's first cell along an axis: stencil corners 4 k (kernels/mpm.cu, bin_keys) */
    const float bin_face = cpu->params.lower[0] + (16.0f + 0.5f) * dx;
    for (int i = 0; i < n; i++) {
        if (heap && i % 2 == 1)
            for (int a = 0; a < 3; a++)
                cpu->p.x[a * n + i] = 0.5f + frand(-0.02f, 0.02f);
        if (fast && i == 0) {
            cpu->p.x[0] = bin_face - 0.1f * dx;
            cpu->p.x[n] = cpu->p.x[2 * n] = 0.5f;
            cpu->p.v[0] = 60.0f;
        }
    }
    copy_state(&gpu->p, &cpu->p);
    firn_cuda_free(gpu);
    cr_assert_eq(firn_cuda_init(gpu, &err), 0, "firn_cuda_init: %s", err.msg);
    cr_assert_neq(firn_cuda_run(gpu, 1, dt, NULL, &err), -2, "firn_cuda_run: %s", err.msg);
    cr_assert_eq(firn_cuda_download(gpu, &err), 0, "firn_cuda_download: %s", err.msg);

    /* The exact sums of the next P2G, from the state it starts from. */
    copy_state(&cpu->p, &gpu->p);
    firn_params P = cpu->params;
    P.dt = dt;
    const long long nodes = cpu->grid.nodes;
    int nb[3], bins = 1;
    for (int a = 0; a < 3; a++) {
        nb[a] = (P.n[a] - 3) / 4 + 1;
        bins *= nb[a];
    }
    float *bound = calloc((size_t)bins, sizeof(float));
    int *count = calloc((size_t)bins, sizeof(int));
    double *exact = calloc(4 * (size_t)nodes, sizeof(double));
    double *abs_sum = calloc(4 * (size_t)nodes, sizeof(double));
    double *quanta = calloc(4 * (size_t)nodes, sizeof(double));
    int *floats = calloc((size_t)nodes, sizeof(int));
    firn_p2g_state *st = malloc((size_t)n * sizeof *st);
    int *bin_of = malloc((size_t)n * sizeof(int));
    cr_assert(bound && count && exact && abs_sum && quanta && floats && st && bin_of,
              "out of host memory");
#ifdef FIRN_WITH_CUDA
    if (fixed)
        cr_assert_eq(firn_cuda_fixed_tile_bounds(gpu, bound, bins, &err), bins,
                     "firn_cuda_fixed_tile_bounds: %s", err.msg);
#endif
    float mass_max = 0.0f;
    for (int i = 0; i < n; i++) {
        st[i] = firn_p2g_prepare(i, &P, cpu->mats, cpu->p);
        mass_max = fmaxf(mass_max, st[i].mass);
        bin_of[i] =
            ((st[i].s.base[0] / 4) * nb[1] + st[i].s.base[1] / 4) * nb[2] + st[i].s.base[2] / 4;
        count[bin_of[i]]++;
    }
    const double W = 27.0 / 64.0;
    for (int i = 0; i < n; i++) {
        const double ne = count[bin_of[i]] > 256 ? count[bin_of[i]] : 256;
        const double L = (1073741824.0 - 1048576.0) / ne, B = bound[bin_of[i]];
        const double qm = ne * W * mass_max / 536870912.0, qp = 2.0 * W * B / L;
        firn_vec3 col[3];
        const firn_vec3 m0 = firn_p2g_middle(&P, &st[i], col);
        double Bi = 0.0;
        for (int q = 0; q < 3; q++)
            Bi =
                fmax(Bi, fabs(m0.v[q]) + fabs(col[0].v[q]) + fabs(col[1].v[q]) + fabs(col[2].v[q]));
        /* with a little room for the kernel's float evaluation of the test */
        const int in_tile = fixed && B > 0.0 && W * Bi / qp <= L * (1.0 - 1e-5);
        const int maybe = fixed && B > 0.0 && W * Bi / qp <= L * (1.0 + 1e-5);
        if (fixed && B > 0.0) {
            r.fitted += in_tile;
            r.missed += !maybe;
        }
        long long sx, sy;
        const long long corner = firn_stencil_corner(&P, &st[i].s, &sx, &sy) / 4;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 3; c++) {
                    float v[4];
                    firn_p2g_node_value(&st[i], m0, col, a, b, c, v);
                    const long long node = corner + (a * sx + b * sy) / 4 + c;
                    for (int q = 0; q < 4; q++) {
                        exact[4 * node + q] += v[q];
                        abs_sum[4 * node + q] += fabs(v[q]);
                        if (maybe)
                            quanta[4 * node + q] += 0.5 * (q == 3 ? qm : qp);
                    }
                    if (!in_tile)
                        floats[node]++;
                }
    }
    cr_assert_neq(firn_cuda_run(gpu, 1, dt, NULL, &err), -2, "firn_cuda_run: %s", err.msg);
    float *mass = malloc((size_t)nodes * sizeof(float));
    float *vel = malloc(3 * (size_t)nodes * sizeof(float));
    cr_assert(mass && vel, "out of host memory");
    cr_assert_eq(firn_cuda_download_grid(gpu, mass, vel, &err), 0, "firn_cuda_download_grid: %s",
                 err.msg);
    for (long long k = 0; k < nodes; k++)
        for (int q = 0; q < 4; q++) {
            const double got = q == 3 ? mass[k] : (double)mass[k] * vel[q * nodes + k];
            const double tol =
                quanta[4 * k + q] + (8.0 + floats[k] + 4.0) * ldexp(abs_sum[4 * k + q], -24);
            const double e = fabs(got - exact[4 * k + q]);
            if (e == 0.0)
                continue;
            r.worst = fmax(r.worst, tol > 0.0 ? e / tol : INFINITY);
        }
    free(mass);
    free(vel);
    free(bound);
    free(count);
    free(exact);
    free(abs_sum);
    free(quanta);
    free(floats);
    free(st);
    free(bin_of);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
    unsetenv("FIRN_P2G_TILE");
    return r;
}

Test(gpu, fixed_tile_within_its_bound, .timeout = 300)
{
    require_gpu();
    const firn_model models[] = {FIRN_MODEL_SAND, FIRN_MODEL_ELASTIC};
    const char *cases[3] = {"random state", "a dense heap", "a fast particle"};
    for (int m = 0; m < 2; m++)
        for (int c = 0; c < 3; c++) {
            const fixed_tile_result fx = fixed_tile_case(models[m], c == 1, c == 2, 1);
            const fixed_tile_result fl = fixed_tile_case(models[m], c == 1, c == 2, 0);
            cr_log_info("%s, %s: fixed-point tile %.3g of its bound (%.0f particles in the "
                        "tile, %.0f not), float tile %.3g of it",
                        model_label(models[m]), cases[c], fx.worst, fx.fitted, fx.missed, fl.worst);
            cr_expect(fx.worst <= 1.0,
                      "%s, %s: the fixed-point tile's grid is %.3g x its derived bound away "
                      "from the exact sums",
                      model_label(models[m]), cases[c], fx.worst);
            cr_expect(fx.fitted >= 100.0, "%s, %s: only %.0f particles went into the tile",
                      model_label(models[m]), cases[c], fx.fitted);
            if (c == 2)
                cr_expect(fx.missed >= 1.0,
                          "%s, a fast particle: every particle fitted its bin's scale",
                          model_label(models[m]));
        }
}

/* ---- scenes --------------------------------------------------------------- */

ParameterizedTestParameters(gpu, scene_matches_cpu)
{
    return cr_make_param_array(firn_model, (void *)all_models, N_MODELS);
}

/* Five frames (CFL substeps, walls, gravity) of one box per model: trajectories
 * drift apart by rounding, so only robust statistics are compared. */
ParameterizedTest(firn_model *model, gpu, scene_matches_cpu)
{
    require_gpu();
    const char *name = model_label(*model);
    firn_scene_def def;
    small_scene(&def, *model, 0.2f);
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    firn_error err = {0};
    for (int f = 0; f < def.frames; f++) {
        firn_frame_stats sc, sg;
        cr_assert_eq(firn_world_step_frame(cpu, &sc, &err), 0, "%s: CPU frame %d: %s", name, f,
                     err.msg);
        cr_assert_eq(firn_world_step_frame(gpu, &sg, &err), 0, "%s: GPU frame %d: %s", name, f,
                     err.msg);
        double d2 = 0.0, c2 = 0.0;
        for (int a = 0; a < 3; a++) {
            double d = sg.center_of_mass[a] - sc.center_of_mass[a];
            d2 += d * d;
            c2 += sc.center_of_mass[a] * sc.center_of_mass[a];
        }
        cr_expect(sqrt(d2) <= 1e-3 * sqrt(c2),
                  "%s frame %d: centre of mass gpu (%.6g, %.6g, %.6g), cpu (%.6g, %.6g, %.6g): "
                  "|diff| %.3g m > 1e-3 x |com| (substeps gpu %d, cpu %d)",
                  name, f, sg.center_of_mass[0], sg.center_of_mass[1], sg.center_of_mass[2],
                  sc.center_of_mass[0], sc.center_of_mass[1], sc.center_of_mass[2], sqrt(d2),
                  sg.frame_substeps, sc.frame_substeps);
        /* 2 percent, plus 1 uJ/kg so that a body come to rest does not fail on noise. */
        double tol = 0.02 * sc.kinetic_energy + 1e-6 * sc.mass;
        cr_expect(fabs(sg.kinetic_energy - sc.kinetic_energy) <= tol,
                  "%s frame %d: kinetic energy gpu %.6g J, cpu %.6g J differ by %.2f %% (> 2 %%; "
                  "substeps gpu %d, cpu %d)",
                  name, f, sg.kinetic_energy, sc.kinetic_energy,
                  100.0 * fabs(sg.kinetic_energy - sc.kinetic_energy) /
                      fmax(sc.kinetic_energy, 1e-30),
                  sg.frame_substeps, sc.frame_substeps);
    }
    firn_profile prof = firn_world_profile(gpu);
    cr_expect(prof.p2g > 0.0 && prof.g2p > 0.0, "%s: the GPU profile recorded no time", name);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* A frame's statistics bring only x and v back from the device; reading the
 * particles afterwards must bring the rest (C, F, Jp, damage), so that the
 * view is the device state itself, bitwise that of a full download. */
Test(gpu, particles_read_after_frame_stats_are_the_device_state, .timeout = 60)
{
    require_gpu();
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SNOW, 0.2f);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    firn_error err = {0};
    firn_frame_stats s1, s2;
    for (int f = 0; f < 2; f++)
        cr_assert_eq(firn_world_step_frame(gpu, &s1, &err), 0, "frame %d: %s", f, err.msg);
    firn_particles_view view;
    cr_assert_eq(firn_world_particles(gpu, &view, &err), 0, "%s", err.msg);
    const size_t n = (size_t)view.n;
    const size_t floats = 24 * n; /* x 3, v 3, C 9, F 9 */
    float *seen = malloc((floats + 2 * n) * sizeof(float));
    cr_assert(seen);
    memcpy(seen, view.x, 3 * n * sizeof(float));
    memcpy(seen + 3 * n, view.v, 3 * n * sizeof(float));
    memcpy(seen + 6 * n, view.C, 9 * n * sizeof(float));
    memcpy(seen + 15 * n, view.F, 9 * n * sizeof(float));
    memcpy(seen + 24 * n, view.Jp, n * sizeof(float));
    memcpy(seen + 25 * n, view.damage, n * sizeof(float));
    cr_assert_eq(firn_cuda_download(gpu, &err), 0, "%s", err.msg);
    cr_expect(!memcmp(seen, gpu->p.x, 3 * n * sizeof(float)), "x is not the device's");
    cr_expect(!memcmp(seen + 3 * n, gpu->p.v, 3 * n * sizeof(float)), "v is not the device's");
    cr_expect(!memcmp(seen + 6 * n, gpu->p.C, 9 * n * sizeof(float)), "C is not the device's");
    cr_expect(!memcmp(seen + 15 * n, gpu->p.F, 9 * n * sizeof(float)), "F is not the device's");
    cr_expect(!memcmp(seen + 24 * n, gpu->p.Jp, n * sizeof(float)), "Jp is not the device's");
    cr_expect(!memcmp(seen + 25 * n, gpu->p.damage, n * sizeof(float)),
              "damage is not the device's");
    /* The snow has moved and deformed: C and F are not their initial 0 and I. */
    int moved = 0;
    for (size_t k = 0; k < 9 * n && !moved; k++)
        moved = seen[6 * n + k] != 0.0f;
    cr_expect(moved, "C is still zero after two frames");
    /* And the statistics of x and v alone are those of the full state. */
    cr_assert_eq(firn_world_stats(gpu, &s2, &err), 0, "%s", err.msg);
    for (int a = 0; a < 3; a++)
        cr_expect_eq(s1.center_of_mass[a], s2.center_of_mass[a]);
    cr_expect_eq(s1.kinetic_energy, s2.kinetic_energy);
    free(seen);
    firn_world_destroy(gpu);
}

/* The P2G variant a world runs (firn_device_binned, host code: no GPU
 * needed): binned and atomic as asked; auto binned from
 * FIRN_P2G_BINNED_MIN MPM particles; never binned under CPIC. */
Test(gpu, p2g_variant_follows_the_request_and_auto_threshold)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SAND, 0.15f);
    cr_assert_eq(firn_run_options_default().p2g, FIRN_P2G_AUTO, "the default is auto");
    firn_world *w = make_world(&def, FIRN_BACKEND_CPU);
    const int n = w->p.n;
    cr_assert_lt(n, FIRN_P2G_BINNED_MIN);
    cr_expect_eq(firn_device_binned(w), 0, "auto below the threshold: atomic");
    w->p.n = FIRN_P2G_BINNED_MIN;
    cr_expect_eq(firn_device_binned(w), 1, "auto at the threshold: binned");
    w->p.n = FIRN_P2G_BINNED_MIN - 1;
    cr_expect_eq(firn_device_binned(w), 0, "auto just below the threshold: atomic");
    w->run.p2g = FIRN_P2G_ATOMIC;
    w->p.n = FIRN_P2G_BINNED_MIN;
    cr_expect_eq(firn_device_binned(w), 0, "atomic asked for");
    w->run.p2g = FIRN_P2G_BINNED;
    w->p.n = n;
    cr_expect_eq(firn_device_binned(w), 1, "binned asked for");
    w->coupler.cpic = 1;
    const int slots = w->p.cpic_slots;
    w->p.cpic_slots = 1;
    cr_expect_eq(firn_device_binned(w), 0, "CPIC's P2G stays atomic");
    w->p.cpic_slots = slots;
    w->coupler.cpic = 0;
    /* G2P2G is binned, on a dense grid whatever --grid asks (its P2G runs
     * after the clear, in the fused kernel), with a second grid. */
    w->run.grid = FIRN_GRID_SPARSE;
    cr_expect_eq(firn_device_sparse(w), 1, "binned, --grid sparse: sparse");
    w->run.p2g = FIRN_P2G_G2P2G;
    cr_expect_eq(firn_device_binned(w), 1, "g2p2g asked for: binned");
    cr_expect_eq(firn_device_sparse(w), 0, "g2p2g, --grid sparse: dense");
    w->run.grid = FIRN_GRID_DENSE;
    const size_t fused_bytes = firn_device_bytes(w);
    w->run.p2g = FIRN_P2G_BINNED;
    const size_t grid =
        4 * sizeof(float) * (size_t)w->params.n[0] * w->params.n[1] * w->params.n[2];
    cr_expect_eq(fused_bytes, firn_device_bytes(w) + firn_align256(grid),
                 "g2p2g's device state holds a second grid");
    firn_world_destroy(w);
}

/* The first of x, v, C, F, Jp whose bits differ between a and b (same n),
 * or NULL. */
static const char *first_different_field(const firn_particles *a, const firn_particles *b)
{
    const size_t n = (size_t)a->n, f = sizeof(float);
    if (memcmp(a->x, b->x, 3 * n * f))
        return "x";
    if (memcmp(a->v, b->v, 3 * n * f))
        return "v";
    if (memcmp(a->C, b->C, 9 * n * f))
        return "C";
    if (memcmp(a->F, b->F, 9 * n * f))
        return "F";
    return memcmp(a->Jp, b->Jp, n * f) ? "Jp" : NULL;
}

/* Two runs of 30 substeps of the same sand block on the GPU; returns
 * whether every particle field came out bit for bit the same. */
static int two_runs_agree(int p2g)
{
    firn_scene_def def;
    firn_error err = {0};
    small_scene(&def, FIRN_MODEL_SAND, 0.15f);
    const firn_run_options run = run_p2g(FIRN_BACKEND_CUDA, p2g);
    firn_world *w[2];
    for (int r = 0; r < 2; r++) {
        w[r] = make_world_run(&def, &run);
        cr_assert_eq(firn_world_run_substeps(w[r], 30, 2e-4f, &err), 0, "%s", err.msg);
        cr_assert_eq(firn_cuda_download(w[r], &err), 0, "%s", err.msg);
    }
    const size_t n = (size_t)w[0]->p.n;
    const firn_particles *a = &w[0]->p, *b = &w[1]->p;
    const int same = !first_different_field(a, b);
    float fall = 0.0f; /* the block moved: a frozen state would agree trivially */
    for (size_t i = 0; i < n; i++)
        fall = fmaxf(fall, fabsf(a->v[n + i]));
    cr_assert_gt(fall, 1e-3f, "the sand did not move (%g m/s)", fall);
    firn_world_destroy(w[0]);
    firn_world_destroy(w[1]);
    return same;
}

/* The deterministic mode: ordered P2G gives the same bits run after run.
 * On the emulated runtime the blocks run on a pool of threads, so the
 * atomic variants' sums may come out in another order each run (logged,
 * not required: two runs may happen to agree). */
Test(gpu, ordered_p2g_gives_the_same_bits_every_run, .timeout = 300)
{
    require_gpu();
    cr_expect(two_runs_agree(FIRN_P2G_ORDERED), "two runs with ordered P2G differ");
    cr_log_info("two runs with atomic P2G: %s",
                two_runs_agree(FIRN_P2G_ATOMIC) ? "the same bits" : "different bits");
}

/* CUDA graphs (firn_graph_mode): a sand block with ordered P2G (the same
 * bits every run) over five calls of 7 substeps, the third at twice the
 * dt, the last at the first dt again, launched as graphs and kernel by
 * kernel: every particle field the same bits. Two graphs are captured per
 * distinct call (substeps [0, 3) and [4, 7) around the timed fourth), the
 * first call's reused by the second and the fifth (a graph replaying the
 * wrong dt would differ), two launched per call. */
Test(gpu, graphs_give_the_bits_of_launches, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    firn_error err = {0};
    small_scene(&def, FIRN_MODEL_SAND, 0.15f);
    firn_run_options run = run_p2g(FIRN_BACKEND_CUDA, FIRN_P2G_ORDERED);
    const float dts[5] = {1e-4f, 1e-4f, 2e-4f, 2e-4f, 1e-4f};
    firn_world *w[2];
    for (int r = 0; r < 2; r++) {
        run.graphs = r ? FIRN_GRAPHS_ON : FIRN_GRAPHS_OFF;
        w[r] = make_world_run(&def, &run);
        for (int c = 0; c < 5; c++)
            cr_assert_eq(firn_world_run_substeps(w[r], 7, dts[c], &err), 0, "%s", err.msg);
        cr_assert_eq(firn_cuda_download(w[r], &err), 0, "%s", err.msg);
    }
    firn_cuda_graph_stats gs[2];
    for (int r = 0; r < 2; r++)
        firn_cuda_graph_stats_get(w[r], &gs[r]);
    cr_expect_eq(gs[0].captures + gs[0].launches, 0, "--graphs off captured");
    cr_expect_eq(gs[1].captures, 4, "%lld graphs captured, not 2 per distinct call",
                 gs[1].captures);
    cr_expect_eq(gs[1].launches, 10, "%lld graphs launched, not 2 per call", gs[1].launches);
    cr_expect_eq(gs[1].fell_back, 0, "%s", gs[1].why);
    const char *field = first_different_field(&w[0]->p, &w[1]->p);
    cr_expect_null(field, "%s differs between graphs and launches", field);
    /* The profile still has its phases: the middle substep is timed. */
    const firn_profile pr = firn_world_profile(w[1]);
    cr_expect(pr.p2g > 0.0 && pr.g2p > 0.0 && pr.grid > 0.0, "phases p2g %g, grid %g, g2p %g s",
              pr.p2g, pr.grid, pr.g2p);
    for (int r = 0; r < 2; r++)
        firn_world_destroy(w[r]);
    /* auto, the default, uses them as on does. */
    cr_expect_eq(firn_run_options_default().graphs, FIRN_GRAPHS_AUTO, "the default is not auto");
    small_scene(&def, FIRN_MODEL_SAND, 0.15f);
    firn_world *a = make_world(&def, FIRN_BACKEND_CUDA);
    cr_assert_eq(firn_world_run_substeps(a, 7, 1e-4f, &err), 0, "%s", err.msg);
    firn_cuda_graph_stats_get(a, &gs[0]);
    cr_expect_eq(gs[0].captures, 2, "auto captured %lld graphs", gs[0].captures);
    firn_world_destroy(a);
}

/* The sparse grid (firn_grid_mode): a cluster of sand 0.3 m across in the
 * 1 m domain with random velocities, one particle in 97 thrown at 60 m/s
 * along a random axis (0.19 cell a substep: over the 40 substeps they
 * cross two blocks of 4 cells, entering blocks no particle was in the
 * substep before): with ordered P2G every particle field bit for bit the
 * dense grid's, and the grid too (the sparse clear leaves it zero outside
 * the blocks written); with binned P2G, whose atomics make any two runs
 * differ by rounding, x and v within the compare tolerance. */
static void sparse_matches_dense(int p2g, int bitwise)
{
    firn_scene_def def;
    firn_error err = {0};
    small_scene(&def, FIRN_MODEL_SAND, 0.15f);
    firn_run_options run = run_p2g(FIRN_BACKEND_CUDA, p2g);
    firn_world *w[2];
    for (int r = 0; r < 2; r++) {
        run.grid = r ? FIRN_GRID_SPARSE : FIRN_GRID_DENSE;
        w[r] = make_world_run(&def, &run);
        cr_assert_eq(firn_device_sparse(w[r]), r, "the grid is %s", r ? "dense" : "sparse");
        firn_particles *q = &w[r]->p;
        randomise(q, &w[r]->params, FIRN_MODEL_SAND, 0, 0x5ba75eULL);
        for (int i = 0; i < q->n; i += 97)
            q->v[(i / 97 % 3) * q->n + i] = i / 97 % 2 ? 60.0f : -60.0f;
        firn_cuda_free(w[r]);
        cr_assert_eq(firn_cuda_init(w[r], &err), 0, "firn_cuda_init: %s", err.msg);
        cr_assert_eq(firn_world_run_substeps(w[r], 40, 1e-4f, &err), 0, "%s", err.msg);
        cr_assert_eq(firn_cuda_download(w[r], &err), 0, "%s", err.msg);
    }
    const size_t n = (size_t)w[0]->p.n, f = sizeof(float);
    const firn_particles *a = &w[0]->p, *b = &w[1]->p;
    if (!bitwise) { /* binned P2G's atomics: two runs differ by rounding, sparse or not */
        expect_close("sparse grid", "x", b->x, a->x, 3 * (long long)n, (long long)n);
        expect_close("sparse grid", "v", b->v, a->v, 3 * (long long)n, (long long)n);
        for (int r = 0; r < 2; r++)
            firn_world_destroy(w[r]);
        return;
    }
    const char *field = first_different_field(a, b);
    cr_expect_null(field, "%s differs from the dense grid's", field);
    const long long nodes = (long long)w[0]->params.n[0] * w[0]->params.n[1] * w[0]->params.n[2];
    float *m[2], *v[2];
    for (int r = 0; r < 2; r++) {
        m[r] = malloc((size_t)nodes * f);
        v[r] = malloc(3 * (size_t)nodes * f);
        cr_assert(m[r] && v[r]);
        cr_assert_eq(firn_cuda_download_grid(w[r], m[r], v[r], &err), 0, "%s", err.msg);
    }
    long long with_mass = 0;
    for (long long k = 0; k < nodes; k++)
        with_mass += m[0][k] > 0.0f;
    cr_log_info("sparse grid: %lld of %lld nodes hold mass", with_mass, nodes);
    cr_expect_lt(with_mass, nodes / 2, "the block fills the domain: the test proves nothing");
    cr_expect(!memcmp(m[0], m[1], (size_t)nodes * f), "the grid's mass differs");
    cr_expect(!memcmp(v[0], v[1], 3 * (size_t)nodes * f), "the grid's velocity differs");
    for (int r = 0; r < 2; r++) {
        free(m[r]);
        free(v[r]);
        firn_world_destroy(w[r]);
    }
}

Test(gpu, sparse_grid_equals_dense_with_binned_p2g, .timeout = 300)
{
    require_gpu();
    sparse_matches_dense(FIRN_P2G_BINNED, 0);
}

Test(gpu, sparse_grid_equals_dense_with_ordered_p2g, .timeout = 300)
{
    require_gpu();
    sparse_matches_dense(FIRN_P2G_ORDERED, 1);
}

/* firn_device_sparse (host code): auto takes the sparse grid only above
 * FIRN_GRID_SPARSE_RATIO nodes a particle and with binned P2G; never with a
 * pair that works on the whole grid. */
Test(gpu, sparse_grid_follows_the_request_and_the_pairs)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SAND, 0.15f);
    const firn_run_options run = run_p2g(FIRN_BACKEND_CPU, FIRN_P2G_BINNED);
    firn_world *w = make_world_run(&def, &run);
    const double nodes = (double)w->params.n[0] * w->params.n[1] * w->params.n[2];
    const int n = w->p.n;
    w->p.n = (int)(nodes / FIRN_GRID_SPARSE_RATIO) - 1;
    cr_expect_eq(firn_device_sparse(w), 1, "auto, few particles: sparse");
    w->p.n = (int)(nodes / FIRN_GRID_SPARSE_RATIO) + 1;
    cr_expect_eq(firn_device_sparse(w), 0, "auto, many particles: dense");
    w->run.grid = FIRN_GRID_SPARSE;
    cr_expect_eq(firn_device_sparse(w), 1, "sparse asked for");
    w->coupler.mpm_sph = 1;
    cr_expect_eq(firn_device_sparse(w), 0, "MPM-SPH works on the whole grid");
    w->coupler.mpm_sph = 0;
    w->run.p2g = FIRN_P2G_ATOMIC;
    cr_expect_eq(firn_device_sparse(w), 0, "atomic P2G has no bins");
    w->p.n = n;
    firn_world_destroy(w);
}

/* What firn_world_gpu_nondeterminism names (host code: no GPU needed): an
 * MPM world is deterministic on the GPU only with ordered P2G and without
 * CPIC; dynamic rigid bodies, tools and the FEM scatter pairs are not. */
Test(gpu, nondeterminism_is_named_by_phase)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SAND, 0.15f);
    firn_world *w = make_world(&def, FIRN_BACKEND_CPU);
    const char *why = firn_world_gpu_nondeterminism(w);
    cr_expect(why && strstr(why, "P2G"), "auto P2G: %s", why ? why : "(deterministic)");
    w->run.p2g = FIRN_P2G_ORDERED;
    why = firn_world_gpu_nondeterminism(w);
    cr_expect_null(why, "ordered P2G, MPM only: %s", why);
    w->coupler.cpic = 1;
    const int slots = w->p.cpic_slots;
    w->p.cpic_slots = 1;
    why = firn_world_gpu_nondeterminism(w);
    cr_expect(why && strstr(why, "CPIC"), "CPIC: %s", why ? why : "(deterministic)");
    w->p.cpic_slots = slots;
    w->coupler.cpic = 0;
    w->coupler.fem_mpm = 1;
    why = firn_world_gpu_nondeterminism(w);
    cr_expect(why && strstr(why, "FEM-MPM"), "FEM-MPM: %s", why ? why : "(deterministic)");
    w->coupler.fem_mpm = 0;
    firn_world_destroy(w);
    /* A dynamic rigid ball in the sand: its reaction. A kinematic one: none. */
    char json[1024];
    for (int dyn = 0; dyn < 2; dyn++) {
        snprintf(json, sizeof json,
                 "{'domain': {'lower': [0, 0, 0], 'upper': [0.4, 0.4, 0.4], 'dx': 0.02},"
                 " 'materials': {'s': {'model': 'sand'}},"
                 " 'bodies': [{'material': 's', 'shape': {'type': 'box',"
                 "   'lower': [0.1, 0.05, 0.1], 'upper': [0.3, 0.15, 0.3]}}],"
                 " 'rigids': [{'shape': {'type': 'sphere', 'center': [0.2, 0.25, 0.2],"
                 "   'radius': 0.04}, 'motion': '%s', 'density': 3000}]}",
                 dyn ? "dynamic" : "kinematic");
        for (char *c = json; *c; c++)
            *c = *c == '\'' ? '"' : *c;
        firn_error err = {0};
        cr_assert_eq(firn_scene_parse_json(json, "t.json", &def, &err), 0, "%s", err.msg);
        const firn_run_options run = run_p2g(FIRN_BACKEND_CPU, FIRN_P2G_ORDERED);
        w = make_world_run(&def, &run);
        cr_assert_gt(w->n_rigids, 0);
        why = firn_world_gpu_nondeterminism(w);
        if (dyn)
            cr_expect(why && strstr(why, "rigid"), "dynamic ball: %s",
                      why ? why : "(deterministic)");
        else
            cr_expect_null(why, "kinematic ball: %s", why);
        firn_world_destroy(w);
    }
}

#ifdef FIRN_WITH_CUDA
/* kernels/mpm.cu, for these tests only. */
int firn_cuda_download_bins(firn_world *w, int *order, int *start, int *end, int bins_n[3],
                            firn_error *err);
int firn_cuda_download_bin_list(firn_world *w, int *list, int *listed, firn_error *err);
int firn_cuda_cap_bin_blocks(firn_world *w, int blocks, firn_error *err);
int firn_cuda_download_ids(firn_world *w, int *id, firn_error *err);

/* Particle layouts for the binning tests (place_particles): the random
 * state (a central cluster, one in five anywhere); clumps in every other
 * bin with empty bins between them, the first bin taking about half the
 * particles and the counts falling off steeply (a cube-law pick of the
 * bin); every particle in one bin; every particle in one cell. */
enum { PLACE_RANDOM, PLACE_GAPS, PLACE_ONE_BIN, PLACE_ONE_CELL, PLACE_COUNT };
static const char *const place_labels[] = {"random state", "skewed clumps with empty bins between",
                                           "one bin", "one cell"};

/* Moves x of every particle to the layout `place` (but PLACE_RANDOM, which
 * keeps it): each stencil corner a cell of the layout, the position inside
 * it at least 0.05 cell from its faces, so that every corner is exact
 * (bin_keys and a CPU floor agree). Bins of 4^3 cells, nb per axis. */
static void place_particles(firn_particles *p, const firn_params *P, const int nb[3], int place)
{
    if (place == PLACE_RANDOM)
        return;
    const int n = p->n;
    rng_state = 0xb1a5ULL + (uint64_t)place;
    /* bins 2 and 4 along each axis (a bin of 4 cells from corner 8 and 16;
     * positions up to 20.5 dx above the lower face), empty bins between */
    for (int a = 0; a < 3; a++)
        cr_assert_geq(nb[a], 6, "the layouts need 6 bins along each axis, the grid has %d", nb[a]);
    for (int i = 0; i < n; i++) {
        int bin[3] = {2, 2, 2}, base[3];
        if (place == PLACE_GAPS) {
            const float r = frand(0.0f, 1.0f);
            const int m = (int)(8.0f * r * r * r); /* 0 .. 7: bin m of the 8, m = 0 half the time */
            for (int a = 0; a < 3; a++)
                bin[a] = 2 + 2 * ((m >> a) & 1);
        }
        for (int a = 0; a < 3; a++) {
            base[a] = 4 * bin[a] + (place == PLACE_ONE_CELL ? 1 : (int)frand(0.0f, 4.0f));
            p->x[a * n + i] =
                P->lower[a] + ((float)base[a] + 0.5f + frand(0.05f, 0.95f)) / P->inv_dx;
            cr_assert(p->x[a * n + i] > P->x_min[a] && p->x[a * n + i] < P->x_max[a],
                      "a placed particle is outside the particles' box");
        }
    }
}

/* Binned P2G's order is a permutation of the particles grouped by bin: after
 * a call every particle appears once in the order, each bin's range holds
 * exactly the particles whose stencil corner lies in its 4^3 cells
 * (computed here from the positions the binning saw), the ranges tile the
 * order in bin order, and within a bin particles are in cell order (warp
 * P2G's runs, the binned kernels' lane spread) and, with the radix sort
 * (ordered P2G, the sparse grid), within a cell in index order (it is
 * stable; ordered P2G's sums follow that order). The counting sort's order
 * within a cell follows its atomics and is not checked. The list of bins
 * P2G's blocks run through holds every bin that has particles, once, in
 * bin order, and no other. A particle within 1e-4 cell of a cell face may
 * fall on either side (nvcc's fused multiply-add rounds the corner's floor
 * differently) and is left out of the placement and order checks. Then
 * the state and the grid match the CPU's after the same substeps, within
 * g2p2g_case's tolerance: a particle lost or counted twice, or a bin P2G
 * skipped, leaves mass missing from the grid. Each variant on each layout
 * of place_particles; on every other layout the binned kernels run on
 * three blocks (firn_cuda_cap_bin_blocks), each through several bins of
 * the list (at the default cap of 4096 blocks, a block per bin here). */
static void binning_case(int p2g, int grid, int place)
{
    firn_world *cpu, *gpu;
    firn_error err = {0};
    char name[160];
    snprintf(name, sizeof name, "%s%s, %s%s",
             p2g == FIRN_P2G_BINNED    ? "binned"
             : p2g == FIRN_P2G_WARP    ? "warp"
             : p2g == FIRN_P2G_G2P2G   ? "g2p2g"
             : p2g == FIRN_P2G_ORDERED ? "ordered"
                                       : "?",
             grid == FIRN_GRID_SPARSE ? " (sparse grid)" : "", place_labels[place],
             place % 2 ? ", 3 blocks" : "");
    twin_worlds_grid(FIRN_MODEL_SAND, 0, p2g, grid, &cpu, &gpu);
    const int n = gpu->p.n;
    const firn_params *P = &cpu->params;
    int nb[3] = {0};
    for (int a = 0; a < 3; a++)
        nb[a] = (P->n[a] - 3) / 4 + 1;
    if (place != PLACE_RANDOM) {
        place_particles(&cpu->p, P, nb, place);
        copy_state(&gpu->p, &cpu->p);
        firn_cuda_free(gpu);
        cr_assert_eq(firn_cuda_init(gpu, &err), 0, "%s: firn_cuda_init: %s", name, err.msg);
    }
    if (place % 2)
        cr_assert_eq(firn_cuda_cap_bin_blocks(gpu, 3, &err), 0, "%s: %s", name, err.msg);
    cr_assert_eq(firn_device_sparse(gpu), grid == FIRN_GRID_SPARSE, "%s: grid mode", name);
    const int radix = !firn_device_counting_sort(gpu);
    cr_assert_eq(radix, grid == FIRN_GRID_SPARSE || p2g == FIRN_P2G_ORDERED, "%s: the sort chosen",
                 name);
    int *want = malloc((size_t)n * sizeof(int)), *cell = malloc((size_t)n * sizeof(int)),
        *exact = malloc((size_t)n * sizeof(int));
    cr_assert(want && cell && exact);
    for (int i = 0; i < n; i++) {
        firn_stencil st = firn_make_stencil(P, firn_load3(cpu->p.x, n, i));
        want[i] = ((st.base[0] / 4) * nb[1] + st.base[1] / 4) * nb[2] + st.base[2] / 4;
        cell[i] = ((st.base[0] % 4) * 4 + st.base[1] % 4) * 4 + st.base[2] % 4;
        exact[i] = 1;
        for (int a = 0; a < 3; a++) {
            const float t = (cpu->p.x[a * n + i] - P->lower[a]) * P->inv_dx - 0.5f;
            exact[i] &= fabsf(t - rintf(t)) > 1e-4f;
        }
    }
    /* G2P2G bins once before its first fused kernel; with two substeps
     * (one fused kernel) that is the only binning, of these positions. */
    const int nsub = p2g == FIRN_P2G_G2P2G ? 2 : 1;
    const float dt = 1e-4f;
    cr_assert_eq(firn_cuda_run(gpu, nsub, dt, NULL, &err), -1,
                 "%s: firn_cuda_run: %s (or a non-finite particle)", name, err.msg);
    const int bins = nb[0] * nb[1] * nb[2];
    int *order = malloc((size_t)n * sizeof(int)), *start = malloc((size_t)bins * sizeof(int)),
        *end = malloc((size_t)bins * sizeof(int)), *seen = calloc((size_t)n, sizeof(int)),
        *list = malloc((size_t)bins * sizeof(int));
    cr_assert(order && start && end && seen && list);
    int got[3];
    cr_assert_eq(firn_cuda_download_bins(gpu, order, start, end, got, &err), 0, "%s", err.msg);
    for (int a = 0; a < 3; a++)
        cr_assert_eq(got[a], nb[a], "%s: bins along axis %d: device %d, want %d", name, a, got[a],
                     nb[a]);
    int bad_perm = 0, next = 0, misplaced = 0, unsorted = 0, used = 0, most = 0;
    for (int k = 0; k < n; k++) {
        if (order[k] < 0 || order[k] >= n || seen[order[k]]++)
            bad_perm++;
    }
    cr_expect_eq(bad_perm, 0, "%s: %d entries of the order are out of range or repeated", name,
                 bad_perm);
    for (int b = 0; b < bins && !bad_perm; b++) {
        if (start[b] == end[b])
            continue;
        used++;
        most = end[b] - start[b] > most ? end[b] - start[b] : most;
        cr_expect_eq(start[b], next, "%s: bin %d starts at %d, the previous ended at %d", name, b,
                     start[b], next);
        next = end[b];
        int prev = -1; /* the last exactly placed particle of this bin */
        for (int k = start[b]; k < end[b]; k++) {
            const int i = order[k];
            if (!exact[i])
                continue;
            misplaced += want[i] != b;
            if (prev >= 0)
                unsorted += cell[prev] > cell[i] || (radix && cell[prev] == cell[i] && prev > i);
            prev = i;
        }
    }
    cr_expect_eq(next, n, "%s: the bins' ranges end at %d of %d particles", name, next, n);
    cr_expect_eq(misplaced, 0, "%s: %d particles in a bin their corner is not in", name, misplaced);
    cr_expect_eq(unsorted, 0, "%s: %d particles out of cell%s order within their bin", name,
                 unsorted, radix ? " or index" : "");
    if (place == PLACE_RANDOM)
        cr_expect_gt(used, 8, "%s: only %d bins hold particles: the test needs many", name, used);
    if (place == PLACE_GAPS)
        cr_expect(used == 8 && most > n / 3, "%s: %d bins hold particles, the fullest %d of %d",
                  name, used, most, n);
    if (place == PLACE_ONE_BIN || place == PLACE_ONE_CELL)
        cr_expect_eq(used, 1, "%s: %d bins hold particles", name, used);
    int listed = -1;
    const int lr = firn_cuda_download_bin_list(gpu, list, &listed, &err);
    if (p2g == FIRN_P2G_ORDERED) {
        cr_expect_eq(lr, -1, "%s: ordered P2G has no list of bins", name);
    } else {
        cr_assert_eq(lr, 0, "%s: %s", name, err.msg);
        cr_expect_eq(listed, used, "%s: %d bins listed, %d hold particles", name, listed, used);
        int k = 0;
        for (int b = 0; b < bins && k < listed; b++)
            if (start[b] < end[b]) {
                cr_expect_eq(list[k], b, "%s: list entry %d is bin %d, want %d", name, k, list[k],
                             b);
                k++;
            }
    }
    /* the same substeps on the CPU */
    cpu->params.dt = dt;
    for (int k = 0; k < nsub; k++) {
        firn_cpu_repermute(cpu);
        firn_cpu_clear(cpu);
        firn_cpu_p2g(cpu);
        firn_cpu_grid(cpu);
        cr_assert_eq(firn_cpu_g2p(cpu), -1, "%s: the CPU state went non-finite", name);
        firn_cpu_unpermute(cpu);
    }
    cr_assert_eq(firn_cuda_download(gpu, &err), 0, "%s: firn_cuda_download: %s", name, err.msg);
    double vmax = 1.0;
    for (long long k = 0; k < 3LL * n; k++)
        vmax = fmax(vmax, fabs((double)cpu->p.v[k]));
    expect_close_floor(name, "x", gpu->p.x, cpu->p.x, 3LL * n, n, 0.0);
    expect_close_floor(name, "v", gpu->p.v, cpu->p.v, 3LL * n, n, 0.0);
    expect_close_floor(name, "C", gpu->p.C, cpu->p.C, 9LL * n, n, 4.0 * P->inv_dx * vmax);
    expect_close_floor(name, "F", gpu->p.F, cpu->p.F, 9LL * n, n, 0.0);
    expect_grid_close(name, cpu, gpu, vmax);
    free(want), free(cell), free(exact), free(order), free(start), free(end), free(seen);
    free(list);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

#endif

Test(gpu, binning_keeps_every_particle_and_bin, .timeout = 300)
{
    require_gpu();
#ifdef FIRN_WITH_CUDA
    const int cases[][2] = {{FIRN_P2G_BINNED, FIRN_GRID_DENSE},
                            {FIRN_P2G_WARP, FIRN_GRID_DENSE},
                            {FIRN_P2G_G2P2G, FIRN_GRID_DENSE},
                            {FIRN_P2G_BINNED, FIRN_GRID_SPARSE},
                            {FIRN_P2G_ORDERED, FIRN_GRID_DENSE}};
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (int place = 0; place < PLACE_COUNT; place++)
            binning_case(cases[c][0], cases[c][1], place);
#endif
}

/* Enumeration never fails without a GPU; with one it describes it. */
Test(gpu, device_describe)
{
    require_gpu();
    char buf[512];
    cr_expect_eq(firn_cuda_device_describe(0, buf, sizeof buf), 0, "describe: %s", buf);
    cr_expect(strstr(buf, "compute capability") != NULL, "describe: %s", buf);
    cr_expect_neq(firn_cuda_device_describe(firn_cuda_device_count(), buf, sizeof buf), 0,
                  "a device past the count is described as missing: %s", buf);
}

/* firn_world_memory on the GPU: the device figure is what the world
 * allocated - the CPU twin's estimate plus CUB's scratch (a few KiB) - and
 * the device's memory in use rises by it, up to cudaMalloc's rounding of
 * each of the world's ~10 allocations to 2 MiB pages. The small allocations
 * (materials, the non-finite word, the reduction and its scratch: under
 * 1 MiB together) may come from a pool the driver already counts, so only
 * the rest must show in the rise. The body (0.24 m box at y 0.2) lies clear
 * of the 2 dx wall margin. */
static void memory_case_dx(int p2g, float dx)
{
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SAND, 0.24f);
    firn_run_options run = run_p2g(FIRN_BACKEND_CPU, p2g);
    if (dx > 0.0f) {
        def.dx = dx;
        run.grid = FIRN_GRID_DENSE;
    }
    firn_world *cpu = make_world_run(&def, &run);
    size_t used0 = firn_cuda_used_bytes();
    run.backend = FIRN_BACKEND_CUDA;
    firn_world *gpu = make_world_run(&def, &run);
    double rise = (double)(firn_cuda_used_bytes() - used0);
    firn_memory mc, mg;
    firn_world_memory(cpu, &mc);
    firn_world_memory(gpu, &mg);
    cr_expect_geq(mg.device, mc.device, "GPU %.0f B, CPU twin's estimate %.0f B", mg.device,
                  mc.device);
    cr_expect_leq(mg.device, mc.device + 1048576.0, "GPU %.0f B, CPU twin's estimate %.0f B",
                  mg.device, mc.device);
    cr_expect_geq(rise, mg.device - 1048576.0, "device use rose by %.0f B, the world says %.0f B",
                  rise, mg.device);
    cr_expect_leq(rise, mg.device + 12.0 * 2097152.0,
                  "device use rose by %.0f B, the world says %.0f B", rise, mg.device);
    cr_expect_float_eq(mg.per_particle, mg.device / (double)firn_world_particle_count(gpu), 1e-6);
    firn_world_destroy(gpu);
    firn_world_destroy(cpu);
}

static void memory_case(int p2g) { memory_case_dx(p2g, 0.0f); }

/* The default P2G, and G2P2G with its second grid. */
Test(gpu, memory_figure_is_what_the_device_allocates, .timeout = 60)
{
    require_gpu();
    memory_case(FIRN_P2G_AUTO);
    memory_case(FIRN_P2G_G2P2G);
}

/* Binned P2G's counting sort on a dense grid of 129^3 nodes (33^3 bins of
 * 4^3 cells): its two per-cell arrays are 9 MiB each, so that an
 * allocation of another size shows in the device's memory beyond the
 * case's 24 MiB of page rounding (four times the size, as when the bins'
 * byte count was taken for their count, is 27 MiB more each). */
Test(gpu, memory_figure_holds_on_a_fine_dense_grid, .timeout = 120)
{
    require_gpu();
    memory_case_dx(FIRN_P2G_BINNED, 1.0f / 128.0f);
}

/* A NaN planted in one particle's C spreads through its 27 nodes to its
 * neighbours in the first substep. Both paths run 4 substeps in one call;
 * both must name substep 1, its time and the same (lowest) particle, though
 * the GPU only learns of it after the fourth. */
static void nonfinite_case(int p2g)
{
    firn_world *cpu, *gpu;
    twin_worlds_p2g(FIRN_MODEL_ELASTIC, 1, p2g, &cpu, &gpu);
    const int n = cpu->p.n, j = n / 2;
    cpu->p.C[4 * n + j] = NAN;
    gpu->p.C[4 * n + j] = NAN;
    firn_error err = {0};
    firn_cuda_free(gpu);
    cr_assert_eq(firn_cuda_init(gpu, &err), 0, "firn_cuda_init: %s", err.msg);

    firn_error ec = {0}, eg = {0};
    cr_assert_neq(firn_world_run_substeps(cpu, 4, 1e-4f, &ec), 0, "the CPU path ran through a NaN");
    cr_assert_neq(firn_world_run_substeps(gpu, 4, 1e-4f, &eg), 0, "the GPU ran through a NaN");
    cr_expect_eq(ec.code, FIRN_E_NUMERIC, "%s", ec.msg);
    cr_expect_eq(eg.code, FIRN_E_NUMERIC, "%s", eg.msg);
    cr_expect(strstr(ec.msg, "substep 1)") != NULL, "CPU: %s", ec.msg);
    cr_expect(strstr(eg.msg, "substep 1; the GPU ran on to substep 4)") != NULL, "GPU: %s", eg.msg);
    const char *pc = strstr(ec.msg, "particle "), *pg = strstr(eg.msg, "particle ");
    cr_assert(pc && pg, "CPU: %s\nGPU: %s", ec.msg, eg.msg);
    cr_expect_eq(atoi(pc + 9), atoi(pg + 9), "CPU: %s\nGPU: %s", ec.msg, eg.msg);
    cr_expect_leq(atoi(pc + 9), j, "the planted particle %d or a lower neighbour: %s", j, ec.msg);
    /* The time given is substep 1's on both, not the end of the GPU's call. */
    const char *tc = strstr(ec.msg, "(t = "), *tg = strstr(eg.msg, "(t = ");
    cr_assert(tc && tg, "CPU: %s\nGPU: %s", ec.msg, eg.msg);
    cr_expect_eq(strtod(tc + 5, NULL), strtod(tg + 5, NULL), "CPU: %s\nGPU: %s", ec.msg, eg.msg);
    firn_world_destroy(gpu);
    firn_world_destroy(cpu);
}

/* Binned, and G2P2G, whose substep-1 G2P runs fused into substep 2's P2G. */
Test(gpu, nonfinite_report_names_the_substep_and_particle_of_the_cpu, .timeout = 60)
{
    require_gpu();
    nonfinite_case(FIRN_P2G_BINNED);
    nonfinite_case(FIRN_P2G_G2P2G);
}

#ifdef FIRN_WITH_CUDA
/* The physical reorder (FIRN_P2G_REORDER=1: the device particle arrays
 * moved into the bin order after every substep's binning). Sand with a
 * random state (so that the scene's order is far from the bin order) runs
 * 8 substeps in two calls of 4 without and with it: the particles the
 * host gets back come in the scene's order, x, v and F within the
 * compare tolerance of the run without (binned P2G's atomics make any two
 * runs differ by rounding: the reorder changes the order of the sums
 * within a cell; C, the grid velocity's gradient, amplifies that rounding
 * by 4 / dx and ends past the tolerance within 14 substeps, so
 * it is left out, as the sparse-grid test leaves it out), while on the device most particles sit in
 * another slot than their own (the arrays did move). With it, a checkpoint written after the
 * first call and resumed runs the second call to the same state. */
static void reorder_case(int p2g)
{
    firn_scene_def def;
    firn_error err = {0};
    small_scene(&def, FIRN_MODEL_SAND, 0.15f);
    const firn_run_options run = run_p2g(FIRN_BACKEND_CUDA, p2g);
    char dir[64], path[128];
    test_mkdtemp(dir, sizeof dir, "reorder");
    snprintf(path, sizeof path, "%s/at4.firn", dir);
    firn_world *w[3];
    for (int r = 0; r < 2; r++) {
        if (r)
            cr_assert_eq(setenv("FIRN_P2G_REORDER", "1", 1), 0);
        else
            unsetenv("FIRN_P2G_REORDER");
        w[r] = make_world_run(&def, &run);
        cr_assert_eq(firn_device_reorder(w[r]), r, "the reorder is not %s", r ? "on" : "off");
        randomise(&w[r]->p, &w[r]->params, FIRN_MODEL_SAND, 0, 0x0de7ULL);
        firn_cuda_free(w[r]);
        cr_assert_eq(firn_cuda_init(w[r], &err), 0, "firn_cuda_init: %s", err.msg);
        cr_assert_eq(firn_world_run_substeps(w[r], 4, 1e-4f, &err), 0, "%s", err.msg);
        if (r) {
            cr_assert_eq(firn_world_save(w[r], path, &err), 0, "%s", err.msg);
            w[2] = firn_world_load_with(&def, &run, path, &err);
            cr_assert(w[2], "firn_world_load: %s", err.msg);
            cr_assert_eq(firn_world_run_substeps(w[2], 4, 1e-4f, &err), 0, "%s", err.msg);
            cr_assert_eq(firn_cuda_download(w[2], &err), 0, "%s", err.msg);
        }
        cr_assert_eq(firn_world_run_substeps(w[r], 4, 1e-4f, &err), 0, "%s", err.msg);
        cr_assert_eq(firn_cuda_download(w[r], &err), 0, "%s", err.msg);
    }
    unsetenv("FIRN_P2G_REORDER");
    const int n = w[0]->p.n;
    /* The arrays moved: slot k holds another particle than k for most k
     * (id, a permutation), and the bin order the tests read (by scene
     * index, firn_cuda_download_bins) holds every particle once. */
    int *id = malloc((size_t)n * sizeof(int)), *seen = calloc((size_t)n, sizeof(int));
    cr_assert(id && seen);
    cr_assert_eq(firn_cuda_download_ids(w[0], id, &err), -1, "the run without has ids");
    cr_assert_eq(firn_cuda_download_ids(w[1], id, &err), 0, "%s", err.msg);
    int moved = 0, bad_perm = 0;
    for (int k = 0; k < n; k++) {
        moved += id[k] != k;
        bad_perm += id[k] < 0 || id[k] >= n || seen[id[k]]++;
    }
    cr_expect_eq(bad_perm, 0, "%d ids out of range or repeated", bad_perm);
    cr_expect_gt(moved, n / 2, "only %d of %d particles moved", moved, n);
    free(id);
    free(seen);
    static const char *const runs[] = {"reorder", "reorder, resumed"};
    for (int r = 1; r < 3; r++) {
        const firn_particles *a = &w[0]->p, *b = &w[r]->p;
        expect_close(runs[r - 1], "x", b->x, a->x, 3 * (long long)n, n);
        expect_close(runs[r - 1], "v", b->v, a->v, 3 * (long long)n, n);
        expect_close(runs[r - 1], "F", b->F, a->F, 9 * (long long)n, n);
        cr_expect(!memcmp(a->vol, b->vol, (size_t)n * sizeof(float)), "%s: vol moved", runs[r - 1]);
    }
    for (int r = 0; r < 3; r++)
        firn_world_destroy(w[r]);
    test_rmdir(dir);
}

Test(gpu, reorder_keeps_the_scene_order_and_resumes, .timeout = 300)
{
    require_gpu();
    reorder_case(FIRN_P2G_BINNED);
    reorder_case(FIRN_P2G_G2P2G);
}
#endif

/* With the reorder on, the non-finite report names the particle's index in
 * the scene's order (the CPU's), and the memory figure counts the second
 * particle block and the index arrays; a value of FIRN_P2G_REORDER that is
 * not a count is refused. */
Test(gpu, reorder_reports_scene_indices_and_its_memory, .timeout = 120)
{
    require_gpu();
    cr_assert_eq(setenv("FIRN_P2G_REORDER", "1", 1), 0);
    nonfinite_case(FIRN_P2G_BINNED);
    nonfinite_case(FIRN_P2G_G2P2G);
    memory_case(FIRN_P2G_BINNED);
    /* A value that is not a substep count is refused by name. */
    cr_assert_eq(setenv("FIRN_P2G_REORDER", "often", 1), 0);
    firn_scene_def def;
    small_scene(&def, FIRN_MODEL_SAND, 0.15f);
    const firn_run_options run = run_p2g(FIRN_BACKEND_CUDA, FIRN_P2G_BINNED);
    firn_error err = {0};
    firn_world *w = firn_world_create_with(&def, &run, &err);
    cr_expect_null(w, "FIRN_P2G_REORDER=often was taken");
    cr_expect_eq(err.code, FIRN_E_USAGE, "%s", err.msg);
    cr_expect(strstr(err.msg, "FIRN_P2G_REORDER=often") != NULL, "%s", err.msg);
    if (w)
        firn_world_destroy(w);
    unsetenv("FIRN_P2G_REORDER");
}

#ifdef FIRN_EMU_BUILD
/* Emulated runtime only (FIRN_EMU_FAULT, docs/EMULATION.md): a device fault
 * in the third g2p of a call - sticky, as an illegal address is on a GPU -
 * surfaces as a device error naming CUDA's message, at that call and every
 * later one, and the frame's particles are never reported as stepped. */
Test(gpu, a_device_fault_is_reported_and_sticks, .timeout = 60)
{
    require_gpu();
    firn_world *cpu, *gpu;
    twin_worlds(FIRN_MODEL_SAND, 0, &cpu, &gpu);
    setenv("FIRN_EMU_FAULT", "g2p:3", 1);
    firn_error err = {0};
    cr_assert_neq(firn_world_run_substeps(gpu, 4, 1e-4f, &err), 0, "a faulted call succeeded");
    cr_expect_eq(err.code, FIRN_E_DEVICE, "%s", err.msg);
    cr_expect(strstr(err.msg, "an illegal memory access was encountered") != NULL, "%s", err.msg);
    firn_error again = {0};
    cr_expect_neq(firn_world_run_substeps(gpu, 1, 1e-4f, &again), 0, "a call after the fault ran");
    cr_expect_eq(again.code, FIRN_E_DEVICE, "%s", again.msg);
    firn_frame_stats s;
    cr_expect_neq(firn_world_step_frame(gpu, &s, &again), 0, "a frame after the fault ran");
    unsetenv("FIRN_EMU_FAULT");
    firn_world_destroy(gpu);
    firn_world_destroy(cpu);
}

/* FIRN_DEBUG_SYNC=1 (the environment, read once per process, so through the
 * command line): a run synchronises after every launch, so a fault in the
 * fourth grid_update is reported at that kernel, by name; without it the
 * report can only say it came from some kernel of the stream. */
Test(gpu, debug_sync_from_the_environment_names_the_faulting_kernel, .timeout = 120)
{
    require_gpu();
    char dir[64], out[8192];
    test_mkdtemp(dir, sizeof dir, "debugsync");
    char args[512];
    snprintf(args, sizeof args,
             "run scenes/sand_column.json --backend cuda --frames 1 --quiet --out %s/run", dir);
    const char *bin = getenv("FIRN_BIN") ? getenv("FIRN_BIN") : "build/firn";
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "env FIRN_EMU_FAULT=grid_update:4 FIRN_DEBUG_SYNC=1 %s %s", bin,
             args);
    int rc = test_run(out, sizeof out, cmd);
    cr_expect_eq(rc, 6, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "kernel grid_update (synchronised by FIRN_DEBUG_SYNC)") != NULL, "%s",
              out);
    snprintf(cmd, sizeof cmd, "env FIRN_EMU_FAULT=grid_update:4 %s %s", bin, args);
    rc = test_run(out, sizeof out, cmd);
    cr_expect_eq(rc, 6, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "synchronised by FIRN_DEBUG_SYNC") == NULL, "%s", out);
    test_rmdir(dir);
}
#endif

/* firn compare's check from a perturbed state covers every solver of a
 * scene: on one with MPM, SPH, PBD (cloth and liquid) and FEM bodies, the
 * perturbed substep's report lists each solver's fields (MPM x, v, C, F;
 * SPH x, v, rho, p; PBD and FEM x, v), every one within the tolerance, and
 * the compare passes. */
Test(gpu, compare_checks_a_perturbed_state_for_every_solver, .timeout = 600)
{
    require_gpu();
    char dir[64], path[128], out[32768];
    test_mkdtemp(dir, sizeof dir, "cmpall");
    snprintf(path, sizeof path, "%s/all.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("{\"domain\": {\"lower\": [0, 0, 0], \"upper\": [0.4, 0.3, 0.2], \"dx\": 0.025},"
          " \"time\": {\"frame_dt\": 0.005, \"frames\": 1},"
          " \"sph\": {\"particle_size\": 0.025}, \"pbd\": {\"particle_size\": 0.025},"
          " \"materials\": {\"jelly\": {\"model\": \"elastic\", \"E\": 1e5},"
          "   \"water\": {\"model\": \"sph_liquid\", \"density\": 1000},"
          "   \"pwater\": {\"model\": \"pbd_liquid\", \"density\": 1000},"
          "   \"cloth\": {\"model\": \"pbd_cloth\", \"density\": 4},"
          "   \"rubber\": {\"model\": \"fem_stable_neohookean\", \"E\": 5e4, \"nu\": 0.3,"
          "     \"density\": 500}},"
          " \"bodies\": ["
          "  {\"material\": \"water\", \"solver\": \"sph\", \"shape\": {\"type\": \"box\","
          "    \"lower\": [0.05, 0.05, 0.05], \"upper\": [0.15, 0.1, 0.15]}},"
          "  {\"material\": \"pwater\", \"solver\": \"pbd\", \"shape\": {\"type\": \"box\","
          "    \"lower\": [0.25, 0.05, 0.05], \"upper\": [0.35, 0.1, 0.15]}},"
          "  {\"material\": \"cloth\", \"solver\": \"pbd\", \"shape\": {\"type\": \"cloth_rect\","
          "    \"center\": [0.3, 0.22, 0.1], \"size\": [0.1, 0.1], \"resolution\": [5, 5],"
          "    \"normal\": \"y\"}},"
          "  {\"material\": \"rubber\", \"solver\": \"fem\", \"shape\": {\"type\": \"box\","
          "    \"center\": [0.1, 0.2, 0.1], \"size\": [0.06, 0.06, 0.06], \"cells\": [2, 2, 2]}},"
          "  {\"material\": \"jelly\", \"shape\": {\"type\": \"box\", \"center\": [0.2, 0.2, 0.1],"
          "    \"size\": [0.05, 0.05, 0.05]}}]}",
          f);
    fclose(f);
    char args[256];
    snprintf(args, sizeof args, "compare %s --frames 1", path);
    int rc = test_run_firn(out, sizeof out, NULL, args);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    const char *pert = strstr(out, "from a perturbed state");
    cr_assert(pert, "no perturbed check:\n%s", out);
    static const char *const fields[] = {"x ",      "v ",    "C ",    "F ",    "sph x", "sph v",
                                         "sph rho", "sph p", "pbd x", "pbd v", "fem x", "fem v"};
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        char want[32];
        snprintf(want, sizeof want, "\n  %s", fields[k]);
        const char *line = strstr(pert, want);
        cr_assert(line, "the perturbed check has no '%s' line:\n%s", fields[k], pert);
        const char *end = strchr(line + 1, '\n');
        char row[256] = {0};
        cr_assert(end && end - line < (long)sizeof row, "'%s': no whole line:\n%s", fields[k],
                  pert);
        memcpy(row, line, (size_t)(end - line));
        cr_assert(strstr(row, " ok"), "'%s' is not within the tolerance:\n%s", fields[k], pert);
    }
    cr_assert(strstr(out, "compare: PASS"), "%s", out);
    test_rmdir(dir);
}

/* firn_compare_backends, the library call behind firn compare: on a sand
 * block with a rigid body and a tool, the CPU and CUDA paths agree within
 * every tolerance; the report's stages come in order (first substep,
 * perturbed substep, frames), each entry's rel is its max_abs over its
 * scale, a statistic's max_abs is |gpu - cpu|; and `firn compare` prints
 * the report's entries, in its order, then PASS. */
Test(gpu, compare_backends_report_is_what_firn_compare_prints, .timeout = 600)
{
    require_gpu();
    static const char scene[] =
        "{\"domain\": {\"lower\": [0, 0, 0], \"upper\": [0.3, 0.3, 0.3], \"dx\": 0.03},"
        " \"time\": {\"frame_dt\": 0.005, \"frames\": 1},"
        " \"materials\": {\"sand\": {\"model\": \"sand\", \"E\": 3.5e5, \"density\": 1600}},"
        " \"bodies\": [{\"material\": \"sand\", \"shape\": {\"type\": \"box\","
        "   \"center\": [0.15, 0.12, 0.15], \"size\": [0.1, 0.08, 0.1]}}],"
        " \"rigids\": [{\"name\": \"crate\", \"motion\": \"dynamic\", \"density\": 500,"
        "   \"shape\": {\"type\": \"box\", \"center\": [0.08, 0.22, 0.08],"
        "   \"size\": [0.04, 0.04, 0.04]}}],"
        " \"tools\": [{\"name\": \"plate\", \"shape\": {\"type\": \"box\","
        "   \"center\": [0.15, 0.2, 0.15], \"size\": [0.06, 0.01, 0.06]},"
        "   \"velocity\": [0, -0.5, 0], \"softness\": 0.002}]}";
    char dir[64], path[128], args[256], out[32768];
    test_mkdtemp(dir, sizeof dir, "cmplib");
    snprintf(path, sizeof path, "%s/s.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(scene, f);
    fclose(f);
    firn_scene_def def;
    firn_error err;
    cr_assert_eq(firn_scene_load_json(path, &def, &err), 0, "%s", err.msg);
    firn_compare_report r;
    cr_assert_eq(firn_compare_backends(&def, 1, &r, &err), 0, "%s", err.msg);
    cr_assert(r.ok && r.frames == 1 && r.particles > 0 && r.dt > 0.0f);
    static const char *const want[] = {"x", "v", "C", "F", "Jp", "damage", "grid mass", "grid vel"};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int found = 0;
        for (int e = 0; e < r.n_entries; e++)
            found |=
                r.entries[e].stage == FIRN_COMPARE_SUBSTEP && !strcmp(r.entries[e].name, want[k]);
        cr_assert(found, "no first-substep entry '%s'", want[k]);
    }
    int stage = FIRN_COMPARE_SUBSTEP, stats = 0;
    for (int e = 0; e < r.n_entries; e++) {
        const firn_compare_entry *c = &r.entries[e];
        cr_assert(c->ok && (int)c->stage >= stage, "%s", c->name);
        stage = (int)c->stage;
        cr_assert(c->rel <= c->tolerance, "%s", c->name);
        const double rel = c->scale > 0.0 ? c->max_abs / c->scale : c->max_abs;
        cr_assert(fabs(c->rel - rel) <= 1e-12 * c->rel, "%s", c->name);
        if (c->statistic) {
            stats++;
            cr_assert(c->stage == FIRN_COMPARE_FRAMES && c->max_abs == fabs(c->gpu - c->cpu), "%s",
                      c->name);
        }
    }
    cr_assert_eq(stage, FIRN_COMPARE_FRAMES);
    cr_assert(stats > 0);
    snprintf(args, sizeof args, "compare %s --frames 1", path);
    int rc = test_run_firn(out, sizeof out, NULL, args);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    const char *at = out;
    for (int e = 0; e < r.n_entries; e++) {
        char line[64];
        snprintf(line, sizeof line, "\n  %s ", r.entries[e].name);
        const char *next = strstr(at, line);
        cr_assert(next, "firn compare does not print '%s' after the entries before it:\n%s",
                  r.entries[e].name, out);
        at = next + 1;
    }
    cr_assert(strstr(at, "compare: PASS"), "%s", out);
    firn_compare_report_free(&r);
    test_rmdir(dir);
}

/* The CUDA path queues the same list of phases (host/coupler.c
 * firn_coupler_run) from each solver's CUDA table, and its events end the
 * same profile slots: a world with every solver and pair times each of
 * its phases, and they split the call's time. */
Test(gpu, every_solver_phase_is_timed_on_the_gpu, .timeout = 300)
{
    require_gpu();
    firn_world *w = test_world_json_on(all_solvers_json, "all_solvers.json", FIRN_BACKEND_CUDA);
    firn_error err;
    cr_assert_eq(firn_world_run_substeps(w, 4, 1e-4f, &err), 0, "%s", err.msg);
    const firn_profile p = firn_world_profile(w);
    all_solvers_check_profile(&p, "CUDA", 1);
    firn_world_destroy(w);
}
