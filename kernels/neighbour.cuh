/* neighbour.cuh - the neighbour grid's CUDA build (kernels/neighbour.cu),
 * shared by the SPH and PBD solvers: keys and per-cell counts, CUB's
 * exclusive scan to start, end = start + count, and CUB's stable radix
 * sort of the particle indices by cell. The sort is stable (equal keys keep
 * the input order 0..n-1), so sorted[], start[] and end[] are the CPU
 * counting sort's (host/neighbour.c) and every neighbour sum runs in the
 * same order on both paths. All int functions return 0 or FIRN_CUDA_FAILED
 * with err filled. */
#ifndef FIRN_NEIGHBOUR_CUH
#define FIRN_NEIGHBOUR_CUH

#include "cuda_check.cuh"
#include "firn_neighbour.h"

/* A device grid and its sort's arrays, held by the solver that uses it. */
typedef struct {
    firn_nbr_grid G;      /* device: key, sorted, start, end (nbr is NULL) */
    unsigned *key_sorted; /* the radix sort's key output (n) */
    int *ids;             /* 0..n-1, the radix sort's value input */
    int *count;           /* particles per cell (cells) */
    void *temp;           /* CUB scratch of at least firn_cuda_nbr_scratch's bytes, the owner's */
    size_t temp_bytes;
    int n;
    int end_bit; /* bits of the largest cell index */
} firn_nbr_cuda;

/* The arrays of a grid for n particles and `cells` cells from base (key,
 * sorted, start, end, key_sorted, ids, count, each 256-byte aligned): sets
 * N's pointers when base is not NULL. Returns the bytes. */
size_t firn_cuda_nbr_layout(int n, int cells, char *base, firn_nbr_cuda *N);
/* Sets N's n, cells and end_bit, and *bytes to the CUB scratch its sort
 * and scan need (no allocation; N's arrays may be unset). */
int firn_cuda_nbr_scratch(firn_nbr_cuda *N, int n, int cells, size_t *bytes, firn_error *err);
/* After the layout: zeroes the arrays and fills ids with 0..n-1. */
int firn_cuda_nbr_reset(firn_nbr_cuda *N, cudaStream_t st, firn_error *err);
/* Queues the build from the n device positions x (3n, component-major). */
int firn_cuda_nbr_queue_build(firn_nbr_cuda *N, const firn_nbr_space *S, const float *x,
                              cudaStream_t st, firn_error *err);
/* Copies the grid into host arrays (sorted: n; start, end: cells) and
 * waits. */
int firn_cuda_nbr_download(const firn_nbr_cuda *N, int *sorted, int *start, int *end,
                           cudaStream_t st, firn_error *err);

#endif
