/* test_overlap.c - bodies created overlapping, for each coupling pair:
 * a body placed partly inside another solver's body (a cube at the water
 * line of a pool, a rigid sphere inside a cube) must separate from it
 * without a non-finite value, and without making energy: over 0.1 s the
 * kinetic energy stays below what falling the whole domain height would
 * give all the mass, M g H. The overlap's compression is released over a
 * few millimetres and cannot reach that; a pair that makes energy (as
 * MPM-SPH's equal shares of a heavy node's momentum did) blows far past
 * it or stops on a non-finite state. Gravity on, so every pair is loaded
 * as a user's scene would load it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "firn.h"

/* Domain, time and particle sizes shared by every case, then the bodies
 * and rigids of the case. */
static const char *const head =
    "{\"domain\": {\"lower\": [0, 0, 0], \"upper\": [0.3, 0.3, 0.3], \"dx\": 0.02},"
    " \"time\": {\"frame_dt\": 0.02, \"frames\": 5},"
    " \"sph\": {\"particle_size\": 0.015}, \"pbd\": {\"particle_size\": 0.015},"
    " \"materials\": {\"water\": {\"model\": \"sph_liquid\", \"density\": 1000},"
    "   \"jelly\": {\"model\": \"elastic\", \"E\": 1e5, \"nu\": 0.3, \"density\": 400},"
    "   \"fjelly\": {\"model\": \"fem_stable_neohookean\", \"E\": 1e5, \"nu\": 0.3,"
    "                \"density\": 400},"
    "   \"pwater\": {\"model\": \"pbd_liquid\", \"density\": 1000},"
    "   \"snow\": {\"model\": \"snow\", \"density\": 400}},";

#define POOL(m, s)                                                                                 \
    "{\"material\": \"" m "\", \"solver\": \"" s "\", \"shape\": {\"type\": \"box\","              \
    " \"lower\": [0, 0, 0], \"upper\": [0.3, 0.12, 0.3]}}"
#define MPM_BED                                                                                    \
    "{\"material\": \"snow\", \"shape\": {\"type\": \"box\", \"lower\": [0.04, 0.04, 0.04],"       \
    " \"upper\": [0.26, 0.12, 0.26]}}"
#define FEM_CUBE                                                                                   \
    "{\"material\": \"fjelly\", \"solver\": \"fem\", \"shape\": {\"type\": \"box\","               \
    " \"center\": [0.15, 0.11, 0.15], \"size\": [0.08, 0.08, 0.08], \"cells\": [4, 4, 4]}}"
#define MPM_CUBE                                                                                   \
    "{\"material\": \"jelly\", \"shape\": {\"type\": \"box\", \"center\": [0.15, 0.11, 0.15],"     \
    " \"size\": [0.08, 0.08, 0.08]}}"
#define SPHERE                                                                                     \
    "{\"name\": \"r\", \"shape\": {\"type\": \"sphere\", \"center\": [0.15, 0.11, 0.15],"          \
    " \"radius\": 0.04}, \"motion\": \"dynamic\", \"density\": 400}"

static const struct {
    const char *pair, *bodies, *rigids;
} cases[] = {
    {"FEM-SPH", POOL("water", "sph") ", " FEM_CUBE, ""},
    {"FEM-MPM", MPM_BED ", " FEM_CUBE, ""},
    {"MPM-PBD", POOL("pwater", "pbd") ", " MPM_CUBE, ""},
    {"MPM-SPH", POOL("water", "sph") ", " MPM_CUBE, ""},
    {"PBD-rigid", POOL("pwater", "pbd"), SPHERE},
    {"SPH-rigid", POOL("water", "sph"), SPHERE},
    {"FEM-rigid", FEM_CUBE, SPHERE},
    {"MPM-rigid", MPM_CUBE, SPHERE},
};

Test(overlap, bodies_created_overlapping_separate_for_every_pair, .timeout = 300)
{
    const double rigid_mass = 400.0 * 4.0 / 3.0 * M_PI * 0.04 * 0.04 * 0.04;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char json[4096];
        snprintf(json, sizeof json, "%s \"bodies\": [%s], \"rigids\": [%s]}", head, cases[k].bodies,
                 cases[k].rigids);
        firn_scene_def def;
        firn_error err;
        cr_assert_eq(firn_scene_parse_json(json, "overlap.json", &def, &err), 0, "%s: %s",
                     cases[k].pair, err.msg);
        firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
        cr_assert(w, "%s: %s", cases[k].pair, err.msg);
        firn_frame_stats st;
        for (int f = 0; f < def.frames; f++)
            cr_assert_eq(firn_world_step_frame(w, &st, &err), 0, "%s, frame %d: %s", cases[k].pair,
                         f, err.msg);
        double mass = st.mass + st.sph.mass + st.pbd.mass + st.fem.mass;
        double ke = st.kinetic_energy + st.sph.kinetic_energy + st.pbd.kinetic_energy +
                    st.fem.kinetic_energy;
        if (def.n_rigids) {
            const float *v = st.rigids[0].velocity;
            mass += rigid_mass;
            ke += 0.5 * rigid_mass * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        }
        const double bound = mass * 9.81 * 0.3;
        cr_assert(isfinite(ke) && ke < bound, "%s: kinetic energy %g J, more than M g H = %g J",
                  cases[k].pair, ke, bound);
        cr_log_info("%s: kinetic energy %.4g J after %g s (M g H = %.4g J)", cases[k].pair, ke,
                    def.frames * def.frame_dt, bound);
        firn_world_destroy(w);
    }
}
