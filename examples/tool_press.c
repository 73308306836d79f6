/* tool_press.c - a tool driven from C with a simple force controller.
 *
 *   build/tool_press [--csv]
 *
 * A 6 x 6 cm plate (a firn tool) above a 4 cm bed of dry sand presses down
 * at 5 cm/s until the sand pushes back with FORCE_LIMIT newtons, holds
 * still for 0.1 s, then lifts at 5 cm/s. Each 5 ms frame it reads the
 * force the sand exerts on the plate (firn_world_tool_state: the frame's
 * mean) and sets the plate's velocity (firn_world_set_tool_velocity), as a
 * robot's controller would. Prints one line per frame: time, phase, the
 * plate's height and the vertical force; exits non-zero on any error. The
 * whole world is built in code (no scene file), on the GPU when there is
 * one (FIRN_BACKEND_AUTO), else on the CPU path. */
#include <stdio.h>
#include <string.h>

#include "firn.h"

#define FORCE_LIMIT 2.0f /* [N]: the weight of about 200 g */
#define SPEED       0.05f

static firn_world *make_world(firn_error *err)
{
    firn_scene_def def;
    firn_scene_default(&def);
    const float lo[3] = {0.0f, 0.0f, 0.0f}, hi[3] = {0.2f, 0.15f, 0.2f};
    memcpy(def.lower, lo, sizeof lo);
    memcpy(def.upper, hi, sizeof hi);
    def.dx = 0.005f;
    def.frame_dt = 0.005f;
    def.frames = 200;
    def.write_ply = def.write_preview = 0;
    def.n_materials = 1;
    firn_material_default(&def.materials[0], FIRN_MODEL_SAND);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "sand");
    def.materials[0].E = 3.5e5f;
    def.materials[0].density = 1600.0f;
    def.materials[0].friction_angle = 35.0f;
    def.n_bodies = 1;
    firn_body_default(&def.bodies[0]);
    def.bodies[0].shape.type = FIRN_SHAPE_BOX;
    const float bc[3] = {0.1f, 0.035f, 0.1f}, bs[3] = {0.16f, 0.04f, 0.16f};
    memcpy(def.bodies[0].shape.center, bc, sizeof bc);
    memcpy(def.bodies[0].shape.size, bs, sizeof bs);
    def.n_tools = 1;
    firn_tool_def *t = &def.tools[0];
    firn_tool_default(t);
    snprintf(t->name, FIRN_NAME_MAX, "plate");
    t->shape.type = FIRN_RSHAPE_BOX;
    const float tc[3] = {0.1f, 0.07f, 0.1f}, ts[3] = {0.06f, 0.006f, 0.06f};
    memcpy(t->shape.center, tc, sizeof tc);
    memcpy(t->shape.size, ts, sizeof ts);
    t->softness = 0.002f;
    return firn_world_create(&def, FIRN_BACKEND_AUTO, err);
}

int main(int argc, char **argv)
{
    const int csv = argc > 1 && !strcmp(argv[1], "--csv");
    firn_error err = {0};
    firn_world *w = make_world(&err);
    if (!w) {
        fprintf(stderr, "tool_press: %s\n", err.msg);
        return 1;
    }
    const int plate = firn_world_tool_index(w, "plate");
    enum { PRESS, HOLD, LIFT } phase = PRESS;
    static const char *const names[] = {"press", "hold", "lift"};
    const float down[3] = {0.0f, -SPEED, 0.0f}, still[3] = {0.0f, 0.0f, 0.0f},
                up[3] = {0.0f, SPEED, 0.0f};
    float held = 0.0f, peak = 0.0f;
    int rc = firn_world_set_tool_velocity(w, plate, down, still, &err);
    printf(csv ? "t_s,phase,y_m,force_y_N\n" : "%7s %-6s %8s %10s\n", "t [s]", "phase", "y [m]",
           "Fy [N]");
    firn_frame_stats st;
    for (int f = 1; f <= 200 && !rc; f++) {
        if ((rc = firn_world_step_frame(w, &st, &err)))
            break;
        firn_tool_state s;
        if ((rc = firn_world_tool_state(w, plate, &s)))
            break;
        const float fy = s.force_mean[1];
        peak = fy > peak ? fy : peak;
        printf(csv ? "%.4f,%s,%.5f,%.4f\n" : "%7.3f %-6s %8.5f %10.4f\n", (double)st.time,
               names[phase], (double)s.position[1], (double)fy);
        /* The controller: press until the sand holds the limit, hold,
         * lift until clear. */
        if (phase == PRESS && fy >= FORCE_LIMIT) {
            phase = HOLD;
            rc = firn_world_set_tool_velocity(w, plate, still, still, &err);
        } else if (phase == HOLD && (held += 0.005f) >= 0.1f) {
            phase = LIFT;
            rc = firn_world_set_tool_velocity(w, plate, up, still, &err);
        } else if (phase == LIFT && s.position[1] > 0.09f) {
            break;
        }
    }
    if (rc) {
        fprintf(stderr, "tool_press: %s\n", err.msg);
        firn_world_destroy(w);
        return 1;
    }
    fprintf(stderr, "tool_press: peak force %.3f N, limit %.3f N\n", (double)peak,
            (double)FORCE_LIMIT);
    firn_world_destroy(w);
    return phase == LIFT ? 0 : 2; /* 2: the limit was never reached */
}
