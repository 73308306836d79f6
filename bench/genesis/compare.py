#!/usr/bin/env python3
"""Compares firn runs of bench/genesis/firn/*.json with Genesis 1.4.5's
results of the same scenes (bench/genesis/results/*.csv, from the scripts
here). Genesis is z-up, firn's scenes y-up: Genesis (x, y, z) is firn's
(x, z, y). Usage, from the repository root, after the firn runs of README.md:

    python3 bench/genesis/compare.py OUT_DIR

where OUT_DIR holds out_wcsph/, out_dfsph/ and out_snow/ (firn run --out).
Standard library only."""
import csv
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def genesis(name):
    with open(os.path.join(HERE, "results", name)) as f:
        return {round(float(r["t"]), 4): r for r in csv.DictReader(f)}


def firn(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def dam_break(out):
    for solver in ("wcsph", "dfsph"):
        g = genesis("dam_break_%s.csv" % solver)
        path = os.path.join(out, "out_%s" % solver, "stats.jsonl")
        if not os.path.exists(path):
            print("dam break %s: no %s" % (solver, path))
            continue
        print("dam break %s: surge front (max x) [m], firn - Genesis in particle sizes p = 0.01 m"
              % solver.upper())
        for d in firn(path):
            t = round(d["time"], 4)
            if t in g and d["frame"] % 2 == 0:
                f, r = d["sph"]["bbox_upper"][0], float(g[t]["front_x_max"])
                print("  t = %.2f s  firn %.4f  Genesis %.4f  %+.2f p" % (t, f, r, (f - r) / 0.01))


def snow(out):
    g = genesis("snow_into_pool.csv")
    for tag in ("out_snow", "out_snow_floor", "out_snow_quirk"):
        path = os.path.join(out, tag, "stats.jsonl")
        if not os.path.exists(path):
            continue
        print("snowball into pool (%s): MPM centre of mass height [m], firn - Genesis in dx = 1/64 m"
              % tag)
        for d in firn(path):
            t = round(d["time"], 4)
            if t in g and d["frame"] % 2 == 0:
                f, r = d["center_of_mass"][1], float(g[t]["mpm_com_z"])
                print("  t = %.2f s  firn %.4f  Genesis %.4f  %+.2f dx" % (t, f, r, (f - r) * 64))


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "out/genesis"
    dam_break(out)
    snow(out)
