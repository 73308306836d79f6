/* frame_writer.h - `firn run`'s output on a thread of its own: while the
 * world computes frame k+1, frame k's statistics line, PLY and PNG are
 * written from a copy of what those files need (33 bytes per particle).
 * One frame is in flight at most; files are written whole or not at all
 * (host/output.c), so a failure leaves every earlier frame intact. */
#ifndef FIRN_FRAME_WRITER_H
#define FIRN_FRAME_WRITER_H

#include "firn.h"

typedef struct firn_frame_writer firn_frame_writer;

/* Frames go to out (stats.jsonl, frame_NNNNN.ply / .png as def says, the
 * SPH particles, when there are any, to sph_NNNNN.ply, the PBD particles to
 * pbd_NNNNN.ply, the FEM bodies' surface to fem_NNNNN.ply and their volume
 * mesh to fem_NNNNN.vtu). */
firn_frame_writer *firn_frame_writer_start(const firn_scene_def *def, const char *out,
                                           firn_error *err);

/* Waits until the previous frame is written, then hands over frame s of
 * world w: its statistics line, and when `files` its PLY / PNG (as def
 * says) from w's state, downloaded where stale and copied before
 * returning (every solver's PLY fields of its table of fields, MPM's and
 * SPH's particles among them, the PBD particles, the FEM mesh). Returns -1 with err filled
 * when the previous frame failed or the state cannot be fetched or
 * copied; the frame is then not taken. */
int firn_frame_writer_submit(firn_frame_writer *fw, firn_world *w, int files,
                             const firn_frame_stats *s, firn_error *err);

/* Waits until the frame handed over last is written (its files and its
 * statistics line on disk). Returns -1 with err filled when it failed. */
int firn_frame_writer_flush(firn_frame_writer *fw, firn_error *err);

/* Waits for the last frame and frees the writer. Returns -1 with err filled
 * when that frame failed. *busy gets the seconds the thread spent writing,
 * *waited those the caller spent waiting for it (both may be NULL). */
int firn_frame_writer_finish(firn_frame_writer *fw, double *busy, double *waited, firn_error *err);

#endif
