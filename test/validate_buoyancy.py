#!/usr/bin/env python3
"""Buoyancy of rigid bodies on SPH water (docs/VALIDATION.md, "SPH
buoyancy"; not in CI: about 20 s a case on 2 cores).

floating: a dynamic body (box, sphere, cylinder lying along z; 0.1 m
across) dropped on a 0.3 x 0.3 m pool 0.12 m deep; after `--frames`
frames of 0.02 s the submerged volume fraction, averaged over the last 10
frames, is compared with Archimedes' rho_body / rho_water. The water
level is the one at which the pool's cross-section holds the liquid's
volume plus the body's submerged volume: A level = V_liquid + V_sub(level),
V_liquid = mass / mean_density from stats.jsonl (each particle stands for
m / rho), solved by fixed-point iteration.

submerged: a kinematic body held at rest with its centre 0.1 m deep in a
0.22 m pool tiled around a cubic hole the body's size; the vertical force
on the body (stats.jsonl `force`, mean of the last 10 frames, noisy) is
compared with rho g V.
"""
import argparse, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from buoyancy_common import RHO_W, G, level, rigid, run_scene, sub_volume, volume  # noqa: E402

L = 0.3


def scene(args, tag, bodies, body, frames):
    sc = {'domain': {'lower': [0, 0, 0], 'upper': [L, 0.3, L], 'dx': 0.02},
          'gravity': [0, -G, 0], 'time': {'frame_dt': 0.02, 'frames': frames},
          'sph': {'particle_size': args.ps},
          'materials': {'water': {'model': 'sph_liquid', 'density': RHO_W}},
          'bodies': [{'material': 'water', 'solver': 'sph', 'shape': {'type': 'box', 'lower': lo, 'upper': hi}}
                     for lo, hi in bodies],
          'rigids': [body], 'output': {'dir': os.path.join(args.out, tag)}}
    if args.solver == 'dfsph':
        sc['materials']['water']['pressure_solver'] = 'dfsph'
    return run_scene(args.firn, sc, args.out, tag)


def floating(args, shape, rho):
    a, pool = args.size, 0.12
    body = rigid(shape, a, [L / 2, pool + a / 2 + 0.01, L / 2], motion='dynamic', density=rho)
    rows = scene(args, 'float_%s_%d' % (shape, rho), [([0, 0, 0], [L, pool, L])], body, args.frames)
    fr = []
    for st in rows[-10:]:
        bottom = st['rigids'][0]['position'][1] - a / 2
        V = st['sph']['mass'] / st['sph']['mean_density']
        h = level(V, L * L, lambda y: sub_volume(shape, a, y - bottom))
        fr.append(sub_volume(shape, a, h - bottom) / volume(shape, a))
    return sum(fr) / len(fr), max(fr) - min(fr)


def submerged(args, shape):
    a, pool, c = args.size, 0.22, [L / 2, 0.1, L / 2]
    lo, hi = [x - a / 2 for x in c], [x + a / 2 for x in c]
    boxes = [([0, 0, 0], [L, lo[1], L]), ([0, hi[1], 0], [L, pool, L]),
             ([0, lo[1], 0], [lo[0], hi[1], L]), ([hi[0], lo[1], 0], [L, hi[1], L]),
             ([lo[0], lo[1], 0], [hi[0], hi[1], lo[2]]), ([lo[0], lo[1], hi[2]], [hi[0], hi[1], L])]
    rows = scene(args, 'sub_%s' % shape, boxes, rigid(shape, a, c, motion='kinematic'), args.frames)
    fy = [st['rigids'][0]['force'][1] for st in rows[-10:]]
    return sum(fy) / len(fy) / (RHO_W * G * volume(shape, a)), max(fy) - min(fy)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--firn', default='build/firn')
    ap.add_argument('--out', default='build/validate_buoyancy')
    ap.add_argument('--shapes', default='box,sphere,cylinder')
    ap.add_argument('--densities', default='300,500,700')
    ap.add_argument('--solver', default='wcsph', choices=['wcsph', 'dfsph'])
    ap.add_argument('--ps', type=float, default=0.015, help='sph.particle_size [m]')
    ap.add_argument('--size', type=float, default=0.1, help='body size [m]')
    ap.add_argument('--frames', type=int, default=60)
    ap.add_argument('--submerged', action='store_true', help='the submerged force check instead')
    args = ap.parse_args()
    shapes = args.shapes.split(',')
    print('| shape | %s | ps [m] | %s |' % ('solver', 'F_y / (rho g V)' if args.submerged else
                                           'rho_b / rho_w | submerged fraction | error'))
    print('|---|---|---|---|' + ('' if args.submerged else '---|---|'))
    for shape in shapes:
        if args.submerged:
            r, spread = submerged(args, shape)
            print('| %s | %s | %g | %.3f (10-frame spread %.2f N) |' % (shape, args.solver, args.ps, r, spread), flush=True)
            continue
        for rho in map(int, args.densities.split(',')):
            f, spread = floating(args, shape, rho)
            arch = rho / RHO_W
            print('| %s | %s | %g | %.1f | %.3f (spread %.3f) | %+.0f %% |' % (
                shape, args.solver, args.ps, arch, f, spread, 100 * (f - arch) / arch), flush=True)


if __name__ == '__main__':
    main()
