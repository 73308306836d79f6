/* scene_pbd.c - the scene's PBD part: the "pbd" section and its checks, a
 * PBD material's, a pbd_particle or pbd_liquid body's and a cloth's. */
#include "mesh.h"
#include "scene_def.h"
#include "scene_internal.h"

#include <cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pbd_cloth stretch and bending compliance: an edge of compliance alpha
 * stretches by alpha f under a force f, so at 1000 m/N the weight of a
 * gram stretches it by 10 m and it carries no load a cloth has; larger
 * ones reach alpha / dt^2 = inf at short substeps (NaN corrections). The
 * softest shipped bending is 100. */
#define PBD_MAX_COMPLIANCE 1e3f

int scene_parse_pbd(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"particle_size",
                                       "stretch_iterations",
                                       "bending_iterations",
                                       "density_iterations",
                                       "viscosity_iterations",
                                       "lower",
                                       "upper",
                                       NULL};
    if (scene_need_object(c, j, "pbd") || scene_check_keys(c, j, "pbd", keys, NULL) ||
        scene_get_float(c, j, "pbd", "particle_size", &def->pbd.particle_size) ||
        scene_get_int(c, j, "pbd", "stretch_iterations", 1, 1000, &def->pbd.stretch_iterations) ||
        scene_get_int(c, j, "pbd", "bending_iterations", 0, 1000, &def->pbd.bending_iterations) ||
        scene_get_int(c, j, "pbd", "density_iterations", 0, 1000, &def->pbd.density_iterations) ||
        scene_get_int(c, j, "pbd", "viscosity_iterations", 0, 1000,
                      &def->pbd.viscosity_iterations) ||
        scene_get_vec3(c, j, "pbd", "lower", def->pbd.lower) ||
        scene_get_vec3(c, j, "pbd", "upper", def->pbd.upper))
        return -1;
    if (!scene_get(j, "lower") != !scene_get(j, "upper"))
        return scene_fail(c, scene_get(j, "lower") ? "pbd.upper" : "pbd.lower",
                          "missing (lower and upper go together)");
    return 0;
}

/* The PBD solver's options (pbd.*). */
int scene_validate_pbd(const ctx *c, const firn_scene_def *def)
{
    float lo[3], hi[3];
    char q[KEYPATH_MAX];
    if (scene_need(c, "pbd.particle_size", def->pbd.particle_size,
                   def->pbd.particle_size > 0 && def->pbd.particle_size < 1e3f, "must be > 0") ||
        scene_need(c, "pbd.stretch_iterations", def->pbd.stretch_iterations,
                   def->pbd.stretch_iterations >= 1 && def->pbd.stretch_iterations <= 1000,
                   "must be in [1, 1000]") ||
        scene_need(c, "pbd.bending_iterations", def->pbd.bending_iterations,
                   def->pbd.bending_iterations >= 0 && def->pbd.bending_iterations <= 1000,
                   "must be in [0, 1000]") ||
        scene_need(c, "pbd.density_iterations", def->pbd.density_iterations,
                   def->pbd.density_iterations >= 0 && def->pbd.density_iterations <= 1000,
                   "must be in [0, 1000]") ||
        scene_need(c, "pbd.viscosity_iterations", def->pbd.viscosity_iterations,
                   def->pbd.viscosity_iterations >= 0 && def->pbd.viscosity_iterations <= 1000,
                   "must be in [0, 1000]"))
        return -1;
    firn_pbd_box(def, lo, hi);
    for (int k = 0; k < 3; k++) {
        if (scene_need(c, scene_join_index(q, "pbd.lower", k), lo[k], 1, "") ||
            scene_need(c, scene_join_index(q, "pbd.upper", k), hi[k], 1, ""))
            return -1;
        if (!(hi[k] > lo[k]))
            return scene_fail(c, scene_join_index(q, "pbd.upper", k), "%g must be > lower[%d] = %g",
                              hi[k], k, lo[k]);
    }
    return 0;
}

int scene_validate_pbd_material(const ctx *c, const firn_material_def *m, const char *base)
{
    char p[KEYPATH_MAX];
    return scene_need(c, scene_join(p, base, "density"), m->density, m->density > 0,
                      m->model == FIRN_MODEL_PBD_CLOTH ? "must be > 0 (kg/m^2)" : "must be > 0") ||
                   scene_need(c, scene_join(p, base, "stretch_compliance"), m->stretch_compliance,
                              m->stretch_compliance >= 0 &&
                                  m->stretch_compliance <= PBD_MAX_COMPLIANCE,
                              "must be in [0, 1000] m/N (docs/SCENES.md: softer edges carry no "
                              "load)") ||
                   scene_need(c, scene_join(p, base, "bending_compliance"), m->bending_compliance,
                              m->bending_compliance >= 0 &&
                                  m->bending_compliance <= PBD_MAX_COMPLIANCE,
                              "must be in [0, 1000] 1/(N m) (docs/SCENES.md: softer bends carry no "
                              "load)") ||
                   scene_need(c, scene_join(p, base, "air_resistance"), m->air_resistance,
                              m->air_resistance >= 0, "must be >= 0") ||
                   scene_need(c, scene_join(p, base, "static_friction"), m->static_friction,
                              m->static_friction >= 0, "must be >= 0") ||
                   scene_need(c, scene_join(p, base, "kinetic_friction"), m->kinetic_friction,
                              m->kinetic_friction >= 0, "must be >= 0") ||
                   scene_need(c, scene_join(p, base, "density_relaxation"), m->density_relaxation,
                              m->density_relaxation > 0 && m->density_relaxation <= 1,
                              "must be in (0, 1]") ||
                   scene_need(c, scene_join(p, base, "viscosity_relaxation"),
                              m->viscosity_relaxation,
                              m->viscosity_relaxation >= 0 && m->viscosity_relaxation <= 1,
                              "must be in [0, 1]")
               ? -1
               : 0;
}

/* Whether [lo + off_lo, hi + off_hi] about center lies in the PBD box; fails naming it. */
static int inside_pbd_box(const ctx *c, const firn_scene_def *def, const char *base,
                          const char *what, const double blo[3], const double bhi[3])
{
    float lo[3], hi[3];
    firn_pbd_box(def, lo, hi);
    for (int k = 0; k < 3; k++) {
        double tol = 1e-4 * def->pbd.particle_size;
        if (blo[k] < lo[k] - tol || bhi[k] > hi[k] + tol)
            return scene_fail(c, base, "%s spans %c in [%g, %g], outside the PBD box [%g, %g]",
                              what, scene_axis_names[k], blo[k], bhi[k], lo[k], hi[k]);
    }
    return 0;
}

/* A PBD particle's mass must be a positive, normal, finite float: its
 * inverse (w = 1 / m) multiplies every correction, and that of a zero or
 * denormal mass is infinite. Fails naming what gave the mass. */
static int check_pbd_mass(const ctx *c, const char *base, float mass, const char *how)
{
    if (mass >= FLT_MIN && isfinite(mass))
        return 0;
    return scene_fail(
        c, base,
        "its particles would each carry %g kg (%s), %s: a PBD particle needs a mass of "
        "at least %g kg (a normal 32-bit float) and a finite one",
        mass, how,
        mass == 0.0f     ? "zero"
        : isfinite(mass) ? "a denormal float"
                         : "not finite",
        FLT_MIN);
}

/* A pbd_particle body: a lattice of spacing pbd.particle_size inside the PBD box. */
int scene_validate_pbd_particle_body(const ctx *c, const firn_scene_def *def, int i,
                                     const double lo_off[3], const double hi_off[3], double volume,
                                     double *particles)
{
    const firn_shape_def *s = &def->bodies[i].shape;
    char base[KEYPATH_MAX];
    double blo[3], bhi[3];
    scene_join_index(base, "bodies", i);
    *particles = volume / pow(def->pbd.particle_size, 3);
    if (*particles < 1.0)
        return scene_fail(c, base,
                          "empty body: a %s of volume %.3g m^3 holds %.3g PBD particles of size "
                          "pbd.particle_size = %g m; at least 1 is needed",
                          scene_shape_names[s->type], volume, *particles, def->pbd.particle_size);
    /* About each particle's mass as host/pbd.c gives it (the shape's
     * volume times density over the particle count: this, within the
     * rounding of the lattice's layers), for the float check below. */
    const firn_material_def *m = &def->materials[def->bodies[i].material];
    const double ps = def->pbd.particle_size;
    char how[160];
    const float mass = (float)(m->density * ps * ps * ps);
    snprintf(how, sizeof how, "density %g kg/m^3 x pbd.particle_size^3, (%g m)^3", m->density, ps);
    if (check_pbd_mass(c, base, mass, how))
        return -1;
    for (int k = 0; k < 3; k++)
        blo[k] = s->center[k] + lo_off[k], bhi[k] = s->center[k] + hi_off[k];
    return inside_pbd_box(c, def, base, scene_shape_names[s->type], blo, bhi);
}

/* A cloth triangle is degenerate when twice its area is at most this
 * times its longest edge squared (its smallest angle below about 1e-6
 * rad): its vertices' float positions are rounded by 6e-8 of their size,
 * so such a triangle's normal, which bending follows, is rounding. */
#define CLOTH_MIN_TRI_SHAPE 1e-6

/* Vertex (i, j) of a cloth_rect, placed as host/pbd.c places it (in float). */
static void rect_vertex(const firn_shape_def *s, int i, int j, double x[3])
{
    const int ua = s->axis == 0 ? 1 : 0, va = s->axis == 2 ? 1 : 2;
    float y[3];
    y[s->axis] = s->center[s->axis];
    y[ua] = s->center[ua] + s->size[0] * ((float)i / (float)(s->resolution[0] - 1) - 0.5f);
    y[va] = s->center[va] + s->size[1] * ((float)j / (float)(s->resolution[1] - 1) - 0.5f);
    for (int k = 0; k < 3; k++)
        x[k] = y[k];
}

/* The area of triangle (a, b, c) into *area, and whether it is degenerate
 * (CLOTH_MIN_TRI_SHAPE); *edge gets its longest edge. */
static int tri_degenerate(const double *a, const double *b, const double *c, double *area,
                          double *edge)
{
    double e1[3], e2[3], e3[3], l1 = 0.0, l2 = 0.0, l3 = 0.0;
    for (int k = 0; k < 3; k++) {
        e1[k] = b[k] - a[k], e2[k] = c[k] - a[k], e3[k] = c[k] - b[k];
        l1 += e1[k] * e1[k], l2 += e2[k] * e2[k], l3 += e3[k] * e3[k];
    }
    const double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                         e1[0] * e2[1] - e1[1] * e2[0]};
    const double twice = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    const double l = fmax(l1, fmax(l2, l3));
    *area = 0.5 * twice;
    *edge = sqrt(l);
    return !(twice > CLOTH_MIN_TRI_SHAPE * l);
}

/* A pbd_cloth body: a cloth_rect or an OBJ surface with triangles, its
 * pins, inside the PBD box. Returns 0, or the error code (-1, or the mesh
 * reader's). */
int scene_validate_cloth_body(const ctx *c, const firn_scene_def *def, int i)
{
    const firn_body_def *b = &def->bodies[i];
    const firn_shape_def *s = &b->shape;
    char base[KEYPATH_MAX], sp[KEYPATH_MAX], p[KEYPATH_MAX], q[KEYPATH_MAX];
    double blo[3], bhi[3], area = 0.0;
    int nv = 0;
    scene_join_index(base, "bodies", i);
    scene_join(sp, base, "shape");
    for (int k = 0; k < 3; k++)
        if (scene_need(c, scene_join_index(q, scene_join(p, base, "velocity"), k), b->velocity[k],
                       1, "") ||
            scene_need(c, scene_join_index(q, scene_join(p, sp, "center"), k), s->center[k], 1, ""))
            return -1;
    if (s->type == FIRN_SHAPE_CLOTH_RECT) {
        if (s->axis < 0 || s->axis > 2)
            return scene_fail(c, scene_join(p, sp, "normal"), "%d: must be 0 (x), 1 (y) or 2 (z)",
                              s->axis);
        for (int k = 0; k < 2; k++) {
            if (scene_need(c, scene_join_index(q, scene_join(p, sp, "size"), k), s->size[k],
                           s->size[k] > 0, "must be > 0"))
                return -1;
            if (s->resolution[k] < 2 || s->resolution[k] > CLOTH_MAX_RESOLUTION)
                return scene_fail(c, scene_join_index(q, scene_join(p, sp, "resolution"), k),
                                  "%d: must be in [2, %d] (vertices along the side)",
                                  s->resolution[k], CLOTH_MAX_RESOLUTION);
        }
        nv = s->resolution[0] * s->resolution[1];
        const int ua = s->axis == 0 ? 1 : 0, va = s->axis == 2 ? 1 : 2;
        for (int k = 0; k < 3; k++)
            blo[k] = bhi[k] = s->center[k];
        blo[ua] -= 0.5 * s->size[0], bhi[ua] += 0.5 * s->size[0];
        blo[va] -= 0.5 * s->size[1], bhi[va] += 0.5 * s->size[1];
        /* The triangles as host/pbd.c cuts the quads (a checkerboard of
         * diagonals). */
        const int n1 = s->resolution[1];
        for (int u = 0, t = 0; u + 1 < s->resolution[0]; u++)
            for (int w = 0; w + 1 < n1; w++) {
                const int a = u * n1 + w, bb = a + n1, cc = bb + 1, dd = a + 1;
                const int tri[2][2][3] = {{{a, bb, cc}, {a, cc, dd}}, {{a, bb, dd}, {bb, cc, dd}}};
                for (int h = 0; h < 2; h++, t++) {
                    const int *v = tri[(u + w) & 1][h];
                    double x[3][3], ar, edge;
                    for (int e = 0; e < 3; e++)
                        rect_vertex(s, v[e] / n1, v[e] % n1, x[e]);
                    if (tri_degenerate(x[0], x[1], x[2], &ar, &edge))
                        return scene_fail(
                            c, base,
                            "cloth triangle %d (vertices %d %d %d) is degenerate: area "
                            "%.3g m^2 for a longest edge of %.3g m (shape.size %g x %g "
                            "at resolution %d x %d is below float precision at this "
                            "position)",
                            t, v[0], v[1], v[2], ar, edge, s->size[0], s->size[1], s->resolution[0],
                            n1);
                    area += ar;
                }
            }
    } else if (s->type == FIRN_SHAPE_MESH) {
        float *v;
        int *tri, nt;
        firn_error e;
        if (!memchr(s->file, '\0', FIRN_PATH_MAX))
            return scene_fail(c, scene_join(p, sp, "file"), "not NUL-terminated");
        if (scene_need(c, scene_join(p, sp, "scale"), s->scale, s->scale > 0, "must be > 0"))
            return -1;
        if (firn_mesh_read_surface(s->file, s->scale, &v, &nv, &tri, &nt, &e)) {
            scene_fail(c, scene_join(p, sp, "file"), "%s", e.msg);
            if (c->err)
                c->err->code = e.code;
            return e.code;
        }
        double mean[3] = {0.0, 0.0, 0.0};
        for (int k = 0; k < 3; k++) {
            blo[k] = DBL_MAX, bhi[k] = -DBL_MAX;
            for (int j = 0; j < nv; j++) {
                mean[k] += v[3 * j + k] / (double)nv;
                blo[k] = fmin(blo[k], v[3 * j + k]);
                bhi[k] = fmax(bhi[k], v[3 * j + k]);
            }
        }
        for (int k = 0; k < 3; k++)
            blo[k] += s->center[k] - mean[k], bhi[k] += s->center[k] - mean[k];
        /* The vertices placed as host/pbd.c places them (in float). */
        for (int j = 0; j < nv; j++)
            for (int k = 0; k < 3; k++)
                v[3 * j + k] += s->center[k] - (float)mean[k];
        int bad = -1;
        double bad_area = 0.0, bad_edge = 0.0;
        for (int t = 0; t < nt && bad < 0; t++) {
            double x[3][3], ar, edge;
            for (int q3 = 0; q3 < 3; q3++)
                for (int k = 0; k < 3; k++)
                    x[q3][k] = v[3 * tri[3 * t + q3] + k];
            if (tri_degenerate(x[0], x[1], x[2], &ar, &edge))
                bad = t, bad_area = ar, bad_edge = edge;
            area += ar;
        }
        int bv[3] = {0, 0, 0};
        for (int q3 = 0; bad >= 0 && q3 < 3; q3++)
            bv[q3] = tri[3 * bad + q3];
        free(v);
        free(tri);
        if (nt == 0)
            return scene_fail(c, scene_join(p, sp, "file"),
                              "'%s' has no triangles: a cloth needs faces", s->file);
        if (bad >= 0)
            return scene_fail(
                c, base,
                "cloth triangle %d (vertices %d %d %d, numbered from 0 in '%s') is "
                "degenerate: area %.3g m^2 for a longest edge of %.3g m (coincident or "
                "collinear vertices, or a size below float precision at this position)",
                bad, bv[0], bv[1], bv[2], s->file, bad_area, bad_edge);
    } else {
        return scene_fail(
            c, scene_join(p, sp, "type"),
            "a pbd_cloth body is a cloth_rect or a mesh (an OBJ surface), not a %s",
            (int)s->type >= 0 && s->type < FIRN_SHAPE_COUNT ? scene_shape_names[s->type] : "?");
    }
    /* Each vertex carries area x density / vertex count (host/pbd.c). */
    {
        const float density = def->materials[b->material].density;
        char how[160];
        snprintf(how, sizeof how, "area %.3g m^2 x density %g kg/m^2 / %d vertices", area, density,
                 nv);
        if (check_pbd_mass(c, base, (float)(area * density / nv), how))
            return -1;
    }
    if (b->n_pins < 0 || b->n_pins > FIRN_MAX_PINS)
        return scene_fail(c, scene_join(p, base, "pin.indices"), "%d pins; at most %d are allowed",
                          b->n_pins, FIRN_MAX_PINS);
    for (int k = 0; k < b->n_pins; k++)
        if (b->pins[k] < 0 || b->pins[k] >= nv)
            return scene_fail(c, scene_join_index(q, scene_join(p, base, "pin.indices"), k),
                              "%d: no such vertex (the cloth has %d, numbered from 0)", b->pins[k],
                              nv);
    for (int k = 0; b->pin_box && k < 3; k++) {
        if (scene_need(c, scene_join_index(q, scene_join(p, base, "pin.box.lower"), k),
                       b->pin_lower[k], 1, "") ||
            scene_need(c, scene_join_index(q, scene_join(p, base, "pin.box.upper"), k),
                       b->pin_upper[k], 1, ""))
            return -1;
        if (!(b->pin_upper[k] >= b->pin_lower[k]))
            return scene_fail(c, scene_join_index(q, scene_join(p, base, "pin.box.upper"), k),
                              "%g must be >= lower[%d] = %g", b->pin_upper[k], k, b->pin_lower[k]);
    }
    return inside_pbd_box(c, def, base, scene_shape_names[s->type], blo, bhi);
}
