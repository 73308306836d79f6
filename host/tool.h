/* tool.h - the tool solver (host/tool.c): tools built from the scene,
 * their advection before coupling, the bookkeeping of the force the
 * material exerts on them, and the C API that drives and reads them. */
#ifndef FIRN_TOOL_HOST_H
#define FIRN_TOOL_HOST_H

#include "firn.h"
#include "firn_tool.h"
#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

int firn_tools_init(firn_world *w, firn_error *err);
/* A frame begins: the per-frame sums restart. */
void firn_tools_begin_frame(firn_world *w);
/* Largest speed of a colliding tool's surface over the coming frame
 * [m/s] (the CFL step must follow it); which: that tool, or -1. */
float firn_tools_max_speed(const firn_world *w, int *which);
void firn_tool_fill_state(const firn_world *w, int k, firn_tool_state *out);
/* The tool solver's phase table for the Coupler. */
extern const firn_solver firn_tool_solver;

#ifdef __cplusplus
}
#endif

#endif
