/* cuda_runtime.h - the emulated CUDA runtime's header (make CUDA=emu).
 *
 * The .cu files of kernels/ build with the host C++ compiler against this header instead
 * of the CUDA toolkit's: the runtime calls firn makes, the kernel built-ins
 * (threadIdx, blockIdx, ...), atomics, warp intrinsics and __syncthreads,
 * and FIRN_EMU_LAUNCH, which kernels/cuda_check.cuh's FIRN_LAUNCH becomes.
 * test/emu/runtime.cpp implements it; docs/EMULATION.md says what it checks
 * and what only a GPU can. Nothing here is used by the nvcc build. */
#ifndef FIRN_EMU_CUDA_RUNTIME_H
#define FIRN_EMU_CUDA_RUNTIME_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

/* ---- qualifiers ------------------------------------------------------------ */

#define __global__
#define __device__
#define __launch_bounds__(...)
#define __host__
#define __forceinline__ inline
/* Threads of a block run on one OS thread, one block at a time, so a
 * function-local thread_local is the block's shared memory. */
#define __shared__ static thread_local

/* ---- types ----------------------------------------------------------------- */

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchFailure = 719,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
};
typedef enum cudaError_t cudaError;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

enum cudaLimit { cudaLimitStackSize = 0, cudaLimitPrintfFifoSize = 1, cudaLimitMallocHeapSize = 2 };

#define cudaStreamDefault     0x00
#define cudaStreamNonBlocking 0x01

typedef struct firn_emu_stream *cudaStream_t;
typedef struct firn_emu_event *cudaEvent_t;
typedef struct firn_emu_graph *cudaGraph_t;
typedef struct firn_emu_graph_exec *cudaGraphExec_t;

enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2,
};

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
/* Aligned as CUDA's are: a vector load or atomic needs its full alignment. */
struct alignas(8) float2 {
    float x, y;
};
struct float3 {
    float x, y, z;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float3 make_float3(float x, float y, float z) { return float3{x, y, z}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int clockRate;
    int major, minor;
    int multiProcessorCount;
    int maxThreadsPerMultiProcessor;
    int memoryClockRate;
    int memoryBusWidth;
    int l2CacheSize;
};

struct cudaFuncAttributes {
    size_t sharedSizeBytes;
    size_t constSizeBytes;
    size_t localSizeBytes;
    int maxThreadsPerBlock;
    int numRegs;
};

/* ---- runtime API ----------------------------------------------------------- */

#define CUDART_VERSION 12080
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDriverGetVersion(int *version);
cudaError_t cudaRuntimeGetVersion(int *version);
cudaError_t cudaDeviceGetLimit(size_t *value, cudaLimit limit);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, const void *kernel);

cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);

cudaError_t cudaMalloc(void **ptr, size_t bytes);
template <typename T> static inline cudaError_t cudaMalloc(T **ptr, size_t bytes)
{
    return cudaMalloc((void **)ptr, bytes);
}
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = 0);
cudaError_t cudaMemset(void *ptr, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t stream = 0);

cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);

cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

/* Stream capture and graphs: the work queued on a capturing stream is
 * recorded, not run; a launched graph runs it again, in capture order, as
 * one job of the stream it is launched on. A call that would wait on the
 * device during a capture (a synchronisation, a synchronous copy or
 * memset, cudaMalloc, cudaFree), a copy to or from host memory and an
 * event record on the capturing stream fail with
 * cudaErrorStreamCaptureUnsupported and invalidate the capture: its end
 * returns cudaErrorStreamCaptureInvalidated. */
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *status);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

/* For the tests: how many times work of this name has run (a kernel, by
 * its name, or a CUB stand-in's call, such as "cub::DeviceReduce::Sum"),
 * each job of a launched graph counted, since the process started. */
extern "C" unsigned long long firn_emu_runs(const char *name);

/* ---- what kernels see ------------------------------------------------------ */

/* One CUDA thread as the runtime runs it (test/emu/runtime.cpp). */
struct firn_emu_thread {
    uint3 thread_idx, block_idx;
    dim3 block_dim, grid_dim;
};
/* __thread, not thread_local: no C++ TLS wrapper (with one, GCC 12 at -O2
 * under -fsanitize=null tested a stale flag and reported a null pointer). */
extern __thread firn_emu_thread *firn_emu_current;

#define threadIdx (firn_emu_current->thread_idx)
#define blockIdx  (firn_emu_current->block_idx)
#define blockDim  (firn_emu_current->block_dim)
#define gridDim   (firn_emu_current->grid_dim)
static constexpr int warpSize = 32;

/* Stops the process, naming the kernel being run, when p is not inside a
 * live device allocation (an atomic on host memory, or on freed memory). */
/* file and line: the atomic's call site in the kernel source, by which
 * FIRN_EMU_PROFILE groups a warp's lanes into one instruction (the k-th
 * atomic each lane issues at one site). cas_loop: a float add, which on
 * shared memory is a compare-and-swap loop on sm_80 and sm_90 (an integer
 * add, min, max or exchange is one native instruction there). */
void firn_emu_check_device_pointer(const void *p, size_t bytes, const char *what, const char *file,
                                   int line, int cas_loop);

template <typename T, typename F>
static inline T firn_emu_atomic_rmw(T *addr, F f, const char *what, const char *file, int line,
                                    int cas_loop = 0)
{
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics on 4 or 8 bytes");
    firn_emu_check_device_pointer(addr, sizeof(T), what, file, line, cas_loop);
    using W = typename std::conditional<sizeof(T) == 4, uint32_t, uint64_t>::type;
    W *w = reinterpret_cast<W *>(addr);
    W old_bits = __atomic_load_n(w, __ATOMIC_RELAXED);
    for (;;) {
        T old_value, new_value;
        std::memcpy(&old_value, &old_bits, sizeof(T));
        new_value = f(old_value);
        W new_bits;
        std::memcpy(&new_bits, &new_value, sizeof(T));
        if (__atomic_compare_exchange_n(w, &old_bits, new_bits, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return old_value;
    }
}

template <typename T>
static inline T atomicAdd(T *addr, T value, const char *file = __builtin_FILE(),
                          int line = __builtin_LINE())
{
    return firn_emu_atomic_rmw(
        addr, [value](T a) { return a + value; }, "atomicAdd", file, line,
        (int)std::is_floating_point<T>::value);
}
/* sm_90's vector atomic: each component added atomically on its own (as
 * CUDA documents it, not one 16-byte transaction), on global memory only,
 * at a 16-byte aligned address; anything else stops the process. */
void firn_emu_check_global_vector(const void *p, size_t bytes, const char *what);
static inline float4 atomicAdd(float4 *addr, float4 value, const char *file = __builtin_FILE(),
                               int line = __builtin_LINE())
{
    firn_emu_check_global_vector(addr, sizeof(float4), "atomicAdd(float4)");
    float4 old;
    old.x = atomicAdd(&addr->x, value.x, file, line);
    old.y = atomicAdd(&addr->y, value.y, file, line);
    old.z = atomicAdd(&addr->z, value.z, file, line);
    old.w = atomicAdd(&addr->w, value.w, file, line);
    return old;
}
template <typename T>
static inline T atomicMin(T *addr, T value, const char *file = __builtin_FILE(),
                          int line = __builtin_LINE())
{
    return firn_emu_atomic_rmw(
        addr, [value](T a) { return value < a ? value : a; }, "atomicMin", file, line);
}
template <typename T>
static inline T atomicMax(T *addr, T value, const char *file = __builtin_FILE(),
                          int line = __builtin_LINE())
{
    return firn_emu_atomic_rmw(
        addr, [value](T a) { return value > a ? value : a; }, "atomicMax", file, line);
}
template <typename T>
static inline T atomicExch(T *addr, T value, const char *file = __builtin_FILE(),
                           int line = __builtin_LINE())
{
    return firn_emu_atomic_rmw(
        addr, [value](T) { return value; }, "atomicExch", file, line);
}
template <typename T>
static inline T atomicCAS(T *addr, T compare, T value, const char *file = __builtin_FILE(),
                          int line = __builtin_LINE())
{
    return firn_emu_atomic_rmw(
        addr, [compare, value](T a) { return a == compare ? value : a; }, "atomicCAS", file, line);
}

/* A float's bits as an int. */
static inline int __float_as_int(float x)
{
    int i;
    std::memcpy(&i, &x, sizeof i);
    return i;
}
static inline float __int_as_float(int i)
{
    float x;
    std::memcpy(&x, &i, sizeof x);
    return x;
}

/* A load through the read-only data cache: device memory only, aligned to
 * the loaded type's alignment (16 bytes for a float4). */
void firn_emu_check_ldg(const void *p, size_t bytes, size_t align);
template <typename T> static inline T __ldg(const T *p)
{
    firn_emu_check_ldg(p, sizeof(T), alignof(T));
    return *p;
}

/* Barriers: the calling thread's fiber waits until the others arrive. */
void __syncthreads(void);
/* A fence: a sequentially consistent read-modify-write of one word that
 * every fence shares, so that what a thread wrote before its fence happens
 * before what another reads after a later fence (as a standalone C++ fence
 * would, but seen by ThreadSanitizer, which does not model those). */
void __threadfence(void);
/* Warp collectives over the lanes of mask, which must all arrive (a lane of
 * the mask that has exited stops the process). lane_value: this lane's 8
 * bytes in, the source lane's out. */
enum firn_emu_warp_op {
    FIRN_EMU_SHFL,
    FIRN_EMU_SHFL_DOWN,
    FIRN_EMU_SHFL_UP,
    FIRN_EMU_SHFL_XOR,
    FIRN_EMU_VOTE,
    FIRN_EMU_SYNC
};
uint64_t firn_emu_warp_collective(unsigned mask, firn_emu_warp_op op, uint64_t lane_value, int arg,
                                  int width, const char *what);

static inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    firn_emu_warp_collective(mask, FIRN_EMU_SYNC, 0, 0, 32, "__syncwarp");
}

template <typename T>
static inline T firn_emu_shfl(unsigned mask, T v, firn_emu_warp_op op, int arg, int width,
                              const char *what)
{
    static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    bits = firn_emu_warp_collective(mask, op, bits, arg, width, what);
    T out;
    std::memcpy(&out, &bits, sizeof(T));
    return out;
}
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
    return firn_emu_shfl(mask, v, FIRN_EMU_SHFL, src, width, "__shfl_sync");
}
template <typename T>
static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32)
{
    return firn_emu_shfl(mask, v, FIRN_EMU_SHFL_DOWN, (int)d, width, "__shfl_down_sync");
}
/* The lowest set bit's position, 1-based; 0 for 0 (CUDA's __ffs). */
static inline int __ffs(int x) { return __builtin_ffs(x); }

template <typename T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32)
{
    return firn_emu_shfl(mask, v, FIRN_EMU_SHFL_UP, (int)d, width, "__shfl_up_sync");
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32)
{
    return firn_emu_shfl(mask, v, FIRN_EMU_SHFL_XOR, m, width, "__shfl_xor_sync");
}
/* Votes return the ballot of the mask's lanes; any/all derive from it. */
static inline unsigned __ballot_sync(unsigned mask, int p)
{
    return (unsigned)firn_emu_warp_collective(mask, FIRN_EMU_VOTE, p != 0, 0, 32, "__ballot_sync");
}
static inline int __any_sync(unsigned mask, int p)
{
    return firn_emu_warp_collective(mask, FIRN_EMU_VOTE, p != 0, 0, 32, "__any_sync") != 0;
}
static inline int __all_sync(unsigned mask, int p)
{
    return firn_emu_warp_collective(mask, FIRN_EMU_VOTE, p != 0, 0, 32, "__all_sync") == mask;
}

/* ---- launches -------------------------------------------------------------- */

namespace firn_emu
{

/* A queued kernel: its arguments converted to the kernel's parameter types
 * at launch, as CUDA copies them, and each thread called with a copy. */
struct kernel_job {
    const char *name, *file;
    int line;
    virtual ~kernel_job() {}
    virtual void run_thread() = 0;
    /* Calls f(index, address, bytes) for each parameter's bytes. */
    virtual void each_param(void (*f)(void *ctx, int index, const void *p, size_t bytes),
                            void *ctx) = 0;
};

template <typename... P> struct kernel_job_of : kernel_job {
    void (*kernel)(P...);
    std::tuple<typename std::decay<P>::type...> args;
    template <typename... A>
    kernel_job_of(void (*k)(P...), A &&...a) : kernel(k), args(std::forward<A>(a)...)
    {
    }
    void run_thread() override { std::apply(kernel, args); }
    void each_param(void (*f)(void *, int, const void *, size_t), void *ctx) override
    {
        each(f, ctx, std::index_sequence_for<P...>{});
    }
    template <size_t... I>
    void each(void (*f)(void *, int, const void *, size_t), void *ctx, std::index_sequence<I...>)
    {
        (f(ctx, (int)I, &std::get<I>(args), sizeof(std::get<I>(args))), ...);
    }
};

/* Checks the configuration and the arguments, then queues the job on the
 * stream; cudaGetLastError reports a bad configuration. */
void enqueue_kernel(kernel_job *job, dim3 grid, dim3 block, size_t shared_bytes,
                    cudaStream_t stream);

template <typename... P, typename... A>
static inline void launch(const char *name, const char *file, int line, void (*kernel)(P...),
                          dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                          A &&...args)
{
    static_assert(sizeof...(P) == sizeof...(A), "a kernel launch passes every parameter");
    kernel_job *job = new kernel_job_of<P...>(kernel, std::forward<A>(args)...);
    job->name = name;
    job->file = file;
    job->line = line;
    enqueue_kernel(job, grid, block, shared_bytes, stream);
}

/* A device-wide operation queued on a stream (the CUB stand-ins). */
struct host_job {
    const char *name;
    virtual ~host_job() {}
    virtual void run() = 0;
};
void enqueue_host_job(host_job *job, cudaStream_t stream, const void *const *device_ptrs, int n);
/* The bytes of a live device allocation from p to its end, or 0. */
size_t device_bytes_from(const void *p);
/* Stops the process naming the problem (what) as emulation finds it. */
[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

} // namespace firn_emu

#define FIRN_EMU_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                            \
    firn_emu::launch(#kernel, __FILE__, __LINE__, kernel, grid, block, shared_bytes, stream,       \
                     __VA_ARGS__)

#endif
