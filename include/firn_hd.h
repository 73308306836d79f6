/* firn_hd.h - the one switch between host and device compilation.
 *
 * Every per-particle and per-node function is written once, `static inline
 * FIRN_HD`, so the CPU reference path and the CUDA kernels run the same
 * arithmetic. Accumulation into the grid goes through firn_atomic_add: an
 * atomicAdd on the device, a plain add on the host, where the CPU path makes
 * the scatter race-free by colouring grid slabs (host/solver_cpu.c). */
#ifndef FIRN_HD_H
#define FIRN_HD_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define FIRN_HD __host__ __device__
#else
#define FIRN_HD
#endif

/* FIRN_EMU: kernels/ built by the host compiler for the emulated CUDA
 * runtime (make CUDA=emu, test/emu/), where kernels scatter with atomics too. */
static inline FIRN_HD void firn_atomic_add(float *addr, float value)
{
#if defined(__CUDA_ARCH__) || defined(FIRN_EMU)
    atomicAdd(addr, value);
#else
    *addr += value;
#endif
}

/* *addr = min(*addr, value) for 64-bit keys (FEM-SPH's nearest face per
 * SPH particle): an atomicMin on the device, a compare-and-swap loop on the
 * host, where the CPU path runs the pass on all threads. The minimum does
 * not depend on the order the values arrive in, so the result is the same
 * for any thread count. */
static inline FIRN_HD void firn_atomic_min_u64(unsigned long long *addr, unsigned long long value)
{
#if defined(__CUDA_ARCH__) || defined(FIRN_EMU)
    atomicMin(addr, value);
#else
    unsigned long long cur = __atomic_load_n(addr, __ATOMIC_RELAXED);
    while (value < cur &&
           !__atomic_compare_exchange_n(addr, &cur, value, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
#endif
}

/* A grid node's four floats (mass-weighted momentum and mass, 16-byte
 * aligned) added at once. Into global memory on sm_90 and later (and on the
 * emulated runtime, which checks the address): one vector atomic, each
 * component atomic on its own as four scalar ones are, a quarter of the
 * atomic instructions. Into shared memory (a GPU block's tile), or before
 * sm_90, four scalar atomics: the vector atomics take global addresses
 * only. A plain add on the host. */
enum { FIRN_NODE_SHARED = 0, FIRN_NODE_GLOBAL = 1 };
static inline FIRN_HD void firn_atomic_add_node(float *q, const float v[4], int global)
{
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900) || defined(FIRN_EMU)
    if (global) {
        atomicAdd((float4 *)q, make_float4(v[0], v[1], v[2], v[3]));
        return;
    }
#else
    (void)global;
#endif
    for (int k = 0; k < 4; k++)
        firn_atomic_add(q + k, v[k]);
}

/* A grid node's four floats read at once: on the device one 16-byte load
 * through the read-only cache (the node must be 16-byte aligned and not
 * written by the kernel that reads it), instead of three or four scalar
 * loads; plain loads on the host. */
static inline FIRN_HD void firn_load_node(const float *q, float out[4])
{
#if defined(__CUDA_ARCH__) || defined(FIRN_EMU)
    const float4 t = __ldg((const float4 *)q);
    out[0] = t.x;
    out[1] = t.y;
    out[2] = t.z;
    out[3] = t.w;
#else
    for (int k = 0; k < 4; k++)
        out[k] = q[k];
#endif
}

/* The same for the double sums of the coupling's reactions (the force and
 * torque on rigid bodies and tools), which kernels add once per warp. */
static inline FIRN_HD void firn_atomic_add_double(double *sum, double x)
{
#if defined(__CUDA_ARCH__) || defined(FIRN_EMU)
    atomicAdd(sum, x);
#else
    *sum += x;
#endif
}

/* Index of component c of item i in a component-major array of n items
 * (particles, vertices, elements, slots): c n + i, in 64 bits. In int,
 * c n passes 2^31 - 1 at n = 2^31 / c: a 3x3 matrix's last component at
 * 268M particles, ordered P2G's 16 floats a particle at 143M, the implicit
 * FEM's 30 floats an element at 72M. Every component stride times a count
 * goes through this. */
static inline FIRN_HD long long firn_soa_index(int c, int n, int i) { return (long long)c * n + i; }

static inline FIRN_HD float firn_minf(float a, float b) { return a < b ? a : b; }
static inline FIRN_HD float firn_maxf(float a, float b) { return a > b ? a : b; }
static inline FIRN_HD float firn_clampf(float x, float lo, float hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* floor(t) clamped to [0, hi], 0 <= hi <= 2^30. t is clamped in float first, so NaN
 * gives 0 and no value overflows the conversion; on [0, 2^30] truncation is
 * the floor. */
static inline FIRN_HD int firn_floor_index(float t, int hi)
{
    t = t > 0.0f ? t : 0.0f;
    t = t < 1073741824.0f ? t : 1073741824.0f;
    const int k = (int)t;
    return k < hi ? k : hi;
}

#endif
