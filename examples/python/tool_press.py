#!/usr/bin/env python3
"""tool_press.py - examples/tool_press.c from Python: a force controller.

    PYTHONPATH=python python3 examples/python/tool_press.py [--csv] [--backend cpu] [--dx 0.01]

A 6 x 6 cm plate (a firn tool) above a 4 cm bed of dry sand presses down at
5 cm/s until the sand pushes back with FORCE_LIMIT newtons, holds still for
0.1 s, then lifts at 5 cm/s. Each 5 ms frame it reads the force the sand
exerts on the plate (the frame's mean) and sets the plate's velocity, as a
robot's controller would. Prints one line per frame, as the C example does
(the same lines, on the same backend); exits 0 once lifting, 2 if the limit
was never reached.
"""

import argparse
import sys

import numpy as np

import firn

# Single precision, as the C example's floats (so that both print the same lines).
FORCE_LIMIT = np.float32(2.0)  # [N]: the weight of about 200 g
SPEED = 0.05  # [m/s]
FRAME = np.float32(0.005)  # [s]


def scene(dx: float = 0.005) -> firn.Scene:
    return firn.Scene.from_dict(
        {
            "domain": {"lower": [0, 0, 0], "upper": [0.2, 0.15, 0.2], "dx": dx},
            "time": {"frame_dt": 0.005, "frames": 200},
            "materials": {
                "sand": {"model": "sand", "E": 3.5e5, "density": 1600, "friction_angle": 35}
            },
            "bodies": [
                {"material": "sand",
                 "shape": {"type": "box", "center": [0.1, 0.035, 0.1], "size": [0.16, 0.04, 0.16]}}
            ],
            "tools": [
                {"name": "plate",
                 "shape": {"type": "box", "center": [0.1, 0.07, 0.1], "size": [0.06, 0.006, 0.06]},
                 "softness": 0.002}
            ],
            "output": {"ply": False, "preview": False},
        },
        name="tool_press",
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", action="store_true")
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--dx", type=float, default=0.005,
                    help="grid spacing [m]; the C example's 0.005 by default (coarser runs faster)")
    args = ap.parse_args()
    with firn.World(scene(args.dx), backend=args.backend) as world:
        plate = world.tools["plate"]
        phase, held, peak = "press", np.float32(0.0), 0.0
        plate.set_velocity((0, -SPEED, 0))
        print("t_s,phase,y_m,force_y_N" if args.csv else "%7s %-6s %8s %10s" % ("t [s]", "phase", "y [m]", "Fy [N]"))
        for _ in range(200):
            world.step()
            s = plate.state
            fy = np.float32(s["force_mean"][1])
            peak = max(peak, fy)
            fmt = "%.4f,%s,%.5f,%.4f" if args.csv else "%7.3f %-6s %8.5f %10.4f"
            print(fmt % (world.stats["time"], phase, s["position"][1], float(fy)))
            # The controller: press until the sand holds the limit, hold, lift until clear.
            if phase == "press" and fy >= FORCE_LIMIT:
                phase = "hold"
                plate.set_velocity((0, 0, 0))
            elif phase == "hold":
                held = np.float32(held + FRAME)
                if held >= np.float32(0.1):
                    phase = "lift"
                    plate.set_velocity((0, SPEED, 0))
            elif phase == "lift" and s["position"][1] > np.float32(0.09):
                break
        print(f"tool_press: peak force {float(peak):.3f} N, limit {float(FORCE_LIMIT):.3f} N", file=sys.stderr)
    return 0 if phase == "lift" else 2


if __name__ == "__main__":
    sys.exit(main())
