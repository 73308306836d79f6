/* scene_internal.h - the scene reader's parts, not firn's API: the strict
 * JSON keys, the name tables and the shapes' mesh files
 * (host/scene_json.c), the root, the domain, time and output and the
 * bodies (host/scene.c), and a section reader with its checks per solver
 * (host/scene_material.c, scene_sph.c, scene_pbd.c, scene_fem.c,
 * scene_rigid.c, scene_coupling.c). Calls go from scene.c to the solvers'
 * files (scene_material.c to the SPH, PBD and FEM material checks) and
 * from all of them to scene_json.c, never back. Every reader and check
 * returns 0, or -1 with the message set (some checks that load a mesh
 * file: the loader's code instead, FIRN_E_IO for an unreadable file). */
#ifndef FIRN_SCENE_INTERNAL_H
#define FIRN_SCENE_INTERNAL_H

#include <cJSON.h>

#include "firn.h"
#include "mesh.h"

#define KEYPATH_MAX 256

#define FIRN_MODEL_IS_FEM(m)                                                                       \
    ((m) == FIRN_MODEL_FEM_LINEAR || (m) == FIRN_MODEL_FEM_COROTATED ||                            \
     (m) == FIRN_MODEL_FEM_STABLE_NEOHOOKEAN)
/* Most cells along an FEM box's side, and across an FEM ball. */
#define FEM_MAX_CELLS        1024
#define FEM_MAX_SPHERE_CELLS 400 /* firn_tet_mesh_sphere's limit */
/* Most vertices along a cloth_rect's side. */
#define CLOTH_MAX_RESOLUTION 4096

/* ---- name tables (host/scene_json.c): the format's enumerations ----------- */

extern const char *const scene_face_names[6];
extern const char *const scene_model_names[FIRN_MODEL_COUNT];
extern const char *const scene_solver_names[FIRN_SOLVER_KIND_COUNT];
extern const char *const scene_pressure_names[2];
extern const char *const scene_wall_names[3];
extern const char *const scene_shape_names[FIRN_SHAPE_COUNT];
extern const char *const scene_law_names[2];
extern const char *const scene_cone_fit_names[FIRN_CONE_FIT_COUNT];
extern const char *const scene_rheology_names[FIRN_RHEOLOGY_COUNT];
extern const char *const scene_rigid_shape_names[FIRN_RSHAPE_COUNT];
extern const char *const scene_motion_names[3];
extern const char scene_axis_names[3];

/* ---- messages and key paths (host/scene_json.c) --------------------------- */

/* Where messages go and which file they name ("" for a def built in code). */
typedef struct {
    const char *file;
    firn_error *err;
} ctx;

/* Sets FIRN_E_SCENE with "<file>: <path>: <problem>", leaving out empty
 * parts. Returns -1 so that callers can `return scene_fail(...)`. */
int scene_fail(const ctx *c, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Fails with "<path> = <x>: <rule>" unless x is finite and ok holds. */
int scene_need(const ctx *c, const char *path, double x, int ok, const char *rule);
/* Key path builders into out (KEYPATH_MAX): parent.key and parent[i]. */
const char *scene_join(char *out, const char *parent, const char *key);
const char *scene_join_index(char *out, const char *parent, int i);
/* Names go into messages and the statistics as they are. */
int scene_has_control_char(const char *s);
/* materials.<name>, or materials[i] for a material without a usable name. */
const char *scene_material_path(char *out, const firn_scene_def *def, int i);

/* ---- JSON keys (host/scene_json.c) ---------------------------------------- */

const char *scene_json_type(const cJSON *j);
const cJSON *scene_get(const cJSON *obj, const char *key);
/* Fails on a key of obj that is not in allowed (NULL-terminated) or that
 * appears twice; what qualifies "unknown key" (e.g. "for a sphere"). */
int scene_check_keys(const ctx *c, const cJSON *obj, const char *path, const char *const *allowed,
                     const char *what);
int scene_need_object(const ctx *c, const cJSON *j, const char *path);
int scene_item_float(const ctx *c, const cJSON *j, const char *path, float *out);
/* Integer in [lo, hi]; JSON numbers are doubles, so exact up to 2^53. */
int scene_item_integer(const ctx *c, const cJSON *j, const char *path, double lo, double hi,
                       double *out);
int scene_item_vec3(const ctx *c, const cJSON *j, const char *path, float out[3]);
/* The key of obj (at parent.key) when present; absent leaves out unchanged. */
int scene_get_float(const ctx *c, const cJSON *obj, const char *parent, const char *key,
                    float *out);
int scene_get_int(const ctx *c, const cJSON *obj, const char *parent, const char *key, int lo,
                  int hi, int *out);
int scene_get_bool(const ctx *c, const cJSON *obj, const char *parent, const char *key, int *out);
int scene_get_string(const ctx *c, const cJSON *obj, const char *parent, const char *key,
                     int required, const char **out);
int scene_get_vec3(const ctx *c, const cJSON *obj, const char *parent, const char *key,
                   float out[3]);
int scene_get_array(const ctx *c, const cJSON *obj, const char *parent, const char *key, int n,
                    float *fout, int *iout, double lo, double hi);
/* Index of s in names[n], or fails listing the choices. */
int scene_pick(const ctx *c, const char *path, const char *s, const char *const *names, int n,
               int *out);
/* An array section (bodies, rigids, tools) of at most max items. */
int scene_parse_list(const ctx *c, const cJSON *j, const char *key, const char *what, int max,
                     int *n, firn_scene_def *def,
                     int (*item)(const ctx *, const cJSON *, const char *, int, firn_scene_def *));
/* A mesh's "file": a relative path is taken from the scene file's folder. */
int scene_get_mesh_file(const ctx *c, const cJSON *j, const char *path, char out[FIRN_PATH_MAX]);

/* The mesh file of a body's or a rigid's shape (its key path sp), loaded. */
int scene_load_mesh(const ctx *c, const char *file, float scale, const char *sp,
                    const firn_mesh **mesh);

/* ---- sections and checks per solver --------------------------------------- */

/* host/scene_material.c: "materials"; every material (the MPM models'). */
int scene_parse_materials(const ctx *c, const cJSON *j, firn_scene_def *def);
int scene_validate_materials(const ctx *c, const firn_scene_def *def);

/* host/scene_sph.c: "sph"; an sph_liquid material at base; SPH body i of
 * the given extent about its centre and volume (*particles: its count). */
int scene_parse_sph(const ctx *c, const cJSON *j, firn_scene_def *def);
int scene_validate_sph(const ctx *c, const firn_scene_def *def);
int scene_validate_sph_material(const ctx *c, const firn_material_def *m, const char *base);
int scene_validate_sph_body(const ctx *c, const firn_scene_def *def, int i, const double lo_off[3],
                            const double hi_off[3], double volume, double *particles);

/* host/scene_pbd.c: "pbd"; a PBD material at base; pbd_particle or
 * pbd_liquid body i (as an SPH body); pbd_cloth body i. */
int scene_parse_pbd(const ctx *c, const cJSON *j, firn_scene_def *def);
int scene_validate_pbd(const ctx *c, const firn_scene_def *def);
int scene_validate_pbd_material(const ctx *c, const firn_material_def *m, const char *base);
int scene_validate_pbd_particle_body(const ctx *c, const firn_scene_def *def, int i,
                                     const double lo_off[3], const double hi_off[3], double volume,
                                     double *particles);
int scene_validate_cloth_body(const ctx *c, const firn_scene_def *def, int i);

/* host/scene_fem.c: "fem"; an FEM material at base; FEM body i. */
int scene_parse_fem(const ctx *c, const cJSON *j, firn_scene_def *def);
int scene_validate_fem(const ctx *c, const firn_scene_def *def);
int scene_validate_fem_material(const ctx *c, const firn_material_def *m, const char *base);
int scene_validate_fem_body(const ctx *c, const firn_scene_def *def, int i);

/* host/scene_rigid.c: "rigids" and "tools", and their checks. */
int scene_parse_rigids(const ctx *c, const cJSON *j, firn_scene_def *def);
int scene_parse_tools(const ctx *c, const cJSON *j, firn_scene_def *def);
int scene_validate_rigids(const ctx *c, const firn_scene_def *def);
int scene_validate_tools(const ctx *c, const firn_scene_def *def);

/* host/scene_coupling.c: "coupling". */
int scene_parse_coupling(const ctx *c, const cJSON *j, firn_scene_def *def);
int scene_validate_coupling(const ctx *c, const firn_scene_def *def);

#endif
