/* firn_mpm.h - MLS-MPM transfers (quadratic B-spline, APIC), one body per
 * particle or grid node, shared by the CPU path and the CUDA kernels.
 * Formulas and substep order: docs/PHYSICS.md sections 1-2. */
#ifndef FIRN_MPM_H
#define FIRN_MPM_H

#include "firn_material.h"

/* Particle state, structure of arrays, component-major: component c of
 * particle i is at [c*n + i] (firn_soa_index); matrices are row-major
 * (component 3r+c). 4 * (3+3+9+9+1+1+1) + 1 = 109 bytes per particle, plus
 * 4 per rigid body and 4 with CPIC on. */
typedef struct {
    int n;
    float *x;       /* 3n positions [m] */
    float *v;       /* 3n velocities [m/s] */
    float *C;       /* 9n APIC affine matrix [1/s] */
    float *F;       /* 9n deformation gradient */
    float *Jp;      /* n plastic state, by model: snow, the plastic volume ratio J_P
                       (1 at rest); sand, the log volume correction of the return
                       map (0 at rest, docs/PHYSICS.md s3.6); others leave it at 1 */
    float *damage;  /* n damage [0,1] */
    float *vol;     /* n initial volume [m^3] */
    uint8_t *mat;   /* n material index */
    int cpic_slots; /* CPIC: words per particle (one per rigid body, plus one), 0 when off */
    uint32_t *cpic; /* cpic_slots * n: word k of particle i at [k*n + i]: per rigid,
                       the side of its surface the particle is on, then P2G's
                       stencil nodes across (include/firn_cpic.h); NULL when off */
} firn_particles;

/* Dense node grid; node (i,j,k) at lower + (i,j,k)*dx, index (i*ny + j)*nz + k.
 * Each node is 4 adjacent floats (px, py, pz, m): momentum [kg m/s] - after
 * the grid update, velocity [m/s] - and mass [kg], so a particle's scatter
 * or gather touches one 16-byte slot per node (one sector on the GPU, and
 * 3 nodes in a row share cache lines on the CPU). 16 bytes per node. */
typedef struct {
    int n[3];
    long long nodes;
    float *node; /* 4 * nodes */
} firn_grid;

enum { FIRN_W_SEPARATE, FIRN_W_STICKY, FIRN_W_SLIP };

/* Everything a substep needs besides the arrays. 136 bytes. */
typedef struct {
    float dt, dx, inv_dx;
    float lower[3];
    int n[3];
    float gravity[3];
    int wall_type[6]; /* x_lower, x_upper, y_lower, y_upper, z_lower, z_upper */
    float wall_friction[6];
    int bound;                /* node layers on each face the walls act on */
    float x_min[3], x_max[3]; /* particles are kept inside this box */
} firn_params;

#define FIRN_WALL_LAYERS 3

static inline FIRN_HD firn_mat3 firn_load9(const float *a, int n, int i)
{
    firn_mat3 m;
    for (int c = 0; c < 9; c++)
        m.m[c] = a[firn_soa_index(c, n, i)];
    return m;
}

static inline FIRN_HD void firn_store9(float *a, int n, int i, firn_mat3 m)
{
    for (int c = 0; c < 9; c++)
        a[firn_soa_index(c, n, i)] = m.m[c];
}

/* Quadratic B-spline stencil of a particle: corner node base and the
 * weights w[o][axis] of the 3 nodes base+o per axis. fx is x in grid units
 * minus base, in [0.5, 1.5) per axis. base is clamped into the grid so that a
 * stray particle can never index outside it. */
typedef struct {
    int base[3];
    float fx[3];
    float w[3][3];
} firn_stencil;

/* Axis a of stencil s: corner b, fx = f, and the three weights at f. */
static inline FIRN_HD void firn_stencil_axis(firn_stencil *s, int a, int b, float f)
{
    s->base[a] = b;
    s->fx[a] = f;
    s->w[0][a] = 0.5f * (1.5f - f) * (1.5f - f);
    s->w[1][a] = 0.75f - (f - 1.0f) * (f - 1.0f);
    s->w[2][a] = 0.5f * (f - 0.5f) * (f - 0.5f);
}

static inline FIRN_HD firn_stencil firn_make_stencil(const firn_params *P, firn_vec3 x)
{
    firn_stencil s;
    for (int a = 0; a < 3; a++) {
        float xg = (x.v[a] - P->lower[a]) * P->inv_dx;
        int b = firn_floor_index(xg - 0.5f, P->n[a] - 3);
        firn_stencil_axis(&s, a, b, xg - (float)b);
    }
    return s;
}

/* The stencil of x with its corner given (base), for a kernel that took the
 * corner from elsewhere: ordered P2G takes it from the particle's binning
 * key, so that a floor rounded the other way in another kernel (nvcc may
 * contract xg - 0.5 differently in each) cannot move the particle's
 * contribution a cell. Where that happens x lies on a cell face, fx is 0.5
 * or 1.5 within rounding, and the weights are those of the other corner's
 * stencil (the quadratic B-spline is continuous there); where base is
 * firn_make_stencil's, the result is the same to the bit. */
static inline FIRN_HD firn_stencil firn_stencil_at(const firn_params *P, firn_vec3 x,
                                                   const int base[3])
{
    firn_stencil s;
    for (int a = 0; a < 3; a++) {
        float xg = (x.v[a] - P->lower[a]) * P->inv_dx;
        firn_stencil_axis(&s, a, base[a], xg - (float)base[a]);
    }
    return s;
}

/* The slot of stencil s's corner node in a tile of T^3 nodes (node (x, y, z)
 * of the tile at (x T + y) T + z) whose first node is grid node o, or -1
 * when the tile does not hold all 27 of the stencil's nodes. Binned P2G
 * (kernels/mpm.cu) scatters a particle into its bin's tile at this slot, and
 * straight into the grid at -1: the bin comes from a key computed in
 * another kernel, which on a GPU may round the stencil corner's floor to
 * the next cell (another FMA contraction of the same expression). */
static inline FIRN_HD int firn_tile_slot(const firn_stencil *s, const int o[3], int T)
{
    int inside = 1;
    for (int a = 0; a < 3; a++)
        inside &= s->base[a] >= o[a] && s->base[a] <= o[a] + T - 3;
    return inside ? ((s->base[0] - o[0]) * T + s->base[1] - o[1]) * T + s->base[2] - o[2] : -1;
}

static inline FIRN_HD long long firn_node_index(const int n[3], int i, int j, int k)
{
    return ((long long)i * n[1] + j) * n[2] + k;
}

/* What a particle scatters, once its stress is known: its stencil, mass,
 * momentum m v and the MLS affine term
 * affine = -dt V 4 inv_dx^2 tau + m C (docs/PHYSICS.md s2.3). */
typedef struct {
    firn_stencil s;
    firn_mat3 affine;
    firn_vec3 mv;
    float mass;
} firn_p2g_state;

/* The trial deformation gradient (I + dt C) F. */
static inline FIRN_HD firn_mat3 firn_p2g_trial_F(const firn_params *P, firn_mat3 C, firn_mat3 F)
{
    firn_mat3 A = C;
    for (int c = 0; c < 9; c++)
        A.m[c] *= P->dt;
    A.m[0] += 1.0f;
    A.m[4] += 1.0f;
    A.m[8] += 1.0f;
    return firn_m3_mul(A, F);
}

/* After the constitutive update: store the particle's F, Jp and damage, and
 * return its scatter state for the Kirchhoff stress tau (C and v: its
 * affine velocity, as for the trial F, and its velocity) and its stencil s. */
static inline FIRN_HD firn_p2g_state firn_p2g_finish(int i, const firn_params *P,
                                                     const firn_material *m, firn_particles p,
                                                     firn_mat3 C, firn_mat3 F, float Jp, float dmg,
                                                     firn_mat3 tau, firn_vec3 v, firn_stencil s)
{
    const int n = p.n;
    firn_store9(p.F, n, i, F);
    p.Jp[i] = Jp;
    p.damage[i] = dmg;

    firn_p2g_state st;
    float vol = p.vol[i];
    st.mass = vol * m->rho;
    float k = -P->dt * vol * 4.0f * P->inv_dx * P->inv_dx;
    for (int c = 0; c < 9; c++)
        st.affine.m[c] = k * tau.m[c] + st.mass * C.m[c];
    st.mv = firn_scale(v, st.mass);
    st.s = s;
    return st;
}

/* Trial deformation gradient, constitutive update (F, Jp and damage written
 * back), and the particle's scatter state, from its position x, velocity v
 * and affine velocity C (as in memory, or as G2P just left them). `model`:
 * the model of every material the particles use (a GPU kernel compiled for
 * it), or FIRN_M_ANY (firn_constitutive_as). */
static inline FIRN_HD firn_p2g_state firn_p2g_prepare_from_as(int i, const firn_params *P,
                                                              const firn_material *mats,
                                                              firn_particles p, firn_vec3 x,
                                                              firn_vec3 v, firn_mat3 C, int model)
{
    const firn_material *m = &mats[p.mat[i]];
    firn_mat3 F = firn_p2g_trial_F(P, C, firn_load9(p.F, p.n, i));
    float Jp = p.Jp[i], dmg = p.damage[i];
    firn_mat3 tau = firn_constitutive_as(m, model, &F, &Jp, &dmg, P->dt);
    return firn_p2g_finish(i, P, m, p, C, F, Jp, dmg, tau, v, firn_make_stencil(P, x));
}

static inline FIRN_HD firn_p2g_state firn_p2g_prepare_from(int i, const firn_params *P,
                                                           const firn_material *mats,
                                                           firn_particles p, firn_vec3 x,
                                                           firn_vec3 v, firn_mat3 C)
{
    return firn_p2g_prepare_from_as(i, P, mats, p, x, v, C, FIRN_M_ANY);
}

static inline FIRN_HD firn_p2g_state firn_p2g_prepare_as(int i, const firn_params *P,
                                                         const firn_material *mats,
                                                         firn_particles p, int model)
{
    return firn_p2g_prepare_from_as(i, P, mats, p, firn_load3(p.x, p.n, i), firn_load3(p.v, p.n, i),
                                    firn_load9(p.C, p.n, i), model);
}

static inline FIRN_HD firn_p2g_state firn_p2g_prepare(int i, const firn_params *P,
                                                      const firn_material *mats, firn_particles p)
{
    return firn_p2g_prepare_as(i, P, mats, p, FIRN_M_ANY);
}

/* The scatter's momentum m v + affine dpos at the stencil's middle node
 * (1, 1, 1), m v - affine (fx - 1) dx, returned; col[k] gets its change per
 * node step along axis k, the columns of affine dx (firn_p2g_scatter_nodes). */
static inline FIRN_HD firn_vec3 firn_p2g_middle(const firn_params *P, const firn_p2g_state *st,
                                                firn_vec3 col[3])
{
    const float dx = P->dx;
    for (int k = 0; k < 3; k++)
        col[k] = firn_v3(st->affine.m[k] * dx, st->affine.m[3 + k] * dx, st->affine.m[6 + k] * dx);
    return firn_sub(st->mv, firn_m3_apply(st->affine, firn_v3((st->s.fx[0] - 1.0f) * dx,
                                                              (st->s.fx[1] - 1.0f) * dx,
                                                              (st->s.fx[2] - 1.0f) * dx)));
}

/* The first float of the stencil's corner node in the grid, and the steps
 * (in floats) to the next node along x and along y. */
static inline FIRN_HD long long firn_stencil_corner(const firn_params *P, const firn_stencil *s,
                                                    long long *sx, long long *sy)
{
    *sx = 4LL * P->n[1] * P->n[2];
    *sy = 4LL * P->n[2];
    return 4 * firn_node_index(P->n, s->base[0], s->base[1], s->base[2]);
}

/* Scatter of a particle's mass and MLS momentum to its 27 stencil nodes,
 * except those whose bit 9a + 3b + c is set in `skip` (CPIC):
 *   grid_mom += w (m v + affine dpos),  grid_mass += w m.
 * With dpos = ((a, b, c) - fx) dx the momentum is linear in a, b and c: it
 * is built from its value at the middle node (1, 1, 1), m v - affine
 * (fx - 1) dx, and the columns of affine dx, three additions per node
 * instead of a matrix product. (Offsets from the middle node, in [-1, 1],
 * keep the terms as small as the per-node products were.) q0 is the first
 * float of the stencil's corner node in a node array of four floats per
 * node (the grid, or a GPU block's tile of it), sx and sy the steps in
 * floats to the next node along x and y; z steps 4; global says whether q0
 * is in global memory (firn_atomic_add_node). */
/* What the scatter adds at stencil node (a, b, c) (m0 and col from
 * firn_p2g_middle): out = w (m v + affine dpos), w m. Also for scatters
 * that combine several particles' values before adding them
 * (kernels/mpm.cu, p2g_warp). */
static inline FIRN_HD void firn_p2g_node_value(const firn_p2g_state *st, firn_vec3 m0,
                                               const firn_vec3 col[3], int a, int b, int c,
                                               float out[4])
{
    const firn_stencil *s = &st->s;
    const firn_vec3 ma = firn_add(m0, firn_scale(col[0], (float)(a - 1)));
    const firn_vec3 mab = firn_add(ma, firn_scale(col[1], (float)(b - 1)));
    const float w = s->w[a][0] * s->w[b][1] * s->w[c][2];
    out[0] = w * (mab.v[0] + (float)(c - 1) * col[2].v[0]);
    out[1] = w * (mab.v[1] + (float)(c - 1) * col[2].v[1]);
    out[2] = w * (mab.v[2] + (float)(c - 1) * col[2].v[2]);
    out[3] = w * st->mass;
}

static inline FIRN_HD void firn_p2g_scatter_into(const firn_params *P, float *q0, long long sx,
                                                 long long sy, const firn_p2g_state *st,
                                                 unsigned skip, int global)
{
    firn_vec3 col[3];
    const firn_vec3 m0 = firn_p2g_middle(P, st, col);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++) {
                if ((skip >> (9 * a + 3 * b + c)) & 1u)
                    continue;
                float v[4];
                firn_p2g_node_value(st, m0, col, a, b, c, v);
                firn_atomic_add_node(q0 + a * sx + b * sy + 4 * c, v, global);
            }
}

/* The scatter into the grid (firn_p2g_scatter_into). */
static inline FIRN_HD void firn_p2g_scatter_nodes(const firn_params *P, firn_grid g,
                                                  const firn_p2g_state *st, unsigned skip)
{
    long long sx, sy;
    const long long corner = firn_stencil_corner(P, &st->s, &sx, &sy);
    firn_p2g_scatter_into(P, g.node + corner, sx, sy, st, skip, FIRN_NODE_GLOBAL);
}

/* Scatter to all 27 stencil nodes. */
static inline FIRN_HD void firn_p2g_scatter_all(const firn_params *P, firn_grid g,
                                                const firn_p2g_state *st)
{
    firn_p2g_scatter_nodes(P, g, st, 0u);
}

/* P2G of one particle (the GPU kernel's body): constitutive update, then
 * the scatter to all 27 stencil nodes. The CPU path does the same in
 * batches (host/solver_cpu.c, p2g_block). */
static inline FIRN_HD void firn_p2g_particle_as(int i, const firn_params *P,
                                                const firn_material *mats, firn_particles p,
                                                firn_grid g, int model)
{
    firn_p2g_state st = firn_p2g_prepare_as(i, P, mats, p, model);
    firn_p2g_scatter_all(P, g, &st);
}

static inline FIRN_HD void firn_p2g_particle(int i, const firn_params *P, const firn_material *mats,
                                             firn_particles p, firn_grid g)
{
    firn_p2g_particle_as(i, P, mats, p, g, FIRN_M_ANY);
}

/* Momentum to velocity plus gravity at one node; returns 0 for an empty
 * node (left untouched). */
static inline FIRN_HD int firn_grid_velocity(long long node, const firn_params *P, firn_grid g,
                                             firn_vec3 *vel)
{
    const float *q = g.node + 4 * node;
    float m = q[3];
    if (m <= 0.0f)
        return 0;
    float inv = 1.0f / m;
    *vel = firn_v3(q[0] * inv + P->dt * P->gravity[0], q[1] * inv + P->dt * P->gravity[1],
                   q[2] * inv + P->dt * P->gravity[2]);
    return 1;
}

/* One wall on axis a with inward normal sign sgn (+1 on a lower face) and
 * Coulomb friction coefficient `friction` (P->wall_friction). */
static inline FIRN_HD firn_vec3 firn_wall_apply(firn_vec3 v, int a, float sgn, int type,
                                                float friction)
{
    if (type == FIRN_W_STICKY)
        return firn_v3(0.0f, 0.0f, 0.0f);
    float vn = v.v[a] * sgn; /* > 0: moving away from the wall */
    if (type == FIRN_W_SLIP) {
        v.v[a] = 0.0f;
        return v;
    }
    if (vn >= 0.0f) /* separate: leaving is free */
        return v;
    v.v[a] = 0.0f;
    if (friction > 0.0f) { /* Coulomb friction in impulse form: |vt| -= friction |vn| */
        float vt = firn_norm(v);
        if (vt > 0.0f)
            v = firn_scale(v, firn_maxf(0.0f, vt + friction * vn) / vt);
    }
    return v;
}

static inline FIRN_HD firn_vec3 firn_grid_walls(long long node, const firn_params *P, firn_vec3 v)
{
    int idx[3];
    long long r = node;
    idx[2] = (int)(r % P->n[2]);
    r /= P->n[2];
    idx[1] = (int)(r % P->n[1]);
    idx[0] = (int)(r / P->n[1]);
    for (int a = 0; a < 3; a++) {
        if (idx[a] < P->bound)
            v = firn_wall_apply(v, a, 1.0f, P->wall_type[2 * a], P->wall_friction[2 * a]);
        if (idx[a] > P->n[a] - 1 - P->bound)
            v = firn_wall_apply(v, a, -1.0f, P->wall_type[2 * a + 1], P->wall_friction[2 * a + 1]);
    }
    return v;
}

static inline FIRN_HD void firn_grid_store_velocity(long long node, firn_grid g, firn_vec3 v)
{
    float *q = g.node + 4 * node;
    q[0] = v.v[0];
    q[1] = v.v[1];
    q[2] = v.v[2];
}

/* Grid update without rigid coupling: velocity, gravity, walls. */
static inline FIRN_HD void firn_grid_node(long long node, const firn_params *P, firn_grid g)
{
    firn_vec3 v;
    if (!firn_grid_velocity(node, P, g, &v))
        return;
    firn_grid_store_velocity(node, g, firn_grid_walls(node, P, v));
}

/* What G2P sums over the stencil: v = sum w gv and the first moments
 * m[k] = sum w gv o_k of the node offsets from the middle node,
 * o = (a, b, c) - 1. With dpos = (o - (fx - 1)) dx, the APIC affine velocity
 *   C = 4 inv_dx^2 sum w gv dpos^T = 4 inv_dx (sum w gv o^T - v (fx - 1)^T)
 * follows from them (firn_g2p_affine): a weighted add per node and moment
 * instead of an outer product per node. The subtraction loses digits when
 * a fast particle's v dwarfs C dx; taken about the middle node, where
 * |o| <= 1 and |fx - 1| <= 0.5, C's rounding error stays within 2x that of
 * the per-node outer products (about the corner it was 7x). */
typedef struct {
    firn_vec3 v;
    firn_vec3 m[3];
} firn_g2p_sums;

/* Add stencil node (a, b, c), whose grid velocity is gv. */
static inline FIRN_HD void firn_g2p_gather(const firn_stencil *s, int a, int b, int c, firn_vec3 gv,
                                           firn_g2p_sums *acc)
{
    firn_vec3 wgv = firn_scale(gv, s->w[a][0] * s->w[b][1] * s->w[c][2]);
    acc->v = firn_add(acc->v, wgv);
    acc->m[0] = firn_add(acc->m[0], firn_scale(wgv, (float)(a - 1)));
    acc->m[1] = firn_add(acc->m[1], firn_scale(wgv, (float)(b - 1)));
    acc->m[2] = firn_add(acc->m[2], firn_scale(wgv, (float)(c - 1)));
}

/* C = 4 inv_dx (sum w gv o^T - v (fx - 1)^T). */
static inline FIRN_HD firn_mat3 firn_g2p_affine(const firn_params *P, const firn_stencil *s,
                                                const firn_g2p_sums *acc)
{
    const float k = 4.0f * P->inv_dx;
    firn_mat3 C;
    for (int r = 0; r < 3; r++)
        for (int q = 0; q < 3; q++)
            C.m[3 * r + q] = k * (acc->m[q].v[r] - acc->v.v[r] * (s->fx[q] - 1.0f));
    return C;
}

/* Advect *x with the gathered v, keep the particle inside the domain, store
 * x, and v and C unless store_vc is 0 (*x is left the new position).
 * Returns 1 if the new state is not finite. */
static inline FIRN_HD int firn_g2p_store_as(int i, const firn_params *P, firn_particles p,
                                            firn_vec3 *x, firn_vec3 v, firn_mat3 C, int store_vc)
{
    const int n = p.n;
    *x = firn_add(*x, firn_scale(v, P->dt));
    int bad = 0;
    for (int a = 0; a < 3; a++) {
        if (!isfinite(x->v[a]) || !isfinite(v.v[a]))
            bad = 1;
        x->v[a] = firn_clampf(x->v[a], P->x_min[a], P->x_max[a]);
    }
    firn_store3(p.x, n, i, *x);
    if (store_vc) {
        firn_store3(p.v, n, i, v);
        firn_store9(p.C, n, i, C);
    }
    return bad;
}

static inline FIRN_HD int firn_g2p_store(int i, const firn_params *P, firn_particles p,
                                         firn_vec3 *x, firn_vec3 v, firn_mat3 C)
{
    return firn_g2p_store_as(i, P, p, x, v, C, 1);
}

static inline FIRN_HD int firn_g2p_finish(int i, const firn_params *P, firn_particles p,
                                          firn_vec3 x, firn_vec3 v, firn_mat3 C)
{
    return firn_g2p_store(i, P, p, &x, v, C);
}

/* Gather v and C from the grid, advect, keep the particle inside the domain,
 * store x (and v and C unless store_vc is 0); the new x, v and C are also
 * left in *xo, *vo and *Co. Returns 1 if the new state is not finite. */
static inline FIRN_HD int firn_g2p_particle_keep(int i, const firn_params *P, firn_particles p,
                                                 firn_grid g, firn_vec3 *xo, firn_vec3 *vo,
                                                 firn_mat3 *Co, int store_vc)
{
    firn_vec3 x = firn_load3(p.x, p.n, i);
    firn_stencil s = firn_make_stencil(P, x);
    firn_g2p_sums acc = {{{0.0f}}, {{{0.0f}}}};
    long long sx, sy;
    const float *q0 = g.node + firn_stencil_corner(P, &s, &sx, &sy);
    const float wc0 = s.w[0][2], wc1 = s.w[1][2], wc2 = s.w[2][2];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            /* The row of three nodes along z (12 adjacent floats): its sum
             * r = sum_c w_c gv and moment rc = sum_c (c - 1) w_c gv, then
             * the row's weight w_a w_b. */
            const float *nd = q0 + a * sx + b * sy;
            float n0[4], n1[4], n2[4];
            firn_load_node(nd, n0);
            firn_load_node(nd + 4, n1);
            firn_load_node(nd + 8, n2);
            const float wab = s.w[a][0] * s.w[b][1];
            for (int k = 0; k < 3; k++) {
                float t0 = wc0 * n0[k], t2 = wc2 * n2[k];
                float r = wab * (t0 + wc1 * n1[k] + t2), rc = wab * (t2 - t0);
                acc.v.v[k] += r;
                acc.m[0].v[k] += (float)(a - 1) * r;
                acc.m[1].v[k] += (float)(b - 1) * r;
                acc.m[2].v[k] += rc;
            }
        }
    *xo = x;
    *vo = acc.v;
    *Co = firn_g2p_affine(P, &s, &acc);
    return firn_g2p_store_as(i, P, p, xo, *vo, *Co, store_vc);
}

static inline FIRN_HD int firn_g2p_particle(int i, const firn_params *P, firn_particles p,
                                            firn_grid g)
{
    firn_vec3 x, v;
    firn_mat3 C;
    return firn_g2p_particle_keep(i, P, p, g, &x, &v, &C, 1);
}

/* G2P2G (kernels/mpm.cu, --p2g g2p2g): particle i's G2P of one substep from
 * grid `from`, then its constitutive update and scatter state for the next
 * substep's P2G, from the x, v and C G2P left in registers: the arithmetic
 * of firn_g2p_particle followed by firn_p2g_prepare, without reading them
 * back. v and C are not stored: nothing reads them before the call's last
 * substep, whose G2P (the g2p kernel) stores them (48 of the bytes a fused
 * substep moves). *bad: G2P's non-finite flag. */
static inline FIRN_HD firn_p2g_state firn_g2p2g_particle_as(int i, const firn_params *P,
                                                            const firn_material *mats,
                                                            firn_particles p, firn_grid from,
                                                            int *bad, int model)
{
    firn_vec3 x, v;
    firn_mat3 C;
    *bad = firn_g2p_particle_keep(i, P, p, from, &x, &v, &C, 0);
    return firn_p2g_prepare_from_as(i, P, mats, p, x, v, C, model);
}

static inline FIRN_HD firn_p2g_state firn_g2p2g_particle(int i, const firn_params *P,
                                                         const firn_material *mats,
                                                         firn_particles p, firn_grid from, int *bad)
{
    return firn_g2p2g_particle_as(i, P, mats, p, from, bad, FIRN_M_ANY);
}

#endif
