#!/usr/bin/env python3
"""write_frames.py - read the particles every frame and write them yourself.

    PYTHONPATH=python python3 examples/python/write_frames.py SCENE OUT_DIR [--frames N] [--backend cpu]

Steps SCENE frame by frame and writes, after each, the MPM particles'
positions and speeds as a plain-text XYZ file (OUT_DIR/frame_NNNNN.xyz: a
count, a comment line, then "material x y z speed" per particle), with a
writer of its own: the state comes from the zero-copy views (world.mpm.x,
.v, .material), read while they are fresh, before the next step.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

import firn


def write_xyz(path: Path, world: firn.World) -> None:
    """The user's own format: NumPy arrays straight from the views."""
    x, v, mat = world.mpm.x, world.mpm.v, world.mpm.material
    speed = np.linalg.norm(v, axis=1)
    table = np.column_stack([mat, x, speed])
    with open(path, "w") as f:
        f.write(f"{len(table)}\nframe {world.frame} t={world.time:.6f} s\n")
        np.savetxt(f, table, fmt=["%d", "%.6f", "%.6f", "%.6f", "%.6f"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scene")
    ap.add_argument("out")
    ap.add_argument("--frames", type=int, default=None, help="default: the scene's time.frames")
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = ap.parse_args()
    scene = firn.Scene.from_json(args.scene)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frames = scene.frames if args.frames is None else args.frames
    with firn.World(scene, backend=args.backend) as world:
        write_xyz(out / "frame_00000.xyz", world)
        for _ in range(frames):
            world.step()
            write_xyz(out / f"frame_{world.frame:05d}.xyz", world)
        print(f"write_frames: {frames + 1} frames of {world.mpm.n} particles in {out}/, "
              f"t = {world.time:.4f} s, kinetic energy {world.stats['kinetic_energy']:.4g} J")
    return 0


if __name__ == "__main__":
    sys.exit(main())
