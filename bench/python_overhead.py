#!/usr/bin/env python3
"""python_overhead.py - what driving firn from Python costs (docs/PYTHON.md).

    PYTHONPATH=python FIRN_LIB=build/libfirn.so python3 bench/python_overhead.py \
        [--firn build/firn] [--repeat 5]

On a small scene (1440 sand particles, dx 2 cm; and scenes/sand_column.json,
22627 particles) it times, best of --repeat:
  - the CLI: `firn run --backend cpu --frames F` (process start, scene, world,
    F frames, stats.jsonl), F frames being about 100 substeps;
  - Python: Scene.from_json, World, step() F times (the same work, in-process);
  - in-process, per substep: one World.substep(100) call (the C loop) against
    100 World.substep(1) calls;
  - what a call costs in Python: the wrapper alone (World.substep(0) and
    World.step(0) do everything but the C call) and a bare ctypes call into
    the library (firn_world_clock), and fetching two views; Python's share of
    a run driven one substep per call is wrapper plus ctypes call over that
    plus a substep of the C loop.
"""

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "python" / "tests"))

import firn  # noqa: E402
from firn import _lib  # noqa: E402
from conftest import sand_block  # noqa: E402


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(name, scene_file, firn_bin, repeat):
    scene = firn.Scene.from_json(scene_file)
    w = firn.World(scene, backend="cpu")
    dt, nsub = w.next_frame_step()
    w.close()
    frames = max(1, round(100 / nsub))
    out = tempfile.mkdtemp(prefix="firn_overhead_")
    env = dict(os.environ, OMP_WAIT_POLICY="passive")

    def cli():
        subprocess.run([firn_bin, "run", str(scene_file), "--backend", "cpu", "--frames", str(frames),
                        "--out", out], check=True, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    def py():
        with firn.World(firn.Scene.from_json(scene_file), backend="cpu") as w:
            w.step(frames)

    t_cli, t_py = best(cli, repeat), best(py, repeat)

    # In-process: 100 substeps in one call (the C loop), and in 100 calls.
    w = firn.World(scene, backend="cpu")
    t_c100 = best(lambda: w.substep(100, dt), repeat)
    t_py100 = best(lambda: [w.substep(1, dt) for _ in range(100)], repeat)
    # What a call costs in Python alone: calls that do no substep (n = 0),
    # through the package and as bare ctypes calls.
    # substep(0) runs the wrapper without its C call; a bare ctypes call of
    # firn_world_clock (four arguments, as firn_world_run_substeps) is the
    # cost of crossing into C.
    raw = _lib.lib.firn_world_clock
    f, t, n = ctypes.c_int(), ctypes.c_double(), ctypes.c_longlong()
    ptr = w._ptr
    k = 2000
    t_sub0 = best(lambda: [w.substep(0, dt) for _ in range(k)], repeat) / k
    t_raw0 = best(lambda: [raw(ptr, ctypes.byref(f), ctypes.byref(t), ctypes.byref(n)) for _ in range(k)],
                  repeat) / k
    t_step0 = best(lambda: [w.step(0) for _ in range(k)], repeat) / k
    t_views = best(lambda: [(w.mpm.x, w.mpm.v) for _ in range(200)], repeat) / 200
    w.close()
    c_sub = t_c100 / 100
    return {
        "scene": name, "substeps": frames * nsub, "frames": frames,
        "cli_s": t_cli, "python_s": t_py,
        "substep_c_us": c_sub * 1e6, "substep_py_us": t_py100 / 100 * 1e6,
        "call_us": t_sub0 * 1e6, "raw_call_us": t_raw0 * 1e6, "step0_us": t_step0 * 1e6,
        "views_x_v_us": t_views * 1e6,
        "share_substep": (t_sub0 + t_raw0) / (t_sub0 + t_raw0 + c_sub),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--firn", default=str(REPO / "build" / "firn"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="firn_overhead_"))
    small = tmp / "sand_block.json"
    d = sand_block()
    d["output"] = {"ply": False, "preview": False}
    small.write_text(json.dumps(d))
    col = json.loads((REPO / "scenes" / "sand_column.json").read_text())
    col["output"] = {"ply": False, "preview": False}
    column = tmp / "sand_column.json"
    column.write_text(json.dumps(col))
    rows = [measure("sand_block (1440 particles)", small, args.firn, args.repeat),
            measure("sand_column (22627 particles)", column, args.firn, args.repeat)]
    print(f"library {firn.library_path}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(all)')}")
    print("| scene | substeps | `firn run` [s] | Python: load, create, step() [s] | substep, C loop [us] | "
          "substep, a Python call each [us] | a call's cost: the wrapper (substep(0)) / a bare ctypes call [us] | "
          "World.step(0) [us] | fetching x and v [us] | Python's share, a call per substep |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['scene']} | {r['substeps']} | {r['cli_s']:.3f} | {r['python_s']:.3f} | "
              f"{r['substep_c_us']:.0f} | {r['substep_py_us']:.0f} | {r['call_us']:.1f} / {r['raw_call_us']:.1f} | "
              f"{r['step0_us']:.1f} | {r['views_x_v_us']:.1f} | {100 * r['share_substep']:.2f} % |")


if __name__ == "__main__":
    main()
