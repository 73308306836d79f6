/* firn_fem.h - finite elements on linear tetrahedra: one body per element
 * or per vertex for each pass of the FEM substep, shared by the CPU path
 * (host/fem_cpu.c) and the CUDA kernels. docs/PHYSICS.md, FEM section.
 *
 * A tet's vertices x0..x3 are positively oriented (det D > 0 below). Its
 * deformation gradient is F = D Dm^-1, with D = [x1 - x0, x2 - x0, x3 - x0]
 * now and Dm the same at rest; B = Dm^-1 and the rest volume V = det Dm / 6
 * are computed once. For first Piola-Kirchhoff stress P(F) the elastic
 * forces on vertices 1..3 are the columns of H = -V P B^T and the force on
 * vertex 0 is minus their sum (Sifakis and Barbic 2012, "FEM simulation of
 * 3D deformable solids", s4.1).
 *
 * Forces are gathered, not scattered: each element writes its 4 vertex
 * forces to its own slots, and each vertex sums the slots of its elements
 * through an adjacency list, in a fixed order. The sum is therefore the
 * same for any thread count, on the CPU and on the GPU, with no atomics. */
#ifndef FIRN_FEM_H
#define FIRN_FEM_H

#include "firn_mpm.h"
#include "firn_svd.h"

/* Constitutive models (docs/PHYSICS.md, FEM). */
typedef enum {
    FIRN_FEM_LINEAR = 0,       /* small-strain linear elasticity (Genesis's default) */
    FIRN_FEM_COROTATED,        /* linear elasticity in the element's rotated frame */
    FIRN_FEM_STABLE_NEOHOOKEAN /* Smith, de Goes and Kim 2018 */
} firn_fem_model;

/* One FEM material. mu and lambda are the Lame parameters of E and nu for
 * every model: the stable Neo-Hookean reparametrisation is done inside
 * firn_fem_stress, so that all three agree at small strain. 16 bytes. */
typedef struct {
    int model;    /* firn_fem_model */
    float mu;     /* E / (2 (1 + nu)) [Pa] */
    float lambda; /* E nu / ((1 + nu)(1 - 2 nu)) [Pa] */
    float rho;    /* density [kg/m^3] */
} firn_fem_material;

/* FEM vertex state, structure of arrays, component-major like MPM's
 * (component c of vertex i at [c*n + i]). 4 (3+3+3+1+3) + 4 + 1 = 57 bytes
 * per vertex, plus 4 per adjacency entry. */
typedef struct {
    int n;
    float *x;       /* 3n positions [m] */
    float *v;       /* 3n velocities [m/s] */
    float *x0;      /* 3n positions at the start of the substep [m] */
    float *mass;    /* n lumped masses, sum over its tets of rho V / 4 [kg] */
    float *f;       /* 3n elastic forces of the current substep [N] */
    int *adj_start; /* n + 1: vertex i's slots are adj[adj_start[i] .. adj_start[i + 1]) */
    uint8_t *fixed; /* n: 1 = Dirichlet (never moves, v = 0) */
    int *adj;       /* 4 ne slots: 4 e + k for vertex k of tet e, ascending per vertex */
} firn_fem_vertices;

/* FEM elements, structure of arrays. 4 (4 + 9 + 1 + 12) + 1 = 105 bytes per
 * element. */
typedef struct {
    int n;
    int *v;       /* 4n vertex indices, element-major (v[4e + k]) */
    float *B;     /* 9n: Dm^-1, entry r,c of element e at B[(3r + c) n + e] [1/m] */
    float *vol;   /* n rest volumes [m^3] */
    uint8_t *mat; /* n material index into the solver's materials */
    float *fslot; /* 12n: per-element vertex forces, slot s = 4e + k at [c * 4n + s] [N] */
} firn_fem_elements;

/* ---- rest state --------------------------------------------------------- */

/* Dm^-1 and the rest volume of a tet with vertices x[0..3]. Returns 0, or
 * -1 when det Dm <= 0 (degenerate or inverted: firn_tet_mesh_finish refuses
 * those first). */
static inline FIRN_HD int firn_fem_rest(const firn_vec3 x[4], firn_mat3 *B, float *vol)
{
    firn_mat3 D;
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 3; r++)
            D.m[3 * r + c] = x[c + 1].v[r] - x[0].v[r];
    const float det = firn_m3_det(D);
    if (!(det > 0.0f))
        return -1;
    const float *m = D.m;
    const float inv = 1.0f / det;
    B->m[0] = (m[4] * m[8] - m[5] * m[7]) * inv;
    B->m[1] = (m[2] * m[7] - m[1] * m[8]) * inv;
    B->m[2] = (m[1] * m[5] - m[2] * m[4]) * inv;
    B->m[3] = (m[5] * m[6] - m[3] * m[8]) * inv;
    B->m[4] = (m[0] * m[8] - m[2] * m[6]) * inv;
    B->m[5] = (m[2] * m[3] - m[0] * m[5]) * inv;
    B->m[6] = (m[3] * m[7] - m[4] * m[6]) * inv;
    B->m[7] = (m[1] * m[6] - m[0] * m[7]) * inv;
    B->m[8] = (m[0] * m[4] - m[1] * m[3]) * inv;
    *vol = det / 6.0f;
    return 0;
}

static inline FIRN_HD firn_mat3 firn_fem_load_B(const firn_fem_elements *E, int e)
{
    firn_mat3 B;
    for (int k = 0; k < 9; k++)
        B.m[k] = E->B[firn_soa_index(k, E->n, e)];
    return B;
}

/* F = D B from the positions x (component-major, n vertices). */
static inline FIRN_HD firn_mat3 firn_fem_F(const firn_fem_elements *E, const float *x, int n, int e)
{
    const int *t = E->v + 4 * e;
    const firn_vec3 x0 = firn_load3(x, n, t[0]);
    firn_mat3 D;
    for (int c = 0; c < 3; c++) {
        const firn_vec3 d = firn_sub(firn_load3(x, n, t[c + 1]), x0);
        for (int r = 0; r < 3; r++)
            D.m[3 * r + c] = d.v[r];
    }
    return firn_m3_mul(D, firn_fem_load_B(E, e));
}

/* ---- constitutive models ------------------------------------------------ */

/* The rotation R of the polar decomposition F = R S (det R = +1; an
 * inverted element's reflection goes into S's smallest singular value). */
static inline FIRN_HD firn_mat3 firn_fem_rotation(firn_mat3 F)
{
    firn_mat3 U, V;
    firn_vec3 s;
    firn_svd3(F, &U, &s, &V);
    firn_mat3 R = firn_m3_mul_bt(U, V);
    if (firn_m3_det(R) < 0.0f) {
        for (int r = 0; r < 3; r++)
            U.m[3 * r + 2] = -U.m[3 * r + 2];
        R = firn_m3_mul_bt(U, V);
    }
    return R;
}

/* First Piola-Kirchhoff stress P(F) [Pa].
 *  linear:     P = mu (F + F^T - 2 I) + lambda tr(F - I) I
 *  corotated:  P = 2 mu (F - R) + lambda tr(R^T F - I) R
 *  stable Neo-Hookean (Smith et al. 2018, eq. 18 with their s3.4 Lame
 *  matching): mu' = 4/3 mu, lambda' = lambda + 5/6 mu, alpha = 1 +
 *  3/4 mu' / lambda'; P = mu' (1 - 1 / (I_C + 1)) F + lambda' (J - alpha)
 *  dJ/dF, I_C = |F|^2, dJ/dF = cof F. At F = I every model gives P = 0,
 *  and the three agree to first order in F - I. */
static inline FIRN_HD firn_mat3 firn_fem_stress(const firn_fem_material *m, firn_mat3 F)
{
    firn_mat3 P;
    if (m->model == FIRN_FEM_COROTATED) {
        const firn_mat3 R = firn_fem_rotation(F);
        const firn_mat3 S = firn_m3_mul(firn_m3_transpose(R), F);
        const float tr = S.m[0] + S.m[4] + S.m[8] - 3.0f;
        for (int k = 0; k < 9; k++)
            P.m[k] = 2.0f * m->mu * (F.m[k] - R.m[k]) + m->lambda * tr * R.m[k];
    } else if (m->model == FIRN_FEM_STABLE_NEOHOOKEAN) {
        const float mu = 4.0f / 3.0f * m->mu, lam = m->lambda + 5.0f / 6.0f * m->mu;
        const float alpha = 1.0f + 0.75f * mu / lam;
        float ic = 0.0f;
        for (int k = 0; k < 9; k++)
            ic += F.m[k] * F.m[k];
        const float *f = F.m;
        /* cof F: row r, column c = dJ/dF_rc */
        firn_mat3 C = {
            {f[4] * f[8] - f[5] * f[7], f[5] * f[6] - f[3] * f[8], f[3] * f[7] - f[4] * f[6],
             f[2] * f[7] - f[1] * f[8], f[0] * f[8] - f[2] * f[6], f[1] * f[6] - f[0] * f[7],
             f[1] * f[5] - f[2] * f[4], f[2] * f[3] - f[0] * f[5], f[0] * f[4] - f[1] * f[3]}};
        const float J = firn_m3_det(F);
        const float a = mu * (1.0f - 1.0f / (ic + 1.0f)), b = lam * (J - alpha);
        for (int k = 0; k < 9; k++)
            P.m[k] = a * F.m[k] + b * C.m[k];
    } else {
        const float tr = F.m[0] + F.m[4] + F.m[8] - 3.0f;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++)
                P.m[3 * r + c] = m->mu * (F.m[3 * r + c] + F.m[3 * c + r]) +
                                 (r == c ? m->lambda * tr - 2.0f * m->mu : 0.0f);
    }
    return P;
}

/* Strain energy density Psi(F) [J/m^3] whose derivative is
 * firn_fem_stress, zero at F = I:
 *  linear:     mu |eps|^2 + lambda/2 tr(eps)^2, eps = (F + F^T)/2 - I
 *  corotated:  mu |F - R|^2 + lambda/2 tr(R^T F - I)^2
 *  stable Neo-Hookean (Smith et al. 2018, eq. 14): mu'/2 (I_C - 3) +
 *  lambda'/2 (J - alpha)^2 - mu'/2 log(I_C + 1), less its value at F = I. */
static inline FIRN_HD float firn_fem_energy(const firn_fem_material *m, firn_mat3 F)
{
    if (m->model == FIRN_FEM_COROTATED) {
        const firn_mat3 R = firn_fem_rotation(F);
        const firn_mat3 S = firn_m3_mul(firn_m3_transpose(R), F);
        const float trs = S.m[0] + S.m[4] + S.m[8] - 3.0f;
        float d2 = 0.0f;
        for (int k = 0; k < 9; k++)
            d2 += (F.m[k] - R.m[k]) * (F.m[k] - R.m[k]);
        return m->mu * d2 + 0.5f * m->lambda * trs * trs;
    }
    if (m->model == FIRN_FEM_STABLE_NEOHOOKEAN) {
        /* In H = F - I, so that float keeps the small strains: x = I_C - 3
         * = 2 tr H + |H|^2, J - 1 = tr H + ((tr H)^2 - tr H^2) / 2 + det H;
         * Psi - Psi(I) = mu'/2 (x - log(1 + x / 4)) + lambda'/2 (J - 1)
         * (J - 1 + 2 (1 - alpha)). */
        const float mu = m->mu * (4.0f / 3.0f), lam = m->lambda + m->mu * (5.0f / 6.0f);
        const float alpha = 1.0f + 0.75f * mu / lam;
        firn_mat3 H = F;
        H.m[0] -= 1.0f, H.m[4] -= 1.0f, H.m[8] -= 1.0f;
        const float tr = H.m[0] + H.m[4] + H.m[8];
        float h2 = 0.0f, trhh = 0.0f;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) {
                h2 += H.m[3 * r + c] * H.m[3 * r + c];
                trhh += H.m[3 * r + c] * H.m[3 * c + r];
            }
        const float x = 2.0f * tr + h2;
        const float jm1 = tr + 0.5f * (tr * tr - trhh) + firn_m3_det(H);
        return 0.5f * mu * (x - log1pf(0.25f * x)) +
               0.5f * lam * jm1 * (jm1 + 2.0f * (1.0f - alpha));
    }
    const float tr = F.m[0] + F.m[4] + F.m[8] - 3.0f;
    float e2 = 0.0f;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            const float e = 0.5f * (F.m[3 * r + c] + F.m[3 * c + r]) - (r == c ? 1.0f : 0.0f);
            e2 += e * e;
        }
    return m->mu * e2 + 0.5f * m->lambda * tr * tr;
}

/* P-wave speed sqrt((lambda + 2 mu) / rho) of a material [m/s], the
 * fastest wave in it at small strain. Stable Neo-Hookean uses its
 * reparametrised moduli mu' = 4/3 mu and lambda' = lambda + 5/6 mu: its
 * tangent stiffness at rest is that of mu and lambda, but it stiffens under
 * compression, and the larger moduli bound that. */
static inline FIRN_HD float firn_fem_wave_speed(const firn_fem_material *m)
{
    float mu = m->mu, lam = m->lambda;
    if (m->model == FIRN_FEM_STABLE_NEOHOOKEAN)
        lam += 5.0f / 6.0f * mu, mu *= 4.0f / 3.0f;
    return sqrtf((lam + 2.0f * mu) / m->rho);
}

/* ---- explicit substep --------------------------------------------------- */

/* What a vertex's substep needs besides its state. The walls are the
 * domain's faces (lower, upper), each with its scene wall type and
 * friction (firn_fem_position). 88 bytes. */
typedef struct {
    float dt;         /* substep [s] */
    float gravity[3]; /* [m/s^2] */
    float damping;    /* fem.damping [1/s] */
    float lower[3], upper[3];
    int wall_type[6]; /* FIRN_W_*, faces x_lower, x_upper, y_lower, ... */
    float wall_friction[6];
} firn_fem_params;

/* Element e's elastic forces on its 4 vertices into its slots: H = -V P
 * B^T, vertex k+1 gets column k of H, vertex 0 minus their sum. */
static inline FIRN_HD void firn_fem_element_forces(int e, const firn_fem_material *mats,
                                                   const firn_fem_elements *E, const float *x,
                                                   int nv)
{
    const firn_mat3 F = firn_fem_F(E, x, nv, e);
    const firn_mat3 P = firn_fem_stress(&mats[E->mat[e]], F);
    const firn_mat3 H = firn_m3_mul_bt(P, firn_fem_load_B(E, e));
    const float s = -E->vol[e];
    const int ns = 4 * E->n;
    float f0[3] = {0.0f, 0.0f, 0.0f};
    for (int k = 0; k < 3; k++)
        for (int r = 0; r < 3; r++) {
            const float fk = s * H.m[3 * r + k];
            E->fslot[firn_soa_index(r, ns, 4 * e + k + 1)] = fk;
            f0[r] -= fk;
        }
    for (int r = 0; r < 3; r++)
        E->fslot[firn_soa_index(r, ns, 4 * e)] = f0[r];
}

/* Vertex i's elastic force: the sum of its slots, in adjacency order. */
static inline FIRN_HD firn_vec3 firn_fem_gather_force(int i, const firn_fem_vertices *V,
                                                      const firn_fem_elements *E)
{
    const int ns = 4 * E->n;
    firn_vec3 f = firn_v3(0.0f, 0.0f, 0.0f);
    for (int a = V->adj_start[i]; a < V->adj_start[i + 1]; a++) {
        const int s = V->adj[a];
        f = firn_add(f, firn_v3(E->fslot[s], E->fslot[firn_soa_index(1, ns, s)],
                                E->fslot[firn_soa_index(2, ns, s)]));
    }
    return f;
}

/* Vertex i's velocity step, after the element forces (docs/PHYSICS.md
 * s7.3): x0 = x, f = its gathered elastic force, then
 * v = (v + dt (f / m + g)) exp(-dt damping). The decay takes the whole
 * update, gravity's share too, so that a body at rest (f / m = -g, v = 0)
 * stays at rest for any damping and substep; Genesis decays the velocity
 * before adding gravity, which at rest asks the elastic force for
 * m g exp(dt damping) and settles the body that much too far. The force is
 * divided by the
 * vertex's lumped mass m (the sum of rho V / 4 over its elements), where
 * Genesis divides each element's share by that element's mass rho V: its
 * acceleration is then not force over mass, and the total momentum that
 * internal forces exchange is not conserved (docs/PHYSICS.md, FEM). A fixed
 * vertex keeps v = 0. */
static inline FIRN_HD void firn_fem_velocity(int i, const firn_fem_params *P,
                                             const firn_fem_vertices *V, const firn_fem_elements *E)
{
    const int n = V->n;
    const firn_vec3 f = firn_fem_gather_force(i, V, E);
    const float decay = expf(-P->dt * P->damping);
    for (int c = 0; c < 3; c++) {
        const long long ci = firn_soa_index(c, n, i);
        V->x0[ci] = V->x[ci];
        V->f[ci] = f.v[c];
        const float v = V->v[ci] + P->dt * (f.v[c] / V->mass[i] + P->gravity[c]);
        V->v[ci] = V->fixed[i] ? 0.0f : v * decay;
    }
}

/* Vertex i's position step, after coupling: x = x0 + dt v; a fixed vertex
 * stays where it is. A vertex past a face of the domain is put back on it
 * and its velocity goes through that face's wall law (firn_wall_apply:
 * separate walls stop the outward component, with Coulomb friction on the
 * tangential one; sticky walls stop it; slip walls stop the normal
 * component). Every vertex is tested, interior ones too (an interior vertex
 * reaches a wall only through an inverted element, and then it must not
 * leave the domain either). Returns 0 when the new x and v are not finite. */
static inline FIRN_HD int firn_fem_position(int i, const firn_fem_params *P,
                                            const firn_fem_vertices *V)
{
    const int n = V->n;
    if (V->fixed[i])
        return 1;
    firn_vec3 x, v = firn_load3(V->v, n, i);
    for (int c = 0; c < 3; c++)
        x.v[c] = V->x0[firn_soa_index(c, n, i)] + P->dt * v.v[c];
    for (int a = 0; a < 3; a++) {
        if (x.v[a] < P->lower[a]) {
            x.v[a] = P->lower[a];
            v = firn_wall_apply(v, a, 1.0f, P->wall_type[2 * a], P->wall_friction[2 * a]);
        } else if (x.v[a] > P->upper[a]) {
            x.v[a] = P->upper[a];
            v = firn_wall_apply(v, a, -1.0f, P->wall_type[2 * a + 1], P->wall_friction[2 * a + 1]);
        }
    }
    int ok = 1;
    for (int c = 0; c < 3; c++) {
        V->x[firn_soa_index(c, n, i)] = x.v[c];
        V->v[firn_soa_index(c, n, i)] = v.v[c];
        ok &= isfinite(x.v[c]) && isfinite(v.v[c]);
    }
    return ok;
}

#endif
