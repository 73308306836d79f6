"""Errors from C become exceptions with the C message and code; bad input
from Python is refused before it reaches C."""

from __future__ import annotations

import math

import numpy as np
import pytest

import firn
from conftest import sand_block


def test_scene_error_from_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"domain": {"lower": [0, 0, 0], "upper": [1, 1, 1], "dx": 0.1},\n "materials": {oops}}')
    with pytest.raises(firn.SceneError) as e:
        firn.Scene.from_json(bad)
    assert e.value.code == 3 and e.value.path == str(bad)
    assert str(e.value).startswith(f"{bad}:2:") and "malformed JSON" in str(e.value)


def test_scene_error_from_dict_names_the_key():
    d = sand_block()
    d["materials"]["sand"]["friction_angle"] = 95
    with pytest.raises(firn.SceneError, match="friction_angle") as e:
        firn.Scene.from_dict(d, name="my_scene")
    assert e.value.path == "my_scene" and str(e.value).startswith("my_scene")
    with pytest.raises(firn.SceneError, match="not representable"):
        firn.Scene.from_dict({"gravity": [0, math.nan, 0]})


def test_missing_file_is_an_io_error(tmp_path):
    with pytest.raises(firn.FirnIOError) as e:
        firn.Scene.from_json(tmp_path / "none.json")
    assert e.value.code == 4 and "none.json" in str(e.value)
    assert isinstance(e.value, OSError) and isinstance(e.value, firn.FirnError)


def test_usage_errors_change_nothing():
    scene = firn.Scene.from_dict(sand_block(tools=[
        {"name": "plate", "shape": {"type": "box", "center": [0.2, 0.25, 0.2], "size": [0.05, 0.01, 0.05]},
         "velocity": [0, -0.1, 0]}]))
    with firn.World(scene, backend="cpu") as w:
        plate = w.tools["plate"]
        before = plate.state
        with pytest.raises(firn.UsageError, match=r"plate.*v\[1\] = nan is not finite") as e:
            plate.set_velocity((0, math.nan, 0))
        assert e.value.code == 2
        with pytest.raises(firn.UsageError, match=r"w\[2\]"):
            plate.set_velocity((0, 0, 0), (0, 0, math.inf))
        with pytest.raises(firn.UsageError, match="3 components"):
            plate.set_velocity((0, 1))
        assert plate.state == before
        with pytest.raises(KeyError):
            w.tools["spoon"]
        with pytest.raises(IndexError):
            w.tools[3]
        with pytest.raises(firn.UsageError, match="positive finite"):
            w.substep(1, dt=-1.0)
        with pytest.raises(ValueError):
            w.step(-1)


def test_backend_errors():
    scene = firn.Scene.from_dict(sand_block())
    with pytest.raises(ValueError, match="backend"):
        firn.World(scene, backend="gpu")
    with pytest.raises(TypeError):
        firn.World({"domain": {}})
    if not firn.cuda_available():
        with pytest.raises(firn.DeviceError) as e:
            firn.World(scene, backend="cuda")
        assert e.value.code == 6 and e.value.message


def test_run_options():
    """p2g, grid and graphs take `firn run`'s names; others are a ValueError
    naming the option. They choose CUDA variants only: the CPU path's state
    is the same under any of them."""
    scene = firn.Scene.from_dict(sand_block())
    for what in ("p2g", "grid", "graphs"):
        with pytest.raises(ValueError, match=what):
            firn.World(scene, backend="cpu", **{what: "fast"})
    with firn.World(scene, backend="cpu", p2g="ordered", grid="sparse", graphs="off") as a:
        a.step(1)
        xa = a.mpm.x.copy()
    with firn.World(scene, backend="cpu") as b:
        b.step(1)
        np.testing.assert_array_equal(b.mpm.x, xa)


def test_checkpoint_errors(tmp_path):
    scene = firn.Scene.from_dict(sand_block())
    other = firn.Scene.from_dict(sand_block(gravity=[0, -5, 0]))
    with firn.World(scene, backend="cpu") as w:
        w.step(2)
        w.save(tmp_path / "a.firn")
        x = w.mpm.x.copy()
    with firn.World.load(scene, tmp_path / "a.firn", backend="cpu") as w2:
        assert w2.frame == 2
        np.testing.assert_array_equal(w2.mpm.x, x)
    with pytest.raises(firn.CheckpointError, match="a.firn") as e:
        firn.World.load(other, tmp_path / "a.firn", backend="cpu")
    assert e.value.code == 9
    (tmp_path / "b.firn").write_bytes((tmp_path / "a.firn").read_bytes()[:100])
    with pytest.raises(firn.CheckpointError):
        firn.World.load(scene, tmp_path / "b.firn", backend="cpu")


def test_numeric_error_is_raised():
    """A solid whose deformation gradient has blown up to infinity, or a NaN
    written into the velocities, stops the run: NumericError with the C
    message, not a crash. (A substep far past the CFL limit need not do it:
    a blow-up that ends at rest in a corner with a huge but finite F is not
    seen by the non-finite check, a known gap.)"""
    d = sand_block()
    d["materials"] = {"steel": {"model": "elastic", "E": 1e9, "nu": 0.3, "density": 1000}}
    d["bodies"][0]["material"] = "steel"
    with firn.World(firn.Scene.from_dict(d), backend="cpu") as w:
        w.mpm.F[3] = np.inf
        with pytest.raises(firn.NumericError, match="material 'steel' has a non-finite") as e:
            w.substep(2, dt=1e-5)
        assert e.value.code == 5
    with firn.World(firn.Scene.from_dict(sand_block()), backend="cpu") as w:
        w.mpm.v[5] = np.nan
        with pytest.raises(firn.NumericError, match="non-finite position or velocity"):
            w.step()
