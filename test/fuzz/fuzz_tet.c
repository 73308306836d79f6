/* fuzz_tet.c - libFuzzer target: the TetGen reader (host/tet_io.c, a .node
 * and an .ele file) on any bytes. The input is split at its first '@' (a
 * byte the format never uses): the bytes before it are mesh.node, those
 * after it mesh.ele, in a private temporary folder; with no '@' the whole
 * input is mesh.node and there is no mesh.ele. Then mesh.node is loaded
 * with firn_tet_mesh_load, which also checks the mesh
 * (firn_tet_mesh_finish). make fuzz's seeds join scenes/assets'
 * soft_ball.node and soft_ball.ele so.
 *
 * A refusal is the expected outcome of most inputs; only a crash, a
 * sanitizer report, a leak or a hang is a finding. */
#include "fuzz_util.h"
#include "tet_mesh.h"

static char node_path[PATH_MAX], ele_path[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_one_thread();
    fuzz_make_dir("tet");
    fuzz_path(node_path, sizeof node_path, "mesh.node");
    fuzz_path(ele_path, sizeof ele_path, "mesh.ele");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    firn_tet_mesh m;
    firn_error err;
    const uint8_t *at = memchr(data, '@', size);
    size_t nnode = at ? (size_t)(at - data) : size;
    fuzz_write(node_path, data, nnode);
    if (at)
        fuzz_write(ele_path, at + 1, size - nnode - 1);
    else
        unlink(ele_path);
    if (firn_tet_mesh_load(node_path, 1.0, &m, &err) == 0)
        firn_tet_mesh_free(&m);
    return 0;
}
