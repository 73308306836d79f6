"""Compares firn's runs of bench/genesis/firn/{pbd_cloth_hang,fem_drop}.json with Genesis's CSVs in results/.

    python3 bench/genesis/compare_pbd_fem.py OUT      # OUT holds pbd_cloth_hang/ and/or fem_drop/ (firn run --out)

Prints, every 0.1 s, Genesis's and firn's measures side by side (Genesis's z is firn's y).
"""
import csv
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")


def read_ply_xyz(path):
    """Vertex positions of a binary little-endian PLY whose vertex element starts with float x y z."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    header = data[:end].decode().splitlines()
    n, props, in_vertex = 0, [], False
    sizes = {"float": 4, "uchar": 1, "int": 4, "double": 8}
    for line in header:
        w = line.split()
        if w[:2] == ["element", "vertex"]:
            n, in_vertex = int(w[2]), True
        elif w[0] == "element":
            in_vertex = False
        elif w[0] == "property" and in_vertex:
            props.append(w[1])
    stride = sum(sizes[p] for p in props)
    buf = data[end:end + n * stride]
    out = np.empty((n, 3))
    for i in range(n):
        out[i] = struct.unpack_from("<3f", buf, i * stride)
    return out


def genesis_rows(name):
    with open(os.path.join(RESULTS, name)) as f:
        return list(csv.DictReader(f))


def stats(out):
    with open(os.path.join(out, "stats.jsonl")) as f:
        return [json.loads(line) for line in f]


def cloth(out):
    rows = {round(float(r["t"]), 4): r for r in genesis_rows("pbd_cloth_hang.csv")}
    st = stats(out)
    n_side = 33
    free = [n_side - 1, n_side * n_side - 1]  # vertices (i, j) = (0, 32) and (32, 32) of the cloth_rect
    print("cloth pinned at two corners: Genesis | firn [m]")
    print("| t [s] | com height G | firn | lowest G | firn | free corners G | firn |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    for s in st:
        t = round(s["time"], 4)
        if int(round(t * 100)) % 10 or t not in rows:
            continue
        g = rows[t]
        x = read_ply_xyz(os.path.join(out, f"pbd_{s['frame']:05d}.ply"))
        com, low, corner = s["pbd"]["center_of_mass"][1], x[:, 1].min(), x[free, 1].mean()
        worst = max(worst, abs(com - float(g["com_z"])))
        print(f"| {t:.1f} | {float(g['com_z']):.4f} | {com:.4f} | {float(g['min_z']):.4f} | {low:.4f} | "
              f"{float(g['free_corner_z']):.4f} | {corner:.4f} |")
    print(f"largest difference of the centre-of-mass height: {worst:.4f} m")


def fem(out):
    rows = {round(float(r["t"]), 4): r for r in genesis_rows("fem_drop.csv")}
    st = stats(out)
    print("FEM cube dropped on the floor: Genesis | firn [m]")
    print("| t [s] | com height G | firn | top G | firn | kinetic G [J] | firn |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for s in st:
        t = round(s["time"], 4)
        if int(round(t * 100)) % 2 or t not in rows:
            continue
        g, f = rows[t], s["fem"]
        print(f"| {t:.2f} | {float(g['com_z']):.4f} | {f['center_of_mass'][1]:.4f} | {float(g['max_z']):.4f} | "
              f"{f['bbox_upper'][1]:.4f} | {float(g['kinetic_energy']):.3f} | {f['kinetic_energy']:.3f} |")


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "out/genesis"
    if os.path.isdir(os.path.join(out, "pbd_cloth_hang")):
        cloth(os.path.join(out, "pbd_cloth_hang"))
    if os.path.isdir(os.path.join(out, "fem_drop")):
        fem(os.path.join(out, "fem_drop"))
