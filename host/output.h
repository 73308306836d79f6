/* output.h - file helpers of host/output.c beyond the public writers
 * (firn_write_ply, firn_write_preview_png, firn_append_stats_jsonl in firn.h). */
#ifndef FIRN_OUTPUT_H
#define FIRN_OUTPUT_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A new file at path, opened for writing, that is not reached through a
 * symlink or an earlier file of that name (they are removed first); NULL
 * with errno set on failure. For the temporaries of atomic writes. */
FILE *firn_fopen_fresh(const char *path);

#ifdef __cplusplus
}
#endif

#endif
