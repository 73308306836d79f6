/* scene_coupling.c - the scene's "coupling" section (which solver pairs
 * exchange momentum) and its check. */
#include "scene_internal.h"

#include <cJSON.h>

int scene_parse_coupling(const ctx *c, const cJSON *j, firn_scene_def *def)
{
    static const char *const keys[] = {"rigid_mpm", "cpic",    "mpm_sph",  "sph_rigid",
                                       "pbd_rigid", "mpm_pbd", "tool_mpm", "fem_rigid",
                                       "fem_mpm",   "fem_sph", NULL};
    if (scene_need_object(c, j, "coupling") || scene_check_keys(c, j, "coupling", keys, NULL) ||
        scene_get_bool(c, j, "coupling", "rigid_mpm", &def->coupling.rigid_mpm) ||
        scene_get_bool(c, j, "coupling", "mpm_sph", &def->coupling.mpm_sph) ||
        scene_get_bool(c, j, "coupling", "sph_rigid", &def->coupling.sph_rigid) ||
        scene_get_bool(c, j, "coupling", "pbd_rigid", &def->coupling.pbd_rigid) ||
        scene_get_bool(c, j, "coupling", "mpm_pbd", &def->coupling.mpm_pbd) ||
        scene_get_bool(c, j, "coupling", "cpic", &def->coupling.cpic) ||
        scene_get_bool(c, j, "coupling", "tool_mpm", &def->coupling.tool_mpm) ||
        scene_get_bool(c, j, "coupling", "fem_rigid", &def->coupling.fem_rigid) ||
        scene_get_bool(c, j, "coupling", "fem_mpm", &def->coupling.fem_mpm) ||
        scene_get_bool(c, j, "coupling", "fem_sph", &def->coupling.fem_sph))
        return -1;
    return 0;
}

int scene_validate_coupling(const ctx *c, const firn_scene_def *def)
{
    if (def->coupling.cpic && !def->coupling.rigid_mpm)
        return scene_fail(
            c, "coupling.cpic",
            "true needs coupling.rigid_mpm true (CPIC shapes the rigid-MPM coupling)");
    return 0;
}
