/* test_tool.c - tools (PHYSICS.md s4.8): Genesis's collide() at a node
 * against a closed form computed here, the commanded path followed
 * bitwise whatever the material does, Newton's third law between the
 * particles and the reported reaction, a plate carrying a settled sand
 * column's weight, the C API's refusals, scene keys and the backend auto
 * picks. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "firn_tool.h"
#include "world.h"

/* ---- collide() at a node, against the formula in doubles ----------------- */

/* A box tool of half edges 0.1 m at the origin, translating at vt and
 * turning about z at wz over the substep dt. */
static firn_tool box_tool(const float vt[3], float wz, float dt, float friction, float softness)
{
    firn_tool t;
    memset(&t, 0, sizeof t);
    t.body.shape.type = FIRN_SDF_BOX;
    for (int a = 0; a < 3; a++)
        t.body.shape.half[a] = 0.1f;
    t.body.q.q[0] = 1.0f;
    for (int a = 0; a < 3; a++)
        t.body.v[a] = vt[a];
    t.body.w[2] = wz;
    t.friction = friction;
    t.softness = softness;
    t.collision = 1;
    firn_tool_advect(&t, dt);
    return t;
}

/* Genesis's collide() in doubles, with the distance d and outward normal n
 * given (the box's top face here) and the surface velocity vc from the
 * rigid motion written out: translation by vt dt and rotation by wz dt
 * about z through the origin. */
static void expected(const double x[3], const double v[3], double d, const double n[3],
                     const float vt[3], double wz, double dt, double friction, double softness,
                     double out[3])
{
    double c = cos(wz * dt), s = sin(wz * dt);
    double x1[3] = {c * x[0] - s * x[1] + vt[0] * dt, s * x[0] + c * x[1] + vt[1] * dt,
                    x[2] + vt[2] * dt};
    double vc[3], rv[3], vn = 0.0;
    for (int a = 0; a < 3; a++) {
        vc[a] = (x1[a] - x[a]) / dt;
        rv[a] = v[a] - vc[a];
        vn += rv[a] * n[a];
    }
    double infl = fmin(exp(-d / softness), 1.0);
    double rt[3], lt2 = 0.0;
    for (int a = 0; a < 3; a++) {
        rt[a] = rv[a] - vn * n[a];
        lt2 += rt[a] * rt[a];
    }
    double lt = sqrt(lt2 + 1.1920929e-7), k = fmax(0.0, lt + vn * friction) / lt;
    for (int a = 0; a < 3; a++)
        out[a] = vc[a] + rt[a] * k * infl + rv[a] * (1.0 - infl);
}

static void check_node(const firn_tool *t, const double x[3], const double v[3],
                       const double want[3], const char *what)
{
    firn_vec3 got = firn_tool_collide(t, firn_v3((float)x[0], (float)x[1], (float)x[2]),
                                      firn_v3((float)v[0], (float)v[1], (float)v[2]), 1e-3f);
    for (int a = 0; a < 3; a++)
        cr_assert(fabs(got.v[a] - want[a]) < 2e-5 * (1.0 + fabs(want[a])),
                  "%s: v'[%d] = %.9g, want %.9g", what, a, got.v[a], want[a]);
}

Test(tool_collide, node_velocity_matches_genesis_formula)
{
    const float vt[3] = {0.2f, -0.1f, 0.05f};
    const float dt = 1e-3f, wz = 3.0f, friction = 0.3f, softness = 0.01f;
    firn_tool t = box_tool(vt, wz, dt, friction, softness);
    const double n[3] = {0.0, 1.0, 0.0};
    double want[3];

    /* Inside, below the top face by 0.02 m: influence 1. */
    double xi[3] = {0.03, 0.08, -0.02}, vi[3] = {1.0, -2.0, 0.5};
    expected(xi, vi, -0.02, n, vt, wz, dt, friction, softness, want);
    check_node(&t, xi, vi, want, "inside");
    /* The node takes the surface's normal velocity: nothing goes in. */
    double vc_n = vt[1] + (sin(wz * dt) * xi[0] + (cos(wz * dt) - 1.0) * xi[1]) / dt;
    cr_assert(fabs(want[1] - vc_n) < 1e-7, "closed form: normal part %g, surface %g", want[1],
              vc_n);

    /* In the soft layer, 5 mm above the face: influence exp(-0.5). */
    double xs[3] = {-0.04, 0.105, 0.01}, vs[3] = {-0.7, -1.5, 0.2};
    expected(xs, vs, 0.005, n, vt, wz, dt, friction, softness, want);
    check_node(&t, xs, vs, want, "soft layer");

    /* Friction large enough to stop the tangential slip entirely. */
    firn_tool sticky = box_tool(vt, wz, dt, 5.0f, softness);
    expected(xi, vi, -0.02, n, vt, wz, dt, 5.0, softness, want);
    check_node(&sticky, xi, vi, want, "sticking");

    /* Moving apart (up, faster than the surface): untouched, bitwise. */
    firn_vec3 va = firn_v3(0.4f, 3.0f, -0.2f);
    firn_vec3 got = firn_tool_collide(&t, firn_v3(0.03f, 0.08f, -0.02f), va, dt);
    cr_assert(got.v[0] == va.v[0] && got.v[1] == va.v[1] && got.v[2] == va.v[2],
              "moving apart changed (%g, %g, %g)", got.v[0], got.v[1], got.v[2]);
    /* Beyond the layer (influence exp(-3) < 0.1): untouched. */
    firn_vec3 vf = firn_v3(0.0f, -5.0f, 0.0f);
    got = firn_tool_collide(&t, firn_v3(0.0f, 0.13f, 0.0f), vf, dt);
    cr_assert(got.v[1] == vf.v[1], "3 cm above a 1 cm soft layer: v_y %g", got.v[1]);
    /* Collision off: untouched anywhere. */
    t.collision = 0;
    got = firn_tool_collide(&t, firn_v3(0.03f, 0.08f, -0.02f), firn_v3(1.0f, -2.0f, 0.5f), dt);
    cr_assert(got.v[1] == -2.0f, "collision off: v_y %g", got.v[1]);
}

Test(tool_collide, reaction_is_minus_the_momentum_given)
{
    /* The box tool of the test above, at rest with its origin at c. */
    const float vt[3] = {0.0f, 0.0f, 0.0f}, c[3] = {0.3f, 0.2f, -0.1f};
    firn_tool t = box_tool(vt, 0.0f, 1e-3f, 0.2f, 0.01f);
    for (int a = 0; a < 3; a++)
        t.x0[a] = t.body.x[a] = c[a];
    double acc[FIRN_TOOL_ACC] = {0};
    firn_vec3 x = firn_v3(c[0] + 0.05f, c[1] + 0.09f, c[2]), v = firn_v3(0.5f, -1.0f, 0.0f);
    const float m = 0.25f;
    firn_vec3 v2 = firn_tool_node(&t, x, v, m, 1e-3f, acc);
    for (int a = 0; a < 3; a++)
        cr_assert(fabs(acc[a] + m * (v2.v[a] - v.v[a])) < 1e-7, "impulse[%d] %g", a, acc[a]);
    cr_assert(acc[1] < 0.0, "a node pushed up out of the tool must push the tool down: J_y %g",
              acc[1]);
    /* Moment about the tool's origin: (x - c) cross J. */
    double rx = x.v[0] - c[0], ry = x.v[1] - c[1];
    double tz = rx * acc[1] - ry * acc[0];
    cr_assert(fabs(acc[5] - tz) < 1e-7, "torque_z %.9g, want %.9g (about the tool's origin)",
              acc[5], tz);
}

/* ---- worlds --------------------------------------------------------------- */

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
    b->material = 0;
    b->shape.type = FIRN_SHAPE_BOX;
    for (int a = 0; a < 3; a++) {
        b->shape.center[a] = 0.5f * (lo[a] + hi[a]);
        b->shape.size[a] = hi[a] - lo[a];
    }
}

static firn_tool_def *add_tool(firn_scene_def *def, const char *name, const float c[3],
                               const float size[3])
{
    firn_tool_def *t = &def->tools[def->n_tools++];
    firn_tool_default(t);
    snprintf(t->name, FIRN_NAME_MAX, "%s", name);
    t->shape.type = FIRN_RSHAPE_BOX;
    for (int a = 0; a < 3; a++) {
        t->shape.center[a] = c[a];
        t->shape.size[a] = size[a];
    }
    return t;
}

static firn_world *make_world(const firn_scene_def *def)
{
    firn_error err;
    firn_world *w = firn_world_create(def, FIRN_BACKEND_CPU, &err);
    cr_assert(w, "world: %s", err.msg);
    return w;
}

static firn_tool_state state_of(const firn_world *w, int k)
{
    firn_tool_state s;
    cr_assert_eq(firn_world_tool_state(w, k, &s), 0);
    return s;
}

/* A turning blade ploughs through sand; a second world has the same tool
 * and no material in its way. The paths agree bitwise, before and after
 * a commanded change of velocity, and follow v t and omega t. */
Test(tool_world, commanded_path_is_followed_exactly, .timeout = 120)
{
    firn_scene_def def, empty;
    scene(&def, 0.02f);
    add_box(&def, (float[3]){0.3f, 0.04f, 0.3f}, (float[3]){0.7f, 0.2f, 0.7f});
    firn_tool_def *t =
        add_tool(&def, "blade", (float[3]){0.25f, 0.12f, 0.5f}, (float[3]){0.04f, 0.12f, 0.3f});
    t->velocity[0] = 1.0f;
    t->angular_velocity[1] = 0.5f;
    t->friction = 0.5f;
    empty = def;
    empty.bodies[0].shape.center[0] = 0.2f; /* a small heap out of the blade's way */
    empty.bodies[0].shape.center[2] = 0.12f;
    empty.bodies[0].shape.size[0] = empty.bodies[0].shape.size[2] = 0.08f;
    firn_world *w = make_world(&def), *e = make_world(&empty);
    firn_error err;
    const float dt = 5e-4f, v2[3] = {0.0f, -0.3f, 0.6f}, w2[3] = {0.2f, 0.0f, -1.0f};
    for (int k = 0; k < 200; k++) {
        if (k == 120) {
            cr_assert_eq(firn_world_set_tool_velocity(w, 0, v2, w2, &err), 0, "%s", err.msg);
            cr_assert_eq(firn_world_set_tool_velocity(e, 0, v2, w2, &err), 0, "%s", err.msg);
        }
        cr_assert_eq(firn_world_substep(w, dt, &err), 0, "%s", err.msg);
        cr_assert_eq(firn_world_substep(e, dt, &err), 0, "%s", err.msg);
        firn_tool_state a = state_of(w, 0), b = state_of(e, 0);
        cr_assert(!memcmp(a.position, b.position, sizeof a.position) &&
                      !memcmp(a.orientation, b.orientation, sizeof a.orientation),
                  "substep %d: pose (%.9g, %.9g, %.9g) differs from the free path's (%.9g, %.9g, "
                  "%.9g)",
                  k, a.position[0], a.position[1], a.position[2], b.position[0], b.position[1],
                  b.position[2]);
        if (k == 119) {
            /* x0 + v t, and a rotation of 0.5 t about y. */
            const double time = 120.0 * dt;
            cr_assert(fabs(a.position[0] - (0.25 + time)) < 1e-5, "x %.7g", a.position[0]);
            cr_assert(fabs(a.orientation[0] - cos(0.25 * time)) < 1e-6 &&
                          fabs(a.orientation[2] - sin(0.25 * time)) < 1e-6,
                      "q (%g, %g, %g, %g)", a.orientation[0], a.orientation[1], a.orientation[2],
                      a.orientation[3]);
            cr_assert(fabs(a.force[0]) > 1.0, "the blade met no sand: force %g N", a.force[0]);
        }
    }
    firn_tool_state a = state_of(w, 0);
    for (int c = 0; c < 3; c++)
        cr_assert(a.velocity[c] == v2[c] && a.angular_velocity[c] == w2[c],
                  "commanded velocity not kept");
    firn_world_destroy(w);
    firn_world_destroy(e);
}

/* No gravity, walls far away: a tool moving through a resting sand block
 * gives the particles exactly the momentum it reports as the material's
 * impulse on it, with the opposite sign. */
Test(tool_world, newtons_third_law_over_a_run, .timeout = 120)
{
    firn_scene_def def;
    scene(&def, 1.0f / 32.0f);
    for (int a = 0; a < 3; a++)
        def.gravity[a] = 0.0f;
    add_box(&def, (float[3]){0.35f, 0.35f, 0.35f}, (float[3]){0.65f, 0.65f, 0.65f});
    firn_tool_def *t =
        add_tool(&def, "pusher", (float[3]){0.27f, 0.52f, 0.5f}, (float[3]){0.06f, 0.2f, 0.2f});
    t->velocity[0] = 1.5f;
    t->velocity[1] = -0.3f;
    t->angular_velocity[2] = 2.0f;
    t->friction = 0.4f;
    firn_world *w = make_world(&def);
    firn_error err;
    firn_frame_stats s0, s1;
    cr_assert_eq(firn_world_stats(w, &s0, &err), 0, "%s", err.msg);
    for (int f = 0; f < 8; f++)
        cr_assert_eq(firn_world_step_frame(w, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(w, &s1, &err), 0, "%s", err.msg);
    firn_tool_state ts = state_of(w, 0);
    double scale = 0.0;
    for (int a = 0; a < 3; a++)
        scale += fabs(ts.impulse[a]);
    cr_assert(scale > 0.5, "no push happened: |J| = %g N s", scale);
    for (int a = 0; a < 3; a++) {
        double dP = s1.momentum[a] - s0.momentum[a];
        cr_assert(fabs(dP + ts.impulse[a]) < 2e-5 * scale,
                  "axis %d: particles gained %.9g, the tool reports %.9g (sum %.3g)", a, dP,
                  ts.impulse[a], dP + ts.impulse[a]);
    }
    double worst = 0.0;
    for (int a = 0; a < 3; a++)
        worst = fmax(worst, fabs(s1.momentum[a] - s0.momentum[a] + ts.impulse[a]));
    cr_log_info("tool Newton: |J| %.6g N s, worst |dP + J| %.3g (%.2g of |J|)", scale, worst,
                worst / scale);
    cr_assert(fabs(ts.angular_impulse[2]) > 0.0, "no torque reported");
    firn_world_destroy(w);
}

/* The reaction is summed per chunk of nodes, the chunks in order: the
 * same bits for any thread count. */
Test(tool_world, reaction_is_the_same_for_any_thread_count, .timeout = 120)
{
    firn_scene_def def;
    scene(&def, 1.0f / 32.0f);
    add_box(&def, (float[3]){0.35f, 0.1f, 0.35f}, (float[3]){0.65f, 0.3f, 0.65f});
    firn_tool_def *t =
        add_tool(&def, "blade", (float[3]){0.3f, 0.2f, 0.5f}, (float[3]){0.03f, 0.2f, 0.25f});
    t->velocity[0] = 1.0f;
    t->angular_velocity[1] = 1.0f;
    t->friction = 0.3f;
    firn_tool_state st[2];
    const int max = omp_get_max_threads();
    for (int r = 0; r < 2; r++) {
        omp_set_num_threads(r == 0 ? 1 : (max > 1 ? max : 2));
        firn_world *w = make_world(&def);
        firn_error err;
        for (int f = 0; f < 4; f++)
            cr_assert_eq(firn_world_step_frame(w, NULL, &err), 0, "%s", err.msg);
        st[r] = state_of(w, 0);
        firn_world_destroy(w);
    }
    omp_set_num_threads(max);
    cr_assert(fabs(st[0].impulse[0]) > 0.0, "the blade met no sand");
    cr_assert(!memcmp(&st[0], &st[1], sizeof st[0]),
              "1 thread: J (%.9g, %.9g, %.9g), more: (%.9g, %.9g, %.9g)", st[0].impulse[0],
              st[0].impulse[1], st[0].impulse[2], st[1].impulse[0], st[1].impulse[1],
              st[1].impulse[2]);
}

/* A plate wider than the domain under a sand column between frictionless
 * walls carries the column's whole weight once it has settled: the mean
 * vertical force over a frame is -M g within 3 %. */
Test(tool_world, plate_carries_a_settled_sand_column, .timeout = 240)
{
    firn_scene_def def;
    scene(&def, 0.02f);
    for (int a = 0; a < 3; a++)
        def.upper[a] = a == 1 ? 0.4f : 0.2f;
    add_box(&def, (float[3]){0.04f, 0.12f, 0.04f}, (float[3]){0.16f, 0.22f, 0.16f});
    add_tool(&def, "plate", (float[3]){0.1f, 0.08f, 0.1f}, (float[3]){0.6f, 0.08f, 0.6f});
    firn_world *w = make_world(&def);
    firn_error err;
    firn_frame_stats s;
    for (int f = 0; f < 70; f++) /* 0.7 s: the column's slow bounce has died down by then */
        cr_assert_eq(firn_world_step_frame(w, &s, &err), 0, "%s", err.msg);
    const double weight = s.mass * 9.81;
    const firn_tool_state *t = &s.tools[0];
    cr_assert_eq(s.n_tools, 1);
    cr_log_info("plate: frame mean %.5g N, last substep %.5g N, weight %.5g N (%+.2f %%)",
                -t->force_mean[1], -t->force[1], weight,
                100.0 * (-t->force_mean[1] - weight) / weight);
    cr_assert(fabs(-t->force_mean[1] - weight) < 0.03 * weight,
              "plate carries %.5g N (frame mean; last substep %.5g N), the column weighs %.5g N",
              -t->force_mean[1], -t->force[1], weight);
    cr_assert(fabs(t->force_mean[0]) < 0.03 * weight && fabs(t->force_mean[2]) < 0.03 * weight,
              "sideways force (%g, %g) N on a level plate", t->force_mean[0], t->force_mean[2]);
    firn_world_destroy(w);
}

/* ---- the C API -------------------------------------------------------------- */

Test(tool_api, refusals_change_nothing, .timeout = 60)
{
    firn_scene_def def;
    scene(&def, 0.04f);
    add_box(&def, (float[3]){0.3f, 0.1f, 0.3f}, (float[3]){0.6f, 0.3f, 0.6f});
    add_tool(&def, "knife", (float[3]){0.2f, 0.5f, 0.5f}, (float[3]){0.01f, 0.2f, 0.2f})
        ->velocity[1] = -0.2f;
    add_tool(&def, "rake", (float[3]){0.8f, 0.5f, 0.5f}, (float[3]){0.05f, 0.05f, 0.3f});
    firn_world *w = make_world(&def);
    firn_error err;
    cr_assert_eq(firn_world_tool_count(w), 2);
    cr_assert_eq(firn_world_tool_index(w, "rake"), 1);
    cr_assert_eq(firn_world_tool_index(w, "knife"), 0);
    cr_assert_eq(firn_world_tool_index(w, "spoon"), -1);
    cr_assert_eq(firn_world_tool_index(w, NULL), -1);
    firn_tool_state before = state_of(w, 0), after, dummy;
    memset(&dummy, 0x5a, sizeof dummy);
    const float ok[3] = {0.1f, 0.0f, 0.0f};
    const float bad[3][3] = {{NAN, 0.0f, 0.0f}, {0.0f, INFINITY, 0.0f}, {0.0f, 0.0f, -INFINITY}};
    for (int k = 0; k < 3; k++) {
        err.code = FIRN_OK;
        cr_assert_neq(firn_world_set_tool_velocity(w, 0, bad[k], ok, &err), 0);
        cr_assert_eq(err.code, FIRN_E_USAGE);
        cr_assert(strstr(err.msg, "knife") && strstr(err.msg, "not finite"), "%s", err.msg);
        cr_assert_neq(firn_world_set_tool_velocity(w, 0, ok, bad[k], &err), 0);
        cr_assert(strstr(err.msg, "w["), "%s", err.msg);
    }
    cr_assert_neq(firn_world_set_tool_velocity(w, 2, ok, ok, &err), 0);
    cr_assert(strstr(err.msg, "no tool 2"), "%s", err.msg);
    cr_assert_neq(firn_world_set_tool_velocity(w, -1, ok, ok, &err), 0);
    cr_assert_neq(firn_world_set_tool_velocity(w, 0, NULL, ok, NULL), 0);
    cr_assert_neq(firn_world_tool_state(w, 2, &dummy), 0);
    cr_assert_neq(firn_world_tool_state(w, -1, &dummy), 0);
    unsigned char fill[sizeof dummy];
    memset(fill, 0x5a, sizeof fill);
    cr_assert(!memcmp(&dummy, fill, sizeof fill), "a refused tool_state wrote to out");
    after = state_of(w, 0);
    cr_assert(!memcmp(&before, &after, sizeof before), "a refused call changed the tool");
    /* And the world steps on as commanded at creation. */
    cr_assert_eq(firn_world_substep(w, 1e-3f, &err), 0, "%s", err.msg);
    after = state_of(w, 0);
    cr_assert(after.position[1] == before.position[1] + 1e-3f * -0.2f, "y %.9g", after.position[1]);
    firn_world_destroy(w);
}

/* Tools run on both paths: auto takes the GPU when there is one. */
Test(tool_api, auto_takes_the_gpu_when_there_is_one)
{
    firn_scene_def def;
    scene(&def, 0.04f);
    add_box(&def, (float[3]){0.3f, 0.1f, 0.3f}, (float[3]){0.6f, 0.3f, 0.6f});
    add_tool(&def, "finger", (float[3]){0.2f, 0.5f, 0.5f}, (float[3]){0.02f, 0.1f, 0.02f});
    firn_error err;
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_AUTO, &err);
    cr_assert(w, "%s", err.msg);
    cr_assert_eq(firn_world_backend(w),
                 firn_cuda_device_count() > 0 ? FIRN_BACKEND_CUDA : FIRN_BACKEND_CPU);
    firn_world_destroy(w);
}

/* ---- scene keys ------------------------------------------------------------- */

static const char *tool_scene(const char *tool)
{
    static char text[2048];
    snprintf(text, sizeof text,
             "{\"materials\": {\"sand\": {\"model\": \"sand\"}},"
             " \"bodies\": [{\"material\": \"sand\", \"shape\": {\"type\": \"box\", \"center\": "
             "[0.5, 0.2, 0.5], \"size\": [0.2, 0.2, 0.2]}}],"
             " \"tools\": [%s]}",
             tool);
    return text;
}

Test(tool_scene, keys_and_defaults)
{
    firn_scene_def def;
    firn_error err;
    cr_assert_eq(
        firn_scene_parse_json(
            tool_scene("{\"name\": \"spatula\", \"shape\": {\"type\": \"box\", \"center\": "
                       "[0.3, 0.5, 0.5], \"size\": [0.1, 0.01, 0.1]}}"),
            "t.json", &def, &err),
        0, "%s", err.msg);
    cr_assert_eq(def.n_tools, 1);
    cr_assert_str_eq(def.tools[0].name, "spatula");
    cr_assert(def.tools[0].friction == 0.0f && def.tools[0].softness == 0.01f &&
              def.tools[0].collision == 1 && def.coupling.tool_mpm == 1);
    cr_assert_eq(
        firn_scene_parse_json(
            tool_scene("{\"name\": \"rake\", \"shape\": {\"type\": \"capsule\", \"radius\": 0.02, "
                       "\"height\": 0.2, \"axis\": \"z\"}, \"friction\": 0.4, \"softness\": 0.002, "
                       "\"collision\": false, \"keyframes\": [{\"t\": 0, \"position\": [0.2, 0.5, "
                       "0.5]}, {\"t\": 1, \"position\": [0.8, 0.5, 0.5], \"rotation\": [0, 90, "
                       "0]}]}"),
            "t.json", &def, &err),
        0, "%s", err.msg);
    cr_assert(def.tools[0].friction == 0.4f && def.tools[0].softness == 0.002f &&
              def.tools[0].collision == 0 && def.tools[0].n_keyframes == 2 &&
              def.tools[0].shape.center[0] == 0.2f);
}

static void refused(const char *tool, const char *want)
{
    firn_scene_def def;
    firn_error err;
    cr_assert_neq(firn_scene_parse_json(tool_scene(tool), "t.json", &def, &err), 0, "%s", tool);
    cr_assert(strstr(err.msg, want), "%s: got \"%s\", want \"%s\"", tool, err.msg, want);
}

Test(tool_scene, bad_tools_name_the_key_path)
{
    refused("{\"shape\": {\"type\": \"box\"}}", "tools[0].name");
    refused("{\"name\": \"a\"}", "tools[0].shape: missing");
    refused("{\"name\": \"a\", \"shape\": {\"type\": \"plane\"}}", "tools[0].shape.type");
    refused("{\"name\": \"a\", \"shape\": {\"type\": \"box\"}, \"softness\": -1}",
            "tools[0].softness = -1");
    refused("{\"name\": \"a\", \"shape\": {\"type\": \"box\"}, \"friction\": -0.1}",
            "tools[0].friction");
    refused("{\"name\": \"a\", \"shape\": {\"type\": \"box\"}, \"mass\": 1}", "tools[0]");
    refused("{\"name\": \"a\", \"shape\": {\"type\": \"box\"}}, {\"name\": \"a\", \"shape\": "
            "{\"type\": \"box\"}}",
            "tools[1].name");
    refused("{\"name\": \"a\", \"shape\": {\"type\": \"box\"}, \"velocity\": [1, 0, 0], "
            "\"keyframes\": [{\"t\": 0, \"position\": [0.5, 0.5, 0.5]}]}",
            "tools[0].velocity");
    refused("{\"name\": \"a\", \"shape\": {\"type\": \"box\"}, \"keyframes\": [{\"t\": 1, "
            "\"position\": [0.5, 0.5, 0.5]}, {\"t\": 0.5, \"position\": [0.5, 0.5, 0.5]}]}",
            "tools[0].keyframes[1].t");
}

/* A tool may be an OBJ mesh, as a rigid can: its sampled SDF acts on the
 * material. */
Test(tool_scene, a_mesh_tool_pushes_the_material, .timeout = 60)
{
    firn_scene_def def;
    scene(&def, 0.02f);
    add_box(&def, (float[3]){0.3f, 0.04f, 0.3f}, (float[3]){0.7f, 0.16f, 0.7f});
    firn_tool_def *t = add_tool(&def, "rock", (float[3]){0.5f, 0.25f, 0.5f}, (float[3]){0, 0, 0});
    t->shape.type = FIRN_RSHAPE_MESH;
    snprintf(t->shape.file, FIRN_PATH_MAX, "scenes/assets/rock.obj");
    t->shape.scale = 0.15f;
    t->velocity[1] = -1.0f;
    firn_world *w = make_world(&def);
    firn_error err;
    for (int f = 0; f < 8; f++)
        cr_assert_eq(firn_world_step_frame(w, NULL, &err), 0, "%s", err.msg);
    firn_tool_state s = state_of(w, 0);
    cr_assert(s.impulse[1] > 0.01, "a rock pressed into sand feels no push up: J_y %g N s",
              s.impulse[1]);
    firn_world_destroy(w);
}
