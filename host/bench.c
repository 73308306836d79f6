/* bench.c - standard benchmark scenes and the arithmetic of the report. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "bench.h"
#include "error.h"

const char *firn_bench_scene_name(firn_bench_scene s)
{
    static const char *names[] = {"sand_block", "snowball", "dam_break"};
    return s < FIRN_BENCH_SCENES ? names[s] : "?";
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

int firn_bench_make_scene(firn_bench_scene scene, firn_bench_layout layout, long long particles,
                          firn_scene_def *def, firn_error *err)
{
    if (check_count(particles, err))
        return -1;
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

double firn_bench_throughput(long long particles, long long substeps, double seconds)
{
    return seconds > 0.0 ? (double)particles * (double)substeps / seconds : 0.0;
}

double firn_bench_bandwidth(double throughput) { return throughput * FIRN_BENCH_STATE_BYTES; }

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
