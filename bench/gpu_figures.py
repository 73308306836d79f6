#!/usr/bin/env python3
"""gpu_figures.py - the figures of bench/gpu_check.sh, as it goes and after.

  report    the steps so far (gpu_check.sh's steps.tsv) with each step's
            figure read from its file or log: a markdown report and one JSON
            (rewritten after every step, so that a call cut off brings back
            what finished)
  best      the N fastest P2G variants of a bench JSON at its largest size
  rehearsal the checks of make gpu-rehearsal over the $OUT folders of the
            rehearsed calls: every step ran and wrote its figure, $OUT within
            the device tool's limits, the plan within each call's budget,
            and the memcheck runs launching every kernel of kernels/

Python 3 standard library only (the device image's python3 has more, but
nothing here needs it).
"""
import argparse
import csv
import glob
import io
import json
import os
import re
import sys
import tarfile

# What the device tool brings back from $OUT (its README).
OUT_FILES = 8
OUT_FILE_BYTES = 16 * 1024 * 1024

STEP_FIELDS = ["index", "name", "kind", "result", "seconds", "estimate", "log", "figure"]


def read_steps(path):
    steps = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != len(STEP_FIELDS):
                continue
            s = dict(zip(STEP_FIELDS, parts))
            s["index"] = int(s["index"])
            s["seconds"] = float(s["seconds"] or 0)
            s["estimate"] = float(s["estimate"] or 0)
            steps.append(s)
    return steps


def read_text(path, limit=200000):
    try:
        with open(path, errors="replace") as f:
            return f.read(limit)
    except OSError:
        return ""


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# ---- figures by kind --------------------------------------------------------


def bench_figure(path):
    d = load_json(path)
    if not d:
        return None
    rows = []
    for r in d.get("results", []):
        row = {k: r.get(k) for k in ("scene", "layout", "backend", "particles", "p2g", "substeps",
                                     "median_seconds", "particle_substeps_per_second",
                                     "roofline_fraction", "memory_bytes", "floor_ratio")}
        row["phase_ms"] = r.get("phase_ms")
        if r.get("roofline_phases"):  # the floor per phase (docs/BENCH.md), from 2026-12-07
            row["roofline_phases"] = r.get("roofline_phases")
        if r.get("solver") and r.get("solver") != "mpm":
            row["solver"] = r.get("solver")
            for k in ("sph_phase_ms", "sph_iterations_per_substep", "pbd_phase_ms",
                      "fem_phase_ms", "fem_iterations_per_substep"):
                if r.get(k) is not None:
                    row[k] = r.get(k)
        rows.append(row)
    if not rows:
        return None
    return {"device": d.get("cuda_device"), "complete": d.get("complete"), "results": rows}


def number(v):
    try:
        return float(str(v).replace(",", ""))
    except ValueError:
        return None


def ncu_rows(path):
    """Nsight Compute's raw page as CSV: a header of metric names, a row of
    units, then a row per profiled kernel launch."""
    text = read_text(path, 10 ** 7)
    lines = [l for l in text.splitlines() if l.startswith('"')]
    if len(lines) < 2:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header = rows[0]
    # The units row, and anything else that is not a launch (its ID).
    return [dict(zip(header, r)) for r in rows[1:] if r and r[0].strip().isdigit()]


def bench_particles(base):
    """The particle count of the profiled bench (BASE.bench.json), or None."""
    bench = load_json(base + ".bench.json")
    if bench and bench.get("results"):
        return bench["results"][0].get("particles")
    return None


# Derived per particle: (figure name, metric, divide by particles, times 32).
NCU_PER_PARTICLE = [
    ("warp_instructions_per_particle", "smsp__inst_executed.sum"),
    ("thread_instructions_per_particle", "smsp__thread_inst_executed.sum"),
    ("shared_atomic_warp_instructions_per_particle", "smsp__sass_inst_executed_op_shared_atom.sum"),
    ("shared_atomic_wavefronts_per_particle", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"),
    ("shared_bank_conflicts_per_particle", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"),
    ("l2_reduction_requests_per_particle", "lts__t_requests_op_red.sum"),
    ("l2_reduction_sectors_per_particle", "lts__t_sectors_op_red.sum"),
]


def ncu_figure(path):
    rows = ncu_rows(path)
    if not rows:
        return None
    particles = bench_particles(re.sub(r"\.csv$", "", path))
    kernels = []
    for r in rows:
        k = {"kernel": r.get("Kernel Name"), "particles": particles}
        metrics = {}
        for name, value in r.items():
            if re.match(r"^[a-z0-9_]+__", name or ""):
                v = number(value)
                if v is not None:
                    metrics[name] = v
        k["metrics"] = metrics
        if particles:
            for fig, m in NCU_PER_PARTICLE:
                if m in metrics:
                    k[fig] = metrics[m] / particles
        inst = metrics.get("smsp__sass_inst_executed_op_shared_atom.sum")
        wav = metrics.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum")
        if inst and wav is not None:
            k["shared_atomic_replays_per_instruction"] = wav / inst - 1.0
        k["time_ms"] = metrics.get("gpu__time_duration.sum", 0) / 1e6 or None
        k["achieved_occupancy_pct"] = metrics.get(
            "sm__warps_active.avg.pct_of_peak_sustained_active")
        k["registers_per_thread"] = metrics.get("launch__registers_per_thread")
        kernels.append(k)
    return {"kernels": kernels}


EMU_FIELDS = ["kernel", "runs", "blocks", "threads", "shared_atomics", "global_atomics",
              "vector_atomics", "warp_shared_atomics", "shared_rounds", "shared_wavefronts",
              "shared_cas_atomics", "shared_cas_rounds", "load_warp", "load_sectors",
              "load_bytes", "store_warp", "store_sectors", "store_bytes"]
# Profiles written before the compare-and-swap loops were counted apart
# end at shared_wavefronts, those before the global sectors were counted at
# shared_cas_rounds: the missing columns read 0.
EMU_FIELDS_BEFORE_CAS = 10
EMU_FIELDS_BEFORE_SECTORS = 12


def emu_counts(path):
    """FIRN_EMU_PROFILE's lines, summed by kernel (several processes may
    append to one file)."""
    totals = {}
    for line in read_text(path, 10 ** 7).splitlines():
        parts = line.split("\t")
        if len(parts) in (EMU_FIELDS_BEFORE_CAS, EMU_FIELDS_BEFORE_SECTORS):
            parts += ["0"] * (len(EMU_FIELDS) - len(parts))
        if len(parts) != len(EMU_FIELDS):
            continue
        name = parts[0]
        t = totals.setdefault(name, dict.fromkeys(EMU_FIELDS[1:], 0))
        for f, v in zip(EMU_FIELDS[1:], parts[1:]):
            t[f] += int(v)
    return totals


def emu_figure(path):
    totals = emu_counts(path)
    if not totals:
        return None
    particles = bench_particles(re.sub(r"\.emu\.tsv$", "", path))
    kernels = []
    for name, t in sorted(totals.items()):
        k = {"kernel": name, **t}
        # P2G-like kernels run once a substep over every particle: the
        # atomics per particle and launch.
        if particles and t["runs"]:
            for f in ("shared_atomics", "global_atomics", "vector_atomics", "warp_shared_atomics",
                      "shared_rounds", "shared_wavefronts", "shared_cas_atomics",
                      "shared_cas_rounds"):
                k[f + "_per_particle_launch"] = t[f] / (particles * t["runs"])
        # The shared atomics' modelled passes and wavefronts per warp
        # instruction (test/emu/runtime.cpp): 1 when no lanes collide.
        if t["warp_shared_atomics"]:
            k["shared_rounds_per_instruction"] = t["shared_rounds"] / t["warp_shared_atomics"]
            k["shared_wavefronts_per_instruction"] = (t["shared_wavefronts"] /
                                                      t["warp_shared_atomics"])
        kernels.append(k)
    return {"emulated": True, "particles": particles, "kernels": kernels}


def tests_figure(log):
    m = re.findall(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)",
                   read_text(log, 10 ** 7))
    if not m:
        return None
    t, p, f, c = map(int, m[-1])
    return {"tested": t, "passing": p, "failing": f, "crashing": c}


def compare_figure(log):
    text = read_text(log)
    verdict = re.findall(r"compare: (PASS|FAIL)", text)
    first = next((l for l in text.splitlines() if " particles, CPU (" in l), None)
    worst = [l.strip() for l in text.splitlines() if "FAIL" in l and "compare:" not in l][:5]
    if not verdict and not first:
        return None
    return {"verdict": verdict[-1] if verdict else None, "scene": first, "failing_lines": worst}


def sanitizer_figure(log, rehearsal):
    text = read_text(log, 10 ** 7)
    m = re.findall(r"(ERROR SUMMARY|RACECHECK SUMMARY): (.*)", text)
    if m:
        return {"summary": m[-1][0] + ": " + m[-1][1]}
    if rehearsal:
        return {"summary": "emulated: ASan and UBSan reported nothing" if "ERROR" not in text
                else "emulated: see the log"}
    return None


def info_figure(log):
    text = read_text(log).strip()
    if not text:
        return None
    return {"text": "\n".join(text.splitlines()[:25])}


def det_figure(log):
    lines = [l for l in read_text(log).splitlines() if "identical" in l or "differ" in l]
    return {"lines": lines} if lines else None


def figure_of(step, rehearsal):
    kind, fig, log = step["kind"], step["figure"], step["log"]
    src = log if fig in ("", "-") else fig
    if not src:
        return None
    if kind == "bench":
        return bench_figure(src)
    if kind == "ncu":
        return ncu_figure(src)
    if kind == "emu-profile":
        return emu_figure(src)
    if kind == "tests":
        return tests_figure(src)
    if kind == "compare":
        return compare_figure(src)
    if kind == "sanitizer":
        return sanitizer_figure(src, rehearsal)
    if kind == "det":
        return det_figure(src)
    return info_figure(src)


# ---- report -------------------------------------------------------------------


def fmt(v, spec="{:.3g}"):
    if v is None:
        return ""
    try:
        return spec.format(v)
    except (ValueError, TypeError):
        return str(v)


def report(args):
    steps = read_steps(args.steps)
    rehearsal = args.rehearsal == "1"
    for s in steps:
        s["figure_data"] = figure_of(s, rehearsal)
    planned = sum(s["estimate"] for s in steps)
    doc = {
        "schema": "firn-gpu-check-1",
        "mode": args.mode,
        "date": args.date,
        "commit": args.commit,
        "gpu": args.gpu,
        "rehearsal": rehearsal,
        "budget_s": args.budget,
        "elapsed_s": args.elapsed,
        "planned_h200_s": planned,
        "steps": [{
            "name": s["name"], "kind": s["kind"], "result": s["result"],
            "seconds": s["seconds"], "h200_estimate_s": s["estimate"],
            "figure": s["figure_data"]} for s in steps],
    }
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1)

    md = []
    title = "rehearsal on the emulated runtime" if rehearsal else "GPU check"
    md.append(f"## firn {title} ({args.mode}), {args.date}, commit {args.commit}")
    md.append("")
    md.append(f"GPU: {args.gpu}. Budget {args.budget} s; {args.elapsed} s so far; the steps' "
              f"H200 estimates sum to {planned:.0f} s ({100 * planned / max(args.budget, 1):.0f} % "
              "of the budget).")
    md.append("")
    md.append("| # | step | result | seconds | H200 estimate | share of budget | figure |")
    md.append("| ---: | --- | --- | ---: | ---: | ---: | --- |")
    for s in steps:
        share = 100 * s["estimate"] / max(args.budget, 1)
        md.append(f"| {s['index']} | {s['name']} | {s['result']} | {s['seconds']:.1f} | "
                  f"{s['estimate']:.0f} | {share:.1f} % | {summary(s)} |")
    failed = sum(1 for s in steps if s["result"].startswith("FAIL"))
    md.append("")
    md.append(f"{failed} step(s) failed.")
    bench_rows = [(s, r) for s in steps if s["kind"] == "bench" and s["figure_data"]
                  for r in s["figure_data"]["results"]]
    if bench_rows:
        md.append("")
        md.append("### Throughput")
        md.append("")
        md.append("| step | scene | particles | P2G | particle-substeps/s | p2g ms | grid ms | "
                  "g2p ms | roofline | measured / floor |")
        md.append("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for s, r in bench_rows:
            ph = r.get("phase_ms") or {}
            md.append(f"| {s['index']} | {r['scene']} | {r['particles']:,} | {r.get('p2g') or ''} | "
                      f"{fmt(r['particle_substeps_per_second'])} | {fmt(ph.get('p2g'))} | "
                      f"{fmt(ph.get('grid'))} | {fmt(ph.get('g2p'))} | "
                      f"{fmt(r.get('roofline_fraction'))} | {fmt(r.get('floor_ratio'))} |")
    prof = [(s, k) for s in steps if s["kind"] == "ncu" and s["figure_data"]
            for k in s["figure_data"]["kernels"]]
    if prof:
        md.append("")
        md.append("### Nsight Compute, one P2G launch at 8M")
        md.append("")
        md.append("| kernel | ms | instr./particle (thread) | shared atomics (warp instr.)/particle | "
                  "replays per shared atomic | bank conflicts/particle | L2 reductions/particle | "
                  "occupancy % | registers |")
        md.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for s, k in prof:
            md.append(f"| {k['kernel']} | {fmt(k.get('time_ms'))} | "
                      f"{fmt(k.get('thread_instructions_per_particle'))} | "
                      f"{fmt(k.get('shared_atomic_warp_instructions_per_particle'))} | "
                      f"{fmt(k.get('shared_atomic_replays_per_instruction'))} | "
                      f"{fmt(k.get('shared_bank_conflicts_per_particle'))} | "
                      f"{fmt(k.get('l2_reduction_requests_per_particle'))} | "
                      f"{fmt(k.get('achieved_occupancy_pct'))} | "
                      f"{fmt(k.get('registers_per_thread'), '{:.0f}')} |")
    emu = [(s, k) for s in steps if s["kind"] == "emu-profile" and s["figure_data"]
           for k in s["figure_data"]["kernels"]]
    if emu:
        md.append("")
        md.append("### Emulator's counts (atomics issued per particle and launch)")
        md.append("")
        md.append("Shared atomics as warp instructions, modelled: passes of the compare-and-swap "
                  "loop (rounds) and wavefronts per instruction, 1 when no lanes collide.")
        md.append("")
        md.append("| step | kernel | runs | shared | global scalar | global vector | "
                  "shared warp instr. | rounds/instr. | wavefronts/instr. |")
        md.append("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for s, k in emu:
            if not (k.get("shared_atomics") or k.get("global_atomics") or k.get("vector_atomics")):
                continue
            md.append(f"| {s['index']} | {k['kernel']} | {k['runs']} | "
                      f"{fmt(k.get('shared_atomics_per_particle_launch'))} | "
                      f"{fmt(k.get('global_atomics_per_particle_launch'))} | "
                      f"{fmt(k.get('vector_atomics_per_particle_launch'))} | "
                      f"{fmt(k.get('warp_shared_atomics_per_particle_launch'))} | "
                      f"{fmt(k.get('shared_rounds_per_instruction'))} | "
                      f"{fmt(k.get('shared_wavefronts_per_instruction'))} |")
    with open(args.markdown, "w") as f:
        f.write("\n".join(md) + "\n")
    return 0


def summary(s):
    d = s["figure_data"]
    if not d:
        return ""
    k = s["kind"]
    if k == "bench":
        best = max(d["results"], key=lambda r: r.get("particle_substeps_per_second") or 0)
        return (f"{len(d['results'])} case(s); best {fmt(best.get('particle_substeps_per_second'))} "
                f"p-substeps/s ({best['scene']} {best['particles']:,}, {best.get('p2g') or ''})")
    if k == "ncu":
        return "; ".join(f"{x['kernel']}: {fmt(x.get('thread_instructions_per_particle'))} instr./p"
                         for x in d["kernels"])
    if k == "emu-profile":
        return f"{len(d['kernels'])} kernel(s) counted"
    if k == "tests":
        return f"{d['passing']}/{d['tested']} passed"
    if k == "compare":
        return d.get("verdict") or ""
    if k == "sanitizer":
        return d.get("summary", "")
    if k == "det":
        return "; ".join(d["lines"])
    return d.get("text", "").splitlines()[0][:80] if d.get("text") else ""


# ---- best ----------------------------------------------------------------------


def best(args):
    d = load_json(args.json)
    if not d or not d.get("results"):
        return 1
    top = max(r["particles"] for r in d["results"])
    rows = sorted((r for r in d["results"] if r["particles"] == top and r.get("p2g")),
                  key=lambda r: -(r.get("particle_substeps_per_second") or 0))
    names = []
    for r in rows:
        if r["p2g"] not in names:
            names.append(r["p2g"])
    if not names:
        return 1
    print(",".join(names[:args.count]))
    return 0


# ---- rehearsal -----------------------------------------------------------------


def kernels_in_source(root):
    names = set()
    # __launch_bounds__'s arguments may call a constexpr function (one level
    # of parentheses inside); a template kernel's launches are named with
    # its arguments (p2g<FIRN_M_SAND>), which kernels_launched strips.
    pat = re.compile(r"__global__\s+(?:void\s+)?"
                     r"(?:__launch_bounds__\((?:[^()]|\([^()]*\))*\)\s*)?(?:void\s+)?"
                     r"([A-Za-z_0-9]+)\s*\(")
    for path in sorted(glob.glob(os.path.join(root, "kernels", "*.cu"))):
        names.update(pat.findall(read_text(path, 10 ** 7)))
    return names


def rehearsal(args):
    ok = True

    def fail(msg):
        nonlocal ok
        ok = False
        print(f"gpu-rehearsal: FAIL: {msg}")

    for out, mode in zip(args.out, args.modes):
        files = sorted(os.listdir(out))
        print(f"gpu-rehearsal: {mode}: $OUT holds {len(files)} file(s): {', '.join(files)}")
        dirs = [f for f in files if os.path.isdir(os.path.join(out, f))]
        if dirs:
            fail(f"{mode}: $OUT has folders {dirs} (the device tool returns plain files)")
        if len(files) > OUT_FILES:
            fail(f"{mode}: {len(files)} files in $OUT, over the {OUT_FILES} that come back")
        for f in files:
            size = os.path.getsize(os.path.join(out, f))
            if size > OUT_FILE_BYTES:
                fail(f"{mode}: {f} is {size} bytes, over 16 MiB")
        doc = load_json(os.path.join(out, f"figures-{mode}.json"))
        if not doc:
            fail(f"{mode}: no figures-{mode}.json")
            continue
        budget = doc["budget_s"]
        total, skipped = 0.0, 0
        print(f"gpu-rehearsal: {mode}: each step's share of the {budget} s budget (H200 "
              "estimates from the 2026-12-04 runs), and what it wrote:")
        for s in doc["steps"]:
            total += s["h200_estimate_s"]
            print(f"  {s['h200_estimate_s']:5.0f} s {100 * s['h200_estimate_s'] / budget:5.1f} % "
                  f"(to {total:5.0f} s)  {s['result'][:20]:<20} {s['name']}")
            if s["result"].startswith("REHEARSAL: not run"):
                skipped += 1  # a device step the rehearsal leaves out; its estimate counts
            elif s["result"] != "PASS":
                fail(f"{mode}: step '{s['name']}': {s['result']}")
            elif not s["figure"]:
                fail(f"{mode}: step '{s['name']}' passed but wrote no figure")
        print(f"gpu-rehearsal: {mode}: {len(doc['steps'])} steps ({skipped} the device's only), "
              f"planned {total:.0f} s of the {budget} s budget on an H200")
        if total > budget:
            fail(f"{mode}: the steps' H200 estimates sum to {total:.0f} s, over the {budget} s budget")
        if mode == "correct":
            ok = coverage(out, mode, args.root, fail) and ok
    if args.bundle_bytes is not None:
        mib = args.bundle_bytes / 1048576
        print(f"gpu-rehearsal: the bundle (bench/pack_gpu.sh) is {mib:.1f} MiB")
        if args.bundle_bytes > 60 * 1048576:
            fail(f"the bundle is {mib:.1f} MiB, over 60 MiB")
    print("gpu-rehearsal: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


# Kernels no memcheck run can launch: with the reason.
NOT_IN_A_SCENE = {
    "imp_add": "the implicit FEM's Rayleigh stiffness damping, which no scene sets",
    "skew_keys": "the GPU tests' key skew",
}


def coverage(out, mode, root, fail):
    """The memcheck runs' kernels (FIRN_EMU_PROFILE, in the logs' archive)
    against every kernel of kernels/."""
    path = os.path.join(out, f"logs-{mode}.tar.gz")
    launched = {}
    try:
        with tarfile.open(path) as t:
            for m in t.getmembers():
                if m.name.endswith("memcheck-kernels.tsv"):
                    data = t.extractfile(m).read().decode()
                    tmp = os.path.join(out, ".kernels.tsv")
                    with open(tmp, "w") as f:
                        f.write(data)
                    launched = emu_counts(tmp)
                    os.remove(tmp)
    except (OSError, tarfile.TarError) as e:
        fail(f"{mode}: cannot read {path}: {e}")
        return False
    every = kernels_in_source(root)
    launched = {re.sub(r"<.*>$", "", k) for k in launched}
    missing = sorted(every - launched - set(NOT_IN_A_SCENE))
    print(f"gpu-rehearsal: {mode}: the memcheck runs launched {len(set(launched) & every)} of the "
          f"{len(every)} kernels of kernels/; not launched by design: " +
          "; ".join(f"{k} ({v})" for k, v in sorted(NOT_IN_A_SCENE.items())))
    if missing:
        fail(f"{mode}: kernels no memcheck run launches: {', '.join(missing)}")
        return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("report")
    r.add_argument("--steps", required=True)
    r.add_argument("--mode", required=True)
    r.add_argument("--date", required=True)
    r.add_argument("--commit", required=True)
    r.add_argument("--gpu", required=True)
    r.add_argument("--budget", type=int, required=True)
    r.add_argument("--rehearsal", default="0")
    r.add_argument("--elapsed", type=int, default=0)
    r.add_argument("--markdown", required=True)
    r.add_argument("--json", required=True)
    b = sub.add_parser("best")
    b.add_argument("--json", required=True)
    b.add_argument("--count", type=int, default=3)
    h = sub.add_parser("rehearsal")
    h.add_argument("--out", nargs="+", required=True)
    h.add_argument("--modes", nargs="+", required=True)
    h.add_argument("--root", default=".")
    h.add_argument("--bundle-bytes", type=int)
    a = ap.parse_args()
    if a.cmd == "report":
        return report(a)
    if a.cmd == "best":
        return best(a)
    return rehearsal(a)


if __name__ == "__main__":
    sys.exit(main())
