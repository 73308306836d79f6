/* firn_pbf.h - the PBD solver's particle passes: position based fluids
 * (Macklin and Mueller 2013, "Position based fluids") for pbd_liquid
 * particles, XSPH viscosity on the substep's displacements, and contact
 * between particles of different bodies, over the neighbour grid
 * (include/firn_neighbour.h, cells of edge h = 2.5 p). One body per
 * particle, shared by the CPU path (host/pbd_cpu.c) and the CUDA kernels
 * (kernels/pbd.cu).
 *
 * Every pass is Jacobi: particle i gathers its correction dx_i from a
 * fixed snapshot of the positions, and a separate pass applies it
 * (firn_pbd_apply). A particle writes only its own entries, so the state
 * is the same for any thread count and on both paths (the neighbour walk
 * has one order). The walls of the PBD box and the coupled rigid bodies
 * take part in the density constraint as ghost liquid. docs/PHYSICS.md
 * s6.8. */
#ifndef FIRN_PBF_H
#define FIRN_PBF_H

#include "firn_pbd.h"

/* ---- kernels (support h = P->nb.h) ------------------------------------- */

/* poly6: W(r) = 315 / (64 pi h^9) (h^2 - r^2)^3 for r < h, else 0 (Mueller,
 * Charypar and Gross 2003, eq. 20); W(0) = kw. */
static inline FIRN_HD float firn_pbf_w(const firn_pbd_params *P, float r)
{
    const float h = P->nb.h;
    if (!(r < h))
        return 0.0f;
    const float q = 1.0f - (r * r) / (h * h);
    return P->kw * q * q * q;
}

/* grad W of the spiky kernel at offset d (length r) (ibid., eq. 21):
 * -45 / (pi h^6) (h - r)^2 d / r for 0 < r < h, else 0. */
static inline FIRN_HD firn_vec3 firn_pbf_grad_w(const firn_pbd_params *P, firn_vec3 d, float r)
{
    const float h = P->nb.h;
    if (!(r > 0.0f && r < h))
        return firn_v3(0.0f, 0.0f, 0.0f);
    const float q = 1.0f - r / h;
    return firn_scale(d, -P->kg * q * q / r);
}

static inline FIRN_HD int firn_pbf_liquid(const firn_pbd_material *mats, firn_pbd_particles s,
                                          int i)
{
    return mats[s.mat[i]].kind == FIRN_PBD_LIQUID;
}

/* ---- the box's walls -------------------------------------------------------- */

/* The walls of the PBD box as liquid at rest beyond them (docs/PHYSICS.md
 * s6.8): particle i at distance d from a face sees ghost particles of its
 * own mass on the lattice continued through the face, in layers at
 * d + (k - 1/2) p behind it and at its own tangential offsets (b p, c p).
 * A particle of a lattice that fills the box then reads the interior's
 * density at the wall as well, and the wall pushes back on a layer pressed
 * into it. Each face counts its whole ghost half-space, so near an edge or
 * a corner the ghosts beyond two faces count twice (a particle there reads
 * a little dense and keeps a little further off); leaving them to one face
 * by their position would make the sum jump as a particle slides along a
 * wall, which shook edge particles at 1 m/s. Returns sum_ghosts W(x - y) (times the mass: the
 * density the walls add) and sets *g = sum_ghosts grad W(x - y) (the ghosts do not move). */
static inline FIRN_HD float firn_pbf_walls(const firn_pbd_params *P, firn_vec3 x, firn_vec3 *g)
{
    const float h = P->nb.h, p = P->psize;
    const int R = (int)(h / p);
    float sum = 0.0f;
    *g = firn_v3(0.0f, 0.0f, 0.0f);
    for (int a = 0; a < 3; a++)
        for (int side = 0; side < 2; side++) {
            const float d = side ? P->upper[a] - x.v[a] : x.v[a] - P->lower[a];
            const float nrm = side ? -1.0f : 1.0f; /* into the box */
            const int a1 = (a + 1) % 3, a2 = (a + 2) % 3;
            for (float delta = d + 0.5f * p; delta < h; delta += p)
                for (int b = -R; b <= R; b++)
                    for (int c = -R; c <= R; c++) {
                        firn_vec3 off; /* ghost - x */
                        off.v[a] = -nrm * delta;
                        off.v[a1] = (float)b * p;
                        off.v[a2] = (float)c * p;
                        const float r = firn_norm(off);
                        if (!(r < h))
                            continue;
                        sum += firn_pbf_w(P, r);
                        *g = firn_add(*g, firn_pbf_grad_w(P, firn_scale(off, -1.0f), r));
                    }
        }
    return sum;
}

/* ---- the rigid bodies' surfaces -------------------------------------------- */

/* Body b as liquid at rest inside it (docs/PHYSICS.md s6.8): with sd the
 * body's signed distance at x and n its outward normal, the ghosts are
 * the walls' lattice continued through the tangent plane at
 * d = max(sd, 0) - layers d + (k - 1/2) p behind x along -n, at tangential
 * offsets (b p, c p) in a basis (t1, t2) of the plane - each weighted by
 * the part of its cell inside the body, clamp(1/2 - sd(y) / p, 0, 1). A
 * ghost behind a flat face lies (k - 1/2) p deep and counts fully, so a
 * face reads as the box's walls; beside an edge or a curved surface the
 * ghosts past the body fall away, which a bare half-space would count
 * (it made boxes float 14 % and spheres 7 % too high), and the ramp keeps
 * the sum continuous as ghosts cross the surface. Returns the ghosts'
 * weighted sum W(x - y) (times the particle's mass: the density the body
 * adds) and sets *g to their weighted sum grad W(x - y); 0 for a body that
 * is not coupled or is farther than h - p/2. */
static inline FIRN_HD float firn_pbf_body(const firn_pbd_params *P, const firn_rigid *b,
                                          firn_vec3 x, firn_vec3 *g)
{
    *g = firn_v3(0.0f, 0.0f, 0.0f);
    if (!b->couple)
        return 0.0f;
    const float h = P->nb.h, p = P->psize;
    const firn_vec3 com = firn_rigid_pos(b);
    firn_vec3 n;
    const float sd = firn_sdf_world(&b->shape, com, b->q, x, &n);
    if (!(sd < h - 0.5f * p))
        return 0.0f;
    /* an orthonormal basis of the tangent plane (Duff et al. 2017) */
    const float sg = n.v[2] >= 0.0f ? 1.0f : -1.0f, e = -1.0f / (sg + n.v[2]);
    const float f = n.v[0] * n.v[1] * e;
    const firn_vec3 t1 = firn_v3(1.0f + sg * n.v[0] * n.v[0] * e, sg * f, -sg * n.v[0]);
    const firn_vec3 t2 = firn_v3(f, sg + n.v[1] * n.v[1] * e, -n.v[1]);
    const int R = (int)(h / p);
    float sum = 0.0f;
    for (float delta = firn_maxf(sd, 0.0f) + 0.5f * p; delta < h; delta += p)
        for (int bi = -R; bi <= R; bi++)
            for (int ci = -R; ci <= R; ci++) {
                const float r = sqrtf(delta * delta + (float)(bi * bi + ci * ci) * p * p);
                if (!(r < h))
                    continue;
                const firn_vec3 off =
                    firn_add(firn_scale(n, -delta), firn_add(firn_scale(t1, (float)bi * p),
                                                             firn_scale(t2, (float)ci * p)));
                firn_vec3 ny;
                const float sy = firn_sdf_world(&b->shape, com, b->q, firn_add(x, off), &ny);
                const float wgt = firn_minf(firn_maxf(0.5f - sy / p, 0.0f), 1.0f);
                if (!(wgt > 0.0f))
                    continue;
                sum += wgt * firn_pbf_w(P, r);
                *g = firn_add(*g, firn_scale(firn_pbf_grad_w(P, firn_scale(off, -1.0f), r), wgt));
            }
    return sum;
}

/* The displacement body b's ghosts give liquid particle i in the density
 * correction, relaxation lambda_i (m_i / rho0) g_b (firn_pbf_delta), from
 * the gradient g_b of firn_pbf_body; one expression for the particle and
 * for the body's reaction, so that the two are equal and opposite. */
static inline FIRN_HD firn_vec3 firn_pbf_body_dx(const firn_pbd_material *m, float lambda,
                                                 float mass, firn_vec3 g)
{
    return firn_scale(g, m->density_relaxation * (lambda * mass / m->rho0));
}

/* ---- density constraint ------------------------------------------------- */

/* The multiplier of liquid particle i's density constraint (Macklin and
 * Mueller 2013, eqs. 1-11, with masses): the SPH density
 * rho_i = m_i W(0) + sum_j m_j W_ij over every PBD particle j within h (a
 * cloth vertex or a free particle adds its mass too),
 * C_i = max(rho_i / rho0 - 1, 0), with g_ij = (m_j / rho0) grad W_ij the
 * gradient of C_i with respect to x_i from j (and -g_ij with respect to
 * x_j),
 *   lambda_i = -C_i / (|sum_j g_ij|^2 + sum_j |g_ij|^2 + eps),
 * the box's walls (firn_pbf_walls) and each of the nb bodies
 * (firn_pbf_body) adding their ghosts' density and gradient to rho_i and
 * sum_j g_ij.
 * The constraint is one-sided (compression only): a free surface, where
 * the sum is incomplete, is not pulled inward. Stores rho_i, and the
 * ghosts' gradient in dx_i for firn_pbf_delta (the positions do not move
 * between the two passes: computed once, not twice); lambda is 0 for
 * other particles. */
static inline FIRN_HD void firn_pbf_lambda(int i, const firn_pbd_params *P,
                                           const firn_pbd_material *mats, firn_pbd_particles s,
                                           firn_nbr_grid G, const firn_rigid *bodies, int nb)
{
    if (!firn_pbf_liquid(mats, s, i)) {
        s.lambda[i] = 0.0f;
        return;
    }
    const float inv_rho0 = 1.0f / mats[s.mat[i]].rho0;
    const firn_vec3 x = firn_load3(s.x, s.n, i);
    firn_vec3 sum = firn_v3(0.0f, 0.0f, 0.0f), d;
    float rho = s.mass[i] * P->kw, sq = 0.0f, r;
    int j;
    firn_nbr_cursor c = firn_nbr_cursor_at(&P->nb, x);
    while (firn_nbr_next(&c, &P->nb, G, s.x, s.n, i, x, &j, &d, &r)) {
        rho += s.mass[j] * firn_pbf_w(P, r);
        const firn_vec3 g = firn_scale(firn_pbf_grad_w(P, d, r), s.mass[j] * inv_rho0);
        sum = firn_add(sum, g);
        sq += firn_dot(g, g);
    }
    firn_vec3 gw, ghosts;
    rho += s.mass[i] * firn_pbf_walls(P, x, &ghosts);
    for (int k = 0; k < nb; k++) {
        rho += s.mass[i] * firn_pbf_body(P, &bodies[k], x, &gw);
        ghosts = firn_add(ghosts, gw);
    }
    sum = firn_add(sum, firn_scale(ghosts, s.mass[i] * inv_rho0));
    firn_store3(s.dx, s.n, i, ghosts); /* read by firn_pbf_delta */
    s.rho[i] = rho;
    const float C = firn_maxf(rho * inv_rho0 - 1.0f, 0.0f);
    s.lambda[i] = -C / (firn_dot(sum, sum) + sq + P->pbf_eps);
}

/* The density correction of liquid particle i (ibid., eq. 12):
 * dx_i = relaxation (sum_j (lambda_i + lambda_j) g_ij + lambda_i g_walls)
 * + sum_b firn_pbf_body_dx (the bodies' ghosts, whose reaction
 * firn_pbf_body_react gives them), the walls' and bodies' gradient
 * g_walls + sum_b g_b taken from dx_i, where firn_pbf_lambda left it;
 * lambda_j is 0 for a particle that is not liquid. 0 for other
 * particles. */
static inline FIRN_HD void firn_pbf_delta(int i, const firn_pbd_params *P,
                                          const firn_pbd_material *mats, firn_pbd_particles s,
                                          firn_nbr_grid G)
{
    firn_vec3 dx = firn_v3(0.0f, 0.0f, 0.0f), d;
    if (firn_pbf_liquid(mats, s, i)) {
        const firn_pbd_material *m = &mats[s.mat[i]];
        const float li = s.lambda[i], inv_rho0 = 1.0f / m->rho0;
        const firn_vec3 x = firn_load3(s.x, s.n, i);
        float r;
        int j;
        firn_nbr_cursor c = firn_nbr_cursor_at(&P->nb, x);
        while (firn_nbr_next(&c, &P->nb, G, s.x, s.n, i, x, &j, &d, &r))
            dx = firn_add(dx, firn_scale(firn_pbf_grad_w(P, d, r),
                                         (li + s.lambda[j]) * s.mass[j] * inv_rho0));
        /* the walls' and bodies' ghosts' gradient, which firn_pbf_lambda left
         * in dx_i (the correction firn_pbf_body_dx is linear in it) */
        const firn_vec3 ghosts = firn_load3(s.dx, s.n, i);
        dx = firn_scale(dx, m->density_relaxation);
        dx = firn_add(dx, firn_pbf_body_dx(m, li, s.mass[i], ghosts));
    }
    firn_store3(s.dx, s.n, i, dx);
}

/* The reaction of the bodies' ghosts in liquid particle i's density
 * correction (firn_pbf_delta), between the correction and its apply pass:
 * the particle moves by dx_b = firn_pbf_body_dx for body b, so its
 * momentum, (x - x0) / dt at the end of the substep, changes by
 * m_i dx_b / dt, and the body receives the opposite, -m_i dx_b / dt, at
 * x_i, into acc[nb][FIRN_RIGID_ACC] for its next step. Nothing for pinned or
 * non-liquid particles. */
static inline FIRN_HD void firn_pbf_body_react(int i, const firn_pbd_params *P,
                                               const firn_pbd_material *mats, firn_pbd_particles s,
                                               const firn_rigid *bodies, int nb, double *acc)
{
    if (!firn_pbf_liquid(mats, s, i) || !(s.w[i] > 0.0f))
        return;
    const firn_pbd_material *m = &mats[s.mat[i]];
    const firn_vec3 x = firn_load3(s.x, s.n, i);
    const float inv_dt = 1.0f / P->dt;
    for (int k = 0; k < nb; k++) {
        firn_vec3 g;
        firn_pbf_body(P, &bodies[k], x, &g);
        const firn_vec3 dx = firn_pbf_body_dx(m, s.lambda[i], s.mass[i], g);
        if (dx.v[0] == 0.0f && dx.v[1] == 0.0f && dx.v[2] == 0.0f)
            continue;
        firn_rigid_react(firn_sub(x, firn_rigid_pos(&bodies[k])), firn_v3(0.0f, 0.0f, 0.0f),
                         firn_scale(dx, inv_dt), s.mass[i], acc + FIRN_RIGID_ACC * k);
    }
}

/* XSPH viscosity on the substep's displacements u = x - x0 (Schechter and
 * Bridson 2012's form, as Genesis): for liquid particle i,
 * dx_i = c sum_j (m_j / rho0) W_ij (u_j - u_i), c its viscosity
 * relaxation; 0 for other particles. */
static inline FIRN_HD void firn_pbf_viscosity(int i, const firn_pbd_params *P,
                                              const firn_pbd_material *mats, firn_pbd_particles s,
                                              firn_nbr_grid G)
{
    firn_vec3 dx = firn_v3(0.0f, 0.0f, 0.0f), d;
    if (firn_pbf_liquid(mats, s, i)) {
        const firn_pbd_material *m = &mats[s.mat[i]];
        const float inv_rho0 = 1.0f / m->rho0;
        const firn_vec3 x = firn_load3(s.x, s.n, i);
        const firn_vec3 ui = firn_sub(x, firn_load3(s.x0, s.n, i));
        float r;
        int j;
        firn_nbr_cursor c = firn_nbr_cursor_at(&P->nb, x);
        while (firn_nbr_next(&c, &P->nb, G, s.x, s.n, i, x, &j, &d, &r)) {
            const firn_vec3 uj = firn_sub(firn_load3(s.x, s.n, j), firn_load3(s.x0, s.n, j));
            dx =
                firn_add(dx, firn_scale(firn_sub(uj, ui), s.mass[j] * inv_rho0 * firn_pbf_w(P, r)));
        }
        dx = firn_scale(dx, m->viscosity_relaxation);
    }
    firn_store3(s.dx, s.n, i, dx);
}

/* ---- contact -------------------------------------------------------------- */

/* Contact of free particle i with the particles j closer than the particle
 * size p, except pairs of two liquid particles (the density constraint
 * keeps those apart) and of two cloth vertices (no self collision): with
 * n = (x_i - x_j) / r and depth delta = p - r, i moves its share
 * w_i / (w_i + w_j) of delta along n, and of the friction of Macklin,
 * Mueller, Chentanez and Kim 2014 (eqs. 23-24) on the pair's relative
 * tangential displacement over the substep, t = -(du - n (n . du)),
 * du = u_i - u_j: all of t while |t| < mu_s delta, else t shortened to
 * mu_k delta (mu the larger of the two materials'). j does the same from
 * its side, so the pair's momentum is kept. 0 for pinned particles. */
static inline FIRN_HD void firn_pbd_contact(int i, const firn_pbd_params *P,
                                            const firn_pbd_material *mats, firn_pbd_particles s,
                                            firn_nbr_grid G)
{
    firn_vec3 dx = firn_v3(0.0f, 0.0f, 0.0f), d;
    const float wi = s.w[i];
    if (wi > 0.0f) {
        const firn_pbd_material *mi = &mats[s.mat[i]];
        const firn_vec3 x = firn_load3(s.x, s.n, i);
        const firn_vec3 ui = firn_sub(x, firn_load3(s.x0, s.n, i));
        const float p = P->psize;
        float r;
        int j;
        firn_nbr_cursor c = firn_nbr_cursor_at(&P->nb, x);
        while (firn_nbr_next(&c, &P->nb, G, s.x, s.n, i, x, &j, &d, &r)) {
            const firn_pbd_material *mj = &mats[s.mat[j]];
            if (!(r < p && r > 0.0f) || (mi->kind == mj->kind && mi->kind != FIRN_PBD_PARTICLE))
                continue;
            const firn_vec3 nrm = firn_scale(d, 1.0f / r);
            const float share = wi / (wi + s.w[j]), depth = p - r;
            const firn_vec3 uj = firn_sub(firn_load3(s.x, s.n, j), firn_load3(s.x0, s.n, j));
            const firn_vec3 du = firn_sub(ui, uj);
            const firn_vec3 t = firn_scale(firn_sub(du, firn_scale(nrm, firn_dot(nrm, du))), -1.0f);
            const float lt = firn_norm(t), mu_s = firn_maxf(mi->mu_s, mj->mu_s),
                        mu_k = firn_maxf(mi->mu_k, mj->mu_k);
            firn_vec3 step = firn_scale(nrm, depth);
            if (lt < mu_s * depth)
                step = firn_add(step, t);
            else if (lt > 0.0f)
                step = firn_add(step, firn_scale(t, firn_minf(mu_k * depth / lt, 1.0f)));
            dx = firn_add(dx, firn_scale(step, share));
        }
    }
    firn_store3(s.dx, s.n, i, dx);
}

/* x_i += dx_i for a free particle, and v_i += dx_i / dt (firn_pbd_move):
 * the apply pass of every Jacobi pass. */
static inline FIRN_HD void firn_pbd_apply(int i, firn_pbd_particles s, float dt)
{
    if (s.w[i] > 0.0f)
        firn_pbd_move(s, i, firn_load3(s.x, s.n, i), firn_load3(s.dx, s.n, i), 1.0f / dt);
}

#endif
