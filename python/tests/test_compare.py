"""world.compare_backends(): `firn compare`'s check (firn_compare_backends)."""

from __future__ import annotations

import json

import pytest

import firn
from conftest import run_cli, sand_block


def test_compare_backends(tmp_path):
    """With a GPU the CPU and CUDA paths agree within `firn compare`'s
    tolerances, field by field; without one (a build without CUDA, or no
    device) the call raises DeviceError with the message `firn compare`
    prints, and its exit code."""
    d = sand_block()
    scene_file = tmp_path / "scene.json"
    scene_file.write_text(json.dumps(d))
    with firn.World(firn.Scene.from_json(scene_file), backend="cpu") as w:
        if firn.cuda_available():
            c = w.compare_backends(frames=2)
            assert c.ok and not c.failures(), c.failures()
            assert {"x", "v", "C", "F", "Jp", "damage", "grid mass", "grid vel"} <= set(c.substep)
            assert {"x", "v", "C", "F"} <= set(c.perturbed)
            assert {"kinetic energy", "centre of mass y", "momentum y"} <= set(c.frames)
            for diff in [*c.substep.values(), *c.perturbed.values(), *c.frames.values()]:
                assert diff.rel <= diff.tolerance and diff.max_abs <= diff.rel * diff.scale * (1 + 1e-12)
            ke = c.frames["kinetic energy"]
            assert ke.statistic and ke.max_abs == pytest.approx(abs(ke.gpu - ke.cpu))
            assert c.frames_compared == 2 and c.time == pytest.approx(2 * d["time"]["frame_dt"])
            assert c.particles == w.mpm.n and w.frame == 0  # the world itself is not stepped
        else:
            with pytest.raises(firn.DeviceError) as e:
                w.compare_backends(frames=1)
            assert e.value.code == 6 and e.value.message
            r = run_cli("compare", str(scene_file), "--frames", "1")
            assert r.returncode == e.value.code and e.value.message in r.stderr


def test_compare_backends_argument_errors():
    w = firn.World(firn.Scene.from_dict(sand_block()), backend="cpu")
    with pytest.raises(firn.UsageError, match="negative") as e:
        w.compare_backends(frames=-1)
    assert e.value.code == 2
    with pytest.raises(TypeError, match="frames"):
        w.compare_backends(frames="2")
    w.close()
    with pytest.raises(firn.ClosedError):
        w.compare_backends()
