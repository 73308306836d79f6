/* bench.cu - what the benchmark measures of the device itself: copy
 * bandwidth (the roofline's memory ceiling) and memory in use. */
#include <cstdio>

#include "cuda_backend.h"

/* The best of three device-to-device copies of `bytes`, in B/s (read plus
 * write); 0 when any call fails, so that no figure comes from a failed copy. */
extern "C" double firn_cuda_copy_bandwidth(size_t bytes)
{
    void *a = NULL, *b = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double best = 0.0;
    if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess ||
        cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess ||
        cudaMemset(a, 1, bytes) != cudaSuccess ||
        cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice) != cudaSuccess) /* warm-up */
        goto done;
    for (int r = 0; r < 3; r++) {
        float ms = 0.0f;
        if (cudaEventRecord(e0) != cudaSuccess ||
            cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice) != cudaSuccess ||
            cudaEventRecord(e1) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess ||
            cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess) {
            best = 0.0;
            goto done;
        }
        if (ms > 0.0f) {
            double bw = 2.0 * (double)bytes / (1e-3 * ms);
            best = bw > best ? bw : best;
        }
    }
done:
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    (void)cudaGetLastError();
    return best;
}

extern "C" size_t firn_cuda_used_bytes(void)
{
    size_t free_b = 0, total = 0;
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return total - free_b;
}
