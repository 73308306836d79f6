/* sph.c - the SPH solver's setup and host-side reads: parameters and
 * materials from the scene, the initial particles, the CFL limit and the
 * statistics. The phases are in host/sph_cpu.c and kernels/sph.cu. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "sample.h"
#include "scene_def.h"
#include "sph.h"
#include "align.h"

void firn_sph_wall_table(firn_sph_params *P)
{
    /* h = 1: K_tt(q) = int_q^1 dz int_0^sqrt(1 - z^2) (rho^2 / 2) f 2 pi rho drho,
     * K_nn(q) the same with z^2 for rho^2 / 2, f = W'(r) / (r (r^2 + 0.01)),
     * midpoint rule, 256 x 256 points per entry. */
    const double kw = 8.0 / M_PI;
    const int N = 256;
    for (int k = 0; k <= FIRN_SPH_WALL_TABLE; k++) {
        const double q = (double)k / FIRN_SPH_WALL_TABLE;
        double kt = 0.0, kn = 0.0;
        for (int iz = 0; iz < N && q < 1.0; iz++) {
            const double dz = (1.0 - q) / N, z = q + (iz + 0.5) * dz, R = sqrt(1.0 - z * z);
            for (int ir = 0; ir < N; ir++) {
                const double dr = R / N, rho = (ir + 0.5) * dr, r = sqrt(rho * rho + z * z);
                const double dw =
                    r <= 0.5 ? 6.0 * kw * r * (3.0 * r - 2.0) : -6.0 * kw * (1.0 - r) * (1.0 - r);
                const double f = dw / (r * (r * r + 0.01)) * 2.0 * M_PI * rho * dr * dz;
                kt += 0.5 * rho * rho * f;
                kn += z * z * f;
            }
        }
        P->wall_visc_t[k] = (float)kt;
        P->wall_visc_n[k] = (float)kn;
    }
}

static void params_build(const firn_scene_def *def, firn_sph_params *P)
{
    memset(P, 0, sizeof *P);
    const float p = def->sph.particle_size;
    P->psize = p;
    P->h = 2.0f * p;
    P->inv_h = 1.0f / P->h;
    P->kw = 8.0f / ((float)M_PI * P->h * P->h * P->h);
    P->vol = 0.8f * p * p * p; /* Genesis's empirical particle volume */
    firn_sph_box(def, P->lower, P->upper);
    P->nb = firn_nbr_space_of(P->lower, P->upper, P->h);
    for (int a = 0; a < 3; a++)
        P->gravity[a] = def->gravity[a];
    P->walls = !def->sph.walls_clamp;
    P->full_count = 4.0f * (float)M_PI * P->h * P->h * P->h / (3.0f * P->vol);
    firn_sph_wall_table(P);
    P->solver = FIRN_SPH_WCSPH;
    for (int b = 0; b < def->n_bodies; b++)
        if (def->bodies[b].solver == FIRN_SOLVER_KIND_SPH)
            P->solver =
                def->materials[def->bodies[b].material].pressure_solver == FIRN_PRESSURE_DFSPH
                    ? FIRN_SPH_DFSPH
                    : FIRN_SPH_WCSPH;
    P->div_tol = 0.01f * def->sph.divergence_error;
    P->dens_tol = 0.01f * def->sph.density_error;
    P->div_iters = def->sph.divergence_iterations;
    P->dens_iters = def->sph.density_iterations;
}

/* Writes the lattice points of an SPH body from particle q0 on. */
static void write_body(const firn_body_def *b, const firn_prepared_shape *shape, const firn_fill *f,
                       int mat, firn_sph *S, long long q0)
{
    const int n = S->n;
    firn_fill_points(shape, f, S->s.x, n, q0);
    for (long long q = q0; q < q0 + f->count; q++) {
        for (int a = 0; a < 3; a++)
            S->s.v[a * n + q] = b->velocity[a];
        S->s.mat[q] = (uint8_t)mat;
    }
}

/* The host block: the particles and the CPU neighbour grid. */
static size_t host_block_bytes(int n, int cells)
{
    const size_t nn = (size_t)n, f = sizeof(float), i = sizeof(int);
    return 13 * nn * f + 2 * nn * i + (2 * (size_t)cells + cells + 1) * i + nn;
}

size_t firn_sph_host_bytes(const firn_sph *S)
{
    if (S->n == 0)
        return 0;
    size_t bytes = host_block_bytes(S->n, S->P.nb.res[0] * S->P.nb.res[1] * S->P.nb.res[2]);
    if (S->G.nbr)
        bytes += (size_t)S->n * (FIRN_NBR_MAX + 1) * sizeof(int);
    return bytes;
}

size_t firn_sph_device_bytes(int n, int cells)
{
    if (n == 0)
        return 0;
    const size_t nn = (size_t)n, nc = (size_t)cells;
    /* particles: x, v, acc, rho, p, alpha, drho (13 floats), then mat */
    size_t bytes = firn_align256(13 * nn * sizeof(float)) + firn_align256(nn);
    /* grid: key, sorted, start, end, key_sorted, ids, count, err */
    const size_t grid[8] = {nn * 4, nn * 4, nc * 4, nc * 4, nn * 4, nn * 4, nc * 4, nn * 8};
    for (int k = 0; k < 8; k++)
        bytes += firn_align256(grid[k]);
    return bytes;
}

static int alloc_state(firn_sph *S, int n, int cells)
{
    const size_t nn = (size_t)n;
    const size_t bytes = host_block_bytes(n, cells);
    char *b = calloc(1, bytes > 0 ? bytes : 1);
    if (!b)
        return -1;
    S->block = b;
    S->n = S->s.n = n;
    S->s.x = (float *)b;
    S->s.v = S->s.x + 3 * nn;
    S->s.acc = S->s.v + 3 * nn;
    S->s.rho = S->s.acc + 3 * nn;
    S->s.p = S->s.rho + nn;
    S->s.alpha = S->s.p + nn;
    S->s.drho = S->s.alpha + nn;
    S->G.cells = cells;
    S->G.key = (unsigned *)(S->s.drho + nn);
    S->G.sorted = (int *)(S->G.key + nn);
    S->G.start = S->G.sorted + nn;
    S->G.end = S->G.start + cells;
    S->cell_count = S->G.end + cells;
    S->s.mat = (uint8_t *)(S->cell_count + cells + 1);
    return 0;
}

/* The particle volume V: its mass V rho0 and the neighbours of a full
 * support follow. */
static void set_volume(firn_sph *S, const firn_scene_def *def, float vol)
{
    S->P.vol = vol;
    S->P.full_count = 4.0f * (float)M_PI * S->P.h * S->P.h * S->P.h / (3.0f * vol);
    for (int m = 0; m < def->n_materials; m++)
        S->mats[m].mass = vol * def->materials[m].density;
}

/* Counts, allocates and writes the particles of every SPH body, each
 * shape prepared once (a mesh's distance tree is built once). */
static int sample_bodies(firn_sph *S, const firn_scene_def *def, firn_error *err)
{
    /* rest_density: each body fills its shape with a lattice of cells of
     * edge about 0.8^(1/3) p (firn_fill_fit), and the particle volume V is
     * the bodies' exact volume over their particle count, so that they
     * hold their mass rho0 x volume and start at rest density, a particle
     * per cell of volume V (about 0.8 p^3, Genesis's; with several bodies,
     * each cell differs from V by the rounding of its body's layers: the
     * solver has one particle volume). genesis: Genesis's
     * regular lattice of spacing p, whole spacings only, V = 0.8 p^3: 80 %
     * of the mass or less, at 0.8 rho0, which then falls and compresses
     * until its density reaches rho0. */
    const float p = def->sph.lattice_genesis ? def->sph.particle_size : cbrtf(S->P.vol);
    long long total = 0, q = 0;
    double volume = 0.0;
    int rc = -1, n = 0;
    firn_prepared_shape *shapes = calloc((size_t)FIRN_MAX_BODIES, sizeof *shapes);
    firn_fill *fills = calloc((size_t)FIRN_MAX_BODIES, sizeof *fills);
    if (!shapes || !fills) {
        free(shapes);
        free(fills);
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory sampling the SPH bodies");
        return -1;
    }
    for (; n < def->n_bodies; n++) {
        const firn_body_def *b = &def->bodies[n];
        if (b->solver != FIRN_SOLVER_KIND_SPH)
            continue;
        firn_error e;
        if (firn_shape_prepare(&b->shape, &shapes[n], &e)) {
            firn_set_error(err, e.code, "%s%sbodies[%d].shape.%s", def->source,
                           def->source[0] ? ": " : "", n, e.msg);
            goto done;
        }
        double fill_volume = 0.0;
        if (def->sph.lattice_genesis) {
            firn_fill_regular(&shapes[n], p, &fills[n]);
        } else {
            /* clipped to the SPH box; against its faces, which count as the
             * lattice's ghost layers (firn_sph_walls), a first layer half a
             * spacing from a face sums as the interior does (docs/PHYSICS.md
             * 5.1), so the fill reaches the faces */
            const float *lo = S->P.lower, *hi = S->P.upper;
            firn_fill_fit(&shapes[n], p, NULL, NULL, lo, hi, &fills[n]);
            float blo[3], bhi[3];
            firn_shape_bounds(&shapes[n], blo, bhi);
            fill_volume = firn_shape_volume(&shapes[n]);
            for (int a = 0; a < 3; a++)
                fill_volume *= (fminf(bhi[a], hi[a]) - fmaxf(blo[a], lo[a])) / (bhi[a] - blo[a]);
        }
        if (fills[n].count == 0) {
            firn_set_error(err, FIRN_E_SCENE,
                           "%s%sbodies[%d]: the shape holds no SPH particle at sph.particle_size "
                           "= %g m (lattice spacing %g m)",
                           def->source, def->source[0] ? ": " : "", n, def->sph.particle_size, p);
            n++;
            goto done;
        }
        total += fills[n].count;
        volume += fill_volume;
    }
    if (total > FIRN_MAX_PARTICLES) {
        firn_set_error(err, FIRN_E_SCENE,
                       "%s%sthe SPH bodies hold %lld particles; at most %d are allowed",
                       def->source, def->source[0] ? ": " : "", total, FIRN_MAX_PARTICLES);
        goto done;
    }
    rc = 0;
    if (total == 0)
        goto done;
    if (!def->sph.lattice_genesis)
        set_volume(S, def, (float)(volume / (double)total));
    if (alloc_state(S, (int)total, S->P.nb.res[0] * S->P.nb.res[1] * S->P.nb.res[2])) {
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for %lld SPH particles", total);
        rc = -1;
        goto done;
    }
    for (int b = 0; b < def->n_bodies; b++)
        if (def->bodies[b].solver == FIRN_SOLVER_KIND_SPH) {
            write_body(&def->bodies[b], &shapes[b], &fills[b], def->bodies[b].material, S, q);
            q += fills[b].count;
        }
    for (int i = 0; i < S->n; i++)
        S->s.rho[i] = S->mats[S->s.mat[i]].rho0;
    /* The CPU path's neighbour lists: without the memory, every pass walks
     * the cells (the same sums, slower). */
    S->G.nbr = malloc((size_t)S->n * FIRN_NBR_MAX * sizeof(int));
    S->G.nbr_count = malloc((size_t)S->n * sizeof(int));
    if (!S->G.nbr || !S->G.nbr_count) {
        free(S->G.nbr);
        free(S->G.nbr_count);
        S->G.nbr = S->G.nbr_count = NULL;
    }
done:
    for (int b = 0; b < n; b++)
        if (def->bodies[b].solver == FIRN_SOLVER_KIND_SPH)
            firn_shape_release(&shapes[b]);
    free(shapes);
    free(fills);
    return rc;
}

int firn_sph_init(firn_sph *S, const firn_scene_def *def, firn_error *err)
{
    memset(S, 0, sizeof *S);
    params_build(def, &S->P);
    for (int m = 0; m < def->n_materials; m++) {
        const firn_material_def *d = &def->materials[m];
        firn_sph_material *sm = &S->mats[m];
        sm->rho0 = d->density;
        sm->mass = S->P.vol * d->density;
        sm->stiffness = d->stiffness;
        sm->exponent = d->exponent;
        sm->mu = d->viscosity;
        sm->cohesion = d->surface_tension;
    }
    return sample_bodies(S, def, err);
}

void firn_sph_free(firn_sph *S)
{
    free(S->G.nbr);
    free(S->G.nbr_count);
    S->G.nbr = S->G.nbr_count = NULL;
    free(S->block);
    S->block = NULL;
    S->n = S->s.n = 0;
}

float firn_sph_cfl_dt(const firn_sph *S, float cfl, float v_gravity, float *c_out, float *v_out)
{
    float c = 0.0f, nu = 0.0f, v2 = 0.0f;
    int used[FIRN_MAX_MATERIALS] = {0};
    for (int i = 0; i < S->n; i++) {
        firn_vec3 v = firn_load3(S->s.v, S->n, i);
        v2 = firn_maxf(v2, firn_dot(v, v));
        used[S->s.mat[i]] = 1;
    }
    for (int k = 0; k < FIRN_MAX_MATERIALS; k++) {
        const firn_sph_material *m = &S->mats[k];
        if (!used[k])
            continue;
        if (S->P.solver == FIRN_SPH_WCSPH)
            c = firn_maxf(c, sqrtf(m->stiffness * m->exponent / m->rho0));
        nu = firn_maxf(nu, m->mu);
    }
    *c_out = c;
    *v_out = sqrtf(v2);
    float dt = INFINITY, speed = c + sqrtf(v2) + v_gravity;
    if (speed > 0.0f)
        dt = cfl * S->P.h / speed;
    if (nu > 0.0f)
        dt = firn_minf(dt, 0.01f * S->P.h * S->P.h / nu);
    return dt;
}

double firn_sph_pressure_slope(const firn_sph *S, double rho_max)
{
    if (S->P.solver != FIRN_SPH_WCSPH)
        return 0.0;
    int used[FIRN_MAX_MATERIALS] = {0};
    for (int i = 0; i < S->n; i++)
        used[S->s.mat[i]] = 1;
    double slope = 0.0;
    for (int k = 0; k < FIRN_MAX_MATERIALS; k++) {
        const firn_sph_material *m = &S->mats[k];
        if (used[k])
            slope = fmax(slope, m->exponent * m->stiffness / m->rho0 *
                                    pow(fmax(rho_max, m->rho0) / m->rho0, m->exponent - 1.0));
    }
    return slope;
}

void firn_sph_stats(const firn_sph *S, firn_sph_frame_stats *st)
{
    memset(st, 0, sizeof *st);
    const int n = S->n;
    st->particles = n;
    for (int a = 0; a < 3; a++) {
        st->bbox_lower[a] = n ? INFINITY : 0.0f;
        st->bbox_upper[a] = n ? -INFINITY : 0.0f;
    }
    for (int i = 0; i < n; i++) {
        const firn_sph_material *m = &S->mats[S->s.mat[i]];
        double v2 = 0.0;
        for (int a = 0; a < 3; a++) {
            double x = S->s.x[a * n + i], v = S->s.v[a * n + i];
            st->momentum[a] += m->mass * v;
            st->center_of_mass[a] += m->mass * x;
            v2 += v * v;
            st->bbox_lower[a] = firn_minf(st->bbox_lower[a], (float)x);
            st->bbox_upper[a] = firn_maxf(st->bbox_upper[a], (float)x);
        }
        st->kinetic_energy += 0.5 * m->mass * v2;
        st->mass += m->mass;
        st->mean_density += S->s.rho[i];
        st->max_density_ratio = fmax(st->max_density_ratio, S->s.rho[i] / m->rho0);
        st->mean_pressure += S->s.p[i];
    }
    if (n > 0) {
        for (int a = 0; a < 3; a++)
            st->center_of_mass[a] /= st->mass;
        st->mean_density /= n;
        st->mean_pressure /= n;
    }
    st->divergence_iterations = S->iters[0];
    st->density_iterations = S->iters[1];
}
