/* solver.h - how a solver plugs into the substep: its phases on each path
 * and the profile they are timed into. A solver implements its phases in
 * its own modules (CPU: host/solver_cpu.c MPM, host/tool.c tools,
 * host/rigid.c rigid bodies, host/sph_cpu.c SPH, host/pbd_cpu.c PBD,
 * host/fem_cpu.c FEM; CUDA: kernels/mpm.cu for MPM, tools and rigid
 * bodies, kernels/sph.cu, pbd.cu, fem.cu) and never calls the Coupler.
 * The Coupler (host/coupler.c) holds the one list of the substep's order
 * and runs it for both paths: the CPU path runs each phase, the CUDA path
 * queues it into its stream (docs/ARCHITECTURE.md, PHYSICS.md 1). */
#ifndef FIRN_SOLVER_H
#define FIRN_SOLVER_H

#include <string.h>

#include "firn.h"
#include "firn_mpm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The solvers a world can have, in the order the Coupler runs their phases. */
enum {
    FIRN_SOLVER_TOOL = 0,
    FIRN_SOLVER_RIGID,
    FIRN_SOLVER_MPM,
    FIRN_SOLVER_SPH,
    FIRN_SOLVER_PBD,
    FIRN_SOLVER_FEM,
    FIRN_SOLVER_COUNT
};

/* The profile's intervals (firn_profile's fields): a mark of slot k ends an
 * interval, which is added to slot k. The Coupler marks the end of every
 * (solver, phase) with the slot the solver's table names; a solver marks
 * the intervals inside a phase itself (firn_step_mark). */
typedef enum {
    FIRN_PROF_COUPLE = 0, /* CPIC marking, the tools' and rigid bodies' pre-coupling */
    FIRN_PROF_CLEAR,
    FIRN_PROF_P2G,
    FIRN_PROF_SPH_SORT,
    FIRN_PROF_SPH_DENSITY,
    FIRN_PROF_SPH_PRESSURE,
    FIRN_PROF_PBD_CONSTRAINTS,
    FIRN_PROF_PBD_PARTICLES,
    FIRN_PROF_FEM_ELEMENTS,
    FIRN_PROF_FEM_VELOCITY,
    FIRN_PROF_GRID, /* the couple phase (the grid update and every pair), the tools' records */
    FIRN_PROF_G2P,
    FIRN_PROF_SPH_INTEGRATE,
    FIRN_PROF_PBD_INTEGRATE,
    FIRN_PROF_FEM_POSITION,
    FIRN_PROF_COUNT
} firn_prof_slot;

/* firn_profile's field for slot k. */
double *firn_prof_field(firn_profile *prof, int k);

/* A path's clock: mark(c, k, err) ends the interval since the last mark
 * and adds it to slot k (CPU: the wall clock now; CUDA: an event recorded
 * into the stream, read when the call ends). 0, or -1 with err set. */
typedef struct firn_clock {
    int (*mark)(struct firn_clock *c, int slot, firn_error *err);
    void *impl;
} firn_clock;

/* The substep being run, as every phase sees it. */
typedef struct {
    unsigned substep;     /* its index in the call (CUDA; 0 on the CPU path) */
    const firn_params *P; /* the call's parameters (dt) */
    firn_clock *clock;    /* NULL: not timed */
    firn_error *err;      /* where a failed phase says why */
    int bad;              /* post: the solver's lowest non-finite element found, or -1 */
} firn_step;

/* Ends the interval of slot k, if the substep is timed. 0 or -1. */
static inline int firn_step_mark(firn_step *st, int k)
{
    return st->clock ? st->clock->mark(st->clock, k, st->err) : 0;
}

/* One path's phases of a solver. begin (may be NULL): bring the state into
 * the layout the phases expect (CPU: MPM's particles in bin order; CUDA:
 * G2P2G's grid of the substep). pre: advance up to coupling (rigid: its
 * whole step; MPM: clear and P2G). post: after coupling (MPM: G2P); a
 * path that finds non-finite elements on the host sets st->bad. Each
 * returns 0, or -1 with st->err set (CUDA: a failed launch or copy). */
typedef struct {
    int (*begin)(firn_world *w, firn_step *st);
    int (*pre)(firn_world *w, firn_step *st);
    int (*post)(firn_world *w, firn_step *st);
} firn_phase_ops;

/* A solver's limit on the CFL step: the step [s] (INFINITY: none), and
 * what makes it, for the runaway message: a signal speed c and the
 * largest particle speed v [m/s], and the scene body that sets it (-1:
 * none named). */
typedef struct {
    float dt, c, v;
    int body;
} firn_cfl_limit;

/* One array of a solver's state, per element (particle or vertex),
 * component-major (component c of element i at [c count + i]): the table
 * that checkpoints, the state's checks on loading and the public API
 * (firn_world_field) go through, so that a new field is saved, checked
 * and readable by adding one line to its solver's table.
 *   name        the API's name ("x", "rho"); what: in messages ("density")
 *   type        FIRN_FIELD_FLOAT32 or FIRN_FIELD_UINT8 (firn.h)
 *   data        the host copy (NULL where the world has no elements)
 *   flags       FIRN_FIELD_SAVED: in the solver's checkpoint section, in
 *               table order; FIRN_FIELD_POSITION: a checkpoint's values lie
 *               in the table's box (give or take its slack);
 *               FIRN_FIELD_MATERIAL: each a material of the solver's bodies;
 *               FIRN_FIELD_COMPARED: `firn compare` holds the CUDA path's
 *               values to the CPU's, element by element (host/compare.c),
 *               in table order, as "<table's label> <name>"
 *   lo, hi      a checkpoint's values lie in [lo, hi] (a float field that
 *               is neither a position nor a material), rule says so. */
enum {
    FIRN_FIELD_SAVED = 1,
    FIRN_FIELD_POSITION = 2,
    FIRN_FIELD_MATERIAL = 4,
    FIRN_FIELD_COMPARED = 8
};

typedef struct {
    const char *name, *what;
    int type, components;
    void *data;
    unsigned flags;
    float lo, hi;
    const char *rule;
    const char *ply, *unit; /* firn_field_ply */
    int ply_rank;           /* its place among the PLY fields (firn_field_ply) */
} firn_field;

#define FIRN_MAX_FIELDS 12

/* A solver's fields, and what checking them needs: the elements' count and
 * name in messages ("SPH particle"), the scene solver kind whose bodies'
 * materials they may have (firn_solver_kind) and its name, and the box
 * positions stay in. label names its fields in `firn compare`'s report
 * ("sph" gives "sph rho"; NULL: the field's name alone, as MPM's are).
 * Its PLY frames (host/output.c firn_write_fields_ply): ply_file, their
 * file prefix and series name (NULL: the solver's name; "frame" gives
 * frame_NNNNN.ply and frame.ply.series); ply_comment, the header's comment
 * after "firn <version>" (NULL: the entity's plural, "SPH particles"; "":
 * none); n_ply, the fields firn_field_ply named. */
typedef struct {
    long long count;
    const char *entity, *solver_name, *label;
    int kind;
    const float *lower, *upper;
    const char *box;
    float slack;
    const char *ply_file, *ply_comment;
    int n, n_ply;
    firn_field f[FIRN_MAX_FIELDS];
} firn_field_table;

/* Appends a field to t (FIRN_MAX_FIELDS at most: a solver's table is
 * static, so a longer one fails its first test). */
static inline void firn_field_add(firn_field_table *t, const char *name, const char *what, int type,
                                  int components, void *data, unsigned flags, float lo, float hi,
                                  const char *rule)
{
    if (t->n >= FIRN_MAX_FIELDS)
        return;
    firn_field *f = &t->f[t->n++];
    f->name = name;
    f->what = what;
    f->type = type;
    f->components = components;
    f->data = data;
    f->flags = flags;
    f->lo = lo;
    f->hi = hi;
    f->rule = rule;
    f->ply = f->unit = NULL;
    f->ply_rank = 0;
}

/* Writes field k of t into the solver's PLY frames (host/output.c
 * firn_write_fields_ply) after those named before it: ply names its
 * properties, one per component, separated by single spaces ("vx vy vz");
 * unit goes into the file's units comment after them ("[m/s]"; NULL:
 * none). */
static inline void firn_field_ply_at(firn_field_table *t, int k, const char *ply, const char *unit)
{
    if (k >= 0 && k < t->n && !t->f[k].ply) {
        t->f[k].ply = ply;
        t->f[k].unit = unit;
        t->f[k].ply_rank = t->n_ply++;
    }
}

/* firn_field_ply_at for the field added last (PLY order the table's). */
static inline void firn_field_ply(firn_field_table *t, const char *ply, const char *unit)
{
    firn_field_ply_at(t, t->n - 1, ply, unit);
}

/* firn_field_ply_at for the field named name (none: nothing), so that a
 * table whose PLY order is not its own names its PLY fields in PLY order. */
static inline void firn_field_ply_named(firn_field_table *t, const char *name, const char *ply,
                                        const char *unit)
{
    for (int k = 0; k < t->n; k++)
        if (!strcmp(t->f[k].name, name))
            firn_field_ply_at(t, k, ply, unit);
}

/* Bytes of all count elements of a field. */
static inline size_t firn_field_bytes(const firn_field *f, long long count)
{
    return (size_t)count * (size_t)f->components * (f->type == FIRN_FIELD_UINT8 ? 1u : 4u);
}

struct firn_stat_sink; /* host/compare_stats.h */

/* A solver: whether a world has it, its phases on both paths and the
 * profile slots the Coupler ends after its pre and post phases. A solver
 * with no CUDA path has NULL phases in `cuda`; the CUDA backend refuses a
 * world that has it. Its state outside the substep, each NULL where the
 * world's core (host/world.c) keeps it, as for the rigid bodies, the
 * tools and MPM's CFL, stats and device state:
 *   host_current  brings the host copy up to date (a CUDA world downloads
 *                 it when stale): 0, or -1 with err set;
 *   cfl           its limit on the step, the speed gravity may add over a
 *                 frame v_gravity included (the host copy current first):
 *                 0, or -1 with err set;
 *   cfl_cause     says what makes that limit, "the speed of <why>";
 *   fixed_frame   before a frame whose step is fixed (time.dt, so that no
 *                 cfl runs), sets what the solver derives each frame from
 *                 its own step, as cfl does (SPH: DFSPH's tau), v_gravity
 *                 as for cfl; NULL: nothing. 0, or -1 with err set;
 *   stats         fills its part of the frame's statistics (the host copy
 *                 current first);
 *   nonfinite     writes the message for its element `bad` gone non-finite
 *                 (its index in the solver's order; the host copy current
 *                 first), after `head` (the scene, frame, time and substep);
 *   host_bytes    the host memory it holds, on either path [bytes];
 *   device_bytes  what its CUDA path would allocate [bytes];
 *   fields        fills its table of fields (firn_field_table; the rigid
 *                 bodies and tools have none: their records are the
 *                 checkpoint's own);
 *   section       the 4-letter tag of its checkpoint section, which holds
 *                 its FIRN_FIELD_SAVED fields in table order (NULL: none;
 *                 host/checkpoint.c writes it, sized, checked and read by
 *                 the table);
 *   stats_mass    its mass [kg] and kinetic energy [J] in frame statistics s
 *                 (0, 0 where it has none), for the scales `firn compare`
 *                 shares between solvers (host/compare.c); NULL: none;
 *   compare_stats enters its part of `firn compare`'s frame statistics, the
 *                 CPU world's c against the CUDA world's s, into k
 *                 (host/compare_stats.h), nothing where it has no
 *                 elements; both worlds' host state is current and in
 *                 the scene's order (firn_world_host_state): 0, or -1
 *                 with err set; NULL: none;
 *   compare_floor the least scale of field `name`'s tolerance in `firn
 *                 compare`, for the CPU world w after a substep dt (the
 *                 tolerance is relative to the larger of it and the
 *                 field's largest CPU magnitude); NULL: 0 for every field;
 *   create        makes its host state from the scene (def as the caller
 *                 gave it; w->def is the world's copy, its domain rounded
 *                 to whole cells), in solver order after the world's core
 *                 (the rigid bodies, the tools): 0, or -1 with err set;
 *   cuda_create   its device mirror, once the CUDA world exists (NULL
 *                 where it has no CUDA path): 0, or -1 with err set;
 *   cuda_destroy, destroy  free them (either may run on a world half
 *                 made). */
typedef struct {
    const char *name;
    int (*is_active)(const firn_world *w);
    firn_phase_ops cpu;
    const firn_phase_ops *cuda; /* kernels/ (a build without CUDA: host/device.c, all NULL) */
    int prof_pre, prof_post;
    int (*host_current)(firn_world *w, firn_error *err);
    int (*cfl)(firn_world *w, float v_gravity, firn_cfl_limit *lim, firn_error *err);
    void (*cfl_cause)(const firn_world *w, const firn_cfl_limit *lim, float v_gravity, char *why,
                      size_t size);
    int (*fixed_frame)(firn_world *w, float v_gravity, firn_error *err);
    void (*stats)(const firn_world *w, firn_frame_stats *s);
    void (*nonfinite)(const firn_world *w, int bad, const char *head, char *msg, size_t size);
    double (*host_bytes)(const firn_world *w);
    double (*device_bytes)(const firn_world *w);
    void (*fields)(firn_world *w, firn_field_table *t);
    const char *section;
    void (*stats_mass)(const firn_frame_stats *s, double *mass, double *kinetic_energy);
    int (*compare_stats)(firn_world *cpu, firn_world *gpu, const firn_frame_stats *c,
                         const firn_frame_stats *s, const struct firn_stat_sink *k,
                         firn_error *err);
    double (*compare_floor)(firn_world *w, const char *name, float dt);
    int (*create)(firn_world *w, const firn_scene_def *def, firn_error *err);
    int (*cuda_create)(firn_world *w, firn_error *err);
    void (*cuda_destroy)(firn_world *w);
    void (*destroy)(firn_world *w);
} firn_solver;

/* The solver of kind k (FIRN_SOLVER_*), in host/coupler.c's table. */
const firn_solver *firn_solver_of(int k);

/* The CUDA paths' phases (kernels/mpm.cu, sph.cu, pbd.cu, fem.cu; in a
 * build without CUDA, host/device.c's, all NULL). */
extern const firn_phase_ops firn_cuda_tool_phases, firn_cuda_rigid_phases, firn_cuda_mpm_phases,
    firn_cuda_sph_phases, firn_cuda_pbd_phases, firn_cuda_fem_phases;

/* A pass of the couple stage on one path (host/coupler.c couple, host/pair.h):
 * 0, or -1 with st->err set. */
typedef int (*firn_step_fn)(firn_world *w, firn_step *st);

/* The couple stage's CUDA steps, each beside its pair's kernels
 * (kernels/mpm.cu: CPIC's marking and the grid update; pair_mpm_sph.cu;
 * pbd.cu: MPM-PBD and PBD-rigid; pair_sph_rigid.cu; fem.cu: the FEM
 * pairs; NULL in a build without
 * CUDA), in the order host/coupler.c's couple runs them: CPIC's side marking (the
 * preprocess), MPM-SPH's contact reaction on the nodes, the grid update
 * with the pairs on its nodes, MPM-SPH's contact force, MPM-PBD,
 * SPH-rigid, PBD-rigid, the FEM pairs. */
extern const firn_step_fn firn_cuda_cpic_mark, firn_cuda_mpm_sph_react, firn_cuda_grid,
    firn_cuda_mpm_sph_contact, firn_cuda_mpm_pbd, firn_cuda_sph_rigid, firn_cuda_pbd_rigid,
    firn_cuda_fem_pairs;

#ifdef __cplusplus
}
#endif

#endif
