"""Control from Python: tools and kinematic bodies commanded step by step,
and the controller example (examples/python/tool_press.py)."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import firn
from conftest import REPO, sand_block


def kinematic_scene():
    return firn.Scene.from_dict(sand_block(rigids=[
        {"name": "arm", "motion": "kinematic",
         "shape": {"type": "box", "center": [0.3, 0.22, 0.3], "size": [0.04, 0.04, 0.04]}},
        {"name": "crate", "motion": "dynamic",
         "shape": {"type": "box", "center": [0.08, 0.2, 0.08], "size": [0.04, 0.04, 0.04]}},
    ]))


def test_kinematic_rigid_follows_its_command():
    """A commanded kinematic body moves along v t and turns by omega t (closed form)."""
    with firn.World(kinematic_scene(), backend="cpu") as w:
        arm = w.rigids["arm"]
        assert arm.motion == "kinematic" and w.rigids[1].motion == "dynamic"
        x0 = arm.position.copy()
        v, om = np.float32([0.1, -0.05, 0.02]), np.float32([0, 0, 1.5])
        arm.set_velocity(v, om)
        w.step(3)
        t = w.time
        np.testing.assert_allclose(arm.position, x0 + v * t, atol=2e-6)
        half = 0.5 * om[2] * t
        np.testing.assert_allclose(arm.quaternion, [math.cos(half), 0, 0, math.sin(half)], atol=2e-6)
        np.testing.assert_array_equal(arm.velocity, v)
        np.testing.assert_array_equal(arm.angular_velocity, om)
        # The views read the state the frame statistics report.
        np.testing.assert_array_equal(arm.position, np.float32(w.stats["rigids"][0]["position"]))
        with pytest.raises(ValueError):
            arm.position[0] = 1.0  # read-only: bodies are commanded, not written
        with pytest.raises(firn.UsageError, match="dynamic"):
            w.rigids["crate"].set_velocity((0, 1, 0))
        before = arm.position.copy()
        with pytest.raises(firn.UsageError, match="not finite"):
            arm.set_velocity((math.nan, 0, 0))
        w.step()
        np.testing.assert_allclose(arm.position, before + v * np.float32(w.stats["dt"]) * w.stats["frame_substeps"], atol=2e-6)


def test_tool_follows_its_command():
    """A commanded tool moves along v t whatever the sand does (tools are kinematic),
    and its state reports the command and a finite reaction."""
    d = sand_block(tools=[
        {"name": "plate", "shape": {"type": "box", "center": [0.2, 0.15, 0.2], "size": [0.06, 0.008, 0.06]},
         "softness": 0.002}])
    d["bodies"][0]["shape"]["center"] = [0.2, 0.09, 0.2]
    with firn.World(firn.Scene.from_dict(d), backend="cpu") as w:
        plate = w.tools[0]
        assert plate.name == "plate" and w.tools["plate"] is plate
        w.step(5)
        np.testing.assert_allclose(plate.position, [0.2, 0.15, 0.2], atol=1e-7)
        plate.set_velocity((0.05, -0.2, 0), (0, 0.5, 0))
        w.step(10)
        np.testing.assert_allclose(plate.position, [0.2 + 0.05 * 0.1, 0.15 - 0.2 * 0.1, 0.2], atol=1e-5)
        half = 0.5 * 0.5 * 0.1
        np.testing.assert_allclose(plate.quaternion, [math.cos(half), 0, math.sin(half), 0], atol=1e-5)
        np.testing.assert_allclose(plate.velocity, [0.05, -0.2, 0])
        st = plate.state
        assert all(math.isfinite(f) for f in st["force"] + st["force_mean"] + st["impulse"])
        assert st["force_mean"] == w.stats["tools"][0]["force_mean"]


def test_tool_press_example_reaches_its_force_limit():
    """The controller example presses until the sand pushes back its limit, holds,
    then lifts (at dx 7.5 mm, a third of the C example's particles, for time;
    `make python-example-check` compares the full-size run with build/tool_press)."""
    env = dict(os.environ, OMP_WAIT_POLICY="passive", PYTHONPATH=str(REPO / "python"))
    py = subprocess.run([sys.executable, str(REPO / "examples" / "python" / "tool_press.py"),
                         "--backend", "cpu", "--dx", "0.0075"],
                        capture_output=True, text=True, env=env, timeout=600)
    assert py.returncode == 0, py.stderr
    lines = py.stdout.splitlines()[1:]
    phases = [l.split()[1] for l in lines]
    assert phases[0] == "press" and "hold" in phases and phases[-1] == "lift"
    # It holds from the first frame whose force reaches the limit, 20 frames (0.1 s).
    first_hold = phases.index("hold")
    assert float(lines[first_hold - 1].split()[3]) >= 2.0
    assert all(float(l.split()[3]) < 2.0 for l in lines[: first_hold - 1])
    assert phases.count("hold") == 20
    peak = float(py.stderr.split("peak force")[1].split()[0])
    assert peak >= 2.0


def test_write_frames_example(tmp_path):
    """The user's-own-writer example writes every frame, the positions of the views."""
    import json

    from conftest import sand_block

    scene_file = tmp_path / "scene.json"
    scene_file.write_text(json.dumps(sand_block()))
    env = dict(os.environ, OMP_WAIT_POLICY="passive", PYTHONPATH=str(REPO / "python"))
    r = subprocess.run([sys.executable, str(REPO / "examples" / "python" / "write_frames.py"), str(scene_file),
                        str(tmp_path / "xyz"), "--frames", "3", "--backend", "cpu"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    files = sorted((tmp_path / "xyz").glob("frame_*.xyz"))
    assert [f.name for f in files] == [f"frame_{k:05d}.xyz" for k in range(4)]
    with firn.World(firn.Scene.from_json(scene_file), backend="cpu") as w:
        w.step(3)
        table = np.loadtxt(files[-1], skiprows=2)
        assert table.shape == (1440, 5)
        np.testing.assert_allclose(table[:, 1:4], w.mpm.x, atol=5e-7)
        np.testing.assert_allclose(table[:, 4], np.linalg.norm(w.mpm.v, axis=1), atol=5e-7)


def test_runout_sweep_example(tmp_path):
    """The sweep example: a sand column runs out less at a higher friction angle
    (25 against 45 degrees, a coarse grid), and the plot is written."""
    import matplotlib  # noqa: F401  (python3-matplotlib, a test package: fails where missing)

    env = dict(os.environ, OMP_WAIT_POLICY="passive", PYTHONPATH=str(REPO / "python"))
    png = tmp_path / "runout.png"
    r = subprocess.run([sys.executable, str(REPO / "examples" / "python" / "runout_sweep.py"),
                        "--angles", "25,45", "--frames", "30", "--plot", str(png), "--backend", "cpu"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [l.split() for l in r.stdout.splitlines()[1:3]]
    (a1, r1), (a2, r2) = [(float(a), float(b)) for a, b in rows]
    assert (a1, a2) == (25.0, 45.0) and r1 > r2 > 0, r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
