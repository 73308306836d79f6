"""world.compare_backends(): `firn compare`'s check (firn_compare_backends)."""

from __future__ import annotations

import ctypes
import json

import pytest

import firn
from firn import _lib
from firn._compare import from_report
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


def _entry(name: bytes, ok: int, stage: int = 2, statistic: int = 1):
    e = _lib.CompareEntry()
    e.name, e.stage, e.statistic, e.ok = name, stage, statistic, ok
    e.cpu, e.gpu, e.max_abs, e.scale, e.rel, e.tolerance, e.worst = 1.0, 2.0, 1.0, 1.0, 1.0, 0.01, -1
    return e


def test_compare_report_names_that_collide_or_are_cut():
    """A report as firn_compare_backends fills it, read without a GPU: a
    rigid body and a tool of the same name give two "pos x" entries of one
    stage, and failures() lists the failing one whichever the map keeps; a
    name cut inside a UTF-8 sequence (the C side cuts a body's name to fit
    its entry) is read, not raised on."""
    arr = (_lib.CompareEntry * 3)(
        _entry(b"arm pos x", 0),
        _entry(b"arm pos x", 1),
        _entry("k\u00fapa".encode()[:2] + b" pos y", 1),
    )
    r = _lib.CompareReport()
    r.ok, r.frames, r.n_entries = 0, 1, 3
    r.entries = ctypes.cast(arr, ctypes.POINTER(_lib.CompareEntry))
    c = from_report(r)
    assert not c.ok
    assert [d.name for d in c.failures()] == ["arm pos x"] and not c.failures()[0].ok
    assert len(c.entries) == 3 and c.entries[0] is c.failures()[0]
    assert c.entries[2].name.endswith(" pos y") and c.entries[2].name.startswith("k")
