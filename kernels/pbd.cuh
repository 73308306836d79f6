/* pbd.cuh - launchers of kernels/pbd.cu for kernels/mpm.cu and
 * kernels/coupling.cu: the PBD solver's phases on the GPU, queued on the
 * world's stream. All int functions return 0 or FIRN_CUDA_FAILED with err
 * filled. Physics: include/firn_pbd.h; the CPU twin: host/pbd_cpu.c. */
#ifndef FIRN_PBD_CUH
#define FIRN_PBD_CUH

#include "cuda_check.cuh"
#include "pair_pbd_rigid.cuh"
#include "pbd.h"

struct firn_pbd_cuda; /* kernels/pbd.cu, held in firn_pbd.cuda */

/* The PBD solver's CUDA phases (host/solver.h firn_cuda_pbd_phases):
 * pre-coupling (host/pbd_cpu.c pbd_pre_coupling) queues predict, every
 * lambda zeroed, then the stretch iterations' sweeps over the edges and the
 * bending iterations' over the inner edges, one launch per colour in the
 * colours' order (the profile's constraint interval ends there); then,
 * with liquid or free particles, the particle passes (the neighbour grid,
 * the density and viscosity iterations, contact, PBD-rigid's reaction).
 * Post-coupling: v = (x - x0) / dt and the box; non-finite particles
 * recorded in the PBD word (substep of the call, particle index). */
/* MPM-PBD (host/coupler.c couple_mpm_pbd) after the grid update on grid
 * g: the particles' node keys, CUB's stable sort of them, one thread per
 * run of equal keys (firn_mpm_pbd_node, then the node's walls). Nothing
 * when the world's coupling.mpm_pbd is off. */
int firn_cuda_pbd_queue_mpm(struct firn_pbd_cuda *S, const firn_params *P, firn_grid g,
                            cudaStream_t st, firn_error *err);
firn_pbd_view firn_cuda_pbd_view(const struct firn_pbd_cuda *S, const firn_pbd_params *P);

/* At the end of a call, after the stream synchronised: the PBD non-finite
 * word into *bad (FIRN_CUDA_BAD_NONE when none), which it resets. */
int firn_cuda_pbd_end_call(struct firn_world *w, unsigned long long *bad, firn_error *err);
/* After a CUDA error part way through a call: lets the queued work finish
 * and clears the PBD non-finite word (best effort, as mpm.cu's). */
void firn_cuda_pbd_discard_bad_word(struct firn_world *w);

/* Device memory the PBD state holds (0 without one). */
size_t firn_cuda_pbd_bytes(const struct firn_pbd_cuda *S);

#endif
