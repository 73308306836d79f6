#!/usr/bin/env python3
"""Buoyancy on MPM liquid (docs/VALIDATION.md, "MPM liquid buoyancy"; not
in CI).

A body 0.1 m across (box, sphere, cylinder lying along z) is dropped from
1 cm above a pool of the MPM `liquid` model (E `--liquid-E`, default 1e6
Pa, nu 0.2: bulk modulus lambda = 2.78e5 Pa) 0.12 m deep that fills the
domain's 0.3 x 0.3
m cross-section less the walls (bodies keep 2 dx from the faces, and the
wall nodes hold the liquid there: its cross-section A is (0.3 - 4 dx)^2,
its floor at 2 dx). The body is one of:
- `rigid`: a dynamic rigid body with an analytic SDF, or with `--mesh` a
  closed OBJ box of the same size (its SDF from the mesh grid);
- `mpm`: an MPM elastic body (E `--E`, nu 0.3) on the same grid as the
  liquid;
- `fem`: an FEM body (stable Neo-Hookean, E `--E`; box and sphere).
After `--frames` frames of 0.02 s the submerged volume fraction, averaged
over the last `--average` frames, is compared with Archimedes' rho_b /
rho_w.

`--held F` instead lowers a kinematic rigid body (keyframes, over 0.4 s)
to the depth at which the fraction F of it lies below the level its pool
then takes, holds it there, and reports the liquid's vertical force on it
(stats.jsonl `force`) over rho_w g V_sub, V_sub its volume below the
volume level, averaged over the last `--average` frames: the buoyancy
force itself, without the body's motion.

The water level is measured two ways, and both are reported:
- volume: A h = V_liquid - V_in + V_sub(h) (buoyancy_common.level), with
  the liquid's volume V_liquid = (M / rho_w) J, M its mass (stats.jsonl's
  MPM mass less an MPM body's stated mass) and J = 1 - rho_w g h / (2
  lambda) its mean volume ratio under its own hydrostatic pressure
  (p = -lambda (J - 1), so a column h deep is compressed by
  rho_w g h / (2 lambda) on average: 0.3 mm of a 0.12 m pool; the CI test
  mpm_buoyancy/liquid_pool_is_compressed_by_its_own_weight checks it), and
  V_in the liquid whose particles lie inside a rigid body (their count
  times the liquid's volume per particle): liquid that has crept into the
  body's surface layer, which does not raise the level;
- top: the mean height of the highest liquid particle in each column of
  the particle lattice's spacing s = dx / 2 (8 particles a cell) farther
  than a from the body's centre and 3 dx from the walls (a few particles
  stray into the wall layers), plus s / 2 (the top particle stands for the
  slab s below the surface), from the frame PLY files.
The body's submerged volume below the level: a rigid body's from its
pose (buoyancy_common.submerged_volume, which follows a tilt); an MPM
body's from its particles, each standing for an equal share of its volume
as a slab s thick, so that a tilt is followed too; an FEM body's from its
vertices' centre of mass less a / 2 (upright; spheres).
Archimedes here is with the liquid's density at rest: near the surface,
where a body floats, the liquid is compressed by at most rho_w g a /
lambda = 0.35 %, which is neglected.

Columns: the submerged fraction by the volume level (its spread over the
frames averaged), its error against Archimedes, the fraction by the top
level, the top level less the volume level, the fraction (volume level)
over 0.4-0.6 s, the liquid inside a rigid body as a fraction of its
volume, and (fraction - liquid inside) / Archimedes: the liquid the body
displaces against its weight.
"""
import argparse, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from buoyancy_common import (RHO_W, G, cube_obj, level, read_ply, rigid, run_scene,  # noqa: E402
                             sub_volume, submerged_volume, volume)

L, HEIGHT = 0.3, 0.35
NU_W = 0.2


def lam(args):
    """The liquid's bulk modulus lambda [Pa] (its Lame parameter)."""
    return args.liquid_E * NU_W / ((1 + NU_W) * (1 - 2 * NU_W))


def held_centre(args, shape, floor):
    """The centre height at which the fraction args.held of the body lies
    below the level its pool then takes (bisection)."""
    a, A, pool = args.size, (L - 4 * args.dx) ** 2, args.pool
    if args.held_at is not None:
        return floor + args.held_at
    Vb = volume(shape, a)
    h = floor + (A * pool * (1 - RHO_W * G * pool / (2 * lam(args))) + args.held * Vb) / A
    lo, hi = h - a, h + a
    for _ in range(60):
        m = (lo + hi) / 2
        lo, hi = (m, hi) if sub_volume(shape, a, h - (m - a / 2)) / Vb > args.held else (lo, m)
    return (lo + hi) / 2


def scene(args, shape, rho, tag):
    a, dx = args.size, args.dx
    floor = 2 * dx
    c = [L / 2, floor + args.pool + a / 2 + 0.01, L / 2]
    sc = {'domain': {'lower': [0, 0, 0], 'upper': [L, HEIGHT, L], 'dx': dx},
          'gravity': [0, -G, 0], 'time': {'frame_dt': 0.02, 'frames': args.frames, 'dt': args.dt},
          'materials': {'water': {'model': 'liquid', 'E': args.liquid_E, 'nu': NU_W, 'density': RHO_W}},
          'bodies': [{'material': 'water', 'shape': {'type': 'box', 'lower': [floor, floor, floor],
                                                      'upper': [L - floor, floor + args.pool, L - floor]}}],
          'output': {'dir': os.path.join(args.out, tag), 'preview': False}}
    s = rigid(shape, a, c)['shape']
    if args.body == 'rigid':
        body = rigid(shape, a, c, motion='dynamic', density=rho)
        if args.held is not None:  # lowered to the depth that submerges `held` of it, then held
            body = rigid(shape, a, c, motion='kinematic')
            body['keyframes'] = [{'t': 0.0, 'position': c},
                                 {'t': 0.4, 'position': [c[0], held_centre(args, shape, floor), c[2]]}]
        if args.softness is not None:
            body['softness'] = args.softness
        body['friction'] = args.friction
        if args.mesh:
            os.makedirs(args.out, exist_ok=True)
            cube_obj(os.path.join(args.out, 'cube.obj'), a)
            body['shape'] = {'type': 'mesh', 'file': 'cube.obj', 'center': c}
        sc['rigids'] = [body]
        if args.cpic:
            sc['coupling'] = {'cpic': True}
    elif args.body == 'mpm':
        sc['materials']['b'] = {'model': 'elastic', 'E': args.E, 'nu': 0.3, 'density': rho}
        sc['bodies'].append({'material': 'b', 'shape': s})
    else:
        s['cells'] = [args.cells] * 3 if shape == 'box' else args.cells
        sc['materials']['b'] = {'model': 'fem_stable_neohookean', 'E': args.E, 'nu': 0.3, 'density': rho}
        sc['bodies'].append({'material': 'b', 'solver': 'fem', 'shape': s})
        sc['fem'] = {'damping': 2}
    return sc


def inside(shape, a, c, q, x):
    """Whether x lies inside the rigid body a across with centre c and
    orientation q (w, x, y, z)."""
    w, qx, qy, qz = q
    R = [[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - w * qz), 2 * (qx * qz + w * qy)],
         [2 * (qx * qy + w * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - w * qx)],
         [2 * (qx * qz - w * qy), 2 * (qy * qz + w * qx), 1 - 2 * (qx * qx + qy * qy)]]
    d = [x[i] - c[i] for i in range(3)]
    u = [sum(R[i][j] * d[i] for i in range(3)) for j in range(3)]  # R^T d
    if shape == 'box':
        return max(abs(t) for t in u) < a / 2
    if shape == 'sphere':
        return sum(t * t for t in u) < a * a / 4
    return u[0] ** 2 + u[1] ** 2 < a * a / 4 and abs(u[2]) < a / 2


def frame(args, shape, rho, tag, st):
    """One frame's submerged fraction by the volume level and by the top
    level, their difference [m], and the liquid inside a rigid body as a
    fraction of its volume."""
    a, dx = args.size, args.dx
    s, floor, A = dx / 2, 2 * dx, (L - 4 * dx) ** 2
    Vb = volume(shape, a)
    pts = read_ply(os.path.join(args.out, tag, 'frame_%05d.ply' % st['frame']))
    water = [p for p in pts if p[6] == 0]
    M = st['mass'] - (rho * Vb if args.body == 'mpm' else 0.0)
    leaked = 0.0
    if args.body == 'rigid':
        rb = st['rigids'][0]
        cx, cz = rb['position'][0], rb['position'][2]
        sub = submerged_volume(shape, a, rb['position'][1], rb['orientation'])
        n_in = sum(1 for p in water if inside(shape, a, rb['position'], rb['orientation'], p))
        leaked = n_in * M / RHO_W / len(water)
    elif args.body == 'mpm':
        body = [p for p in pts if p[6] == 1]
        ys = [p[1] for p in body]
        cx, cz = sum(p[0] for p in body) / len(ys), sum(p[2] for p in body) / len(ys)
        sub = lambda h: Vb / len(ys) * sum(min(max((h - y) / s + 0.5, 0.0), 1.0) for y in ys)
    else:
        com = st['fem']['center_of_mass']
        cx, cz = com[0], com[2]
        sub = lambda h: sub_volume(shape, a, h - (com[1] - a / 2))
    above = lambda y: sub(y + floor) - leaked  # the level from the pool's floor
    depth = level(M / RHO_W, A, above)
    depth = level(M / RHO_W * (1 - RHO_W * G * depth / (2 * lam(args))), A, above)
    h_vol = floor + depth
    cols = {}
    for p in water:
        if (p[0] - cx) ** 2 + (p[2] - cz) ** 2 > a * a and min(p[0], L - p[0], p[2], L - p[2]) >= 3 * dx:
            key = (int(p[0] / s), int(p[2] / s))
            cols[key] = max(cols.get(key, -1.0), p[1])
    h_top = sum(cols.values()) / len(cols) + s / 2
    return sub(h_vol) / Vb, sub(h_top) / Vb, h_top - h_vol, leaked / Vb


def run(args, shape, rho):
    """The means over the last --average frames of frame()'s figures, the
    spread of the fraction there, and the fraction over 0.4-0.6 s."""
    tag = '%s%s%s_%s_%d_dx%g_E%g_dt%g%s%s' % (args.body, '_mesh' if args.mesh else '',
                                              '_cpic' if args.cpic else '', shape, rho, args.dx,
                                              args.liquid_E, args.dt,
                                              '' if args.held is None else '_held%g' % args.held,
                                              '' if args.softness is None else '_s%g' % args.softness)
    tag += '' if args.held_at is None else '_at%g' % args.held_at
    tag += '' if args.pool == 0.12 else '_pool%g' % args.pool
    tag += '' if args.friction == 0.0 else '_mu%g' % args.friction
    rows = run_scene(args.firn, scene(args, shape, rho, tag), args.out, tag)
    last = [frame(args, shape, rho, tag, st) for st in rows[-args.average:]]
    if args.held is not None:  # the force over rho g V_sub, V_sub by the volume level
        Vb = volume(shape, args.size)
        r = [st['rigids'][0]['force'][1] / (RHO_W * G * f[0] * Vb)
             for st, f in zip(rows[-args.average:], last)]
        return sum(r) / len(r), max(r) - min(r), sum(f[0] for f in last) / len(last), \
            sum(f[3] for f in last) / len(last)
    early = [frame(args, shape, rho, tag, st)[0] for st in rows[21:31]]
    mean = [sum(f[i] for f in last) / len(last) for i in range(4)]
    spread = max(f[0] for f in last) - min(f[0] for f in last)
    return mean, spread, sum(early) / len(early)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--firn', default='build/firn')
    ap.add_argument('--out', default='build/validate_buoyancy_mpm')
    ap.add_argument('--body', default='rigid', choices=['rigid', 'mpm', 'fem'])
    ap.add_argument('--mesh', action='store_true', help='rigid: the box as a mesh SDF')
    ap.add_argument('--cpic', action='store_true', help='rigid: coupling.cpic')
    ap.add_argument('--liquid-E', type=float, default=1e6, help="the liquid's E [Pa] (nu 0.2)")
    ap.add_argument('--dt', type=float, default=0.0, help='time.dt: a fixed substep [s] (0: CFL)')
    ap.add_argument('--held', type=float, default=None,
                    help='rigid: lower a kinematic body until this fraction of it is below the '
                    'level, hold it there, and report the force over rho g V_sub')
    ap.add_argument('--held-at', type=float, default=None,
                    help='rigid, with --held: hold the centre this high above the pool floor [m] '
                    '(a body below the surface is held fully submerged)')
    ap.add_argument('--pool', type=float, default=0.12, help="the pool's depth [m]")
    ap.add_argument('--friction', type=float, default=0.0, help="rigid: the body's friction")
    ap.add_argument('--softness', type=float, default=None, help="rigid: the body's softness [m]")
    ap.add_argument('--shapes', default='box,sphere,cylinder')
    ap.add_argument('--densities', default='300,500,700')
    ap.add_argument('--dx', type=float, default=0.02, help='domain.dx [m]')
    ap.add_argument('--size', type=float, default=0.1, help='body size [m]')
    ap.add_argument('--cells', type=int, default=6, help='FEM cells across the body')
    ap.add_argument('--E', type=float, default=2e5, help="an MPM or FEM body's Young's modulus [Pa]")
    ap.add_argument('--frames', type=int, default=75)
    ap.add_argument('--average', type=int, default=10, help='frames averaged at the end')
    args = ap.parse_args()
    if args.held is not None:
        print('| shape | dx [m] | liquid E [Pa] | dt [s] | submerged | F_y / (rho g V_sub) (spread) | '
              'liquid inside |')
        print('|---|---|---|---|---|---|---|')
        for shape in args.shapes.split(','):
            r, spread, f, leaked = run(args, shape, 0)
            print('| %s | %g | %g | %s | %.3f | %.3f (%.3f) | %.1f %% |' % (
                shape, args.dx, args.liquid_E, args.dt or 'CFL', f, r, spread, 100 * leaked), flush=True)
        return
    print('| body | shape | dx [m] | rho_b / rho_w | submerged fraction (spread) | error | by the top '
          'level | top - volume level [mm] | at 0.4-0.6 s | liquid inside | displaced / Archimedes |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    shapes = ['box'] if args.mesh else args.shapes.split(',')
    for shape in shapes:
        if args.body == 'fem' and shape == 'cylinder':
            continue
        for rho in map(int, args.densities.split(',')):
            (f, f_top, dh, leaked), spread, early = run(args, shape, rho)
            arch = rho / RHO_W
            print('| %s%s | %s | %g | %.1f | %.3f (%.3f) | %+.1f %% | %.3f | %+.1f | %.3f | %s | %.3f |' % (
                args.body, ' (mesh)' if args.mesh else '', shape, args.dx, arch, f, spread,
                100 * (f - arch) / arch, f_top, 1000 * dh, early,
                '%.1f %%' % (100 * leaked) if args.body == 'rigid' else '-', (f - leaked) / arch),
                flush=True)


if __name__ == '__main__':
    main()
