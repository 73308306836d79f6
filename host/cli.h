/* cli.h - the subcommands of the firn tool (host/cli_*.c). */
#ifndef FIRN_CLI_H
#define FIRN_CLI_H

#include "firn.h"

int firn_cli_run(int argc, char **argv);
int firn_cli_compare(int argc, char **argv);
int firn_cli_bench(int argc, char **argv);

/* Parses --backend's value; returns -1 on an unknown name. */
int firn_cli_backend(const char *name, firn_backend *out);
/* --grid's value (auto, dense or sparse) into *out (firn_grid_mode); 0 or -1. */
int firn_cli_grid(const char *name, int *out);
/* --graphs' value (auto, on or off) into *out (firn_graph_mode); 0 or -1. */
int firn_cli_graphs(const char *name, int *out);
/* --p2g's value (auto, atomic, binned, warp or ordered) into *out (firn_p2g_variant); 0 or -1. */
int firn_cli_p2g(const char *name, int *out);
/* Parses a positive integer option value; prints and returns -1 on error. */
int firn_cli_int(const char *opt, const char *value, int *out);
/* mkdir -p; fills err on failure. */
int firn_mkdirs(const char *path, firn_error *err);
int firn_cli_fail(const firn_error *err);

#endif
