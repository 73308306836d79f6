/* world.h - internals of firn_world shared by the host files and the CUDA
 * backend's launchers. Not part of the public API. */
#ifndef FIRN_WORLD_H
#define FIRN_WORLD_H

#include <stdio.h>

#include "error.h"
#include "firn.h"
#include "firn_cpic.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct firn_cuda_state firn_cuda_state; /* kernels/, opaque here */

/* CPU scratch for the race-free coloured scatter (solver_cpu.c). */
typedef struct {
    int block_cells;   /* edge of a block in cells */
    int nb[3];         /* blocks per axis */
    int nblocks;
    int chunks;        /* particle chunks binned in parallel (fixed at init) */
    int *count;        /* chunks x nblocks: each chunk's particles per block, then its offsets */
    int *start;        /* nblocks + 1 */
    unsigned long long *work; /* nblocks: the non-empty blocks (count << 32 | block), colour by colour, fullest first */
    int work_start[9]; /* colour c's blocks are work[work_start[c] .. work_start[c + 1]) */
    unsigned char *touched; /* nblocks: node blocks (4^3 nodes) the last P2G could write */
    int *dirty;        /* nblocks: those node blocks, in index order */
    int ndirty;
    int dirty_valid;   /* dirty lists every grid node that may be non-zero; 0: clear all */
    int full_grid;     /* the reference the block-wise phases are tested against: binning
                          leaves dirty_valid 0, so clear, update and couple cover the whole
                          grid every substep */
    int *order;        /* n particle indices sorted by block (stable) */
    int *key;          /* n block of each particle; scratch once order is built */
    int *id;           /* n: the scene's index of the particle at each index */
    int permuted;      /* the solver's layout is not the scene's order (id not the identity) */
    int in_scene_order; /* the state is, for now, in the scene's order (read out) */
    int reorder_run;   /* reorder past one far step in this many (FIRN_REORDER_RUN); 0: never */
    long long reorders; /* state reorders so far */
} firn_cpu_bins;

/* The CPU path reorders the particle state by block when more than one
 * particle in this many, taken in block order, lies outside the cache line
 * (16 floats) after its predecessor: below that, P2G's and G2P's reads of
 * each state array keep streaming. */
#define FIRN_REORDER_RUN 16

/* The CPU binning counts particles in at most this many slices in parallel
 * (one per OpenMP thread at init, and at most 2 n / blocks): chunks x blocks
 * ints of scratch. */
#define FIRN_BIN_CHUNKS_MAX 64

/* The Coupler (host/coupler.c): the solvers of a world and the active
 * coupling pairs, decided once when the world is built. A solver is a table
 * of its substep phases; a new solver registers one in coupler.c and its
 * pairs there, without touching the others. */
typedef struct {
    const char *name;
    int (*is_active)(const firn_world *w);
    /* Advance the solver up to coupling (rigid: its whole step; MPM: clear
     * and P2G). */
    void (*pre_coupling)(firn_world *w);
    /* After coupling (MPM: G2P). Returns the lowest scene index of a non-finite
     * element, or -1. */
    int (*post_coupling)(firn_world *w);
} firn_solver;

enum { FIRN_SOLVER_RIGID = 0, FIRN_SOLVER_MPM, FIRN_SOLVER_COUNT };

typedef struct {
    int active[FIRN_SOLVER_COUNT];
    int rigid_mpm; /* pair active: both solvers active and coupling.rigid_mpm on */
    int cpic;      /* coupling.cpic (with rigid_mpm) */
} firn_coupler;

/* CPU path: the grid update sums the coupling force per fixed chunk of
 * nodes, then over chunks in order, so the sum is the same for any thread
 * count; CPIC's G2P does the same per chunk of particles. */
#define FIRN_COUPLE_CHUNK 4096
#define FIRN_CPIC_CHUNK 2048

/* firn_world.host_stale (CUDA): which parts of the host mirror of the
 * particles are older than the device state. Volume and material never
 * change on the device. */
#define FIRN_STALE_XV 1   /* x, v */
#define FIRN_STALE_REST 2 /* C, F, Jp, damage, CPIC words */
#define FIRN_STALE_ALL (FIRN_STALE_XV | FIRN_STALE_REST)

struct firn_world {
    firn_scene_def def;
    firn_backend backend;
    char device_name[256];
    firn_params params;                      /* dt updated per substep */
    firn_material mats[FIRN_MAX_MATERIALS];
    firn_particles p;                        /* host state (CPU path) / host mirror (CUDA) */
    firn_grid grid;                          /* CPU path grid */
    firn_cpu_bins bins;
    firn_cuda_state *cuda;                   /* NULL on the CPU path */
    firn_coupler coupler;
    int n_rigids;
    firn_rigid rigids[FIRN_MAX_RIGIDS];      /* host state (CPU) / host mirror (CUDA) */
    double rigid_acc[FIRN_MAX_RIGIDS * FIRN_RIGID_ACC]; /* coupling force/torque for the next rigid step */
    double *chunk_acc;                       /* CPU: [chunks][n_rigids][6] */
    long long chunks;
    unsigned char *chunk_live;               /* CPU: [chunks], 1 where a node may hold mass */
    double *cpic_acc;                        /* CPU, CPIC: G2P reaction per particle chunk [cpic_chunks][n_rigids][6] */
    long long cpic_chunks;
    int rigids_stale;                        /* CUDA: rigid mirror older than the device */
    int host_stale;                          /* CUDA: parts of the mirror older than the device (FIRN_STALE_*) */
    int frame;
    double time;
    long long substeps;
    firn_profile prof;
};

/* Derived constants. */
void firn_material_build(const firn_material_def *def, firn_material *out);
void firn_params_build(const firn_scene_def *def, firn_params *P);
/* Wave speed sqrt((lambda + 2 mu) / rho) of a material at rest [m/s]. */
float firn_material_wave_speed(const firn_material *m);

/* Initial particles from the scene's bodies (host/sample.c). */
int firn_sample_bodies(const firn_scene_def *def, const firn_material *mats, firn_particles *p,
                       firn_error *err);
int firn_particles_alloc(firn_particles *p, int n);
/* CPIC records (p->cpic, zeroed: "out of reach"), `slots` per particle. */
int firn_particles_alloc_cpic(firn_particles *p, int slots);
void firn_particles_free(firn_particles *p);
/* Spatial reordering of the initial particles (host/sample.c); -1 when out
 * of memory. */
int firn_particles_sort_spatial(firn_particles *p, const firn_params *P);
/* Permutations of every per-particle array, CPIC records included, through
 * scratch of 4n bytes (host/sample.c): gather p[i] <- p[order[i]], and
 * id[i] <- id[order[i]] when id is not NULL; scatter p[where[i]] <- p[i]. */
#define FIRN_PARTICLE_ARRAYS (28 + FIRN_CPIC_MAX + 1)
void firn_particles_gather(firn_particles *p, const int *order, int *id, void *scratch);
void firn_particles_scatter(firn_particles *p, const int *where, void *scratch);
/* CPU path: puts the particle state in the scene's order for readers, and
 * back into the solver's layout before the next substep - so reading the
 * state never changes what the solver computes. No-ops when it already is. */
void firn_cpu_unpermute(firn_world *w);
void firn_cpu_repermute(firn_world *w);

/* CPU path (host/solver_cpu.c). G2P returns the lowest scene index
 * (bins.id) of a particle whose state became non-finite, or -1. */
/* A new file at path, opened for writing, that is not reached through a
 * symlink or an earlier file of that name (they are removed first); NULL
 * with errno set on failure. For the temporaries of atomic writes. */
FILE *firn_fopen_fresh(const char *path);

int firn_cpu_init(firn_world *w, firn_error *err);
void firn_cpu_free(firn_world *w);
/* Bytes of the grid's mapping in memory now (mincore), -1 if unknown. */
double firn_cpu_grid_resident(const firn_world *w);
int firn_cpu_substep(firn_world *w);
void firn_cpu_clear(firn_world *w);
void firn_cpu_p2g(firn_world *w);
void firn_cpu_grid(firn_world *w);
/* live[c] = 1 for each chunk c of `chunk` consecutive nodes that holds a
 * node the last P2G could write (every chunk when that is not known), else
 * 0: the other chunks' nodes hold no mass. */
void firn_cpu_live_chunks(const firn_world *w, long long chunk, unsigned char *live);
int firn_cpu_g2p(firn_world *w);
/* CPIC (include/firn_cpic.h): side marking before the rigid step; P2G and
 * G2P without the nodes across a rigid surface (G2P adds the bodies'
 * reaction to w->rigid_acc, summed per fixed particle chunk in order). */
void firn_cpu_cpic_mark(firn_world *w);
int firn_cpu_g2p_cpic(firn_world *w);

/* Rigid bodies (host/rigid.c): state from the scene's rigids (mass and
 * inertia from shape and density), the CPU rigid step. */
int firn_rigids_init(firn_world *w, firn_error *err);
void firn_rigid_mass_properties(const firn_rigid_def *def, float *mass, float inertia[3]);
firn_sdf_shape firn_rigid_sdf_shape(const firn_rigid_shape_def *s);
/* Euler angles [deg] about x, then y, then z (world axes) as a quaternion. */
firn_quat firn_rotation_quat(const float deg[3]);
extern const firn_solver firn_rigid_solver;
extern const firn_solver firn_mpm_solver; /* host/solver_cpu.c */

/* Triangle meshes (host/mesh.c): a closed, manifold OBJ solid in its body
 * frame - scaled, centroid at the origin - with its volume integrals and,
 * built on first request, its SDF grid. */
typedef struct firn_mesh {
    int nv, nt;
    float *v;              /* 3 nv vertex coordinates, body frame [m] */
    int *tri;              /* 3 nt vertex indices, counter-clockwise seen from outside */
    double volume;         /* [m^3] */
    double centroid[3];    /* in the file's frame, scaled [m] */
    double inertia[6];     /* about the centroid, per unit density: xx yy zz xy xz yz [m^5] */
    float moments[3];      /* principal moments per unit density [m^5] */
    firn_quat principal;   /* body frame to the principal axes' frame */
    float half[3];         /* half-extents of the bounding box about the centroid [m] */
    float *grid;           /* SDF grid (firn_sdf_shape), NULL until requested */
    int n[3];
    float lo[3], h[3];
} firn_mesh;

/* The mesh of an OBJ file at a scale, loaded and checked once per process
 * and kept (keyed by path, scale, size and modification time); with_sdf
 * also builds its SDF grid. Errors: FIRN_E_IO (unreadable file), FIRN_E_SCENE
 * (malformed, empty, not closed and manifold, no volume), FIRN_E_NOMEM;
 * messages name the file, not the scene key. Thread-safe. */
int firn_mesh_get(const char *path, float scale, int with_sdf, const firn_mesh **out,
                  firn_error *err);
/* A mesh from vertex and triangle arrays (tests, meshes built in code);
 * name labels messages. The caller frees it with firn_mesh_free. */
int firn_mesh_build(const float *v, int nv, const int *tri, int nt, const char *name,
                    firn_mesh **out, firn_error *err);
int firn_mesh_build_sdf(firn_mesh *m, firn_error *err);
void firn_mesh_free(firn_mesh *m);
/* The mesh's SDF grid as a shape (grid pointer in host memory). */
void firn_mesh_sdf_shape(const firn_mesh *m, firn_sdf_shape *s);

/* Coupler (host/coupler.c). */
void firn_coupler_build(firn_world *w);
int firn_coupler_substep(firn_world *w); /* CPU path; lowest bad particle or -1 */
void firn_coupler_couple(firn_world *w); /* CPU grid update with the active pairs */
int firn_coupler_alloc(firn_world *w, firn_error *err);
void firn_coupler_free(firn_world *w);

/* CUDA path (kernels/mpm.cu; host/device.c when built without CUDA). */
int firn_cuda_init(firn_world *w, firn_error *err);
void firn_cuda_free(firn_world *w);
/* Runs nsub substeps of length dt entirely on the device; returns the first
 * non-finite particle index or -1 (checked once, after the last substep), or
 * -2 with err filled on a CUDA error. */
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
/* Splits a host grid into mass (nodes) and momentum/velocity (3 nodes,
 * component-major). */
void firn_grid_split(const firn_grid *g, float *mass, float *vel);
/* Largest particle speed and signal speed (firn_wave_speed2), reduced on
 * the device. */
int firn_cuda_reduce(firn_world *w, float *max_speed, float *max_wave_speed, firn_error *err);
/* Rigid bodies and pending coupling force from the device into w->rigids
 * and w->rigid_acc. */
int firn_cuda_download_rigids(firn_world *w, firn_error *err);

/* Device memory layout (host/world.c), shared with kernels/mpm.cu so that
 * firn_world_memory reports what the GPU allocates. Every array is 256-byte
 * aligned. firn_particle_layout lays the arrays of n particles (with `slots`
 * CPIC words each) out in one block at base and returns its size; with base
 * NULL it only sizes the block. firn_device_bytes is the whole device state
 * of w (particles, grid, materials, flags, rigid bodies and their mesh
 * grids) less CUB's scratch. firn_mesh_grid_bytes counts each mesh SDF grid
 * once, however many rigids share it, each rounded by `align`. */
size_t firn_align256(size_t bytes);
size_t firn_particle_layout(int n, int slots, char *base, firn_particles *p);
size_t firn_mesh_grid_bytes(const firn_world *w, size_t (*align)(size_t));
size_t firn_device_bytes(const firn_world *w);
/* Device memory a CUDA world allocated (firn_device_bytes plus CUB's
 * scratch); 0 without a CUDA state. */
size_t firn_cuda_state_bytes(const firn_world *w);

/* Benchmark support (kernels/bench.cu): device-to-device copy bandwidth
 * [bytes/s, read + write] of `bytes`, best of 3, or 0 on failure; device
 * memory in use [bytes] (total - free), or 0. */
double firn_cuda_copy_bandwidth(size_t bytes);
size_t firn_cuda_used_bytes(void);

#ifdef __cplusplus
}
#endif

#endif
