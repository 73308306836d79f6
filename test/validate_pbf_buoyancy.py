#!/usr/bin/env python3
"""Buoyancy of rigid bodies on PBD liquid (position based fluids;
docs/VALIDATION.md, "PBD liquid buoyancy"; not in CI: a few minutes a
case on 2 cores).

A dynamic body (box, sphere, cylinder lying along z; 0.1 m across, no
friction) is dropped from 1 cm above a pool of pbd_liquid 0.12 m deep that
fills the PBD box's 0.24 x 0.24 m cross-section, with XSPH viscosity
`--viscosity` (viscosity_relaxation, default 0.1: at the material's
default 0.01 a pool alone keeps ~0.25 J of jitter and a body bobs by
centimetres). After `--frames` frames of 0.02 s the submerged volume
fraction, averaged over the last `--average` frames, is compared with
Archimedes' rho_body / rho_water. The water level is the one at which the
pool's cross-section A holds the liquid's volume plus the body's
submerged volume below it: A level = V_liquid + V_sub(level), with
V_liquid = N m / rho0 (stats.jsonl "pbd" "mass" over the rest density:
each particle stands for p^3 of liquid at rest), solved by fixed-point
iteration. V_sub follows the body's orientation (a cube of density 0.5
floats stably only tilted). The geometry helpers are
test/buoyancy_common.py's.
"""
import argparse, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from buoyancy_common import level, rigid, run_scene, submerged_volume, volume  # noqa: E402

L, RHO_W, POOL = 0.24, 1000.0, 0.12


def floating(args, shape, rho):
    a, p = args.size, args.ps
    body = rigid(shape, a, [L / 2, POOL + a / 2 + 0.01, L / 2], motion='dynamic', density=rho)
    tag = 'pbf_float_%s_%d_p%g' % (shape, rho, p)
    sc = {'domain': {'lower': [0, 0, 0], 'upper': [L, 0.3, L], 'dx': 0.02},
          'gravity': [0, -9.81, 0], 'time': {'frame_dt': 0.02, 'frames': args.frames},
          'pbd': {'particle_size': p},
          'materials': {'water': {'model': 'pbd_liquid', 'density': RHO_W,
                                  'viscosity_relaxation': args.viscosity}},
          'bodies': [{'material': 'water', 'solver': 'pbd',
                      'shape': {'type': 'box', 'lower': [0, 0, 0], 'upper': [L, POOL, L]}}],
          'rigids': [body],
          'output': {'dir': os.path.join(args.out, tag), 'ply': False, 'preview': False}}
    run_scene(args.firn, sc, args.out, tag)
    return analyse(args, shape, a, tag)


def analyse(args, shape, a, tag):
    with open(os.path.join(args.out, tag, 'stats.jsonl')) as f:
        rows = [json.loads(l) for l in f]
    fr = []
    for st in rows[-args.average:]:
        rb = st['rigids'][0]
        V = st['pbd']['mass'] / RHO_W
        sub = submerged_volume(shape, a, rb['position'][1], rb['orientation'])
        fr.append(sub(level(V, L * L, sub)) / volume(shape, a))
    return sum(fr) / len(fr), max(fr) - min(fr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--firn', default='build/firn')
    ap.add_argument('--out', default='build/validate_pbf_buoyancy')
    ap.add_argument('--shapes', default='box,sphere,cylinder')
    ap.add_argument('--densities', default='300,500,700')
    ap.add_argument('--ps', type=float, default=0.015, help='pbd.particle_size [m]')
    ap.add_argument('--size', type=float, default=0.1, help='body size [m]')
    ap.add_argument('--frames', type=int, default=100)
    ap.add_argument('--viscosity', type=float, default=0.1,
                    help='viscosity_relaxation (XSPH): lets the pool come to rest')
    ap.add_argument('--average', type=int, default=25, help='frames averaged at the end')
    args = ap.parse_args()
    print('| shape | p [m] | rho_b / rho_w | submerged fraction | error |')
    print('|---|---|---|---|---|')
    for shape in args.shapes.split(','):
        for rho in map(int, args.densities.split(',')):
            f, spread = floating(args, shape, rho)
            arch = rho / RHO_W
            print('| %s | %g | %.1f | %.3f (spread %.3f) | %+.1f %% |' % (
                shape, args.ps, arch, f, spread, 100 * (f - arch) / arch), flush=True)


if __name__ == '__main__':
    main()
