/* coupling.cuh - launchers of kernels/coupling.cu for kernels/mpm.cu: the
 * rigid step, the grid update with rigid coupling and the CPIC transfers,
 * queued on a stream. All return 0 or FIRN_CUDA_FAILED with err filled.
 * The SPH pairs' launchers (grid update with MPM-SPH, SPH-rigid) are with
 * the SPH solver's, in kernels/sph.cuh. */
#ifndef FIRN_COUPLING_CUH
#define FIRN_COUPLING_CUH

#include "cuda_check.cuh"
#include "firn_coupling.h"
#include "firn_material.h"
#include "firn_mpm.h"
#include "firn_tool.h"

/* One thread per body: firn_rigid_step with the accumulated force. */
int firn_cuda_queue_rigid_step(firn_rigid *bodies, double *acc, int nb, const firn_params *P,
                               cudaStream_t st, firn_error *err);
/* One thread per node: velocity + gravity, the impulse of every coupled
 * body, walls; the force and torque reduced per warp, then atomicAdd. */
int firn_cuda_queue_grid_rigid(const firn_params *P, firn_grid g, const firn_rigid *bodies, int nb,
                               double *acc, cudaStream_t st, firn_error *err);

/* CPIC (include/firn_cpic.h), one thread per particle: side marking (before
 * the rigid step), p2g without the nodes across a surface, and g2p with the
 * rigid response, its reaction reduced per warp into acc, the first
 * non-finite particle into bad (firn_cuda_bad_word: substep of the call,
 * then particle index). */
int firn_cuda_queue_cpic_mark(const firn_params *P, firn_particles p, const firn_rigid *bodies,
                              int nb, cudaStream_t st, firn_error *err);
int firn_cuda_queue_p2g_cpic(const firn_params *P, const firn_material *mats, firn_particles p,
                             firn_grid g, const firn_rigid *bodies, int nb, cudaStream_t st,
                             firn_error *err);
int firn_cuda_queue_g2p_cpic(const firn_params *P, const firn_material *mats, firn_particles p,
                             firn_grid g, const firn_rigid *bodies, int nb, double *acc,
                             unsigned long long *bad, unsigned substep, cudaStream_t st,
                             firn_error *err);

/* The tool solver's phases (include/firn_tool.h), queued on a stream: one
 * thread per tool advects its pose and zeroes its substep's reaction acc
 * [nt][6]; the grid update applies, per node, velocity + gravity, every
 * tool (firn_grid_node_tools; nt > 0), the coupled bodies (nb > 0), MPM-SPH
 * (V not NULL), walls, the reactions reduced per warp into tacc and acc;
 * one thread per tool adds the substep's reaction into its record (the
 * frame's sum restarting first when reset_frame is set). */
int firn_cuda_queue_tool_advect(firn_tool *tools, double *acc, int nt, const firn_params *P,
                                cudaStream_t st, firn_error *err);
int firn_cuda_queue_grid_tools(const firn_params *P, firn_grid g, const firn_tool *tools, int nt,
                               double *tacc, const firn_rigid *bodies, int nb, double *acc,
                               const firn_sph_view *V, cudaStream_t st, firn_error *err);
int firn_cuda_queue_tool_record(firn_tool_record *rec, const double *acc, int nt, float dt,
                                int reset_frame, cudaStream_t st, firn_error *err);
/* Raises *bytes to the most local memory one thread of the tools' kernels
 * uses. */
int firn_cuda_tool_local_bytes(size_t *bytes, firn_error *err);

/* Raises *bytes to the most local memory (stack) one thread of a coupling
 * kernel uses, the CPIC kernels counted only when cpic is set: the driver
 * reserves it for every thread the GPU can hold. */
int firn_cuda_coupling_local_bytes(int cpic, size_t *bytes, firn_error *err);

#endif
