/* firn_pbd_coupling.h - the MPM-PBD pair, one body per MPM node, shared by
 * the CPU path (host/coupler.c) and a CUDA port. PBD-rigid is in
 * firn_pbd.h. docs/PHYSICS.md s6. */
#ifndef FIRN_PBD_COUPLING_H
#define FIRN_PBD_COUPLING_H

#include "firn_pbd.h"

/* The MPM node nearest x, |x - x_node|_inf <= dx / 2 (the nodes' dx-boxes
 * tile space, so a particle meets one node), clamped into the grid. */
static inline FIRN_HD long long firn_mpm_pbd_node_of(firn_vec3 x, const float lower[3],
                                                     float inv_dx, const int n[3])
{
    int idx[3];
    for (int a = 0; a < 3; a++)
        idx[a] = firn_floor_index((x.v[a] - lower[a]) * inv_dx + 0.5f, n[a] - 1);
    return ((long long)idx[0] * n[1] + idx[1]) * n[2] + idx[2];
}

/* MPM-PBD at one MPM node of mass m > 0 and velocity v (after the grid
 * update), with the count PBD particles idx[] in its dx-box, each moving
 * at u_i this substep (v_i, which carries the substep's corrections so
 * far, firn_pbd_move; a pinned one's (x_i - x0_i) / dt): the node and its
 * free particles
 * take their common velocity, the momentum-weighted mean
 *   v* = (m v + sum_free m_i u_i) / (m + sum_free m_i),
 * a perfectly inelastic exchange that conserves momentum whatever the
 * masses. With a pinned particle there, v* is the pinned ones' mean
 * velocity instead (a pin is an infinite mass; it takes the reaction).
 * Genesis's rule (the node takes the particles' mean velocity, each
 * particle gives back the node's change) is stable only when the particles
 * far outweigh the node, as Genesis's PBD particles of mass rho do; a
 * cloth vertex of a few grams beside a node of snow would be kicked to
 * several times the snow's speed each substep, and the exchange grows.
 * A free particle's change is made to its position and velocity alike
 * (firn_pbd_move): x_i += (v* - u_i) dt, v_i = v*. Its velocity must be
 * v_i and not (x_i - x0_i) / dt of the float positions, or the node and
 * the particle would disagree on the exchange: a particle near x = 0.5 m
 * at a substep of 3.5e-5 s reads its velocity to 1.7e-3 m/s only, and a
 * change below half that is lost from the particle while the node keeps
 * its side. Returns v*. Each particle is in one node's box only, so nodes
 * may run in parallel. */
static inline FIRN_HD firn_vec3 firn_mpm_pbd_node(firn_vec3 v, float m, const int *idx, int count,
                                                  firn_pbd_particles s, float dt)
{
    if (count == 0 || !(m > 0.0f))
        return v;
    firn_vec3 mom = firn_scale(v, m), pinned = firn_v3(0.0f, 0.0f, 0.0f);
    float mass = m;
    int n_pinned = 0;
    for (int k = 0; k < count; k++) {
        const int i = idx[k];
        if (s.w[i] > 0.0f) {
            mom = firn_add(mom, firn_scale(firn_load3(s.v, s.n, i), s.mass[i]));
            mass += s.mass[i];
        } else {
            pinned = firn_add(
                pinned,
                firn_scale(firn_sub(firn_load3(s.x, s.n, i), firn_load3(s.x0, s.n, i)), 1.0f / dt));
            n_pinned++;
        }
    }
    const firn_vec3 vs =
        n_pinned > 0 ? firn_scale(pinned, 1.0f / (float)n_pinned) : firn_scale(mom, 1.0f / mass);
    for (int k = 0; k < count; k++) {
        const int i = idx[k];
        if (!(s.w[i] > 0.0f))
            continue;
        const firn_vec3 c = firn_scale(firn_sub(vs, firn_load3(s.v, s.n, i)), dt);
        firn_store3(s.x, s.n, i, firn_add(firn_load3(s.x, s.n, i), c));
        firn_store3(s.v, s.n, i, vs);
    }
    return vs;
}

#endif
