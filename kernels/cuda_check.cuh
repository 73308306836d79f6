/* cuda_check.cuh - every CUDA call and launch in kernels/ goes through these.
 *
 * A failure fills the caller's firn_error with code FIRN_E_DEVICE, the file
 * and line, the failing call as written, and CUDA's own message, then returns
 * from the enclosing function:
 *
 *     FIRN_CUDA_CHECK(cudaMalloc(&ptr, bytes), err);     returns FIRN_CUDA_FAILED
 *     FIRN_CUDA_CHECK_RET(cudaMemcpy(...), err, -1);     returns -1
 *     FIRN_LAUNCH(p2g, blocks, 256, 0, stream, args...);
 *     FIRN_CUDA_CHECK_LAUNCH("p2g", stream, err);
 *
 * A launch check is cheap (cudaGetLastError: bad configuration, missing
 * kernel image). Errors inside a kernel only surface at the next
 * synchronisation; set FIRN_DEBUG_SYNC=1 in the environment (or build with
 * -DFIRN_DEBUG_SYNC, make DEBUG_SYNC=1) to synchronise after every launch
 * and have them reported at that launch. */
#ifndef FIRN_CUDA_CHECK_CUH
#define FIRN_CUDA_CHECK_CUH

#include <cuda_runtime.h>

#include "error.h"

/* Every kernel launch: kernel<<<grid, block, shared_bytes, stream>>>(args)
 * under nvcc; in the emulated build (make CUDA=emu, test/emu/) a call that
 * queues the kernel on the emulated stream. */
#if defined(FIRN_EMU)
#define FIRN_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                                \
    FIRN_EMU_LAUNCH(kernel, grid, block, shared_bytes, stream, __VA_ARGS__)
#else
#define FIRN_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                                \
    kernel<<<grid, block, shared_bytes, stream>>>(__VA_ARGS__)
#endif

/* What the CUDA backend's int functions return on a CUDA error
 * (firn_cuda_run's documented -2). */
#define FIRN_CUDA_FAILED (-2)

/* Returns 0 on success; otherwise fills err and returns 1. Clears CUDA's
 * last-error state so that a later check reports its own call. */
static inline int firn_cuda_check(cudaError_t e, const char *call, const char *file, int line,
                                  firn_error *err)
{
    if (e == cudaSuccess)
        return 0;
    (void)cudaGetLastError();
    firn_set_error(err, FIRN_E_DEVICE, "CUDA error at %s:%d: %s failed: %s (%s)", file, line, call,
                   cudaGetErrorString(e), cudaGetErrorName(e));
    return 1;
}

#define FIRN_CUDA_CHECK_RET(call, err, ret)                                                        \
    do {                                                                                           \
        if (firn_cuda_check((call), #call, __FILE__, __LINE__, (err)))                             \
            return ret;                                                                            \
    } while (0)

#define FIRN_CUDA_CHECK(call, err) FIRN_CUDA_CHECK_RET(call, err, FIRN_CUDA_FAILED)

/* Carves count items of type for ptr out of a block at base, at the running
 * offset off, 256-byte aligned (firn_align256); with base NULL only sizes
 * it. Both FEM device layouts (kernels/fem.cu, kernels/fem_implicit.cu). */
#define FIRN_CARVE(base, off, ptr, type, count)                                                    \
    do {                                                                                           \
        if (base)                                                                                  \
            ptr = (type *)((base) + (off));                                                        \
        (off) += firn_align256((count) * sizeof(type));                                            \
    } while (0)

/* The check as an expression, 1 on failure (err filled), for code that must
 * clean up before it returns. */
#define FIRN_CUDA_CALL(call, err) firn_cuda_check((call), #call, __FILE__, __LINE__, (err))

/* After a kernel launch; name is the kernel, for the message. */
/* Whether every launch is synchronised and checked at once
 * (kernels/device.cu): FIRN_DEBUG_SYNC=1 in the environment, read once, or a
 * build with -DFIRN_DEBUG_SYNC. The world then captures no CUDA graphs (a
 * capture cannot synchronise). */
int firn_cuda_debug_sync(void);

/* cudaGetLastError also returns a fault inside an earlier kernel of the
 * stream, so without FIRN_DEBUG_SYNC the message says that it may not be
 * this launch's. */
#define FIRN_CUDA_CHECK_LAUNCH(name, stream, err)                                                  \
    do {                                                                                           \
        if (firn_cuda_debug_sync()) {                                                              \
            if (firn_cuda_check(cudaGetLastError(), "launch of kernel " name, __FILE__, __LINE__,  \
                                (err)) ||                                                          \
                firn_cuda_check(cudaStreamSynchronize(stream),                                     \
                                "kernel " name " (synchronised by FIRN_DEBUG_SYNC)", __FILE__,     \
                                __LINE__, (err)))                                                  \
                return FIRN_CUDA_FAILED;                                                           \
        } else if (firn_cuda_check(cudaGetLastError(),                                             \
                                   "launch of kernel " name " (or an earlier kernel of the "       \
                                   "stream; FIRN_DEBUG_SYNC=1 names the one)",                     \
                                   __FILE__, __LINE__, (err)))                                     \
            return FIRN_CUDA_FAILED;                                                               \
    } while (0)

/* The non-finite report of a call of firn_cuda_run: G2P kernels atomicMin
 * this word of (substep within the call, particle index) into one device
 * word that starts at FIRN_CUDA_BAD_NONE, so it ends holding the earliest
 * substep with a non-finite particle and its lowest such particle - what the
 * CPU path, which stops at that substep, reports. */
#define FIRN_CUDA_BAD_NONE 0xffffffffffffffffULL
static inline __device__ unsigned long long firn_cuda_bad_word(unsigned substep, int i)
{
    return ((unsigned long long)substep << 32) | (unsigned)i;
}

/* Clears the device's non-finite word (back to FIRN_CUDA_BAD_NONE), in
 * stream order, and waits for it. 0 or FIRN_CUDA_FAILED. */
static inline int firn_cuda_clear_bad_word(unsigned long long *word, cudaStream_t st,
                                           firn_error *err)
{
    static const unsigned long long none = FIRN_CUDA_BAD_NONE;
    FIRN_CUDA_CHECK(cudaMemcpyAsync(word, &none, sizeof none, cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    return 0;
}

/* At the end of a call: the device's non-finite word into *bad (after all
 * queued work), cleared on the device when it was set so that the next
 * call starts clean. 0 or FIRN_CUDA_FAILED. */
static inline int firn_cuda_take_bad_word(unsigned long long *word, cudaStream_t st,
                                          unsigned long long *bad, firn_error *err)
{
    unsigned long long b = FIRN_CUDA_BAD_NONE;
    FIRN_CUDA_CHECK(cudaMemcpyAsync(&b, word, sizeof b, cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    *bad = b;
    return b != FIRN_CUDA_BAD_NONE ? firn_cuda_clear_bad_word(word, st, err) : 0;
}

/* After a CUDA error part way through a call: lets what was queued finish,
 * then clears the non-finite word it may have set, so that no later call
 * reports this call's substep as its own. Best effort: after a sticky error
 * these calls fail too, and the world is unusable anyway. */
static inline void firn_cuda_discard_bad_word(unsigned long long *word, cudaStream_t st)
{
    static const unsigned long long none = FIRN_CUDA_BAD_NONE;
    (void)cudaStreamSynchronize(st);
    (void)cudaMemcpyAsync(word, &none, sizeof none, cudaMemcpyHostToDevice, st);
    (void)cudaStreamSynchronize(st);
    (void)cudaGetLastError();
}

/* Raises *bytes to the most local memory (stack) one thread of any of the
 * n kernels uses. 0, or FIRN_CUDA_FAILED with err filled. */
static inline int firn_cuda_local_bytes(const void *const *kernels, int n, size_t *bytes,
                                        firn_error *err)
{
    for (int k = 0; k < n; k++) {
        cudaFuncAttributes a;
        FIRN_CUDA_CHECK(cudaFuncGetAttributes(&a, kernels[k]), err);
        *bytes = a.localSizeBytes > *bytes ? a.localSizeBytes : *bytes;
    }
    return 0;
}

/* What a solver's allocation is checked against: the driver reserves local
 * memory (stack) for every thread the GPU can hold, cudaLimitStackSize per
 * thread with the context (already out of the free figure) and more at the
 * first launch of a kernel that uses more per thread; reserve is that
 * excess for the solver's kernels, whose largest per-thread local memory is
 * local bytes. */
typedef struct {
    size_t extra;   /* local bytes beyond the default stack, per thread */
    size_t reserve; /* extra for every thread the GPU holds */
    size_t free_b, total_b;
    int sms, threads_per_sm;
} firn_cuda_room;

/* Fills r for the current device. 0 or FIRN_CUDA_FAILED. */
static inline int firn_cuda_room_for(size_t local, firn_cuda_room *r, firn_error *err)
{
    int dev = 0;
    cudaDeviceProp prop;
    size_t stack = 0;
    FIRN_CUDA_CHECK(cudaGetDevice(&dev), err);
    FIRN_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev), err);
    FIRN_CUDA_CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize), err);
    r->extra = local > stack ? local - stack : 0;
    r->sms = prop.multiProcessorCount;
    r->threads_per_sm = prop.maxThreadsPerMultiProcessor;
    r->reserve = r->extra * (size_t)r->sms * (size_t)r->threads_per_sm;
    FIRN_CUDA_CHECK(cudaMemGetInfo(&r->free_b, &r->total_b), err);
    return 0;
}

#endif
