/* pair_pbd_rigid.cuh - PBD-rigid's view of the PBD solver and its
 * launchers (kernels/pair_pbd_rigid.cu), for kernels/mpm.cu and pbd.cu.
 * Return 0 or FIRN_CUDA_FAILED with err filled. */
#ifndef FIRN_PAIR_PBD_RIGID_CUH
#define FIRN_PAIR_PBD_RIGID_CUH

#include "cuda_check.cuh"
#include "firn_coupling.h"
#include "pbd.h"

/* The PBD solver as PBD-rigid sees it on the device: P (dt set by the
 * caller), device materials and particles. */
typedef struct {
    firn_pbd_params P;
    const firn_pbd_material *mats;
    firn_pbd_particles s;
} firn_pbd_view;

/* PBD-rigid (kernels/pair_pbd_rigid.cu), one thread per PBD particle
 * (firn_pbd_rigid_particle), the reaction reduced per warp, then double
 * atomicAdd into acc. */
int firn_cuda_queue_pbd_rigid(const firn_pbd_view *V, const firn_rigid *bodies, int nb, double *acc,
                              cudaStream_t st, firn_error *err);
/* One thread per PBD particle: the bodies' reaction to their ghosts in the
 * density correction (firn_pbf_body_react), between the correction and its
 * apply pass, reduced per warp into acc. */
int firn_cuda_queue_pbf_rigid(const firn_pbd_view *V, const firn_rigid *bodies, int nb, double *acc,
                              cudaStream_t st, firn_error *err);
/* Raises *bytes to the most local memory one thread of its kernels uses
 * (as firn_cuda_coupling_local_bytes). */
int firn_cuda_pbd_coupling_local_bytes(size_t *bytes, firn_error *err);

#endif
