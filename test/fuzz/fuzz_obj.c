/* fuzz_obj.c - libFuzzer target: the Wavefront OBJ reader (host/mesh.c) on
 * any bytes. The input is written to mesh.obj in a private temporary folder
 * and read as a cloth's surface is (firn_mesh_read_surface); what it reads
 * is then checked as a solid (firn_mesh_build: closed, manifold, oriented,
 * mass properties), and a solid gets its triangle hierarchy and a few exact
 * signed distances. The SDF grid is not built: at 32 to 128 cells a side
 * it costs far more per input than the rest.
 *
 * firn_mesh_get, which the scenes use, reads through the same parser and
 * builds through the same checks; it is not called here because it keeps
 * every mesh it loads for the life of the process.
 *
 * A refusal is the expected outcome of most inputs; only a crash, a
 * sanitizer report, a leak or a hang is a finding. */
#include "fuzz_util.h"
#include "mesh.h"

static char obj_path[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_one_thread();
    fuzz_make_dir("obj");
    fuzz_path(obj_path, sizeof obj_path, "mesh.obj");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    float *v = NULL;
    int *tri = NULL, nv = 0, nt = 0;
    firn_error err;
    fuzz_write(obj_path, data, size);
    if (firn_mesh_read_surface(obj_path, 1.0f, &v, &nv, &tri, &nt, &err) == 0) {
        firn_mesh *m = NULL;
        if (firn_mesh_build(v, nv, tri, nt, "mesh.obj", &m, &err) == 0) {
            firn_mesh_bvh *b = NULL;
            if (firn_mesh_bvh_create(m, &b, &err) == 0) {
                static const double probe[4][3] = {
                    {0, 0, 0}, {1, 0, 0}, {0.1, -0.2, 0.3}, {-5, 7, 11}};
                for (int i = 0; i < 4; i++) {
                    double g[3];
                    volatile double d = firn_mesh_bvh_distance(b, probe[i], g);
                    (void)d;
                }
                firn_mesh_bvh_free(b);
            }
            firn_mesh_free(m);
        }
        free(v);
        free(tri);
    }
    return 0;
}
