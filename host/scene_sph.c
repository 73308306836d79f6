/* scene_sph.c - the scene's SPH part: the "sph" section and its checks,
 * an sph_liquid material's and an SPH body's. */
#include "scene_def.h"
#include "scene_internal.h"

#include <cJSON.h>
#include <math.h>

/* sph_liquid surface_tension (cohesion gamma): the cohesion acts as a
 * spring of angular frequency about sqrt(gamma / (0.8 p^3)) between
 * neighbours, integrated explicitly and not in the CFL step. At gamma = 1
 * and p = 0.02 m its period is 16 ms, 19 WCSPH substeps of water; 100
 * times Genesis's default 0.01. */
#define SPH_MAX_SURFACE_TENSION 1.0f

int scene_parse_sph(const ctx *c, const cJSON *j, firn_scene_def *def)
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
    if (scene_need_object(c, j, "sph") || scene_check_keys(c, j, "sph", keys, NULL) ||
        scene_get_float(c, j, "sph", "particle_size", &def->sph.particle_size) ||
        scene_get_vec3(c, j, "sph", "lower", def->sph.lower) ||
        scene_get_vec3(c, j, "sph", "upper", def->sph.upper) ||
        scene_get_float(c, j, "sph", "max_divergence_error", &def->sph.divergence_error) ||
        scene_get_float(c, j, "sph", "max_density_error", &def->sph.density_error) ||
        scene_get_int(c, j, "sph", "max_divergence_iterations", 1, 10000,
                      &def->sph.divergence_iterations) ||
        scene_get_int(c, j, "sph", "max_density_iterations", 1, 10000,
                      &def->sph.density_iterations) ||
        scene_get_string(c, j, "sph", "lattice", 0, &lattice) ||
        (lattice &&
         scene_pick(c, "sph.lattice", lattice, lattices, 2, &def->sph.lattice_genesis)) ||
        scene_get_string(c, j, "sph", "walls", 0, &wall) ||
        (wall && scene_pick(c, "sph.walls", wall, walls, 2, &def->sph.walls_clamp)))
        return -1;
    if (!scene_get(j, "lower") != !scene_get(j, "upper"))
        return scene_fail(c, scene_get(j, "lower") ? "sph.upper" : "sph.lower",
                          "missing (lower and upper go together)");
    return 0;
}

/* The SPH solver's options (sph.*). */
int scene_validate_sph(const ctx *c, const firn_scene_def *def)
{
    float lo[3], hi[3];
    char q[KEYPATH_MAX];
    int solver = -1;
    if (scene_need(c, "sph.particle_size", def->sph.particle_size,
                   def->sph.particle_size > 0 && def->sph.particle_size < 1e3f, "must be > 0") ||
        scene_need(c, "sph.max_divergence_error", def->sph.divergence_error,
                   def->sph.divergence_error > 0, "must be > 0 (percent)") ||
        scene_need(c, "sph.max_density_error", def->sph.density_error, def->sph.density_error > 0,
                   "must be > 0 (percent)") ||
        scene_need(c, "sph.max_divergence_iterations", def->sph.divergence_iterations,
                   def->sph.divergence_iterations >= 1 && def->sph.divergence_iterations <= 10000,
                   "must be in [1, 10000]") ||
        scene_need(c, "sph.max_density_iterations", def->sph.density_iterations,
                   def->sph.density_iterations >= 1 && def->sph.density_iterations <= 10000,
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
        if (scene_need(c, scene_join_index(q, "sph.lower", k), lo[k], 1, "") ||
            scene_need(c, scene_join_index(q, "sph.upper", k), hi[k], 1, ""))
            return -1;
        if (!(hi[k] - lo[k] >= 2.0f * def->sph.particle_size))
            return scene_fail(
                c, scene_join_index(q, "sph.upper", k),
                "%g: the SPH box must be at least a support radius (2 x particle_size "
                "= %g m) above lower[%d] = %g",
                hi[k], 2.0f * def->sph.particle_size, k, lo[k]);
        total *= ceil((hi[k] - lo[k]) / (2.0 * def->sph.particle_size));
    }
    if (total > (double)(1 << 27))
        return scene_fail(
            c, "sph",
            "the SPH box holds %.4g neighbour cells (edge 2 x particle_size); at most "
            "2^27 are allowed: give sph.lower and sph.upper around the liquid's reach",
            total);
    for (int i = 0; i < def->n_bodies; i++) {
        const firn_material_def *m = &def->materials[def->bodies[i].material];
        if (def->bodies[i].solver != FIRN_SOLVER_KIND_SPH)
            continue;
        if (solver >= 0 && (int)m->pressure_solver != solver)
            return scene_fail(c, scene_material_path(q, def, def->bodies[i].material),
                              "pressure_solver %s differs from another SPH body's %s: one pressure "
                              "solver runs per scene",
                              scene_pressure_names[m->pressure_solver],
                              scene_pressure_names[solver]);
        solver = (int)m->pressure_solver;
    }
    return 0;
}

int scene_validate_sph_material(const ctx *c, const firn_material_def *m, const char *base)
{
    char p[KEYPATH_MAX];
    if (scene_need(c, scene_join(p, base, "density"), m->density, m->density > 0, "must be > 0") ||
        scene_need(c, scene_join(p, base, "stiffness"), m->stiffness, m->stiffness > 0,
                   "must be > 0") ||
        scene_need(c, scene_join(p, base, "exponent"), m->exponent,
                   m->exponent >= 1 && m->exponent <= 20, "must be in [1, 20]") ||
        scene_need(c, scene_join(p, base, "viscosity"), m->viscosity, m->viscosity >= 0,
                   "must be >= 0") ||
        scene_need(
            c, scene_join(p, base, "surface_tension"), m->surface_tension,
            m->surface_tension >= 0 && m->surface_tension <= SPH_MAX_SURFACE_TENSION,
            "must be in [0, 1] (docs/SCENES.md: 100 times Genesis's default; the cohesion is "
            "explicit and not in the CFL step)"))
        return -1;
    if ((int)m->pressure_solver < 0 || m->pressure_solver > FIRN_PRESSURE_DFSPH)
        return scene_fail(c, scene_join(p, base, "pressure_solver"), "unknown pressure solver %d",
                          (int)m->pressure_solver);
    return 0;
}

/* An SPH body: a lattice of spacing sph.particle_size inside the SPH box. */
int scene_validate_sph_body(const ctx *c, const firn_scene_def *def, int i, const double lo_off[3],
                            const double hi_off[3], double volume, double *particles)
{
    const firn_shape_def *s = &def->bodies[i].shape;
    char base[KEYPATH_MAX];
    float lo[3], hi[3];
    scene_join_index(base, "bodies", i);
    firn_sph_box(def, lo, hi);
    *particles = volume / pow(def->sph.particle_size, 3);
    if (*particles < 1.0)
        return scene_fail(c, base,
                          "empty body: a %s of volume %.3g m^3 holds %.3g SPH particles of size "
                          "sph.particle_size = %g m; at least 1 is needed",
                          scene_shape_names[s->type], volume, *particles, def->sph.particle_size);
    for (int k = 0; k < 3; k++) {
        double blo = s->center[k] + lo_off[k], bhi = s->center[k] + hi_off[k];
        double tol = 1e-4 * def->sph.particle_size;
        if (blo < lo[k] - tol || bhi > hi[k] + tol)
            return scene_fail(c, base, "%s spans %c in [%g, %g], outside the SPH box [%g, %g]",
                              scene_shape_names[s->type], scene_axis_names[k], blo, bhi, lo[k],
                              hi[k]);
    }
    return 0;
}
