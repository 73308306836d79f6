#!/usr/bin/env python3
"""Checks a distributed run (firn run under mpirun) against the one-rank run
of the same scene, and against a second distributed run (test/mpi_test.sh).

usage: mpi_check.py SCENE ONE_DIR RANKS_DIR RANKS_AGAIN_DIR RANKS_LOG [--both-ways] [--empty-rank] [--reordered] [--rebalanced]

* Particle count and mass: equal, to the bit, at every frame. Mass is a
  sum in double over the particles in the scene's order, whose volumes and
  materials migrate bitwise and never change; both runs sum in that order
  at frame 0, and the distributed run at every frame.
* Momentum, centre of mass, kinetic energy, each particle's position and
  velocity, the rigid bodies' positions: within a bound derived from float
  rounding. The runs differ only in the order of float sums (the halo
  nodes' P2G sums, the bodies' reactions, the particles' order within a
  block), each sum's result by at most K ulps of its terms' size. With
  K = 27 (a particle gathers from 27 nodes) and u = 2^-24, a substep changes
  a particle's velocity by at most K u |v|max more than the other run, and
  over S substeps the difference is at most S K u v_scale (no chaotic
  amplification assumed, which the measured differences, 2 orders below,
  support). Positions integrate it: S K u v_scale t.
* The distributed run twice: stats.jsonl (less wall times) and every PLY
  frame identical to the bit.
* Particles crossed the slabs' boundary: the ranks' migration counts in
  RANKS_LOG (firn_mpi_report's lines) are not all zero; with --both-ways,
  every rank sent some; with --empty-rank, a rank ended the run with no
  particle (it still owns its slab, exchanges halos and steps the grid);
  with --reordered, a rank permuted its particles (the CPU path's block
  order) during the run, so that migration met the permuted layout; with
  --rebalanced, the slabs were split again during the run, alike on every
  rank (each counts the same rebalances).
"""
import json
import math
import os
import re
import struct
import sys

U = 2.0 ** -24
K = 27


def read_stats(d):
    with open(os.path.join(d, "stats.jsonl")) as f:
        return [json.loads(line) for line in f]


def read_ply(path):
    """A binary PLY's vertices as a dict of columns (lists), by property."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    header = data[:end].decode()
    n = int(re.search(r"element vertex (\d+)", header).group(1))
    props = re.findall(r"property (\w+) (\w+)", header)
    codes = {"float": "f", "uchar": "B", "int": "i", "uint": "I"}
    fmt = "<" + "".join(codes[t] for t, _ in props)
    size = struct.calcsize(fmt)
    rows = list(struct.iter_unpack(fmt, data[end:end + n * size]))
    return {name: [r[c] for r in rows] for c, (_, name) in enumerate(props)}


def fail(msg):
    print("mpi_check: FAIL: " + msg)
    sys.exit(1)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    both_ways = "--both-ways" in sys.argv
    empty_rank = "--empty-rank" in sys.argv
    reordered = "--reordered" in sys.argv
    rebalanced = "--rebalanced" in sys.argv
    scene, one, ranks, again, log = args
    a, b, c = read_stats(one), read_stats(ranks), read_stats(again)
    if not (len(a) == len(b) == len(c)) or len(a) < 2:
        fail("%s: the runs wrote %d, %d and %d frames" % (scene, len(a), len(b), len(c)))
    with open(scene) as f:
        frame_dt = json.load(f)["time"]["frame_dt"]
    worst = {}
    for x, y in zip(a, b):
        k = x["frame"]
        if x["particles"] != y["particles"]:
            fail("frame %d: %d particles on one rank, %d distributed" % (k, x["particles"], y["particles"]))
        if y["mass"] != b[0]["mass"] or (k == 0 and x["mass"] != y["mass"]):
            fail("frame %d: mass %r distributed, %r at its frame 0, %r on one rank"
                 % (k, y["mass"], b[0]["mass"], x["mass"]))
        S = x["substeps"]
        t = x["time"]
        M = x["mass"]
        # v_scale: the rms speed of the one-rank run (from its kinetic energy)
        # plus gravity's gain over the time run, so that a frame at rest
        # still has a scale.
        v_scale = math.sqrt(2.0 * x["kinetic_energy"] / M) + 9.81 * t
        dv = S * K * U * v_scale
        bounds = {"momentum": M * dv, "center_of_mass": dv * t, "kinetic_energy": M * v_scale * dv}
        for key, bound in bounds.items():
            xs = x[key] if isinstance(x[key], list) else [x[key]]
            ys = y[key] if isinstance(y[key], list) else [y[key]]
            diff = max(abs(p - q) for p, q in zip(xs, ys))
            worst[key] = max(worst.get(key, (0, 0, 0))[0], diff), bound, k
            if diff > bound:
                fail("frame %d: %s differs by %.3g, beyond the bound %.3g" % (k, key, diff, bound))
        for r, (rx, ry) in enumerate(zip(x.get("rigids", []), y.get("rigids", []))):
            diff = max(abs(p - q) for p, q in zip(rx["position"], ry["position"]))
            bound = dv * t + 4 * U * max(abs(p) for p in rx["position"])
            worst["rigid %d position" % r] = max(worst.get("rigid %d position" % r, (0,))[0], diff), bound, k
            if diff > bound:
                fail("frame %d: rigid %d's position differs by %.3g, beyond %.3g" % (k, r, diff, bound))
        # Each particle, in the scene's order in both PLY files.
        name = "frame_%05d.ply" % k
        if os.path.exists(os.path.join(one, name)):
            p1 = read_ply(os.path.join(one, name))
            p2 = read_ply(os.path.join(ranks, name))
            if len(p1["x"]) != len(p2["x"]):
                fail("%s: %d particles on one rank, %d distributed" % (name, len(p1["x"]), len(p2["x"])))
            if p1["material"] != p2["material"]:
                fail("%s: the particles' materials differ: not in the same order" % name)
            vmax = max(max(abs(v) for q in "xyz" for v in p1["v" + q]), 9.81 * t)
            dvp = S * K * U * vmax
            dx = max(abs(p - q) for c in "xyz" for p, q in zip(p1[c], p2[c]))
            du = max(abs(p - q) for c in "xyz" for p, q in zip(p1["v" + c], p2["v" + c]))
            for key, diff, bound in (("particle position", dx, dvp * t + 4 * U), ("particle velocity", du, dvp)):
                worst[key] = max(worst.get(key, (0,))[0], diff), bound, k
                if diff > bound:
                    fail("%s: a %s differs by %.3g, beyond %.3g" % (name, key, diff, bound))
    for key, (diff, bound, k) in sorted(worst.items()):
        print("mpi_check: %-20s largest difference %.3g (bound %.3g, frame %d)" % (key, diff, bound, k))
    # The distributed run twice: the same bits.
    def strip(s):
        return {k: v for k, v in s.items() if k not in ("wall_seconds", "throughput")}
    for x, y in zip(b, c):
        if strip(x) != strip(y):
            fail("frame %d: two distributed runs differ in stats.jsonl" % x["frame"])
    frames = sorted(f for f in os.listdir(ranks) if f.endswith(".ply"))
    for name in frames:
        with open(os.path.join(ranks, name), "rb") as f1, open(os.path.join(again, name), "rb") as f2:
            if f1.read() != f2.read():
                fail("%s: two distributed runs differ" % name)
    print("mpi_check: two distributed runs: stats and %d PLY frames identical" % len(frames))
    # Migration.
    with open(log) as f:
        report = f.read()
    sent = [int(m.group(1)) for m in re.finditer(r"migrated (\d+) out", report)]
    held = [int(m.group(1)) for m in re.finditer(r" (\d+) particles now", report)]
    reorders = [int(m.group(1)) for m in re.finditer(r" (\d+) reorders", report)]
    rebalances = [int(m.group(1)) for m in re.finditer(r" (\d+) rebalances", report)]
    if rebalanced and (not rebalances or min(rebalances) == 0 or len(set(rebalances)) != 1):
        fail("the slabs were not split again alike on every rank (rebalances %s)" % rebalances)
    if rebalanced:
        print("mpi_check: the slabs were split again %d times; the ranks hold %s" %
              (rebalances[0], held))
    if reordered and not any(reorders):
        fail("no rank reordered its particles (reorders %s)" % reorders)
    if empty_rank and 0 not in held:
        fail("no rank was left without particles (ranks hold %s)" % held)
    if not sent or sum(sent) == 0:
        fail("no particle crossed a slab boundary (ranks sent %s)" % sent)
    if both_ways and min(sent) == 0:
        fail("particles crossed one way only (ranks sent %s)" % sent)
    print("mpi_check: particles migrated out of each rank: %s" % sent)
    print("mpi_check: ok: %s" % scene)


main()
