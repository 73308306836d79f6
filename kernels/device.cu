/* device.cu - which CUDA devices this process can use (include/firn.h).
 *
 * Never aborts: without a GPU, without a driver, or with a driver older than
 * the runtime this was built against, the count is 0 and the description
 * says why. The build without CUDA answers from host/device.c instead. */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#include "cuda_check.cuh"
#include "firn.h"

extern "C" int firn_cuda_available(void) { return 1; }

int firn_cuda_debug_sync(void)
{
#ifdef FIRN_DEBUG_SYNC
    return 1;
#else
    static const int on = [] {
        const char *e = getenv("FIRN_DEBUG_SYNC");
        return e && *e && strcmp(e, "0") != 0;
    }();
    return on;
#endif
}

extern "C" int firn_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

/* "12.4" from CUDA's 1000 * major + 10 * minor encoding. */
static void version_string(int v, char *buf, size_t size)
{
    snprintf(buf, size, "%d.%d", v / 1000, (v % 1000) / 10);
}

extern "C" int firn_cuda_device_describe(int index, char *buf, size_t size)
{
    int driver = 0, runtime = 0, n = 0;
    char dv[16], rv[16];
    (void)cudaDriverGetVersion(&driver); /* 0 when no driver is installed */
    (void)cudaRuntimeGetVersion(&runtime);
    version_string(driver, dv, sizeof dv);
    version_string(runtime, rv, sizeof rv);

    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (driver == 0)
            snprintf(buf, size, "device %d: no CUDA driver found (firn needs CUDA %s or newer)",
                     index, rv);
        else if (e == cudaErrorInsufficientDriver || driver < runtime)
            snprintf(buf, size,
                     "device %d: the NVIDIA driver is too old: it supports CUDA %s, firn was built "
                     "with CUDA %s; update the driver or rebuild with an older toolkit",
                     index, dv, rv);
        else if (e == cudaErrorNoDevice)
            snprintf(buf, size, "device %d: no CUDA device found (driver CUDA %s)", index, dv);
        else
            snprintf(buf, size, "device %d: CUDA is not usable: %s (driver CUDA %s, runtime %s)",
                     index, cudaGetErrorString(e), dv, rv);
        return -1;
    }
    if (index < 0 || index >= n) {
        snprintf(buf, size, "device %d: no such CUDA device (%d found)", index, n);
        return -1;
    }
    cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, index);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(buf, size, "device %d: cannot read its properties: %s", index,
                 cudaGetErrorString(e));
        return -1;
    }
    snprintf(buf, size,
             "device %d: %s, compute capability %d.%d, %d SMs, %.1f GiB, driver CUDA %s, "
             "runtime %s",
             index, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
             (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), dv, rv);
    return 0;
}
