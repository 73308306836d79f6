/* firn_neighbour.h - the one neighbour search of the particle solvers (SPH
 * and PBD): a uniform grid of cells of edge h (the search radius) over a
 * box, rebuilt each substep by a stable sort of the particles by cell, and
 * a cursor that walks the particles within h of a point in one fixed
 * order on both paths. The CPU build is host/neighbour.c, the CUDA build
 * kernels/neighbour.cu. */
#ifndef FIRN_NEIGHBOUR_H
#define FIRN_NEIGHBOUR_H

#include "firn_math.h"

/* Where the cells lie: cell (a,b,c) covers lower + h [a,b,c] .. + h, and
 * has index (a*res[1] + b)*res[2] + c; points outside the box fall in the
 * nearest boundary cell. 32 bytes. */
typedef struct {
    float lower[3]; /* [m] */
    float h, inv_h; /* cell edge = search radius [m], its inverse [1/m] */
    int res[3];     /* cells per axis */
} firn_nbr_space;

/* The grid of one substep: sorted[] lists particle indices cell by cell,
 * ascending within a cell, and cell q holds sorted[start[q] .. end[q]).
 * 12 bytes per particle, 8 per cell. */
typedef struct {
    int cells;
    unsigned *key;  /* n: cell of each particle */
    int *sorted;    /* n */
    int *start;     /* cells */
    int *end;       /* cells */
    int *nbr;       /* CPU: FIRN_NBR_MAX neighbours per particle, listed once per substep in
                       the walk's order (NULL: every pass walks the cells) */
    int *nbr_count; /* CPU: n list lengths; -1 where a particle has more (it walks the cells) */
} firn_nbr_grid;

#define FIRN_NBR_MAX 96

/* The space of the box [lower, upper] with cells of edge h: as many as
 * cover it on each axis (at least one). */
static inline firn_nbr_space firn_nbr_space_of(const float lower[3], const float upper[3], float h)
{
    firn_nbr_space S;
    S.h = h;
    S.inv_h = 1.0f / h;
    for (int a = 0; a < 3; a++) {
        S.lower[a] = lower[a];
        S.res[a] = (int)ceilf((upper[a] - lower[a]) * S.inv_h - 1e-4f);
        S.res[a] = S.res[a] < 1 ? 1 : S.res[a];
    }
    return S;
}

/* Cell coordinate of x on axis a, clamped into the grid. */
static inline FIRN_HD int firn_nbr_cell_axis(const firn_nbr_space *S, float x, int a)
{
    return firn_floor_index((x - S->lower[a]) * S->inv_h, S->res[a] - 1);
}

static inline FIRN_HD unsigned firn_nbr_cell_of(const firn_nbr_space *S, firn_vec3 x)
{
    int c[3];
    for (int a = 0; a < 3; a++)
        c[a] = firn_nbr_cell_axis(S, x.v[a], a);
    return (unsigned)((c[0] * S->res[1] + c[1]) * S->res[2] + c[2]);
}

/* Walks the neighbours of a point: the particles of the 27 cells around its
 * cell, as 9 runs of up to 3 cells adjacent in index (and so in sorted[]),
 * by particle index within a cell, so that every sum over neighbours has
 * one order on both paths. start[] and end[] of an empty cell both hold
 * where it would begin, so a run's range is start[first] .. end[last]. */
typedef struct {
    int base[3];
    int d;           /* next of the 9 runs, 0..9 */
    int k, end;      /* range left in the current run */
    const int *list; /* the particle's neighbour list when there is one, else NULL */
    int li, ln;      /* position in it, and its length */
} firn_nbr_cursor;

static inline FIRN_HD firn_nbr_cursor firn_nbr_cursor_at(const firn_nbr_space *S, firn_vec3 x)
{
    firn_nbr_cursor c;
    for (int a = 0; a < 3; a++)
        c.base[a] = firn_nbr_cell_axis(S, x.v[a], a) - 1;
    c.d = 0;
    c.k = c.end = 0;
    c.list = NULL;
    c.li = c.ln = 0;
    return c;
}

/* The walk for particle i at x: its neighbour list when the grid has one
 * (the same particles in the same order as the cell walk), else the cells. */
static inline FIRN_HD firn_nbr_cursor firn_nbr_cursor_for(const firn_nbr_space *S, firn_nbr_grid G,
                                                          int i, firn_vec3 x)
{
    firn_nbr_cursor c = firn_nbr_cursor_at(S, x);
    if (G.nbr && G.nbr_count[i] >= 0) {
        c.list = G.nbr + (size_t)i * FIRN_NBR_MAX;
        c.ln = G.nbr_count[i];
    }
    return c;
}

/* The next particle j != self within distance h of x (strict), with
 * d = x - x_j and r = |d|; 0 when there is none left. self < 0 skips none. */
static inline FIRN_HD int firn_nbr_next(firn_nbr_cursor *c, const firn_nbr_space *S,
                                        firn_nbr_grid G, const float *X, int n, int self,
                                        firn_vec3 x, int *j, firn_vec3 *d, float *r)
{
    const float h2 = S->h * S->h;
    if (c->list) {
        if (c->li >= c->ln)
            return 0;
        int q = c->list[c->li++];
        firn_vec3 e = firn_sub(x, firn_load3(X, n, q));
        *j = q;
        *d = e;
        *r = sqrtf(firn_dot(e, e));
        return 1;
    }
    for (;;) {
        while (c->k < c->end) {
            int q = G.sorted[c->k++];
            if (q == self)
                continue;
            firn_vec3 e = firn_sub(x, firn_load3(X, n, q));
            float r2 = firn_dot(e, e);
            if (r2 < h2) {
                *j = q;
                *d = e;
                *r = sqrtf(r2);
                return 1;
            }
        }
        if (c->d >= 9)
            return 0;
        int a = c->base[0] + c->d / 3, b = c->base[1] + c->d % 3;
        c->d++;
        if (a < 0 || b < 0 || a >= S->res[0] || b >= S->res[1])
            continue;
        int lo = c->base[2] < 0 ? 0 : c->base[2];
        int hi = c->base[2] + 2 < S->res[2] ? c->base[2] + 2 : S->res[2] - 1;
        int column = (a * S->res[1] + b) * S->res[2];
        c->k = G.start[column + lo];
        c->end = G.end[column + hi];
    }
}

#endif
