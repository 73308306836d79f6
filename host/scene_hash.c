/* scene_hash.c - the 64-bit FNV-1a hash of what a scene simulates, which a
 * world takes at its creation (host/world.c) and a checkpoint's header
 * holds (host/checkpoint.c), so that a checkpoint resumes only its own
 * scene. */
#include <stdio.h>
#include <string.h>

#include "fem.h"
#include "pbd.h"
#include "scene_hash.h"

static void mix(uint64_t *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        *h = (*h ^ p[i]) * 0x100000001b3ull;
}

#define MIX(h, field) mix(h, &(field), sizeof(field))

static void mix_string(uint64_t *h, const char *s, size_t size)
{
    mix(h, s, strnlen(s, size));
    mix(h, "", 1);
}

/* A mesh by its file's contents (its path depends on where the run
 * started); a file that cannot be read by its path (the world cannot be
 * made of it either). */
static void mix_mesh(uint64_t *h, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        mix_string(h, path, FIRN_PATH_MAX);
        return;
    }
    unsigned char buf[8192];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;)
        mix(h, buf, n);
    fclose(f);
}

static void mix_shape(uint64_t *h, const firn_shape_def *s)
{
    MIX(h, s->type), MIX(h, s->center), MIX(h, s->size), MIX(h, s->radius), MIX(h, s->height);
    MIX(h, s->axis), MIX(h, s->scale);
    if (s->type == FIRN_SHAPE_MESH)
        mix_mesh(h, s->file);
}

static void mix_rigid(uint64_t *h, const firn_rigid_def *r)
{
    const firn_rigid_shape_def *s = &r->shape;
    mix_string(h, r->name, FIRN_NAME_MAX);
    MIX(h, s->type), MIX(h, s->center), MIX(h, s->size), MIX(h, s->radius), MIX(h, s->height);
    MIX(h, s->axis), MIX(h, s->normal), MIX(h, s->scale);
    if (s->type == FIRN_RSHAPE_MESH)
        mix_mesh(h, s->file);
    MIX(h, r->motion), MIX(h, r->rotation), MIX(h, r->density), MIX(h, r->velocity);
    MIX(h, r->angular_velocity), MIX(h, r->friction), MIX(h, r->softness);
    MIX(h, r->restitution), MIX(h, r->couple), MIX(h, r->n_keyframes);
    for (int k = 0; k < r->n_keyframes && k < FIRN_MAX_KEYFRAMES; k++) {
        const firn_keyframe_def *key = &r->keyframes[k];
        MIX(h, key->t), MIX(h, key->position), MIX(h, key->rotation);
    }
}

/* Field by field, so that padding and the bytes after a string's end never
 * count. */
uint64_t firn_scene_hash(const firn_scene_def *d)
{
    uint64_t h = 0xcbf29ce484222325ull;
    MIX(&h, d->lower), MIX(&h, d->upper), MIX(&h, d->dx);
    for (int f = 0; f < 6; f++)
        MIX(&h, d->walls[f].type), MIX(&h, d->walls[f].friction);
    MIX(&h, d->gravity), MIX(&h, d->frame_dt), MIX(&h, d->cfl), MIX(&h, d->dt);
    MIX(&h, d->force_dt), MIX(&h, d->n_materials);
    for (int k = 0; k < d->n_materials && k < FIRN_MAX_MATERIALS; k++) {
        const firn_material_def *m = &d->materials[k];
        mix_string(&h, m->name, FIRN_NAME_MAX);
        MIX(&h, m->model), MIX(&h, m->law), MIX(&h, m->E), MIX(&h, m->nu), MIX(&h, m->density);
        MIX(&h, m->theta_c), MIX(&h, m->theta_s), MIX(&h, m->hardening);
        MIX(&h, m->max_hardening), MIX(&h, m->friction_angle), MIX(&h, m->yield_stress);
        MIX(&h, m->crit_strain), MIX(&h, m->damage_rate), MIX(&h, m->stiffness);
        MIX(&h, m->exponent), MIX(&h, m->viscosity), MIX(&h, m->surface_tension);
        MIX(&h, m->pressure_solver);
        if (m->cone_fit) /* only when set: scenes without it keep their hashes */
            MIX(&h, m->cone_fit);
        if (m->rheology) { /* the same */
            MIX(&h, m->rheology), MIX(&h, m->friction_angle_2), MIX(&h, m->inertial_I0);
            MIX(&h, m->grain_diameter), MIX(&h, m->grain_density);
        }
        if (m->model == FIRN_MODEL_PBD_CLOTH || m->model == FIRN_MODEL_PBD_PARTICLE ||
            m->model == FIRN_MODEL_PBD_LIQUID) {
            MIX(&h, m->stretch_compliance), MIX(&h, m->bending_compliance);
            MIX(&h, m->air_resistance), MIX(&h, m->static_friction), MIX(&h, m->kinetic_friction);
        }
        if (m->model == FIRN_MODEL_PBD_LIQUID) /* only liquids: other scenes keep their hashes */
            MIX(&h, m->density_relaxation), MIX(&h, m->viscosity_relaxation);
    }
    MIX(&h, d->n_bodies);
    for (int k = 0; k < d->n_bodies && k < FIRN_MAX_BODIES; k++) {
        const firn_body_def *b = &d->bodies[k];
        MIX(&h, b->material), MIX(&h, b->solver);
        mix_shape(&h, &b->shape);
        MIX(&h, b->particles_per_cell), MIX(&h, b->velocity), MIX(&h, b->seed);
        if (b->solver == FIRN_SOLVER_KIND_PBD) { /* only PBD bodies: the others keep their hashes */
            MIX(&h, b->shape.resolution), MIX(&h, b->n_pins), MIX(&h, b->pin_box);
            for (int q = 0; q < b->n_pins && q < FIRN_MAX_PINS; q++)
                MIX(&h, b->pins[q]);
            if (b->pin_box)
                MIX(&h, b->pin_lower), MIX(&h, b->pin_upper);
        }
        if (b->solver == FIRN_SOLVER_KIND_FEM) { /* only FEM bodies, as PBD's */
            MIX(&h, b->shape.cells), MIX(&h, b->n_pins), MIX(&h, b->pin_box);
            MIX(&h, b->fem_implicit);
            for (int q = 0; q < b->n_pins && q < FIRN_MAX_PINS; q++)
                MIX(&h, b->pins[q]);
            if (b->pin_box)
                MIX(&h, b->pin_lower), MIX(&h, b->pin_upper);
        }
    }
    MIX(&h, d->n_rigids);
    for (int k = 0; k < d->n_rigids && k < FIRN_MAX_RIGIDS; k++)
        mix_rigid(&h, &d->rigids[k]);
    MIX(&h, d->coupling.rigid_mpm), MIX(&h, d->coupling.cpic), MIX(&h, d->coupling.mpm_sph);
    MIX(&h, d->coupling.sph_rigid), MIX(&h, d->sph.particle_size), MIX(&h, d->sph.lower);
    MIX(&h, d->sph.upper), MIX(&h, d->sph.divergence_error), MIX(&h, d->sph.density_error);
    MIX(&h, d->sph.divergence_iterations), MIX(&h, d->sph.density_iterations);
    MIX(&h, d->sph.lattice_genesis);
    MIX(&h, d->sph.walls_clamp);
    if (firn_pbd_in_scene(d)) {
        MIX(&h, d->pbd.particle_size), MIX(&h, d->pbd.stretch_iterations);
        MIX(&h, d->pbd.bending_iterations), MIX(&h, d->pbd.lower), MIX(&h, d->pbd.upper);
        MIX(&h, d->coupling.pbd_rigid);
        if (d->pbd.density_iterations != 1 || d->pbd.viscosity_iterations != 1)
            MIX(&h, d->pbd.density_iterations), MIX(&h, d->pbd.viscosity_iterations);
        if (!d->coupling.mpm_pbd) /* only when off: scenes before the pair keep their hashes */
            MIX(&h, d->coupling.mpm_pbd);
    }
    if (firn_fem_in_scene(d)) { /* only with FEM bodies: scenes without them keep their hashes */
        MIX(&h, d->fem.damping), MIX(&h, d->coupling.fem_rigid);
        MIX(&h, d->coupling.fem_mpm), MIX(&h, d->coupling.fem_sph);
    }
    if (d->n_tools > 0) { /* only with tools: scenes without them keep their hashes */
        MIX(&h, d->n_tools), MIX(&h, d->coupling.tool_mpm);
        for (int k = 0; k < d->n_tools && k < FIRN_MAX_TOOLS; k++) {
            const firn_tool_def *t = &d->tools[k];
            firn_rigid_def r;
            memset(&r, 0, sizeof r);
            memcpy(r.name, t->name, sizeof r.name);
            r.shape = t->shape;
            r.motion = FIRN_RIGID_KINEMATIC;
            memcpy(r.rotation, t->rotation, sizeof r.rotation);
            memcpy(r.velocity, t->velocity, sizeof r.velocity);
            memcpy(r.angular_velocity, t->angular_velocity, sizeof r.angular_velocity);
            r.friction = t->friction, r.softness = t->softness, r.couple = t->collision;
            r.n_keyframes = t->n_keyframes;
            memcpy(r.keyframes, t->keyframes, sizeof r.keyframes);
            mix_rigid(&h, &r);
        }
    }
    return h;
}
