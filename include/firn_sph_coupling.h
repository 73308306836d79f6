/* firn_sph_coupling.h - the SPH solver's coupling pairs, one body per MPM
 * node or SPH particle, shared by the CPU path (host/coupler.c) and the
 * CUDA kernels (kernels/sph.cu, kernels/coupling.cu): MPM-SPH in the grid
 * update, SPH-rigid after it. docs/PHYSICS.md s5.7. */
#ifndef FIRN_SPH_COUPLING_H
#define FIRN_SPH_COUPLING_H

#include "firn_coupling.h"
#include "firn_sph.h"

/* The MPM bodies as the SPH liquid sees them (MPM-SPH's contact): the
 * grid (its geometry P, its nodes with the mass at [4 j + 3]) and the MPM
 * particles' volume fraction on it, phi_j = sum_p N_j(x_p) V_p / dx^3
 * (firn_mpm_phi_scatter, V_p the particle's initial volume). phi NULL:
 * no contact distance, the collision alone (docs/PHYSICS.md 5.7). */
typedef struct {
    firn_params P;
    const float *phi;
    const float *node;
    float *react; /* the contact's reaction, a velocity change per node (3 floats) */
} firn_mpm_level;

/* The SPH solver as a coupling pair sees it. */
typedef struct {
    firn_sph_params P;
    const firn_sph_material *mats;
    firn_sph_particles s;
    firn_nbr_grid G;
    firn_mpm_level L; /* MPM-SPH's contact; L.phi NULL when off */
    /* FEM-SPH's contact distance (include/firn_fem_coupling.h), per SPH
     * particle; NULL when off: fem_key the nearest surface triangle within
     * h (firn_fem_sph_face), fem_d the signed distance to it (positive
     * outside; FIRN_FEM_SPH_FAR where no triangle is within h). */
    unsigned long long *fem_key;
    float *fem_d;
} firn_sph_view;

/* MPM particle p's volume V_p into the volume fraction grid phi (zeroed
 * before), with P2G's quadratic B-spline weights, over dx^3. */
static inline FIRN_HD void firn_mpm_phi_scatter(const firn_params *P, firn_vec3 x, float vol,
                                                float *phi)
{
    const firn_stencil st = firn_make_stencil(P, x);
    const float f = vol * P->inv_dx * P->inv_dx * P->inv_dx;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++)
                firn_atomic_add(
                    phi + firn_node_index(P->n, st.base[0] + a, st.base[1] + b, st.base[2] + c),
                    f * st.w[a][0] * st.w[b][1] * st.w[c][2]);
}

/* The volume fraction at distance t (in cells) outside a flat face of a
 * body of full volume fraction, as the scatter and the interpolation leave
 * it: the step smoothed twice by the quadratic B-spline, that is by the
 * quintic B-spline (the sum of six uniform variables on [-1/2, 1/2]), so
 * phi(t) = P(S > t) = sum_{k <= 3 - t} (-1)^k C(6, k) (3 - t - k)^6 / 720
 * (1/2 at the face, 0.016 at 1.5 cells, 0 from 3 cells). */
static inline FIRN_HD float firn_mpm_face_phi(float t)
{
    const float u = 3.0f - t;
    if (!(u > 0.0f))
        return 0.0f;
    const float c[4] = {1.0f, -6.0f, 15.0f, -20.0f};
    float sum = 0.0f;
    for (int k = 0; k < 4 && (float)k < u; k++) {
        const float r = u - (float)k, r2 = r * r;
        sum += c[k] * r2 * r2 * r2;
    }
    return sum * (1.0f / 720.0f);
}

/* The distance t in [0, 3) cells outside a flat face at which the volume
 * fraction is phi (0 < phi <= 1/2): firn_mpm_face_phi inverted by
 * bisection (it falls monotonically), to 3 / 2^20 cells. */
static inline FIRN_HD float firn_mpm_face_distance(float phi)
{
    float lo = 0.0f, hi = 3.0f;
    for (int k = 0; k < 20; k++) {
        const float mid = 0.5f * (lo + hi);
        if (firn_mpm_face_phi(mid) > phi)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5f * (lo + hi);
}

/* phi and grad phi at x (firn_mpm_level_at); 0 where x is outside the
 * grid's interior. */
static inline FIRN_HD int firn_mpm_level_sample(const firn_mpm_level *L, firn_vec3 x, float *phi,
                                                firn_vec3 *gr)
{
    const firn_params *P = &L->P;
    const firn_stencil st = firn_make_stencil(P, x);
    float dw[3][3];
    for (int a = 0; a < 3; a++) {
        const float f = st.fx[a];
        if (!(f >= 0.5f && f <= 1.5f)) /* x outside the grid's interior */
            return 0;
        dw[0][a] = (f - 1.5f) * P->inv_dx;
        dw[1][a] = -2.0f * (f - 1.0f) * P->inv_dx;
        dw[2][a] = (f - 0.5f) * P->inv_dx;
    }
    *phi = 0.0f;
    *gr = firn_v3(0.0f, 0.0f, 0.0f);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++) {
                const float q =
                    L->phi[firn_node_index(P->n, st.base[0] + a, st.base[1] + b, st.base[2] + c)];
                if (q == 0.0f)
                    continue;
                *phi += q * st.w[a][0] * st.w[b][1] * st.w[c][2];
                gr->v[0] += q * dw[a][0] * st.w[b][1] * st.w[c][2];
                gr->v[1] += q * st.w[a][0] * dw[b][1] * st.w[c][2];
                gr->v[2] += q * st.w[a][0] * st.w[b][1] * dw[c][2];
            }
    return 1;
}

/* Whether x lies inside the MPM bodies, phi(x) >= 1/2 (MPM-SPH's
 * collision takes these particles; 0 without the level). */
static inline FIRN_HD int firn_mpm_inside(const firn_mpm_level *L, firn_vec3 x)
{
    float phi;
    firn_vec3 gr;
    return L->phi && firn_mpm_level_sample(L, x, &phi, &gr) && phi >= 0.5f;
}

/* The curvature kappa = div n of the level set through x (2 / r on a ball
 * of radius r), n the outward normal at x: the normals' differences a
 * cell to either side along two tangents, sum_t (n(x + dx t) - n(x - dx t))
 * . t / (2 dx). (The interpolation's own second derivatives are constant
 * per cell: on a ball of 2.5 cells they gave 0.2 to 1.3 times its
 * curvature; the differences give 0.8 to 1.1.) 0 where a sample leaves the
 * grid's interior or has no gradient. */
static inline FIRN_HD float firn_mpm_level_curvature(const firn_mpm_level *L, firn_vec3 x,
                                                     firn_vec3 n)
{
    const float dx = L->P.dx;
    const firn_vec3 e =
        fabsf(n.v[0]) < 0.9f ? firn_v3(1.0f, 0.0f, 0.0f) : firn_v3(0.0f, 1.0f, 0.0f);
    firn_vec3 t[2];
    t[0] = firn_cross(n, e);
    t[0] = firn_scale(t[0], 1.0f / sqrtf(firn_dot(t[0], t[0])));
    t[1] = firn_cross(n, t[0]);
    float kappa = 0.0f;
    for (int m = 0; m < 2; m++)
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            float phi;
            firn_vec3 gr;
            if (!firn_mpm_level_sample(L, firn_add(x, firn_scale(t[m], (float)sgn * dx)), &phi,
                                       &gr))
                return 0.0f;
            const float g = sqrtf(firn_dot(gr, gr));
            if (!(g > 1e-3f * L->P.inv_dx))
                return 0.0f;
            /* the outward normal -gr / g along t, times the side's sign */
            kappa -= (float)sgn * firn_dot(gr, t[m]) / (g * 2.0f * dx);
        }
    return kappa;
}

/* The MPM bodies' surface near x, as a level set of the volume fraction
 * interpolated with the same weights, phi(x) = sum_j N_j(x) phi_j: the
 * surface is phi = 1/2 (a flat face's step, smoothed symmetrically by the
 * scatter and the interpolation, crosses 1/2 on the face), the outward
 * normal n = -grad phi / |grad phi|, and the distance to it as for a flat
 * face, d = dx firn_mpm_face_distance(phi), less the shift the smoothing
 * gives a curved surface (below). (The linearised
 * (1/2 - phi) / |grad phi| would double the distance at a cell.) Returns
 * 1 with d and n where x is outside the bodies and within reach
 * (d < reach) and the normal is defined; 0 elsewhere, and outside the
 * grid. *inside is phi >= 1/2 (0 when the level is off or x is outside the
 * grid): a particle inside a body gets neither the kernel volume nor the
 * wall term, only the collision, which carries it with the body (a body
 * created overlapping the liquid holds the particles it covers, as
 * before; given the wall term at d = 0 and the kernel volume, they were
 * thrown out at hundreds of m/s and a snowball created in the pool
 * stopped on a non-finite velocity within 12 substeps). */
static inline FIRN_HD int firn_mpm_level_at(const firn_mpm_level *L, firn_vec3 x, float reach,
                                            float *d, firn_vec3 *n, int *inside)
{
    *inside = 0;
    if (!L->phi)
        return 0;
    const firn_params *P = &L->P;
    float phi;
    firn_vec3 gr;
    if (!firn_mpm_level_sample(L, x, &phi, &gr))
        return 0;
    *inside = phi >= 0.5f;
    const float g = sqrtf(firn_dot(gr, gr));
    if (!(phi > 0.0f) || *inside || !(g > 1e-3f * P->inv_dx))
        return 0;
    const float t = P->dx * firn_mpm_face_distance(phi);
    /* the earliest exit: the shift below is at most dx / 4 */
    if (!(t - 0.25f * P->dx < reach))
        return 0;
    *n = firn_scale(gr, -1.0f / g);
    /* The smoothing (variance dx^2 / 2 per axis) moves the level 1/2 of a
     * surface of mean curvature kappa_s / 2 inwards by (dx^2 / 2) kappa_s
     * / 2: 4 mm on a ball of radius 5 cm at dx = 0.02 m, by which the
     * liquid came into a ball (docs/PHYSICS.md 5.7). kappa_s is the
     * surface's, from the level's through x at distance t as on a ball,
     * 2 / (2 / kappa - t); the shift is bounded at dx / 4 (a radius of a
     * cell, which the grid no longer resolves). */
    const float kappa = firn_mpm_level_curvature(L, x, *n);
    const float ks = kappa / firn_maxf(1.0f - 0.5f * t * kappa, 0.5f);
    const float shift = 0.25f * P->dx * firn_clampf(ks * P->dx, -1.0f, 1.0f);
    *d = firn_maxf(t - shift, 0.0f);
    return *d < reach;
}

/* A coupled body's surface as a wall of ghost layers (firn_sph_ghost_layers
 * at the distance d, n the surface's normal into the liquid) on a particle
 * of material m, pressure p and density rho: the acceleration
 * (rho0 / rho^2) 2 p g n - (rho0 / rho) M g - gamma c n. The last term is
 * the ghosts' cohesion: the liquid continued into the body pulls on the
 * particle as the liquid's own neighbours do (firn_sph_nonpressure).
 * Without it the liquid's cohesion pulled it off every body, and the gap
 * floated bodies high: a WCSPH sphere and a box of relative density 0.3
 * at 0.224 and 0.226 instead of 0.3 (docs/PHYSICS.md 5.7). */
static inline FIRN_HD firn_vec3 firn_sph_body_wall(const firn_sph_params *P,
                                                   const firn_sph_material *m, float p, float rho,
                                                   float d, firn_vec3 n)
{
    const firn_sph_ghost gl = firn_sph_ghost_layers(P, d);
    const firn_vec3 g = firn_v3(P->gravity[0], P->gravity[1], P->gravity[2]);
    const firn_vec3 mg = firn_add(firn_scale(g, gl.psi), firn_scale(n, gl.moment * firn_dot(n, g)));
    const float r0 = m->rho0 / rho;
    return firn_sub(
        firn_scale(n, 2.0f * r0 * firn_maxf(p, 0.0f) * gl.grad / rho - m->cohesion * gl.cohesion),
        firn_scale(mg, r0));
}

/* MPM-SPH's contact force on SPH particle i (docs/PHYSICS.md 5.7): where
 * i lies within h of an MPM body's surface (firn_mpm_level_at), the body
 * is a wall of ghost layers as a rigid body's is (firn_sph_body_wall at
 * the distance d along the normal n): the velocity change
 * dv = dt ((rho0 / rho^2) 2 p_i g n - (rho0 / rho) M g - gamma c n). Its reaction,
 * -m_i dv, goes to the nodes of the stencil of i's contact point
 * xc = x_i - (d + dx / 2) n, half a cell inside the surface, in proportion
 * to their mass, N_j(xc) m_j / Ms, Ms = sum_k N_k(xc) m_k: each node's
 * velocity changes by -m_i dv N_j / Ms, and the momentum the nodes gain is
 * -m_i dv exactly. (At x_i itself the stencil holds the grid's light shell
 * outside the body: Ms fell to a fifth of an SPH particle's mass, the
 * nodes took five times the particle's kick, and a snowball created 3 cm
 * into a pool stopped on a non-finite velocity within 20 substeps.)
 * Returns 1 with dv, the stencil and Ms; 0 where there is no contact (or
 * no mass in the stencil). */
static inline FIRN_HD int firn_sph_mpm_contact(int i, const firn_sph_view *V, firn_vec3 *dv,
                                               firn_stencil *st, float *Ms)
{
    const firn_sph_params *P = &V->P;
    const firn_sph_particles s = V->s;
    const firn_vec3 x = firn_load3(s.x, s.n, i);
    float d;
    firn_vec3 n;
    int inside;
    if (!firn_mpm_level_at(&V->L, x, P->h, &d, &n, &inside))
        return 0;
    *st = firn_make_stencil(&V->L.P, firn_sub(x, firn_scale(n, d + 0.5f * V->L.P.dx)));
    float M = 0.0f;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++)
                M += V->L.node[4 * firn_node_index(V->L.P.n, st->base[0] + a, st->base[1] + b,
                                                   st->base[2] + c) +
                               3] *
                     st->w[a][0] * st->w[b][1] * st->w[c][2];
    if (!(M > 0.0f))
        return 0;
    *Ms = M;
    *dv = firn_scale(firn_sph_body_wall(P, &V->mats[s.mat[i]], s.p[i], s.rho[i], d, n), P->dt);
    return 1;
}

/* MPM-SPH's contact force on particle i (after the grid update, which took
 * its reaction): v_i += dv. */
static inline FIRN_HD void firn_sph_mpm_particle(int i, const firn_sph_view *V)
{
    firn_vec3 dv;
    firn_stencil st;
    float Ms;
    if (firn_sph_mpm_contact(i, V, &dv, &st, &Ms))
        firn_store3(V->s.v, V->s.n, i, firn_add(firn_load3(V->s.v, V->s.n, i), dv));
}

/* The reaction of MPM-SPH's contact force on particle i, scattered to the
 * nodes (L.react, zeroed before): react_j -= m_i dv N_j / Ms, the velocity
 * change of node j (firn_sph_mpm_contact). firn_mpm_sph_node adds it to
 * the node's velocity before the collision. */
static inline FIRN_HD void firn_sph_mpm_react(int i, const firn_sph_view *V)
{
    firn_vec3 dv;
    firn_stencil st;
    float Ms;
    if (!firn_sph_mpm_contact(i, V, &dv, &st, &Ms))
        return;
    const float f = -V->mats[V->s.mat[i]].mass / Ms;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++) {
                const long long j =
                    firn_node_index(V->L.P.n, st.base[0] + a, st.base[1] + b, st.base[2] + c);
                const float wj = f * st.w[a][0] * st.w[b][1] * st.w[c][2];
                for (int e = 0; e < 3; e++)
                    firn_atomic_add(V->L.react + 3 * j + e, wj * dv.v[e]);
            }
}

/* V_p sum_j W_ij over i's neighbours j inside the MPM bodies (phi >= 1/2
 * at x_j): the part of the bodies' kernel volume that liquid covered by a
 * body already fills. A body created overlapping the liquid covers
 * particles; counted in i's kernel sum and again in the bodies' psi, they
 * doubled i's density beside the body, and a snowball created 1.5 cm into
 * a pool stopped on a non-finite velocity within 8 substeps. The bodies
 * then add max(psi - this, 0): the space beyond the surface holds liquid
 * at rest, its own particles where there are any. */
static inline FIRN_HD float firn_sph_mpm_inside_sum(int i, const firn_sph_params *P,
                                                    firn_sph_particles s, firn_nbr_grid G,
                                                    const firn_mpm_level *L)
{
    firn_vec3 x = firn_load3(s.x, s.n, i), d;
    float sum = 0.0f, r;
    int j;
    firn_nbr_cursor c = firn_nbr_cursor_for(&P->nb, G, i, x);
    while (firn_nbr_next(&c, &P->nb, G, s.x, s.n, i, x, &j, &d, &r))
        if (firn_mpm_inside(L, firn_load3(s.x, s.n, j)))
            sum += firn_sph_w(P, r);
    return P->vol * sum;
}

/* The MPM bodies' kernel volume at x, psi(d) of the ghost layers at the
 * distance to their surface (0 without the contact). */
static inline FIRN_HD float firn_sph_mpm_psi(const firn_sph_params *P, const firn_mpm_level *L,
                                             firn_vec3 x)
{
    float d;
    firn_vec3 n;
    int inside;
    if (!L || !firn_mpm_level_at(L, x, P->h, &d, &n, &inside))
        return 0.0f;
    return firn_sph_ghost_layers(P, d).psi;
}

/* MPM-SPH at one MPM node (at xn, mass m, velocity v after gravity and the
 * rigid bodies): the SPH particles in the node's own cell of the MPM grid,
 * |x_i - xn|_inf < dx / 2 (cells that tile space, so a particle meets one
 * node), of total mass M and mass-weighted mean velocity u, meet the node
 * in a perfectly inelastic collision: both go to the common velocity
 * w = (m v + M u) / (m + M), the particles by the same shift w - u, so
 * their velocities relative to each other are kept. Momentum is conserved
 * and the kinetic energy falls by m M / (2 (m + M)) |v - u|^2, never rises
 * (Genesis sets the node to u and takes dp from every particle; firn's
 * earlier equal shares of dp conserved momentum but kicked the particles by
 * m / M times the velocity gap, which made energy when a heavy node met a
 * few particles: docs/PHYSICS.md 5.7). Returns the node's new velocity.
 * Each particle is written by one node only, so nodes may run in
 * parallel.
 * With the contact on (V->L.phi), the node first takes the reaction of the
 * contact force (firn_sph_mpm_react, scattered before), and the collision takes
 * only the particles inside the MPM bodies (firn_mpm_inside): outside, the
 * contact force keeps the liquid out, as the wall term does for rigid
 * bodies. (Colliding also the particles within p / 2 of the surface, as
 * firn did before, tied them to the body both ways: a floating ball came
 * to rest wherever they first held it, 7 to 10 % high; docs/PHYSICS.md
 * 5.7.) Without the contact, every particle in the node's cell. */
static inline FIRN_HD firn_vec3 firn_mpm_sph_node(firn_vec3 xn, firn_vec3 v, float m, float dx,
                                                  const firn_sph_view *V)
{
    const firn_sph_params *P = &V->P;
    const firn_sph_particles s = V->s;
    const float half = 0.5f * dx;
    int lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
        lo[a] = firn_nbr_cell_axis(&P->nb, xn.v[a] - half, a);
        hi[a] = firn_nbr_cell_axis(&P->nb, xn.v[a] + half, a);
    }
    if (V->L.react) {
        const firn_params *G = &V->L.P;
        const long long j = firn_node_index(G->n, (int)lrintf((xn.v[0] - G->lower[0]) * G->inv_dx),
                                            (int)lrintf((xn.v[1] - G->lower[1]) * G->inv_dx),
                                            (int)lrintf((xn.v[2] - G->lower[2]) * G->inv_dx));
        v = firn_add(v, firn_v3(V->L.react[3 * j], V->L.react[3 * j + 1], V->L.react[3 * j + 2]));
    }
    float mass = 0.0f;
    firn_vec3 mom = firn_v3(0.0f, 0.0f, 0.0f), w = v, shift = firn_v3(0.0f, 0.0f, 0.0f);
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            if (!(mass > 0.0f))
                return v;
            w = firn_scale(firn_add(firn_scale(v, m), mom), 1.0f / (m + mass));
            shift = firn_sub(w, firn_scale(mom, 1.0f / mass));
        }
        for (int a = lo[0]; a <= hi[0]; a++)
            for (int b = lo[1]; b <= hi[1]; b++)
                for (int c = lo[2]; c <= hi[2]; c++) {
                    int cell = (a * P->nb.res[1] + b) * P->nb.res[2] + c;
                    for (int k = V->G.start[cell]; k < V->G.end[cell]; k++) {
                        int i = V->G.sorted[k];
                        const firn_vec3 d = firn_sub(firn_load3(s.x, s.n, i), xn);
                        if (!(fabsf(d.v[0]) < half && fabsf(d.v[1]) < half && fabsf(d.v[2]) < half))
                            continue;
                        if (V->L.phi && !firn_mpm_inside(&V->L, firn_load3(s.x, s.n, i)))
                            continue;
                        firn_vec3 vi = firn_load3(s.v, s.n, i);
                        if (pass == 0) {
                            const float mi = V->mats[s.mat[i]].mass;
                            mom = firn_add(mom, firn_scale(vi, mi));
                            mass += mi;
                        } else {
                            firn_store3(s.v, s.n, i, firn_add(vi, shift));
                        }
                    }
                }
    }
    return w;
}

/* The coupled bodies as boundaries of the liquid's density (SPH-rigid):
 * the kernel volume psi_b = 1 - prod_k (1 - Psi(d_k)) that the bodies
 * within h of x fill, d_k = max(sd_k, 0) the distance to body k's surface
 * (every coupled body that is not static: the ones the pair's wall term
 * acts on), counted as for the box's faces (firn_sph_walls) as if liquid
 * at rest density stood there. Without it a particle beside a body lacks
 * up to half its kernel sum, WCSPH clamps its pressure to 0 and DFSPH
 * leaves it uncorrected, so the liquid crowds onto the body's surface,
 * the body displaces less than its volume and floats high (docs/PHYSICS.md
 * 5.7). */
static inline FIRN_HD float firn_sph_rigid_psi(const firn_sph_params *P, const firn_rigid *bodies,
                                               int nb, firn_vec3 x)
{
    float open = 1.0f;
    for (int k = 0; k < nb; k++) {
        const firn_rigid *b = &bodies[k];
        if (!b->couple || b->motion == FIRN_MOTION_STATIC)
            continue;
        firn_vec3 n;
        const float sd = firn_sdf_world(&b->shape, firn_rigid_pos(b), b->q, x, &n);
        if (sd < P->h)
            open *= 1.0f - firn_sph_ghost_layers(P, sd).psi;
    }
    return 1.0f - open;
}

/* No FEM surface triangle within h of the particle (firn_sph_view.fem_d). */
#define FIRN_FEM_SPH_FAR 3.0e38f

/* The FEM bodies' kernel volume at particle i (FEM-SPH's contact, fem_d
 * its signed distance to their surface): psi(d) of the ghost layers, as
 * for a rigid body, less V_p sum_j W_ij over the neighbours j inside the
 * FEM bodies (fem_d[j] < 0), the part the liquid they cover already fills
 * (as firn_sph_mpm_inside_sum for MPM bodies). A particle inside gets
 * none: as for MPM bodies (firn_mpm_level_at), the vertices' contact alone
 * carries it with the body. */
static inline FIRN_HD float firn_sph_fem_psi(int i, const firn_sph_params *P, firn_sph_particles s,
                                             firn_nbr_grid G, const float *fem_d)
{
    const float d = fem_d[i];
    if (!(d >= 0.0f && d < P->h))
        return 0.0f;
    const float psi = firn_sph_ghost_layers(P, d).psi;
    firn_vec3 x = firn_load3(s.x, s.n, i), dx;
    float sum = 0.0f, r;
    int j;
    firn_nbr_cursor c = firn_nbr_cursor_for(&P->nb, G, i, x);
    while (firn_nbr_next(&c, &P->nb, G, s.x, s.n, i, x, &j, &dx, &r))
        if (fem_d[j] < 0.0f)
            sum += firn_sph_w(P, r);
    return firn_maxf(psi - P->vol * sum, 0.0f);
}

/* The density pass with the bodies: firn_sph_density plus
 * rho0 psi_b (1 - psi_walls), the bodies' kernel volume where the box's
 * faces do not already fill it: the rigid bodies', the MPM bodies'
 * (L, MPM-SPH's contact; NULL or L->phi NULL: none) and the FEM bodies'
 * (fem_d, FEM-SPH's contact distance; NULL: none), as a union,
 * psi_b = 1 - (1 - psi_rigid) (1 - psi_mpm) (1 - psi_fem), psi_mpm and
 * psi_fem less the liquid those bodies cover (firn_sph_mpm_inside_sum,
 * firn_sph_fem_psi). */
static inline FIRN_HD float firn_sph_density_rigid(int i, const firn_sph_params *P,
                                                   const firn_sph_material *mats,
                                                   firn_sph_particles s, firn_nbr_grid G,
                                                   const firn_rigid *bodies, int nb,
                                                   const firn_mpm_level *L, const float *fem_d)
{
    const float rho = firn_sph_density(i, P, mats, s, G);
    const int mpm = L && L->phi;
    if (nb <= 0 && !mpm && !fem_d)
        return rho;
    const firn_vec3 x = firn_load3(s.x, s.n, i);
    float psi = nb > 0 ? firn_sph_rigid_psi(P, bodies, nb, x) : 0.0f;
    if (mpm) {
        const float pm = firn_sph_mpm_psi(P, L, x);
        if (pm > 0.0f)
            psi = 1.0f - (1.0f - psi) *
                             (1.0f - firn_maxf(pm - firn_sph_mpm_inside_sum(i, P, s, G, L), 0.0f));
    }
    if (fem_d)
        psi = 1.0f - (1.0f - psi) * (1.0f - firn_sph_fem_psi(i, P, s, G, fem_d));
    if (!(psi > 0.0f))
        return rho;
    return rho + mats[s.mat[i]].rho0 * psi * (1.0f - firn_sph_walls(P, x).psi);
}

/* SPH-rigid for particle i: per coupled body in turn, the SDF impulse of
 * the MPM coupling (firn_rigid_collide, particle mass m_i), and, for a body
 * that moves (not static) within a support radius of its surface, the body
 * as a wall of ghost layers (firn_sph_body_wall at the distance d): the
 * particle's acceleration (rho0 / rho^2) 2 p_i g n - (rho0 / rho) M g
 * - gamma c n, M = psi I + m_n n n, and minus its momentum change on the
 * body. Both
 * reactions go to acc[6] per body (docs/PHYSICS.md 5.7). */
static inline FIRN_HD void firn_sph_rigid_particle(int i, const firn_sph_view *V,
                                                   const firn_rigid *bodies, int nb, double *acc)
{
    const firn_sph_params *P = &V->P;
    const firn_sph_particles s = V->s;
    const float m = V->mats[s.mat[i]].mass;
    const firn_vec3 x = firn_load3(s.x, s.n, i);
    firn_vec3 v = firn_load3(s.v, s.n, i);
    for (int k = 0; k < nb; k++) {
        const firn_rigid *b = &bodies[k];
        if (!b->couple)
            continue;
        firn_vec3 n, com = firn_rigid_pos(b), rx = firn_sub(x, com), v2;
        float sd = firn_sdf_world(&b->shape, com, b->q, x, &n);
        float influence = firn_minf(expf(-sd / firn_maxf(b->softness, 1e-10f)), 1.0f);
        double *a = acc + FIRN_RIGID_ACC * k;
        if (influence > 0.1f && firn_rigid_collide(b, rx, v, n, influence, &v2)) {
            firn_rigid_react(rx, v, v2, m, a);
            v = v2;
        }
        if (sd < P->h && b->motion != FIRN_MOTION_STATIC) {
            const firn_vec3 acc_w =
                firn_sph_body_wall(P, &V->mats[s.mat[i]], s.p[i], s.rho[i], sd, n);
            firn_vec3 v3 = firn_add(v, firn_scale(acc_w, P->dt));
            firn_rigid_react(rx, v, v3, m, a);
            v = v3;
        }
    }
    firn_store3(s.v, s.n, i, v);
}

#endif
