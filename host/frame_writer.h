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

/* Waits until the previous frame is written, then hands over frame s: its
 * statistics line, and when view is not NULL its PLY / PNG (as def says)
 * from the particles of view, copied before returning. Returns -1 with err
 * filled when the previous frame failed or the copy cannot be allocated;
 * the frame is then not taken. sph, pbd and fem (may be NULL) are copied
 * with view. */
int firn_frame_writer_submit(firn_frame_writer *fw, const firn_particles_view *view,
                             const firn_sph_particles_view *sph, const firn_pbd_particles_view *pbd,
                             const firn_fem_mesh_view *fem, const firn_frame_stats *s,
                             firn_error *err);

/* Waits until the frame handed over last is written (its files and its
 * statistics line on disk). Returns -1 with err filled when it failed. */
int firn_frame_writer_flush(firn_frame_writer *fw, firn_error *err);

/* Waits for the last frame and frees the writer. Returns -1 with err filled
 * when that frame failed. *busy gets the seconds the thread spent writing,
 * *waited those the caller spent waiting for it (both may be NULL). */
int firn_frame_writer_finish(firn_frame_writer *fw, double *busy, double *waited, firn_error *err);

#endif
