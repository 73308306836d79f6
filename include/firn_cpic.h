/* firn_cpic.h - compatible particle-in-cell (CPIC) for rigid coupling, shared
 * by the CPU path and the CUDA kernels (docs/PHYSICS.md s1 and s4.7; Hu et
 * al. 2018, "A Moving Least Squares Material Point Method with Displacement
 * Discontinuity and Two-Way Rigid Body Coupling", CPIC; Genesis's legacy
 * coupler and MPM solver).
 *
 * The SDF impulse acts on grid nodes, so a rigid shell thinner than a cell
 * has no node inside it and material flows through: a particle above a thin
 * plate scatters to, and gathers from, nodes below it. CPIC cuts those
 * links. Per substep:
 *
 *   1. coupler.preprocess (firn_cpic_mark): each particle records, per
 *      coupled body whose surface is within FIRN_CPIC_REACH cells, the side
 *      of that surface it is on, using the pose before this substep's rigid
 *      step.
 *   2. P2G (firn_p2g_particle_cpic on the GPU; firn_p2g_scatter_cpic after
 *      the CPU path's batched constitutive update): no scatter to a node on
 *      the other side.
 *   3. G2P (firn_g2p_particle_cpic): such a node's velocity is replaced by
 *      the rigid response at the particle - the particle's velocity with the
 *      part that moves into the body removed (friction and restitution of
 *      the body, influence 1) - and the body receives the momentum change.
 *      Then the particle's new velocity may carry it at most to the surface
 *      it is recorded against, not across (firn_cpic_contact): the nodes on
 *      its own side still pull it towards a shell that no node resolves.
 *
 * The side is the outward normal of the surface at the particle, not the
 * sign of the SDF: both faces of a thin plate are outside it (same sign),
 * but their normals point opposite ways. A node is on the other side of
 * body k when its own normal for k points against the recorded one
 * (n_node . n_rec < 0), as in Genesis. The record is sticky: a particle
 * takes the normal where it stands only when that does not flip it (n .
 * n_rec >= 0), so one that has slipped into or through a shell still
 * belongs to its old side and is pushed back. Planes never separate (their
 * normal is the same everywhere) and are skipped.
 *
 * A record is one 32-bit word per particle and body: bit 31 set, and the
 * normal as three signed 8-bit components (bits 0-7 x, 8-15 y, 16-23 z, in
 * units of 1/127); 0 means "surface out of reach": a particle that far from
 * the surface cannot have a stencil node across it (the SDF is 1-Lipschitz,
 * the stencil reaches 1.5 sqrt(3) = 2.6 cells, the body moves less than a
 * cell per substep), so the plain transfer applies. One more word per
 * particle, after the nb records, holds the stencil nodes P2G found across
 * (bit 9a + 3b + c), so that G2P re-evaluates only where there are some. */
#ifndef FIRN_CPIC_H
#define FIRN_CPIC_H

#include "firn_coupling.h"

#define FIRN_CPIC_MAX   16   /* bodies a record can hold (FIRN_MAX_RIGIDS) */
#define FIRN_CPIC_REACH 3.5f /* [cells] surfaces farther from a particle are ignored */

static inline FIRN_HD int firn_ctz(unsigned m)
{
#if defined(__CUDA_ARCH__)
    return __ffs((int)m) - 1;
#else
    return __builtin_ctz(m);
#endif
}

static inline FIRN_HD uint32_t firn_cpic_pack(firn_vec3 n)
{
    uint32_t word = 0x80000000u;
    for (int a = 0; a < 3; a++) {
        int q = (int)rintf(firn_clampf(n.v[a], -1.0f, 1.0f) * 127.0f);
        word |= (uint32_t)(q & 0xff) << (8 * a);
    }
    return word;
}

/* The recorded normal, not renormalised (|n| within 1 % of 1). */
static inline FIRN_HD firn_vec3 firn_cpic_unpack(uint32_t word)
{
    firn_vec3 n;
    for (int a = 0; a < 3; a++)
        n.v[a] = (float)(int8_t)((word >> (8 * a)) & 0xffu) * (1.0f / 127.0f);
    return n;
}

/* Preprocess of particle i: records, per body, its side of the surface
 * (sticky, see above), or 0 when the surface is out of reach or the body
 * does not couple. bodies hold the pose before this substep's rigid step. */
static inline FIRN_HD void firn_cpic_mark(int i, const firn_params *P, firn_particles p,
                                          const firn_rigid *bodies, int nb)
{
    const int n = p.n;
    const firn_vec3 x = firn_load3(p.x, n, i);
    const float reach = FIRN_CPIC_REACH * P->dx;
    for (int k = 0; k < nb; k++) {
        uint32_t *word = p.cpic + firn_soa_index(k, n, i);
        const firn_rigid *b = &bodies[k];
        if (!b->couple || b->shape.type == FIRN_SDF_PLANE) {
            *word = 0;
            continue;
        }
        /* Far outside the bounding ball: no SDF evaluation needed. */
        float e[3];
        firn_sdf_extent(&b->shape, e);
        firn_vec3 r = firn_sub(x, firn_rigid_pos(b));
        float R = sqrtf(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]) + reach;
        if (!(firn_dot(r, r) < R * R)) {
            *word = 0;
            continue;
        }
        firn_vec3 nn;
        float d = firn_sdf_world(&b->shape, firn_rigid_pos(b), b->q, x, &nn);
        if (!(fabsf(d) < reach))
            *word = 0;
        else if (*word == 0 || firn_dot(nn, firn_cpic_unpack(*word)) >= 0.0f)
            *word = firn_cpic_pack(nn);
    }
}

/* A particle's records: which bodies are within reach, and their normals. */
typedef struct {
    unsigned near;              /* bit k: body k's surface is within reach */
    firn_vec3 n[FIRN_CPIC_MAX]; /* recorded outward normal where near */
} firn_cpic_ctx;

/* Whether particle i has a record of any body (then its transfers are
 * CPIC's; without, plain). */
static inline FIRN_HD int firn_cpic_any(firn_particles p, int i, int nb)
{
    for (int k = 0; k < nb; k++)
        if (p.cpic[firn_soa_index(k, p.n, i)])
            return 1;
    return 0;
}

/* Loads particle i's records; returns the near mask (0: plain transfer). */
static inline FIRN_HD unsigned firn_cpic_load(firn_cpic_ctx *c, firn_particles p, int i, int nb)
{
    c->near = 0;
    for (int k = 0; k < nb; k++) {
        uint32_t word = p.cpic[firn_soa_index(k, p.n, i)];
        if (word) {
            c->near |= 1u << k;
            c->n[k] = firn_cpic_unpack(word);
        }
    }
    return c->near;
}

static inline FIRN_HD firn_vec3 firn_stencil_node(const firn_params *P, const firn_stencil *s,
                                                  int a, int b, int c)
{
    return firn_v3(P->lower[0] + (float)(s->base[0] + a) * P->dx,
                   P->lower[1] + (float)(s->base[1] + b) * P->dx,
                   P->lower[2] + (float)(s->base[2] + c) * P->dx);
}

/* The stencil nodes that body b separates from the particle at x recorded
 * with normal nrec: bit 9a + 3b + c for node (a, b, c). Evaluated in the
 * body's frame - the particle, the stencil corner and the three grid steps
 * are rotated once - so that a node costs at most one local SDF
 * evaluation. A particle outside the body and on its recorded side, at
 * distance d, sees every node nearer than d without crossing the surface:
 * for a convex body that ball lies in the half-space on the particle's side
 * of the tangent plane, where every normal points with nrec. Those nodes
 * are skipped, which for a concave mesh also clears the normal test's false
 * alarms across open space. */
static inline FIRN_HD unsigned firn_cpic_stencil_mask(const firn_params *P, const firn_stencil *s,
                                                      firn_vec3 x, const firn_rigid *body,
                                                      firn_vec3 nrec)
{
    const firn_vec3 com = firn_rigid_pos(body);
    const firn_vec3 xl = firn_quat_unrotate(body->q, firn_sub(x, com));
    const firn_vec3 o =
        firn_quat_unrotate(body->q, firn_sub(firn_stencil_node(P, s, 0, 0, 0), com));
    const firn_vec3 nl = firn_quat_unrotate(body->q, nrec);
    firn_vec3 e[3], nn;
    for (int a = 0; a < 3; a++) {
        firn_vec3 u = firn_v3(0.0f, 0.0f, 0.0f);
        u.v[a] = P->dx;
        e[a] = firn_quat_unrotate(body->q, u);
    }
    float d = firn_sdf_local(&body->shape, xl, &nn);
    float clear2 = d > 0.0f && firn_dot(nn, nl) >= 0.0f ? d * d : 0.0f;
    unsigned mask = 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++) {
                firn_vec3 y = firn_add(
                    firn_add(firn_add(o, firn_scale(e[0], (float)a)), firn_scale(e[1], (float)b)),
                    firn_scale(e[2], (float)c));
                firn_vec3 r = firn_sub(y, xl);
                if (firn_dot(r, r) < clear2)
                    continue;
                firn_sdf_local(&body->shape, y, &nn);
                if (firn_dot(nn, nl) < 0.0f)
                    mask |= 1u << (9 * a + 3 * b + c);
            }
    return mask;
}

/* Masks of every body within reach (mask[k], where near) and their union. */
static inline FIRN_HD unsigned firn_cpic_across(const firn_params *P, const firn_stencil *s,
                                                firn_vec3 x, const firn_cpic_ctx *c,
                                                const firn_rigid *bodies,
                                                unsigned mask[FIRN_CPIC_MAX])
{
    unsigned all = 0;
    for (unsigned m = c->near; m; m &= m - 1) {
        int k = firn_ctz(m);
        mask[k] = firn_cpic_stencil_mask(P, s, x, &bodies[k], c->n[k]);
        all |= mask[k];
    }
    return all;
}

/* The stencil nodes particle i must not scatter to, those across a surface
 * (bit 9a + 3b + c), recorded in the particle's CPIC words. */
static inline FIRN_HD unsigned firn_p2g_cpic_skip(int i, const firn_params *P, firn_particles p,
                                                  const firn_rigid *bodies, int nb,
                                                  const firn_p2g_state *st)
{
    firn_cpic_ctx c;
    unsigned mask[FIRN_CPIC_MAX], across = 0;
    if (firn_cpic_load(&c, p, i, nb))
        across = firn_cpic_across(P, &st->s, firn_load3(p.x, p.n, i), &c, bodies, mask);
    p.cpic[firn_soa_index(nb, p.n, i)] = across;
    return across;
}

/* CPIC scatter of particle i's state: as firn_p2g_scatter_all, without the
 * nodes across a surface. */
static inline FIRN_HD void firn_p2g_scatter_cpic(int i, const firn_params *P, firn_particles p,
                                                 firn_grid g, const firn_rigid *bodies, int nb,
                                                 const firn_p2g_state *st)
{
    firn_p2g_scatter_nodes(P, g, st, firn_p2g_cpic_skip(i, P, p, bodies, nb, st));
}

/* P2G with CPIC: as firn_p2g_particle, without the nodes across a surface. */
static inline FIRN_HD void firn_p2g_particle_cpic(int i, const firn_params *P,
                                                  const firn_material *mats, firn_particles p,
                                                  firn_grid g, const firn_rigid *bodies, int nb)
{
    firn_p2g_state st = firn_p2g_prepare(i, P, mats, p);
    firn_p2g_scatter_cpic(i, P, p, g, bodies, nb, &st);
}

/* Contact of a particle at x with new velocity v against body b, whose
 * surface it is recorded against with unit normal nrec: with s its distance
 * to the surface on its own side (negative once inside or across), the
 * relative normal velocity may not be below -max(s, 0) / dt, so the
 * particle can reach the surface in this substep but not cross it, and one
 * already across does not go deeper. The normal velocity added, dn, costs
 * the tangential relative velocity mu dn (Coulomb, impulse form). */
static inline FIRN_HD firn_vec3 firn_cpic_contact(const firn_rigid *b, firn_vec3 x, firn_vec3 v,
                                                  firn_vec3 nrec, float dt)
{
    firn_vec3 n, com = firn_rigid_pos(b);
    float d = firn_sdf_world(&b->shape, com, b->q, x, &n);
    float s = firn_dot(n, nrec) >= 0.0f ? d : -fabsf(d);
    firn_vec3 vr = firn_rigid_velocity_at(b, firn_sub(x, com));
    firn_vec3 r = firn_sub(v, vr);
    float rn = firn_dot(r, nrec), lim = -firn_maxf(s, 0.0f) / dt;
    if (!(rn < lim))
        return v;
    firn_vec3 rt = firn_sub(r, firn_scale(nrec, rn));
    float lt = firn_norm(rt);
    if (lt > 0.0f)
        rt = firn_scale(rt, firn_maxf(0.0f, lt - b->friction * (lim - rn)) / lt);
    return firn_add(firn_add(vr, rt), firn_scale(nrec, lim));
}

/* G2P with CPIC: a node across body k's surface contributes the rigid
 * response of the particle's velocity v_p against k (its recorded normal,
 * influence 1) instead of its grid velocity; body k receives the momentum
 * change m_p W_k (v_resp - v_p), W_k the summed weight of those nodes, as a
 * force and torque at the particle in acc[6k..6k+5]; then firn_cpic_contact
 * against every body within reach, whose momentum change goes to the body
 * too. Returns 1 if the new state is not finite. */
static inline FIRN_HD int firn_g2p_near_cpic(int i, const firn_params *P, const firn_material *mats,
                                             firn_particles p, firn_grid g,
                                             const firn_rigid *bodies, int nb,
                                             const firn_cpic_ctx *c, double *acc)
{
    const int n = p.n;
    const firn_vec3 x = firn_load3(p.x, n, i), vp = firn_load3(p.v, n, i);
    firn_stencil s = firn_make_stencil(P, x);
    firn_vec3 resp[FIRN_CPIC_MAX];
    firn_g2p_sums sums = {{{0.0f}}, {{{0.0f}}}};
    float W[FIRN_CPIC_MAX];
    unsigned mask[FIRN_CPIC_MAX], have = 0;
    const unsigned across =
        p.cpic[firn_soa_index(nb, n, i)] ? firn_cpic_across(P, &s, x, c, bodies, mask) : 0u;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int cc = 0; cc < 3; cc++) {
                const unsigned bit = 1u << (9 * a + 3 * b + cc);
                int k = -1; /* the lowest body across */
                if (across & bit)
                    for (unsigned m = c->near; m; m &= m - 1)
                        if (mask[firn_ctz(m)] & bit) {
                            k = firn_ctz(m);
                            break;
                        }
                firn_vec3 gv;
                if (k < 0) {
                    const float *nd = g.node + 4 * firn_node_index(P->n, s.base[0] + a,
                                                                   s.base[1] + b, s.base[2] + cc);
                    float q[4];
                    firn_load_node(nd, q);
                    gv = firn_v3(q[0], q[1], q[2]);
                } else {
                    if (!((have >> k) & 1u)) {
                        const firn_rigid *body = &bodies[k];
                        firn_vec3 nk = firn_scale(c->n[k], 1.0f / firn_norm(c->n[k]));
                        firn_rigid_collide(body, firn_sub(x, firn_rigid_pos(body)), vp, nk, 1.0f,
                                           &resp[k]);
                        W[k] = 0.0f;
                        have |= 1u << k;
                    }
                    W[k] += s.w[a][0] * s.w[b][1] * s.w[cc][2];
                    gv = resp[k];
                }
                firn_g2p_gather(&s, a, b, cc, gv, &sums);
            }
    firn_vec3 v = sums.v;
    const float m = p.vol[i] * mats[p.mat[i]].rho;
    for (unsigned mk = have; mk; mk &= mk - 1) {
        int k = firn_ctz(mk);
        firn_rigid_react(firn_sub(x, firn_rigid_pos(&bodies[k])), vp, resp[k], m * W[k],
                         acc + FIRN_RIGID_ACC * k);
    }
    for (unsigned mk = c->near; mk; mk &= mk - 1) {
        int k = firn_ctz(mk);
        firn_vec3 nk = firn_scale(c->n[k], 1.0f / firn_norm(c->n[k]));
        firn_vec3 v2 = firn_cpic_contact(&bodies[k], x, v, nk, P->dt);
        if (v2.v[0] != v.v[0] || v2.v[1] != v.v[1] || v2.v[2] != v.v[2]) {
            firn_rigid_react(firn_sub(x, firn_rigid_pos(&bodies[k])), v, v2, m,
                             acc + FIRN_RIGID_ACC * k);
            v = v2;
        }
    }
    return firn_g2p_finish(i, P, p, x, v, firn_g2p_affine(P, &s, &sums));
}

/* firn_g2p_near_cpic for a particle within reach of a body (its CPIC
 * records loaded in *c), plain G2P for any other. */
static inline FIRN_HD int firn_g2p_particle_cpic(int i, const firn_params *P,
                                                 const firn_material *mats, firn_particles p,
                                                 firn_grid g, const firn_rigid *bodies, int nb,
                                                 double *acc)
{
    firn_cpic_ctx c;
    if (!firn_cpic_load(&c, p, i, nb))
        return firn_g2p_particle(i, P, p, g);
    return firn_g2p_near_cpic(i, P, mats, p, g, bodies, nb, &c, acc);
}

#endif
