/* make_tet_assets.c - writes the FEM meshes in scenes/assets (make
 * tet-assets): soft_ball.node/.ele, a ball of radius 5 cm as TetGen writes
 * them (numbered from 1, boundary markers 1 on the surface), and
 * block.msh, a 12 x 6 x 6 cm block as Gmsh 4.1 writes it (surface and
 * interior node blocks, the surface triangles and the tets). Both come
 * from firn's own generators (firn_tet_mesh_sphere, firn_tet_mesh_box). */
#include <stdio.h>
#include <stdlib.h>

#include "tet_mesh.h"

static FILE *create(const char *dir, const char *name, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        perror(path);
    return f;
}

static int write_tetgen(const char *dir, const char *stem, const firn_tet_mesh *m, int n)
{
    char path[1024], name[256];
    snprintf(name, sizeof name, "%s.node", stem);
    FILE *f = create(dir, name, path, sizeof path);
    if (!f)
        return -1;
    char *on = calloc((size_t)m->nv, 1);
    for (int i = 0; i < m->ns; i++)
        on[m->surf[i]] = 1;
    fprintf(f,
            "# %s - a ball of radius 0.05 m: firn_tet_mesh_sphere with n = %d "
            "(scenes/assets/make_tet_assets.c)\n",
            name, n);
    fprintf(f, "%d 3 0 1\n", m->nv);
    for (int v = 0; v < m->nv; v++)
        fprintf(f, "%d %.10g %.10g %.10g %d\n", v + 1, m->x[3 * v], m->x[3 * v + 1],
                m->x[3 * v + 2], on[v]);
    free(on);
    if (fclose(f))
        return -1;
    snprintf(name, sizeof name, "%s.ele", stem);
    if (!(f = create(dir, name, path, sizeof path)))
        return -1;
    fprintf(f, "# %s - the ball's tetrahedra, numbered from 1\n", name);
    fprintf(f, "%d 4 0\n", m->ne);
    for (int e = 0; e < m->ne; e++)
        fprintf(f, "%d %d %d %d %d\n", e + 1, m->tet[4 * e] + 1, m->tet[4 * e + 1] + 1,
                m->tet[4 * e + 2] + 1, m->tet[4 * e + 3] + 1);
    return fclose(f);
}

static int write_gmsh41(const char *dir, const char *name, const firn_tet_mesh *m,
                        const double lo[3], const double hi[3])
{
    char path[1024];
    FILE *f = create(dir, name, path, sizeof path);
    if (!f)
        return -1;
    /* Node tags: the surface's first (1..ns), then the interior's. */
    int *tag = malloc(sizeof(int) * (size_t)m->nv), t = 0;
    for (int v = 0; v < m->nv; v++)
        tag[v] = 0;
    for (int i = 0; i < m->ns; i++)
        tag[m->surf[i]] = ++t;
    for (int v = 0; v < m->nv; v++)
        if (!tag[v])
            tag[v] = ++t;
    fprintf(f, "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n");
    fprintf(f, "$Entities\n0 0 1 1\n");
    fprintf(f, "1 %g %g %g %g %g %g 0 0\n", lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
    fprintf(f, "1 %g %g %g %g %g %g 0 1 1\n", lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
    fprintf(f, "$EndEntities\n");
    fprintf(f, "$Nodes\n2 %d 1 %d\n", m->nv, m->nv);
    for (int block = 0; block < 2; block++) {
        const int first = block ? m->ns + 1 : 1, count = block ? m->nv - m->ns : m->ns;
        fprintf(f, "%d 1 0 %d\n", block ? 3 : 2, count);
        for (int k = 0; k < count; k++)
            fprintf(f, "%d\n", first + k);
        for (int k = 0; k < count; k++)
            for (int v = 0; v < m->nv; v++)
                if (tag[v] == first + k)
                    fprintf(f, "%.10g %.10g %.10g\n", m->x[3 * v], m->x[3 * v + 1],
                            m->x[3 * v + 2]);
    }
    fprintf(f, "$EndNodes\n");
    fprintf(f, "$Elements\n2 %d 1 %d\n", m->nf + m->ne, m->nf + m->ne);
    fprintf(f, "2 1 2 %d\n", m->nf);
    for (int i = 0; i < m->nf; i++)
        fprintf(f, "%d %d %d %d\n", i + 1, tag[m->face[3 * i]], tag[m->face[3 * i + 1]],
                tag[m->face[3 * i + 2]]);
    fprintf(f, "3 1 4 %d\n", m->ne);
    for (int e = 0; e < m->ne; e++)
        fprintf(f, "%d %d %d %d %d\n", m->nf + e + 1, tag[m->tet[4 * e]], tag[m->tet[4 * e + 1]],
                tag[m->tet[4 * e + 2]], tag[m->tet[4 * e + 3]]);
    fprintf(f, "$EndElements\n");
    free(tag);
    return fclose(f);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "scenes/assets";
    firn_tet_mesh ball, block;
    firn_error err;
    const double c[3] = {0, 0, 0}, lo[3] = {-0.06, -0.03, -0.03}, hi[3] = {0.06, 0.03, 0.03};
    const int n[3] = {6, 3, 3};
    if (firn_tet_mesh_sphere(c, 0.05, 4, &ball, &err) ||
        firn_tet_mesh_box(lo, hi, n, &block, &err)) {
        fprintf(stderr, "make_tet_assets: %s\n", err.msg);
        return 1;
    }
    int rc =
        write_tetgen(dir, "soft_ball", &ball, 4) || write_gmsh41(dir, "block.msh", &block, lo, hi);
    printf("make_tet_assets: %s/soft_ball.node/.ele (%d vertices, %d tets), %s/block.msh (%d "
           "vertices, %d tets)\n",
           dir, ball.nv, ball.ne, dir, block.nv, block.ne);
    firn_tet_mesh_free(&ball), firn_tet_mesh_free(&block);
    return rc;
}
