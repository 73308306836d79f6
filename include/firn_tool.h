/* firn_tool.h - tools: kinematic bodies that act on the MPM grid through
 * their own collision law and report the force the material exerts on
 * them (docs/PHYSICS.md s4.8; Genesis's Tool solver and ToolEntity),
 * shared by the CPU path (host/tool.c, host/coupler.c) and the CUDA
 * kernels (kernels/tool.cu).
 *
 * Per substep, as Genesis orders it: the tool advects its pose from the
 * start of the substep (x0, q0) to its end (x, q) before coupling; the grid
 * update then applies, per node with mass, velocity + gravity, every
 * colliding tool, the rigid bodies, MPM-SPH and the walls. The collision
 * uses the start pose for the distance and normal, and the motion between
 * the two poses for the velocity of the tool's surface at the node. */
#ifndef FIRN_TOOL_H
#define FIRN_TOOL_H

#include "firn_coupling.h"
#include "firn_sph_coupling.h"

/* A tool's state. `body` holds its shape, its pose at the end of the
 * current substep, its commanded v and omega, its clock and keyframes
 * (the keyframe helpers of firn_coupling.h read it; its motion is
 * kinematic and it is never coupled as a rigid body). 1.9 KiB. */
typedef struct {
    firn_rigid body;
    float x0[3];  /* origin at the start of the substep [m] */
    firn_quat q0; /* orientation at the start of the substep */
    float friction, softness;
    int collision;
} firn_tool;

/* Accumulator per tool, as a rigid's: impulse the material exerts on the
 * tool [N s] then its moment about x0 [N m s]. */
#define FIRN_TOOL_ACC FIRN_RIGID_ACC

/* The reaction on one tool, each as impulse then angular impulse (about
 * the tool's origin at the start of each substep) [N s, N m s]. 152 B. */
typedef struct {
    double last[FIRN_TOOL_ACC];  /* the last substep's */
    double frame[FIRN_TOOL_ACC]; /* summed since the current frame began */
    double total[FIRN_TOOL_ACC]; /* summed since the start */
    float last_dt;               /* the last substep [s] */
} firn_tool_record;

/* A substep's reaction acc (over dt) into the record; the frame's sum
 * restarts first when reset_frame is set. */
static inline FIRN_HD void firn_tool_record_add(firn_tool_record *r, const double *acc, float dt,
                                                int reset_frame)
{
    for (int c = 0; c < FIRN_TOOL_ACC; c++) {
        r->last[c] = acc[c];
        r->frame[c] = (reset_frame ? 0.0 : r->frame[c]) + acc[c];
        r->total[c] += acc[c];
    }
    r->last_dt = dt;
}

/* Genesis's ToolEntity.advect over dt: the pose at the substep's start is
 * kept; the origin moves by v dt and the orientation turns by omega dt
 * (exact rotation, renormalised); a keyframed tool takes its keyframes'
 * pose at the substep's end and its segment's velocities at its middle.
 * Genesis also clamps the origin above its floor_height; firn's domain
 * walls bound the material, not the tool, so the tool is not clamped. */
static inline FIRN_HD void firn_tool_advect(firn_tool *t, float dt)
{
    firn_rigid *b = &t->body;
    for (int a = 0; a < 3; a++)
        t->x0[a] = b->x[a];
    t->q0 = b->q;
    const double t0 = b->time;
    b->time = t0 + (double)dt;
    if (b->n_keys > 0) {
        firn_key_pose(b, b->time, b->x, &b->q);
        firn_key_velocity(b, t0 + 0.5 * (double)dt, b->v, b->w);
        return;
    }
    for (int a = 0; a < 3; a++)
        b->x[a] += dt * b->v[a];
    firn_vec3 rv = firn_v3(b->w[0] * dt, b->w[1] * dt, b->w[2] * dt);
    b->q = firn_quat_normalize(firn_quat_mul(firn_quat_from_rotvec(rv), b->q));
}

/* Velocity of the tool's material point at xn over the substep: where the
 * point that is at xn in the start pose is at the end pose, minus xn, over
 * dt (Genesis: (R1 R0^T (x - pos0) + pos1 - x) / dt). */
static inline FIRN_HD firn_vec3 firn_tool_point_velocity(const firn_tool *t, firn_vec3 xn, float dt)
{
    const firn_rigid *b = &t->body;
    firn_vec3 local =
        firn_quat_unrotate(t->q0, firn_sub(xn, firn_v3(t->x0[0], t->x0[1], t->x0[2])));
    firn_vec3 x1 = firn_add(firn_quat_rotate(b->q, local), firn_v3(b->x[0], b->x[1], b->x[2]));
    return firn_scale(firn_sub(x1, xn), 1.0f / dt);
}

/* Genesis's Tool collide() at a grid node at xn with velocity v: within
 * the tool (d <= 0) or where its influence min(exp(-d / softness), 1)
 * exceeds 0.1, a node approaching the tool's surface (relative normal
 * velocity vn < 0) loses that normal part entirely (no restitution), its
 * tangential part shrinks by friction |vn| (Coulomb), and the result is
 * blended with the untouched relative velocity by the influence:
 *   v' = v_c + rt' infl + (v - v_c)(1 - infl).
 * |rt| is sqrt(|rt|^2 + eps) with Genesis's fp32 eps. Returns v unchanged
 * elsewhere, for a node moving apart, and for a tool without collision. */
static inline FIRN_HD firn_vec3 firn_tool_collide(const firn_tool *t, firn_vec3 xn, firn_vec3 v,
                                                  float dt)
{
    if (!t->collision)
        return v;
    firn_vec3 n;
    float d = firn_sdf_world(&t->body.shape, firn_v3(t->x0[0], t->x0[1], t->x0[2]), t->q0, xn, &n);
    float infl = firn_minf(expf(-d / firn_maxf(t->softness, 1e-10f)), 1.0f);
    if (!(d <= 0.0f || infl > 0.1f))
        return v;
    firn_vec3 vc = firn_tool_point_velocity(t, xn, dt);
    firn_vec3 rv = firn_sub(v, vc);
    float vn = firn_dot(rv, n);
    if (!(vn < 0.0f))
        return v;
    firn_vec3 rt = firn_sub(rv, firn_scale(n, vn));
    float lt = sqrtf(firn_dot(rt, rt) + 1.1920929e-7f);
    firn_vec3 rt2 = firn_scale(rt, firn_maxf(0.0f, lt + vn * t->friction) / lt);
    return firn_add(vc, firn_add(firn_scale(rt2, infl), firn_scale(rv, 1.0f - infl)));
}

/* The collision of tool t at a node of mass m, with the reaction added to
 * acc[6]: impulse -m (v' - v) on the tool and its moment about x0. */
static inline FIRN_HD firn_vec3 firn_tool_node(const firn_tool *t, firn_vec3 xn, firn_vec3 v,
                                               float m, float dt, double *acc)
{
    firn_vec3 v2 = firn_tool_collide(t, xn, v, dt);
    if (v2.v[0] != v.v[0] || v2.v[1] != v.v[1] || v2.v[2] != v.v[2])
        firn_rigid_react(firn_sub(xn, firn_v3(t->x0[0], t->x0[1], t->x0[2])), v, v2, m, acc);
    return v2;
}

/* Grid update of one MPM node with the tools and every active pair, in
 * Genesis's order: velocity + gravity, every tool (nt 0: none; tools and
 * tacc may then be NULL), every coupled rigid body (nb 0 when rigid-MPM is
 * off), MPM-SPH (V NULL when off), walls. tacc is [nt][6], acc [nb][6],
 * both private to the caller (a CPU chunk's, or a GPU thread's registers
 * before its warp reduction). */
static inline FIRN_HD void firn_grid_node_tools(long long node, const firn_params *P, firn_grid g,
                                                const firn_tool *tools, int nt, double *tacc,
                                                const firn_rigid *bodies, int nb, double *acc,
                                                const firn_sph_view *V)
{
    firn_vec3 v;
    if (!firn_grid_velocity(node, P, g, &v))
        return;
    float m = g.node[4 * node + 3];
    firn_vec3 xn = firn_node_position(node, P);
    for (int k = 0; k < nt; k++)
        v = firn_tool_node(&tools[k], xn, v, m, P->dt, tacc + FIRN_TOOL_ACC * k);
    for (int k = 0; k < nb; k++)
        if (bodies[k].couple)
            v = firn_rigid_node_impulse(&bodies[k], xn, v, m, acc + FIRN_RIGID_ACC * k);
    if (V)
        v = firn_mpm_sph_node(xn, v, m, P->dx, V);
    firn_grid_store_velocity(node, g, firn_grid_walls(node, P, v));
}

#endif
