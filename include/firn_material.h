/* firn_material.h - constitutive models, written once for host and device.
 *
 * The models work on the SVD of the trial deformation gradient
 * F_tmp = U diag(s) V^T and return the Kirchhoff stress tau. For all models
 * here tau is diagonal in the U basis, tau = U diag(t) U^T, so each model
 * only computes the principal stresses t - except liquid and neo-Hookean
 * elastic, whose stress follows from det F and F F^T without the SVD.
 * Formulas: docs/PHYSICS.md s3. */
#ifndef FIRN_MATERIAL_H
#define FIRN_MATERIAL_H

#include "firn_svd.h"

/* Device-side material constants, derived from firn_material_def. 68 bytes. */
typedef struct {
    int model;     /* firn_model */
    int law;       /* firn_elastic_law */
    float mu;      /* shear modulus [Pa] */
    float lambda;  /* first Lame parameter [Pa] */
    float rho;     /* density [kg/m^3] */
    float theta_c; /* snow */
    float theta_s; /* snow */
    float xi;      /* snow hardening */
    float hmax;    /* snow: cap on the hardening factor; 0 = none */
    float alpha;   /* sand: Drucker-Prager cone coefficient */
    float yield;   /* von Mises yield stress [Pa] */
    float crit;    /* fracture: critical principal strain */
    float rate;    /* fracture: damage per second past crit [1/s] */
    float c2;      /* dilatational wave speed at rest, squared [m^2/s^2] */
    float alpha2;  /* sand mu(I): the cone's coefficient as I -> infinity */
    float i0;      /* sand mu(I): I0 [-]; 0 = the rate-independent cone */
    float inertia; /* sand mu(I): d sqrt(2 rho_s) [kg^(1/2) m^(-1/2)], so that
                      I = inertia dgamma / (dt sqrt(p)) */
} firn_material;

/* FIRN_M_ANY: not a model, but what the *_as functions below take to read
 * the model from the material at run time. A constant model there (a GPU
 * kernel compiled for a scene of one model, kernels/mpm.cu) leaves the
 * other models' branches out of the compiled code. */
enum {
    FIRN_M_ANY = -1,
    FIRN_M_ELASTIC,
    FIRN_M_LIQUID,
    FIRN_M_SNOW,
    FIRN_M_SAND,
    FIRN_M_VON_MISES,
    FIRN_M_FRACTURE
};
#define FIRN_MODELS 6
enum { FIRN_L_COROTATED, FIRN_L_NEOHOOKEAN };
enum { FIRN_C_COMPRESSION, FIRN_C_EXTENSION, FIRN_C_PLANE_STRAIN, FIRN_C_INSCRIBED };

/* Fixed corotated: tau = 2 mu (F - U V^T) F^T + lambda J (J - 1) I. */
static inline FIRN_HD firn_vec3 firn_tau_corotated(float mu, float la, firn_vec3 s, float J)
{
    float p = la * J * (J - 1.0f);
    return firn_v3(2.0f * mu * (s.v[0] - 1.0f) * s.v[0] + p,
                   2.0f * mu * (s.v[1] - 1.0f) * s.v[1] + p,
                   2.0f * mu * (s.v[2] - 1.0f) * s.v[2] + p);
}

/* Neo-Hookean: tau = mu F F^T + (lambda ln J - mu) I. ln J is taken of
 * max(J, 1e-6): an inverted particle gets a large restoring pressure
 * instead of a NaN. */
static inline FIRN_HD float firn_neohookean_p(float mu, float la, float J)
{
    return la * logf(firn_maxf(J, 1e-6f)) - mu;
}

static inline FIRN_HD firn_vec3 firn_tau_neohookean(float mu, float la, firn_vec3 s, float J)
{
    float p = firn_neohookean_p(mu, la, J);
    return firn_v3(mu * s.v[0] * s.v[0] + p, mu * s.v[1] * s.v[1] + p, mu * s.v[2] * s.v[2] + p);
}

/* Hencky (log strain) model used by sand, from the principal log strains
 * eps = ln s: tau = U diag(2 mu eps + lambda sum(eps)) U^T. */
static inline FIRN_HD firn_vec3 firn_tau_hencky(float mu, float la, firn_vec3 eps)
{
    float tr = eps.v[0] + eps.v[1] + eps.v[2];
    return firn_v3(2.0f * mu * eps.v[0] + la * tr, 2.0f * mu * eps.v[1] + la * tr,
                   2.0f * mu * eps.v[2] + la * tr);
}

static inline FIRN_HD firn_vec3 firn_tau_elastic(int law, float mu, float la, firn_vec3 s)
{
    float J = s.v[0] * s.v[1] * s.v[2];
    return law == FIRN_L_NEOHOOKEAN ? firn_tau_neohookean(mu, la, s, J)
                                    : firn_tau_corotated(mu, la, s, J);
}

/* Sand: the Drucker-Prager cone |dev tau| <= -alpha tr(tau) fitted to the
 * Mohr-Coulomb pyramid of friction angle phi, sin(phi) = sphi, as
 * docs/PHYSICS.md s3.6 derives. With sqrt(J2) = k p (p the pressure),
 * alpha = sqrt(2) k / 3:
 *   compression   k = 6 sphi / (sqrt(3) (3 - sphi))    (outer cone)
 *   extension     k = 6 sphi / (sqrt(3) (3 + sphi))
 *   plane strain  k = sphi                              (isochoric flow)
 *   inscribed     k = sqrt(3) sphi / sqrt(3 + sphi^2)
 * `fit` is one of FIRN_C_*. */
static inline FIRN_HD float firn_sand_cone_alpha(float sphi, int fit)
{
    const float r23 = sqrtf(2.0f / 3.0f); /* as before the fits: the default's alpha unchanged */
    switch (fit) {
    case FIRN_C_EXTENSION:
        return r23 * 2.0f * sphi / (3.0f + sphi);
    case FIRN_C_PLANE_STRAIN:
        return sqrtf(2.0f) / 3.0f * sphi;
    case FIRN_C_INSCRIBED:
        return r23 * sphi / sqrtf(3.0f + sphi * sphi);
    default: /* FIRN_C_COMPRESSION */
        return r23 * 2.0f * sphi / (3.0f - sphi);
    }
}

/* The mu(I) friction law (Jop, Forterre and Pouliquen 2006):
 * mu = mu_s + (mu_2 - mu_s) / (I0 / I + 1), mu_s at I = 0, mu_2 as
 * I -> infinity. Linear in mu_s and mu_2, so it holds for the cone's
 * alpha = sqrt(2) mu / 3 as for mu = sqrt(J2) / p. */
static inline FIRN_HD float firn_mu_i(float mu_s, float mu_2, float i0, float I)
{
    return mu_s + (mu_2 - mu_s) / (i0 / I + 1.0f);
}

/* The rate-dependent return onto the mu(I) cone (docs/PHYSICS.md s3.6):
 * given the trial's deviatoric log strain norm ehn and its trace tr < 0,
 * returns the norm of the projected deviatoric log strain subtracted,
 * dgamma >= 0. With B = (3 lambda + 2 mu) / (2 mu) (-tr), the consistency
 * condition is ehn - dgamma = B alpha(I), alpha(I) from alpha (I = 0) to
 * alpha2, I = inertia dgamma / (dt sqrt(p)), p = -(3 lambda + 2 mu) tr / 3;
 * with r = ehn - B alpha (the rate-independent dgamma) and
 * q = i0 dt sqrt(p) / inertia (the dgamma at which I = I0) it is the
 * quadratic dgamma^2 + b dgamma - r q = 0, b = q + B (alpha2 - alpha) - r,
 * whose one positive root is taken without cancellation. The projected
 * norm is then set from mu(I) itself, so the stress lies on the cone of
 * the plastic rate it implies. */
static inline FIRN_HD float firn_sand_mu_i_return(const firn_material *m, float ehn, float tr,
                                                  float dt)
{
    const float B = (3.0f * m->lambda + 2.0f * m->mu) / (2.0f * m->mu) * -tr;
    const float r = ehn - B * m->alpha;
    if (r <= 0.0f) /* inside the static cone */
        return 0.0f;
    const float sp = sqrtf((3.0f * m->lambda + 2.0f * m->mu) / 3.0f * -tr);
    const float q = m->i0 * dt * sp / m->inertia;
    const float b = q + B * (m->alpha2 - m->alpha) - r;
    const float disc = sqrtf(b * b + 4.0f * r * q);
    const float dgamma = b > 0.0f ? 2.0f * r * q / (b + disc) : 0.5f * (disc - b);
    if (dgamma <= 0.0f) /* dt = 0 (I infinite) inside the alpha2 cone */
        return 0.0f;
    const float I = m->inertia * dgamma / (dt * sp);
    return firn_maxf(0.0f, ehn - B * firn_mu_i(m->alpha, m->alpha2, m->i0, I));
}

/* Sand return mapping (Klar et al. 2016, Drucker-Prager in Hencky strain),
 * as in docs/PHYSICS.md s3.6: *vol_log is the log volume correction (the particle's Jp
 * slot; 0 at rest, > 0 after expansion), s is replaced by the
 * projected singular values, and their logarithms (the projected Hencky
 * strain, which the stress needs) are returned. dt [s], the substep, sets
 * the plastic strain rate of the mu(I) rheology; the cone ignores it. */
static inline FIRN_HD firn_vec3 firn_sand_project(const firn_material *m, firn_vec3 *s,
                                                  float *vol_log, float dt)
{
    firn_vec3 e =
        firn_v3(logf(firn_maxf(fabsf(s->v[0]), 1e-4f)), logf(firn_maxf(fabsf(s->v[1]), 1e-4f)),
                logf(firn_maxf(fabsf(s->v[2]), 1e-4f)));
    float tr = e.v[0] + e.v[1] + e.v[2] + *vol_log;
    firn_vec3 eh = firn_sub(e, firn_v3(tr / 3.0f, tr / 3.0f, tr / 3.0f));
    float ehn = firn_norm(eh) + 1e-20f;
    if (tr >= 0.0f) { /* expansion: no tension, the grain separates freely */
        *s = firn_v3(1.0f, 1.0f, 1.0f);
        *vol_log = tr;
        return firn_v3(0.0f, 0.0f, 0.0f);
    }
    *vol_log = 0.0f;
    float k;
    if (m->i0 > 0.0f) {
        k = firn_sand_mu_i_return(m, ehn, tr, dt) / ehn;
    } else {
        float dgamma = ehn + (3.0f * m->lambda + 2.0f * m->mu) / (2.0f * m->mu) * tr * m->alpha;
        k = firn_maxf(0.0f, dgamma) / ehn;
    }
    e = firn_sub(e, firn_scale(eh, k));
    *s = firn_v3(expf(e.v[0]), expf(e.v[1]), expf(e.v[2]));
    return e;
}

/* Von Mises return mapping in log strain; yield stress m->yield. */
static inline FIRN_HD void firn_von_mises_project(const firn_material *m, firn_vec3 *s)
{
    firn_vec3 e = firn_v3(logf(firn_maxf(s->v[0], 0.05f)), logf(firn_maxf(s->v[1], 0.05f)),
                          logf(firn_maxf(s->v[2], 0.05f)));
    float tr = e.v[0] + e.v[1] + e.v[2];
    firn_vec3 eh = firn_sub(e, firn_v3(tr / 3.0f, tr / 3.0f, tr / 3.0f));
    float ehn = firn_norm(eh);
    float dgamma = ehn - m->yield / (2.0f * m->mu);
    if (dgamma > 0.0f)
        e = firn_sub(e, firn_scale(eh, dgamma / ehn));
    *s = firn_v3(expf(e.v[0]), expf(e.v[1]), expf(e.v[2]));
}

/* Snow's hardening factor h = exp(xi (1 - Jp)), capped at hmax when set
 * (mpm88-style codes cap it at 5; Genesis does not cap). */
static inline FIRN_HD float firn_snow_hardening(const firn_material *m, float Jp)
{
    float h = expf(m->xi * (1.0f - Jp));
    return m->hmax > 0.0f ? firn_minf(h, m->hmax) : h;
}

/* Whether a material's stress needs the SVD of F: liquid and neo-Hookean
 * elastic follow from det F and F F^T alone (the SVD is about half of
 * P2G's cost). */
static inline FIRN_HD int firn_needs_svd_as(const firn_material *m, int model)
{
    model = model == FIRN_M_ANY ? m->model : model;
    return !(model == FIRN_M_LIQUID || (model == FIRN_M_ELASTIC && m->law == FIRN_L_NEOHOOKEAN));
}

static inline FIRN_HD int firn_needs_svd(const firn_material *m)
{
    return firn_needs_svd_as(m, FIRN_M_ANY);
}

/* The constitutive update of a material that needs no SVD (firn_needs_svd
 * is 0). On entry *F is the trial deformation gradient; on return it is the
 * elastic F the particle keeps; the Kirchhoff stress is returned. */
static inline FIRN_HD firn_mat3 firn_constitutive_direct_as(const firn_material *m, int model,
                                                            firn_mat3 *F)
{
    if ((model == FIRN_M_ANY ? m->model : model) == FIRN_M_LIQUID) {
        /* Weakly compressible, inviscid: only the volume ratio is kept. An
         * inverted or crushed particle (J < 0.01: 1% of its volume, far past
         * anything a liquid reaches) is reset to J = 0.01, so the pressure
         * keeps the sign that pushes it back open instead of locking the
         * inversion in; the push is weak there (the Kirchhoff pressure
         * lambda J (J - 1) is 1/25 of its peak at J = 0.5), the particle's
         * neighbours do the rest. */
        float J = firn_m3_det(*F);
        J = J < 0.01f ? 0.01f : J; /* a NaN stays NaN, for G2P to report */
        float c = cbrtf(J);
        *F = firn_m3_diag(c, c, c);
        float p = m->lambda * J * (J - 1.0f);
        return firn_m3_diag(p, p, p);
    }
    /* Neo-Hookean: tau = mu F F^T + (lambda ln J - mu) I, as
     * firn_tau_neohookean. */
    float p = firn_neohookean_p(m->mu, m->lambda, firn_m3_det(*F));
    firn_mat3 tau = firn_m3_mul_bt(*F, *F);
    for (int c = 0; c < 9; c++)
        tau.m[c] *= m->mu;
    tau.m[0] += p;
    tau.m[4] += p;
    tau.m[8] += p;
    return tau;
}

static inline FIRN_HD firn_mat3 firn_constitutive_direct(const firn_material *m, firn_mat3 *F)
{
    return firn_constitutive_direct_as(m, FIRN_M_ANY, F);
}

/* U diag(t) U^T, symmetric: six entries computed. */
static inline FIRN_HD firn_mat3 firn_m3_utu(firn_mat3 U, firn_vec3 t)
{
    firn_mat3 r;
    for (int i = 0; i < 3; i++)
        for (int j = i; j < 3; j++)
            r.m[3 * i + j] = r.m[3 * j + i] = U.m[3 * i + 0] * t.v[0] * U.m[3 * j + 0] +
                                              U.m[3 * i + 1] * t.v[1] * U.m[3 * j + 1] +
                                              U.m[3 * i + 2] * t.v[2] * U.m[3 * j + 2];
    return r;
}

/* The constitutive update of a material that needs the SVD, given the SVD
 * F = U diag(s) V^T of the trial deformation gradient *F and the substep dt
 * [s] (rate-dependent sand). On return *F is the elastic F the particle
 * keeps, *Jp and *dmg are updated, and the Kirchhoff stress is returned. */
static inline FIRN_HD firn_mat3 firn_constitutive_svd_as(const firn_material *m, int model,
                                                         firn_mat3 *F, float *Jp, float *dmg,
                                                         firn_mat3 U, firn_vec3 s, firn_mat3 V,
                                                         float dt)
{
    firn_vec3 t;
    float J = s.v[0] * s.v[1] * s.v[2];
    switch (model == FIRN_M_ANY ? m->model : model) {
    case FIRN_M_SNOW: {
        /* Stomakhin et al. 2013. Hardening from the previous Jp; the volume
         * term uses the pre-clamp J (Genesis's choice). The clamp makes all
         * singular values positive, so an inverted trial F (J < 0) leaves
         * as a proper one: its volume ratio enters as |J|, which keeps Jp
         * positive. */
        J = fabsf(J);
        float h = firn_snow_hardening(m, *Jp);
        float mu = m->mu * h, la = m->lambda * h;
        firn_vec3 sc;
        for (int d = 0; d < 3; d++)
            sc.v[d] = firn_clampf(s.v[d], 1.0f - m->theta_c, 1.0f + m->theta_s);
        *Jp *= J / (sc.v[0] * sc.v[1] * sc.v[2]);
        *F = firn_m3_usv(U, sc, V);
        float p = la * J * (J - 1.0f);
        for (int d = 0; d < 3; d++)
            t.v[d] = 2.0f * mu * (sc.v[d] - 1.0f) * sc.v[d] + p;
        break;
    }
    case FIRN_M_SAND:
        t = firn_tau_hencky(m->mu, m->lambda, firn_sand_project(m, &s, Jp, dt));
        *F = firn_m3_usv(U, s, V);
        break;
    case FIRN_M_VON_MISES:
        firn_von_mises_project(m, &s);
        *F = firn_m3_usv(U, s, V);
        t = firn_tau_elastic(m->law, m->mu, m->lambda, s);
        break;
    case FIRN_M_FRACTURE: {
        /* Damage grows at rate per second while the largest principal
         * strain exceeds crit (so the time to break does not depend on the
         * substep); only tensile principal stresses are weakened, so
         * broken pieces still push on each other. */
        if (s.v[0] - 1.0f > m->crit)
            *dmg = firn_minf(1.0f, *dmg + m->rate * dt);
        t = firn_tau_elastic(m->law, m->mu, m->lambda, s);
        for (int d = 0; d < 3; d++)
            if (t.v[d] > 0.0f)
                t.v[d] *= 1.0f - *dmg;
        break;
    }
    default: /* FIRN_M_ELASTIC, fixed corotated: F = F_tmp */
        t = firn_tau_corotated(m->mu, m->lambda, s, J);
        break;
    }
    return firn_m3_utu(U, t);
}

static inline FIRN_HD firn_mat3 firn_constitutive_svd(const firn_material *m, firn_mat3 *F,
                                                      float *Jp, float *dmg, firn_mat3 U,
                                                      firn_vec3 s, firn_mat3 V, float dt)
{
    return firn_constitutive_svd_as(m, FIRN_M_ANY, F, Jp, dmg, U, s, V, dt);
}

/* The constitutive update of one particle over a substep dt [s]. On entry
 * *F is the trial deformation gradient; on return it is the elastic F the
 * particle keeps, *Jp and *dmg are updated, and the Kirchhoff stress is
 * returned. `model`: the material's model, or FIRN_M_ANY to read it from m.
 * The SVD is firn_svd3_eig's (the eigen-solve of F F^T), as the CPU's
 * batched path computes it (firn_svd3_eig_batch, host/svd_batch.c). */
static inline FIRN_HD firn_mat3 firn_constitutive_as(const firn_material *m, int model,
                                                     firn_mat3 *F, float *Jp, float *dmg, float dt)
{
    if (!firn_needs_svd_as(m, model))
        return firn_constitutive_direct_as(m, model, F);
    firn_mat3 U, V;
    firn_vec3 s;
    firn_svd3_eig(*F, &U, &s, &V);
    return firn_constitutive_svd_as(m, model, F, Jp, dmg, U, s, V, dt);
}

static inline FIRN_HD firn_mat3 firn_constitutive(const firn_material *m, firn_mat3 *F, float *Jp,
                                                  float *dmg, float dt)
{
    return firn_constitutive_as(m, FIRN_M_ANY, F, Jp, dmg, dt);
}

/* Wave speed factor: snow hardens by h = exp(xi (1 - Jp)), which scales both
 * moduli and so the wave speed by sqrt(h). */
static inline FIRN_HD float firn_stiffness_factor(const firn_material *m, float Jp)
{
    return m->model == FIRN_M_SNOW ? firn_snow_hardening(m, Jp) : 1.0f;
}

/* A particle's squared signal speed for the CFL step: its material's wave
 * speed at rest, snow's scaled by its hardening - never below the rest
 * value, so that stretched snow does not lengthen the step. */
static inline FIRN_HD float firn_wave_speed2(const firn_material *m, float Jp)
{
    return m->c2 * firn_maxf(firn_stiffness_factor(m, Jp), 1.0f);
}

#endif
