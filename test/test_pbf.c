/* test_pbf.c - the PBD solver's particle passes on the CPU path
 * (include/firn_pbf.h: position based fluids, XSPH viscosity, contact)
 * against references computed here: the kernels' normalisation and
 * gradient, a liquid block at rest in a box (its density error), a free
 * block's momentum and centre of mass against the closed form of gravity,
 * a contact pair against the inverse-mass split of its depth, and
 * determinism across thread counts. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "firn.h"
#include "firn_pbf.h"
#include "mass_family.h"
#include "neighbour.h"
#include "pbd.h"
#include "test_util.h"
#include "world.h"

static firn_world *make(const firn_scene_def *def)
{
    firn_error err;
    firn_world *w = firn_world_create(def, FIRN_BACKEND_CPU, &err);
    cr_assert(w, "%s", err.msg);
    return w;
}

static void substeps(firn_world *w, int n, float dt)
{
    firn_error err;
    cr_assert(firn_world_run_substeps(w, n, dt, &err) == 0, "%s", err.msg);
}

/* A scene with one pbd_liquid box of size s at c (p = 0.01 m), the PBD box
 * [lo, hi], the domain [-1, 1]^3, gravity -9.81 m/s^2 along y. */
static void liquid_scene(firn_scene_def *def, const float s[3], const float c[3], const float lo[3],
                         const float hi[3])
{
    firn_scene_default(def);
    for (int a = 0; a < 3; a++) {
        def->lower[a] = -1.0f, def->upper[a] = 1.0f;
        def->pbd.lower[a] = lo[a], def->pbd.upper[a] = hi[a];
    }
    def->dx = 0.1f; /* the MPM grid is unused */
    def->write_ply = def->write_preview = 0;
    def->n_materials = 1;
    firn_material_default(&def->materials[0], FIRN_MODEL_PBD_LIQUID);
    snprintf(def->materials[0].name, FIRN_NAME_MAX, "water");
    def->n_bodies = 1;
    firn_body_def *b = &def->bodies[0];
    firn_body_default(b);
    b->solver = FIRN_SOLVER_KIND_PBD;
    b->shape.type = FIRN_SHAPE_BOX;
    memcpy(b->shape.size, s, 3 * sizeof(float));
    memcpy(b->shape.center, c, 3 * sizeof(float));
}

/* ---- kernels ------------------------------------------------------------------ */

/* poly6 integrates to k = 1 / (p^3 sum_lattice w) over its support, w the
 * continuum-normalised kernel (4 pi int_0^h W r^2 dr, midpoint rule of
 * 4096 shells: error ~1e-7), which puts a lattice of particles of mass
 * rho0 p^3 at rho0; and the spiky gradient is k times the derivative of
 * the spiky kernel 15 / (pi h^6) (h - r)^3, whose central difference at
 * step 1e-4 h is exact to ~1e-4 relative in float. */
Test(pbf_kernel, poly6_is_normalised_and_spiky_gradient_is_its_kernels_derivative)
{
    firn_pbd_params P;
    memset(&P, 0, sizeof P);
    P.psize = 0.01f;
    for (int a = 0; a < 3; a++)
        P.lower[a] = -1.0f, P.upper[a] = 1.0f;
    firn_pbd_params_kernels(&P);
    const double h = P.nb.h, p = 0.01;
    cr_assert_float_eq(h, 0.025, 1e-8, "support 2.5 p (float rounding)");
    double lattice = 0.0;
    for (int a = -3; a <= 3; a++)
        for (int b = -3; b <= 3; b++)
            for (int c = -3; c <= 3; c++) {
                const double r2 = (a * a + b * b + c * c) * p * p;
                if (r2 < h * h)
                    lattice += 315.0 / (64.0 * M_PI * pow(h, 9)) * pow(h * h - r2, 3);
            }
    const double kn = 1.0 / (lattice * p * p * p);
    cr_expect(fabs(kn - 1.0) < 0.01, "the lattice sum is near the continuum's (k = %.5f)", kn);
    double integral = 0.0;
    const int N = 4096;
    for (int k = 0; k < N; k++) {
        const double r = (k + 0.5) * h / N;
        integral += 4.0 * M_PI * r * r * firn_pbf_w(&P, (float)r) * h / N;
    }
    cr_expect(fabs(integral - kn) < 1e-5, "int W dV = %.8f, k = %.8f", integral, kn);
    cr_expect_eq(firn_pbf_w(&P, (float)h), 0.0f, "W vanishes at the support");
    for (int k = 1; k < 10; k++) {
        const double r = 0.1 * k * h, e = 1e-3 * h;
        const double fd = kn * 15.0 / (M_PI * pow(h, 6)) *
                          (pow(h - (r + e), 3) - pow(h - (r - e), 3)) / (2.0 * e);
        const firn_vec3 g = firn_pbf_grad_w(&P, firn_v3((float)r, 0.0f, 0.0f), (float)r);
        cr_expect(fabs(g.v[0] - fd) <= 1e-4 * fabs(fd) + 1e-6 * P.kg,
                  "r = %.1f h: grad %.6g, derivative %.6g", 0.1 * k, g.v[0], fd);
        cr_expect_eq(g.v[1], 0.0f);
    }
}

/* A liquid particle's mass rho0 p^3 puts its lattice's interior at rest
 * density: an interior particle of a fresh block (3 layers from its
 * surface, beyond the support 2.5 p) has rho = rho0 (to float rounding). */
Test(pbf_kernel, lattice_interior_starts_at_rest_density)
{
    firn_scene_def def;
    liquid_scene(&def, (const float[3]){0.1f, 0.1f, 0.1f}, (const float[3]){0, 0.05f, 0},
                 (const float[3]){-0.5f, 0, -0.5f}, (const float[3]){0.5f, 0.5f, 0.5f});
    def.gravity[1] = 0.0f;
    firn_world *w = make(&def);
    substeps(w, 1, 1e-3f);
    const firn_pbd *S = &w->pbd;
    int interior = 0;
    for (int i = 0; i < S->n; i++) {
        int in = 1;
        for (int a = 0; a < 3; a++) {
            const float x = S->s.x[a * S->n + i], c = a == 1 ? 0.05f : 0.0f;
            in &= fabsf(x - c) < 0.02f;
        }
        if (!in)
            continue;
        interior++;
        cr_expect(fabsf(S->s.rho[i] / 1000.0f - 1.0f) < 1e-5f, "particle %d: rho %g", i,
                  S->s.rho[i]);
    }
    cr_expect_eq(interior, 4 * 4 * 4, "%d interior particles of a 10^3 block", interior);
    firn_world_destroy(w);
}

/* ---- the multiplier ------------------------------------------------------------ */

/* lambda of one particle against its closed form (Macklin and Mueller 2013,
 * eq. 11): three liquid particles on a line at spacing r = 1.2 p, far from
 * the walls, with the rest density lowered to 1/10 of the material's so that
 * C > 0. The middle one sees two gradients of magnitude
 * G = (m / rho0) k_g (1 - r/h)^2 in opposite directions (their sum 0), an
 * end one two in one direction (at r and 2 r):
 *   middle: lambda = -C / (2 G_r^2 + eps)
 *   end:    lambda = -C / ((G_r + G_2r)^2 + G_r^2 + G_2r^2 + eps)
 * with rho = m (W(0) + sum W) and C = rho / rho0 - 1, from the kernels'
 * closed forms here. Float rounding of sums of a few terms: 1e-5 relative.
 * Dropping the square of the gradient sum (the k = i term) changes the end
 * particle's lambda by a factor of ~2 (test/mutations.txt,
 * pbf-lambda-sum-square-dropped). */
Test(pbf_lambda, matches_the_closed_form_on_a_line)
{
    firn_scene_def def;
    const float p = 0.01f, r = 1.2f * p;
    liquid_scene(&def, (const float[3]){3 * p, p, p}, (const float[3]){0, 0.5f, 0},
                 (const float[3]){-0.5f, 0, -0.5f}, (const float[3]){0.5f, 1, 0.5f});
    def.gravity[1] = 0.0f;
    firn_world *w = make(&def);
    firn_pbd *S = &w->pbd;
    cr_assert_eq(S->n, 3);
    for (int i = 0; i < 3; i++)
        S->s.x[i] = (float)(i - 1) * r;
    S->mats[0].rho0 = 100.0f;
    firn_nbr_cpu_build(&S->P.nb, &S->G, S->s.x, S->n, S->cell_count);
    for (int i = 0; i < 3; i++)
        firn_pbf_lambda(i, &S->P, S->mats, S->s, S->G, NULL, 0);
    const double h = S->P.nb.h, m = S->s.mass[0], rho0 = 100.0, kw = S->P.kw, kg = S->P.kg;
    const double eps = S->P.pbf_eps;
#define W6(q) (kw * pow(1.0 - (q) * (q) / (h * h), 3))
#define G(q)  (m / rho0 * kg * (1.0 - (q) / h) * (1.0 - (q) / h))
    const double C_mid = m * (W6(0.0) + 2.0 * W6(r)) / rho0 - 1.0;
    const double C_end = m * (W6(0.0) + W6(r) + W6(2.0 * r)) / rho0 - 1.0;
    const double l_mid = -C_mid / (2.0 * G(r) * G(r) + eps);
    const double l_end =
        -C_end / ((G(r) + G(2 * r)) * (G(r) + G(2 * r)) + G(r) * G(r) + G(2 * r) * G(2 * r) + eps);
#undef W6
#undef G
    cr_log_info("PBF lambda: middle %.6g (closed form %.6g), end %.6g (%.6g) m^2", S->s.lambda[1],
                l_mid, S->s.lambda[0], l_end);
    cr_expect(C_end > 0.1, "the line is compressed (C = %g)", C_end);
    cr_expect(fabs(S->s.lambda[1] - l_mid) < 1e-5 * fabs(l_mid), "middle %g, closed form %g",
              S->s.lambda[1], l_mid);
    for (int i = 0; i < 3; i += 2)
        cr_expect(fabs(S->s.lambda[i] - l_end) < 1e-5 * fabs(l_end), "end %d: %g, closed form %g",
                  i, S->s.lambda[i], l_end);
    firn_world_destroy(w);
}

/* ---- at rest ------------------------------------------------------------------- */

/* A resting pool of footprint L x L and depth H at particle size p, in a
 * PBD box that fits its footprint, run 2 s at the automatic time step
 * (firn_world_next_frame_step: the CFL step with the liquid's hydrostatic
 * bound, docs/PHYSICS.md s6.7). The mass M = N rho0 p^3 at rest density
 * fills the height M / (rho0 L^2) = H; for a column that is compressed
 * by C(z) falling linearly from C0 at the floor to 0 at the surface, twice
 * the centre of mass's height is H (1 - 2 C0 / 3). The step holds C0 to
 * FIRN_PBF_COMPRESSION (0.5 %), so twice the centre must lie within 1 %
 * of H; the estimator's own mean compression below C0. The pool sloshes
 * by about +-0.6 % once its lattice has melted, so the height is the mean
 * over the last 0.5 s (25 frames), not one frame's. The lattice
 * melts into a disordered liquid, which the 2.5 p support reads up to
 * ~0.5 % light; that is inside the 1 % too. */
static void pool(float p, float L, float H)
{
    firn_scene_def def;
    liquid_scene(&def, (const float[3]){L, H, L}, (const float[3]){0, 0.5f * H, 0},
                 (const float[3]){-0.5f * L, 0, -0.5f * L},
                 (const float[3]){0.5f * L, 1, 0.5f * L});
    def.pbd.particle_size = p;
    def.frame_dt = 0.02f;
    firn_world *w = make(&def);
    const firn_pbd *S = &w->pbd;
    firn_error err;
    double t = 0.0, dt_min = 1.0, h_sum = 0.0, h_lo = 1e9, h_hi = -1e9;
    int frames = 0;
    firn_pbd_frame_stats st;
    while (t < 2.0 - 1e-6) {
        float dt;
        int nsub;
        cr_assert(firn_world_next_frame_step(w, &dt, &nsub, &err) == 0, "%s", err.msg);
        substeps(w, nsub, dt);
        t += nsub * (double)dt;
        dt_min = fmin(dt_min, dt);
        if (t > 1.5 - 1e-6) {
            firn_pbd_stats(S, &st);
            const double hf = 2.0 * st.center_of_mass[1];
            h_sum += hf, h_lo = fmin(h_lo, hf), h_hi = fmax(h_hi, hf), frames++;
        }
    }
    firn_pbd_stats(S, &st);
    const double H0 = st.mass / (1000.0 * L * L), h = h_sum / frames;
    cr_log_info("PBF pool: 2 y_com over the last 0.5 s from %.5f to %.5f m", h_lo, h_hi);
    cr_log_info("PBF pool p %g m, %g x %g x %g m (%d particles): 2 y_com %.5f m against "
                "M / (rho0 A) %.5f m (%+.3f %%), mean compression %.3f %%, dt >= %.3g ms",
                p, L, L, H, S->n, h, H0, 100.0 * (h / H0 - 1.0), 100.0 * st.density_error,
                1e3 * dt_min);
    cr_expect(fabs(H0 / H - 1.0) < 1e-5, "the lattice fills H: M / (rho0 A) = %g", H0);
    cr_expect(fabs(h / H0 - 1.0) < 0.01, "2 y_com %g m against %g m", h, H0);
    cr_expect_lt(st.density_error, FIRN_PBF_COMPRESSION, "mean compression %g", st.density_error);
    firn_world_destroy(w);
}

Test(pbf_rest, pools_keep_their_height_at_the_automatic_step, .timeout = 900)
{
    pool(0.02f, 0.12f, 0.2f);  /* 6 x 10 x 6 */
    pool(0.02f, 0.16f, 0.16f); /* 8 x 8 x 8 */
    pool(0.01f, 0.06f, 0.06f); /* 6 x 6 x 6 */
}

/* ---- momentum under gravity ------------------------------------------------------- */

static uint64_t rng_state;
static float frand(float lo, float hi)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (float)(rng_state >> 40) / 16777216.0f;
}

/* A 0.08 m block (8^3 particles) squeezed to 0.8 of its spacing (every
 * constraint active, C ~ 0.7) with random velocities up to 0.5 m/s, falling
 * freely in a box it never reaches. Every pass's corrections are pairwise
 * equal and opposite between particles of one mass (g_ji = -g_ij, the
 * viscosity's weights symmetric), so the block's momentum is the closed
 * form P0 + M g t and its centre follows the discrete integrator,
 * c0 + k dt P0 / M + g dt^2 k (k + 1) / 2, while the block expands (at up
 * to 5 m/s). In float each substep's velocity (x - x0) / dt carries the
 * rounding of the position, u (half an ulp of the largest coordinate), over
 * dt, and the next substep moves by it: after K substeps a velocity is off
 * by at most K u / dt and a position by K^2 u / 2, the bounds of
 * pbd_fall's free particles; particles of a block share their rounding's
 * sign often enough that the sum reaches a tenth of the bound. A pass
 * that does not give equal and opposite corrections (one particle's
 * lambda for the pair's) breaks it: 3.0e-3 kg m/s against the bound
 * 1.2e-3 (test/mutations.txt, pbf-lambda-j-dropped). */
static void squeezed_block(firn_world *w, uint64_t seed)
{
    firn_pbd *S = &w->pbd;
    const int n = S->n;
    rng_state = seed;
    for (int i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            const float c = a == 1 ? 0.2f : 0.0f;
            S->s.x[a * n + i] = c + 0.8f * (S->s.x[a * n + i] - c);
            S->s.x0[a * n + i] = S->s.x[a * n + i];
            S->s.v[a * n + i] = frand(-0.5f, 0.5f);
        }
}

Test(pbf_momentum, free_block_keeps_the_closed_form_of_gravity, .timeout = 120)
{
    firn_scene_def def;
    liquid_scene(&def, (const float[3]){0.08f, 0.08f, 0.08f}, (const float[3]){0, 0.2f, 0},
                 (const float[3]){-1, -1, -1}, (const float[3]){1, 1, 1});
    float vmax = 0.0f;
    def.materials[0].viscosity_relaxation = 0.1f; /* make the viscosity pass count */
    firn_world *w = make(&def);
    squeezed_block(w, 0x5eedULL);
    const firn_pbd *S = &w->pbd;
    const int n = S->n, K = 100;
    const float dt = 1e-3f;
    cr_assert_eq(n, 512);
    firn_pbd_frame_stats s0, s1;
    firn_pbd_stats(S, &s0);
    substeps(w, 1, dt);
    firn_pbd_stats(S, &s1);
    const double first_error = s1.density_error;
    firn_pbd_stats(S, &s0); /* after the first substep, whose v is x - x0 over dt */
    double p0[3], c0[3];
    for (int a = 0; a < 3; a++)
        p0[a] = s0.momentum[a], c0[a] = s0.center_of_mass[a];
    for (int k = 0; k < K; k++) {
        substeps(w, 1, dt);
        for (int i = 0; i < n; i++)
            vmax = fmaxf(vmax, firn_norm(firn_load3(S->s.v, n, i)));
    }
    firn_pbd_stats(S, &s1);
    double xmax = 0.0;
    for (int a = 0; a < 3; a++)
        xmax = fmax(xmax, fmax(fabs(s1.bbox_lower[a]), fabs(s1.bbox_upper[a])));
    /* Half an ulp of the largest coordinate, the rounding of a position. */
    const double u = 6e-8 * xmax;
    const double M = s1.mass, g[3] = {0.0, -9.81, 0.0};
    double worst_p = 0.0, worst_c = 0.0;
    for (int a = 0; a < 3; a++) {
        const double p = p0[a] + M * g[a] * K * dt;
        const double c = c0[a] + K * dt * p0[a] / M + g[a] * dt * dt * K * (K + 1) / 2.0;
        worst_p = fmax(worst_p, fabs(s1.momentum[a] - p));
        worst_c = fmax(worst_c, fabs(s1.center_of_mass[a] - c));
    }
    cr_log_info("PBF free fall: |P - closed form| %.3g kg m/s (M %.4g kg, bound %.3g), "
                "|c - closed form| %.3g m (bound %.3g); compression %.3f -> %.4f, |v| <= %.3g m/s",
                worst_p, M, M * K * u / dt, worst_c, K * K * u / 2.0, first_error, s1.density_error,
                vmax);
    cr_expect_gt(first_error, 0.3, "the squeezed block is compressed (%g)", first_error);
    cr_expect_lt(s1.density_error, 0.2 * first_error, "the constraint expanded the block");
    cr_expect_lt(vmax, 10.0f, "the block exploded (%g m/s)", vmax);
    cr_expect_lt(worst_p, M * K * u / dt, "momentum off the closed form by %g", worst_p);
    cr_expect_lt(worst_c, K * K * u / 2.0, "centre off the closed form by %g m", worst_c);
    firn_world_destroy(w);
}

/* ---- contact ----------------------------------------------------------------------- */

/* Two single free particles of densities 1000 and 3000 kg/m^3 (masses
 * rho p^3) overlapping at 0.4 p with no gravity: one contact pass moves
 * each by its inverse-mass share of the depth 0.6 p, w_i / (w_1 + w_2),
 * so they end exactly p apart, the heavy one 1/4 of the way, with zero
 * momentum and a still centre of mass. */
Test(pbf_contact, pair_separates_by_inverse_mass_shares)
{
    firn_scene_def def;
    liquid_scene(&def, (const float[3]){0.01f, 0.01f, 0.01f}, (const float[3]){0, 0, 0},
                 (const float[3]){-1, -1, -1}, (const float[3]){1, 1, 1});
    def.gravity[1] = 0.0f;
    def.n_materials = 2;
    firn_material_default(&def.materials[0], FIRN_MODEL_PBD_PARTICLE);
    firn_material_default(&def.materials[1], FIRN_MODEL_PBD_PARTICLE);
    snprintf(def.materials[0].name, FIRN_NAME_MAX, "light");
    snprintf(def.materials[1].name, FIRN_NAME_MAX, "heavy");
    def.materials[1].density = 3000.0f;
    def.n_bodies = 2;
    def.bodies[1] = def.bodies[0];
    def.bodies[1].material = 1;
    def.bodies[1].shape.center[0] = 0.004f;
    firn_world *w = make(&def);
    const firn_pbd *S = &w->pbd;
    cr_assert_eq(S->n, 2);
    substeps(w, 1, 1e-3f);
    const double xa = S->s.x[0], xb = S->s.x[1], p = 0.01, depth = 0.6 * p;
    cr_expect(fabs((xb - xa) - p) < 1e-8, "separation %.9g m", xb - xa);
    cr_expect(fabs(xa - (0.0 - 0.75 * depth)) < 1e-8, "light particle at %.9g", xa);
    cr_expect(fabs(xb - (0.004 + 0.25 * depth)) < 1e-8, "heavy particle at %.9g", xb);
    const double P = S->s.mass[0] * S->s.v[0] + S->s.mass[1] * S->s.v[1];
    cr_expect(fabs(P) < 1e-6 * S->s.mass[1] * fabs(S->s.v[1]), "momentum %g", P);
    cr_expect(S->s.x[S->n] == 0.0f && S->s.x[2 * S->n + 1] == 0.0f, "no motion off the axis");
    firn_world_destroy(w);
}

/* ---- determinism --------------------------------------------------------------------- */

static void run_threads(int threads, float *x, float *v)
{
    firn_scene_def def;
    liquid_scene(&def, (const float[3]){0.08f, 0.08f, 0.08f}, (const float[3]){0, 0.2f, 0},
                 (const float[3]){-0.06f, 0, -0.06f}, (const float[3]){0.06f, 1, 0.06f});
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    firn_world *w = make(&def);
    squeezed_block(w, 0xabcULL);
    substeps(w, 200, 1e-3f);
    omp_set_num_threads(saved);
    memcpy(x, w->pbd.s.x, 3 * (size_t)w->pbd.n * sizeof(float));
    memcpy(v, w->pbd.s.v, 3 * (size_t)w->pbd.n * sizeof(float));
    firn_world_destroy(w);
}

/* A squeezed block splashing onto the floor: bitwise the same state at 1
 * and 2 threads (every pass gathers per particle, in the grid's order). */
Test(pbf_determinism, same_state_at_one_and_two_threads, .timeout = 120)
{
    const size_t n = 512;
    float *x1 = malloc(3 * n * sizeof(float)), *v1 = malloc(3 * n * sizeof(float));
    float *x2 = malloc(3 * n * sizeof(float)), *v2 = malloc(3 * n * sizeof(float));
    run_threads(1, x1, v1);
    run_threads(2, x2, v2);
    cr_expect(!memcmp(x1, x2, 3 * n * sizeof(float)), "positions differ");
    cr_expect(!memcmp(v1, v2, 3 * n * sizeof(float)), "velocities differ");
    free(x1), free(v1), free(x2), free(v2);
}

/* ---- starting mass ------------------------------------------------------------ */

/* Every PBD particle body, liquid or not, starts with its stated mass,
 * density times its shape's exact volume (closed forms and the OBJ's
 * tetrahedra, computed here), within 1 %: the family of test/mass_family.h
 * at p = 0.012 and 0.008 m (exact to float rounding, 1e-6: the mass is
 * shared out over the particles; the whole-layer lattice at Genesis's
 * rest mass lost 2.6 % more than its layers, up to 20 % on these). A
 * liquid body also starts at rest: after a substep without gravity no
 * particle's density exceeds rho0 by more than 1 % (the fitted lattice's
 * kernel sum within 0.4 % of rho0 on these boxes; a curved body's count
 * matched to its volume only in steps of what a shift adds, a column of
 * points, up to 2.6 % on the coarse cylinder; measured at most 0.3 %). */
Test(pbf_mass, every_body_starts_with_density_times_its_volume, .timeout = 120)
{
    const float sizes[2] = {0.012f, 0.008f};
    for (int liquid = 0; liquid < 2; liquid++)
        for (int r = 0; r < 2; r++)
            for (int k = 0; k < MASS_SHAPES; k++) {
                firn_scene_def def;
                liquid_scene(
                    &def, (const float[3]){0.1f, 0.1f, 0.1f}, (const float[3]){0.0f, 0.0f, 0.0f},
                    (const float[3]){-0.5f, -0.5f, -0.5f}, (const float[3]){0.5f, 0.5f, 0.5f});
                if (!liquid)
                    firn_material_default(&def.materials[0], FIRN_MODEL_PBD_PARTICLE);
                def.materials[0].density = 1300.0f;
                def.gravity[1] = 0.0f;
                def.pbd.particle_size = sizes[r];
                const double volume =
                    mass_shape(k, (const float[3]){0.0f, 0.0f, 0.0f}, &def.bodies[0].shape);
                firn_world *w = make(&def);
                substeps(w, 1, 1e-4f);
                firn_pbd_frame_stats st;
                firn_pbd_stats(&w->pbd, &st);
                const double m0 = 1300.0 * volume;
                float worst = 0.0f;
                for (int i = 0; liquid && i < w->pbd.n; i++)
                    worst = fmaxf(worst, w->pbd.s.rho[i] / 1300.0f - 1.0f);
                cr_log_info("PBD %s shape %d, p = %g m: %lld particles, mass %.5g kg, rho V %.5g "
                            "kg (%+.3f %%), rho / rho0 - 1 up to %.4f",
                            liquid ? "liquid" : "particle", k, sizes[r], (long long)w->pbd.n,
                            st.mass, m0, 100.0 * (st.mass / m0 - 1.0), worst);
                cr_expect(fabs(st.mass / m0 - 1.0) <= 0.01,
                          "%s shape %d, p = %g m: mass %.5g kg, rho V = %.5g kg",
                          liquid ? "liquid" : "particle", k, sizes[r], st.mass, m0);
                cr_expect(worst <= 0.01f, "liquid shape %d, p = %g m: rho / rho0 - 1 up to %.4f", k,
                          sizes[r], worst);
                firn_world_destroy(w);
            }
}

/* ---- rigid bodies: buoyancy and the third law ---------------------------------------- */

/* The submerged volume of body b below the plane y = level, from its SDF:
 * the centres of a world-aligned grid of n^3 cells over the cube of side
 * 1.8 a about its centre (a tilted cube of edge a fits), those inside the
 * body each a cell-high slab cut by the plane. *inside gets the body's
 * sampled volume. */
static double sampled_submerged(const firn_rigid *b, float a, double level, double *inside)
{
    const int n = 48;
    const double c = 1.8 * a / n;
    const firn_vec3 com = firn_rigid_pos(b);
    double sub = 0.0, all = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int k = 0; k < n; k++) {
                const firn_vec3 x = firn_add(com, firn_v3((float)((i + 0.5) * c - 0.9 * a),
                                                          (float)((j + 0.5) * c - 0.9 * a),
                                                          (float)((k + 0.5) * c - 0.9 * a)));
                firn_vec3 nrm;
                if (!(firn_sdf_world(&b->shape, com, b->q, x, &nrm) < 0.0f))
                    continue;
                all += 1.0;
                sub += fmin(fmax((level - (x.v[1] - 0.5 * c)) / c, 0.0), 1.0);
            }
    *inside = all * c * c * c;
    return sub * c * c * c;
}

/* A dynamic body of density rho (a box of edge a or a sphere of diameter
 * a, no friction) dropped 5 mm above a pool of pbd_liquid H deep filling
 * the PBD box's L x L cross-section (p the particle size), at the
 * automatic step for T seconds with frames of 0.02 s: the submerged
 * fraction, averaged over the frames of the last 0.4 s, against
 * Archimedes' rho / rho0. The water level is where the cross-section A
 * holds the liquid's volume at rest density, N m / rho0, plus the body's
 * part below it: A level = N m / rho0 + V_sub(level) (fixed point; the
 * body may tilt - a cube of density 0.5 floats stably only on an edge -
 * so V_sub is sampled from its SDF, normalised by its sampled volume). */
static double float_fraction(int sphere, float rho, float p, float a, float L, float H, double T)
{
    firn_scene_def def;
    liquid_scene(&def, (const float[3]){L, H, L}, (const float[3]){0, 0.5f * H, 0},
                 (const float[3]){-0.5f * L, 0, -0.5f * L},
                 (const float[3]){0.5f * L, 1, 0.5f * L});
    def.pbd.particle_size = p;
    def.frame_dt = 0.02f;
    def.materials[0].viscosity_relaxation = 0.1f; /* comes to rest (no part of the balance) */
    def.n_rigids = 1;
    firn_rigid_default(&def.rigids[0]);
    firn_rigid_def *r = &def.rigids[0];
    snprintf(r->name, FIRN_NAME_MAX, "floater");
    r->shape.type = sphere ? FIRN_RSHAPE_SPHERE : FIRN_RSHAPE_BOX;
    r->shape.radius = 0.5f * a;
    r->shape.size[0] = r->shape.size[1] = r->shape.size[2] = a;
    r->shape.center[0] = r->shape.center[2] = 0.0f;
    r->shape.center[1] = H + 0.5f * a + 0.005f;
    r->motion = FIRN_RIGID_DYNAMIC;
    r->density = rho;
    r->friction = 0.0f;
    firn_world *w = make(&def);
    const firn_pbd *S = &w->pbd;
    firn_error err;
    double t = 0.0, sum = 0.0, tilt = 0.0;
    int frames = 0;
    while (t < T - 1e-6) {
        float dt;
        int nsub;
        cr_assert(firn_world_next_frame_step(w, &dt, &nsub, &err) == 0, "%s", err.msg);
        substeps(w, nsub, dt);
        t += nsub * (double)dt;
        if (t < T - 0.4 + 1e-6)
            continue;
        firn_pbd_frame_stats st;
        firn_pbd_stats(S, &st);
        const double V = st.mass / 1000.0, A = (double)L * L;
        double level = V / A, inside = 1.0, sub = 0.0;
        for (int it = 0; it < 40; it++) {
            sub = sampled_submerged(&w->rigids[0], a, level, &inside);
            const double vol = sphere ? M_PI * a * a * a / 6.0 : (double)a * a * a;
            level = (V + sub * vol / inside) / A;
        }
        sum += sub / inside;
        tilt = fmax(tilt, 2.0 * acos(fmin(fabs((double)w->rigids[0].q.q[0]), 1.0)));
        frames++;
    }
    const double f = sum / frames;
    cr_log_info("PBF buoyancy: %s of %g m, density %g, p %g m, %d particles: submerged %.4f "
                "against %.4f (%+.2f %%), tilt up to %.1f deg",
                sphere ? "sphere" : "box", a, rho, p, S->n, f, rho / 1000.0,
                100.0 * (f / (rho / 1000.0) - 1.0), tilt * 180.0 / M_PI);
    firn_world_destroy(w);
    return f;
}

/* A box of density 500 (which tilts onto an edge, as a floating cube of
 * half the water's density must) and a sphere of density 300, 0.1 m, on a
 * 0.24 x 0.24 x 0.12 m pool at p = 0.015 m, 1.6 s: submerged within 5 %
 * of Archimedes. The bound holds the lattice's discreteness (a body's
 * faces fall between particle layers; the submerged fraction of the whole
 * matrix of docs/VALIDATION.md, "PBD liquid buoyancy", was within 2 %)
 * and the last bobbing; without the bodies' ghosts the box floated at
 * 0.66 (+32 %), with ghosts on a bare half-space at 0.43 (-14 %). */
Test(pbf_buoyancy, box_and_sphere_float_at_archimedes_depth, .timeout = 900)
{
    const double box = float_fraction(0, 500.0f, 0.015f, 0.1f, 0.24f, 0.12f, 1.6);
    const double ball = float_fraction(1, 300.0f, 0.015f, 0.1f, 0.24f, 0.12f, 1.6);
    cr_expect(fabs(box / 0.5 - 1.0) < 0.05, "box of density 500: submerged %g", box);
    cr_expect(fabs(ball / 0.3 - 1.0) < 0.05, "sphere of density 300: submerged %g", ball);
}

/* The third law between the liquid and a body: a 0.08 m block of
 * pbd_liquid (8^3 particles of 1 cm) squeezed to 0.9 of its spacing (its
 * density constraint active), its nearest layer 1.4 cm from a dynamic
 * sphere (radius 0.05 m, density 300: within reach of its ghosts from the
 * first substep), thrown at 1 m/s onto it without gravity.
 * Every momentum change of a particle by the body's ghosts
 * (firn_pbf_body_react) and by PBD-rigid goes to the body, which takes it
 * at its next step: the liquid's momentum plus the body's, m v plus its
 * pending impulse (rigid_acc), stays P0 = M v0 to rounding. In float a
 * substep's velocity (x - x0) / dt carries the rounding of a position, u
 * (half an ulp of the largest coordinate), over dt, so after K substeps the
 * liquid's momentum is off by at most M K u / dt (pbf_momentum's bound).
 * Dropping the ghosts' reaction (test/mutations.txt,
 * pbf-body-reaction-dropped) leaves the body the contact's push only. */
Test(pbf_buoyancy, liquid_and_body_keep_their_momentum, .timeout = 120)
{
    firn_scene_def def;
    liquid_scene(&def, (const float[3]){0.08f, 0.08f, 0.08f}, (const float[3]){-0.1f, 0, 0},
                 (const float[3]){-1, -1, -1}, (const float[3]){1, 1, 1});
    def.gravity[1] = 0.0f;
    def.bodies[0].velocity[0] = 1.0f;
    def.n_rigids = 1;
    firn_rigid_default(&def.rigids[0]);
    firn_rigid_def *r = &def.rigids[0];
    snprintf(r->name, FIRN_NAME_MAX, "ball");
    r->shape.type = FIRN_RSHAPE_SPHERE;
    r->shape.radius = 0.05f;
    r->shape.center[0] = r->shape.center[1] = r->shape.center[2] = 0.0f;
    r->motion = FIRN_RIGID_DYNAMIC;
    r->density = 300.0f;
    r->friction = 0.0f;
    firn_world *w = make(&def);
    const firn_pbd *S = &w->pbd;
    const int n = S->n, K = 150;
    const float dt = 1e-3f;
    cr_assert_eq(n, 512);
    for (int i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            const float c = a == 0 ? -0.1f : 0.0f;
            S->s.x[a * n + i] = c + 0.9f * (S->s.x[a * n + i] - c);
            S->s.x0[a * n + i] = S->s.x[a * n + i];
        }
    firn_pbd_frame_stats s0, s1;
    firn_pbd_stats(S, &s0);
    const double M = s0.mass;
    double worst = 0.0, xmax = 0.0, pushed = 0.0;
    for (int k = 0; k < K; k++) {
        substeps(w, 1, dt);
        firn_pbd_stats(S, &s1);
        const firn_rigid *b = &w->rigids[0];
        for (int a = 0; a < 3; a++) {
            const double body = (double)b->mass * b->v[a] + w->rigid_acc[a];
            worst = fmax(worst, fabs(s1.momentum[a] + body - s0.momentum[a]));
            xmax = fmax(xmax, fmax(fabs(s1.bbox_lower[a]), fabs(s1.bbox_upper[a])));
        }
        pushed = fmax(pushed, (double)b->mass * b->v[0] + w->rigid_acc[0]);
    }
    const double u = 6e-8 * xmax, tol = M * K * u / dt;
    cr_log_info("PBF-rigid third law: |P - P0| <= %.3g kg m/s (bound %.3g) of P0 %.4g; "
                "the ball took up to %.4g kg m/s",
                worst, tol, s0.momentum[0], pushed);
    cr_expect_gt(pushed, 0.1 * s0.momentum[0], "the liquid did not reach the ball");
    cr_expect_lt(worst, tol, "momentum off by %g kg m/s", worst);
    firn_world_destroy(w);
}
