/* scene_rigid.c - the scene's rigid bodies and tools: the "rigids" and
 * "tools" sections and their checks. A tool's shape, pose, velocities and
 * keyframes are read and checked as a rigid's are (a tool is checked as a
 * kinematic rigid, firn_tool_as_rigid). */
#include "firn_coupling.h"
#include "mesh.h"
#include "rigid.h"
#include "scene_def.h"
#include "scene_internal.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- reading -------------------------------------------------------------- */

static int parse_rigid_shape(const ctx *c, const cJSON *j, const char *path,
                             firn_rigid_shape_def *s)
{
    static const char *const plane_keys[] = {"type", "center", "normal", NULL};
    static const char *const sphere_keys[] = {"type", "center", "radius", NULL};
    static const char *const box_keys[] = {"type", "center", "size", "lower", "upper", NULL};
    static const char *const round_keys[] = {"type", "center", "radius", "height", "axis", NULL};
    static const char *const mesh_keys[] = {"type", "center", "file", "scale", NULL};
    static const char *const *const keys[FIRN_RSHAPE_COUNT] = {plane_keys, sphere_keys, box_keys,
                                                               round_keys, round_keys,  mesh_keys};
    static const char *const axes[3] = {"x", "y", "z"};
    char p[KEYPATH_MAX], q[KEYPATH_MAX], what[32];
    const char *type = NULL, *axis = NULL;
    int t = 0;

    if (scene_need_object(c, j, path) || scene_get_string(c, j, path, "type", 1, &type) ||
        scene_pick(c, scene_join(p, path, "type"), type, scene_rigid_shape_names, FIRN_RSHAPE_COUNT,
                   &t))
        return -1;
    s->type = (firn_rigid_shape_type)t;
    snprintf(what, sizeof what, "for a %s", type);
    if (scene_check_keys(c, j, path, keys[t], what) ||
        scene_get_vec3(c, j, path, "center", s->center) ||
        scene_get_vec3(c, j, path, "size", s->size) ||
        scene_get_vec3(c, j, path, "normal", s->normal) ||
        scene_get_float(c, j, path, "radius", &s->radius) ||
        scene_get_float(c, j, path, "height", &s->height) ||
        scene_get_string(c, j, path, "axis", 0, &axis) ||
        (axis && scene_pick(c, scene_join(p, path, "axis"), axis, axes, 3, &s->axis)) ||
        scene_get_float(c, j, path, "scale", &s->scale))
        return -1;
    if (s->type == FIRN_RSHAPE_MESH && scene_get_mesh_file(c, j, path, s->file))
        return -1;
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
                                  "%g must be > lower[%d] = %g (an inverted or empty box)", hi[k],
                                  k, lo[k]);
            s->center[k] = 0.5f * (lo[k] + hi[k]);
            s->size[k] = hi[k] - lo[k];
        }
    }
    return 0;
}

/* The "keyframes" array of object j (at path), if there is one, of a
 * rigid or a tool: the body starts at the first one's position (center). */
static int parse_keyframes(const ctx *c, const cJSON *j, const char *path, float center[3],
                           firn_keyframe_def keyframes[FIRN_MAX_KEYFRAMES], int *n)
{
    const cJSON *keys_j = scene_get(j, "keyframes"), *kf;
    if (!keys_j)
        return 0;
    static const char *const kf_keys[] = {"t", "position", "rotation", NULL};
    char p[KEYPATH_MAX], q[KEYPATH_MAX], kp[KEYPATH_MAX];
    scene_join(q, path, "keyframes");
    if (!cJSON_IsArray(keys_j))
        return scene_fail(c, q, "expected an array of keyframes, got %s", scene_json_type(keys_j));
    if (cJSON_GetArraySize(keys_j) < 1 || cJSON_GetArraySize(keys_j) > FIRN_MAX_KEYFRAMES)
        return scene_fail(c, q, "%d keyframes: give 1 to %d", cJSON_GetArraySize(keys_j),
                          FIRN_MAX_KEYFRAMES);
    cJSON_ArrayForEach(kf, keys_j)
    {
        firn_keyframe_def *k = &keyframes[*n];
        scene_join_index(kp, q, *n);
        if (scene_need_object(c, kf, kp) || scene_check_keys(c, kf, kp, kf_keys, NULL))
            return -1;
        if (!scene_get(kf, "t") || !scene_get(kf, "position"))
            return scene_fail(c, scene_join(p, kp, scene_get(kf, "t") ? "position" : "t"),
                              "missing (required)");
        if (scene_get_float(c, kf, kp, "t", &k->t) ||
            scene_get_vec3(c, kf, kp, "position", k->position) ||
            scene_get_vec3(c, kf, kp, "rotation", k->rotation))
            return -1;
        (*n)++;
    }
    memcpy(center, keyframes[0].position, 3 * sizeof *center);
    return 0;
}

/* A rigid's or a tool's name (NULL: not given) into out. */
static int set_name(const ctx *c, const char *path, const char *name, char out[FIRN_NAME_MAX])
{
    char p[KEYPATH_MAX];
    if (name && (!name[0] || strlen(name) >= FIRN_NAME_MAX))
        return scene_fail(c, scene_join(p, path, "name"), "must be 1 to %d characters",
                          FIRN_NAME_MAX - 1);
    snprintf(out, FIRN_NAME_MAX, "%s", name ? name : "");
    return 0;
}

/* What a rigid and a tool share, in the order read: the shape (required),
 * the initial orientation, a rigid's density (density NULL for a tool),
 * the velocities, friction and softness. */
static int parse_moving(const ctx *c, const cJSON *j, const char *path, firn_rigid_shape_def *shape,
                        float rotation[3], float *density, float velocity[3],
                        float angular_velocity[3], float *friction, float *softness)
{
    char p[KEYPATH_MAX];
    const cJSON *s = scene_get(j, "shape");
    if (!s)
        return scene_fail(c, scene_join(p, path, "shape"), "missing (required)");
    if (parse_rigid_shape(c, s, scene_join(p, path, "shape"), shape) ||
        scene_get_vec3(c, j, path, "rotation", rotation) ||
        (density && scene_get_float(c, j, path, "density", density)) ||
        scene_get_vec3(c, j, path, "velocity", velocity) ||
        scene_get_vec3(c, j, path, "angular_velocity", angular_velocity) ||
        scene_get_float(c, j, path, "friction", friction) ||
        scene_get_float(c, j, path, "softness", softness))
        return -1;
    return 0;
}

static int parse_rigid(const ctx *c, const cJSON *j, const char *path, int index, firn_rigid_def *r)
{
    static const char *const keys[] = {"name",     "shape",       "motion",           "rotation",
                                       "density",  "velocity",    "angular_velocity", "friction",
                                       "softness", "restitution", "couple",           "keyframes",
                                       NULL};
    char p[KEYPATH_MAX];
    const char *name = NULL, *motion = "static";
    int m = 0;

    if (scene_need_object(c, j, path) || scene_check_keys(c, j, path, keys, NULL) ||
        scene_get_string(c, j, path, "name", 0, &name) ||
        scene_get_string(c, j, path, "motion", 0, &motion) ||
        scene_pick(c, scene_join(p, path, "motion"), motion, scene_motion_names, 3, &m))
        return -1;
    r->motion = (firn_motion)m;
    if (set_name(c, path, name, r->name))
        return -1;
    if (!name)
        snprintf(r->name, sizeof r->name, "rigid%d", index);
    if (parse_moving(c, j, path, &r->shape, r->rotation, &r->density, r->velocity,
                     r->angular_velocity, &r->friction, &r->softness) ||
        scene_get_float(c, j, path, "restitution", &r->restitution) ||
        scene_get_bool(c, j, path, "couple", &r->couple) ||
        parse_keyframes(c, j, path, r->shape.center, r->keyframes, &r->n_keyframes))
        return -1;
    return 0;
}

static int rigid_item(const ctx *c, const cJSON *j, const char *path, int i, firn_scene_def *def)
{
    return parse_rigid(c, j, path, i, &def->rigids[i]);
}

int scene_parse_rigids(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    return scene_parse_list(c, j, "rigids", "rigid bodies", FIRN_MAX_RIGIDS, &def->n_rigids, def,
                            rigid_item);
}

static int parse_tool(const ctx *c, const cJSON *j, const char *path, firn_tool_def *t)
{
    static const char *const keys[] = {
        "name",     "shape",    "rotation",  "velocity",  "angular_velocity",
        "friction", "softness", "collision", "keyframes", NULL};
    const char *name = NULL;
    if (scene_need_object(c, j, path) || scene_check_keys(c, j, path, keys, NULL) ||
        scene_get_string(c, j, path, "name", 1, &name) || set_name(c, path, name, t->name) ||
        parse_moving(c, j, path, &t->shape, t->rotation, NULL, t->velocity, t->angular_velocity,
                     &t->friction, &t->softness) ||
        scene_get_bool(c, j, path, "collision", &t->collision) ||
        parse_keyframes(c, j, path, t->shape.center, t->keyframes, &t->n_keyframes))
        return -1;
    return 0;
}

static int tool_item(const ctx *c, const cJSON *j, const char *path, int i, firn_scene_def *def)
{
    return parse_tool(c, j, path, &def->tools[i]);
}

int scene_parse_tools(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    return scene_parse_list(c, j, "tools", "tools", FIRN_MAX_TOOLS, &def->n_tools, def, tool_item);
}

/* ---- checks --------------------------------------------------------------- */

/* rigids[i].shape (its path sp), by shape type; a mesh file is loaded.
 * Returns 0, or the error code (-1, or the mesh loader's). */
static int validate_rigid_shape(const ctx *c, const firn_rigid_def *r, const char *base,
                                const char *sp)
{
    const firn_rigid_shape_def *s = &r->shape;
    char p[KEYPATH_MAX], q[KEYPATH_MAX];
    switch (s->type) {
    case FIRN_RSHAPE_PLANE: {
        double n2 = 0.0;
        for (int k = 0; k < 3; k++) {
            if (scene_need(c, scene_join_index(q, scene_join(p, sp, "normal"), k), s->normal[k], 1,
                           ""))
                return -1;
            n2 += (double)s->normal[k] * s->normal[k];
        }
        if (!(n2 > 1e-12))
            return scene_fail(c, scene_join(p, sp, "normal"), "must not be zero");
        if (r->motion == FIRN_RIGID_DYNAMIC)
            return scene_fail(c, scene_join(p, base, "motion"),
                              "a plane is unbounded and has no finite mass: it can be static or "
                              "kinematic, not dynamic");
        break;
    }
    case FIRN_RSHAPE_BOX:
        for (int k = 0; k < 3; k++)
            if (scene_need(c, scene_join_index(q, scene_join(p, sp, "size"), k), s->size[k],
                           s->size[k] > 0, "must be > 0"))
                return -1;
        break;
    case FIRN_RSHAPE_SPHERE:
    case FIRN_RSHAPE_CAPSULE:
    case FIRN_RSHAPE_CYLINDER:
        if (scene_need(c, scene_join(p, sp, "radius"), s->radius, s->radius > 0, "must be > 0"))
            return -1;
        if (s->type == FIRN_RSHAPE_CYLINDER &&
            scene_need(c, scene_join(p, sp, "height"), s->height, s->height > 0, "must be > 0"))
            return -1;
        if (s->type == FIRN_RSHAPE_CAPSULE &&
            scene_need(c, scene_join(p, sp, "height"), s->height, s->height >= 0, "must be >= 0"))
            return -1;
        if (s->type != FIRN_RSHAPE_SPHERE && (s->axis < 0 || s->axis > 2))
            return scene_fail(c, scene_join(p, sp, "axis"), "%d: must be 0 (x), 1 (y) or 2 (z)",
                              s->axis);
        break;
    case FIRN_RSHAPE_MESH: {
        const firn_mesh *mesh;
        int rc = scene_load_mesh(c, s->file, s->scale, sp, &mesh);
        if (rc)
            return rc;
        break;
    }
    default:
        return scene_fail(c, scene_join(p, sp, "type"), "unknown rigid shape type %d",
                          (int)s->type);
    }
    return 0;
}

/* More CFL substeps per frame than this is a runaway (FIRN_MAX_SUBSTEPS,
 * host/world.c): a keyframe segment must not need more. */
#define KEYFRAME_MAX_SUBSTEPS 100000

/* A turn between two keyframes this close to 180 degrees has no direction
 * that float rounding of the quaternions would not decide. */
#define KEYFRAME_MAX_TURN_DEG 179.99

/* The distance from a rigid shape's centre to its farthest point, as the
 * CFL step takes it (host/world.c, rigid_speed; 0 for a plane, whose
 * rotation it does not bound). */
static double rigid_reach(const firn_rigid_shape_def *s)
{
    switch (s->type) {
    case FIRN_RSHAPE_SPHERE:
        return s->radius;
    case FIRN_RSHAPE_BOX:
        return 0.5 * sqrt((double)s->size[0] * s->size[0] + (double)s->size[1] * s->size[1] +
                          (double)s->size[2] * s->size[2]);
    case FIRN_RSHAPE_CAPSULE:
    case FIRN_RSHAPE_CYLINDER:
        return 0.5 * s->height + s->radius;
    case FIRN_RSHAPE_MESH: {
        const firn_mesh *mesh;
        double r2 = 0.0;
        if (firn_mesh_get(s->file, s->scale, 0, &mesh, NULL) == 0)
            for (int v = 0; v < mesh->nv; v++) /* about the centroid */
                r2 = fmax(r2, (double)mesh->v[3 * v] * mesh->v[3 * v] +
                                  (double)mesh->v[3 * v + 1] * mesh->v[3 * v + 1] +
                                  (double)mesh->v[3 * v + 2] * mesh->v[3 * v + 2]);
        return sqrt(r2);
    }
    default:
        return 0.0;
    }
}

/* Whether the scene has MPM bodies (the rigid and tool speeds limit their
 * CFL step only). */
static int has_mpm_body(const firn_scene_def *def)
{
    for (int i = 0; i < def->n_bodies; i++)
        if (def->bodies[i].solver == FIRN_SOLVER_KIND_MPM)
            return 1;
    return 0;
}

/* A kinematic body's keyframes, every one of them: times increasing and at
 * least a substep apart, poses finite, turns below 180 degrees, and each
 * segment's velocities finite in float and, for a body that meets the MPM
 * material (coupled), within what the CFL step can follow. */
static int validate_rigid_keyframes(const ctx *c, const firn_scene_def *def,
                                    const firn_rigid_def *r, const char *base, int coupled)
{
    char p[KEYPATH_MAX], q[KEYPATH_MAX];
    if (r->n_keyframes < 0 || r->n_keyframes > FIRN_MAX_KEYFRAMES)
        return scene_fail(c, scene_join(p, base, "keyframes"),
                          "%d keyframes; at most %d are allowed", r->n_keyframes,
                          FIRN_MAX_KEYFRAMES);
    if (r->n_keyframes == 0)
        return 0;
    if (r->motion != FIRN_RIGID_KINEMATIC)
        return scene_fail(c, scene_join(p, base, "keyframes"),
                          "only a kinematic body follows keyframes (motion is \"%s\")",
                          scene_motion_names[r->motion]);
    for (int k = 0; k < 3; k++)
        if (r->velocity[k] != 0 || r->angular_velocity[k] != 0 || r->rotation[k] != 0)
            return scene_fail(c,
                              scene_join(p, base,
                                         r->velocity[k] != 0           ? "velocity"
                                         : r->angular_velocity[k] != 0 ? "angular_velocity"
                                                                       : "rotation"),
                              "the keyframes give the body's pose and velocities; leave this out");
    /* A segment shorter than a substep is never followed: the body takes
     * its pose at each substep's end and its segment's velocity at the
     * substep's middle, so it would jump across the segment carrying
     * another segment's velocity. A CFL substep is at least frame_dt /
     * KEYFRAME_MAX_SUBSTEPS; a fixed one is frame_dt / ceil(frame_dt / dt). */
    const double min_gap = def->dt > 0.0f
                               ? (double)def->frame_dt / ceil((double)def->frame_dt / def->dt)
                               : (double)def->frame_dt / KEYFRAME_MAX_SUBSTEPS;
    for (int f = 0; f < r->n_keyframes; f++) {
        const firn_keyframe_def *kf = &r->keyframes[f];
        char kp[KEYPATH_MAX];
        scene_join_index(kp, scene_join(q, base, "keyframes"), f);
        if (scene_need(c, scene_join(p, kp, "t"), kf->t, kf->t >= 0, "must be >= 0"))
            return -1;
        if (f > 0 && !(kf->t > r->keyframes[f - 1].t))
            return scene_fail(c, scene_join(p, kp, "t"),
                              "%g: must be after the previous keyframe's %g", kf->t,
                              r->keyframes[f - 1].t);
        if (f > 0 && !((double)kf->t - r->keyframes[f - 1].t >= min_gap))
            return scene_fail(
                c, scene_join(p, kp, "t"),
                "%g: only %.3g s after the previous keyframe's %g, less than a substep "
                "(%.3g s, %s): the body would jump to this pose within one substep",
                kf->t, (double)kf->t - r->keyframes[f - 1].t, r->keyframes[f - 1].t, min_gap,
                def->dt > 0.0f ? "the fixed time.dt"
                               : "time.frame_dt / 100000, the shortest CFL substep");
        for (int k = 0; k < 3; k++) {
            char vp[KEYPATH_MAX];
            if (scene_need(c, scene_join_index(vp, scene_join(p, kp, "position"), k),
                           kf->position[k], 1, "") ||
                scene_need(c, scene_join_index(vp, scene_join(p, kp, "rotation"), k),
                           kf->rotation[k], 1, ""))
                return -1;
            /* Slerp takes the shortest arc: a larger turn about an axis
             * would run the other way round. */
            const double turn =
                f > 0 ? fabs((double)kf->rotation[k] - r->keyframes[f - 1].rotation[k]) : 0.0;
            if (!(turn < 180.0))
                return scene_fail(
                    c, scene_join_index(vp, scene_join(p, kp, "rotation"), k),
                    "%g: turns %g degrees about %c from the previous keyframe's %g; a turn "
                    "of 180 degrees or more between two keyframes needs a keyframe in "
                    "between (the pose turns along the shortest arc)",
                    kf->rotation[k], turn, scene_axis_names[k], r->keyframes[f - 1].rotation[k]);
        }
    }
    /* The segments as the solver follows them (firn_key_velocity). */
    firn_rigid b;
    memset(&b, 0, sizeof b);
    firn_rigid_init_keyframes(&b, r);
    const double reach = rigid_reach(&r->shape);
    const int cfl_bound = coupled && def->dt <= 0.0f && has_mpm_body(def);
    for (int f = 1; f < r->n_keyframes; f++) {
        char kp[KEYPATH_MAX];
        scene_join_index(kp, scene_join(q, base, "keyframes"), f);
        const float *rv = b.key[f - 1].rv;
        const double angle =
            sqrt((double)rv[0] * rv[0] + (double)rv[1] * rv[1] + (double)rv[2] * rv[2]) * 180.0 /
            M_PI;
        if (!(angle < KEYFRAME_MAX_TURN_DEG))
            return scene_fail(
                c, scene_join(p, kp, "rotation"),
                "turns the body %.6g degrees from the previous keyframe; a turn of 180 "
                "degrees or more (or within %g of it) between two keyframes needs a "
                "keyframe in between (the pose turns along the shortest arc)",
                angle, 180.0 - KEYFRAME_MAX_TURN_DEG);
        float v[3], w[3];
        firn_key_velocity(&b, 0.5 * ((double)b.key[f - 1].t + b.key[f].t), v, w);
        const double speed = sqrt((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
        const double omega = sqrt((double)w[0] * w[0] + (double)w[1] * w[1] + (double)w[2] * w[2]);
        if (!isfinite(v[0] + v[1] + v[2] + w[0] + w[1] + w[2]))
            return scene_fail(
                c, kp,
                "the segment from keyframes[%d] gives the body a velocity of (%g, %g, %g) "
                "m/s and an angular velocity of (%g, %g, %g) rad/s, not finite in 32-bit "
                "floats: the poses are too far apart for the time between them",
                f - 1, v[0], v[1], v[2], w[0], w[1], w[2]);
        const double surface = speed + omega * reach;
        const double substeps = surface * def->frame_dt / ((double)def->cfl * def->dx);
        if (cfl_bound && !(substeps <= KEYFRAME_MAX_SUBSTEPS))
            return scene_fail(
                c, kp,
                "the segment from keyframes[%d] moves the body's surface at %.4g m/s "
                "(%.4g m/s and %.4g rad/s at %.3g m from its centre), which takes %.3g "
                "CFL substeps (time.cfl x dx / speed) per %g s frame, more than %d: "
                "space the keyframes further apart or bring their poses closer",
                f - 1, surface, speed, omega, reach, substeps, def->frame_dt,
                KEYFRAME_MAX_SUBSTEPS);
    }
    return 0;
}

static const char *rigid_name(const firn_scene_def *def, int i) { return def->rigids[i].name; }

static const char *tool_name(const firn_scene_def *def, int i) { return def->tools[i].name; }

/* The name of rigids[i] or tools[i] (name_of(def, i), what: "rigid" or
 * "tool") at base: terminated, no control character, not that of an
 * earlier one; empty only where not required. */
static int validate_name(const ctx *c, const firn_scene_def *def, const char *base, int i,
                         const char *(*name_of)(const firn_scene_def *, int), int required,
                         const char *what)
{
    const char *name = name_of(def, i);
    char p[KEYPATH_MAX];
    scene_join(p, base, "name");
    if (!memchr(name, '\0', FIRN_NAME_MAX))
        return scene_fail(c, p, "not NUL-terminated");
    if (required && !name[0])
        return scene_fail(c, p, "empty: a %s is found by its name", what);
    if (scene_has_control_char(name))
        return scene_fail(c, p, "has a control character");
    for (int j = 0; j < i; j++)
        if (name[0] && !strcmp(name, name_of(def, j)))
            return scene_fail(c, p, "\"%s\": duplicate %s name", name, what);
    return 0;
}

/* A rigid's or a tool's pose and velocities at base (its shape at sp): finite. */
static int validate_pose(const ctx *c, const char *base, const char *sp, const float center[3],
                         const float rotation[3], const float velocity[3],
                         const float angular_velocity[3])
{
    char p[KEYPATH_MAX], q[KEYPATH_MAX];
    for (int k = 0; k < 3; k++)
        if (scene_need(c, scene_join_index(q, scene_join(p, sp, "center"), k), center[k], 1, "") ||
            scene_need(c, scene_join_index(q, scene_join(p, base, "rotation"), k), rotation[k], 1,
                       "") ||
            scene_need(c, scene_join_index(q, scene_join(p, base, "velocity"), k), velocity[k], 1,
                       "") ||
            scene_need(c, scene_join_index(q, scene_join(p, base, "angular_velocity"), k),
                       angular_velocity[k], 1, ""))
            return -1;
    return 0;
}

/* A rigid's or a tool's contact with the material: friction and softness. */
static int validate_contact(const ctx *c, const char *base, float friction, float softness)
{
    char p[KEYPATH_MAX];
    return scene_need(c, scene_join(p, base, "friction"), friction, friction >= 0,
                      "must be >= 0") ||
                   scene_need(c, scene_join(p, base, "softness"), softness, softness >= 0,
                              "must be >= 0")
               ? -1
               : 0;
}

/* Density and mass (positive for a dynamic body), a static body at rest,
 * friction, softness and restitution. */
static int validate_rigid_mass_motion(const ctx *c, const firn_rigid_def *r, const char *base)
{
    const firn_rigid_shape_def *s = &r->shape;
    char p[KEYPATH_MAX];
    if (r->motion == FIRN_RIGID_DYNAMIC) {
        if (scene_need(c, scene_join(p, base, "density"), r->density, r->density > 0,
                       "must be > 0: a dynamic body needs a positive mass"))
            return -1;
        float mass, inertia[3];
        firn_rigid_mass_properties(r, &mass, inertia);
        if (!(mass > 0.0f) || !isfinite(mass) || !(inertia[0] > 0.0f) || !(inertia[1] > 0.0f) ||
            !(inertia[2] > 0.0f) || !isfinite(inertia[0] + inertia[1] + inertia[2]))
            return scene_fail(
                c, scene_join(p, base, "density"),
                "%g gives a dynamic %s a mass of %g kg (inertia %g, %g, %g kg m^2); both "
                "must be positive and finite in 32-bit floats: change the density or "
                "the shape's size",
                r->density, scene_rigid_shape_names[s->type], mass, inertia[0], inertia[1],
                inertia[2]);
    } else if (scene_need(c, scene_join(p, base, "density"), r->density, r->density >= 0,
                          "must be >= 0")) {
        return -1;
    }
    if (r->motion == FIRN_RIGID_STATIC)
        for (int k = 0; k < 3; k++)
            if (r->velocity[k] != 0 || r->angular_velocity[k] != 0)
                return scene_fail(
                    c, scene_join(p, base, r->velocity[k] != 0 ? "velocity" : "angular_velocity"),
                    "a static body does not move; use motion \"kinematic\" to "
                    "prescribe its velocity");
    if (validate_contact(c, base, r->friction, r->softness) ||
        scene_need(c, scene_join(p, base, "restitution"), r->restitution,
                   r->restitution >= 0 && r->restitution <= 1, "must be in [0, 1]"))
        return -1;
    return 0;
}

static int validate_rigid(const ctx *c, const firn_scene_def *def, int i)
{
    const firn_rigid_def *r = &def->rigids[i];
    char base[KEYPATH_MAX], sp[KEYPATH_MAX], p[KEYPATH_MAX];

    scene_join_index(base, "rigids", i);
    scene_join(sp, base, "shape");
    if (validate_name(c, def, base, i, rigid_name, 0, "rigid"))
        return -1;
    if ((int)r->motion < 0 || (int)r->motion > FIRN_RIGID_DYNAMIC)
        return scene_fail(c, scene_join(p, base, "motion"), "unknown motion %d", (int)r->motion);
    if (validate_pose(c, base, sp, r->shape.center, r->rotation, r->velocity, r->angular_velocity))
        return -1;
    int e = validate_rigid_shape(c, r, base, sp);
    if (e)
        return e;
    if (validate_rigid_keyframes(c, def, r, base, r->couple && def->coupling.rigid_mpm) ||
        validate_rigid_mass_motion(c, r, base))
        return -1;
    return 0;
}

/* tools[i]: a name, a shape as a rigid's (not a plane), a finite pose and
 * velocities, keyframes as a kinematic rigid's, friction and softness. */
static int validate_tool(const ctx *c, const firn_scene_def *def, int i)
{
    const firn_tool_def *t = &def->tools[i];
    char base[KEYPATH_MAX], sp[KEYPATH_MAX], p[KEYPATH_MAX];
    scene_join_index(base, "tools", i);
    scene_join(sp, base, "shape");
    if (validate_name(c, def, base, i, tool_name, 1, "tool") ||
        validate_pose(c, base, sp, t->shape.center, t->rotation, t->velocity, t->angular_velocity))
        return -1;
    if (t->shape.type == FIRN_RSHAPE_PLANE)
        return scene_fail(
            c, scene_join(p, sp, "type"),
            "a tool is a bounded body (box, sphere, capsule, cylinder or mesh), not a "
            "plane");
    /* The rigid checks of shape and keyframes, on the tool as a kinematic rigid. */
    firn_rigid_def r;
    firn_tool_as_rigid(t, &r);
    int e = validate_rigid_shape(c, &r, base, sp);
    if (e)
        return e;
    if (validate_rigid_keyframes(c, def, &r, base, t->collision && def->coupling.tool_mpm) ||
        validate_contact(c, base, t->friction, t->softness))
        return -1;
    if (t->collision != 0 && t->collision != 1)
        return scene_fail(c, scene_join(p, base, "collision"), "%d: must be 0 or 1", t->collision);
    return 0;
}

int scene_validate_rigids(const ctx *c, const firn_scene_def *def)
{
    if (def->n_rigids < 0 || def->n_rigids > FIRN_MAX_RIGIDS)
        return scene_fail(c, "rigids", "%d rigid bodies; at most %d are allowed", def->n_rigids,
                          FIRN_MAX_RIGIDS);
    for (int i = 0; i < def->n_rigids; i++) {
        int rc = validate_rigid(c, def, i);
        if (rc)
            return rc; /* -1, or FIRN_E_IO for an unreadable mesh */
    }
    return 0;
}

int scene_validate_tools(const ctx *c, const firn_scene_def *def)
{
    if (def->n_tools < 0 || def->n_tools > FIRN_MAX_TOOLS)
        return scene_fail(c, "tools", "%d tools; at most %d are allowed", def->n_tools,
                          FIRN_MAX_TOOLS);
    for (int i = 0; i < def->n_tools; i++) {
        int rc = validate_tool(c, def, i);
        if (rc)
            return rc; /* -1, or FIRN_E_IO for an unreadable mesh */
    }
    return 0;
}
