#!/usr/bin/env python3
"""runout_sweep.py - a sand column's runout over the friction angle, plotted.

    PYTHONPATH=python python3 examples/python/runout_sweep.py [--angles 25,30,35,40,45]
        [--dx 0.025] [--frames 40] [--plot runout.png] [--backend cpu]

Runs scenes/sand_column.json (a column of radius R0 = 8 cm, height 27.5 cm)
once per friction angle, edited as a dict (Scene.from_dict), at a coarser
grid by default, and measures the final runout from the particle views:
(R_inf - R0) / R0, R_inf the 99th percentile of the particles' distance
from the column's axis. Prints a table and plots runout against angle with
matplotlib. Higher friction, shorter runout; docs/VALIDATION.md holds firn's
column collapses against Lube et al.'s laws (test/validate_sand.py).
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import firn

REPO = Path(__file__).resolve().parents[2]


def runout(angle: float, dx: float, frames: int, backend: str) -> float:
    d = json.loads((REPO / "scenes" / "sand_column.json").read_text())
    d["domain"]["dx"] = dx
    d["materials"]["sand"]["friction_angle"] = angle
    d["time"]["frames"] = frames
    d.pop("output", None)
    shape = d["bodies"][0]["shape"]
    # A coarser grid keeps 2 dx from the floor: the column stands on it.
    shape["center"][1] = max(shape["center"][1], 2 * dx + shape["height"] / 2)
    scene = firn.Scene.from_dict(d, name=f"sand_column at {angle} deg")
    cx, _, cz = d["bodies"][0]["shape"]["center"]
    r0 = d["bodies"][0]["shape"]["radius"]
    with firn.World(scene, backend=backend) as world:
        world.step(frames)
        x = world.mpm.x
        r = np.hypot(x[:, 0] - cx, x[:, 2] - cz)
        return float((np.percentile(r, 99) - r0) / r0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--angles", default="25,30,35,40,45")
    ap.add_argument("--dx", type=float, default=0.025, help="grid spacing [m] (the scene's: 0.0125)")
    ap.add_argument("--frames", type=int, default=40, help="20 ms frames (the collapse ends by about 0.6 s)")
    ap.add_argument("--plot", default="runout.png", help="the figure ('' for none)")
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = ap.parse_args()
    angles = [float(a) for a in args.angles.split(",")]
    rows = []
    print(f"{'angle [deg]':>11} {'runout (R-R0)/R0':>17}")
    for a in angles:
        rows.append((a, runout(a, args.dx, args.frames, args.backend)))
        print(f"{a:11.1f} {rows[-1][1]:17.3f}", flush=True)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.plot([r[0] for r in rows], [r[1] for r in rows], "o-")
        ax.set_xlabel("friction angle [deg]")
        ax.set_ylabel("runout (R - R0) / R0")
        ax.set_title(f"sand column, H0/R0 = 3.4, dx = {args.dx * 100:g} cm")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"runout_sweep: plot in {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
