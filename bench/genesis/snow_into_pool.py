"""Genesis 1.4.5: MPM snowball (Snow defaults) falling into an SPH pool (WCSPH), legacy coupler (mpm_sph=True).
Writes results/snow_into_pool.csv, results/snow_into_pool_options.json and position snapshots (npy)."""
import csv
import os
import time

import numpy as np

from gcommon import RESULTS, Timer, dump_model, env_info, init_genesis, sph_solver_info, write_json

P = float(os.environ.get("SP_P", "0.01"))
T_END = float(os.environ.get("SP_TEND", "1.0"))
DT = float(os.environ.get("SP_DT", "2e-3"))  # 4e-3 (substep 4e-4) blows up at t~0.11 s; see report
SUBSTEPS = 10
TAG = os.environ.get("SP_TAG", "")  # output-name suffix, e.g. "_dt2e-3"
V0 = (0.0, 0.0, -1.0)
SNAP_T = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0)


def main():
    gs = init_genesis(seed=0)
    scene = gs.Scene(
        sim_options=gs.options.SimOptions(dt=DT, substeps=SUBSTEPS, gravity=(0.0, 0.0, -9.81)),
        mpm_options=gs.options.MPMOptions(lower_bound=(0.0, 0.0, 0.0), upper_bound=(0.4, 0.4, 0.4), grid_density=64),
        sph_options=gs.options.SPHOptions(
            particle_size=P, lower_bound=(0.0, 0.0, 0.0), upper_bound=(0.4, 0.4, 0.4), pressure_solver="WCSPH"
        ),
        coupler_options=gs.options.LegacyCouplerOptions(),
        show_viewer=False,
    )
    wmat = gs.materials.SPH.Liquid()
    water = scene.add_entity(morph=gs.morphs.Box(lower=(0.0, 0.0, 0.0), upper=(0.4, 0.4, 0.12)), material=wmat)
    smat = gs.materials.MPM.Snow()
    snow = scene.add_entity(morph=gs.morphs.Sphere(pos=(0.2, 0.2, 0.25), radius=0.05), material=smat)
    tb = time.time()
    scene.build()
    build_s = time.time() - tb
    sph, mpm = scene.sim.sph_solver, scene.sim.mpm_solver

    n_mpm = snow.n_particles
    snow.set_particles_vel(np.tile(np.array(V0, dtype=np.float32), (n_mpm, 1)))
    v_check = snow.get_particles_vel().cpu().numpy().reshape(-1, 3).mean(0)
    print("MPM particles", n_mpm, "SPH particles", water.n_particles, "initial MPM mean vel", v_check, flush=True)
    sph_mass = float(sph.particles_info.mass.to_numpy()[0])
    mpm_mass = mpm.particles_info.mass.to_numpy()[mpm.particles_info.mass.to_numpy() != 0] if hasattr(
        mpm, "particles_info") else None

    n_steps = int(round(T_END / DT))
    snap_steps = {int(round(t / DT)): t for t in SNAP_T if t <= T_END + 1e-9}
    csv_path = os.path.join(RESULTS, f"snow_into_pool{TAG}.csv")
    fields = ["step", "t", "mpm_com_x", "mpm_com_y", "mpm_com_z", "mpm_mean_vx", "mpm_mean_vy", "mpm_mean_vz",
              "mpm_min_z", "mpm_max_z", "sph_mom_x", "sph_mom_y", "sph_mom_z", "sph_max_z", "sph_max_z_p99_9",
              "sph_com_z", "sph_kinetic_energy", "wall_s"]
    timer = Timer()
    with open(csv_path, "w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(fields)
        for step in range(n_steps + 1):
            if step > 0:
                scene.step()
            mp = snow.get_particles_pos().cpu().numpy().reshape(-1, 3)
            mv = snow.get_particles_vel().cpu().numpy().reshape(-1, 3)
            wp = water.get_particles_pos().cpu().numpy().reshape(-1, 3)
            wv = water.get_particles_vel().cpu().numpy().reshape(-1, 3)
            com = mp.mean(0)  # all MPM particles have equal mass (one material, one particle volume)
            mom = sph_mass * wv.sum(0)
            t = scene.sim.cur_t
            row = [step, f"{t:.6f}", *com, *mv.mean(0), mp[:, 2].min(), mp[:, 2].max(), *mom, wp[:, 2].max(),
                   np.percentile(wp[:, 2], 99.9), wp[:, 2].mean(), 0.5 * sph_mass * (wv**2).sum(), f"{timer():.2f}"]
            wr.writerow([f"{v:.6g}" if isinstance(v, (float, np.floating)) else v for v in row])
            if step in snap_steps:
                tt = snap_steps[step]
                np.save(os.path.join(RESULTS, f"snow_into_pool{TAG}_mpm_pos_t{tt:.1f}.npy"), mp.astype(np.float32))
                np.save(os.path.join(RESULTS, f"snow_into_pool{TAG}_sph_pos_t{tt:.1f}.npy"), wp.astype(np.float32))
            if not (np.isfinite(mv).all() and np.isfinite(wv).all()):
                print("non-finite MPM/SPH velocity at step", step, "t", t, flush=True)
                break
            if step % 25 == 0:
                print(f"step {step} t={t:.3f} com_z={com[2]:.4f} vz={mv[:, 2].mean():.4f} "
                      f"sph_mom_z={mom[2]:.4f} sph_max_z={wp[:, 2].max():.4f} wall={timer():.1f}s", flush=True)
    run_s = timer()
    print(f"build {build_s:.1f}s, {n_steps} steps in {run_s:.1f}s ({run_s / n_steps:.3f} s/step)")

    write_json(f"snow_into_pool{TAG}_options.json", {
        "scenario": "snowball into pool",
        "script": "snow_into_pool.py",
        "env": env_info(),
        "sim_options": dump_model(scene.options.sim),
        "mpm_options": dump_model(scene.options.mpm),
        "sph_options": dump_model(scene.options.sph),
        "coupler_options": dump_model(scene.options.coupler),
        "sph_solver_resolved": sph_solver_info(sph),
        "mpm_solver_resolved": {
            "dx": mpm.dx, "inv_dx": mpm.inv_dx, "grid_res": mpm.grid_res.tolist(),
            "lower_bound_cell": mpm.lower_bound_cell.tolist(), "upper_bound_cell": mpm.upper_bound_cell.tolist(),
            "particle_size": mpm.particle_size,
            "particle_volume_real (particle_size^3)": mpm._particle_volume_real,
            "particle_volume_scale (internal, mass and volume both scaled)": mpm._particle_volume_scale,
            "boundary_padding": mpm.boundary_padding,
            "particle_boundary": {"lower": mpm.boundary.lower.tolist(), "upper": mpm.boundary.upper.tolist()},
            "substep_dt": mpm.substep_dt,
            "genesis_suggested_max_substep_dt (2e-2*dx)": 2e-2 * mpm.dx,
            "n_particles": mpm.n_particles,
            "particle_mass_internal_unique": (np.unique(mpm_mass).tolist() if mpm_mass is not None else None),
        },
        "water": {"morph": "Box lower (0,0,0) upper (0.4,0.4,0.12)", "material": dump_model(wmat),
                  "n_particles": water.n_particles},
        "snow": {"morph": "Sphere pos (0.2,0.2,0.25) radius 0.05", "material": dump_model(smat),
                 "n_particles": n_mpm, "total_mass_kg": float(snow.get_mass()),
                 "particle_mass_kg (p^3*rho)": mpm._particle_volume_real * smat.rho, "initial_velocity": list(V0),
                 "initial_velocity_check_mean": v_check.tolist(),
                 "sampling": "material default sampler ('random', seeded via gs.init(seed=0)); initial positions saved "
                             "in snow_into_pool_mpm_pos_t0.0.npy"},
        "t_end": T_END, "n_steps": n_steps, "dt": DT, "substeps": SUBSTEPS,
        "snapshot_times": sorted(snap_steps.values()),
        "timing_s": {"build": build_s, "run": run_s, "per_step": run_s / n_steps},
    })


if __name__ == "__main__":
    main()
