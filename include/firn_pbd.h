/* firn_pbd.h - position based dynamics: one body per particle or per
 * constraint for each pass of the PBD substep, shared by the CPU path
 * (host/pbd_cpu.c, host/coupler.c) and, later, CUDA kernels (one launch per
 * constraint colour). Extended PBD (XPBD: Macklin, Mueller and Chentanez
 * 2016, "XPBD: position-based simulation of compliant constrained
 * dynamics"): each constraint j carries a Lagrange multiplier lambda_j,
 * zeroed at the start of a substep and accumulated over its iterations, and
 * a compliance alpha_j (the inverse of its stiffness), so that the converged
 * state does not depend on the iteration count or the substep.
 * docs/PHYSICS.md section 6. */
#ifndef FIRN_PBD_H
#define FIRN_PBD_H

#include "firn_coupling.h"
#include "firn_neighbour.h"

/* PBD particle state, structure of arrays, component-major like MPM's
 * (component c of particle i at [c*n + i]). 4 * (3+3+3+1+1+3+1+1) + 1 =
 * 65 bytes per particle. */
typedef struct {
    int n;
    float *x;      /* 3n positions [m] */
    float *v;      /* 3n velocities [m/s] */
    float *x0;     /* 3n positions at the start of the substep [m] */
    float *mass;   /* n [kg] */
    float *w;      /* n inverse mass [1/kg]; 0: pinned (never moves) */
    float *dx;     /* 3n a particle pass's correction, applied after the pass (Jacobi) [m];
                    * between PBF's lambda and delta passes the ghosts' gradient [1/m^4] */
    float *lambda; /* n liquid: the density constraint's multiplier of the iteration [m^2] */
    float *rho;    /* n liquid: the density of the latest iteration [kg/m^3] */
    uint8_t *mat;  /* n scene material index */
} firn_pbd_particles;

enum { FIRN_PBD_PARTICLE = 0, FIRN_PBD_CLOTH, FIRN_PBD_LIQUID };

/* One PBD material (firn_material_def with model pbd_cloth, pbd_particle
 * or pbd_liquid). 32 bytes. */
typedef struct {
    float stretch_compliance;   /* alpha of a distance constraint [m/N] */
    float bending_compliance;   /* alpha of a dihedral-angle constraint [1/(N m)] */
    float air_resistance;       /* quadratic drag c: a = -c |v| v / m [kg/m] */
    float mu_s, mu_k;           /* static and kinetic friction against rigid bodies and in
                                   particle contact [-] */
    int kind;                   /* FIRN_PBD_PARTICLE, FIRN_PBD_CLOTH or FIRN_PBD_LIQUID */
    float rho0;                 /* liquid: rest density [kg/m^3] */
    float density_relaxation;   /* liquid: fraction of the density correction applied [-] */
    float viscosity_relaxation; /* liquid: XSPH coefficient on the displacements [-] */
} firn_pbd_material;

/* Everything a substep needs besides the arrays. */
typedef struct {
    float dt;         /* substep [s] */
    float psize;      /* particle size p [m]: contact distance p / 2 from a rigid surface */
    float gravity[3]; /* [m/s^2] */
    float lower[3];   /* the PBD box: particles are kept inside [lower, upper] [m] */
    float upper[3];
    firn_nbr_space nb; /* the neighbour grid: cells of edge h = 2.5 p, the liquid's kernel
                          support, over the box */
    float kw;          /* poly6 constant 315 / (64 pi h^3) [1/m^3] */
    float kg;          /* spiky gradient constant 45 / (pi h^4) [1/m^4] */
    float pbf_eps;     /* the density constraint's relaxation epsilon [1/m^2] */
} firn_pbd_params;

/* Constraints of one kind: k vertices each (2: stretch, 4: bending),
 * vertices v[k*j ..], rest value rest[j] (a length [m] or an angle [rad]),
 * compliance[j], and the multiplier lambda[j] of the current substep.
 * order[] lists the constraints colour by colour: colour c holds
 * order[colour_start[c] .. colour_start[c + 1]), and no two constraints of a
 * colour share a vertex, so a colour's constraints may be projected in
 * parallel with the same result as one by one. */
typedef struct {
    int n, k;
    int *v;
    float *rest;
    float *compliance;
    float *lambda;
    int *order;
    int colours;
    int *colour_start; /* colours + 1 */
} firn_pbd_constraints;

/* ---- particles -------------------------------------------------------------- */

/* Start of the substep (Genesis's order): x0 = x; a free particle gets
 * gravity, and cloth its air resistance, v /= 1 + c |v| dt / m (the exact
 * solution of dv/dt = -c |v| v / m over dt: it slows v, never reverses or
 * grows it, at any c and dt); then x += v dt. A pinned particle (w = 0)
 * keeps x and v. */
static inline FIRN_HD void firn_pbd_predict(int i, const firn_pbd_params *P,
                                            const firn_pbd_material *mats, firn_pbd_particles s)
{
    const int n = s.n;
    firn_vec3 x = firn_load3(s.x, n, i), v = firn_load3(s.v, n, i);
    firn_store3(s.x0, n, i, x);
    if (!(s.w[i] > 0.0f))
        return;
    v = firn_add(v, firn_scale(firn_v3(P->gravity[0], P->gravity[1], P->gravity[2]), P->dt));
    const firn_pbd_material *m = &mats[s.mat[i]];
    if (m->kind == FIRN_PBD_CLOTH)
        v = firn_scale(v, 1.0f / (1.0f + m->air_resistance * firn_norm(v) * P->dt * s.w[i]));
    firn_store3(s.v, n, i, v);
    firn_store3(s.x, n, i, firn_add(x, firn_scale(v, P->dt)));
}

/* Every correction c made to a free particle's position in the substep
 * (a constraint, a particle pass, PBD-rigid, MPM-PBD) is made to its
 * velocity as well, v += c / dt, so that at the end v is (x - x0) / dt of
 * the exact corrections rather than of the float positions: a position
 * near 0.5 m is kept to 6e-8 m, which over a substep of 3.5e-5 s is a
 * velocity quantum of 1.7e-3 m/s, and a correction smaller than half of
 * it would round away from x and from the momentum with it (the pair that
 * made it keeps its side). docs/PHYSICS.md s6.6. */
static inline FIRN_HD void firn_pbd_move(firn_pbd_particles s, int i, firn_vec3 x, firn_vec3 c,
                                         float inv_dt)
{
    firn_store3(s.x, s.n, i, firn_add(x, c));
    firn_store3(s.v, s.n, i, firn_add(firn_load3(s.v, s.n, i), firn_scale(c, inv_dt)));
}

/* End of the substep: v is x0's velocity plus the corrections' (the
 * predicted v of firn_pbd_predict, with firn_pbd_move's c / dt), then the
 * PBD box as Genesis's CubeBoundary with restitution 0: on a face the
 * outward velocity component is dropped, and the position is clamped into
 * the box. Returns 0 when the particle's state is not finite. */
static inline FIRN_HD int firn_pbd_finish(int i, const firn_pbd_params *P, firn_pbd_particles s)
{
    const int n = s.n;
    if (!(s.w[i] > 0.0f))
        return 1;
    firn_vec3 x = firn_load3(s.x, n, i), v = firn_load3(s.v, n, i);
    for (int a = 0; a < 3; a++) {
        if (x.v[a] >= P->upper[a] && v.v[a] >= 0.0f)
            v.v[a] = 0.0f;
        else if (x.v[a] <= P->lower[a] && v.v[a] <= 0.0f)
            v.v[a] = 0.0f;
        x.v[a] = firn_clampf(x.v[a], P->lower[a], P->upper[a]);
    }
    firn_store3(s.x, n, i, x);
    firn_store3(s.v, n, i, v);
    return isfinite(x.v[0] + x.v[1] + x.v[2] + v.v[0] + v.v[1] + v.v[2]);
}

/* ---- stretch ---------------------------------------------------------------- */

/* XPBD distance constraint j (Macklin et al. 2016, eq. 18): C = |x1 - x2|
 * - L, grad C = +-n, alpha~ = alpha / dt^2,
 *   dlambda = (-C - alpha~ lambda) / (w1 + w2 + alpha~),
 *   x1 += w1 dlambda n, x2 -= w2 dlambda n. */
static inline FIRN_HD void firn_pbd_stretch(int j, const firn_pbd_constraints *E, float dt,
                                            firn_pbd_particles s)
{
    const int n = s.n, a = E->v[2 * j], b = E->v[2 * j + 1];
    const float wa = s.w[a], wb = s.w[b], at = E->compliance[j] / (dt * dt);
    if (!(wa + wb > 0.0f))
        return;
    firn_vec3 xa = firn_load3(s.x, n, a), xb = firn_load3(s.x, n, b), d = firn_sub(xa, xb);
    const float len = firn_norm(d);
    if (!(len > 0.0f))
        return;
    const firn_vec3 nrm = firn_scale(d, 1.0f / len);
    const float C = len - E->rest[j];
    const float dl = (-C - at * E->lambda[j]) / (wa + wb + at);
    E->lambda[j] += dl;
    firn_pbd_move(s, a, xa, firn_scale(nrm, wa * dl), 1.0f / dt);
    firn_pbd_move(s, b, xb, firn_scale(nrm, -wb * dl), 1.0f / dt);
}

/* ---- bending ---------------------------------------------------------------- */

/* The bending angle of two triangles (a, b, c) and (b, a, d) that share the
 * edge a-b: theta = atan2((n1 x n2) . e, n1 . n2), the angle between their
 * normals about e = (b - a) / |b - a|, 0 for a flat pair; and its gradient
 * with respect to a, b, c, d (Bridson, Marino and Fedkiw 2003, "Simulation
 * of clothing with folds and wrinkles", s4.2): with E = b - a, N1 = E x
 * (c - a), N2 = (a - b) x (d - b),
 *   g_c = -|E| N1 / |N1|^2,  g_d = -|E| N2 / |N2|^2,
 *   g_a = ((c - b) . E / |E|) N1 / |N1|^2 + ((d - b) . E / |E|) N2 / |N2|^2, negated,
 *   g_b = -(g_a + g_c + g_d).
 * This gradient stays finite when the pair is flat, unlike the gradient of
 * acos(n1 . n2). Returns 0 for a degenerate pair (a zero edge or area). */
static inline FIRN_HD int firn_pbd_dihedral(firn_vec3 a, firn_vec3 b, firn_vec3 c, firn_vec3 d,
                                            float *theta, firn_vec3 g[4])
{
    const firn_vec3 E = firn_sub(b, a);
    const firn_vec3 N1 = firn_cross(E, firn_sub(c, a)),
                    N2 = firn_cross(firn_sub(a, b), firn_sub(d, b));
    const float le = firn_norm(E), n1 = firn_dot(N1, N1), n2 = firn_dot(N2, N2);
    if (!(le > 0.0f && n1 > 0.0f && n2 > 0.0f))
        return 0;
    const firn_vec3 u1 = firn_scale(N1, 1.0f / n1), u2 = firn_scale(N2, 1.0f / n2);
    const float s1 = sqrtf(n1), s2 = sqrtf(n2);
    const firn_vec3 m1 = firn_scale(N1, 1.0f / s1), m2 = firn_scale(N2, 1.0f / s2);
    *theta = atan2f(firn_dot(firn_cross(m1, m2), firn_scale(E, 1.0f / le)), firn_dot(m1, m2));
    g[2] = firn_scale(u1, -le);
    g[3] = firn_scale(u2, -le);
    g[0] = firn_scale(firn_add(firn_scale(u1, firn_dot(firn_sub(c, b), E) / le),
                               firn_scale(u2, firn_dot(firn_sub(d, b), E) / le)),
                      -1.0f);
    g[1] = firn_scale(firn_add(firn_add(g[0], g[2]), g[3]), -1.0f);
    return 1;
}

/* XPBD bending constraint j over the inner edge (a, b) with opposite
 * vertices c, d: C = theta - theta0 (wrapped into (-pi, pi]), theta0 the
 * rest mesh's angle; dlambda = (-C - alpha~ lambda) / (sum w |g|^2 +
 * alpha~), x_k += w_k dlambda g_k. */
static inline FIRN_HD void firn_pbd_bend(int j, const firn_pbd_constraints *B, float dt,
                                         firn_pbd_particles s)
{
    const int n = s.n, *q = B->v + 4 * j;
    firn_vec3 x[4], g[4];
    float w[4], sum = 0.0f, theta;
    for (int k = 0; k < 4; k++) {
        x[k] = firn_load3(s.x, n, q[k]);
        w[k] = s.w[q[k]];
    }
    if (!(w[0] + w[1] + w[2] + w[3] > 0.0f) ||
        !firn_pbd_dihedral(x[0], x[1], x[2], x[3], &theta, g))
        return;
    for (int k = 0; k < 4; k++)
        sum += w[k] * firn_dot(g[k], g[k]);
    const float at = B->compliance[j] / (dt * dt);
    float C = theta - B->rest[j];
    const float pi = 3.14159265358979f;
    if (C > pi)
        C -= 2.0f * pi;
    else if (C < -pi)
        C += 2.0f * pi;
    if (!(sum + at > 0.0f))
        return;
    const float dl = (-C - at * B->lambda[j]) / (sum + at);
    B->lambda[j] += dl;
    for (int k = 0; k < 4; k++)
        if (w[k] > 0.0f)
            firn_pbd_move(s, q[k], x[k], firn_scale(g[k], w[k] * dl), 1.0f / dt);
}

/* ---- PBD-rigid ----------------------------------------------------------------- */

/* Particle i against every coupled rigid body in turn (docs/PHYSICS.md
 * s6.5): within p/2 of a body's surface (signed distance sd < p/2) it moves
 * out along the SDF normal n to distance p/2, depth delta = p/2 - sd; then
 * friction (Macklin, Mueller, Chentanez and Kim 2014, "Unified particle
 * physics for real-time applications", eq. 24) on its tangential
 * displacement over the substep relative to the body's surface,
 * t = (dx - (dx . n) n) with dx = (x - x0) - v_body(x) dt: static (all of t
 * removed) while |t| < mu_s delta, else kinetic (t shortened by
 * mu_k delta). The particle's momentum changes by m (x' - x) / dt
 * (firn_pbd_move); the body receives the opposite impulse at the particle,
 * added to acc[6] per body. Pinned particles are left alone. */
static inline FIRN_HD void firn_pbd_rigid_particle(int i, const firn_pbd_params *P,
                                                   const firn_pbd_material *mats,
                                                   firn_pbd_particles s, const firn_rigid *bodies,
                                                   int nb, double *acc)
{
    const int n = s.n;
    if (!(s.w[i] > 0.0f))
        return;
    const firn_pbd_material *m = &mats[s.mat[i]];
    const float r = 0.5f * P->psize, dt = P->dt, inv_dt = 1.0f / dt, mass = s.mass[i];
    const firn_vec3 x0 = firn_load3(s.x0, n, i);
    firn_vec3 x = firn_load3(s.x, n, i);
    for (int k = 0; k < nb; k++) {
        const firn_rigid *b = &bodies[k];
        if (!b->couple)
            continue;
        firn_vec3 nrm, com = firn_rigid_pos(b);
        const float sd = firn_sdf_world(&b->shape, com, b->q, x, &nrm);
        if (!(sd < r))
            continue;
        const float depth = r - sd;
        firn_vec3 x2 = firn_add(x, firn_scale(nrm, depth));
        const firn_vec3 rx = firn_sub(x2, com);
        firn_vec3 dx = firn_sub(firn_sub(x2, x0), firn_scale(firn_rigid_velocity_at(b, rx), dt));
        firn_vec3 t = firn_sub(dx, firn_scale(nrm, firn_dot(dx, nrm)));
        const float lt = firn_norm(t);
        if (lt < m->mu_s * depth)
            x2 = firn_sub(x2, t);
        else if (lt > 0.0f)
            x2 = firn_sub(x2, firn_scale(t, firn_minf(m->mu_k * depth / lt, 1.0f)));
        const firn_vec3 c = firn_sub(x2, x);
        firn_rigid_react(firn_sub(x, com), firn_v3(0.0f, 0.0f, 0.0f), firn_scale(c, inv_dt), mass,
                         acc + FIRN_RIGID_ACC * k);
        firn_pbd_move(s, i, x, c, inv_dt);
        x = firn_load3(s.x, n, i);
    }
}

#endif
