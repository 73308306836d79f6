/* cli.h - the subcommands of the firn tool (host/cli_*.c). */
#ifndef FIRN_CLI_H
#define FIRN_CLI_H

#include "firn.h"

/* The usage of each subcommand, as `firn --help` lists them and
 * `firn CMD --help` prints them. */
#define FIRN_USAGE_RUN                                                                             \
    "  firn run SCENE [--backend auto|cpu|cuda] [--frames N] [--every N] [--out DIR] [--quiet]\n"  \
    "                 [--checkpoint-every N|Ns|Nm|Nh|off] [--resume [CHECKPOINT]]\n"               \
    "                 [--p2g auto|atomic|binned|warp|ordered|g2p2g] [--deterministic]\n"           \
    "                 [--grid auto|dense|sparse] [--graphs auto|on|off]\n"                         \
    "                 run a JSON scene, writing PLY frames, PNG previews and stats.jsonl;\n"       \
    "                 --deterministic: the GPU gives the same bits every run (ordered P2G;\n"      \
    "                 refused for a scene with a phase that cannot)\n"                             \
    "                 checkpoints (default every 10 minutes, and on SIGINT/SIGTERM) let\n"         \
    "                 --resume continue a stopped run\n"
#define FIRN_USAGE_VALIDATE                                                                        \
    "  firn validate SCENE       check a scene and print what it would simulate\n"
#define FIRN_USAGE_COMPARE                                                                         \
    "  firn compare SCENE [--frames N] [--p2g auto|atomic|binned|warp|ordered|g2p2g]\n"            \
    "                 [--grid auto|dense|sparse] [--graphs auto|on|off]\n"                         \
    "                 run the scene on the CPU and the GPU and report the differences\n"           \
    "                 (--p2g: the GPU's P2G; auto: binned from 300k particles)\n"
#define FIRN_USAGE_RENDER                                                                          \
    "  firn render RUN_DIR [--fps X] [--out FILE]\n"                                               \
    "                 a run folder's previews (frame_NNNNN.png) as an MP4 (H.264) with ffmpeg,\n"  \
    "                 at the run's pace (from stats.jsonl) unless --fps; FILE defaults to\n"       \
    "                 RUN_DIR/preview.mp4 and is replaced. ffmpeg must be on PATH\n"               \
    "                 (Debian/Ubuntu: apt-get install ffmpeg)\n"
/* What every SCENE argument accepts. */
#define FIRN_USAGE_SCENE                                                                           \
    "SCENE is a JSON file (docs/SCENES.md), or - to read it from standard input\n"                 \
    "(relative mesh paths in it are then taken from the current directory).\n"

int firn_cli_run(int argc, char **argv);
/* `firn run` with more than one MPI rank (host/cli_mpi.c, make MPI=1). */
int firn_cli_mpi_run(int argc, char **argv);

/* For a run other than firn_cli_run's (the distributed one): the output
 * folder made, locked and cleared of an earlier run's files, as `firn run`
 * does; and frame s of w handed to the writer, with its particles when the
 * frame is one that writes them. */
struct firn_frame_writer;
int firn_cli_prepare_output(const char *dir, int quiet, firn_error *err);
int firn_cli_submit_frame(struct firn_frame_writer *fw, firn_world *w, const firn_scene_def *def,
                          const firn_frame_stats *s, firn_error *err);
/* For the distributed run's resume: the output folder made and locked
 * (nothing removed); then, once its checkpoint is accepted, the folder cut
 * back to frame `frame` as `firn run --resume` does (stats.jsonl, the frame
 * files and single-process checkpoints after it). */
int firn_cli_lock_output(const char *dir, firn_error *err);
int firn_cli_prepare_resume(const char *dir, int frame, int quiet, firn_error *err);
/* --checkpoint-every's value (NULL: the option not given, the default of
 * `firn run`): every *frames frames, or every *seconds of wall time (0:
 * not by that measure). 0, or -1 for a value it does not take. */
int firn_cli_checkpoint_every(const char *value, int *frames, double *seconds);
/* SIGINT, SIGTERM and SIGHUP: the first asks the frame loop to stop after
 * the frame in progress (firn_cli_stop_signal, the signal's number, 0
 * before), with a message unless quiet; a second exits at once, removing
 * the temporary files being written. SIGPIPE is ignored. */
void firn_cli_catch_signals(int quiet);
int firn_cli_stop_signal(void);
const char *firn_cli_signal_name(int sig);
int firn_cli_compare(int argc, char **argv);
int firn_cli_bench(int argc, char **argv);
int firn_cli_render(int argc, char **argv);

/* The index of a file that `firn run` writes, from its name: <prefix>, five
 * to nine digits, <suffix>; -1 for another name. */
long firn_cli_indexed_name(const char *name, const char *prefix, const char *suffix);

/* Parses --backend's value; returns -1 on an unknown name. */
int firn_cli_backend(const char *name, firn_backend *out);
/* --grid's value (auto, dense or sparse) into *out (firn_grid_mode); 0 or -1. */
int firn_cli_grid(const char *name, int *out);
/* --graphs' value (auto, on or off) into *out (firn_graph_mode); 0 or -1. */
int firn_cli_graphs(const char *name, int *out);
/* --p2g's value (auto, atomic, binned, warp or ordered) into *out (firn_p2g_variant); 0 or -1. */
int firn_cli_p2g(const char *name, int *out);
/* Parses a positive integer option value; prints and returns -1 on error. */
int firn_cli_int(const char *opt, const char *value, int *out);
/* The same, printing only when say is non-zero (one rank of several). */
int firn_cli_int_said(const char *opt, const char *value, int *out, int say);
/* mkdir -p; fills err on failure. */
int firn_mkdirs(const char *path, firn_error *err);
int firn_cli_fail(const firn_error *err);
/* Whether the arguments ask for help (--help or -h); if so prints
 * "usage:\n", text and FIRN_USAGE_SCENE to stdout. */
int firn_cli_help(int argc, char **argv, const char *text);
/* Loads a SCENE argument: a JSON file, or "-" for standard input (named
 * "<stdin>" in messages; relative mesh paths taken from the current
 * directory). */
int firn_cli_load_scene(const char *path, firn_scene_def *def, firn_error *err);

#endif
