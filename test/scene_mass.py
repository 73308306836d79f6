#!/usr/bin/env python3
"""scene_mass.py - the starting mass of each shipped scene's particle
bodies against their stated mass: per solver (MPM, SPH, PBD particle
bodies; cloth and FEM bodies are left out), the sum over its bodies of
density x the shape's exact volume (a box's, sphere's or cylinder's closed
form, a mesh's signed tetrahedron sum), and the mass `firn validate`
reports (4 significant digits). Usage:

    python3 test/scene_mass.py [build/firn] [scenes/*.json ...]
"""
import glob
import json
import math
import os
import re
import subprocess
import sys

SOLVERS = {"mpm": "MPM", "sph": "SPH", "pbd": "PBD"}


def obj_volume(path, scale):
    """The signed volume of a closed OBJ surface: sum over its triangles
    (faces fanned) of a . (b x c) / 6."""
    v, vol = [], 0.0
    with open(path) as f:
        for line in f:
            t = line.split()
            if not t:
                continue
            if t[0] == "v":
                v.append([float(x) * scale for x in t[1:4]])
            elif t[0] == "f":
                idx = [int(x.split("/")[0]) for x in t[1:]]
                idx = [i - 1 if i > 0 else len(v) + i for i in idx]
                a = v[idx[0]]
                for b, c in zip((v[i] for i in idx[1:-1]), (v[i] for i in idx[2:])):
                    vol += (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
                            + a[2] * (b[0] * c[1] - b[1] * c[0])) / 6.0
    return abs(vol)


def volume(shape, folder):
    t = shape.get("type", "box")
    if t == "box":
        if "size" in shape:
            s = shape["size"]
        else:
            s = [u - l for l, u in zip(shape["lower"], shape["upper"])]
        return s[0] * s[1] * s[2]
    if t == "sphere":
        return 4.0 / 3.0 * math.pi * shape["radius"] ** 3
    if t == "cylinder":
        return math.pi * shape["radius"] ** 2 * shape["height"]
    if t == "mesh":
        return obj_volume(os.path.join(folder, shape["file"]), shape.get("scale", 1.0))
    return None


def main():
    firn = sys.argv[1] if len(sys.argv) > 1 else "build/firn"
    scenes = sys.argv[2:] or sorted(glob.glob("scenes/*.json"))
    print("| scene | solver | stated mass [kg] | starting mass [kg] | error |")
    print("|---|---|---|---|---|")
    for path in scenes:
        d = json.load(open(path))
        stated = {}
        for b in d.get("bodies", []):
            solver = b.get("solver", "mpm")
            m = d["materials"][b["material"]]
            if solver not in SOLVERS or m.get("model") == "pbd_cloth":
                continue
            stated[solver] = stated.get(solver, 0.0) + m["density"] * volume(
                b["shape"], os.path.dirname(path))
        if not stated:
            continue
        out = subprocess.run([firn, "validate", path], capture_output=True, text=True).stdout
        for solver, mass in stated.items():
            got = re.search(r"^  %s: \d+ particles \(mass ([0-9.e+-]+) kg" % SOLVERS[solver], out,
                            re.M)
            got = float(got.group(1))
            print("| %s | %s | %.4g | %.4g | %+.2f %% |" % (os.path.basename(path),
                                                       SOLVERS[solver], mass, got,
                                                       100.0 * (got / mass - 1.0)))


if __name__ == "__main__":
    main()
