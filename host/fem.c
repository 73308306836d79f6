/* fem.c - the FEM solver's bodies on the host: vertices and elements from
 * checked tetrahedral meshes (host/tet_mesh.c), rest data, lumped masses,
 * the vertex-to-slot adjacency through which vertices gather their
 * elements' forces, and the surfaces that couple and are written out. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fem.h"

void firn_fem_free(firn_fem *S)
{
    free(S->V.x), free(S->V.v), free(S->V.x0), free(S->V.mass), free(S->V.f);
    free(S->V.adj_start), free(S->V.fixed), free(S->V.adj);
    free(S->E.v), free(S->E.B), free(S->E.vol), free(S->E.mat), free(S->E.fslot);
    free(S->face), free(S->face_tet), free(S->surf);
    firn_fem_material mats[FIRN_MAX_MATERIALS];
    memcpy(mats, S->mats, sizeof mats);
    memset(S, 0, sizeof *S);
    memcpy(S->mats, mats, sizeof mats);
}

/* The shortest altitude of a tet: 3 V over its largest face's area. */
static double min_altitude(const double *x, const int *t, double vol)
{
    double amax = 0;
    for (int f = 0; f < 4; f++) {
        const double *a = x + 3 * t[(f + 1) % 4], *b = x + 3 * t[(f + 2) % 4],
                     *c = x + 3 * t[(f + 3) % 4];
        double u[3], v[3];
        for (int k = 0; k < 3; k++)
            u[k] = b[k] - a[k], v[k] = c[k] - a[k];
        double n0 = u[1] * v[2] - u[2] * v[1], n1 = u[2] * v[0] - u[0] * v[2],
               n2 = u[0] * v[1] - u[1] * v[0];
        double area = 0.5 * sqrt(n0 * n0 + n1 * n1 + n2 * n2);
        if (area > amax)
            amax = area;
    }
    return 3.0 * vol / amax;
}

int firn_fem_build(firn_fem *S, const firn_tet_mesh *meshes, const int *mat, int nbodies,
                   firn_error *err)
{
    firn_fem_free(S);
    if (nbodies < 0 || nbodies > FIRN_FEM_MAX_BODIES) {
        firn_set_error(err, FIRN_E_USAGE, "FEM: %d bodies (at most %d)", nbodies,
                       FIRN_FEM_MAX_BODIES);
        return -1;
    }
    long long nv = 0, ne = 0, nf = 0, ns = 0;
    for (int b = 0; b < nbodies; b++) {
        S->v_first[b] = (int)nv, S->e_first[b] = (int)ne;
        S->f_first[b] = (int)nf, S->s_first[b] = (int)ns;
        nv += meshes[b].nv, ne += meshes[b].ne, nf += meshes[b].nf, ns += meshes[b].ns;
    }
    if (nv > (1 << 28) || ne > (1 << 27)) {
        firn_set_error(err, FIRN_E_USAGE, "FEM: %lld vertices and %lld elements are too many", nv,
                       ne);
        return -1;
    }
    S->bodies = nbodies;
    S->v_first[nbodies] = (int)nv, S->e_first[nbodies] = (int)ne;
    S->f_first[nbodies] = (int)nf, S->s_first[nbodies] = (int)ns;
    S->nf = (int)nf, S->ns = (int)ns;
    firn_fem_vertices *V = &S->V;
    firn_fem_elements *E = &S->E;
    V->n = (int)nv, E->n = (int)ne;
    const size_t n1 = nv ? (size_t)nv : 1, e1 = ne ? (size_t)ne : 1;
    V->x = calloc(3 * n1, sizeof *V->x), V->v = calloc(3 * n1, sizeof *V->v);
    V->x0 = calloc(3 * n1, sizeof *V->x0), V->mass = calloc(n1, sizeof *V->mass);
    V->f = calloc(3 * n1, sizeof *V->f), V->adj_start = calloc(n1 + 1, sizeof *V->adj_start);
    V->fixed = calloc(n1, 1), V->adj = malloc(4 * e1 * sizeof *V->adj);
    E->v = malloc(4 * e1 * sizeof *E->v), E->B = malloc(9 * e1 * sizeof *E->B);
    E->vol = malloc(e1 * sizeof *E->vol), E->mat = malloc(e1);
    E->fslot = calloc(12 * e1, sizeof *E->fslot);
    S->face = malloc(3 * (nf ? (size_t)nf : 1) * sizeof *S->face);
    S->face_tet = malloc((nf ? (size_t)nf : 1) * sizeof *S->face_tet);
    S->surf = malloc((ns ? (size_t)ns : 1) * sizeof *S->surf);
    double *mass = calloc(n1, sizeof *mass);
    if (!V->x || !V->v || !V->x0 || !V->mass || !V->f || !V->adj_start || !V->fixed || !V->adj ||
        !E->v || !E->B || !E->vol || !E->mat || !E->fslot || !S->face || !S->face_tet || !S->surf ||
        !mass) {
        free(mass);
        firn_fem_free(S);
        firn_set_error(err, FIRN_E_NOMEM, "FEM: out of memory for %lld vertices, %lld elements", nv,
                       ne);
        return -1;
    }
    double h_min = INFINITY;
    for (int b = 0; b < nbodies; b++) {
        const firn_tet_mesh *m = &meshes[b];
        const int v0 = S->v_first[b], e0 = S->e_first[b];
        for (int i = 0; i < m->nv; i++)
            for (int c = 0; c < 3; c++)
                V->x[c * V->n + v0 + i] = (float)m->x[3 * i + c];
        const double rho = S->mats[mat[b]].rho;
        for (int e = 0; e < m->ne; e++) {
            const int *t = m->tet + 4 * e, g = e0 + e;
            firn_vec3 p[4];
            for (int k = 0; k < 4; k++) {
                E->v[4 * g + k] = v0 + t[k];
                p[k] = firn_load3(V->x, V->n, v0 + t[k]);
            }
            firn_mat3 B;
            float vol;
            if (firn_fem_rest(p, &B, &vol)) {
                free(mass);
                firn_fem_free(S);
                firn_set_error(err, FIRN_E_SCENE,
                               "FEM body %d: element %d has no positive volume in single "
                               "precision (it is %.3g m^3 in double): refine or rescale the mesh",
                               b, e, firn_tet_mesh_volume(m, e));
                return -1;
            }
            for (int k = 0; k < 9; k++)
                E->B[k * E->n + g] = B.m[k];
            E->vol[g] = vol;
            E->mat[g] = (uint8_t)mat[b];
            const double dv = firn_tet_mesh_volume(m, e);
            for (int k = 0; k < 4; k++)
                mass[v0 + t[k]] += rho * dv / 4.0;
            h_min = fmin(h_min, min_altitude(m->x, t, dv));
        }
        const int f0 = S->f_first[b], s0 = S->s_first[b];
        for (int f = 0; f < m->nf; f++) {
            for (int c = 0; c < 3; c++)
                S->face[3 * (f0 + f) + c] = v0 + m->face[3 * f + c];
            S->face_tet[f0 + f] = e0 + m->face_tet[f];
        }
        for (int i = 0; i < m->ns; i++)
            S->surf[s0 + i] = v0 + m->surf[i];
    }
    for (int i = 0; i < V->n; i++)
        V->mass[i] = (float)mass[i];
    free(mass);
    /* Adjacency: a counting sort of the slots 4e + k by vertex, so each
     * vertex's slots are ascending. */
    for (int s = 0; s < 4 * E->n; s++)
        V->adj_start[E->v[s] + 1]++;
    for (int i = 0; i < V->n; i++)
        V->adj_start[i + 1] += V->adj_start[i];
    int *fill = calloc(n1, sizeof *fill);
    if (!fill) {
        firn_fem_free(S);
        firn_set_error(err, FIRN_E_NOMEM, "FEM: out of memory for the adjacency");
        return -1;
    }
    for (int s = 0; s < 4 * E->n; s++) {
        const int i = E->v[s];
        V->adj[V->adj_start[i] + fill[i]++] = s;
    }
    free(fill);
    memcpy(V->x0, V->x, 3 * n1 * sizeof *V->x);
    S->h_min = (float)h_min;
    return 0;
}
