/* coupling.cuh - launchers of kernels/coupling.cu for kernels/mpm.cu: the
 * rigid step and the grid update with rigid coupling, queued on a stream.
 * Both return 0 or FIRN_CUDA_FAILED with err filled. */
#ifndef FIRN_COUPLING_CUH
#define FIRN_COUPLING_CUH

#include "cuda_check.cuh"

/* One thread per body: firn_rigid_step with the accumulated force. */
int firn_cuda_queue_rigid_step(firn_rigid *bodies, double *acc, int nb, const firn_params *P,
                               cudaStream_t st, firn_error *err);
/* One thread per node: velocity + gravity, the impulse of every coupled
 * body, walls; the force and torque reduced per warp, then atomicAdd. */
int firn_cuda_queue_grid_rigid(const firn_params *P, firn_grid g, const firn_rigid *bodies, int nb,
                               double *acc, cudaStream_t st, firn_error *err);

#endif
