"""Adds tilt angle and a volume-based submerged fraction to results/floating_box.csv -> floating_box_post.csv.
Submerged fraction = fraction of the box volume (20^3 body-frame sample points, box pose from pos + quat (w,x,y,z))
below the free-surface plane z = surface_z_max_far (particle centres) and z = surface_z_max_far + p/2."""
import csv
import os

import numpy as np

R = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
P, L, N = 0.01, 0.1, 20
g = (np.arange(N) + 0.5) / N * L - L / 2
body = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)


def rot(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


rows = list(csv.DictReader(open(os.path.join(R, "floating_box.csv"))))
out = []
for r in rows:
    pos = np.array([float(r[k]) for k in ("box_x", "box_y", "box_z")])
    q = np.array([float(r[k]) for k in ("box_qw", "box_qx", "box_qy", "box_qz")])
    Rm = rot(q)
    pts = body @ Rm.T + pos
    s = float(r["surface_z_max_far"])
    tilt = np.degrees(np.arccos(np.clip(Rm[2, 2], -1, 1)))
    out.append({"step": r["step"], "t": r["t"], "box_z": r["box_z"], "tilt_deg": f"{tilt:.4g}",
                "surface_z": r["surface_z_max_far"],
                "submerged_vol_frac_surf_centres": f"{(pts[:, 2] < s).mean():.4g}",
                "submerged_vol_frac_surf_plus_half_p": f"{(pts[:, 2] < s + P / 2).mean():.4g}",
                "box_lowest_z": f"{pts[:, 2].min() - 0:.5g}"})
with open(os.path.join(R, "floating_box_post.csv"), "w", newline="") as fh:
    w = csv.DictWriter(fh, fieldnames=list(out[0].keys()))
    w.writeheader()
    w.writerows(out)
for o in out[::50] + [out[-1]]:
    print(o)
