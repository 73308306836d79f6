/* fem.cuh - launchers of kernels/fem.cu for kernels/mpm.cu and
 * kernels/coupling.cu: the FEM solver's phases and its pairs on the GPU,
 * queued on the world's stream. All int functions return 0 or
 * FIRN_CUDA_FAILED with err filled. Physics: include/firn_fem.h and
 * include/firn_fem_coupling.h; the CPU twins: host/fem_cpu.c and
 * host/fem_coupling.c. */
#ifndef FIRN_FEM_CUH
#define FIRN_FEM_CUH

#include "cuda_check.cuh"
#include "fem.h"
#include "firn_fem_coupling.h"

struct firn_fem_cuda; /* kernels/fem.cu, held in firn_fem.cuda */

/* The FEM solver's CUDA phases (host/solver.h firn_cuda_fem_phases):
 * pre-coupling (host/fem_cpu.c fem_pre_coupling) queues the element
 * forces, one thread per element (the profile's element interval ends
 * there), then each explicit body's velocity step, one thread per vertex,
 * and each implicit body's backward Euler solve
 * (firn_cuda_fem_implicit_step; the host solver's implicit counts and first
 * failure are reset at substep 0 of a call). Post-coupling: the position
 * step and the walls; non-finite vertices recorded in the FEM word
 * (substep of the call, vertex index). */
/* The FEM pairs (host/coupler.c couple_fem): the surface normals, then
 * FEM-Rigid with the nb bodies (nb 0: off), its reaction into acc, then
 * FEM-MPM on grid g (P NULL: off), then FEM-SPH with V (NULL: off). */
int firn_cuda_fem_queue_couple(struct firn_fem_cuda *S, const firn_rigid *bodies, int nb,
                               double *acc, const firn_params *P, firn_grid g,
                               const firn_sph_view *V, cudaStream_t st, firn_error *err);

/* At the end of a call, after the stream synchronised: the FEM non-finite
 * word into *bad (FIRN_CUDA_BAD_NONE when none), which it resets. */
int firn_cuda_fem_end_call(struct firn_world *w, unsigned long long *bad, firn_error *err);
/* After a CUDA error part way through a call: lets the queued work finish
 * and clears the FEM non-finite word (best effort). */
void firn_cuda_fem_discard_bad_word(struct firn_world *w);

/* Device memory the FEM state holds (0 without one). */
size_t firn_cuda_fem_bytes(const struct firn_fem_cuda *S);

/* Implicit bodies (kernels/fem_implicit.cu): the solver's device vectors
 * for all of a world's vertices V and elements E (whose device arrays they
 * use), allocated once when a body is implicit. */
struct firn_fem_icuda;
int firn_cuda_fem_implicit_init(struct firn_fem_icuda **out, const firn_fem *H,
                                const firn_fem_vertices &V, const firn_fem_elements &E,
                                const firn_fem_material *mats, const char *device_name,
                                cudaStream_t st, firn_error *err);
void firn_cuda_fem_implicit_free(struct firn_fem_icuda *I);
size_t firn_cuda_fem_implicit_bytes(const struct firn_fem_icuda *I);
/* One backward Euler step of body `body` (host/fem_implicit.c's
 * firn_fem_implicit_step, firn_fem_implicit_params_default): x0 = x, then
 * v = (x_{n+1} - x_n) / dt, the post-coupling phase moving x. Reads the
 * device's stop flags once per batch of CG iterations (a host round trip).
 * A failed solve leaves v NaN and, for the first failure since
 * H->implicit_failed was reset, sets it and H->implicit_error; H's
 * implicit_solves, newton_iters and pcg_iters count as the CPU's. */
int firn_cuda_fem_implicit_step(struct firn_fem_icuda *I, const firn_fem_vertices &V,
                                const firn_fem_elements &E, const firn_fem_material *mats,
                                firn_fem *H, int body, cudaStream_t st, firn_error *err);

#endif
