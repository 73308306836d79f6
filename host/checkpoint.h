/* checkpoint.h - checkpoint files (host/checkpoint.c): the whole state a
 * world needs to continue, in the versioned binary format of docs/CLI.md
 * ("Checkpoints"). The public calls are firn_world_save and
 * firn_world_load (include/firn.h), the latter through the world's
 * firn_world_create_restored (host/world.h) with the two calls below; the
 * tests and the distributed run use them too. */
#ifndef FIRN_CHECKPOINT_H
#define FIRN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "firn.h"
#include "scene_hash.h" /* firn_scene_hash, for the tests and fuzzers */

#ifdef __cplusplus
extern "C" {
#endif

#define FIRN_CHECKPOINT_MAGIC        "FIRNCKPT"
#define FIRN_CHECKPOINT_HEADER_BYTES 128

/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of n bytes,
 * continuing from crc (0 to start): firn_crc32c(0, "123456789", 9) is
 * 0xE3069283. */
uint32_t firn_crc32c(uint32_t crc, const void *data, size_t n);

/* Checks the header of checkpoint path against world w (its scene hash and
 * sizes): a refusal costs no more than reading 128 bytes. */
int firn_checkpoint_check_header(const firn_world *w, const char *path, firn_error *err);
/* Reads checkpoint path into the host state of w, a world of the same scene
 * just created (its particles sampled, the CPU path's scratch allocated, the
 * GPU's state not yet made from the host state). On failure w's state is
 * garbage: the caller destroys w. */
int firn_checkpoint_read(firn_world *w, const char *path, firn_error *err);

#ifdef __cplusplus
}
#endif

#endif
