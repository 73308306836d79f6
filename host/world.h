/* world.h - internals of firn_world (host/world.c), for the modules that
 * hold or step its state: the solvers, the Coupler and the CUDA backend's
 * launchers. Each module declares its own functions in its own header;
 * readers of a world outside them use the public API (firn.h) and the
 * inspection API (host/inspect.h). Not part of the public API. */
#ifndef FIRN_WORLD_H
#define FIRN_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "align.h"
#include "coupler.h"
#include "dist.h"
#include "firn.h"
#include "firn_coupling.h"
#include "firn_material.h"
#include "fem.h"
#include "firn_mpm.h"
#include "pbd.h"
#include "solver_cpu.h"
#include "sph.h"
#include "tool.h"

#ifdef __cplusplus
extern "C" {
#endif

struct firn_world {
    firn_scene_def def;
    uint64_t scene_hash;  /* firn_scene_hash(&def) at creation, for checkpoints */
    firn_run_options run; /* as created (run.backend as asked: AUTO stays AUTO) */
    firn_backend backend; /* the backend it runs on */
    char device_name[256];
    firn_params params; /* dt updated per substep */
    firn_material mats[FIRN_MAX_MATERIALS];
    firn_particles p; /* host state (CPU path) / host mirror (CUDA) */
    firn_grid grid;   /* CPU path grid */
    firn_cpu_bins bins;
    struct firn_cuda_state *cuda; /* NULL on the CPU path (host/cuda_backend.h) */
    firn_coupler coupler;
    firn_sph sph;        /* the SPH solver (sph.n = 0: none) */
    firn_pbd pbd;        /* the PBD solver (pbd.n = 0: none) */
    firn_fem fem;        /* the FEM solver (fem.V.n = 0: none) */
    float *fem_measures; /* firn_world_fem_mesh's per-element stress (6), strain (6) and
                            von Mises stress (1), 13 floats an element; NULL until asked */
    /* CPU, each pair's own scratch (host/pair.h, firn_pair_scratch): one
     * block each, NULL where it has none */
    void *pair_scratch[FIRN_PAIR_COUNT];
    int bad_solver; /* FIRN_SOLVER_* of the non-finite particle the last substep reported */
    int n_rigids;
    firn_rigid rigids[FIRN_MAX_RIGIDS]; /* host state (CPU) / host mirror (CUDA) */
    double rigid_acc[FIRN_MAX_RIGIDS *
                     FIRN_RIGID_ACC]; /* coupling force/torque for the next rigid step */
    double *chunk_acc;                /* CPU: [chunks][n_rigids + n_tools][6] */
    long long chunks;
    int n_tools;
    firn_tool tools[FIRN_MAX_TOOLS];
    double tool_acc[FIRN_MAX_TOOLS * FIRN_TOOL_ACC]; /* this substep's reaction on the tools */
    firn_tool_record tool_rec[FIRN_MAX_TOOLS];
    double tool_frame_time;    /* substep time summed since the current frame began [s] */
    int tool_frame_reset;      /* CUDA: the device's frame sums restart at the next substep */
    unsigned char *chunk_live; /* CPU: [chunks], 1 where a node may hold mass */
    double *cpic_acc; /* CPU, CPIC: G2P reaction per particle chunk [cpic_chunks][n_rigids][6] */
    long long cpic_chunks;
    int rigids_stale; /* CUDA: rigid mirror older than the device */
    int host_stale;   /* CUDA: parts of the mirror older than the device (FIRN_STALE_*) */
    int frame;
    double time;
    long long substeps;
    firn_profile prof;
    /* A distributed run's hooks and state (host/dist.h, host/mpi.c); NULL
     * otherwise. */
    const firn_dist_ops *dist;
    void *dist_state;
};

/* A world made at a saved state (firn_world_load, host/checkpoint.c): check
 * refuses path before anything is sampled (another scene, other sizes);
 * read then replaces the host state of the world, its particles sampled
 * and the CPU path's scratch allocated, before the GPU's state is made from
 * it. Either returns non-zero with err set to fail the creation. */
typedef struct firn_world_restore {
    int (*check)(const firn_world *w, const char *path, firn_error *err);
    int (*read)(firn_world *w, const char *path, firn_error *err);
    const char *path;
} firn_world_restore;
/* firn_world_create_with, or with r a world at r's state (no explicit-dt
 * check: a resumed run's dt passed it at its start). */
firn_world *firn_world_create_restored(const firn_scene_def *def, const firn_run_options *opt,
                                       const firn_world_restore *r, firn_error *err);

/* Brings every host copy of the state up to date (the GPU's particles,
 * rigid bodies and SPH particles downloaded) and the CPU path's particles
 * into the scene's order; what the world computes next is unchanged. */
int firn_world_host_state(firn_world *w, firn_error *err);

/* Derived constants. */
void firn_material_build(const firn_material_def *def, firn_material *out);
void firn_params_build(const firn_scene_def *def, firn_params *P);
/* Wave speed sqrt((lambda + 2 mu) / rho) of a material at rest [m/s]. */
float firn_material_wave_speed(const firn_material *m);

/* Device memory layout (host/world.c), shared with kernels/mpm.cu so that
 * firn_world_memory reports what the GPU allocates. Every array is 256-byte
 * aligned. firn_particle_layout lays the arrays of n particles (with `slots`
 * CPIC words each) out in one block at base and returns its size; with base
 * NULL it only sizes the block. firn_device_bytes is the whole device state
 * of w (particles, grid, materials, flags, rigid bodies, tools and their
 * mesh grids) less CUB's scratch. firn_mesh_grid_bytes counts each mesh SDF
 * grid once, however many rigids and tools share it, each rounded by
 * `align`. firn_align256 is in host/align.h. */
size_t firn_particle_layout(int n, int slots, char *base, firn_particles *p);
size_t firn_mesh_grid_bytes(const firn_world *w, size_t (*align)(size_t));
size_t firn_device_bytes(const firn_world *w);
/* Whether w's CUDA P2G is binned: run.p2g asks for it (binned, warp,
 * ordered, or auto with at least FIRN_P2G_BINNED_MIN particles) and the world has MPM
 * particles outside CPIC (whose P2G skips nodes per particle and stays
 * atomic). */
int firn_device_binned(const firn_world *w);
/* Whether w's CUDA grid is sparse (firn_grid_mode): binned P2G, no pair
 * that works on the whole grid, and run.grid sparse, or auto with more
 * than FIRN_GRID_SPARSE_RATIO nodes per MPM particle. */
int firn_device_sparse(const firn_world *w);
/* Whether binned P2G sorts by counting (kernels/mpm.cu, queue_binning):
 * binned, warp and g2p2g on a dense grid; ordered P2G and the sparse grid
 * keep the radix sort. */
int firn_device_counting_sort(const firn_world *w);
/* FIRN_P2G_TILE=fixed: binned or G2P2G P2G with a fixed-point tile. */
int firn_device_fixed_tile(const firn_world *w);
/* FIRN_P2G_REORDER=k: binned P2G with the particles moved into the bin
 * order every k substeps (0: off); firn_reorder_every parses k (-1: not a
 * count). */
int firn_reorder_every(const char *e);
int firn_device_reorder(const firn_world *w);
/* Why w's CUDA substeps cannot be captured as a CUDA graph
 * (firn_graph_mode), or NULL when they can. */
const char *firn_world_gpu_graph_obstacle(const firn_world *w);

#ifdef __cplusplus
}
#endif

#endif
