/* mpm_ply.h - MPM's PLY layout, once, for its table of fields
 * (host/solver_cpu.c) and the view-based writer of firn.h (host/output.c
 * firn_write_ply). Header only, so that neither module depends on the
 * other. */
#ifndef FIRN_MPM_PLY_H
#define FIRN_MPM_PLY_H

#include "solver.h"

/* Names MPM's PLY fields in t, a table of MPM particles' fields, in their
 * PLY order: x y z, vx vy vz, material, jp, damage; the frames are
 * frame_NNNNN.ply (frame.ply.series), their header's comment
 * "firn <version>" alone. */
static inline void firn_mpm_ply_names(firn_field_table *t)
{
    t->ply_file = "frame";
    t->ply_comment = "";
    firn_field_ply_named(t, "x", "x y z", "[m]");
    firn_field_ply_named(t, "v", "vx vy vz", "[m/s]");
    firn_field_ply_named(t, "mat", "material", NULL);
    firn_field_ply_named(t, "Jp", "jp", "[1]");
    firn_field_ply_named(t, "damage", "damage", "[1]");
}

#endif
