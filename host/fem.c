/* fem.c - the FEM solver's bodies on the host: vertices and elements from
 * checked tetrahedral meshes (host/tet_mesh.c), rest data, lumped masses,
 * the vertex-to-slot adjacency through which vertices gather their
 * elements' forces, and the surfaces that couple and are written out. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fem.h"
#include "align.h"

void firn_fem_free(firn_fem *S)
{
    free(S->V.x), free(S->V.v), free(S->V.x0), free(S->V.mass), free(S->V.f);
    free(S->V.adj_start), free(S->V.fixed), free(S->V.adj);
    free(S->E.v), free(S->E.B), free(S->E.vol), free(S->E.mat), free(S->E.fslot);
    free(S->face), free(S->face_tet), free(S->surf);
    free(S->vf_start), free(S->vf), free(S->normal);
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

/* firn_fem_build; messages name body b as the scene's bodies[scene_body[b]]
 * (and its mesh file, where it has one) when scene_body is given, else as
 * FEM body b. S->scene_body takes scene_body, or -1s. */
static int fem_build(firn_fem *S, const firn_tet_mesh *meshes, const int *mat, int nbodies,
                     const int *scene_body, const firn_scene_def *def, firn_error *err);

int firn_fem_build(firn_fem *S, const firn_tet_mesh *meshes, const int *mat, int nbodies,
                   firn_error *err)
{
    return fem_build(S, meshes, mat, nbodies, NULL, NULL, err);
}

static int fem_build(firn_fem *S, const firn_tet_mesh *meshes, const int *mat, int nbodies,
                     const int *scene_body, const firn_scene_def *def, firn_error *err)
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
    for (int b = 0; b < nbodies; b++)
        S->scene_body[b] = scene_body ? scene_body[b] : -1;
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
        double h_body = INFINITY;
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
                char who[FIRN_PATH_MAX + 96];
                if (scene_body) {
                    const firn_shape_def *sh = &def->bodies[scene_body[b]].shape;
                    snprintf(who, sizeof who, "%s%sbodies[%d]%s%s%s", def->source,
                             def->source[0] ? ": " : "", scene_body[b],
                             sh->type == FIRN_SHAPE_MESH ? " (mesh '" : "",
                             sh->type == FIRN_SHAPE_MESH ? sh->file : "",
                             sh->type == FIRN_SHAPE_MESH ? "')" : "");
                } else {
                    snprintf(who, sizeof who, "FEM body %d", b);
                }
                const double dv = firn_tet_mesh_volume(m, e);
                free(mass);
                firn_fem_free(S);
                firn_set_error(err, FIRN_E_SCENE,
                               "%s: element %d has no positive volume in single precision (it is "
                               "%.3g m^3 in double): refine or rescale the mesh",
                               who, e, dv);
                return -1;
            }
            for (int k = 0; k < 9; k++)
                E->B[k * E->n + g] = B.m[k];
            E->vol[g] = vol;
            E->mat[g] = (uint8_t)mat[b];
            const double dv = firn_tet_mesh_volume(m, e);
            for (int k = 0; k < 4; k++)
                mass[v0 + t[k]] += rho * dv / 4.0;
            h_body = fmin(h_body, min_altitude(m->x, t, dv));
        }
        S->h_body[b] = (float)h_body;
        h_min = fmin(h_min, h_body);
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

/* ---- the scene's FEM bodies ------------------------------------------------ */

int firn_fem_in_scene(const firn_scene_def *def)
{
    for (int b = 0; b < def->n_bodies; b++)
        if (def->bodies[b].solver == FIRN_SOLVER_KIND_FEM)
            return 1;
    return 0;
}

size_t firn_fem_device_bytes(int nv, int ne, int nf, int ns, long long nodes, int share, int sph_n,
                             int contact)
{
    if (nv <= 0) /* no FEM bodies: kernels/fem.cu allocates nothing */
        return 0;
    const size_t v = (size_t)nv, e = (size_t)ne, f = (size_t)nf, s = (size_t)ns;
    const size_t bytes[] = {3 * v * 4,
                            3 * v * 4,
                            3 * v * 4,
                            v * 4,
                            3 * v * 4,
                            (v + 1) * 4,
                            v,
                            4 * e * 4, /* vertices */
                            4 * e * 4,
                            9 * e * 4,
                            e * 4,
                            e,
                            12 * e * 4, /* elements */
                            s * 4,
                            3 * f * 4,
                            (s + 1) * 4,
                            3 * f * 4,
                            3 * s * 4, /* surface */
                            nodes > 0 ? 4 * (size_t)nodes * 4 : 0,
                            share ? 3 * s * 4 : 0, /* pairs */
                            share ? (size_t)sph_n * 4 : 0,
                            contact ? (size_t)sph_n * 8 : 0, /* FEM-SPH's contact distance */
                            contact ? (size_t)sph_n * 4 : 0,
                            FIRN_MAX_MATERIALS * sizeof(firn_fem_material),
                            sizeof(unsigned long long)};
    size_t total = 0;
    for (size_t k = 0; k < sizeof bytes / sizeof bytes[0]; k++)
        total += firn_align256(bytes[k]);
    return total;
}

int firn_fem_scene_implicit(const firn_scene_def *def)
{
    for (int b = 0; b < def->n_bodies; b++)
        if (def->bodies[b].solver == FIRN_SOLVER_KIND_FEM && def->bodies[b].fem_implicit)
            return 1;
    return 0;
}

/* Lame parameters of E and nu (Genesis's FEM materials). */
static firn_fem_material fem_material(const firn_material_def *m)
{
    firn_fem_material f;
    f.model = m->model == FIRN_MODEL_FEM_COROTATED           ? FIRN_FEM_COROTATED
              : m->model == FIRN_MODEL_FEM_STABLE_NEOHOOKEAN ? FIRN_FEM_STABLE_NEOHOOKEAN
                                                             : FIRN_FEM_LINEAR;
    const double E = m->E, nu = m->nu;
    f.mu = (float)(E / (2.0 * (1.0 + nu)));
    f.lambda = (float)(E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)));
    f.rho = m->density;
    return f;
}

/* Body b's tetrahedral mesh (its shape, checked by the scene's validation):
 * a box of its cells, a ball of cells[0] cells across, or a mesh file with
 * its centroid moved to the shape's center. */
static int body_mesh(const firn_scene_def *def, int b, firn_tet_mesh *m, firn_error *err)
{
    const firn_shape_def *s = &def->bodies[b].shape;
    double lo[3], hi[3], c[3];
    firn_error e;
    for (int k = 0; k < 3; k++) {
        c[k] = s->center[k];
        lo[k] = c[k] - 0.5 * s->size[k], hi[k] = c[k] + 0.5 * s->size[k];
    }
    int rc = -1;
    if (s->type == FIRN_SHAPE_BOX)
        rc = firn_tet_mesh_box(lo, hi, s->cells, m, &e);
    else if (s->type == FIRN_SHAPE_SPHERE)
        rc = firn_tet_mesh_sphere(c, s->radius, s->cells[0], m, &e);
    else if (s->type == FIRN_SHAPE_MESH)
        rc = firn_tet_mesh_load(s->file, s->scale, m, &e);
    else
        firn_set_error(&e, FIRN_E_SCENE, "an FEM body is a box, a sphere or a mesh");
    if (rc) {
        firn_set_error(err, e.code, "bodies[%d].shape: %s", b, e.msg);
        return -1;
    }
    if (s->type == FIRN_SHAPE_MESH) {
        double cen[3];
        firn_fem_mesh_centroid(m, cen);
        for (int v = 0; v < m->nv; v++)
            for (int k = 0; k < 3; k++)
                m->x[3 * v + k] += c[k] - cen[k];
    }
    return 0;
}

int firn_fem_init(firn_fem *S, const firn_scene_def *def, firn_error *err)
{
    firn_fem_free(S);
    memset(S->mats, 0, sizeof S->mats);
    int nb = 0, scene_body[FIRN_FEM_MAX_BODIES], mat[FIRN_FEM_MAX_BODIES];
    for (int b = 0; b < def->n_bodies && nb < FIRN_FEM_MAX_BODIES; b++)
        if (def->bodies[b].solver == FIRN_SOLVER_KIND_FEM) {
            scene_body[nb] = b;
            mat[nb++] = def->bodies[b].material;
        }
    if (nb == 0)
        return 0;
    for (int k = 0; k < def->n_materials; k++)
        S->mats[k] = fem_material(&def->materials[k]);
    firn_tet_mesh *meshes = calloc((size_t)nb, sizeof *meshes);
    if (!meshes) {
        firn_set_error(err, FIRN_E_NOMEM, "FEM: out of memory for the meshes");
        return -1;
    }
    int rc = 0;
    for (int k = 0; k < nb && rc == 0; k++)
        rc = body_mesh(def, scene_body[k], &meshes[k], err);
    if (rc == 0)
        rc = fem_build(S, meshes, mat, nb, scene_body, def, err);
    for (int k = 0; k < nb; k++)
        firn_tet_mesh_free(&meshes[k]);
    free(meshes);
    if (rc)
        return -1;
    firn_fem_vertices *V = &S->V;
    for (int k = 0; k < nb; k++) {
        const firn_body_def *bd = &def->bodies[scene_body[k]];
        S->body_mat[k] = mat[k];
        S->implicit[k] = (uint8_t)(bd->fem_implicit != 0);
        const int v0 = S->v_first[k], v1 = S->v_first[k + 1];
        for (int i = v0; i < v1; i++)
            for (int c = 0; c < 3; c++)
                V->v[c * V->n + i] = bd->velocity[c];
        for (int q = 0; q < bd->n_pins; q++) /* validated: in [0, v1 - v0) */
            V->fixed[v0 + bd->pins[q]] = 1;
        int boxed = 0;
        float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (int i = v0; bd->pin_box && i < v1; i++) {
            int in = 1;
            for (int c = 0; c < 3; c++) {
                const float x = V->x[c * V->n + i];
                in &= x >= bd->pin_lower[c] && x <= bd->pin_upper[c];
                lo[c] = fminf(lo[c], x), hi[c] = fmaxf(hi[c], x);
            }
            V->fixed[i] |= (uint8_t)in;
            boxed += in;
        }
        if (bd->pin_box && boxed == 0) {
            firn_set_error(err, FIRN_E_SCENE,
                           "%s%sbodies[%d].fixed.box: [%g, %g] x [%g, %g] x [%g, %g] holds none "
                           "of the body's vertices (they span [%g, %g] x [%g, %g] x [%g, %g] at "
                           "rest): a box that fixes nothing is a mistake",
                           def->source, def->source[0] ? ": " : "", scene_body[k], bd->pin_lower[0],
                           bd->pin_upper[0], bd->pin_lower[1], bd->pin_upper[1], bd->pin_lower[2],
                           bd->pin_upper[2], lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]);
            firn_fem_free(S);
            return -1;
        }
    }
    S->fixed = 0;
    for (int i = 0; i < V->n; i++) {
        S->fixed += V->fixed[i];
        if (V->fixed[i])
            for (int c = 0; c < 3; c++)
                V->v[c * V->n + i] = 0.0f;
    }
    S->implicit_failed = -1;
    firn_fem_params *P = &S->P;
    memset(P, 0, sizeof *P);
    P->damping = def->fem.damping;
    for (int c = 0; c < 3; c++) {
        P->gravity[c] = def->gravity[c];
        P->lower[c] = def->lower[c];
        P->upper[c] = def->upper[c];
    }
    for (int f = 0; f < 6; f++) {
        P->wall_type[f] = def->walls[f].type == FIRN_WALL_STICKY ? FIRN_W_STICKY
                          : def->walls[f].type == FIRN_WALL_SLIP ? FIRN_W_SLIP
                                                                 : FIRN_W_SEPARATE;
        P->wall_friction[f] = def->walls[f].friction;
    }
    return 0;
}

float firn_fem_cfl_dt(const firn_fem *S, float cfl, float v_gravity, float *c_out, float *v_out,
                      int *body)
{
    const firn_fem_vertices *V = &S->V;
    float v2 = 0.0f, dt = INFINITY;
    for (int i = 0; i < V->n; i++) {
        const firn_vec3 v = firn_load3(V->v, V->n, i);
        v2 = fmaxf(v2, firn_dot(v, v));
    }
    const float vmax = sqrtf(v2);
    if (c_out)
        *c_out = 0.0f;
    if (v_out)
        *v_out = vmax;
    if (body)
        *body = -1;
    for (int b = 0; b < S->bodies; b++) {
        /* Backward Euler needs no wave-speed limit: an implicit body's
         * step only keeps its motion under cfl h_min per substep (for the
         * walls and the pairs). */
        const float c = S->implicit[b] ? 0.0f : firn_fem_wave_speed(&S->mats[S->body_mat[b]]);
        const float d = cfl * S->h_body[b] / (c + vmax + v_gravity);
        if (!(d >= dt)) { /* NaN too: it names the body */
            dt = d;
            if (c_out)
                *c_out = c;
            if (body)
                *body = S->scene_body[b];
        }
    }
    return dt;
}

void firn_fem_element_measures(const firn_fem *S, int e, float stress[6], float strain[6],
                               float *von_mises)
{
    static const int ij[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {1, 2}, {0, 2}};
    const firn_mat3 F = firn_fem_F(&S->E, S->V.x, S->V.n, e);
    const firn_mat3 P = firn_fem_stress(&S->mats[S->E.mat[e]], F);
    const float J = firn_m3_det(F);
    /* sigma = P F^T / J; E = (F^T F - I) / 2 */
    const firn_mat3 sig = firn_m3_mul_bt(P, F);
    const firn_mat3 C = firn_m3_mul(firn_m3_transpose(F), F);
    for (int k = 0; k < 6; k++) {
        const int r = ij[k][0], c = ij[k][1];
        stress[k] = sig.m[3 * r + c] / J;
        strain[k] = 0.5f * (C.m[3 * r + c] - (r == c ? 1.0f : 0.0f));
    }
    const float p = (stress[0] + stress[1] + stress[2]) / 3.0f;
    float s2 = 0.0f;
    for (int k = 0; k < 3; k++)
        s2 += (stress[k] - p) * (stress[k] - p) + 2.0f * stress[k + 3] * stress[k + 3];
    *von_mises = sqrtf(1.5f * s2);
}

void firn_fem_stats(const firn_fem *S, firn_fem_frame_stats *st)
{
    const firn_fem_vertices *V = &S->V;
    const int n = V->n;
    memset(st, 0, sizeof *st);
    st->vertices = n;
    st->elements = S->E.n;
    st->fixed = S->fixed;
    st->surface_triangles = S->nf;
    for (int a = 0; a < 3; a++)
        st->bbox_lower[a] = INFINITY, st->bbox_upper[a] = -INFINITY;
    for (int i = 0; i < n; i++) {
        const double m = V->mass[i];
        double v2 = 0.0;
        for (int a = 0; a < 3; a++) {
            const double x = V->x[a * n + i], v = V->v[a * n + i];
            st->momentum[a] += m * v;
            st->center_of_mass[a] += m * x;
            v2 += v * v;
            st->bbox_lower[a] = fminf(st->bbox_lower[a], (float)x);
            st->bbox_upper[a] = fmaxf(st->bbox_upper[a], (float)x);
        }
        st->kinetic_energy += 0.5 * m * v2;
        st->mass += m;
    }
    for (int a = 0; a < 3; a++)
        st->center_of_mass[a] = st->mass > 0.0 ? st->center_of_mass[a] / st->mass : 0.0;
    for (int e = 0; e < S->E.n; e++) {
        const firn_mat3 F = firn_fem_F(&S->E, V->x, n, e);
        st->elastic_energy += (double)S->E.vol[e] * firn_fem_energy(&S->mats[S->E.mat[e]], F);
        float sig[6], eps[6], vm;
        firn_fem_element_measures(S, e, sig, eps, &vm);
        if (!(vm <= st->max_von_mises)) /* NaN shows */
            st->max_von_mises = vm;
    }
}

size_t firn_fem_host_bytes(const firn_fem *S)
{
    const size_t nv = (size_t)S->V.n, ne = (size_t)S->E.n;
    return nv * (4 * 3 * 4 + 4 + 4 + 1) + 4 * ne * 4 /* adjacency */ +
           ne * (4 * 4 + 9 * 4 + 4 + 1 + 12 * 4) + (size_t)S->nf * 4 * 4 + (size_t)S->ns * 4;
}
