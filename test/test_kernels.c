/* test_kernels.c - the per-particle building blocks: B-spline weights, SVD,
 * constitutive models. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu_simd.h"
#include "firn_mpm.h"
#include "svd_batch.h"

static uint64_t rng_state = 0x1234567ULL;
static float frand(float lo, float hi)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (float)(rng_state >> 40) / 16777216.0f;
}

static firn_mat3 random_matrix(float amp)
{
    firn_mat3 m;
    for (int c = 0; c < 9; c++)
        m.m[c] = frand(-amp, amp);
    return m;
}

static float max_abs_diff(firn_mat3 a, firn_mat3 b)
{
    float e = 0.0f;
    for (int c = 0; c < 9; c++)
        e = fmaxf(e, fabsf(a.m[c] - b.m[c]));
    return e;
}

static float max_abs(firn_mat3 a)
{
    float e = 0.0f;
    for (int c = 0; c < 9; c++)
        e = fmaxf(e, fabsf(a.m[c]));
    return e;
}

static firn_params test_params(void)
{
    firn_params P = {0};
    P.dx = 0.1f;
    P.inv_dx = 10.0f;
    for (int a = 0; a < 3; a++)
        P.n[a] = 32;
    return P;
}

Test(bspline, weights_partition_unity_and_reproduce_linear)
{
    /* sum_o w_o = 1 and sum_o w_o x_o = x for every position: the quadratic
     * B-spline is a partition of unity that reproduces linear functions. */
    firn_params P = test_params();
    for (int t = 0; t < 1000; t++) {
        firn_vec3 x = firn_v3(frand(0.3f, 2.8f), frand(0.3f, 2.8f), frand(0.3f, 2.8f));
        firn_stencil s = firn_make_stencil(&P, x);
        for (int a = 0; a < 3; a++) {
            float sum = 0.0f, lin = 0.0f;
            for (int o = 0; o < 3; o++) {
                sum += s.w[o][a];
                lin += s.w[o][a] * (float)(s.base[a] + o) * P.dx;
                cr_assert(s.w[o][a] >= 0.0f, "negative weight %g", s.w[o][a]);
            }
            cr_assert(fabsf(sum - 1.0f) < 1e-6f, "weights sum to %.9g at x=%g", sum, x.v[a]);
            cr_assert(fabsf(lin - x.v[a]) < 1e-6f * 3.0f, "linear reproduction %.9g vs %.9g", lin,
                      x.v[a]);
            cr_assert(s.fx[a] >= 0.5f - 1e-6f && s.fx[a] < 1.5f + 1e-6f, "fx = %g", s.fx[a]);
        }
    }
}

Test(bspline, stencil_never_leaves_grid)
{
    /* Positions outside the grid clamp the stencil corner into [0, n-3]. */
    firn_params P = test_params();
    firn_stencil s = firn_make_stencil(&P, firn_v3(-5.0f, 100.0f, 0.0f));
    cr_assert_eq(s.base[0], 0);
    cr_assert_eq(s.base[1], 29);
    cr_assert_eq(s.base[2], 0);

    /* Non-finite positions and ones beyond int's range land in the grid too
     * (a blown-up particle is reported, not written outside the grid). */
    s = firn_make_stencil(&P, firn_v3(NAN, INFINITY, -INFINITY));
    cr_assert(s.base[0] == 0 && s.base[1] == 29 && s.base[2] == 0, "%d %d %d", s.base[0], s.base[1],
              s.base[2]);
    s = firn_make_stencil(&P, firn_v3(3e9f, -3e9f, 1e38f));
    cr_assert(s.base[0] == 29 && s.base[1] == 0 && s.base[2] == 29, "%d %d %d", s.base[0],
              s.base[1], s.base[2]);
}

Test(bspline, floor_index_is_the_clamped_floor)
{
    /* floor(t) clamped to [0, hi], against floorf over values around every
     * integer below 40 and over the range's ends. */
    for (int k = -3; k < 40; k++)
        for (int d = -2; d <= 2; d++) {
            float t = nextafterf((float)k, d < 0 ? -INFINITY : INFINITY);
            if (d == 0)
                t = (float)k;
            else if (d == -2 || d == 2)
                t = (float)k + 0.5f * (float)d / 2.0f;
            int want = (int)floorf(t);
            want = want < 0 ? 0 : (want > 29 ? 29 : want);
            cr_assert_eq(firn_floor_index(t, 29), want, "t = %.9g", t);
        }
    cr_assert_eq(firn_floor_index(NAN, 29), 0);
    cr_assert_eq(firn_floor_index(-NAN, 29), 0);
    cr_assert_eq(firn_floor_index(INFINITY, 29), 29);
    cr_assert_eq(firn_floor_index(-INFINITY, 29), 0);
    cr_assert_eq(firn_floor_index(3e9f, 1 << 30), 1 << 30);
    cr_assert_eq(firn_floor_index(16777218.0f, 1 << 30), 16777218);
}

/* Binned P2G's tile (kernels/mpm.cu): 6^3 nodes from its bin's first cell
 * o, holding the stencils whose corner is one of the bin's 4^3 cells. A
 * corner one cell outside them (the bin came from a key whose floor was
 * rounded to the next cell) has no slot: its stencil would reach past the
 * tile. */
Test(tile, slot_only_for_stencils_the_tile_holds)
{
    const int T = 6, o[3] = {8, 4, 12};
    firn_stencil s;
    memset(&s, 0, sizeof s);
    for (int x = 0; x < 4; x++)
        for (int y = 0; y < 4; y++)
            for (int z = 0; z < 4; z++) {
                s.base[0] = o[0] + x, s.base[1] = o[1] + y, s.base[2] = o[2] + z;
                const int t = firn_tile_slot(&s, o, T);
                cr_assert_eq(t, (x * T + y) * T + z, "cell (%d, %d, %d): slot %d", x, y, z, t);
                cr_assert_lt(t + (2 * T + 2) * T + 2, T * T * T, "the stencil leaves the tile");
            }
    for (int a = 0; a < 3; a++)
        for (int d = -1; d <= 4; d += 5) {
            const int cell[3] = {1, 2, 3};
            for (int b = 0; b < 3; b++)
                s.base[b] = o[b] + (b == a ? d : cell[b]);
            cr_assert_eq(firn_tile_slot(&s, o, T), -1,
                         "a corner %d cells from the bin's first along axis %d has a slot", d, a);
        }
    /* G2P2G's tile: 8^3 nodes from a cell below the bin, corners -1 .. 4. */
    const int of[3] = {o[0] - 1, o[1] - 1, o[2] - 1};
    for (int d = -1; d <= 5; d++) {
        s.base[0] = o[0] + d, s.base[1] = o[1], s.base[2] = o[2];
        const int want = d >= -1 && d <= 4 ? ((d + 1) * 8 + 1) * 8 + 1 : -1;
        cr_assert_eq(firn_tile_slot(&s, of, 8), want, "G2P2G's tile, corner %d along x", d);
    }
}

/* firn_stencil_at: with firn_make_stencil's corner it is that stencil to the
 * bit; with the corner one cell lower at a cell face (where another kernel's
 * floor may round the other way) its weights are the quadratic B-spline's at
 * the same nodes, N(x - node) (N(r) = 3/4 - r^2 for |r| < 1/2, (3/2 - |r|)^2 / 2
 * for 1/2 <= |r| < 3/2), evaluated here in double: the particle's
 * contribution does not move. */
Test(stencil, at_a_given_corner_keeps_the_bspline_weights)
{
    firn_params P;
    memset(&P, 0, sizeof P);
    P.inv_dx = 50.0f, P.dx = 0.02f;
    for (int a = 0; a < 3; a++)
        P.n[a] = 64;
    const float xs[] = {0.3137f, 0.51f, 0.7f};
    for (int k = 0; k < 3; k++) {
        const firn_vec3 x = firn_v3(xs[k], xs[(k + 1) % 3], xs[(k + 2) % 3]);
        const firn_stencil m = firn_make_stencil(&P, x);
        const firn_stencil s = firn_stencil_at(&P, x, m.base);
        cr_assert_eq(memcmp(&m, &s, sizeof m), 0, "x %g: not the same stencil", xs[k]);
    }
    /* Where firn_make_stencil's corner changes (x = 24.5 dx: corner 24 with
     * fx 0.5, or 23 with fx 1.5, as a floor rounded down would give). */
    const firn_vec3 x = firn_v3(0.49f, 0.49f, 0.49f);
    const int low[3] = {23, 23, 23};
    const firn_stencil s = firn_stencil_at(&P, x, low);
    for (int o = 0; o < 3; o++) {
        const double r = fabs((double)x.v[0] * 50.0 - (double)(23 + o));
        const double w = r < 0.5 ? 0.75 - r * r : (r < 1.5 ? 0.5 * (1.5 - r) * (1.5 - r) : 0.0);
        cr_assert_float_eq(s.w[o][0], w, 1e-6, "node %d: weight %g, N = %g", 23 + o, s.w[o][0], w);
    }
}

/* n floats of address space, only the pages holding the floats at[] usable
 * (nothing else is committed): for index arithmetic at counts no test
 * machine can hold. */
static float *sparse_floats(size_t n, const long long *at, int n_at)
{
    void *m = mmap(NULL, n * sizeof(float), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    cr_assert_neq(m, MAP_FAILED, "mmap of %zu bytes of address space: %s", n * sizeof(float),
                  strerror(errno));
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (int k = 0; k < n_at; k++) {
        char *p = (char *)m + (size_t)at[k] * sizeof(float) / page * page;
        cr_assert_eq(mprotect(p, page, PROT_READ | PROT_WRITE), 0, "mprotect: %s", strerror(errno));
    }
    return m;
}

/* Component-major offsets c n + i pass 2^31 - 1 long before n does: at
 * 300M particles a matrix's last component is at 2.7e9. firn_soa_index is
 * 64-bit, and firn_load9/firn_store9 and firn_load3/firn_store3 reach the
 * right floats (in int, c n + i would wrap to a negative offset). */
Test(soa, offsets_past_2_31_are_64_bit)
{
    volatile int vn = 300000000; /* not a constant the compiler could fold */
    const int n = vn, i = n - 1;
    cr_assert_eq(firn_soa_index(8, n, i), 2699999999LL);
    cr_assert_eq(firn_soa_index(15, n, i), 4799999999LL); /* ordered P2G's last float */
    cr_assert_eq(firn_soa_index(29, 80000000, 79999999), 2399999999LL); /* implicit FEM's */

    long long at[9];
    for (int c = 0; c < 9; c++)
        at[c] = (long long)c * 300000000 + 299999999;
    float *a = sparse_floats(9 * (size_t)n, at, 9);
    firn_mat3 m;
    for (int c = 0; c < 9; c++)
        m.m[c] = 1.0f + (float)c;
    firn_store9(a, n, i, m);
    for (int c = 0; c < 9; c++)
        cr_assert_eq(a[at[c]], 1.0f + (float)c, "component %d of the last particle", c);
    const firn_mat3 r = firn_load9(a, n, i);
    for (int c = 0; c < 9; c++)
        cr_assert_eq(r.m[c], 1.0f + (float)c, "component %d loaded", c);
    munmap(a, 9 * (size_t)n * sizeof(float));

    vn = 800000000; /* 2 n + i passes 2^31 */
    const int n3 = vn, i3 = n3 - 1;
    long long at3[3];
    for (int c = 0; c < 3; c++)
        at3[c] = (long long)c * 800000000 + 799999999;
    float *b = sparse_floats(3 * (size_t)n3, at3, 3);
    firn_store3(b, n3, i3, firn_v3(1.0f, 2.0f, 3.0f));
    for (int c = 0; c < 3; c++)
        cr_assert_eq(b[at3[c]], 1.0f + (float)c, "component %d of the last vector", c);
    const firn_vec3 v = firn_load3(b, n3, i3);
    cr_assert(v.v[0] == 1.0f && v.v[1] == 2.0f && v.v[2] == 3.0f, "loaded %g %g %g", v.v[0], v.v[1],
              v.v[2]);
    munmap(b, 3 * (size_t)n3 * sizeof(float));
}

/* U diag(s) V^T is an SVD of A with firn_svd3's conventions. */
static void check_svd_result(firn_mat3 A, firn_mat3 U, firn_vec3 s, firn_mat3 V, const char *what)
{
    float scale = fmaxf(max_abs(A), 1e-6f);
    firn_mat3 R = firn_m3_usv(U, s, V);
    cr_assert(max_abs_diff(R, A) <= 2e-5f * scale, "%s: |U S V^T - A| = %g (scale %g)", what,
              max_abs_diff(R, A), scale);
    cr_assert(fabsf(firn_m3_det(U) - 1.0f) < 1e-4f, "%s: det U = %g", what, firn_m3_det(U));
    cr_assert(fabsf(firn_m3_det(V) - 1.0f) < 1e-4f, "%s: det V = %g", what, firn_m3_det(V));
    firn_mat3 I = firn_m3_identity();
    cr_assert(max_abs_diff(firn_m3_mul_bt(U, U), I) < 1e-5f, "%s: U not orthogonal", what);
    cr_assert(max_abs_diff(firn_m3_mul_bt(V, V), I) < 1e-5f, "%s: V not orthogonal", what);
    cr_assert(s.v[0] >= s.v[1] - 1e-6f * scale && s.v[1] >= fabsf(s.v[2]) - 1e-5f * scale,
              "%s: singular values not ordered: %g %g %g", what, s.v[0], s.v[1], s.v[2]);
    cr_assert(s.v[1] >= 0.0f, "%s: s1 = %g < 0", what, s.v[1]);
    float det = firn_m3_det(A);
    if (fabsf(det) > 1e-3f * scale * scale * scale)
        cr_assert((s.v[2] < 0.0f) == (det < 0.0f), "%s: sign of s2 %g vs det %g", what, s.v[2],
                  det);
}

/* Both SVDs: firn_svd3 (Jacobi on A^T A, then QR) and firn_svd3_eig (the
 * eigen-solve of A A^T, then Gram-Schmidt on A^T U), each checked against
 * the definition; where A's singular values are apart by more than float
 * rounding can blur (1e-3 of the largest), the two agree on them. */
static void check_svd(firn_mat3 A, const char *what)
{
    firn_mat3 U, V, Ue, Ve;
    firn_vec3 s, se;
    firn_svd3(A, &U, &s, &V);
    check_svd_result(A, U, s, V, what);
    firn_svd3_eig(A, &Ue, &se, &Ve);
    check_svd_result(A, Ue, se, Ve, what);
    const float scale = fmaxf(max_abs(A), 1e-6f);
    if (s.v[1] > 1e-3f * s.v[0] && fabsf(s.v[2]) > 1e-3f * s.v[0])
        for (int d = 0; d < 3; d++)
            cr_assert(fabsf(se.v[d] - s.v[d]) <= 4e-6f * scale,
                      "%s: singular value %d: %g from A A^T, %g from A^T A", what, d, se.v[d],
                      s.v[d]);
}

/* A random rotation (a normalised random quaternion). */
static firn_mat3 random_rotation(void)
{
    float q[4], n = 0.0f;
    do {
        n = 0.0f;
        for (int k = 0; k < 4; k++) {
            q[k] = frand(-1.0f, 1.0f);
            n += q[k] * q[k];
        }
    } while (n < 1e-2f || n > 1.0f);
    n = sqrtf(n);
    const float w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    firn_mat3 R = {{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                    2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                    2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}};
    return R;
}

/* R1 diag(s) R2^T with known singular values: rotations, stretches near
 * rest, repeated values, near-singular, singular and inverted ones. */
Test(svd, rotated_known_singular_values)
{
    for (int t = 0; t < 4000; t++) {
        const firn_mat3 R1 = random_rotation(), R2 = random_rotation();
        firn_vec3 s;
        switch (t % 8) {
        case 0: /* a rotation */
            s = firn_v3(1.0f, 1.0f, 1.0f);
            break;
        case 1: /* near rest */
            s = firn_v3(1.0f + frand(-1e-3f, 1e-3f), 1.0f + frand(-1e-3f, 1e-3f),
                        1.0f + frand(-1e-3f, 1e-3f));
            break;
        case 2: /* two equal */
            s = firn_v3(1.2f, 0.9f, 0.9f);
            break;
        case 3: /* large strains */
            s = firn_v3(frand(0.3f, 3.0f), frand(0.3f, 3.0f), frand(0.3f, 3.0f));
            break;
        case 4: /* near-singular */
            s = firn_v3(frand(0.5f, 1.5f), frand(0.5f, 1.5f), frand(-1e-4f, 1e-4f));
            break;
        case 5: /* inverted */
            s = firn_v3(frand(0.5f, 1.5f), frand(0.5f, 1.5f), -frand(0.3f, 1.0f));
            break;
        case 6: /* singular */
            s = firn_v3(frand(0.5f, 1.5f), frand(0.5f, 1.5f), 0.0f);
            break;
        default: /* rank one */
            s = firn_v3(frand(0.5f, 1.5f), 0.0f, 0.0f);
            break;
        }
        const firn_mat3 A = firn_m3_usv(R1, s, R2);
        check_svd(A, "rotated");
        /* The singular values as built, sorted by magnitude (the sign on the
         * smallest, det A's). */
        float m[3] = {fabsf(s.v[0]), fabsf(s.v[1]), fabsf(s.v[2])}, x;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2 - i; j++)
                if (m[j] < m[j + 1])
                    x = m[j], m[j] = m[j + 1], m[j + 1] = x;
        if (s.v[0] * s.v[1] * s.v[2] < 0.0f)
            m[2] = -m[2];
        firn_mat3 U, V;
        firn_vec3 se;
        firn_svd3_eig(A, &U, &se, &V);
        /* Float rounding in A (2^-24 |A|) moves a singular value by as much
         * (Weyl); the eigen-solve of A A^T loses the smallest ones below
         * sqrt(eps) |A| ~ 3e-4 |A|, as A^T A's does. */
        const float tol = (t % 8) >= 4 ? 5e-4f : 4e-6f;
        for (int d = 0; d < 3; d++)
            cr_assert(fabsf(se.v[d] - m[d]) <= tol * m[0], "case %d: s%d = %g, built %g", t % 8, d,
                      se.v[d], m[d]);
    }
}

Test(svd, random_matrices)
{
    for (int t = 0; t < 2000; t++)
        check_svd(random_matrix(2.0f), "random");
}

Test(svd, near_identity_deformation_gradients)
{
    for (int t = 0; t < 2000; t++) {
        firn_mat3 A = random_matrix(0.05f);
        A.m[0] += 1.0f, A.m[4] += 1.0f, A.m[8] += 1.0f;
        check_svd(A, "near identity");
    }
}

Test(svd, degenerate_and_inverted)
{
    firn_mat3 zero = {{0}};
    check_svd(zero, "zero");
    check_svd(firn_m3_identity(), "identity");
    check_svd(firn_m3_diag(1, 1, -1), "reflection");
    check_svd(firn_m3_diag(2, 2, 2), "repeated");
    check_svd(firn_m3_diag(-1, -1, -1), "point inversion");
    check_svd(firn_m3_diag(3, 0, 0), "rank one diagonal");
    firn_mat3 r1 = {{1, 2, 3, 2, 4, 6, -1, -2, -3}};
    check_svd(r1, "rank one");
    firn_mat3 r2 = {{1, 0, 1, 0, 1, 1, 1, 1, 2}};
    check_svd(r2, "rank two");
    for (int t = 0; t < 500; t++) {
        /* Inverted: a random rotation-like matrix with one column flipped. */
        firn_mat3 A = random_matrix(1.0f);
        if (firn_m3_det(A) > 0.0f)
            for (int r = 0; r < 3; r++)
                A.m[3 * r] = -A.m[3 * r];
        check_svd(A, "inverted");
        /* Nearly singular: third column a combination of the others. */
        firn_mat3 B = random_matrix(1.0f);
        for (int r = 0; r < 3; r++)
            B.m[3 * r + 2] = 0.5f * B.m[3 * r] - 0.25f * B.m[3 * r + 1];
        check_svd(B, "singular");
    }
}

/* A random grid of 8^3 nodes: momentum (or velocity) and mass per node. */
static float *random_grid(firn_params *P, float vmax)
{
    *P = test_params();
    for (int a = 0; a < 3; a++)
        P->n[a] = 8;
    float *node = malloc(4 * 512 * sizeof(float));
    for (int k = 0; k < 4 * 512; k++)
        node[k] = frand(-vmax, vmax);
    return node;
}

/* G2P's v and C, from the row sums (firn_g2p_particle) and from the
 * node-by-node sums (firn_g2p_gather, the CPIC path), against the APIC
 * formulas in double: v = sum w gv, C = 4 inv_dx^2 sum w gv dpos^T. Each is
 * a sum of 27 float terms of size up to vmax (times 4 inv_dx for C), so
 * 1e-5 of that bound is some 20 roundings. */
Test(stencil, g2p_sums_match_the_apic_formulas)
{
    firn_params P;
    const float vmax = 10.0f;
    firn_grid g = {.n = {8, 8, 8}, .nodes = 512};
    g.node = random_grid(&P, vmax);
    float x[3], v[3], C[9], F[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, one = 1.0f;
    uint8_t mat = 0;
    firn_particles p = {.n = 1,
                        .x = x,
                        .v = v,
                        .C = C,
                        .F = F,
                        .Jp = &one,
                        .damage = &one,
                        .vol = &one,
                        .mat = &mat};
    for (int t = 0; t < 500; t++) {
        for (int a = 0; a < 3; a++)
            x[a] = frand(0.15f, 0.65f);
        firn_stencil s = firn_make_stencil(&P, firn_v3(x[0], x[1], x[2]));
        double vr[3] = {0}, Cr[9] = {0};
        firn_g2p_sums sums = {{{0.0f}}, {{{0.0f}}}};
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 3; c++) {
                    const float *nd = g.node + 4 * firn_node_index(P.n, s.base[0] + a,
                                                                   s.base[1] + b, s.base[2] + c);
                    double w = (double)s.w[a][0] * s.w[b][1] * s.w[c][2];
                    double dpos[3] = {(a - (double)s.fx[0]) * P.dx, (b - (double)s.fx[1]) * P.dx,
                                      (c - (double)s.fx[2]) * P.dx};
                    for (int r = 0; r < 3; r++) {
                        vr[r] += w * nd[r];
                        for (int q = 0; q < 3; q++)
                            Cr[3 * r + q] += 4.0 * P.inv_dx * P.inv_dx * w * nd[r] * dpos[q];
                    }
                    firn_g2p_gather(&s, a, b, c, firn_v3(nd[0], nd[1], nd[2]), &sums);
                }
        firn_mat3 Cn = firn_g2p_affine(&P, &s, &sums);
        const float x0[3] = {x[0], x[1], x[2]};
        cr_assert_eq(firn_g2p_particle(0, &P, p, g), 0);
        for (int r = 0; r < 3; r++) {
            cr_assert(fabs(v[r] - vr[r]) <= 1e-5 * vmax && fabs(sums.v.v[r] - vr[r]) <= 1e-5 * vmax,
                      "v[%d] at (%g %g %g): rows %.8g, nodes %.8g, formula %.8g", r, x0[0], x0[1],
                      x0[2], v[r], sums.v.v[r], vr[r]);
            for (int q = 0; q < 3; q++) {
                const int e = 3 * r + q;
                const double tol = 1e-5 * 4.0 * P.inv_dx * vmax;
                cr_assert(fabs(C[e] - Cr[e]) <= tol && fabs(Cn.m[e] - Cr[e]) <= tol,
                          "C[%d] at (%g %g %g): rows %.8g, nodes %.8g, formula %.8g", e, x0[0],
                          x0[1], x0[2], C[e], Cn.m[e], Cr[e]);
            }
        }
    }
    free(g.node);
}

/* A particle's scatter state inside the random grid's interior: mass up to
 * 2, momentum up to 20 per component, affine terms up to 200. */
static firn_p2g_state random_scatter_state(const firn_params *P)
{
    firn_p2g_state st;
    st.s = firn_make_stencil(
        P, firn_v3(frand(0.15f, 0.65f), frand(0.15f, 0.65f), frand(0.15f, 0.65f)));
    st.mass = frand(0.1f, 2.0f);
    st.mv = firn_v3(frand(-20.0f, 20.0f), frand(-20.0f, 20.0f), frand(-20.0f, 20.0f));
    st.affine = random_matrix(200.0f);
    return st;
}

/* P2G's scatter (firn_p2g_scatter_nodes) against the formula in double:
 * node (a, b, c) gains w (m v + affine dpos) and w m, and a CPIC mask
 * leaves exactly its nodes untouched. Tolerance: the contributions are
 * 27 sums of 4 terms each, relative 1e-5 of their bound. */
Test(stencil, p2g_scatter_matches_the_formula_and_skips_masked_nodes)
{
    firn_params P;
    firn_grid g = {.n = {8, 8, 8}, .nodes = 512};
    g.node = random_grid(&P, 1.0f);
    float *before = malloc(4 * 512 * sizeof(float));
    for (int t = 0; t < 500; t++) {
        memcpy(before, g.node, 4 * 512 * sizeof(float));
        const firn_p2g_state st = random_scatter_state(&P);
        const unsigned skip = t % 2 ? (unsigned)(rng_state >> 20) & 0x7ffffffu : 0u;
        firn_p2g_scatter_nodes(&P, g, &st, skip);
        const double bound = 20.0 * sqrt(3.0) + 3 * 200.0 * 1.5 * P.dx;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 3; c++) {
                    long long node =
                        firn_node_index(P.n, st.s.base[0] + a, st.s.base[1] + b, st.s.base[2] + c);
                    const int skipped = (skip >> (9 * a + 3 * b + c)) & 1u;
                    double w = (double)st.s.w[a][0] * st.s.w[b][1] * st.s.w[c][2];
                    double dpos[3] = {(a - (double)st.s.fx[0]) * P.dx,
                                      (b - (double)st.s.fx[1]) * P.dx,
                                      (c - (double)st.s.fx[2]) * P.dx};
                    for (int k = 0; k < 4; k++) {
                        double want = 0.0;
                        if (!skipped)
                            want = k == 3 ? w * st.mass
                                          : w * (st.mv.v[k] + st.affine.m[3 * k] * dpos[0] +
                                                 st.affine.m[3 * k + 1] * dpos[1] +
                                                 st.affine.m[3 * k + 2] * dpos[2]);
                        double got = (double)g.node[4 * node + k] - before[4 * node + k];
                        cr_assert(fabs(got - want) <= 1e-5 * (k == 3 ? 2.0 : bound) + 2e-7,
                                  "scatter %d node (%d %d %d)[%d]%s: %.8g, formula %.8g", t, a, b,
                                  c, k, skipped ? " (masked)" : "", got, want);
                    }
                }
    }
    free(before);
    free(g.node);
}

/* The CPU path's vector transfers (host/cpu_simd.h) do the shared
 * functions' operations lane by lane: without FMA contraction their grid
 * and particle state are bitwise the shared functions' (the GPU's
 * reference); with it, within a few roundings. Scatters with and without a
 * CPIC mask into a random grid, and G2P of random particles: some advected
 * past the clamp box, some gathering a NaN node (reported non-finite). */
#if defined(__FMA__) || defined(__FP_FAST_FMAF)
#define SAME_FLOAT(a, b, scale) ((isnan(a) && isnan(b)) || fabsf((a) - (b)) <= 1e-6f * (scale))
#else
#define SAME_FLOAT(a, b, scale) (memcmp(&(a), &(b), sizeof(float)) == 0)
#endif
Test(stencil, cpu_vector_transfers_are_the_shared_ones)
{
    firn_params P;
    firn_grid g = {.n = {8, 8, 8}, .nodes = 512}, h = g;
    g.node = random_grid(&P, 1.0f);
    h.node = malloc(4 * 512 * sizeof(float));
    memcpy(h.node, g.node, 4 * 512 * sizeof(float));
    for (int t = 0; t < 400; t++) {
        const firn_p2g_state st = random_scatter_state(&P);
        const unsigned skip = t % 2 ? (unsigned)(rng_state >> 20) & 0x7ffffffu : 0u;
        firn_p2g_scatter_nodes(&P, g, &st, skip);
        firn_cpu_scatter_nodes(&P, h, &st, skip);
    }
    for (int k = 0; k < 4 * 512; k++)
        cr_assert(SAME_FLOAT(g.node[k], h.node[k], 100.0f), "grid[%d]: shared %.9g, vector %.9g", k,
                  g.node[k], h.node[k]);
    /* G2P: 64 particles with dt = 0.05 s, a clamp box inside the grid, and a
     * NaN velocity at node (4, 4, 4). */
    P.dt = 0.05f;
    for (int a = 0; a < 3; a++)
        P.x_min[a] = 0.25f, P.x_max[a] = 0.55f;
    g.node[4 * firn_node_index(P.n, 4, 4, 4)] = NAN;
    enum { N = 64 };
    float x[3 * N], v[3 * N], C[9 * N], x2[3 * N], v2[3 * N], C2[9 * N];
    firn_particles p = {.n = N, .x = x, .v = v, .C = C}, q = {.n = N, .x = x2, .v = v2, .C = C2};
    for (int i = 0; i < N; i++)
        for (int a = 0; a < 3; a++)
            x[a * N + i] = frand(0.15f, 0.65f);
    memcpy(x2, x, sizeof x);
    int bad = 0, clamped = 0;
    for (int i = 0; i < N; i++) {
        int bad1 = firn_g2p_particle(i, &P, p, g), bad2 = firn_cpu_g2p_particle(i, &P, q, g);
        cr_assert_eq(bad1, bad2, "particle %d: non-finite %d vs %d", i, bad1, bad2);
        bad += bad1;
        for (int a = 0; a < 3; a++)
            clamped += !bad1 && (x[a * N + i] == P.x_min[a] || x[a * N + i] == P.x_max[a]);
    }
    cr_assert(bad > 0 && bad < N, "%d of %d particles non-finite", bad, N);
    cr_assert_gt(clamped, 0, "no finite particle reached the clamp box");
    for (int k = 0; k < 3 * N; k++)
        cr_assert(SAME_FLOAT(x[k], x2[k], 1.0f) && SAME_FLOAT(v[k], v2[k], 20.0f),
                  "x or v [%d]: shared %.9g %.9g, vector %.9g %.9g", k, x[k], v[k], x2[k], v2[k]);
    for (int k = 0; k < 9 * N; k++)
        cr_assert(SAME_FLOAT(C[k], C2[k], 2000.0f), "C[%d]: shared %.9g, vector %.9g", k, C[k],
                  C2[k]);
    free(g.node);
    free(h.node);
}

/* The CPU path's stencil, three axes in one vector, is the shared one to
 * the bit, in and outside the grid and for non-finite positions. */
Test(stencil, cpu_vector_stencil_is_the_shared_one)
{
    firn_params P = test_params();
    const float lower[3] = {-0.37f, 0.113f, 2.9f}; /* a domain not at the origin */
    const float special[] = {NAN, INFINITY, -INFINITY, 3e9f, -3e9f, 0.0f, -0.0f, 1e-30f};
    const int ns = (int)(sizeof special / sizeof special[0]);
    for (int a = 0; a < 3; a++)
        P.lower[a] = lower[a];
    for (int t = 0; t < 2000; t++) {
        firn_vec3 x;
        for (int a = 0; a < 3; a++) {
            /* grid units: in [-2, n + 2), some on node and half-node lines */
            float u = frand(-2.0f, (float)P.n[a] + 2.0f);
            if (t % 7 == 1)
                u = floorf(u) + (t % 2 ? 0.5f : 0.0f);
            x.v[a] = P.lower[a] + u * P.dx;
        }
        if (t % 50 == 3)
            x.v[t % 3] = special[(t / 50) % ns];
        const firn_stencil a = firn_make_stencil(&P, x), b = firn_cpu_make_stencil(&P, x);
        cr_assert(!memcmp(a.base, b.base, sizeof a.base),
                  "x (%g, %g, %g): base (%d %d %d) vs (%d %d %d)", x.v[0], x.v[1], x.v[2],
                  a.base[0], a.base[1], a.base[2], b.base[0], b.base[1], b.base[2]);
        cr_assert(!memcmp(a.fx, b.fx, sizeof a.fx) && !memcmp(a.w, b.w, sizeof a.w),
                  "x (%g, %g, %g): fx or weights differ", x.v[0], x.v[1], x.v[2]);
    }
}

/* Lane l of a batch: the kinds of matrix the SVD tests above use. */
static firn_mat3 batch_matrix(int t, int l)
{
    static const firn_mat3 special[] = {{{0}},
                                        {{1, 0, 0, 0, 1, 0, 0, 0, 1}},
                                        {{1, 0, 0, 0, 1, 0, 0, 0, -1}},
                                        {{2, 0, 0, 0, 2, 0, 0, 0, 2}},
                                        {{3, 0, 0, 0, 0, 0, 0, 0, 0}},
                                        {{1, 2, 3, 2, 4, 6, -1, -2, -3}},
                                        {{1, 0, 1, 0, 1, 1, 1, 1, 2}}};
    firn_mat3 A = random_matrix(0.05f);
    switch ((t + l) % 5) {
    case 0:
        return random_matrix(2.0f);
    case 1:
        A.m[0] += 1.0f, A.m[4] += 1.0f, A.m[8] += 1.0f;
        return A;
    case 2:
        return special[(t / 5 + l) % 7];
    case 3: /* inverted */
        A = random_matrix(1.0f);
        if (firn_m3_det(A) > 0.0f)
            for (int r = 0; r < 3; r++)
                A.m[3 * r] = -A.m[3 * r];
        return A;
    default: /* nearly singular */
        A = random_matrix(1.0f);
        for (int r = 0; r < 3; r++)
            A.m[3 * r + 2] = 0.5f * A.m[3 * r] - 0.25f * A.m[3 * r + 1];
        return A;
    }
}

/* The batched SVD (host/svd_batch.c, the CPU path's P2G) is the scalar
 * algorithm lane by lane: each lane is a valid SVD, and its singular values
 * are the scalar ones to float rounding. Where the singular values are
 * apart by more than 1 % of the largest, the singular vectors are defined
 * and match the scalar ones too. Built without fused multiply-adds (as by
 * default on x86-64), the two do the same operations and must agree
 * bitwise; a build with FMA may contract them differently, and is held to
 * the tolerances only. */
typedef void (*svd_fn)(firn_mat3, firn_mat3 *, firn_vec3 *, firn_mat3 *);
typedef void (*svd_batch_fn)(int, const firn_mat3 *, firn_mat3 *, firn_vec3 *, firn_mat3 *);

static void batched_matches_scalar(svd_batch_fn batch, svd_fn scalar)
{
    for (int t = 0; t < 2000; t++) {
        const int n = 1 + t % FIRN_SVD_BATCH;
        firn_mat3 A[FIRN_SVD_BATCH], U[FIRN_SVD_BATCH], V[FIRN_SVD_BATCH];
        firn_vec3 s[FIRN_SVD_BATCH];
        for (int l = 0; l < n; l++)
            A[l] = batch_matrix(t, l);
        batch(n, A, U, s, V);
        for (int l = 0; l < n; l++) {
            check_svd_result(A[l], U[l], s[l], V[l], "batched");
            firn_mat3 Us, Vs;
            firn_vec3 ss;
            scalar(A[l], &Us, &ss, &Vs);
#if !defined(__FMA__) && !defined(__FP_FAST_FMAF)
            cr_assert(memcmp(&U[l], &Us, sizeof Us) == 0 && memcmp(&V[l], &Vs, sizeof Vs) == 0 &&
                          memcmp(&s[l], &ss, sizeof ss) == 0,
                      "batch %d lane %d: not bitwise the scalar SVD", t, l);
#endif
            float scale = fmaxf(max_abs(A[l]), 1e-6f);
            for (int d = 0; d < 3; d++)
                cr_assert(fabsf(s[l].v[d] - ss.v[d]) <= 1e-5f * scale,
                          "batch %d lane %d: s%d %g, scalar %g", t, l, d, s[l].v[d], ss.v[d]);
            float gap = fminf(ss.v[0] - ss.v[1], ss.v[1] - fabsf(ss.v[2]));
            if (gap > 1e-2f * ss.v[0] && fabsf(ss.v[2]) > 1e-2f * ss.v[0]) {
                cr_assert(max_abs_diff(U[l], Us) <= 1e-3f, "batch %d lane %d: U differs by %g", t,
                          l, max_abs_diff(U[l], Us));
                cr_assert(max_abs_diff(V[l], Vs) <= 1e-3f, "batch %d lane %d: V differs by %g", t,
                          l, max_abs_diff(V[l], Vs));
            }
        }
    }
}

Test(svd, batched_matches_scalar) { batched_matches_scalar(firn_svd3_batch, firn_svd3); }

/* The same for firn_svd3_eig, the MPM constitutive update's (the CPU
 * path's batches and the GPU's firn_constitutive). */
Test(svd, eig_batched_matches_scalar)
{
    batched_matches_scalar(firn_svd3_eig_batch, firn_svd3_eig);
}

/* A lane's result depends on its own matrix only: not on its neighbours
 * (one of them NaN, or rank-deficient and slow to converge), nor on how
 * many lanes the batch has. A NaN matrix gives NaN singular values. */
static void batched_lanes_are_independent(svd_batch_fn batch)
{
    firn_mat3 A[FIRN_SVD_BATCH], U[FIRN_SVD_BATCH], V[FIRN_SVD_BATCH];
    firn_vec3 s[FIRN_SVD_BATCH];
    for (int t = 0; t < 200; t++) {
        const firn_mat3 probe = batch_matrix(t, 0);
        const int lane = t % FIRN_SVD_BATCH;
        firn_mat3 U0, V0;
        firn_vec3 s0;
        batch(1, &probe, &U0, &s0, &V0);
        for (int l = 0; l < FIRN_SVD_BATCH; l++)
            A[l] = batch_matrix(t + 1, l);
        A[(lane + 1) % FIRN_SVD_BATCH].m[4] = NAN;
        A[lane] = probe;
        batch(FIRN_SVD_BATCH, A, U, s, V);
        cr_assert(memcmp(&U[lane], &U0, sizeof U0) == 0 && memcmp(&V[lane], &V0, sizeof V0) == 0 &&
                      memcmp(&s[lane], &s0, sizeof s0) == 0,
                  "batch %d: lane %d's SVD changed with its neighbours", t, lane);
        firn_vec3 sn = s[(lane + 1) % FIRN_SVD_BATCH];
        cr_assert(isnan(sn.v[0]) || isnan(sn.v[1]) || isnan(sn.v[2]),
                  "batch %d: a NaN matrix gave singular values %g %g %g", t, sn.v[0], sn.v[1],
                  sn.v[2]);
    }
}

Test(svd, batched_lanes_are_independent) { batched_lanes_are_independent(firn_svd3_batch); }
Test(svd, eig_batched_lanes_are_independent) { batched_lanes_are_independent(firn_svd3_eig_batch); }

/* Material table entry for a model with E = 1e5, nu = 0.3. */
static firn_material make_material(int model, int law)
{
    firn_material m = {0};
    float E = 1e5f, nu = 0.3f;
    m.model = model;
    m.law = law;
    m.mu = E / (2.0f * (1.0f + nu));
    m.lambda = E * nu / ((1.0f + nu) * (1.0f - 2.0f * nu));
    m.rho = 1000.0f;
    m.theta_c = 2.5e-2f;
    m.theta_s = 7.5e-3f;
    m.xi = 10.0f;
    float sphi = sinf(35.0f * (float)M_PI / 180.0f);
    m.alpha = sqrtf(2.0f / 3.0f) * 2.0f * sphi / (3.0f - sphi);
    m.yield = 1e3f;
    m.crit = 0.05f;
    m.rate = 1000.0f;
    return m;
}

static const struct {
    int model, law;
    const char *name;
} all_models[] = {
    {FIRN_M_ELASTIC, FIRN_L_COROTATED, "elastic corotated"},
    {FIRN_M_ELASTIC, FIRN_L_NEOHOOKEAN, "elastic neo-Hookean"},
    {FIRN_M_LIQUID, 0, "liquid"},
    {FIRN_M_SNOW, 0, "snow"},
    {FIRN_M_SAND, 0, "sand"},
    {FIRN_M_VON_MISES, FIRN_L_COROTATED, "von Mises"},
    {FIRN_M_FRACTURE, FIRN_L_COROTATED, "fracture"},
};
#define N_MODELS (int)(sizeof all_models / sizeof all_models[0])

static float initial_jp(int model) { return model == FIRN_M_SAND ? 0.0f : 1.0f; }

static float trace(firn_mat3 t) { return t.m[0] + t.m[4] + t.m[8]; }

Test(materials, stress_free_at_rest)
{
    /* F = I is the undeformed state of every model: tau = 0. */
    for (int k = 0; k < N_MODELS; k++) {
        firn_material m = make_material(all_models[k].model, all_models[k].law);
        firn_mat3 F = firn_m3_identity();
        float jp = initial_jp(m.model), d = 0.0f;
        firn_mat3 tau = firn_constitutive(&m, &F, &jp, &d, 1e-4f);
        cr_assert(max_abs(tau) < 1e-6f * m.mu, "%s: |tau| = %g at rest", all_models[k].name,
                  max_abs(tau));
        cr_assert(max_abs_diff(F, firn_m3_identity()) < 1e-6f, "%s: F changed at rest",
                  all_models[k].name);
    }
}

Test(materials, pressure_sign_under_compression_and_tension)
{
    /* Uniform 1% compression gives a compressive (negative trace) Kirchhoff
     * stress in every model; 0.3% stretch gives tension, except sand, which
     * holds none. The stretch stays below snow's theta_s so snow stays
     * elastic. */
    for (int k = 0; k < N_MODELS; k++) {
        firn_material m = make_material(all_models[k].model, all_models[k].law);
        float jp = initial_jp(m.model), d = 0.0f;
        firn_mat3 F = firn_m3_diag(0.99f, 0.99f, 0.99f);
        float tc = trace(firn_constitutive(&m, &F, &jp, &d, 1e-4f));
        cr_assert(tc < -1e-3f * m.mu, "%s: trace(tau) = %g under compression", all_models[k].name,
                  tc);
        jp = initial_jp(m.model);
        F = firn_m3_diag(1.003f, 1.003f, 1.003f);
        float tt = trace(firn_constitutive(&m, &F, &jp, &d, 1e-4f));
        if (m.model == FIRN_M_SAND)
            cr_assert(fabsf(tt) < 1e-6f * m.mu, "sand holds tension: trace(tau) = %g", tt);
        else
            cr_assert(tt > 1e-4f * m.mu, "%s: trace(tau) = %g under tension", all_models[k].name,
                      tt);
    }
}

Test(materials, snow_clamps_singular_values_and_keeps_total_volume)
{
    /* After the update the elastic singular values lie in [1 - theta_c,
     * 1 + theta_s], and det(F_total) = J_E * J_P (Stomakhin et al. 2013). */
    firn_material m = make_material(FIRN_M_SNOW, 0);
    for (int t = 0; t < 2000; t++) {
        firn_mat3 F = random_matrix(0.08f);
        F.m[0] += 1.0f, F.m[4] += 1.0f, F.m[8] += 1.0f;
        float jp = frand(0.9f, 1.1f), d = 0.0f;
        float total = firn_m3_det(F) * jp;
        firn_constitutive(&m, &F, &jp, &d, 1e-4f);
        firn_mat3 U, V;
        firn_vec3 s;
        firn_svd3(F, &U, &s, &V);
        for (int a = 0; a < 3; a++)
            cr_assert(s.v[a] >= 1.0f - m.theta_c - 1e-5f && s.v[a] <= 1.0f + m.theta_s + 1e-5f,
                      "singular value %g outside the clamp range", s.v[a]);
        float after = firn_m3_det(F) * jp;
        cr_assert(fabsf(after - total) < 2e-5f * fabsf(total), "J_E J_P = %.7g, det F_trial = %.7g",
                  after, total);
    }
}

Test(materials, sand_no_tension_and_inside_yield_cone)
{
    /* Drucker-Prager (Klar et al. 2016): after the return mapping the Hencky
     * Kirchhoff stress has no tensile principal value and satisfies
     * |dev tau| <= -alpha tr(tau). */
    firn_material m = make_material(FIRN_M_SAND, 0);
    for (int t = 0; t < 4000; t++) {
        firn_mat3 F = random_matrix(0.2f);
        F.m[0] += 1.0f, F.m[4] += 1.0f, F.m[8] += 1.0f;
        float jp = 0.0f, d = 0.0f;
        firn_mat3 tau = firn_constitutive(&m, &F, &jp, &d, 1e-4f);
        float tr = trace(tau);
        float scale = m.lambda + 2.0f * m.mu;
        firn_mat3 dev = tau;
        dev.m[0] -= tr / 3.0f, dev.m[4] -= tr / 3.0f, dev.m[8] -= tr / 3.0f;
        float devn = 0.0f;
        for (int c = 0; c < 9; c++)
            devn += dev.m[c] * dev.m[c];
        devn = sqrtf(devn);
        cr_assert(tr <= 1e-6f * scale, "sand trace(tau) = %g > 0", tr);
        cr_assert(devn <= -m.alpha * tr * 1.0001f + 1e-5f * scale,
                  "outside the cone: |dev tau| = %g, -alpha tr = %g", devn, -m.alpha * tr);
        /* Largest eigenvalue of a symmetric matrix <= tr/3 + sqrt(2/3) |dev|. */
        float maxp = tr / 3.0f + devn * sqrtf(2.0f / 3.0f);
        cr_assert(maxp <= 1e-5f * scale, "tensile principal stress up to %g", maxp);
    }
}

Test(materials, von_mises_caps_deviatoric_log_strain)
{
    /* After projection |dev(log sigma)| <= yield / (2 mu). */
    firn_material m = make_material(FIRN_M_VON_MISES, FIRN_L_COROTATED);
    for (int t = 0; t < 2000; t++) {
        firn_mat3 F = random_matrix(0.1f);
        F.m[0] += 1.0f, F.m[4] += 1.0f, F.m[8] += 1.0f;
        float jp = 1.0f, d = 0.0f;
        firn_constitutive(&m, &F, &jp, &d, 1e-4f);
        firn_mat3 U, V;
        firn_vec3 s;
        firn_svd3(F, &U, &s, &V);
        float e[3], tr = 0.0f, n2 = 0.0f;
        for (int a = 0; a < 3; a++)
            tr += (e[a] = logf(s.v[a]));
        for (int a = 0; a < 3; a++)
            n2 += (e[a] - tr / 3.0f) * (e[a] - tr / 3.0f);
        cr_assert(sqrtf(n2) <= m.yield / (2.0f * m.mu) * 1.001f + 1e-5f,
                  "|dev eps| = %g above yield strain %g", sqrtf(n2), m.yield / (2.0f * m.mu));
    }
}

Test(materials, fracture_damage_grows_and_weakens_only_tension)
{
    /* 10% stretch exceeds crit = 5%: damage grows by rate per update, and a
     * fully damaged particle carries no tension but still resists
     * compression. */
    firn_material m = make_material(FIRN_M_FRACTURE, FIRN_L_COROTATED);
    float jp = 1.0f, d = 0.0f;
    firn_mat3 F = firn_m3_diag(1.1f, 1.0f, 1.0f);
    firn_mat3 tau0 = firn_constitutive(&m, &F, &jp, &d, 1e-4f);
    cr_assert(fabsf(d - m.rate * 1e-4f) < 1e-7f, "damage %g after one update", d);
    for (int k = 0; k < 20; k++) {
        F = firn_m3_diag(1.1f, 1.0f, 1.0f);
        firn_constitutive(&m, &F, &jp, &d, 1e-4f);
    }
    cr_assert_eq(d, 1.0f, "damage clamps at 1, got %g", d);
    F = firn_m3_diag(1.1f, 1.0f, 1.0f);
    firn_mat3 tau1 = firn_constitutive(&m, &F, &jp, &d, 1e-4f);
    cr_assert(trace(tau0) > 0.0f && max_abs(tau1) < 1e-6f * m.mu,
              "fully damaged particle holds tension %g", max_abs(tau1));
    F = firn_m3_diag(0.95f, 0.95f, 0.95f);
    cr_assert(trace(firn_constitutive(&m, &F, &jp, &d, 1e-4f)) < -1e-3f * m.mu,
              "fully damaged particle must still resist compression");
}

Test(materials, liquid_keeps_only_volume)
{
    /* Liquid forgets shear: F becomes J^(1/3) I with the same J. */
    firn_material m = make_material(FIRN_M_LIQUID, 0);
    for (int t = 0; t < 200; t++) {
        firn_mat3 F = random_matrix(0.1f);
        F.m[0] += 1.0f, F.m[4] += 1.0f, F.m[8] += 1.0f;
        float J = firn_m3_det(F), jp = 1.0f, d = 0.0f;
        firn_constitutive(&m, &F, &jp, &d, 1e-4f);
        cr_assert(fabsf(firn_m3_det(F) - J) < 1e-5f, "volume %g vs %g", firn_m3_det(F), J);
    }
}

Test(materials, snow_hardening_cap)
{
    /* h = exp(xi (1 - Jp)) grows without bound under compaction (Genesis);
     * max_hardening caps it, and the CFL stiffness factor follows. */
    firn_material m = make_material(FIRN_M_SNOW, 0);
    cr_assert(fabsf(firn_snow_hardening(&m, 0.5f) - expf(5.0f)) < 1e-3f);
    m.hmax = 5.0f;
    cr_assert_eq(firn_snow_hardening(&m, 0.5f), 5.0f);
    cr_assert_eq(firn_stiffness_factor(&m, 0.5f), 5.0f);
    cr_assert(fabsf(firn_snow_hardening(&m, 1.05f) - expf(-0.5f)) < 1e-6f,
              "the cap is only an upper bound");
}

/* tau for a diagonal F = diag(s): every model's closed form from PHYSICS.md
 * s3 (U = V = I, so tau = diag(t)). Relative tolerance 1e-5: a few float
 * ulps of the largest term. */
static void expect_diag_tau(int model, int law, firn_vec3 s, firn_vec3 want, const char *what)
{
    firn_material m = make_material(model, law);
    firn_mat3 F = firn_m3_diag(s.v[0], s.v[1], s.v[2]);
    float jp = initial_jp(model), d = 0.0f;
    firn_mat3 tau = firn_constitutive(&m, &F, &jp, &d, 1e-4f);
    float scale = fmaxf(fabsf(want.v[0]), fmaxf(fabsf(want.v[1]), fabsf(want.v[2])));
    for (int a = 0; a < 3; a++)
        cr_assert(fabsf(tau.m[4 * a] - want.v[a]) <= 1e-5f * scale,
                  "%s: tau[%d][%d] = %.7g, want %.7g", what, a, a, tau.m[4 * a], want.v[a]);
    cr_assert(fabsf(tau.m[1]) + fabsf(tau.m[2]) + fabsf(tau.m[5]) <= 1e-5f * scale,
              "%s: off-diagonal stress for a diagonal F", what);
}

Test(materials, closed_form_stress_for_diagonal_F)
{
    firn_material m = make_material(FIRN_M_ELASTIC, 0);
    const float mu = m.mu, la = m.lambda;
    firn_vec3 s = firn_v3(1.04f, 0.98f, 0.95f), t;
    float J = s.v[0] * s.v[1] * s.v[2];
    for (int a = 0; a < 3; a++) /* fixed corotated: 2 mu (s - 1) s + lambda J (J - 1) */
        t.v[a] = 2.0f * mu * (s.v[a] - 1.0f) * s.v[a] + la * J * (J - 1.0f);
    expect_diag_tau(FIRN_M_ELASTIC, FIRN_L_COROTATED, s, t, "corotated");
    for (int a = 0; a < 3; a++) /* Neo-Hookean: mu s^2 + lambda ln J - mu */
        t.v[a] = mu * s.v[a] * s.v[a] + la * logf(J) - mu;
    expect_diag_tau(FIRN_M_ELASTIC, FIRN_L_NEOHOOKEAN, s, t, "neo-Hookean");
    for (int a = 0; a < 3; a++) /* liquid: lambda J (J - 1), isotropic */
        t.v[a] = la * J * (J - 1.0f);
    expect_diag_tau(FIRN_M_LIQUID, 0, s, t, "liquid");
    /* Snow inside its elastic range [1 - theta_c, 1 + theta_s], Jp = 1. */
    firn_vec3 sn = firn_v3(1.005f, 0.99f, 0.98f);
    float Jn = sn.v[0] * sn.v[1] * sn.v[2];
    for (int a = 0; a < 3; a++)
        t.v[a] = 2.0f * mu * (sn.v[a] - 1.0f) * sn.v[a] + la * Jn * (Jn - 1.0f);
    expect_diag_tau(FIRN_M_SNOW, 0, sn, t, "snow");
    /* Sand under uniform compression stays inside the cone: Hencky stress
     * 2 mu ln s + lambda sum ln s. */
    firn_vec3 sc = firn_v3(0.99f, 0.99f, 0.99f);
    for (int a = 0; a < 3; a++)
        t.v[a] = 2.0f * mu * logf(0.99f) + la * 3.0f * logf(0.99f);
    expect_diag_tau(FIRN_M_SAND, 0, sc, t, "sand");
    /* Von Mises below yield is the elastic law. */
    firn_vec3 sv = firn_v3(1.002f, 1.0f, 0.999f);
    float Jv = sv.v[0] * sv.v[1] * sv.v[2];
    for (int a = 0; a < 3; a++)
        t.v[a] = 2.0f * mu * (sv.v[a] - 1.0f) * sv.v[a] + la * Jv * (Jv - 1.0f);
    expect_diag_tau(FIRN_M_VON_MISES, FIRN_L_COROTATED, sv, t, "von Mises");
}

Test(materials, svd_free_models_match_the_principal_form)
{
    /* Liquid and neo-Hookean elastic skip the SVD: their stress comes from
     * J = det F and F F^T directly. For general (rotated, sheared) F it must
     * equal the principal form U diag(t) U^T of PHYSICS.md s3. Both forms sum
     * terms of size mu + lambda in float, so they agree to a few ulps of
     * that: 1e-5 (mu + lambda). */
    for (int k = 0; k < 2; k++) {
        firn_material m = make_material(k ? FIRN_M_LIQUID : FIRN_M_ELASTIC, FIRN_L_NEOHOOKEAN);
        const float tol = 1e-5f * (m.mu + m.lambda);
        for (int t = 0; t < 2000; t++) {
            firn_mat3 F = random_matrix(0.15f);
            F.m[0] += 1.0f, F.m[4] += 1.0f, F.m[8] += 1.0f;
            firn_mat3 U, V;
            firn_vec3 s, tp;
            firn_svd3(F, &U, &s, &V);
            float J = s.v[0] * s.v[1] * s.v[2];
            if (k) {
                float p = m.lambda * J * (J - 1.0f);
                tp = firn_v3(p, p, p);
            } else {
                tp = firn_tau_neohookean(m.mu, m.lambda, s, J);
            }
            firn_mat3 want = firn_m3_usv(U, tp, U);
            float jp = 1.0f, d = 0.0f;
            firn_mat3 tau = firn_constitutive(&m, &F, &jp, &d, 1e-4f);
            cr_assert(max_abs_diff(tau, want) <= tol, "%s: |tau - U diag(t) U^T| = %g (tol %g)",
                      k ? "liquid" : "neo-Hookean", max_abs_diff(tau, want), tol);
        }
    }
}

Test(materials, inverted_particles_recover)
{
    /* An inverted trial F (det < 0) must not poison the state: snow keeps a
     * positive, finite Jp (a negative Jp would make the hardening
     * exp(xi (1 - Jp)) explode and shrink every later substep), and a liquid
     * leaves with det F > 0 and a pressure that pushes it open. */
    firn_material m = make_material(FIRN_M_SNOW, 0);
    firn_mat3 F = firn_m3_diag(1.0f, 1.0f, -0.2f);
    float jp = 1.0f, d = 0.0f;
    firn_constitutive(&m, &F, &jp, &d, 1e-4f);
    cr_assert(jp > 0.0f && isfinite(jp), "snow Jp = %g after an inverted F", jp);
    cr_assert(firn_m3_det(F) > 0.0f, "snow kept an inverted F");
    firn_material l = make_material(FIRN_M_LIQUID, 0);
    F = firn_m3_diag(1.0f, 1.0f, -0.5f);
    jp = 1.0f;
    firn_mat3 tau = firn_constitutive(&l, &F, &jp, &d, 1e-4f);
    cr_assert(firn_m3_det(F) > 0.0f, "liquid kept an inverted F (det %g)", firn_m3_det(F));
    cr_assert(trace(tau) < 0.0f, "a crushed liquid particle must be pushed open, trace(tau) = %g",
              trace(tau));
}

/* The constitutive update on the GPU's SVD (firn_constitutive, with
 * firn_svd3_eig) against the same law on firn_svd3's (the CPU's batched
 * path, firn_constitutive_svd after firn_svd3_batch), for every model that
 * needs an SVD, on deformation gradients R1 diag(s) R2^T: rotations, rest,
 * repeated singular values, plastic strains well past snow's clamps and
 * sand's cone (s in [0.6, 1.6]), and inverted ones. Both SVDs reconstruct
 * F to a few float roundings (svd tests), so their singular values differ
 * by at most ~4e-6 |F|; the laws are Lipschitz in s with a constant below
 * (2 mu + 3 lambda) h (h <= e, snow's hardening at Jp >= 0.9), which bounds
 * tau's difference by ~1e-5 (2 mu + 3 lambda) h, and F's and Jp's by as
 * many roundings. Repeated singular values leave U free within their
 * eigenspace; the laws are isotropic, so tau and F do not depend on it. */
Test(materials, return_maps_on_either_svd_agree)
{
    static const int models[] = {FIRN_M_SNOW, FIRN_M_SAND, FIRN_M_VON_MISES, FIRN_M_FRACTURE,
                                 FIRN_M_ELASTIC};
    for (int k = 0; k < (int)(sizeof models / sizeof models[0]); k++) {
        firn_material m = make_material(models[k], FIRN_L_COROTATED);
        const float h = m.model == FIRN_M_SNOW ? expf(m.xi * 0.1f) : 1.0f;
        const float tol_tau = 1e-5f * (2.0f * m.mu + 3.0f * m.lambda) * h;
        for (int t = 0; t < 3000; t++) {
            const firn_mat3 R1 = random_rotation(), R2 = random_rotation();
            firn_vec3 s;
            switch (t % 5) {
            case 0:
                s = firn_v3(1.0f, 1.0f, 1.0f);
                break;
            case 1:
                s = firn_v3(1.0f + frand(-2e-3f, 2e-3f), 1.0f + frand(-2e-3f, 2e-3f),
                            1.0f + frand(-2e-3f, 2e-3f));
                break;
            case 2:
                s = firn_v3(1.04f, 0.97f, 0.97f); /* fracture: s0 - 1 off crit */
                break;
            case 3:
                s = firn_v3(frand(0.6f, 1.6f), frand(0.6f, 1.6f), frand(0.6f, 1.6f));
                break;
            default: /* inverted, |s2| 0.1 below the others: where the negative
                      * value's magnitude ties another's, the laws (snow's
                      * clamp of the negative one, von Mises' floor) jump
                      * with which one carries the sign */
                s = firn_v3(frand(0.6f, 1.6f), frand(0.6f, 1.6f), 0.0f);
                s.v[2] = -frand(0.3f, fminf(s.v[0], s.v[1]) - 0.1f);
                break;
            }
            const firn_mat3 F0 = firn_m3_usv(R1, s, R2);
            const float jp0 = m.model == FIRN_M_SAND
                                  ? frand(-0.01f, 0.05f)
                                  : (m.model == FIRN_M_SNOW ? frand(0.9f, 1.2f) : 1.0f);
            const float d0 = m.model == FIRN_M_FRACTURE ? frand(0.0f, 0.5f) : 0.0f;
            firn_mat3 Fe = F0, Fr = F0, U, V;
            firn_vec3 sr;
            float jpe = jp0, jpr = jp0, de = d0, dr = d0;
            const firn_mat3 te = firn_constitutive(&m, &Fe, &jpe, &de, 1e-4f);
            firn_svd3(F0, &U, &sr, &V);
            const firn_mat3 tr = firn_constitutive_svd(&m, &Fr, &jpr, &dr, U, sr, V, 1e-4f);
            cr_assert(max_abs_diff(te, tr) <= tol_tau,
                      "model %d case %d: |tau - tau_svd3| = %g > %g (|tau| %g)", m.model, t % 5,
                      max_abs_diff(te, tr), tol_tau, max_abs(tr));
            cr_assert(max_abs_diff(Fe, Fr) <= 2e-5f, "model %d case %d: |F - F_svd3| = %g", m.model,
                      t % 5, max_abs_diff(Fe, Fr));
            cr_assert(fabsf(jpe - jpr) <= 2e-5f * fmaxf(fabsf(jpr), 1.0f),
                      "model %d case %d: Jp %g, on firn_svd3 %g", m.model, t % 5, jpe, jpr);
            cr_assert(de == dr, "model %d case %d: damage %g, on firn_svd3 %g", m.model, t % 5, de,
                      dr);
        }
        /* Singular and rank-one F: finite, and F still what the law keeps
         * (snow's clamp: every singular value of the new F in its range). */
        for (int t = 0; t < 500; t++) {
            firn_vec3 s = t % 2 ? firn_v3(frand(0.8f, 1.2f), frand(0.8f, 1.2f), 0.0f)
                                : firn_v3(frand(0.8f, 1.2f), 0.0f, 0.0f);
            firn_mat3 F = firn_m3_usv(random_rotation(), s, random_rotation());
            float jp = initial_jp(m.model), d = 0.0f;
            const firn_mat3 tau = firn_constitutive(&m, &F, &jp, &d, 1e-4f);
            for (int c = 0; c < 9; c++)
                cr_assert(isfinite(tau.m[c]) && isfinite(F.m[c]), "model %d: singular F: NaN",
                          m.model);
            if (m.model == FIRN_M_SNOW) {
                firn_mat3 U, V;
                firn_vec3 sn;
                firn_svd3(F, &U, &sn, &V);
                for (int d2 = 0; d2 < 3; d2++)
                    cr_assert(sn.v[d2] >= 1.0f - m.theta_c - 1e-5f &&
                                  sn.v[d2] <= 1.0f + m.theta_s + 1e-5f,
                              "snow, singular F: new singular value %g outside the clamp",
                              sn.v[d2]);
            }
        }
    }
}
