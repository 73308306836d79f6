/* rigid.c - the rigid-body solver: state built from the scene's rigids
 * (mass and principal inertia from shape and density; a mesh's from its
 * volume integrals, host/mesh.c; keyframes), and its CPU step, which loops
 * over firn_rigid_step of include/firn_coupling.h. On the CUDA path the
 * same step runs on the device (kernels/coupling.cu). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "firn_cpic.h"
#include "mesh.h"
#include "rigid.h"
#include "world.h"

_Static_assert(FIRN_RIGID_KEYS == FIRN_MAX_KEYFRAMES, "keyframe capacity");
_Static_assert(FIRN_CPIC_MAX == FIRN_MAX_RIGIDS, "CPIC records one word per rigid");

/* The public enums (firn.h) and the physics headers' mirrors of them
 * (firn_coupling.h, firn_sdf.h) name the same things in the same order. */
_Static_assert(FIRN_MOTION_STATIC == (int)FIRN_RIGID_STATIC &&
                   FIRN_MOTION_KINEMATIC == (int)FIRN_RIGID_KINEMATIC &&
                   FIRN_MOTION_DYNAMIC == (int)FIRN_RIGID_DYNAMIC,
               "firn_motion and FIRN_MOTION_* differ");
_Static_assert(FIRN_SDF_PLANE == (int)FIRN_RSHAPE_PLANE &&
                   FIRN_SDF_SPHERE == (int)FIRN_RSHAPE_SPHERE &&
                   FIRN_SDF_BOX == (int)FIRN_RSHAPE_BOX &&
                   FIRN_SDF_CAPSULE == (int)FIRN_RSHAPE_CAPSULE &&
                   FIRN_SDF_CYLINDER == (int)FIRN_RSHAPE_CYLINDER &&
                   FIRN_SDF_MESH == (int)FIRN_RSHAPE_MESH &&
                   FIRN_SDF_COUNT == (int)FIRN_RSHAPE_COUNT,
               "firn_rigid_shape_type and FIRN_SDF_* differ");

/* Mass [kg] and principal moments of inertia [kg m^2] of a solid of
 * uniform density - about the body axes, or for a mesh about its principal
 * axes; a plane has none (0), nor has a mesh that cannot be loaded. */
void firn_rigid_mass_properties(const firn_rigid_def *def, float *mass, float inertia[3])
{
    const firn_rigid_shape_def *s = &def->shape;
    const double rho = def->density, pi = M_PI, r = s->radius, h = s->height;
    double m = 0.0, I[3] = {0.0, 0.0, 0.0};
    int ax = s->axis;
    switch (s->type) {
    case FIRN_RSHAPE_SPHERE:
        m = rho * 4.0 / 3.0 * pi * r * r * r;
        I[0] = I[1] = I[2] = 0.4 * m * r * r;
        break;
    case FIRN_RSHAPE_BOX: {
        double a = s->size[0], b = s->size[1], c = s->size[2];
        m = rho * a * b * c;
        I[0] = m * (b * b + c * c) / 12.0;
        I[1] = m * (a * a + c * c) / 12.0;
        I[2] = m * (a * a + b * b) / 12.0;
        break;
    }
    case FIRN_RSHAPE_CYLINDER:
        m = rho * pi * r * r * h;
        I[0] = I[1] = I[2] = m * (3.0 * r * r + h * h) / 12.0;
        I[ax] = 0.5 * m * r * r;
        break;
    case FIRN_RSHAPE_CAPSULE: {
        /* Cylinder of length h plus two hemispheres (each: mass mh, centre of
         * mass 3r/8 from its flat face, which sits h/2 from the centre). */
        double mc = rho * pi * r * r * h, mh = rho * 2.0 / 3.0 * pi * r * r * r;
        m = mc + 2.0 * mh;
        double perp = mc * (h * h / 12.0 + r * r / 4.0) +
                      2.0 * mh * (0.4 * r * r + h * h / 4.0 + 3.0 * h * r / 8.0);
        I[0] = I[1] = I[2] = perp;
        I[ax] = 0.5 * mc * r * r + 2.0 * 0.4 * mh * r * r;
        break;
    }
    case FIRN_RSHAPE_MESH: {
        const firn_mesh *mesh;
        if (firn_mesh_get(s->file, s->scale, 0, &mesh, NULL) == 0) {
            m = rho * mesh->volume;
            for (int a = 0; a < 3; a++)
                I[a] = rho * mesh->moments[a];
        }
        break;
    }
    default: /* plane: unbounded */
        break;
    }
    *mass = (float)m;
    for (int a = 0; a < 3; a++)
        inertia[a] = (float)I[a];
}

firn_sdf_shape firn_rigid_sdf_shape(const firn_rigid_shape_def *s)
{
    firn_sdf_shape out;
    memset(&out, 0, sizeof out);
    out.axis = s->axis;
    out.radius = s->radius;
    switch (s->type) {
    case FIRN_RSHAPE_PLANE: {
        out.type = FIRN_SDF_PLANE;
        float n = sqrtf(s->normal[0] * s->normal[0] + s->normal[1] * s->normal[1] +
                        s->normal[2] * s->normal[2]);
        for (int a = 0; a < 3; a++)
            out.normal[a] = n > 0.0f ? s->normal[a] / n : (a == 1);
        break;
    }
    case FIRN_RSHAPE_SPHERE:
        out.type = FIRN_SDF_SPHERE;
        break;
    case FIRN_RSHAPE_BOX:
        out.type = FIRN_SDF_BOX;
        for (int a = 0; a < 3; a++)
            out.half[a] = 0.5f * s->size[a];
        break;
    case FIRN_RSHAPE_CAPSULE:
        out.type = FIRN_SDF_CAPSULE;
        out.half[s->axis] = 0.5f * s->height;
        break;
    case FIRN_RSHAPE_MESH: {
        /* A mesh that cannot be loaded is nowhere (distance +inf). */
        const firn_mesh *mesh;
        out.type = FIRN_SDF_COUNT;
        if (firn_mesh_get(s->file, s->scale, 1, &mesh, NULL) == 0)
            firn_mesh_sdf_shape(mesh, &out);
        break;
    }
    default:
        out.type = FIRN_SDF_CYLINDER;
        out.half[s->axis] = 0.5f * s->height;
        break;
    }
    return out;
}

/* Euler angles in degrees, applied about x, then y, then z (world axes). */
firn_quat firn_rotation_quat(const float deg[3])
{
    firn_quat q = {{1.0f, 0.0f, 0.0f, 0.0f}};
    for (int a = 0; a < 3; a++) {
        firn_vec3 rv = firn_v3(0.0f, 0.0f, 0.0f);
        rv.v[a] = deg[a] * (float)M_PI / 180.0f;
        q = firn_quat_mul(firn_quat_from_rotvec(rv), q);
    }
    return firn_quat_normalize(q);
}

/* Keyframes into the body: orientations as quaternions, each in the same
 * hemisphere as the one before so that slerp takes the shortest arc, and
 * the rotation vector of each segment. */
void firn_rigid_init_keyframes(firn_rigid *b, const firn_rigid_def *rd)
{
    b->n_keys = rd->n_keyframes;
    for (int i = 0; i < rd->n_keyframes; i++) {
        firn_key *k = &b->key[i];
        k->t = rd->keyframes[i].t;
        for (int a = 0; a < 3; a++)
            k->x[a] = rd->keyframes[i].position[a];
        k->q = firn_rotation_quat(rd->keyframes[i].rotation);
        if (i > 0) {
            const firn_quat p = b->key[i - 1].q;
            if (p.q[0] * k->q.q[0] + p.q[1] * k->q.q[1] + p.q[2] * k->q.q[2] + p.q[3] * k->q.q[3] <
                0)
                for (int c = 0; c < 4; c++)
                    k->q.q[c] = -k->q.q[c];
        }
    }
    for (int i = 0; i + 1 < b->n_keys; i++) {
        /* dq = q1 q0^-1 = exp(rv / 2) */
        firn_quat q0 = b->key[i].q, inv = {{q0.q[0], -q0.q[1], -q0.q[2], -q0.q[3]}};
        firn_quat dq = firn_quat_mul(b->key[i + 1].q, inv);
        if (dq.q[0] < 0.0f)
            for (int c = 0; c < 4; c++)
                dq.q[c] = -dq.q[c];
        double s =
            sqrt((double)dq.q[1] * dq.q[1] + (double)dq.q[2] * dq.q[2] + (double)dq.q[3] * dq.q[3]);
        double angle = 2.0 * atan2(s, dq.q[0]);
        for (int a = 0; a < 3; a++)
            b->key[i].rv[a] = s > 0.0 ? (float)(dq.q[1 + a] / s * angle) : 0.0f;
    }
}

int firn_rigids_init(firn_world *w, firn_error *err)
{
    const firn_scene_def *d = &w->def;
    w->n_rigids = d->n_rigids;
    memset(w->rigids, 0, sizeof w->rigids);
    memset(w->rigid_acc, 0, sizeof w->rigid_acc);
    for (int k = 0; k < d->n_rigids; k++) {
        const firn_rigid_def *rd = &d->rigids[k];
        firn_rigid *b = &w->rigids[k];
        const firn_quat identity = {{1.0f, 0.0f, 0.0f, 0.0f}};
        b->principal = identity;
        if (rd->shape.type == FIRN_RSHAPE_MESH) {
            const firn_mesh *mesh;
            firn_error e;
            if (firn_mesh_get(rd->shape.file, rd->shape.scale, 1, &mesh, &e)) {
                firn_set_error(err, e.code, "%s%srigids[%d].shape.file: %s", d->source,
                               d->source[0] ? ": " : "", k, e.msg);
                return -1;
            }
            b->principal = mesh->principal;
        }
        b->shape = firn_rigid_sdf_shape(&rd->shape);
        b->q = firn_rotation_quat(rd->rotation);
        b->motion = rd->motion == FIRN_RIGID_DYNAMIC     ? FIRN_MOTION_DYNAMIC
                    : rd->motion == FIRN_RIGID_KINEMATIC ? FIRN_MOTION_KINEMATIC
                                                         : FIRN_MOTION_STATIC;
        b->couple = rd->couple;
        b->friction = rd->friction;
        b->softness = rd->softness;
        b->restitution = rd->restitution;
        for (int a = 0; a < 3; a++) {
            b->x[a] = rd->shape.center[a];
            if (b->motion != FIRN_MOTION_STATIC) {
                b->v[a] = rd->velocity[a];
                b->w[a] = rd->angular_velocity[a];
            }
        }
        if (b->motion == FIRN_MOTION_KINEMATIC && rd->n_keyframes > 0) {
            firn_rigid_init_keyframes(b, rd);
            firn_key_pose(b, 0.0, b->x, &b->q);
            firn_key_velocity(b, 0.0, b->v, b->w);
        }
        if (b->motion == FIRN_MOTION_DYNAMIC) {
            firn_rigid_mass_properties(rd, &b->mass, b->inertia);
            b->inv_mass = 1.0f / b->mass;
            for (int a = 0; a < 3; a++)
                b->inv_inertia[a] = 1.0f / b->inertia[a];
            /* L = R P I P^T R^T omega */
            firn_vec3 wb = firn_quat_unrotate(
                b->principal, firn_quat_unrotate(b->q, firn_v3(b->w[0], b->w[1], b->w[2])));
            for (int a = 0; a < 3; a++)
                wb.v[a] *= b->inertia[a];
            firn_vec3 L = firn_quat_rotate(b->q, firn_quat_rotate(b->principal, wb));
            for (int a = 0; a < 3; a++)
                b->L[a] = L.v[a];
        }
    }
    return 0;
}

static int rigid_active(const firn_world *w) { return w->n_rigids > 0; }

/* A handful of bodies: serial, so trivially deterministic. */
static int rigid_pre_coupling(firn_world *w, firn_step *st)
{
    (void)st;
    for (int k = 0; k < w->n_rigids; k++)
        firn_rigid_step(&w->rigids[k], w->rigid_acc + FIRN_RIGID_ACC * k, w->params.gravity,
                        w->params.dt);
    return 0;
}

static int rigid_post_coupling(firn_world *w, firn_step *st)
{
    (void)w, (void)st;
    return 0;
}

const firn_solver firn_rigid_solver = {
    .name = "rigid",
    .is_active = rigid_active,
    .cpu = {NULL, rigid_pre_coupling, rigid_post_coupling},
    .cuda = &firn_cuda_rigid_phases,
    .prof_pre = FIRN_PROF_COUPLE,
    .prof_post = FIRN_PROF_GRID,
};
