/* output.h - file helpers of host/output.c beyond the public writers
 * (firn_write_ply, firn_write_preview, firn_append_stats_jsonl in firn.h). */
#ifndef FIRN_OUTPUT_H
#define FIRN_OUTPUT_H

#include <stdio.h>

#include "firn.h"
#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A new file at path, opened for writing, that is not reached through a
 * symlink or an earlier file of that name (they are removed first); NULL
 * with errno set on failure. For the temporaries of atomic writes. */
FILE *firn_fopen_fresh(const char *path);

/* Writes a file body to f; returns 0, or -1 with errno set (0 if unknown). */
typedef int (*firn_emit_fn)(FILE *f, void *ctx);

/* Writes path atomically: emit writes "<path>.tmp.<pid>", which is flushed,
 * fsync'ed and renamed over path; on any failure (a full disk) the
 * temporary is removed and a file already at path is left as it was.
 * Returns FIRN_OK, or FIRN_E_IO / FIRN_E_NOMEM with err filled. */
int firn_write_atomic(const char *path, firn_emit_fn emit, void *ctx, firn_error *err);

/* Removes the temporaries of the atomic writes in progress. Only
 * async-signal-safe calls (unlink): for a signal handler that exits at once,
 * so that no partial file is left. */
void firn_remove_temporaries(void);

/* The PLY writers of firn.h (firn_write_ply, firn_write_sph_ply,
 * firn_write_pbd_ply) with def's material names in the header, as comment
 * lines "comment material K NAME" after "comment units ..."; def may be
 * NULL (units only, as the firn.h writers write). */
int firn_write_ply_named(const char *path, const firn_scene_def *def, const firn_particles_view *p,
                         firn_error *err);
int firn_write_sph_ply_named(const char *path, const firn_scene_def *def,
                             const firn_sph_particles_view *p, firn_error *err);
int firn_write_pbd_ply_named(const char *path, const firn_scene_def *def,
                             const firn_pbd_particles_view *p, firn_error *err);

/* A solver's PLY frame from its table of fields (host/solver.h): a vertex
 * per element, with the properties of every field that has PLY names
 * (firn_field_ply), in their PLY order; the header's comment names the
 * elements ("SPH particles"; t->ply_comment), its units comment lists the
 * fields with a unit, and def (may be NULL) names the materials. The data pointers are
 * read for t->count elements. */
int firn_write_fields_ply(const char *path, const firn_scene_def *def, const firn_field_table *t,
                          firn_error *err);

/* One entry of a time series: a frame and its simulated time [s]. */
typedef struct {
    int frame;
    double time;
} firn_series_entry;

/* Writes path atomically as a time series over the frame files
 * "<prefix>_<frame, 5 digits or more>.<ext>" of the n entries: with ext
 * "vtu" a ParaView collection (.pvd: one DataSet per frame, timestep = its
 * time), else a ParaView file series (.series JSON: name and time per
 * frame), which ParaView opens with the reader of ext. File names are
 * relative to the series' folder. */
int firn_write_series(const char *path, const char *prefix, const char *ext,
                      const firn_series_entry *e, int n, firn_error *err);

#ifdef __cplusplus
}
#endif

#endif
