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
 *   firn_fem_sph_count        every k (scatter; a counter per SPH particle)
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
    int nf;              /* surface triangles */
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

/* Genesis's experimental normal projection, made momentum- and energy-safe.
 * Genesis sets a surface vertex's velocity to (u . n) n, u the mean velocity
 * of the SPH particles in the box |x_p - x|_inf < h / 2 around it (h the
 * SPH support, Genesis's cell size), and gives each of them all of the
 * vertex's momentum change: momentum is created, and a vertex's tangential
 * velocity is stopped against still water, which pumps energy into the
 * particles when the vertices outweigh them (a jelly resting on a pool
 * blows up within a second). firn keeps the rule's normal matching and
 * makes it an inelastic contact along n:
 *   - particle p, in the boxes of C_p vertices, lends each of them m_p / C_p
 *     (firn_fem_sph_count counts C_p);
 *   - vertex i (mass m) sees the lent mass M = sum m_p / C_p with mean
 *     velocity u = sum (m_p / C_p) u_p / M, and the normal relative
 *     velocity d = ((u - v) . n) n; the impulse J = mu d, mu = m M / (m + M)
 *     the reduced mass, leaves both with the same normal velocity
 *     (firn_fem_sph_vertex: v += J / m);
 *   - each particle's lent parts lose J / M each, averaged over its C_p
 *     boxes: v_p -= sum_i (J_i / M_i) / C_p (firn_fem_sph_scatter).
 * Momentum is conserved exactly; kinetic energy falls by mu |d|^2 / 2 per
 * vertex, less what averaging a particle's parts takes, so the pair never
 * adds energy. The tangential velocities are left alone (slip). A fixed
 * vertex is left alone. A particle touches the surface when its centre is
 * within its radius p / 2 of it, so only particles in the box with
 * (x_p - x) . n < p / 2 take part (Genesis takes the whole box, out to
 * h / 2 = p along n, which held the liquid a particle radius away from the
 * body and floated bodies high: docs/PHYSICS.md, FEM-SPH). The cells
 * around the box come from SPH's neighbour grid, particles in sorted
 * order. */
static inline FIRN_HD void firn_fem_sph_box(firn_vec3 x, const firn_sph_view *W, int lo[3],
                                            int hi[3])
{
    const float half = 0.5f * W->P.h;
    for (int a = 0; a < 3; a++) {
        lo[a] = firn_nbr_cell_axis(&W->P.nb, x.v[a] - half, a);
        hi[a] = firn_nbr_cell_axis(&W->P.nb, x.v[a] + half, a);
    }
}

/* Runs the statements given last with p, the index of each SPH particle in
 * the box of surface vertex k less than p / 2 out along its normal (with
 * the contact distance, W->fem_d: inside the FEM bodies, as MPM-SPH's
 * collision takes only the particles inside its bodies), in the neighbour
 * grid's order (none for a fixed vertex). */
#define FIRN_FEM_SPH_EACH_IN_BOX(k, S, W, ...)                                                     \
    do {                                                                                           \
        const int i_ = (S)->surf[k];                                                               \
        if ((S)->V.fixed[i_])                                                                      \
            break;                                                                                 \
        const firn_vec3 x_ = firn_load3((S)->V.x0, (S)->V.n, i_);                                  \
        const float half_ = 0.5f * (W)->P.h, reach_ = 0.5f * (W)->P.psize;                         \
        const firn_vec3 n_ = firn_load3((S)->normal, (S)->ns, k);                                  \
        int lo_[3], hi_[3];                                                                        \
        firn_fem_sph_box(x_, W, lo_, hi_);                                                         \
        for (int a_ = lo_[0]; a_ <= hi_[0]; a_++)                                                  \
            for (int b_ = lo_[1]; b_ <= hi_[1]; b_++)                                              \
                for (int c_ = lo_[2]; c_ <= hi_[2]; c_++) {                                        \
                    const int cell_ = (a_ * (W)->P.nb.res[1] + b_) * (W)->P.nb.res[2] + c_;        \
                    for (int q_ = (W)->G.start[cell_]; q_ < (W)->G.end[cell_]; q_++) {             \
                        const int p = (W)->G.sorted[q_];                                           \
                        const firn_vec3 d_ = firn_sub(firn_load3((W)->s.x, (W)->s.n, p), x_);      \
                        if (fabsf(d_.v[0]) < half_ && fabsf(d_.v[1]) < half_ &&                    \
                            fabsf(d_.v[2]) < half_ &&                                              \
                            ((W)->fem_d ? (W)->fem_d[p] < 0.0f : firn_dot(d_, n_) < reach_)) {     \
                            __VA_ARGS__;                                                           \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
    } while (0)

/* Pass 0 (scatter): count[p] += 1 for every particle in vertex k's box;
 * count[] (one float per SPH particle) starts at 0. */
static inline FIRN_HD void firn_fem_sph_count(int k, const firn_fem_surface *S,
                                              const firn_sph_view *W, float *count)
{
    FIRN_FEM_SPH_EACH_IN_BOX(k, S, W, firn_atomic_add(count + p, 1.0f));
}

/* Pass 1 (gather): the vertex's impulse J, its velocity v += J / m, and
 * J / M stored in share[3 ns] (component-major; zero where no particle is
 * near). Reads SPH velocities and count, which no body of this pass
 * writes. */
static inline FIRN_HD void firn_fem_sph_vertex(int k, const firn_fem_surface *S,
                                               const firn_sph_view *W, const float *count,
                                               float *share)
{
    const firn_fem_vertices V = S->V;
    const int i = S->surf[k];
    float M = 0.0f;
    firn_vec3 mom = firn_v3(0.0f, 0.0f, 0.0f);
    firn_store3(share, S->ns, k, mom);
    FIRN_FEM_SPH_EACH_IN_BOX(k, S, W, {
        const float lent = W->mats[W->s.mat[p]].mass / count[p];
        M += lent;
        mom = firn_add(mom, firn_scale(firn_load3(W->s.v, W->s.n, p), lent));
    });
    if (!(M > 0.0f))
        return;
    const firn_vec3 n = firn_load3(S->normal, S->ns, k), v = firn_load3(V.v, V.n, i);
    const float m = V.mass[i];
    const float dn = firn_dot(firn_sub(firn_scale(mom, 1.0f / M), v), n);
    const firn_vec3 J = firn_scale(n, m * M / (m + M) * dn);
    firn_store3(share, S->ns, k, firn_scale(J, 1.0f / M));
    firn_store3(V.v, V.n, i, firn_add(v, firn_scale(J, 1.0f / m)));
}

/* Pass 2 (scatter): each particle in vertex k's box loses share / C_p,
 * v_p -= share / count[p]. */
static inline FIRN_HD void firn_fem_sph_scatter(int k, const firn_fem_surface *S,
                                                const firn_sph_view *W, const float *count,
                                                const float *share)
{
    const firn_vec3 dv = firn_load3(share, S->ns, k);
    if (dv.v[0] == 0.0f && dv.v[1] == 0.0f && dv.v[2] == 0.0f)
        return;
    FIRN_FEM_SPH_EACH_IN_BOX(k, S, W, {
        const float inv = -1.0f / count[p];
        for (int e = 0; e < 3; e++)
            firn_atomic_add(W->s.v + firn_soa_index(e, W->s.n, p), inv * dv.v[e]);
    });
}

/* ---- FEM-SPH: the contact distance and the wall term ---------------------- */

/* With WCSPH, the FEM bodies bound the liquid as the rigid and MPM bodies
 * do (docs/PHYSICS.md, FEM-SPH): each SPH particle within h of the surface
 * mesh finds its nearest triangle (firn_fem_sph_face), and with the signed
 * distance d to it
 *   - outside the body, the density counts the body's kernel volume
 *     psi(d) (firn_sph_fem_psi), so the liquid does not crowd onto the
 *     surface, and the wall term of ghost layers (firn_sph_body_wall)
 *     pushes and pulls the particle, its reaction -m dv going to the
 *     triangle's three vertices by the barycentric weights of the nearest
 *     point (firn_fem_sph_wall);
 *   - the vertices' inelastic contact above takes only the particles
 *     inside the body (d < 0).
 * Before the SPH density (after SPH's neighbour sort, positions x: FEM's
 * x0 = x is set in its pre-coupling, which runs later): keys to ~0, then
 * firn_fem_sph_face for every triangle (scatter), then
 * firn_fem_sph_resolve for every particle (gather). In couple(), before
 * the contact: firn_fem_sph_wall for every particle (scatter onto the
 * vertices). */

/* The point of triangle (a, b, c) nearest to x, as barycentric weights w
 * (summing to 1), from the region of the triangle's plane x projects into:
 * a vertex, an edge or the face (the standard test of Ericson's Real-Time
 * Collision Detection, 5.1.5). A degenerate triangle gives vertex a. */
static inline FIRN_HD void firn_triangle_nearest(firn_vec3 x, firn_vec3 a, firn_vec3 b, firn_vec3 c,
                                                 float w[3])
{
    const firn_vec3 ab = firn_sub(b, a), ac = firn_sub(c, a);
    const firn_vec3 ax = firn_sub(x, a), bx = firn_sub(x, b), cx = firn_sub(x, c);
    const float d1 = firn_dot(ab, ax), d2 = firn_dot(ac, ax);
    const float d3 = firn_dot(ab, bx), d4 = firn_dot(ac, bx);
    const float d5 = firn_dot(ab, cx), d6 = firn_dot(ac, cx);
    const float va = d3 * d6 - d5 * d4, vb = d5 * d2 - d1 * d6, vc = d1 * d4 - d3 * d2;
    w[0] = 1.0f, w[1] = w[2] = 0.0f;
    if (d1 <= 0.0f && d2 <= 0.0f)
        return;
    if (d3 >= 0.0f && d4 <= d3) {
        w[0] = 0.0f, w[1] = 1.0f;
        return;
    }
    if (d6 >= 0.0f && d5 <= d6) {
        w[0] = 0.0f, w[2] = 1.0f;
        return;
    }
    if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {
        const float t = d1 / (d1 - d3);
        w[0] = 1.0f - t, w[1] = t;
        return;
    }
    if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {
        const float t = d2 / (d2 - d6);
        w[0] = 1.0f - t, w[2] = t;
        return;
    }
    if (va <= 0.0f && d4 - d3 >= 0.0f && d5 - d6 >= 0.0f) {
        const float t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        w[0] = 0.0f, w[1] = 1.0f - t, w[2] = t;
        return;
    }
    const float sum = va + vb + vc;
    if (!(sum > 0.0f))
        return;
    w[1] = vb / sum, w[2] = vc / sum, w[0] = 1.0f - w[1] - w[2];
}

/* The bits of a float, which order as the float does for x >= 0. */
static inline FIRN_HD unsigned firn_float_bits(float x)
{
    union {
        float f;
        unsigned u;
    } b;
    b.f = x;
    return b.u;
}

/* Pass D1 (scatter), surface triangle f: every SPH particle p within h of
 * it takes key[p] = min(key[p], bits(distance) << 32 | f), so that after
 * all triangles key[p] names the nearest one (the lowest index among
 * equals), whatever order they ran in. */
static inline FIRN_HD void firn_fem_sph_face(int f, const firn_fem_surface *S,
                                             const firn_sph_view *W, unsigned long long *key)
{
    const firn_fem_vertices V = S->V;
    const int *t = S->face + 3 * f;
    const firn_vec3 a = firn_load3(V.x, V.n, t[0]), b = firn_load3(V.x, V.n, t[1]),
                    c = firn_load3(V.x, V.n, t[2]);
    const float h = W->P.h;
    int lo[3], hi[3];
    for (int e = 0; e < 3; e++) {
        lo[e] = firn_nbr_cell_axis(&W->P.nb, firn_minf(firn_minf(a.v[e], b.v[e]), c.v[e]) - h, e);
        hi[e] = firn_nbr_cell_axis(&W->P.nb, firn_maxf(firn_maxf(a.v[e], b.v[e]), c.v[e]) + h, e);
    }
    for (int i = lo[0]; i <= hi[0]; i++)
        for (int j = lo[1]; j <= hi[1]; j++)
            for (int k = lo[2]; k <= hi[2]; k++) {
                const int cell = (i * W->P.nb.res[1] + j) * W->P.nb.res[2] + k;
                for (int q = W->G.start[cell]; q < W->G.end[cell]; q++) {
                    const int p = W->G.sorted[q];
                    const firn_vec3 x = firn_load3(W->s.x, W->s.n, p);
                    float w[3];
                    firn_triangle_nearest(x, a, b, c, w);
                    const firn_vec3 y = firn_add(firn_add(firn_scale(a, w[0]), firn_scale(b, w[1])),
                                                 firn_scale(c, w[2]));
                    const float dist = firn_norm(firn_sub(x, y));
                    if (dist < h)
                        firn_atomic_min_u64(
                            key + p, (unsigned long long)firn_float_bits(dist) << 32 | (unsigned)f);
                }
            }
}

/* SPH particle p's contact with the FEM surface: its nearest triangle f
 * (from the key), the barycentric weights w of the nearest point y, the
 * signed distance d (negative inside: x - y against the triangle's
 * outward normal) and the outward normal n there ((x - y) / |x - y|, or
 * the triangle's normal where x lies on it). */
typedef struct {
    int f;
    float w[3];
    float d;
    firn_vec3 n;
} firn_fem_sph_hit;

/* The contact of particle p (firn_fem_sph_hit); 0 where no triangle is
 * within h. */
static inline FIRN_HD int firn_fem_sph_nearest(int p, const firn_fem_surface *S,
                                               const firn_sph_view *W, firn_fem_sph_hit *hit)
{
    const unsigned long long key = W->fem_key[p];
    if (key == ~0ULL)
        return 0;
    const firn_fem_vertices V = S->V;
    hit->f = (int)(key & 0xffffffffULL);
    const int *t = S->face + 3 * hit->f;
    const firn_vec3 a = firn_load3(V.x, V.n, t[0]), b = firn_load3(V.x, V.n, t[1]),
                    c = firn_load3(V.x, V.n, t[2]);
    const firn_vec3 x = firn_load3(W->s.x, W->s.n, p);
    firn_triangle_nearest(x, a, b, c, hit->w);
    const firn_vec3 y = firn_add(firn_add(firn_scale(a, hit->w[0]), firn_scale(b, hit->w[1])),
                                 firn_scale(c, hit->w[2]));
    const firn_vec3 u = firn_sub(x, y), nf = firn_cross(firn_sub(b, a), firn_sub(c, a));
    const float dist = firn_norm(u), side = firn_dot(u, nf) < 0.0f ? -1.0f : 1.0f;
    const float lf = firn_norm(nf);
    hit->d = side * dist;
    if (dist > 1e-6f * W->P.h)
        hit->n = firn_scale(u, side / dist);
    else
        hit->n = lf > 0.0f ? firn_scale(nf, 1.0f / lf) : firn_v3(0.0f, 1.0f, 0.0f);
    return 1;
}

/* Pass D2 (gather), SPH particle p: fem_d[p] = its signed distance to the
 * surface, FIRN_FEM_SPH_FAR where no triangle is within h. */
static inline FIRN_HD void firn_fem_sph_resolve(int p, const firn_fem_surface *S,
                                                const firn_sph_view *W)
{
    firn_fem_sph_hit hit;
    W->fem_d[p] = firn_fem_sph_nearest(p, S, W, &hit) ? hit.d : FIRN_FEM_SPH_FAR;
}

/* In couple() (scatter), SPH particle p within h outside the surface: the
 * wall term of ghost layers at d (firn_sph_body_wall, as for a rigid
 * body), v_p += dv, and its reaction -m_p dv on the nearest point,
 * vertex a of the triangle taking -m_p dv w_a / m_a (a fixed vertex takes
 * none: its support does). The momentum the vertices gain is -m_p dv, the
 * weights summing to 1. A particle inside gets no wall term, only the
 * vertices' contact, which carries it with the body (as MPM-SPH's
 * collision does: with the kernel volume and the wall term at d = 0,
 * liquid covered by a body created overlapping it was thrown out, and an
 * FEM cube created at the water line of a pool gained 1.5 times M g H of
 * kinetic energy in 0.1 s). */
static inline FIRN_HD void firn_fem_sph_wall(int p, const firn_fem_surface *S,
                                             const firn_sph_view *W)
{
    firn_fem_sph_hit hit;
    if (!firn_fem_sph_nearest(p, S, W, &hit) || hit.d < 0.0f)
        return;
    const firn_sph_params *P = &W->P;
    const firn_sph_material *m = &W->mats[W->s.mat[p]];
    const firn_vec3 dv =
        firn_scale(firn_sph_body_wall(P, m, W->s.p[p], W->s.rho[p], hit.d, hit.n), P->dt);
    firn_store3(W->s.v, W->s.n, p, firn_add(firn_load3(W->s.v, W->s.n, p), dv));
    const firn_fem_vertices V = S->V;
    const int *t = S->face + 3 * hit.f;
    for (int a = 0; a < 3; a++) {
        const int i = t[a];
        if (V.fixed[i] || !(hit.w[a] != 0.0f))
            continue;
        const float f = -m->mass * hit.w[a] / V.mass[i];
        for (int e = 0; e < 3; e++)
            firn_atomic_add(V.v + firn_soa_index(e, V.n, i), f * dv.v[e]);
    }
}

#endif
