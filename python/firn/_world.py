"""Worlds: stepping, state views, tools and kinematic bodies over firn.h."""

from __future__ import annotations

import ctypes
import math
import os
from ctypes import byref
from typing import Any, Iterator, Sequence

import numpy as np

from . import _lib
from ._compare import BackendComparison, from_report
from ._errors import ClosedError, UsageError, error_from
from ._scene import Scene
from ._views import FirnArray, Life, soa, soa_matrix, wrap

_lib_ = _lib.lib
_BACKENDS = {"auto": _lib.BACKEND_AUTO, "cpu": _lib.BACKEND_CPU, "cuda": _lib.BACKEND_CUDA}
_MOTIONS = {0: "static", 1: "kinematic", 2: "dynamic"}


class _Handle:
    """Owns one firn_world *; destroys it when the last reference goes."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __del__(self):
        ptr, self.ptr = self.ptr, None
        if ptr and _lib_ is not None:
            _lib_.firn_world_destroy(ptr)


def _to_py(value: Any) -> Any:
    if isinstance(value, ctypes.Structure):
        return {name: _to_py(getattr(value, name)) for name, _ in value._fields_}
    if isinstance(value, ctypes.Array):
        if isinstance(value, ctypes.Array) and value._type_ is ctypes.c_char:
            return value.value.decode()
        return [_to_py(v) for v in value]
    return value


def stats_dict(s: _lib.FrameStats) -> dict:
    """A firn_frame_stats as a dict (rigids and tools cut to the world's)."""
    d = _to_py(s)
    d["rigids"] = d["rigids"][: s.n_rigids]
    d["tools"] = d["tools"][: s.n_tools]
    return d


def _vec3(v: Sequence[float], what: str) -> ctypes.Array:
    a = np.asarray(v, dtype=np.float64).reshape(-1)
    if a.shape != (3,):
        raise UsageError(f"{what} needs 3 components, got {a.size}", 2)
    return _lib.f3(*(float(x) for x in a))


class World:
    """A simulated world of a Scene (firn_world), on backend "auto", "cpu" or "cuda".

    Stepping: `step(frames)` advances whole frames as `firn run` does,
    `substep(n, dt)` single substeps. Clocks: `frame`, `time`, `substeps`;
    `stats` is the last frame's statistics as a dict (stats.jsonl's
    fields). State: `mpm`, `sph`, `pbd`, `fem` (zero-copy NumPy views),
    `rigids[i]` and `tools[i]` (or by name). `close()` (or a `with` block)
    frees it; views made before a step or a close raise when used.
    """

    def __init__(self, scene: Scene, backend: str = "auto", *, _ptr: int | None = None):
        if not isinstance(scene, Scene):
            raise TypeError("firn.World needs a firn.Scene (Scene.from_json or Scene.from_dict)")
        if backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {sorted(_BACKENDS)}, not {backend!r}")
        self.scene = scene
        if _ptr is None:
            err = _lib.Error()
            _ptr = _lib_.firn_world_create(byref(scene.raw), _BACKENDS[backend], byref(err))
            if not _ptr:
                raise error_from(err, path=scene.path)
        self._handle: _Handle | None = _Handle(_ptr)
        self._life = Life(self._handle)
        self._stats = _lib.FrameStats()
        self._stepped = False
        self._stats_dict: dict | None = None
        self._err = _lib.Error()
        self.mpm = MPM(self)
        self.sph = SPH(self)
        self.pbd = PBD(self)
        self.fem = FEM(self)
        self.rigids = _Bodies(self, Rigid, _lib_.firn_world_rigid_count(_ptr), scene.rigid_names)
        self.tools = _Bodies(self, Tool, _lib_.firn_world_tool_count(_ptr), scene.tool_names)

    @classmethod
    def load(cls, scene: Scene, path: str | os.PathLike, backend: str = "auto") -> "World":
        """A world of `scene` at the state a checkpoint (World.save, `firn run
        --checkpoint-every`) holds; stepping it continues the saved run."""
        if backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {sorted(_BACKENDS)}, not {backend!r}")
        err = _lib.Error()
        ptr = _lib_.firn_world_load(
            byref(scene.raw), _BACKENDS[backend], os.fsencode(os.fspath(path)), byref(err)
        )
        if not ptr:
            raise error_from(err, path=os.fspath(path))
        return cls(scene, backend, _ptr=ptr)

    # ---- lifetime ----------------------------------------------------------
    @property
    def _ptr(self) -> int:
        if self._handle is None:
            raise ClosedError("firn.World is closed")
        return self._handle.ptr

    @property
    def closed(self) -> bool:
        return self._handle is None

    def close(self) -> None:
        """Frees the world. Views of it raise ClosedError from now on (the C
        memory itself goes when the last of them does)."""
        if self._handle is not None:
            self._life.end("closed")
            self._handle = None

    def __enter__(self) -> "World":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _new_generation(self, why: str) -> None:
        self._life.end(why)
        self._life = Life(self._handle)

    def _check(self, rc: int) -> None:
        if rc:
            raise error_from(self._err, path=self.scene.path)

    # ---- stepping ----------------------------------------------------------
    def step(self, frames: int = 1) -> None:
        """Advances `frames` frames (each ceil(frame_dt / dt) substeps), as `firn run`.
        The last frame's statistics are then `world.stats`."""
        ptr = self._ptr
        if frames < 0:
            raise ValueError("frames must be >= 0")
        self._new_generation("step")
        fn, st, err = _lib_.firn_world_step_frame, byref(self._stats), byref(self._err)
        for _ in range(frames):
            if fn(ptr, st, err):
                raise error_from(self._err, path=self.scene.path)
        if frames:
            self._stepped, self._stats_dict = True, None

    def substep(self, n: int = 1, dt: float | None = None) -> None:
        """Advances n substeps of dt seconds (default: the next frame's substep,
        firn_world_next_frame_step). Substeps do not count frames."""
        ptr = self._ptr
        if n < 0:
            raise ValueError("n must be >= 0")
        if dt is None:
            dt = self.next_frame_step()[0]
        if not (math.isfinite(dt) and dt > 0):
            raise UsageError(f"substep: dt = {dt} is not a positive finite time", 2)
        self._new_generation("substep")
        if n:
            self._check(_lib_.firn_world_run_substeps(ptr, int(n), float(dt), byref(self._err)))

    def next_frame_step(self) -> tuple[float, int]:
        """(dt [s], substeps) of the next frame."""
        dt, n = ctypes.c_float(), ctypes.c_int()
        self._check(_lib_.firn_world_next_frame_step(self._ptr, byref(dt), byref(n), byref(self._err)))
        return float(dt.value), int(n.value)

    def _clock(self) -> tuple[int, float, int]:
        f, t, s = ctypes.c_int(), ctypes.c_double(), ctypes.c_longlong()
        _lib_.firn_world_clock(self._ptr, byref(f), byref(t), byref(s))
        return f.value, t.value, s.value

    @property
    def frame(self) -> int:
        """Frames stepped since the start (frame 0 is the initial state)."""
        return self._clock()[0]

    @property
    def time(self) -> float:
        """Simulated time [s]."""
        return self._clock()[1]

    @property
    def substeps(self) -> int:
        """Substeps since the start."""
        return self._clock()[2]

    @property
    def stats(self) -> dict | None:
        """The last step()'s frame statistics (firn_frame_stats) as a dict; None before one."""
        self._ptr
        if not self._stepped:
            return None
        if self._stats_dict is None:
            self._stats_dict = stats_dict(self._stats)
        return self._stats_dict

    def current_stats(self) -> dict:
        """Statistics of the current state (firn_world_stats; frame fields as they are)."""
        s = _lib.FrameStats()
        self._check(_lib_.firn_world_stats(self._ptr, byref(s), byref(self._err)))
        return stats_dict(s)

    # ---- backend, sync, files -----------------------------------------------
    @property
    def backend(self) -> str:
        return "cuda" if _lib_.firn_world_backend(self._ptr) == _lib.BACKEND_CUDA else "cpu"

    @property
    def device_name(self) -> str:
        name = _lib_.firn_world_device_name(self._ptr)
        return name.decode() if name else ""

    def sync(self) -> None:
        """Brings every host copy of the state up to date (on the CUDA path: downloads
        it). Views fetch what they show anyway; this is for timing the download."""
        self._check(_lib_.firn_world_host_state(self._ptr, byref(self._err)))

    def save(self, path: str | os.PathLike) -> None:
        """Writes a checkpoint (firn_world_save); World.load continues from it."""
        self._check(_lib_.firn_world_save(self._ptr, os.fsencode(os.fspath(path)), byref(self._err)))

    def write_ply(self, path: str | os.PathLike) -> None:
        """The MPM particles as a binary PLY (firn_write_ply)."""
        v = _lib.ParticlesView()
        self._check(_lib_.firn_world_particles(self._ptr, byref(v), byref(self._err)))
        self._check(_lib_.firn_write_ply(os.fsencode(os.fspath(path)), byref(v), byref(self._err)))

    def write_frame(self, dir: str | os.PathLike) -> None:
        """Writes the current frame into the existing folder `dir` as `firn run`
        writes a frame (firn_world_write_frame, by the CLI's own frame writer):
        frame_NNNNN.ply / .png, sph_, pbd_, fem_, rigids_ and tools_ files as the
        scene's output keys say (output.every does not apply), the ParaView time
        series beside them, then the frame's line appended to stats.jsonl. Stepped
        with step(), the line is the one `firn run` writes for that frame (up to
        its wall-clock fields); after substep() or a load it has the statistics
        of the current state.

        Raises FirnIOError for a missing folder, a path that is not a folder or
        one a running `firn run` holds; UsageError when its stats.jsonl already
        has this frame or a later one (frames are appended in order); ClosedError
        after close(). Nothing is written then, and nothing already there changes.
        """
        ptr = self._ptr
        f, _, n = self._clock()
        stats = byref(self._stats) if self._stepped and (self._stats.frame, self._stats.substeps) == (f, n) else None
        self._check(_lib_.firn_world_write_frame(ptr, os.fsencode(os.fspath(dir)), stats, byref(self._err)))

    def compare_backends(self, frames: int = 10) -> BackendComparison:
        """Runs this world's scene on the CPU path and on the CUDA backend, from
        its initial state, and compares them as `firn compare` does
        (firn_compare_backends): every particle field and the grid after one
        substep, the particle fields after one substep from a perturbed state,
        and the scene statistics after `frames` frames (0: none). This world is
        not stepped or changed.

        Returns a BackendComparison: `ok`, and each field's or statistic's
        Difference by stage (`substep`, `perturbed`, `frames`). A difference
        beyond tolerance is reported (`ok` False), not raised. Raises
        DeviceError without a usable GPU or in a build without CUDA (the
        message of `firn compare`), UsageError for frames < 0, NumericError for
        a scene that blows up, ClosedError after close().
        """
        self._ptr
        if isinstance(frames, bool) or not isinstance(frames, int):
            raise TypeError(f"frames must be an int, not {type(frames).__name__}")
        r = _lib.CompareReport()
        if _lib_.firn_compare_backends(byref(self.scene.raw), frames, byref(r), byref(self._err)):
            raise error_from(self._err, path=self.scene.path)
        try:
            return from_report(r)
        finally:
            _lib_.firn_compare_report_free(byref(r))

    def __repr__(self) -> str:
        if self.closed:
            return "firn.World(closed)"
        return f"firn.World({self.scene.path!r}, backend={self.backend!r}, frame={self.frame})"


class _Solver:
    def __init__(self, world: World):
        self._world = world

    def _fetch(self, view_type, fn):
        w = self._world
        v = view_type()
        w._check(fn(w._ptr, byref(v), byref(w._err)))
        return v, w._life, w.backend == "cpu"


class MPM(_Solver):
    """The MPM particles (firn_world_particles), in the scene's order.

    Arrays are views of the C state, not copies: x, v are (n, 3), C and F
    (n, 3, 3), Jp, damage, vol (n,), material (n,) uint8. On the CPU path
    they are writable and a write changes the simulated state; on the CUDA
    path they show the host mirror (downloaded when fetched) and are
    read-only. Fetch them again after each step."""

    def _v(self):
        return self._fetch(_lib.ParticlesView, _lib_.firn_world_particles)

    @property
    def n(self) -> int:
        return int(self._v()[0].n)

    @property
    def x(self) -> FirnArray:
        v, life, rw = self._v()
        return soa(life, v.x, v.n, 3, rw)

    @property
    def v(self) -> FirnArray:
        v, life, rw = self._v()
        return soa(life, v.v, v.n, 3, rw)

    @property
    def C(self) -> FirnArray:
        v, life, rw = self._v()
        return soa_matrix(life, v.C, v.n, rw)

    @property
    def F(self) -> FirnArray:
        v, life, rw = self._v()
        return soa_matrix(life, v.F, v.n, rw)

    @property
    def Jp(self) -> FirnArray:
        v, life, rw = self._v()
        return wrap(life, v.Jp, np.float32, (v.n,), writeable=rw)

    @property
    def damage(self) -> FirnArray:
        v, life, rw = self._v()
        return wrap(life, v.damage, np.float32, (v.n,), writeable=rw)

    @property
    def vol(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.vol, np.float32, (v.n,), writeable=False)

    @property
    def material(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.mat, np.uint8, (v.n,), writeable=False)


class SPH(_Solver):
    """The SPH particles (firn_world_sph_particles): x, v (n, 3), density, pressure,
    material (n,). Writable on the CPU path (x, v), as MPM's."""

    def _v(self):
        return self._fetch(_lib.SphParticlesView, _lib_.firn_world_sph_particles)

    @property
    def n(self) -> int:
        return int(self._v()[0].n)

    @property
    def x(self) -> FirnArray:
        v, life, rw = self._v()
        return soa(life, v.x, v.n, 3, rw)

    @property
    def v(self) -> FirnArray:
        v, life, rw = self._v()
        return soa(life, v.v, v.n, 3, rw)

    @property
    def density(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.rho, np.float32, (v.n,), writeable=False)

    @property
    def pressure(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.p, np.float32, (v.n,), writeable=False)

    @property
    def material(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.mat, np.uint8, (v.n,), writeable=False)


class PBD(_Solver):
    """The PBD particles (firn_world_pbd_particles): x, v (n, 3), inverse_mass,
    material (n,), triangles (m, 3) int32. x, v writable on the CPU path."""

    def _v(self):
        return self._fetch(_lib.PbdParticlesView, _lib_.firn_world_pbd_particles)

    @property
    def n(self) -> int:
        return int(self._v()[0].n)

    @property
    def x(self) -> FirnArray:
        v, life, rw = self._v()
        return soa(life, v.x, v.n, 3, rw)

    @property
    def v(self) -> FirnArray:
        v, life, rw = self._v()
        return soa(life, v.v, v.n, 3, rw)

    @property
    def inverse_mass(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.w, np.float32, (v.n,), writeable=False)

    @property
    def material(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.mat, np.uint8, (v.n,), writeable=False)

    @property
    def triangles(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.tri, np.int32, (v.triangles, 3), writeable=False)


class FEM(_Solver):
    """The FEM bodies' mesh (firn_world_fem_mesh): vertices x, v (n, 3), fixed (n,);
    elements tets (m, 4), material (m,), stress and strain (m, 6: xx yy zz xy yz xz),
    von_mises (m,) computed from the current positions when fetched. x, v writable
    on the CPU path."""

    def _v(self):
        return self._fetch(_lib.FemMeshView, _lib_.firn_world_fem_mesh)

    @property
    def n(self) -> int:
        return int(self._v()[0].n)

    @property
    def x(self) -> FirnArray:
        v, life, rw = self._v()
        return soa(life, v.x, v.n, 3, rw)

    @property
    def v(self) -> FirnArray:
        v, life, rw = self._v()
        return soa(life, v.v, v.n, 3, rw)

    @property
    def fixed(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.fixed, np.uint8, (v.n,), writeable=False)

    @property
    def tets(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.tet, np.int32, (v.elements, 4), writeable=False)

    @property
    def material(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.mat, np.uint8, (v.elements,), writeable=False)

    @property
    def stress(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.stress, np.float32, (v.elements, 6), writeable=False)

    @property
    def strain(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.strain, np.float32, (v.elements, 6), writeable=False)

    @property
    def von_mises(self) -> FirnArray:
        v, life, _ = self._v()
        return wrap(life, v.von_mises, np.float32, (v.elements,), writeable=False)


class _Bodies(Sequence):
    """world.rigids / world.tools: by index or by name."""

    def __init__(self, world: World, cls, count: int, names: list[str]):
        self._items = [cls(world, k, names[k] if k < len(names) else str(k)) for k in range(count)]

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, key):
        if isinstance(key, str):
            for item in self._items:
                if item.name == key:
                    return item
            raise KeyError(f"no body called {key!r} (there are {[i.name for i in self._items]})")
        return self._items[key]

    def __iter__(self) -> Iterator:
        return iter(self._items)


class Rigid:
    """Rigid body `index` of the scene: position (3,), quaternion (4: w x y z),
    velocity, angular_velocity (3,) are read-only views of the C state (the CUDA
    path's host mirror, downloaded when fetched). A kinematic body is commanded
    with set_velocity."""

    def __init__(self, world: World, index: int, name: str):
        self._world, self.index, self.name = world, index, name

    def _v(self):
        w = self._world
        v = _lib.RigidView()
        w._check(_lib_.firn_world_rigid_view(w._ptr, self.index, byref(v), byref(w._err)))
        return v, w._life

    @property
    def motion(self) -> str:
        return _MOTIONS.get(self._v()[0].motion, "?")

    @property
    def position(self) -> FirnArray:
        v, life = self._v()
        return wrap(life, v.position, np.float32, (3,), writeable=False)

    @property
    def quaternion(self) -> FirnArray:
        v, life = self._v()
        return wrap(life, v.orientation, np.float32, (4,), writeable=False)

    @property
    def velocity(self) -> FirnArray:
        v, life = self._v()
        return wrap(life, v.velocity, np.float32, (3,), writeable=False)

    @property
    def angular_velocity(self) -> FirnArray:
        v, life = self._v()
        return wrap(life, v.angular_velocity, np.float32, (3,), writeable=False)

    def set_velocity(self, v: Sequence[float], omega: Sequence[float] = (0.0, 0.0, 0.0)) -> None:
        """Commands a kinematic body's velocity [m/s] and angular velocity [rad/s,
        world frame] from the next substep on (firn_world_set_rigid_velocity).
        Static and dynamic bodies and non-finite components are refused
        (UsageError) and nothing changes."""
        w = self._world
        w._check(
            _lib_.firn_world_set_rigid_velocity(
                w._ptr, self.index, _vec3(v, "v"), _vec3(omega, "omega"), byref(w._err)
            )
        )

    def __repr__(self) -> str:
        return f"firn.Rigid({self.index}, {self.name!r})"


class Tool:
    """Tool `index` of the scene (docs/PHYSICS.md s4.8): commanded with
    set_velocity; `state` (firn_tool_state as a dict), and `force` (the last
    substep's), `force_mean` (over the last frame) the material's force on it [N]."""

    def __init__(self, world: World, index: int, name: str):
        self._world, self.index, self.name = world, index, name

    def _state(self) -> _lib.ToolState:
        w = self._world
        s = _lib.ToolState()
        if _lib_.firn_world_tool_state(w._ptr, self.index, byref(s)):
            raise UsageError(f"no tool {self.index}", 2)
        return s

    @property
    def state(self) -> dict:
        return _to_py(self._state())

    @property
    def position(self) -> np.ndarray:
        return np.array(self._state().position, dtype=np.float32)

    @property
    def quaternion(self) -> np.ndarray:
        return np.array(self._state().orientation, dtype=np.float32)

    @property
    def velocity(self) -> np.ndarray:
        return np.array(self._state().velocity, dtype=np.float32)

    @property
    def force(self) -> np.ndarray:
        return np.array(self._state().force, dtype=np.float32)

    @property
    def force_mean(self) -> np.ndarray:
        return np.array(self._state().force_mean, dtype=np.float32)

    @property
    def torque(self) -> np.ndarray:
        return np.array(self._state().torque, dtype=np.float32)

    def set_velocity(self, v: Sequence[float], omega: Sequence[float] = (0.0, 0.0, 0.0)) -> None:
        """Commands the tool's velocity [m/s] and angular velocity [rad/s, world frame]
        from the next substep on (firn_world_set_tool_velocity); a NaN is refused
        (UsageError) and nothing changes."""
        w = self._world
        w._check(
            _lib_.firn_world_set_tool_velocity(
                w._ptr, self.index, _vec3(v, "v"), _vec3(omega, "omega"), byref(w._err)
            )
        )

    def __repr__(self) -> str:
        return f"firn.Tool({self.index}, {self.name!r})"
