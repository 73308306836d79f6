"""Genesis 1.4.5 FEM: a soft elastic cube dropped on the floor (explicit solver, linear material).

Writes results/fem_drop.csv (per step: centre of mass, lowest and highest vertex, kinetic energy),
results/fem_drop_options.json, and the tetrahedral mesh Genesis built (TetGen) as
results/fem_drop_mesh.node / .ele in firn's frame (y up: Genesis's (x, y, z) is firn's (x, z, y)),
so that firn runs the same elements (bench/genesis/firn/fem_drop.json).
"""
import csv
import os

import numpy as np

from gcommon import RESULTS, Timer, dump_model, env_info, init_genesis, write_json

E, NU, RHO = 1e5, 0.2, 1000.0
SIDE, DROP = 0.4, 0.05  # cube edge, initial height of its bottom above the floor [m]
DT, SUBSTEPS = 1e-3, 10
T_END = float(os.environ.get("FEM_TEND", "0.4"))
# TetGen's largest tet [m^3]. Genesis passes it in TetGen's switch string: below 1e-4 Python writes it
# as 2e-05 and TetGen reads the e as its edge switch; and with Genesis's default nobisect=True (switch Y)
# TetGen adds no point to a box at all (9 vertices, 12 tets), hence nobisect=False below.
MAXVOL = float(os.environ.get("FEM_MAXVOL", "0.0005"))


def main():
    gs = init_genesis(seed=0)
    scene = gs.Scene(
        sim_options=gs.options.SimOptions(dt=DT, substeps=SUBSTEPS, gravity=(0.0, 0.0, -9.81)),
        fem_options=gs.options.FEMOptions(floor_height=0.0),
        show_viewer=False,
    )
    mat = gs.materials.FEM.Elastic(E=E, nu=NU, rho=RHO)
    lo = (-SIDE / 2, -SIDE / 2, DROP)
    cube = scene.add_entity(
        morph=gs.morphs.Box(lower=lo, upper=(SIDE / 2, SIDE / 2, DROP + SIDE), maxvolume=MAXVOL, nobisect=False), material=mat
    )
    scene.build()
    s = scene.sim.fem_solver

    pos0 = cube.get_state().pos.cpu().numpy().reshape(-1, 3)
    elems = cube.elems.astype(np.int64)
    # firn frame: (x, y, z)_firn = (x, z, y)_genesis
    with open(os.path.join(RESULTS, "fem_drop_mesh.node"), "w") as f:
        f.write(f"# Genesis 1.4.5 TetGen mesh of a {SIDE} m cube (maxvolume {MAXVOL}), firn frame (y up)\n")
        f.write(f"{len(pos0)} 3 0 0\n")
        for i, p in enumerate(pos0):
            f.write(f"{i} {p[0]:.9g} {p[2]:.9g} {p[1]:.9g}\n")
    with open(os.path.join(RESULTS, "fem_drop_mesh.ele"), "w") as f:
        f.write(f"{len(elems)} 4 0\n")
        for e, t in enumerate(elems):
            f.write(f"{e} {t[0]} {t[1]} {t[2]} {t[3]}\n")

    vol = 0.0
    for t in elems:
        a, b, c, d = pos0[t]
        vol += abs(np.linalg.det(np.stack([b - a, c - a, d - a]))) / 6.0
    write_json(
        "fem_drop_options.json",
        {
            "env": env_info(),
            "material": dump_model(mat),
            "fem_options": dump_model(scene.sim.fem_solver._options) if hasattr(s, "_options") else {},
            "dt": DT,
            "substeps": SUBSTEPS,
            "vertices": len(pos0),
            "elements": len(elems),
            "volume": vol,
        },
    )

    n_steps = int(round(T_END / DT))
    timer = Timer()
    path = os.path.join(RESULTS, "fem_drop.csv")
    # Lumped vertex masses for the centre of mass and kinetic energy (rho V / 4 per tet).
    m = np.zeros(len(pos0))
    for t in elems:
        a, b, c, d = pos0[t]
        m[t] += RHO * abs(np.linalg.det(np.stack([b - a, c - a, d - a]))) / 24.0
    with open(path, "w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(["step", "t", "com_z", "min_z", "max_z", "width_x", "vz_com", "kinetic_energy", "wall_s"])
        for step in range(n_steps + 1):
            if step > 0:
                scene.step()
            st = cube.get_state()
            p = st.pos.cpu().numpy().reshape(-1, 3)
            v = st.vel.cpu().numpy().reshape(-1, 3)
            com = (m[:, None] * p).sum(0) / m.sum()
            vz = (m * v[:, 2]).sum() / m.sum()
            ke = 0.5 * (m * (v**2).sum(1)).sum()
            wr.writerow(
                [step, f"{scene.sim.cur_t:.6f}", f"{com[2]:.6g}", f"{p[:, 2].min():.6g}", f"{p[:, 2].max():.6g}",
                 f"{p[:, 0].max() - p[:, 0].min():.6g}", f"{vz:.6g}", f"{ke:.6g}", f"{timer():.2f}"]
            )
            if step % 50 == 0:
                print(f"step {step} t {scene.sim.cur_t:.3f} com_z {com[2]:.4f} min_z {p[:, 2].min():.4f}", flush=True)
    print("wrote", path)


if __name__ == "__main__":
    main()
