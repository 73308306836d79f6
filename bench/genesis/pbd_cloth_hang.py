"""Genesis 1.4.5 PBD cloth: a 0.8 m square cloth, level at 1 m, pinned at two adjacent corners, falls and swings
under gravity (Genesis's cloth defaults: 4 kg/m^2, stretch compliance 1e-7, bending 1e-5, 4 stretch and 1 bending
iterations, air resistance 1e-3).

Writes results/pbd_cloth_hang.csv: per step the cloth's centre of mass, its lowest point, the free corners' mean
height, kinetic energy, and the largest edge strain. Genesis's z is up; firn's scene (bench/genesis/firn/
pbd_cloth_hang.json) has y up.
"""
import csv
import os

import numpy as np

from gcommon import RESULTS, Timer, dump_model, env_info, init_genesis, write_json

SIDE, HEIGHT, P = 0.8, 1.0, 0.025
N = 33  # vertices per side of the OBJ grid (spacing SIDE / 32 = P; Genesis remeshes it to edge P anyway)
DT = float(os.environ.get("CLOTH_DT", "1e-3"))
T_END = float(os.environ.get("CLOTH_TEND", "1.5"))


def write_grid_obj(path):
    with open(path, "w") as f:
        for j in range(N):
            for i in range(N):
                f.write(f"v {-SIDE / 2 + SIDE * i / (N - 1):.6f} {-SIDE / 2 + SIDE * j / (N - 1):.6f} 0\n")
        for j in range(N - 1):
            for i in range(N - 1):
                a = j * N + i + 1
                f.write(f"f {a} {a + 1} {a + N + 1}\nf {a} {a + N + 1} {a + N}\n")


def main():
    gs = init_genesis(seed=0)
    obj = os.path.join(RESULTS, "pbd_cloth_hang_grid.obj")
    write_grid_obj(obj)
    scene = gs.Scene(
        sim_options=gs.options.SimOptions(dt=DT, substeps=1, gravity=(0.0, 0.0, -9.81)),
        pbd_options=gs.options.PBDOptions(particle_size=P, lower_bound=(-2, -2, 0), upper_bound=(2, 2, 3)),
        show_viewer=False,
    )
    mat = gs.materials.PBD.Cloth()
    cloth = scene.add_entity(morph=gs.morphs.Mesh(file=obj, pos=(0, 0, HEIGHT), scale=1.0), material=mat)
    scene.build()
    x0 = cloth.get_particles_pos().cpu().numpy().reshape(-1, 3)
    # The pins: the particles nearest the corners (-S/2, -S/2) and (S/2, -S/2); the free corners are the other two.
    corner = lambda cx, cy: int(np.argmin((x0[:, 0] - cx) ** 2 + (x0[:, 1] - cy) ** 2))
    pins = [corner(-SIDE / 2, -SIDE / 2), corner(SIDE / 2, -SIDE / 2)]
    free = [corner(-SIDE / 2, SIDE / 2), corner(SIDE / 2, SIDE / 2)]
    cloth.fix_particles(np.array(pins))
    edges = np.asarray(cloth.edges) if hasattr(cloth, "edges") else None
    rest = None
    if edges is not None and len(edges):
        rest = np.linalg.norm(x0[edges[:, 0]] - x0[edges[:, 1]], axis=1)
    write_json(
        "pbd_cloth_hang_options.json",
        {"env": env_info(), "material": dump_model(mat), "dt": DT, "particles": len(x0),
         "edges": 0 if edges is None else len(edges), "pins": pins, "pins_xy": x0[pins].tolist(),
         "free_corners": free, "mean_edge": None if rest is None else float(rest.mean())},
    )
    n_steps = int(round(T_END / DT))
    timer = Timer()
    path = os.path.join(RESULTS, "pbd_cloth_hang.csv")
    with open(path, "w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(["step", "t", "com_z", "min_z", "free_corner_z", "com_y", "kinetic_energy_per_kg",
                     "max_edge_strain", "wall_s"])
        for step in range(n_steps + 1):
            if step > 0:
                scene.step()
            if step % 10 and step != n_steps:
                continue
            x = cloth.get_particles_pos().cpu().numpy().reshape(-1, 3)
            v = cloth.get_particles_vel().cpu().numpy().reshape(-1, 3)
            strain = float("nan")
            if rest is not None:
                strain = float(np.max(np.abs(np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1) / rest - 1)))
            wr.writerow([step, f"{step * DT:.5f}", f"{x[:, 2].mean():.6g}", f"{x[:, 2].min():.6g}",
                         f"{x[free, 2].mean():.6g}", f"{x[:, 1].mean():.6g}",
                         f"{0.5 * (v ** 2).sum(1).mean():.6g}", f"{strain:.6g}", f"{timer():.2f}"])
            if step % 100 == 0:
                print(f"t {step * DT:.3f} com_z {x[:, 2].mean():.4f} min_z {x[:, 2].min():.4f}", flush=True)
    print("wrote", path)


if __name__ == "__main__":
    main()
