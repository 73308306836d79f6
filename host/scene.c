/* scene.c - scene definitions: defaults, the JSON loader and validation.
 *
 * The JSON format is documented in docs/SCENES.md. The loader is strict: an
 * unknown key, a wrong type or an out-of-range value is an error naming the
 * file and the key path (e.g. `scenes/x.json: materials.sand.nu = 0.6: must
 * be in [0, 0.5)`), never a silent default. Parsing fills a private copy, so
 * the caller's definition is only written on success. */
#include "error.h"
#include "mesh.h"
#include "fem.h"
#include "tet_mesh.h"
#include "pbd.h"
#include "rigid.h"
#include "scene_def.h"
#include "sph.h"
#include "world.h"

#include <cJSON.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYPATH_MAX 256

static const char *const face_names[6] = {"x_lower", "x_upper", "y_lower",
                                          "y_upper", "z_lower", "z_upper"};
static const char *const model_names[FIRN_MODEL_COUNT] = {"elastic",
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
static const char *const solver_names[FIRN_SOLVER_KIND_COUNT] = {"mpm", "sph", "pbd", "fem"};
static const char *const pressure_names[2] = {"wcsph", "dfsph"};
static const char *const wall_names[3] = {"separate", "sticky", "slip"};
static const char *const shape_names[FIRN_SHAPE_COUNT] = {"box", "sphere", "cylinder", "mesh",
                                                          "cloth_rect"};
static const char *const law_names[2] = {"corotated", "neohookean"};
static const char *const cone_fit_names[FIRN_CONE_FIT_COUNT] = {"compression", "extension",
                                                                "plane_strain", "inscribed"};
static const char *const rheology_names[FIRN_RHEOLOGY_COUNT] = {"cone", "mu_i"};
static const char *const rigid_shape_names[FIRN_RSHAPE_COUNT] = {"plane",   "sphere",   "box",
                                                                 "capsule", "cylinder", "mesh"};
static const char *const motion_names[3] = {"static", "kinematic", "dynamic"};
static const char axis_names[3] = {'x', 'y', 'z'};

#define FIRN_MODEL_IS_FEM(m)                                                                       \
    ((m) == FIRN_MODEL_FEM_LINEAR || (m) == FIRN_MODEL_FEM_COROTATED ||                            \
     (m) == FIRN_MODEL_FEM_STABLE_NEOHOOKEAN)
/* Most cells along an FEM box's side, and elements in one body. */
#define FEM_MAX_CELLS        1024
#define FEM_MAX_ELEMENTS     (1 << 26)
#define FEM_MAX_SPHERE_CELLS 400 /* firn_tet_mesh_sphere's limit */
/* sph_liquid surface_tension (cohesion gamma): the cohesion acts as a
 * spring of angular frequency about sqrt(gamma / (0.8 p^3)) between
 * neighbours, integrated explicitly and not in the CFL step. At gamma = 1
 * and p = 0.02 m its period is 16 ms, 19 WCSPH substeps of water; 100
 * times Genesis's default 0.01. */
#define SPH_MAX_SURFACE_TENSION 1.0f
/* pbd_cloth stretch and bending compliance: an edge of compliance alpha
 * stretches by alpha f under a force f, so at 1000 m/N the weight of a
 * gram stretches it by 10 m and it carries no load a cloth has; larger
 * ones reach alpha / dt^2 = inf at short substeps (NaN corrections). The
 * softest shipped bending is 100. */
#define PBD_MAX_COMPLIANCE 1e3f
/* Most vertices along a cloth_rect's side. */
#define CLOTH_MAX_RESOLUTION 4096

/* Where messages go and which file they name ("" for a def built in code). */
typedef struct {
    const char *file;
    firn_error *err;
} ctx;

/* Sets FIRN_E_SCENE with "<file>: <path>: <problem>", leaving out empty
 * parts. Returns -1 so that callers can `return fail(...)`. */
static int fail(const ctx *c, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(const ctx *c, const char *path, const char *fmt, ...)
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
static int need(const ctx *c, const char *path, double x, int ok, const char *rule)
{
    char p[KEYPATH_MAX + 40];
    if (isfinite(x) && ok)
        return 0;
    snprintf(p, sizeof p, "%s = %g", path, x);
    return fail(c, p, "%s", isfinite(x) ? rule : "must be a finite number");
}

/* Key path builders; an overlong path (a very long unknown key) ends in "...". */
static const char *mark_cut(char *out, int n)
{
    if (n >= KEYPATH_MAX)
        memcpy(out + KEYPATH_MAX - 4, "...", 4);
    return out;
}

static const char *join(char *out, const char *parent, const char *key)
{
    return mark_cut(out, snprintf(out, KEYPATH_MAX, "%s%s%s", parent, *parent ? "." : "", key));
}

static const char *join_index(char *out, const char *parent, int i)
{
    return mark_cut(out, snprintf(out, KEYPATH_MAX, "%s[%d]", parent, i));
}

/* ---- defaults ------------------------------------------------------------- */

const char *firn_model_name(firn_model model)
{
    if ((int)model < 0 || model >= FIRN_MODEL_COUNT)
        return "unknown";
    return model_names[model];
}

void firn_material_default(firn_material_def *mat, firn_model model)
{
    memset(mat, 0, sizeof *mat);
    mat->model = model;
    mat->law = FIRN_LAW_COROTATED;
    /* Genesis's defaults, so that its scenes port over unchanged. */
    mat->E = 1e6f;
    mat->nu = 0.2f;
    mat->density = 1000.0f;
    mat->theta_c = 2.5e-2f;
    mat->theta_s = 4.5e-3f;
    mat->hardening = 10.0f;
    mat->friction_angle = 45.0f;
    /* mu(I): Jop, Forterre and Pouliquen 2006's glass beads (friction_angle_2
     * 0: friction_angle plus their 11.86 deg, firn_sand_friction_angle_2). */
    mat->inertial_I0 = 0.279f;
    mat->grain_diameter = 5e-4f;
    mat->grain_density = 2450.0f;
    mat->yield_stress = 1e4f;
    mat->crit_strain = 0.05f;
    mat->damage_rate = 1000.0f;
    /* Genesis's SPH.Liquid. */
    mat->stiffness = 50000.0f;
    mat->exponent = 7.0f;
    mat->viscosity = 0.005f;
    mat->surface_tension = 0.01f;
    mat->pressure_solver = FIRN_PRESSURE_WCSPH;
    /* Genesis's PBD.Cloth. */
    mat->stretch_compliance = 1e-7f;
    mat->bending_compliance = 1e-5f;
    mat->air_resistance = 1e-3f;
    mat->static_friction = 0.15f;
    mat->kinetic_friction = 0.15f;
    if (model == FIRN_MODEL_PBD_CLOTH)
        mat->density = 4.0f; /* kg/m^2 */
    /* Genesis's PBD.Liquid: no friction. */
    mat->density_relaxation = 0.2f;
    mat->viscosity_relaxation = 0.01f;
    if (model == FIRN_MODEL_PBD_LIQUID)
        mat->static_friction = mat->kinetic_friction = 0.0f;
    if (model == FIRN_MODEL_ELASTIC) {
        mat->E = 3e5f; /* Genesis's Elastic material */
    } else if (model == FIRN_MODEL_SNOW) {
        /* Stomakhin et al. 2013, table of parameters: E0 = 1.4e5 Pa,
         * rho = 400 kg/m^3 (nu = 0.2 as above). */
        mat->E = 1.4e5f;
        mat->density = 400.0f;
    }
}

void firn_body_default(firn_body_def *body)
{
    memset(body, 0, sizeof *body);
    body->material = 0;
    body->shape.type = FIRN_SHAPE_BOX;
    for (int k = 0; k < 3; k++) {
        body->shape.center[k] = 0.5f;
        body->shape.size[k] = 0.1f;
    }
    /* Sphere and cylinder fit the same 0.1 m cube if the type is changed. */
    body->shape.radius = 0.05f;
    body->shape.height = 0.1f;
    body->shape.axis = 1;
    body->shape.scale = 1.0f;
    body->shape.resolution[0] = body->shape.resolution[1] = 2;
    body->particles_per_cell = 8.0f;
    body->seed = 0; /* 0: body index + 1 */
}

/* A rigid's or a tool's shape: every type's fields fit the same 0.1 m
 * body at the unit domain's centre, so that the type may be changed. */
static void rigid_shape_default(firn_rigid_shape_def *s, firn_rigid_shape_type type)
{
    s->type = type;
    for (int k = 0; k < 3; k++) {
        s->center[k] = 0.5f;
        s->size[k] = 0.1f;
    }
    s->radius = 0.05f;
    s->height = 0.1f;
    s->axis = 1;
    s->normal[1] = 1.0f;
    s->scale = 1.0f;
}

void firn_rigid_default(firn_rigid_def *r)
{
    memset(r, 0, sizeof *r);
    rigid_shape_default(&r->shape, FIRN_RSHAPE_SPHERE);
    r->motion = FIRN_RIGID_STATIC;
    /* Genesis's coupling defaults and its Rigid material's density. */
    r->density = 200.0f;
    r->friction = 0.1f;
    r->softness = 0.002f;
    r->restitution = 0.0f;
    r->couple = 1;
}

/* Genesis's Tool material: friction 0, coup_softness 0.01, collision on. */
void firn_tool_default(firn_tool_def *t)
{
    memset(t, 0, sizeof *t);
    rigid_shape_default(&t->shape, FIRN_RSHAPE_BOX);
    t->friction = 0.0f;
    t->softness = 0.01f;
    t->collision = 1;
}

void firn_tool_as_rigid(const firn_tool_def *t, firn_rigid_def *r)
{
    firn_rigid_default(r);
    r->shape = t->shape;
    r->motion = FIRN_RIGID_KINEMATIC;
    memcpy(r->rotation, t->rotation, sizeof r->rotation);
    memcpy(r->velocity, t->velocity, sizeof r->velocity);
    memcpy(r->angular_velocity, t->angular_velocity, sizeof r->angular_velocity);
    r->n_keyframes = t->n_keyframes;
    memcpy(r->keyframes, t->keyframes, sizeof r->keyframes);
}

void firn_scene_default(firn_scene_def *def)
{
    memset(def, 0, sizeof *def);
    for (int k = 0; k < 3; k++) {
        def->lower[k] = 0.0f;
        def->upper[k] = 1.0f;
    }
    def->dx = 1.0f / 64.0f;
    for (int f = 0; f < 6; f++) {
        def->walls[f].type = FIRN_WALL_SEPARATE;
        def->walls[f].friction = 0.0f;
    }
    def->gravity[1] = -9.81f;
    def->frame_dt = 1.0f / 60.0f;
    def->frames = 60;
    def->cfl = 0.4f;
    def->dt = 0.0f;
    def->force_dt = 0;
    /* Unused slots hold defaults too, so code can just bump the counts. */
    for (int i = 0; i < FIRN_MAX_MATERIALS; i++)
        firn_material_default(&def->materials[i], FIRN_MODEL_ELASTIC);
    for (int i = 0; i < FIRN_MAX_BODIES; i++)
        firn_body_default(&def->bodies[i]);
    for (int i = 0; i < FIRN_MAX_RIGIDS; i++)
        firn_rigid_default(&def->rigids[i]);
    def->coupling_rigid_mpm = 1;
    def->coupling_cpic = 0;
    def->coupling_mpm_sph = 1;
    def->coupling_sph_rigid = 1;
    /* Genesis's SPHOptions; the SPH box is the domain unless given. */
    def->sph_particle_size = 0.02f;
    def->sph_divergence_error = 0.1f;
    def->sph_density_error = 0.05f;
    def->sph_divergence_iterations = 100;
    def->sph_density_iterations = 100;
    /* Genesis's PBDOptions; the PBD box is the domain unless given. */
    def->pbd_particle_size = 0.01f;
    def->pbd_stretch_iterations = 4;
    def->pbd_bending_iterations = 1;
    def->pbd_density_iterations = 1;
    def->pbd_viscosity_iterations = 1;
    def->coupling_pbd_rigid = 1;
    def->coupling_mpm_pbd = 1;
    def->coupling_fem_rigid = 1;
    def->coupling_fem_mpm = 1;
    def->coupling_fem_sph = 1;
    for (int i = 0; i < FIRN_MAX_TOOLS; i++)
        firn_tool_default(&def->tools[i]);
    def->coupling_tool_mpm = 1;
    snprintf(def->out_dir, sizeof def->out_dir, "out");
    def->out_every = 1;
    def->write_ply = 1;
    def->write_preview = 1;
    def->gpu_p2g = FIRN_P2G_AUTO;
    def->gpu_grid = FIRN_GRID_AUTO;
    def->gpu_graphs = FIRN_GRAPHS_AUTO;
}

/* ---- validation ----------------------------------------------------------- */

/* Names go into messages and the statistics as they are. */
static int has_control_char(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

static const char *material_path(char *out, const firn_scene_def *def, int i)
{
    const char *name = def->materials[i].name;
    if (memchr(name, '\0', FIRN_NAME_MAX) && name[0] && !has_control_char(name))
        snprintf(out, KEYPATH_MAX, "materials.%s", name);
    else
        snprintf(out, KEYPATH_MAX, "materials[%d]", i);
    return out;
}

static int validate_domain(const ctx *c, const firn_scene_def *def)
{
    char p[KEYPATH_MAX];
    double nodes = 1.0, n[3];

    if (need(c, "domain.dx", def->dx, def->dx > 0, "must be > 0"))
        return -1;
    for (int k = 0; k < 3; k++) {
        if (need(c, join_index(p, "domain.lower", k), def->lower[k], 1, "") ||
            need(c, join_index(p, "domain.upper", k), def->upper[k], 1, ""))
            return -1;
        if (!(def->upper[k] > def->lower[k]))
            return fail(c, join_index(p, "domain.upper", k), "%g must be > domain.lower[%d] = %g",
                        def->upper[k], k, def->lower[k]);
        /* Fewer cells leave no room inside the wall layers. */
        double cells = ((double)def->upper[k] - def->lower[k]) / def->dx;
        if (cells < 4.0)
            return fail(c, "domain.dx",
                        "%g gives only %.3g cells along %c (domain %c in [%g, %g]); "
                        "at least 4 are needed",
                        def->dx, cells, axis_names[k], axis_names[k], def->lower[k], def->upper[k]);
        n[k] = ceil(cells - 1e-4) + 1.0; /* as firn_params_build rounds */
        nodes *= n[k];
    }
    if (nodes > 2147483648.0)
        return fail(c, "domain.dx",
                    "%g gives a grid of %.0f x %.0f x %.0f = %.3g nodes, more than 2^31", def->dx,
                    n[0], n[1], n[2], nodes);

    for (int f = 0; f < 6; f++) {
        const firn_wall_def *w = &def->walls[f];
        char wp[KEYPATH_MAX];
        join(wp, "domain.boundary", face_names[f]);
        if ((int)w->type < 0 || (int)w->type > FIRN_WALL_SLIP)
            return fail(c, wp, "unknown wall type %d", (int)w->type);
        if (need(c, join(p, wp, "friction"), w->friction, w->friction >= 0, "must be >= 0"))
            return -1;
        if (w->friction != 0 && w->type != FIRN_WALL_SEPARATE)
            return fail(c, p, "%g: only separate walls take friction (this one is %s)", w->friction,
                        wall_names[w->type]);
    }
    return 0;
}

static int validate_time_output(const ctx *c, const firn_scene_def *def)
{
    char p[KEYPATH_MAX];
    for (int k = 0; k < 3; k++)
        if (need(c, join_index(p, "gravity", k), def->gravity[k], 1, ""))
            return -1;
    if (need(c, "time.frame_dt", def->frame_dt, def->frame_dt > 0, "must be > 0") ||
        need(c, "time.frames", def->frames, def->frames >= 1, "must be >= 1") ||
        need(c, "time.cfl", def->cfl, def->cfl > 0 && def->cfl <= 1, "must be in (0, 1]") ||
        need(c, "time.dt", def->dt, def->dt >= 0, "must be >= 0 (0: from the CFL condition)"))
        return -1;
    if (def->dt > 0 && (double)def->frame_dt / def->dt > INT_MAX)
        return fail(c, "time.dt", "%g gives more than 2^31 substeps per frame of %g s", def->dt,
                    def->frame_dt);
    if (need(c, "output.every", def->out_every, def->out_every >= 1, "must be >= 1"))
        return -1;
    if (!memchr(def->out_dir, '\0', sizeof def->out_dir))
        return fail(c, "output.dir", "not NUL-terminated");
    if (!def->out_dir[0])
        return fail(c, "output.dir", "must not be empty");
    return 0;
}

static int validate_sph_material(const ctx *c, const firn_material_def *m, const char *base)
{
    char p[KEYPATH_MAX];
    if (need(c, join(p, base, "density"), m->density, m->density > 0, "must be > 0") ||
        need(c, join(p, base, "stiffness"), m->stiffness, m->stiffness > 0, "must be > 0") ||
        need(c, join(p, base, "exponent"), m->exponent, m->exponent >= 1 && m->exponent <= 20,
             "must be in [1, 20]") ||
        need(c, join(p, base, "viscosity"), m->viscosity, m->viscosity >= 0, "must be >= 0") ||
        need(c, join(p, base, "surface_tension"), m->surface_tension,
             m->surface_tension >= 0 && m->surface_tension <= SPH_MAX_SURFACE_TENSION,
             "must be in [0, 1] (docs/SCENES.md: 100 times Genesis's default; the cohesion is "
             "explicit and not in the CFL step)"))
        return -1;
    if ((int)m->pressure_solver < 0 || m->pressure_solver > FIRN_PRESSURE_DFSPH)
        return fail(c, join(p, base, "pressure_solver"), "unknown pressure solver %d",
                    (int)m->pressure_solver);
    return 0;
}

static int validate_pbd_material(const ctx *c, const firn_material_def *m, const char *base)
{
    char p[KEYPATH_MAX];
    return need(c, join(p, base, "density"), m->density, m->density > 0,
                m->model == FIRN_MODEL_PBD_CLOTH ? "must be > 0 (kg/m^2)" : "must be > 0") ||
                   need(c, join(p, base, "stretch_compliance"), m->stretch_compliance,
                        m->stretch_compliance >= 0 && m->stretch_compliance <= PBD_MAX_COMPLIANCE,
                        "must be in [0, 1000] m/N (docs/SCENES.md: softer edges carry no "
                        "load)") ||
                   need(c, join(p, base, "bending_compliance"), m->bending_compliance,
                        m->bending_compliance >= 0 && m->bending_compliance <= PBD_MAX_COMPLIANCE,
                        "must be in [0, 1000] 1/(N m) (docs/SCENES.md: softer bends carry no "
                        "load)") ||
                   need(c, join(p, base, "air_resistance"), m->air_resistance,
                        m->air_resistance >= 0, "must be >= 0") ||
                   need(c, join(p, base, "static_friction"), m->static_friction,
                        m->static_friction >= 0, "must be >= 0") ||
                   need(c, join(p, base, "kinetic_friction"), m->kinetic_friction,
                        m->kinetic_friction >= 0, "must be >= 0") ||
                   need(c, join(p, base, "density_relaxation"), m->density_relaxation,
                        m->density_relaxation > 0 && m->density_relaxation <= 1,
                        "must be in (0, 1]") ||
                   need(c, join(p, base, "viscosity_relaxation"), m->viscosity_relaxation,
                        m->viscosity_relaxation >= 0 && m->viscosity_relaxation <= 1,
                        "must be in [0, 1]")
               ? -1
               : 0;
}

static int validate_material(const ctx *c, const firn_scene_def *def, int i)
{
    const firn_material_def *m = &def->materials[i];
    char base[KEYPATH_MAX], p[KEYPATH_MAX];

    material_path(base, def, i);
    if (!memchr(m->name, '\0', FIRN_NAME_MAX))
        return fail(c, base, "name is not NUL-terminated");
    if (has_control_char(m->name))
        return fail(c, base, "name has a control character");
    for (int j = 0; j < i; j++)
        if (m->name[0] && !strcmp(m->name, def->materials[j].name))
            return fail(c, base, "duplicate material name");
    if ((int)m->model < 0 || m->model >= FIRN_MODEL_COUNT)
        return fail(c, join(p, base, "model"), "unknown model %d", (int)m->model);
    if ((int)m->law < 0 || (int)m->law > FIRN_LAW_NEOHOOKEAN)
        return fail(c, join(p, base, "law"), "unknown law %d", (int)m->law);
    if (m->model == FIRN_MODEL_SPH_LIQUID)
        return validate_sph_material(c, m, base);
    if (m->model == FIRN_MODEL_PBD_CLOTH || m->model == FIRN_MODEL_PBD_PARTICLE ||
        m->model == FIRN_MODEL_PBD_LIQUID)
        return validate_pbd_material(c, m, base);
    if (FIRN_MODEL_IS_FEM(m->model))
        return need(c, join(p, base, "E"), m->E, m->E > 0, "must be > 0") ||
                       need(c, join(p, base, "nu"), m->nu, m->nu > -1 && m->nu < 0.5f,
                            "must be in (-1, 0.5)") ||
                       need(c, join(p, base, "density"), m->density, m->density > 0, "must be > 0")
                   ? -1
                   : 0;
    if (need(c, join(p, base, "E"), m->E, m->E > 0, "must be > 0") ||
        need(c, join(p, base, "nu"), m->nu, m->nu >= 0 && m->nu < 0.5f, "must be in [0, 0.5)") ||
        need(c, join(p, base, "density"), m->density, m->density > 0, "must be > 0"))
        return -1;
    switch (m->model) {
    case FIRN_MODEL_LIQUID:
        /* A liquid's pressure is lambda J (J - 1), and lambda = 0 at nu = 0. */
        if (m->nu == 0)
            return fail(c, join(p, base, "nu"), "0: a liquid needs nu > 0 (no pressure otherwise)");
        break;
    case FIRN_MODEL_SNOW:
        if (need(c, join(p, base, "theta_c"), m->theta_c, m->theta_c > 0 && m->theta_c < 1,
                 "must be in (0, 1)") ||
            need(c, join(p, base, "theta_s"), m->theta_s, m->theta_s >= 0, "must be >= 0") ||
            need(c, join(p, base, "hardening"), m->hardening, m->hardening >= 0, "must be >= 0") ||
            need(c, join(p, base, "max_hardening"), m->max_hardening,
                 m->max_hardening == 0 || m->max_hardening >= 1, "must be 0 (no cap) or >= 1"))
            return -1;
        break;
    case FIRN_MODEL_SAND:
        if (need(c, join(p, base, "friction_angle"), m->friction_angle,
                 m->friction_angle >= 0 && m->friction_angle < 90, "must be in [0, 90) degrees"))
            return -1;
        if ((int)m->cone_fit < 0 || (int)m->cone_fit >= FIRN_CONE_FIT_COUNT)
            return fail(c, join(p, base, "cone_fit"), "unknown cone fit %d", (int)m->cone_fit);
        if ((int)m->rheology < 0 || (int)m->rheology >= FIRN_RHEOLOGY_COUNT)
            return fail(c, join(p, base, "rheology"), "unknown rheology %d", (int)m->rheology);
        if (m->rheology == FIRN_RHEOLOGY_MU_I) {
            const float phi2 = firn_sand_friction_angle_2(m);
            if (!(phi2 > m->friction_angle && phi2 < 90))
                return fail(c, join(p, base, "friction_angle_2"),
                            "%g deg%s: must be above friction_angle (%g) and below 90", phi2,
                            m->friction_angle_2 > 0 ? "" : " (friction_angle + 11.86, the default)",
                            m->friction_angle);
            if (need(c, join(p, base, "I0"), m->inertial_I0, m->inertial_I0 > 0, "must be > 0") ||
                need(c, join(p, base, "grain_diameter"), m->grain_diameter, m->grain_diameter > 0,
                     "must be > 0") ||
                need(c, join(p, base, "grain_density"), m->grain_density, m->grain_density > 0,
                     "must be > 0"))
                return -1;
        }
        break;
    case FIRN_MODEL_VON_MISES:
        if (need(c, join(p, base, "yield_stress"), m->yield_stress, m->yield_stress > 0,
                 "must be > 0"))
            return -1;
        break;
    case FIRN_MODEL_FRACTURE:
        if (need(c, join(p, base, "crit_strain"), m->crit_strain, m->crit_strain > 0,
                 "must be > 0") ||
            need(c, join(p, base, "damage_rate"), m->damage_rate,
                 m->damage_rate > 0 && m->damage_rate <= 1e9,
                 "must be in (0, 1e9] [1/s]: damage per second past crit_strain"))
            return -1;
        break;
    default:
        break;
    }
    return 0;
}

/* An SPH body: a lattice of spacing sph.particle_size inside the SPH box. */
static int validate_sph_body(const ctx *c, const firn_scene_def *def, int i, const double lo_off[3],
                             const double hi_off[3], double volume, double *particles)
{
    const firn_shape_def *s = &def->bodies[i].shape;
    char base[KEYPATH_MAX];
    float lo[3], hi[3];
    join_index(base, "bodies", i);
    firn_sph_box(def, lo, hi);
    *particles = volume / pow(def->sph_particle_size, 3);
    if (*particles < 1.0)
        return fail(c, base,
                    "empty body: a %s of volume %.3g m^3 holds %.3g SPH particles of size "
                    "sph.particle_size = %g m; at least 1 is needed",
                    shape_names[s->type], volume, *particles, def->sph_particle_size);
    for (int k = 0; k < 3; k++) {
        double blo = s->center[k] + lo_off[k], bhi = s->center[k] + hi_off[k];
        double tol = 1e-4 * def->sph_particle_size;
        if (blo < lo[k] - tol || bhi > hi[k] + tol)
            return fail(c, base, "%s spans %c in [%g, %g], outside the SPH box [%g, %g]",
                        shape_names[s->type], axis_names[k], blo, bhi, lo[k], hi[k]);
    }
    return 0;
}

/* Whether [lo + off_lo, hi + off_hi] about center lies in the PBD box; fails naming it. */
static int inside_pbd_box(const ctx *c, const firn_scene_def *def, const char *base,
                          const char *what, const double blo[3], const double bhi[3])
{
    float lo[3], hi[3];
    firn_pbd_box(def, lo, hi);
    for (int k = 0; k < 3; k++) {
        double tol = 1e-4 * def->pbd_particle_size;
        if (blo[k] < lo[k] - tol || bhi[k] > hi[k] + tol)
            return fail(c, base, "%s spans %c in [%g, %g], outside the PBD box [%g, %g]", what,
                        axis_names[k], blo[k], bhi[k], lo[k], hi[k]);
    }
    return 0;
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

/* A PBD particle's mass must be a positive, normal, finite float: its
 * inverse (w = 1 / m) multiplies every correction, and that of a zero or
 * denormal mass is infinite. Fails naming what gave the mass. */
static int check_pbd_mass(const ctx *c, const char *base, float mass, const char *how)
{
    if (mass >= FLT_MIN && isfinite(mass))
        return 0;
    return fail(c, base,
                "its particles would each carry %g kg (%s), %s: a PBD particle needs a mass of "
                "at least %g kg (a normal 32-bit float) and a finite one",
                mass, how,
                mass == 0.0f     ? "zero"
                : isfinite(mass) ? "a denormal float"
                                 : "not finite",
                FLT_MIN);
}

/* A pbd_particle body: a lattice of spacing pbd.particle_size inside the PBD box. */
static int validate_pbd_particle_body(const ctx *c, const firn_scene_def *def, int i,
                                      const double lo_off[3], const double hi_off[3], double volume,
                                      double *particles)
{
    const firn_shape_def *s = &def->bodies[i].shape;
    char base[KEYPATH_MAX];
    double blo[3], bhi[3];
    join_index(base, "bodies", i);
    *particles = volume / pow(def->pbd_particle_size, 3);
    if (*particles < 1.0)
        return fail(c, base,
                    "empty body: a %s of volume %.3g m^3 holds %.3g PBD particles of size "
                    "pbd.particle_size = %g m; at least 1 is needed",
                    shape_names[s->type], volume, *particles, def->pbd_particle_size);
    /* About each particle's mass as host/pbd.c gives it (the shape's
     * volume times density over the particle count: this, within the
     * rounding of the lattice's layers), for the float check below. */
    const firn_material_def *m = &def->materials[def->bodies[i].material];
    const double ps = def->pbd_particle_size;
    char how[160];
    const float mass = (float)(m->density * ps * ps * ps);
    snprintf(how, sizeof how, "density %g kg/m^3 x pbd.particle_size^3, (%g m)^3", m->density, ps);
    if (check_pbd_mass(c, base, mass, how))
        return -1;
    for (int k = 0; k < 3; k++)
        blo[k] = s->center[k] + lo_off[k], bhi[k] = s->center[k] + hi_off[k];
    return inside_pbd_box(c, def, base, shape_names[s->type], blo, bhi);
}

/* A pbd_cloth body: a cloth_rect or an OBJ surface with triangles, its
 * pins, inside the PBD box. Returns 0, or the error code (-1, or the mesh
 * reader's). */
static int validate_cloth_body(const ctx *c, const firn_scene_def *def, int i)
{
    const firn_body_def *b = &def->bodies[i];
    const firn_shape_def *s = &b->shape;
    char base[KEYPATH_MAX], sp[KEYPATH_MAX], p[KEYPATH_MAX], q[KEYPATH_MAX];
    double blo[3], bhi[3], area = 0.0;
    int nv = 0;
    join_index(base, "bodies", i);
    join(sp, base, "shape");
    for (int k = 0; k < 3; k++)
        if (need(c, join_index(q, join(p, base, "velocity"), k), b->velocity[k], 1, "") ||
            need(c, join_index(q, join(p, sp, "center"), k), s->center[k], 1, ""))
            return -1;
    if (s->type == FIRN_SHAPE_CLOTH_RECT) {
        if (s->axis < 0 || s->axis > 2)
            return fail(c, join(p, sp, "normal"), "%d: must be 0 (x), 1 (y) or 2 (z)", s->axis);
        for (int k = 0; k < 2; k++) {
            if (need(c, join_index(q, join(p, sp, "size"), k), s->size[k], s->size[k] > 0,
                     "must be > 0"))
                return -1;
            if (s->resolution[k] < 2 || s->resolution[k] > CLOTH_MAX_RESOLUTION)
                return fail(c, join_index(q, join(p, sp, "resolution"), k),
                            "%d: must be in [2, %d] (vertices along the side)", s->resolution[k],
                            CLOTH_MAX_RESOLUTION);
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
                        return fail(c, base,
                                    "cloth triangle %d (vertices %d %d %d) is degenerate: area "
                                    "%.3g m^2 for a longest edge of %.3g m (shape.size %g x %g "
                                    "at resolution %d x %d is below float precision at this "
                                    "position)",
                                    t, v[0], v[1], v[2], ar, edge, s->size[0], s->size[1],
                                    s->resolution[0], n1);
                    area += ar;
                }
            }
    } else if (s->type == FIRN_SHAPE_MESH) {
        float *v;
        int *tri, nt;
        firn_error e;
        if (!memchr(s->file, '\0', FIRN_PATH_MAX))
            return fail(c, join(p, sp, "file"), "not NUL-terminated");
        if (need(c, join(p, sp, "scale"), s->scale, s->scale > 0, "must be > 0"))
            return -1;
        if (firn_mesh_read_surface(s->file, s->scale, &v, &nv, &tri, &nt, &e)) {
            fail(c, join(p, sp, "file"), "%s", e.msg);
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
            return fail(c, join(p, sp, "file"), "'%s' has no triangles: a cloth needs faces",
                        s->file);
        if (bad >= 0)
            return fail(c, base,
                        "cloth triangle %d (vertices %d %d %d, numbered from 0 in '%s') is "
                        "degenerate: area %.3g m^2 for a longest edge of %.3g m (coincident or "
                        "collinear vertices, or a size below float precision at this position)",
                        bad, bv[0], bv[1], bv[2], s->file, bad_area, bad_edge);
    } else {
        return fail(c, join(p, sp, "type"),
                    "a pbd_cloth body is a cloth_rect or a mesh (an OBJ surface), not a %s",
                    (int)s->type >= 0 && s->type < FIRN_SHAPE_COUNT ? shape_names[s->type] : "?");
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
        return fail(c, join(p, base, "pin.indices"), "%d pins; at most %d are allowed", b->n_pins,
                    FIRN_MAX_PINS);
    for (int k = 0; k < b->n_pins; k++)
        if (b->pins[k] < 0 || b->pins[k] >= nv)
            return fail(c, join_index(q, join(p, base, "pin.indices"), k),
                        "%d: no such vertex (the cloth has %d, numbered from 0)", b->pins[k], nv);
    for (int k = 0; b->pin_box && k < 3; k++) {
        if (need(c, join_index(q, join(p, base, "pin.box.lower"), k), b->pin_lower[k], 1, "") ||
            need(c, join_index(q, join(p, base, "pin.box.upper"), k), b->pin_upper[k], 1, ""))
            return -1;
        if (!(b->pin_upper[k] >= b->pin_lower[k]))
            return fail(c, join_index(q, join(p, base, "pin.box.upper"), k),
                        "%g must be >= lower[%d] = %g", b->pin_upper[k], k, b->pin_lower[k]);
    }
    return inside_pbd_box(c, def, base, shape_names[s->type], blo, bhi);
}

/* The PBD solver's options (pbd.*). */
static int validate_pbd(const ctx *c, const firn_scene_def *def)
{
    float lo[3], hi[3];
    char q[KEYPATH_MAX];
    if (need(c, "pbd.particle_size", def->pbd_particle_size,
             def->pbd_particle_size > 0 && def->pbd_particle_size < 1e3f, "must be > 0") ||
        need(c, "pbd.stretch_iterations", def->pbd_stretch_iterations,
             def->pbd_stretch_iterations >= 1 && def->pbd_stretch_iterations <= 1000,
             "must be in [1, 1000]") ||
        need(c, "pbd.bending_iterations", def->pbd_bending_iterations,
             def->pbd_bending_iterations >= 0 && def->pbd_bending_iterations <= 1000,
             "must be in [0, 1000]") ||
        need(c, "pbd.density_iterations", def->pbd_density_iterations,
             def->pbd_density_iterations >= 0 && def->pbd_density_iterations <= 1000,
             "must be in [0, 1000]") ||
        need(c, "pbd.viscosity_iterations", def->pbd_viscosity_iterations,
             def->pbd_viscosity_iterations >= 0 && def->pbd_viscosity_iterations <= 1000,
             "must be in [0, 1000]"))
        return -1;
    firn_pbd_box(def, lo, hi);
    for (int k = 0; k < 3; k++) {
        if (need(c, join_index(q, "pbd.lower", k), lo[k], 1, "") ||
            need(c, join_index(q, "pbd.upper", k), hi[k], 1, ""))
            return -1;
        if (!(hi[k] > lo[k]))
            return fail(c, join_index(q, "pbd.upper", k), "%g must be > lower[%d] = %g", hi[k], k,
                        lo[k]);
    }
    return 0;
}

/* The SPH solver's options (sph.*). */
static int validate_sph(const ctx *c, const firn_scene_def *def)
{
    float lo[3], hi[3];
    char q[KEYPATH_MAX];
    int solver = -1;
    if (need(c, "sph.particle_size", def->sph_particle_size,
             def->sph_particle_size > 0 && def->sph_particle_size < 1e3f, "must be > 0") ||
        need(c, "sph.max_divergence_error", def->sph_divergence_error,
             def->sph_divergence_error > 0, "must be > 0 (percent)") ||
        need(c, "sph.max_density_error", def->sph_density_error, def->sph_density_error > 0,
             "must be > 0 (percent)") ||
        need(c, "sph.max_divergence_iterations", def->sph_divergence_iterations,
             def->sph_divergence_iterations >= 1 && def->sph_divergence_iterations <= 10000,
             "must be in [1, 10000]") ||
        need(c, "sph.max_density_iterations", def->sph_density_iterations,
             def->sph_density_iterations >= 1 && def->sph_density_iterations <= 10000,
             "must be in [1, 10000]"))
        return -1;
    int bodies = 0;
    for (int i = 0; i < def->n_bodies; i++)
        bodies += def->bodies[i].solver == FIRN_SOLVER_KIND_SPH;
    if (bodies == 0)
        return 0;
    firn_sph_box(def, lo, hi);
    double total = 1.0;
    for (int k = 0; k < 3; k++) {
        if (need(c, join_index(q, "sph.lower", k), lo[k], 1, "") ||
            need(c, join_index(q, "sph.upper", k), hi[k], 1, ""))
            return -1;
        if (!(hi[k] - lo[k] >= 2.0f * def->sph_particle_size))
            return fail(c, join_index(q, "sph.upper", k),
                        "%g: the SPH box must be at least a support radius (2 x particle_size "
                        "= %g m) above lower[%d] = %g",
                        hi[k], 2.0f * def->sph_particle_size, k, lo[k]);
        total *= ceil((hi[k] - lo[k]) / (2.0 * def->sph_particle_size));
    }
    if (total > (double)(1 << 27))
        return fail(c, "sph",
                    "the SPH box holds %.4g neighbour cells (edge 2 x particle_size); at most "
                    "2^27 are allowed: give sph.lower and sph.upper around the liquid's reach",
                    total);
    for (int i = 0; i < def->n_bodies; i++) {
        const firn_material_def *m = &def->materials[def->bodies[i].material];
        if (def->bodies[i].solver != FIRN_SOLVER_KIND_SPH)
            continue;
        if (solver >= 0 && (int)m->pressure_solver != solver)
            return fail(c, material_path(q, def, def->bodies[i].material),
                        "pressure_solver %s differs from another SPH body's %s: one pressure "
                        "solver runs per scene",
                        pressure_names[m->pressure_solver], pressure_names[solver]);
        solver = (int)m->pressure_solver;
    }
    return 0;
}

/* The mesh file of a body's or a rigid's shape (its key path sp): checked,
 * loaded (cached) into *mesh. 0, -1, or the loader's code (FIRN_E_IO for
 * an unreadable file). */
static int load_mesh(const ctx *c, const char *file, float scale, const char *sp,
                     const firn_mesh **mesh)
{
    char p[KEYPATH_MAX];
    firn_error e;
    if (!memchr(file, '\0', FIRN_PATH_MAX))
        return fail(c, join(p, sp, "file"), "not NUL-terminated");
    if (!file[0])
        return fail(c, join(p, sp, "file"), "missing (a mesh needs an OBJ file)");
    if (need(c, join(p, sp, "scale"), scale, scale > 0, "must be > 0"))
        return -1;
    if (firn_mesh_get(file, scale, 0, mesh, &e)) {
        fail(c, join(p, sp, "file"), "%s", e.msg);
        if (c->err)
            c->err->code = e.code; /* an unreadable file is an I/O error */
        return e.code;
    }
    return 0;
}

/* An FEM body: a box of cells[0] x cells[1] x cells[2] cells, a ball of
 * cells[0] cells across, or a tetrahedral mesh file (loaded here), inside
 * the domain; its fixed vertices in range. Returns 0, or the error code
 * (-1, or the mesh loader's). */
static int validate_fem_body(const ctx *c, const firn_scene_def *def, int i)
{
    const firn_body_def *b = &def->bodies[i];
    const firn_shape_def *s = &b->shape;
    char base[KEYPATH_MAX], sp[KEYPATH_MAX], p[KEYPATH_MAX], q[KEYPATH_MAX];
    double lo[3], hi[3], elements = 6.0;
    long long nv = 0;
    join_index(base, "bodies", i);
    join(sp, base, "shape");
    for (int k = 0; k < 3; k++)
        if (need(c, join_index(q, join(p, base, "velocity"), k), b->velocity[k], 1, "") ||
            need(c, join_index(q, join(p, sp, "center"), k), s->center[k], 1, ""))
            return -1;
    if (s->type == FIRN_SHAPE_BOX) {
        for (int k = 0; k < 3; k++) {
            if (need(c, join_index(q, join(p, sp, "size"), k), s->size[k], s->size[k] > 0,
                     "must be > 0"))
                return -1;
            if (s->cells[0] == 0 && s->cells[1] == 0 && s->cells[2] == 0)
                return fail(c, join(p, sp, "cells"),
                            "missing: an FEM box needs its cells along x, y and z, e.g. [8, 8, 8]");
            if (s->cells[k] < 1 || s->cells[k] > FEM_MAX_CELLS)
                return fail(c, join_index(q, join(p, sp, "cells"), k), "%d: must be in [1, %d]",
                            s->cells[k], FEM_MAX_CELLS);
            elements *= s->cells[k];
            lo[k] = (double)s->center[k] - 0.5 * s->size[k];
            hi[k] = (double)s->center[k] + 0.5 * s->size[k];
        }
        nv = (long long)(s->cells[0] + 1) * (s->cells[1] + 1) * (s->cells[2] + 1);
    } else if (s->type == FIRN_SHAPE_SPHERE) {
        if (need(c, join(p, sp, "radius"), s->radius, s->radius > 0, "must be > 0"))
            return -1;
        if (s->cells[0] == 0)
            return fail(c, join(p, sp, "cells"),
                        "missing: an FEM sphere needs its cells across the ball, e.g. 8");
        if (s->cells[0] < 1 || s->cells[0] > FEM_MAX_SPHERE_CELLS)
            return fail(c, join(p, sp, "cells"), "%d: must be in [1, %d]", s->cells[0],
                        FEM_MAX_SPHERE_CELLS);
        elements *= (double)s->cells[0] * s->cells[0] * s->cells[0];
        nv = (long long)(s->cells[0] + 1) * (s->cells[0] + 1) * (s->cells[0] + 1);
        for (int k = 0; k < 3; k++)
            lo[k] = (double)s->center[k] - s->radius, hi[k] = (double)s->center[k] + s->radius;
    } else if (s->type == FIRN_SHAPE_MESH) {
        firn_tet_mesh m;
        firn_error e;
        if (!memchr(s->file, '\0', FIRN_PATH_MAX))
            return fail(c, join(p, sp, "file"), "not NUL-terminated");
        if (!s->file[0])
            return fail(c, join(p, sp, "file"),
                        "missing (an FEM mesh needs a .node/.ele or .msh file)");
        if (need(c, join(p, sp, "scale"), s->scale, s->scale > 0, "must be > 0"))
            return -1;
        if (firn_tet_mesh_load(s->file, s->scale, &m, &e)) {
            fail(c, join(p, sp, "file"), "%s", e.msg);
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
        return fail(c, join(p, sp, "type"),
                    "an FEM body is a box, a sphere or a mesh (a .node/.ele or .msh file), not "
                    "a %s",
                    (int)s->type >= 0 && s->type < FIRN_SHAPE_COUNT ? shape_names[s->type] : "?");
    }
    if (s->type != FIRN_SHAPE_BOX && (s->cells[1] != 0 || s->cells[2] != 0))
        return fail(c, join(p, sp, "cells"), "applies only to an FEM box or sphere");
    if (elements > FEM_MAX_ELEMENTS)
        return fail(c, join(p, sp, s->type == FIRN_SHAPE_MESH ? "file" : "cells"),
                    "%.4g tetrahedra; at most %d", elements, FEM_MAX_ELEMENTS);
    for (int k = 0; k < 3; k++) {
        const double tol = 1e-6 * (hi[k] - lo[k]);
        if (lo[k] < def->lower[k] - tol || hi[k] > def->upper[k] + tol)
            return fail(c, base,
                        "%s (material %s) spans %c in [%g, %g], outside the domain [%g, %g]",
                        shape_names[s->type], def->materials[b->material].name, axis_names[k],
                        lo[k], hi[k], def->lower[k], def->upper[k]);
    }
    if (b->n_pins < 0 || b->n_pins > FIRN_MAX_PINS)
        return fail(c, join(p, base, "fixed.indices"), "%d indices; at most %d are allowed",
                    b->n_pins, FIRN_MAX_PINS);
    for (int k = 0; k < b->n_pins; k++)
        if (b->pins[k] < 0 || b->pins[k] >= nv)
            return fail(c, join_index(q, join(p, base, "fixed.indices"), k),
                        "%d: no such vertex (the body has %lld, numbered from 0)", b->pins[k], nv);
    for (int k = 0; b->pin_box && k < 3; k++) {
        if (need(c, join_index(q, join(p, base, "fixed.box.lower"), k), b->pin_lower[k], 1, "") ||
            need(c, join_index(q, join(p, base, "fixed.box.upper"), k), b->pin_upper[k], 1, ""))
            return -1;
        if (!(b->pin_upper[k] >= b->pin_lower[k]))
            return fail(c, join_index(q, join(p, base, "fixed.box.upper"), k),
                        "%g must be >= lower[%d] = %g", b->pin_upper[k], k, b->pin_lower[k]);
    }
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

    join_index(base, "bodies", i);
    join(sp, base, "shape");
    if (b->material < 0 || b->material >= def->n_materials)
        return fail(c, join(p, base, "material"), "%d: no such material (the scene has %d)",
                    b->material, def->n_materials);
    if ((int)b->solver < 0 || b->solver >= FIRN_SOLVER_KIND_COUNT)
        return fail(c, join(p, base, "solver"), "unknown solver %d", (int)b->solver);
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
        snprintf(hint, sizeof hint, "give the body \"solver\": \"%s\"", solver_names[want]);
        return fail(c, join(p, base, "material"),
                    "\"%s\" is a %s material, which the %s solver does not simulate (%s)",
                    def->materials[b->material].name, model_names[model], solver_names[b->solver],
                    want != FIRN_SOLVER_KIND_MPM ? hint : needs[b->solver]);
    }
    if (b->solver == FIRN_SOLVER_KIND_PBD && model == FIRN_MODEL_PBD_CLOTH)
        return validate_cloth_body(c, def, i);
    if (b->solver == FIRN_SOLVER_KIND_FEM)
        return validate_fem_body(c, def, i);
    for (int k = 0; k < 3; k++)
        if (s->cells[k] != 0)
            return fail(c, join(p, sp, "cells"), "applies only to an FEM body");
    if (b->n_pins != 0 || b->pin_box)
        return fail(c, join(p, base, "pin"), "only a pbd_cloth body has pins");
    if (s->type == FIRN_SHAPE_CLOTH_RECT)
        return fail(c, join(p, sp, "type"), "cloth_rect is the shape of a pbd_cloth body");
    if (need(c, join(p, base, "particles_per_cell"), b->particles_per_cell,
             b->particles_per_cell > 0 && b->particles_per_cell <= 64, "must be in (0, 64]"))
        return -1;
    for (int k = 0; k < 3; k++)
        if (need(c, join_index(q, join(p, base, "velocity"), k), b->velocity[k], 1, "") ||
            need(c, join_index(q, join(p, sp, "center"), k), s->center[k], 1, ""))
            return -1;

    switch (s->type) {
    case FIRN_SHAPE_BOX:
        for (int k = 0; k < 3; k++) {
            if (need(c, join_index(q, join(p, sp, "size"), k), s->size[k], s->size[k] > 0,
                     "must be > 0"))
                return -1;
            half[k] = 0.5 * s->size[k];
        }
        volume = (double)s->size[0] * s->size[1] * s->size[2];
        break;
    case FIRN_SHAPE_SPHERE:
        if (need(c, join(p, sp, "radius"), s->radius, s->radius > 0, "must be > 0"))
            return -1;
        half[0] = half[1] = half[2] = s->radius;
        volume = 4.0 / 3.0 * M_PI * pow(s->radius, 3);
        break;
    case FIRN_SHAPE_CYLINDER:
        if (need(c, join(p, sp, "radius"), s->radius, s->radius > 0, "must be > 0") ||
            need(c, join(p, sp, "height"), s->height, s->height > 0, "must be > 0"))
            return -1;
        if (s->axis < 0 || s->axis > 2)
            return fail(c, join(p, sp, "axis"), "%d: must be 0 (x), 1 (y) or 2 (z)", s->axis);
        half[0] = half[1] = half[2] = s->radius;
        half[s->axis] = 0.5 * s->height;
        volume = M_PI * (double)s->radius * s->radius * s->height;
        break;
    case FIRN_SHAPE_MESH: {
        const firn_mesh *mesh;
        int rc = load_mesh(c, s->file, s->scale, sp, &mesh);
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
        return fail(c, join(p, sp, "type"), "unknown shape type %d", (int)s->type);
    }
    if (s->type != FIRN_SHAPE_MESH)
        for (int k = 0; k < 3; k++)
            lo_off[k] = -half[k], hi_off[k] = half[k];
    if (b->solver == FIRN_SOLVER_KIND_SPH)
        return validate_sph_body(c, def, i, lo_off, hi_off, volume, particles);
    if (b->solver == FIRN_SOLVER_KIND_PBD)
        return validate_pbd_particle_body(c, def, i, lo_off, hi_off, volume, particles);

    *particles = volume * b->particles_per_cell / pow(def->dx, 3);
    if (*particles < 1.0)
        return fail(c, base,
                    "empty body: a %s of volume %.3g m^3 holds %.3g particles at "
                    "particles_per_cell %g and dx %g; at least 1 is needed",
                    shape_names[s->type], volume, *particles, b->particles_per_cell, def->dx);

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
            return fail(c, base,
                        "%s (material %s) spans %c in [%g, %g], outside the allowed [%g, %g] "
                        "(domain %c in [%g, %g] less 2 dx at each wall)",
                        shape_names[s->type], def->materials[b->material].name, axis_names[k], blo,
                        bhi, lo, hi, axis_names[k], def->lower[k], def->upper[k]);
    }
    return 0;
}

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
            if (need(c, join_index(q, join(p, sp, "normal"), k), s->normal[k], 1, ""))
                return -1;
            n2 += (double)s->normal[k] * s->normal[k];
        }
        if (!(n2 > 1e-12))
            return fail(c, join(p, sp, "normal"), "must not be zero");
        if (r->motion == FIRN_RIGID_DYNAMIC)
            return fail(c, join(p, base, "motion"),
                        "a plane is unbounded and has no finite mass: it can be static or "
                        "kinematic, not dynamic");
        break;
    }
    case FIRN_RSHAPE_BOX:
        for (int k = 0; k < 3; k++)
            if (need(c, join_index(q, join(p, sp, "size"), k), s->size[k], s->size[k] > 0,
                     "must be > 0"))
                return -1;
        break;
    case FIRN_RSHAPE_SPHERE:
    case FIRN_RSHAPE_CAPSULE:
    case FIRN_RSHAPE_CYLINDER:
        if (need(c, join(p, sp, "radius"), s->radius, s->radius > 0, "must be > 0"))
            return -1;
        if (s->type == FIRN_RSHAPE_CYLINDER &&
            need(c, join(p, sp, "height"), s->height, s->height > 0, "must be > 0"))
            return -1;
        if (s->type == FIRN_RSHAPE_CAPSULE &&
            need(c, join(p, sp, "height"), s->height, s->height >= 0, "must be >= 0"))
            return -1;
        if (s->type != FIRN_RSHAPE_SPHERE && (s->axis < 0 || s->axis > 2))
            return fail(c, join(p, sp, "axis"), "%d: must be 0 (x), 1 (y) or 2 (z)", s->axis);
        break;
    case FIRN_RSHAPE_MESH: {
        const firn_mesh *mesh;
        int rc = load_mesh(c, s->file, s->scale, sp, &mesh);
        if (rc)
            return rc;
        break;
    }
    default:
        return fail(c, join(p, sp, "type"), "unknown rigid shape type %d", (int)s->type);
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
        return fail(c, join(p, base, "keyframes"), "%d keyframes; at most %d are allowed",
                    r->n_keyframes, FIRN_MAX_KEYFRAMES);
    if (r->n_keyframes == 0)
        return 0;
    if (r->motion != FIRN_RIGID_KINEMATIC)
        return fail(c, join(p, base, "keyframes"),
                    "only a kinematic body follows keyframes (motion is \"%s\")",
                    motion_names[r->motion]);
    for (int k = 0; k < 3; k++)
        if (r->velocity[k] != 0 || r->angular_velocity[k] != 0 || r->rotation[k] != 0)
            return fail(c,
                        join(p, base,
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
        join_index(kp, join(q, base, "keyframes"), f);
        if (need(c, join(p, kp, "t"), kf->t, kf->t >= 0, "must be >= 0"))
            return -1;
        if (f > 0 && !(kf->t > r->keyframes[f - 1].t))
            return fail(c, join(p, kp, "t"), "%g: must be after the previous keyframe's %g", kf->t,
                        r->keyframes[f - 1].t);
        if (f > 0 && !((double)kf->t - r->keyframes[f - 1].t >= min_gap))
            return fail(c, join(p, kp, "t"),
                        "%g: only %.3g s after the previous keyframe's %g, less than a substep "
                        "(%.3g s, %s): the body would jump to this pose within one substep",
                        kf->t, (double)kf->t - r->keyframes[f - 1].t, r->keyframes[f - 1].t,
                        min_gap,
                        def->dt > 0.0f ? "the fixed time.dt"
                                       : "time.frame_dt / 100000, the shortest CFL substep");
        for (int k = 0; k < 3; k++) {
            char vp[KEYPATH_MAX];
            if (need(c, join_index(vp, join(p, kp, "position"), k), kf->position[k], 1, "") ||
                need(c, join_index(vp, join(p, kp, "rotation"), k), kf->rotation[k], 1, ""))
                return -1;
            /* Slerp takes the shortest arc: a larger turn about an axis
             * would run the other way round. */
            const double turn =
                f > 0 ? fabs((double)kf->rotation[k] - r->keyframes[f - 1].rotation[k]) : 0.0;
            if (!(turn < 180.0))
                return fail(c, join_index(vp, join(p, kp, "rotation"), k),
                            "%g: turns %g degrees about %c from the previous keyframe's %g; a turn "
                            "of 180 degrees or more between two keyframes needs a keyframe in "
                            "between (the pose turns along the shortest arc)",
                            kf->rotation[k], turn, axis_names[k], r->keyframes[f - 1].rotation[k]);
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
        join_index(kp, join(q, base, "keyframes"), f);
        const float *rv = b.key[f - 1].rv;
        const double angle =
            sqrt((double)rv[0] * rv[0] + (double)rv[1] * rv[1] + (double)rv[2] * rv[2]) * 180.0 /
            M_PI;
        if (!(angle < KEYFRAME_MAX_TURN_DEG))
            return fail(c, join(p, kp, "rotation"),
                        "turns the body %.6g degrees from the previous keyframe; a turn of 180 "
                        "degrees or more (or within %g of it) between two keyframes needs a "
                        "keyframe in between (the pose turns along the shortest arc)",
                        angle, 180.0 - KEYFRAME_MAX_TURN_DEG);
        float v[3], w[3];
        firn_key_velocity(&b, 0.5 * ((double)b.key[f - 1].t + b.key[f].t), v, w);
        const double speed = sqrt((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
        const double omega = sqrt((double)w[0] * w[0] + (double)w[1] * w[1] + (double)w[2] * w[2]);
        if (!isfinite(v[0] + v[1] + v[2] + w[0] + w[1] + w[2]))
            return fail(c, kp,
                        "the segment from keyframes[%d] gives the body a velocity of (%g, %g, %g) "
                        "m/s and an angular velocity of (%g, %g, %g) rad/s, not finite in 32-bit "
                        "floats: the poses are too far apart for the time between them",
                        f - 1, v[0], v[1], v[2], w[0], w[1], w[2]);
        const double surface = speed + omega * reach;
        const double substeps = surface * def->frame_dt / ((double)def->cfl * def->dx);
        if (cfl_bound && !(substeps <= KEYFRAME_MAX_SUBSTEPS))
            return fail(c, kp,
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
    join(p, base, "name");
    if (!memchr(name, '\0', FIRN_NAME_MAX))
        return fail(c, p, "not NUL-terminated");
    if (required && !name[0])
        return fail(c, p, "empty: a %s is found by its name", what);
    if (has_control_char(name))
        return fail(c, p, "has a control character");
    for (int j = 0; j < i; j++)
        if (name[0] && !strcmp(name, name_of(def, j)))
            return fail(c, p, "\"%s\": duplicate %s name", name, what);
    return 0;
}

/* A rigid's or a tool's pose and velocities at base (its shape at sp): finite. */
static int validate_pose(const ctx *c, const char *base, const char *sp, const float center[3],
                         const float rotation[3], const float velocity[3],
                         const float angular_velocity[3])
{
    char p[KEYPATH_MAX], q[KEYPATH_MAX];
    for (int k = 0; k < 3; k++)
        if (need(c, join_index(q, join(p, sp, "center"), k), center[k], 1, "") ||
            need(c, join_index(q, join(p, base, "rotation"), k), rotation[k], 1, "") ||
            need(c, join_index(q, join(p, base, "velocity"), k), velocity[k], 1, "") ||
            need(c, join_index(q, join(p, base, "angular_velocity"), k), angular_velocity[k], 1,
                 ""))
            return -1;
    return 0;
}

/* A rigid's or a tool's contact with the material: friction and softness. */
static int validate_contact(const ctx *c, const char *base, float friction, float softness)
{
    char p[KEYPATH_MAX];
    return need(c, join(p, base, "friction"), friction, friction >= 0, "must be >= 0") ||
                   need(c, join(p, base, "softness"), softness, softness >= 0, "must be >= 0")
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
        if (need(c, join(p, base, "density"), r->density, r->density > 0,
                 "must be > 0: a dynamic body needs a positive mass"))
            return -1;
        float mass, inertia[3];
        firn_rigid_mass_properties(r, &mass, inertia);
        if (!(mass > 0.0f) || !isfinite(mass) || !(inertia[0] > 0.0f) || !(inertia[1] > 0.0f) ||
            !(inertia[2] > 0.0f) || !isfinite(inertia[0] + inertia[1] + inertia[2]))
            return fail(c, join(p, base, "density"),
                        "%g gives a dynamic %s a mass of %g kg (inertia %g, %g, %g kg m^2); both "
                        "must be positive and finite in 32-bit floats: change the density or "
                        "the shape's size",
                        r->density, rigid_shape_names[s->type], mass, inertia[0], inertia[1],
                        inertia[2]);
    } else if (need(c, join(p, base, "density"), r->density, r->density >= 0, "must be >= 0")) {
        return -1;
    }
    if (r->motion == FIRN_RIGID_STATIC)
        for (int k = 0; k < 3; k++)
            if (r->velocity[k] != 0 || r->angular_velocity[k] != 0)
                return fail(c, join(p, base, r->velocity[k] != 0 ? "velocity" : "angular_velocity"),
                            "a static body does not move; use motion \"kinematic\" to "
                            "prescribe its velocity");
    if (validate_contact(c, base, r->friction, r->softness) ||
        need(c, join(p, base, "restitution"), r->restitution,
             r->restitution >= 0 && r->restitution <= 1, "must be in [0, 1]"))
        return -1;
    return 0;
}

static int validate_rigid(const ctx *c, const firn_scene_def *def, int i)
{
    const firn_rigid_def *r = &def->rigids[i];
    char base[KEYPATH_MAX], sp[KEYPATH_MAX], p[KEYPATH_MAX];

    join_index(base, "rigids", i);
    join(sp, base, "shape");
    if (validate_name(c, def, base, i, rigid_name, 0, "rigid"))
        return -1;
    if ((int)r->motion < 0 || (int)r->motion > FIRN_RIGID_DYNAMIC)
        return fail(c, join(p, base, "motion"), "unknown motion %d", (int)r->motion);
    if (validate_pose(c, base, sp, r->shape.center, r->rotation, r->velocity, r->angular_velocity))
        return -1;
    int e = validate_rigid_shape(c, r, base, sp);
    if (e)
        return e;
    if (validate_rigid_keyframes(c, def, r, base, r->couple && def->coupling_rigid_mpm) ||
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
    join_index(base, "tools", i);
    join(sp, base, "shape");
    if (validate_name(c, def, base, i, tool_name, 1, "tool") ||
        validate_pose(c, base, sp, t->shape.center, t->rotation, t->velocity, t->angular_velocity))
        return -1;
    if (t->shape.type == FIRN_RSHAPE_PLANE)
        return fail(c, join(p, sp, "type"),
                    "a tool is a bounded body (box, sphere, capsule, cylinder or mesh), not a "
                    "plane");
    /* The rigid checks of shape and keyframes, on the tool as a kinematic rigid. */
    firn_rigid_def r;
    firn_tool_as_rigid(t, &r);
    int e = validate_rigid_shape(c, &r, base, sp);
    if (e)
        return e;
    if (validate_rigid_keyframes(c, def, &r, base, t->collision && def->coupling_tool_mpm) ||
        validate_contact(c, base, t->friction, t->softness))
        return -1;
    if (t->collision != 0 && t->collision != 1)
        return fail(c, join(p, base, "collision"), "%d: must be 0 or 1", t->collision);
    return 0;
}

/* All checks, with messages prefixed by file ("" for none). */
static int validate(const firn_scene_def *def, const char *file, firn_error *err)
{
    ctx c = {file, err};
    double total = 0.0;

    if (validate_domain(&c, def) || validate_time_output(&c, def))
        return -1;
    if (def->n_materials < 0 || def->n_materials > FIRN_MAX_MATERIALS)
        return fail(&c, "materials", "%d materials; at most %d are allowed", def->n_materials,
                    FIRN_MAX_MATERIALS);
    for (int i = 0; i < def->n_materials; i++)
        if (validate_material(&c, def, i))
            return -1;
    if (def->n_bodies < 1)
        return fail(&c, "bodies", "no bodies; a scene needs at least one");
    if (validate_pbd(&c, def))
        return -1;
    if (need(&c, "fem.damping", def->fem_damping, def->fem_damping >= 0, "must be >= 0 [1/s]"))
        return -1;
    if (def->n_bodies > FIRN_MAX_BODIES)
        return fail(&c, "bodies", "%d bodies; at most %d are allowed", def->n_bodies,
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
    if (validate_sph(&c, def))
        return -1;
    if (def->coupling_cpic && !def->coupling_rigid_mpm)
        return fail(&c, "coupling.cpic",
                    "true needs coupling.rigid_mpm true (CPIC shapes the rigid-MPM coupling)");
    if (def->n_rigids < 0 || def->n_rigids > FIRN_MAX_RIGIDS)
        return fail(&c, "rigids", "%d rigid bodies; at most %d are allowed", def->n_rigids,
                    FIRN_MAX_RIGIDS);
    for (int i = 0; i < def->n_rigids; i++) {
        int rc = validate_rigid(&c, def, i);
        if (rc)
            return rc; /* -1, or FIRN_E_IO for an unreadable mesh */
    }
    if (def->n_tools < 0 || def->n_tools > FIRN_MAX_TOOLS)
        return fail(&c, "tools", "%d tools; at most %d are allowed", def->n_tools, FIRN_MAX_TOOLS);
    for (int i = 0; i < def->n_tools; i++) {
        int rc = validate_tool(&c, def, i);
        if (rc)
            return rc; /* -1, or FIRN_E_IO for an unreadable mesh */
    }
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
        return fail(&c, "bodies",
                    "about %.4g particles in all; at most %d are allowed (32-bit indices; "
                    "%.4g MPM, %.4g SPH, %.4g PBD); %s",
                    total, FIRN_MAX_PARTICLES, by_solver[FIRN_SOLVER_KIND_MPM],
                    by_solver[FIRN_SOLVER_KIND_SPH], by_solver[FIRN_SOLVER_KIND_PBD], advice[most]);
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

/* ---- JSON readers --------------------------------------------------------- */

static const char *json_type(const cJSON *j)
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

static const cJSON *get(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* Fails on a key of obj that is not in allowed (NULL-terminated) or that
 * appears twice; what qualifies "unknown key" (e.g. "for a sphere"). */
static int check_keys(const ctx *c, const cJSON *obj, const char *path, const char *const *allowed,
                      const char *what)
{
    char p[KEYPATH_MAX];
    const cJSON *k;
    cJSON_ArrayForEach(k, obj)
    {
        int known = 0;
        for (int i = 0; allowed[i]; i++)
            known |= !strcmp(k->string, allowed[i]);
        join(p, path, k->string);
        if (!known) {
            char list[512] = "";
            for (int i = 0; allowed[i]; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                         allowed[i]);
            return fail(c, p, "unknown key%s%s (allowed: %s)", what ? " " : "", what ? what : "",
                        list);
        }
        for (const cJSON *e = obj->child; e != k; e = e->next)
            if (!strcmp(e->string, k->string))
                return fail(c, p, "duplicate key");
    }
    return 0;
}

static int need_object(const ctx *c, const cJSON *j, const char *path)
{
    return cJSON_IsObject(j) ? 0 : fail(c, path, "expected an object, got %s", json_type(j));
}

static int item_float(const ctx *c, const cJSON *j, const char *path, float *out)
{
    if (!cJSON_IsNumber(j))
        return fail(c, path, "expected a number, got %s", json_type(j));
    if (!isfinite(j->valuedouble))
        return fail(c, path, "must be a finite number (this one overflows)");
    if (fabs(j->valuedouble) > FLT_MAX)
        return fail(c, path, "%g is too large for a 32-bit float", j->valuedouble);
    *out = (float)j->valuedouble;
    return 0;
}

/* Integer in [lo, hi]; JSON numbers are doubles, so exact up to 2^53. */
static int item_integer(const ctx *c, const cJSON *j, const char *path, double lo, double hi,
                        double *out)
{
    if (!cJSON_IsNumber(j))
        return fail(c, path, "expected an integer, got %s", json_type(j));
    if (!isfinite(j->valuedouble) || j->valuedouble != floor(j->valuedouble))
        return fail(c, path, "expected an integer, got %g", j->valuedouble);
    if (j->valuedouble < lo || j->valuedouble > hi) {
        char p[KEYPATH_MAX + 40];
        snprintf(p, sizeof p, "%s = %g", path, j->valuedouble);
        return fail(c, p, "must be in [%.0f, %.0f]", lo, hi);
    }
    *out = j->valuedouble;
    return 0;
}

static int get_float(const ctx *c, const cJSON *obj, const char *parent, const char *key,
                     float *out)
{
    char p[KEYPATH_MAX];
    const cJSON *j = get(obj, key);
    return j ? item_float(c, j, join(p, parent, key), out) : 0;
}

/* An integer key in [lo, hi], the key's own range (so that a message shows
 * it rather than the limits of int). */
static int get_int(const ctx *c, const cJSON *obj, const char *parent, const char *key, int lo,
                   int hi, int *out)
{
    char p[KEYPATH_MAX];
    const cJSON *j = get(obj, key);
    double v = 0;
    if (!j)
        return 0;
    if (item_integer(c, j, join(p, parent, key), lo, hi, &v))
        return -1;
    *out = (int)v;
    return 0;
}

static int get_bool(const ctx *c, const cJSON *obj, const char *parent, const char *key, int *out)
{
    char p[KEYPATH_MAX];
    const cJSON *j = get(obj, key);
    if (!j)
        return 0;
    if (!cJSON_IsBool(j))
        return fail(c, join(p, parent, key), "expected true or false, got %s", json_type(j));
    *out = cJSON_IsTrue(j);
    return 0;
}

/* A string field; required ones fail when absent. Sets *found. */
static int get_string(const ctx *c, const cJSON *obj, const char *parent, const char *key,
                      int required, const char **out)
{
    char p[KEYPATH_MAX];
    const cJSON *j = get(obj, key);
    join(p, parent, key);
    if (!j)
        return required ? fail(c, p, "missing (required)") : 0;
    if (!cJSON_IsString(j))
        return fail(c, p, "expected a string, got %s", json_type(j));
    *out = j->valuestring;
    return 0;
}

static int get_vec3(const ctx *c, const cJSON *obj, const char *parent, const char *key,
                    float out[3])
{
    char p[KEYPATH_MAX], q[KEYPATH_MAX];
    const cJSON *j = get(obj, key), *e;
    float v[3];
    int i = 0;
    if (!j)
        return 0;
    join(p, parent, key);
    if (!cJSON_IsArray(j))
        return fail(c, p, "expected an array of 3 numbers, got %s", json_type(j));
    if (cJSON_GetArraySize(j) != 3)
        return fail(c, p, "expected an array of 3 numbers, got %d element(s)",
                    cJSON_GetArraySize(j));
    cJSON_ArrayForEach(e, j)
    {
        if (item_float(c, e, join_index(q, p, i), &v[i]))
            return -1;
        i++;
    }
    memcpy(out, v, sizeof v);
    return 0;
}

/* Index of s in names[n], or fails listing the choices. */
static int pick(const ctx *c, const char *path, const char *s, const char *const *names, int n,
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
    return fail(c, path, "\"%s\": unknown value (expected one of %s)", s, list);
}

/* An array section (bodies, rigids, tools) of at most max items (what in
 * the message); item(c, element, path, index, def) reads each, *n counts
 * them. */
static int parse_list(const ctx *c, const cJSON *j, const char *key, const char *what, int max,
                      int *n, firn_scene_def *def,
                      int (*item)(const ctx *, const cJSON *, const char *, int, firn_scene_def *))
{
    char p[KEYPATH_MAX];
    const cJSON *e;
    if (!cJSON_IsArray(j))
        return fail(c, key, "expected an array, got %s", json_type(j));
    if (cJSON_GetArraySize(j) > max)
        return fail(c, key, "%d %s; at most %d are allowed", cJSON_GetArraySize(j), what, max);
    cJSON_ArrayForEach(e, j)
    {
        int i = *n;
        if (item(c, e, join_index(p, key, i), i, def))
            return -1;
        (*n)++;
    }
    return 0;
}

/* ---- JSON sections -------------------------------------------------------- */

/* A wall: "sticky" or {"type": "separate", "friction": 0.3}. */
static int parse_wall(const ctx *c, const cJSON *j, const char *path, firn_wall_def *w)
{
    static const char *const keys[] = {"type", "friction", NULL};
    char p[KEYPATH_MAX];
    const char *type = "separate";
    int t = 0;

    w->friction = 0.0f;
    if (cJSON_IsString(j)) {
        if (pick(c, path, j->valuestring, wall_names, 3, &t))
            return -1;
        w->type = (firn_wall_type)t;
        return 0;
    }
    if (!cJSON_IsObject(j))
        return fail(c, path, "expected a wall type string or an object, got %s", json_type(j));
    if (check_keys(c, j, path, keys, NULL) || get_string(c, j, path, "type", 0, &type) ||
        pick(c, join(p, path, "type"), type, wall_names, 3, &t) ||
        get_float(c, j, path, "friction", &w->friction))
        return -1;
    w->type = (firn_wall_type)t;
    join(p, path, "friction");
    if (need(c, p, w->friction, w->friction >= 0, "must be >= 0"))
        return -1;
    if (w->friction != 0 && w->type != FIRN_WALL_SEPARATE)
        return fail(c, p, "%g: only separate walls take friction (this one is %s)", w->friction,
                    type);
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
    if (cJSON_IsString(j) || (cJSON_IsObject(j) && (get(j, "type") || get(j, "friction")))) {
        for (int f = 0; cJSON_IsObject(j) && keys[f]; f++)
            if (get(j, keys[f]))
                return fail(c, path,
                            "give one wall (type, friction) or per-face walls "
                            "(x_lower, ..., all), not both");
        if (parse_wall(c, j, path, &all))
            return -1;
        for (int f = 0; f < 6; f++)
            def->walls[f] = all;
        return 0;
    }
    if (!cJSON_IsObject(j))
        return fail(c, path, "expected a wall type string or an object, got %s", json_type(j));
    if (check_keys(c, j, path, keys, NULL))
        return -1;
    if (get(j, "all") && parse_wall(c, get(j, "all"), join(p, path, "all"), &all))
        return -1;
    for (int f = 0; f < 6; f++) {
        def->walls[f] = all;
        if (get(j, face_names[f]) &&
            parse_wall(c, get(j, face_names[f]), join(p, path, face_names[f]), &def->walls[f]))
            return -1;
    }
    return 0;
}

static int parse_domain(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"lower", "upper", "dx", "boundary", NULL};
    if (need_object(c, j, "domain") || check_keys(c, j, "domain", keys, NULL) ||
        get_vec3(c, j, "domain", "lower", def->lower) ||
        get_vec3(c, j, "domain", "upper", def->upper) || get_float(c, j, "domain", "dx", &def->dx))
        return -1;
    return get(j, "boundary") ? parse_boundary(c, get(j, "boundary"), def) : 0;
}

static int parse_time(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"frame_dt", "frames", "cfl", "dt", "force_dt", NULL};
    if (need_object(c, j, "time") || check_keys(c, j, "time", keys, NULL) ||
        get_float(c, j, "time", "frame_dt", &def->frame_dt) ||
        get_int(c, j, "time", "frames", 1, INT_MAX, &def->frames) ||
        get_float(c, j, "time", "cfl", &def->cfl) || get_float(c, j, "time", "dt", &def->dt) ||
        get_bool(c, j, "time", "force_dt", &def->force_dt))
        return -1;
    return 0;
}

static int parse_output(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"dir", "every", "ply", "preview", NULL};
    const char *dir = NULL;
    if (need_object(c, j, "output") || check_keys(c, j, "output", keys, NULL) ||
        get_string(c, j, "output", "dir", 0, &dir) ||
        get_int(c, j, "output", "every", 1, INT_MAX, &def->out_every) ||
        get_bool(c, j, "output", "ply", &def->write_ply) ||
        get_bool(c, j, "output", "preview", &def->write_preview))
        return -1;
    if (dir && strlen(dir) >= sizeof def->out_dir)
        return fail(c, "output.dir", "longer than %d characters", FIRN_PATH_MAX - 1);
    if (dir)
        snprintf(def->out_dir, sizeof def->out_dir, "%s", dir);
    return 0;
}

/* Keys that only some models use; giving one to another model is a mistake. */
#define PBD_MODELS                                                                                 \
    (1u << FIRN_MODEL_PBD_CLOTH | 1u << FIRN_MODEL_PBD_PARTICLE | 1u << FIRN_MODEL_PBD_LIQUID)
#define NOT_MPM (1u << FIRN_MODEL_SPH_LIQUID | PBD_MODELS)
static const struct {
    const char *key;
    unsigned models; /* bit per firn_model */
} model_keys[] = {
    {"law", 1u << FIRN_MODEL_ELASTIC | 1u << FIRN_MODEL_VON_MISES | 1u << FIRN_MODEL_FRACTURE},
    {"theta_c", 1u << FIRN_MODEL_SNOW},
    {"theta_s", 1u << FIRN_MODEL_SNOW},
    {"hardening", 1u << FIRN_MODEL_SNOW},
    {"max_hardening", 1u << FIRN_MODEL_SNOW},
    {"friction_angle", 1u << FIRN_MODEL_SAND},
    {"cone_fit", 1u << FIRN_MODEL_SAND},
    {"rheology", 1u << FIRN_MODEL_SAND},
    {"friction_angle_2", 1u << FIRN_MODEL_SAND},
    {"I0", 1u << FIRN_MODEL_SAND},
    {"grain_diameter", 1u << FIRN_MODEL_SAND},
    {"grain_density", 1u << FIRN_MODEL_SAND},
    {"yield_stress", 1u << FIRN_MODEL_VON_MISES},
    {"crit_strain", 1u << FIRN_MODEL_FRACTURE},
    {"damage_rate", 1u << FIRN_MODEL_FRACTURE},
    {"E", ~NOT_MPM},
    {"nu", ~NOT_MPM},
    {"stretch_compliance", 1u << FIRN_MODEL_PBD_CLOTH},
    {"bending_compliance", 1u << FIRN_MODEL_PBD_CLOTH},
    {"air_resistance", 1u << FIRN_MODEL_PBD_CLOTH},
    {"static_friction", PBD_MODELS},
    {"density_relaxation", 1u << FIRN_MODEL_PBD_LIQUID},
    {"viscosity_relaxation", 1u << FIRN_MODEL_PBD_LIQUID},
    {"kinetic_friction", PBD_MODELS},
    {"stiffness", 1u << FIRN_MODEL_SPH_LIQUID},
    {"exponent", 1u << FIRN_MODEL_SPH_LIQUID},
    {"viscosity", 1u << FIRN_MODEL_SPH_LIQUID},
    {"surface_tension", 1u << FIRN_MODEL_SPH_LIQUID},
    {"pressure_solver", 1u << FIRN_MODEL_SPH_LIQUID},
};

static int parse_material(const ctx *c, const cJSON *j, const char *path, firn_material_def *m)
{
    static const char *const keys[] = {"model",
                                       "E",
                                       "nu",
                                       "density",
                                       "law",
                                       "theta_c",
                                       "theta_s",
                                       "hardening",
                                       "friction_angle",
                                       "cone_fit",
                                       "rheology",
                                       "friction_angle_2",
                                       "I0",
                                       "grain_diameter",
                                       "grain_density",
                                       "yield_stress",
                                       "crit_strain",
                                       "damage_rate",
                                       "max_hardening",
                                       "stiffness",
                                       "exponent",
                                       "viscosity",
                                       "surface_tension",
                                       "pressure_solver",
                                       "stretch_compliance",
                                       "bending_compliance",
                                       "air_resistance",
                                       "static_friction",
                                       "kinetic_friction",
                                       "density_relaxation",
                                       "viscosity_relaxation",
                                       NULL};
    char p[KEYPATH_MAX], name[FIRN_NAME_MAX];
    const char *model = NULL, *law = "corotated", *pressure = "wcsph", *cone = "compression",
               *rheology = "cone";
    int model_i = 0, law_i = 0, pressure_i = 0, cone_i = 0, rheology_i = 0;

    if (need_object(c, j, path) || check_keys(c, j, path, keys, NULL) ||
        get_string(c, j, path, "model", 1, &model) ||
        pick(c, join(p, path, "model"), model, model_names, FIRN_MODEL_COUNT, &model_i))
        return -1;
    memcpy(name, m->name, sizeof name);
    firn_material_default(m, (firn_model)model_i);
    memcpy(m->name, name, sizeof name);

    for (size_t i = 0; i < sizeof model_keys / sizeof model_keys[0]; i++)
        if (get(j, model_keys[i].key) && !(model_keys[i].models & 1u << model_i))
            return fail(c, join(p, path, model_keys[i].key), "does not apply to a %s material",
                        model);
    if (get_float(c, j, path, "E", &m->E) || get_float(c, j, path, "nu", &m->nu) ||
        get_float(c, j, path, "density", &m->density) ||
        get_float(c, j, path, "theta_c", &m->theta_c) ||
        get_float(c, j, path, "theta_s", &m->theta_s) ||
        get_float(c, j, path, "hardening", &m->hardening) ||
        get_float(c, j, path, "max_hardening", &m->max_hardening) ||
        get_float(c, j, path, "friction_angle", &m->friction_angle) ||
        get_float(c, j, path, "friction_angle_2", &m->friction_angle_2) ||
        get_float(c, j, path, "I0", &m->inertial_I0) ||
        get_float(c, j, path, "grain_diameter", &m->grain_diameter) ||
        get_float(c, j, path, "grain_density", &m->grain_density) ||
        get_float(c, j, path, "yield_stress", &m->yield_stress) ||
        get_float(c, j, path, "crit_strain", &m->crit_strain) ||
        get_float(c, j, path, "damage_rate", &m->damage_rate) ||
        get_float(c, j, path, "stiffness", &m->stiffness) ||
        get_float(c, j, path, "exponent", &m->exponent) ||
        get_float(c, j, path, "viscosity", &m->viscosity) ||
        get_float(c, j, path, "surface_tension", &m->surface_tension) ||
        get_float(c, j, path, "stretch_compliance", &m->stretch_compliance) ||
        get_float(c, j, path, "bending_compliance", &m->bending_compliance) ||
        get_float(c, j, path, "air_resistance", &m->air_resistance) ||
        get_float(c, j, path, "static_friction", &m->static_friction) ||
        get_float(c, j, path, "kinetic_friction", &m->kinetic_friction) ||
        get_float(c, j, path, "density_relaxation", &m->density_relaxation) ||
        get_float(c, j, path, "viscosity_relaxation", &m->viscosity_relaxation) ||
        get_string(c, j, path, "law", 0, &law) ||
        pick(c, join(p, path, "law"), law, law_names, 2, &law_i) ||
        get_string(c, j, path, "pressure_solver", 0, &pressure) ||
        pick(c, join(p, path, "pressure_solver"), pressure, pressure_names, 2, &pressure_i) ||
        get_string(c, j, path, "cone_fit", 0, &cone) ||
        pick(c, join(p, path, "cone_fit"), cone, cone_fit_names, FIRN_CONE_FIT_COUNT, &cone_i) ||
        get_string(c, j, path, "rheology", 0, &rheology) ||
        pick(c, join(p, path, "rheology"), rheology, rheology_names, FIRN_RHEOLOGY_COUNT,
             &rheology_i))
        return -1;
    static const char *const mu_i_keys[4] = {"friction_angle_2", "I0", "grain_diameter",
                                             "grain_density"};
    for (int k = 0; k < 4; k++)
        if (rheology_i != FIRN_RHEOLOGY_MU_I && get(j, mu_i_keys[k]))
            return fail(c, join(p, path, mu_i_keys[k]), "applies only with rheology mu_i");
    m->law = (firn_elastic_law)law_i;
    m->cone_fit = (firn_cone_fit)cone_i;
    m->rheology = (firn_rheology)rheology_i;
    m->pressure_solver = (firn_pressure_solver)pressure_i;
    return 0;
}

static int parse_materials(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    char p[KEYPATH_MAX];
    const cJSON *m;
    if (need_object(c, j, "materials"))
        return -1;
    if (cJSON_GetArraySize(j) > FIRN_MAX_MATERIALS)
        return fail(c, "materials", "%d materials; at most %d are allowed", cJSON_GetArraySize(j),
                    FIRN_MAX_MATERIALS);
    cJSON_ArrayForEach(m, j)
    {
        firn_material_def *mat = &def->materials[def->n_materials];
        join(p, "materials", m->string);
        if (!m->string[0])
            return fail(c, "materials", "empty material name");
        if (strlen(m->string) >= FIRN_NAME_MAX)
            return fail(c, p, "name longer than %d characters", FIRN_NAME_MAX - 1);
        for (int i = 0; i < def->n_materials; i++)
            if (!strcmp(def->materials[i].name, m->string))
                return fail(c, p, "duplicate material name");
        snprintf(mat->name, sizeof mat->name, "%s", m->string);
        if (parse_material(c, m, p, mat))
            return -1;
        def->n_materials++;
    }
    return 0;
}

/* A mesh's "file" at path into out: a relative path is taken from the
 * scene file's folder. */
static int get_mesh_file(const ctx *c, const cJSON *j, const char *path, char out[FIRN_PATH_MAX])
{
    char p[KEYPATH_MAX];
    const char *file = NULL, *slash = strrchr(c->file, '/');
    if (get_string(c, j, path, "file", 1, &file))
        return -1;
    if (!file[0])
        return fail(c, join(p, path, "file"), "must not be empty");
    int dir = file[0] != '/' && slash ? (int)(slash - c->file) + 1 : 0;
    if (snprintf(out, FIRN_PATH_MAX, "%.*s%s", dir, c->file, file) >= FIRN_PATH_MAX)
        return fail(c, join(p, path, "file"), "path longer than %d characters", FIRN_PATH_MAX - 1);
    return 0;
}

/* A JSON array of n numbers at obj.key (absent: out unchanged); integers
 * in [lo, hi] when ints is set. */
static int get_array(const ctx *c, const cJSON *obj, const char *parent, const char *key, int n,
                     float *fout, int *iout, double lo, double hi)
{
    char p[KEYPATH_MAX], q[KEYPATH_MAX];
    const cJSON *j = get(obj, key), *e;
    int i = 0;
    if (!j)
        return 0;
    join(p, parent, key);
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != n)
        return fail(c, p, "expected an array of %d %s, got %s", n, iout ? "integers" : "numbers",
                    cJSON_IsArray(j) ? "another length" : json_type(j));
    cJSON_ArrayForEach(e, j)
    {
        double v;
        if (iout ? item_integer(c, e, join_index(q, p, i), lo, hi, &v)
                 : item_float(c, e, join_index(q, p, i), &fout[i]))
            return -1;
        if (iout)
            iout[i] = (int)v;
        i++;
    }
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
    if (check_keys(c, j, path, keys, "for a cloth_rect") ||
        get_vec3(c, j, path, "center", s->center) ||
        get_array(c, j, path, "size", 2, s->size, NULL, 0, 0) ||
        get_array(c, j, path, "resolution", 2, NULL, s->resolution, 2, CLOTH_MAX_RESOLUTION) ||
        get_string(c, j, path, "normal", 0, &normal) ||
        (normal && pick(c, join(p, path, "normal"), normal, axes, 3, &s->axis)))
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

    if (need_object(c, j, path) || get_string(c, j, path, "type", 1, &type) ||
        pick(c, join(p, path, "type"), type, shape_names, FIRN_SHAPE_COUNT, &t))
        return -1;
    s->type = (firn_shape_type)t;
    if (s->type == FIRN_SHAPE_CLOTH_RECT)
        return parse_cloth_rect(c, j, path, s);
    snprintf(what, sizeof what, "for a %s", type);
    if (check_keys(c, j, path, keys[t], what) || get_vec3(c, j, path, "center", s->center) ||
        get_vec3(c, j, path, "size", s->size) || get_float(c, j, path, "radius", &s->radius) ||
        get_float(c, j, path, "height", &s->height) || get_string(c, j, path, "axis", 0, &axis) ||
        (axis && pick(c, join(p, path, "axis"), axis, axes, 3, &s->axis)) ||
        get_float(c, j, path, "scale", &s->scale) ||
        (s->type == FIRN_SHAPE_SPHERE
             ? get_int(c, j, path, "cells", 1, FEM_MAX_SPHERE_CELLS, &s->cells[0])
             : get_array(c, j, path, "cells", 3, NULL, s->cells, 1, FEM_MAX_CELLS)) ||
        (s->type == FIRN_SHAPE_MESH && get_mesh_file(c, j, path, s->file)))
        return -1;

    /* A box may be given by its corners instead. */
    if (get(j, "lower") || get(j, "upper")) {
        float lo[3], hi[3];
        if (get(j, "center") || get(j, "size"))
            return fail(c, path, "give center and size, or lower and upper, not both");
        if (!get(j, "lower") || !get(j, "upper"))
            return fail(c, join(p, path, get(j, "lower") ? "upper" : "lower"),
                        "missing (lower and upper go together)");
        if (get_vec3(c, j, path, "lower", lo) || get_vec3(c, j, path, "upper", hi))
            return -1;
        for (int k = 0; k < 3; k++) {
            if (!(hi[k] > lo[k]))
                return fail(c, join_index(q, join(p, path, "upper"), k),
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
    const cJSON *idx = get(j, "indices"), *box = get(j, "box"), *e;
    if (need_object(c, j, path) || check_keys(c, j, path, keys, NULL))
        return -1;
    if (!idx && !box)
        return fail(c, path, "give indices, a box, or both");
    if (idx) {
        join(p, path, "indices");
        if (!cJSON_IsArray(idx))
            return fail(c, p, "expected an array of vertex indices, got %s", json_type(idx));
        if (cJSON_GetArraySize(idx) > FIRN_MAX_PINS)
            return fail(c, p, "%d indices; at most %d are allowed (pin more with a box)",
                        cJSON_GetArraySize(idx), FIRN_MAX_PINS);
        b->n_pins = 0;
        cJSON_ArrayForEach(e, idx)
        {
            double v;
            if (item_integer(c, e, join_index(q, p, b->n_pins), -9007199254740992.0,
                             9007199254740992.0, &v))
                return -1;
            if (v < 0 || v > INT_MAX) /* the vertex count is checked once the shape is known */
                return fail(c, join_index(q, p, b->n_pins),
                            "%.0f: no such vertex (vertices are numbered from 0 to the body's "
                            "vertex count less 1)",
                            v);
            b->pins[b->n_pins++] = (int)v;
        }
    }
    if (box) {
        join(p, path, "box");
        if (need_object(c, box, p) || check_keys(c, box, p, box_keys, NULL))
            return -1;
        if (!get(box, "lower") || !get(box, "upper"))
            return fail(c, join(q, p, get(box, "lower") ? "upper" : "lower"),
                        "missing (lower and upper go together)");
        if (get_vec3(c, box, p, "lower", b->pin_lower) ||
            get_vec3(c, box, p, "upper", b->pin_upper))
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

    if (need_object(c, j, path) || check_keys(c, j, path, keys, NULL) ||
        get_string(c, j, path, "material", 1, &mat))
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
        return fail(c, join(p, path, "material"), "\"%s\": no such material (defined: %s)", mat,
                    def->n_materials ? list : "none");
    }
    shape = get(j, "shape");
    if (!shape)
        return fail(c, join(p, path, "shape"), "missing (required)");
    if (parse_shape(c, shape, join(p, path, "shape"), &b->shape) ||
        get_float(c, j, path, "particles_per_cell", &b->particles_per_cell) ||
        get_vec3(c, j, path, "velocity", b->velocity) ||
        get_string(c, j, path, "solver", 0, &solver) ||
        pick(c, join(p, path, "solver"), solver, solver_names, FIRN_SOLVER_KIND_COUNT, &solver_i))
        return -1;
    b->solver = (firn_solver_kind)solver_i;
    if (b->solver == FIRN_SOLVER_KIND_SPH && get(j, "particles_per_cell"))
        return fail(c, join(p, path, "particles_per_cell"),
                    "does not apply to an SPH body (its lattice spacing is sph.particle_size)");
    if (b->solver == FIRN_SOLVER_KIND_PBD && get(j, "particles_per_cell"))
        return fail(c, join(p, path, "particles_per_cell"),
                    "does not apply to a PBD body (a cloth's particles are its vertices, a "
                    "particle body's lattice spacing is pbd.particle_size)");
    if (b->solver == FIRN_SOLVER_KIND_FEM && get(j, "particles_per_cell"))
        return fail(c, join(p, path, "particles_per_cell"),
                    "does not apply to an FEM body (its vertices are its mesh's)");
    if (b->solver == FIRN_SOLVER_KIND_FEM && get(j, "pin"))
        return fail(c, join(p, path, "pin"),
                    "an FEM body's vertices are held by \"fixed\" (indices and/or a box)");
    if (b->solver != FIRN_SOLVER_KIND_FEM && get(j, "fixed"))
        return fail(c, join(p, path, "fixed"),
                    "applies only to an FEM body (a pbd_cloth's vertices are held by \"pin\")");
    if (get(j, "pin") && parse_pin(c, get(j, "pin"), join(p, path, "pin"), b))
        return -1;
    if (get(j, "fixed") && parse_pin(c, get(j, "fixed"), join(p, path, "fixed"), b))
        return -1;
    if (get(j, "integrator")) {
        const char *integrator = NULL;
        if (b->solver != FIRN_SOLVER_KIND_FEM)
            return fail(c, join(p, path, "integrator"), "applies only to an FEM body");
        if (get_string(c, j, path, "integrator", 1, &integrator) ||
            pick(c, join(p, path, "integrator"), integrator, integrators, 2, &b->fem_implicit))
            return -1;
    }
    seed = get(j, "seed");
    if (seed) {
        double v = 0;
        if (item_integer(c, seed, join(p, path, "seed"), 0, 9007199254740992.0, &v))
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
    return parse_list(c, j, "bodies", "bodies", FIRN_MAX_BODIES, &def->n_bodies, def, body_item);
}

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

    if (need_object(c, j, path) || get_string(c, j, path, "type", 1, &type) ||
        pick(c, join(p, path, "type"), type, rigid_shape_names, FIRN_RSHAPE_COUNT, &t))
        return -1;
    s->type = (firn_rigid_shape_type)t;
    snprintf(what, sizeof what, "for a %s", type);
    if (check_keys(c, j, path, keys[t], what) || get_vec3(c, j, path, "center", s->center) ||
        get_vec3(c, j, path, "size", s->size) || get_vec3(c, j, path, "normal", s->normal) ||
        get_float(c, j, path, "radius", &s->radius) ||
        get_float(c, j, path, "height", &s->height) || get_string(c, j, path, "axis", 0, &axis) ||
        (axis && pick(c, join(p, path, "axis"), axis, axes, 3, &s->axis)) ||
        get_float(c, j, path, "scale", &s->scale))
        return -1;
    if (s->type == FIRN_RSHAPE_MESH && get_mesh_file(c, j, path, s->file))
        return -1;
    if (get(j, "lower") || get(j, "upper")) {
        float lo[3], hi[3];
        if (get(j, "center") || get(j, "size"))
            return fail(c, path, "give center and size, or lower and upper, not both");
        if (!get(j, "lower") || !get(j, "upper"))
            return fail(c, join(p, path, get(j, "lower") ? "upper" : "lower"),
                        "missing (lower and upper go together)");
        if (get_vec3(c, j, path, "lower", lo) || get_vec3(c, j, path, "upper", hi))
            return -1;
        for (int k = 0; k < 3; k++) {
            if (!(hi[k] > lo[k]))
                return fail(c, join_index(q, join(p, path, "upper"), k),
                            "%g must be > lower[%d] = %g (an inverted or empty box)", hi[k], k,
                            lo[k]);
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
    const cJSON *keys_j = get(j, "keyframes"), *kf;
    if (!keys_j)
        return 0;
    static const char *const kf_keys[] = {"t", "position", "rotation", NULL};
    char p[KEYPATH_MAX], q[KEYPATH_MAX], kp[KEYPATH_MAX];
    join(q, path, "keyframes");
    if (!cJSON_IsArray(keys_j))
        return fail(c, q, "expected an array of keyframes, got %s", json_type(keys_j));
    if (cJSON_GetArraySize(keys_j) < 1 || cJSON_GetArraySize(keys_j) > FIRN_MAX_KEYFRAMES)
        return fail(c, q, "%d keyframes: give 1 to %d", cJSON_GetArraySize(keys_j),
                    FIRN_MAX_KEYFRAMES);
    cJSON_ArrayForEach(kf, keys_j)
    {
        firn_keyframe_def *k = &keyframes[*n];
        join_index(kp, q, *n);
        if (need_object(c, kf, kp) || check_keys(c, kf, kp, kf_keys, NULL))
            return -1;
        if (!get(kf, "t") || !get(kf, "position"))
            return fail(c, join(p, kp, get(kf, "t") ? "position" : "t"), "missing (required)");
        if (get_float(c, kf, kp, "t", &k->t) || get_vec3(c, kf, kp, "position", k->position) ||
            get_vec3(c, kf, kp, "rotation", k->rotation))
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
        return fail(c, join(p, path, "name"), "must be 1 to %d characters", FIRN_NAME_MAX - 1);
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
    const cJSON *s = get(j, "shape");
    if (!s)
        return fail(c, join(p, path, "shape"), "missing (required)");
    if (parse_rigid_shape(c, s, join(p, path, "shape"), shape) ||
        get_vec3(c, j, path, "rotation", rotation) ||
        (density && get_float(c, j, path, "density", density)) ||
        get_vec3(c, j, path, "velocity", velocity) ||
        get_vec3(c, j, path, "angular_velocity", angular_velocity) ||
        get_float(c, j, path, "friction", friction) || get_float(c, j, path, "softness", softness))
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

    if (need_object(c, j, path) || check_keys(c, j, path, keys, NULL) ||
        get_string(c, j, path, "name", 0, &name) || get_string(c, j, path, "motion", 0, &motion) ||
        pick(c, join(p, path, "motion"), motion, motion_names, 3, &m))
        return -1;
    r->motion = (firn_motion)m;
    if (set_name(c, path, name, r->name))
        return -1;
    if (!name)
        snprintf(r->name, sizeof r->name, "rigid%d", index);
    if (parse_moving(c, j, path, &r->shape, r->rotation, &r->density, r->velocity,
                     r->angular_velocity, &r->friction, &r->softness) ||
        get_float(c, j, path, "restitution", &r->restitution) ||
        get_bool(c, j, path, "couple", &r->couple) ||
        parse_keyframes(c, j, path, r->shape.center, r->keyframes, &r->n_keyframes))
        return -1;
    return 0;
}

static int rigid_item(const ctx *c, const cJSON *j, const char *path, int i, firn_scene_def *def)
{
    return parse_rigid(c, j, path, i, &def->rigids[i]);
}

static int parse_rigids(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    return parse_list(c, j, "rigids", "rigid bodies", FIRN_MAX_RIGIDS, &def->n_rigids, def,
                      rigid_item);
}

static int parse_tool(const ctx *c, const cJSON *j, const char *path, firn_tool_def *t)
{
    static const char *const keys[] = {
        "name",     "shape",    "rotation",  "velocity",  "angular_velocity",
        "friction", "softness", "collision", "keyframes", NULL};
    const char *name = NULL;
    if (need_object(c, j, path) || check_keys(c, j, path, keys, NULL) ||
        get_string(c, j, path, "name", 1, &name) || set_name(c, path, name, t->name) ||
        parse_moving(c, j, path, &t->shape, t->rotation, NULL, t->velocity, t->angular_velocity,
                     &t->friction, &t->softness) ||
        get_bool(c, j, path, "collision", &t->collision) ||
        parse_keyframes(c, j, path, t->shape.center, t->keyframes, &t->n_keyframes))
        return -1;
    return 0;
}

static int tool_item(const ctx *c, const cJSON *j, const char *path, int i, firn_scene_def *def)
{
    return parse_tool(c, j, path, &def->tools[i]);
}

static int parse_tools(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    return parse_list(c, j, "tools", "tools", FIRN_MAX_TOOLS, &def->n_tools, def, tool_item);
}

static int parse_coupling(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"rigid_mpm", "cpic",    "mpm_sph",  "sph_rigid",
                                       "pbd_rigid", "mpm_pbd", "tool_mpm", "fem_rigid",
                                       "fem_mpm",   "fem_sph", NULL};
    if (need_object(c, j, "coupling") || check_keys(c, j, "coupling", keys, NULL) ||
        get_bool(c, j, "coupling", "rigid_mpm", &def->coupling_rigid_mpm) ||
        get_bool(c, j, "coupling", "mpm_sph", &def->coupling_mpm_sph) ||
        get_bool(c, j, "coupling", "sph_rigid", &def->coupling_sph_rigid) ||
        get_bool(c, j, "coupling", "pbd_rigid", &def->coupling_pbd_rigid) ||
        get_bool(c, j, "coupling", "mpm_pbd", &def->coupling_mpm_pbd) ||
        get_bool(c, j, "coupling", "cpic", &def->coupling_cpic) ||
        get_bool(c, j, "coupling", "tool_mpm", &def->coupling_tool_mpm) ||
        get_bool(c, j, "coupling", "fem_rigid", &def->coupling_fem_rigid) ||
        get_bool(c, j, "coupling", "fem_mpm", &def->coupling_fem_mpm) ||
        get_bool(c, j, "coupling", "fem_sph", &def->coupling_fem_sph))
        return -1;
    return 0;
}

static int parse_sph(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"particle_size",
                                       "lower",
                                       "upper",
                                       "max_divergence_error",
                                       "max_density_error",
                                       "max_divergence_iterations",
                                       "max_density_iterations",
                                       "lattice",
                                       "walls",
                                       NULL};
    static const char *const lattices[2] = {"rest_density", "genesis"};
    static const char *const walls[2] = {"boundary", "clamp"};
    const char *lattice = NULL, *wall = NULL;
    if (need_object(c, j, "sph") || check_keys(c, j, "sph", keys, NULL) ||
        get_float(c, j, "sph", "particle_size", &def->sph_particle_size) ||
        get_vec3(c, j, "sph", "lower", def->sph_lower) ||
        get_vec3(c, j, "sph", "upper", def->sph_upper) ||
        get_float(c, j, "sph", "max_divergence_error", &def->sph_divergence_error) ||
        get_float(c, j, "sph", "max_density_error", &def->sph_density_error) ||
        get_int(c, j, "sph", "max_divergence_iterations", 1, 10000,
                &def->sph_divergence_iterations) ||
        get_int(c, j, "sph", "max_density_iterations", 1, 10000, &def->sph_density_iterations) ||
        get_string(c, j, "sph", "lattice", 0, &lattice) ||
        (lattice && pick(c, "sph.lattice", lattice, lattices, 2, &def->sph_lattice_genesis)) ||
        get_string(c, j, "sph", "walls", 0, &wall) ||
        (wall && pick(c, "sph.walls", wall, walls, 2, &def->sph_walls_clamp)))
        return -1;
    if (!get(j, "lower") != !get(j, "upper"))
        return fail(c, get(j, "lower") ? "sph.upper" : "sph.lower",
                    "missing (lower and upper go together)");
    return 0;
}

static int parse_pbd(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"particle_size",
                                       "stretch_iterations",
                                       "bending_iterations",
                                       "density_iterations",
                                       "viscosity_iterations",
                                       "lower",
                                       "upper",
                                       NULL};
    if (need_object(c, j, "pbd") || check_keys(c, j, "pbd", keys, NULL) ||
        get_float(c, j, "pbd", "particle_size", &def->pbd_particle_size) ||
        get_int(c, j, "pbd", "stretch_iterations", 1, 1000, &def->pbd_stretch_iterations) ||
        get_int(c, j, "pbd", "bending_iterations", 0, 1000, &def->pbd_bending_iterations) ||
        get_int(c, j, "pbd", "density_iterations", 0, 1000, &def->pbd_density_iterations) ||
        get_int(c, j, "pbd", "viscosity_iterations", 0, 1000, &def->pbd_viscosity_iterations) ||
        get_vec3(c, j, "pbd", "lower", def->pbd_lower) ||
        get_vec3(c, j, "pbd", "upper", def->pbd_upper))
        return -1;
    if (!get(j, "lower") != !get(j, "upper"))
        return fail(c, get(j, "lower") ? "pbd.upper" : "pbd.lower",
                    "missing (lower and upper go together)");
    return 0;
}

/* The FEM solver's options: "fem": {"damping": 0}. */
static int parse_fem(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"damping", NULL};
    return need_object(c, j, "fem") || check_keys(c, j, "fem", keys, NULL) ||
                   get_float(c, j, "fem", "damping", &def->fem_damping)
               ? -1
               : 0;
}

static int parse_root(const ctx *c, const cJSON *root, firn_scene_def *def)
{
    static const char *const keys[] = {"domain", "gravity",  "time",   "materials", "bodies",
                                       "rigids", "coupling", "output", "name",      "description",
                                       "sph",    "pbd",      "tools",  "fem",       NULL};
    const char *unused;
    if (!cJSON_IsObject(root))
        return fail(c, "", "expected a JSON object at the top level, got %s", json_type(root));
    if (check_keys(c, root, "", keys, NULL) || get_string(c, root, "", "name", 0, &unused) ||
        get_string(c, root, "", "description", 0, &unused))
        return -1;
    if (get(root, "domain") && parse_domain(c, get(root, "domain"), def))
        return -1;
    if (get_vec3(c, root, "", "gravity", def->gravity))
        return -1;
    if (get(root, "time") && parse_time(c, get(root, "time"), def))
        return -1;
    /* Materials before bodies, which refer to them by name. */
    if (get(root, "materials") && parse_materials(c, get(root, "materials"), def))
        return -1;
    if (get(root, "bodies") && parse_bodies(c, get(root, "bodies"), def))
        return -1;
    if (get(root, "rigids") && parse_rigids(c, get(root, "rigids"), def))
        return -1;
    if (get(root, "tools") && parse_tools(c, get(root, "tools"), def))
        return -1;
    if (get(root, "coupling") && parse_coupling(c, get(root, "coupling"), def))
        return -1;
    if (get(root, "sph") && parse_sph(c, get(root, "sph"), def))
        return -1;
    if (get(root, "pbd") && parse_pbd(c, get(root, "pbd"), def))
        return -1;
    if (get(root, "fem") && parse_fem(c, get(root, "fem"), def))
        return -1;
    if (get(root, "output") && parse_output(c, get(root, "output"), def))
        return -1;
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
        fail(&c, "", "file name longer than %d characters", FIRN_PATH_MAX - 1);
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
