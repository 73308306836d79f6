/* firn_fem_coupling.h - the FEM solver's coupling pairs, FEM-Rigid, FEM-MPM
 * and FEM-SPH, one body per unique surface vertex, shared by the CPU path
 * (host/fem_coupling.c) and the CUDA kernels. docs/PHYSICS.md, FEM pairs.
 *
 * In couple() (after the MPM grid update, before G2P) a surface vertex sits
 * at its start-of-substep position x0 and carries its end-of-substep
 * velocity v, as in Genesis. Genesis couples per surface triangle, so a
 * vertex in several triangles is coupled several times, concurrently, with
 * a third or a quarter of one tet's mass; firn couples each surface vertex
 * once, with its lumped mass, so that every pair conserves momentum.
 *
 * Passes, in this order, each over the surface vertices k (or grid nodes):
 *   firn_fem_surface_normal   every k (gather; the pairs read the normals)
 *   firn_fem_rigid_vertex     every k (rigid reaction into a private acc)
 *   firn_fem_mpm_weigh        every k (scatter)
 *   firn_fem_mpm_vertex       every k (gather)
 *   firn_fem_mpm_scatter      every k (scatter)
 *   firn_fem_mpm_node         every grid node (the CPU visits the stencils'
 *                             nodes in vertex order: the first visit
 *                             clears a node's slot, later ones do nothing)
 *   firn_fem_sph_vertex       every k (gather)
 *   firn_fem_sph_scatter      every k (scatter)
 * A gather pass reads only what no concurrent body writes and writes only
 * its own vertex; a scatter pass adds through firn_atomic_add. On the GPU
 * scatters are atomics; the CPU runs scatter passes in vertex order on one
 * thread (27 adds per vertex), gathers in parallel: the same result for
 * any thread count. A GPU thread may run firn_fem_mpm_vertex and then
 * firn_fem_mpm_scatter for its vertex in one kernel (the scatter reads only
 * its own v* and W, which that kernel does not write). */
#ifndef FIRN_FEM_COUPLING_H
#define FIRN_FEM_COUPLING_H

#include "firn_fem.h"
#include "firn_sph_coupling.h"

/* The FEM surface as the pairs see it. Surface vertex k is vertex surf[k]
 * of V; its incident surface triangles are vf[vf_start[k] .. vf_start[k+1])
 * (indices into face[], ascending), built once by firn_fem_surface_faces
 * (host/fem_coupling.h). */
typedef struct {
    firn_fem_vertices V; /* x0, v, mass, fixed are read; v is written */
    int ns;              /* surface vertices */
    const int *surf;     /* ns vertex indices */
    const int *face;     /* 3 nf vertex indices, counter-clockwise seen from outside */
    const int *vf_start; /* ns + 1 */
    const int *vf;       /* 3 nf face indices */
    float *normal;       /* 3 ns unit outward normals, component-major [-] */
} firn_fem_surface;

/* ---- surface normal ------------------------------------------------------ */

/* The outward normal of surface vertex k at the positions x0: the sum over
 * its triangles of (p1 - p0) x (p2 - p0), twice each triangle's area times
 * its unit normal, so the mean is area-weighted; normalised (zero if the
 * sum vanishes). Summed in face order: deterministic. */
static inline FIRN_HD void firn_fem_surface_normal(int k, const firn_fem_surface *S)
{
    const firn_fem_vertices V = S->V;
    firn_vec3 sum = firn_v3(0.0f, 0.0f, 0.0f);
    for (int a = S->vf_start[k]; a < S->vf_start[k + 1]; a++) {
        const int *t = S->face + 3 * S->vf[a];
        const firn_vec3 p0 = firn_load3(V.x0, V.n, t[0]);
        const firn_vec3 c = firn_cross(firn_sub(firn_load3(V.x0, V.n, t[1]), p0),
                                       firn_sub(firn_load3(V.x0, V.n, t[2]), p0));
        sum = firn_add(sum, c);
    }
    const float len = firn_norm(sum);
    firn_store3(S->normal, S->ns, k, len > 0.0f ? firn_scale(sum, 1.0f / len) : sum);
}

/* ---- FEM-Rigid ------------------------------------------------------------ */

/* FEM-Rigid at surface vertex k: the SDF impulse of each coupled body in
 * turn (firn_rigid_node_impulse: the MPM nodes' softness, friction and
 * restitution), at x0 with velocity v and the vertex's lumped mass; the
 * reaction goes into acc[nb][6], private to the caller (a CPU chunk, a GPU
 * thread before its warp reduction). A fixed vertex keeps its velocity and
 * gives no reaction. */
static inline FIRN_HD void firn_fem_rigid_vertex(int k, const firn_fem_surface *S,
                                                 const firn_rigid *bodies, int nb, double *acc)
{
    const firn_fem_vertices V = S->V;
    const int i = S->surf[k];
    if (V.fixed[i])
        return;
    const firn_vec3 x = firn_load3(V.x0, V.n, i);
    firn_vec3 v = firn_load3(V.v, V.n, i);
    for (int b = 0; b < nb; b++)
        if (bodies[b].couple)
            v = firn_rigid_node_impulse(&bodies[b], x, v, V.mass[i], acc + FIRN_RIGID_ACC * b);
    firn_store3(V.v, V.n, i, v);
}

/* ---- FEM-MPM -------------------------------------------------------------- */

/* The exchange. Vertex i (mass m, velocity v) and the nodes j of its
 * quadratic B-spline stencil (mass M_j, velocity u_j after the grid update,
 * weight w_ij) that hold mass and pass Genesis's side test
 * (x_j - x) . n <= dx share the part a_ij M_j of each node's mass, with
 * a_ij = w_ij / max(1, W_j) and W_j = sum_i w_ij over all vertices: a node
 * never gives more than its whole mass, however many vertices crowd it.
 * The vertex and those parts take their common velocity
 *   v* = (m v + sum_j a_ij M_j u_j) / (m + sum_j a_ij M_j)
 * and each node keeps the rest of its mass at u_j:
 *   u_j' = (1 - A_j) u_j + sum_i a_ij v*_i,   A_j = sum_i a_ij = min(W_j, 1).
 * Momentum: m (v* - v) = -sum_j a_ij M_j (v* - u_j), and the nodes gain
 * sum_i a_ij M_j (v*_i - u_j): the total is unchanged. Every new velocity
 * is a convex combination of old ones, so the exchange is stable for any
 * mass ratio and never adds kinetic energy. Genesis moves the node by
 * (w v - u_j) M_j / m and the vertex by the matching momentum: with a heavy
 * node (M_j / m large) both overshoot, and a vertex shared by several
 * triangles does it several times. A fixed vertex is an infinite mass
 * (v* = v: the nodes take its velocity, as at a pinned PBD particle).
 *
 * D is a scratch of 4 floats per grid node, zero before firn_fem_mpm_weigh
 * and left zero by firn_fem_mpm_node: D[4j + 3] = W_j, D[4j + c] the sum
 * of a_ij v*_i. */

/* Vertex i's stencil s and the mask of its nodes (bit 9a + 3b + c) that
 * pass the side test; 0 if the stencil leaves the grid. */
static inline FIRN_HD int firn_fem_mpm_stencil(firn_vec3 x, firn_vec3 n, const firn_params *P,
                                               firn_stencil *s, unsigned *mask)
{
    for (int a = 0; a < 3; a++) {
        const float t = (x.v[a] - P->lower[a]) * P->inv_dx - 0.5f;
        if (!(t >= 0.0f && t < (float)(P->n[a] - 2)))
            return 0;
    }
    *s = firn_make_stencil(P, x);
    *mask = 0u;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++) {
                const firn_vec3 xn = firn_v3(P->lower[0] + (float)(s->base[0] + a) * P->dx,
                                             P->lower[1] + (float)(s->base[1] + b) * P->dx,
                                             P->lower[2] + (float)(s->base[2] + c) * P->dx);
                if (firn_dot(firn_sub(xn, x), n) <= P->dx)
                    *mask |= 1u << (9 * a + 3 * b + c);
            }
    return 1;
}

static inline FIRN_HD float firn_stencil_weight(const firn_stencil *s, int a, int b, int c)
{
    return s->w[a][0] * s->w[b][1] * s->w[c][2];
}

/* Surface vertex k's stencil and side mask, as the three passes over
 * vertices see it (ok = 0: outside the grid, no exchange). */
typedef struct {
    firn_stencil s;
    unsigned mask;
    int ok;
} firn_fem_mpm_nodes;

static inline FIRN_HD firn_fem_mpm_nodes firn_fem_mpm_nodes_of(int k, const firn_fem_surface *S,
                                                               const firn_params *P)
{
    firn_fem_mpm_nodes q;
    const int i = S->surf[k];
    q.ok = firn_fem_mpm_stencil(firn_load3(S->V.x0, S->V.n, i), firn_load3(S->normal, S->ns, k), P,
                                &q.s, &q.mask);
    return q;
}

/* Pass 1: W_j += w_ij for every node of vertex k's that holds mass. */
static inline FIRN_HD void firn_fem_mpm_weigh(int k, const firn_fem_surface *S,
                                              const firn_params *P, firn_grid g, float *D)
{
    const firn_fem_mpm_nodes q = firn_fem_mpm_nodes_of(k, S, P);
    if (!q.ok)
        return;
    for (int o = 0; o < 27; o++) {
        const int a = o / 9, b = (o / 3) % 3, c = o % 3;
        const long long j =
            firn_node_index(P->n, q.s.base[0] + a, q.s.base[1] + b, q.s.base[2] + c);
        if ((q.mask >> o) & 1u && g.node[4 * j + 3] > 0.0f)
            firn_atomic_add(D + 4 * j + 3, firn_stencil_weight(&q.s, a, b, c));
    }
}

/* Pass 2: vertex k's common velocity v*, stored as its velocity. Reads the
 * grid and W, which no body of this pass writes. */
static inline FIRN_HD void firn_fem_mpm_vertex(int k, const firn_fem_surface *S,
                                               const firn_params *P, firn_grid g, const float *D)
{
    const firn_fem_vertices V = S->V;
    const int i = S->surf[k];
    const firn_fem_mpm_nodes q = firn_fem_mpm_nodes_of(k, S, P);
    if (!q.ok || V.fixed[i])
        return;
    const float m = V.mass[i];
    firn_vec3 mom = firn_scale(firn_load3(V.v, V.n, i), m);
    float mass = m;
    for (int o = 0; o < 27; o++) {
        const int a = o / 9, b = (o / 3) % 3, c = o % 3;
        const long long j =
            firn_node_index(P->n, q.s.base[0] + a, q.s.base[1] + b, q.s.base[2] + c);
        const float *u = g.node + 4 * j;
        if (!((q.mask >> o) & 1u && u[3] > 0.0f))
            continue;
        const float am = firn_stencil_weight(&q.s, a, b, c) / firn_maxf(1.0f, D[4 * j + 3]) * u[3];
        mom = firn_add(mom, firn_scale(firn_v3(u[0], u[1], u[2]), am));
        mass += am;
    }
    if (mass > 0.0f)
        firn_store3(V.v, V.n, i, firn_scale(mom, 1.0f / mass));
}

/* Pass 3: sum_i a_ij v*_i into D's first three floats of each node. */
static inline FIRN_HD void firn_fem_mpm_scatter(int k, const firn_fem_surface *S,
                                                const firn_params *P, firn_grid g, float *D)
{
    const firn_fem_mpm_nodes q = firn_fem_mpm_nodes_of(k, S, P);
    if (!q.ok)
        return;
    const firn_vec3 vs = firn_load3(S->V.v, S->V.n, S->surf[k]);
    for (int o = 0; o < 27; o++) {
        const int a = o / 9, b = (o / 3) % 3, c = o % 3;
        const long long j =
            firn_node_index(P->n, q.s.base[0] + a, q.s.base[1] + b, q.s.base[2] + c);
        if (!((q.mask >> o) & 1u && g.node[4 * j + 3] > 0.0f))
            continue;
        const float aw = firn_stencil_weight(&q.s, a, b, c) / firn_maxf(1.0f, D[4 * j + 3]);
        for (int d = 0; d < 3; d++)
            firn_atomic_add(D + 4 * j + d, aw * vs.v[d]);
    }
}

/* Pass 4 at grid node j: u' = (1 - A) u + sum_i a_ij v*_i, then the walls
 * again (as after MPM-PBD); D's slot is cleared for the next substep. */
static inline FIRN_HD void firn_fem_mpm_node(long long j, const firn_params *P, firn_grid g,
                                             float *D)
{
    float *d = D + 4 * j;
    if (!(d[3] > 0.0f))
        return;
    const float *u = g.node + 4 * j;
    const float keep = 1.0f - firn_minf(d[3], 1.0f);
    const firn_vec3 v = firn_v3(keep * u[0] + d[0], keep * u[1] + d[1], keep * u[2] + d[2]);
    firn_grid_store_velocity(j, g, firn_grid_walls(j, P, v));
    d[0] = d[1] = d[2] = d[3] = 0.0f;
}

/* ---- FEM-SPH -------------------------------------------------------------- */

/* Genesis's experimental normal projection at surface vertex k: the SPH
 * particles in the box |x_p - x|_inf < h / 2 around the vertex (h the SPH
 * support, Genesis's cell size), N of them with mean velocity u, set the
 * vertex's velocity to (u . n) n. Its momentum change dp = m ((u . n) n - v)
 * is taken from those particles in equal shares, v_p -= dp / (N m_p)
 * (firn_fem_sph_scatter), so the pair conserves momentum; Genesis gives each
 * particle all of -dp. The cells around the box come from SPH's neighbour
 * grid, particles in sorted order. */
static inline FIRN_HD void firn_fem_sph_box(firn_vec3 x, const firn_sph_view *W, int lo[3],
                                            int hi[3])
{
    const float half = 0.5f * W->P.h;
    for (int a = 0; a < 3; a++) {
        lo[a] = firn_nbr_cell_axis(&W->P.nb, x.v[a] - half, a);
        hi[a] = firn_nbr_cell_axis(&W->P.nb, x.v[a] + half, a);
    }
}

/* Pass 1: the vertex's new velocity, and its share dp / N stored in
 * share[3 ns] (component-major; zero where no particle is near). Reads SPH
 * velocities, which no body of this pass writes. A fixed vertex is left
 * alone. */
static inline FIRN_HD void firn_fem_sph_vertex(int k, const firn_fem_surface *S,
                                               const firn_sph_view *W, float *share)
{
    const firn_fem_vertices V = S->V;
    const firn_sph_particles s = W->s;
    const int i = S->surf[k];
    const firn_vec3 x = firn_load3(V.x0, V.n, i), v = firn_load3(V.v, V.n, i);
    const float half = 0.5f * W->P.h;
    int lo[3], hi[3], count = 0;
    firn_vec3 sum = firn_v3(0.0f, 0.0f, 0.0f);
    firn_store3(share, S->ns, k, sum);
    if (V.fixed[i])
        return;
    firn_fem_sph_box(x, W, lo, hi);
    for (int a = lo[0]; a <= hi[0]; a++)
        for (int b = lo[1]; b <= hi[1]; b++)
            for (int c = lo[2]; c <= hi[2]; c++) {
                const int cell = (a * W->P.nb.res[1] + b) * W->P.nb.res[2] + c;
                for (int q = W->G.start[cell]; q < W->G.end[cell]; q++) {
                    const int p = W->G.sorted[q];
                    const firn_vec3 d = firn_sub(firn_load3(s.x, s.n, p), x);
                    if (fabsf(d.v[0]) < half && fabsf(d.v[1]) < half && fabsf(d.v[2]) < half) {
                        sum = firn_add(sum, firn_load3(s.v, s.n, p));
                        count++;
                    }
                }
            }
    if (count == 0)
        return;
    const firn_vec3 n = firn_load3(S->normal, S->ns, k);
    const firn_vec3 v2 = firn_scale(n, firn_dot(sum, n) / (float)count);
    firn_store3(share, S->ns, k, firn_scale(firn_sub(v2, v), V.mass[i] / (float)count));
    firn_store3(V.v, V.n, i, v2);
}

/* Pass 2: each particle in vertex k's box loses its share, v_p -= share / m_p. */
static inline FIRN_HD void firn_fem_sph_scatter(int k, const firn_fem_surface *S,
                                                const firn_sph_view *W, const float *share)
{
    const firn_vec3 dp = firn_load3(share, S->ns, k);
    if (dp.v[0] == 0.0f && dp.v[1] == 0.0f && dp.v[2] == 0.0f)
        return;
    const firn_sph_particles s = W->s;
    const firn_vec3 x = firn_load3(S->V.x0, S->V.n, S->surf[k]);
    const float half = 0.5f * W->P.h;
    int lo[3], hi[3];
    firn_fem_sph_box(x, W, lo, hi);
    for (int a = lo[0]; a <= hi[0]; a++)
        for (int b = lo[1]; b <= hi[1]; b++)
            for (int c = lo[2]; c <= hi[2]; c++) {
                const int cell = (a * W->P.nb.res[1] + b) * W->P.nb.res[2] + c;
                for (int q = W->G.start[cell]; q < W->G.end[cell]; q++) {
                    const int p = W->G.sorted[q];
                    const firn_vec3 d = firn_sub(firn_load3(s.x, s.n, p), x);
                    if (!(fabsf(d.v[0]) < half && fabsf(d.v[1]) < half && fabsf(d.v[2]) < half))
                        continue;
                    const float inv = -1.0f / W->mats[s.mat[p]].mass;
                    for (int e = 0; e < 3; e++)
                        firn_atomic_add(s.v + e * s.n + p, inv * dp.v[e]);
                }
            }
}

#endif
