/* svd_sweeps.c - how many Jacobi sweeps firn_svd3 and firn_svd3_eig (include/firn_svd.h)
 * takes, on deformation gradients F = I + e R, R uniform in [-1, 1]^9, for
 * a range of e, and the most a warp of 32 consecutive particles takes (a
 * GPU warp runs until its slowest lane has converged):
 *
 *   svd_sweeps [SAMPLES]
 *
 * Its loops are firn_svd3's and firn_svd3_eig's, with the sweeps counted. Build: make
 * build/svd_sweeps. */
#include <stdio.h>
#include <stdlib.h>

#include "firn_svd.h"

/* firn_svd3's Jacobi loop on A^T A, returning the sweeps it ran. */
static int sweeps(firn_mat3 A)
{
    firn_mat3 S = firn_m3_mul(firn_m3_transpose(A), A), V = firn_m3_identity();
    const float scale = S.m[0] + S.m[4] + S.m[8];
    for (int sweep = 0; sweep < 12; sweep++) {
        const float off = fabsf(S.m[1]) + fabsf(S.m[2]) + fabsf(S.m[5]);
        if (off <= 1e-9f * scale)
            return sweep;
        firn_jacobi_rotate(&S, &V, 0, 1);
        firn_jacobi_rotate(&S, &V, 0, 2);
        firn_jacobi_rotate(&S, &V, 1, 2);
    }
    return 12;
}

/* firn_svd3_eig's Jacobi loop on the six entries of A A^T. */
static int sweeps_eig(firn_mat3 A)
{
    const float *a = A.m;
    float s00 = a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
    float s11 = a[3] * a[3] + a[4] * a[4] + a[5] * a[5];
    float s22 = a[6] * a[6] + a[7] * a[7] + a[8] * a[8];
    float s01 = a[0] * a[3] + a[1] * a[4] + a[2] * a[5];
    float s02 = a[0] * a[6] + a[1] * a[7] + a[2] * a[8];
    float s12 = a[3] * a[6] + a[4] * a[7] + a[5] * a[8];
    firn_mat3 U = firn_m3_identity();
    const float scale = s00 + s11 + s22;
    for (int sweep = 0; sweep < 12; sweep++) {
        const float off = fabsf(s01) + fabsf(s02) + fabsf(s12);
        if (off <= 1e-9f * scale)
            return sweep;
        firn_sym_rotate(&s00, &s11, &s01, &s02, &s12, &U, 0, 1);
        firn_sym_rotate(&s00, &s22, &s02, &s01, &s12, &U, 0, 2);
        firn_sym_rotate(&s11, &s22, &s12, &s01, &s02, &U, 1, 2);
    }
    return 12;
}

int main(int argc, char **argv)
{
    const long n = argc > 1 ? atol(argv[1]) : 320000;
    if (n < 32) {
        fprintf(stderr, "usage: svd_sweeps [SAMPLES >= 32]\n");
        return 2;
    }
    static const double amp[] = {1e-4, 1e-3, 1e-2, 0.05, 0.3, 1.0};
    unsigned long long rng = 12345;
    printf(
        "| e | mean sweeps | most | warps of 32: mean of their most | firn_svd3_eig: mean | most "
        "| warps |\n|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int a = 0; a < (int)(sizeof amp / sizeof amp[0]); a++) {
        long total = 0, warp_total = 0, etotal = 0, ewarp_total = 0;
        int most = 0, warp_most = 0, emost = 0, ewarp_most = 0;
        for (long t = 0; t < n; t++) {
            firn_mat3 A;
            for (int k = 0; k < 9; k++) {
                rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
                const double u = (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
                A.m[k] = (float)((k % 4 == 0) + amp[a] * u);
            }
            const int s = sweeps(A), e = sweeps_eig(A);
            total += s;
            most = s > most ? s : most;
            warp_most = s > warp_most ? s : warp_most;
            etotal += e;
            emost = e > emost ? e : emost;
            ewarp_most = e > ewarp_most ? e : ewarp_most;
            if (t % 32 == 31) {
                warp_total += warp_most;
                warp_most = 0;
                ewarp_total += ewarp_most;
                ewarp_most = 0;
            }
        }
        printf("| %g | %.2f | %d | %.2f | %.2f | %d | %.2f |\n", amp[a], (double)total / n, most,
               (double)warp_total / (n / 32), (double)etotal / n, emost,
               (double)ewarp_total / (n / 32));
    }
    return 0;
}
