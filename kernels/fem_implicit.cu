/* fem_implicit.cu - implicit (backward Euler) FEM bodies on the CUDA path:
 * the Newton loop of host/fem_implicit.c, each Newton system solved by
 * block-Jacobi preconditioned conjugate gradients, matrix-free, with the
 * element and vertex bodies of include/firn_fem_implicit.h (one thread per
 * element or vertex) and every vector and scalar on the device.
 *
 * The dot products are CUB reductions in double into a control block on
 * the device; one-thread kernels read them and set the step lengths and the
 * stop flags there, and the kernels of a CG iteration queued after a stop
 * return at once. The host queues CG iterations in batches (8, then
 * doubling up to 256) and reads the control block after each: an implicit
 * body costs one host round trip per CG batch, so these substeps are not
 * queued ahead as explicit ones are (docs/PHYSICS.md, FEM, "Implicit
 * integration"). The line search's trials (at most linesearch_max + 1) are
 * queued without a round trip, each skipping once one passed.
 *
 * The steps are the CPU's, in the same order, with the same float and
 * double roundings; only the order of each reduction's additions differs
 * (CUB's tree against the CPU's chunks), so the two paths agree to the
 * solver's tolerances, not bitwise. */
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "error.h"
#include "fem.cuh"
#include "fem_implicit.h"
#include "align.h"

#define FIRN_FEM_IBLOCK 256

/* A pair of sums (r.r and r.z in one pass). */
struct fem_dd {
    double x, y;
};

/* The solve's scalars and flags, on the device (one per world: bodies
 * are solved one after another). */
typedef struct {
    double gn2, load2, xmax;     /* |g|^2; |m (v/dt + g)|^2 and max |x0| (first iteration) */
    fem_dd pair;                 /* (r.z, r.r) */
    double pAp, slope, dumax;    /* p.Ap; g.du; max |du| */
    double en_el, en_in, en_k;   /* energy parts: elastic, inertial, u.K u */
    double g0, rz, r0, step;     /* reference gradient; r.z; |r_0|; the last Newton step */
    double e0, best;             /* line search: E(u) + rounding allowance; lowest trial */
    float dx, a, b, s, t, sbest; /* stall length; CG's alpha, beta; the step taken; trial */
    float res, residual;         /* |r|/|r_0|; |g|/g0 */
    int newton_done;             /* 0 going; 1 converged; 2 stalled; 3 newton_max; -1 failed */
    int pcg_done, pcg_it, ok;    /* CG stopped; its iterations; a trial passed */
    int failed;                  /* 0; 1 non-finite gradient; 2 CG breakdown */
    int ls_fails;                /* trials that all failed Armijo's test */
} fem_ictl;

struct firn_fem_icuda {
    float *u, *g, *r, *z, *p, *Ap, *du, *ut; /* 3 nv each, component-major */
    float *Minv;                             /* 9 nv */
    float *H;                                /* FIRN_FEM_HESS_FLOATS ne */
    float *slot;                             /* 12 ne */
    uint8_t *held;                           /* nv: components a wall holds */
    fem_ictl *ctl;
    void *temp; /* CUB's scratch */
    size_t temp_bytes;
    void *block; /* the one allocation of all of the above */
    size_t bytes;
    double e_round[FIRN_FEM_MAX_BODIES]; /* each body's energy rounding allowance [J] */
};

static unsigned blocks_for(int n)
{
    return (unsigned)((n + FIRN_FEM_IBLOCK - 1) / FIRN_FEM_IBLOCK);
}

/* ---- kernels: per element or vertex in [first, last), skipping when
 * *skip (when given) is set --------------------------------------------- */

#define RANGE_INDEX(i)                                                                             \
    const int i = first + (int)(blockIdx.x * blockDim.x + threadIdx.x);                            \
    if (i >= last || (skip && *skip))                                                              \
    return

/* The walls of a kernel's operand W: none unless walls. */
#define WALLS (walls ? &W : (const firn_fem_params *)NULL)

/* x0 = x, u = 0: the step starts at the substep's positions (a vertex past
 * a wall on it). */
static __global__ void imp_start(firn_fem_vertices V, float *u, firn_fem_params W, int walls,
                                 int first, int last, const int *skip)
{
    RANGE_INDEX(i);
    for (int c = 0; c < 3; c++)
        V.x0[c * V.n + i] = V.x[c * V.n + i], u[c * V.n + i] = 0.0f;
    firn_fem_implicit_project(i, &V, WALLS, u);
}

static __global__ void imp_elements(const firn_fem_material *mats, firn_fem_elements E,
                                    const float *x0, const float *u, int n, float *slot, float *H,
                                    int first, int last, const int *skip)
{
    RANGE_INDEX(e);
    (void)firn_fem_implicit_element(e, mats, &E, x0, u, n, slot, H);
}

static __global__ void imp_gradient(firn_fem_vertices V, const float *slot, int ne, const float *u,
                                    firn_vec3 gravity, float dt, float alpha, float *g, int first,
                                    int last, const int *skip)
{
    RANGE_INDEX(i);
    firn_store3(g, V.n, i,
                firn_fem_implicit_vertex_gradient(i, &V, slot, ne, u, gravity.v, dt, alpha));
}

/* The components the walls hold, their gradient zeroed, and the
 * preconditioner's block of the free ones. */
static __global__ void imp_preconditioner(firn_fem_vertices V, firn_fem_elements E, const float *H,
                                          float cm, float ck, const float *u, float *g,
                                          firn_fem_params W, int walls, uint8_t *held, float *Minv,
                                          int first, int last, const int *skip)
{
    RANGE_INDEX(i);
    firn_vec3 gi = firn_load3(g, V.n, i);
    const int h = firn_fem_implicit_vertex_hold(i, &V, WALLS, u, &gi);
    held[i] = (uint8_t)h;
    firn_store3(g, V.n, i, gi);
    const firn_mat3 M = firn_fem_implicit_precond(i, &V, &E, H, cm, ck, h);
    for (int k = 0; k < 9; k++)
        Minv[k * V.n + i] = M.m[k];
}

static __global__ void imp_element_Ap(firn_fem_elements E, const float *H, const float *in, int n,
                                      float *slot, int first, int last, const int *skip)
{
    RANGE_INDEX(e);
    firn_fem_implicit_element_Ap(e, &E, H, in, n, slot);
}

static __global__ void imp_vertex_Ap(firn_fem_vertices V, const float *slot, int ne,
                                     const float *in, float cm, float ck, float *out, int first,
                                     int last, const int *skip)
{
    RANGE_INDEX(i);
    firn_store3(out, V.n, i, firn_fem_implicit_vertex_Ap(i, &V, slot, ne, in, cm, ck));
}

/* g += Ap (stiffness damping's gradient). */
static __global__ void imp_add(float *g, const float *Ap, int n, int first, int last,
                               const int *skip)
{
    RANGE_INDEX(i);
    for (int c = 0; c < 3; c++)
        g[firn_soa_index(c, n, i)] += Ap[firn_soa_index(c, n, i)];
}

static __device__ void apply_minv(const float *Minv, const float *r, float *z, int n, int i)
{
    firn_mat3 M;
    for (int k = 0; k < 9; k++)
        M.m[k] = Minv[firn_soa_index(k, n, i)];
    firn_store3(z, n, i, firn_m3_apply(M, firn_load3(r, n, i)));
}

/* r = -g, du = 0, z = Minv r, p = z. */
static __global__ void imp_pcg_init(const float *g, const float *Minv, float *r, float *z, float *p,
                                    float *du, int n, int first, int last, const int *skip)
{
    RANGE_INDEX(i);
    for (int c = 0; c < 3; c++)
        r[firn_soa_index(c, n, i)] = -g[firn_soa_index(c, n, i)],
                               du[firn_soa_index(c, n, i)] = 0.0f;
    apply_minv(Minv, r, z, n, i);
    for (int c = 0; c < 3; c++)
        p[firn_soa_index(c, n, i)] = z[firn_soa_index(c, n, i)];
}

/* du += a p, r -= a Ap on the free components, z = Minv r. */
static __global__ void imp_pcg_update(const fem_ictl *ctl, const float *p, const float *Ap,
                                      const float *Minv, const uint8_t *held, float *du, float *r,
                                      float *z, int n, int first, int last, const int *skip)
{
    RANGE_INDEX(i);
    const float a = ctl->a;
    for (int c = 0; c < 3; c++) {
        du[firn_soa_index(c, n, i)] += a * p[firn_soa_index(c, n, i)];
        if (!(held[i] >> c & 1))
            r[firn_soa_index(c, n, i)] -= a * Ap[firn_soa_index(c, n, i)];
    }
    apply_minv(Minv, r, z, n, i);
}

/* p = z + b p. */
static __global__ void imp_pcg_direction(const fem_ictl *ctl, const float *z, float *p, int n,
                                         int first, int last, const int *skip)
{
    RANGE_INDEX(i);
    const float b = ctl->b;
    for (int c = 0; c < 3; c++)
        p[firn_soa_index(c, n, i)] = z[firn_soa_index(c, n, i)] + b * p[firn_soa_index(c, n, i)];
}

/* ut = u + t du inside the walls (a line search trial). */
static __global__ void imp_trial(const fem_ictl *ctl, firn_fem_vertices V, const float *u,
                                 const float *du, float *ut, firn_fem_params W, int walls,
                                 int first, int last, const int *skip)
{
    RANGE_INDEX(i);
    const float t = ctl->t;
    const int n = V.n;
    for (int c = 0; c < 3; c++)
        ut[firn_soa_index(c, n, i)] = u[firn_soa_index(c, n, i)] + t * du[firn_soa_index(c, n, i)];
    firn_fem_implicit_project(i, &V, WALLS, ut);
}

/* ut = (u + du inside the walls) - u, the full step that the stall test
 * measures; then u += s du inside the walls. */
static __global__ void imp_advance(const fem_ictl *ctl, firn_fem_vertices V, const float *du,
                                   float *u, float *ut, firn_fem_params W, int walls, int first,
                                   int last, const int *skip)
{
    RANGE_INDEX(i);
    const float s = ctl->s;
    const int n = V.n;
    for (int c = 0; c < 3; c++)
        ut[firn_soa_index(c, n, i)] = u[firn_soa_index(c, n, i)] + du[firn_soa_index(c, n, i)];
    firn_fem_implicit_project(i, &V, WALLS, ut);
    for (int c = 0; c < 3; c++) {
        ut[firn_soa_index(c, n, i)] -= u[firn_soa_index(c, n, i)];
        u[firn_soa_index(c, n, i)] += s * du[firn_soa_index(c, n, i)];
    }
    firn_fem_implicit_project(i, &V, WALLS, u);
}

/* v = u / dt (0 on fixed vertices), or NaN after a failed solve. */
static __global__ void imp_velocity(firn_fem_vertices V, const float *u, float inv_dt, int failed,
                                    int first, int last, const int *skip)
{
    RANGE_INDEX(i);
    for (int c = 0; c < 3; c++)
        V.v[c * V.n + i] = failed ? NAN : V.fixed[i] ? 0.0f : u[c * V.n + i] * inv_dt;
}

#undef RANGE_INDEX
#undef WALLS

/* ---- the one-thread control kernels (host/fem_implicit.c's scalar steps) */

/* After the gradient: failure, convergence or stall, and CG's reset. */
static __global__ void imp_newton_check(fem_ictl *c, firn_fem_implicit_params P, int it)
{
    const double gn = sqrt(c->gn2);
    c->pcg_it = 0;
    if (!isfinite(gn)) {
        c->failed = 1, c->newton_done = -1, c->pcg_done = 1;
        return;
    }
    if (it == 0) {
        c->g0 = fmax(gn, sqrt(c->load2));
        c->dx = P.newton_dx > 0.0f ? P.newton_dx : 4.0f * FLT_EPSILON * (float)c->xmax;
        c->step = INFINITY;
    }
    c->residual = c->g0 > 0.0 ? (float)(gn / c->g0) : 0.0f;
    if (gn <= P.newton_tol * c->g0)
        c->newton_done = 1;
    else if (c->step <= c->dx)
        c->newton_done = 2;
    else if (it >= P.newton_max)
        c->newton_done = 3;
    c->pcg_done = c->newton_done != 0;
}

static __global__ void imp_pcg_start(fem_ictl *c)
{
    if (c->pcg_done)
        return;
    c->rz = c->pair.x;
    c->r0 = sqrt(c->pair.y);
    c->res = 0.0f;
    if (c->r0 == 0.0)
        c->pcg_done = 1;
}

static __global__ void imp_pcg_alpha(fem_ictl *c)
{
    if (c->pcg_done)
        return;
    if (!(c->pAp > 0.0) || !isfinite(c->pAp)) {
        c->failed = 2, c->newton_done = -1, c->pcg_done = 1;
        return;
    }
    c->a = (float)(c->rz / c->pAp);
}

static __global__ void imp_pcg_beta(fem_ictl *c, firn_fem_implicit_params P)
{
    if (c->pcg_done)
        return;
    const double rn = sqrt(c->pair.y);
    c->res = (float)(rn / c->r0);
    c->pcg_it++;
    if (rn <= P.pcg_tol * c->r0 || c->pcg_it >= P.pcg_max) {
        c->pcg_done = 1;
        return;
    }
    c->b = (float)(c->pair.x / c->rz);
    c->rz = c->pair.x;
}

/* E(u) from its parts (the stiffness term only with beta > 0). */
static __device__ double energy_of(const fem_ictl *c, int stiff)
{
    return c->en_el + c->en_in + (stiff ? 0.5 * c->en_k : 0.0);
}

static __global__ void imp_ls_begin(fem_ictl *c, double e_round, int stiff)
{
    c->e0 = energy_of(c, stiff) + e_round;
    c->best = INFINITY;
    c->sbest = 1.0f, c->t = 1.0f, c->ok = 0;
}

static __global__ void imp_ls_trial(fem_ictl *c, firn_fem_implicit_params P, int stiff)
{
    if (c->ok)
        return;
    const double e1 = energy_of(c, stiff);
    if (e1 < c->best)
        c->best = e1, c->sbest = c->t;
    c->ok = e1 <= c->e0 + P.linesearch_c * c->t * c->slope;
    if (!c->ok)
        c->t *= P.linesearch_tau;
}

static __global__ void imp_ls_end(fem_ictl *c, int searched)
{
    if (!searched) {
        c->s = 1.0f;
        return;
    }
    if (!c->ok)
        c->ls_fails++;
    c->s = c->sbest;
}

static __global__ void imp_step_taken(fem_ictl *c) { c->step = c->dumax; }

/* ---- reductions --------------------------------------------------------- */

struct sum_op {
    __host__ __device__ double operator()(double a, double b) const { return a + b; }
};
struct max_op {
    __host__ __device__ double operator()(double a, double b) const { return a > b ? a : b; }
};
struct sum2_op {
    __host__ __device__ fem_dd operator()(fem_dd a, fem_dd b) const
    {
        fem_dd s;
        s.x = a.x + b.x, s.y = a.y + b.y;
        return s;
    }
};

/* a_i . b_i over the vertex i (0 when *skip). */
struct dot_tr {
    const float *a, *b;
    const int *skip;
    int n, pad;
    __host__ __device__ double operator()(int i) const
    {
        if (skip && *skip)
            return 0.0;
        double s = 0.0;
        for (int c = 0; c < 3; c++)
            s += (double)a[firn_soa_index(c, n, i)] * b[firn_soa_index(c, n, i)];
        return s;
    }
};

/* (r.z, r.r) at vertex i. */
struct rz_rr_tr {
    const float *r, *z;
    const int *skip;
    int n, pad;
    __host__ __device__ fem_dd operator()(int i) const
    {
        fem_dd d;
        d.x = d.y = 0.0;
        if (skip && *skip)
            return d;
        for (int c = 0; c < 3; c++) {
            d.x += (double)r[firn_soa_index(c, n, i)] * z[firn_soa_index(c, n, i)];
            d.y += (double)r[firn_soa_index(c, n, i)] * r[firn_soa_index(c, n, i)];
        }
        return d;
    }
};

/* |m_i (v_i / dt + g)|^2 over free vertices (the reference load). */
struct load_tr {
    firn_fem_vertices V;
    firn_vec3 gravity;
    float dt;
    __host__ __device__ double operator()(int i) const
    {
        if (V.fixed[i])
            return 0.0;
        double s = 0.0;
        for (int c = 0; c < 3; c++) {
            const double f = V.mass[i] * ((double)V.v[c * V.n + i] / dt + gravity.v[c]);
            s += f * f;
        }
        return s;
    }
};

/* max_c |y_c,i| (the body's largest coordinate; the largest step). */
struct absmax_tr {
    const float *y;
    int n, pad;
    __host__ __device__ double operator()(int i) const
    {
        float m = 0.0f;
        for (int c = 0; c < 3; c++)
            m = firn_maxf(m, fabsf(y[firn_soa_index(c, n, i)]));
        return m;
    }
};

/* V_e Psi(F_e) at x0 + u (0 when *skip). */
struct energy_tr {
    const firn_fem_material *mats;
    firn_fem_elements E;
    const float *x0, *u;
    const int *skip;
    int n, pad;
    __host__ __device__ double operator()(int e) const
    {
        if (skip && *skip)
            return 0.0;
        return firn_fem_implicit_element_energy(e, mats, &E, x0, u, n);
    }
};

/* Vertex i's inertia and mass damping energy, rounded to float as the
 * CPU's (host/fem_implicit.c energy). */
struct inertia_tr {
    firn_fem_vertices V;
    const float *u;
    const int *skip;
    firn_vec3 gravity;
    float dt, alpha;
    __host__ __device__ double operator()(int i) const
    {
        if ((skip && *skip) || V.fixed[i])
            return 0.0;
        const double a = alpha * dt;
        double s = 0.0;
        for (int c = 0; c < 3; c++) {
            const double ui = u[c * V.n + i];
            const double d = ui - dt * (double)V.v[c * V.n + i] - (double)dt * dt * gravity.v[c];
            s += d * d + a * ui * ui;
        }
        return (float)(0.5 * V.mass[i] / ((double)dt * dt) * s);
    }
};

/* out = reduce over [first, first + count) of tr (bytes NULL: queue it;
 * otherwise only raise *bytes to the scratch it needs). */
template <class Tr, class Op, class T>
static cudaError_t reduce(firn_fem_icuda *I, size_t *bytes, Tr tr, Op op, T init, int first,
                          int count, T *out, cudaStream_t st)
{
    if (bytes) {
        size_t need = 0;
        const cudaError_t e = cub::DeviceReduce::TransformReduce(
            NULL, need, thrust::counting_iterator<int>(first), out, count, op, tr, init, st);
        if (need > *bytes)
            *bytes = need;
        return e;
    }
    size_t have = I->temp_bytes;
    return cub::DeviceReduce::TransformReduce(I->temp, have, thrust::counting_iterator<int>(first),
                                              out, count, op, tr, init, st);
}

/* The functors, zeroed whole (the emulated runtime reads every word of a
 * kernel's operands). */
template <class T> static T zeroed()
{
    T t;
    memset(&t, 0, sizeof t);
    return t;
}

static dot_tr dot_of(const float *a, const float *b, int n, const int *skip)
{
    dot_tr t = zeroed<dot_tr>();
    t.a = a, t.b = b, t.n = n, t.skip = skip;
    return t;
}

static energy_tr energy_of_elements(const firn_fem_material *mats, const firn_fem_elements &E,
                                    const float *x0, const float *u, int n, const int *skip)
{
    energy_tr t = zeroed<energy_tr>();
    t.mats = mats, t.E = E, t.x0 = x0, t.u = u, t.n = n, t.skip = skip;
    return t;
}

static inertia_tr inertia_of(const firn_fem_vertices &V, const float *u, const float g[3], float dt,
                             float alpha, const int *skip)
{
    inertia_tr t = zeroed<inertia_tr>();
    t.V = V, t.u = u, t.skip = skip, t.dt = dt, t.alpha = alpha;
    t.gravity = firn_v3(g[0], g[1], g[2]);
    return t;
}

/* The scratch every reduction of a world with nv vertices and ne
 * elements needs (CUB's, at most). */
static int temp_need(firn_fem_icuda *I, const firn_fem_vertices &V, const firn_fem_elements &E,
                     const firn_fem_material *mats, size_t *bytes, firn_error *err)
{
    const int nmax = V.n > E.n ? V.n : E.n;
    const float g[3] = {0.0f, 0.0f, 0.0f};
    fem_dd zero2 = {0.0, 0.0};
    load_tr lt = zeroed<load_tr>();
    absmax_tr at = zeroed<absmax_tr>();
    rz_rr_tr rt = zeroed<rz_rr_tr>();
    /* Sizing only: CUB reads no operand (the outputs are host stand-ins). */
    double d = 0.0;
    fem_dd d2 = zero2;
    FIRN_CUDA_CHECK(reduce(I, bytes, dot_of(NULL, NULL, 0, NULL), sum_op(), 0.0, 0, nmax, &d, 0),
                    err);
    FIRN_CUDA_CHECK(reduce(I, bytes, rt, sum2_op(), zero2, 0, nmax, &d2, 0), err);
    FIRN_CUDA_CHECK(reduce(I, bytes, lt, sum_op(), 0.0, 0, nmax, &d, 0), err);
    FIRN_CUDA_CHECK(reduce(I, bytes, at, max_op(), 0.0, 0, nmax, &d, 0), err);
    FIRN_CUDA_CHECK(reduce(I, bytes, energy_of_elements(mats, E, NULL, NULL, 0, NULL), sum_op(),
                           0.0, 0, nmax, &d, 0),
                    err);
    FIRN_CUDA_CHECK(
        reduce(I, bytes, inertia_of(V, NULL, g, 1.0f, 0.0f, NULL), sum_op(), 0.0, 0, nmax, &d, 0),
        err);
    return 0;
}

/* ---- state ---------------------------------------------------------------- */

/* Carves the vectors out of base (NULL: only sizes them); the order of
 * firn_fem_implicit_device_bytes. */
static size_t layout(int nv, int ne, char *base, firn_fem_icuda *I)
{
    size_t off = 0;
#define CARVE(ptr, type, count) FIRN_CARVE(base, off, ptr, type, count)
    float **vec[] = {&I->u, &I->g, &I->r, &I->z, &I->p, &I->Ap, &I->du, &I->ut};
    for (size_t k = 0; k < sizeof vec / sizeof *vec; k++)
        CARVE(*vec[k], float, 3 * (size_t)nv);
    CARVE(I->Minv, float, 9 * (size_t)nv);
    CARVE(I->H, float, (size_t)FIRN_FEM_HESS_FLOATS *ne);
    CARVE(I->slot, float, 12 * (size_t)ne);
    CARVE(I->held, uint8_t, (size_t)nv);
    CARVE(I->ctl, fem_ictl, 1);
#undef CARVE
    return off;
}

int firn_cuda_fem_implicit_init(firn_fem_icuda **out, const firn_fem *H, const firn_fem_vertices &V,
                                const firn_fem_elements &E, const firn_fem_material *mats,
                                const char *device_name, cudaStream_t st, firn_error *err)
{
    *out = NULL;
    firn_fem_icuda *I = (firn_fem_icuda *)calloc(1, sizeof *I);
    if (!I) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory");
        return FIRN_CUDA_FAILED;
    }
    const size_t vectors = layout(V.n, E.n, NULL, I);
    if (vectors != firn_fem_implicit_device_bytes(V.n, E.n)) {
        free(I);
        firn_set_error(err, FIRN_E_DEVICE,
                       "internal: the implicit FEM device layout (%zu B) differs from "
                       "firn_fem_implicit_device_bytes (%zu B)",
                       vectors, firn_fem_implicit_device_bytes(V.n, E.n));
        return FIRN_CUDA_FAILED;
    }
    size_t temp = 0;
    if (temp_need(I, V, E, mats, &temp, err)) {
        free(I);
        return FIRN_CUDA_FAILED;
    }
    const size_t want = vectors + firn_align256(temp);
    /* The kernels that run the element and vertex bodies (the others are
     * a few scalars a thread) and their stack beyond the default. */
    const void *const kernels[] = {(const void *)imp_elements, (const void *)imp_gradient,
                                   (const void *)imp_element_Ap, (const void *)imp_vertex_Ap,
                                   (const void *)imp_preconditioner};
    size_t local = 0;
    firn_cuda_room r;
    if (firn_cuda_local_bytes(kernels, 5, &local, err) || firn_cuda_room_for(local, &r, err)) {
        free(I);
        return FIRN_CUDA_FAILED;
    }
    if (want + r.reserve + ((size_t)2 << 20) > r.free_b) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "not enough GPU memory on %s for the implicit FEM solver: %zu bytes "
                       "(%.1f MiB) for %d FEM vertices and %d elements, %.1f MiB of kernel stack; "
                       "%zu bytes (%.1f MiB) free; use coarser meshes, the explicit integrator, "
                       "or --backend cpu",
                       device_name, want, (double)want / (1 << 20), V.n, E.n,
                       (double)r.reserve / (1 << 20), r.free_b, (double)r.free_b / (1 << 20));
        free(I);
        return FIRN_CUDA_FAILED;
    }
    if (FIRN_CUDA_CALL(cudaMalloc(&I->block, want), err)) {
        free(I);
        return FIRN_CUDA_FAILED;
    }
    layout(V.n, E.n, (char *)I->block, I);
    I->temp = (char *)I->block + vectors;
    I->temp_bytes = temp;
    I->bytes = want;
    if (FIRN_CUDA_CALL(cudaMemsetAsync(I->block, 0, vectors, st), err)) {
        firn_cuda_fem_implicit_free(I);
        return FIRN_CUDA_FAILED;
    }
    /* Each body's allowance for E's float rounding (host/fem_implicit.c). */
    for (int b = 0; b < H->bodies; b++) {
        double e = 0.0;
        for (int k = H->e_first[b]; k < H->e_first[b + 1]; k++) {
            const firn_fem_material *m = &H->mats[H->E.mat[k]];
            e += H->E.vol[k] * (2.0 * m->mu + 3.0 * fabs(m->lambda));
        }
        I->e_round[b] = e * FLT_EPSILON;
    }
    *out = I;
    return 0;
}

void firn_cuda_fem_implicit_free(firn_fem_icuda *I)
{
    if (!I)
        return;
    cudaFree(I->block);
    (void)cudaGetLastError();
    free(I);
}

size_t firn_cuda_fem_implicit_bytes(const firn_fem_icuda *I) { return I ? I->bytes : 0; }

/* ---- one step ------------------------------------------------------------ */

#define LAUNCH(kernel, n, ...)                                                                     \
    do {                                                                                           \
        if ((n) > 0) {                                                                             \
            FIRN_LAUNCH(kernel, blocks_for(n), FIRN_FEM_IBLOCK, 0, st, __VA_ARGS__);               \
            FIRN_CUDA_CHECK_LAUNCH(#kernel, st, err);                                              \
        }                                                                                          \
    } while (0)

#define LAUNCH1(kernel, ...)                                                                       \
    do {                                                                                           \
        FIRN_LAUNCH(kernel, 1, 1, 0, st, __VA_ARGS__);                                             \
        FIRN_CUDA_CHECK_LAUNCH(#kernel, st, err);                                                  \
    } while (0)

#define REDUCE(tr, op, init, first, count, out)                                                    \
    FIRN_CUDA_CHECK(reduce(I, NULL, tr, op, init, first, count, out, st), err)

/* The body's solve state the queueing functions share. */
typedef struct {
    firn_fem_icuda *I;
    firn_fem_vertices V;
    firn_fem_elements E;
    const firn_fem_material *mats;
    firn_fem_implicit_params P;
    firn_fem_params W; /* the walls (P.walls) */
    float gravity[3], dt, cm, ck;
    int v0, v1, e0, e1;
    cudaStream_t st;
} imp_body;

/* out = (cm M + ck K) in over the body (skip: as the kernels'). */
static int queue_apply(const imp_body *B, float cm, float ck, const float *in, float *out,
                       const int *skip, firn_error *err)
{
    firn_fem_icuda *I = B->I;
    const cudaStream_t st = B->st;
    LAUNCH(imp_element_Ap, B->e1 - B->e0, B->E, I->H, in, B->V.n, I->slot, B->e0, B->e1, skip);
    LAUNCH(imp_vertex_Ap, B->v1 - B->v0, B->V, I->slot, B->E.n, in, cm, ck, out, B->v0, B->v1,
           skip);
    return 0;
}

/* E at x0 + y into the control block's parts (skip: as the kernels'). */
static int queue_energy(const imp_body *B, const float *y, const int *skip, firn_error *err)
{
    firn_fem_icuda *I = B->I;
    const cudaStream_t st = B->st;
    const int nv = B->v1 - B->v0, ne = B->e1 - B->e0;
    REDUCE(energy_of_elements(B->mats, B->E, B->V.x0, y, B->V.n, skip), sum_op(), 0.0, B->e0, ne,
           &I->ctl->en_el);
    REDUCE(inertia_of(B->V, y, B->gravity, B->dt, B->P.damping_alpha, skip), sum_op(), 0.0, B->v0,
           nv, &I->ctl->en_in);
    if (B->P.damping_beta > 0.0f) {
        if (queue_apply(B, 0.0f, B->P.damping_beta / B->dt, y, I->Ap, skip, err))
            return FIRN_CUDA_FAILED;
        REDUCE(dot_of(y, I->Ap, B->V.n, skip), sum_op(), 0.0, B->v0, nv, &I->ctl->en_k);
    }
    return 0;
}

/* The element pass, the gradient, the preconditioner and the Newton
 * check of iteration it. */
static int queue_prepare(const imp_body *B, int it, firn_error *err)
{
    firn_fem_icuda *I = B->I;
    const cudaStream_t st = B->st;
    const firn_fem_vertices &V = B->V;
    const int nv = B->v1 - B->v0;
    LAUNCH(imp_elements, B->e1 - B->e0, B->mats, B->E, V.x0, I->u, V.n, I->slot, I->H, B->e0, B->e1,
           (const int *)NULL);
    LAUNCH(imp_gradient, nv, V, I->slot, B->E.n, I->u,
           firn_v3(B->gravity[0], B->gravity[1], B->gravity[2]), B->dt, B->P.damping_alpha, I->g,
           B->v0, B->v1, (const int *)NULL);
    if (B->P.damping_beta > 0.0f) {
        if (queue_apply(B, 0.0f, B->P.damping_beta / B->dt, I->u, I->Ap, NULL, err))
            return FIRN_CUDA_FAILED;
        LAUNCH(imp_add, nv, I->g, I->Ap, V.n, B->v0, B->v1, (const int *)NULL);
    }
    LAUNCH(imp_preconditioner, nv, V, B->E, I->H, B->cm, B->ck, I->u, I->g, B->W, B->P.walls,
           I->held, I->Minv, B->v0, B->v1, (const int *)NULL);
    REDUCE(dot_of(I->g, I->g, V.n, NULL), sum_op(), 0.0, B->v0, nv, &I->ctl->gn2);
    if (it == 0) {
        load_tr lt = zeroed<load_tr>();
        lt.V = V, lt.dt = B->dt;
        lt.gravity = firn_v3(B->gravity[0], B->gravity[1], B->gravity[2]);
        absmax_tr at = zeroed<absmax_tr>();
        at.y = V.x0, at.n = V.n;
        REDUCE(lt, sum_op(), 0.0, B->v0, nv, &I->ctl->load2);
        REDUCE(at, max_op(), 0.0, B->v0, nv, &I->ctl->xmax);
    }
    LAUNCH1(imp_newton_check, I->ctl, B->P, it);
    LAUNCH(imp_pcg_init, nv, I->g, I->Minv, I->r, I->z, I->p, I->du, V.n, B->v0, B->v1,
           (const int *)&I->ctl->pcg_done);
    rz_rr_tr rt = zeroed<rz_rr_tr>();
    rt.r = I->r, rt.z = I->z, rt.n = V.n, rt.skip = &I->ctl->pcg_done;
    const fem_dd zero2 = {0.0, 0.0};
    REDUCE(rt, sum2_op(), zero2, B->v0, nv, &I->ctl->pair);
    LAUNCH1(imp_pcg_start, I->ctl);
    return 0;
}

/* k CG iterations, each a no-op once CG stopped. */
static int queue_pcg(const imp_body *B, int k, firn_error *err)
{
    firn_fem_icuda *I = B->I;
    const cudaStream_t st = B->st;
    const int n = B->V.n, nv = B->v1 - B->v0;
    const int *done = &I->ctl->pcg_done;
    rz_rr_tr rt = zeroed<rz_rr_tr>();
    rt.r = I->r, rt.z = I->z, rt.n = n, rt.skip = done;
    const fem_dd zero2 = {0.0, 0.0};
    for (int it = 0; it < k; it++) {
        if (queue_apply(B, B->cm, B->ck, I->p, I->Ap, done, err))
            return FIRN_CUDA_FAILED;
        REDUCE(dot_of(I->p, I->Ap, n, done), sum_op(), 0.0, B->v0, nv, &I->ctl->pAp);
        LAUNCH1(imp_pcg_alpha, I->ctl);
        LAUNCH(imp_pcg_update, nv, I->ctl, I->p, I->Ap, I->Minv, I->held, I->du, I->r, I->z, n,
               B->v0, B->v1, done);
        REDUCE(rt, sum2_op(), zero2, B->v0, nv, &I->ctl->pair);
        LAUNCH1(imp_pcg_beta, I->ctl, B->P);
        LAUNCH(imp_pcg_direction, nv, I->ctl, I->z, I->p, n, B->v0, B->v1, done);
    }
    return 0;
}

/* The line search along du (Armijo on E, the lowest trial when all fail)
 * and the step u += s du. */
static int queue_line_search(const imp_body *B, int body, firn_error *err)
{
    firn_fem_icuda *I = B->I;
    const cudaStream_t st = B->st;
    const int n = B->V.n, nv = B->v1 - B->v0;
    const int stiff = B->P.damping_beta > 0.0f, searched = B->P.linesearch_max > 0;
    if (searched) {
        if (queue_energy(B, I->u, NULL, err))
            return FIRN_CUDA_FAILED;
        REDUCE(dot_of(I->g, I->du, n, NULL), sum_op(), 0.0, B->v0, nv, &I->ctl->slope);
        LAUNCH1(imp_ls_begin, I->ctl, I->e_round[body], stiff);
        const int *ok = &I->ctl->ok;
        for (int ls = 0; ls <= B->P.linesearch_max; ls++) {
            LAUNCH(imp_trial, nv, I->ctl, B->V, I->u, I->du, I->ut, B->W, B->P.walls, B->v0, B->v1,
                   ok);
            if (queue_energy(B, I->ut, ok, err))
                return FIRN_CUDA_FAILED;
            LAUNCH1(imp_ls_trial, I->ctl, B->P, stiff);
        }
    }
    LAUNCH1(imp_ls_end, I->ctl, searched);
    LAUNCH(imp_advance, nv, I->ctl, B->V, I->du, I->u, I->ut, B->W, B->P.walls, B->v0, B->v1,
           (const int *)NULL);
    absmax_tr at = zeroed<absmax_tr>();
    at.y = I->ut, at.n = n;
    REDUCE(at, max_op(), 0.0, B->v0, nv, &I->ctl->dumax);
    LAUNCH1(imp_step_taken, I->ctl);
    return 0;
}

static int read_control(firn_fem_icuda *I, fem_ictl *c, cudaStream_t st, firn_error *err)
{
    FIRN_CUDA_CHECK(cudaMemcpyAsync(c, I->ctl, sizeof *c, cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    return 0;
}

int firn_cuda_fem_implicit_step(firn_fem_icuda *I, const firn_fem_vertices &V,
                                const firn_fem_elements &E, const firn_fem_material *mats,
                                firn_fem *H, int body, cudaStream_t st, firn_error *err)
{
    imp_body B;
    memset(&B, 0, sizeof B);
    B.I = I, B.V = V, B.E = E, B.mats = mats, B.st = st;
    B.P = firn_fem_implicit_params_default();
    B.P.walls = 1;
    B.W = H->P;
    B.dt = H->P.dt;
    for (int c = 0; c < 3; c++)
        B.gravity[c] = H->P.gravity[c];
    B.cm = (1.0f + B.P.damping_alpha * B.dt) / (B.dt * B.dt);
    B.ck = 1.0f + B.P.damping_beta / B.dt;
    B.v0 = H->v_first[body], B.v1 = H->v_first[body + 1];
    B.e0 = H->e_first[body], B.e1 = H->e_first[body + 1];
    const int nv = B.v1 - B.v0;
    LAUNCH(imp_start, nv, V, I->u, B.W, B.P.walls, B.v0, B.v1, (const int *)NULL);
    /* The control block starts each step zeroed (no flags, no counts). */
    FIRN_CUDA_CHECK(cudaMemsetAsync(I->ctl, 0, sizeof(fem_ictl), st), err);
    fem_ictl c;
    memset(&c, 0, sizeof c);
    int it = 0;
    for (;; it++) {
        if (queue_prepare(&B, it, err))
            return FIRN_CUDA_FAILED;
        for (int batch = 8, queued = 0;; batch = batch < 256 ? 2 * batch : 256) {
            const int k = batch < B.P.pcg_max - queued ? batch : B.P.pcg_max - queued;
            if (k > 0 && queue_pcg(&B, k, err))
                return FIRN_CUDA_FAILED;
            queued += k;
            if (read_control(I, &c, st, err))
                return FIRN_CUDA_FAILED;
            if (c.pcg_done || k <= 0)
                break;
        }
        if (c.newton_done)
            break;
        /* imp_newton_check stops the loop at it == newton_max at the
         * latest: a control block still going there is wrong, and the
         * host stops rather than queue iterations for ever. */
        if (it >= B.P.newton_max) {
            char who[48];
            firn_set_error(err, FIRN_E_DEVICE,
                           "FEM implicit on the GPU: %s: the Newton loop ran %d iterations "
                           "and did not stop at newton_max (%d): the device's control block "
                           "never set its stop flag (residual %g)",
                           firn_fem_body_name(H, body, who, sizeof who), it, B.P.newton_max,
                           (double)c.residual);
            return FIRN_CUDA_FAILED;
        }
        H->newton_iters++;
        H->pcg_iters += c.pcg_it;
        if (queue_line_search(&B, body, err))
            return FIRN_CUDA_FAILED;
    }
    H->implicit_solves++;
    const int failed = c.newton_done < 0;
    if (failed) {
        if (H->implicit_failed < 0) {
            char who[48];
            firn_fem_body_name(H, body, who, sizeof who);
            H->implicit_failed = body;
            if (c.failed == 1)
                firn_set_error(&H->implicit_error, FIRN_E_NUMERIC,
                               "FEM implicit: %s: the energy gradient is not finite after %d "
                               "Newton iterations (dt %g s too large for the material, or "
                               "inverted elements)",
                               who, it, B.dt);
            else
                firn_set_error(&H->implicit_error, FIRN_E_NUMERIC,
                               "FEM implicit: %s: the conjugate gradient broke down (p^T A p <= "
                               "0) in Newton iteration %d",
                               who, it);
        }
    }
    LAUNCH(imp_velocity, nv, V, I->u, 1.0f / B.dt, failed, B.v0, B.v1, (const int *)NULL);
    return 0;
}

#undef LAUNCH
#undef LAUNCH1
#undef REDUCE
