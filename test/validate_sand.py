#!/usr/bin/env python3
"""validate_sand.py - granular column collapses against the published laws.

Builds each collapse from its parameters (a scene JSON, plus an OBJ for the
quarter cylinder), runs `firn run --backend cpu`, measures the deposit from
the last frame's particles and prints markdown tables against the laws of
Lube et al. (docs/VALIDATION.md, "Column collapses"). `make validate-sand`
runs the coarse set (8 cells across the column), `make validate-sand FINE=1`
also the fine one (16 cells).

Cases (a = H0 / L0 or H0 / R0):
  planar  a = 0.5, 1, 2, 4, 8: a slab two cells thick between slip walls
          (plane strain, as the experiments' smooth channel walls), the
          column against a slip back wall at x = 2 dx;
  axisym  a = 0.5, 1, 3, 6: a quarter cylinder in the corner of two slip
          walls, which stand for the symmetry planes x = 2 dx, z = 2 dx.
The column's smaller side is 0.08 m and RES cells (8 coarse, 16 fine;
--res takes any list). The floor is at y = 2 dx.

Friction angle (--phi): the angle that the experiments behind each case
report for their material:
  avalanche  the avalanche (maximum stable) angle, the one Rousseau et al.
             2023 (J. Fluid Mech.) set a constant-friction
             Drucker-Prager continuum to (the default);
  repose     the angle of repose;
or a number [deg] for every case (35, the shipped sand scenes' dry quartz
sand, reproduces the tables measured before 2026-12-06, when it was the
default).
The only material angles retrieved (EXPERIMENT_PHI) are those of the glass
beads (d = 1.15 mm) of Lajeunesse, Mangeney-Castelnau and Vilotte 2004
(Phys. Fluids 16, 2371): repose 22 +- 0.5 deg, avalanche 27.4 +- 0.5 deg
(wall friction 24.8 +- 0.2 deg), as tabulated by Kumar 2015 (PhD thesis,
Cambridge, chapter 4). Lajeunesse et al.'s collapses of glass beads
(2004; Lajeunesse, Monnier and Homsy 2005, Phys. Fluids 17, 103302: in a
channel and a half tube) are the companions of Lube et al.'s; Kumar 2015
gives the planar law printed here (1.2 a, 1.9 a^(2/3)) as Lajeunesse et
al. 2005's. Lube et al. 2004, 2005 used sands, sugar, rice and couscous
and report the runout independent of the material; their angles were
not retrieved, so both geometries take the beads' angles.

Measures (from particles, each of equal volume):
  runout  the 99th percentile of the distance from the back wall (planar)
          or the axis (axisym). The single outermost particle is one
          sample of a thin, noisy front (grains thrown ahead of the
          deposit); the percentile leaves out the outermost 1 % of the
          mass, which at the resolutions here is the last cell or two of the
          toe. The maximum is printed alongside.
  height  the highest particle within 0.25 L0 (R0) of the wall (axis),
          above the floor: the summit of the deposit, which for a low
          column is its untouched top.
  flank   the angle of the free surface between 25 % and 75 % of the
          height (least squares over bins dx / 2 wide of the highest
          particle), against the friction angle.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

D = 0.08  # the column's smaller dimension [m]
# The material angles [deg] of the experiments behind each case (--phi repose,
# --phi avalanche): (repose, avalanche, material and source).
EXPERIMENT_PHI = {
    "planar": (22.0, 27.4, "glass beads 1.15 mm, Lajeunesse et al. 2004 (Kumar 2015)"),
    "axisym": (22.0, 27.4, "glass beads 1.15 mm, Lajeunesse et al. 2004 (Kumar 2015)"),
}
RHO, E, NU = 1600.0, 3.5e5, 0.3  # the shipped sand scenes' sand


def lube_planar(a):
    """Lube et al. 2005 (Phys. Rev. E 72, 041301), quasi-2D channel."""
    run = 1.2 * a if a < 2.3 else 1.9 * a ** (2.0 / 3.0)
    h = a if a < 1.15 else a ** 0.4
    return run, h


def lube_axisym(a):
    """Lube et al. 2004 (J. Fluid Mech. 508), axisymmetric."""
    run = 1.24 * a if a < 1.7 else 1.6 * math.sqrt(a)
    h = a if a < 0.74 else 0.88 * a ** (1.0 / 6.0)
    return run, h


def case_phi(case, spec):
    """The friction angle of a case: --phi as a number, or the repose or
    avalanche angle of the case's reference material (EXPERIMENT_PHI)."""
    if spec == "repose":
        return EXPERIMENT_PHI[case][0]
    if spec == "avalanche":
        return EXPERIMENT_PHI[case][1]
    return float(spec)


def floor_wall(spec):
    if spec == "sticky":
        return "sticky"
    if spec.startswith("coulomb:"):
        return {"type": "separate", "friction": float(spec.split(":", 1)[1])}
    sys.exit("validate_sand: --floor %r: expected sticky or coulomb:MU" % spec)


def quarter_cylinder_obj(path, r, h, n=48):
    """A quarter cylinder: the corner, then n + 1 points on the arc, extruded
    along y. Returns the centroid of the solid relative to the corner."""
    pts = [(0.0, 0.0)] + [(r * math.cos(0.5 * math.pi * k / n), r * math.sin(0.5 * math.pi * k / n))
                          for k in range(n + 1)]
    m = len(pts)
    # Polygon in the x-z plane; area centroid by the shoelace formula.
    area = cx = cz = 0.0
    for i in range(m):
        x0, z0 = pts[i]
        x1, z1 = pts[(i + 1) % m]
        c = x0 * z1 - x1 * z0
        area += c
        cx += (x0 + x1) * c
        cz += (z0 + z1) * c
    area *= 0.5
    cx /= 6.0 * area
    cz /= 6.0 * area
    with open(path, "w") as f:
        for (x, z) in pts:
            f.write("v %.9g 0 %.9g\n" % (x, z))
        for (x, z) in pts:
            f.write("v %.9g %.9g %.9g\n" % (x, h, z))
        # Bottom (normal -y) and top (+y) as fans from the corner, sides as quads.
        for i in range(1, m - 1):
            f.write("f 1 %d %d\n" % (i + 1, i + 2))
            f.write("f %d %d %d\n" % (m + 1, m + i + 2, m + i + 1))
        for i in range(m):
            j = (i + 1) % m
            f.write("f %d %d %d\n" % (i + 1, m + i + 1, m + j + 1))
            f.write("f %d %d %d\n" % (i + 1, m + j + 1, j + 1))
    return cx, 0.5 * h, cz


def build(case, a, res, opt, out):
    """Writes the scene of one case; returns (scene path, geometry)."""
    dx = D / res
    lo = 2.0 * dx  # the wall layers' inner edge: back wall, axis, floor
    if case == "planar":
        L0, H0 = (D, a * D) if a >= 1 else (D / a, D)
        run, _ = lube_planar(a)
    else:
        L0, H0 = D, a * D  # R0 = D for every a here
        run, _ = lube_axisym(a)
    reach = L0 * (1.0 + opt.room * run) + 0.5 * L0  # room past the expected runout
    upper_x = lo + reach + 3.0 * dx
    upper_y = lo + H0 + 4.0 * dx
    slip = "slip"
    bnd = {"x_lower": slip, "y_lower": floor_wall(opt.floor)}
    mat = {"model": "sand", "E": E, "nu": NU, "density": RHO,
           "friction_angle": case_phi(case, opt.phi)}
    if opt.cone_fit != "default":
        mat["cone_fit"] = opt.cone_fit
    if opt.rheology != "default":
        mat["rheology"] = opt.rheology
    for key, val in (("friction_angle_2", opt.phi2), ("I0", opt.I0),
                     ("grain_diameter", opt.grain_d), ("grain_density", opt.grain_rho)):
        if val is not None:
            mat[key] = val
    if case == "planar":
        upper = [upper_x, upper_y, 6.0 * dx]
        bnd["z_lower"] = bnd["z_upper"] = slip
        shape = {"type": "box", "center": [lo + 0.5 * L0, lo + 0.5 * H0, 3.0 * dx],
                 "size": [L0, H0, 2.0 * dx]}
    else:
        upper = [upper_x, upper_y, upper_x]
        bnd["z_lower"] = slip
        obj = os.path.join(out, "quarter.obj")
        c = quarter_cylinder_obj(obj, L0, H0)
        shape = {"type": "mesh", "file": "quarter.obj",
                 "center": [lo + c[0], lo + c[1], lo + c[2]]}
    # Long enough to come to rest: the front stops near 3 (H0 / g)^(1/2)
    # after release in the experiments; twice that, at least 0.4 s.
    t_end = max(0.4, 6.0 * math.sqrt(H0 / 9.81))
    frame_dt = 0.02
    frames = int(math.ceil(t_end / frame_dt))
    scene = {
        "name": "%s_a%g" % (case, a),
        "description": "validate_sand: %s collapse, a = %g" % (case, a),
        "domain": {"lower": [0, 0, 0], "upper": upper, "dx": dx, "boundary": bnd},
        "time": {"frame_dt": frame_dt, "frames": frames},
        "materials": {"sand": mat},
        "bodies": [{"material": "sand", "shape": shape, "particles_per_cell": 8}],
        "output": {"dir": os.path.join(out, "run"), "every": frames, "preview": False},
    }
    path = os.path.join(out, "scene.json")
    with open(path, "w") as f:
        json.dump(scene, f, indent=1)
    return path, {"dx": dx, "lo": lo, "L0": L0, "H0": H0, "frames": frames,
                  "upper_x": upper_x}


def read_ply(path):
    with open(path, "rb") as f:
        props, n = [], 0
        while True:
            line = f.readline().decode("ascii").strip()
            if line.startswith("element vertex"):
                n = int(line.split()[2])
            elif line.startswith("property"):
                props.append(line.split()[1:])
            elif line == "end_header":
                break
        codes = {"float": "f", "uchar": "B", "int": "i", "uint": "I", "double": "d"}
        fmt = "<" + "".join(codes[t] for t, _ in props)
        size = struct.calcsize(fmt)
        names = [p for _, p in props]
        ix, iy, iz = names.index("x"), names.index("y"), names.index("z")
        data = f.read(n * size)
    return [(r[ix], r[iy], r[iz]) for r in struct.iter_unpack(fmt, data)]


def percentile(sorted_vals, q):
    k = (len(sorted_vals) - 1) * q
    i = int(math.floor(k))
    j = min(i + 1, len(sorted_vals) - 1)
    return sorted_vals[i] + (sorted_vals[j] - sorted_vals[i]) * (k - i)


def measure(case, g, pts):
    lo, dx = g["lo"], g["dx"]
    if case == "planar":
        dist = [p[0] - lo for p in pts]
    else:
        dist = [math.hypot(p[0] - lo, p[2] - lo) for p in pts]
    ds = sorted(dist)
    heights = [p[1] - lo for p, d in zip(pts, dist) if d < 0.25 * g["L0"]]
    h = max(heights) if heights else float("nan")
    # Flank: the top of each bin dx / 2 wide; least squares over the bins
    # whose top lies between 25 % and 75 % of the summit.
    w = 0.5 * dx
    top = {}
    for p, d in zip(pts, dist):
        b = int(d / w)
        top[b] = max(top.get(b, -1e9), p[1] - lo)
    summit = max(top.values())
    xs = [(b + 0.5) * w for b, t in top.items() if 0.25 * summit <= t <= 0.75 * summit]
    ys = [t for b, t in top.items() if 0.25 * summit <= t <= 0.75 * summit]
    flank = float("nan")
    if len(xs) >= 3:
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
        if sxx > 0:
            flank = math.degrees(math.atan(-sxy / sxx))
    return {"p99": percentile(ds, 0.99), "max": ds[-1], "h": h, "flank": flank}


def run_case(firn, case, a, res, opt, root):
    out = os.path.join(root, "%s_a%g_r%d" % (case, a, res))
    os.makedirs(out, exist_ok=True)
    scene, g = build(case, a, res, opt, out)
    env = dict(os.environ, OMP_WAIT_POLICY="passive", OMP_NUM_THREADS=str(opt.threads))
    t0 = time.time()
    r = subprocess.run([firn, "run", scene, "--backend", opt.backend, "--quiet"], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("validate_sand: %s a = %g: firn run failed (%d): %s" %
                 (case, a, r.returncode, r.stderr.strip()))
    wall = time.time() - t0
    last = os.path.join(out, "run", "frame_%05d.ply" % g["frames"])
    m = measure(case, g, read_ply(last))
    with open(os.path.join(out, "run", "stats.jsonl")) as f:
        s = [json.loads(line) for line in f]
    ke, mass = s[-1]["kinetic_energy"], s[-1]["mass"]
    m["rms"] = math.sqrt(2.0 * ke / mass)
    m["n"] = s[-1]["particles"]
    m["wall"] = wall
    m["edge"] = g["upper_x"] - 2.0 * g["dx"] - (g["lo"] + m["max"])  # room left to the far wall
    m.update(g)
    return case, a, res, m


def review_scene(opt):
    """--scene: a shipped axisymmetric collapse (a cylinder of sand standing
    on the floor, axis y) run as it is (or at --scene-dx), its last frame
    measured as the axisym cases are, about its own axis and floor."""
    with open(opt.scene) as f:
        sc = json.load(f)
    body = next((b for b in sc.get("bodies", []) if b.get("shape", {}).get("type") == "cylinder"
                 and b["shape"].get("axis", "y") == "y"), None)
    if body is None:
        sys.exit("validate_sand: --scene %s: no body is a cylinder with axis y" % opt.scene)
    shape = body["shape"]
    R0, H0 = shape["radius"], shape["height"]
    cx, cy, cz = shape["center"]
    floor = cy - 0.5 * H0
    dx = opt.scene_dx or sc["domain"]["dx"]
    frames = sc["time"]["frames"]
    mats = sc.get("materials", {})
    mat = mats.get(body.get("material"), {})
    if opt.scene_phi is not None:
        mat["friction_angle"] = opt.scene_phi
    phi = mat.get("friction_angle", "?")
    name = os.path.splitext(os.path.basename(opt.scene))[0]
    out = os.path.join(opt.out, "scene_%s_dx%g_phi%s" % (name, dx, phi))
    os.makedirs(out, exist_ok=True)
    sc["domain"]["dx"] = dx
    sc["output"] = {"dir": os.path.join(out, "run"), "every": frames}
    path = os.path.join(out, "scene.json")
    with open(path, "w") as f:
        json.dump(sc, f, indent=1)
    env = dict(os.environ, OMP_WAIT_POLICY="passive", OMP_NUM_THREADS=str(opt.threads))
    t0 = time.time()
    r = subprocess.run([opt.firn, "run", path, "--backend", opt.backend, "--quiet"], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("validate_sand: --scene %s: firn run failed (%d): %s" %
                 (opt.scene, r.returncode, r.stderr.strip()))
    pts = read_ply(os.path.join(out, "run", "frame_%05d.ply" % frames))
    # Radial distance from the column's axis as x, height above its base as y.
    rel = [(math.hypot(p[0] - cx, p[2] - cz), p[1] - floor, 0.0) for p in pts]
    m = measure("planar", {"lo": 0.0, "dx": dx, "L0": R0}, rel)
    with open(os.path.join(out, "run", "stats.jsonl")) as f:
        last = [json.loads(line) for line in f][-1]
    a = H0 / R0
    run_ref, h_ref = lube_axisym(a)
    run = (m["p99"] - R0) / R0
    print("\n### %s (a = %.2f, friction angle %s, %.1f cells across R0, t = %.2f s)\n" %
          (opt.scene, a, phi, R0 / dx, last["time"]))
    print("| (R-R0)/R0 p99 | max | Lube | ratio | H/R0 | Lube | flank [deg] | rms speed [m/s] "
          "| particles | wall [s] |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("| %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.3f | %d | %.0f |" %
          (run, (m["max"] - R0) / R0, run_ref, run / run_ref, m["h"] / R0, h_ref, m["flank"],
           math.sqrt(2.0 * last["kinetic_energy"] / last["mass"]), last["particles"],
           time.time() - t0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--firn", default="build/firn")
    ap.add_argument("--out", default="out/validate_sand")
    ap.add_argument("--res", default="8", help="cells across the column's smaller side, "
                    "comma-separated (8 coarse, 16 fine)")
    ap.add_argument("--cases", default="planar,axisym")
    ap.add_argument("--aspect", help="only these aspect ratios a, comma-separated (default: "
                    "0.5, 1, 2, 4, 8 planar; 0.5, 1, 3, 6 axisym)")
    ap.add_argument("--phi", default="avalanche", help="avalanche (default) or repose: each "
                    "case's reference material's angle (EXPERIMENT_PHI); or an angle [deg]")
    ap.add_argument("--cone-fit", default="default",
                    help="compression, extension, plane_strain, inscribed (default: the scene "
                    "default)")
    ap.add_argument("--floor", default="coulomb:0.5", help="sticky or coulomb:MU")
    ap.add_argument("--rheology", default="default",
                    help="cone or mu_i (default: the scene default, cone)")
    ap.add_argument("--phi2", type=float, help="mu_i: friction_angle_2 [deg] (default: the "
                    "scene default, phi + 11.86)")
    ap.add_argument("--I0", type=float, help="mu_i: I0 (default: the scene default, 0.279)")
    ap.add_argument("--grain-d", type=float, help="mu_i: grain_diameter [m] (default: the "
                    "scene default, 5e-4)")
    ap.add_argument("--grain-rho", type=float, help="mu_i: grain_density [kg/m^3] (default: "
                    "the scene default, 2450)")
    ap.add_argument("--room", type=float, default=1.6, help="the domain reaches this many "
                    "times the law's runout past the column, plus L0 / 2 (a run marked far "
                    "wall needs more)")
    ap.add_argument("--backend", default="cpu", help="firn run's backend: cpu (default) or "
                    "cuda (the GPU path's constitutive update, e.g. on the emulated runtime)")
    ap.add_argument("--jobs", type=int, default=1, help="cases run at once")
    ap.add_argument("--threads", type=int, default=2, help="OpenMP threads per case")
    ap.add_argument("--scene", help="instead of the cases: run this axisymmetric scene (a "
                    "cylinder of sand, axis y, on the floor) and measure its deposit")
    ap.add_argument("--scene-dx", type=float, help="--scene at this grid spacing [m] instead "
                    "of the scene's")
    ap.add_argument("--scene-phi", type=float, help="--scene with this friction angle [deg] "
                    "instead of its material's")
    opt = ap.parse_args()
    if not os.access(opt.firn, os.X_OK):
        sys.exit("validate_sand: %s: no firn binary (make all, or --firn PATH)" % opt.firn)
    if opt.scene:
        review_scene(opt)
        return
    plan = []
    for res in [int(r) for r in opt.res.split(",")]:
        for case in opt.cases.split(","):
            if case not in ("planar", "axisym"):
                sys.exit("validate_sand: --cases: %r is not planar or axisym" % case)
            for a in ([0.5, 1, 2, 4, 8] if case == "planar" else [0.5, 1, 3, 6]):
                if opt.aspect is None or a in [float(x) for x in opt.aspect.split(",")]:
                    plan.append((case, a, res))
    if opt.rheology not in ("default", "cone", "mu_i"):
        sys.exit("validate_sand: --rheology: %r is not cone or mu_i" % opt.rheology)
    mu_i_opts = (opt.phi2, opt.I0, opt.grain_d, opt.grain_rho)
    if opt.rheology != "mu_i" and any(v is not None for v in mu_i_opts):
        sys.exit("validate_sand: --phi2, --I0, --grain-d and --grain-rho need --rheology mu_i")
    if opt.phi not in ("repose", "avalanche"):
        try:
            float(opt.phi)
        except ValueError:
            sys.exit("validate_sand: --phi: %r is not a number, repose or avalanche" % opt.phi)
    if opt.phi in ("repose", "avalanche"):
        phis = sorted(set((case_phi(c, opt.phi), EXPERIMENT_PHI[c][2])
                          for c in opt.cases.split(",")))
        tag = "phi %s (%s)" % (opt.phi, "; ".join("%g: %s" % p for p in phis))
    else:
        tag = "phi %g" % float(opt.phi)
    tag += ", cone %s, floor %s" % (opt.cone_fit, opt.floor)
    if opt.rheology != "default":
        tag += ", rheology %s" % opt.rheology
        if opt.rheology == "mu_i":
            tag += " (phi2 %s, I0 %s, d %s, rho_s %s)" % tuple(
                "default" if v is None else "%g" % v for v in mu_i_opts)
    with ThreadPoolExecutor(max_workers=opt.jobs) as ex:
        results = list(ex.map(lambda c: run_case(opt.firn, c[0], c[1], c[2], opt, opt.out), plan))
    print("\n### Column collapses (%s)\n" % tag)
    print("| case | a | cells | particles | (L-L0)/L0 p99 | max | Lube | ratio | H/L0 | Lube "
          "| flank [deg] | rms speed [m/s] | wall [s] |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for case, a, res, m in results:
        L0 = m["L0"]
        run_ref, h_ref = (lube_planar if case == "planar" else lube_axisym)(a)
        run = (m["p99"] - L0) / L0
        warn = " (far wall)" if m["edge"] < 2.0 * m["dx"] else ""
        print("| %s | %g | %d | %d | %.2f%s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.3f | "
              "%.0f |" % (case, a, res, m["n"], run, warn, (m["max"] - L0) / L0, run_ref,
                          run / run_ref, m["h"] / L0, h_ref, m["flank"], m["rms"], m["wall"]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
