/* neighbour.c - the neighbour grid's CPU build (include/firn_neighbour.h),
 * for every particle solver that searches neighbours (SPH, PBD): a stable
 * counting sort of the particles by cell, then, when the grid has room for
 * them, each particle's neighbour list in the walk's order. The CUDA build
 * is kernels/neighbour.cu. */
#include <string.h>

#include "neighbour.h"

/* Each particle's neighbours, in the cell walk's order, so that the passes
 * of a substep read them instead of walking 27 cells (valid while the
 * positions do not change); a particle with more than FIRN_NBR_MAX keeps
 * walking the cells. */
static void list_neighbours(const firn_nbr_space *S, firn_nbr_grid *G, const float *x, int n)
{
    firn_nbr_grid cells = *G;
    cells.nbr = NULL; /* walk the cells */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        firn_vec3 xi = firn_load3(x, n, i), d;
        int *list = G->nbr + (size_t)i * FIRN_NBR_MAX, j, k = 0;
        float r;
        firn_nbr_cursor c = firn_nbr_cursor_at(S, xi);
        while (firn_nbr_next(&c, S, cells, x, n, i, xi, &j, &d, &r)) {
            if (k == FIRN_NBR_MAX) {
                k = -1;
                break;
            }
            list[k++] = j;
        }
        G->nbr_count[i] = k;
    }
}

void firn_nbr_cpu_build(const firn_nbr_space *S, firn_nbr_grid *G, const float *x, int n,
                        int *count)
{
    const int cells = G->cells;
    memset(count, 0, ((size_t)cells + 1) * sizeof(int));
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        G->key[i] = firn_nbr_cell_of(S, firn_load3(x, n, i));
    /* Counting sort, stable: cell by cell, particles in index order. */
    for (int i = 0; i < n; i++)
        count[G->key[i] + 1]++;
    for (int c = 0; c < cells; c++)
        count[c + 1] += count[c];
    for (int c = 0; c < cells; c++)
        G->start[c] = G->end[c] = count[c];
    for (int i = 0; i < n; i++)
        G->sorted[G->end[G->key[i]]++] = i;
    if (G->nbr)
        list_neighbours(S, G, x, n);
}
