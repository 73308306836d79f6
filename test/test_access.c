/* test_access.c - the direct-access API of firn.h (host/access.c): the
 * world's clocks, zero-copy views of rigid bodies, commanding a kinematic
 * body's velocity, and the public structs' sizes that bindings check their
 * mirrors against. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "firn.h"

/* A small sand block on the floor and three rigid boxes far from it: one
 * static, one kinematic (keyframed, so that a command must stop that), one
 * dynamic. */
static firn_world *make_world(void)
{
    firn_scene_def def;
    firn_scene_default(&def);
    for (int a = 0; a < 3; a++) {
        def.lower[a] = 0.0f;
        def.upper[a] = 1.0f;
    }
    def.dx = 0.05f;
    def.frame_dt = 0.01f;
    def.dt = 1e-3f;
    def.write_ply = def.write_preview = 0;
    def.n_materials = 1;
    firn_material_default(&def.materials[0], FIRN_MODEL_SAND);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "sand");
    def.n_bodies = 1;
    firn_body_default(&def.bodies[0]);
    def.bodies[0].shape.type = FIRN_SHAPE_BOX;
    const float c[3] = {0.25f, 0.16f, 0.25f}, s[3] = {0.15f, 0.1f, 0.15f};
    memcpy(def.bodies[0].shape.center, c, sizeof c);
    memcpy(def.bodies[0].shape.size, s, sizeof s);
    const firn_motion motion[3] = {FIRN_RIGID_STATIC, FIRN_RIGID_KINEMATIC, FIRN_RIGID_DYNAMIC};
    const char *const names[3] = {"post", "arm", "crate"};
    def.n_rigids = 3;
    for (int k = 0; k < 3; k++) {
        firn_rigid_def *r = &def.rigids[k];
        firn_rigid_default(r);
        snprintf(r->name, FIRN_NAME_MAX, "%s", names[k]);
        r->motion = motion[k];
        r->shape.type = FIRN_RSHAPE_BOX;
        const float rc[3] = {0.3f + 0.2f * k, 0.7f, 0.7f}, rs[3] = {0.06f, 0.06f, 0.06f};
        memcpy(r->shape.center, rc, sizeof rc);
        memcpy(r->shape.size, rs, sizeof rs);
    }
    firn_rigid_def *arm = &def.rigids[1];
    arm->n_keyframes = 2;
    arm->keyframes[0].t = 0.0f;
    memcpy(arm->keyframes[0].position, arm->shape.center, sizeof arm->shape.center);
    arm->keyframes[1] = arm->keyframes[0];
    arm->keyframes[1].t = 1.0f;
    arm->keyframes[1].position[2] -= 0.3f;
    firn_error err;
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    cr_assert_not_null(w, "%s", err.msg);
    return w;
}

/* A commanded kinematic body moves along v t and turns by omega t about
 * its axis, whatever its keyframes said: the closed form, within float
 * rounding over the substeps. */
Test(access, kinematic_rigid_follows_commanded_velocity, .timeout = 60)
{
    firn_world *w = make_world();
    firn_error err;
    firn_rigid_view r;
    cr_assert_eq(firn_world_rigid_count(w), 3);
    cr_assert_eq(firn_world_rigid_view(w, 1, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(r.motion, FIRN_RIGID_KINEMATIC);
    double x0[3];
    for (int a = 0; a < 3; a++)
        x0[a] = r.position[a];
    const float v[3] = {0.25f, -0.1f, 0.05f}, om[3] = {0.0f, 2.0f, 0.0f};
    cr_assert_eq(firn_world_set_rigid_velocity(w, 1, v, om, &err), 0, "%s", err.msg);
    const int n = 200;
    const float dt = 1e-3f;
    cr_assert_eq(firn_world_run_substeps(w, n, dt, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_rigid_view(w, 1, &r, &err), 0, "%s", err.msg);
    const double t = n * (double)dt;
    for (int a = 0; a < 3; a++)
        cr_assert(fabs(r.position[a] - (x0[a] + v[a] * t)) < 1e-5,
                  "x[%d] = %.7g after %g s, want %.7g", a, r.position[a], t, x0[a] + v[a] * t);
    /* A turn of omega t about +y: q = (cos(theta/2), 0, sin(theta/2), 0). */
    const double half = 0.5 * om[1] * t, want[4] = {cos(half), 0.0, sin(half), 0.0};
    for (int a = 0; a < 4; a++)
        cr_assert(fabs(r.orientation[a] - want[a]) < 1e-5, "q[%d] = %.7g, want %.7g", a,
                  r.orientation[a], want[a]);
    for (int a = 0; a < 3; a++) {
        cr_assert_eq(r.velocity[a], v[a]);
        cr_assert_eq(r.angular_velocity[a], om[a]);
    }
    firn_world_destroy(w);
}

/* Refusals: unknown, static and dynamic bodies, NULL and non-finite
 * components; none changes the body. */
Test(access, refusals_change_nothing, .timeout = 60)
{
    firn_world *w = make_world();
    firn_error err;
    firn_rigid_view r;
    cr_assert_eq(firn_world_rigid_view(w, 1, &r, &err), 0, "%s", err.msg);
    float before[13];
    memcpy(before, r.position, 3 * sizeof(float));
    memcpy(before + 3, r.orientation, 4 * sizeof(float));
    memcpy(before + 7, r.velocity, 3 * sizeof(float));
    memcpy(before + 10, r.angular_velocity, 3 * sizeof(float));
    const float ok[3] = {0.1f, 0.0f, 0.0f};
    const float bad[3][3] = {{NAN, 0.0f, 0.0f}, {0.0f, INFINITY, 0.0f}, {0.0f, 0.0f, -INFINITY}};
    for (int k = 0; k < 3; k++) {
        err.code = FIRN_OK;
        cr_assert_neq(firn_world_set_rigid_velocity(w, 1, bad[k], ok, &err), 0);
        cr_assert_eq(err.code, FIRN_E_USAGE);
        cr_assert(strstr(err.msg, "arm") && strstr(err.msg, "not finite"), "%s", err.msg);
        cr_assert_neq(firn_world_set_rigid_velocity(w, 1, ok, bad[k], &err), 0);
        cr_assert(strstr(err.msg, "w["), "%s", err.msg);
    }
    cr_assert_neq(firn_world_set_rigid_velocity(w, 0, ok, ok, &err), 0);
    cr_assert(strstr(err.msg, "static"), "%s", err.msg);
    cr_assert_neq(firn_world_set_rigid_velocity(w, 2, ok, ok, &err), 0);
    cr_assert(strstr(err.msg, "dynamic"), "%s", err.msg);
    cr_assert_neq(firn_world_set_rigid_velocity(w, 3, ok, ok, &err), 0);
    cr_assert(strstr(err.msg, "no rigid body 3"), "%s", err.msg);
    cr_assert_neq(firn_world_set_rigid_velocity(w, -1, ok, ok, NULL), 0);
    cr_assert_neq(firn_world_set_rigid_velocity(w, 1, NULL, ok, &err), 0);
    cr_assert_neq(firn_world_rigid_view(w, 3, &r, &err), 0);
    cr_assert_eq(err.code, FIRN_E_USAGE);
    cr_assert_eq(firn_world_rigid_view(w, 1, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(before, r.position, 3 * sizeof(float)), 0);
    cr_assert_eq(memcmp(before + 3, r.orientation, 4 * sizeof(float)), 0);
    cr_assert_eq(memcmp(before + 7, r.velocity, 3 * sizeof(float)), 0);
    cr_assert_eq(memcmp(before + 10, r.angular_velocity, 3 * sizeof(float)), 0);
    firn_world_destroy(w);
}

/* The view is the state, not a copy: it agrees with the frame statistics,
 * and the clocks with theirs. */
Test(access, views_and_clock_agree_with_stats, .timeout = 60)
{
    firn_world *w = make_world();
    firn_error err;
    firn_frame_stats st;
    int frame = -1;
    double time = -1.0;
    long long substeps = -1;
    firn_world_clock(w, &frame, &time, &substeps);
    cr_assert(frame == 0 && time == 0.0 && substeps == 0);
    for (int f = 0; f < 3; f++)
        cr_assert_eq(firn_world_step_frame(w, &st, &err), 0, "%s", err.msg);
    firn_world_clock(w, &frame, &time, &substeps);
    cr_assert_eq(frame, 3);
    cr_assert_eq(time, st.time);
    cr_assert_eq(substeps, st.substeps);
    cr_assert_eq(substeps, 30); /* dt 1 ms, 10 ms frames */
    firn_world_clock(w, NULL, NULL, NULL);
    for (int k = 0; k < 3; k++) {
        firn_rigid_view r;
        cr_assert_eq(firn_world_rigid_view(w, k, &r, &err), 0, "%s", err.msg);
        cr_assert_eq(memcmp(r.position, st.rigids[k].position, 3 * sizeof(float)), 0);
        cr_assert_eq(memcmp(r.orientation, st.rigids[k].orientation, 4 * sizeof(float)), 0);
        cr_assert_eq(memcmp(r.velocity, st.rigids[k].velocity, 3 * sizeof(float)), 0);
    }
    /* The dynamic crate has fallen for 30 ms: v_y = -g t, to float rounding. */
    cr_assert(fabs(st.rigids[2].velocity[1] + 9.81 * 0.03) < 1e-4, "v_y = %g",
              st.rigids[2].velocity[1]);
    firn_world_destroy(w);
}

Test(access, struct_sizes)
{
    cr_assert_eq(firn_struct_size("firn_scene_def"), sizeof(firn_scene_def));
    cr_assert_eq(firn_struct_size("firn_frame_stats"), sizeof(firn_frame_stats));
    cr_assert_eq(firn_struct_size("firn_tool_state"), sizeof(firn_tool_state));
    cr_assert_eq(firn_struct_size("firn_particles_view"), sizeof(firn_particles_view));
    cr_assert_eq(firn_struct_size("firn_sph_particles_view"), sizeof(firn_sph_particles_view));
    cr_assert_eq(firn_struct_size("firn_pbd_particles_view"), sizeof(firn_pbd_particles_view));
    cr_assert_eq(firn_struct_size("firn_fem_mesh_view"), sizeof(firn_fem_mesh_view));
    cr_assert_eq(firn_struct_size("firn_rigid_view"), sizeof(firn_rigid_view));
    cr_assert_eq(firn_struct_size("firn_error"), sizeof(firn_error));
    cr_assert_eq(firn_struct_size("firn_world"), 0);
    cr_assert_eq(firn_struct_size(NULL), 0);
}
