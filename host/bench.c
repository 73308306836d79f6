/* bench.c - standard benchmark scenes and the arithmetic of the report. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "bench.h"
#include "error.h"
#include "world.h"

const char *firn_bench_scene_name(firn_bench_scene s)
{
    static const char *names[] = {"sand_block",          "snowball",  "dam_break",  "sph_dam_break",
                                  "sph_dam_break_dfsph", "pbd_cloth", "pbd_liquid", "fem_beam",
                                  "fem_beam_implicit"};
    return s < FIRN_BENCH_SCENES ? names[s] : "?";
}

int firn_bench_scene_is_sph(firn_bench_scene s)
{
    return s == FIRN_BENCH_SPH_DAM || s == FIRN_BENCH_SPH_DAM_DFSPH;
}

int firn_bench_scene_is_pbd(firn_bench_scene s)
{
    return s == FIRN_BENCH_PBD_CLOTH || s == FIRN_BENCH_PBD_LIQUID;
}

int firn_bench_scene_is_fem(firn_bench_scene s)
{
    return s == FIRN_BENCH_FEM || s == FIRN_BENCH_FEM_IMPLICIT;
}

/* fem_beam (bench.h): nx x k x k cells of 6 tets, k = cbrt(count / 24)
 * rounded, nx the count over 6 k^2 rounded (about 4 k). */
static int make_fem_scene(firn_bench_scene scene, firn_bench_layout layout, long long elements,
                          firn_scene_def *def, firn_error *err)
{
    const int k = (int)fmax(2.0, round(cbrt((double)elements / 24.0)));
    const int nx = (int)fmax(2.0, round((double)elements / (6.0 * k * k)));
    if (k > 200) {
        firn_set_error(err, FIRN_E_USAGE,
                       "bench: %s: %lld elements need %d x %d x %d cells; at most about 800 x 200 "
                       "x 200 (192M elements) are allowed",
                       firn_bench_scene_name(scene), elements, nx, k, k);
        return -1;
    }
    const float L = layout == FIRN_BENCH_DENSE ? 0.8f : 0.4f;
    firn_material_def *m = &def->materials[0];
    firn_material_default(m, FIRN_MODEL_FEM_STABLE_NEOHOOKEAN);
    snprintf(m->name, FIRN_NAME_MAX, "jelly");
    m->E = 1e5f;
    m->nu = 0.3f;
    m->density = 1000.0f;
    firn_body_def *b = &def->bodies[0];
    b->solver = FIRN_SOLVER_KIND_FEM;
    b->fem_implicit = scene == FIRN_BENCH_FEM_IMPLICIT;
    b->shape.type = FIRN_SHAPE_BOX;
    b->shape.size[0] = L, b->shape.size[1] = b->shape.size[2] = 0.25f * L;
    b->shape.center[0] = 0.1f + 0.5f * L, b->shape.center[1] = 0.7f, b->shape.center[2] = 0.5f;
    b->shape.cells[0] = nx, b->shape.cells[1] = b->shape.cells[2] = k;
    b->pin_box = 1; /* an FEM body's "fixed" box */
    b->pin_lower[0] = 0.0f, b->pin_lower[1] = 0.0f, b->pin_lower[2] = 0.0f;
    b->pin_upper[0] = 0.1f + 1e-3f * L, b->pin_upper[1] = 1.0f, b->pin_upper[2] = 1.0f;
    def->dx = 0.05f; /* no MPM particles: the MPM grid only has to exist */
    def->frames = 1;
    def->write_ply = def->write_preview = 0;
    return firn_scene_validate(def, err) ? -1 : 0;
}

/* The PBD cloth (bench.h). */
static int make_pbd_scene(firn_bench_layout layout, long long particles, firn_scene_def *def,
                          firn_error *err)
{
    const int N = (int)lrint(sqrt((double)particles));
    const float L = layout == FIRN_BENCH_DENSE ? 0.8f : 0.4f,
                D = layout == FIRN_BENCH_DENSE ? 1.0f : 2.0f;
    for (int a = 0; a < 3; a++)
        def->lower[a] = 0.0f, def->upper[a] = D;
    def->dx = 0.05f;
    firn_material_default(&def->materials[0], FIRN_MODEL_PBD_CLOTH);
    snprintf(def->materials[0].name, FIRN_NAME_MAX, "cloth");
    def->materials[0].bending_compliance = 100.0f;
    firn_body_def *b = &def->bodies[0];
    b->solver = FIRN_SOLVER_KIND_PBD;
    b->shape.type = FIRN_SHAPE_CLOTH_RECT;
    b->shape.axis = 1;
    b->shape.resolution[0] = b->shape.resolution[1] = N;
    b->shape.size[0] = b->shape.size[1] = L;
    const float c[3] = {0.5f * D, 0.8f, 0.5f * D};
    memcpy(b->shape.center, c, sizeof c);
    def->pbd.particle_size = L / (float)(N - 1);
    def->n_rigids = 1;
    firn_rigid_def *r = &def->rigids[0];
    firn_rigid_default(r);
    snprintf(r->name, FIRN_NAME_MAX, "ball");
    r->shape.type = FIRN_RSHAPE_SPHERE;
    r->shape.radius = 0.2f;
    const float rc[3] = {0.5f * D, 0.3f, 0.5f * D};
    memcpy(r->shape.center, rc, sizeof rc);
    r->motion = FIRN_RIGID_STATIC;
    def->frames = 1;
    def->write_ply = def->write_preview = 0;
    (void)err;
    return firn_scene_validate(def, err) ? -1 : 0;
}

/* The SPH and PBD neighbour grids' most cells (the scene reader refuses more). */
#define NBR_MAX_CELLS (1LL << 27)

/* The PBD liquid dam break (bench.h): the SPH dam break's column of
 * pbd_liquid on its lattice (spacing about 0.95 p), against the x-lower wall and the
 * floor of the 1 m cube, edge s. */
static int make_pbd_liquid_scene(firn_bench_layout layout, float s, long long particles,
                                 firn_scene_def *def, firn_error *err)
{
    firn_material_def *m = &def->materials[0];
    firn_body_def *b = &def->bodies[0];
    firn_material_default(m, FIRN_MODEL_PBD_LIQUID);
    snprintf(m->name, FIRN_NAME_MAX, "water");
    b->solver = FIRN_SOLVER_KIND_PBD;
    const double frac[3] = {0.8, 1.2, 1.04};
    const double volume = frac[0] * frac[1] * frac[2] * (double)s * s * s;
    /* The liquid's lattice spacing a is its rest spacing (host/pbd.c),
     * a fixed fraction of p: the box is whole numbers of it. */
    firn_pbd_params P;
    memset(&P, 0, sizeof P);
    P.psize = 1.0f;
    P.upper[0] = P.upper[1] = P.upper[2] = 1.0f;
    firn_pbd_params_kernels(&P);
    const double ratio = firn_pbf_rest_spacing(&P);
    const float a = (float)cbrt(volume / (double)particles), p = (float)(a / ratio);
    def->pbd.particle_size = p;
    int n[3];
    for (int k = 0; k < 2; k++) {
        n[k] = (int)lround(frac[k] * s / a);
        n[k] = n[k] < 1 ? 1 : n[k];
    }
    n[2] = (int)llround((double)particles / ((double)n[0] * n[1]));
    n[2] = n[2] < 1 ? 1 : n[2];
    b->shape.type = FIRN_SHAPE_BOX;
    for (int k = 0; k < 3; k++)
        b->shape.size[k] = (float)n[k] * a;
    b->shape.center[0] = 0.5f * b->shape.size[0];
    b->shape.center[1] = 0.5f * b->shape.size[1];
    b->shape.center[2] = 0.5f;
    def->dx = 0.05f;                       /* no MPM particles: the MPM grid only has to exist */
    const float inv_h = 1.0f / (2.5f * p); /* the PBF support (host/pbd.c) */
    long long cells = 1;
    for (int k = 0; k < 3; k++) {
        int r = (int)ceilf((def->upper[k] - def->lower[k]) * inv_h - 1e-4f);
        cells *= r < 1 ? 1 : r;
    }
    if (cells > NBR_MAX_CELLS) {
        firn_set_error(err, FIRN_E_USAGE,
                       "bench: pbd_liquid %s: %lld particles need particle size %.3g mm, a "
                       "neighbour grid of %lld cells over the 1 m cube; at most 2^27 = %lld are "
                       "allowed (about %s particles)",
                       layout ? "sparse" : "dense", particles, 1e3 * p, cells, NBR_MAX_CELLS,
                       layout ? "8M" : "64M");
        return -1;
    }
    if (b->shape.size[2] > def->upper[2] - def->lower[2]) {
        firn_set_error(err, FIRN_E_USAGE,
                       "bench: pbd_liquid: %lld particles do not fit the 1 m cube", particles);
        return -1;
    }
    def->frames = 1;
    def->write_ply = def->write_preview = 0;
    return firn_scene_validate(def, err) ? -1 : 0;
}

static int check_count(long long particles, firn_error *err)
{
    if (particles < 1000) {
        firn_set_error(err, FIRN_E_USAGE, "bench: at least 1000 particles, got %lld", particles);
        return -1;
    }
    /* Sampling rounds a body's count by up to a few particles per million
     * (238609294 asked gave 238609791 for the dam break): 1 % under the
     * index limit leaves room for it. */
    if (particles > FIRN_BENCH_MAX_PARTICLES) {
        firn_set_error(err, FIRN_E_USAGE,
                       "bench: at most %d particles (1 %% under the 32-bit index limit, as "
                       "sampling rounds up), got %lld",
                       FIRN_BENCH_MAX_PARTICLES, particles);
        return -1;
    }
    return 0;
}

/* The SPH dam break (bench.h): a water column of whole lattice spacings
 * against the x-lower wall and the floor of the 1 m cube, edge s. */
static int make_sph_scene(firn_bench_scene scene, firn_bench_layout layout, float s,
                          long long particles, firn_scene_def *def, firn_error *err)
{
    firn_material_def *m = &def->materials[0];
    firn_body_def *b = &def->bodies[0];
    firn_material_default(m, FIRN_MODEL_SPH_LIQUID);
    snprintf(m->name, FIRN_NAME_MAX, "water");
    m->density = 1000.0f;
    m->viscosity = 5e-5f; /* as scenes/sph_dam_break.json: water-like, not Genesis's 0.005 */
    m->pressure_solver =
        scene == FIRN_BENCH_SPH_DAM_DFSPH ? FIRN_PRESSURE_DFSPH : FIRN_PRESSURE_WCSPH;
    b->solver = FIRN_SOLVER_KIND_SPH;
    const double frac[3] = {0.8, 1.2, 1.04};
    const double volume = frac[0] * frac[1] * frac[2] * (double)s * s * s;
    /* Diameter p from the spacing; then the spacing host/sph.c samples at
     * from p, in its own float arithmetic. */
    const float p = (float)(cbrt(volume / (double)particles) / cbrt(0.8));
    const float a = cbrtf(0.8f * p * p * p);
    def->sph.particle_size = p;
    int n[3];
    for (int k = 0; k < 2; k++) {
        n[k] = (int)lround(frac[k] * s / a);
        if (n[k] < 1)
            n[k] = 1;
    }
    n[2] = (int)llround((double)particles / ((double)n[0] * n[1]));
    if (n[2] < 1)
        n[2] = 1;
    b->shape.type = FIRN_SHAPE_BOX;
    for (int k = 0; k < 3; k++)
        b->shape.size[k] = (float)n[k] * a;
    b->shape.center[0] = 0.5f * b->shape.size[0];
    b->shape.center[1] = 0.5f * b->shape.size[1];
    b->shape.center[2] = 0.5f;
    /* No MPM particles: the MPM grid only has to exist. */
    def->dx = 0.05f;
    /* DFSPH's step has no sound speed in it: at rest the CFL step is the
     * frame's (gravity adds g frame_dt to the speed). 5 ms, as the
     * dam-break test (test/test_sph.c) runs it, keeps it stable. */
    def->frame_dt = 0.005f;
    /* The neighbour grid over the domain, as host/sph.c sizes it. */
    const float inv_h = 1.0f / (2.0f * p);
    long long cells = 1;
    for (int k = 0; k < 3; k++) {
        int r = (int)ceilf((def->upper[k] - def->lower[k]) * inv_h - 1e-4f);
        cells *= r < 1 ? 1 : r;
    }
    if (cells > NBR_MAX_CELLS) {
        firn_set_error(err, FIRN_E_USAGE,
                       "bench: %s %s: %lld particles need particle size %.3g mm, a neighbour grid "
                       "of %lld cells over the 1 m cube; at most 2^27 = %lld are allowed (about "
                       "%s particles)",
                       firn_bench_scene_name(scene), layout ? "sparse" : "dense", particles,
                       1e3 * p, cells, NBR_MAX_CELLS, layout ? "21M" : "168M");
        return -1;
    }
    if (b->shape.size[2] > def->upper[2] - def->lower[2]) {
        firn_set_error(err, FIRN_E_USAGE, "bench: %s: %lld particles do not fit the 1 m cube",
                       firn_bench_scene_name(scene), particles);
        return -1;
    }
    def->frames = 1;
    def->write_ply = def->write_preview = 0;
    return firn_scene_validate(def, err) ? -1 : 0;
}

int firn_bench_make_scene(firn_bench_scene scene, firn_bench_layout layout, long long particles,
                          firn_scene_def *def, firn_error *err)
{
    if (check_count(particles, err))
        return -1;
    if ((unsigned)scene >= FIRN_BENCH_SCENES) {
        firn_set_error(err, FIRN_E_USAGE, "bench: no scene %d", (int)scene);
        return -1;
    }
    firn_scene_default(def);
    snprintf(def->source, sizeof def->source, "bench:%s", firn_bench_scene_name(scene));
    def->n_materials = 1;
    def->n_bodies = 1;
    firn_body_def *b = &def->bodies[0];
    firn_body_default(b);
    b->material = 0;
    b->particles_per_cell = 8.0f;
    firn_material_def *m = &def->materials[0];
    /* Linear size of the body relative to the 1 m domain. */
    float s = layout == FIRN_BENCH_DENSE ? 0.5f : 0.25f;
    if (firn_bench_scene_is_sph(scene))
        return make_sph_scene(scene, layout, s, particles, def, err);
    if (scene == FIRN_BENCH_PBD_LIQUID)
        return make_pbd_liquid_scene(layout, s, particles, def, err);
    if (firn_bench_scene_is_pbd(scene))
        return make_pbd_scene(layout, particles, def, err);
    if (firn_bench_scene_is_fem(scene))
        return make_fem_scene(scene, layout, particles, def, err);
    float volume;
    switch (scene) {
    case FIRN_BENCH_SNOW:
        firn_material_default(m, FIRN_MODEL_SNOW);
        snprintf(m->name, FIRN_NAME_MAX, "snow");
        b->shape.type = FIRN_SHAPE_SPHERE;
        b->shape.radius = 0.62f * s; /* same volume as the cube of edge s */
        b->shape.center[0] = 0.5f, b->shape.center[1] = 0.5f, b->shape.center[2] = 0.5f;
        b->velocity[0] = 4.0f;
        volume = 4.0f / 3.0f * (float)M_PI * b->shape.radius * b->shape.radius * b->shape.radius;
        def->walls[1].type = FIRN_WALL_STICKY;
        break;
    case FIRN_BENCH_DAM:
        firn_material_default(m, FIRN_MODEL_LIQUID);
        snprintf(m->name, FIRN_NAME_MAX, "water");
        b->shape.type = FIRN_SHAPE_BOX;
        /* A water column against the x_lower wall, volume ~ s^3. */
        b->shape.size[0] = 0.8f * s, b->shape.size[1] = 1.2f * s, b->shape.size[2] = 1.04f * s;
        b->shape.center[0] = 0.06f + 0.4f * s, b->shape.center[1] = 0.06f + 0.6f * s;
        b->shape.center[2] = 0.5f;
        volume = b->shape.size[0] * b->shape.size[1] * b->shape.size[2];
        break;
    default:
        firn_material_default(m, FIRN_MODEL_SAND);
        snprintf(m->name, FIRN_NAME_MAX, "sand");
        b->shape.type = FIRN_SHAPE_BOX;
        b->shape.size[0] = b->shape.size[1] = b->shape.size[2] = s;
        b->shape.center[0] = 0.5f, b->shape.center[1] = 0.06f + 0.5f * s, b->shape.center[2] = 0.5f;
        volume = s * s * s;
        break;
    }
    def->dx = cbrtf(volume * b->particles_per_cell / (float)particles);
    /* Bodies must sit two cells inside the walls; a coarse grid shifts them up. */
    float lift = 2.5f * def->dx + 0.01f;
    if (scene != FIRN_BENCH_SNOW && b->shape.center[1] - 0.5f * b->shape.size[1] < lift)
        b->shape.center[1] = lift + 0.5f * b->shape.size[1];
    if (scene == FIRN_BENCH_DAM && b->shape.center[0] - 0.5f * b->shape.size[0] < lift)
        b->shape.center[0] = lift + 0.5f * b->shape.size[0];
    /* At the smallest counts the cells are so coarse (0.1 m at 1000) that
     * the body comes within two cells of the other walls too: the domain
     * grows there, so that every count from 1000 up makes a valid scene. */
    for (int a = 0; a < 3; a++) {
        float h = scene == FIRN_BENCH_SNOW ? b->shape.radius : 0.5f * b->shape.size[a];
        float lo = b->shape.center[a] - h, hi = b->shape.center[a] + h;
        def->lower[a] = fminf(def->lower[a], lo - lift);
        def->upper[a] = fmaxf(def->upper[a], hi + lift);
    }
    def->frames = 1;
    def->write_ply = def->write_preview = 0;
    return firn_scene_validate(def, err) ? -1 : 0;
}

void firn_bench_world_info_get(const firn_world *w, firn_bench_world_info *info)
{
    memset(info, 0, sizeof *info);
    const firn_sph *S = &w->sph;
    const firn_nbr_space *nb = S->n > 0 ? &S->P.nb : w->pbd.G.cells > 0 ? &w->pbd.P.nb : NULL;
    if (w->p.n == 0 && nb) {
        info->nodes = 1;
        for (int a = 0; a < 3; a++) {
            info->grid[a] = nb->res[a];
            info->nodes *= nb->res[a];
        }
    } else {
        info->nodes = 1;
        for (int a = 0; a < 3; a++) {
            info->grid[a] = w->params.n[a];
            info->nodes *= w->params.n[a];
        }
    }
    info->sph_particles = S->n;
    info->iters[0] = S->iters_total[0];
    info->iters[1] = S->iters_total[1];
    info->solves = S->solves;
    if (S->n > 0)
        info->h_over_a = S->P.h / cbrt(S->P.vol);
    const firn_pbd *B = &w->pbd;
    if (B->n > 0) {
        info->pbd_iters[0] = B->stretch_iterations;
        info->pbd_iters[1] = B->bending_iterations;
        info->pbd_iters[2] = B->particle_passes ? B->density_iterations : 0;
        info->pbd_iters[3] = B->particle_passes ? B->viscosity_iterations : 0;
        info->constraints[0] = B->stretch.n;
        info->constraints[1] = B->bend.n;
        info->pbd_rigid = w->coupler.pbd_rigid && w->n_rigids > 0;
        if (B->particle_passes)
            info->h_over_a = B->P.nb.h / firn_pbf_rest_spacing(&B->P);
    }
    const firn_fem *F = &w->fem;
    info->elements = F->E.n;
    info->vertices = F->V.n;
    if (F->E.n > 0 && w->p.n == 0 && S->n == 0 && w->pbd.n == 0) {
        const firn_body_def *b = &w->def.bodies[F->scene_body[0]];
        for (int a = 0; a < 3; a++)
            info->grid[a] = b->shape.cells[a];
        info->nodes = F->V.n;
        info->iters[0] = F->newton_iters;
        info->iters[1] = F->pcg_iters;
        info->solves = F->implicit_solves;
    }
}

double firn_bench_throughput(long long particles, long long substeps, double seconds)
{
    return seconds > 0.0 ? (double)particles * (double)substeps / seconds : 0.0;
}

double firn_bench_traffic(long long particles, long long nodes, int substeps, int fused)
{
    if (particles <= 0 || substeps <= 0)
        return 0.0;
    double state = FIRN_BENCH_STATE_BYTES;
    if (fused)
        state -= FIRN_BENCH_FUSED_SAVES * (double)(substeps - 1) / (double)substeps;
    return state + FIRN_BENCH_NODE_BYTES * (double)nodes / (double)particles;
}

double firn_bench_bandwidth(double throughput, double traffic) { return throughput * traffic; }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double firn_bench_median(const double *v, int n)
{
    double tmp[64];
    if (n > 64)
        n = 64;
    memcpy(tmp, v, (size_t)n * sizeof(double));
    qsort(tmp, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

int firn_bench_parse_counts(const char *s, long long *out, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || v <= 0.0 || n == max)
            return -1;
        switch (tolower((unsigned char)*end)) {
        case 'k':
            v *= 1e3, end++;
            break;
        case 'm':
            v *= 1e6, end++;
            break;
        case 'g':
            v *= 1e9, end++;
            break;
        default:
            break;
        }
        /* Also refuses NaN and infinity, before the conversion. */
        if ((*end != ',' && *end != '\0') || !(v <= 1e15))
            return -1;
        out[n++] = (long long)(v + 0.5);
        s = *end ? end + 1 : end;
        if (*end == ',' && !*s)
            return -1;
    }
    return n > 0 ? n : -1;
}

double firn_bench_host_copy_bandwidth(size_t bytes)
{
    char *a = malloc(bytes), *b = malloc(bytes);
    if (!a || !b) {
        free(a);
        free(b);
        return 0.0;
    }
    memset(a, 1, bytes);
    memset(b, 0, bytes);
    double best = 0.0;
    for (int r = 0; r < 3; r++) {
        double t0 = firn_now();
#pragma omp parallel
        {
            int nt = omp_get_num_threads(), t = omp_get_thread_num();
            size_t chunk = bytes / (size_t)nt, lo = chunk * (size_t)t;
            size_t len = t == nt - 1 ? bytes - lo : chunk;
            memcpy(b + lo, a + lo, len);
        }
        double dt = firn_now() - t0;
        if (dt > 0.0 && 2.0 * (double)bytes / dt > best)
            best = 2.0 * (double)bytes / dt;
    }
    free(a);
    free(b);
    return best;
}

/* ---------------------------------------------------------------- roofline */

double firn_roof_neighbours(double h_over_a)
{
    return 4.0 * M_PI / 3.0 * h_over_a * h_over_a * h_over_a - 1.0;
}

double firn_roof_candidates(double h_over_a) { return 27.0 * h_over_a * h_over_a * h_over_a; }

static firn_roof_phase roof_phase(const char *name, double bytes, double ops)
{
    firn_roof_phase ph;
    memset(&ph, 0, sizeof ph);
    ph.name = name;
    ph.bytes = bytes;
    ph.ops = ops;
    return ph;
}

/* The neighbour search's sort: per particle and per cell of the grid. */
static firn_roof_phase roof_sort(const char *name, double N, double cells, double cand)
{
    return roof_phase(name, FIRN_ROOF_SORT_P_BYTES * N + FIRN_ROOF_SORT_CELL_BYTES * cells,
                      (FIRN_ROOF_SORT_P_OPS + FIRN_ROOF_CANDIDATE_OPS * cand) * N);
}

static int roof_mpm(const firn_roof_case *c, firn_roof_phase *out)
{
    const double N = (double)c->particles;
    const double nodes = c->nodes > 0 ? (double)c->nodes : N / FIRN_ROOF_MPM_PPC;
    double p2g = FIRN_ROOF_MPM_P2G_P_BYTES;
    if (c->fused && c->substeps > 0)
        p2g -= FIRN_BENCH_FUSED_SAVES * (double)(c->substeps - 1) / (double)c->substeps;
    out[0] = roof_phase("clear", FIRN_ROOF_MPM_CLEAR_NODE_BYTES * nodes, 0.0);
    const double constitutive =
        c->mpm_liquid ? FIRN_ROOF_MPM_LIQUID_P_OPS : FIRN_ROOF_MPM_SVD_P_OPS;
    out[1] = roof_phase("p2g", p2g * N + FIRN_ROOF_MPM_P2G_NODE_BYTES * nodes,
                        (FIRN_ROOF_MPM_P2G_P_OPS + constitutive) * N);
    out[2] = roof_phase("grid", FIRN_ROOF_MPM_GRID_NODE_BYTES * nodes,
                        FIRN_ROOF_MPM_GRID_NODE_OPS * nodes);
    out[3] = roof_phase("g2p", FIRN_ROOF_MPM_G2P_P_BYTES * N + FIRN_ROOF_MPM_G2P_NODE_BYTES * nodes,
                        FIRN_ROOF_MPM_G2P_P_OPS * N);
    return 4;
}

static int roof_sph(const firn_roof_case *c, firn_roof_phase *out)
{
    const double N = (double)c->particles, nb = firn_roof_neighbours(c->h_over_a);
    out[0] = roof_sort("sort", N, (double)c->nodes, firn_roof_candidates(c->h_over_a));
    out[1] = roof_phase("density", FIRN_ROOF_SPH_DENSITY_P_BYTES * N,
                        (FIRN_ROOF_SPH_DENSITY_N_OPS * nb + FIRN_ROOF_SPH_WALL_OPS) * N);
    if (c->solver == FIRN_ROOF_DFSPH) {
        const double itd = c->iters[0], itr = c->iters[1], it = itd + itr;
        const double iter_bytes =
            (FIRN_ROOF_DFSPH_DIV_P_BYTES * itd + FIRN_ROOF_DFSPH_DENS_P_BYTES * itr) * N;
        const double iter_ops = (FIRN_ROOF_DFSPH_ITER_N_OPS * nb + FIRN_ROOF_DFSPH_ITER_P_OPS) * N;
        out[2] = roof_phase("pressure", FIRN_ROOF_DFSPH_ONCE_P_BYTES * N + iter_bytes,
                            (FIRN_ROOF_DFSPH_ONCE_N_OPS * nb + FIRN_ROOF_DFSPH_ONCE_P_OPS) * N +
                                iter_ops * it);
        out[2].iterations = it;
        out[2].iter_bytes = it > 0.0 ? iter_bytes / it : 0.0;
        out[2].iter_ops = it > 0.0 ? iter_ops : 0.0;
    } else {
        out[2] =
            roof_phase("pressure", FIRN_ROOF_WCSPH_PRESSURE_P_BYTES * N,
                       (FIRN_ROOF_WCSPH_PRESSURE_N_OPS * nb + FIRN_ROOF_WCSPH_PRESSURE_P_OPS) * N);
    }
    out[3] = roof_phase("integrate", FIRN_ROOF_SPH_INTEGRATE_P_BYTES * N,
                        FIRN_ROOF_SPH_INTEGRATE_P_OPS * N);
    return 4;
}

static int roof_pbf(const firn_roof_case *c, firn_roof_phase *out)
{
    const double N = (double)c->particles, nb = firn_roof_neighbours(c->h_over_a);
    const double di = c->pbd_iters[2], vi = c->pbd_iters[3];
    const firn_roof_phase sort =
        roof_sort("", N, (double)c->nodes, firn_roof_candidates(c->h_over_a));
    out[0] = roof_phase("constraints", FIRN_ROOF_PBD_PREDICT_P_BYTES * N,
                        FIRN_ROOF_PBD_PREDICT_P_OPS * N);
    /* a sort before each density and viscosity iteration and the contact */
    const double sorts = di + vi + 1.0;
    const double bytes = sorts * sort.bytes +
                         di *
                             (FIRN_ROOF_PBF_LAMBDA_P_BYTES + FIRN_ROOF_PBF_DELTA_P_BYTES +
                              FIRN_ROOF_PBD_APPLY_P_BYTES) *
                             N +
                         vi * (FIRN_ROOF_PBF_VISCOSITY_P_BYTES + FIRN_ROOF_PBD_APPLY_P_BYTES) * N +
                         (FIRN_ROOF_PBF_CONTACT_P_BYTES + FIRN_ROOF_PBD_APPLY_P_BYTES) * N;
    const double ops = sorts * sort.ops +
                       di *
                           ((FIRN_ROOF_PBF_LAMBDA_N_OPS + FIRN_ROOF_PBF_DELTA_N_OPS) * nb +
                            FIRN_ROOF_SPH_WALL_OPS + FIRN_ROOF_PBD_APPLY_P_OPS) *
                           N +
                       vi * (FIRN_ROOF_PBF_VISCOSITY_N_OPS * nb + FIRN_ROOF_PBD_APPLY_P_OPS) * N +
                       (FIRN_ROOF_PBF_CONTACT_N_OPS * nb + FIRN_ROOF_PBD_APPLY_P_OPS) * N;
    out[1] = roof_phase("particles", bytes, ops);
    out[2] =
        roof_phase("integrate", FIRN_ROOF_PBD_FINISH_P_BYTES * N, FIRN_ROOF_PBD_FINISH_P_OPS * N);
    return 3;
}

static int roof_cloth(const firn_roof_case *c, firn_roof_phase *out)
{
    const double V = (double)c->particles, S = (double)c->constraints[0],
                 B = (double)c->constraints[1];
    const double si = c->pbd_iters[0], bi = c->pbd_iters[1];
    int k = 0;
    out[k++] =
        roof_phase("constraints",
                   FIRN_ROOF_PBD_PREDICT_P_BYTES * V +
                       si * (FIRN_ROOF_PBD_STRETCH_BYTES * S + FIRN_ROOF_PBD_SWEEP_V_BYTES * V) +
                       bi * (FIRN_ROOF_PBD_BEND_BYTES * B + FIRN_ROOF_PBD_SWEEP_V_BYTES * V),
                   FIRN_ROOF_PBD_PREDICT_P_OPS * V + si * FIRN_ROOF_PBD_STRETCH_OPS * S +
                       bi * FIRN_ROOF_PBD_BEND_OPS * B);
    if (c->rigid_contact)
        out[k++] =
            roof_phase("couple", FIRN_ROOF_PBD_RIGID_P_BYTES * V, FIRN_ROOF_PBD_RIGID_P_OPS * V);
    out[k++] =
        roof_phase("integrate", FIRN_ROOF_PBD_FINISH_P_BYTES * V, FIRN_ROOF_PBD_FINISH_P_OPS * V);
    return k;
}

static int roof_fem(const firn_roof_case *c, firn_roof_phase *out)
{
    const double E = (double)c->particles, V = (double)c->vertices;
    out[0] =
        roof_phase("elements", FIRN_ROOF_FEM_FORCES_E_BYTES * E + FIRN_ROOF_FEM_FORCES_V_BYTES * V,
                   FIRN_ROOF_FEM_FORCES_E_OPS * E);
    if (c->solver == FIRN_ROOF_FEM_IMPLICIT) {
        const double nn = c->iters[0], cg = c->iters[1];
        const double newton_bytes = FIRN_ROOF_NEWTON_E_BYTES * E + FIRN_ROOF_NEWTON_V_BYTES * V,
                     newton_ops = FIRN_ROOF_NEWTON_E_OPS * E + FIRN_ROOF_NEWTON_V_OPS * V;
        const double energy_bytes = FIRN_ROOF_ENERGY_E_BYTES * E + FIRN_ROOF_ENERGY_V_BYTES * V,
                     energy_ops = FIRN_ROOF_ENERGY_E_OPS * E + FIRN_ROOF_ENERGY_V_OPS * V;
        const double cg_bytes = FIRN_ROOF_CG_E_BYTES * E + FIRN_ROOF_CG_V_BYTES * V,
                     cg_ops = FIRN_ROOF_CG_E_OPS * E + FIRN_ROOF_CG_V_OPS * V;
        out[1] = roof_phase("velocity",
                            cg * cg_bytes + nn * (newton_bytes + 2.0 * energy_bytes) + newton_bytes,
                            cg * cg_ops + nn * (newton_ops + 2.0 * energy_ops) + newton_ops);
        out[1].iterations = cg;
        out[1].iter_bytes = cg > 0.0 ? cg_bytes : 0.0;
        out[1].iter_ops = cg > 0.0 ? cg_ops : 0.0;
    } else {
        out[1] = roof_phase("velocity",
                            FIRN_ROOF_FEM_GATHER_E_BYTES * E + FIRN_ROOF_FEM_VELOCITY_V_BYTES * V,
                            FIRN_ROOF_FEM_GATHER_E_OPS * E + FIRN_ROOF_FEM_VELOCITY_V_OPS * V);
    }
    out[2] = roof_phase("position", FIRN_ROOF_FEM_POSITION_V_BYTES * V,
                        FIRN_ROOF_FEM_POSITION_V_OPS * V);
    return 3;
}

int firn_roof_phases(const firn_roof_case *c, firn_roof_phase out[FIRN_ROOF_MAX_PHASES])
{
    if (c->particles <= 0)
        return 0;
    switch (c->solver) {
    case FIRN_ROOF_MPM:
        return roof_mpm(c, out);
    case FIRN_ROOF_WCSPH:
    case FIRN_ROOF_DFSPH:
        return roof_sph(c, out);
    case FIRN_ROOF_PBF:
        return roof_pbf(c, out);
    case FIRN_ROOF_CLOTH:
        return roof_cloth(c, out);
    case FIRN_ROOF_FEM:
    case FIRN_ROOF_FEM_IMPLICIT:
        return roof_fem(c, out);
    }
    return 0;
}

/* max(bytes / bandwidth, ops / rate) in ms; *compute: the operations set it. */
static double roof_time_ms(double bytes, double ops, double bandwidth, double rate, int *compute)
{
    const double tb = bandwidth > 0.0 ? bytes / bandwidth : 0.0;
    const double to = rate > 0.0 ? ops / rate : 0.0;
    if (compute)
        *compute = to > tb;
    return 1e3 * (to > tb ? to : tb);
}

void firn_roof_floor(firn_roof_phase *ph, double bandwidth, double rate, double measured_ms)
{
    ph->floor_ms = roof_time_ms(ph->bytes, ph->ops, bandwidth, rate, &ph->compute_bound);
    ph->measured_ms = measured_ms;
    ph->ratio = ph->floor_ms > 0.0 ? measured_ms / ph->floor_ms : 0.0;
    ph->iter_floor_ms = ph->iterations > 0.0
                            ? roof_time_ms(ph->iter_bytes, ph->iter_ops, bandwidth, rate, NULL)
                            : 0.0;
    ph->iter_ms = ph->iterations > 0.0 ? measured_ms / ph->iterations : 0.0;
}

double firn_bench_host_compute_rate(void)
{
    /* 32 independent chains a thread (vectorised across them where the
     * compiler can), each step a multiply and an add: 2 operations. The
     * chains converge to c / (1 - m), far from denormals and overflow. */
    enum { LANES = 32 };
    const long reps = 1L << 21;
    static volatile float seed = 0.999f, sink;
    double best = 0.0;
    for (int r = 0; r < 3; r++) {
        double ops = 0.0;
        const double t0 = firn_now();
#pragma omp parallel reduction(+ : ops)
        {
            float a[LANES];
            const float m = seed, c = 1e-3f * seed;
            for (int k = 0; k < LANES; k++)
                a[k] = 1e-3f * (float)k;
            for (long it = 0; it < reps; it++)
                for (int k = 0; k < LANES; k++)
                    a[k] = a[k] * m + c;
            float s = 0.0f;
            for (int k = 0; k < LANES; k++)
                s += a[k];
#pragma omp critical
            sink = sink + s;
            ops += 2.0 * LANES * (double)reps;
        }
        const double dt = firn_now() - t0;
        if (dt > 0.0 && ops / dt > best)
            best = ops / dt;
    }
    return best;
}
