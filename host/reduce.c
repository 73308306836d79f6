/* reduce.c - deterministic chunked sums on the CPU path (reduce.h). */
#include <stddef.h>

#include "reduce.h"

long long firn_reduce_chunks(long long n, long long chunk) { return (n + chunk - 1) / chunk; }

long long firn_reduce_run(long long n, long long chunk, int stride, double *chunk_acc,
                          const unsigned char *live, firn_chunk_fn fn, void *ctx)
{
    const long long chunks = firn_reduce_chunks(n, chunk);
    long long bad = FIRN_REDUCE_NONE;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (long long ch = 0; ch < chunks; ch++) {
        double *acc = chunk_acc + ch * stride;
        for (int k = 0; k < stride; k++)
            acc[k] = 0.0;
        if (live && !live[ch])
            continue;
        const long long end = (ch + 1) * chunk < n ? (ch + 1) * chunk : n;
        const long long b = fn(ch * chunk, end, acc, ctx);
        if (b < bad)
            bad = b;
    }
    return bad;
}

void firn_reduce_add(const double *chunk_acc, long long chunks, int stride, int offset, int count,
                     double *dst)
{
    for (long long ch = 0; ch < chunks; ch++)
        for (int k = 0; k < count; k++)
            dst[k] += chunk_acc[ch * stride + offset + k];
}

long long firn_reduce_sum(long long n, long long chunk, int stride, double *chunk_acc,
                          firn_chunk_fn fn, void *ctx, double *dst)
{
    const long long bad = firn_reduce_run(n, chunk, stride, chunk_acc, NULL, fn, ctx);
    firn_reduce_add(chunk_acc, firn_reduce_chunks(n, chunk), stride, 0, stride, dst);
    return bad;
}
