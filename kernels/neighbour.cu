/* neighbour.cu - the neighbour grid's CUDA build (kernels/neighbour.cuh),
 * the twin of host/neighbour.c's counting sort. */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "error.h"
#include "neighbour.cuh"
#include "align.h"

#define FIRN_NBR_BLOCK 256

static unsigned blocks_for(long long n)
{
    return (unsigned)((n + FIRN_NBR_BLOCK - 1) / FIRN_NBR_BLOCK);
}

static __global__ void nbr_iota(int *ids, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        ids[i] = i;
}

/* The cell of each particle, and the per-cell count (count zeroed before). */
static __global__ void nbr_keys(firn_nbr_space S, const float *x, int n, unsigned *key, int *count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned c = firn_nbr_cell_of(&S, firn_load3(x, n, i));
        key[i] = c;
        atomicAdd(&count[c], 1);
    }
}

/* end = start + count: an empty cell's start and end are both where it
 * would begin, as the cursor requires. */
static __global__ void nbr_ends(const int *start, const int *count, int *end, int cells)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cells)
        end[c] = start[c] + count[c];
}

static cudaError_t sort_call(firn_nbr_cuda *N, void *temp, size_t &bytes, cudaStream_t st)
{
    return cub::DeviceRadixSort::SortPairs(temp, bytes, N->G.key, N->key_sorted, N->ids,
                                           N->G.sorted, N->n, 0, N->end_bit, st);
}

static cudaError_t scan_call(firn_nbr_cuda *N, void *temp, size_t &bytes, cudaStream_t st)
{
    return cub::DeviceScan::ExclusiveSum(temp, bytes, N->count, N->G.start, N->G.cells, st);
}

size_t firn_cuda_nbr_layout(int n, int cells, char *base, firn_nbr_cuda *N)
{
    const size_t nn = (size_t)n, nc = (size_t)cells;
    const size_t bytes[7] = {nn * 4, nn * 4, nc * 4, nc * 4, nn * 4, nn * 4, nc * 4};
    size_t off[7], total = 0;
    for (int k = 0; k < 7; k++) {
        off[k] = total;
        total += firn_align256(bytes[k]);
    }
    if (base) {
        N->n = n;
        N->G.cells = cells;
        N->G.key = (unsigned *)(base + off[0]);
        N->G.sorted = (int *)(base + off[1]);
        N->G.start = (int *)(base + off[2]);
        N->G.end = (int *)(base + off[3]);
        N->G.nbr = N->G.nbr_count = NULL;
        N->key_sorted = (unsigned *)(base + off[4]);
        N->ids = (int *)(base + off[5]);
        N->count = (int *)(base + off[6]);
    }
    return total;
}

int firn_cuda_nbr_scratch(firn_nbr_cuda *N, int n, int cells, size_t *bytes, firn_error *err)
{
    N->n = n;
    N->G.cells = cells;
    N->end_bit = 1;
    while (N->end_bit < 32 && ((unsigned)(cells - 1) >> N->end_bit) != 0)
        N->end_bit++;
    size_t sort_b = 0, scan_b = 0;
    FIRN_CUDA_CHECK(sort_call(N, NULL, sort_b, 0), err);
    FIRN_CUDA_CHECK(scan_call(N, NULL, scan_b, 0), err);
    *bytes = sort_b > scan_b ? sort_b : scan_b;
    return 0;
}

int firn_cuda_nbr_reset(firn_nbr_cuda *N, cudaStream_t st, firn_error *err)
{
    const size_t bytes = firn_cuda_nbr_layout(N->n, N->G.cells, NULL, NULL);
    FIRN_CUDA_CHECK(cudaMemsetAsync(N->G.key, 0, bytes, st), err);
    FIRN_LAUNCH(nbr_iota, blocks_for(N->n), FIRN_NBR_BLOCK, 0, st, N->ids, N->n);
    FIRN_CUDA_CHECK_LAUNCH("nbr_iota", st, err);
    return 0;
}

int firn_cuda_nbr_queue_build(firn_nbr_cuda *N, const firn_nbr_space *S, const float *x,
                              cudaStream_t st, firn_error *err)
{
    const int n = N->n, cells = N->G.cells;
    FIRN_CUDA_CHECK(cudaMemsetAsync(N->count, 0, (size_t)cells * sizeof(int), st), err);
    FIRN_LAUNCH(nbr_keys, blocks_for(n), FIRN_NBR_BLOCK, 0, st, *S, x, n, N->G.key, N->count);
    FIRN_CUDA_CHECK_LAUNCH("nbr_keys", st, err);
    size_t bytes = N->temp_bytes;
    FIRN_CUDA_CHECK(scan_call(N, N->temp, bytes, st), err);
    FIRN_LAUNCH(nbr_ends, blocks_for(cells), FIRN_NBR_BLOCK, 0, st, N->G.start, N->count, N->G.end,
                cells);
    FIRN_CUDA_CHECK_LAUNCH("nbr_ends", st, err);
    bytes = N->temp_bytes;
    FIRN_CUDA_CHECK(sort_call(N, N->temp, bytes, st), err);
    return 0;
}

int firn_cuda_nbr_download(const firn_nbr_cuda *N, int *sorted, int *start, int *end,
                           cudaStream_t st, firn_error *err)
{
    const size_t n = (size_t)N->n, cells = (size_t)N->G.cells;
    FIRN_CUDA_CHECK(
        cudaMemcpyAsync(sorted, N->G.sorted, n * sizeof(int), cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(
        cudaMemcpyAsync(start, N->G.start, cells * sizeof(int), cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(end, N->G.end, cells * sizeof(int), cudaMemcpyDeviceToHost, st),
                    err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    return 0;
}
