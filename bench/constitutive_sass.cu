/* constitutive_sass.cu - kernels that run one piece of P2G alone, one
 * particle a thread, for static SASS counts (bench/sass_counts.sh); not
 * part of the build. constitutive<MODEL>: the trial F's constitutive update
 * (firn_constitutive) of a material whose model is the constant MODEL (its
 * other branches folded away; -1: read from the material). svd3 and
 * svd3_eig: the two SVDs alone. The model is set on a copy of the material,
 * so the file builds against any version of include/ that has
 * firn_constitutive. */
#include "firn_material.h"

template <int MODEL>
__global__ void constitutive(const firn_material *mats, const int *mat, float *F, float *Jp,
                             float *dmg, float *tau, int n, float dt)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    firn_material m = mats[mat[i]];
    if (MODEL >= 0)
        m.model = MODEL;
    firn_mat3 f;
    for (int c = 0; c < 9; c++)
        f.m[c] = F[c * n + i];
    float jp = Jp[i], d = dmg[i];
    const firn_mat3 t = firn_constitutive(&m, &f, &jp, &d, dt);
    for (int c = 0; c < 9; c++) {
        F[c * n + i] = f.m[c];
        tau[c * n + i] = t.m[c];
    }
    Jp[i] = jp;
    dmg[i] = d;
}

template __global__ void constitutive<-1>(const firn_material *, const int *, float *, float *,
                                          float *, float *, int, float);
template __global__ void constitutive<2>(const firn_material *, const int *, float *, float *,
                                         float *, float *, int, float);
template __global__ void constitutive<3>(const firn_material *, const int *, float *, float *,
                                         float *, float *, int, float);

static __device__ void svd_io(const float *A, float *out, int n, int i, firn_mat3 U, firn_vec3 s,
                              firn_mat3 V)
{
    for (int c = 0; c < 9; c++) {
        out[c * n + i] = U.m[c];
        out[(12 + c) * n + i] = V.m[c];
    }
    for (int c = 0; c < 3; c++)
        out[(9 + c) * n + i] = s.v[c];
    (void)A;
}

__global__ void svd3(const float *A, float *out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    firn_mat3 a, U, V;
    firn_vec3 s;
    for (int c = 0; c < 9; c++)
        a.m[c] = A[c * n + i];
    firn_svd3(a, &U, &s, &V);
    svd_io(A, out, n, i, U, s, V);
}

#ifdef FIRN_MODELS
__global__ void svd3_eig(const float *A, float *out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    firn_mat3 a, U, V;
    firn_vec3 s;
    for (int c = 0; c < 9; c++)
        a.m[c] = A[c * n + i];
    firn_svd3_eig(a, &U, &s, &V);
    svd_io(A, out, n, i, U, s, V);
}
#endif
