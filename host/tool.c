/* tool.c - the tool solver: tools built from the scene (shapes as the
 * rigid bodies', host/rigid.c; keyframes the same), advected before
 * coupling (firn_tool_advect, include/firn_tool.h), their reaction
 * recorded after it, and the C API that commands their velocities and
 * reads their state. The grid update that applies their collision is the
 * Coupler's (host/coupler.c). On the CUDA path the same phases run on the
 * device (kernels/tool.cu) and the host mirror of the tools and their
 * records is read back at the end of every call of substeps. */
#include <math.h>
#include <string.h>

#include "cuda_backend.h"
#include "error.h"
#include "mesh.h"
#include "rigid.h"
#include "scene_def.h"
#include "tool.h"
#include "world.h"

int firn_tools_init(firn_world *w, firn_error *err)
{
    const firn_scene_def *d = &w->def;
    w->n_tools = d->n_tools;
    memset(w->tools, 0, sizeof w->tools);
    memset(w->tool_acc, 0, sizeof w->tool_acc);
    memset(w->tool_rec, 0, sizeof w->tool_rec);
    w->tool_frame_time = 0.0;
    for (int k = 0; k < d->n_tools; k++) {
        const firn_tool_def *td = &d->tools[k];
        firn_tool *t = &w->tools[k];
        firn_rigid *b = &t->body;
        if (td->shape.type == FIRN_RSHAPE_MESH) {
            const firn_mesh *mesh;
            firn_error e;
            if (firn_mesh_get(td->shape.file, td->shape.scale, 1, &mesh, &e)) {
                firn_set_error(err, e.code, "%s%stools[%d].shape.file: %s", d->source,
                               d->source[0] ? ": " : "", k, e.msg);
                return -1;
            }
        }
        b->shape = firn_rigid_sdf_shape(&td->shape);
        b->motion = FIRN_MOTION_KINEMATIC;
        b->q = firn_rotation_quat(td->rotation);
        for (int a = 0; a < 3; a++) {
            b->x[a] = td->shape.center[a];
            b->v[a] = td->velocity[a];
            b->w[a] = td->angular_velocity[a];
        }
        if (td->n_keyframes > 0) {
            /* The rigid bodies' keyframe set-up, through a kinematic rigid. */
            firn_rigid_def rd;
            firn_tool_as_rigid(td, &rd);
            firn_rigid_init_keyframes(b, &rd);
            firn_key_pose(b, 0.0, b->x, &b->q);
            firn_key_velocity(b, 0.0, b->v, b->w);
        }
        for (int a = 0; a < 3; a++)
            t->x0[a] = b->x[a];
        t->q0 = b->q;
        t->friction = td->friction;
        t->softness = td->softness;
        t->collision = td->collision && d->coupling.tool_mpm;
    }
    return 0;
}

void firn_tools_begin_frame(firn_world *w)
{
    for (int k = 0; k < w->n_tools; k++)
        memset(w->tool_rec[k].frame, 0, sizeof w->tool_rec[k].frame);
    w->tool_frame_time = 0.0;
    /* The device's frame sums restart at the next substep's record. */
    w->tool_frame_reset = w->cuda != NULL;
}

float firn_tools_max_speed(const firn_world *w, int *which)
{
    float s = 0.0f;
    if (which)
        *which = -1;
    for (int k = 0; k < w->n_tools; k++) {
        const firn_tool *t = &w->tools[k];
        const firn_rigid *b = &t->body;
        if (!t->collision)
            continue;
        float v = sqrtf(b->v[0] * b->v[0] + b->v[1] * b->v[1] + b->v[2] * b->v[2]);
        float om = sqrtf(b->w[0] * b->w[0] + b->w[1] * b->w[1] + b->w[2] * b->w[2]);
        if (b->n_keys > 0)
            firn_key_max_speed(b, b->time, b->time + w->def.frame_dt, &v, &om);
        const firn_sdf_shape *sh = &b->shape;
        float reach = sqrtf(sh->half[0] * sh->half[0] + sh->half[1] * sh->half[1] +
                            sh->half[2] * sh->half[2]);
        if (sh->type != FIRN_SDF_BOX)
            reach += sh->radius;
        /* NaN (a velocity that is not a number) wins, so that the CFL
         * check sees it. */
        if (!(v + om * reach <= s)) {
            s = v + om * reach;
            if (which)
                *which = k;
            if (isnan(s))
                return s;
        }
    }
    return s;
}

static int tool_active(const firn_world *w) { return w->n_tools > 0; }

/* Genesis's order: the pose advects before coupling; the coupling's
 * reaction sums start from zero. */
static int tool_pre_coupling(firn_world *w, firn_step *st)
{
    (void)st;
    for (int k = 0; k < w->n_tools; k++)
        firn_tool_advect(&w->tools[k], w->params.dt);
    memset(w->tool_acc, 0, sizeof w->tool_acc);
    return 0;
}

/* The coupling's reaction into the records, in tool order. */
static int tool_post_coupling(firn_world *w, firn_step *st)
{
    (void)st;
    for (int k = 0; k < w->n_tools; k++)
        firn_tool_record_add(&w->tool_rec[k], w->tool_acc + FIRN_TOOL_ACC * k, w->params.dt, 0);
    w->tool_frame_time += w->params.dt;
    return 0;
}

const firn_solver firn_tool_solver = {
    .name = "tool",
    .is_active = tool_active,
    .cpu = {NULL, tool_pre_coupling, tool_post_coupling},
    .cuda = &firn_cuda_tool_phases,
    .prof_pre = FIRN_PROF_COUPLE,
    .prof_post = FIRN_PROF_GRID,
};

void firn_tool_fill_state(const firn_world *w, int k, firn_tool_state *out)
{
    const firn_tool *t = &w->tools[k];
    const firn_rigid *b = &t->body;
    const firn_tool_record *r = &w->tool_rec[k];
    const double inv_dt = r->last_dt > 0.0f ? 1.0 / r->last_dt : 0.0;
    const double inv_ft = w->tool_frame_time > 0.0 ? 1.0 / w->tool_frame_time : 0.0;
    memset(out, 0, sizeof *out);
    for (int a = 0; a < 3; a++) {
        out->position[a] = b->x[a];
        out->velocity[a] = b->v[a];
        out->angular_velocity[a] = b->w[a];
        out->force[a] = (float)(r->last[a] * inv_dt);
        out->torque[a] = (float)(r->last[3 + a] * inv_dt);
        out->force_mean[a] = (float)(r->frame[a] * inv_ft);
        out->torque_mean[a] = (float)(r->frame[3 + a] * inv_ft);
        out->impulse[a] = r->total[a];
        out->angular_impulse[a] = r->total[3 + a];
    }
    for (int a = 0; a < 4; a++)
        out->orientation[a] = b->q.q[a];
}

/* ---- C API ----------------------------------------------------------------- */

int firn_world_tool_count(const firn_world *w) { return w->n_tools; }

int firn_world_tool_index(const firn_world *w, const char *name)
{
    if (!name)
        return -1;
    for (int k = 0; k < w->n_tools; k++)
        if (!strcmp(w->def.tools[k].name, name))
            return k;
    return -1;
}

int firn_world_set_tool_velocity(firn_world *w, int tool, const float v[3], const float om[3],
                                 firn_error *err)
{
    if (tool < 0 || tool >= w->n_tools) {
        firn_set_error(err, FIRN_E_USAGE,
                       "firn_world_set_tool_velocity: no tool %d (the world has %d)", tool,
                       w->n_tools);
        return -1;
    }
    if (!v || !om) {
        firn_set_error(err, FIRN_E_USAGE, "firn_world_set_tool_velocity: tool '%s': %s is NULL",
                       w->def.tools[tool].name, !v ? "v" : "w");
        return -1;
    }
    for (int a = 0; a < 3; a++)
        if (!isfinite(v[a]) || !isfinite(om[a])) {
            firn_set_error(err, FIRN_E_USAGE,
                           "firn_world_set_tool_velocity: tool '%s': %s[%d] = %g is not finite; "
                           "nothing changed",
                           w->def.tools[tool].name, isfinite(v[a]) ? "w" : "v", a,
                           isfinite(v[a]) ? om[a] : v[a]);
            return -1;
        }
    firn_tool *t = &w->tools[tool];
    const firn_tool before = *t;
    firn_rigid *b = &t->body;
    b->n_keys = 0; /* commanded from now on */
    for (int a = 0; a < 3; a++) {
        b->v[a] = v[a];
        b->w[a] = om[a];
    }
    /* The host mirror is current after every call of substeps; the device
     * takes the command before the next one. */
    if (w->cuda && firn_cuda_upload_tool(w, tool, err)) {
        *t = before;
        return -1;
    }
    return 0;
}

int firn_world_tool_state(const firn_world *w, int tool, firn_tool_state *out)
{
    if (tool < 0 || tool >= w->n_tools || !out)
        return -1;
    firn_tool_fill_state(w, tool, out);
    return 0;
}
