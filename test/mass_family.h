/* mass_family.h - the shapes of the starting-mass tests (test_sph.c,
 * test_pbf.c, test_body_mesh.c): boxes of several aspect ratios whose
 * edges are no multiple of any spacing used, a sphere, two cylinders and
 * the rock mesh, each with its exact volume computed here, the mesh's from
 * its OBJ file (sum over its triangles of a . (b x c) / 6). */
#ifndef FIRN_MASS_FAMILY_H
#define FIRN_MASS_FAMILY_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "firn.h"

#define MASS_SHAPES 7

/* The OBJ surface's enclosed volume at a scale [m^3] (faces fanned). */
static inline double mass_obj_volume(const char *path, double scale)
{
    static double v[4096][3];
    int nv = 0;
    double vol = 0.0;
    char line[512];
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot read %s", path);
    while (fgets(line, sizeof line, f)) {
        if (line[0] == 'v' && line[1] == ' ') {
            cr_assert(nv < 4096);
            cr_assert(sscanf(line + 2, "%lf %lf %lf", &v[nv][0], &v[nv][1], &v[nv][2]) == 3);
            for (int a = 0; a < 3; a++)
                v[nv][a] *= scale;
            nv++;
        } else if (line[0] == 'f' && line[1] == ' ') {
            int idx[16], k = 0;
            for (char *t = strtok(line + 2, " \t\r\n"); t && k < 16; t = strtok(NULL, " \t\r\n"))
                idx[k++] = atoi(t); /* "i/j/k" reads as i */
            for (int t = 1; t + 1 < k; t++) {
                const double *a = v[idx[0] - 1], *b = v[idx[t] - 1], *c = v[idx[t + 1] - 1];
                vol += (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
                        a[2] * (b[0] * c[1] - b[1] * c[0])) /
                       6.0;
            }
        }
    }
    fclose(f);
    return fabs(vol);
}

/* Shape k of the family, centred at c, into s; returns its exact volume. */
static inline double mass_shape(int k, const float c[3], firn_shape_def *s)
{
    static const float boxes[3][3] = {
        {0.13f, 0.07f, 0.19f}, {0.23f, 0.11f, 0.053f}, {0.077f, 0.31f, 0.093f}};
    memset(s, 0, sizeof *s);
    memcpy(s->center, c, 3 * sizeof(float));
    s->axis = 1;
    s->scale = 1.0f;
    switch (k) {
    case 0:
    case 1:
    case 2:
        s->type = FIRN_SHAPE_BOX;
        memcpy(s->size, boxes[k], sizeof boxes[k]);
        return (double)s->size[0] * s->size[1] * s->size[2];
    case 3:
        s->type = FIRN_SHAPE_SPHERE;
        s->radius = 0.083f;
        return 4.0 / 3.0 * M_PI * pow(s->radius, 3);
    case 4:
    case 5:
        s->type = FIRN_SHAPE_CYLINDER;
        s->radius = k == 4 ? 0.061f : 0.047f;
        s->height = k == 4 ? 0.17f : 0.23f;
        s->axis = k == 4 ? 1 : 0;
        return M_PI * s->radius * s->radius * s->height;
    default:
        s->type = FIRN_SHAPE_MESH;
        snprintf(s->file, sizeof s->file, "scenes/assets/rock.obj");
        s->scale = 0.06f;
        return mass_obj_volume(s->file, s->scale);
    }
}

#endif
