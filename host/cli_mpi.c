/* cli_mpi.c - `firn run` with more than one MPI rank (make MPI=1; docs/MPI.md).
 *
 * Every rank builds the scene's world and keeps its slab's particles
 * (host/dist_mpi.c); the frames step together. After each frame rank 0
 * gathers the particles into a world of the whole scene, in the scene's
 * order, and writes stats.jsonl and the frame files from it as `firn run`
 * does. What this run does not do yet is refused with a message naming it:
 * checkpoints and --resume, the GPU, and the options below that are not
 * listed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <omp.h>

#include "cli.h"
#include "dist_mpi.h"
#include "error.h"
#include "frame_writer.h"
#include "world.h"

typedef struct {
    const char *scene, *out;
    int frames, every, quiet;
} mpi_opts;

static int parse(int argc, char **argv, mpi_opts *o, int rank)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--frames")) {
            if (firn_cli_int("--frames", i + 1 < argc ? argv[++i] : NULL, &o->frames))
                return FIRN_E_USAGE;
        } else if (!strcmp(a, "--every")) {
            if (firn_cli_int("--every", i + 1 < argc ? argv[++i] : NULL, &o->every))
                return FIRN_E_USAGE;
        } else if (!strcmp(a, "--out") && i + 1 < argc) {
            o->out = argv[++i];
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--backend") && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "cpu") && strcmp(v, "auto")) {
                if (rank == 0)
                    fprintf(stderr,
                            "firn run: --backend %s: not supported with %d MPI ranks: the "
                            "distributed run is on the CPU path (--backend cpu)\n",
                            v, firn_mpi_size());
                return FIRN_E_USAGE;
            }
        } else if (a[0] == '-' && strcmp(a, "-")) {
            if (rank == 0)
                fprintf(stderr,
                        "firn run: %s: not supported with %d MPI ranks (the distributed run "
                        "takes --frames, --every, --out, --quiet and --backend cpu; checkpoints "
                        "and --resume are not distributed yet); run it with one rank\n",
                        a, firn_mpi_size());
            return FIRN_E_USAGE;
        } else if (!o->scene) {
            o->scene = a;
        } else {
            if (rank == 0)
                fprintf(stderr, "firn run: unexpected argument '%s'\n", a);
            return FIRN_E_USAGE;
        }
    }
    if (!o->scene) {
        if (rank == 0)
            fprintf(stderr, "firn run: a SCENE is needed\n");
        return FIRN_E_USAGE;
    }
    return 0;
}

/* err's message once, from the first rank that failed for a reason of
 * its own (a rank told that another rank's particle went non-finite
 * defers to that rank, which names the particle), and the exit code every
 * rank returns. */
static int fail_all(int failed, const firn_error *err)
{
    const int size = firn_mpi_size();
    const int deferred = failed && strstr(err->msg, "on another rank") != NULL;
    int mine = (failed ? (deferred ? 1 : 0) : 2) * size + firn_mpi_rank(), first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int code = failed ? (int)err->code : 0, rc;
    MPI_Allreduce(&code, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (mine == first)
        firn_cli_fail(err);
    return rc ? rc : FIRN_E_IO;
}

int firn_cli_mpi_run(int argc, char **argv)
{
    const int rank = firn_mpi_rank(), size = firn_mpi_size();
    mpi_opts o;
    int rc = parse(argc, argv, &o, rank);
    if (firn_mpi_any(rc))
        return rc ? rc : FIRN_E_USAGE;
    firn_scene_def def;
    firn_error err = {0};
    int failed = firn_cli_load_scene(o.scene, &def, &err) != 0;
    if (firn_mpi_any(failed))
        return fail_all(failed, &err);
    if (o.frames)
        def.frames = o.frames;
    if (o.every)
        def.out_every = o.every;
    if (o.out)
        snprintf(def.out_dir, sizeof def.out_dir, "%s", o.out);
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    failed = !w || firn_mpi_distribute(w, &err);
    /* Rank 0's world of the whole scene, which the frames are written from. */
    firn_world *whole = NULL;
    firn_frame_writer *fw = NULL;
    if (!failed && rank == 0) {
        whole = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
        failed = !whole || firn_cli_prepare_output(def.out_dir, o.quiet, &err);
        if (!failed) {
            fw = firn_frame_writer_start(firn_world_scene(whole), def.out_dir, &err);
            failed = !fw;
        }
    }
    if (firn_mpi_any(failed)) {
        rc = fail_all(failed, &err);
        goto done;
    }
    if (!o.quiet && rank == 0)
        fprintf(stderr,
                "firn: %s: %d MPM particles on %d MPI ranks (CPU, %d OpenMP threads each) "
                "-> %s/\n",
                def.source, whole->p.n, size, omp_get_max_threads(), def.out_dir);
    const double t0 = firn_now();
    double simulating = 0.0;
    long long substeps = 0;
    firn_frame_stats s = {0};
    for (int frame = 0; frame <= def.frames; frame++) {
        float dt = 0.0f;
        int nsub = 0;
        double wall = 0.0;
        if (frame > 0) {
            firn_frame_stats local;
            failed = firn_world_step_frame(w, &local, &err) != 0;
            /* Every rank stops at the same frame: the step and a bad
             * particle are global (host/dist.h). */
            if (firn_mpi_any(failed)) {
                rc = fail_all(failed, &err);
                break;
            }
            dt = local.dt;
            nsub = local.frame_substeps;
            wall = local.wall_seconds;
        }
        failed = firn_mpi_gather(w, whole, &err) != 0;
        if (!failed && rank == 0) {
            failed = firn_world_stats(whole, &s, &err) != 0;
            if (!failed && frame > 0) {
                s.frame = frame;
                s.frame_substeps = nsub;
                s.dt = dt;
                s.wall_seconds = wall;
                s.throughput = wall > 0.0 ? (double)whole->p.n * nsub / wall : 0.0;
            }
            failed = failed || firn_cli_submit_frame(fw, whole, &def, &s, &err);
        }
        if (firn_mpi_any(failed)) {
            rc = fail_all(failed, &err);
            break;
        }
        simulating += wall;
        substeps += nsub;
        if (!o.quiet && rank == 0 && frame > 0)
            fprintf(stderr, "frame %d/%d substeps %lld (+%d, dt %.3g s)\n", frame, def.frames,
                    s.substeps, nsub, dt);
    }
    if (rank == 0) {
        double busy, waited;
        firn_error werr = {0};
        if (firn_frame_writer_finish(fw, &busy, &waited, &werr) && !rc)
            rc = firn_cli_fail(&werr);
        fw = NULL;
        if (!rc && !o.quiet)
            fprintf(stderr,
                    "firn: done: %d frames, %lld substeps, %.2f s simulating, %.2f s total, "
                    "%.4g particle-substeps/s\n",
                    def.frames, substeps, simulating, firn_now() - t0,
                    simulating > 0.0 ? (double)whole->p.n * (double)substeps / simulating : 0.0);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!rc && !o.quiet)
        firn_mpi_report(w, stderr);
done:
    if (fw) {
        double busy, waited;
        firn_error ignored;
        firn_frame_writer_finish(fw, &busy, &waited, &ignored);
    }
    firn_world_destroy(whole);
    firn_mpi_release(w);
    firn_world_destroy(w);
    return rc;
}
