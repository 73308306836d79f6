/* fuzz_scene.c - libFuzzer target: the scene reader (firn_scene_load_json)
 * on any bytes. The input is written to scene.json in a private temporary
 * folder that holds a copy of scenes/assets/ as assets/, so the shipped
 * scenes' mesh files ("assets/rock.obj", relative to the scene's folder)
 * load as they do from scenes/. The assets are found at FIRN_FUZZ_ASSETS
 * (environment), else at the path compiled in (the source tree's
 * scenes/assets); the current directory does not matter.
 *
 * A refusal (FIRN_E_SCENE, FIRN_E_IO, ...) is the expected outcome of most
 * inputs; only a crash, a sanitizer report, a leak or a hang is a finding.
 * A scene that loads is hashed as a checkpoint would hash it (the meshes'
 * contents included). */
#include <dirent.h>
#include <sys/stat.h>

#include "checkpoint.h"
#include "firn.h"
#include "fuzz_util.h"

#ifndef FIRN_FUZZ_ASSETS
#define FIRN_FUZZ_ASSETS "scenes/assets"
#endif

static char scene_path[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_one_thread();
    fuzz_make_dir("scene");
    const char *assets = getenv("FIRN_FUZZ_ASSETS");
    if (!assets || !*assets)
        assets = FIRN_FUZZ_ASSETS;
    char dst[PATH_MAX], from[PATH_MAX], to[PATH_MAX + 300];
    fuzz_path(dst, sizeof dst, "assets");
    if (mkdir(dst, 0700)) {
        perror(dst);
        exit(1);
    }
    DIR *d = opendir(assets);
    if (!d) {
        fprintf(stderr, "fuzz_scene: cannot open the assets folder %s (set FIRN_FUZZ_ASSETS)\n",
                assets);
        exit(1);
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(from, sizeof from, "%s/%s", assets, e->d_name);
        snprintf(to, sizeof to, "%s/%s", dst, e->d_name);
        if (fuzz_copy(from, to)) {
            fprintf(stderr, "fuzz_scene: cannot copy %s\n", from);
            exit(1);
        }
    }
    closedir(d);
    fuzz_path(scene_path, sizeof scene_path, "scene.json");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    firn_scene_def *def = malloc(sizeof *def);
    firn_error err;
    if (!def)
        abort();
    fuzz_write(scene_path, data, size);
    if (firn_scene_load_json(scene_path, def, &err) == FIRN_OK) {
        volatile uint64_t h = firn_scene_hash(def);
        (void)h;
    }
    free(def);
    return 0;
}
