/* access.c - direct access to a world's clocks, rigid bodies and any
 * solver's fields by name (the solvers' tables of fields, host/solver.h),
 * and the sizes of the public structs, for language bindings
 * (python/firn) and controllers (firn.h, "direct access"). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda_backend.h"
#include "error.h"
#include "world.h"

void firn_world_clock(const firn_world *w, int *frame, double *time, long long *substeps)
{
    if (frame)
        *frame = w->frame;
    if (time)
        *time = w->time;
    if (substeps)
        *substeps = w->substeps;
}

int firn_world_rigid_count(const firn_world *w) { return w->n_rigids; }

static int no_rigid(const firn_world *w, const char *fn, int k, firn_error *err)
{
    firn_set_error(err, FIRN_E_USAGE, "%s: no rigid body %d (the world has %d)", fn, k,
                   w->n_rigids);
    return -1;
}

/* The host mirror of the rigid bodies brought up to date (CUDA). */
static int rigids_current(firn_world *w, firn_error *err)
{
    if (w->cuda && w->rigids_stale) {
        if (firn_cuda_download_rigids(w, err))
            return -1;
        w->rigids_stale = 0;
    }
    return 0;
}

int firn_world_rigid_view(firn_world *w, int k, firn_rigid_view *view, firn_error *err)
{
    if (k < 0 || k >= w->n_rigids)
        return no_rigid(w, "firn_world_rigid_view", k, err);
    if (rigids_current(w, err))
        return -1;
    firn_rigid *b = &w->rigids[k];
    view->position = b->x;
    view->orientation = b->q.q;
    view->velocity = b->v;
    view->angular_velocity = b->w;
    view->motion = w->def.rigids[k].motion;
    return 0;
}

int firn_world_set_rigid_velocity(firn_world *w, int k, const float v[3], const float om[3],
                                  firn_error *err)
{
    static const char fn[] = "firn_world_set_rigid_velocity";
    if (k < 0 || k >= w->n_rigids)
        return no_rigid(w, fn, k, err);
    const char *name = w->def.rigids[k].name;
    if (w->def.rigids[k].motion != FIRN_RIGID_KINEMATIC) {
        firn_set_error(err, FIRN_E_USAGE, "%s: rigid body %d ('%s') is %s, not kinematic", fn, k,
                       name, w->def.rigids[k].motion == FIRN_RIGID_STATIC ? "static" : "dynamic");
        return -1;
    }
    if (!v || !om) {
        firn_set_error(err, FIRN_E_USAGE, "%s: rigid body '%s': %s is NULL", fn, name,
                       !v ? "v" : "w");
        return -1;
    }
    for (int a = 0; a < 3; a++)
        if (!isfinite(v[a]) || !isfinite(om[a])) {
            firn_set_error(err, FIRN_E_USAGE,
                           "%s: rigid body '%s': %s[%d] = %g is not finite; nothing changed", fn,
                           name, isfinite(v[a]) ? "w" : "v", a, isfinite(v[a]) ? om[a] : v[a]);
            return -1;
        }
    if (rigids_current(w, err))
        return -1;
    firn_rigid *b = &w->rigids[k];
    const firn_rigid before = *b;
    b->n_keys = 0; /* commanded from now on */
    for (int a = 0; a < 3; a++) {
        b->v[a] = v[a];
        b->w[a] = om[a];
    }
    if (w->cuda && firn_cuda_upload_rigid(w, k, err)) {
        *b = before;
        return -1;
    }
    return 0;
}

size_t firn_struct_size(const char *name)
{
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {
        {"firn_scene_def", sizeof(firn_scene_def)},
        {"firn_run_options", sizeof(firn_run_options)},
        {"firn_coupling_def", sizeof(firn_coupling_def)},
        {"firn_sph_def", sizeof(firn_sph_def)},
        {"firn_pbd_def", sizeof(firn_pbd_def)},
        {"firn_fem_def", sizeof(firn_fem_def)},
        {"firn_frame_stats", sizeof(firn_frame_stats)},
        {"firn_tool_state", sizeof(firn_tool_state)},
        {"firn_particles_view", sizeof(firn_particles_view)},
        {"firn_sph_particles_view", sizeof(firn_sph_particles_view)},
        {"firn_pbd_particles_view", sizeof(firn_pbd_particles_view)},
        {"firn_fem_mesh_view", sizeof(firn_fem_mesh_view)},
        {"firn_rigid_view", sizeof(firn_rigid_view)},
        {"firn_field_view", sizeof(firn_field_view)},
        {"firn_error", sizeof(firn_error)},
        {"firn_compare_entry", sizeof(firn_compare_entry)},
        {"firn_compare_report", sizeof(firn_compare_report)},
    };
    for (size_t i = 0; name && i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcmp(name, sizes[i].name))
            return sizes[i].size;
    return 0;
}

/* The solver named `solver` that has a table of fields, or -1. */
static int field_solver(const char *solver)
{
    for (int k = 0; solver && k < FIRN_SOLVER_COUNT; k++)
        if (firn_solver_of(k)->fields && !strcmp(firn_solver_of(k)->name, solver))
            return k;
    return -1;
}

/* "mpm, sph, pbd, fem": the solvers that have fields. */
static void field_solvers(char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (int k = 0; k < FIRN_SOLVER_COUNT && at < size; k++)
        if (firn_solver_of(k)->fields)
            at += (size_t)snprintf(out + at, size - at, "%s%s", at ? ", " : "",
                                   firn_solver_of(k)->name);
}

const char *firn_world_field_name(firn_world *w, const char *solver, int k)
{
    const int s = field_solver(solver);
    if (s < 0 || k < 0)
        return NULL;
    firn_field_table t;
    firn_solver_of(s)->fields(w, &t);
    return k < t.n ? t.f[k].name : NULL;
}

int firn_world_field(firn_world *w, const char *solver, const char *name, firn_field_view *view,
                     firn_error *err)
{
    static const char fn[] = "firn_world_field";
    const int s = field_solver(solver);
    if (s < 0) {
        char names[64];
        field_solvers(names, sizeof names);
        firn_set_error(err, FIRN_E_USAGE, "%s: no solver '%s'; the solvers with fields are %s", fn,
                       solver ? solver : "(NULL)", names);
        return -1;
    }
    firn_field_table t;
    firn_solver_of(s)->fields(w, &t);
    int f = 0;
    while (f < t.n && !(name && !strcmp(t.f[f].name, name)))
        f++;
    if (f == t.n) {
        char names[160];
        size_t at = 0;
        names[0] = '\0';
        for (int k = 0; k < t.n && at < sizeof names; k++)
            at +=
                (size_t)snprintf(names + at, sizeof names - at, "%s%s", k ? ", " : "", t.f[k].name);
        firn_set_error(err, FIRN_E_USAGE, "%s: the %s solver has no field '%s'; its fields are %s",
                       fn, solver, name ? name : "(NULL)", names);
        return -1;
    }
    /* the host copy current: MPM's in the scene's order */
    if (s == FIRN_SOLVER_MPM) {
        firn_particles_view p;
        if (firn_world_particles(w, &p, err))
            return -1;
    } else if (firn_solver_of(s)->host_current && firn_solver_of(s)->host_current(w, err)) {
        return -1;
    }
    firn_solver_of(s)->fields(w, &t); /* the pointers after any download */
    view->count = t.count;
    view->data = t.count > 0 ? t.f[f].data : NULL;
    view->type = t.f[f].type;
    view->components = t.f[f].components;
    return 0;
}
