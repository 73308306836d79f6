/* scene_material.c - the scene's materials: the "materials" section (a
 * model and its keys each) and their checks, the MPM models' here and the
 * SPH, PBD and FEM models' in those solvers' scene files. */
#include "scene_def.h"
#include "scene_internal.h"

#include <cJSON.h>
#include <stdio.h>
#include <string.h>

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

    if (scene_need_object(c, j, path) || scene_check_keys(c, j, path, keys, NULL) ||
        scene_get_string(c, j, path, "model", 1, &model) ||
        scene_pick(c, scene_join(p, path, "model"), model, scene_model_names, FIRN_MODEL_COUNT,
                   &model_i))
        return -1;
    memcpy(name, m->name, sizeof name);
    firn_material_default(m, (firn_model)model_i);
    memcpy(m->name, name, sizeof name);

    for (size_t i = 0; i < sizeof model_keys / sizeof model_keys[0]; i++)
        if (scene_get(j, model_keys[i].key) && !(model_keys[i].models & 1u << model_i))
            return scene_fail(c, scene_join(p, path, model_keys[i].key),
                              "does not apply to a %s material", model);
    if (scene_get_float(c, j, path, "E", &m->E) || scene_get_float(c, j, path, "nu", &m->nu) ||
        scene_get_float(c, j, path, "density", &m->density) ||
        scene_get_float(c, j, path, "theta_c", &m->theta_c) ||
        scene_get_float(c, j, path, "theta_s", &m->theta_s) ||
        scene_get_float(c, j, path, "hardening", &m->hardening) ||
        scene_get_float(c, j, path, "max_hardening", &m->max_hardening) ||
        scene_get_float(c, j, path, "friction_angle", &m->friction_angle) ||
        scene_get_float(c, j, path, "friction_angle_2", &m->friction_angle_2) ||
        scene_get_float(c, j, path, "I0", &m->inertial_I0) ||
        scene_get_float(c, j, path, "grain_diameter", &m->grain_diameter) ||
        scene_get_float(c, j, path, "grain_density", &m->grain_density) ||
        scene_get_float(c, j, path, "yield_stress", &m->yield_stress) ||
        scene_get_float(c, j, path, "crit_strain", &m->crit_strain) ||
        scene_get_float(c, j, path, "damage_rate", &m->damage_rate) ||
        scene_get_float(c, j, path, "stiffness", &m->stiffness) ||
        scene_get_float(c, j, path, "exponent", &m->exponent) ||
        scene_get_float(c, j, path, "viscosity", &m->viscosity) ||
        scene_get_float(c, j, path, "surface_tension", &m->surface_tension) ||
        scene_get_float(c, j, path, "stretch_compliance", &m->stretch_compliance) ||
        scene_get_float(c, j, path, "bending_compliance", &m->bending_compliance) ||
        scene_get_float(c, j, path, "air_resistance", &m->air_resistance) ||
        scene_get_float(c, j, path, "static_friction", &m->static_friction) ||
        scene_get_float(c, j, path, "kinetic_friction", &m->kinetic_friction) ||
        scene_get_float(c, j, path, "density_relaxation", &m->density_relaxation) ||
        scene_get_float(c, j, path, "viscosity_relaxation", &m->viscosity_relaxation) ||
        scene_get_string(c, j, path, "law", 0, &law) ||
        scene_pick(c, scene_join(p, path, "law"), law, scene_law_names, 2, &law_i) ||
        scene_get_string(c, j, path, "pressure_solver", 0, &pressure) ||
        scene_pick(c, scene_join(p, path, "pressure_solver"), pressure, scene_pressure_names, 2,
                   &pressure_i) ||
        scene_get_string(c, j, path, "cone_fit", 0, &cone) ||
        scene_pick(c, scene_join(p, path, "cone_fit"), cone, scene_cone_fit_names,
                   FIRN_CONE_FIT_COUNT, &cone_i) ||
        scene_get_string(c, j, path, "rheology", 0, &rheology) ||
        scene_pick(c, scene_join(p, path, "rheology"), rheology, scene_rheology_names,
                   FIRN_RHEOLOGY_COUNT, &rheology_i))
        return -1;
    static const char *const mu_i_keys[4] = {"friction_angle_2", "I0", "grain_diameter",
                                             "grain_density"};
    for (int k = 0; k < 4; k++)
        if (rheology_i != FIRN_RHEOLOGY_MU_I && scene_get(j, mu_i_keys[k]))
            return scene_fail(c, scene_join(p, path, mu_i_keys[k]),
                              "applies only with rheology mu_i");
    m->law = (firn_elastic_law)law_i;
    m->cone_fit = (firn_cone_fit)cone_i;
    m->rheology = (firn_rheology)rheology_i;
    m->pressure_solver = (firn_pressure_solver)pressure_i;
    return 0;
}

int scene_parse_materials(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    char p[KEYPATH_MAX];
    const cJSON *m;
    if (scene_need_object(c, j, "materials"))
        return -1;
    if (cJSON_GetArraySize(j) > FIRN_MAX_MATERIALS)
        return scene_fail(c, "materials", "%d materials; at most %d are allowed",
                          cJSON_GetArraySize(j), FIRN_MAX_MATERIALS);
    cJSON_ArrayForEach(m, j)
    {
        firn_material_def *mat = &def->materials[def->n_materials];
        scene_join(p, "materials", m->string);
        if (!m->string[0])
            return scene_fail(c, "materials", "empty material name");
        if (strlen(m->string) >= FIRN_NAME_MAX)
            return scene_fail(c, p, "name longer than %d characters", FIRN_NAME_MAX - 1);
        for (int i = 0; i < def->n_materials; i++)
            if (!strcmp(def->materials[i].name, m->string))
                return scene_fail(c, p, "duplicate material name");
        snprintf(mat->name, sizeof mat->name, "%s", m->string);
        if (parse_material(c, m, p, mat))
            return -1;
        def->n_materials++;
    }
    return 0;
}

static int validate_material(const ctx *c, const firn_scene_def *def, int i)
{
    const firn_material_def *m = &def->materials[i];
    char base[KEYPATH_MAX], p[KEYPATH_MAX];

    scene_material_path(base, def, i);
    if (!memchr(m->name, '\0', FIRN_NAME_MAX))
        return scene_fail(c, base, "name is not NUL-terminated");
    if (scene_has_control_char(m->name))
        return scene_fail(c, base, "name has a control character");
    for (int j = 0; j < i; j++)
        if (m->name[0] && !strcmp(m->name, def->materials[j].name))
            return scene_fail(c, base, "duplicate material name");
    if ((int)m->model < 0 || m->model >= FIRN_MODEL_COUNT)
        return scene_fail(c, scene_join(p, base, "model"), "unknown model %d", (int)m->model);
    if ((int)m->law < 0 || (int)m->law > FIRN_LAW_NEOHOOKEAN)
        return scene_fail(c, scene_join(p, base, "law"), "unknown law %d", (int)m->law);
    if (m->model == FIRN_MODEL_SPH_LIQUID)
        return scene_validate_sph_material(c, m, base);
    if (m->model == FIRN_MODEL_PBD_CLOTH || m->model == FIRN_MODEL_PBD_PARTICLE ||
        m->model == FIRN_MODEL_PBD_LIQUID)
        return scene_validate_pbd_material(c, m, base);
    if (FIRN_MODEL_IS_FEM(m->model))
        return scene_validate_fem_material(c, m, base);
    if (scene_need(c, scene_join(p, base, "E"), m->E, m->E > 0, "must be > 0") ||
        scene_need(c, scene_join(p, base, "nu"), m->nu, m->nu >= 0 && m->nu < 0.5f,
                   "must be in [0, 0.5)") ||
        scene_need(c, scene_join(p, base, "density"), m->density, m->density > 0, "must be > 0"))
        return -1;
    switch (m->model) {
    case FIRN_MODEL_LIQUID:
        /* A liquid's pressure is lambda J (J - 1), and lambda = 0 at nu = 0. */
        if (m->nu == 0)
            return scene_fail(c, scene_join(p, base, "nu"),
                              "0: a liquid needs nu > 0 (no pressure otherwise)");
        break;
    case FIRN_MODEL_SNOW:
        if (scene_need(c, scene_join(p, base, "theta_c"), m->theta_c,
                       m->theta_c > 0 && m->theta_c < 1, "must be in (0, 1)") ||
            scene_need(c, scene_join(p, base, "theta_s"), m->theta_s, m->theta_s >= 0,
                       "must be >= 0") ||
            scene_need(c, scene_join(p, base, "hardening"), m->hardening, m->hardening >= 0,
                       "must be >= 0") ||
            scene_need(c, scene_join(p, base, "max_hardening"), m->max_hardening,
                       m->max_hardening == 0 || m->max_hardening >= 1,
                       "must be 0 (no cap) or >= 1"))
            return -1;
        break;
    case FIRN_MODEL_SAND:
        if (scene_need(c, scene_join(p, base, "friction_angle"), m->friction_angle,
                       m->friction_angle >= 0 && m->friction_angle < 90,
                       "must be in [0, 90) degrees"))
            return -1;
        if ((int)m->cone_fit < 0 || (int)m->cone_fit >= FIRN_CONE_FIT_COUNT)
            return scene_fail(c, scene_join(p, base, "cone_fit"), "unknown cone fit %d",
                              (int)m->cone_fit);
        if ((int)m->rheology < 0 || (int)m->rheology >= FIRN_RHEOLOGY_COUNT)
            return scene_fail(c, scene_join(p, base, "rheology"), "unknown rheology %d",
                              (int)m->rheology);
        if (m->rheology == FIRN_RHEOLOGY_MU_I) {
            const float phi2 = firn_sand_friction_angle_2(m);
            if (!(phi2 > m->friction_angle && phi2 < 90))
                return scene_fail(
                    c, scene_join(p, base, "friction_angle_2"),
                    "%g deg%s: must be above friction_angle (%g) and below 90", phi2,
                    m->friction_angle_2 > 0 ? "" : " (friction_angle + 11.86, the default)",
                    m->friction_angle);
            if (scene_need(c, scene_join(p, base, "I0"), m->inertial_I0, m->inertial_I0 > 0,
                           "must be > 0") ||
                scene_need(c, scene_join(p, base, "grain_diameter"), m->grain_diameter,
                           m->grain_diameter > 0, "must be > 0") ||
                scene_need(c, scene_join(p, base, "grain_density"), m->grain_density,
                           m->grain_density > 0, "must be > 0"))
                return -1;
        }
        break;
    case FIRN_MODEL_VON_MISES:
        if (scene_need(c, scene_join(p, base, "yield_stress"), m->yield_stress, m->yield_stress > 0,
                       "must be > 0"))
            return -1;
        break;
    case FIRN_MODEL_FRACTURE:
        if (scene_need(c, scene_join(p, base, "crit_strain"), m->crit_strain, m->crit_strain > 0,
                       "must be > 0") ||
            scene_need(c, scene_join(p, base, "damage_rate"), m->damage_rate,
                       m->damage_rate > 0 && m->damage_rate <= 1e9,
                       "must be in (0, 1e9] [1/s]: damage per second past crit_strain"))
            return -1;
        break;
    default:
        break;
    }
    return 0;
}

int scene_validate_materials(const ctx *c, const firn_scene_def *def)
{
    if (def->n_materials < 0 || def->n_materials > FIRN_MAX_MATERIALS)
        return scene_fail(c, "materials", "%d materials; at most %d are allowed", def->n_materials,
                          FIRN_MAX_MATERIALS);
    for (int i = 0; i < def->n_materials; i++)
        if (validate_material(c, def, i))
            return -1;
    return 0;
}
