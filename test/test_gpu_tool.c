/* test_gpu_tool.c - GPU twins of the tool tests (test_tool.c): the grid
 * update with tools (grid_update_tools, kernels/coupling.cu) against its
 * CPU twin (firn_grid_node_tools looped over the nodes) on a random grid
 * with random tools and a coupled body; a tool scene on both paths (poses,
 * reaction, frame sums, a command set through the C API between calls);
 * Newton's third law on the device. The reaction is a warp reduction plus
 * double atomics there, so agreement is to rounding, not bitwise. Every
 * test skips, and only, without a usable GPU (real or emulated). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "firn_tool.h"
#include "gpu_compare.h"
#include "gpu_skip.h"
#include "world.h"

static void scene(firn_scene_def *def, float dx)
{
    firn_scene_default(def);
    def->dx = dx;
    def->frame_dt = 0.01f;
    def->write_ply = def->write_preview = 0;
    def->n_materials = 1;
    firn_material_default(&def->materials[0], FIRN_MODEL_SAND);
    snprintf(def->materials[0].name, FIRN_NAME_MAX, "sand");
    def->materials[0].E = 3.5e5f;
    def->materials[0].density = 1600.0f;
}

static void add_box(firn_scene_def *def, const float lo[3], const float hi[3])
{
    firn_body_def *b = &def->bodies[def->n_bodies++];
    firn_body_default(b);
    b->shape.type = FIRN_SHAPE_BOX;
    b->seed = 5;
    for (int a = 0; a < 3; a++) {
        b->shape.center[a] = 0.5f * (lo[a] + hi[a]);
        b->shape.size[a] = hi[a] - lo[a];
    }
}

static firn_tool_def *add_tool(firn_scene_def *def, const char *name, firn_rigid_shape_type type,
                               const float c[3], const float size[3])
{
    firn_tool_def *t = &def->tools[def->n_tools++];
    firn_tool_default(t);
    snprintf(t->name, FIRN_NAME_MAX, "%s", name);
    t->shape.type = type;
    for (int a = 0; a < 3; a++) {
        t->shape.center[a] = c[a];
        t->shape.size[a] = size[a];
    }
    t->shape.radius = 0.5f * size[0];
    t->shape.height = size[1];
    return t;
}

/* ---- the kernel against its CPU twin on random input --------------------- */

#ifdef FIRN_WITH_CUDA
/* kernels/coupling.cu, for this test only. */
int firn_cuda_grid_tools_once(const firn_params *P, float *node, const firn_tool *tools, int nt,
                              double *tacc, const firn_rigid *bodies, int nb, double *acc,
                              firn_error *err);

static uint64_t rng = 0x70015eedULL;
static float uniform(float lo, float hi)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (float)((rng >> 11) * (1.0 / 9007199254740992.0));
}

/* collide()'s influence cutoff (influence 0.1, d = softness ln 10) is where
 * the update jumps: a node within 1e-4 softness of it may take either side
 * on the two paths after one rounding. Such nodes are left empty. */
static int near_cutoff(float d, float softness)
{
    return fabsf(d - softness * logf(10.0f)) < 1e-4f * softness;
}

#define RND_TOOLS 5

#endif

Test(gpu_tool, grid_update_matches_its_cpu_twin_on_random_input, .timeout = 300)
{
    require_gpu();
#ifdef FIRN_WITH_CUDA
    /* The world gives the grid's parameters and the shapes as the scene
     * loader builds them: a box, a sphere, a capsule and a cylinder tool,
     * a box tool without collision, a coupled sphere body. */
    firn_scene_def def;
    scene(&def, 1.0f / 24.0f);
    add_box(&def, (float[3]){0.4f, 0.1f, 0.4f}, (float[3]){0.6f, 0.2f, 0.6f});
    const firn_rigid_shape_type types[RND_TOOLS] = {FIRN_RSHAPE_BOX, FIRN_RSHAPE_SPHERE,
                                                    FIRN_RSHAPE_CAPSULE, FIRN_RSHAPE_CYLINDER,
                                                    FIRN_RSHAPE_BOX};
    for (int k = 0; k < RND_TOOLS; k++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", k);
        add_tool(&def, name, types[k], (float[3]){0.5f, 0.5f, 0.5f}, (float[3]){0.2f, 0.3f, 0.12f})
            ->collision = k < RND_TOOLS - 1;
    }
    def.n_rigids = 1;
    firn_rigid_def *r = &def.rigids[0];
    firn_rigid_default(r);
    r->shape.type = FIRN_RSHAPE_SPHERE;
    r->shape.radius = 0.15f;
    r->motion = FIRN_RIGID_KINEMATIC;
    for (int a = 0; a < 3; a++)
        r->shape.center[a] = 0.45f;
    r->velocity[0] = 1.5f;
    r->angular_velocity[1] = 3.0f;
    firn_world *w = make_world(&def, FIRN_BACKEND_CPU);
    firn_params P = w->params;
    P.dt = 4e-4f;
    firn_tool tools[RND_TOOLS];
    for (int k = 0; k < RND_TOOLS; k++) {
        firn_tool *t = &tools[k];
        *t = w->tools[k];
        firn_rigid *b = &t->body;
        for (int a = 0; a < 3; a++) {
            b->x[a] = uniform(0.3f, 0.7f);
            b->v[a] = uniform(-2.0f, 2.0f);
            b->w[a] = uniform(-6.0f, 6.0f);
        }
        b->q = firn_quat_normalize(
            (firn_quat){{uniform(-1, 1), uniform(-1, 1), uniform(-1, 1), uniform(-1, 1)}});
        t->friction = uniform(0.0f, 1.0f);
        t->softness = uniform(0.005f, 0.05f);
        firn_tool_advect(t, P.dt); /* start pose kept in x0, q0; end pose in x, q */
    }
    const firn_rigid *body = &w->rigids[0];
    cr_assert(body->couple, "the body is not coupled");

    const long long nodes = (long long)P.n[0] * P.n[1] * P.n[2];
    float *cpu = malloc(4 * (size_t)nodes * sizeof(float)),
          *gpu = malloc(4 * (size_t)nodes * sizeof(float));
    cr_assert(cpu && gpu);
    long long filled = 0, skipped = 0;
    for (long long i = 0; i < nodes; i++) {
        float *q = cpu + 4 * i;
        const float m = uniform(0.0f, 1.0f) < 0.7f ? uniform(1e-4f, 1e-2f) : 0.0f;
        for (int a = 0; a < 3; a++)
            q[a] = m * uniform(-3.0f, 3.0f);
        q[3] = m;
        const firn_vec3 xn = firn_node_position(i, &P);
        firn_vec3 n;
        int near = near_cutoff(firn_sdf_world(&body->shape, firn_rigid_pos(body), body->q, xn, &n),
                               body->softness);
        for (int k = 0; k < RND_TOOLS; k++) {
            const firn_tool *t = &tools[k];
            const firn_vec3 x0 = firn_v3(t->x0[0], t->x0[1], t->x0[2]);
            near |= near_cutoff(firn_sdf_world(&t->body.shape, x0, t->q0, xn, &n), t->softness);
        }
        if (near && m > 0.0f) {
            memset(q, 0, 4 * sizeof(float));
            skipped++;
        }
        filled += q[3] > 0.0f;
    }
    memcpy(gpu, cpu, 4 * (size_t)nodes * sizeof(float));

    /* The CPU twin, node by node; and each tool's sum of |m dv| (and of
     * |r| m |dv| for the torque) over the nodes it changed, the scale the
     * reaction's rounding is measured against. */
    double tacc_c[RND_TOOLS * FIRN_TOOL_ACC] = {0}, tacc_g[RND_TOOLS * FIRN_TOOL_ACC] = {0};
    double acc_c[FIRN_RIGID_ACC] = {0}, acc_g[FIRN_RIGID_ACC] = {0};
    double mag[RND_TOOLS][2] = {{0}};
    firn_grid g = {{P.n[0], P.n[1], P.n[2]}, nodes, cpu};
    for (long long i = 0; i < nodes; i++) {
        firn_vec3 v;
        if (firn_grid_velocity(i, &P, g, &v)) {
            const float m = cpu[4 * i + 3];
            const firn_vec3 xn = firn_node_position(i, &P);
            for (int k = 0; k < RND_TOOLS; k++) {
                const firn_vec3 v2 = firn_tool_collide(&tools[k], xn, v, P.dt);
                const firn_vec3 rx =
                    firn_sub(xn, firn_v3(tools[k].x0[0], tools[k].x0[1], tools[k].x0[2]));
                const double dv = sqrt(firn_dot(firn_sub(v2, v), firn_sub(v2, v)));
                mag[k][0] += m * dv;
                mag[k][1] += m * dv * sqrt(firn_dot(rx, rx));
                v = v2;
            }
        }
        firn_grid_node_tools(i, &P, g, tools, RND_TOOLS, tacc_c, body, 1, acc_c, NULL);
    }
    firn_error err;
    cr_assert_eq(firn_cuda_grid_tools_once(&P, gpu, tools, RND_TOOLS, tacc_g, body, 1, acc_g, &err),
                 0, "%s", err.msg);

    /* Node values: a few dozen float operations each, about 1e-6 of rounding
     * on the GPU's fused multiply-adds; 1e-5 of (|v| + 1 m/s) is the bound. */
    double worst = 0.0;
    long long at = -1, changed = 0;
    for (long long i = 0; i < 4 * nodes; i++) {
        const double e = fabs((double)gpu[i] - cpu[i]) / (1e-5 * (fabs(cpu[i]) + 1.0));
        if (e > worst)
            worst = e, at = i;
    }
    cr_assert(worst <= 1.0, "node %lld value %lld: gpu %.9g cpu %.9g (%.3g of the tolerance)",
              at / 4, at % 4, gpu[at], cpu[at], worst);
    /* Each reaction component: its terms' rounding (float dv in double
     * sums) against 1e-5 of the sum of their magnitudes. */
    for (int k = 0; k < RND_TOOLS; k++) {
        for (int c = 0; c < FIRN_TOOL_ACC; c++) {
            const double c_ = tacc_c[FIRN_TOOL_ACC * k + c], g_ = tacc_g[FIRN_TOOL_ACC * k + c];
            const double tol = 1e-5 * mag[k][c < 3 ? 0 : 1] + 1e-300;
            cr_assert(fabs(g_ - c_) <= tol, "tool %d reaction[%d]: gpu %.12g cpu %.12g (tol %.3g)",
                      k, c, g_, c_, tol);
        }
        changed += mag[k][0] > 0.0;
    }
    cr_assert_eq(changed, RND_TOOLS - 1, "%lld of the %d colliding tools touched a node", changed,
                 RND_TOOLS - 1);
    for (int c = 0; c < FIRN_TOOL_ACC; c++)
        cr_assert_eq(tacc_g[FIRN_TOOL_ACC * (RND_TOOLS - 1) + c], 0.0,
                     "the tool without collision has a reaction");
    double rscale = 0.0;
    for (int c = 0; c < 3; c++)
        rscale = fmax(rscale, fabs(acc_c[c]));
    cr_assert(rscale > 0.0, "the body touched no node");
    for (int c = 0; c < FIRN_RIGID_ACC; c++)
        cr_assert(fabs(acc_g[c] - acc_c[c]) <= 1e-5 * rscale + 1e-12,
                  "body reaction[%d]: gpu %.12g cpu %.12g", c, acc_g[c], acc_c[c]);
    cr_log_info("grid_update_tools: %lld nodes with mass (%lld near a cutoff left empty), worst "
                "node error %.3g of the tolerance",
                filled, skipped, worst);
    free(cpu);
    free(gpu);
    firn_world_destroy(w);
#endif
}

/* ---- a tool scene on both paths ------------------------------------------- */

/* A sand bed; a blade pushing and turning through it, a keyframed sphere
 * dipping into it, a dynamic box falling onto it (the grid update with
 * tools and bodies). No gravity when `free` (Newton's third law). */
static void tool_scene(firn_scene_def *def, int free)
{
    scene(def, 1.0f / 32.0f);
    if (free)
        def->gravity[1] = 0.0f;
    add_box(def, (float[3]){0.3f, free ? 0.35f : 0.07f, 0.3f},
            (float[3]){0.7f, free ? 0.6f : 0.25f, 0.7f});
    firn_tool_def *t = add_tool(def, "blade", FIRN_RSHAPE_BOX, (float[3]){0.27f, 0.2f, 0.5f},
                                (float[3]){0.04f, 0.2f, 0.3f});
    if (free)
        t->shape.center[1] = 0.47f;
    t->velocity[0] = 1.5f;
    t->velocity[1] = free ? -0.3f : 0.0f;
    t->angular_velocity[2] = 2.0f;
    t->friction = 0.4f;
    if (free)
        return;
    firn_tool_def *s = add_tool(def, "dipper", FIRN_RSHAPE_SPHERE, (float[3]){0.55f, 0.33f, 0.45f},
                                (float[3]){0.12f, 0.12f, 0.12f});
    s->n_keyframes = 2;
    for (int j = 0; j < 2; j++)
        for (int a = 0; a < 3; a++)
            s->keyframes[j].position[a] = s->shape.center[a];
    s->keyframes[1].t = 0.1f;
    s->keyframes[1].position[1] = 0.15f;
    s->softness = 0.004f;
    def->n_rigids = 1;
    firn_rigid_def *r = &def->rigids[0];
    firn_rigid_default(r);
    r->shape.type = FIRN_RSHAPE_BOX;
    r->motion = FIRN_RIGID_DYNAMIC;
    r->shape.center[0] = 0.62f, r->shape.center[1] = 0.32f, r->shape.center[2] = 0.62f;
    for (int a = 0; a < 3; a++)
        r->shape.size[a] = 0.08f;
    r->velocity[1] = -1.5f;
    r->density = 1000.0f;
}

/* Tool k of the two worlds: pose to 1e-6 m (the same advection in float,
 * fused on the GPU), force and torque to 1e-3 of their scale plus floor. */
static void same_tool(const firn_frame_stats *sc, const firn_frame_stats *sg, int k,
                      const char *when)
{
    const firn_tool_state *c = &sc->tools[k], *g = &sg->tools[k];
    double fs = 1.0, ts = 0.1;
    for (int a = 0; a < 3; a++) {
        fs = fmax(fs, fmax(fabs(c->force[a]), fabs(c->force_mean[a])));
        ts = fmax(ts, fmax(fabs(c->torque[a]), fabs(c->torque_mean[a])));
    }
    for (int a = 0; a < 3; a++) {
        cr_assert(fabsf(c->position[a] - g->position[a]) < 1e-6f,
                  "%s: tool %d position[%d]: cpu %.9g gpu %.9g", when, k, a, c->position[a],
                  g->position[a]);
        cr_assert(c->velocity[a] == g->velocity[a], "%s: tool %d velocity[%d]: cpu %g gpu %g", when,
                  k, a, c->velocity[a], g->velocity[a]);
        cr_assert(fabs(c->force[a] - g->force[a]) < 1e-3 * fs,
                  "%s: tool %d force[%d]: cpu %.9g gpu %.9g N", when, k, a, c->force[a],
                  g->force[a]);
        cr_assert(fabs(c->force_mean[a] - g->force_mean[a]) < 1e-3 * fs,
                  "%s: tool %d force_mean[%d]: cpu %.9g gpu %.9g N", when, k, a, c->force_mean[a],
                  g->force_mean[a]);
        cr_assert(fabs(c->torque[a] - g->torque[a]) < 1e-3 * ts,
                  "%s: tool %d torque[%d]: cpu %.9g gpu %.9g N m", when, k, a, c->torque[a],
                  g->torque[a]);
        cr_assert(fabs(c->impulse[a] - g->impulse[a]) < 1e-3 * fs * sc->time + 1e-9,
                  "%s: tool %d impulse[%d]: cpu %.9g gpu %.9g N s", when, k, a, c->impulse[a],
                  g->impulse[a]);
    }
    for (int a = 0; a < 4; a++)
        cr_assert(fabsf(c->orientation[a] - g->orientation[a]) < 1e-6f,
                  "%s: tool %d orientation[%d]: cpu %.9g gpu %.9g", when, k, a, c->orientation[a],
                  g->orientation[a]);
}

static void same_world(firn_world *cpu, firn_world *gpu, const char *when)
{
    firn_frame_stats sc, sg;
    firn_error err;
    cr_assert_eq(firn_world_stats(cpu, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(gpu, &sg, &err), 0, "%s", err.msg);
    cr_assert_eq(sg.n_tools, sc.n_tools);
    for (int k = 0; k < sc.n_tools; k++)
        same_tool(&sc, &sg, k, when);
    for (int a = 0; a < 3; a++) {
        cr_assert(fabs(sc.center_of_mass[a] - sg.center_of_mass[a]) < 1e-5,
                  "%s: centre of mass[%d]: cpu %.9g gpu %.9g", when, a, sc.center_of_mass[a],
                  sg.center_of_mass[a]);
        cr_assert(fabsf(sc.rigids[0].position[a] - sg.rigids[0].position[a]) < 1e-5f,
                  "%s: rigid position[%d]: cpu %.9g gpu %.9g", when, a, sc.rigids[0].position[a],
                  sg.rigids[0].position[a]);
    }
    cr_log_info("%s: blade force cpu (%.6g, %.6g, %.6g) gpu (%.6g, %.6g, %.6g) N", when,
                sc.tools[0].force[0], sc.tools[0].force[1], sc.tools[0].force[2],
                sg.tools[0].force[0], sg.tools[0].force[1], sg.tools[0].force[2]);
}

Test(gpu_tool, tool_scene_matches_the_cpu_path, .timeout = 600)
{
    require_gpu();
    firn_scene_def def;
    tool_scene(&def, 0);
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU),
               *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    firn_error err;
    /* The same substeps on both, in calls of 10 on the GPU: the records
     * come back at each call's end. */
    for (int s = 0; s < 40; s += 10) {
        for (int k = 0; k < 10; k++)
            cr_assert_eq(firn_world_substep(cpu, 2.5e-4f, &err), 0, "%s", err.msg);
        cr_assert_eq(firn_world_run_substeps(gpu, 10, 2.5e-4f, &err), 0, "%s", err.msg);
    }
    same_world(cpu, gpu, "after 40 substeps");
    firn_tool_state t;
    cr_assert_eq(firn_world_tool_state(cpu, 0, &t), 0);
    cr_assert(fabs(t.force[0]) > 1.0, "the blade met no sand: %g N", t.force[0]);
    cr_assert_eq(firn_world_tool_state(cpu, 1, &t), 0);
    cr_assert(fabs(t.force[1]) > 0.1, "the dipper met no sand: %g N", t.force[1]);
    /* A frame each: the frame sums restart on the device too. */
    firn_frame_stats fc, fg;
    cr_assert_eq(firn_world_step_frame(cpu, &fc, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_step_frame(gpu, &fg, &err), 0, "%s", err.msg);
    cr_assert_eq(fc.frame_substeps, fg.frame_substeps, "the frames' steps differ");
    same_world(cpu, gpu, "after a frame");
    /* A command through the C API between calls reaches the device. */
    const float v2[3] = {-0.5f, 0.4f, 0.0f}, w2[3] = {0.0f, -1.0f, 0.5f};
    cr_assert_eq(firn_world_set_tool_velocity(cpu, 0, v2, w2, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_set_tool_velocity(gpu, 0, v2, w2, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_set_tool_velocity(cpu, 1, v2, w2, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_set_tool_velocity(gpu, 1, v2, w2, &err), 0, "%s", err.msg);
    for (int k = 0; k < 10; k++)
        cr_assert_eq(firn_world_substep(cpu, 2.5e-4f, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_run_substeps(gpu, 10, 2.5e-4f, &err), 0, "%s", err.msg);
    same_world(cpu, gpu, "after the command");
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

Test(gpu_tool, newtons_third_law_on_the_device, .timeout = 300)
{
    require_gpu();
    firn_scene_def def;
    tool_scene(&def, 1);
    firn_world *w = make_world(&def, FIRN_BACKEND_CUDA);
    firn_frame_stats s0, s1;
    firn_error err;
    cr_assert_eq(firn_world_stats(w, &s0, &err), 0, "%s", err.msg);
    for (int f = 0; f < 4; f++)
        cr_assert_eq(firn_world_step_frame(w, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(w, &s1, &err), 0, "%s", err.msg);
    const firn_tool_state *t = &s1.tools[0];
    double scale = 0.0;
    for (int a = 0; a < 3; a++)
        scale += fabs(t->impulse[a]);
    cr_assert(scale > 0.1, "no push happened: |J| = %g N s", scale);
    for (int a = 0; a < 3; a++) {
        const double dP = s1.momentum[a] - s0.momentum[a];
        cr_assert(fabs(dP + t->impulse[a]) < 1e-4 * scale,
                  "axis %d: particles gained %.9g, the tool reports %.9g", a, dP, t->impulse[a]);
    }
    firn_world_destroy(w);
}
