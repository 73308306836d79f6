/* output.h - file helpers of host/output.c beyond the public writers
 * (firn_write_ply, firn_write_preview_png, firn_append_stats_jsonl in firn.h). */
#ifndef FIRN_OUTPUT_H
#define FIRN_OUTPUT_H

#include <stdio.h>

#include "firn.h"

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

#ifdef __cplusplus
}
#endif

#endif
