/* firn_sph.h - smoothed particle hydrodynamics: the cubic spline kernel, the
 * neighbour grid's cursor, and one body per particle for each pass of the
 * WCSPH and DFSPH substeps, shared by the CPU path (host/sph_cpu.c) and the
 * CUDA kernels (kernels/sph.cu). Formulas, defaults and the substep order:
 * docs/PHYSICS.md section 5. */
#ifndef FIRN_SPH_H
#define FIRN_SPH_H

#include "firn_neighbour.h"

/* SPH particle state, structure of arrays, component-major like MPM's
 * (component c of particle i at [c*n + i]). 4 * (3+3+3+1+1+1+1) + 1 = 53
 * bytes per particle. */
typedef struct {
    int n;
    float *x;     /* 3n positions [m] */
    float *v;     /* 3n velocities [m/s] */
    float *acc;   /* 3n non-pressure (WCSPH: total) acceleration [m/s^2] */
    float *rho;   /* n density [kg/m^3] */
    float *p;     /* n pressure [Pa]: WCSPH's equation of state, DFSPH's accumulated solve */
    float *alpha; /* n DFSPH factor -1 / (|sum V grad W|^2 + sum |V grad W|^2) [m^-2] */
    float *drho;  /* n DFSPH source: divergence d [1/s], then the predicted density ratio [-] */
    uint8_t *mat; /* n SPH material index */
} firn_sph_particles;

enum { FIRN_SPH_WCSPH = 0, FIRN_SPH_DFSPH };

/* One SPH material (firn_material_def with model sph_liquid). 24 bytes. */
typedef struct {
    float rho0;      /* rest density [kg/m^3] */
    float mass;      /* particle mass V_p rho0 [kg] */
    float stiffness; /* Tait stiffness k [Pa] */
    float exponent;  /* Tait exponent gamma [-] */
    float mu;        /* viscosity, acting as a kinematic viscosity [m^2/s] */
    float cohesion;  /* surface tension coefficient gamma [-] */
} firn_sph_material;

#define FIRN_SPH_MAX_MATERIALS 16

/* Everything a substep needs besides the arrays. */
#define FIRN_SPH_WALL_TABLE 32

typedef struct {
    float dt;          /* substep [s] */
    float psize;       /* particle diameter p [m] */
    float h, inv_h;    /* support radius 2p [m] */
    float kw;          /* kernel constant 8 / (pi h^3) [1/m^3] */
    float vol;         /* particle volume V_p = 0.8 p^3 [m^3] */
    float lower[3];    /* the SPH box: particles are kept inside [lower, upper] */
    float upper[3];    /* [m] */
    firn_nbr_space nb; /* the neighbour grid: cells of edge h over the box */
    float gravity[3];  /* [m/s^2] */
    int solver;        /* FIRN_SPH_WCSPH or FIRN_SPH_DFSPH */
    float div_tol;     /* DFSPH: mean compression rate tolerated, x dt [-] */
    float dens_tol;    /* DFSPH: mean density error tolerated, fraction of rho0 [-] */
    float tau;         /* DFSPH: the liquid's own CFL step [s], set each frame, with a
                          fixed time.dt too (0: before the first); a substep shorter
                          than tau / 2 removes only the share 2 dt / tau of a density
                          excess (firn_sph_df_excess_share) */
    int div_iters;     /* DFSPH: most divergence iterations per substep */
    int dens_iters;    /* DFSPH: most density iterations per substep */
    int walls;         /* 1: the box's faces bound the liquid as liquid at rest beyond
                          them (firn_sph_walls); 0: they only clamp positions (Genesis) */
    float full_count;  /* neighbours in a full support, 4 pi h^3 / (3 V) [-] */
    /* The walls' viscosity tensor at distance d = q h, tangential and normal
     * components, times h^2, at q = k / FIRN_SPH_WALL_TABLE (firn_sph_wall_table). */
    float wall_visc_t[FIRN_SPH_WALL_TABLE + 1];
    float wall_visc_n[FIRN_SPH_WALL_TABLE + 1];
} firn_sph_params;

/* ---- kernel (cubic spline, support h) ---------------------------------- */

/* W(r) = k (6q^3 - 6q^2 + 1) for q = r/h <= 1/2, 2k (1 - q)^3 up to 1, 0 beyond;
 * k = 8 / (pi h^3), so W integrates to 1 over the ball of radius h. */
static inline FIRN_HD float firn_sph_w(const firn_sph_params *P, float r)
{
    float q = r * P->inv_h;
    if (q > 1.0f)
        return 0.0f;
    if (q <= 0.5f)
        return P->kw * (6.0f * q * q * q - 6.0f * q * q + 1.0f);
    float s = 1.0f - q;
    return 2.0f * P->kw * s * s * s;
}

/* grad W at offset d (length r): 6k q (3q - 2) d / (r h) for q <= 1/2,
 * -6k (1 - q)^2 d / (r h) up to 1; zero at r <= 1e-5 m (no direction). */
static inline FIRN_HD firn_vec3 firn_sph_grad_w(const firn_sph_params *P, firn_vec3 d, float r)
{
    float q = r * P->inv_h;
    if (r <= 1e-5f || q > 1.0f)
        return firn_v3(0.0f, 0.0f, 0.0f);
    float g =
        q <= 0.5f ? 6.0f * P->kw * q * (3.0f * q - 2.0f) : -6.0f * P->kw * (1.0f - q) * (1.0f - q);
    return firn_scale(d, g / (r * P->h));
}

/* sigma(d) = 2 pi int_|d|^h W(r) r dr: the kernel integrated over a plane at
 * distance d [1/m], so that a half space of particles of volume V at
 * pressure p pushes a plane with 2 p V sigma per particle (SPH-rigid). */
static inline FIRN_HD float firn_sph_plane_integral(const firn_sph_params *P, float d)
{
    float q = fabsf(d) * P->inv_h;
    if (q > 1.0f)
        return 0.0f;
    float q2 = q * q, q4 = q2 * q2;
    float c = 16.0f * P->inv_h;
    if (q <= 0.5f)
        return c * (0.0875f - (1.2f * q4 * q - 1.5f * q4 + 0.5f * q2));
    return c * (0.1f - (q2 - 2.0f * q2 * q + 1.5f * q4 - 0.4f * q4 * q));
}

/* Psi(d) = int_|d|^h sigma(s) ds: the fraction of the kernel's volume
 * integral beyond a plane at distance d [-]; 1/2 at d = 0, 0 from d = h on. */
static inline FIRN_HD float firn_sph_plane_volume(const firn_sph_params *P, float d)
{
    float q = fabsf(d) * P->inv_h;
    if (q >= 1.0f)
        return 0.0f;
    float q2 = q * q, q3 = q2 * q;
    if (q > 0.5f) /* 16 (F(1) - F(q)), F(q) = q/10 - q^3/3 + q^4/2 - 3 q^5/10 + q^6/15 */
        return 16.0f * (1.0f / 30.0f -
                        (0.1f * q - q3 / 3.0f + 0.5f * q3 * q - 0.3f * q3 * q2 + q3 * q3 / 15.0f));
    /* 1/2 - 16 G(q), G(q) = 7q/80 - q^3/6 + 3 q^5/10 - q^6/5 */
    return 0.5f - 16.0f * (0.0875f * q - q3 / 6.0f + 0.3f * q3 * q2 - 0.2f * q3 * q3);
}

/* The same integrals as the liquid's own sums see them: the liquid's
 * resting lattice (spacing s = V^(1/3), layers parallel to the plane)
 * continued beyond a plane at distance d, each ghost layer at
 * delta_k = d + (k - 1/2) s smeared over its plane (a layer of particles
 * of volume V per s^2 is s times the plane's density). Per unit of the
 * plane's normal n (pointing into the liquid):
 *   volume  psi = s sum_k sigma(delta_k)                  (continuum: Psi(d))
 *   gradient g  = s sum_k 2 pi delta_k W(delta_k), G = -g n (continuum: sigma(d))
 *   moment  mn  = s sum_k 2 pi delta_k^2 W(delta_k) - psi,
 *           M = psi I + mn n n                           (continuum: d sigma(d))
 *   cohesion c  = s^-2 sum_k delta_k sigma_p(delta_k), sigma_p the plane
 *           integral of W(max(r, p)) (firn_sph_nonpressure's kernel): the
 *           ghosts' sum_j x_ij W(max(r_ij, p)) = c n, with which the
 *           liquid continued pulls on the particle as its own neighbours do
 * These are the midpoint sums, over the ghost layers, of the continuum's
 * integrals over the half space; they tend to them as s / h -> 0. At
 * h = 2.15 s the continuum's Psi(s/2) = 0.206 exceeds what a resting
 * lattice's first layer misses beyond a wall (0.176), so a wall counted
 * as a continuum pushed the first layer off it, thinned it and raised the
 * whole liquid's pressure (docs/PHYSICS.md 5.5). */
typedef struct {
    float psi, grad, moment, cohesion;
} firn_sph_ghost;

/* sigma_p(d) = 2 pi int_d^h W(max(r, p)) r dr: the plane integral of the
 * cohesion's kernel, which stays W(p) within p [1/m]. */
static inline FIRN_HD float firn_sph_cohesion_plane(const firn_sph_params *P, float d)
{
    const float p = P->psize;
    if (d >= p)
        return firn_sph_plane_integral(P, d);
    return firn_sph_plane_integral(P, p) + 3.14159265f * (p * p - d * d) * firn_sph_w(P, p);
}

static inline FIRN_HD firn_sph_ghost firn_sph_ghost_layers(const firn_sph_params *P, float d)
{
    firn_sph_ghost g = {0.0f, 0.0f, 0.0f, 0.0f};
    const float s = cbrtf(P->vol);
    float m2 = 0.0f;
    for (int k = 0; k < 4; k++) {
        const float delta = firn_maxf(d, 0.0f) + ((float)k + 0.5f) * s;
        if (delta >= P->h)
            break;
        const float w = 6.2831853f * delta * firn_sph_w(P, delta);
        g.psi += s * firn_sph_plane_integral(P, delta);
        g.grad += s * w;
        m2 += s * w * delta;
        g.cohesion += delta * firn_sph_cohesion_plane(P, delta) / (s * s);
    }
    g.moment = m2 - g.psi;
    return g;
}

/* The SPH box's faces as boundaries (Koschier and Bender 2017's idea of a
 * boundary integral, in closed form for planes): beyond each face within
 * h of x lies, in effect, liquid at rest density and at rest, whose kernel
 * volume psi = sum_faces Psi(d) adds rho0 psi to the density and whose
 * gradient, grad = sum_faces int grad W = sum_faces -sigma(d) n (n the
 * face's inward normal), stands for sum_j V grad W_ij over it, and whose
 * moment, int (y - x) (x) grad W dy = sum_faces Psi(d) I + d sigma(d) n n
 * (diagonal for the box's faces: m), carries a pressure that varies
 * linearly beyond the face; the viscosity's integral over it,
 * K = int (x - y) (x) (x - y) W'(r) / (r (r^2 + 0.01 h^2)) dy (diagonal:
 * visc), gives the artificial viscosity of liquid at rest, 10 nu K v_i.
 * Near an edge or a corner the faces' half spaces overlap (below). */
typedef struct {
    float psi;
    firn_vec3 grad;
    firn_vec3 m;
    firn_vec3 visc;
    firn_vec3 coh; /* the ghosts' cohesion sum, sum x_ij W(max(r, p)) */
} firn_sph_wall;

/* Linear interpolation of a wall table at q = d / h in [0, 1). */
static inline FIRN_HD float firn_sph_wall_lookup(const float *table, float q)
{
    float u = firn_clampf(q, 0.0f, 1.0f) * (float)FIRN_SPH_WALL_TABLE;
    int k = (int)u;
    if (k >= FIRN_SPH_WALL_TABLE)
        return table[FIRN_SPH_WALL_TABLE];
    return table[k] + (u - (float)k) * (table[k + 1] - table[k]);
}

/* The two faces of axis a (their half spaces are disjoint): volume Psi,
 * gradient, normal moment d sigma, and viscosity (tangential, normal). */
typedef struct {
    float psi, grad, moment, visc_t, visc_n, coh;
} firn_sph_wall_axis;

static inline FIRN_HD void firn_sph_wall_face(const firn_sph_params *P, float d, float sgn,
                                              firn_sph_wall_axis *f)
{
    d = firn_maxf(d, 0.0f);
    if (d >= P->h)
        return;
    const firn_sph_ghost gl = firn_sph_ghost_layers(P, d);
    float q = d * P->inv_h, s2 = P->inv_h * P->inv_h;
    f->psi += gl.psi;
    f->grad -= sgn * gl.grad;
    f->moment += gl.moment;
    f->coh += sgn * gl.cohesion;
    f->visc_t += firn_sph_wall_lookup(P->wall_visc_t, q) * s2;
    f->visc_n += firn_sph_wall_lookup(P->wall_visc_n, q) * s2;
}

/* Faces on different axes overlap near an edge or a corner; their union
 * is counted as for a kernel that factors over the axes, for which the
 * volume outside the box is exactly 1 - prod_a (1 - Psi_a): each axis's
 * gradient, moment and viscosity are weighted by prod_(b != a) (1 - Psi_b),
 * the part of its half space no other face's covers. */
static inline FIRN_HD firn_sph_wall firn_sph_walls(const firn_sph_params *P, firn_vec3 x)
{
    const firn_vec3 zero = firn_v3(0.0f, 0.0f, 0.0f);
    firn_sph_wall w = {0.0f, zero, zero, zero, zero};
    if (!P->walls)
        return w;
    firn_sph_wall_axis f[3];
    for (int a = 0; a < 3; a++) {
        f[a].psi = f[a].grad = f[a].moment = f[a].visc_t = f[a].visc_n = f[a].coh = 0.0f;
        firn_sph_wall_face(P, x.v[a] - P->lower[a], 1.0f, &f[a]);
        firn_sph_wall_face(P, P->upper[a] - x.v[a], -1.0f, &f[a]);
    }
    float open[3];
    for (int a = 0; a < 3; a++)
        open[a] = 1.0f - f[a].psi;
    w.psi = 1.0f - open[0] * open[1] * open[2];
    for (int a = 0; a < 3; a++) {
        const float only = open[(a + 1) % 3] * open[(a + 2) % 3];
        w.grad.v[a] = only * f[a].grad;
        w.m.v[a] = w.psi + only * f[a].moment;
        w.coh.v[a] = only * f[a].coh;
        for (int b = 0; b < 3; b++)
            w.visc.v[b] += only * (b == a ? f[a].visc_n : f[a].visc_t);
    }
    return w;
}

/* ---- per-particle passes ----------------------------------------------- */

/* Density rho_i = rho0_i (V_p (W(0) + sum_j W_ij) + psi_walls). */
static inline FIRN_HD float firn_sph_density(int i, const firn_sph_params *P,
                                             const firn_sph_material *mats, firn_sph_particles s,
                                             firn_nbr_grid G)
{
    firn_vec3 x = firn_load3(s.x, s.n, i), d;
    float sum = firn_sph_w(P, 0.0f), r;
    int j;
    firn_nbr_cursor c = firn_nbr_cursor_for(&P->nb, G, i, x);
    while (firn_nbr_next(&c, &P->nb, G, s.x, s.n, i, x, &j, &d, &r))
        sum += firn_sph_w(P, r);
    return mats[s.mat[i]].rho0 * (P->vol * sum + firn_sph_walls(P, x).psi);
}

/* Non-pressure acceleration: gravity, cohesion (Becker and Teschner 2007,
 * kernel at a distance of at least p) and the artificial viscosity
 * 2 (d + 2) nu m_j / rho_j (v_ij . x_ij) / (|x_ij|^2 + 0.01 h^2) grad W_ij,
 * the walls' included (10 nu K v_i: liquid at rest beyond them). */
static inline FIRN_HD firn_vec3 firn_sph_nonpressure(int i, const firn_sph_params *P,
                                                     const firn_sph_material *mats,
                                                     firn_sph_particles s, firn_nbr_grid G)
{
    const firn_sph_material *mi = &mats[s.mat[i]];
    firn_vec3 x = firn_load3(s.x, s.n, i), v = firn_load3(s.v, s.n, i), d;
    firn_vec3 a = firn_v3(P->gravity[0], P->gravity[1], P->gravity[2]);
    float r;
    int j;
    firn_nbr_cursor c = firn_nbr_cursor_for(&P->nb, G, i, x);
    while (firn_nbr_next(&c, &P->nb, G, s.x, s.n, i, x, &j, &d, &r)) {
        float mj = mats[s.mat[j]].mass;
        a = firn_sub(
            a, firn_scale(d, mi->cohesion / mi->mass * mj * firn_sph_w(P, firn_maxf(r, P->psize))));
        firn_vec3 vij = firn_sub(v, firn_load3(s.v, s.n, j));
        float visc = 10.0f * 0.5f * (mi->mu + mats[s.mat[j]].mu) * mj * 2.0f /
                     (s.rho[i] + s.rho[j]) * firn_dot(vij, d) / (r * r + 0.01f * P->h * P->h);
        a = firn_add(a, firn_scale(firn_sph_grad_w(P, d, r), visc));
    }
    firn_sph_wall w = firn_sph_walls(P, x);
    for (int b = 0; b < 3; b++)
        a.v[b] += 10.0f * mi->mu * w.visc.v[b] * v.v[b] - mi->cohesion * w.coh.v[b];
    return a;
}

/* WCSPH equation of state (Tait, Becker and Teschner 2007): the density is
 * clamped to at least rho0 (a free surface has no suction) and stored, and
 * p = k ((rho / rho0)^gamma - 1). */
static inline FIRN_HD void firn_sph_eos(int i, const firn_sph_material *mats, firn_sph_particles s)
{
    const firn_sph_material *m = &mats[s.mat[i]];
    float rho = firn_maxf(s.rho[i], m->rho0);
    s.rho[i] = rho;
    s.p[i] = m->stiffness * (powf(rho / m->rho0, m->exponent) - 1.0f);
}

/* WCSPH: adds the symmetric pressure acceleration
 * -sum_j m_j (p_i / rho_i^2 + p_j / rho_j^2) grad W_ij to acc, and the
 * walls' liquid's, whose pressure is Adami et al. (2012)'s wall pressure
 * for walls at rest: the neighbours' kernel-weighted mean pressure p_b,
 * continued hydrostatically, p_b + rho_i g . (y - x_i):
 * -rho0_i / rho_i^2 ((p_i + p_b) grad_walls + rho_i m_walls g); then steps
 * the velocity, v += dt acc. With p_i for p_b (a mirror) the statics are
 * the same, but the wall answers the particle's own pressure noise and
 * feeds the flow: the dam break's surge ran 11 % fast at the default
 * stiffness and 22 % at four times it. */
static inline FIRN_HD void firn_sph_pressure_step(int i, const firn_sph_params *P,
                                                  const firn_sph_material *mats,
                                                  firn_sph_particles s, firn_nbr_grid G)
{
    firn_vec3 x = firn_load3(s.x, s.n, i), a = firn_load3(s.acc, s.n, i), d;
    float pi = s.p[i] / (s.rho[i] * s.rho[i]), r, pw = 0.0f, ww = 0.0f;
    int j;
    firn_nbr_cursor c = firn_nbr_cursor_for(&P->nb, G, i, x);
    while (firn_nbr_next(&c, &P->nb, G, s.x, s.n, i, x, &j, &d, &r)) {
        float f = -mats[s.mat[j]].mass * (pi + s.p[j] / (s.rho[j] * s.rho[j]));
        a = firn_add(a, firn_scale(firn_sph_grad_w(P, d, r), f));
        float wj = firn_sph_w(P, r);
        pw += wj * s.p[j];
        ww += wj;
    }
    firn_sph_wall w = firn_sph_walls(P, x);
    if (w.psi > 0.0f) {
        const float rho0 = mats[s.mat[i]].rho0, rhoi = s.rho[i];
        const float pb = ww > 0.0f ? pw / ww : s.p[i];
        firn_vec3 mg =
            firn_v3(w.m.v[0] * P->gravity[0], w.m.v[1] * P->gravity[1], w.m.v[2] * P->gravity[2]);
        a = firn_sub(a, firn_add(firn_scale(w.grad, rho0 * (s.p[i] + pb) / (rhoi * rhoi)),
                                 firn_scale(mg, rho0 / rhoi)));
    }
    firn_store3(s.acc, s.n, i, a);
    firn_store3(s.v, s.n, i, firn_add(firn_load3(s.v, s.n, i), firn_scale(a, P->dt)));
}

/* v += dt acc (DFSPH's prediction with the non-pressure acceleration). */
static inline FIRN_HD void firn_sph_kick(int i, const firn_sph_params *P, firn_sph_particles s)
{
    firn_vec3 v = firn_load3(s.v, s.n, i), a = firn_load3(s.acc, s.n, i);
    firn_store3(s.v, s.n, i, firn_add(v, firn_scale(a, P->dt)));
}

/* DFSPH factor (Bender and Koschier 2017, eq. 12 without the density
 * factors, which cancel in the velocity update): alpha = -1 / S with
 * S = |sum_j V grad W_ij + grad_walls|^2 + sum_j |V grad W_ij|^2 (the walls
 * do not move), 0 when S <= 1e-6. Resets the accumulated pressure. */
static inline FIRN_HD void firn_sph_df_factor(int i, const firn_sph_params *P, firn_sph_particles s,
                                              firn_nbr_grid G)
{
    firn_vec3 x = firn_load3(s.x, s.n, i), sum = firn_v3(0.0f, 0.0f, 0.0f), d;
    float sq = 0.0f, r;
    int j;
    firn_nbr_cursor c = firn_nbr_cursor_for(&P->nb, G, i, x);
    while (firn_nbr_next(&c, &P->nb, G, s.x, s.n, i, x, &j, &d, &r)) {
        firn_vec3 g = firn_scale(firn_sph_grad_w(P, d, r), P->vol);
        sum = firn_add(sum, g);
        sq += firn_dot(g, g);
    }
    sum = firn_add(sum, firn_sph_walls(P, x).grad);
    float S = firn_dot(sum, sum) + sq;
    s.alpha[i] = S > 1e-6f ? -1.0f / S : 0.0f;
    s.p[i] = 0.0f;
}

/* sum_j V (v_i - v_j) . grad W_ij + v_i . grad_walls [1/s] (the walls are
 * at rest), and the neighbour count, the walls counting psi full_count. */
static inline FIRN_HD float firn_sph_divergence(int i, const firn_sph_params *P,
                                                firn_sph_particles s, firn_nbr_grid G, int *count)
{
    firn_vec3 x = firn_load3(s.x, s.n, i), v = firn_load3(s.v, s.n, i), d;
    float div = 0.0f, r;
    int j, k = 0;
    firn_nbr_cursor c = firn_nbr_cursor_for(&P->nb, G, i, x);
    while (firn_nbr_next(&c, &P->nb, G, s.x, s.n, i, x, &j, &d, &r)) {
        div += P->vol * firn_dot(firn_sub(v, firn_load3(s.v, s.n, j)), firn_sph_grad_w(P, d, r));
        k++;
    }
    firn_sph_wall w = firn_sph_walls(P, x);
    *count = k + (int)(w.psi * P->full_count + 0.5f);
    return div + firn_dot(v, w.grad);
}

/* DFSPH divergence source: the compression rate, clamped to >= 0 (only
 * compression is corrected) and 0 for particles with fewer than 20
 * neighbours (near a free surface the sum is incomplete). */
static inline FIRN_HD void firn_sph_df_div_source(int i, const firn_sph_params *P,
                                                  firn_sph_particles s, firn_nbr_grid G)
{
    int count;
    float d = firn_maxf(firn_sph_divergence(i, P, s, G, &count), 0.0f);
    s.drho[i] = count < 20 ? 0.0f : d;
}

/* The share of a density excess a DFSPH substep dt removes: all of it,
 * but 2 dt / tau for a substep shorter than half the liquid's own CFL step
 * tau (another solver's limit, or a fixed time.dt, set it). The solve removes the excess it
 * targets within the substep, so a velocity of about excess x h / dt; a
 * pool at rest, whose lattice sums 0.4 % over rho0, took 35 J of kinetic
 * energy in 2 ms at dt = 5e-5 s, 0.1 J at its own step (docs/PHYSICS.md,
 * 5.5). Removed over tau / 2 instead, the excess leaves as the liquid alone
 * would remove it, whatever the substep. */
static inline FIRN_HD float firn_sph_df_excess_share(const firn_sph_params *P)
{
    return 2.0f * P->dt < P->tau ? 2.0f * P->dt / P->tau : 1.0f;
}

/* DFSPH density source: the predicted density ratio
 * rho_i / rho0 + dt sum_j V v_ij . grad W_ij, at least 1, the excess of
 * rho_i / rho0 over 1 taken at firn_sph_df_excess_share; 1 (no correction)
 * for a particle with fewer than 10 neighbours (a corner, a droplet), whose
 * kernel sum is too incomplete to correct: solved, it drove a corner
 * particle of a deep column to 390 m/s. */
static inline FIRN_HD void firn_sph_df_density_source(int i, const firn_sph_params *P,
                                                      const firn_sph_material *mats,
                                                      firn_sph_particles s, firn_nbr_grid G)
{
    int count;
    float div = firn_sph_divergence(i, P, s, G, &count);
    float ratio = s.rho[i] / mats[s.mat[i]].rho0;
    const float share = firn_sph_df_excess_share(P);
    if (ratio > 1.0f && share < 1.0f)
        ratio = 1.0f + (ratio - 1.0f) * share;
    s.drho[i] = count < 10 ? 1.0f : firn_maxf(ratio + P->dt * div, 1.0f);
}

/* One Jacobi iteration of a DFSPH solve for particle i: with
 * kappa = source alpha scale (divergence: source d, scale 1; density:
 * source (ratio - 1), scale 1 / dt^2),
 * v_i += step (sum_j (kappa_i + kappa_j) V grad W_ij + kappa_i grad_walls),
 * skipping pairs with |kappa_i + kappa_j| <= 1e-5 (step 1 for the
 * divergence solve, dt for the density solve). The density solve
 * accumulates p_i -= kappa_i rho0_i. */
static inline FIRN_HD float firn_sph_df_kappa(int i, const firn_sph_params *P, firn_sph_particles s,
                                              int density)
{
    return density ? (s.drho[i] - 1.0f) * s.alpha[i] / (P->dt * P->dt) : s.drho[i] * s.alpha[i];
}

static inline FIRN_HD void firn_sph_df_iterate(int i, const firn_sph_params *P,
                                               const firn_sph_material *mats, firn_sph_particles s,
                                               firn_nbr_grid G, int density)
{
    firn_vec3 x = firn_load3(s.x, s.n, i), dv = firn_v3(0.0f, 0.0f, 0.0f), d;
    float ki = firn_sph_df_kappa(i, P, s, density), r;
    int j;
    firn_nbr_cursor c = firn_nbr_cursor_for(&P->nb, G, i, x);
    while (firn_nbr_next(&c, &P->nb, G, s.x, s.n, i, x, &j, &d, &r)) {
        float k = ki + firn_sph_df_kappa(j, P, s, density);
        if (fabsf(k) > 1e-5f)
            dv = firn_add(dv, firn_scale(firn_sph_grad_w(P, d, r), k * P->vol));
    }
    dv = firn_add(dv, firn_scale(firn_sph_walls(P, x).grad, ki));
    const float step = density ? P->dt : 1.0f;
    firn_store3(s.v, s.n, i, firn_add(firn_load3(s.v, s.n, i), firn_scale(dv, step)));
    if (density)
        s.p[i] -= ki * mats[s.mat[i]].rho0;
}

/* One particle's term of the error a DFSPH solve compares with its
 * tolerance: divergence, d [1/s]; density, ratio - 1 [-]. The solve stops
 * when the mean over the particles is at most div_tol / dt or dens_tol. */
static inline FIRN_HD float firn_sph_df_error(int i, firn_sph_particles s, int density)
{
    return density ? s.drho[i] - 1.0f : s.drho[i];
}

static inline FIRN_HD float firn_sph_df_threshold(const firn_sph_params *P, int density)
{
    return density ? P->dens_tol : P->div_tol / P->dt;
}

/* Position step and the SPH box: x += dt v, then per axis a particle at or
 * beyond a face and moving out loses that velocity component (restitution
 * 0, no friction) and is put back on the face. */
static inline FIRN_HD void firn_sph_advect(int i, const firn_sph_params *P, firn_sph_particles s)
{
    firn_vec3 x = firn_load3(s.x, s.n, i), v = firn_load3(s.v, s.n, i);
    x = firn_add(x, firn_scale(v, P->dt));
    for (int a = 0; a < 3; a++) {
        if (x.v[a] >= P->upper[a] && v.v[a] >= 0.0f)
            v.v[a] = 0.0f;
        else if (x.v[a] <= P->lower[a] && v.v[a] <= 0.0f)
            v.v[a] = 0.0f;
        x.v[a] = firn_clampf(x.v[a], P->lower[a], P->upper[a]);
    }
    firn_store3(s.x, s.n, i, x);
    firn_store3(s.v, s.n, i, v);
}

#endif
