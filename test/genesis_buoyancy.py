#!/usr/bin/env python3
"""The scene of test/validate_buoyancy.py's floating case in Genesis 1.4.5
(docs/VALIDATION.md, "SPH buoyancy": Genesis on the same scene; not in CI).

Pool 0.3 x 0.3 x 0.12 m of SPH water (rho 1000) in the SPH box [0,0.3]^3,
particle_size p = 0.015; a dynamic body 0.1 m across (box / sphere) of
density rho dropped with its bottom 0.01 m above the surface; 75 frames of
0.02 s; submerged fraction averaged over the last 10 frames, by three
levels: the liquid's nominal volume N 0.8 p^3 (and mass over mean density)
over the pool's cross-section, the top layer + s/2 as firn's script takes
it, and the interior's number density. Genesis is z-up; its liquid keeps
its defaults, the body Genesis's rigid coupling defaults.

Needs Genesis in a venv (about 10 minutes, 4 GB with torch):
    python3 -m venv env && env/bin/pip install torch genesis-world==1.4.5
    OMP_NUM_THREADS=2 env/bin/python test/genesis_buoyancy.py box 500 [--solver DFSPH]
About 70-130 s a case on 2 cores (240 s for DFSPH).
usage: genesis_buoyancy.py SHAPE RHO [--solver WCSPH|DFSPH] [--frames 75] [--out DIR]
"""
import argparse, json, math, os, sys, time
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument('shape', choices=['box', 'sphere'])
ap.add_argument('rho', type=float)
ap.add_argument('--solver', default='WCSPH', choices=['WCSPH', 'DFSPH'])
ap.add_argument('--frames', type=int, default=75)
ap.add_argument('--dt', type=float, default=4e-3)       # Genesis SPH examples' dt
ap.add_argument('--substeps', type=int, default=10)     # and substeps (substep 4e-4 s)
ap.add_argument('--out', default='/tmp/genesis_buoyancy')
args = ap.parse_args()

L, POOL, A_SIZE, PS, FRAME = 0.3, 0.12, 0.1, 0.015, 0.02
steps_per_frame = int(round(FRAME / args.dt))
assert abs(steps_per_frame * args.dt - FRAME) < 1e-9

import genesis as gs
gs.init(backend=gs.cpu, logging_level='warning')

t0 = time.time()
scene = gs.Scene(
    sim_options=gs.options.SimOptions(dt=args.dt, substeps=args.substeps, gravity=(0, 0, -9.81)),
    sph_options=gs.options.SPHOptions(lower_bound=(0, 0, 0), upper_bound=(L, L, L), particle_size=PS,
                                      pressure_solver=args.solver),
    coupler_options=gs.options.LegacyCouplerOptions(rigid_sph=True),
    show_viewer=False,
)
liquid_mat = gs.materials.SPH.Liquid(rho=1000.0)  # defaults: stiffness, exponent, mu, gamma
water = scene.add_entity(material=liquid_mat,
                         morph=gs.morphs.Box(lower=(0, 0, 0), upper=(L, L, POOL)),
                         surface=gs.surfaces.Default(vis_mode='particle'))
zc = POOL + A_SIZE / 2 + 0.01
if args.shape == 'box':
    morph = gs.morphs.Box(pos=(L / 2, L / 2, zc), size=(A_SIZE,) * 3)
else:
    morph = gs.morphs.Sphere(pos=(L / 2, L / 2, zc), radius=A_SIZE / 2)
rigid_mat = gs.materials.Rigid(rho=args.rho)
body = scene.add_entity(material=rigid_mat, morph=morph)
scene.build()
t_build = time.time() - t0
sph = scene.sim.sph_solver
N = int(water.n_particles)
print('particles', N, 'particle_volume', sph._particle_volume, 'support', sph._support_radius,
      'substep_dt', sph.substep_dt, 'mass', float(body.get_mass()), flush=True)
print('liquid', dict(rho=liquid_mat.rho, stiffness=liquid_mat.stiffness, exponent=liquid_mat.exponent,
                     mu=liquid_mat.mu, gamma=liquid_mat.gamma, sampler=liquid_mat.sampler), flush=True)
print('rigid coup', dict(coup_friction=rigid_mat.coup_friction, coup_softness=rigid_mat.coup_softness,
                         coup_restitution=rigid_mat.coup_restitution), flush=True)


def quat_rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def vol():
    return A_SIZE ** 3 if args.shape == 'box' else math.pi * A_SIZE ** 3 / 6


def sub_fn(c, q, n=40):
    """V_sub(level): sphere cap in closed form; box by the world heights of
    n^3 cell centres (slabs of thickness a/n; exact when upright)."""
    if args.shape == 'sphere':
        R = A_SIZE / 2

        def f(h):
            d = min(max(h - (c[2] - R), 0.0), 2 * R)
            return math.pi * d * d * (3 * R - d) / 3
        return f
    g = (np.arange(n) + 0.5) / n * A_SIZE - A_SIZE / 2
    U = np.stack(np.meshgrid(g, g, g, indexing='ij'), -1).reshape(-1, 3)
    zs = np.sort(c[2] + U @ quat_rot(q)[2])
    dv, cs = vol() / len(zs), A_SIZE / n

    def f(h):
        return dv * float(np.clip((h + cs / 2 - zs) / cs, 0, 1).sum())
    return f


def level(V, sub):
    h = V / (L * L)
    for _ in range(60):
        h = (V + sub(h)) / (L * L)
    return h


def top_layer(P, c):
    s = (0.8 * PS ** 3) ** (1 / 3)
    x, y, z = P[:, 0], P[:, 1], P[:, 2]
    m = (np.minimum.reduce([x, y, L - x, L - y]) > 2 * PS) & (np.hypot(x - c[0], y - c[1]) > A_SIZE)
    zz = z[m]
    top = zz.max()
    return zz[zz > top - s / 2].mean() + s / 2


rows, frames_pos = [], []
t1 = time.time()
for fr in range(args.frames):
    for _ in range(steps_per_frame):
        scene.step()
    c = body.get_pos().cpu().numpy().reshape(-1)[:3].astype(float)
    q = body.get_quat().cpu().numpy().reshape(-1)[:4].astype(float)
    P = water.get_particles_pos().cpu().numpy().reshape(-1, 3).astype(float)
    rho = sph.particles_reordered.rho.to_numpy().reshape(-1)
    sub = sub_fn(c, q)
    bottom = c[2] - A_SIZE / 2
    V_nom = N * sph._particle_volume                  # N * 0.8 p^3
    V_rho = float(N * sph._particle_volume * 1000.0 / float(rho.mean()))  # mass / mean density (firn's definition)
    res = {}
    for name, V in (('vol_nominal', V_nom), ('vol_meanrho', V_rho)):
        h = level(V, sub)
        res[name] = (h, sub(h) / vol())
    h = top_layer(P, c)
    res['top_layer'] = (h, sub(h) / vol())
    # measured interior number density (away from walls and body, 0.01 < z < top - 2p)
    x, y, z = P[:, 0], P[:, 1], P[:, 2]
    m = (np.minimum.reduce([x, y, L - x, L - y]) > 2 * PS) & (np.hypot(x - c[0], y - c[1]) > A_SIZE)
    z_hi = h - 2 * PS
    cnt = np.sum(m & (z > 0.01) & (z < z_hi))
    area = (L - 4 * PS) ** 2 - math.pi * A_SIZE ** 2
    v_eff = area * (z_hi - 0.01) / max(cnt, 1)
    hh = level(N * v_eff, sub)
    res['vol_numdens'] = (hh, sub(hh) / vol())
    frames_pos.append(P.astype(np.float32))
    # tilt: angle of body z axis from vertical
    tilt = math.degrees(math.acos(max(-1, min(1, quat_rot(q)[2, 2]))))
    row = dict(frame=fr, v_eff=float(v_eff), t=(fr + 1) * FRAME, pos=c.tolist(), quat=q.tolist(), tilt=tilt,
               mean_rho=float(rho.mean()), zmax=float(P[:, 2].max()),
               **{k + '_level': float(v[0]) for k, v in res.items()}, **{k + '_frac': float(v[1]) for k, v in res.items()})
    rows.append(row)
    print('f%02d z=%.4f tilt=%.1f rho=%.1f v_eff/p3=%.3f lev(nom/top/nd)=%.4f/%.4f/%.4f frac=%.3f/%.3f/%.3f' % (
        fr, c[2], tilt, rho.mean(), v_eff / PS ** 3, res['vol_nominal'][0], res['top_layer'][0],
        res['vol_numdens'][0], res['vol_nominal'][1], res['top_layer'][1], res['vol_numdens'][1]), flush=True)
    if not np.all(np.isfinite(c)):
        print('non-finite body position', flush=True)
        break
t_run = time.time() - t1
last = rows[-10:]
summ = dict(shape=args.shape, rho=args.rho, solver=args.solver, dt=args.dt, substeps=args.substeps,
            particles=N, build_s=t_build, run_s=t_run, archimedes=args.rho / 1000.0,
            **{k: float(np.mean([r[k + '_frac'] for r in last])) for k in ('vol_nominal', 'vol_meanrho', 'top_layer', 'vol_numdens')},
            spread_nominal=float(np.ptp([r['vol_nominal_frac'] for r in last])),
            tilt_last=rows[-1]['tilt'], v_eff_over_p3=float(np.mean([r['v_eff'] for r in last])) / PS ** 3,
            z_body_last10=[r['pos'][2] for r in last])
print('SUMMARY', json.dumps(summ), flush=True)
os.makedirs(args.out, exist_ok=True)
with open(os.path.join(args.out, '%s_%d_%s.json' % (args.shape, args.rho, args.solver)), 'w') as f:
    json.dump(dict(summary=summ, rows=rows), f)
np.savez_compressed(os.path.join(args.out, '%s_%d_%s_particles.npz' % (args.shape, args.rho, args.solver)),
                    pos=np.stack(frames_pos))
