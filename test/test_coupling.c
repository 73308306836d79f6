/* test_coupling.c - rigid bodies and their two-way SDF-impulse coupling with
 * MPM on the CPU path (PHYSICS.md s1, s4): each SDF against closed forms,
 * mass properties against sampling, the rigid step, the node impulse,
 * Newton's third law over a run, a sphere resting on sand, a block on an
 * incline, restitution at the contact, determinism, CPIC (records, thin
 * plates, determinism), keyframed motion, scene keys and stats. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "firn_cpic.h"
#include "rigid.h"
#include "world.h"

/* ---- SDFs ----------------------------------------------------------------- */

static firn_sdf_shape shape_of(int type, float radius, float hx, float hy, float hz, int axis)
{
    firn_sdf_shape s;
    memset(&s, 0, sizeof s);
    s.type = type;
    s.radius = radius;
    s.half[0] = hx, s.half[1] = hy, s.half[2] = hz;
    s.axis = axis;
    s.normal[1] = 1.0f;
    return s;
}

static void check_sdf(const firn_sdf_shape *s, firn_vec3 p, float d_want, firn_vec3 n_want)
{
    firn_vec3 n;
    float d = firn_sdf_local(s, p, &n);
    cr_assert(fabsf(d - d_want) < 1e-6f, "type %d at (%g, %g, %g): d = %.9g, want %.9g", s->type,
              p.v[0], p.v[1], p.v[2], d, d_want);
    for (int a = 0; a < 3; a++)
        cr_assert(fabsf(n.v[a] - n_want.v[a]) < 1e-6f,
                  "type %d at (%g, %g, %g): normal (%g, %g, %g), want (%g, %g, %g)", s->type,
                  p.v[0], p.v[1], p.v[2], n.v[0], n.v[1], n.v[2], n_want.v[0], n_want.v[1],
                  n_want.v[2]);
}

Test(sdf, each_primitive_matches_closed_forms)
{
    const float r2 = sqrtf(0.5f), r3 = 1.0f / sqrtf(3.0f);
    firn_sdf_shape plane = shape_of(FIRN_SDF_PLANE, 0, 0, 0, 0, 0);
    check_sdf(&plane, firn_v3(0.3f, 0.25f, -1.0f), 0.25f, firn_v3(0, 1, 0));
    check_sdf(&plane, firn_v3(0.3f, -0.5f, 2.0f), -0.5f, firn_v3(0, 1, 0));

    firn_sdf_shape sphere = shape_of(FIRN_SDF_SPHERE, 0.5f, 0, 0, 0, 0);
    check_sdf(&sphere, firn_v3(0.0f, 0.0f, 2.0f), 1.5f, firn_v3(0, 0, 1));
    check_sdf(&sphere, firn_v3(0.3f, 0.0f, 0.0f), -0.2f, firn_v3(1, 0, 0));
    check_sdf(&sphere, firn_v3(1.0f, 1.0f, 0.0f), sqrtf(2.0f) - 0.5f, firn_v3(r2, r2, 0));

    firn_sdf_shape box = shape_of(FIRN_SDF_BOX, 0, 0.5f, 0.25f, 1.0f, 0);
    check_sdf(&box, firn_v3(1.0f, 0.0f, 0.0f), 0.5f, firn_v3(1, 0, 0));               /* face */
    check_sdf(&box, firn_v3(-1.5f, -1.25f, 0.0f), sqrtf(2.0f), firn_v3(-r2, -r2, 0)); /* edge */
    check_sdf(&box, firn_v3(1.5f, 1.25f, 2.0f), sqrtf(3.0f), firn_v3(r3, r3, r3));    /* corner */
    check_sdf(&box, firn_v3(0.1f, -0.2f, 0.3f), -0.05f, firn_v3(0, -1, 0));           /* inside */

    firn_sdf_shape capsule = shape_of(FIRN_SDF_CAPSULE, 0.25f, 0, 0.5f, 0, 1);
    check_sdf(&capsule, firn_v3(1.0f, 0.2f, 0.0f), 0.75f, firn_v3(1, 0, 0));
    check_sdf(&capsule, firn_v3(0.0f, 1.5f, 0.0f), 0.75f, firn_v3(0, 1, 0));
    check_sdf(&capsule, firn_v3(0.0f, -0.6f, 0.1f), 0.1f * sqrtf(2.0f) - 0.25f,
              firn_v3(0, -r2, r2));

    firn_sdf_shape cyl = shape_of(FIRN_SDF_CYLINDER, 0.5f, 0, 0, 1.0f, 2);         /* along z */
    check_sdf(&cyl, firn_v3(0.0f, 1.0f, 0.5f), 0.5f, firn_v3(0, 1, 0));            /* side */
    check_sdf(&cyl, firn_v3(0.1f, 0.1f, 1.5f), 0.5f, firn_v3(0, 0, 1));            /* cap */
    check_sdf(&cyl, firn_v3(1.5f, 0.0f, -2.0f), sqrtf(2.0f), firn_v3(r2, 0, -r2)); /* rim */
    check_sdf(&cyl, firn_v3(0.0f, 0.3f, 0.9f), -0.1f, firn_v3(0, 0, 1)); /* inside, cap nearer */
    check_sdf(&cyl, firn_v3(0.0f, 0.3f, 0.0f), -0.2f, firn_v3(0, 1, 0)); /* inside, side nearer */
}

Test(sdf, normals_are_the_gradient_of_the_distance)
{
    /* Central differences of d against the returned normal at random points
     * away from each shape's medial axis. */
    firn_sdf_shape shapes[5] = {shape_of(FIRN_SDF_PLANE, 0, 0, 0, 0, 0),
                                shape_of(FIRN_SDF_SPHERE, 0.4f, 0, 0, 0, 0),
                                shape_of(FIRN_SDF_BOX, 0, 0.3f, 0.2f, 0.4f, 0),
                                shape_of(FIRN_SDF_CAPSULE, 0.2f, 0.3f, 0, 0, 0),
                                shape_of(FIRN_SDF_CYLINDER, 0.3f, 0, 0.25f, 0, 1)};
    shapes[0].normal[0] = 0.6f, shapes[0].normal[1] = 0.8f;
    unsigned seed = 12345;
    for (int t = 0; t < 5; t++)
        for (int k = 0; k < 200; k++) {
            firn_vec3 p, n;
            for (int a = 0; a < 3; a++) {
                seed = seed * 1664525u + 1013904223u;
                p.v[a] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 2.0f;
            }
            float d = firn_sdf_local(&shapes[t], p, &n);
            if (d < 0.05f) /* inside, the medial axis makes the gradient jump */
                continue;
            const float h = 1e-3f;
            for (int a = 0; a < 3; a++) {
                firn_vec3 dummy;
                firn_vec3 q1 = p, q2 = p;
                q1.v[a] += h;
                q2.v[a] -= h;
                float g = (firn_sdf_local(&shapes[t], q1, &dummy) -
                           firn_sdf_local(&shapes[t], q2, &dummy)) /
                          (2.0f * h);
                cr_assert(fabsf(g - n.v[a]) < 2e-3f,
                          "type %d at (%g, %g, %g): dd/dx%d = %g, n = %g", t, p.v[0], p.v[1],
                          p.v[2], a, g, n.v[a]);
            }
            cr_assert(fabsf(firn_norm(n) - 1.0f) < 1e-5f);
        }
}

Test(sdf, rotated_and_translated_shape)
{
    /* A box rotated 90 degrees about z: its local x (half 0.5) lies along y. */
    firn_sdf_shape box = shape_of(FIRN_SDF_BOX, 0, 0.5f, 0.1f, 0.1f, 0);
    firn_quat q = firn_quat_from_rotvec(firn_v3(0.0f, 0.0f, (float)M_PI / 2.0f));
    firn_vec3 n, pos = firn_v3(1.0f, 2.0f, 3.0f);
    float d = firn_sdf_world(&box, pos, q, firn_v3(1.0f, 2.8f, 3.0f), &n);
    cr_assert(fabsf(d - 0.3f) < 1e-5f, "d = %g", d);
    cr_assert(fabsf(n.v[1] - 1.0f) < 1e-5f && fabsf(n.v[0]) < 1e-5f, "n = (%g, %g, %g)", n.v[0],
              n.v[1], n.v[2]);
}

/* ---- mass properties ------------------------------------------------------ */

Test(rigid, mass_and_inertia_match_sampling_of_the_sdf)
{
    /* Midpoint sampling of each solid (through its SDF) against the closed
     * forms of firn_rigid_mass_properties. */
    firn_rigid_def defs[4];
    for (int k = 0; k < 4; k++) {
        firn_rigid_default(&defs[k]);
        defs[k].density = 1000.0f;
        defs[k].motion = FIRN_RIGID_DYNAMIC;
    }
    defs[0].shape.type = FIRN_RSHAPE_SPHERE, defs[0].shape.radius = 0.1f;
    defs[1].shape.type = FIRN_RSHAPE_BOX;
    defs[1].shape.size[0] = 0.1f, defs[1].shape.size[1] = 0.2f, defs[1].shape.size[2] = 0.3f;
    defs[2].shape.type = FIRN_RSHAPE_CYLINDER, defs[2].shape.radius = 0.08f;
    defs[2].shape.height = 0.25f, defs[2].shape.axis = 0;
    defs[3].shape.type = FIRN_RSHAPE_CAPSULE, defs[3].shape.radius = 0.06f;
    defs[3].shape.height = 0.2f, defs[3].shape.axis = 2;
    firn_scene_def scene;
    firn_scene_default(&scene);
    for (int k = 0; k < 4; k++) {
        float mass, I[3];
        firn_rigid_mass_properties(&defs[k], &mass, I);
        /* Build the SDF shape the way the world does. */
        scene.n_rigids = 1;
        scene.rigids[0] = defs[k];
        firn_world tmp;
        memset(&tmp, 0, sizeof tmp);
        tmp.def = scene;
        firn_rigids_init(&tmp, NULL);
        const firn_sdf_shape *s = &tmp.rigids[0].shape;
        const int N = 131; /* cell centres off the shapes' faces */
        const double L = 0.4, h = L / N, dv = h * h * h;
        double m = 0.0, J[3] = {0.0, 0.0, 0.0};
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                for (int l = 0; l < N; l++) {
                    firn_vec3 p = firn_v3((float)((i + 0.5) * h - L / 2),
                                          (float)((j + 0.5) * h - L / 2),
                                          (float)((l + 0.5) * h - L / 2)),
                              n;
                    if (firn_sdf_local(s, p, &n) >= 0.0f)
                        continue;
                    double dm = 1000.0 * dv;
                    m += dm;
                    J[0] += dm * (p.v[1] * p.v[1] + p.v[2] * p.v[2]);
                    J[1] += dm * (p.v[0] * p.v[0] + p.v[2] * p.v[2]);
                    J[2] += dm * (p.v[0] * p.v[0] + p.v[1] * p.v[1]);
                }
        cr_assert(fabs(m - mass) < 0.02 * mass, "shape %d: mass %g, sampled %g", k, mass, m);
        for (int a = 0; a < 3; a++)
            cr_assert(fabs(J[a] - I[a]) < 0.03 * I[a], "shape %d: I[%d] = %g, sampled %g", k, a,
                      I[a], J[a]);
    }
}

/* ---- rigid step ----------------------------------------------------------- */

Test(rigid, dynamic_body_falls_freely_and_kinematic_body_rotates_exactly)
{
    firn_rigid b;
    memset(&b, 0, sizeof b);
    b.q.q[0] = 1.0f;
    b.motion = FIRN_MOTION_DYNAMIC;
    b.mass = 2.0f, b.inv_mass = 0.5f;
    for (int a = 0; a < 3; a++)
        b.inertia[a] = 1.0f, b.inv_inertia[a] = 1.0f;
    b.v[0] = 1.0f;
    double acc[6] = {0};
    const float g[3] = {0.0f, -9.81f, 0.0f}, dt = 1e-3f;
    const int n = 500;
    for (int s = 0; s < n; s++)
        firn_rigid_step(&b, acc, g, dt);
    /* Semi-implicit Euler: y_n = -g dt^2 n (n + 1) / 2. */
    double y = -9.81 * (double)dt * dt * n * (n + 1) / 2.0;
    cr_assert(fabs(b.x[1] - y) < 1e-4 * fabs(y), "y = %g, want %g", b.x[1], y);
    cr_assert(fabsf(b.x[0] - 0.5f) < 1e-5f, "x = %g", b.x[0]);

    firn_rigid k;
    memset(&k, 0, sizeof k);
    k.q.q[0] = 1.0f;
    k.motion = FIRN_MOTION_KINEMATIC;
    k.w[2] = 2.0f; /* rad/s about z */
    k.v[1] = 0.5f;
    for (int s = 0; s < n; s++)
        firn_rigid_step(&k, acc, g, dt);
    firn_vec3 ex = firn_quat_rotate(k.q, firn_v3(1.0f, 0.0f, 0.0f));
    cr_assert(fabsf(ex.v[0] - cosf(1.0f)) < 1e-4f && fabsf(ex.v[1] - sinf(1.0f)) < 1e-4f,
              "x axis -> (%g, %g), want (%g, %g)", ex.v[0], ex.v[1], cosf(1.0f), sinf(1.0f));
    cr_assert(fabsf(k.x[1] - 0.25f) < 1e-4f, "kinematic y = %g", k.x[1]);
    cr_assert(fabsf(k.v[1] - 0.5f) == 0.0f, "gravity moved a kinematic body");
}

Test(rigid, torque_free_spin_keeps_angular_momentum)
{
    /* An asymmetric box spinning about a tilted axis: L is constant, the
     * spin precesses, and |omega| stays bounded. */
    firn_rigid b;
    memset(&b, 0, sizeof b);
    b.q.q[0] = 1.0f;
    b.motion = FIRN_MOTION_DYNAMIC;
    b.mass = 1.0f, b.inv_mass = 1.0f;
    const float I[3] = {1.0f, 2.0f, 3.0f};
    for (int a = 0; a < 3; a++)
        b.inertia[a] = I[a], b.inv_inertia[a] = 1.0f / I[a];
    b.L[0] = 1.0f, b.L[1] = 0.2f, b.L[2] = 0.1f;
    double acc[6] = {0};
    const float g[3] = {0, 0, 0};
    for (int s = 0; s < 2000; s++)
        firn_rigid_step(&b, acc, g, 1e-3f);
    cr_assert(b.L[0] == 1.0f && b.L[1] == 0.2f && b.L[2] == 0.1f);
    /* omega = R I^-1 R^T L: the kinetic energy L.omega/2 is conserved by the
     * exact dynamics; the explicit rotation update keeps it within 1 %. */
    double e0 = 0.5 * (1.0 / 1.0 + 0.04 / 2.0 + 0.01 / 3.0);
    double e = 0.5 * (b.L[0] * b.w[0] + b.L[1] * b.w[1] + b.L[2] * b.w[2]);
    cr_assert(fabs(e - e0) < 0.01 * e0, "energy %g, initially %g", e, e0);
}

/* ---- node impulse --------------------------------------------------------- */

static firn_rigid static_floor(float friction, float restitution)
{
    firn_rigid b;
    memset(&b, 0, sizeof b);
    b.shape = shape_of(FIRN_SDF_PLANE, 0, 0, 0, 0, 0);
    b.q.q[0] = 1.0f;
    b.couple = 1;
    b.friction = friction;
    b.restitution = restitution;
    b.softness = 0.002f;
    return b;
}

Test(impulse, restitution_friction_and_blend_at_a_node)
{
    double acc[6] = {0};
    const float m = 0.5f;
    /* Inside (influence 1), frictionless: normal rebound -e rn. */
    firn_rigid b = static_floor(0.0f, 0.5f);
    firn_vec3 v = firn_rigid_node_impulse(&b, firn_v3(0, -0.01f, 0), firn_v3(1, -3, 0), m, acc);
    cr_assert(fabsf(v.v[0] - 1.0f) < 1e-6f && fabsf(v.v[1] - 1.5f) < 1e-6f, "v' = (%g, %g)", v.v[0],
              v.v[1]);
    cr_assert(fabs(acc[1] + m * 4.5) < 1e-6, "impulse %g, want %g", acc[1], -m * 4.5);
    /* Coulomb: |rt| -= mu |rn| = 1 - 0.2 * 3. */
    b = static_floor(0.2f, 0.0f);
    v = firn_rigid_node_impulse(&b, firn_v3(0, 0, 0), firn_v3(1, -3, 0), m, acc);
    cr_assert(fabsf(v.v[0] - 0.4f) < 1e-6f && fabsf(v.v[1]) < 1e-6f, "v' = (%g, %g)", v.v[0],
              v.v[1]);
    /* Sticking: mu |rn| >= |rt|. */
    b = static_floor(0.5f, 0.0f);
    v = firn_rigid_node_impulse(&b, firn_v3(0, 0, 0), firn_v3(1, -3, 0), m, acc);
    cr_assert(firn_norm(v) < 1e-6f, "v' = (%g, %g)", v.v[0], v.v[1]);
    /* Outside at d = softness: influence e^-1, blended. */
    b = static_floor(0.0f, 0.0f);
    v = firn_rigid_node_impulse(&b, firn_v3(0, 0.002f, 0), firn_v3(0, -2, 0), m, acc);
    cr_assert(fabsf(v.v[1] - (-2.0f * (1.0f - expf(-1.0f)))) < 1e-5f, "v'y = %g", v.v[1]);
    /* Beyond influence 0.1, and separating: untouched. */
    v = firn_rigid_node_impulse(&b, firn_v3(0, 0.005f, 0), firn_v3(0, -2, 0), m, acc);
    cr_assert(v.v[1] == -2.0f);
    v = firn_rigid_node_impulse(&b, firn_v3(0, -0.1f, 0), firn_v3(0, 2, 0), m, acc);
    cr_assert(v.v[1] == 2.0f);
    /* Moving body: relative velocity counts. A floor rising at 1 m/s meets
     * a node at rest. */
    b.motion = FIRN_MOTION_KINEMATIC;
    b.v[1] = 1.0f;
    v = firn_rigid_node_impulse(&b, firn_v3(0, -0.01f, 0), firn_v3(0, 0, 0), m, acc);
    cr_assert(fabsf(v.v[1] - 1.0f) < 1e-6f, "v'y = %g", v.v[1]);
}

/* ---- worlds --------------------------------------------------------------- */

static void base_scene(firn_scene_def *def, float dx)
{
    firn_scene_default(def);
    def->dx = dx;
    def->write_ply = def->write_preview = 0;
    def->n_materials = 1;
}

static void add_box_body(firn_scene_def *def, int mat, const float c[3], const float size[3],
                         const float v[3])
{
    firn_body_def *b = &def->bodies[def->n_bodies++];
    firn_body_default(b);
    b->material = mat;
    b->shape.type = FIRN_SHAPE_BOX;
    for (int a = 0; a < 3; a++) {
        b->shape.center[a] = c[a];
        b->shape.size[a] = size[a];
        b->velocity[a] = v ? v[a] : 0.0f;
    }
    b->seed = 3;
}

static firn_rigid_def *add_rigid(firn_scene_def *def, firn_rigid_shape_type type, firn_motion m)
{
    firn_rigid_def *r = &def->rigids[def->n_rigids++];
    firn_rigid_default(r);
    r->shape.type = type;
    r->motion = m;
    snprintf(r->name, sizeof r->name, "r%d", def->n_rigids - 1);
    return r;
}

static firn_world *make_world(const firn_scene_def *def)
{
    firn_error err;
    firn_world *w = firn_world_create(def, FIRN_BACKEND_CPU, &err);
    cr_assert(w, "world: %s", err.msg);
    return w;
}

static void run_frames(firn_world *w, int frames)
{
    firn_error err;
    for (int f = 0; f < frames; f++)
        cr_assert_eq(firn_world_step_frame(w, NULL, &err), 0, "frame %d: %s", f, err.msg);
}

static void particle_momentum(firn_world *w, double P[3])
{
    firn_frame_stats s;
    firn_error err;
    cr_assert_eq(firn_world_stats(w, &s, &err), 0, "%s", err.msg);
    for (int a = 0; a < 3; a++)
        P[a] = s.momentum[a];
}

/* vary: alternate the substep between dt and dt / 2, as CFL steps change
 * between frames; the exchange must balance all the same. */
static void newton_check(int vary)
{
    /* No gravity, walls far away: an elastic block hits a free dynamic
     * sphere off-centre. What the particles gain from the coupling is what
     * the sphere gains (applied impulses plus the one pending). */
    firn_scene_def def;
    base_scene(&def, 1.0f / 32.0f);
    for (int a = 0; a < 3; a++)
        def.gravity[a] = 0.0f;
    def.frame_dt = 0.01f;
    firn_material_default(&def.materials[0], FIRN_MODEL_ELASTIC);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "jelly");
    add_box_body(&def, 0, (float[3]){0.3f, 0.5f, 0.5f}, (float[3]){0.2f, 0.2f, 0.2f},
                 (float[3]){2.0f, 0.0f, 0.0f});
    firn_rigid_def *r = add_rigid(&def, FIRN_RSHAPE_SPHERE, FIRN_RIGID_DYNAMIC);
    r->shape.center[0] = 0.52f, r->shape.center[1] = 0.55f, r->shape.center[2] = 0.5f;
    r->shape.radius = 0.08f;
    r->density = 500.0f;
    r->friction = 0.3f;
    firn_world *w = make_world(&def);
    double P0[3], P1[3];
    particle_momentum(w, P0);
    float v0[3] = {w->rigids[0].v[0], w->rigids[0].v[1], w->rigids[0].v[2]};
    if (vary) {
        firn_error err;
        float dt0 = firn_world_cfl_dt(w), t = 0.0f; /* the same 0.12 s as 12 frames */
        for (int k = 0; t < 0.12f; k++) {
            float dt = k % 3 ? dt0 : 0.5f * dt0;
            cr_assert_eq(firn_world_substep(w, dt, &err), 0, "%s", err.msg);
            t += dt;
        }
    } else {
        run_frames(w, 12);
    }
    particle_momentum(w, P1);
    const firn_rigid *b = &w->rigids[0];
    const double scale = fabs(P0[0]);
    double total = 0.0;
    for (int a = 0; a < 3; a++) {
        double body = b->impulse[a] + w->rigid_acc[a]; /* applied + pending */
        double dP = P1[a] - P0[a];
        total += fabs(body);
        cr_assert(fabs(dP + body) < 2e-5 * scale,
                  "axis %d: particles gained %.9g, the body %.9g (sum %.3g, momentum %.3g)", a, dP,
                  body, dP + body, scale);
        /* And the body's own momentum follows the applied impulse. */
        double mv = (double)b->mass * (b->v[a] - v0[a]);
        cr_assert(fabs(mv - b->impulse[a]) < 1e-4 * scale + 1e-3 * fabs(b->impulse[a]),
                  "axis %d: m dv = %g, impulse %g", a, mv, b->impulse[a]);
    }
    cr_assert(total > 0.1 * scale, "no collision happened (impulse %g)", total);
    cr_assert(fabs(b->impulse[4]) + fabs(b->impulse[5]) > 0.0, "off-centre hit gave no torque");
    firn_world_destroy(w);
}

Test(coupling, newtons_third_law_over_a_run, .timeout = 120) { newton_check(0); }

Test(coupling, newtons_third_law_with_changing_substeps, .timeout = 120) { newton_check(1); }

Test(coupling, dynamic_sphere_comes_to_rest_on_a_sand_bed, .timeout = 120)
{
    firn_scene_def def;
    base_scene(&def, 0.025f);
    def.upper[0] = def.upper[2] = 0.4f;
    def.upper[1] = 0.35f;
    def.frame_dt = 0.02f;
    def.walls[2].friction = 0.5f;
    firn_material_default(&def.materials[0], FIRN_MODEL_SAND);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "sand");
    def.materials[0].E = 3.5e5f, def.materials[0].nu = 0.3f, def.materials[0].density = 1600.0f;
    def.materials[0].friction_angle = 35.0f;
    const float top = 0.15f;
    add_box_body(&def, 0, (float[3]){0.2f, 0.1f, 0.2f}, (float[3]){0.3f, 0.1f, 0.3f}, NULL);
    firn_rigid_def *r = add_rigid(&def, FIRN_RSHAPE_SPHERE, FIRN_RIGID_DYNAMIC);
    r->shape.center[0] = 0.2f, r->shape.center[1] = 0.24f, r->shape.center[2] = 0.2f;
    r->shape.radius = 0.05f;
    r->density = 1000.0f;
    firn_world *w = make_world(&def);
    run_frames(w, 30);
    const firn_rigid *b = &w->rigids[0];
    float bottom = b->x[1] - 0.05f;
    cr_assert(bottom > top - 1.0f * def.dx, "sphere bottom at %g, sand top at %g: sank in", bottom,
              top);
    cr_assert(bottom < top + 1.0f * def.dx, "sphere bottom at %g, sand top at %g: floats above",
              bottom, top);
    cr_assert(firn_norm(firn_v3(b->v[0], b->v[1], b->v[2])) < 0.05f,
              "still moving: v = (%g, %g, %g)", b->v[0], b->v[1], b->v[2]);
    /* At rest the sand carries the weight. */
    float weight = b->mass * 9.81f;
    cr_assert(fabsf(b->force[1] - weight) < 0.2f * weight, "support %g N, weight %g N", b->force[1],
              weight);
    /* The statistics report the same support as a force [N] (the coupling
     * of the last substep, which the body receives at its next step). */
    firn_frame_stats s;
    firn_error err;
    cr_assert_eq(firn_world_stats(w, &s, &err), 0, "%s", err.msg);
    cr_assert(fabsf(s.rigids[0].force[1] - weight) < 0.2f * weight,
              "stats: support %g N, weight %g N", s.rigids[0].force[1], weight);
    firn_world_destroy(w);
}

/* An elastic block resting on a static floor plane under gravity tilted by
 * angle (the incline); returns how far it moved down the slope in 0.3 s.
 * The plane lies on a node layer: only nodes within about 2 softness of the
 * surface are coupled, so a surface between node layers grips through the
 * light layer below it only and holds less than Coulomb says (docs/SCENES.md,
 * "rigids"). */
static float incline_slide(float angle_deg, float friction)
{
    firn_scene_def def;
    base_scene(&def, 1.0f / 32.0f);
    def.upper[1] = 0.5f;
    def.frame_dt = 0.02f;
    float th = angle_deg * (float)M_PI / 180.0f;
    def.gravity[0] = 9.81f * sinf(th);
    def.gravity[1] = -9.81f * cosf(th);
    firn_material_default(&def.materials[0], FIRN_MODEL_ELASTIC);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "block");
    def.materials[0].E = 1e5f;
    const float floor_y = 7.0f / 32.0f;
    add_box_body(&def, 0, (float[3]){0.3f, floor_y + 0.05f, 0.5f}, (float[3]){0.1f, 0.1f, 0.1f},
                 NULL);
    firn_rigid_def *r = add_rigid(&def, FIRN_RSHAPE_PLANE, FIRN_RIGID_STATIC);
    r->shape.center[0] = 0.5f, r->shape.center[1] = floor_y, r->shape.center[2] = 0.5f;
    r->friction = friction;
    firn_world *w = make_world(&def);
    firn_frame_stats s0, s1;
    firn_error err;
    firn_world_stats(w, &s0, &err);
    run_frames(w, 15);
    firn_world_stats(w, &s1, &err);
    cr_assert(s1.bbox_lower[1] > floor_y - 0.25f * def.dx, "block sank into the plane: bottom %g",
              s1.bbox_lower[1]);
    firn_world_destroy(w);
    return (float)(s1.center_of_mass[0] - s0.center_of_mass[0]);
}

Test(coupling, block_on_incline_sticks_below_and_slides_above_friction, .timeout = 120)
{
    /* tan 30 deg = 0.577. Sliding: a = g (sin - mu cos) = 2.36 m/s^2 at
     * mu = 0.3, 0.106 m in 0.3 s. */
    float stick = incline_slide(30.0f, 0.8f), slide = incline_slide(30.0f, 0.3f);
    cr_assert(fabsf(stick) < 0.01f, "mu 0.8 > tan 30: moved %g m", stick);
    cr_assert(fabsf(slide - 0.106f) < 0.015f, "mu 0.3 < tan 30: moved %g m, expected 0.106", slide);
}

Test(coupling, restitution_reflects_the_normal_velocity_at_the_contact)
{
    /* An elastic block (undeformed, so no stress) moving at 1 m/s into a
     * static wall with restitution e, no gravity: after one substep every
     * grid node inside the wall moves out at e times the impact speed. */
    const float es[3] = {0.0f, 0.5f, 1.0f};
    for (int k = 0; k < 3; k++) {
        firn_scene_def def;
        base_scene(&def, 1.0f / 32.0f);
        for (int a = 0; a < 3; a++)
            def.gravity[a] = 0.0f;
        firn_material_default(&def.materials[0], FIRN_MODEL_ELASTIC);
        snprintf(def.materials[0].name, FIRN_NAME_MAX, "block");
        add_box_body(&def, 0, (float[3]){0.55f, 0.5f, 0.5f}, (float[3]){0.2f, 0.2f, 0.2f},
                     (float[3]){-1.0f, 0.0f, 0.0f});
        firn_rigid_def *r = add_rigid(&def, FIRN_RSHAPE_BOX, FIRN_RIGID_STATIC);
        r->shape.center[0] = 0.4f, r->shape.center[1] = 0.5f, r->shape.center[2] = 0.5f;
        r->shape.size[0] = 0.1f, r->shape.size[1] = r->shape.size[2] = 0.6f;
        r->restitution = es[k];
        r->friction = 0.0f;
        firn_world *w = make_world(&def);
        firn_error err;
        cr_assert_eq(firn_world_substep(w, 1e-4f, &err), 0, "%s", err.msg);
        int inside = 0;
        for (long long node = 0; node < w->grid.nodes; node++) {
            const float *q = w->grid.node + 4 * node;
            firn_vec3 n, xn = firn_node_position(node, &w->params);
            if (q[3] <= 0.0f || firn_sdf_world(&w->rigids[0].shape, firn_rigid_pos(&w->rigids[0]),
                                               w->rigids[0].q, xn, &n) > 0.0f)
                continue;
            inside++;
            cr_assert(fabsf(q[0] - es[k]) < 1e-5f, "e = %g: node x = %g moves at %g", es[k],
                      xn.v[0], q[0]);
        }
        cr_assert(inside > 0, "no node in contact");
        firn_world_destroy(w);
    }
}

Test(coupling, rigid_mpm_off_leaves_material_uncoupled)
{
    firn_scene_def def;
    base_scene(&def, 1.0f / 32.0f);
    firn_material_default(&def.materials[0], FIRN_MODEL_ELASTIC);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "block");
    add_box_body(&def, 0, (float[3]){0.5f, 0.5f, 0.5f}, (float[3]){0.1f, 0.1f, 0.1f}, NULL);
    add_rigid(&def, FIRN_RSHAPE_SPHERE, FIRN_RIGID_DYNAMIC); /* overlaps the block */
    def.coupling.rigid_mpm = 0;
    firn_world *w = make_world(&def);
    cr_assert(w->coupler.active[FIRN_SOLVER_RIGID] && w->coupler.active[FIRN_SOLVER_MPM]);
    cr_assert(!w->coupler.rigid_mpm);
    run_frames(w, 2);
    /* Both fall freely. */
    cr_assert(w->rigids[0].force[1] == 0.0f && w->rigids[0].v[1] < -0.3f);
    firn_world_destroy(w);
    def.coupling.rigid_mpm = 1;
    w = make_world(&def);
    cr_assert(w->coupler.rigid_mpm);
    firn_world_destroy(w);
}

/* A sand bed, a dynamic box falling onto it and a spinning kinematic
 * cylinder in it, with or without CPIC. */
static void coupled_scene(firn_scene_def *def, int cpic)
{
    base_scene(def, 1.0f / 32.0f);
    def->frame_dt = 0.01f;
    firn_material_default(&def->materials[0], FIRN_MODEL_SAND);
    snprintf(def->materials[0].name, FIRN_NAME_MAX, "sand");
    add_box_body(def, 0, (float[3]){0.5f, 0.15f, 0.5f}, (float[3]){0.4f, 0.15f, 0.4f}, NULL);
    firn_rigid_def *r = add_rigid(def, FIRN_RSHAPE_BOX, FIRN_RIGID_DYNAMIC);
    r->shape.center[0] = 0.45f, r->shape.center[1] = 0.33f, r->shape.center[2] = 0.5f;
    r->rotation[2] = 20.0f;
    r->velocity[1] = -2.0f;
    r->density = 1000.0f;
    firn_rigid_def *k = add_rigid(def, FIRN_RSHAPE_CYLINDER, FIRN_RIGID_KINEMATIC);
    k->shape.center[0] = 0.65f, k->shape.center[1] = 0.25f, k->shape.center[2] = 0.5f;
    k->shape.axis = 2;
    k->angular_velocity[2] = -5.0f;
    def->coupling.cpic = cpic;
}

static void run_coupled(int threads, int cpic, float **x_out, firn_rigid *r_out, int *n_out)
{
    firn_scene_def def;
    coupled_scene(&def, cpic);
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    firn_world *w = make_world(&def);
    run_frames(w, 4);
    omp_set_num_threads(saved);
    firn_particles_view p;
    firn_error err;
    cr_assert_eq(firn_world_particles(w, &p, &err), 0, "%s", err.msg);
    *n_out = (int)p.n;
    *x_out = malloc(3 * sizeof(float) * p.n);
    memcpy(*x_out, p.x, 3 * sizeof(float) * p.n);
    memcpy(r_out, w->rigids, 2 * sizeof(firn_rigid));
    firn_world_destroy(w);
}

Test(coupling, same_state_bitwise_for_any_thread_count, .timeout = 120)
{
    float *x0, *x1;
    firn_rigid r0[2], r1[2];
    int n0, n1;
    run_coupled(1, 0, &x0, r0, &n0);
    run_coupled(3, 0, &x1, r1, &n1);
    cr_assert_eq(n0, n1);
    cr_assert(!memcmp(x0, x1, 3 * sizeof(float) * n0), "particle positions differ");
    cr_assert(!memcmp(r0, r1, sizeof r0), "rigid states differ");
    cr_assert(r0[0].force[1] != 0.0f, "the box never touched the sand");
    free(x0);
    free(x1);
}

/* The rigid grid update visits only the node chunks the last P2G could
 * write; the others hold no mass. Against the reference that clears,
 * updates and couples over the whole grid every substep (bins.full_grid):
 * the grid, the particles and the bodies bitwise the same after 150
 * substeps of a box falling into the sand bed, with some chunks skipped,
 * with and without CPIC. */
Test(coupling, grid_update_over_written_chunks_is_the_full_one, .timeout = 120)
{
    for (int cpic = 0; cpic < 2; cpic++) {
        firn_scene_def def;
        coupled_scene(&def, cpic);
        firn_world *a = make_world(&def), *b = make_world(&def);
        b->bins.full_grid = 1;
        firn_error err;
        for (int k = 0; k < 150; k++) {
            const float dt = firn_world_cfl_dt(a);
            cr_assert_eq(firn_world_substep(a, dt, &err), 0, "%s", err.msg);
            cr_assert_eq(firn_world_substep(b, dt, &err), 0, "%s", err.msg);
        }
        long long live = 0, all = 0;
        for (long long c = 0; c < a->chunks; c++)
            live += a->chunk_live[c], all += b->chunk_live[c];
        cr_assert(live > 0 && live < a->chunks && all == b->chunks,
                  "cpic %d: %lld of %lld chunks visited, %lld in the reference", cpic, live,
                  a->chunks, all);
        cr_assert(!memcmp(a->grid.node, b->grid.node, 16 * (size_t)a->grid.nodes),
                  "cpic %d: grids differ", cpic);
        cr_assert(!memcmp(a->p.x, b->p.x, 12 * (size_t)a->p.n), "cpic %d: positions differ", cpic);
        cr_assert(!memcmp(a->rigids, b->rigids, 2 * sizeof(firn_rigid)),
                  "cpic %d: rigid states differ", cpic);
        cr_assert(!memcmp(a->rigid_acc, b->rigid_acc, sizeof a->rigid_acc),
                  "cpic %d: forces differ", cpic);
        cr_assert(a->rigids[0].force[1] != 0.0f, "cpic %d: the box never touched the sand", cpic);
        firn_world_destroy(a);
        firn_world_destroy(b);
    }
}

/* ---- CPIC ----------------------------------------------------------------- */

Test(cpic, same_state_bitwise_for_any_thread_count, .timeout = 180)
{
    /* As above with CPIC: the G2P reaction is summed per particle chunk in
     * order, so the bodies' state is bitwise the same too. */
    float *x0, *x1;
    firn_rigid r0[2], r1[2];
    int n0, n1;
    run_coupled(1, 1, &x0, r0, &n0);
    run_coupled(3, 1, &x1, r1, &n1);
    cr_assert_eq(n0, n1);
    cr_assert(!memcmp(x0, x1, 3 * sizeof(float) * n0), "particle positions differ");
    cr_assert(!memcmp(r0, r1, sizeof r0), "rigid states differ");
    cr_assert(r0[0].force[1] != 0.0f, "the box never touched the sand");
    free(x0);
    free(x1);
}

Test(cpic, normal_record_is_sticky_and_separates_the_two_faces_of_a_plate)
{
    /* A static plate 0.3 dx thick: a particle above records +y; one far away
     * records nothing; a node below the plate is across, one above is not,
     * although both lie outside the plate (same SDF sign). */
    for (int k = 0; k < 200; k++) {
        firn_vec3 n = firn_v3(sinf(0.1f * k) * cosf(0.37f * k), cosf(0.1f * k),
                              sinf(0.1f * k) * sinf(0.37f * k));
        firn_vec3 u = firn_cpic_unpack(firn_cpic_pack(n));
        cr_assert(firn_norm(firn_sub(u, n)) < 0.01f, "normal (%g, %g, %g) -> (%g, %g, %g)", n.v[0],
                  n.v[1], n.v[2], u.v[0], u.v[1], u.v[2]);
        cr_assert(firn_cpic_pack(n) != 0u);
    }
    firn_params P;
    memset(&P, 0, sizeof P);
    P.dx = 0.01f, P.inv_dx = 100.0f;
    for (int a = 0; a < 3; a++)
        P.lower[a] = -0.5f, P.n[a] = 101;
    firn_rigid plate;
    memset(&plate, 0, sizeof plate);
    plate.shape = shape_of(FIRN_SDF_BOX, 0, 0.5f, 0.0015f, 0.5f, 0);
    plate.q.q[0] = 1.0f;
    plate.couple = 1;
    float x[3 * 3] = {0.0f, 0.0f, 0.0f, 0.004f, 0.5f, 0.0f, 0.0f, 0.0f, 0.0f};
    uint32_t rec[3] = {0, 0, 0};
    firn_particles p;
    memset(&p, 0, sizeof p);
    p.n = 3, p.x = x, p.cpic = rec, p.cpic_slots = 1;
    for (int i = 0; i < 3; i++)
        firn_cpic_mark(i, &P, p, &plate, 1);
    cr_assert(rec[0] != 0u && firn_cpic_unpack(rec[0]).v[1] > 0.99f, "record %08x", rec[0]);
    cr_assert_eq(rec[1], 0u, "a particle 0.5 m away recorded %08x", rec[1]);
    firn_cpic_ctx c;
    cr_assert_eq(firn_cpic_load(&c, p, 0, 1), 1u);
    /* The stencil's node layers lie at y = -0.01 (below), 0 (mid-plate) and
     * 0.01 (above): the 9 nodes below are across, the 9 above are not. */
    firn_stencil st = firn_make_stencil(&P, firn_v3(0.0f, 0.004f, 0.0f));
    cr_assert_eq(st.base[1], 49);
    unsigned mask = firn_cpic_stencil_mask(&P, &st, firn_v3(0.0f, 0.004f, 0.0f), &plate, c.n[0]);
    for (int a = 0; a < 3; a++)
        for (int cc = 0; cc < 3; cc++) {
            cr_assert(mask & (1u << (9 * a + cc)), "node (%d, 0, %d) below not across", a, cc);
            cr_assert(!(mask & (1u << (9 * a + 6 + cc))), "node (%d, 2, %d) above across", a, cc);
        }
    /* The same in a rotated frame: the plate turned 90 degrees about x
     * (its thin axis now z), the particle above it in z. */
    firn_rigid turned = plate;
    turned.q = firn_quat_from_rotvec(firn_v3((float)M_PI / 2.0f, 0.0f, 0.0f));
    float xz[3] = {0.0f, 0.0f, 0.004f};
    uint32_t rz = 0;
    firn_particles pz = p;
    pz.n = 1, pz.x = xz, pz.cpic = &rz;
    firn_cpic_mark(0, &P, pz, &turned, 1);
    cr_assert(firn_cpic_unpack(rz).v[2] > 0.99f, "record %08x", rz);
    st = firn_make_stencil(&P, firn_v3(0.0f, 0.0f, 0.004f));
    mask =
        firn_cpic_stencil_mask(&P, &st, firn_v3(0.0f, 0.0f, 0.004f), &turned, firn_cpic_unpack(rz));
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            cr_assert(mask & (1u << (9 * a + 3 * b)), "node (%d, %d, 0) below not across", a, b);
            cr_assert(!(mask & (1u << (9 * a + 3 * b + 2))), "node (%d, %d, 2) across", a, b);
        }
    /* Moved through the plate, the particle keeps its side: the normal
     * where it stands (-y) would flip it. */
    uint32_t before = rec[0];
    x[3 + 0] = -0.003f;
    firn_cpic_mark(0, &P, p, &plate, 1);
    cr_assert_eq(rec[0], before, "the record flipped");
    /* A non-coupled body records nothing. */
    plate.couple = 0;
    firn_cpic_mark(0, &P, p, &plate, 1);
    cr_assert_eq(rec[0], 0u);
}

/* A sand column dropped on a static plate 0.3 dx thick spanning the whole
 * domain, placed between two node layers so that no node lies inside it.
 * Returns the fraction of particles below the plate after t = 0.5 s. */
static double fraction_through_plate(int cpic, double *ke_out)
{
    firn_scene_def def;
    base_scene(&def, 1.0f / 32.0f);
    for (int a = 0; a < 3; a++)
        def.upper[a] = 0.5f;
    firn_material_default(&def.materials[0], FIRN_MODEL_SAND);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "sand");
    add_box_body(&def, 0, (float[3]){0.25f, 0.35f, 0.25f}, (float[3]){0.16f, 0.16f, 0.16f}, NULL);
    const float plate_y = 6.5f * def.dx, half = 0.15f * def.dx;
    firn_rigid_def *r = add_rigid(&def, FIRN_RSHAPE_BOX, FIRN_RIGID_STATIC);
    r->shape.center[0] = r->shape.center[2] = 0.25f;
    r->shape.center[1] = plate_y;
    r->shape.size[0] = r->shape.size[2] = 0.6f;
    r->shape.size[1] = 2.0f * half;
    def.coupling.cpic = cpic;
    firn_world *w = make_world(&def);
    cr_assert_eq(w->coupler.cpic, cpic);
    run_frames(w, 30);
    int below = 0;
    for (int i = 0; i < w->p.n; i++)
        below += w->p.x[w->p.n + i] < plate_y - half;
    firn_frame_stats s;
    firn_error err;
    cr_assert_eq(firn_world_stats(w, &s, &err), 0, "%s", err.msg);
    *ke_out = s.kinetic_energy / s.mass;
    double f = (double)below / w->p.n;
    firn_world_destroy(w);
    return f;
}

Test(cpic, without_cpic_material_leaks_through_a_thin_plate_with_cpic_it_does_not, .timeout = 240)
{
    double ke_off, ke_on;
    double off = fraction_through_plate(0, &ke_off);
    double on = fraction_through_plate(1, &ke_on);
    cr_assert(off > 0.5, "without CPIC only %.1f %% passed the plate", 100.0 * off);
    cr_assert(on < 1e-3, "with CPIC %.2f %% passed the plate", 100.0 * on);
    /* It rests on the plate rather than hovering in motion. */
    cr_assert(ke_on < 0.5 * 0.02 * 0.02, "sand on the plate still moving: ke/m = %g J/kg", ke_on);
}

/* ---- keyframes -------------------------------------------------------------- */

/* A kinematic box following three keyframes: +x at 0.4 m/s turning 90
 * degrees about z in the first half second, then +y at 0.4 m/s. */
static firn_rigid_def *add_keyframed(firn_scene_def *def)
{
    firn_rigid_def *r = add_rigid(def, FIRN_RSHAPE_BOX, FIRN_RIGID_KINEMATIC);
    r->n_keyframes = 3;
    const float t[3] = {0.0f, 0.5f, 1.0f},
                x[3][3] = {{0.2f, 0.3f, 0.5f}, {0.4f, 0.3f, 0.5f}, {0.4f, 0.5f, 0.5f}};
    for (int k = 0; k < 3; k++) {
        r->keyframes[k].t = t[k];
        for (int a = 0; a < 3; a++)
            r->keyframes[k].position[a] = x[k][a];
        r->keyframes[k].rotation[2] = k ? 90.0f : 0.0f;
    }
    return r;
}

static void expect_body(const firn_rigid *b, const float x[3], const float v[3], float wz,
                        float angle, const char *when)
{
    for (int a = 0; a < 3; a++) {
        cr_assert(fabsf(b->x[a] - x[a]) < 1e-5f, "%s: x[%d] = %g, want %g", when, a, b->x[a], x[a]);
        cr_assert(fabsf(b->v[a] - v[a]) < 1e-5f, "%s: v[%d] = %g, want %g", when, a, b->v[a], v[a]);
        float w = a == 2 ? wz : 0.0f;
        cr_assert(fabsf(b->w[a] - w) < 1e-4f, "%s: w[%d] = %g, want %g", when, a, b->w[a], w);
    }
    firn_vec3 ex = firn_quat_rotate(b->q, firn_v3(1.0f, 0.0f, 0.0f));
    cr_assert(fabsf(ex.v[0] - cosf(angle)) < 1e-5f && fabsf(ex.v[1] - sinf(angle)) < 1e-5f,
              "%s: x axis -> (%g, %g), want %g rad", when, ex.v[0], ex.v[1], angle);
}

Test(keyframes, pose_and_velocity_between_keyframes)
{
    firn_scene_def def;
    base_scene(&def, 1.0f / 32.0f);
    for (int a = 0; a < 3; a++)
        def.gravity[a] = 0.0f;
    firn_material_default(&def.materials[0], FIRN_MODEL_ELASTIC);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "m");
    add_box_body(&def, 0, (float[3]){0.85f, 0.85f, 0.85f}, (float[3]){0.05f, 0.05f, 0.05f}, NULL);
    add_keyframed(&def)->couple = 0;
    firn_world *w = make_world(&def);
    const float pi = (float)M_PI;
    /* The first segment's velocities from the start. */
    expect_body(&w->rigids[0], (float[3]){0.2f, 0.3f, 0.5f}, (float[3]){0.4f, 0.0f, 0.0f}, pi, 0.0f,
                "t = 0");
    firn_error err;
    cr_assert_eq(firn_world_run_substeps(w, 50, 0.005f, &err), 0, "%s", err.msg);
    expect_body(&w->rigids[0], (float[3]){0.3f, 0.3f, 0.5f}, (float[3]){0.4f, 0.0f, 0.0f}, pi,
                pi / 4.0f, "t = 0.25");
    cr_assert_eq(firn_world_run_substeps(w, 100, 0.005f, &err), 0, "%s", err.msg);
    expect_body(&w->rigids[0], (float[3]){0.4f, 0.4f, 0.5f}, (float[3]){0.0f, 0.4f, 0.0f}, 0.0f,
                pi / 2.0f, "t = 0.75");
    cr_assert_eq(firn_world_run_substeps(w, 100, 0.005f, &err), 0, "%s", err.msg);
    expect_body(&w->rigids[0], (float[3]){0.4f, 0.5f, 0.5f}, (float[3]){0.0f, 0.0f, 0.0f}, 0.0f,
                pi / 2.0f, "t = 1.25, after the last keyframe");
    /* firn_key_pose directly, inside a segment: slerp at a third. */
    float x[3];
    firn_quat q;
    firn_key_pose(&w->rigids[0], 0.5 / 3.0, x, &q);
    firn_vec3 ex = firn_quat_rotate(q, firn_v3(1.0f, 0.0f, 0.0f));
    cr_assert(fabsf(x[0] - (0.2f + 0.2f / 3.0f)) < 1e-6f &&
                  fabsf(ex.v[1] - sinf(pi / 6.0f)) < 1e-6f,
              "x = %g, sin = %g", x[0], ex.v[1]);
    firn_world_destroy(w);
}

Test(keyframes, the_coupling_sees_the_keyframe_velocity)
{
    /* A frictionless keyframed box moving +x at 0.5 m/s through the side
     * of a block at rest: after one substep the nodes at its leading face
     * move with it, at exactly its speed. */
    firn_scene_def def;
    base_scene(&def, 1.0f / 32.0f);
    for (int a = 0; a < 3; a++)
        def.gravity[a] = 0.0f;
    firn_material_default(&def.materials[0], FIRN_MODEL_ELASTIC);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "m");
    add_box_body(&def, 0, (float[3]){0.5f, 0.5f, 0.5f}, (float[3]){0.2f, 0.2f, 0.2f}, NULL);
    firn_rigid_def *r = add_rigid(&def, FIRN_RSHAPE_BOX, FIRN_RIGID_KINEMATIC);
    r->shape.size[0] = 0.1f, r->shape.size[1] = r->shape.size[2] = 0.3f;
    r->friction = 0.0f;
    r->n_keyframes = 2;
    r->keyframes[0].position[0] = 0.42f, r->keyframes[1].position[0] = 0.92f;
    r->keyframes[1].t = 1.0f;
    for (int k = 0; k < 2; k++)
        r->keyframes[k].position[1] = r->keyframes[k].position[2] = 0.5f;
    firn_world *w = make_world(&def);
    firn_error err;
    cr_assert_eq(firn_world_substep(w, 1e-4f, &err), 0, "%s", err.msg);
    float vmax = 0.0f;
    for (long long node = 0; node < w->grid.nodes; node++)
        if (w->grid.node[4 * node + 3] > 0.0f)
            vmax = fmaxf(vmax, w->grid.node[4 * node]);
    cr_assert(fabsf(vmax - 0.5f) < 1e-5f, "fastest node %g m/s, the body moves at 0.5", vmax);
    firn_world_destroy(w);
}

/* ---- scene keys and stats ------------------------------------------------- */

static int parse(const char *rigids, firn_scene_def *def, firn_error *err)
{
    char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"materials\": {\"m\": {\"model\": \"sand\"}},"
             " \"bodies\": [{\"material\": \"m\", \"shape\": {\"type\": \"box\"}}]%s}",
             rigids);
    return firn_scene_parse_json(buf, "t.json", def, err);
}

static void expect_error(const char *rigids, const char *needle)
{
    firn_scene_def def;
    firn_error err;
    cr_assert_eq(parse(rigids, &def, &err), FIRN_E_SCENE, "accepted: %s", rigids);
    cr_assert(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
    cr_assert(strstr(err.msg, "t.json"), "message '%s' lacks the file", err.msg);
}

Test(coupling_scene, rigid_keys_parse_with_genesis_defaults)
{
    firn_scene_def def;
    firn_error err;
    int rc = parse(
        ",\"rigids\": [{\"name\": \"ball\", \"shape\": {\"type\": \"sphere\", \"radius\": 0.1,"
        " \"center\": [0.5, 0.8, 0.5]}, \"motion\": \"dynamic\", \"density\": 500},"
        " {\"shape\": {\"type\": \"plane\", \"center\": [0, 0.1, 0], \"normal\": [0, 2, 0]},"
        "  \"friction\": 0.5, \"restitution\": 0.2, \"softness\": 0.001},"
        " {\"shape\": {\"type\": \"capsule\", \"radius\": 0.02, \"height\": 0.1, \"axis\": \"z\"},"
        "  \"motion\": \"kinematic\", \"velocity\": [1, 0, 0], \"angular_velocity\": [0, 0, 3],"
        "  \"rotation\": [0, 0, 45], \"couple\": false}],"
        " \"coupling\": {\"rigid_mpm\": true}",
        &def, &err);
    cr_assert_eq(rc, FIRN_OK, "%s", err.msg);
    cr_assert_eq(def.n_rigids, 3);
    cr_assert_str_eq(def.rigids[0].name, "ball");
    cr_assert_str_eq(def.rigids[1].name, "rigid1");
    cr_assert_eq(def.rigids[0].motion, FIRN_RIGID_DYNAMIC);
    cr_assert(def.rigids[0].friction == 0.1f && def.rigids[0].softness == 0.002f &&
              def.rigids[0].restitution == 0.0f && def.rigids[0].couple == 1);
    cr_assert(def.rigids[1].friction == 0.5f && def.rigids[1].restitution == 0.2f);
    cr_assert_eq(def.rigids[2].shape.axis, 2);
    cr_assert_eq(def.rigids[2].couple, 0);
    cr_assert(def.coupling.rigid_mpm == 1 && def.coupling.cpic == 0);
}

Test(coupling_scene, bad_rigids_name_the_key_path)
{
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"torus\"}}]",
                 "rigids[0].shape.type: \"torus\": unknown value");
    expect_error(
        ",\"rigids\": [{\"shape\": {\"type\": \"sphere\"}}, {\"shape\": {\"type\": \"sphere\","
        " \"radius\": 0}}]",
        "rigids[1].shape.radius = 0: must be > 0");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"box\", \"lower\": [0, 0, 0], \"upper\": "
                 "[1, -1, 1]}}]",
                 "rigids[0].shape.upper[1]");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"box\", \"size\": [0.1, 0, 0.1]}}]",
                 "rigids[0].shape.size[1] = 0: must be > 0");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"sphere\"}, \"motion\": \"dynamic\", "
                 "\"density\": 0}]",
                 "rigids[0].density = 0: must be > 0");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"plane\"}, \"motion\": \"dynamic\"}]",
                 "rigids[0].motion: a plane");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"plane\", \"normal\": [0, 0, 0]}}]",
                 "rigids[0].shape.normal: must not be zero");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"sphere\", \"height\": 1}}]",
                 "rigids[0].shape.height: unknown key for a sphere");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"sphere\"}, \"velocity\": [1, 0, 0]}]",
                 "rigids[0].velocity: a static body does not move");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"sphere\"}, \"motion\": \"flying\"}]",
                 "rigids[0].motion: \"flying\"");
    expect_error(",\"coupling\": {\"rigid_mpm\": false, \"cpic\": true}",
                 "coupling.cpic: true needs coupling.rigid_mpm true");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"sphere\"}, \"restitution\": 1.5}]",
                 "rigids[0].restitution = 1.5: must be in [0, 1]");
    expect_error(",\"rigids\": [{\"name\": \"a\", \"shape\": {\"type\": \"sphere\"}},"
                 " {\"name\": \"a\", \"shape\": {\"type\": \"sphere\"}}]",
                 "rigids[1].name: \"a\": duplicate");
    expect_error(",\"rigids\": [{\"motion\": \"static\"}]", "rigids[0].shape: missing");
    expect_error(",\"coupling\": {\"rigid_mpm\": 1}", "coupling.rigid_mpm: expected true or false");
    expect_error(",\"coupling\": {\"cpic\": 1}", "coupling.cpic: expected true or false");
}

Test(coupling_scene, stats_line_carries_every_rigid)
{
    firn_scene_def def;
    base_scene(&def, 1.0f / 16.0f);
    firn_material_default(&def.materials[0], FIRN_MODEL_SAND);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "sand");
    add_box_body(&def, 0, (float[3]){0.5f, 0.3f, 0.5f}, (float[3]){0.3f, 0.2f, 0.3f}, NULL);
    firn_rigid_def *r = add_rigid(&def, FIRN_RSHAPE_SPHERE, FIRN_RIGID_DYNAMIC);
    r->shape.center[1] = 0.7f;
    snprintf(r->name, sizeof r->name, "ball");
    add_rigid(&def, FIRN_RSHAPE_PLANE, FIRN_RIGID_STATIC)->shape.center[1] = 0.15f;
    firn_world *w = make_world(&def);
    firn_frame_stats s;
    firn_error err;
    cr_assert_eq(firn_world_step_frame(w, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(s.n_rigids, 2);
    cr_assert(s.rigids[0].velocity[1] < 0.0f && s.rigids[0].orientation[0] == 1.0f);
    cr_assert(s.rigids[1].force[1] < 0.0f, "the sand pushed no force into the floor");
    char dir[] = "/tmp/firn_coupling_XXXXXX", path[256];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    cr_assert_eq(firn_append_stats_jsonl(path, &def, &s, &err), FIRN_OK, "%s", err.msg);
    FILE *f = fopen(path, "r");
    char line[16384];
    cr_assert(fgets(line, sizeof line, f));
    fclose(f);
    remove(path);
    remove(dir);
    const char *keys[] = {"\"rigids\":[{\"name\":\"ball\",\"position\":[",
                          "\"orientation\":[1,0,0,0]",
                          "\"velocity\":[",
                          "\"angular_velocity\":[",
                          "\"force\":[",
                          "\"torque\":[",
                          "{\"name\":\"r1\""};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        cr_assert(strstr(line, keys[k]), "stats line lacks %s: %s", keys[k], line);
    firn_world_destroy(w);
}

Test(keyframes, scene_keys_parse_and_bad_ones_name_the_path)
{
    firn_scene_def def;
    firn_error err;
    int rc = parse(",\"rigids\": [{\"shape\": {\"type\": \"box\"}, \"motion\": \"kinematic\","
                   " \"keyframes\": [{\"t\": 0, \"position\": [0.5, 0.5, 0.5]},"
                   " {\"t\": 2, \"position\": [0.6, 0.5, 0.5], \"rotation\": [0, 45, 0]}]}]",
                   &def, &err);
    cr_assert_eq(rc, FIRN_OK, "%s", err.msg);
    cr_assert_eq(def.rigids[0].n_keyframes, 2);
    cr_assert(def.rigids[0].keyframes[1].t == 2.0f &&
              def.rigids[0].keyframes[1].rotation[1] == 45.0f);
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"box\"}, \"motion\": \"dynamic\","
                 " \"keyframes\": [{\"t\": 0, \"position\": [0.5, 0.5, 0.5]}]}]",
                 "rigids[0].keyframes: only a kinematic body follows keyframes");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"box\"}, \"motion\": \"kinematic\","
                 " \"keyframes\": [{\"t\": 1, \"position\": [0.5, 0.5, 0.5]},"
                 " {\"t\": 1, \"position\": [0.5, 0.5, 0.5]}]}]",
                 "rigids[0].keyframes[1].t: 1: must be after the previous keyframe's 1");
    expect_error(
        ",\"rigids\": [{\"shape\": {\"type\": \"box\"}, \"motion\": \"kinematic\","
        " \"velocity\": [1, 0, 0], \"keyframes\": [{\"t\": 0, \"position\": [0.5, 0.5, 0.5]}]}]",
        "rigids[0].velocity: the keyframes give");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"box\"}, \"motion\": \"kinematic\","
                 " \"keyframes\": [{\"t\": 0}]}]",
                 "rigids[0].keyframes[0].position: missing");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"box\"}, \"motion\": \"kinematic\","
                 " \"keyframes\": [{\"t\": 0, \"position\": [0, 0, 0], \"speed\": 1}]}]",
                 "rigids[0].keyframes[0].speed: unknown key");
    expect_error(",\"rigids\": [{\"shape\": {\"type\": \"box\"}, \"motion\": \"kinematic\","
                 " \"keyframes\": []}]",
                 "rigids[0].keyframes: 0 keyframes");
}

/* A kinematic sphere at 60 m/s, still 0.35 m outside the domain, reaches
 * the water within the first 0.02 s frame: the CFL step must already
 * account for it (dt <= cfl dx / 60 m/s, a third of the water's own
 * 7.5e-4 s), or the coupled nodes would move material several cells per
 * substep. A sphere out of reach for the frame does not limit the step. */
Test(coupling, a_rigid_body_arriving_within_the_frame_limits_the_cfl_step)
{
    firn_scene_def def;
    base_scene(&def, 1.0f / 32.0f);
    def.frame_dt = 0.02f;
    firn_material_default(&def.materials[0], FIRN_MODEL_LIQUID);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "water");
    add_box_body(&def, 0, (float[3]){0.5f, 0.17f, 0.5f}, (float[3]){0.8f, 0.2f, 0.8f}, NULL);
    firn_rigid_def *r = add_rigid(&def, FIRN_RSHAPE_SPHERE, FIRN_RIGID_KINEMATIC);
    r->shape.center[0] = -0.35f, r->shape.center[1] = 0.2f, r->shape.center[2] = 0.5f;
    r->shape.radius = 0.1f;
    r->velocity[0] = 60.0f;
    firn_world *w = make_world(&def);
    const float limit = def.cfl * def.dx / 60.0f;
    cr_assert_leq(firn_world_cfl_dt(w), limit * (1.0f + 1e-5f),
                  "dt %g s ignores the arriving body (limit %g s)", firn_world_cfl_dt(w), limit);
    firn_world_destroy(w);

    r = &def.rigids[0];
    r->shape.center[0] = -1.5f; /* 60 m/s x 0.02 s = 1.2 m: stays outside this frame */
    w = make_world(&def);
    cr_assert_gt(firn_world_cfl_dt(w), 2.0f * limit,
                 "a body out of reach limited the step: dt %g s", firn_world_cfl_dt(w));
    firn_world_destroy(w);
}

/* Three keyframes 0, 1e-40 and 5 ms apart: the first gap is below float
 * precision (1 / 1e-40 is inf in float), so the first segment's velocity
 * is (0 x inf, -0.08 x inf, 0 x inf) = (NaN, -inf, NaN); the second moves
 * 0.02 m in 5 ms, 4 m/s. The scene loader refuses such a gap; these keys
 * are written into the body after it. */
static void tiny_gap_keys(firn_rigid *b)
{
    const double t[3] = {0.0, 1e-40, 0.005};
    const float y[3] = {0.8f, 0.72f, 0.7f};
    b->n_keys = 3;
    for (int k = 0; k < 3; k++) {
        b->key[k].t = t[k];
        b->key[k].x[0] = b->key[k].x[2] = 0.5f;
        b->key[k].x[1] = y[k];
        b->key[k].q = (firn_quat){{1.0f, 0.0f, 0.0f, 0.0f}};
        for (int a = 0; a < 3; a++)
            b->key[k].rv[a] = 0.0f;
    }
}

/* The largest speed over a window keeps a segment that is not a number:
 * a plain max would drop the NaN against the next segment's 4 m/s, and
 * the CFL step would not see it. */
Test(keyframes, max_speed_keeps_a_segment_that_is_not_finite)
{
    firn_rigid b;
    memset(&b, 0, sizeof b);
    tiny_gap_keys(&b);
    float v, om;
    cr_assert_eq(firn_key_max_speed(&b, 0.0, 0.01, &v, &om), 0, "the first segment is blamed");
    cr_assert(isnan(v), "speed %g over [0, 0.01] s, want NaN", v);
    /* A window past the tiny segment: 0.02 m in 5 ms. */
    cr_assert_eq(firn_key_max_speed(&b, 0.001, 0.01, &v, &om), -1);
    cr_assert(fabsf(v - 4.0f) < 1e-5f && om == 0.0f, "speed %g, angular %g", v, om);
}

/* The same keys on a coupled kinematic rigid and on a tool over sand: the
 * first frame's CFL check stops the run and names the body and the
 * keyframes, instead of following the 4 m/s segment. */
static void expect_tiny_gap_stops(firn_world *w, const char *body)
{
    firn_error err;
    cr_assert_neq(firn_world_step_frame(w, NULL, &err), 0, "the run went on");
    cr_assert_eq(err.code, FIRN_E_NUMERIC, "%s", err.msg);
    char want[128];
    snprintf(want, sizeof want, "%s.keyframes[0] (t = 0 s) to keyframes[1] (t = 1e-40 s)", body);
    cr_assert(strstr(err.msg, want) && strstr(err.msg, "not finite"), "%s", err.msg);
}

Test(keyframes, a_segment_that_is_not_finite_stops_the_run)
{
    firn_scene_def def;
    base_scene(&def, 1.0f / 16.0f);
    def.frame_dt = 0.01f;
    firn_material_default(&def.materials[0], FIRN_MODEL_SAND);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "sand");
    add_box_body(&def, 0, (float[3]){0.5f, 0.3f, 0.5f}, (float[3]){0.4f, 0.2f, 0.4f}, NULL);
    firn_rigid_def *r = add_rigid(&def, FIRN_RSHAPE_SPHERE, FIRN_RIGID_KINEMATIC);
    r->shape.radius = 0.05f;
    r->n_keyframes = 2;
    r->keyframes[1].t = 1.0f;
    for (int k = 0; k < 2; k++)
        r->keyframes[k].position[0] = r->keyframes[k].position[2] = 0.5f,
        r->keyframes[k].position[1] = 0.8f;
    firn_world *w = make_world(&def);
    tiny_gap_keys(&w->rigids[0]);
    expect_tiny_gap_stops(w, "rigids[0]");
    firn_world_destroy(w);

    /* A tool with the same keys. */
    def.n_rigids = 0;
    firn_tool_def *t = &def.tools[def.n_tools++];
    firn_tool_default(t);
    snprintf(t->name, FIRN_NAME_MAX, "plate");
    t->shape.type = FIRN_RSHAPE_BOX;
    for (int a = 0; a < 3; a++)
        t->shape.center[a] = 0.5f, t->shape.size[a] = 0.1f;
    t->shape.center[1] = 0.8f;
    w = make_world(&def);
    tiny_gap_keys(&w->tools[0].body);
    expect_tiny_gap_stops(w, "tools[0]");
    firn_world_destroy(w);
}

Test(coupling, profile_phases_are_disjoint_parts_of_the_substep)
{
    /* The rigid bodies' step counts as `couple` (as CPIC's side marking
     * does): with rigid bodies and no CPIC, couple is timed (> 0), and the
     * five phases, timed one after another inside each substep, add up to
     * no more than the substeps' total (1 us of timer slack per substep). */
    firn_scene_def def;
    coupled_scene(&def, 0);
    def.frame_dt = 0.005f;
    firn_world *w = make_world(&def);
    run_frames(w, 1);
    firn_profile p = firn_world_profile(w);
    long long substeps = w->substeps;
    cr_assert_gt(substeps, 0);
    cr_expect_gt(p.couple, 0.0, "the rigid step was not timed");
    double sum = p.clear + p.p2g + p.grid + p.couple + p.g2p;
    cr_expect_leq(
        sum, p.total + 1e-6 * (double)substeps,
        "phases %.6f s (clear %.6f p2g %.6f grid %.6f couple %.6f g2p %.6f) > total %.6f s", sum,
        p.clear, p.p2g, p.grid, p.couple, p.g2p, p.total);
    cr_expect_gt(sum, 0.5 * p.total, "phases %.6f s cover under half of the total %.6f s", sum,
                 p.total);
    firn_world_destroy(w);
}
