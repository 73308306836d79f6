/* cuda_backend.h - the CUDA backend as the host sees it (kernels/;
 * host/device.c when built without CUDA). */
#ifndef FIRN_CUDA_BACKEND_H
#define FIRN_CUDA_BACKEND_H

#include <stddef.h>
#include "firn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct firn_cuda_state firn_cuda_state; /* kernels/, opaque here */

/* firn_world.host_stale (CUDA): which parts of the host mirror of the
 * particles are older than the device state. Volume and material never
 * change on the device. */
#define FIRN_STALE_XV   1 /* x, v */
#define FIRN_STALE_REST 2 /* C, F, Jp, damage, CPIC words */
#define FIRN_STALE_ALL  (FIRN_STALE_XV | FIRN_STALE_REST)

/* CUDA path (kernels/mpm.cu; host/device.c when built without CUDA). */
int firn_cuda_init(firn_world *w, firn_error *err);
void firn_cuda_free(firn_world *w);
/* Queues nsub substeps and waits for them. Returns -1 when the state stayed
 * finite; else the lowest index of a non-finite particle at the earliest
 * such substep, *bad_substep (when not NULL) getting that substep's index
 * within the call (0-based; the later substeps still ran); -2 on a CUDA
 * error. */
int firn_cuda_run(firn_world *w, int nsub, float dt, int *bad_substep, firn_error *err);
int firn_cuda_download(firn_world *w, firn_error *err);
/* Only the parts (FIRN_STALE_*) given: x and v, what the frame statistics
 * read, are 24 of the 109 bytes per particle. */
int firn_cuda_download_parts(firn_world *w, int parts, firn_error *err);
/* Grid after the last substep: mass (nodes) and velocity (3 nodes,
 * component-major), into host buffers. */
int firn_cuda_download_grid(firn_world *w, float *mass, float *vel, firn_error *err);
/* Largest particle speed and signal speed (firn_wave_speed2), reduced on
 * the device. */
int firn_cuda_reduce(firn_world *w, float *max_speed, float *max_wave_speed, firn_error *err);
/* Rigid bodies and pending coupling force from the device into w->rigids
 * and w->rigid_acc. */
int firn_cuda_download_rigids(firn_world *w, firn_error *err);
/* Tool `tool` of the host state w->tools onto the device (a command set
 * between calls of substeps). The device's tools and their records come
 * back into w->tools and w->tool_rec at the end of every firn_cuda_run. */
int firn_cuda_upload_tool(firn_world *w, int tool, firn_error *err);
/* Rigid body k of the host state w->rigids onto the device (a kinematic
 * body's command set between calls of substeps); the mirror must be
 * current (not w->rigids_stale). */
int firn_cuda_upload_rigid(firn_world *w, int k, firn_error *err);

/* The SPH solver on the GPU (kernels/sph.cu): its device state, made
 * from and downloaded into the host state w->sph. */
int firn_cuda_sph_init(firn_world *w, firn_error *err);
void firn_cuda_sph_free(firn_world *w);
int firn_cuda_sph_download(firn_world *w, firn_error *err);

/* The PBD solver on the GPU (kernels/pbd.cu): its device state and
 * topology, made from the host state w->pbd; the download brings the
 * mirror's x, v, x0 and both kinds of lambda up to date. */
int firn_cuda_pbd_init(firn_world *w, firn_error *err);
void firn_cuda_pbd_free(firn_world *w);
int firn_cuda_pbd_download(firn_world *w, firn_error *err);

/* The FEM solver on the GPU (kernels/fem.cu): its device state, mesh
 * and surface, made from the host state w->fem (explicit bodies only: an
 * implicit body is refused); the download brings the mirror's x, v, x0
 * and f up to date, the upload puts the mirror's x, v and x0 back. */
int firn_cuda_fem_init(firn_world *w, firn_error *err);
void firn_cuda_fem_free(firn_world *w);
int firn_cuda_fem_download(firn_world *w, firn_error *err);
int firn_cuda_fem_upload(firn_world *w, firn_error *err);

/* Device memory a CUDA world allocated (firn_device_bytes plus CUB's
 * scratch); 0 without a CUDA state. */
size_t firn_cuda_state_bytes(const firn_world *w);
/* What firn bench (host/cli_bench.c) measures of the device itself (kernels/bench.cu;
 * host/device.c without CUDA): device-to-device copy bandwidth [bytes/s,
 * read + write] of `bytes`, best of 3, or 0 on failure; device memory in
 * use [bytes] (total - free), or 0. */
double firn_cuda_copy_bandwidth(size_t bytes);
size_t firn_cuda_used_bytes(void);

/* Since the CUDA state was made (firn_graph_mode): graphs captured, graphs
 * launched, and whether a capture failed and auto fell back to launches
 * (why: the failure's message). */
typedef struct {
    long long captures, launches;
    int fell_back;
    char why[FIRN_ERRMSG_MAX];
} firn_cuda_graph_stats;
void firn_cuda_graph_stats_get(const firn_world *w, firn_cuda_graph_stats *out);

#ifdef __cplusplus
}
#endif

#endif
