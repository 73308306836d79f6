#!/usr/bin/env python3
"""Buoyancy of MPM elastic and FEM bodies on SPH water (docs/VALIDATION.md,
"SPH buoyancy", "MPM and FEM bodies"; not in CI), and of a rigid body in
the same pool with the same water level (--body rigid), the reference for
the coupled bodies' figures.

floating: a body (box, sphere, or an MPM cylinder lying along z; 0.1 m
across) is dropped on a 0.3 x 0.3 m pool 0.12 m deep; after `--frames`
frames of 0.02 s its submerged volume fraction, averaged over the last 10
frames, is compared with Archimedes' rho_body / rho_water. The water level
is the one at which the pool's cross-section holds the liquid's volume
plus the body's submerged volume, as in test/validate_buoyancy.py. The
body's bottom is its centre of mass (stats.jsonl, the MPM particles' or
FEM vertices') less half its size: the body is stiff (sag well under a
millimetre).

gap: the same run's last frame; the mean distance from the body's
bottom face (its centre of mass less a / 2) down to the SPH particles
under its middle (|x - c|, |z - c| < a / 4), the highest layer, reported
in particle sizes: how far the coupling holds the liquid from the body.
"""
import argparse, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from buoyancy_common import RHO_W, G, level, read_ply, run_scene, sub_volume, volume  # noqa: E402

L = 0.3


def body_def(args, shape, rho, center):
    a = args.size
    s = {'type': shape, 'center': center}
    if shape == 'box':
        s['size'] = [a] * 3
    else:
        s['radius'] = a / 2
    if shape == 'cylinder':
        s['height'], s['axis'] = a, 'z'
    if args.body == 'rigid':
        return {'shape': s, 'motion': 'dynamic', 'density': rho, 'friction': 0}, None
    if args.body == 'fem':
        s['cells'] = [args.cells] * 3 if shape == 'box' else args.cells
        mat = {'model': 'fem_stable_neohookean', 'E': args.E, 'nu': 0.3, 'density': rho}
        return {'material': 'b', 'solver': 'fem', 'shape': s}, mat
    mat = {'model': 'elastic', 'E': args.E, 'nu': 0.3, 'density': rho}
    return {'material': 'b', 'shape': s}, mat


def run(args, shape, rho):
    a, pool = args.size, 0.12
    top = pool + a / 2 + 0.01
    b, mat = body_def(args, shape, rho, [L / 2, top, L / 2])
    tag = '%s_%s_%s_%d_%g' % (args.body, args.solver, shape, rho, args.ps)
    sc = {'domain': {'lower': [0, 0, 0], 'upper': [L, 0.3, L], 'dx': args.dx},
          'gravity': [0, -G, 0], 'time': {'frame_dt': 0.02, 'frames': args.frames},
          'sph': {'particle_size': args.ps},
          'materials': {'water': {'model': 'sph_liquid', 'density': RHO_W}},
          'bodies': [{'material': 'water', 'solver': 'sph',
                      'shape': {'type': 'box', 'lower': [0, 0, 0], 'upper': [L, pool, L]}}],
          'output': {'dir': os.path.join(args.out, tag)}}
    if mat:
        sc['materials']['b'] = mat
        sc['bodies'].append(b)
    else:
        sc['rigids'] = [b]
    if args.body == 'rigid':
        pass
    elif args.body == 'fem':
        sc['fem'] = {'damping': 2}
    else:
        # the MPM walls act on the grid's 3 outer node layers: the domain
        # reaches 3 cells beyond the SPH box, so that they do not hold the
        # body up from the floor or the sides
        m = 3 * args.dx
        sc['domain']['lower'] = [-m, -m, -m]
        sc['domain']['upper'] = [L + m, 0.3, L + m]
        sc['sph']['lower'], sc['sph']['upper'] = [0, 0, 0], [L, 0.3, L]
    if args.solver == 'dfsph':
        sc['materials']['water']['pressure_solver'] = 'dfsph'
    rows = run_scene(args.firn, sc, args.out, tag)
    if args.body == 'rigid':
        com = lambda st: st['rigids'][0]['position']
    else:
        com = lambda st: (st['fem'] if args.body == 'fem' else st)['center_of_mass']
    fr = []
    for st in rows[-10:]:
        bottom = com(st)[1] - a / 2
        V = st['sph']['mass'] / st['sph']['mean_density']
        h = level(V, L * L, lambda y: sub_volume(shape, a, y - bottom))
        fr.append(sub_volume(shape, a, h - bottom) / volume(shape, a))
    gap = float('nan')
    plys = sorted(f for f in os.listdir(os.path.join(args.out, tag)) if f.startswith('sph_'))
    if plys:
        c = com(rows[-1])
        bottom = c[1] - a / 2
        ys = [p[1] for p in read_ply(os.path.join(args.out, tag, plys[-1]))
              if abs(p[0] - c[0]) < a / 4 and abs(p[2] - c[2]) < a / 4 and p[1] < bottom + 0.5 * a]
        ys.sort(reverse=True)
        layer = [y for y in ys if y > ys[0] - 0.5 * args.ps] if ys else []
        if layer:
            gap = (bottom - sum(layer) / len(layer)) / args.ps
    return sum(fr) / len(fr), max(fr) - min(fr), gap


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--firn', default='build/firn')
    ap.add_argument('--out', default='build/validate_buoyancy_bodies')
    ap.add_argument('--body', default='mpm', choices=['mpm', 'fem', 'rigid'])
    ap.add_argument('--shapes', default='box,sphere,cylinder')
    ap.add_argument('--densities', default='300,500,700')
    ap.add_argument('--solver', default='wcsph', choices=['wcsph', 'dfsph'])
    ap.add_argument('--ps', type=float, default=0.015, help='sph.particle_size [m]')
    ap.add_argument('--dx', type=float, default=0.02, help='domain.dx [m]')
    ap.add_argument('--size', type=float, default=0.1, help='body size [m]')
    ap.add_argument('--cells', type=int, default=6, help='FEM cells across the body')
    ap.add_argument('--E', type=float, default=2e5, help="the body's Young's modulus [Pa]")
    ap.add_argument('--frames', type=int, default=75)
    args = ap.parse_args()
    print('| body | shape | solver | dx, p [m] | rho_b / rho_w | submerged fraction | error | gap / p |')
    print('|---|---|---|---|---|---|---|---|')
    for shape in args.shapes.split(','):
        if args.body == 'fem' and shape == 'cylinder':
            continue
        for rho in map(int, args.densities.split(',')):
            f, spread, gap = run(args, shape, rho)
            arch = rho / RHO_W
            print('| %s | %s | %s | %g, %g | %.1f | %.3f (spread %.3f) | %+.0f %% | %.2f |' % (
                args.body, shape, args.solver, args.dx, args.ps, arch, f, spread,
                100 * (f - arch) / arch, gap), flush=True)


if __name__ == '__main__':
    main()
