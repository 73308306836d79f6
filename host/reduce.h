/* reduce.h - the CPU path's deterministic sums over items: impulses on
 * rigid bodies and tools summed from grid nodes, particles or surface
 * vertices. The items are cut into fixed chunks; each chunk sums its
 * items in index order into its own slot of `stride` doubles, in parallel;
 * the slots are then added in chunk order. The result does not depend on
 * the thread count. */
#ifndef FIRN_REDUCE_H
#define FIRN_REDUCE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Items [begin, end) of one chunk, summed into acc (stride doubles,
 * cleared). Returns the lowest index of a bad item in the chunk (a
 * non-finite state), or FIRN_REDUCE_NONE. */
typedef long long (*firn_chunk_fn)(long long begin, long long end, double *acc, void *ctx);

#define FIRN_REDUCE_NONE 0x7fffffffffffffffLL

/* The number of chunks of `chunk` items that n items make. */
long long firn_reduce_chunks(long long n, long long chunk);

/* Runs fn over the chunks of n items in parallel, each into its slot of
 * chunk_acc (firn_reduce_chunks(n, chunk) slots of stride doubles),
 * skipping the chunks whose live[] entry is 0 (their slot is cleared;
 * live may be NULL: every chunk). Returns the lowest bad index any chunk
 * reported, or FIRN_REDUCE_NONE. */
long long firn_reduce_run(long long n, long long chunk, int stride, double *chunk_acc,
                          const unsigned char *live, firn_chunk_fn fn, void *ctx);

/* firn_reduce_run without skipped chunks, then every slot added whole to
 * dst[0..stride) in chunk order (firn_reduce_add). Returns as
 * firn_reduce_run. */
long long firn_reduce_sum(long long n, long long chunk, int stride, double *chunk_acc,
                          firn_chunk_fn fn, void *ctx, double *dst);

/* Adds entries [offset, offset + count) of every slot to dst[0..count),
 * in chunk order. */
void firn_reduce_add(const double *chunk_acc, long long chunks, int stride, int offset, int count,
                     double *dst);

#ifdef __cplusplus
}
#endif

#endif
