/* embed.c - the README's embedding example as a whole program: loads a
 * scene, runs its frames (or as many as given) and prints each frame's
 * time and kinetic energy (every solver's together).
 *
 *   embed SCENE [FRAMES]
 *
 * Built against an installed firn with pkg-config alone (make
 * install-check does so):
 *
 *   cc embed.c $(pkg-config --cflags --libs firn) */
#include <stdio.h>
#include <stdlib.h>

#include "firn.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: embed SCENE [FRAMES]\n");
        return 2;
    }
    firn_scene_def def;
    firn_error err;
    if (firn_scene_load_json(argv[1], &def, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return err.code;
    }
    const int frames = argc > 2 ? atoi(argv[2]) : def.frames;
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_AUTO, &err);
    if (!w) {
        fprintf(stderr, "%s\n", err.msg);
        return err.code;
    }
    firn_frame_stats s;
    int rc = 0;
    for (int f = 0; f < frames && !rc; f++) {
        rc = firn_world_step_frame(w, &s, &err);
        if (rc)
            fprintf(stderr, "%s\n", err.msg);
        else
            printf("frame %d: t = %.4f s, kinetic energy %.6g J\n", s.frame, s.time,
                   s.kinetic_energy + s.sph.kinetic_energy + s.pbd.kinetic_energy +
                       s.fem.kinetic_energy);
    }
    firn_world_destroy(w);
    return rc;
}
