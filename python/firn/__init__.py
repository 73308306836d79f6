"""firn from Python: scenes, worlds stepped from Python, zero-copy NumPy views.

    import firn
    scene = firn.Scene.from_json("scenes/sand_column.json")
    with firn.World(scene, backend="cpu") as world:
        world.step(10)
        print(world.time, world.stats["kinetic_energy"], world.mpm.x.mean(axis=0))

A thin ctypes layer over libfirn.so (firn.h); the physics is the C
library's. See docs/PYTHON.md.
"""

from ._errors import (
    CheckpointError,
    ClosedError,
    CompareError,
    DeviceError,
    FirnError,
    FirnIOError,
    NumericError,
    OutOfMemoryError,
    SceneError,
    StaleViewError,
    UsageError,
)
from ._compare import BackendComparison, Difference
from ._lib import lib as _cdll
from ._scene import Scene
from ._views import FirnArray
from ._world import FEM, MPM, PBD, SPH, Rigid, Tool, World

__version__ = "0.1.0"
library_path = _cdll.path


def cuda_available() -> bool:
    """Whether libfirn.so was built with CUDA and sees a usable device."""
    return bool(_cdll.firn_cuda_available()) and _cdll.firn_cuda_device_count() > 0


__all__ = [
    "Scene",
    "World",
    "FirnArray",
    "BackendComparison",
    "Difference",
    "MPM",
    "SPH",
    "PBD",
    "FEM",
    "Rigid",
    "Tool",
    "FirnError",
    "UsageError",
    "SceneError",
    "FirnIOError",
    "NumericError",
    "DeviceError",
    "OutOfMemoryError",
    "CompareError",
    "CheckpointError",
    "ClosedError",
    "StaleViewError",
    "cuda_available",
    "library_path",
]
