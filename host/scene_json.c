/* scene_json.c - the scene reader's strict JSON keys and its name tables
 * (host/scene_internal.h): messages naming the file and the key path, key
 * paths, typed reads of a key that fail on a wrong type, an out-of-range
 * integer or an unknown or repeated key, the names of the format's
 * enumerations, and a shape's mesh file (its path, and loading it). */
#include "error.h"
#include "mesh.h"
#include "scene_internal.h"

#include <cJSON.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- name tables ---------------------------------------------------------- */

const char *const scene_face_names[6] = {"x_lower", "x_upper", "y_lower",
                                         "y_upper", "z_lower", "z_upper"};
const char *const scene_model_names[FIRN_MODEL_COUNT] = {"elastic",
                                                         "liquid",
                                                         "snow",
                                                         "sand",
                                                         "von_mises",
                                                         "fracture",
                                                         "sph_liquid",
                                                         "pbd_cloth",
                                                         "pbd_particle",
                                                         "pbd_liquid",
                                                         "fem_linear",
                                                         "fem_corotated",
                                                         "fem_stable_neohookean"};
const char *const scene_solver_names[FIRN_SOLVER_KIND_COUNT] = {"mpm", "sph", "pbd", "fem"};
const char *const scene_pressure_names[2] = {"wcsph", "dfsph"};
const char *const scene_wall_names[3] = {"separate", "sticky", "slip"};
const char *const scene_shape_names[FIRN_SHAPE_COUNT] = {"box", "sphere", "cylinder", "mesh",
                                                         "cloth_rect"};
const char *const scene_law_names[2] = {"corotated", "neohookean"};
const char *const scene_cone_fit_names[FIRN_CONE_FIT_COUNT] = {"compression", "extension",
                                                               "plane_strain", "inscribed"};
const char *const scene_rheology_names[FIRN_RHEOLOGY_COUNT] = {"cone", "mu_i"};
const char *const scene_rigid_shape_names[FIRN_RSHAPE_COUNT] = {"plane",   "sphere",   "box",
                                                                "capsule", "cylinder", "mesh"};
const char *const scene_motion_names[3] = {"static", "kinematic", "dynamic"};
const char scene_axis_names[3] = {'x', 'y', 'z'};

const char *firn_model_name(firn_model model)
{
    if ((int)model < 0 || model >= FIRN_MODEL_COUNT)
        return "unknown";
    return scene_model_names[model];
}

/* ---- messages and key paths ----------------------------------------------- */

/* Sets FIRN_E_SCENE with "<file>: <path>: <problem>", leaving out empty
 * parts. Returns -1 so that callers can `return scene_fail(...)`. */
int scene_fail(const ctx *c, const char *path, const char *fmt, ...)
{
    char problem[FIRN_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    firn_set_error(c->err, FIRN_E_SCENE, "%s%s%s%s%s", c->file, *c->file ? ": " : "", path,
                   *path ? ": " : "", problem);
    return -1;
}

/* Fails with "<path> = <x>: <rule>" unless x is finite and ok holds. */
int scene_need(const ctx *c, const char *path, double x, int ok, const char *rule)
{
    char p[KEYPATH_MAX + 40];
    if (isfinite(x) && ok)
        return 0;
    snprintf(p, sizeof p, "%s = %g", path, x);
    return scene_fail(c, p, "%s", isfinite(x) ? rule : "must be a finite number");
}

/* Key path builders; an overlong path (a very long unknown key) ends in "...". */
static const char *mark_cut(char *out, int n)
{
    if (n >= KEYPATH_MAX)
        memcpy(out + KEYPATH_MAX - 4, "...", 4);
    return out;
}

const char *scene_join(char *out, const char *parent, const char *key)
{
    return mark_cut(out, snprintf(out, KEYPATH_MAX, "%s%s%s", parent, *parent ? "." : "", key));
}

const char *scene_join_index(char *out, const char *parent, int i)
{
    return mark_cut(out, snprintf(out, KEYPATH_MAX, "%s[%d]", parent, i));
}

/* Names go into messages and the statistics as they are. */
int scene_has_control_char(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

const char *scene_material_path(char *out, const firn_scene_def *def, int i)
{
    const char *name = def->materials[i].name;
    if (memchr(name, '\0', FIRN_NAME_MAX) && name[0] && !scene_has_control_char(name))
        snprintf(out, KEYPATH_MAX, "materials.%s", name);
    else
        snprintf(out, KEYPATH_MAX, "materials[%d]", i);
    return out;
}

/* ---- JSON readers --------------------------------------------------------- */

const char *scene_json_type(const cJSON *j)
{
    if (cJSON_IsBool(j))
        return "boolean";
    if (cJSON_IsNull(j))
        return "null";
    if (cJSON_IsNumber(j))
        return "number";
    if (cJSON_IsString(j))
        return "string";
    if (cJSON_IsArray(j))
        return "array";
    if (cJSON_IsObject(j))
        return "object";
    return "invalid";
}

const cJSON *scene_get(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* Fails on a key of obj that is not in allowed (NULL-terminated) or that
 * appears twice; what qualifies "unknown key" (e.g. "for a sphere"). */
int scene_check_keys(const ctx *c, const cJSON *obj, const char *path, const char *const *allowed,
                     const char *what)
{
    char p[KEYPATH_MAX];
    const cJSON *k;
    cJSON_ArrayForEach(k, obj)
    {
        int known = 0;
        for (int i = 0; allowed[i]; i++)
            known |= !strcmp(k->string, allowed[i]);
        scene_join(p, path, k->string);
        if (!known) {
            char list[512] = "";
            for (int i = 0; allowed[i]; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                         allowed[i]);
            return scene_fail(c, p, "unknown key%s%s (allowed: %s)", what ? " " : "",
                              what ? what : "", list);
        }
        for (const cJSON *e = obj->child; e != k; e = e->next)
            if (!strcmp(e->string, k->string))
                return scene_fail(c, p, "duplicate key");
    }
    return 0;
}

int scene_need_object(const ctx *c, const cJSON *j, const char *path)
{
    return cJSON_IsObject(j)
               ? 0
               : scene_fail(c, path, "expected an object, got %s", scene_json_type(j));
}

int scene_item_float(const ctx *c, const cJSON *j, const char *path, float *out)
{
    if (!cJSON_IsNumber(j))
        return scene_fail(c, path, "expected a number, got %s", scene_json_type(j));
    if (!isfinite(j->valuedouble))
        return scene_fail(c, path, "must be a finite number (this one overflows)");
    if (fabs(j->valuedouble) > FLT_MAX)
        return scene_fail(c, path, "%g is too large for a 32-bit float", j->valuedouble);
    *out = (float)j->valuedouble;
    return 0;
}

/* Integer in [lo, hi]; JSON numbers are doubles, so exact up to 2^53. */
int scene_item_integer(const ctx *c, const cJSON *j, const char *path, double lo, double hi,
                       double *out)
{
    if (!cJSON_IsNumber(j))
        return scene_fail(c, path, "expected an integer, got %s", scene_json_type(j));
    if (!isfinite(j->valuedouble) || j->valuedouble != floor(j->valuedouble))
        return scene_fail(c, path, "expected an integer, got %g", j->valuedouble);
    if (j->valuedouble < lo || j->valuedouble > hi) {
        char p[KEYPATH_MAX + 40];
        snprintf(p, sizeof p, "%s = %g", path, j->valuedouble);
        return scene_fail(c, p, "must be in [%.0f, %.0f]", lo, hi);
    }
    *out = j->valuedouble;
    return 0;
}

int scene_get_float(const ctx *c, const cJSON *obj, const char *parent, const char *key, float *out)
{
    char p[KEYPATH_MAX];
    const cJSON *j = scene_get(obj, key);
    return j ? scene_item_float(c, j, scene_join(p, parent, key), out) : 0;
}

/* An integer key in [lo, hi], the key's own range (so that a message shows
 * it rather than the limits of int). */
int scene_get_int(const ctx *c, const cJSON *obj, const char *parent, const char *key, int lo,
                  int hi, int *out)
{
    char p[KEYPATH_MAX];
    const cJSON *j = scene_get(obj, key);
    double v = 0;
    if (!j)
        return 0;
    if (scene_item_integer(c, j, scene_join(p, parent, key), lo, hi, &v))
        return -1;
    *out = (int)v;
    return 0;
}

int scene_get_bool(const ctx *c, const cJSON *obj, const char *parent, const char *key, int *out)
{
    char p[KEYPATH_MAX];
    const cJSON *j = scene_get(obj, key);
    if (!j)
        return 0;
    if (!cJSON_IsBool(j))
        return scene_fail(c, scene_join(p, parent, key), "expected true or false, got %s",
                          scene_json_type(j));
    *out = cJSON_IsTrue(j);
    return 0;
}

/* A string field; required ones fail when absent. Sets *found. */
int scene_get_string(const ctx *c, const cJSON *obj, const char *parent, const char *key,
                     int required, const char **out)
{
    char p[KEYPATH_MAX];
    const cJSON *j = scene_get(obj, key);
    scene_join(p, parent, key);
    if (!j)
        return required ? scene_fail(c, p, "missing (required)") : 0;
    if (!cJSON_IsString(j))
        return scene_fail(c, p, "expected a string, got %s", scene_json_type(j));
    *out = j->valuestring;
    return 0;
}

/* An array of 3 numbers at path. */
int scene_item_vec3(const ctx *c, const cJSON *j, const char *path, float out[3])
{
    char q[KEYPATH_MAX];
    const cJSON *e;
    float v[3];
    int i = 0;
    if (!cJSON_IsArray(j))
        return scene_fail(c, path, "expected an array of 3 numbers, got %s", scene_json_type(j));
    if (cJSON_GetArraySize(j) != 3)
        return scene_fail(c, path, "expected an array of 3 numbers, got %d element(s)",
                          cJSON_GetArraySize(j));
    cJSON_ArrayForEach(e, j)
    {
        if (scene_item_float(c, e, scene_join_index(q, path, i), &v[i]))
            return -1;
        i++;
    }
    memcpy(out, v, sizeof v);
    return 0;
}

int scene_get_vec3(const ctx *c, const cJSON *obj, const char *parent, const char *key,
                   float out[3])
{
    char p[KEYPATH_MAX];
    const cJSON *j = scene_get(obj, key);
    return j ? scene_item_vec3(c, j, scene_join(p, parent, key), out) : 0;
}

/* A JSON array of n numbers at obj.key (absent: out unchanged); integers
 * in [lo, hi] when ints is set. */
int scene_get_array(const ctx *c, const cJSON *obj, const char *parent, const char *key, int n,
                    float *fout, int *iout, double lo, double hi)
{
    char p[KEYPATH_MAX], q[KEYPATH_MAX];
    const cJSON *j = scene_get(obj, key), *e;
    int i = 0;
    if (!j)
        return 0;
    scene_join(p, parent, key);
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != n)
        return scene_fail(c, p, "expected an array of %d %s, got %s", n,
                          iout ? "integers" : "numbers",
                          cJSON_IsArray(j) ? "another length" : scene_json_type(j));
    cJSON_ArrayForEach(e, j)
    {
        double v;
        if (iout ? scene_item_integer(c, e, scene_join_index(q, p, i), lo, hi, &v)
                 : scene_item_float(c, e, scene_join_index(q, p, i), &fout[i]))
            return -1;
        if (iout)
            iout[i] = (int)v;
        i++;
    }
    return 0;
}

/* Index of s in names[n], or fails listing the choices. */
int scene_pick(const ctx *c, const char *path, const char *s, const char *const *names, int n,
               int *out)
{
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        if (!strcmp(s, names[i])) {
            *out = i;
            return 0;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    }
    return scene_fail(c, path, "\"%s\": unknown value (expected one of %s)", s, list);
}

/* An array section (bodies, rigids, tools) of at most max items (what in
 * the message); item(c, element, path, index, def) reads each, *n counts
 * them. */
int scene_parse_list(const ctx *c, const cJSON *j, const char *key, const char *what, int max,
                     int *n, firn_scene_def *def,
                     int (*item)(const ctx *, const cJSON *, const char *, int, firn_scene_def *))
{
    char p[KEYPATH_MAX];
    const cJSON *e;
    if (!cJSON_IsArray(j))
        return scene_fail(c, key, "expected an array, got %s", scene_json_type(j));
    if (cJSON_GetArraySize(j) > max)
        return scene_fail(c, key, "%d %s; at most %d are allowed", cJSON_GetArraySize(j), what,
                          max);
    cJSON_ArrayForEach(e, j)
    {
        int i = *n;
        if (item(c, e, scene_join_index(p, key, i), i, def))
            return -1;
        (*n)++;
    }
    return 0;
}

/* A mesh's "file" at path into out: a relative path is taken from the
 * scene file's folder. */
int scene_get_mesh_file(const ctx *c, const cJSON *j, const char *path, char out[FIRN_PATH_MAX])
{
    char p[KEYPATH_MAX];
    const char *file = NULL, *slash = strrchr(c->file, '/');
    if (scene_get_string(c, j, path, "file", 1, &file))
        return -1;
    if (!file[0])
        return scene_fail(c, scene_join(p, path, "file"), "must not be empty");
    int dir = file[0] != '/' && slash ? (int)(slash - c->file) + 1 : 0;
    if (snprintf(out, FIRN_PATH_MAX, "%.*s%s", dir, c->file, file) >= FIRN_PATH_MAX)
        return scene_fail(c, scene_join(p, path, "file"), "path longer than %d characters",
                          FIRN_PATH_MAX - 1);
    return 0;
}

/* The mesh file of a body's or a rigid's shape (its key path sp): checked,
 * loaded (cached) into *mesh. 0, -1, or the loader's code (FIRN_E_IO for
 * an unreadable file). */
int scene_load_mesh(const ctx *c, const char *file, float scale, const char *sp,
                    const firn_mesh **mesh)
{
    char p[KEYPATH_MAX];
    firn_error e;
    if (!memchr(file, '\0', FIRN_PATH_MAX))
        return scene_fail(c, scene_join(p, sp, "file"), "not NUL-terminated");
    if (!file[0])
        return scene_fail(c, scene_join(p, sp, "file"), "missing (a mesh needs an OBJ file)");
    if (scene_need(c, scene_join(p, sp, "scale"), scale, scale > 0, "must be > 0"))
        return -1;
    if (firn_mesh_get(file, scale, 0, mesh, &e)) {
        scene_fail(c, scene_join(p, sp, "file"), "%s", e.msg);
        if (c->err)
            c->err->code = e.code; /* an unreadable file is an I/O error */
        return e.code;
    }
    return 0;
}
