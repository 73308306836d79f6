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
import argparse, concurrent.futures, math, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from buoyancy_common import (RHO_W, G, level, read_ply, rigid, run_scene,  # noqa: E402
                             sub_volume, volume)

L = 0.3


def scene(args, tag, bodies, body, frames):
    sc = {'domain': {'lower': [0, 0, 0], 'upper': [L, 0.3, L], 'dx': 0.02},
          'gravity': [0, -G, 0], 'time': {'frame_dt': 0.02, 'frames': frames},
          'sph': {'particle_size': args.ps},
          'materials': {'water': {'model': 'sph_liquid', 'density': RHO_W,
                                  'surface_tension': args.surface_tension}},
          'bodies': [{'material': 'water', 'solver': 'sph', 'shape': {'type': 'box', 'lower': lo, 'upper': hi}}
                     for lo, hi in bodies],
          'rigids': [body], 'output': {'dir': os.path.join(args.out, tag), 'preview': False,
                                       'ply': args.ply or tag.startswith('float')}}
    if args.solver == 'dfsph':
        sc['materials']['water']['pressure_solver'] = 'dfsph'
    return run_scene(args.firn, sc, args.out, tag)


def floating(args, shape, rho):
    a, pool = args.size, 0.12
    body = rigid(shape, a, [L / 2, pool + a / 2 + 0.01, L / 2], args.out, motion='dynamic',
                 density=rho)
    tag = 'float_%s_%d' % (shape, rho)
    rows = scene(args, tag, [([0, 0, 0], [L, pool, L])], body, args.frames)
    fr, fg = [], []
    for k, st in enumerate(rows[-10:]):
        centre = st['rigids'][0]['position']
        bottom = centre[1] - a / 2
        V = st['sph']['mass'] / st['sph']['mean_density']
        h = level(V, L * L, lambda y: sub_volume(shape, a, y - bottom))
        fr.append(sub_volume(shape, a, h - bottom) / volume(shape, a))
        frame = len(rows) - 10 + k
        geo = top_layer_level(os.path.join(args.out, tag, 'sph_%05d.ply' % frame), centre, a, args.ps)
        fg.append(sub_volume(shape, a, geo - bottom) / volume(shape, a))
    return sum(fr) / len(fr), max(fr) - min(fr), sum(fg) / len(fg)


def top_layer_level(path, centre, a, ps):
    """The free surface from the particles: the mean height of the top
    layer (within half a lattice spacing of the highest particle) away from
    the body (more than a from its axis) and the walls (more than 2 ps),
    plus half the lattice spacing V^(1/3), V = 0.8 ps^3."""
    s = (0.8 * ps ** 3) ** (1 / 3)
    ys = [y for x, y, z, *_ in read_ply(path)
          if min(x, z, L - x, L - z) > 2 * ps and math.hypot(x - centre[0], z - centre[2]) > a]
    top = max(ys)
    layer = [y for y in ys if y > top - s / 2]
    return sum(layer) / len(layer) + s / 2


def submerged(args, shape):
    a, pool, c = args.size, 0.22, [L / 2, 0.1, L / 2]
    lo, hi = [x - a / 2 for x in c], [x + a / 2 for x in c]
    boxes = [([0, 0, 0], [L, lo[1], L]), ([0, hi[1], 0], [L, pool, L]),
             ([0, lo[1], 0], [lo[0], hi[1], L]), ([hi[0], lo[1], 0], [L, hi[1], L]),
             ([lo[0], lo[1], 0], [hi[0], hi[1], lo[2]]), ([lo[0], lo[1], hi[2]], [hi[0], hi[1], L])]
    rows = scene(args, 'sub_%s' % shape, boxes, rigid(shape, a, c, args.out, motion='kinematic'),
                 args.frames)
    fy = [st['rigids'][0]['force'][1] for st in rows[-10:]]
    return sum(fy) / len(fy) / (RHO_W * G * volume(shape, a)), max(fy) - min(fy)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--firn', default='build/firn')
    ap.add_argument('--out', default='build/validate_buoyancy')
    ap.add_argument('--shapes', default='box,sphere,cylinder,mesh')
    ap.add_argument('--densities', default='300,500,700')
    ap.add_argument('--solver', default='wcsph', choices=['wcsph', 'dfsph'])
    ap.add_argument('--ps', type=float, default=0.015, help='sph.particle_size [m]')
    ap.add_argument('--size', type=float, default=0.1, help='body size [m]')
    ap.add_argument('--frames', type=int, default=60)
    ap.add_argument('--surface-tension', type=float, default=0.01,
                    help="the water's sph_liquid surface_tension (its default 0.01)")
    ap.add_argument('--submerged', action='store_true', help='the submerged force check instead')
    ap.add_argument('--ply', action='store_true', help='write the particles per frame (floating cases always do)')
    ap.add_argument('--jobs', type=int, default=1, help='cases run at once (each on one thread)')
    args = ap.parse_args()
    shapes = args.shapes.split(',')
    env = {'OMP_NUM_THREADS': '1'} if args.jobs > 1 else {}
    os.environ.update(env)
    if args.submerged:
        print('| shape | solver | ps [m] | F_y / (rho g V) |')
        print('|---|---|---|---|')
        cases = [(s,) for s in shapes]
        run = lambda c: submerged(args, c[0])
    else:
        print('| shape | solver | ps [m] | rho_b / rho_w | submerged (volume level) | error | '
              'submerged (top layer + s/2) | error |')
        print('|---|---|---|---|---|---|---|---|')
        cases = [(s, rho) for s in shapes for rho in map(int, args.densities.split(','))]
        run = lambda c: floating(args, c[0], c[1])
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        for c, r in zip(cases, ex.map(run, cases)):
            if args.submerged:
                print('| %s | %s | %g | %.3f (10-frame spread %.2f N) |' % (c[0], args.solver, args.ps, r[0], r[1]),
                      flush=True)
            else:
                arch = c[1] / RHO_W
                print('| %s | %s | %g | %.1f | %.3f (spread %.3f) | %+.1f %% | %.3f | %+.1f %% |' % (
                    c[0], args.solver, args.ps, arch, r[0], r[1], 100 * (r[0] - arch) / arch, r[2],
                    100 * (r[2] - arch) / arch), flush=True)


if __name__ == '__main__':
    main()
