/* compare_stats.h - what a solver's part of `firn compare`'s frame
 * statistics (firn_solver.compare_stats, host/solver.h) needs: where its
 * entries go, and the scales every solver's entries share. Header only, so
 * that a solver's module and host/compare.c, which runs the solvers' parts
 * in solver order, depend on it and not on each other. */
#ifndef FIRN_COMPARE_STATS_H
#define FIRN_COMPARE_STATS_H

#include <math.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where the entries go: line(ctx, name, cpu, gpu, scale) enters one
 * statistic, held within `firn compare`'s tolerance of scale (1 %); L is
 * the domain's largest extent [m], g |gravity| [m/s^2]. */
typedef struct firn_stat_sink {
    void (*line)(void *ctx, const char *name, double cpu, double gpu, double scale);
    void *ctx;
    double L, g;
} firn_stat_sink;

static inline void firn_stat(const firn_stat_sink *k, const char *name, double cpu, double gpu,
                             double scale)
{
    k->line(k->ctx, name, cpu, gpu, scale);
}

/* A solver's speed scale: the larger rms speed of its particles (mass M,
 * kinetic energies ke_c and ke_g of the two paths), at least a tenth of
 * sqrt(g L). */
static inline double firn_stat_speed_scale(double M, double ke_c, double ke_g, double L, double g)
{
    const double speed = sqrt(2.0 * fmax(ke_c, ke_g) / (M > 0.0 ? M : 1.0));
    return fmax(speed, sqrt(fmax(g, 1e-3) * L) * 1e-1);
}

/* The kinetic energy's scale: the larger of the two, at least 1e-3 of the
 * potential energy M g L. */
static inline double firn_stat_energy_scale(double M, double ke_c, double ke_g, double L, double g)
{
    return fmax(fmax(ke_c, ke_g), 1e-3 * M * fmax(g, 1e-3) * L);
}

/* One path's statistics of a solver's bodies (the SPH, PBD and FEM frame
 * statistics have them all). */
typedef struct {
    double mass, kinetic_energy;
    const double *momentum, *center_of_mass;
    const float *bbox_lower, *bbox_upper;
} firn_body_stats;

#define FIRN_BODY_STATS(st)                                                                        \
    ((firn_body_stats){(st)->mass, (st)->kinetic_energy, (st)->momentum, (st)->center_of_mass,     \
                       (st)->bbox_lower, (st)->bbox_upper})

/* A solver's kinetic energy, then per axis its centre of mass, momentum
 * and bounding box, named "<solver> kinetic energy", "<solver> centre x",
 * ...: positions by L, the energy by firn_stat_energy_scale, momentum by
 * the mass times firn_stat_speed_scale. Returns the energy's scale. */
static inline double firn_stat_bodies(const firn_stat_sink *k, const char *solver,
                                      firn_body_stats c, firn_body_stats s)
{
    static const char ax[] = "xyz";
    char name[40];
    const double M = c.mass, L = k->L, g = k->g;
    const double ke_scale = firn_stat_energy_scale(M, c.kinetic_energy, s.kinetic_energy, L, g);
    const double p_scale = M * firn_stat_speed_scale(M, c.kinetic_energy, s.kinetic_energy, L, g);
    snprintf(name, sizeof name, "%s kinetic energy", solver);
    firn_stat(k, name, c.kinetic_energy, s.kinetic_energy, ke_scale);
    for (int a = 0; a < 3; a++) {
        snprintf(name, sizeof name, "%s centre %c", solver, ax[a]);
        firn_stat(k, name, c.center_of_mass[a], s.center_of_mass[a], L);
        snprintf(name, sizeof name, "%s momentum %c", solver, ax[a]);
        firn_stat(k, name, c.momentum[a], s.momentum[a], p_scale);
        snprintf(name, sizeof name, "%s bbox lower %c", solver, ax[a]);
        firn_stat(k, name, c.bbox_lower[a], s.bbox_lower[a], L);
        snprintf(name, sizeof name, "%s bbox upper %c", solver, ax[a]);
        firn_stat(k, name, c.bbox_upper[a], s.bbox_upper[a], L);
    }
    return ke_scale;
}

#ifdef __cplusplus
}
#endif

#endif
