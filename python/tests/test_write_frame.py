"""world.write_frame(dir): the frames `firn run` writes, by the CLI's own
frame writer (firn_world_write_frame), and its refusals, which write nothing."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import pytest

import firn
from conftest import run_cli, sand_block

PLATE = {"name": "plate", "shape": {"type": "box", "center": [0.2, 0.22, 0.2], "size": [0.08, 0.01, 0.08]},
         "velocity": [0, -0.5, 0], "softness": 0.002}
CRATE = {"name": "crate", "motion": "dynamic", "density": 500,
         "shape": {"type": "box", "center": [0.08, 0.2, 0.08], "size": [0.04, 0.04, 0.04]}}


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if not p.name.startswith(".")}


def _stats_lines(data: bytes) -> list[str]:
    """stats.jsonl's lines up to their wall-clock fields (wall_seconds and
    throughput, the last two: they differ from run to run)."""
    lines = data.decode().splitlines()
    assert all(',"wall_seconds":' in line for line in lines)
    return [line[: line.index(',"wall_seconds":')] for line in lines]


@pytest.mark.parametrize("extra", [{}, {"tools": [PLATE], "rigids": [CRATE]}], ids=["sand", "sand+tool+rigid"])
def test_frames_written_are_firn_runs(tmp_path, extra):
    """Frames 0..4 written from Python after each step() are `firn run`'s
    files byte for byte (PLY, PNG, the ParaView series), and its stats.jsonl
    lines up to the wall-clock fields."""
    d = sand_block(**extra)
    scene_file = tmp_path / "scene.json"
    scene_file.write_text(json.dumps(d))
    frames = 4
    cli = tmp_path / "cli"
    r = run_cli("run", str(scene_file), "--backend", "cpu", "--frames", str(frames), "--out", str(cli))
    assert r.returncode == 0, r.stderr
    ours = tmp_path / "py"
    ours.mkdir()
    with firn.World(firn.Scene.from_json(scene_file), backend="cpu") as w:
        w.write_frame(ours)
        for _ in range(frames):
            w.step()
            w.write_frame(ours)
    a, b = _files(cli), _files(ours)
    assert sorted(b) == sorted(a)
    assert "frame_00004.png" in a and "frame.ply.series" in a
    if extra:
        assert "tools_00004.ply" in a and "rigids_00004.ply" in a
    for name in a:
        if name == "stats.jsonl":
            assert _stats_lines(b[name]) == _stats_lines(a[name])
            assert len(_stats_lines(a[name])) == frames + 1
        else:
            assert b[name] == a[name], f"{name} differs from firn run's"


def test_write_frame_after_substeps_has_the_current_state(tmp_path):
    """After substep() the frame's statistics are those of the current state
    (firn_world_stats): the world's clocks, no frame substeps."""
    with firn.World(firn.Scene.from_dict(sand_block()), backend="cpu") as w:
        w.step()
        w.substep(3)
        w.write_frame(tmp_path)
        line = json.loads((tmp_path / "stats.jsonl").read_text())
        assert line["frame"] == w.frame == 1 and line["substeps"] == w.substeps
        assert line["frame_substeps"] == 0 and line["time"] == pytest.approx(w.time, rel=1e-12)
        assert line["kinetic_energy"] == pytest.approx(w.current_stats()["kinetic_energy"], rel=1e-12)
        assert (tmp_path / "frame_00001.ply").is_file()


def test_write_frame_refusals_write_nothing(tmp_path):
    """A missing folder or a file (FirnIOError), a folder a firn run holds
    (FirnIOError), a stats.jsonl with this frame or a later one (UsageError),
    a closed world (ClosedError): each with its message, nothing written."""
    w = firn.World(firn.Scene.from_dict(sand_block()), backend="cpu")
    with pytest.raises(firn.FirnIOError, match="No such file") as e:
        w.write_frame(tmp_path / "none")
    assert e.value.code == 4 and "none" in str(e.value) and isinstance(e.value, OSError)
    (tmp_path / "file").write_text("x")
    with pytest.raises(firn.FirnIOError, match="not a folder"):
        w.write_frame(tmp_path / "file")
    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".firn.lock", "w") as lock:  # as a running `firn run` holds it
        fcntl.flock(lock, fcntl.LOCK_EX)
        with pytest.raises(firn.FirnIOError, match="in use by a firn run"):
            w.write_frame(out)
    assert _files(out) == {}
    w.step(2)
    w.write_frame(out)
    before = _files(out)
    assert "frame_00002.ply" in before
    with firn.World(firn.Scene.from_dict(sand_block()), backend="cpu") as w0:  # frame 0 < 2
        with pytest.raises(firn.UsageError, match="already has frame 2") as e:
            w0.write_frame(out)
        assert e.value.code == 2
    with pytest.raises(firn.UsageError, match="already has frame 2"):
        w.write_frame(out)  # the same frame twice
    assert _files(out) == before
    w.close()
    with pytest.raises(firn.ClosedError):
        w.write_frame(out)
    assert _files(out) == before
