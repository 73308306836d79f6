/* gpu_compare.h - what the GPU tests share: a world on either backend, a
 * seeded random stream for perturbed states, and the comparisons of a GPU
 * field with the CPU path's. */
#ifndef FIRN_TEST_GPU_COMPARE_H
#define FIRN_TEST_GPU_COMPARE_H

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "firn.h"

/* A world of def run as run says (firn_world_create_with). */
static inline firn_world *make_world_run(const firn_scene_def *def, const firn_run_options *run)
{
    firn_error err = {0};
    firn_world *w = firn_world_create_with(def, run, &err);
    cr_assert(w, "firn_world_create_with (%s backend) failed: %s",
              run->backend == FIRN_BACKEND_CUDA ? "cuda" : "cpu", err.msg);
    return w;
}

static inline firn_world *make_world(const firn_scene_def *def, firn_backend backend)
{
    firn_run_options run = firn_run_options_default();
    run.backend = backend;
    return make_world_run(def, &run);
}

/* The run options on backend with P2G variant p2g, the others auto. */
static inline firn_run_options run_p2g(firn_backend backend, int p2g)
{
    firn_run_options run = firn_run_options_default();
    run.backend = backend;
    run.p2g = p2g;
    return run;
}

/* A 64-bit LCG (Knuth's MMIX constants): set rng_state to seed, then each
 * frand is uniform in [lo, hi) with 24 bits. */
static uint64_t rng_state;
static inline float frand(float lo, float hi)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (float)(rng_state >> 40) / 16777216.0f;
}

/* |gpu - cpu| <= 1e-5 scale + 1e-4 |cpu| over count values (component c
 * of item i at c n + i), scale the largest |cpu| and at least floor: the
 * single-precision rounding of a few dozen operations relative to the
 * field's own size. Reports the worst element; returns the largest
 * |gpu - cpu| / scale. A NaN on either side fails. */
static inline double expect_close_floor(const char *label, const char *what, const float *gpu,
                                        const float *cpu, long long count, long long n,
                                        double floor)
{
    double scale = floor;
    for (long long k = 0; k < count; k++)
        scale = fmax(scale, fabs((double)cpu[k]));
    double worst = 0.0, worst_rel = 0.0;
    long long at = -1;
    for (long long k = 0; k < count; k++) {
        double d = fabs((double)gpu[k] - (double)cpu[k]);
        double r = d == 0.0 ? 0.0 : d / (1e-5 * scale + 1e-4 * fabs((double)cpu[k]));
        if (isnan(r))
            r = INFINITY;
        if (at < 0 || r > worst) {
            worst = r;
            at = k;
        }
        if (scale > 0.0)
            worst_rel = fmax(worst_rel, d / scale);
    }
    if (at < 0)
        return 0.0;
    cr_log_info("%s: %-6s max |gpu - cpu| / scale %.3g (scale %.4g)", label, what, worst_rel,
                scale);
    cr_expect(worst <= 1.0,
              "%s: %s differs beyond 1e-5 scale + 1e-4 |cpu| (scale %g): worst at element %lld "
              "(item %lld, component %lld): gpu %.9g, cpu %.9g, |diff| %.3g (%.3g x the "
              "tolerance)",
              label, what, scale, at, at % n, at / n, (double)gpu[at], (double)cpu[at],
              fabs((double)gpu[at] - cpu[at]), worst);
    return worst_rel;
}

static inline double expect_close(const char *label, const char *what, const float *gpu,
                                  const float *cpu, long long count, long long n)
{
    return expect_close_floor(label, what, gpu, cpu, count, n, 0.0);
}

/* The emulated runtime runs the kernels' code as the CPU path does, without
 * FMA contraction: there the state must be the CPU's bit for bit. On a GPU
 * this checks nothing (expect_close does). */
static inline void expect_bitwise_on_emulation(const char *label, const char *what,
                                               const float *gpu, const float *cpu, long long count)
{
#ifdef FIRN_EMU_BUILD
    long long first = -1;
    for (long long k = 0; k < count && first < 0; k++)
        if (memcmp(&gpu[k], &cpu[k], sizeof(float)) != 0)
            first = k;
    cr_expect_eq(first, -1, "%s: %s differs from the CPU's on the emulated runtime at element %lld",
                 label, what, first);
#else
    (void)label, (void)what, (void)gpu, (void)cpu, (void)count;
#endif
}

#endif
