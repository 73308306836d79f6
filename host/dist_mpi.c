/* dist_mpi.c - MPM across MPI ranks on the CPU path (docs/MPI.md).
 *
 * Decomposition: the grid's node blocks (BLOCK^3 nodes, host/solver_cpu.c)
 * form columns along x; rank r owns the columns [col_lo[r], col_lo[r+1]),
 * at least one each, chosen from the initial particles so that each rank
 * holds about as many particles, and chosen again at a frame boundary
 * when the ranks' counts drift apart (firn_mpi_rebalance). A particle belongs to the rank that
 * owns the column of its stencil's corner (base[0] / BLOCK, the block P2G
 * bins it by), so its 3 x 3 x 3 stencil lies in the rank's node planes
 * [lo, hi) plus the two planes above, [hi, hi + 2): the halo, which the
 * next rank owns.
 *
 * A substep (the hooks of host/dist.h):
 *   after P2G   each rank sends its halo planes' mass and momentum to the
 *               rank above, which adds them to its own lowest planes (its
 *               value first, then the received one: a fixed order); the
 *               sender zeroes its halo, so that its grid update and the
 *               rigid bodies' and tools' reactions count each node once,
 *               on its owner.
 *   after grid  the reactions on the rigid bodies and tools are gathered
 *               from every rank and summed in rank order, so that every
 *               rank integrates the same body; the owner's updated lowest
 *               planes go back to the halo of the rank below.
 *   after G2P   particles whose stencil corner left the slab go to the
 *               owner of their new column, with all their fields and their
 *               scene index; the received ones follow the kept ones, in
 *               rank order. Nothing is rebuilt on a rank that neither sends
 *               nor receives.
 * All sums and orders depend on the rank count only, never on timing, so
 * two runs on the same ranks give the same bits. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <omp.h>

#include "checkpoint.h"
#include "cpu_simd.h"
#include "dist.h"
#include "dist_mpi.h"
#include "error.h"
#include "sample.h"
#include "world.h"

enum { TAG_MASS = 11, TAG_VEL = 12, TAG_MIGRATE = 13 };

/* A particle on the wire: its scene index, x, v, C, F, Jp, damage, vol
 * (27 floats) and its material, 29 words. */
#define REC_FLOATS 27
#define REC_BYTES  (4 * (REC_FLOATS + 2))

typedef struct {
    MPI_Comm comm;
    int rank, size;
    int nb0, block;  /* node-block columns along x, nodes per block edge */
    int *col_lo;     /* [size + 1]: rank r owns columns col_lo[r] .. col_lo[r + 1] - 1 */
    int *owner;      /* [nb0]: the rank that owns each column */
    long long plane; /* nodes in one x plane (ny nz) */
    int lo, hi;      /* this rank's node planes [lo, hi) */
    int up, down;    /* halo planes sent up (above hi), received from below (from lo) */
    int total;       /* particles in the scene */
    int *gid;        /* [total]: scene index of each particle, in the local scene order */
    int *dest;       /* [total]: scratch, the rank each particle goes to */
    float *halo;     /* the planes received from below */
    double *acc, *acc_all;
    int nacc;
    /* Counters for firn_mpi_report. */
    long long halo_bytes, sent, received, rebuilds, substeps, rebalances;
    double t_halo, t_reduce, t_migrate, t_rebalance;
} dist_state;

static int g_rank, g_size = 1;

/* A particle record as one MPI element, so that message counts are in
 * particles: a count in bytes overflows an int past 2^31 / REC_BYTES
 * (18.5M) particles. */
static MPI_Datatype g_rec = MPI_DATATYPE_NULL;

static MPI_Datatype rec_type(void)
{
    if (g_rec == MPI_DATATYPE_NULL) {
        MPI_Type_contiguous(REC_BYTES, MPI_BYTE, &g_rec);
        MPI_Type_commit(&g_rec);
    }
    return g_rec;
}

int firn_mpi_init(int *argc, char ***argv)
{
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    return g_size;
}

void firn_mpi_finalize(void)
{
    if (g_rec != MPI_DATATYPE_NULL)
        MPI_Type_free(&g_rec);
    MPI_Finalize();
}
int firn_mpi_rank(void) { return g_rank; }
int firn_mpi_size(void) { return g_size; }

int firn_mpi_any(int value)
{
    int v = value != 0, any = 0;
    MPI_Allreduce(&v, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

static void fatal(const char *what)
{
    fprintf(stderr, "firn: rank %d: %s\n", g_rank, what);
    MPI_Abort(MPI_COMM_WORLD, FIRN_E_NOMEM);
}

/* The column of a particle: its stencil corner's block along x, as P2G
 * bins it (firn_cpu_make_stencil). */
static int column_of(const firn_world *w, const dist_state *d, int k)
{
    const firn_stencil s = firn_cpu_make_stencil(&w->params, firn_load3(w->p.x, w->p.n, k));
    int c = s.base[0] / d->block;
    return c < 0 ? 0 : c >= d->nb0 ? d->nb0 - 1 : c;
}

/* Marks every node block of column c as written by this substep's P2G, so
 * that the grid update visits it and the next substep clears it. */
static void mark_column(firn_world *w, int c)
{
    firn_cpu_bins *b = &w->bins;
    if (!b->dirty_valid)
        return;
    const int per = b->nb[1] * b->nb[2];
    for (int blk = c * per; blk < (c + 1) * per; blk++)
        if (!b->touched[blk]) {
            b->touched[blk] = 1;
            b->dirty[b->ndirty++] = blk;
        }
}

static void after_p2g(firn_world *w)
{
    dist_state *d = w->dist_state;
    const double t0 = MPI_Wtime();
    float *node = w->grid.node;
    const size_t pf = 4 * (size_t)d->plane;
    MPI_Request rq[2];
    int nr = 0;
    if (d->down)
        MPI_Irecv(d->halo, (int)(d->down * pf), MPI_FLOAT, d->rank - 1, TAG_MASS, d->comm,
                  &rq[nr++]);
    if (d->up)
        MPI_Isend(node + d->hi * pf, (int)(d->up * pf), MPI_FLOAT, d->rank + 1, TAG_MASS, d->comm,
                  &rq[nr++]);
    MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
    if (d->down) {
        float *q = node + d->lo * pf;
        const long long m = (long long)(d->down * pf);
#pragma omp parallel for schedule(static)
        for (long long i = 0; i < m; i++)
            q[i] += d->halo[i];
        mark_column(w, d->lo / d->block);
    }
    if (d->up) {
        memset(node + d->hi * pf, 0, d->up * pf * sizeof(float));
        mark_column(w, d->hi / d->block);
    }
    d->halo_bytes += (long long)(d->up + d->down) * (long long)pf * 4;
    d->t_halo += MPI_Wtime() - t0;
}

static void after_grid(firn_world *w)
{
    dist_state *d = w->dist_state;
    double t0 = MPI_Wtime();
    const int nr = w->n_rigids * FIRN_RIGID_ACC, nt = w->n_tools * FIRN_TOOL_ACC;
    if (d->nacc > 0) {
        memcpy(d->acc, w->rigid_acc, (size_t)nr * sizeof(double));
        memcpy(d->acc + nr, w->tool_acc, (size_t)nt * sizeof(double));
        MPI_Allgather(d->acc, d->nacc, MPI_DOUBLE, d->acc_all, d->nacc, MPI_DOUBLE, d->comm);
        for (int k = 0; k < d->nacc; k++) {
            double s = 0.0;
            for (int r = 0; r < d->size; r++) /* rank order, the same on every rank */
                s += d->acc_all[(size_t)r * d->nacc + k];
            d->acc[k] = s;
        }
        memcpy(w->rigid_acc, d->acc, (size_t)nr * sizeof(double));
        memcpy(w->tool_acc, d->acc + nr, (size_t)nt * sizeof(double));
    }
    const double t1 = MPI_Wtime();
    d->t_reduce += t1 - t0;
    float *node = w->grid.node;
    const size_t pf = 4 * (size_t)d->plane;
    MPI_Request rq[2];
    int n = 0;
    if (d->up)
        MPI_Irecv(node + d->hi * pf, (int)(d->up * pf), MPI_FLOAT, d->rank + 1, TAG_VEL, d->comm,
                  &rq[n++]);
    if (d->down)
        MPI_Isend(node + d->lo * pf, (int)(d->down * pf), MPI_FLOAT, d->rank - 1, TAG_VEL, d->comm,
                  &rq[n++]);
    MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
    d->halo_bytes += (long long)(d->up + d->down) * (long long)pf * 4;
    d->t_halo += MPI_Wtime() - t1;
}

static void pack(const firn_world *w, int k, int g, unsigned char *rec)
{
    const firn_particles p = w->p;
    float f[REC_FLOATS];
    const firn_vec3 x = firn_load3(p.x, p.n, k), v = firn_load3(p.v, p.n, k);
    const firn_mat3 C = firn_load9(p.C, p.n, k), F = firn_load9(p.F, p.n, k);
    for (int a = 0; a < 3; a++) {
        f[a] = x.v[a];
        f[3 + a] = v.v[a];
    }
    for (int c = 0; c < 9; c++) {
        f[6 + c] = C.m[c];
        f[15 + c] = F.m[c];
    }
    f[24] = p.Jp[k];
    f[25] = p.damage[k];
    f[26] = p.vol[k];
    const int mat = p.mat[k];
    memcpy(rec, &g, 4);
    memcpy(rec + 4, f, sizeof f);
    memcpy(rec + 4 + sizeof f, &mat, 4);
}

/* Record rec into particle k of p; its scene index returned. */
static int unpack(firn_particles p, int k, const unsigned char *rec)
{
    float f[REC_FLOATS];
    int g, mat;
    memcpy(&g, rec, 4);
    memcpy(f, rec + 4, sizeof f);
    memcpy(&mat, rec + 4 + sizeof f, 4);
    firn_mat3 C, F;
    for (int c = 0; c < 9; c++) {
        C.m[c] = f[6 + c];
        F.m[c] = f[15 + c];
    }
    firn_store3(p.x, p.n, k, firn_v3(f[0], f[1], f[2]));
    firn_store3(p.v, p.n, k, firn_v3(f[3], f[4], f[5]));
    firn_store9(p.C, p.n, k, C);
    firn_store9(p.F, p.n, k, F);
    p.Jp[k] = f[24];
    p.damage[k] = f[25];
    p.vol[k] = f[26];
    p.mat[k] = (uint8_t)mat;
    return g;
}

/* The scene index of the particle at position k of the solver's layout. */
static int gid_at(const firn_world *w, const dist_state *d, int k)
{
    const firn_cpu_bins *b = &w->bins;
    return d->gid[b->in_scene_order ? k : b->id[k]];
}

/* The local particles become those at positions where dest is this rank
 * (in position order), then the nrecv records of recv. */
static void rebuild(firn_world *w, dist_state *d, const unsigned char *recv, int nrecv)
{
    const int n = w->p.n;
    int keep = 0;
    for (int k = 0; k < n; k++)
        keep += d->dest[k] == d->rank;
    firn_particles np;
    if (firn_particles_alloc(&np, keep + nrecv))
        fatal("out of host memory migrating particles");
    int *gid = malloc(((size_t)d->total + 1) * sizeof(int));
    if (!gid)
        fatal("out of host memory migrating particles");
    int j = 0;
    for (int k = 0; k < n; k++) {
        if (d->dest[k] != d->rank)
            continue;
        firn_store3(np.x, np.n, j, firn_load3(w->p.x, n, k));
        firn_store3(np.v, np.n, j, firn_load3(w->p.v, n, k));
        firn_store9(np.C, np.n, j, firn_load9(w->p.C, n, k));
        firn_store9(np.F, np.n, j, firn_load9(w->p.F, n, k));
        np.Jp[j] = w->p.Jp[k];
        np.damage[j] = w->p.damage[k];
        np.vol[j] = w->p.vol[k];
        np.mat[j] = w->p.mat[k];
        gid[j++] = gid_at(w, d, k);
    }
    for (int r = 0; r < nrecv; r++, j++)
        gid[j] = unpack(np, j, recv + (size_t)r * REC_BYTES);
    firn_particles_free(&w->p);
    w->p = np;
    free(d->gid);
    d->gid = gid;
    firn_cpu_bins *b = &w->bins;
    for (int k = 0; k < w->p.n; k++)
        b->id[k] = k;
    b->permuted = 0;
    b->in_scene_order = 0;
    d->rebuilds++;
}

/* The lowest scene index of this rank's non-finite particles (INT_MAX:
 * none), its local index into *local. `bad` is G2P's (-1: none). */
static int lowest_bad(const firn_world *w, const dist_state *d, int bad, int *local)
{
    if (bad < 0)
        return INT_MAX;
    const firn_particles p = w->p;
    const firn_cpu_bins *b = &w->bins;
    int best = INT_MAX;
    *local = bad;
    for (int k = 0; k < p.n; k++) {
        const firn_vec3 x = firn_load3(p.x, p.n, k), v = firn_load3(p.v, p.n, k);
        int finite = 1;
        for (int a = 0; a < 3; a++)
            finite &= isfinite(x.v[a]) && isfinite(v.v[a]);
        const int at = b->in_scene_order ? k : b->id[k];
        if (!finite && d->gid[at] < best) {
            best = d->gid[at];
            *local = at;
        }
    }
    if (best == INT_MAX) /* G2P clamped its position back into the domain */
        best = d->gid[bad];
    return best;
}

/* The substep's one exchange after G2P: each rank tells every other how
 * many particles it sends it and the lowest scene index of its particles
 * that went non-finite (bad: INT_MAX when none did); then, when none did
 * anywhere, the particles move. Returns that index over all ranks. */
static int migrate(firn_world *w, dist_state *d, int bad)
{
    const double t0 = MPI_Wtime();
    const int n = w->p.n, size = d->size;
    int *scount = calloc(2 * (size_t)size, sizeof(int)),
        *rcount = calloc(2 * (size_t)size, sizeof(int));
    int *soff = calloc((size_t)size + 1, sizeof(int)),
        *roff = calloc((size_t)size + 1, sizeof(int));
    if (!scount || !rcount || !soff || !roff)
        fatal("out of host memory migrating particles");
    for (int k = 0; k < n; k++) {
        d->dest[k] = d->owner[column_of(w, d, k)];
        if (d->dest[k] != d->rank)
            scount[2 * d->dest[k]]++;
    }
    for (int r = 0; r < size; r++)
        scount[2 * r + 1] = bad;
    MPI_Alltoall(scount, 2, MPI_INT, rcount, 2, MPI_INT, d->comm);
    int lowest = bad;
    for (int r = 0; r < size; r++) {
        soff[r + 1] = soff[r] + scount[2 * r];
        roff[r + 1] = roff[r] + rcount[2 * r];
        if (rcount[2 * r + 1] < lowest)
            lowest = rcount[2 * r + 1];
    }
    const int any = lowest != INT_MAX;
    const int nsend = soff[size], nrecv = roff[size];
    if (!any && (nsend > 0 || nrecv > 0)) {
        unsigned char *sbuf = malloc((size_t)nsend * REC_BYTES + 1);
        unsigned char *rbuf = malloc((size_t)nrecv * REC_BYTES + 1);
        MPI_Request *rq = malloc(2 * (size_t)size * sizeof(MPI_Request));
        int *at = malloc(((size_t)size + 1) * sizeof(int));
        if (!sbuf || !rbuf || !rq || !at)
            fatal("out of host memory migrating particles");
        memcpy(at, soff, ((size_t)size + 1) * sizeof(int));
        for (int k = 0; k < n; k++) /* by destination rank, in position order */
            if (d->dest[k] != d->rank)
                pack(w, k, gid_at(w, d, k), sbuf + (size_t)at[d->dest[k]]++ * REC_BYTES);
        int m = 0;
        for (int r = 0; r < size; r++)
            if (rcount[2 * r] > 0)
                MPI_Irecv(rbuf + (size_t)roff[r] * REC_BYTES, rcount[2 * r], rec_type(), r,
                          TAG_MIGRATE, d->comm, &rq[m++]);
        for (int r = 0; r < size; r++)
            if (scount[2 * r] > 0)
                MPI_Isend(sbuf + (size_t)soff[r] * REC_BYTES, scount[2 * r], rec_type(), r,
                          TAG_MIGRATE, d->comm, &rq[m++]);
        MPI_Waitall(m, rq, MPI_STATUSES_IGNORE);
        rebuild(w, d, rbuf, nrecv);
        d->sent += nsend;
        d->received += nrecv;
        free(sbuf), free(rbuf), free(rq), free(at);
    }
    free(scount), free(rcount), free(soff), free(roff);
    d->t_migrate += MPI_Wtime() - t0;
    return lowest;
}

static int after_g2p(firn_world *w, int bad)
{
    dist_state *d = w->dist_state;
    d->substeps++;
    int local = -1;
    const int mine = lowest_bad(w, d, bad, &local), lowest = migrate(w, d, mine);
    if (lowest == INT_MAX)
        return -1;
    return mine == lowest ? local : FIRN_DIST_BAD_ELSEWHERE;
}

static int scene_index(const firn_world *w, int i)
{
    const dist_state *d = w->dist_state;
    return i >= 0 && i < w->p.n ? d->gid[i] : i;
}

static float reduce_dt(firn_world *w, float dt)
{
    dist_state *d = w->dist_state;
    float in[2] = {isnan(dt) ? INFINITY : dt, isnan(dt) ? 1.0f : 0.0f}, out[2];
    MPI_Allreduce(&in[0], &out[0], 1, MPI_FLOAT, MPI_MIN, d->comm);
    MPI_Allreduce(&in[1], &out[1], 1, MPI_FLOAT, MPI_MAX, d->comm);
    return out[1] > 0.0f ? NAN : out[0];
}

static int *indices(firn_world *w, int *rank, int *ranks, int *total)
{
    dist_state *d = w->dist_state;
    *rank = d->rank;
    *ranks = d->size;
    *total = d->total;
    return d->gid;
}

static const firn_dist_ops ops = {after_p2g,   after_grid, after_g2p,
                                  scene_index, reduce_dt,  indices};

/* What the distributed run does not do (yet): NULL when w is fine. */
static const char *unsupported(const firn_world *w)
{
    if (w->cuda)
        return "the CUDA backend (use --backend cpu)";
    if (w->sph.n > 0)
        return "SPH liquids (the scene's sph bodies)";
    if (w->pbd.n > 0)
        return "PBD bodies (the scene's pbd bodies)";
    if (w->fem.V.n > 0)
        return "FEM bodies";
    if (w->coupler.cpic)
        return "CPIC (coupling.cpic)";
    if (w->bins.full_grid)
        return "the full-grid reference mode";
    if (w->p.n == 0)
        return "a scene without MPM particles";
    return NULL;
}

/* Slabs of about equal particle counts: count[c + 1] the particles in
 * column c (count[0] = 0), turned into running sums here; every rank at
 * least one column. The same counts give the same split on every rank. */
static void split_columns(const dist_state *d, long long *count, int *col_lo)
{
    const int nb0 = d->nb0, size = d->size;
    for (int c = 0; c < nb0; c++)
        count[c + 1] += count[c]; /* count[c]: particles in the columns before c */
    const long long n = count[nb0];
    col_lo[0] = 0;
    col_lo[size] = nb0;
    for (int r = 1; r < size; r++) {
        const long long target = n * r / size;
        int c = col_lo[r - 1] + 1;
        while (c < nb0 - (size - r) && count[c] < target)
            c++;
        col_lo[r] = c;
    }
}

/* Adopts slabs col_lo (size + 1 column starts): each column's owner, and
 * this rank's node planes and halo widths. */
static void set_slabs(const firn_world *w, dist_state *d, const int *col_lo)
{
    if (col_lo != d->col_lo)
        memcpy(d->col_lo, col_lo, ((size_t)d->size + 1) * sizeof(int));
    for (int r = 0; r < d->size; r++)
        for (int c = d->col_lo[r]; c < d->col_lo[r + 1]; c++)
            d->owner[c] = r;
    const int n0 = w->grid.n[0];
    d->lo = d->block * d->col_lo[d->rank];
    d->hi = d->block * d->col_lo[d->rank + 1];
    if (d->hi > n0)
        d->hi = n0;
    /* Two planes: the quadratic B-spline's stencil reaches base + 2. */
    d->up = d->rank + 1 < d->size ? (d->hi + 2 < n0 ? 2 : n0 - d->hi) : 0;
    d->down = d->rank > 0 ? (d->lo + 2 < n0 ? 2 : n0 - d->lo) : 0;
}

int firn_mpi_set_slabs(firn_world *w, const int *col_lo, firn_error *err)
{
    dist_state *d = w->dist_state;
    int ok = col_lo[0] == 0 && col_lo[d->size] == d->nb0;
    for (int r = 0; r < d->size && ok; r++)
        ok = col_lo[r + 1] > col_lo[r];
    if (!ok) {
        firn_set_error(err, FIRN_E_CHECKPOINT,
                       "slabs from column 0 to %d, each rank at least one column, are needed; "
                       "these start at %d and end at %d, or give a rank none",
                       d->nb0, col_lo[0], col_lo[d->size]);
        return -1;
    }
    set_slabs(w, d, col_lo);
    return 0;
}

double firn_mpi_imbalance(firn_world *w)
{
    dist_state *d = w->dist_state;
    long long mine = w->p.n, most = 0, sum = 0;
    MPI_Allreduce(&mine, &most, 1, MPI_LONG_LONG, MPI_MAX, d->comm);
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, d->comm);
    return sum > 0 ? (double)most * d->size / (double)sum : 1.0;
}

int firn_mpi_rebalance(firn_world *w, double threshold)
{
    dist_state *d = w->dist_state;
    const double t0 = MPI_Wtime();
    if (!(firn_mpi_imbalance(w) > threshold)) {
        d->t_rebalance += MPI_Wtime() - t0;
        return 0;
    }
    long long *mine = calloc((size_t)d->nb0 + 1, sizeof(long long)),
              *count = calloc((size_t)d->nb0 + 1, sizeof(long long));
    int *col_lo = malloc(((size_t)d->size + 1) * sizeof(int));
    if (!mine || !count || !col_lo)
        fatal("out of host memory rebalancing the slabs");
    for (int k = 0; k < w->p.n; k++)
        mine[column_of(w, d, k) + 1]++;
    MPI_Allreduce(mine, count, d->nb0 + 1, MPI_LONG_LONG, MPI_SUM, d->comm);
    split_columns(d, count, col_lo);
    const int changed = memcmp(col_lo, d->col_lo, ((size_t)d->size + 1) * sizeof(int)) != 0;
    if (changed) {
        set_slabs(w, d, col_lo);
        /* Every particle to the owner of its column, as after a G2P (no
         * particle is non-finite between frames). */
        migrate(w, d, INT_MAX);
        d->rebalances++;
    }
    free(mine), free(count), free(col_lo);
    d->t_rebalance += MPI_Wtime() - t0;
    return changed;
}

int firn_mpi_distribute(firn_world *w, firn_error *err)
{
    const char *why = unsupported(w);
    if (why) {
        firn_set_error(err, FIRN_E_USAGE,
                       "%s: not supported with %d MPI ranks: %s; run it with one rank",
                       w->def.source[0] ? w->def.source : "scene", g_size, why);
        return -1;
    }
    const int block = w->bins.block_cells, nb0 = w->bins.nb[0];
    if (nb0 < g_size) {
        firn_set_error(err, FIRN_E_USAGE,
                       "%s: the grid has %d columns of %d-node blocks along x, fewer than the %d "
                       "MPI ranks (each rank owns at least one)",
                       w->def.source[0] ? w->def.source : "scene", nb0, block, g_size);
        return -1;
    }
    dist_state *d = calloc(1, sizeof *d);
    const int n = w->p.n;
    if (!d)
        fatal("out of host memory");
    d->comm = MPI_COMM_WORLD;
    d->rank = g_rank;
    d->size = g_size;
    d->nb0 = nb0;
    d->block = block;
    d->total = n;
    d->col_lo = calloc((size_t)g_size + 1, sizeof(int));
    d->owner = calloc((size_t)nb0, sizeof(int));
    d->gid = malloc((size_t)n * sizeof(int));
    d->dest = malloc((size_t)n * sizeof(int));
    long long *count = calloc((size_t)nb0 + 1, sizeof(long long));
    if (!d->col_lo || !d->owner || !d->gid || !d->dest || !count)
        fatal("out of host memory");
    /* Every rank has every particle here, in the same order: the same slabs
     * everywhere, with no message. */
    for (int k = 0; k < n; k++) {
        d->gid[k] = k;
        count[column_of(w, d, k) + 1]++;
    }
    split_columns(d, count, d->col_lo);
    free(count);
    d->plane = (long long)w->grid.n[1] * w->grid.n[2];
    set_slabs(w, d, d->col_lo);
    d->halo = malloc(4 * (size_t)d->plane * 2 * sizeof(float) + 1);
    d->nacc = w->n_rigids * FIRN_RIGID_ACC + w->n_tools * FIRN_TOOL_ACC;
    d->acc = malloc((size_t)d->nacc * sizeof(double) + 1);
    d->acc_all = malloc((size_t)d->nacc * (size_t)g_size * sizeof(double) + 1);
    if (!d->halo || !d->acc || !d->acc_all)
        fatal("out of host memory");
    for (int k = 0; k < n; k++)
        d->dest[k] = d->owner[column_of(w, d, k)];
    rebuild(w, d, NULL, 0);
    d->rebuilds = 0;
    /* For the tests (test/mpi_test.sh): the CPU path's reordering threshold
     * (FIRN_REORDER_RUN), so that the permuted layout, rare in a short run,
     * meets the migrations. */
    const char *run = getenv("FIRN_MPI_REORDER_RUN");
    if (run && *run)
        w->bins.reorder_run = atoi(run);
    w->dist_state = d;
    w->dist = &ops;
    return 0;
}

void firn_mpi_release(firn_world *w)
{
    dist_state *d = w ? w->dist_state : NULL;
    if (!d)
        return;
    free(d->col_lo), free(d->owner), free(d->gid), free(d->dest), free(d->halo), free(d->acc);
    free(d->acc_all);
    free(d);
    w->dist_state = NULL;
    w->dist = NULL;
}

int firn_mpi_gather(firn_world *w, firn_world *out, firn_error *err)
{
    dist_state *d = w->dist_state;
    const int n = w->p.n;
    unsigned char *mine = malloc((size_t)n * REC_BYTES + 1);
    if (!mine)
        fatal("out of host memory gathering particles");
    for (int k = 0; k < n; k++)
        pack(w, k, gid_at(w, d, k), mine + (size_t)k * REC_BYTES);
    int *counts = NULL, *displs = NULL;
    unsigned char *all = NULL;
    if (d->rank == 0) {
        counts = malloc((size_t)d->size * sizeof(int));
        displs = malloc((size_t)d->size * sizeof(int));
        all = malloc((size_t)d->total * REC_BYTES + 1);
        if (!counts || !displs || !all)
            fatal("out of host memory gathering particles");
    }
    /* Counts and offsets in records (rec_type): in bytes they overflow an
     * int past 18.5M particles. */
    MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, d->comm);
    long long sum = 0;
    if (d->rank == 0)
        for (int r = 0; r < d->size; r++) {
            displs[r] = (int)sum;
            sum += counts[r];
        }
    MPI_Gatherv(mine, n, rec_type(), all, counts, displs, rec_type(), 0, d->comm);
    free(mine);
    int rc = 0;
    if (d->rank == 0) {
        if (sum != d->total || out->p.n != d->total) {
            firn_set_error(err, FIRN_E_IO,
                           "the ranks hold %lld particles between them, the scene %d", sum,
                           d->total);
            rc = -1;
        } else {
            /* Each particle to its scene index: a scratch particle set of
             * one, then copied into place. */
            firn_particles one;
            if (firn_particles_alloc(&one, 1))
                fatal("out of host memory gathering particles");
            const firn_particles o = out->p;
            for (int k = 0; k < d->total; k++) {
                const int g = unpack(one, 0, all + (size_t)k * REC_BYTES);
                if (g < 0 || g >= d->total)
                    fatal("a particle's scene index is out of range");
                firn_store3(o.x, o.n, g, firn_load3(one.x, 1, 0));
                firn_store3(o.v, o.n, g, firn_load3(one.v, 1, 0));
                firn_store9(o.C, o.n, g, firn_load9(one.C, 1, 0));
                firn_store9(o.F, o.n, g, firn_load9(one.F, 1, 0));
                o.Jp[g] = one.Jp[0];
                o.damage[g] = one.damage[0];
                o.vol[g] = one.vol[0];
                o.mat[g] = one.mat[0];
            }
            firn_particles_free(&one);
        }
        /* The replicated state: the same on every rank. The shapes stay
         * out's own (a mesh's SDF grid belongs to the world that built it). */
        for (int k = 0; k < w->n_rigids; k++) {
            const firn_sdf_shape sh = out->rigids[k].shape;
            out->rigids[k] = w->rigids[k];
            out->rigids[k].shape = sh;
        }
        for (int k = 0; k < w->n_tools; k++) {
            const firn_sdf_shape sh = out->tools[k].body.shape;
            out->tools[k] = w->tools[k];
            out->tools[k].body.shape = sh;
        }
        memcpy(out->rigid_acc, w->rigid_acc, sizeof w->rigid_acc);
        memcpy(out->tool_acc, w->tool_acc, sizeof w->tool_acc);
        memcpy(out->tool_rec, w->tool_rec, sizeof w->tool_rec);
        out->tool_frame_time = w->tool_frame_time;
        out->params.dt = w->params.dt;
        out->frame = w->frame;
        out->time = w->time;
        out->substeps = w->substeps;
        out->prof = w->prof;
        free(counts), free(displs), free(all);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, d->comm);
    if (rc && d->rank != 0)
        firn_set_error(err, FIRN_E_IO, "rank 0 could not gather the particles");
    return rc;
}

void firn_mpi_report(firn_world *w, FILE *f)
{
    dist_state *d = w->dist_state;
    double mine[14] = {(double)w->p.n,
                       (double)d->col_lo[d->rank],
                       (double)d->col_lo[d->rank + 1],
                       d->substeps > 0 ? (double)d->halo_bytes / (double)d->substeps : 0.0,
                       (double)d->sent,
                       (double)d->received,
                       d->t_halo,
                       d->t_reduce,
                       d->t_migrate,
                       w->prof.total,
                       (double)d->rebuilds,
                       (double)w->bins.reorders,
                       (double)d->rebalances,
                       d->t_rebalance};
    double *all = d->rank == 0 ? malloc(14 * sizeof(double) * (size_t)d->size) : NULL;
    if (d->rank == 0 && !all)
        fatal("out of host memory for the ranks' report");
    MPI_Gather(mine, 14, MPI_DOUBLE, all, 14, MPI_DOUBLE, 0, d->comm);
    if (d->rank != 0)
        return;
    for (int r = 0; r < d->size; r++) {
        const double *a = all + 14 * r;
        fprintf(f,
                "firn: rank %d: block columns %.0f-%.0f of %d, %.0f particles now; halo %.0f "
                "B/substep; migrated %.0f out, %.0f in (in %.0f substeps), %.0f reorders, "
                "%.0f rebalances; %.3f s in halo exchanges, %.3f s in reductions, %.3f s "
                "migrating, %.3f s rebalancing, of %.3f s of substeps\n",
                r, a[1], a[2] - 1, d->nb0, a[0], a[3], a[4], a[5], a[10], a[11], a[12], a[6], a[7],
                a[8], a[13], a[9]);
    }
    free(all);
}

const int *firn_mpi_slabs(const firn_world *w, int *columns)
{
    const dist_state *d = w->dist_state;
    *columns = d->nb0;
    return d->col_lo;
}

int firn_mpi_load(firn_world *w, const char *path, int n, firn_error *err)
{
    dist_state *d = w->dist_state;
    if (n < 0 || n > d->total) {
        firn_set_error(err, FIRN_E_CHECKPOINT,
                       "checkpoint '%s': %d particles on this rank; the scene has %d", path, n,
                       d->total);
        return -1;
    }
    /* The particles of the file replace those of the fresh split, in the
     * file's order (the CPU layout, if saved, is read with them). */
    firn_particles np;
    if (firn_particles_alloc(&np, n))
        fatal("out of host memory reading a checkpoint");
    firn_particles_free(&w->p);
    w->p = np;
    firn_cpu_bins *b = &w->bins;
    for (int k = 0; k < n; k++)
        b->id[k] = k;
    b->permuted = 0;
    b->in_scene_order = 0;
    if (firn_checkpoint_read(w, path, err))
        return -1;
    /* Every particle in this rank's slab: a checkpoint is written at the
     * end of a substep, after the migration. */
    for (int k = 0; k < n; k++) {
        const int c = column_of(w, d, k);
        if (d->owner[c] != d->rank) {
            firn_set_error(err, FIRN_E_CHECKPOINT,
                           "checkpoint '%s' is not this rank's: its particle %d (scene index "
                           "%d) lies in block column %d, which rank %d owns; this is rank %d "
                           "(columns %d to %d)",
                           path, k, d->gid[k], c, d->owner[c], d->rank, d->col_lo[d->rank],
                           d->col_lo[d->rank + 1] - 1);
            return -1;
        }
    }
    return 0;
}

int firn_mpi_check_indices(firn_world *w, firn_error *err)
{
    dist_state *d = w->dist_state;
    int *count = calloc((size_t)d->total + 1, sizeof(int)), *sum = NULL;
    if (!count)
        fatal("out of host memory checking a checkpoint");
    for (int k = 0; k < w->p.n; k++)
        count[d->gid[k]]++;
    if (d->rank == 0 && !(sum = calloc((size_t)d->total + 1, sizeof(int))))
        fatal("out of host memory checking a checkpoint");
    MPI_Reduce(count, sum, d->total, MPI_INT, MPI_SUM, 0, d->comm);
    int bad = -1;
    if (d->rank == 0)
        for (int g = 0; g < d->total && bad < 0; g++)
            if (sum[g] != 1)
                bad = g;
    int info[2] = {bad, bad >= 0 ? sum[bad] : 0};
    MPI_Bcast(info, 2, MPI_INT, 0, d->comm);
    free(count), free(sum);
    if (info[0] < 0)
        return 0;
    firn_set_error(err, FIRN_E_CHECKPOINT,
                   "the ranks' checkpoint files hold scene particle %d %d times (once is "
                   "right): they are not of one checkpoint",
                   info[0], info[1]);
    return -1;
}

int firn_mpi_total(const firn_world *w)
{
    const dist_state *d = w->dist_state;
    return d->total;
}
