/* all_solvers.h - a small world with every solver (a tool, a dynamic rigid
 * ball, MPM sand, SPH water, a PBD cloth, an FEM jelly) and their pairs, and
 * the check that the substep's one order (host/coupler.c firn_coupler_run)
 * timed every phase into the profile slot its solver's table names
 * (host/solver.h). Shared by the CPU test (test_world.c) and the CUDA one
 * (test_gpu.c). */
#ifndef FIRN_TEST_ALL_SOLVERS_H
#define FIRN_TEST_ALL_SOLVERS_H

#include <criterion/criterion.h>

#include "firn.h"

static const char all_solvers_json[] =
    "{\"domain\": {\"lower\": [0, 0, 0], \"upper\": [0.6, 0.5, 0.6], \"dx\": 0.04},"
    " \"gravity\": [0, -9.81, 0], \"time\": {\"frame_dt\": 0.002, \"frames\": 1},"
    " \"sph\": {\"particle_size\": 0.02}, \"pbd\": {\"particle_size\": 0.02},"
    " \"materials\": {"
    "   \"sand\": {\"model\": \"sand\", \"E\": 3e5, \"nu\": 0.3, \"density\": 1600,"
    "     \"friction_angle\": 30},"
    "   \"water\": {\"model\": \"sph_liquid\", \"density\": 1000},"
    "   \"cloth\": {\"model\": \"pbd_cloth\", \"density\": 4},"
    "   \"jelly\": {\"model\": \"fem_stable_neohookean\", \"E\": 1e5, \"nu\": 0.3,"
    "     \"density\": 500}},"
    " \"bodies\": ["
    "   {\"material\": \"sand\", \"shape\": {\"type\": \"box\", \"center\": [0.2, 0.14, 0.2],"
    "     \"size\": [0.12, 0.08, 0.12]}},"
    "   {\"material\": \"water\", \"solver\": \"sph\", \"shape\": {\"type\": \"box\","
    "     \"lower\": [0.3, 0, 0.1], \"upper\": [0.5, 0.08, 0.4]}},"
    "   {\"material\": \"cloth\", \"solver\": \"pbd\", \"shape\": {\"type\": \"cloth_rect\","
    "     \"center\": [0.3, 0.4, 0.3], \"size\": [0.2, 0.2], \"resolution\": [8, 8],"
    "     \"normal\": \"y\"}},"
    "   {\"material\": \"jelly\", \"solver\": \"fem\", \"shape\": {\"type\": \"box\","
    "     \"center\": [0.42, 0.25, 0.3], \"size\": [0.06, 0.06, 0.06], \"cells\": [2, 2, 2]}}],"
    " \"rigids\": [{\"name\": \"ball\", \"shape\": {\"type\": \"sphere\","
    "   \"center\": [0.2, 0.3, 0.2], \"radius\": 0.03}, \"motion\": \"dynamic\","
    "   \"density\": 500}],"
    " \"tools\": [{\"name\": \"t\", \"shape\": {\"type\": \"box\", \"center\": [0.12, 0.3, 0.12],"
    "   \"size\": [0.02, 0.02, 0.02]}, \"keyframes\": [{\"t\": 0, \"position\": [0.12, 0.3, 0.12]},"
    "   {\"t\": 1, \"position\": [0.12, 0.35, 0.12]}]}]}";

/* Every phase this world has took time on `path`, no slot took more than
 * the steps' total, and (cuda) the slots split the total exactly (the CUDA
 * path spreads the call's time over the timed substep's intervals). The
 * PBD particle passes are left out: a cloth has none. */
static inline void all_solvers_check_profile(const firn_profile *p, const char *path, int cuda)
{
    const struct {
        const char *name;
        double t;
    } f[] = {{"couple", p->couple},
             {"clear", p->clear},
             {"p2g", p->p2g},
             {"sph_sort", p->sph_sort},
             {"sph_density", p->sph_density},
             {"sph_pressure", p->sph_pressure},
             {"pbd_constraints", p->pbd_constraints},
             {"fem_elements", p->fem_elements},
             {"fem_velocity", p->fem_velocity},
             {"grid", p->grid},
             {"g2p", p->g2p},
             {"sph_integrate", p->sph_integrate},
             {"pbd_integrate", p->pbd_integrate},
             {"fem_position", p->fem_position}};
    double sum = p->pbd_particles;
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        cr_expect(f[k].t > 0.0, "%s: phase %s took %g s", path, f[k].name, f[k].t);
        sum += f[k].t;
    }
    /* 1e-5: the CUDA path scales float milliseconds to the call's total */
    cr_expect(p->total > 0.0 && sum <= p->total * (1.0 + 1e-5),
              "%s: the phases sum to %.9g s of %.9g", path, sum, p->total);
    if (cuda)
        cr_expect(sum >= p->total * (1.0 - 1e-5), "%s: the phases sum to %.9g s of %.9g", path, sum,
                  p->total);
}

#endif
