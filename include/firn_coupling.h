/* firn_coupling.h - rigid bodies and their two-way coupling with the MPM
 * grid by SDF impulse (docs/PHYSICS.md sections 1 and 4), shared by the
 * CPU path (host/coupler.c, host/rigid.c) and the CUDA kernels
 * (kernels/coupling.cu).
 *
 * Per substep: the rigid step applies the coupling force and torque that
 * the previous substep's grid update accumulated (as Genesis does), then the
 * grid update runs, per node with mass, velocity + gravity, the impulse of
 * every coupled body in turn, and the domain walls. */
#ifndef FIRN_COUPLING_H
#define FIRN_COUPLING_H

#include "firn_mpm.h"
#include "firn_sdf.h"

enum { FIRN_MOTION_STATIC = 0, FIRN_MOTION_KINEMATIC, FIRN_MOTION_DYNAMIC };

/* Per-body accumulator of the coupling: force [N] then torque about the
 * centre of mass [N m], world frame. */
#define FIRN_RIGID_ACC 6

/* Keyframes a kinematic body follows (firn_keyframe_def): pose at time t,
 * and the rotation vector rv that turns q into the next keyframe's
 * orientation by the shortest arc (world frame). 48 bytes. */
#define FIRN_RIGID_KEYS 32
typedef struct {
    double t;    /* [s] */
    float x[3];  /* [m] */
    float rv[3]; /* [rad] */
    firn_quat q;
} firn_key;

/* Rigid body state. x is the centre of mass (the shape's centre; a plane's
 * reference point). Dynamic bodies carry their angular momentum L and
 * derive omega from it; kinematic ones keep v and omega as prescribed, or
 * follow their keyframes. 1.8 KiB, nearly all of it keyframes. */
typedef struct {
    firn_sdf_shape shape;
    float x[3];           /* centre of mass [m] */
    firn_quat q;          /* orientation, body to world */
    float v[3];           /* linear velocity [m/s] */
    float w[3];           /* angular velocity [rad/s], world frame */
    float L[3];           /* angular momentum [kg m^2/s], world frame (dynamic) */
    float mass, inv_mass; /* [kg], [1/kg]; 0 for static and kinematic */
    float inertia[3];     /* principal moments [kg m^2] */
    float inv_inertia[3];
    firn_quat principal; /* principal axes' frame to body frame (a mesh's; else identity) */
    int motion;          /* FIRN_MOTION_* */
    int couple;          /* takes part in coupling */
    float friction, softness, restitution;
    float force[3], torque[3];      /* coupling force / torque applied in the last step */
    float couple_dt;                /* substep of the coupling whose impulse acc holds [s] */
    double impulse[FIRN_RIGID_ACC]; /* sum of the coupling impulses applied since the start */
    double time;                    /* [s] since the start */
    int n_keys;                     /* kinematic: keyframes followed (0: constant v and omega) */
    firn_key key[FIRN_RIGID_KEYS];
} firn_rigid;

static inline FIRN_HD firn_vec3 firn_rigid_pos(const firn_rigid *b)
{
    return firn_v3(b->x[0], b->x[1], b->x[2]);
}

/* omega = R P I^-1 P^T R^T L, P the principal axes in the body frame. */
static inline FIRN_HD firn_vec3 firn_rigid_omega(const firn_rigid *b, firn_vec3 L)
{
    firn_vec3 lb = firn_quat_unrotate(b->principal, firn_quat_unrotate(b->q, L));
    for (int a = 0; a < 3; a++)
        lb.v[a] *= b->inv_inertia[a];
    return firn_quat_rotate(b->q, firn_quat_rotate(b->principal, lb));
}

/* The keyframe segment holding time t: the last keyframe at or before t,
 * -1 before the first. */
static inline FIRN_HD int firn_key_segment(const firn_rigid *b, double t)
{
    int i = -1;
    while (i + 1 < b->n_keys && b->key[i + 1].t <= t)
        i++;
    return i;
}

/* Pose of a keyframed body at time t: the first keyframe's before it, the
 * last one's after; between two, the position linear in time and the
 * orientation by slerp (constant angular velocity along the shortest arc). */
static inline FIRN_HD void firn_key_pose(const firn_rigid *b, double t, float x[3], firn_quat *q)
{
    int i = firn_key_segment(b, t);
    if (i < 0 || i == b->n_keys - 1) {
        const firn_key *k = &b->key[i < 0 ? 0 : i];
        for (int a = 0; a < 3; a++)
            x[a] = k->x[a];
        *q = k->q;
        return;
    }
    const firn_key *k0 = &b->key[i], *k1 = &b->key[i + 1];
    float s = (float)((t - k0->t) / (k1->t - k0->t));
    for (int a = 0; a < 3; a++)
        x[a] = k0->x[a] + s * (k1->x[a] - k0->x[a]);
    firn_vec3 rv = firn_v3(k0->rv[0] * s, k0->rv[1] * s, k0->rv[2] * s);
    *q = firn_quat_normalize(firn_quat_mul(firn_quat_from_rotvec(rv), k0->q));
}

/* Velocity and angular velocity (world frame) of a keyframed body at time
 * t: its segment's, zero before the first and after the last keyframe. */
static inline FIRN_HD void firn_key_velocity(const firn_rigid *b, double t, float v[3], float w[3])
{
    int i = firn_key_segment(b, t);
    for (int a = 0; a < 3; a++)
        v[a] = w[a] = 0.0f;
    if (i < 0 || i == b->n_keys - 1)
        return;
    const firn_key *k0 = &b->key[i], *k1 = &b->key[i + 1];
    float inv = (float)(1.0 / (k1->t - k0->t));
    for (int a = 0; a < 3; a++) {
        v[a] = (k1->x[a] - k0->x[a]) * inv;
        w[a] = k0->rv[a] * inv;
    }
}

/* Largest speed and angular speed of a keyframed body over the times
 * [t0, t1] (the CFL step must hold for a segment starting mid-frame). A
 * segment whose velocity is not finite (a gap below float precision gives
 * inf, and 0 x inf = NaN) makes the result not finite, NaN included, so
 * that the CFL check sees it: firn_maxf would drop a NaN against a later
 * segment's speed. Returns the first such segment, -1 if none. */
static inline FIRN_HD int firn_key_max_speed(const firn_rigid *b, double t0, double t1, float *v,
                                             float *w)
{
    *v = *w = 0.0f;
    for (int i = 0; i + 1 < b->n_keys; i++) {
        if (b->key[i + 1].t <= t0 || b->key[i].t >= t1)
            continue;
        float vi[3], wi[3];
        firn_key_velocity(b, b->key[i].t, vi, wi);
        const float s = sqrtf(vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2]),
                    o = sqrtf(wi[0] * wi[0] + wi[1] * wi[1] + wi[2] * wi[2]);
        if (!isfinite(s) || !isfinite(o)) {
            *v = s, *w = o;
            return i;
        }
        *v = firn_maxf(*v, s);
        *w = firn_maxf(*w, o);
    }
    return -1;
}

/* The force and torque an impulse sum acc (firn_rigid_acc layout) stands
 * for: acc over the substep of the coupling that built it (b->couple_dt),
 * or over dt before any coupling ran. */
static inline FIRN_HD void firn_rigid_acc_force(const firn_rigid *b, const double *acc, float dt,
                                                float force[3], float torque[3])
{
    const double dtp = b->couple_dt > 0.0f ? (double)b->couple_dt : (double)dt;
    for (int a = 0; a < 3; a++) {
        force[a] = (float)(acc[a] / dtp);
        torque[a] = (float)(acc[3 + a] / dtp);
    }
}

/* One rigid step of length dt (semi-implicit Euler): acc holds the coupling
 * force and torque of the previous substep and is cleared. Dynamic bodies
 * feel gravity and that force; kinematic ones move with their prescribed
 * velocities, or take their keyframes' pose at the step's end and their
 * segment's velocities at its middle; static ones stay. Rotation is the
 * exact rotation by omega dt (a unit quaternion stays unit to rounding;
 * renormalised anyway). */
static inline FIRN_HD void firn_rigid_step(firn_rigid *b, double *acc, const float g[3], float dt)
{
    /* acc holds the previous coupling's impulse; the force it reports is
     * that impulse over the previous coupling's substep. */
    firn_rigid_acc_force(b, acc, dt, b->force, b->torque);
    float J[FIRN_RIGID_ACC];
    for (int k = 0; k < FIRN_RIGID_ACC; k++) {
        J[k] = (float)acc[k];
        b->impulse[k] += acc[k];
        acc[k] = 0.0;
    }
    b->couple_dt = dt; /* this substep's coupling runs with dt */
    const double t0 = b->time;
    b->time = t0 + (double)dt;
    if (b->motion == FIRN_MOTION_STATIC)
        return;
    if (b->motion == FIRN_MOTION_KINEMATIC && b->n_keys > 0) {
        firn_key_pose(b, b->time, b->x, &b->q);
        firn_key_velocity(b, t0 + 0.5 * (double)dt, b->v, b->w);
        return;
    }
    if (b->motion == FIRN_MOTION_DYNAMIC) {
        for (int a = 0; a < 3; a++) {
            b->v[a] += dt * g[a] + J[a] * b->inv_mass;
            b->L[a] += J[3 + a];
        }
        firn_vec3 w = firn_rigid_omega(b, firn_v3(b->L[0], b->L[1], b->L[2]));
        for (int a = 0; a < 3; a++)
            b->w[a] = w.v[a];
    }
    for (int a = 0; a < 3; a++)
        b->x[a] += dt * b->v[a];
    firn_vec3 rv = firn_v3(b->w[0] * dt, b->w[1] * dt, b->w[2] * dt);
    b->q = firn_quat_normalize(firn_quat_mul(firn_quat_from_rotvec(rv), b->q));
}

/* Velocity of the body at offset rx from its centre of mass. */
static inline FIRN_HD firn_vec3 firn_rigid_velocity_at(const firn_rigid *b, firn_vec3 rx)
{
    return firn_add(firn_v3(b->v[0], b->v[1], b->v[2]),
                    firn_cross(firn_v3(b->w[0], b->w[1], b->w[2]), rx));
}

/* Collision response of velocity v at offset rx from the body's centre of
 * mass against its surface with outward normal n (docs/PHYSICS.md s4.5; Genesis's
 * _func_collide_in_rigid_geom): where v approaches the body, the relative
 * velocity loses its normal part (restitution e keeps -e of it) and Coulomb
 * friction shortens its tangential part; the result is blended with the
 * untouched velocity by the influence. Returns 0 (v2 = v) when v does not
 * approach. */
static inline FIRN_HD int firn_rigid_collide(const firn_rigid *b, firn_vec3 rx, firn_vec3 v,
                                             firn_vec3 n, float influence, firn_vec3 *v2)
{
    firn_vec3 vr = firn_rigid_velocity_at(b, rx);
    firn_vec3 r = firn_sub(v, vr);
    float rn = firn_dot(r, n);
    if (!(rn < 0.0f)) {
        *v2 = v;
        return 0;
    }
    firn_vec3 rt = firn_sub(r, firn_scale(n, rn));
    float lt = firn_norm(rt);
    firn_vec3 rt2 = lt > 0.0f ? firn_scale(rt, firn_maxf(0.0f, lt + b->friction * rn) / lt) : rt;
    firn_vec3 rn2 = firn_scale(n, -b->restitution * rn);
    *v2 = firn_add(firn_add(vr, firn_scale(firn_add(rt2, rn2), influence)),
                   firn_scale(r, 1.0f - influence));
    return 1;
}

/* Adds the reaction of a momentum change m (v2 - v) at offset rx to the
 * body's accumulator as an impulse: J = -m (v2 - v) [N s], angular impulse
 * rx x J. Impulses, not forces: the next rigid step may have another dt
 * (CFL changes it between frames), and J / dt_old applied over dt_new would
 * create or destroy momentum. */
static inline FIRN_HD void firn_rigid_react(firn_vec3 rx, firn_vec3 v, firn_vec3 v2, float m,
                                            double *acc)
{
    firn_vec3 F = firn_scale(firn_sub(v2, v), -m);
    firn_vec3 T = firn_cross(rx, F);
    for (int a = 0; a < 3; a++) {
        acc[a] += (double)F.v[a];
        acc[3 + a] += (double)T.v[a];
    }
}

/* The SDF impulse of one body at one grid node (docs/PHYSICS.md s4.5): node at xn
 * with mass m and velocity v (after gravity). Returns the new velocity and
 * adds the body's impulse -dp and angular impulse (xn - com) x (-dp) to acc[6]. */
static inline FIRN_HD firn_vec3 firn_rigid_node_impulse(const firn_rigid *b, firn_vec3 xn,
                                                        firn_vec3 v, float m, double *acc)
{
    firn_vec3 n, com = firn_rigid_pos(b);
    float d = firn_sdf_world(&b->shape, com, b->q, xn, &n);
    float influence = firn_minf(expf(-d / firn_maxf(b->softness, 1e-10f)), 1.0f);
    if (!(influence > 0.1f))
        return v;
    firn_vec3 rx = firn_sub(xn, com), v2;
    if (!firn_rigid_collide(b, rx, v, n, influence, &v2))
        return v;
    firn_rigid_react(rx, v, v2, m, acc);
    return v2;
}

static inline FIRN_HD firn_vec3 firn_node_position(long long node, const firn_params *P)
{
    long long r = node;
    int k = (int)(r % P->n[2]);
    r /= P->n[2];
    int j = (int)(r % P->n[1]);
    int i = (int)(r / P->n[1]);
    return firn_v3(P->lower[0] + (float)i * P->dx, P->lower[1] + (float)j * P->dx,
                   P->lower[2] + (float)k * P->dx);
}

#endif
