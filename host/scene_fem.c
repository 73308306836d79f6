/* scene_fem.c - the scene's FEM part: the "fem" section and its checks,
 * an FEM material's and an FEM body's (a box, a ball or a tetrahedral mesh
 * file, which is loaded here). */
#include "scene_internal.h"
#include "tet_mesh.h"

#include <cJSON.h>
#include <math.h>
#include <string.h>

/* Most elements in one FEM body. */
#define FEM_MAX_ELEMENTS (1 << 26)

/* The FEM solver's options: "fem": {"damping": 0}. */
int scene_parse_fem(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"damping", NULL};
    return scene_need_object(c, j, "fem") || scene_check_keys(c, j, "fem", keys, NULL) ||
                   scene_get_float(c, j, "fem", "damping", &def->fem.damping)
               ? -1
               : 0;
}

int scene_validate_fem(const ctx *c, const firn_scene_def *def)
{
    return scene_need(c, "fem.damping", def->fem.damping, def->fem.damping >= 0,
                      "must be >= 0 [1/s]");
}

int scene_validate_fem_material(const ctx *c, const firn_material_def *m, const char *base)
{
    char p[KEYPATH_MAX];
    return scene_need(c, scene_join(p, base, "E"), m->E, m->E > 0, "must be > 0") ||
                   scene_need(c, scene_join(p, base, "nu"), m->nu, m->nu > -1 && m->nu < 0.5f,
                              "must be in (-1, 0.5)") ||
                   scene_need(c, scene_join(p, base, "density"), m->density, m->density > 0,
                              "must be > 0")
               ? -1
               : 0;
}

/* An FEM body: a box of cells[0] x cells[1] x cells[2] cells, a ball of
 * cells[0] cells across, or a tetrahedral mesh file (loaded here), inside
 * the domain; its fixed vertices in range. Returns 0, or the error code
 * (-1, or the mesh loader's). */
int scene_validate_fem_body(const ctx *c, const firn_scene_def *def, int i)
{
    const firn_body_def *b = &def->bodies[i];
    const firn_shape_def *s = &b->shape;
    char base[KEYPATH_MAX], sp[KEYPATH_MAX], p[KEYPATH_MAX], q[KEYPATH_MAX];
    double lo[3], hi[3], elements = 6.0;
    long long nv = 0;
    scene_join_index(base, "bodies", i);
    scene_join(sp, base, "shape");
    for (int k = 0; k < 3; k++)
        if (scene_need(c, scene_join_index(q, scene_join(p, base, "velocity"), k), b->velocity[k],
                       1, "") ||
            scene_need(c, scene_join_index(q, scene_join(p, sp, "center"), k), s->center[k], 1, ""))
            return -1;
    if (s->type == FIRN_SHAPE_BOX) {
        for (int k = 0; k < 3; k++) {
            if (scene_need(c, scene_join_index(q, scene_join(p, sp, "size"), k), s->size[k],
                           s->size[k] > 0, "must be > 0"))
                return -1;
            if (s->cells[0] == 0 && s->cells[1] == 0 && s->cells[2] == 0)
                return scene_fail(
                    c, scene_join(p, sp, "cells"),
                    "missing: an FEM box needs its cells along x, y and z, e.g. [8, 8, 8]");
            if (s->cells[k] < 1 || s->cells[k] > FEM_MAX_CELLS)
                return scene_fail(c, scene_join_index(q, scene_join(p, sp, "cells"), k),
                                  "%d: must be in [1, %d]", s->cells[k], FEM_MAX_CELLS);
            elements *= s->cells[k];
            lo[k] = (double)s->center[k] - 0.5 * s->size[k];
            hi[k] = (double)s->center[k] + 0.5 * s->size[k];
        }
        nv = (long long)(s->cells[0] + 1) * (s->cells[1] + 1) * (s->cells[2] + 1);
    } else if (s->type == FIRN_SHAPE_SPHERE) {
        if (scene_need(c, scene_join(p, sp, "radius"), s->radius, s->radius > 0, "must be > 0"))
            return -1;
        if (s->cells[0] == 0)
            return scene_fail(c, scene_join(p, sp, "cells"),
                              "missing: an FEM sphere needs its cells across the ball, e.g. 8");
        if (s->cells[0] < 1 || s->cells[0] > FEM_MAX_SPHERE_CELLS)
            return scene_fail(c, scene_join(p, sp, "cells"), "%d: must be in [1, %d]", s->cells[0],
                              FEM_MAX_SPHERE_CELLS);
        elements *= (double)s->cells[0] * s->cells[0] * s->cells[0];
        nv = (long long)(s->cells[0] + 1) * (s->cells[0] + 1) * (s->cells[0] + 1);
        for (int k = 0; k < 3; k++)
            lo[k] = (double)s->center[k] - s->radius, hi[k] = (double)s->center[k] + s->radius;
    } else if (s->type == FIRN_SHAPE_MESH) {
        firn_tet_mesh m;
        firn_error e;
        if (!memchr(s->file, '\0', FIRN_PATH_MAX))
            return scene_fail(c, scene_join(p, sp, "file"), "not NUL-terminated");
        if (!s->file[0])
            return scene_fail(c, scene_join(p, sp, "file"),
                              "missing (an FEM mesh needs a .node/.ele or .msh file)");
        if (scene_need(c, scene_join(p, sp, "scale"), s->scale, s->scale > 0, "must be > 0"))
            return -1;
        if (firn_tet_mesh_load(s->file, s->scale, &m, &e)) {
            scene_fail(c, scene_join(p, sp, "file"), "%s", e.msg);
            if (c->err)
                c->err->code = e.code; /* an unreadable file is an I/O error */
            return e.code;
        }
        double cen[3];
        firn_fem_mesh_centroid(&m, cen);
        for (int k = 0; k < 3; k++) {
            lo[k] = INFINITY, hi[k] = -INFINITY;
            for (int v = 0; v < m.nv; v++) {
                lo[k] = fmin(lo[k], m.x[3 * v + k] - cen[k] + s->center[k]);
                hi[k] = fmax(hi[k], m.x[3 * v + k] - cen[k] + s->center[k]);
            }
        }
        nv = m.nv;
        elements = m.ne;
        firn_tet_mesh_free(&m);
    } else {
        return scene_fail(
            c, scene_join(p, sp, "type"),
            "an FEM body is a box, a sphere or a mesh (a .node/.ele or .msh file), not "
            "a %s",
            (int)s->type >= 0 && s->type < FIRN_SHAPE_COUNT ? scene_shape_names[s->type] : "?");
    }
    if (s->type != FIRN_SHAPE_BOX && (s->cells[1] != 0 || s->cells[2] != 0))
        return scene_fail(c, scene_join(p, sp, "cells"), "applies only to an FEM box or sphere");
    if (elements > FEM_MAX_ELEMENTS)
        return scene_fail(c, scene_join(p, sp, s->type == FIRN_SHAPE_MESH ? "file" : "cells"),
                          "%.4g tetrahedra; at most %d", elements, FEM_MAX_ELEMENTS);
    for (int k = 0; k < 3; k++) {
        const double tol = 1e-6 * (hi[k] - lo[k]);
        if (lo[k] < def->lower[k] - tol || hi[k] > def->upper[k] + tol)
            return scene_fail(c, base,
                              "%s (material %s) spans %c in [%g, %g], outside the domain [%g, %g]",
                              scene_shape_names[s->type], def->materials[b->material].name,
                              scene_axis_names[k], lo[k], hi[k], def->lower[k], def->upper[k]);
    }
    if (b->n_pins < 0 || b->n_pins > FIRN_MAX_PINS)
        return scene_fail(c, scene_join(p, base, "fixed.indices"),
                          "%d indices; at most %d are allowed", b->n_pins, FIRN_MAX_PINS);
    for (int k = 0; k < b->n_pins; k++)
        if (b->pins[k] < 0 || b->pins[k] >= nv)
            return scene_fail(c, scene_join_index(q, scene_join(p, base, "fixed.indices"), k),
                              "%d: no such vertex (the body has %lld, numbered from 0)", b->pins[k],
                              nv);
    for (int k = 0; b->pin_box && k < 3; k++) {
        if (scene_need(c, scene_join_index(q, scene_join(p, base, "fixed.box.lower"), k),
                       b->pin_lower[k], 1, "") ||
            scene_need(c, scene_join_index(q, scene_join(p, base, "fixed.box.upper"), k),
                       b->pin_upper[k], 1, ""))
            return -1;
        if (!(b->pin_upper[k] >= b->pin_lower[k]))
            return scene_fail(c, scene_join_index(q, scene_join(p, base, "fixed.box.upper"), k),
                              "%g must be >= lower[%d] = %g", b->pin_upper[k], k, b->pin_lower[k]);
    }
    return 0;
}
