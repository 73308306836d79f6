/* fem.cu - the FEM solver on the CUDA path: its device state (vertices and
 * elements as structures of arrays, the surface the pairs use, all
 * uploaded once from host/fem.c's), and one thin kernel per pass of
 * include/firn_fem.h and include/firn_fem_coupling.h, one thread per
 * element, vertex, surface vertex or grid node running the body the CPU
 * path (host/fem_cpu.c, host/fem_coupling.c) loops over.
 *
 * Each element writes only its own four force slots and each vertex sums
 * its slots in the adjacency order, as on the CPU, so the explicit step
 * equals the CPU's to rounding (nvcc's FMA contraction; bitwise on the
 * emulated runtime). The pairs' scatters are float atomics here, in
 * whatever order the threads reach them; FEM-Rigid's reaction is a warp
 * sum and double atomics (kernels/pair_fem_rigid.cu). Implicit bodies (backward
 * Euler) are solved by kernels/fem_implicit.cu between the forces and the
 * coupling. */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "couple.cuh"
#include "cuda_backend.h"
#include "error.h"
#include "fem.cuh"
#include "fem_coupling.h"
#include "mpm_sph.h" /* firn_fem_sph_contact */
#include "pair_fem_rigid.cuh"
#include "sph.cuh" /* firn_cuda_world_stream */
#include "world.h"

#define FIRN_FEM_BLOCK 256

struct firn_fem_cuda {
    firn_fem_vertices V;         /* device SoA: x, v, x0, mass, f, adj_start, fixed, adj */
    firn_fem_elements E;         /* device SoA: v, B, vol, mat, fslot */
    firn_fem_surface surf;       /* device surface (V as above): surf, face, vf_start, vf, normal */
    float *mpm_D;                /* FEM-MPM scratch, 4 per MPM node (NULL: the pair is off) */
    float *sph_share;            /* FEM-SPH scratch, 3 per surface vertex (NULL: off) */
    float *sph_count;            /* FEM-SPH: boxes holding each SPH particle (firn_fem_sph_count) */
    unsigned long long *sph_key; /* FEM-SPH's contact distance per SPH particle: the nearest */
    float *sph_d;                /* triangle's key and the signed distance (NULL: off) */
    firn_fem_material *mats;     /* FIRN_MAX_MATERIALS, by material index */
    firn_fem_icuda *imp;         /* implicit bodies' solver (NULL: none) */
    unsigned long long *bad;     /* first non-finite FEM vertex (firn_cuda_bad_word) */
    void *block;                 /* the one allocation of all of the above */
    long long nodes;             /* MPM nodes mpm_D covers */
    size_t bytes;
};

static unsigned blocks_for(long long n)
{
    return (unsigned)((n + FIRN_FEM_BLOCK - 1) / FIRN_FEM_BLOCK);
}

/* ---- kernels ------------------------------------------------------------- */

static __global__ void fem_forces(const firn_fem_material *mats, firn_fem_elements E,
                                  const float *x, int nv)
{
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e < E.n)
        firn_fem_element_forces(e, mats, &E, x, nv);
}

/* Vertices [first, last): one explicit body, or all when none is
 * implicit. */
static __global__ void fem_velocity(firn_fem_params P, firn_fem_vertices V, firn_fem_elements E,
                                    int first, int last)
{
    int i = first + (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < last)
        firn_fem_velocity(i, &P, &V, &E);
}

static __global__ void fem_normals(firn_fem_surface S)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < S.ns)
        firn_fem_surface_normal(k, &S);
}

static __global__ void fem_mpm_weigh(firn_fem_surface S, firn_params P, firn_grid g, float *D)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < S.ns)
        firn_fem_mpm_weigh(k, &S, &P, g, D);
}

/* The vertex's common velocity, then its scatter: the scatter reads only
 * this thread's v* and the finished weights (include/firn_fem_coupling.h). */
static __global__ void fem_mpm_exchange(firn_fem_surface S, firn_params P, firn_grid g, float *D)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < S.ns) {
        firn_fem_mpm_vertex(k, &S, &P, g, D);
        firn_fem_mpm_scatter(k, &S, &P, g, D);
    }
}

static __global__ void fem_mpm_node(firn_params P, firn_grid g, float *D)
{
    long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j < g.nodes)
        firn_fem_mpm_node(j, &P, g, D);
}

static __global__ void fem_sph_count(firn_fem_surface S, firn_sph_view W, float *count)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < S.ns)
        firn_fem_sph_count(k, &S, &W, count);
}

static __global__ void fem_sph_vertex(firn_fem_surface S, firn_sph_view W, const float *count,
                                      float *share)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < S.ns)
        firn_fem_sph_vertex(k, &S, &W, count, share);
}

static __global__ void fem_sph_scatter(firn_fem_surface S, firn_sph_view W, const float *count,
                                       const float *share)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < S.ns)
        firn_fem_sph_scatter(k, &S, &W, count, share);
}

static __global__ void fem_sph_face(firn_fem_surface S, firn_sph_view W, unsigned long long *key)
{
    int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f < S.nf)
        firn_fem_sph_face(f, &S, &W, key);
}

static __global__ void fem_sph_resolve(firn_fem_surface S, firn_sph_view W)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < W.s.n)
        firn_fem_sph_resolve(p, &S, &W);
}

static __global__ void fem_sph_wall(firn_fem_surface S, firn_sph_view W)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < W.s.n)
        firn_fem_sph_wall(p, &S, &W);
}

static __global__ void fem_position(firn_fem_params P, firn_fem_vertices V, unsigned long long *bad,
                                    unsigned substep)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < V.n && !firn_fem_position(i, &P, &V))
        atomicMin(bad, firn_cuda_bad_word(substep, i));
}

/* ---- launchers ------------------------------------------------------------ */

static int fem_queue_pre(firn_world *w, firn_step *step)
{
    firn_fem_cuda *S = w->fem.cuda;
    firn_fem *H = &w->fem;
    const unsigned substep = step->substep;
    firn_error *err = step->err;
    const cudaStream_t st = firn_cuda_world_stream(w);
    if (S->E.n > 0) {
        FIRN_LAUNCH(fem_forces, blocks_for(S->E.n), FIRN_FEM_BLOCK, 0, st, S->mats, S->E, S->V.x,
                    S->V.n);
        FIRN_CUDA_CHECK_LAUNCH("fem_forces", st, err);
    }
    if (firn_step_mark(step, FIRN_PROF_FEM_ELEMENTS))
        return FIRN_CUDA_FAILED;
    if (!S->imp) {
        FIRN_LAUNCH(fem_velocity, blocks_for(S->V.n), FIRN_FEM_BLOCK, 0, st, H->P, S->V, S->E, 0,
                    S->V.n);
        FIRN_CUDA_CHECK_LAUNCH("fem_velocity", st, err);
        return 0;
    }
    if (substep == 0)
        H->implicit_failed = -1;
    for (int b = 0; b < H->bodies; b++) {
        const int v0 = H->v_first[b], v1 = H->v_first[b + 1];
        if (H->implicit[b]) {
            if (firn_cuda_fem_implicit_step(S->imp, S->V, S->E, S->mats, H, b, st, err))
                return FIRN_CUDA_FAILED;
        } else if (v1 > v0) {
            FIRN_LAUNCH(fem_velocity, blocks_for(v1 - v0), FIRN_FEM_BLOCK, 0, st, H->P, S->V, S->E,
                        v0, v1);
            FIRN_CUDA_CHECK_LAUNCH("fem_velocity", st, err);
        }
    }
    return 0;
}

int firn_cuda_fem_queue_couple(firn_fem_cuda *S, const firn_rigid *bodies, int nb, double *acc,
                               const firn_params *P, firn_grid g, const firn_sph_view *V,
                               cudaStream_t st, firn_error *err)
{
    const unsigned b = blocks_for(S->surf.ns);
    if (b == 0)
        return 0;
    FIRN_LAUNCH(fem_normals, b, FIRN_FEM_BLOCK, 0, st, S->surf);
    FIRN_CUDA_CHECK_LAUNCH("fem_normals", st, err);
    if (nb > 0 && firn_cuda_queue_fem_rigid(&S->surf, bodies, nb, acc, st, err))
        return FIRN_CUDA_FAILED;
    if (P && S->mpm_D) {
        FIRN_LAUNCH(fem_mpm_weigh, b, FIRN_FEM_BLOCK, 0, st, S->surf, *P, g, S->mpm_D);
        FIRN_CUDA_CHECK_LAUNCH("fem_mpm_weigh", st, err);
        FIRN_LAUNCH(fem_mpm_exchange, b, FIRN_FEM_BLOCK, 0, st, S->surf, *P, g, S->mpm_D);
        FIRN_CUDA_CHECK_LAUNCH("fem_mpm_exchange", st, err);
        FIRN_LAUNCH(fem_mpm_node, blocks_for(g.nodes), FIRN_FEM_BLOCK, 0, st, *P, g, S->mpm_D);
        FIRN_CUDA_CHECK_LAUNCH("fem_mpm_node", st, err);
    }
    if (V && S->sph_share) {
        firn_sph_view W = *V;
        W.fem_key = S->sph_key;
        W.fem_d = S->sph_d;
        if (W.fem_d && W.s.n > 0) {
            FIRN_LAUNCH(fem_sph_wall, blocks_for(W.s.n), FIRN_FEM_BLOCK, 0, st, S->surf, W);
            FIRN_CUDA_CHECK_LAUNCH("fem_sph_wall", st, err);
        }
        if (W.s.n > 0)
            FIRN_CUDA_CHECK(cudaMemsetAsync(S->sph_count, 0, (size_t)W.s.n * sizeof(float), st),
                            err);
        FIRN_LAUNCH(fem_sph_count, b, FIRN_FEM_BLOCK, 0, st, S->surf, W, S->sph_count);
        FIRN_CUDA_CHECK_LAUNCH("fem_sph_count", st, err);
        FIRN_LAUNCH(fem_sph_vertex, b, FIRN_FEM_BLOCK, 0, st, S->surf, W, S->sph_count,
                    S->sph_share);
        FIRN_CUDA_CHECK_LAUNCH("fem_sph_vertex", st, err);
        FIRN_LAUNCH(fem_sph_scatter, b, FIRN_FEM_BLOCK, 0, st, S->surf, W, S->sph_count,
                    S->sph_share);
        FIRN_CUDA_CHECK_LAUNCH("fem_sph_scatter", st, err);
    }
    return 0;
}

/* FEM-SPH's contact distance (host/cuda_backend.h). */
int firn_cuda_fem_queue_sph_distance(firn_world *w, firn_sph_view *V, firn_error *err)
{
    const firn_fem_cuda *S = w->fem.cuda;
    V->fem_key = NULL;
    V->fem_d = NULL;
    if (!S || !S->sph_d || V->s.n <= 0)
        return 0;
    const cudaStream_t st = firn_cuda_world_stream(w);
    V->fem_key = S->sph_key;
    V->fem_d = S->sph_d;
    FIRN_CUDA_CHECK(
        cudaMemsetAsync(S->sph_key, 0xff, (size_t)V->s.n * sizeof(unsigned long long), st), err);
    if (S->surf.nf > 0) {
        FIRN_LAUNCH(fem_sph_face, blocks_for(S->surf.nf), FIRN_FEM_BLOCK, 0, st, S->surf, *V,
                    S->sph_key);
        FIRN_CUDA_CHECK_LAUNCH("fem_sph_face", st, err);
    }
    FIRN_LAUNCH(fem_sph_resolve, blocks_for(V->s.n), FIRN_FEM_BLOCK, 0, st, S->surf, *V);
    FIRN_CUDA_CHECK_LAUNCH("fem_sph_resolve", st, err);
    return 0;
}

static int fem_queue_post(firn_world *w, firn_step *step)
{
    firn_fem_cuda *S = w->fem.cuda;
    const cudaStream_t st = firn_cuda_world_stream(w);
    FIRN_LAUNCH(fem_position, blocks_for(S->V.n), FIRN_FEM_BLOCK, 0, st, w->fem.P, S->V, S->bad,
                step->substep);
    FIRN_CUDA_CHECK_LAUNCH("fem_position", st, step->err);
    return 0;
}

const firn_phase_ops firn_cuda_fem_phases = {NULL, fem_queue_pre, fem_queue_post};

int firn_cuda_fem_end_call(firn_world *w, unsigned long long *bad, firn_error *err)
{
    return firn_cuda_take_bad_word(w->fem.cuda->bad, firn_cuda_world_stream(w), bad, err);
}

void firn_cuda_fem_discard_bad_word(firn_world *w)
{
    firn_cuda_discard_bad_word(w->fem.cuda->bad, firn_cuda_world_stream(w));
}

size_t firn_cuda_fem_bytes(const firn_fem_cuda *S)
{
    return S ? S->bytes + firn_cuda_fem_implicit_bytes(S->imp) : 0;
}

/* ---- device state --------------------------------------------------------- */

/* The sizes of the device state, in the order of layout(). */
typedef struct {
    int nv, ne, nf, ns;
    long long nodes; /* mpm_D's nodes (0: FEM-MPM off) */
    int share;       /* FEM-SPH on */
    int sph_n;       /* SPH particles (FEM-SPH's counters) */
    int contact;     /* FEM-SPH's contact distance on (firn_fem_sph_contact) */
} fem_sizes;

/* Carves the state out of one block at base (NULL: only sizes it), each
 * array 256-byte aligned; returns the block's size. */
static size_t layout(const fem_sizes *z, char *base, firn_fem_cuda *S)
{
    const size_t nv = (size_t)z->nv, ne = (size_t)z->ne, nf = (size_t)z->nf, ns = (size_t)z->ns;
    size_t off = 0;
#define CARVE(ptr, type, count) FIRN_CARVE(base, off, ptr, type, count)
    firn_fem_vertices *V = &S->V;
    firn_fem_elements *E = &S->E;
    firn_fem_surface *F = &S->surf;
    CARVE(V->x, float, 3 * nv);
    CARVE(V->v, float, 3 * nv);
    CARVE(V->x0, float, 3 * nv);
    CARVE(V->mass, float, nv);
    CARVE(V->f, float, 3 * nv);
    CARVE(V->adj_start, int, nv + 1);
    CARVE(V->fixed, uint8_t, nv);
    CARVE(V->adj, int, 4 * ne);
    CARVE(E->v, int, 4 * ne);
    CARVE(E->B, float, 9 * ne);
    CARVE(E->vol, float, ne);
    CARVE(E->mat, uint8_t, ne);
    CARVE(E->fslot, float, 12 * ne);
    int *surf = NULL, *face = NULL, *vf_start = NULL, *vf = NULL;
    float *normal = NULL;
    CARVE(surf, int, ns);
    CARVE(face, int, 3 * nf);
    CARVE(vf_start, int, ns + 1);
    CARVE(vf, int, 3 * nf);
    CARVE(normal, float, 3 * ns);
    if (z->nodes > 0)
        CARVE(S->mpm_D, float, 4 * (size_t)z->nodes);
    if (z->share) {
        CARVE(S->sph_share, float, 3 * ns);
        CARVE(S->sph_count, float, (size_t)z->sph_n);
    }
    if (z->contact) {
        CARVE(S->sph_key, unsigned long long, (size_t)z->sph_n);
        CARVE(S->sph_d, float, (size_t)z->sph_n);
    }
    CARVE(S->mats, firn_fem_material, FIRN_MAX_MATERIALS);
    CARVE(S->bad, unsigned long long, 1);
#undef CARVE
    if (base) {
        V->n = z->nv;
        E->n = z->ne;
        F->V = *V;
        F->ns = z->ns;
        F->surf = surf;
        F->face = face;
        F->vf_start = vf_start;
        F->vf = vf;
        F->normal = normal;
        F->nf = z->nf;
    }
    return off;
}

/* Checks that the FEM state (want bytes) fits in the free device memory
 * with its kernels' and the FEM-Rigid kernel's extra stack
 * (firn_cuda_room) and the driver's rounding. */
static int check_memory(const firn_world *w, size_t want, firn_error *err)
{
    size_t local = 0;
    const void *const kernels[] = {
        (const void *)fem_forces,     (const void *)fem_velocity,     (const void *)fem_normals,
        (const void *)fem_mpm_weigh,  (const void *)fem_mpm_exchange, (const void *)fem_mpm_node,
        (const void *)fem_sph_vertex, (const void *)fem_sph_scatter,  (const void *)fem_position,
        (const void *)fem_sph_count,  (const void *)fem_sph_face,     (const void *)fem_sph_resolve,
        (const void *)fem_sph_wall};
    if (firn_cuda_local_bytes(kernels, sizeof kernels / sizeof kernels[0], &local, err) ||
        firn_cuda_fem_coupling_local_bytes(&local, err))
        return FIRN_CUDA_FAILED;
    firn_cuda_room r;
    if (firn_cuda_room_for(local, &r, err))
        return FIRN_CUDA_FAILED;
    const size_t rounding = (size_t)2 << 20;
    if (want + r.reserve + rounding > r.free_b) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "not enough GPU memory on %s for the FEM solver: %zu bytes (%.1f MiB) "
                       "requested for %d FEM vertices and %d elements, %.1f MiB of kernel stack; "
                       "%zu bytes (%.1f MiB) free of %zu (%.1f MiB); use coarser meshes, or "
                       "--backend cpu",
                       w->device_name, want, (double)want / (1 << 20), w->fem.V.n, w->fem.E.n,
                       (double)r.reserve / (1 << 20), r.free_b, (double)r.free_b / (1 << 20),
                       r.total_b, (double)r.total_b / (1 << 20));
        return FIRN_CUDA_FAILED;
    }
    return 0;
}

#define UP(dst, src, bytes)                                                                        \
    FIRN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st), err)

static int state_init(firn_world *w, firn_fem_cuda *S, const int *vf_start, const int *vf,
                      firn_error *err)
{
    const firn_fem *H = &w->fem;
    const cudaStream_t st = firn_cuda_world_stream(w);
    fem_sizes z;
    z.nv = H->V.n, z.ne = H->E.n, z.nf = H->nf, z.ns = H->ns;
    const long long nodes = (long long)w->params.n[0] * w->params.n[1] * w->params.n[2];
    z.nodes = w->coupler.fem_mpm ? nodes : 0; /* the device grid's (kernels/mpm.cu) */
    z.share = w->coupler.fem_sph;
    z.sph_n = w->sph.n;
    z.contact = firn_fem_sph_contact(w);
    const size_t want = layout(&z, NULL, S);
    if (want !=
        firn_fem_device_bytes(z.nv, z.ne, z.nf, z.ns, z.nodes, z.share, z.sph_n, z.contact)) {
        firn_set_error(
            err, FIRN_E_DEVICE,
            "internal: the FEM device layout (%zu B) differs from firn_fem_device_bytes "
            "(%zu B)",
            want,
            firn_fem_device_bytes(z.nv, z.ne, z.nf, z.ns, z.nodes, z.share, z.sph_n, z.contact));
        return FIRN_CUDA_FAILED;
    }
    if (check_memory(w, want, err))
        return FIRN_CUDA_FAILED;
    FIRN_CUDA_CHECK(cudaMalloc(&S->block, want), err);
    layout(&z, (char *)S->block, S);
    S->nodes = z.nodes;
    S->bytes = want;
    const size_t nv = (size_t)z.nv, ne = (size_t)z.ne, nf = (size_t)z.nf, ns = (size_t)z.ns;
    const size_t f4 = sizeof(float), i4 = sizeof(int);
    UP(S->V.x, H->V.x, 3 * nv * f4);
    UP(S->V.v, H->V.v, 3 * nv * f4);
    UP(S->V.x0, H->V.x0, 3 * nv * f4);
    UP(S->V.mass, H->V.mass, nv * f4);
    UP(S->V.f, H->V.f, 3 * nv * f4);
    UP(S->V.adj_start, H->V.adj_start, (nv + 1) * i4);
    UP(S->V.fixed, H->V.fixed, nv);
    UP(S->V.adj, H->V.adj, 4 * ne * i4);
    UP(S->E.v, H->E.v, 4 * ne * i4);
    UP(S->E.B, H->E.B, 9 * ne * f4);
    UP(S->E.vol, H->E.vol, ne * f4);
    UP(S->E.mat, H->E.mat, ne);
    FIRN_CUDA_CHECK(cudaMemsetAsync(S->E.fslot, 0, 12 * ne * f4, st), err);
    UP((int *)S->surf.surf, H->surf, ns * i4);
    UP((int *)S->surf.face, H->face, 3 * nf * i4);
    UP((int *)S->surf.vf_start, vf_start, (ns + 1) * i4);
    UP((int *)S->surf.vf, vf, 3 * nf * i4);
    FIRN_CUDA_CHECK(cudaMemsetAsync(S->surf.normal, 0, 3 * ns * f4, st), err);
    if (S->mpm_D) /* zero before the first weighing; firn_fem_mpm_node leaves it zero */
        FIRN_CUDA_CHECK(cudaMemsetAsync(S->mpm_D, 0, 4 * (size_t)z.nodes * f4, st), err);
    if (S->sph_share)
        FIRN_CUDA_CHECK(cudaMemsetAsync(S->sph_share, 0, 3 * ns * f4, st), err);
    UP(S->mats, H->mats, FIRN_MAX_MATERIALS * sizeof(firn_fem_material));
    static const unsigned long long none = FIRN_CUDA_BAD_NONE;
    UP(S->bad, &none, sizeof none);
    /* Pageable host sources are staged at the call; wait before the
     * caller frees vf_start and vf. */
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    return 0;
}

#undef UP

/* ---- launchers (extern "C", declared in host/cuda_backend.h) ---------- */

extern "C" int firn_cuda_fem_init(firn_world *w, firn_error *err)
{
    if (w->fem.V.n == 0)
        return 0;
    if (!w->cuda) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "firn_cuda_fem_init: the CUDA backend of this world is not initialised");
        return FIRN_CUDA_FAILED;
    }
    int *vf_start = NULL, *vf = NULL;
    if (firn_fem_surface_faces(&w->fem, &vf_start, &vf, err))
        return FIRN_CUDA_FAILED;
    firn_fem_cuda *S = (firn_fem_cuda *)calloc(1, sizeof *S);
    if (!S) {
        free(vf_start), free(vf);
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory");
        return FIRN_CUDA_FAILED;
    }
    w->fem.cuda = S;
    int failed = state_init(w, S, vf_start, vf, err);
    free(vf_start), free(vf);
    int implicit = 0;
    for (int b = 0; b < w->fem.bodies; b++)
        implicit |= w->fem.implicit[b];
    if (!failed && implicit)
        failed = firn_cuda_fem_implicit_init(&S->imp, &w->fem, S->V, S->E, S->mats, w->device_name,
                                             firn_cuda_world_stream(w), err);
    if (failed) {
        firn_cuda_fem_free(w);
        return FIRN_CUDA_FAILED;
    }
    w->fem.host_stale = 0;
    return 0;
}

/* Best effort, as firn_cuda_free. */
extern "C" void firn_cuda_fem_free(firn_world *w)
{
    firn_fem_cuda *S = w->fem.cuda;
    if (!S)
        return;
    if (w->cuda)
        (void)cudaStreamSynchronize(firn_cuda_world_stream(w));
    firn_cuda_fem_implicit_free(S->imp);
    cudaFree(S->block);
    (void)cudaGetLastError();
    free(S);
    w->fem.cuda = NULL;
}

/* What the device changes: x, v, x0 and f (masses, topology and rest data
 * never change; the slots and the surface scratch are a substep's). */
extern "C" int firn_cuda_fem_download(firn_world *w, firn_error *err)
{
    firn_fem_cuda *S = w->fem.cuda;
    if (!S || !w->cuda) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "firn_cuda_fem_download: the FEM solver of this world is not on the GPU");
        return FIRN_CUDA_FAILED;
    }
    firn_fem *H = &w->fem;
    const cudaStream_t st = firn_cuda_world_stream(w);
    const size_t n3 = 3 * (size_t)S->V.n * sizeof(float);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(H->V.x, S->V.x, n3, cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(H->V.v, S->V.v, n3, cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(H->V.x0, S->V.x0, n3, cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(H->V.f, S->V.f, n3, cudaMemcpyDeviceToHost, st), err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    return 0;
}

/* The host mirror's x, v and x0 onto the device (a test or a tool that
 * edited the mirror between calls). */
extern "C" int firn_cuda_fem_upload(firn_world *w, firn_error *err)
{
    firn_fem_cuda *S = w->fem.cuda;
    if (!S || !w->cuda) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "firn_cuda_fem_upload: the FEM solver of this world is not on the GPU");
        return FIRN_CUDA_FAILED;
    }
    const firn_fem *H = &w->fem;
    const cudaStream_t st = firn_cuda_world_stream(w);
    const size_t n3 = 3 * (size_t)S->V.n * sizeof(float);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->V.x, H->V.x, n3, cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->V.v, H->V.v, n3, cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaMemcpyAsync(S->V.x0, H->V.x0, n3, cudaMemcpyHostToDevice, st), err);
    FIRN_CUDA_CHECK(cudaStreamSynchronize(st), err);
    return 0;
}

/* The FEM pairs' step of the couple stage (host/coupler.c): FEM-rigid,
 * FEM-MPM on the updated grid and FEM-SPH, each where the Coupler has it. */
static int fem_pairs_queue(firn_world *w, firn_step *st)
{
    const firn_coupler *c = &w->coupler;
    const firn_sph_view V = firn_cuda_couple_sph_view(w, st->P);
    int n;
    double *acc;
    firn_rigid *bodies = firn_cuda_world_rigids(w, &n, &acc);
    return firn_cuda_fem_queue_couple(w->fem.cuda, bodies, c->fem_rigid ? n : 0, acc,
                                      c->fem_mpm ? st->P : NULL, firn_cuda_world_grid(w),
                                      c->fem_sph && w->sph.cuda ? &V : NULL,
                                      firn_cuda_world_stream(w), st->err);
}

extern "C" const firn_step_fn firn_cuda_fem_pairs = fem_pairs_queue;
