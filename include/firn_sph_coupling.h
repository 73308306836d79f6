/* firn_sph_coupling.h - the SPH solver's coupling pairs, one body per MPM
 * node or SPH particle, shared by the CPU path (host/coupler.c) and the
 * CUDA kernels (kernels/sph.cu, kernels/coupling.cu): MPM-SPH in the grid
 * update, SPH-rigid after it. docs/PHYSICS.md s5.7. */
#ifndef FIRN_SPH_COUPLING_H
#define FIRN_SPH_COUPLING_H

#include "firn_coupling.h"
#include "firn_sph.h"

/* The SPH solver as a coupling pair sees it. */
typedef struct {
    firn_sph_params P;
    const firn_sph_material *mats;
    firn_sph_particles s;
    firn_nbr_grid G;
} firn_sph_view;

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
 * parallel. */
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
                        firn_vec3 d = firn_sub(firn_load3(s.x, s.n, i), xn);
                        if (!(fabsf(d.v[0]) < half && fabsf(d.v[1]) < half && fabsf(d.v[2]) < half))
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

/* The density pass with the bodies: firn_sph_density plus
 * rho0 psi_b (1 - psi_walls), the bodies' kernel volume where the box's
 * faces do not already fill it. */
static inline FIRN_HD float firn_sph_density_rigid(int i, const firn_sph_params *P,
                                                   const firn_sph_material *mats,
                                                   firn_sph_particles s, firn_nbr_grid G,
                                                   const firn_rigid *bodies, int nb)
{
    const float rho = firn_sph_density(i, P, mats, s, G);
    if (nb <= 0)
        return rho;
    const firn_vec3 x = firn_load3(s.x, s.n, i);
    const float psi = firn_sph_rigid_psi(P, bodies, nb, x);
    if (!(psi > 0.0f))
        return rho;
    return rho + mats[s.mat[i]].rho0 * psi * (1.0f - firn_sph_walls(P, x).psi);
}

/* SPH-rigid for particle i: per coupled body in turn, the SDF impulse of
 * the MPM coupling (firn_rigid_collide, particle mass m_i), and, for a body
 * that moves (not static) within a support radius of its surface, the body
 * as a wall of ghost layers (firn_sph_ghost_layers at the distance d): the
 * particle's acceleration (rho0 / rho^2) 2 p_i g n - (rho0 / rho) M g,
 * M = psi I + m_n n n, and minus its momentum change on the body. Both
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
            const firn_sph_ghost gl = firn_sph_ghost_layers(P, sd);
            const float sigma = gl.grad;
            const float rho0 = V->mats[s.mat[i]].rho0, rho = s.rho[i];
            const firn_vec3 g = firn_v3(P->gravity[0], P->gravity[1], P->gravity[2]);
            const firn_vec3 mg =
                firn_add(firn_scale(g, gl.psi), firn_scale(n, gl.moment * firn_dot(n, g)));
            firn_vec3 acc_w =
                firn_sub(firn_scale(n, 2.0f * rho0 * firn_maxf(s.p[i], 0.0f) * sigma / (rho * rho)),
                         firn_scale(mg, rho0 / rho));
            firn_vec3 v3 = firn_add(v, firn_scale(acc_w, P->dt));
            firn_rigid_react(rx, v, v3, m, a);
            v = v3;
        }
    }
    firn_store3(s.v, s.n, i, v);
}

#endif
