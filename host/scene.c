/* scene.c - the scene reader: the JSON root, the domain, time and output,
 * the bodies, and the entry points (firn_scene_parse_json,
 * firn_scene_load_json, firn_scene_validate).
 *
 * The JSON format is documented in docs/SCENES.md. The loader is strict: an
 * unknown key, a wrong type or an out-of-range value is an error naming the
 * file and the key path (e.g. `scenes/x.json: materials.sand.nu = 0.6: must
 * be in [0, 0.5)`), never a silent default. Parsing fills a private copy, so
 * the caller's definition is only written on success.
 *
 * The reader's parts (host/scene_internal.h): the strict JSON keys and the
 * name tables (scene_json.c), a section reader and checks per solver
 * (scene_material.c, scene_sph.c, scene_pbd.c, scene_fem.c,
 * scene_rigid.c, scene_coupling.c); the defaults are scene_def.c's. */
#include "error.h"
#include "scene_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks --------------------------------------------------------------- */

static int validate_domain(const ctx *c, const firn_scene_def *def)
{
    char p[KEYPATH_MAX];
    double nodes = 1.0, n[3];

    if (scene_need(c, "domain.dx", def->dx, def->dx > 0, "must be > 0"))
        return -1;
    for (int k = 0; k < 3; k++) {
        if (scene_need(c, scene_join_index(p, "domain.lower", k), def->lower[k], 1, "") ||
            scene_need(c, scene_join_index(p, "domain.upper", k), def->upper[k], 1, ""))
            return -1;
        if (!(def->upper[k] > def->lower[k]))
            return scene_fail(c, scene_join_index(p, "domain.upper", k),
                              "%g must be > domain.lower[%d] = %g", def->upper[k], k,
                              def->lower[k]);
        /* Fewer cells leave no room inside the wall layers. */
        double cells = ((double)def->upper[k] - def->lower[k]) / def->dx;
        if (cells < 4.0)
            return scene_fail(c, "domain.dx",
                              "%g gives only %.3g cells along %c (domain %c in [%g, %g]); "
                              "at least 4 are needed",
                              def->dx, cells, scene_axis_names[k], scene_axis_names[k],
                              def->lower[k], def->upper[k]);
        n[k] = ceil(cells - 1e-4) + 1.0; /* as firn_params_build rounds */
        nodes *= n[k];
    }
    if (nodes > 2147483648.0)
        return scene_fail(c, "domain.dx",
                          "%g gives a grid of %.0f x %.0f x %.0f = %.3g nodes, more than 2^31",
                          def->dx, n[0], n[1], n[2], nodes);

    for (int f = 0; f < 6; f++) {
        const firn_wall_def *w = &def->walls[f];
        char wp[KEYPATH_MAX];
        scene_join(wp, "domain.boundary", scene_face_names[f]);
        if ((int)w->type < 0 || (int)w->type > FIRN_WALL_SLIP)
            return scene_fail(c, wp, "unknown wall type %d", (int)w->type);
        if (scene_need(c, scene_join(p, wp, "friction"), w->friction, w->friction >= 0,
                       "must be >= 0"))
            return -1;
        if (w->friction != 0 && w->type != FIRN_WALL_SEPARATE)
            return scene_fail(c, p, "%g: only separate walls take friction (this one is %s)",
                              w->friction, scene_wall_names[w->type]);
    }
    return 0;
}

static int validate_time_output(const ctx *c, const firn_scene_def *def)
{
    char p[KEYPATH_MAX];
    for (int k = 0; k < 3; k++)
        if (scene_need(c, scene_join_index(p, "gravity", k), def->gravity[k], 1, ""))
            return -1;
    if (scene_need(c, "time.frame_dt", def->frame_dt, def->frame_dt > 0, "must be > 0") ||
        scene_need(c, "time.frames", def->frames, def->frames >= 1, "must be >= 1") ||
        scene_need(c, "time.cfl", def->cfl, def->cfl > 0 && def->cfl <= 1, "must be in (0, 1]") ||
        scene_need(c, "time.dt", def->dt, def->dt >= 0, "must be >= 0 (0: from the CFL condition)"))
        return -1;
    if (def->dt > 0 && (double)def->frame_dt / def->dt > INT_MAX)
        return scene_fail(c, "time.dt", "%g gives more than 2^31 substeps per frame of %g s",
                          def->dt, def->frame_dt);
    if (scene_need(c, "output.every", def->out_every, def->out_every >= 1, "must be >= 1"))
        return -1;
    if (!memchr(def->out_dir, '\0', sizeof def->out_dir))
        return scene_fail(c, "output.dir", "not NUL-terminated");
    if (!def->out_dir[0])
        return scene_fail(c, "output.dir", "must not be empty");
    return 0;
}

/* Checks a body's shape (a mesh file is loaded), its particle count and its
 * place in the domain; *particles gets the expected number of particles.
 * Returns 0, or the error code (-1, or the mesh loader's). */
static int validate_body(const ctx *c, const firn_scene_def *def, int i, double *particles)
{
    const firn_body_def *b = &def->bodies[i];
    const firn_shape_def *s = &b->shape;
    char base[KEYPATH_MAX], sp[KEYPATH_MAX], p[KEYPATH_MAX], q[KEYPATH_MAX];
    double lo_off[3], hi_off[3], half[3], volume;

    scene_join_index(base, "bodies", i);
    scene_join(sp, base, "shape");
    if (b->material < 0 || b->material >= def->n_materials)
        return scene_fail(c, scene_join(p, base, "material"),
                          "%d: no such material (the scene has %d)", b->material, def->n_materials);
    if ((int)b->solver < 0 || b->solver >= FIRN_SOLVER_KIND_COUNT)
        return scene_fail(c, scene_join(p, base, "solver"), "unknown solver %d", (int)b->solver);
    const firn_model model = def->materials[b->material].model;
    const firn_solver_kind want = model == FIRN_MODEL_SPH_LIQUID ? FIRN_SOLVER_KIND_SPH
                                  : model == FIRN_MODEL_PBD_CLOTH ||
                                          model == FIRN_MODEL_PBD_PARTICLE ||
                                          model == FIRN_MODEL_PBD_LIQUID
                                      ? FIRN_SOLVER_KIND_PBD
                                  : FIRN_MODEL_IS_FEM(model) ? FIRN_SOLVER_KIND_FEM
                                                             : FIRN_SOLVER_KIND_MPM;
    static const char *const needs[FIRN_SOLVER_KIND_COUNT] = {
        "an MPM body needs an MPM material", "an SPH body needs an sph_liquid material",
        "a PBD body needs a pbd_cloth, pbd_particle or pbd_liquid material",
        "an FEM body needs an fem_linear, fem_corotated or fem_stable_neohookean material"};
    if (want != b->solver) {
        char hint[64];
        snprintf(hint, sizeof hint, "give the body \"solver\": \"%s\"", scene_solver_names[want]);
        return scene_fail(c, scene_join(p, base, "material"),
                          "\"%s\" is a %s material, which the %s solver does not simulate (%s)",
                          def->materials[b->material].name, scene_model_names[model],
                          scene_solver_names[b->solver],
                          want != FIRN_SOLVER_KIND_MPM ? hint : needs[b->solver]);
    }
    if (b->solver == FIRN_SOLVER_KIND_PBD && model == FIRN_MODEL_PBD_CLOTH)
        return scene_validate_cloth_body(c, def, i);
    if (b->solver == FIRN_SOLVER_KIND_FEM)
        return scene_validate_fem_body(c, def, i);
    for (int k = 0; k < 3; k++)
        if (s->cells[k] != 0)
            return scene_fail(c, scene_join(p, sp, "cells"), "applies only to an FEM body");
    if (b->n_pins != 0 || b->pin_box)
        return scene_fail(c, scene_join(p, base, "pin"), "only a pbd_cloth body has pins");
    if (s->type == FIRN_SHAPE_CLOTH_RECT)
        return scene_fail(c, scene_join(p, sp, "type"),
                          "cloth_rect is the shape of a pbd_cloth body");
    if (scene_need(c, scene_join(p, base, "particles_per_cell"), b->particles_per_cell,
                   b->particles_per_cell > 0 && b->particles_per_cell <= 64, "must be in (0, 64]"))
        return -1;
    for (int k = 0; k < 3; k++)
        if (scene_need(c, scene_join_index(q, scene_join(p, base, "velocity"), k), b->velocity[k],
                       1, "") ||
            scene_need(c, scene_join_index(q, scene_join(p, sp, "center"), k), s->center[k], 1, ""))
            return -1;

    switch (s->type) {
    case FIRN_SHAPE_BOX:
        for (int k = 0; k < 3; k++) {
            if (scene_need(c, scene_join_index(q, scene_join(p, sp, "size"), k), s->size[k],
                           s->size[k] > 0, "must be > 0"))
                return -1;
            half[k] = 0.5 * s->size[k];
        }
        volume = (double)s->size[0] * s->size[1] * s->size[2];
        break;
    case FIRN_SHAPE_SPHERE:
        if (scene_need(c, scene_join(p, sp, "radius"), s->radius, s->radius > 0, "must be > 0"))
            return -1;
        half[0] = half[1] = half[2] = s->radius;
        volume = 4.0 / 3.0 * M_PI * pow(s->radius, 3);
        break;
    case FIRN_SHAPE_CYLINDER:
        if (scene_need(c, scene_join(p, sp, "radius"), s->radius, s->radius > 0, "must be > 0") ||
            scene_need(c, scene_join(p, sp, "height"), s->height, s->height > 0, "must be > 0"))
            return -1;
        if (s->axis < 0 || s->axis > 2)
            return scene_fail(c, scene_join(p, sp, "axis"), "%d: must be 0 (x), 1 (y) or 2 (z)",
                              s->axis);
        half[0] = half[1] = half[2] = s->radius;
        half[s->axis] = 0.5 * s->height;
        volume = M_PI * (double)s->radius * s->radius * s->height;
        break;
    case FIRN_SHAPE_MESH: {
        const firn_mesh *mesh;
        int rc = scene_load_mesh(c, s->file, s->scale, sp, &mesh);
        if (rc)
            return rc;
        /* Centroid at center: the vertices' extent about it. */
        for (int k = 0; k < 3; k++) {
            lo_off[k] = DBL_MAX, hi_off[k] = -DBL_MAX;
            for (int v = 0; v < mesh->nv; v++) {
                lo_off[k] = fmin(lo_off[k], mesh->v[3 * v + k]);
                hi_off[k] = fmax(hi_off[k], mesh->v[3 * v + k]);
            }
        }
        volume = mesh->volume;
        break;
    }
    default:
        return scene_fail(c, scene_join(p, sp, "type"), "unknown shape type %d", (int)s->type);
    }
    if (s->type != FIRN_SHAPE_MESH)
        for (int k = 0; k < 3; k++)
            lo_off[k] = -half[k], hi_off[k] = half[k];
    if (b->solver == FIRN_SOLVER_KIND_SPH)
        return scene_validate_sph_body(c, def, i, lo_off, hi_off, volume, particles);
    if (b->solver == FIRN_SOLVER_KIND_PBD)
        return scene_validate_pbd_particle_body(c, def, i, lo_off, hi_off, volume, particles);

    *particles = volume * b->particles_per_cell / pow(def->dx, 3);
    if (*particles < 1.0)
        return scene_fail(c, base,
                          "empty body: a %s of volume %.3g m^3 holds %.3g particles at "
                          "particles_per_cell %g and dx %g; at least 1 is needed",
                          scene_shape_names[s->type], volume, *particles, b->particles_per_cell,
                          def->dx);

    /* A body must start clear of the wall layers (the nodes within 2 dx of
     * a wall, where the boundary condition acts); particles that later move
     * further out are clamped at 1 dx, where their stencil still fits the
     * grid. The tolerance absorbs rounding of bodies placed exactly on the
     * limit. */
    for (int k = 0; k < 3; k++) {
        double lo = (double)def->lower[k] + 2.0 * def->dx,
               hi = (double)def->upper[k] - 2.0 * def->dx;
        double blo = s->center[k] + lo_off[k], bhi = s->center[k] + hi_off[k], tol = 1e-4 * def->dx;
        if (blo < lo - tol || bhi > hi + tol)
            return scene_fail(c, base,
                              "%s (material %s) spans %c in [%g, %g], outside the allowed [%g, %g] "
                              "(domain %c in [%g, %g] less 2 dx at each wall)",
                              scene_shape_names[s->type], def->materials[b->material].name,
                              scene_axis_names[k], blo, bhi, lo, hi, scene_axis_names[k],
                              def->lower[k], def->upper[k]);
    }
    return 0;
}

/* All checks, with messages prefixed by file ("" for none). */
static int validate(const firn_scene_def *def, const char *file, firn_error *err)
{
    ctx c = {file, err};
    double total = 0.0;

    if (validate_domain(&c, def) || validate_time_output(&c, def) ||
        scene_validate_materials(&c, def))
        return -1;
    if (def->n_bodies < 1)
        return scene_fail(&c, "bodies", "no bodies; a scene needs at least one");
    if (scene_validate_pbd(&c, def) || scene_validate_fem(&c, def))
        return -1;
    if (def->n_bodies > FIRN_MAX_BODIES)
        return scene_fail(&c, "bodies", "%d bodies; at most %d are allowed", def->n_bodies,
                          FIRN_MAX_BODIES);
    double by_solver[FIRN_SOLVER_KIND_COUNT] = {0.0};
    for (int i = 0; i < def->n_bodies; i++) {
        double n = 0.0;
        int rc = validate_body(&c, def, i, &n);
        if (rc)
            return rc; /* -1, or FIRN_E_IO for an unreadable mesh */
        total += n;
        by_solver[def->bodies[i].solver] += n;
    }
    if (scene_validate_sph(&c, def) || scene_validate_coupling(&c, def))
        return -1;
    int rc = scene_validate_rigids(&c, def);
    if (rc == 0)
        rc = scene_validate_tools(&c, def);
    if (rc)
        return rc; /* -1, or FIRN_E_IO for an unreadable mesh */
    if (total > FIRN_MAX_PARTICLES) {
        /* The advice names the keys that size the largest share. */
        static const char *const advice[FIRN_SOLVER_KIND_COUNT] = {
            "use a coarser dx or fewer particles_per_cell (MPM bodies)",
            "use a larger sph.particle_size (SPH bodies)",
            "use a larger pbd.particle_size (PBD particle and liquid bodies)", ""};
        int most = 0;
        for (int k = 1; k < FIRN_SOLVER_KIND_COUNT; k++)
            if (by_solver[k] > by_solver[most])
                most = k;
        return scene_fail(&c, "bodies",
                          "about %.4g particles in all; at most %d are allowed (32-bit indices; "
                          "%.4g MPM, %.4g SPH, %.4g PBD); %s",
                          total, FIRN_MAX_PARTICLES, by_solver[FIRN_SOLVER_KIND_MPM],
                          by_solver[FIRN_SOLVER_KIND_SPH], by_solver[FIRN_SOLVER_KIND_PBD],
                          advice[most]);
    }
    return 0;
}

int firn_scene_validate(const firn_scene_def *def, firn_error *err)
{
    /* The messages of later stages (sampling, stepping) name the scene by
     * its source, so it must be a string. */
    if (!memchr(def->source, '\0', sizeof def->source)) {
        firn_set_error(err, FIRN_E_SCENE,
                       "scene: source is not a terminated string of at most %d "
                       "bytes",
                       (int)sizeof def->source - 1);
        return FIRN_E_SCENE;
    }
    int rc = validate(def, def->source, err);
    return rc == 0 ? FIRN_OK : (rc > 0 ? rc : FIRN_E_SCENE);
}

/* ---- reading -------------------------------------------------------------- */

/* A wall: "sticky" or {"type": "separate", "friction": 0.3}. */
static int parse_wall(const ctx *c, const cJSON *j, const char *path, firn_wall_def *w)
{
    static const char *const keys[] = {"type", "friction", NULL};
    char p[KEYPATH_MAX];
    const char *type = "separate";
    int t = 0;

    w->friction = 0.0f;
    if (cJSON_IsString(j)) {
        if (scene_pick(c, path, j->valuestring, scene_wall_names, 3, &t))
            return -1;
        w->type = (firn_wall_type)t;
        return 0;
    }
    if (!cJSON_IsObject(j))
        return scene_fail(c, path, "expected a wall type string or an object, got %s",
                          scene_json_type(j));
    if (scene_check_keys(c, j, path, keys, NULL) ||
        scene_get_string(c, j, path, "type", 0, &type) ||
        scene_pick(c, scene_join(p, path, "type"), type, scene_wall_names, 3, &t) ||
        scene_get_float(c, j, path, "friction", &w->friction))
        return -1;
    w->type = (firn_wall_type)t;
    scene_join(p, path, "friction");
    if (scene_need(c, p, w->friction, w->friction >= 0, "must be >= 0"))
        return -1;
    if (w->friction != 0 && w->type != FIRN_WALL_SEPARATE)
        return scene_fail(c, p, "%g: only separate walls take friction (this one is %s)",
                          w->friction, type);
    return 0;
}

static int parse_boundary(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"x_lower", "x_upper", "y_lower", "y_upper",
                                       "z_lower", "z_upper", "all",     NULL};
    const char *path = "domain.boundary";
    char p[KEYPATH_MAX];
    firn_wall_def all = {FIRN_WALL_SEPARATE, 0.0f};

    /* One wall for all six faces. */
    if (cJSON_IsString(j) ||
        (cJSON_IsObject(j) && (scene_get(j, "type") || scene_get(j, "friction")))) {
        for (int f = 0; cJSON_IsObject(j) && keys[f]; f++)
            if (scene_get(j, keys[f]))
                return scene_fail(c, path,
                                  "give one wall (type, friction) or per-face walls "
                                  "(x_lower, ..., all), not both");
        if (parse_wall(c, j, path, &all))
            return -1;
        for (int f = 0; f < 6; f++)
            def->walls[f] = all;
        return 0;
    }
    if (!cJSON_IsObject(j))
        return scene_fail(c, path, "expected a wall type string or an object, got %s",
                          scene_json_type(j));
    if (scene_check_keys(c, j, path, keys, NULL))
        return -1;
    if (scene_get(j, "all") && parse_wall(c, scene_get(j, "all"), scene_join(p, path, "all"), &all))
        return -1;
    for (int f = 0; f < 6; f++) {
        def->walls[f] = all;
        if (scene_get(j, scene_face_names[f]) &&
            parse_wall(c, scene_get(j, scene_face_names[f]),
                       scene_join(p, path, scene_face_names[f]), &def->walls[f]))
            return -1;
    }
    return 0;
}

static int parse_domain(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"lower", "upper", "dx", "boundary", NULL};
    if (scene_need_object(c, j, "domain") || scene_check_keys(c, j, "domain", keys, NULL) ||
        scene_get_vec3(c, j, "domain", "lower", def->lower) ||
        scene_get_vec3(c, j, "domain", "upper", def->upper) ||
        scene_get_float(c, j, "domain", "dx", &def->dx))
        return -1;
    return scene_get(j, "boundary") ? parse_boundary(c, scene_get(j, "boundary"), def) : 0;
}

static int parse_time(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"frame_dt", "frames", "cfl", "dt", "force_dt", NULL};
    if (scene_need_object(c, j, "time") || scene_check_keys(c, j, "time", keys, NULL) ||
        scene_get_float(c, j, "time", "frame_dt", &def->frame_dt) ||
        scene_get_int(c, j, "time", "frames", 1, INT_MAX, &def->frames) ||
        scene_get_float(c, j, "time", "cfl", &def->cfl) ||
        scene_get_float(c, j, "time", "dt", &def->dt) ||
        scene_get_bool(c, j, "time", "force_dt", &def->force_dt))
        return -1;
    return 0;
}

static int parse_output(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"dir", "every", "ply", "preview", NULL};
    const char *dir = NULL;
    if (scene_need_object(c, j, "output") || scene_check_keys(c, j, "output", keys, NULL) ||
        scene_get_string(c, j, "output", "dir", 0, &dir) ||
        scene_get_int(c, j, "output", "every", 1, INT_MAX, &def->out_every) ||
        scene_get_bool(c, j, "output", "ply", &def->write_ply) ||
        scene_get_bool(c, j, "output", "preview", &def->write_preview))
        return -1;
    if (dir && strlen(dir) >= sizeof def->out_dir)
        return scene_fail(c, "output.dir", "longer than %d characters", FIRN_PATH_MAX - 1);
    if (dir)
        snprintf(def->out_dir, sizeof def->out_dir, "%s", dir);
    return 0;
}

/* {"type": "cloth_rect", "center": [..], "size": [w, h], "resolution": [N, M], "normal": "y"} */
static int parse_cloth_rect(const ctx *c, const cJSON *j, const char *path, firn_shape_def *s)
{
    static const char *const keys[] = {"type", "center", "size", "resolution", "normal", NULL};
    static const char *const axes[3] = {"x", "y", "z"};
    const char *normal = NULL;
    char p[KEYPATH_MAX];
    s->size[0] = s->size[1] = 0.5f;
    s->size[2] = 0.0f;
    if (scene_check_keys(c, j, path, keys, "for a cloth_rect") ||
        scene_get_vec3(c, j, path, "center", s->center) ||
        scene_get_array(c, j, path, "size", 2, s->size, NULL, 0, 0) ||
        scene_get_array(c, j, path, "resolution", 2, NULL, s->resolution, 2,
                        CLOTH_MAX_RESOLUTION) ||
        scene_get_string(c, j, path, "normal", 0, &normal) ||
        (normal && scene_pick(c, scene_join(p, path, "normal"), normal, axes, 3, &s->axis)))
        return -1;
    return 0;
}

static int parse_shape(const ctx *c, const cJSON *j, const char *path, firn_shape_def *s)
{
    static const char *const box_keys[] = {"type",  "center", "size", "lower",
                                           "upper", "cells",  NULL};
    static const char *const sphere_keys[] = {"type", "center", "radius", "cells", NULL};
    static const char *const cyl_keys[] = {"type", "center", "radius", "height", "axis", NULL};
    static const char *const mesh_keys[] = {"type", "center", "file", "scale", NULL};
    static const char *const *const keys[FIRN_SHAPE_COUNT] = {box_keys, sphere_keys, cyl_keys,
                                                              mesh_keys, NULL};
    static const char *const axes[3] = {"x", "y", "z"};
    char p[KEYPATH_MAX], q[KEYPATH_MAX], what[32];
    const char *type = NULL, *axis = NULL;
    int t = 0;

    if (scene_need_object(c, j, path) || scene_get_string(c, j, path, "type", 1, &type) ||
        scene_pick(c, scene_join(p, path, "type"), type, scene_shape_names, FIRN_SHAPE_COUNT, &t))
        return -1;
    s->type = (firn_shape_type)t;
    if (s->type == FIRN_SHAPE_CLOTH_RECT)
        return parse_cloth_rect(c, j, path, s);
    snprintf(what, sizeof what, "for a %s", type);
    if (scene_check_keys(c, j, path, keys[t], what) ||
        scene_get_vec3(c, j, path, "center", s->center) ||
        scene_get_vec3(c, j, path, "size", s->size) ||
        scene_get_float(c, j, path, "radius", &s->radius) ||
        scene_get_float(c, j, path, "height", &s->height) ||
        scene_get_string(c, j, path, "axis", 0, &axis) ||
        (axis && scene_pick(c, scene_join(p, path, "axis"), axis, axes, 3, &s->axis)) ||
        scene_get_float(c, j, path, "scale", &s->scale) ||
        (s->type == FIRN_SHAPE_SPHERE
             ? scene_get_int(c, j, path, "cells", 1, FEM_MAX_SPHERE_CELLS, &s->cells[0])
             : scene_get_array(c, j, path, "cells", 3, NULL, s->cells, 1, FEM_MAX_CELLS)) ||
        (s->type == FIRN_SHAPE_MESH && scene_get_mesh_file(c, j, path, s->file)))
        return -1;

    /* A box may be given by its corners instead. */
    if (scene_get(j, "lower") || scene_get(j, "upper")) {
        float lo[3], hi[3];
        if (scene_get(j, "center") || scene_get(j, "size"))
            return scene_fail(c, path, "give center and size, or lower and upper, not both");
        if (!scene_get(j, "lower") || !scene_get(j, "upper"))
            return scene_fail(c, scene_join(p, path, scene_get(j, "lower") ? "upper" : "lower"),
                              "missing (lower and upper go together)");
        if (scene_get_vec3(c, j, path, "lower", lo) || scene_get_vec3(c, j, path, "upper", hi))
            return -1;
        for (int k = 0; k < 3; k++) {
            if (!(hi[k] > lo[k]))
                return scene_fail(c, scene_join_index(q, scene_join(p, path, "upper"), k),
                                  "%g must be > lower[%d] = %g", hi[k], k, lo[k]);
            s->center[k] = 0.5f * (lo[k] + hi[k]);
            s->size[k] = hi[k] - lo[k];
        }
    }
    return 0;
}

/* "pin": {"indices": [..], "box": {"lower": [..], "upper": [..]}} */
static int parse_pin(const ctx *c, const cJSON *j, const char *path, firn_body_def *b)
{
    static const char *const keys[] = {"indices", "box", NULL};
    static const char *const box_keys[] = {"lower", "upper", NULL};
    char p[KEYPATH_MAX], q[KEYPATH_MAX];
    const cJSON *idx = scene_get(j, "indices"), *box = scene_get(j, "box"), *e;
    if (scene_need_object(c, j, path) || scene_check_keys(c, j, path, keys, NULL))
        return -1;
    if (!idx && !box)
        return scene_fail(c, path, "give indices, a box, or both");
    if (idx) {
        scene_join(p, path, "indices");
        if (!cJSON_IsArray(idx))
            return scene_fail(c, p, "expected an array of vertex indices, got %s",
                              scene_json_type(idx));
        if (cJSON_GetArraySize(idx) > FIRN_MAX_PINS)
            return scene_fail(c, p, "%d indices; at most %d are allowed (pin more with a box)",
                              cJSON_GetArraySize(idx), FIRN_MAX_PINS);
        b->n_pins = 0;
        cJSON_ArrayForEach(e, idx)
        {
            double v;
            if (scene_item_integer(c, e, scene_join_index(q, p, b->n_pins), -9007199254740992.0,
                                   9007199254740992.0, &v))
                return -1;
            if (v < 0 || v > INT_MAX) /* the vertex count is checked once the shape is known */
                return scene_fail(
                    c, scene_join_index(q, p, b->n_pins),
                    "%.0f: no such vertex (vertices are numbered from 0 to the body's "
                    "vertex count less 1)",
                    v);
            b->pins[b->n_pins++] = (int)v;
        }
    }
    if (box) {
        scene_join(p, path, "box");
        if (scene_need_object(c, box, p) || scene_check_keys(c, box, p, box_keys, NULL))
            return -1;
        if (!scene_get(box, "lower") || !scene_get(box, "upper"))
            return scene_fail(c, scene_join(q, p, scene_get(box, "lower") ? "upper" : "lower"),
                              "missing (lower and upper go together)");
        if (scene_get_vec3(c, box, p, "lower", b->pin_lower) ||
            scene_get_vec3(c, box, p, "upper", b->pin_upper))
            return -1;
        b->pin_box = 1;
    }
    return 0;
}

static int parse_body(const ctx *c, const cJSON *j, const char *path, const firn_scene_def *def,
                      int index, firn_body_def *b)
{
    static const char *const keys[] = {
        "material", "shape", "particles_per_cell", "velocity", "seed", "solver",
        "pin",      "fixed", "integrator",         NULL};
    static const char *const integrators[] = {"explicit", "implicit"};
    char p[KEYPATH_MAX];
    const char *mat = NULL, *solver = "mpm";
    int solver_i = 0;
    const cJSON *seed = NULL, *shape;

    if (scene_need_object(c, j, path) || scene_check_keys(c, j, path, keys, NULL) ||
        scene_get_string(c, j, path, "material", 1, &mat))
        return -1;
    b->material = -1;
    for (int i = 0; i < def->n_materials; i++)
        if (!strcmp(def->materials[i].name, mat))
            b->material = i;
    if (b->material < 0) {
        char list[FIRN_ERRMSG_MAX / 2] = "";
        for (int i = 0; i < def->n_materials; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     def->materials[i].name);
        return scene_fail(c, scene_join(p, path, "material"),
                          "\"%s\": no such material (defined: %s)", mat,
                          def->n_materials ? list : "none");
    }
    shape = scene_get(j, "shape");
    if (!shape)
        return scene_fail(c, scene_join(p, path, "shape"), "missing (required)");
    if (parse_shape(c, shape, scene_join(p, path, "shape"), &b->shape) ||
        scene_get_float(c, j, path, "particles_per_cell", &b->particles_per_cell) ||
        scene_get_vec3(c, j, path, "velocity", b->velocity) ||
        scene_get_string(c, j, path, "solver", 0, &solver) ||
        scene_pick(c, scene_join(p, path, "solver"), solver, scene_solver_names,
                   FIRN_SOLVER_KIND_COUNT, &solver_i))
        return -1;
    b->solver = (firn_solver_kind)solver_i;
    if (b->solver == FIRN_SOLVER_KIND_SPH && scene_get(j, "particles_per_cell"))
        return scene_fail(
            c, scene_join(p, path, "particles_per_cell"),
            "does not apply to an SPH body (its lattice spacing is sph.particle_size)");
    if (b->solver == FIRN_SOLVER_KIND_PBD && scene_get(j, "particles_per_cell"))
        return scene_fail(c, scene_join(p, path, "particles_per_cell"),
                          "does not apply to a PBD body (a cloth's particles are its vertices, a "
                          "particle body's lattice spacing is pbd.particle_size)");
    if (b->solver == FIRN_SOLVER_KIND_FEM && scene_get(j, "particles_per_cell"))
        return scene_fail(c, scene_join(p, path, "particles_per_cell"),
                          "does not apply to an FEM body (its vertices are its mesh's)");
    if (b->solver == FIRN_SOLVER_KIND_FEM && scene_get(j, "pin"))
        return scene_fail(c, scene_join(p, path, "pin"),
                          "an FEM body's vertices are held by \"fixed\" (indices and/or a box)");
    if (b->solver != FIRN_SOLVER_KIND_FEM && scene_get(j, "fixed"))
        return scene_fail(
            c, scene_join(p, path, "fixed"),
            "applies only to an FEM body (a pbd_cloth's vertices are held by \"pin\")");
    if (scene_get(j, "pin") && parse_pin(c, scene_get(j, "pin"), scene_join(p, path, "pin"), b))
        return -1;
    if (scene_get(j, "fixed") &&
        parse_pin(c, scene_get(j, "fixed"), scene_join(p, path, "fixed"), b))
        return -1;
    if (scene_get(j, "integrator")) {
        const char *integrator = NULL;
        if (b->solver != FIRN_SOLVER_KIND_FEM)
            return scene_fail(c, scene_join(p, path, "integrator"), "applies only to an FEM body");
        if (scene_get_string(c, j, path, "integrator", 1, &integrator) ||
            scene_pick(c, scene_join(p, path, "integrator"), integrator, integrators, 2,
                       &b->fem_implicit))
            return -1;
    }
    seed = scene_get(j, "seed");
    if (seed) {
        double v = 0;
        if (scene_item_integer(c, seed, scene_join(p, path, "seed"), 0, 9007199254740992.0, &v))
            return -1;
        b->seed = (uint64_t)v;
    }
    if (b->seed == 0)
        b->seed = (uint64_t)index + 1;
    return 0;
}

static int body_item(const ctx *c, const cJSON *j, const char *path, int i, firn_scene_def *def)
{
    return parse_body(c, j, path, def, i, &def->bodies[i]);
}

static int parse_bodies(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    return scene_parse_list(c, j, "bodies", "bodies", FIRN_MAX_BODIES, &def->n_bodies, def,
                            body_item);
}

static int parse_gravity(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    return scene_item_vec3(c, j, "gravity", def->gravity);
}

/* The top-level sections in the order read (materials before bodies, which
 * refer to them by name), each by its reader. */
static const struct {
    const char *key;
    int (*parse)(const ctx *c, const cJSON *j, firn_scene_def *def);
} sections[] = {
    {"domain", parse_domain},     {"gravity", parse_gravity},
    {"time", parse_time},         {"materials", scene_parse_materials},
    {"bodies", parse_bodies},     {"rigids", scene_parse_rigids},
    {"tools", scene_parse_tools}, {"coupling", scene_parse_coupling},
    {"sph", scene_parse_sph},     {"pbd", scene_parse_pbd},
    {"fem", scene_parse_fem},     {"output", parse_output},
};

static int parse_root(const ctx *c, const cJSON *root, firn_scene_def *def)
{
    static const char *const keys[] = {"domain", "gravity",  "time",   "materials", "bodies",
                                       "rigids", "coupling", "output", "name",      "description",
                                       "sph",    "pbd",      "tools",  "fem",       NULL};
    const char *unused;
    if (!cJSON_IsObject(root))
        return scene_fail(c, "", "expected a JSON object at the top level, got %s",
                          scene_json_type(root));
    if (scene_check_keys(c, root, "", keys, NULL) ||
        scene_get_string(c, root, "", "name", 0, &unused) ||
        scene_get_string(c, root, "", "description", 0, &unused))
        return -1;
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        const cJSON *j = scene_get(root, sections[i].key);
        if (j && sections[i].parse(c, j, def))
            return -1;
    }
    return 0;
}

/* ---- entry points --------------------------------------------------------- */

/* cJSON reports a failed string one byte late: where a key was expected
 * (`{"a": 1,}`) or a string is unterminated, it points just past the bad
 * byte. Scan up to pos and step back in those two cases. */
static const char *error_position(const char *text, const char *pos)
{
    char stack[1024];
    int depth = 0, in_string = 0;
    const char *q = pos - 1, *prev = NULL;

    if (pos <= text)
        return text;
    for (const char *s = text; s < q; s++) {
        if (in_string) {
            if (*s == '\\' && s + 1 < q)
                s++;
            else if (*s == '"') {
                in_string = 0;
                prev = s;
            }
            continue;
        }
        if (*s == '"')
            in_string = 1;
        else if ((*s == '{' || *s == '[') && depth < (int)sizeof stack)
            stack[depth++] = *s;
        else if ((*s == '}' || *s == ']') && depth > 0)
            depth--;
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
            prev = s;
    }
    if (in_string)
        return pos;
    if (*q == '"')
        return q; /* unterminated string opened at q */
    if (depth > 0 && stack[depth - 1] == '{' && prev && (*prev == '{' || *prev == ','))
        return q; /* a key was expected at q */
    return pos;
}

/* "file:line:col: malformed JSON near '...'" for a parse error at pos. */
static void malformed(const char *text, const char *pos, const char *file, firn_error *err)
{
    int line = 1, col = 1;
    char near[32];
    size_t n = 0;

    pos = pos ? error_position(text, pos) : text;
    for (const char *s = text; s < pos && *s; s++) {
        if (*s == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    for (const char *s = pos; *s && *s != '\n' && n < sizeof near - 1; s++)
        near[n++] = (*s >= 32 && *s < 127) ? *s : '?';
    near[n] = '\0';
    if (!*pos)
        firn_set_error(err, FIRN_E_SCENE, "%s:%d:%d: malformed JSON: unexpected end of input", file,
                       line, col);
    else
        firn_set_error(err, FIRN_E_SCENE, "%s:%d:%d: malformed JSON near '%s'", file, line, col,
                       near);
}

int firn_scene_parse_json(const char *text, const char *name, firn_scene_def *def, firn_error *err)
{
    /* Messages need a name; the stored source stays "" without one. */
    const char *file = (name && *name) ? name : "<json>";
    ctx c = {file, err};
    const char *end = NULL;
    firn_scene_def *tmp;
    cJSON *root;
    int rc;

    if (name && strlen(name) >= sizeof def->source) {
        scene_fail(&c, "", "file name longer than %d characters", FIRN_PATH_MAX - 1);
        return FIRN_E_SCENE;
    }
    root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        malformed(text, end ? end : cJSON_GetErrorPtr(), file, err);
        return FIRN_E_SCENE;
    }
    /* About 33 KB: kept off the stack, and def is only written on success. */
    tmp = malloc(sizeof *tmp);
    if (!tmp) {
        cJSON_Delete(root);
        firn_set_error(err, FIRN_E_NOMEM, "%s: out of memory", file);
        return FIRN_E_NOMEM;
    }
    firn_scene_default(tmp);
    snprintf(tmp->source, sizeof tmp->source, "%s", name ? name : "");
    rc = parse_root(&c, root, tmp) ? FIRN_E_SCENE : validate(tmp, file, err);
    rc = rc == 0 ? FIRN_OK : (rc > 0 ? rc : FIRN_E_SCENE);
    cJSON_Delete(root);
    if (rc == FIRN_OK)
        *def = *tmp;
    free(tmp);
    return rc;
}

int firn_scene_load_json(const char *path, firn_scene_def *def, firn_error *err)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0, cap = 0;
    int rc;

    if (!f) {
        firn_set_error(err, FIRN_E_IO, "%s: cannot open: %s", path, strerror(errno));
        return FIRN_E_IO;
    }
    /* Read in chunks: works for pipes too, and fails cleanly on a directory.
     * A NUL byte or more than FIRN_SCENE_MAX_BYTES ends it: no endless
     * stream (a device, say) is read until memory runs out. */
    for (;;) {
        if (len > FIRN_SCENE_MAX_BYTES) {
            free(text);
            fclose(f);
            firn_set_error(err, FIRN_E_SCENE, "%s: longer than %d MiB; not a scene file", path,
                           FIRN_SCENE_MAX_BYTES >> 20);
            return FIRN_E_SCENE;
        }
        if (cap - len < 4096) {
            char *grown = realloc(text, cap ? 2 * cap : 65536);
            if (!grown) {
                free(text);
                fclose(f);
                firn_set_error(err, FIRN_E_NOMEM, "%s: out of memory reading it", path);
                return FIRN_E_NOMEM;
            }
            text = grown;
            cap = cap ? 2 * cap : 65536;
        }
        size_t got = fread(text + len, 1, cap - len - 1, f);
        if (memchr(text + len, '\0', got)) {
            free(text);
            fclose(f);
            firn_set_error(err, FIRN_E_SCENE, "%s: contains a NUL byte; not a JSON text file",
                           path);
            return FIRN_E_SCENE;
        }
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        int e = errno;
        free(text);
        fclose(f);
        firn_set_error(err, FIRN_E_IO, "%s: cannot read: %s", path, strerror(e));
        return FIRN_E_IO;
    }
    fclose(f);
    text[len] = '\0';
    rc = firn_scene_parse_json(text, path, def, err);
    free(text);
    return rc;
}
