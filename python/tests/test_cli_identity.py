"""Stepping from Python gives the frames `firn run` writes, bit for bit."""

from __future__ import annotations

import json

import numpy as np
import pytest

import firn
from conftest import read_ply_vertices, run_cli, sand_block


@pytest.mark.parametrize("extra", [{}, {"tools": [
    {"name": "plate", "shape": {"type": "box", "center": [0.2, 0.22, 0.2], "size": [0.08, 0.01, 0.08]},
     "velocity": [0, -0.5, 0], "softness": 0.002}]}], ids=["sand", "sand+tool"])
def test_frames_identical_to_firn_run(tmp_path, extra):
    d = sand_block(**extra)
    scene_file = tmp_path / "scene.json"
    scene_file.write_text(json.dumps(d))
    frames = 4
    out = tmp_path / "cli"
    r = run_cli("run", str(scene_file), "--backend", "cpu", "--frames", str(frames), "--out", str(out))
    assert r.returncode == 0, r.stderr
    cli_stats = [json.loads(line) for line in (out / "stats.jsonl").read_text().splitlines()]

    with firn.World(firn.Scene.from_json(scene_file), backend="cpu") as w:
        for f in range(frames + 1):
            if f:
                w.step()
                assert w.frame == f and w.stats["frame"] == f
            ply = read_ply_vertices(out / f"frame_{f:05d}.ply")
            for name, got in (("x", w.mpm.x), ("v", w.mpm.v)):
                for a, axis in enumerate("xyz"):
                    col = ply[axis if name == "x" else "v" + axis]
                    assert col.tobytes() == np.ascontiguousarray(got[:, a]).tobytes(), (
                        f"frame {f}: {name}{axis} differs from firn run's")
            assert ply["material"].tobytes() == w.mpm.material.tobytes()
            assert ply["jp"].tobytes() == w.mpm.Jp.tobytes()
            # The CLI's statistics line of this frame: the same clocks and sums.
            line = next(s for s in cli_stats if s["frame"] == f)
            if f:
                assert line["substeps"] == w.substeps and line["time"] == pytest.approx(w.time, rel=1e-12)
                assert line["kinetic_energy"] == pytest.approx(w.stats["kinetic_energy"], rel=1e-9)
            if "tools" in extra and f:
                t = w.tools["plate"].state
                got = line["tools"][0]
                assert got["name"] == "plate"
                assert got["position"][1] == pytest.approx(t["position"][1], rel=1e-6)
                assert got["force_mean"][1] == pytest.approx(t["force_mean"][1], rel=1e-6, abs=1e-9)
