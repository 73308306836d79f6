/* gpu_skip.h - the one reason a test may skip: no usable CUDA GPU. */
#ifndef FIRN_TEST_GPU_SKIP_H
#define FIRN_TEST_GPU_SKIP_H

#include <criterion/criterion.h>

#include "firn.h"

/* Skips the calling test, naming why, when this build has no CUDA or no
 * device answers (no GPU, no driver, a driver older than the runtime). */
static inline void require_gpu(void)
{
    char why[512];
    if (!firn_cuda_available())
        cr_skip("no usable CUDA GPU: this firn was built without CUDA");
    if (firn_cuda_device_count() == 0) {
        firn_cuda_device_describe(0, why, sizeof why);
        cr_skip("no usable CUDA GPU: %s", why);
    }
}

#endif
