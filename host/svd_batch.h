/* svd_batch.h - the 3x3 SVD of several matrices at once, for the CPU path.
 *
 * firn_svd3 (include/firn_svd.h) is a chain of dependent divisions and
 * square roots: one particle's SVD leaves most of a CPU core idle. The
 * batched form runs the same algorithm, operation for operation, on
 * FIRN_SVD_BATCH matrices in SIMD lanes, each lane stopping its Jacobi
 * sweeps where the scalar one would; so each result is the scalar result
 * (bitwise, where the compiler contracts neither into fused multiply-adds,
 * except that a NaN may come out with the other sign bit). */
#ifndef FIRN_SVD_BATCH_H
#define FIRN_SVD_BATCH_H

#include "firn_math.h"

#define FIRN_SVD_BATCH 8

/* A[l] = U[l] diag(s[l]) V[l]^T for l < n, 1 <= n <= FIRN_SVD_BATCH, with
 * firn_svd3's conventions. */
void firn_svd3_batch(int n, const firn_mat3 *A, firn_mat3 *U, firn_vec3 *s, firn_mat3 *V);

/* firn_svd3_eig (include/firn_svd.h) on n <= FIRN_SVD_BATCH matrices in
 * SIMD lanes, mirroring it step by step (bitwise its results without FMA
 * contraction): the CPU path's SVD for the constitutive update, so that it
 * runs the GPU's algorithm. */
void firn_svd3_eig_batch(int n, const firn_mat3 *A, firn_mat3 *U, firn_vec3 *s, firn_mat3 *V);

#endif
