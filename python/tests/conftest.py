"""Shared helpers of the firn Python tests: paths, small scenes, a PLY reader."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def firn_bin() -> str:
    """The CLI to compare with: FIRN_BIN, else the repository's build/firn."""
    path = os.environ.get("FIRN_BIN") or str(REPO / "build" / "firn")
    if not Path(path).is_file():
        pytest.fail(f"the firn CLI {path} is missing: build it (make) or set FIRN_BIN")
    return path


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    return subprocess.run([firn_bin(), *args], capture_output=True, text=True, env=env, timeout=300)


def sand_block(**extra) -> dict:
    """A small block of sand falling onto a rough floor: 1440 particles, a few ms a frame."""
    d = {
        "domain": {
            "lower": [0, 0, 0],
            "upper": [0.4, 0.3, 0.4],
            "dx": 0.02,
            "boundary": {"y_lower": {"type": "separate", "friction": 0.5}},
        },
        "gravity": [0, -9.81, 0],
        "time": {"frame_dt": 0.01, "frames": 6},
        "materials": {
            "sand": {"model": "sand", "E": 3.5e5, "nu": 0.3, "density": 1600, "friction_angle": 35}
        },
        "bodies": [
            {"material": "sand", "shape": {"type": "box", "center": [0.2, 0.1, 0.2], "size": [0.12, 0.1, 0.12]}}
        ],
        "output": {"dir": "out/py_sand_block"},
    }
    d.update(extra)
    return d


_PLY_TYPES = {"float": "<f4", "uchar": "u1", "int": "<i4", "double": "<f8", "uint": "<u4"}


def read_ply_vertices(path: Path) -> np.ndarray:
    """The vertex element of a binary little-endian PLY as a structured array."""
    data = Path(path).read_bytes()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    fields, n, in_vertex = [], 0, False
    for line in data[:end].decode().splitlines():
        words = line.split()
        if words[:1] == ["format"]:
            assert words[1] == "binary_little_endian", line
        elif words[:2] == ["element", "vertex"]:
            n, in_vertex = int(words[2]), True
        elif words[:1] == ["element"]:
            in_vertex = False
        elif words[:1] == ["property"] and in_vertex:
            fields.append((words[2], _PLY_TYPES[words[1]]))
    return np.frombuffer(data, dtype=np.dtype(fields), count=n, offset=end)
