/* test_gpu_pbd.c - the PBD solver on the CUDA path (kernels/pbd.cu, the
 * PBD-rigid kernel of kernels/coupling.cu) against its CPU twin
 * (host/pbd_cpu.c, host/coupler.c).
 *
 * Kernel level: one substep of a pinned cloth (40 x 40 vertices, bending
 * acting) and a block of free particles from a perturbed state, every
 * field the substep writes (x, v, x0, and both kinds of lambda) element by
 * element. A sweep is one launch per colour in the CPU's colour order, and
 * no two constraints of a colour share a particle, so both paths apply the
 * same corrections in the same order: the only sources of difference are
 * nvcc's FMA contraction and the device's atan2f, whose last bits may
 * differ from glibc's. The tolerance is firn compare's, |gpu - cpu| <= 1e-5
 * scale (a few float ulps of the field's largest CPU magnitude), plus
 * 1e-4 |cpu| for elements far below the scale whose own rounding is then
 * what matters (a lambda is accumulated over 4 sweeps, each a quotient of
 * a constraint error that is itself a difference of nearby lengths). The
 * emulated runtime does not contract to FMA and calls the host's libm, so
 * there the two agree bitwise, which is checked too.
 *
 * The particle passes (include/firn_pbf.h: the PBF density kernels, the
 * viscosity, contact) on a squeezed liquid block beside free particles
 * above a cloth, each kernel alone by its iteration count and all over
 * ten substeps, with the same tolerance (the sums run in the neighbour
 * grid's one order on both paths).
 *
 * Scene level: the MPM-PBD pair on scenes/pbd_cloth_snowball.json with the
 * snowball on the cloth; 10 substeps of scenes/pbd_cloth_sphere.json with the ball
 * dynamic and the cloth thrown onto it (PBD-rigid's reaction summed in
 * double atomics on the device: the body's state to 1e-5 relative);
 * pinned vertices bitwise still on the GPU; a non-finite vertex reported as
 * the CPU reports it; a checkpoint of the GPU's state; the memory
 * figures. Every test skips, and only,
 * without a usable GPU (real or emulated). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "gpu_compare.h"
#include "gpu_skip.h"
#include "pbd.h"
#include "test_util.h"
#include "world.h"

/* ---- worlds --------------------------------------------------------------- */

/* A 0.8 m cloth of 40 x 40 vertices (normal y, centred at y = 0.5) with
 * its x = -0.4 edge pinned by a box and its far corner by index, and a
 * 0.1 m block of free particles (p = 0.02 m: 5^3) below it, in [-1, 1]^3;
 * 4 stretch and 2 bending iterations, bending compliance 0.1 (it acts
 * within one substep; at 1e-3 and below, the hinges beside the pinned edge
 * overshoot and the perturbed state below blows up within the substep on
 * either path, worse with more bending iterations). */
static void cloth_scene(firn_scene_def *def)
{
    firn_scene_default(def);
    for (int a = 0; a < 3; a++)
        def->lower[a] = -1.0f, def->upper[a] = 1.0f;
    def->dx = 0.1f; /* the MPM grid is unused */
    def->write_ply = def->write_preview = 0;
    def->pbd.particle_size = 0.02f;
    def->pbd.stretch_iterations = 4;
    def->pbd.bending_iterations = 2;
    def->n_materials = 2;
    firn_material_default(&def->materials[0], FIRN_MODEL_PBD_CLOTH);
    snprintf(def->materials[0].name, FIRN_NAME_MAX, "cloth");
    def->materials[0].bending_compliance = 0.1f;
    def->materials[0].air_resistance = 0.05f;
    firn_material_default(&def->materials[1], FIRN_MODEL_PBD_PARTICLE);
    snprintf(def->materials[1].name, FIRN_NAME_MAX, "grains");
    def->n_bodies = 2;
    firn_body_def *b = &def->bodies[0];
    firn_body_default(b);
    b->material = 0;
    b->solver = FIRN_SOLVER_KIND_PBD;
    b->shape.type = FIRN_SHAPE_CLOTH_RECT;
    b->shape.axis = 1;
    b->shape.resolution[0] = b->shape.resolution[1] = 40;
    b->shape.size[0] = b->shape.size[1] = 0.8f;
    memcpy(b->shape.center, (const float[3]){0.0f, 0.5f, 0.0f}, 3 * sizeof(float));
    b->pin_box = 1;
    memcpy(b->pin_lower, (const float[3]){-0.401f, 0.0f, -1.0f}, 3 * sizeof(float));
    memcpy(b->pin_upper, (const float[3]){-0.399f, 1.0f, 1.0f}, 3 * sizeof(float));
    b->n_pins = 1;
    b->pins[0] = 40 * 40 - 1;
    b = &def->bodies[1];
    firn_body_default(b);
    b->material = 1;
    b->solver = FIRN_SOLVER_KIND_PBD;
    b->shape.type = FIRN_SHAPE_BOX;
    memcpy(b->shape.center, (const float[3]){0.0f, -0.5f, 0.0f}, 3 * sizeof(float));
    memcpy(b->shape.size, (const float[3]){0.1f, 0.1f, 0.1f}, 3 * sizeof(float));
}

/* Every particle moved by up to 0.1 of the cloth's vertex spacing per axis
 * (pinned ones too: they stay wherever they are; hinge angles of order 0.2
 * rad), and every free one given a random velocity up to 1 m/s per axis. */
static void perturb(firn_pbd *S, uint64_t seed)
{
    const int n = S->n;
    const float h = 0.1f * 0.8f / 39.0f;
    rng_state = seed;
    for (int i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            S->s.x[a * n + i] += frand(-h, h);
            S->s.v[a * n + i] = S->s.w[i] > 0.0f ? frand(-1.0f, 1.0f) : 0.0f;
        }
}

/* A CPU world and a CUDA world holding the same perturbed PBD state; the
 * CUDA world's device copy is rebuilt from its host mirror. */
static void twin_worlds(firn_world **cpu, firn_world **gpu)
{
    firn_scene_def def;
    firn_error err = {0};
    cloth_scene(&def);
    *cpu = make_world(&def, FIRN_BACKEND_CPU);
    *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    firn_pbd *c = &(*cpu)->pbd, *g = &(*gpu)->pbd;
    cr_assert_eq(c->n, g->n, "both worlds build the same particles");
    cr_assert_eq(c->n, 40 * 40 + 125, "%d PBD particles", c->n);
    cr_assert_eq(c->pinned, 41, "%lld pinned (the box's edge of 40 and one corner)", c->pinned);
    perturb(c, 0x9bd5eedULL);
    const size_t n3 = 3 * (size_t)c->n * sizeof(float);
    memcpy(g->s.x, c->s.x, n3);
    memcpy(g->s.v, c->s.v, n3);
    memcpy(g->s.x0, c->s.x0, n3);
    firn_cuda_pbd_free(*gpu);
    cr_assert_eq(firn_cuda_pbd_init(*gpu, &err), 0, "firn_cuda_pbd_init: %s", err.msg);
}

/* ---- comparison ----------------------------------------------------------- */

static void expect_field(const char *label, const char *what, const float *gpu, const float *cpu,
                         long long count, long long n)
{
    expect_close(label, what, gpu, cpu, count, n);
    expect_bitwise_on_emulation(label, what, gpu, cpu, count);
}

static float max_abs(const float *a, long long count)
{
    float m = 0.0f;
    for (long long k = 0; k < count; k++)
        m = fmaxf(m, fabsf(a[k]));
    return m;
}

/* ---- one substep from a perturbed state ----------------------------------- */

Test(gpu_pbd, cloth_substep_matches_cpu_field_by_field, .timeout = 300)
{
    require_gpu();
    firn_world *cpu, *gpu;
    twin_worlds(&cpu, &gpu);
    const float dt = 1e-3f;
    firn_error err = {0};
    cr_assert_eq(firn_world_substep(cpu, dt, &err), 0, "CPU substep: %s", err.msg);
    cr_assert_eq(firn_world_substep(gpu, dt, &err), 0, "GPU substep: %s", err.msg);
    cr_assert_eq(firn_cuda_pbd_download(gpu, &err), 0, "download: %s", err.msg);
    const firn_pbd *c = &cpu->pbd, *g = &gpu->pbd;
    const long long n = c->n;
    /* Both kinds of constraint acted, over several colours. */
    cr_assert_gt(c->stretch.colours, 4, "%d stretch colours", c->stretch.colours);
    cr_assert_gt(c->bend.colours, 4, "%d bending colours", c->bend.colours);
    cr_expect_gt(max_abs(c->stretch.lambda, c->stretch.n), 0.0f, "no stretch correction");
    cr_expect_gt(max_abs(c->bend.lambda, c->bend.n), 0.0f, "no bending correction");
    cr_expect_lt(max_abs(c->s.v, 3 * n), 20.0f, "the perturbed state blew up (|v| %g m/s)",
                 max_abs(c->s.v, 3 * n));
    expect_field("cloth", "x", g->s.x, c->s.x, 3 * n, n);
    expect_field("cloth", "v", g->s.v, c->s.v, 3 * n, n);
    expect_field("cloth", "x0", g->s.x0, c->s.x0, 3 * n, n);
    expect_field("cloth", "stretch lambda", g->stretch.lambda, c->stretch.lambda, c->stretch.n,
                 c->stretch.n);
    expect_field("cloth", "bend lambda", g->bend.lambda, c->bend.lambda, c->bend.n, c->bend.n);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* ---- liquid, free particles and contact -------------------------------------- */

/* A 0.12 m block of pbd_liquid (p = 0.02 m: 6^3) squeezed to 0.85 of its
 * spacing, a 0.06 m block of free particles beside it (3^3) and a 10 x 10
 * cloth pinned at two corners below it, every particle then moved by up to
 * 0.2 p per axis and given a random velocity up to 0.5 m/s: liquid-grain,
 * liquid-cloth and grain-grain pairs closer than p. dens and visc set the
 * iteration counts, so that each kernel of the particle passes can be held
 * to its CPU twin alone (dens 1, visc 0: pbf_lambda and pbf_delta; dens 0,
 * visc 1: pbf_viscosity; 0 and 0: pbd_contact alone), and all together. */
static void liquid_twins(int dens, int visc, firn_world **cpu, firn_world **gpu)
{
    firn_scene_def def;
    firn_error err = {0};
    firn_scene_default(&def);
    for (int a = 0; a < 3; a++)
        def.lower[a] = -1.0f, def.upper[a] = 1.0f;
    def.dx = 0.1f;
    def.write_ply = def.write_preview = 0;
    def.pbd.particle_size = 0.02f;
    def.pbd.density_iterations = dens;
    def.pbd.viscosity_iterations = visc;
    def.n_materials = 3;
    firn_material_default(&def.materials[0], FIRN_MODEL_PBD_LIQUID);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "water");
    def.materials[0].viscosity_relaxation = 0.1f;
    firn_material_default(&def.materials[1], FIRN_MODEL_PBD_PARTICLE);
    snprintf(def.materials[1].name, FIRN_NAME_MAX, "grains");
    firn_material_default(&def.materials[2], FIRN_MODEL_PBD_CLOTH);
    snprintf(def.materials[2].name, FIRN_NAME_MAX, "cloth");
    def.n_bodies = 3;
    const float centre[3][3] = {{0, 0, 0}, {0.08f, 0, 0}, {0, -0.06f, 0}};
    /* The liquid: 6 spacings of its rest lattice (firn_pbf_rest_spacing,
     * p since the kernel is scaled to make that lattice rest density). */
    const float size[2] = {6.0f * 0.02f, 0.06f};
    for (int k = 0; k < 3; k++) {
        firn_body_def *b = &def.bodies[k];
        firn_body_default(b);
        b->material = k;
        b->solver = FIRN_SOLVER_KIND_PBD;
        memcpy(b->shape.center, centre[k], 3 * sizeof(float));
        if (k < 2) {
            b->shape.type = FIRN_SHAPE_BOX;
            b->shape.size[0] = b->shape.size[1] = b->shape.size[2] = size[k];
        } else {
            b->shape.type = FIRN_SHAPE_CLOTH_RECT;
            b->shape.axis = 1;
            b->shape.resolution[0] = b->shape.resolution[1] = 10;
            b->shape.size[0] = b->shape.size[1] = 0.18f;
            b->n_pins = 2;
            b->pins[0] = 0, b->pins[1] = 99;
        }
    }
    *cpu = make_world(&def, FIRN_BACKEND_CPU);
    *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    firn_pbd *c = &(*cpu)->pbd, *g = &(*gpu)->pbd;
    const int n = c->n, liquid = c->body_first[1];
    cr_assert_eq(liquid, 216, "%d liquid particles", liquid);
    cr_assert_eq(n, 216 + 27 + 100, "%d PBD particles", n);
    cr_assert(c->particle_passes && c->G.cells > 0, "the particle passes run");
    rng_state = 0x11c0ffeeULL;
    for (int i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            float *x = &c->s.x[a * n + i];
            if (i < liquid)
                *x *= 0.85f;
            *x += frand(-0.004f, 0.004f);
            c->s.x0[a * n + i] = *x;
            c->s.v[a * n + i] = c->s.w[i] > 0.0f ? frand(-0.5f, 0.5f) : 0.0f;
        }
    const size_t n3 = 3 * (size_t)n * sizeof(float);
    memcpy(g->s.x, c->s.x, n3);
    memcpy(g->s.v, c->s.v, n3);
    memcpy(g->s.x0, c->s.x0, n3);
    firn_cuda_pbd_free(*gpu);
    cr_assert_eq(firn_cuda_pbd_init(*gpu, &err), 0, "firn_cuda_pbd_init: %s", err.msg);
}

/* One substep of liquid_twins's state on both paths, every field the
 * particle passes write, element by element (the tolerance of
 * cloth_substep_matches_cpu_field_by_field; bitwise on the emulated
 * runtime). */
static void liquid_substep_matches(int dens, int visc, const char *label)
{
    firn_world *cpu, *gpu;
    liquid_twins(dens, visc, &cpu, &gpu);
    const float dt = 1e-3f;
    firn_error err = {0};
    const firn_pbd *c = &cpu->pbd, *g = &gpu->pbd;
    const long long n = c->n;
    cr_assert_eq(firn_world_substep(cpu, dt, &err), 0, "CPU substep: %s", err.msg);
    cr_assert_eq(firn_world_substep(gpu, dt, &err), 0, "GPU substep: %s", err.msg);
    cr_assert_eq(firn_cuda_pbd_download(gpu, &err), 0, "download: %s", err.msg);
    /* The passes acted: the squeezed liquid was compressed (its density
     * above rest) and every particle moved off its ballistic step. */
    if (dens > 0) {
        cr_expect_gt(max_abs(c->s.rho, c->body_first[1]), 1100.0f, "the liquid was compressed");
        cr_expect_gt(max_abs(c->s.lambda, n), 0.0f, "no density correction");
        expect_field(label, "rho", g->s.rho, c->s.rho, n, n);
    }
    cr_expect_lt(max_abs(c->s.v, 3 * n), 20.0f, "the state blew up (|v| %g m/s)",
                 max_abs(c->s.v, 3 * n));
    expect_field(label, "x", g->s.x, c->s.x, 3 * n, n);
    expect_field(label, "v", g->s.v, c->s.v, 3 * n, n);
    expect_field(label, "x0", g->s.x0, c->s.x0, 3 * n, n);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

Test(gpu_pbd, pbf_density_kernels_match_cpu, .timeout = 300)
{
    require_gpu();
    liquid_substep_matches(1, 0, "density");
}

Test(gpu_pbd, pbf_viscosity_kernel_matches_cpu, .timeout = 300)
{
    require_gpu();
    liquid_substep_matches(0, 1, "viscosity");
}

Test(gpu_pbd, contact_kernel_matches_cpu, .timeout = 300)
{
    require_gpu();
    liquid_substep_matches(0, 0, "contact");
}

Test(gpu_pbd, all_particle_passes_over_ten_substeps_match_cpu, .timeout = 300)
{
    require_gpu();
    firn_world *cpu, *gpu;
    liquid_twins(2, 2, &cpu, &gpu);
    firn_error err = {0};
    cr_assert_eq(firn_world_run_substeps(cpu, 10, 1e-3f, &err), 0, "CPU: %s", err.msg);
    cr_assert_eq(firn_world_run_substeps(gpu, 10, 1e-3f, &err), 0, "GPU: %s", err.msg);
    cr_assert_eq(firn_cuda_pbd_download(gpu, &err), 0, "download: %s", err.msg);
    const firn_pbd *c = &cpu->pbd, *g = &gpu->pbd;
    const long long n = c->n;
    expect_field("ten substeps", "x", g->s.x, c->s.x, 3 * n, n);
    expect_field("ten substeps", "v", g->s.v, c->s.v, 3 * n, n);
    expect_field("ten substeps", "rho", g->s.rho, c->s.rho, n, n);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* ---- PBD-rigid ------------------------------------------------------------- */

/* scenes/pbd_cloth_sphere.json with the ball dynamic and the cloth lowered
 * to 5 mm above it (inside the contact distance p/2 = 1 cm) and thrown down
 * at 1 m/s, 10 substeps of the first frame's step: the PBD particles
 * element by element as above, and, as PBD-rigid's reactions are double
 * atomics on the device (another order than the CPU's chunks), the ball's
 * velocity to 1e-5 relative and its pending force to 1e-4. The pair must
 * have acted: the ball's velocity differs from a CPU run without it. */
Test(gpu_pbd, cloth_on_a_dynamic_ball_matches_cpu, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    firn_error err = {0};
    cr_assert_eq(firn_scene_load_json("scenes/pbd_cloth_sphere.json", &def, &err), 0, "%s",
                 err.msg);
    def.write_ply = def.write_preview = 0;
    cr_assert_eq(def.n_rigids, 1);
    def.rigids[0].motion = FIRN_RIGID_DYNAMIC;
    def.bodies[0].shape.center[1] = 0.555f;
    def.bodies[0].velocity[1] = -1.0f;
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    def.coupling.pbd_rigid = 0;
    firn_world *off = make_world(&def, FIRN_BACKEND_CPU);
    float dt;
    int nsub;
    cr_assert_eq(firn_world_next_frame_step(cpu, &dt, &nsub, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_run_substeps(cpu, 10, dt, &err), 0, "CPU: %s", err.msg);
    cr_assert_eq(firn_world_run_substeps(gpu, 10, dt, &err), 0, "GPU: %s", err.msg);
    cr_assert_eq(firn_world_run_substeps(off, 10, dt, &err), 0, "CPU, pair off: %s", err.msg);
    firn_frame_stats sc, sg, so;
    cr_assert_eq(firn_world_stats(cpu, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(gpu, &sg, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(off, &so, &err), 0, "%s", err.msg);
    const double pushed = fabs((double)sc.rigids[0].velocity[1] - so.rigids[0].velocity[1]);
    cr_log_info("the cloth changed the ball's velocity by %.3g m/s in 10 substeps", pushed);
    cr_expect_gt(pushed, 1e-3, "PBD-rigid did not act on the ball (|dv| %g m/s)", pushed);
    firn_world_destroy(off);
    firn_pbd_particles_view a, b;
    cr_assert_eq(firn_world_pbd_particles(gpu, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_pbd_particles(cpu, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(a.n, b.n);
    expect_close("cloth on ball", "x", a.x, b.x, 3 * (long long)b.n, b.n);
    expect_close("cloth on ball", "v", a.v, b.v, 3 * (long long)b.n, b.n);
    cr_log_info("ball force CPU (%.6g %.6g %.6g) GPU (%.6g %.6g %.6g) N", sc.rigids[0].force[0],
                sc.rigids[0].force[1], sc.rigids[0].force[2], sg.rigids[0].force[0],
                sg.rigids[0].force[1], sg.rigids[0].force[2]);
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
    cr_expect(
        fabs(sc.pbd.kinetic_energy - sg.pbd.kinetic_energy) <= 1e-5 * fabs(sc.pbd.kinetic_energy),
        "PBD kinetic energy: CPU %.9g J, GPU %.9g J", sc.pbd.kinetic_energy, sg.pbd.kinetic_energy);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* A 0.08 m block of pbd_liquid (p = 0.01 m: 8^3) thrown down at 1 m/s
 * from just above a dynamic box of 0.1 m (density 500) turned 17 degrees
 * about z, so that from the first substep its bottom layers read the box's
 * ghosts (firn_pbf_body, in pbf_lambda and pbf_delta) and the box takes
 * their reaction (the pbf_rigid kernel, double atomics): 10 substeps of
 * 1 ms on both paths, the particles element by element (bitwise on the
 * emulated runtime), the box's velocity and angular velocity to 1e-5
 * relative and its pending force to 1e-4, as the cloth on the ball. The
 * ghosts must have acted: a CPU run with the pair off differs. */
Test(gpu_pbd, liquid_on_a_dynamic_box_matches_cpu, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    firn_error err = {0};
    firn_scene_default(&def);
    for (int a = 0; a < 3; a++)
        def.lower[a] = -0.5f, def.upper[a] = 0.5f;
    def.dx = 0.1f;
    def.write_ply = def.write_preview = 0;
    def.pbd.particle_size = 0.01f;
    def.n_materials = 1;
    firn_material_default(&def.materials[0], FIRN_MODEL_PBD_LIQUID);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "water");
    def.n_bodies = 1;
    firn_body_def *b = &def.bodies[0];
    firn_body_default(b);
    b->solver = FIRN_SOLVER_KIND_PBD;
    b->shape.type = FIRN_SHAPE_BOX;
    b->shape.size[0] = b->shape.size[1] = b->shape.size[2] = 0.08f;
    memcpy(b->shape.center, (const float[3]){0.02f, 0.1f, 0.0f}, 3 * sizeof(float));
    b->velocity[1] = -1.0f;
    def.n_rigids = 1;
    firn_rigid_default(&def.rigids[0]);
    firn_rigid_def *r = &def.rigids[0];
    snprintf(r->name, FIRN_NAME_MAX, "box");
    r->shape.type = FIRN_RSHAPE_BOX;
    r->shape.size[0] = r->shape.size[1] = r->shape.size[2] = 0.1f;
    r->shape.center[0] = r->shape.center[1] = r->shape.center[2] = 0.0f;
    r->motion = FIRN_RIGID_DYNAMIC;
    r->density = 500.0f;
    r->friction = 0.0f;
    r->rotation[2] = 17.0f; /* an edge under the liquid */
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    def.coupling.pbd_rigid = 0;
    firn_world *off = make_world(&def, FIRN_BACKEND_CPU);
    const float dt = 1e-3f;
    cr_assert_eq(firn_world_run_substeps(cpu, 10, dt, &err), 0, "CPU: %s", err.msg);
    cr_assert_eq(firn_world_run_substeps(gpu, 10, dt, &err), 0, "GPU: %s", err.msg);
    cr_assert_eq(firn_world_run_substeps(off, 10, dt, &err), 0, "CPU, pair off: %s", err.msg);
    firn_frame_stats sc, sg, so;
    cr_assert_eq(firn_world_stats(cpu, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(gpu, &sg, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(off, &so, &err), 0, "%s", err.msg);
    const double pushed = fabs((double)sc.rigids[0].velocity[1] - so.rigids[0].velocity[1]);
    cr_log_info("the liquid changed the box's velocity by %.3g m/s in 10 substeps", pushed);
    cr_expect_gt(pushed, 1e-3, "the liquid did not act on the box (|dv| %g m/s)", pushed);
    firn_world_destroy(off);
    firn_pbd_particles_view a, c;
    cr_assert_eq(firn_world_pbd_particles(gpu, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_pbd_particles(cpu, &c, &err), 0, "%s", err.msg);
    cr_assert_eq(a.n, c.n);
    cr_assert_eq(c.n, 512);
    expect_field("liquid on box", "x", a.x, c.x, 3 * (long long)c.n, c.n);
    expect_field("liquid on box", "v", a.v, c.v, 3 * (long long)c.n, c.n);
    for (int k = 0; k < 3; k++) {
        const float vc = sc.rigids[0].velocity[k], vg = sg.rigids[0].velocity[k];
        cr_expect(fabsf(vc - vg) <= 1e-5f * (1.0f + fabsf(vc)),
                  "box velocity[%d]: CPU %.9g, GPU %.9g", k, vc, vg);
        const float wc = sc.rigids[0].angular_velocity[k], wg = sg.rigids[0].angular_velocity[k];
        cr_expect(fabsf(wc - wg) <= 1e-5f * (1.0f + fabsf(wc)),
                  "box angular velocity[%d]: CPU %.9g, GPU %.9g", k, wc, wg);
        const float fc = sc.rigids[0].force[k], fg = sg.rigids[0].force[k];
        cr_expect(fabsf(fc - fg) <= 1e-4f * (1.0f + fabsf(fc)), "box force[%d]: CPU %.9g, GPU %.9g",
                  k, fc, fg);
    }
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* ---- MPM-PBD ------------------------------------------------------------------ */

/* scenes/pbd_cloth_snowball.json with the snowball already on the cloth
 * (its bottom 1 cm below the cloth's plane) and thrown down at 1 m/s: 10
 * substeps of the first frame's step. The pair's nodes run one per run of
 * equal keys after CUB's stable sort, the CPU's qsort order, so the PBD and
 * MPM particles agree element by element with firn compare's tolerance; the
 * pair must have acted (the cloth's momentum differs from a run without
 * it). */
Test(gpu_pbd, mpm_pbd_pair_matches_cpu, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    firn_error err = {0};
    cr_assert_eq(firn_scene_load_json("scenes/pbd_cloth_snowball.json", &def, &err), 0, "%s",
                 err.msg);
    def.write_ply = def.write_preview = 0;
    cr_assert_eq(def.n_bodies, 2);
    def.bodies[1].shape.center[1] = 0.77f;
    def.bodies[1].velocity[1] = -1.0f;
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    cr_assert(gpu->coupler.mpm_pbd, "the MPM-PBD pair is not active");
    def.coupling.mpm_pbd = 0;
    firn_world *off = make_world(&def, FIRN_BACKEND_CPU);
    float dt;
    int nsub;
    cr_assert_eq(firn_world_next_frame_step(cpu, &dt, &nsub, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_run_substeps(cpu, 10, dt, &err), 0, "CPU: %s", err.msg);
    cr_assert_eq(firn_world_run_substeps(gpu, 10, dt, &err), 0, "GPU: %s", err.msg);
    cr_assert_eq(firn_world_run_substeps(off, 10, dt, &err), 0, "CPU, pair off: %s", err.msg);
    firn_frame_stats sc, sg, so;
    cr_assert_eq(firn_world_stats(cpu, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(gpu, &sg, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(off, &so, &err), 0, "%s", err.msg);
    const double pushed = so.pbd.momentum[1] - sc.pbd.momentum[1];
    cr_log_info("MPM-PBD: the snow pushed the cloth by %.4g kg m/s in 10 substeps", pushed);
    cr_expect_gt(pushed, 1e-4, "MPM-PBD did not act on the cloth (%g kg m/s)", pushed);
    firn_world_destroy(off);
    firn_pbd_particles_view a, b;
    cr_assert_eq(firn_world_pbd_particles(gpu, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_pbd_particles(cpu, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(a.n, b.n);
    /* v = (x - x0) / dt: one float ulp of a position near 0.7 m (6e-8 m)
     * is 6e-8 / dt of velocity, and the MPM grid's atomic sums move the
     * pair's positions by an ulp or so; so v's tolerance is at least 4 ulps
     * of the positions' scale over dt (the floor below is that over 1e-5). */
    const double v_tol = 4.0 * FLT_EPSILON * 0.7 / dt;
    cr_log_info("MPM-PBD: dt %.4g s, v tolerance at least %.3g m/s", dt, v_tol);
    expect_close("MPM-PBD", "pbd x", a.x, b.x, 3 * (long long)b.n, b.n);
    expect_close_floor("MPM-PBD", "pbd v", a.v, b.v, 3 * (long long)b.n, b.n, v_tol / 1e-5);
    firn_particles_view pa, pb;
    cr_assert_eq(firn_world_particles(gpu, &pa, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_particles(cpu, &pb, &err), 0, "%s", err.msg);
    cr_assert_eq(pa.n, pb.n);
    expect_close("MPM-PBD", "mpm x", pa.x, pb.x, 3 * (long long)pb.n, pb.n);
    /* The snow amplifies a difference of an ulp in the grid's sums (the
     * GPU's atomic order) over these 10 substeps: on the CPU alone, the
     * snow's velocities moved by one ulp change this field by up to 1.1
     * times firn compare's tolerance (0.7 times before PBD carried its
     * velocity exactly, docs/PHYSICS.md 6.2). So v is held to 4 times that
     * tolerance: a floor of 4 m/s on its scale (1.04 m/s). */
    expect_close_floor("MPM-PBD", "mpm v", pa.v, pb.v, 3 * (long long)pb.n, pb.n, 4.0);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* ---- pins and the non-finite report --------------------------------------- */

/* 20 substeps of the perturbed cloth hanging from its pins: on the GPU
 * every pinned vertex keeps its position bit for bit and a zero velocity,
 * while the free ones fall and swing. */
Test(gpu_pbd, pinned_vertices_stay_bitwise_on_the_gpu, .timeout = 300)
{
    require_gpu();
    firn_world *cpu, *gpu;
    twin_worlds(&cpu, &gpu);
    firn_world_destroy(cpu);
    const firn_pbd *g = &gpu->pbd;
    const int n = g->n;
    float *x_start = malloc(3 * (size_t)n * sizeof(float));
    cr_assert(x_start);
    memcpy(x_start, g->s.x, 3 * (size_t)n * sizeof(float));
    firn_error err = {0};
    cr_assert_eq(firn_world_run_substeps(gpu, 20, 1e-3f, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_cuda_pbd_download(gpu, &err), 0, "%s", err.msg);
    int pinned = 0, moved_pin = -1, moving_pin = -1;
    float fall = 0.0f;
    for (int i = 0; i < n; i++) {
        if (g->s.w[i] > 0.0f) {
            fall =
                fmaxf(fall, fabsf(g->s.x[i] - x_start[i]) + fabsf(g->s.x[n + i] - x_start[n + i]) +
                                fabsf(g->s.x[2 * n + i] - x_start[2 * n + i]));
            continue;
        }
        pinned++;
        for (int a = 0; a < 3; a++) {
            if (memcmp(&g->s.x[a * n + i], &x_start[a * n + i], sizeof(float)) && moved_pin < 0)
                moved_pin = i;
            if (g->s.v[a * n + i] != 0.0f && moving_pin < 0)
                moving_pin = i;
        }
    }
    cr_expect_eq(pinned, 41, "%d pinned vertices", pinned);
    cr_expect_eq(moved_pin, -1, "pinned vertex %d moved", moved_pin);
    cr_expect_eq(moving_pin, -1, "pinned vertex %d has a velocity", moving_pin);
    cr_expect_gt(fall, 1e-3f, "the free vertices did not move (%g m)", fall);
    free(x_start);
    firn_world_destroy(gpu);
}

/* NaN planted in the velocities of two free cloth vertices (the higher
 * index first): neither the stretch nor the bending projection spreads it
 * (a non-finite length or angle is skipped), so at the end of substep 1
 * exactly those two are non-finite. Both paths run 3 substeps in one call
 * and must name a PBD particle, substep 1 and the lower index. */
Test(gpu_pbd, nonfinite_vertex_is_reported_as_the_cpu_does, .timeout = 120)
{
    require_gpu();
    firn_world *cpu, *gpu;
    twin_worlds(&cpu, &gpu);
    const int n = cpu->pbd.n, lo = 800, hi = 1333;
    cr_assert(cpu->pbd.s.w[lo] > 0.0f && cpu->pbd.s.w[hi] > 0.0f, "both vertices are free");
    cpu->pbd.s.v[n + hi] = gpu->pbd.s.v[n + hi] = NAN;
    cpu->pbd.s.v[lo] = gpu->pbd.s.v[lo] = NAN;
    firn_error err = {0};
    firn_cuda_pbd_free(gpu);
    cr_assert_eq(firn_cuda_pbd_init(gpu, &err), 0, "firn_cuda_pbd_init: %s", err.msg);
    firn_error ec = {0}, eg = {0};
    cr_assert_neq(firn_world_run_substeps(cpu, 3, 1e-3f, &ec), 0, "the CPU path ran through a NaN");
    cr_assert_neq(firn_world_run_substeps(gpu, 3, 1e-3f, &eg), 0, "the GPU ran through a NaN");
    cr_expect_eq(ec.code, FIRN_E_NUMERIC, "%s", ec.msg);
    cr_expect_eq(eg.code, FIRN_E_NUMERIC, "%s", eg.msg);
    cr_expect(strstr(ec.msg, "PBD particle 800 of material 'cloth'") != NULL, "CPU: %s", ec.msg);
    cr_expect(strstr(eg.msg, "PBD particle 800 of material 'cloth'") != NULL, "GPU: %s", eg.msg);
    cr_expect(strstr(ec.msg, "substep 1)") != NULL, "CPU: %s", ec.msg);
    cr_expect(strstr(eg.msg, "substep 1; the GPU ran on to substep 3)") != NULL, "GPU: %s", eg.msg);
    firn_world_destroy(gpu);
    firn_world_destroy(cpu);
}

/* ---- checkpoints ----------------------------------------------------------- */

/* A checkpoint written by a CUDA world after 5 substeps holds the device's
 * PBD state (the mirror is downloaded first): a CPU world loaded from it
 * has the GPU's x and v bit for bit, and one more substep on each agrees as
 * one substep does. */
Test(gpu_pbd, checkpoint_of_the_gpu_state_resumes_on_the_cpu, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    cloth_scene(&def);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    firn_error err = {0};
    cr_assert_eq(firn_world_run_substeps(gpu, 5, 1e-3f, &err), 0, "%s", err.msg);
    char dir[64], path[128];
    test_mkdtemp(dir, sizeof dir, "gpu_pbd_ckpt");
    snprintf(path, sizeof path, "%s/state.firn", dir);
    cr_assert_eq(firn_world_save(gpu, path, &err), 0, "%s", err.msg);
    firn_world *cpu = firn_world_load(&def, FIRN_BACKEND_CPU, path, &err);
    cr_assert(cpu, "%s", err.msg);
    test_rmdir(dir);
    firn_pbd_particles_view a, b;
    cr_assert_eq(firn_world_pbd_particles(gpu, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_pbd_particles(cpu, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(a.n, b.n);
    const size_t n3 = 3 * (size_t)a.n * sizeof(float);
    cr_expect(!memcmp(a.x, b.x, n3) && !memcmp(a.v, b.v, n3),
              "the CPU world loaded from the GPU's checkpoint has another state");
    float moved = 0.0f;
    for (int i = 0; i < a.n; i++)
        moved = fmaxf(moved, fabsf(a.v[a.n + i]));
    cr_expect_gt(moved, 1e-3f, "nothing moved before the checkpoint (|v_y| %g m/s)", moved);
    cr_assert_eq(firn_world_substep(gpu, 1e-3f, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_substep(cpu, 1e-3f, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_pbd_particles(gpu, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_pbd_particles(cpu, &b, &err), 0, "%s", err.msg);
    expect_field("resumed", "x", a.x, b.x, 3 * (long long)b.n, b.n);
    expect_field("resumed", "v", a.v, b.v, 3 * (long long)b.n, b.n);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

/* ---- memory ---------------------------------------------------------------- */

/* firn_world_memory for a PBD scene: a CPU world's device estimate counts
 * firn_pbd_device_bytes, which is what the CUDA world allocates less the
 * materials and its non-finite word (and CUB's scratch of the MPM state:
 * under 1 MiB together), and both count the PBD host state. */
Test(gpu_pbd, memory_figures_count_the_pbd_state, .timeout = 120)
{
    require_gpu();
    firn_scene_def def;
    cloth_scene(&def);
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU);
    firn_world *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    const firn_pbd *S = &cpu->pbd;
    const double dev = (double)firn_pbd_device_bytes(S->n, S->stretch.n, S->bend.n, S->G.cells);
    const double host = (double)firn_pbd_host_bytes(S);
    cr_assert_gt(dev, 16.0 * S->n * sizeof(float), "the particles alone are %zu B",
                 16 * (size_t)S->n * sizeof(float));
    cr_assert_gt(host, dev * 0.5, "host %.0f B, device %.0f B", host, dev);
    firn_memory mc, mg;
    firn_world_memory(cpu, &mc);
    firn_world_memory(gpu, &mg);
    cr_expect_geq(mc.device, dev,
                  "the CPU world's device figure %.0f B counts the PBD state %.0f B", mc.device,
                  dev);
    cr_expect_geq(mc.host, host, "the CPU world's host figure %.0f B counts the PBD state %.0f B",
                  mc.host, host);
    cr_expect_geq(mg.host, host, "the GPU world's host figure %.0f B counts the PBD mirror %.0f B",
                  mg.host, host);
    cr_expect_geq(mg.device, mc.device, "GPU %.0f B, CPU twin's estimate %.0f B", mg.device,
                  mc.device);
    cr_expect_leq(mg.device, mc.device + 1048576.0, "GPU %.0f B, CPU twin's estimate %.0f B",
                  mg.device, mc.device);
    cr_expect_gt(mg.per_particle, 0.0, "a PBD-only scene's memory per particle");
    firn_world_destroy(gpu);
    firn_world_destroy(cpu);
}
