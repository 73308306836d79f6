/* device.c - what a build without CUDA answers about GPUs: none is usable.
 * With CUDA these functions live in kernels/device.cu and kernels/mpm.cu. */
#include <stdio.h>
#include <string.h>

#include "cuda_backend.h"
#include "error.h"
#include "solver.h"

#ifndef FIRN_WITH_CUDA

/* No solver has a CUDA path (host/solver.h): the phases are NULL. */
const firn_phase_ops firn_cuda_tool_phases = {NULL, NULL, NULL};
const firn_phase_ops firn_cuda_rigid_phases = {NULL, NULL, NULL};
const firn_phase_ops firn_cuda_mpm_phases = {NULL, NULL, NULL};
const firn_phase_ops firn_cuda_sph_phases = {NULL, NULL, NULL};
const firn_phase_ops firn_cuda_pbd_phases = {NULL, NULL, NULL};
const firn_phase_ops firn_cuda_fem_phases = {NULL, NULL, NULL};
const firn_step_fn firn_cuda_cpic_mark = NULL, firn_cuda_mpm_sph_react = NULL,
                   firn_cuda_grid = NULL, firn_cuda_mpm_sph_contact = NULL,
                   firn_cuda_mpm_pbd = NULL, firn_cuda_sph_rigid = NULL, firn_cuda_pbd_rigid = NULL,
                   firn_cuda_fem_pairs = NULL;

int firn_cuda_available(void) { return 0; }
int firn_cuda_device_count(void) { return 0; }

int firn_cuda_device_describe(int index, char *buf, size_t size)
{
    snprintf(buf, size, "device %d: this firn was built without CUDA", index);
    return -1;
}

static int no_cuda(firn_error *err)
{
    firn_set_error(err, FIRN_E_DEVICE, "this firn was built without CUDA");
    return -1;
}

int firn_cuda_init(firn_world *w, firn_error *err)
{
    (void)w;
    return no_cuda(err);
}

void firn_cuda_free(firn_world *w) { (void)w; }

int firn_cuda_run(firn_world *w, int nsub, float dt, int *bad_substep, firn_error *err)
{
    (void)w, (void)nsub, (void)dt, (void)bad_substep;
    no_cuda(err);
    return -2;
}

int firn_cuda_download(firn_world *w, firn_error *err)
{
    (void)w;
    return no_cuda(err);
}

int firn_cuda_sph_init(firn_world *w, firn_error *err)
{
    (void)w;
    return no_cuda(err);
}

void firn_cuda_sph_free(firn_world *w) { (void)w; }

int firn_cuda_sph_download(firn_world *w, firn_error *err)
{
    (void)w;
    return no_cuda(err);
}

int firn_cuda_pbd_init(firn_world *w, firn_error *err)
{
    (void)w;
    return no_cuda(err);
}

void firn_cuda_pbd_free(firn_world *w) { (void)w; }

int firn_cuda_pbd_download(firn_world *w, firn_error *err)
{
    (void)w;
    return no_cuda(err);
}

int firn_cuda_fem_init(firn_world *w, firn_error *err)
{
    (void)w;
    return no_cuda(err);
}

void firn_cuda_fem_free(firn_world *w) { (void)w; }

int firn_cuda_fem_download(firn_world *w, firn_error *err)
{
    (void)w;
    return no_cuda(err);
}

int firn_cuda_fem_upload(firn_world *w, firn_error *err)
{
    (void)w;
    return no_cuda(err);
}

int firn_cuda_download_parts(firn_world *w, int parts, firn_error *err)
{
    (void)w, (void)parts;
    return no_cuda(err);
}

int firn_cuda_download_grid(firn_world *w, float *mass, float *vel, firn_error *err)
{
    (void)w, (void)mass, (void)vel;
    return no_cuda(err);
}

int firn_cuda_reduce(firn_world *w, float *max_speed, float *max_wave_speed, firn_error *err)
{
    (void)w, (void)max_speed, (void)max_wave_speed;
    return no_cuda(err);
}

int firn_cuda_download_rigids(firn_world *w, firn_error *err)
{
    (void)w;
    return no_cuda(err);
}

int firn_cuda_upload_tool(firn_world *w, int tool, firn_error *err)
{
    (void)w, (void)tool;
    return no_cuda(err);
}

int firn_cuda_upload_rigid(firn_world *w, int k, firn_error *err)
{
    (void)w, (void)k;
    return no_cuda(err);
}

double firn_cuda_copy_bandwidth(size_t bytes)
{
    (void)bytes;
    return 0.0;
}

size_t firn_cuda_used_bytes(void) { return 0; }

size_t firn_cuda_state_bytes(const firn_world *w)
{
    (void)w;
    return 0;
}

void firn_cuda_graph_stats_get(const firn_world *w, firn_cuda_graph_stats *out)
{
    (void)w;
    memset(out, 0, sizeof *out);
}

#else
/* Keeps this translation unit non-empty in CUDA builds (ISO C). */
typedef int firn_device_c_unused;
#endif
