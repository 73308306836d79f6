#!/usr/bin/env python3
"""Global-memory sectors per particle per kernel, on the emulated runtime.

Runs `firn bench --backend cuda` on the emulated build whose kernels trace
their loads and stores (make emu-sectors: build/emu-sectors/firn) with
FIRN_EMU_PROFILE, once per scene and P2G variant (SPH scenes once), and
prints per kernel: its launches, the 32-byte sectors its warps' global
loads and stores touched per particle and launch, the bytes the lanes
asked for over the sectors' bytes (above 1 where lanes share addresses),
the sectors per warp access (4 for a float array read lane by lane, 32
for one read at random), and the global atomics per particle and launch
(scalar and float4; not in the sectors).
The model is docs/EMULATION.md's "counts" row; docs/BENCH.md, "Global
memory sectors on the emulator", says how to read it.

  python3 bench/emu_sectors.py --scenes sand_block,sph_dam_break \\
      --p2g atomic,binned --particles 20k
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_figures import emu_counts  # noqa: E402

SPH_SCENES = ("sph_dam_break", "sph_dam_break_dfsph")


def run_case(args, scene, p2g, work):
    tag = f"{scene}-{p2g or 'sph'}"
    prof = os.path.join(work, tag + ".tsv")
    out_json = os.path.join(work, tag + ".json")
    if os.path.exists(prof):
        os.remove(prof)
    cmd = [args.firn, "bench", "--backend", "cuda", "--scenes", scene, "--layout", args.layout,
           "--particles", args.particles, "--warmup", str(args.warmup), "--substeps",
           str(args.substeps), "--repeats", "1", "--graphs", "off", "--json", out_json,
           "--csv", os.path.join(work, tag + ".csv")]
    if p2g:
        cmd += ["--p2g", p2g]
    env = dict(os.environ, FIRN_EMU_PROFILE=prof, OMP_WAIT_POLICY="passive")
    print("+ FIRN_EMU_PROFILE=" + prof + " " + " ".join(cmd), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit(f"emu_sectors: {' '.join(cmd)} failed (exit {r.returncode}):\n{r.stdout[-3000:]}")
    with open(out_json) as f:
        particles = json.load(f)["results"][0]["particles"]
    return particles, emu_counts(prof)


def table(scene, p2g, particles, counts, substeps):
    print(f"\n{scene}, {p2g or 'SPH'}: {particles} particles, {substeps} substeps "
          "(per particle and launch; a launch per substep unless runs says otherwise)")
    print("| kernel | runs | load sectors | store sectors | sectors | asked / fetched | "
          "sectors/load access | sectors/store access | global atomics |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    total = 0.0
    for name, t in sorted(counts.items(), key=lambda kv: -(kv[1]["load_sectors"] +
                                                              kv[1]["store_sectors"])):
        if not t["runs"] or not (t["load_warp"] or t["store_warp"]):
            continue
        per = particles * t["runs"]
        ld, st = t["load_sectors"] / per, t["store_sectors"] / per
        total += (t["load_sectors"] + t["store_sectors"]) / (particles * substeps)
        la = t["load_sectors"] / t["load_warp"] if t["load_warp"] else 0.0
        sa = t["store_sectors"] / t["store_warp"] if t["store_warp"] else 0.0
        used = (t["load_bytes"] + t["store_bytes"]) / (32 * (t["load_sectors"] +
                                                              t["store_sectors"]))
        atomics = (t["global_atomics"] + t["vector_atomics"]) / per
        print(f"| `{name}` | {t['runs']} | {ld:.2f} | {st:.2f} | {ld + st:.2f} | "
              f"{used:.2f} | {la:.2f} | {sa:.2f} | {atomics:.2f} |")
    print(f"| all kernels, per particle and substep | | | | {total:.1f} | | | | |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--firn", default="build/emu-sectors/firn")
    ap.add_argument("--scenes", default="sand_block,sph_dam_break")
    ap.add_argument("--p2g", default="atomic,binned", help="P2G variants of the MPM scenes")
    ap.add_argument("--particles", default="20k")
    ap.add_argument("--layout", default="dense")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--substeps", type=int, default=2)
    ap.add_argument("--out", help="folder of the profiles and bench files (default: a temporary)")
    args = ap.parse_args()
    work = args.out or tempfile.mkdtemp(prefix="firn-emu-sectors.")
    os.makedirs(work, exist_ok=True)
    for scene in args.scenes.split(","):
        variants = [None] if scene in SPH_SCENES else args.p2g.split(",")
        for p2g in variants:
            particles, counts = run_case(args, scene, p2g, work)
            if not any(t["load_warp"] for t in counts.values()):
                sys.exit(f"emu_sectors: {args.firn} counted no global loads: build it with "
                         "make emu-sectors (clang, EMU_COVERAGE=1)")
            table(scene, p2g, particles, counts, args.warmup + args.substeps)


if __name__ == "__main__":
    main()
