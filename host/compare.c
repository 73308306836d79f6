/* compare.c - firn_compare_backends (firn.h), behind `firn compare`
 * (host/cli_compare.c): the same scene on the CPU reference path and the
 * CUDA backend, from the same initial state.
 *
 * After one substep every compared field of every solver (its table's
 * FIRN_FIELD_COMPARED fields: MPM's x, v, C, F, Jp and damage, SPH's x, v,
 * rho and p, PBD's and FEM's x and v) and the grid are compared element by
 * element, and so are the same fields after one substep from a perturbed
 * state (stress, plasticity, the SVD, the SPH pressures, PBD constraints
 * and FEM forces at work). Float atomics on the GPU sum in another order
 * than the CPU's fixed order, so the two agree to rounding, not bitwise;
 * the tolerance is relative to the field's scale: max|gpu - cpu| <= 1e-5
 * scale (a few float32 ulps), the scale being the larger of the field's
 * largest CPU magnitude and its solver's floor for it (compare_floor in
 * host/solver.h: MPM's C follows the velocities, SPH's p and v the
 * density through the pressure law). The SPH neighbour sums, the PBD
 * sweeps and the FEM element forces run in one order on both paths, so
 * only FMA contraction, libm's last bits and the pairs' atomic sums differ.
 * After N frames chaotic flows diverge particle by particle, so only scene
 * statistics are compared, each within 1 percent of its scale (see
 * docs/CLI.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare_stats.h"
#include "cuda_backend.h"
#include "error.h"
#include "inspect.h"
#include "solver.h"
#include "world.h" /* firn_world_host_state */

#define STATE_TOL 1e-5
#define STATS_TOL 1e-2

typedef struct {
    const char *name;
    double max_abs, scale, rel;
    long long worst;
} field_diff;

/* The report being filled and the stage its next entries belong to; nomem
 * once an entry could not be stored. */
typedef struct {
    firn_compare_report *r;
    firn_compare_stage stage;
    int nomem, cap;
} cmp_ctx;

static firn_compare_entry *new_entry(cmp_ctx *cmp, const char *name)
{
    firn_compare_report *r = cmp->r;
    if (r->n_entries == cmp->cap) {
        const int cap = cmp->cap ? 2 * cmp->cap : 64;
        firn_compare_entry *e = realloc(r->entries, (size_t)cap * sizeof *e);
        if (!e) {
            cmp->nomem = 1;
            return NULL;
        }
        r->entries = e;
        cmp->cap = cap;
    }
    firn_compare_entry *e = &r->entries[r->n_entries++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->stage = cmp->stage;
    e->worst = -1;
    return e;
}

/* The largest |a - b| over count values, relative to the larger of the
 * largest |b| and `floor`. */
static field_diff diff_field(const char *name, const float *a, const float *b, long long count,
                             double floor)
{
    field_diff d = {name, 0.0, floor, 0.0, -1};
    for (long long i = 0; i < count; i++) {
        double e = fabs((double)a[i] - (double)b[i]);
        if (!(e <= d.max_abs)) { /* also catches NaN */
            d.max_abs = e;
            d.worst = i;
        }
        if (fabs((double)b[i]) > d.scale)
            d.scale = fabs((double)b[i]);
    }
    d.rel = d.scale > 0.0 ? d.max_abs / d.scale : d.max_abs;
    return d;
}

/* A field's comparison entered into the report; returns whether it is
 * within tol. */
static int report(cmp_ctx *cmp, const field_diff *d, double tol)
{
    const int ok = d->rel <= tol;
    firn_compare_entry *e = new_entry(cmp, d->name);
    if (e) {
        e->max_abs = d->max_abs;
        e->scale = d->scale;
        e->rel = d->rel;
        e->tolerance = tol;
        e->worst = d->worst;
        e->ok = ok;
    }
    cmp->r->ok &= ok;
    return ok;
}

/* A statistic's comparison entered into the report: within STATS_TOL of
 * scale. */
static void stat_line(cmp_ctx *cmp, const char *name, double cpu, double gpu, double scale)
{
    const double rel = fabs(gpu - cpu) / scale;
    const int ok = rel <= STATS_TOL;
    firn_compare_entry *e = new_entry(cmp, name);
    if (e) {
        e->statistic = 1;
        e->cpu = cpu;
        e->gpu = gpu;
        e->max_abs = fabs(gpu - cpu);
        e->scale = scale;
        e->rel = rel;
        e->tolerance = STATS_TOL;
        e->ok = ok;
    }
    cmp->r->ok &= ok;
}

/* A deterministic value in [-1, 1] for (i, k). */
static float unit_hash(long long i, int k)
{
    uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ULL + (uint64_t)k * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 29;
    return (float)((double)(h >> 11) / 4503599627370496.0 - 1.0);
}

/* Every particle's F = I + 0.05 U and C = 2 U' / s (U, U' with entries in
 * [-1, 1]): a state in which stress, the return maps and the SVD all act
 * in the first substep, where a scene's initial F = I and C = 0 leave them
 * idle (F after one substep from rest differs by exactly 0). */
static void perturb(firn_particles *p, void *ctx)
{
    (void)ctx;
    const long long n = p->n;
    for (long long i = 0; i < n; i++)
        for (int k = 0; k < 9; k++) {
            p->F[k * n + i] = (k % 4 == 0 ? 1.0f : 0.0f) + 0.05f * unit_hash(i, k);
            p->C[k * n + i] = 2.0f * unit_hash(i, 9 + k);
        }
}

/* Every SPH, PBD and FEM point not held moved by 0.02 of its solver's
 * length scale along U (entries in [-1, 1]), and the SPH particles'
 * velocities changed by 0.02 h / dt along U': a state in which the first
 * substep's SPH densities and pressures, PBD constraints and FEM elastic
 * forces all act away from the scene's rest lattice, and the SPH viscosity
 * on a velocity field that is not uniform. A point moves 0.02 of its
 * length scale in the substep at most: well inside every solver's step
 * bound (the CFL's 0.4). ctx: the substep [s]. */
static void perturb_points(const char *solver, int n, float *x, float *v, const uint8_t *held,
                           float length, void *ctx)
{
    const float dt = *(const float *)ctx;
    const int sph = !strcmp(solver, "sph"), salt = 18 + 6 * (solver[0] - 'a');
    for (long long i = 0; i < n; i++) {
        if (held && held[i])
            continue;
        for (int c = 0; c < 3; c++) {
            x[c * (long long)n + i] += 0.02f * length * unit_hash(i, salt + c);
            if (sph)
                v[c * (long long)n + i] += 0.02f * length / dt * unit_hash(i, salt + 3 + c);
        }
    }
}

/* Every solver's compared fields (FIRN_FIELD_COMPARED) of the two worlds,
 * element by element, in solver and table order; a solver without
 * elements on the CPU path has none. */
static int compare_fields(firn_world *cpu, firn_world *gpu, float dt, firn_error *err, cmp_ctx *cmp)
{
    for (int k = 0; k < FIRN_SOLVER_COUNT; k++) {
        const firn_solver *s = firn_solver_of(k);
        if (!s->fields)
            continue;
        firn_field_table t;
        s->fields(cpu, &t);
        if (t.count == 0)
            continue;
        for (int f = 0; f < t.n; f++) {
            if (!(t.f[f].flags & FIRN_FIELD_COMPARED))
                continue;
            firn_field_view a, b;
            if (firn_world_field(gpu, s->name, t.f[f].name, &a, err) ||
                firn_world_field(cpu, s->name, t.f[f].name, &b, err))
                return -1;
            if (a.count != b.count || b.type != FIRN_FIELD_FLOAT32) {
                firn_set_error(err, FIRN_E_DEVICE,
                               "compare: the %s field '%s' has %lld elements on the CUDA path "
                               "and %lld on the CPU path",
                               s->name, t.f[f].name, a.count, b.count);
                return -1;
            }
            char name[sizeof((firn_compare_entry *)0)->name];
            if (t.label)
                snprintf(name, sizeof name, "%s %s", t.label, t.f[f].name);
            else
                snprintf(name, sizeof name, "%s", t.f[f].name);
            const double floor = s->compare_floor ? s->compare_floor(cpu, t.f[f].name, dt) : 0.0;
            const field_diff d = diff_field(name, a.data, b.data, b.count * b.components, floor);
            report(cmp, &d, STATE_TOL);
        }
    }
    return 0;
}

/* One substep from the perturbed state (perturb), on a fresh pair of
 * worlds, so that the frames compared afterwards are the scene's own. */
static int compare_perturbed(const firn_scene_def *def, const firn_run_options *gpu_run, float dt,
                             cmp_ctx *cmp, firn_error *err)
{
    firn_world *cpu = firn_world_create(def, FIRN_BACKEND_CPU, err);
    if (!cpu)
        return -1;
    firn_world *gpu = firn_world_create_with(def, gpu_run, err);
    int failed = !gpu;
    if (!failed)
        failed = firn_inspect_edit_particles(cpu, perturb, NULL, err) ||
                 firn_inspect_edit_particles(gpu, perturb, NULL, err) ||
                 firn_inspect_edit_points(cpu, perturb_points, &dt, err) ||
                 firn_inspect_edit_points(gpu, perturb_points, &dt, err);
    if (!failed) {
        cmp->stage = FIRN_COMPARE_PERTURBED;
        failed = firn_world_substep(cpu, dt, err) || firn_world_substep(gpu, dt, err) ||
                 compare_fields(cpu, gpu, dt, err, cmp);
    }
    firn_world_destroy(cpu);
    if (gpu)
        firn_world_destroy(gpu);
    return failed ? -1 : 0;
}

/* The grids after the first substep, node by node; none in a world
 * without MPM particles, whose grid nothing writes (every pair on the grid
 * has MPM as one side). */
static int compare_grid(firn_world *cpu, firn_world *gpu, cmp_ctx *cmp, firn_error *err)
{
    firn_field_table mpm;
    firn_solver_of(FIRN_SOLVER_MPM)->fields(cpu, &mpm);
    if (mpm.count == 0)
        return 0;
    field_diff d[2];
    int nd = 0;
    long long nodes = firn_inspect_grid_nodes(cpu);
    float *gm = malloc((size_t)nodes * sizeof(float)),
          *gv = malloc(3 * (size_t)nodes * sizeof(float));
    float *cm = malloc((size_t)nodes * sizeof(float)),
          *cv = malloc(3 * (size_t)nodes * sizeof(float));
    int rc = -1;
    if (!gm || !gv || !cm || !cv) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for the grid copy");
        goto done;
    }
    if (firn_inspect_grid(gpu, gm, gv, err) || firn_inspect_grid(cpu, cm, cv, err))
        goto done;
    d[nd++] = diff_field("grid mass", gm, cm, nodes, 0.0);
    d[nd++] = diff_field("grid vel", gv, cv, 3 * nodes, 0.0);
    for (int k = 0; k < nd; k++)
        report(cmp, &d[k], STATE_TOL);
    rc = 0;
done:
    free(gm), free(gv), free(cm), free(cv);
    return rc;
}

/* Scene statistics of the two worlds after their frames (sc, sg), each
 * within STATS_TOL of its scale. */
/* firn_stat_sink's line: stat_line on the report being filled. */
static void sink_line(void *ctx, const char *name, double cpu, double gpu, double scale)
{
    stat_line(ctx, name, cpu, gpu, scale);
}

static int compare_stats(firn_world *cpu, firn_world *gpu, const firn_scene_def *def,
                         const firn_frame_stats *sc, const firn_frame_stats *sg, int frames,
                         cmp_ctx *cmp, firn_error *err)
{
    if (firn_world_host_state(gpu, err) || firn_world_host_state(cpu, err))
        return -1;
    double L = 0.0, g = 0.0;
    for (int k = 0; k < 3; k++) {
        L = fmax(L, def->upper[k] - def->lower[k]);
        g += def->gravity[k] * def->gravity[k];
    }
    g = sqrt(g);
    cmp->stage = FIRN_COMPARE_FRAMES;
    cmp->r->frames = frames;
    cmp->r->time = sc->time;
    static const char *ax = "xyz";
    /* A body's or tool's entries by its name, cut to fit the entry's name
     * (" omega x" after it): cut at 10 bytes, "paddle_left" and
     * "paddle_lefty" named the same entries. */
    char name[sizeof((firn_compare_entry *)0)->name];
    /* Every solver's own statistics, in solver order (firn_solver's
     * compare_stats); scales: positions by the domain size, energy by the
     * larger of the two kinetic energies and 1e-3 of M g L, momentum by M
     * times the larger rms speed or a tenth of sqrt(g L)
     * (host/compare_stats.h). The rigid bodies' speed scale is the first
     * solver's with mass (MPM, SPH, PBD, FEM); the tools' force scale the
     * weight of every solver's mass. */
    const firn_stat_sink sink = {sink_line, cmp, L, g};
    double mass = 0.0, v_scale = -1.0;
    for (int k = 0; k < FIRN_SOLVER_COUNT; k++) {
        const firn_solver *sv = firn_solver_of(k);
        if (sv->compare_stats && sv->compare_stats(cpu, gpu, sc, sg, &sink, err))
            return -1;
        if (!sv->stats_mass)
            continue;
        double mc, kc, mg, kg;
        sv->stats_mass(sc, &mc, &kc);
        sv->stats_mass(sg, &mg, &kg);
        mass += mc;
        if (v_scale < 0.0 && mc > 0.0)
            v_scale = firn_stat_speed_scale(mc, kc, kg, L, g);
    }
    if (v_scale < 0.0)
        v_scale = firn_stat_speed_scale(0.0, 0.0, 0.0, L, g);
    for (int r = 0; r < sc->n_rigids; r++) {
        const firn_rigid_stats *rc = &sc->rigids[r], *rg = &sg->rigids[r];
        const char *rn = def->rigids[r].name;
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "%.38s pos %c", rn, ax[k]);
            stat_line(cmp, name, rc->position[k], rg->position[k], L);
            snprintf(name, sizeof name, "%.38s vel %c", rn, ax[k]);
            stat_line(cmp, name, rc->velocity[k], rg->velocity[k], v_scale);
            snprintf(name, sizeof name, "%.38s omega %c", rn, ax[k]);
            stat_line(cmp, name, rc->angular_velocity[k], rg->angular_velocity[k], v_scale / L);
        }
    }
    /* Tools: position by the domain size (commanded: equal to rounding),
     * the last frame's mean force by the larger of the material's weight
     * and the two forces' largest component. */
    for (int t = 0; t < sc->n_tools; t++) {
        const firn_tool_state *tc = &sc->tools[t], *tg = &sg->tools[t];
        const char *tn = def->tools[t].name;
        double f_scale = mass * fmax(g, 1e-3);
        for (int k = 0; k < 3; k++)
            f_scale = fmax(f_scale, fmax(fabs(tc->force_mean[k]), fabs(tg->force_mean[k])));
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "%.38s pos %c", tn, ax[k]);
            stat_line(cmp, name, tc->position[k], tg->position[k], L);
            snprintf(name, sizeof name, "%.38s force %c", tn, ax[k]);
            stat_line(cmp, name, tc->force_mean[k], tg->force_mean[k], f_scale);
        }
    }
    return 0;
}

int firn_compare_backends(const firn_scene_def *def, int frames, firn_compare_report *r,
                          firn_error *err)
{
    return firn_compare_backends_with(def, NULL, frames, r, err);
}

int firn_compare_backends_with(const firn_scene_def *def, const firn_run_options *opt, int frames,
                               firn_compare_report *r, firn_error *err)
{
    memset(r, 0, sizeof *r); /* ok 0 until the comparison runs: a refused one is not ok */
    r->state_tolerance = STATE_TOL;
    r->stats_tolerance = STATS_TOL;
    if (frames < 0) {
        firn_set_error(err, FIRN_E_USAGE, "firn_compare_backends: frames = %d is negative", frames);
        return -1;
    }
    if (!firn_cuda_available()) {
        firn_set_error(err, FIRN_E_DEVICE,
                       "a comparison runs the scene on the CUDA backend against the CPU path, "
                       "and this firn was built without CUDA (nvcc was not found at build "
                       "time): rebuild with the CUDA toolkit");
        return -1;
    }
    cmp_ctx cmp = {r, FIRN_COMPARE_SUBSTEP, 0, 0};
    firn_run_options gpu_run = opt ? *opt : firn_run_options_default();
    gpu_run.backend = FIRN_BACKEND_CUDA;
    firn_world *cpu = firn_world_create(def, FIRN_BACKEND_CPU, err);
    if (!cpu)
        return -1;
    firn_world *gpu = firn_world_create_with(def, &gpu_run, err);
    if (!gpu) {
        firn_world_destroy(cpu);
        return -1;
    }
    r->ok = 1;
    r->particles = firn_world_particle_count(cpu);
    snprintf(r->cpu_device, sizeof r->cpu_device, "%s", firn_world_device_name(cpu));
    snprintf(r->gpu_device, sizeof r->gpu_device, "%s", firn_world_device_name(gpu));
    /* The first frame's substep, from the CPU state (the same as the
     * GPU's); a runaway step is refused with its cause. The GPU world takes
     * its frame's step too, for what its solvers set with it (DFSPH's
     * relaxation time). */
    float dt, gdt;
    int nsub, gnsub, rc = -1;
    firn_frame_stats sc, sg;
    if (firn_world_next_frame_step(cpu, &dt, &nsub, err) ||
        firn_world_next_frame_step(gpu, &gdt, &gnsub, err))
        goto done;
    r->dt = dt;
    if (firn_world_substep(cpu, dt, err) || firn_world_substep(gpu, dt, err) ||
        compare_fields(cpu, gpu, dt, err, &cmp) || compare_grid(cpu, gpu, &cmp, err))
        goto done;
    if (compare_perturbed(def, &gpu_run, dt, &cmp, err))
        goto done;
    for (int f = 0; f < frames; f++)
        if (firn_world_step_frame(cpu, &sc, err) || firn_world_step_frame(gpu, &sg, err))
            goto done;
    if (frames > 0 && compare_stats(cpu, gpu, def, &sc, &sg, frames, &cmp, err))
        goto done;
    firn_cuda_graph_stats gs;
    firn_cuda_graph_stats_get(gpu, &gs);
    r->graph_captures = gs.captures;
    r->graph_launches = gs.launches;
    r->graphs_fell_back = gs.fell_back;
    snprintf(r->graphs_why, sizeof r->graphs_why, "%s", gs.fell_back ? gs.why : "");
    rc = 0;
done:
    if (!rc && cmp.nomem) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for the comparison's report");
        rc = -1;
    }
    if (rc) {
        firn_compare_report_free(r);
        r->ok = 0;
    }
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
    return rc;
}

void firn_compare_report_free(firn_compare_report *r)
{
    if (!r)
        return;
    free(r->entries);
    r->entries = NULL;
    r->n_entries = 0;
}
