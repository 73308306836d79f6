/* scene_def.c - the defaults of a scene definition (include/firn.h) and
 * the pure functions of one (host/scene_def.h) that the scene reader's
 * checks and the solvers share. Below everything else of firn's: it calls
 * none of it. */
#include "scene_def.h"

#include <stdio.h>
#include <string.h>

/* ---- defaults ------------------------------------------------------------- */

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

firn_coupling_def firn_coupling_def_default(void)
{
    return (firn_coupling_def){.rigid_mpm = 1,
                               .cpic = 0,
                               .mpm_sph = 1,
                               .sph_rigid = 1,
                               .pbd_rigid = 1,
                               .mpm_pbd = 1,
                               .tool_mpm = 1,
                               .fem_rigid = 1,
                               .fem_mpm = 1,
                               .fem_sph = 1};
}

/* Genesis's SPHOptions; the SPH box is the domain unless given. */
firn_sph_def firn_sph_def_default(void)
{
    return (firn_sph_def){.particle_size = 0.02f,
                          .divergence_error = 0.1f,
                          .density_error = 0.05f,
                          .divergence_iterations = 100,
                          .density_iterations = 100};
}

/* Genesis's PBDOptions; the PBD box is the domain unless given. */
firn_pbd_def firn_pbd_def_default(void)
{
    return (firn_pbd_def){.particle_size = 0.01f,
                          .stretch_iterations = 4,
                          .bending_iterations = 1,
                          .density_iterations = 1,
                          .viscosity_iterations = 1};
}

/* Genesis's FEMOptions. */
firn_fem_def firn_fem_def_default(void) { return (firn_fem_def){.damping = 0.0f}; }

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
    for (int i = 0; i < FIRN_MAX_TOOLS; i++)
        firn_tool_default(&def->tools[i]);
    def->coupling = firn_coupling_def_default();
    def->sph = firn_sph_def_default();
    def->pbd = firn_pbd_def_default();
    def->fem = firn_fem_def_default();
    snprintf(def->out_dir, sizeof def->out_dir, "out");
    def->out_every = 1;
    def->write_ply = 1;
    def->write_preview = 1;
}

/* ---- pure functions of the definition ------------------------------------- */

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

void firn_sph_box(const firn_scene_def *def, float lo[3], float hi[3])
{
    int given = 0;
    for (int a = 0; a < 3; a++)
        given |= def->sph.lower[a] != 0.0f || def->sph.upper[a] != 0.0f;
    for (int a = 0; a < 3; a++) {
        lo[a] = given ? def->sph.lower[a] : def->lower[a];
        hi[a] = given ? def->sph.upper[a] : def->upper[a];
    }
}

void firn_pbd_box(const firn_scene_def *def, float lo[3], float hi[3])
{
    int given = 0;
    for (int a = 0; a < 3; a++)
        given |= def->pbd.lower[a] != 0.0f || def->pbd.upper[a] != 0.0f;
    for (int a = 0; a < 3; a++) {
        lo[a] = given ? def->pbd.lower[a] : def->lower[a];
        hi[a] = given ? def->pbd.upper[a] : def->upper[a];
    }
}

float firn_sand_friction_angle_2(const firn_material_def *def)
{
    return def->friction_angle_2 > 0.0f ? def->friction_angle_2 : def->friction_angle + 11.86f;
}
