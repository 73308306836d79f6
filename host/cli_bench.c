/* cli_bench.c - `firn bench`: throughput of the standard scenes over
 * particle counts and backends, with per-phase times, memory and the
 * achieved fraction of the measured copy bandwidth (MPM scenes), or the SPH
 * phases and DFSPH's iterations (SPH scenes), and every phase of every
 * solver against its modelled floor (docs/BENCH.md). */
#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <omp.h>

#include "bench.h"
#include "cli.h"
#include "cuda_backend.h"
#include "output.h"
#include "world.h"

#define MAX_COUNTS       16
#define MAX_THREADS_LIST 8
#define MAX_THREADS      4096

static const char *bench_usage =
    "usage: firn bench [--backend cpu|cuda|both] [--particles LIST] [--scenes LIST]\n"
    "                  [--layout dense|sparse|both] [--substeps N] [--repeats N] [--warmup N]\n"
    "                  [--threads LIST] [--p2g LIST] [--graphs auto|on|off]\n"
    "                  [--json FILE] [--csv FILE]\n"
    "  --particles   comma list with k/m suffixes (default cpu 20k,100k; cuda 100k,1m,8m)\n"
    "  --scenes      sand_block,snowball,dam_break,sph_dam_break,sph_dam_break_dfsph,\n"
    "                pbd_cloth,pbd_liquid,fem_beam,fem_beam_implicit or all (the FEM\n"
    "                cases count elements)\n"
    "                (default the three MPM scenes)\n"
    "  --substeps    substeps per timed repeat (default cpu 10, cuda 100)\n"
    "  --repeats     timed repeats; the median is reported (default 3)\n"
    "  --warmup      untimed substeps first, into motion (default 300)\n"
    "  --threads     CPU: comma list of OpenMP thread counts to run each case with, and\n"
    "                the speedup of each phase over the first (default: OMP_NUM_THREADS)\n"
    "  --p2g         CUDA MPM cases: comma list of atomic, binned, warp, ordered (the\n"
    "                deterministic one), g2p2g (binned, G2P fused into the next P2G),\n"
    "                or all; each case runs with each (default all)\n"
    "  --graphs      CUDA: a call's substeps as CUDA graphs (default auto: where the\n"
    "                world allows; the middle substep is still timed phase by phase)\n"
    "  --json/--csv  write the results (default out/bench/bench.json and .csv)\n";

typedef struct {
    firn_bench_scene scene;
    firn_bench_layout layout;
    firn_backend backend;
    int threads;    /* OpenMP threads of the run (CUDA: of the host) */
    int p2g;        /* CUDA MPM cases: firn_p2g_variant; -1: none (CPU, SPH) */
    int tile_fixed; /* ... whose P2G sums a fixed-point tile (FIRN_P2G_TILE=fixed) */
    long long particles;
    int n[3];
    long long nodes;
    int substeps, repeats, warmup;
    float dt;
    double seconds[64], median, throughput;
    double phase_ms[5]; /* clear, p2g, grid, couple, g2p per substep */
    double memory_bytes, bytes_per_particle, bandwidth, roofline;
    double traffic; /* MPM: the traffic model's bytes per particle-substep (firn_bench_traffic) */
    /* PBD scene (particles: the cloth's vertices): */
    int pbd;
    double pbd_ms[3]; /* constraints (with the prediction), particle passes, integrate per
                         substep */
    /* FEM scenes (particles: the elements; n: the beam's cells; nodes: its
     * vertices): */
    int fem, fem_implicit;
    double fem_ms[3];    /* element forces, vertex velocities (implicit: the solve), positions */
    double fem_iters[2]; /* implicit: Newton and CG iterations per substep */
    /* SPH scenes: */
    int sph, dfsph;
    float psize;         /* particle diameter [m] */
    double sph_ms[4];    /* sort, density, pressure, integrate per substep */
    double sph_iters[2]; /* DFSPH: divergence, density iterations per substep */
    /* The roofline per phase (firn_roof_phases): each phase's floor beside
     * its measured time, and their sums over the modelled phases. */
    int nroof;
    firn_roof_phase roof[FIRN_ROOF_MAX_PHASES];
    double floor_ms, floor_measured_ms, floor_ratio;
} bench_result;

typedef struct {
    int substeps, repeats, warmup;
    int graphs; /* CUDA: --graphs (firn_graph_mode), -1: auto */
} bench_opts;

/* A phase's measured time [ms per substep], by its roofline name. */
static double phase_measured_ms(const bench_result *r, const char *name)
{
    if (r->sph) {
        static const char *k[4] = {"sort", "density", "pressure", "integrate"};
        for (int q = 0; q < 4; q++)
            if (!strcmp(name, k[q]))
                return r->sph_ms[q];
    } else if (r->pbd) {
        if (!strcmp(name, "constraints"))
            return r->pbd_ms[0];
        if (!strcmp(name, "particles"))
            return r->pbd_ms[1];
        if (!strcmp(name, "integrate"))
            return r->pbd_ms[2];
        if (!strcmp(name, "couple")) /* the Coupler's pass: PBD-rigid */
            return r->phase_ms[2];
    } else if (r->fem) {
        static const char *k[3] = {"elements", "velocity", "position"};
        for (int q = 0; q < 3; q++)
            if (!strcmp(name, k[q]))
                return r->fem_ms[q];
    } else {
        static const char *k[5] = {"clear", "p2g", "grid", "couple", "g2p"};
        for (int q = 0; q < 5; q++)
            if (!strcmp(name, k[q]))
                return r->phase_ms[q];
    }
    return 0.0;
}

/* The roofline of a case that has run: its models from the world's info,
 * each phase's floor at the backend's copy bandwidth and compute rate (0:
 * not measured, the bytes alone). */
static void roofline(bench_result *r, const firn_bench_world_info *info, long long model_nodes,
                     int fused, double copy_bw, double rate)
{
    firn_roof_case c;
    memset(&c, 0, sizeof c);
    c.solver = r->fem   ? (r->fem_implicit ? FIRN_ROOF_FEM_IMPLICIT : FIRN_ROOF_FEM)
               : r->sph ? (r->dfsph ? FIRN_ROOF_DFSPH : FIRN_ROOF_WCSPH)
               : r->pbd ? (r->scene == FIRN_BENCH_PBD_LIQUID ? FIRN_ROOF_PBF : FIRN_ROOF_CLOTH)
                        : FIRN_ROOF_MPM;
    c.particles = r->particles;
    c.vertices = info->vertices;
    c.nodes = r->sph || r->pbd ? r->nodes : model_nodes;
    c.h_over_a = info->h_over_a;
    for (int k = 0; k < 2; k++) {
        c.iters[k] = r->fem ? r->fem_iters[k] : r->sph_iters[k];
        c.constraints[k] = info->constraints[k];
    }
    for (int k = 0; k < 4; k++)
        c.pbd_iters[k] = info->pbd_iters[k];
    c.rigid_contact = info->pbd_rigid;
    c.substeps = r->substeps;
    c.fused = fused;
    c.mpm_liquid = r->scene == FIRN_BENCH_DAM;
    r->nroof = firn_roof_phases(&c, r->roof);
    r->floor_ms = r->floor_measured_ms = 0.0;
    for (int k = 0; k < r->nroof; k++) {
        firn_roof_floor(&r->roof[k], copy_bw, rate, phase_measured_ms(r, r->roof[k].name));
        r->floor_ms += r->roof[k].floor_ms;
        r->floor_measured_ms += r->roof[k].measured_ms;
    }
    r->floor_ratio = r->floor_ms > 0.0 ? r->floor_measured_ms / r->floor_ms : 0.0;
}

static int run_case(bench_result *r, const bench_opts *o, double copy_bw, double rate,
                    firn_error *err)
{
    firn_scene_def def;
    if (firn_bench_make_scene(r->scene, r->layout, r->particles, &def, err))
        return -1;
    firn_run_options run = firn_run_options_default();
    run.backend = r->backend;
    if (r->p2g >= 0)
        run.p2g = r->p2g;
    if (o->graphs >= 0)
        run.graphs = o->graphs;
    size_t used0 = r->backend == FIRN_BACKEND_CUDA ? firn_cuda_used_bytes() : 0;
    firn_world *w = firn_world_create_with(&def, &run, err);
    if (!w)
        return -1;
    r->particles = firn_world_particle_count(w);
    r->tile_fixed = r->backend == FIRN_BACKEND_CUDA && firn_device_fixed_tile(w);
    firn_bench_world_info info0, info1;
    firn_bench_world_info_get(w, &info0);
    r->fem = firn_bench_scene_is_fem(r->scene);
    r->fem_implicit = r->scene == FIRN_BENCH_FEM_IMPLICIT;
    if (r->fem)
        r->particles = info0.elements;
    for (int a = 0; a < 3; a++)
        r->n[a] = info0.grid[a];
    r->nodes = info0.nodes;
    r->sph = firn_bench_scene_is_sph(r->scene);
    r->pbd = firn_bench_scene_is_pbd(r->scene);
    r->dfsph = r->scene == FIRN_BENCH_SPH_DAM_DFSPH;
    r->psize = r->sph ? def.sph.particle_size : 0.0f;
    if (r->backend == FIRN_BACKEND_CUDA) {
        r->memory_bytes = (double)(firn_cuda_used_bytes() - used0);
    } else {
        firn_memory m;
        firn_world_memory(w, &m);
        r->memory_bytes = m.host; /* with the SPH, PBD and FEM solvers' state */
    }
    r->bytes_per_particle = r->memory_bytes / (double)r->particles;
    r->substeps = o->substeps;
    r->repeats = o->repeats;
    r->warmup = o->warmup;
    /* Warm up into motion, in chunks that each take the CFL step of their
     * state, as a run does per frame: the first substeps of a scene at rest
     * (C = 0, F = I: the SVD converges at once) cost about half what the
     * moving scene does. Then time at the CFL step of the warmed state. */
    int rc = 0;
    for (int done = 0; done < o->warmup && !rc; done += 50) {
        int n = o->warmup - done < 50 ? o->warmup - done : 50;
        rc = firn_world_run_substeps(w, n, firn_world_cfl_dt(w), err);
    }
    r->dt = firn_world_cfl_dt(w);
    firn_profile p0 = firn_world_profile(w);
    firn_bench_world_info_get(w, &info0);
    for (int k = 0; k < o->repeats && !rc; k++) {
        double t0 = firn_now();
        rc = firn_world_run_substeps(w, o->substeps, r->dt, err);
        r->seconds[k] = firn_now() - t0;
    }
    firn_profile p1 = firn_world_profile(w);
    firn_bench_world_info_get(w, &info1);
    /* The dense grid's nodes for the traffic model: the GPU's, unless sparse
     * (which blocks it touches the host does not see); the CPU's clear and
     * update skip untouched blocks, so it has none either. */
    const int cuda = r->backend == FIRN_BACKEND_CUDA;
    const long long model_nodes = cuda && !firn_device_sparse(w) ? r->nodes : 0;
    const int fused = cuda && firn_device_binned(w) && run.p2g == FIRN_P2G_G2P2G;
    firn_world_destroy(w);
    if (rc)
        return -1;
    long long total = (long long)o->substeps * o->repeats;
    r->median = firn_bench_median(r->seconds, o->repeats);
    r->throughput = firn_bench_throughput(r->particles, o->substeps, r->median);
    r->phase_ms[0] = 1e3 * (p1.clear - p0.clear) / (double)total;
    r->phase_ms[1] = 1e3 * (p1.p2g - p0.p2g) / (double)total;
    r->phase_ms[2] = 1e3 * (p1.grid - p0.grid) / (double)total;
    r->phase_ms[3] = 1e3 * (p1.couple - p0.couple) / (double)total;
    r->phase_ms[4] = 1e3 * (p1.g2p - p0.g2p) / (double)total;
    r->pbd_ms[0] = 1e3 * (p1.pbd_constraints - p0.pbd_constraints) / (double)total;
    r->pbd_ms[1] = 1e3 * (p1.pbd_particles - p0.pbd_particles) / (double)total;
    r->pbd_ms[2] = 1e3 * (p1.pbd_integrate - p0.pbd_integrate) / (double)total;
    r->sph_ms[0] = 1e3 * (p1.sph_sort - p0.sph_sort) / (double)total;
    r->sph_ms[1] = 1e3 * (p1.sph_density - p0.sph_density) / (double)total;
    r->sph_ms[2] = 1e3 * (p1.sph_pressure - p0.sph_pressure) / (double)total;
    r->sph_ms[3] = 1e3 * (p1.sph_integrate - p0.sph_integrate) / (double)total;
    r->fem_ms[0] = 1e3 * (p1.fem_elements - p0.fem_elements) / (double)total;
    r->fem_ms[1] = 1e3 * (p1.fem_velocity - p0.fem_velocity) / (double)total;
    r->fem_ms[2] = 1e3 * (p1.fem_position - p0.fem_position) / (double)total;
    const long long solves = info1.solves - info0.solves;
    for (int k = 0; k < 2; k++) {
        const double per =
            solves > 0 ? (double)(info1.iters[k] - info0.iters[k]) / (double)solves : 0.0;
        if (r->fem)
            r->fem_iters[k] = per;
        else
            r->sph_iters[k] = per;
    }
    /* The traffic model is MPM's; an SPH substep's traffic is its
     * neighbour gathers (docs/BENCH.md): no bandwidth, no roofline. */
    r->traffic = r->sph || r->fem || r->pbd
                     ? 0.0
                     : firn_bench_traffic(r->particles, model_nodes, o->substeps, fused);
    r->bandwidth = firn_bench_bandwidth(r->throughput, r->traffic);
    r->roofline = !r->sph && !r->fem && copy_bw > 0.0 ? r->bandwidth / copy_bw : 0.0;
    roofline(r, &info1, model_nodes, fused, copy_bw, rate);
    return 0;
}

static const char *backend_name(firn_backend b) { return b == FIRN_BACKEND_CUDA ? "cuda" : "cpu"; }
/* The P2G variants a CUDA MPM case can run, in the order bench runs them. */
static const int p2g_variants[] = {FIRN_P2G_ATOMIC, FIRN_P2G_BINNED, FIRN_P2G_WARP,
                                   FIRN_P2G_ORDERED, FIRN_P2G_G2P2G};
#define N_P2G ((int)(sizeof p2g_variants / sizeof p2g_variants[0]))
static const char *p2g_name(int v)
{
    return v == FIRN_P2G_BINNED    ? "binned"
           : v == FIRN_P2G_WARP    ? "warp"
           : v == FIRN_P2G_ORDERED ? "ordered"
           : v == FIRN_P2G_G2P2G   ? "g2p2g"
                                   : "atomic";
}

static const char *solver_name(const bench_result *r)
{
    if (r->fem)
        return r->fem_implicit ? "fem_implicit" : "fem";
    return r->pbd ? "pbd" : !r->sph ? "mpm" : r->dfsph ? "dfsph" : "wcsph";
}

/* A number, or JSON's null / CSV's empty field where it does not apply. */
static void put_num(FILE *f, int apply, double v, int json)
{
    if (apply)
        fprintf(f, "%.6g", v);
    else if (json)
        fputs("null", f);
}

/* A case's roofline per phase, as JSON. */
static void write_json_roofline(FILE *f, const bench_result *x)
{
    fprintf(f, ", \"floor_ms\": %.6g, \"floor_measured_ms\": %.6g, \"floor_ratio\": %.6g",
            x->floor_ms, x->floor_measured_ms, x->floor_ratio);
    fputs(", \"roofline_phases\": [", f);
    for (int k = 0; k < x->nroof; k++) {
        const firn_roof_phase *ph = &x->roof[k];
        fprintf(f,
                "%s{\"phase\": \"%s\", \"bytes\": %.6g, \"ops\": %.6g, \"floor_ms\": %.6g, "
                "\"measured_ms\": %.6g, \"ratio\": %.6g, \"bound\": \"%s\", \"iterations\": ",
                k ? ", " : "", ph->name, ph->bytes, ph->ops, ph->floor_ms, ph->measured_ms,
                ph->ratio, ph->compute_bound ? "compute" : "memory");
        put_num(f, ph->iterations > 0.0, ph->iterations, 1);
        fputs(", \"iteration_floor_ms\": ", f);
        put_num(f, ph->iterations > 0.0, ph->iter_floor_ms, 1);
        fputs(", \"iteration_ms\": ", f);
        put_num(f, ph->iterations > 0.0, ph->iter_ms, 1);
        fputc('}', f);
    }
    fputc(']', f);
}

static void write_json(FILE *f, const bench_result *r, int nr, double cpu_bw, double gpu_bw,
                       double cpu_rate, int complete)
{
    char date[32], dev[512] = "";
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    if (firn_cuda_device_count() > 0)
        firn_cuda_device_describe(0, dev, sizeof dev);
    fprintf(
        f, "{\n  \"schema\": \"firn-bench-1\",\n  \"firn_version\": \"%s\",\n  \"date\": \"%s\",\n",
        FIRN_VERSION, date);
    fprintf(f, "  \"commit\": \"%s\",\n", getenv("FIRN_COMMIT") ? getenv("FIRN_COMMIT") : "");
    for (char *c = dev; *c; c++) /* keep the JSON string valid */
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
            *c = '\'';
    fprintf(f, "  \"cpu_threads\": %d,\n  \"cuda_device\": \"%s\",\n", omp_get_max_threads(), dev);
    fprintf(f, "  \"copy_bandwidth_Bps\": {\"cpu\": %.6g, \"cuda\": %.6g},\n", cpu_bw, gpu_bw);
    /* The GPU's compute rate is not measured: its floors are the bytes'. */
    fprintf(f, "  \"compute_rate_ops\": {\"cpu\": %.6g, \"cuda\": 0},\n", cpu_rate);
    fprintf(f, "  \"state_bytes_per_particle_substep\": %.0f,\n", FIRN_BENCH_STATE_BYTES);
    fprintf(f, "  \"complete\": %s,\n", complete ? "true" : "false");
    fprintf(f, "  \"results\": [\n");
    for (int k = 0; k < nr; k++) {
        const bench_result *x = &r[k];
        fprintf(f,
                "    {\"scene\": \"%s\", \"layout\": \"%s\", \"backend\": \"%s\", \"threads\": %d, "
                "\"particles\": %lld, "
                "\"grid\": [%d, %d, %d], \"nodes\": %lld, \"dt\": %.6g, \"substeps\": %d, "
                "\"repeats\": %d, \"warmup_substeps\": %d, \"seconds\": [",
                firn_bench_scene_name(x->scene), x->layout ? "sparse" : "dense",
                backend_name(x->backend), x->threads, x->particles, x->n[0], x->n[1], x->n[2],
                x->nodes, x->dt, x->substeps, x->repeats, x->warmup);
        for (int i = 0; i < x->repeats; i++)
            fprintf(f, "%s%.6g", i ? ", " : "", x->seconds[i]);
        fprintf(f,
                "], \"median_seconds\": %.6g, \"particle_substeps_per_second\": %.6g, "
                "\"phase_ms\": {\"clear\": %.6g, \"p2g\": %.6g, \"grid\": %.6g, \"couple\": %.6g, "
                "\"g2p\": %.6g}, \"memory_bytes\": %.6g, \"bytes_per_particle\": %.6g, "
                "\"bandwidth_Bps\": ",
                x->median, x->throughput, x->phase_ms[0], x->phase_ms[1], x->phase_ms[2],
                x->phase_ms[3], x->phase_ms[4], x->memory_bytes, x->bytes_per_particle);
        put_num(f, !x->sph && !x->pbd && !x->fem, x->bandwidth, 1);
        fputs(", \"traffic_bytes_per_particle_substep\": ", f);
        put_num(f, !x->sph && !x->pbd && !x->fem, x->traffic, 1);
        fputs(", \"roofline_fraction\": ", f);
        put_num(f, !x->sph && !x->pbd && !x->fem, x->roofline, 1);
        fprintf(f,
                ", \"solver\": \"%s\", \"sph_particle_size\": %.6g, \"sph_phase_ms\": "
                "{\"sort\": %.6g, \"density\": %.6g, \"pressure\": %.6g, \"integrate\": %.6g}, "
                "\"sph_iterations_per_substep\": ",
                solver_name(x), x->psize, x->sph_ms[0], x->sph_ms[1], x->sph_ms[2], x->sph_ms[3]);
        if (x->dfsph)
            fprintf(f, "{\"divergence\": %.6g, \"density\": %.6g}", x->sph_iters[0],
                    x->sph_iters[1]);
        else
            fputs("null", f);
        fprintf(f,
                ", \"pbd_phase_ms\": {\"constraints\": %.6g, \"particles\": %.6g, \"integrate\": "
                "%.6g}",
                x->pbd_ms[0], x->pbd_ms[1], x->pbd_ms[2]);
        fprintf(f,
                ", \"fem_phase_ms\": {\"elements\": %.6g, \"velocity\": %.6g, \"position\": "
                "%.6g}, \"fem_iterations_per_substep\": ",
                x->fem_ms[0], x->fem_ms[1], x->fem_ms[2]);
        if (x->fem_implicit)
            fprintf(f, "{\"newton\": %.6g, \"cg\": %.6g}", x->fem_iters[0], x->fem_iters[1]);
        else
            fputs("null", f);
        fputs(", \"p2g\": ", f);
        if (x->p2g >= 0)
            fprintf(f, "\"%s\", \"p2g_tile\": \"%s\"", p2g_name(x->p2g),
                    x->tile_fixed ? "fixed" : "float");
        else
            fputs("null, \"p2g_tile\": null", f);
        write_json_roofline(f, x);
        fprintf(f, "}%s\n", k + 1 < nr ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
}

static void write_csv(FILE *f, const bench_result *r, int nr, double cpu_rate)
{
    fprintf(f, "scene,layout,backend,particles,nx,ny,nz,substeps,repeats,median_seconds,"
               "particle_substeps_per_second,clear_ms,p2g_ms,grid_ms,couple_ms,g2p_ms,memory_bytes,"
               "bytes_per_particle,bandwidth_Bps,roofline_fraction,threads,solver,"
               "sph_particle_size,sort_ms,density_ms,pressure_ms,integrate_ms,"
               "divergence_iterations,density_iterations,p2g,pbd_constraints_ms,pbd_integrate_ms,"
               "pbd_particles_ms,fem_elements_ms,fem_velocity_ms,fem_position_ms,"
               "newton_iterations,cg_iterations,traffic_bytes,floor_ms,floor_measured_ms,"
               "floor_ratio,compute_rate_ops,roofline_phases,p2g_tile\n");
    for (int k = 0; k < nr; k++) {
        const bench_result *x = &r[k];
        fprintf(f, "%s,%s,%s,%lld,%d,%d,%d,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,",
                firn_bench_scene_name(x->scene), x->layout ? "sparse" : "dense",
                backend_name(x->backend), x->particles, x->n[0], x->n[1], x->n[2], x->substeps,
                x->repeats, x->median, x->throughput, x->phase_ms[0], x->phase_ms[1],
                x->phase_ms[2], x->phase_ms[3], x->phase_ms[4], x->memory_bytes,
                x->bytes_per_particle);
        put_num(f, !x->sph && !x->pbd && !x->fem, x->bandwidth, 0);
        fputc(',', f);
        put_num(f, !x->sph && !x->pbd && !x->fem, x->roofline, 0);
        fprintf(f, ",%d,%s,%.6g,%.6g,%.6g,%.6g,%.6g,", x->threads, solver_name(x), x->psize,
                x->sph_ms[0], x->sph_ms[1], x->sph_ms[2], x->sph_ms[3]);
        put_num(f, x->dfsph, x->sph_iters[0], 0);
        fputc(',', f);
        put_num(f, x->dfsph, x->sph_iters[1], 0);
        fprintf(f, ",%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,", x->p2g >= 0 ? p2g_name(x->p2g) : "",
                x->pbd_ms[0], x->pbd_ms[2], x->pbd_ms[1], x->fem_ms[0], x->fem_ms[1], x->fem_ms[2]);
        put_num(f, x->fem_implicit, x->fem_iters[0], 0);
        fputc(',', f);
        put_num(f, x->fem_implicit, x->fem_iters[1], 0);
        fputc(',', f);
        put_num(f, !x->sph && !x->pbd && !x->fem, x->traffic, 0);
        fprintf(f, ",%.6g,%.6g,%.6g,%.6g,", x->floor_ms, x->floor_measured_ms, x->floor_ratio,
                x->backend == FIRN_BACKEND_CPU ? cpu_rate : 0.0);
        /* phase:floor_ms:measured_ms:ratio, ';' between phases */
        for (int q = 0; q < x->nroof; q++)
            fprintf(f, "%s%s:%.6g:%.6g:%.6g", q ? ";" : "", x->roof[q].name, x->roof[q].floor_ms,
                    x->roof[q].measured_ms, x->roof[q].ratio);
        fprintf(f, ",%s\n", x->p2g < 0 ? "" : x->tile_fixed ? "fixed" : "float");
    }
}

/* The four phases the table shows [ms per substep]: MPM's clear, p2g, grid
 * and g2p (couple only in the files), or SPH's sort, density, pressure and
 * integrate. */
static void shown_phases(const bench_result *r, double out[4])
{
    static const int mpm[4] = {0, 1, 2, 4};
    for (int q = 0; q < 4; q++)
        out[q] = r->sph ? r->sph_ms[q] : r->phase_ms[mpm[q]];
    if (r->pbd) { /* constraints, particle passes, the Coupler's pass (PBD-rigid), integrate */
        out[0] = r->pbd_ms[0];
        out[1] = r->pbd_ms[1];
        out[2] = r->phase_ms[2];
        out[3] = r->pbd_ms[2];
    }
    if (r->fem) { /* element forces, velocities (or the solve), the Coupler's pass, positions */
        out[0] = r->fem_ms[0];
        out[1] = r->fem_ms[1];
        out[2] = r->phase_ms[2];
        out[3] = r->fem_ms[2];
    }
}

/* The table a case's row belongs to: 0 MPM, 1 SPH, 2 PBD, 3 FEM. */
static int row_kind(const bench_result *r) { return r->fem ? 3 : r->pbd ? 2 : r->sph; }

/* After a thread sweep: each CPU case's time per substep, and that of each
 * phase, at the first thread count over that at each other count. */
static void print_scaling(const bench_result *r, int nr, int nthreads)
{
    int cpu = 0;
    for (int k = 0; k < nr; k++)
        cpu |= r[k].backend == FIRN_BACKEND_CPU;
    if (nthreads < 2 || !cpu)
        return;
    printf("thread scaling (speedup over the first thread count, from ms per substep):\n");
    int kind = -1;
    for (int k = 0; k + nthreads <= nr; k++) {
        const bench_result *b = &r[k];
        if (b->backend != FIRN_BACKEND_CPU)
            continue;
        if (row_kind(b) != kind) {
            kind = row_kind(b);
            if (kind == 3)
                printf("%-17s %-6s %10s %7s %7s %7s %7s %7s %7s\n", "scene", "layout", "elements",
                       "threads", "total", "forces", "veloc", "couple", "posit");
            else if (kind == 2)
                printf("%-10s %-6s %10s %7s %7s %7s %7s %7s %7s\n", "scene", "layout", "vertices",
                       "threads", "total", "constr", "couple", "integr", "-");
            else if (kind)
                printf("%-19s %-6s %10s %7s %7s %7s %7s %7s %7s\n", "scene", "layout", "particles",
                       "threads", "total", "sort", "density", "press", "integr");
            else
                printf("%-10s %-6s %10s %7s %7s %7s %7s %7s %7s\n", "scene", "layout", "particles",
                       "threads", "total", "clear", "p2g", "grid", "g2p");
        }
        for (int j = 1; j < nthreads; j++) {
            const bench_result *x = &r[k + j];
            double bp[4], xp[4], sp[4];
            shown_phases(b, bp);
            shown_phases(x, xp);
            for (int q = 0; q < 4; q++)
                sp[q] = xp[q] > 0.0 ? bp[q] / xp[q] : 0.0;
            printf("%-*s %-6s %10lld %3d/%-3d %6.2fx %6.2fx %6.2fx %6.2fx %6.2fx\n",
                   x->sph   ? 19
                   : x->fem ? 17
                            : 10,
                   firn_bench_scene_name(x->scene), x->layout ? "sparse" : "dense", x->particles,
                   x->threads, b->threads, x->median > 0.0 ? b->median / x->median : 0.0, sp[0],
                   sp[1], sp[2], sp[3]);
        }
        k += nthreads - 1;
    }
}

/* path's temporary (path.tmp.<pid>, its name left in tmp), created fresh;
 * NULL with the reason printed. */
static FILE *open_temp(const char *path, char *tmp, size_t size)
{
    snprintf(tmp, size, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = firn_fopen_fresh(tmp);
    if (!f)
        fprintf(stderr, "firn: error: cannot write %s: %s\n", tmp, strerror(errno));
    return f;
}

static int write_file(const char *path, const bench_result *r, int nr, double cpu_bw, double gpu_bw,
                      double cpu_rate, int json, int complete)
{
    char tmp[FIRN_PATH_MAX + 32];
    FILE *f = open_temp(path, tmp, sizeof tmp);
    if (!f)
        return FIRN_E_IO;
    if (json)
        write_json(f, r, nr, cpu_bw, gpu_bw, cpu_rate, complete);
    else
        write_csv(f, r, nr, cpu_rate);
    int bad = ferror(f);
    if (fclose(f) || bad || rename(tmp, path)) {
        fprintf(stderr, "firn: error: cannot write %s: %s\n", path,
                bad ? "write error" : strerror(errno));
        remove(tmp);
        return FIRN_E_IO;
    }
    return 0;
}

/* Both files, rewritten whole (and atomically) after every case, so that a
 * run cut short keeps the cases it finished, marked incomplete. */
static int write_files(const char *json, const char *csv, const bench_result *r, int nr,
                       double cpu_bw, double gpu_bw, double cpu_rate, int complete)
{
    int rc = write_file(json, r, nr, cpu_bw, gpu_bw, cpu_rate, 1, complete);
    return rc ? rc : write_file(csv, r, nr, cpu_bw, gpu_bw, cpu_rate, 0, complete);
}

/* 1 when a and b are one file: the same inode where both exist, else the
 * same name in the same (resolved) folder. The folders exist. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ra[PATH_MAX], rb[PATH_MAX], da[FIRN_PATH_MAX], db[FIRN_PATH_MAX];
    snprintf(da, sizeof da, "%s", a);
    snprintf(db, sizeof db, "%s", b);
    char *na = strrchr(da, '/'), *nb = strrchr(db, '/');
    const char *ba = na ? na + 1 : da, *bb = nb ? nb + 1 : db;
    if (na)
        *na = '\0';
    if (nb)
        *nb = '\0';
    if (!realpath(na ? (*da ? da : "/") : ".", ra) || !realpath(nb ? (*db ? db : "/") : ".", rb))
        return !strcmp(a, b);
    return !strcmp(ra, rb) && !strcmp(ba, bb);
}

/* 0 if path's temporary file can be created (and is removed again), else
 * FIRN_E_IO with the reason printed. */
static int probe_writable(const char *path)
{
    char tmp[FIRN_PATH_MAX + 32];
    FILE *f = open_temp(path, tmp, sizeof tmp);
    if (!f)
        return FIRN_E_IO;
    fclose(f);
    remove(tmp);
    /* The file replaces what is there by a rename: only a file (or a link
     * to one, which the rename replaces) may be there. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        fprintf(stderr, "firn: error: cannot write %s: %s\n", path,
                S_ISDIR(st.st_mode) ? "Is a directory" : "not a regular file (a device or a FIFO)");
        return FIRN_E_IO;
    }
    return 0;
}

static int parse_list(const char *s, const char *const *names, int n, int *mask)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    *mask = 0;
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        int k = 0;
        while (k < n && strcmp(t, names[k]))
            k++;
        if (k == n)
            return -1;
        *mask |= 1 << k;
    }
    return *mask ? 0 : -1;
}

static const char *const scene_names[] = {
    "sand_block", "snowball",   "dam_break", "sph_dam_break",     "sph_dam_break_dfsph",
    "pbd_cloth",  "pbd_liquid", "fem_beam",  "fem_beam_implicit", "all"};
static const char *const layout_names[] = {"dense", "sparse", "both"};
static const char *const p2g_names[] = {"atomic",  "binned", "warp",
                                        "ordered", "g2p2g",  "all"}; /* p2g_variants' */

/* `firn bench`'s command line. */
typedef struct {
    const char *json, *csv, *counts_s;
    int threads[MAX_THREADS_LIST], nthreads;
    int want_cpu, want_gpu, scenes, layouts; /* scenes, layouts: bit masks */
    int p2gs;                                /* bit mask over p2g_variants */
    bench_opts o;
} bench_args;

/* --threads' value: plain integers only, no suffixes, no fractions. */
static int parse_threads(const char *v, int *threads, int *nthreads)
{
    *nthreads = 0;
    for (const char *c = v;;) {
        char *end = (char *)c;
        long t = *c >= '0' && *c <= '9' ? strtol(c, &end, 10) : 0;
        if (t < 1 || t > MAX_THREADS || *nthreads == MAX_THREADS_LIST ||
            (*end != ',' && *end != '\0'))
            return -1;
        threads[(*nthreads)++] = (int)t;
        if (*end == '\0')
            return 0;
        c = end + 1;
    }
}

/* One option and its value; 0, or FIRN_E_USAGE after printing why. */
static int parse_bench_option(const char *a, const char *v, bench_args *g)
{
    if (!strcmp(a, "--backend")) { /* the last one counts */
        g->want_cpu = !strcmp(v, "cpu") || !strcmp(v, "both");
        g->want_gpu = !strcmp(v, "cuda") || !strcmp(v, "both");
        if (!g->want_cpu && !g->want_gpu) {
            fprintf(stderr, "firn bench: --backend must be cpu, cuda or both\n");
            return FIRN_E_USAGE;
        }
    } else if (!strcmp(a, "--particles")) {
        g->counts_s = v;
    } else if (!strcmp(a, "--scenes")) {
        if (parse_list(v, scene_names, FIRN_BENCH_SCENES + 1, &g->scenes)) {
            fprintf(stderr, "firn bench: --scenes takes sand_block,snowball,dam_break,"
                            "sph_dam_break,sph_dam_break_dfsph,pbd_cloth,pbd_liquid,fem_beam,"
                            "fem_beam_implicit or all\n");
            return FIRN_E_USAGE;
        }
        if (g->scenes & (1 << FIRN_BENCH_SCENES))
            g->scenes = (1 << FIRN_BENCH_SCENES) - 1;
    } else if (!strcmp(a, "--layout")) {
        if (parse_list(v, layout_names, 3, &g->layouts)) {
            fprintf(stderr, "firn bench: --layout takes dense, sparse or both\n");
            return FIRN_E_USAGE;
        }
        if (g->layouts & 4)
            g->layouts = 3;
    } else if (!strcmp(a, "--p2g")) {
        if (parse_list(v, p2g_names, N_P2G + 1, &g->p2gs)) {
            fprintf(
                stderr,
                "firn bench: --p2g takes a list of atomic, binned, warp, ordered, g2p2g or all\n");
            return FIRN_E_USAGE;
        }
        if (g->p2gs & (1 << N_P2G))
            g->p2gs = (1 << N_P2G) - 1;
    } else if (!strcmp(a, "--graphs")) {
        if (firn_cli_graphs(v, &g->o.graphs)) {
            fprintf(stderr, "firn bench: --graphs must be auto, on or off, got '%s'\n", v);
            return FIRN_E_USAGE;
        }
    } else if (!strcmp(a, "--substeps")) {
        if (firn_cli_int(a, v, &g->o.substeps))
            return FIRN_E_USAGE;
    } else if (!strcmp(a, "--repeats")) {
        if (firn_cli_int(a, v, &g->o.repeats))
            return FIRN_E_USAGE;
        if (g->o.repeats > 64) {
            fprintf(stderr, "firn bench: --repeats is at most 64, got %d\n", g->o.repeats);
            return FIRN_E_USAGE;
        }
    } else if (!strcmp(a, "--warmup")) {
        if (firn_cli_int(a, v, &g->o.warmup))
            return FIRN_E_USAGE;
    } else if (!strcmp(a, "--threads")) {
        if (parse_threads(v, g->threads, &g->nthreads)) {
            fprintf(stderr,
                    "firn bench: --threads takes a list of up to %d thread counts from 1 to %d, "
                    "like 1,2; got '%s'\n",
                    MAX_THREADS_LIST, MAX_THREADS, v);
            return FIRN_E_USAGE;
        }
    } else if (!strcmp(a, "--json") || !strcmp(a, "--csv")) {
        /* Room for the temporary's ".tmp" in every path buffer. */
        if (!v[0] || strlen(v) >= FIRN_PATH_MAX - 16) {
            fprintf(stderr, "firn bench: %s needs a file path of 1 to %d characters\n", a,
                    FIRN_PATH_MAX - 17);
            return FIRN_E_USAGE;
        }
        *(a[2] == 'j' ? &g->json : &g->csv) = v;
    } else {
        fprintf(stderr, "firn bench: unknown option '%s'\n%s", a, bench_usage);
        return FIRN_E_USAGE;
    }
    return 0;
}

/* The command line into g; returns -1 to go on, else the exit code (0
 * after --help). */
static int parse_bench_args(int argc, char **argv, bench_args *g)
{
    *g = (bench_args){.json = "out/bench/bench.json",
                      .csv = "out/bench/bench.csv",
                      .threads = {omp_get_max_threads()},
                      .nthreads = 1,
                      .scenes = 7,
                      .layouts = 3,
                      .p2gs = (1 << N_P2G) - 1,
                      .o = {0, 3, -1, -1}};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(bench_usage, stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "firn bench: unexpected argument '%s'\n%s", a, bench_usage);
            return FIRN_E_USAGE;
        }
        i++;
        int rc = parse_bench_option(a, v, g);
        if (rc)
            return rc;
    }
    return -1;
}

/* Per backend: the given list of particle counts, or the backend's default
 * sizes; every case's scene is built once now (no particles are sampled),
 * so that a count no scene can hold fails before anything runs. 0, or
 * FIRN_E_USAGE after printing why. */
static int bench_counts(const bench_args *g, long long counts[2][MAX_COUNTS], int ncounts[2])
{
    const char *defaults[2] = {"20k,100k", "100k,1m,8m"};
    firn_error err;
    for (int b = 0; b < 2; b++) {
        const char *list = g->counts_s ? g->counts_s : defaults[b];
        ncounts[b] = firn_bench_parse_counts(list, counts[b], MAX_COUNTS);
        if (ncounts[b] < 0) {
            fprintf(stderr,
                    "firn bench: --particles takes a list of up to %d counts from 1000 to %d, "
                    "with k/m/g suffixes, like 100k,1m,8m; got '%s'\n",
                    MAX_COUNTS, FIRN_BENCH_MAX_PARTICLES, list);
            return FIRN_E_USAGE;
        }
        for (int c = 0; c < ncounts[b]; c++)
            for (int sc = 0; sc < FIRN_BENCH_SCENES; sc++)
                for (int l = 0; l < 2; l++) {
                    firn_scene_def def;
                    if (!(g->scenes & (1 << sc)) || !(g->layouts & (1 << l)) ||
                        !firn_bench_make_scene((firn_bench_scene)sc, (firn_bench_layout)l,
                                               counts[b][c], &def, &err))
                        continue;
                    fprintf(stderr, "firn bench: --particles %lld, %s %s: %s\n", counts[b][c],
                            scene_names[sc], layout_names[l], err.msg);
                    return FIRN_E_USAGE;
                }
    }
    return 0;
}

/* The output files' folders, made now; a path that cannot be written fails
 * now, before any case runs; the files themselves (an earlier run's, say)
 * are left as they are until the first case is done. 0 or the exit code. */
static int prepare_outputs(const char *json, const char *csv)
{
    firn_error err;
    const char *outs[2] = {json, csv};
    for (int k = 0; k < 2; k++) {
        char dir[FIRN_PATH_MAX];
        snprintf(dir, sizeof dir, "%s", outs[k]);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
            *slash = '\0';
            if (firn_mkdirs(dir, &err))
                return firn_cli_fail(&err);
        }
    }
    if (same_file(json, csv)) {
        fprintf(stderr, "firn bench: --json and --csv name the same file, %s\n", json);
        return FIRN_E_USAGE;
    }
    for (int k = 0; k < 2; k++)
        if (probe_writable(outs[k]))
            return FIRN_E_IO;
    return 0;
}

/* The table's header, before the first row and where the rows turn from
 * MPM to SPH cases or back: an SPH case's phase columns are its own, and
 * in the roofline's place it has DFSPH's iterations per substep. */
static void print_header(int kind)
{
    if (kind == 3)
        printf("%-17s %-6s %-4s %3s %10s %-13s %9s %11s %8s %8s %8s %8s %6s %11s\n", "scene",
               "layout", "dev", "thr", "elements", "cells", "median_s", "e-substep/s", "forces",
               "veloc", "couple", "posit", "B/e", "newton/cg");
    else if (kind == 2)
        printf("%-10s %-6s %-4s %3s %10s %-13s %9s %11s %8s %8s %8s %8s %6s\n", "scene", "layout",
               "dev", "thr", "vertices", "grid", "median_s", "v-substep/s", "constr", "partic",
               "couple", "integr", "B/p");
    else if (kind == 1)
        printf("%-19s %-6s %-4s %3s %10s %-13s %9s %11s %8s %8s %8s %8s %6s %11s\n", "scene",
               "layout", "dev", "thr", "particles", "sph grid", "median_s", "p-substep/s", "sort",
               "density", "pressure", "integr", "B/p", "iters d/rho");
    else
        printf("%-10s %-6s %-4s %3s %-6s %10s %-13s %9s %11s %8s %8s %8s %8s %6s %6s %8s\n",
               "scene", "layout", "dev", "thr", "p2g", "particles", "grid", "median_s",
               "p-substep/s", "clear", "p2g", "grid", "g2p", "B/p", "B/p-s", "roofline");
}

/* Under a case's row: each modelled phase's floor / measured ms per
 * substep (ratio, m: memory-bound floor, c: compute-bound), one
 * iteration's where the phase iterates, and the substep's. */
static void print_roofline_line(const bench_result *r)
{
    printf("  floor/measured ms:");
    for (int k = 0; k < r->nroof; k++) {
        const firn_roof_phase *ph = &r->roof[k];
        printf(" %s %.3g/%.3g (%.1fx %c)", ph->name, ph->floor_ms, ph->measured_ms, ph->ratio,
               ph->compute_bound ? 'c' : 'm');
        if (ph->iterations > 0.0)
            printf(" [per iteration %.3g/%.3g]", ph->iter_floor_ms, ph->iter_ms);
        putchar(k + 1 < r->nroof ? ',' : ';');
    }
    printf(" substep %.3g/%.3g (%.1fx)\n", r->floor_ms, r->floor_measured_ms, r->floor_ratio);
}

static void print_result_row(const bench_result *r)
{
    static int kind = -1; /* of the last row printed */
    char grid[32], tail[32];
    if (row_kind(r) != kind)
        print_header(kind = row_kind(r));
    snprintf(grid, sizeof grid, "%dx%dx%d", r->n[0], r->n[1], r->n[2]);
    if (r->dfsph) {
        char it[32];
        snprintf(it, sizeof it, "%.1f/%.1f", r->sph_iters[0], r->sph_iters[1]);
        snprintf(tail, sizeof tail, "%11s", it);
    } else if (r->fem_implicit) {
        char it[32];
        snprintf(it, sizeof it, "%.1f/%.0f", r->fem_iters[0], r->fem_iters[1]);
        snprintf(tail, sizeof tail, "%11s", it);
    } else if (r->sph || r->fem) {
        snprintf(tail, sizeof tail, "%11s", "-");
    } else if (r->pbd) {
        tail[0] = '\0';
    } else
        snprintf(tail, sizeof tail, "%6.0f %7.2f%%", r->traffic, 100.0 * r->roofline);
    double ph[4];
    shown_phases(r, ph);
    char variant[16] = "";
    if (!r->sph && !r->pbd && !r->fem)
        snprintf(variant, sizeof variant, "%-6s ", r->p2g >= 0 ? p2g_name(r->p2g) : "-");
    printf("%-*s %-6s %-4s %3d %s%10lld %-13s %9.4f %11.4g %8.3f %8.3f %8.3f %8.3f %6.0f %s\n",
           r->sph   ? 19
           : r->fem ? 17
                    : 10,
           firn_bench_scene_name(r->scene), r->layout ? "sparse" : "dense",
           backend_name(r->backend), r->threads, variant, r->particles, grid, r->median,
           r->throughput, ph[0], ph[1], ph[2], ph[3], r->bytes_per_particle, tail);
    print_roofline_line(r);
    fflush(stdout);
}

/* Every case of backend b (0: CPU, 1: CUDA) into res[*nr ..], the files
 * rewritten after each; returns 0 or the exit code (*nr = 0 when the files
 * could not be written). */
static int run_backend(int b, const bench_args *g, const long long *counts, int ncounts, double bw,
                       double cpu_bw, double gpu_bw, double cpu_rate, bench_result *res, int *nr)
{
    const int saved_threads = omp_get_max_threads();
    firn_backend backend = b ? FIRN_BACKEND_CUDA : FIRN_BACKEND_CPU;
    firn_error err;
    bench_opts ob = g->o;
    if (!ob.substeps)
        ob.substeps = b ? 100 : 10;
    if (ob.warmup < 0)
        ob.warmup = 300;
    for (int s = 0; s < FIRN_BENCH_SCENES; s++)
        for (int l = 0; l < 2; l++)
            for (int c = 0; c < ncounts; c++)
                for (int t = 0; t < (b ? N_P2G : g->nthreads); t++) {
                    /* CUDA: t indexes p2g_variants, for MPM scenes only */
                    const int variants = b && !firn_bench_scene_is_sph((firn_bench_scene)s) &&
                                         !firn_bench_scene_is_pbd((firn_bench_scene)s) &&
                                         !firn_bench_scene_is_fem((firn_bench_scene)s);
                    if (!(g->scenes & (1 << s)) || !(g->layouts & (1 << l)) ||
                        (variants && !(g->p2gs & (1 << t))) || (b && !variants && t > 0))
                        continue;
                    bench_result *r = &res[*nr];
                    r->scene = (firn_bench_scene)s;
                    r->layout = (firn_bench_layout)l;
                    r->p2g = variants ? p2g_variants[t] : -1;
                    r->backend = backend;
                    r->threads = b ? saved_threads : g->threads[t];
                    r->particles = counts[c];
                    omp_set_num_threads(r->threads);
                    int failed = run_case(r, &ob, bw, b ? 0.0 : cpu_rate, &err);
                    omp_set_num_threads(saved_threads);
                    if (failed)
                        return firn_cli_fail(&err);
                    (*nr)++;
                    int rc = write_files(g->json, g->csv, res, *nr, cpu_bw, gpu_bw, cpu_rate, 0);
                    if (rc) {
                        *nr = 0; /* nothing is where it should be */
                        return rc;
                    }
                    print_result_row(r);
                }
    return 0;
}

int firn_cli_bench(int argc, char **argv)
{
    bench_args g;
    int rc = parse_bench_args(argc, argv, &g);
    if (rc >= 0)
        return rc;
    int gpus = firn_cuda_device_count();
    if (!g.want_cpu && !g.want_gpu) {
        g.want_gpu = gpus > 0;
        g.want_cpu = !g.want_gpu;
    }
    if (g.want_gpu && gpus == 0) {
        fprintf(stderr, "firn: error: bench --backend cuda: no usable CUDA GPU\n");
        return FIRN_E_DEVICE;
    }
    long long counts[2][MAX_COUNTS];
    int ncounts[2];
    if ((rc = bench_counts(&g, counts, ncounts)) || (rc = prepare_outputs(g.json, g.csv)))
        return rc;
    double cpu_bw = g.want_cpu ? firn_bench_host_copy_bandwidth((size_t)256 << 20) : 0.0;
    double gpu_bw = g.want_gpu ? firn_cuda_copy_bandwidth((size_t)1 << 30) : 0.0;
    for (int k = 0; k < g.nthreads && g.want_cpu; k++)
        if (g.threads[k] > omp_get_num_procs()) {
            printf(
                "note: %d threads on %d processors: oversubscribed, each of a substep's parallel "
                "loops waits for a descheduled thread\n",
                g.threads[k], omp_get_num_procs());
            break;
        }
    const double cpu_rate = g.want_cpu ? firn_bench_host_compute_rate() : 0.0;
    printf("copy bandwidth: cpu %.1f GB/s%s", cpu_bw / 1e9, g.want_gpu ? "" : "\n");
    if (g.want_gpu)
        printf(", cuda %.1f GB/s\n", gpu_bw / 1e9);
    if (g.want_cpu)
        printf("compute rate: cpu %.1f Gop/s (multiply-adds on %d threads)\n", cpu_rate / 1e9,
               omp_get_max_threads());
    if (g.want_gpu)
        printf("compute rate: cuda not measured (the GPU's floors are the bytes' alone)\n");
    bench_result *res =
        calloc(2 * FIRN_BENCH_SCENES * 2 * MAX_COUNTS * MAX_THREADS_LIST, sizeof *res);
    if (!res) {
        fprintf(stderr, "firn: error: out of host memory\n");
        return FIRN_E_NOMEM;
    }
    int nr = 0;
    for (int b = 0; b < 2 && !rc; b++)
        if (b ? g.want_gpu : g.want_cpu)
            rc = run_backend(b, &g, counts[b], ncounts[b], b ? gpu_bw : cpu_bw, cpu_bw, gpu_bw,
                             cpu_rate, res, &nr);
    if (g.scenes & ((1 << FIRN_BENCH_MPM_SCENES) - 1))
        printf("(phase columns: ms per substep; B/p: device or host memory per particle; B/p-s: "
               "the traffic model's bytes per particle-substep, %g of particle state plus %g per "
               "dense GPU grid node; roofline: B/p-s at the throughput over the measured copy "
               "bandwidth)\n",
               FIRN_BENCH_STATE_BYTES, FIRN_BENCH_NODE_BYTES);
    if (g.scenes & ((1 << FIRN_BENCH_SPH_DAM) | (1 << FIRN_BENCH_SPH_DAM_DFSPH)))
        printf("(SPH: sph grid = neighbour cells of h = 2p; pressure includes DFSPH's solves; "
               "iters d/rho: DFSPH's divergence/density iterations per substep; the MPM traffic "
               "model's roofline does not apply, the floor per phase does)\n");
    if (g.scenes & (1 << FIRN_BENCH_PBD_CLOTH))
        printf("(PBD: vertices of the cloth; constr: prediction and constraint iterations; "
               "couple: the Coupler's pass (PBD-rigid); integr: velocities and the box)\n");
    if (nr > 0)
        printf("(floor/measured: each phase's modelled floor, max(bytes / copy bandwidth, "
               "operations / compute rate), beside its measured ms per substep; m / c: the bytes "
               "or the operations set the floor; docs/BENCH.md)\n");
    if (!rc)
        print_scaling(res, nr, g.nthreads);
    if (nr > 0 && !rc) {
        rc = write_files(g.json, g.csv, res, nr, cpu_bw, gpu_bw, cpu_rate, 1);
        if (!rc)
            printf("wrote %s and %s\n", g.json, g.csv);
    } else if (nr > 0) {
        printf("%s and %s hold the %d case(s) that finished, marked \"complete\": false\n", g.json,
               g.csv, nr);
    }
    free(res);
    return rc;
}
