/* fuzz_checkpoint.c - libFuzzer target: the checkpoint loader
 * (firn_world_load, host/checkpoint.c) on any bytes, for the tiny scene
 * test/fuzz/checkpoint_scene.json (every section: MPM particles with CPIC,
 * SPH, PBD, FEM, a rigid body, a tool), on the CPU backend. The scene is
 * found at FIRN_FUZZ_SCENE (environment), else at the path compiled in;
 * the current directory does not matter.
 *
 * Each input is written to a file in a private temporary folder and loaded
 * twice: as it is, and with its checksums and file size made right (the
 * header's file size, the header's CRC-32C and the trailer's, when it is
 * long enough to hold them), so that mutations reach the checks behind the
 * checksums rather than stopping at them. A world that loads runs one
 * substep: what the loader accepted must be safe to step.
 *
 * A refusal (FIRN_E_CHECKPOINT, ...) is the expected outcome of most
 * inputs; only a crash, a sanitizer report, a leak or a hang is a
 * finding. */
#include "checkpoint.h"
#include "firn.h"
#include "fuzz_util.h"

#ifndef FIRN_FUZZ_SCENE
#define FIRN_FUZZ_SCENE "test/fuzz/checkpoint_scene.json"
#endif

static firn_scene_def scene;
static char ckpt_path[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_one_thread();
    const char *path = getenv("FIRN_FUZZ_SCENE");
    firn_error err;
    if (!path || !*path)
        path = FIRN_FUZZ_SCENE;
    if (firn_scene_load_json(path, &scene, &err)) {
        fprintf(stderr, "fuzz_checkpoint: %s (set FIRN_FUZZ_SCENE)\n", err.msg);
        exit(1);
    }
    scene.write_ply = scene.write_preview = 0;
    fuzz_make_dir("checkpoint");
    fuzz_path(ckpt_path, sizeof ckpt_path, "checkpoint.firn");
    return 0;
}

static void load(const uint8_t *data, size_t size)
{
    firn_error err;
    fuzz_write(ckpt_path, data, size);
    firn_world *w = firn_world_load(&scene, FIRN_BACKEND_CPU, ckpt_path, &err);
    if (w) {
        firn_world_substep(w, 1e-4f, &err);
        firn_world_destroy(w);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load(data, size);
    if (size >= FIRN_CHECKPOINT_HEADER_BYTES + 8) {
        uint8_t *fixed = malloc(size);
        if (!fixed)
            abort();
        memcpy(fixed, data, size);
        uint64_t bytes = size;
        memcpy(fixed + 24, &bytes, 8);
        uint32_t crc = firn_crc32c(0, fixed, 124);
        memcpy(fixed + 124, &crc, 4);
        crc = firn_crc32c(0, fixed, size - 4);
        memcpy(fixed + size - 4, &crc, 4);
        if (memcmp(fixed, data, size))
            load(fixed, size);
        free(fixed);
    }
    return 0;
}
