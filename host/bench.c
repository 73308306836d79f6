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
    def->pbd_particle_size = L / (float)(N - 1);
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

/* The SPH and PBD neighbour grids' most cells (host/scene.c refuses more). */
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
    def->pbd_particle_size = p;
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
    def->sph_particle_size = p;
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
    const firn_fem *F = &w->fem;
    info->elements = F->E.n;
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
