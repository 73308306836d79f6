/* fuzz_gmsh.c - libFuzzer target: the Gmsh .msh reader (host/tet_io.c,
 * ASCII versions 2.2 and 4.1) on any bytes, written to mesh.msh in a
 * private temporary folder and loaded with firn_tet_mesh_load, which also
 * checks the mesh (firn_tet_mesh_finish).
 *
 * A refusal is the expected outcome of most inputs; only a crash, a
 * sanitizer report, a leak or a hang is a finding. */
#include "fuzz_util.h"
#include "tet_mesh.h"

static char msh_path[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_one_thread();
    fuzz_make_dir("gmsh");
    fuzz_path(msh_path, sizeof msh_path, "mesh.msh");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    firn_tet_mesh m;
    firn_error err;
    fuzz_write(msh_path, data, size);
    if (firn_tet_mesh_load(msh_path, 1.0, &m, &err) == 0)
        firn_tet_mesh_free(&m);
    return 0;
}
